// Health (GET /v1/health, from the introspection store) and the query box
// (query jobs: POST /v1/queries, then poll, then …/results). A server
// built without those routes answers 404, and the views say so instead
// of failing.
import { call, getJSON, enc, APIError } from './api.js';
import { h, table, errorBox, notice, bytes } from './dom.js';
import { lineChart, barChart, fmtNum } from './chart.js';
import { alive, sleep } from './state.js';

function unavailable(err, what) {
  if (err instanceof APIError && err.status === 404 && err.code !== 'bad_query')
    return notice(`${what} is not available on this server (it answers 404 to the route: a build without it).`, 'unavailable');
  if (err instanceof APIError && err.status === 501)
    return notice(`${what} is turned off on this server: ${err.message}`, 'unavailable');
  return null;
}

export async function healthView(gen, show) {
  const body = h('div', { id: 'health' }), status = h('div');
  const minutes = h('select', { id: 'minutes' }, [5, 15, 60, 240].map(m => h('option', { value: m }, `last ${m} min`)));
  show(h('h1', {}, 'Health'), h('p', {}, minutes, ' — from the introspection store; refreshed every 10 s'), status, body);
  minutes.addEventListener('change', () => { load(); });
  async function load() {
    try {
      const r = await getJSON(`/v1/health?minutes=${enc(minutes.value)}`);
      if (!alive(gen)) return false;
      status.replaceChildren(r.partial ? notice('Partial: the scan stopped at its bound.') : '');
      body.replaceChildren(
        h('p', { class: 'muted' }, `${r.since} – ${r.until} · ${fmtNum(r.scanned || 0)} events read`),
        h('h2', {}, 'Requests and errors per head'),
        table('health-heads', [
          { title: 'Head', get: x => x.head }, { title: 'Node', get: x => x.node },
          { title: 'Requests', num: true, get: x => x.requests },
          { title: '4xx', num: true, get: x => x.client_errors },
          { title: '5xx', num: true, get: x => x.server_errors },
          { title: '5xx rate', num: true, get: x => ((x.server_error_rate || 0) * 100).toFixed(2) + '%' },
          { title: 'Bytes', num: true, get: x => bytes(x.bytes) },
          { title: 'Denials', num: true, get: x => x.denials },
        ], r.heads || []),
        h('h2', {}, 'Slowest operations'),
        table('health-slowest', [
          { title: 'Head', get: x => x.head }, { title: 'Operation', get: x => x.operation },
          { title: 'Count', num: true, get: x => x.count },
          { title: 'p99 ms', num: true, get: x => x.p99_ms }, { title: 'max ms', num: true, get: x => x.max_ms },
        ], r.slowest || []),
        h('h2', {}, 'Tiering'),
        table('health-tiering', [
          { title: 'Chunks uploaded', num: true, get: x => x.chunks_uploaded },
          { title: 'Failures', num: true, get: x => x.failures },
          { title: 'Bytes', num: true, get: x => bytes(x.bytes) },
          { title: 'p99 lag ms', num: true, get: x => x.p99_lag_ms }, { title: 'max lag ms', num: true, get: x => x.max_lag_ms },
        ], r.tiering ? [r.tiering] : []),
        h('h2', {}, 'Denials'),
        table('health-denials', [
          { title: 'Head', get: x => x.head }, { title: 'Principal', get: x => x.principal },
          { title: 'Tenant', get: x => x.tenant }, { title: 'Action', get: x => x.action },
          { title: 'Count', num: true, get: x => x.count },
        ], r.denials || []));
      return true;
    } catch (err) {
      if (!alive(gen)) return false;
      const u = unavailable(err, 'Health');
      if (u) { body.replaceChildren(u); return false; }
      if (err instanceof APIError && err.status === 401) throw err;
      status.replaceChildren(errorBox(err));
      return err.status !== 403;
    }
  }
  while (await load() && await sleep(gen, 10000)) { /* poll */ }
}

// chartable picks a chart for a result of two columns, one numeric and
// one a key or a time: [kind, keyColumn, valueColumn] or null.
export function chartable(columns, rows) {
  if (columns.length !== 2 || rows.length === 0) return null;
  const numeric = c => rows.every(r => typeof r[c] === 'number');
  const [a, b] = columns;
  let key, val;
  if (numeric(b) && !numeric(a)) [key, val] = [a, b];
  else if (numeric(a) && !numeric(b)) [key, val] = [b, a];
  else if (numeric(a) && numeric(b)) [key, val] = [a, b];
  else return null;
  const isTime = rows.every(r => typeof r[key] === 'string' && /^\d{4}-\d\d-\d\dT/.test(r[key]) && !isNaN(Date.parse(r[key])));
  return [isTime ? 'time' : 'key', key, val];
}

// renderResults shows a result as a table, and as a chart when chartable
// finds a shape for it.
export function renderResults(out, columns, rows) {
  const cols = columns.length ? columns : Object.keys(rows[0] || {});
  const chart = h('div', { id: 'result-chart' });
  const shape = chartable(cols, rows);
  out.replaceChildren(h('p', {}, `${rows.length} rows`),
    table('result-table', cols.map(c => ({ title: c, get: r => { const v = r[c]; return v !== null && typeof v === 'object' ? JSON.stringify(v) : v; }, num: rows.length > 0 && typeof rows[0][c] === 'number' })), rows),
    shape ? chart : '');
  if (!shape) return;
  const [kind, key, val] = shape;
  if (kind === 'time')
    lineChart(chart, rows.map(r => ({ x: Date.parse(r[key]), y: r[val] })).sort((p, q) => p.x - q.x), { label: `${val} by ${key}` });
  else
    barChart(chart, rows.slice(0, 50).map(r => ({ key: r[key], y: r[val] })), { label: `${val} by ${key}` });
}

// select puts the caret at a query error's line and column (1-based).
function select(area, { line, column }) {
  const lines = area.value.split('\n');
  if (!(line >= 1 && line <= lines.length)) return;
  let at = 0;
  for (let i = 0; i < line - 1; i++) at += lines[i].length + 1;
  at += Math.max(0, Math.min((column || 1) - 1, lines[line - 1].length));
  area.focus();
  area.setSelectionRange(at, at);
}

export async function queryView(gen, show) {
  const text = h('textarea', { id: 'query-text', spellcheck: 'false', placeholder: 'from acme/clicks since -1h | stats count() by status' });
  const run = h('button', { type: 'submit', id: 'query-run' }, 'Run');
  const cancel = h('button', { type: 'button', id: 'query-cancel', hidden: true }, 'Cancel');
  const state = h('div', { id: 'query-state' }), out = h('div', { id: 'query-results' });
  const form = h('form', { id: 'query-form' }, text, h('p', {}, run, ' ', cancel));
  show(h('h1', {}, 'Query'), form, state, out);
  let handle = null;
  cancel.addEventListener('click', async () => {
    if (!handle) return;
    try { await call('DELETE', `/v1/queries/${enc(handle)}`); } catch (err) { state.replaceChildren(errorBox(err)); }
  });
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    out.replaceChildren();
    state.replaceChildren(h('p', {}, 'Submitting…'));
    let job;
    try {
      job = JSON.parse((await call('POST', '/v1/queries', { query: text.value })).text);
    } catch (err) {
      state.replaceChildren(unavailable(err, 'Queries') || errorBox(err, 'query-error'));
      if (err instanceof APIError && err.position) select(text, err.position);
      return;
    }
    handle = job.handle;
    run.disabled = true;
    cancel.hidden = false;
    try {
      for (;;) {
        const p = job.progress || {};
        state.replaceChildren(h('p', {}, `Job ${job.handle}: `, h('b', { id: 'query-job-state' }, job.state), ' ',
          h('progress', { max: 100, value: p.percent ?? 0 }),
          ` ${fmtNum(p.percent ?? 0)}% · ${fmtNum(p.events_scanned || 0)} events, ${bytes(p.bytes_scanned || 0)} scanned` +
          (p.eta_seconds ? ` · about ${Math.ceil(p.eta_seconds)} s left` : '')),
        job.error ? errorBox(job.error, 'query-error') : '');
        if (job.state !== 'running' && job.state !== 'queued') break;
        if (!await sleep(gen, 1000)) return;
        job = await getJSON(`/v1/queries/${enc(handle)}`);
      }
      if (job.state === 'succeeded') {
        const r = await call('GET', `/v1/queries/${enc(handle)}/results`);
        const rows = r.text.split('\n').filter(l => l.trim() !== '').map(l => JSON.parse(l));
        if (alive(gen)) renderResults(out, job.columns || [], rows);
      }
    } catch (err) {
      if (alive(gen)) state.append(errorBox(err, 'query-error'));
    } finally {
      run.disabled = false;
      cancel.hidden = true;
    }
  });
}
