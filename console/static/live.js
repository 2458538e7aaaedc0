// Live views: a stream's segments with its append rate and tiering lag,
// and a reader group's lag. Both poll the API every POLL_MS and compute
// rates from the counters the API returns (next offsets, bytes), so
// nothing but the usual read grants is needed.
import { getJSON, enc, APIError } from './api.js';
import { h, table, errorBox, bytes } from './dom.js';
import { lineChart, fmtNum } from './chart.js';
import { alive, sleep } from './state.js';

const KEEP = 90; // points kept per chart: three minutes at 2 s

function push(arr, v) { arr.push(v); if (arr.length > KEEP) arr.shift(); }

// poll calls fetch then render until the view changes. An answer that
// will not change by asking again (401, 403, 404) ends the poll; others
// (a 503 while the server drains) are shown and retried.
async function poll(gen, fetch, render, status) {
  for (;;) {
    try {
      render(await fetch());
      status.replaceChildren();
    } catch (err) {
      if (!alive(gen)) return;
      if (err instanceof APIError && [401, 403, 404].includes(err.status)) throw err;
      status.replaceChildren(errorBox(err));
    }
    if (!await sleep(gen)) return;
  }
}

export async function streamView(gen, tenant, stream, show) {
  const path = `/v1/tenants/${enc(tenant)}/streams/${enc(stream)}`;
  const samples = [];
  const rate = [], byteRate = [], lag = [];
  const segs = h('div', { id: 'segments' }), totals = h('p', { id: 'totals' });
  const rateChart = h('div', { id: 'rate-chart' }), byteChart = h('div', { id: 'byte-rate-chart' });
  const lagChart = h('div', { id: 'tier-lag-chart' }), status = h('div');
  show(h('div', { class: 'crumbs' }, h('a', { href: '#/tenants' }, 'tenants'), ' / ',
    h('a', { href: `#/t/${enc(tenant)}` }, tenant), ' / ', stream),
  h('h1', {}, 'Stream ', `${tenant}/${stream}`), status, totals,
  h('h2', {}, 'Append rate'), rateChart, byteChart,
  h('h2', {}, 'Tiering lag (oldest event not yet in tier 2)'), lagChart,
  h('h2', {}, 'Segments'), segs);
  lineChart(rateChart, rate, { label: 'events/s' });
  lineChart(byteChart, byteRate, { label: 'bytes/s' });
  lineChart(lagChart, lag, { label: 'seconds' });

  const render = st => {
    const now = Date.now();
    const segments = st.segments || [];
    const tier = new Map(((st.tiering && st.tiering.segments) || []).map(t => [t.segment, t]));
    const events = segments.reduce((a, s) => a + s.next_offset, 0);
    const size = segments.reduce((a, s) => a + s.bytes, 0);
    const prev = samples[samples.length - 1];
    push(samples, { t: now, events, size });
    if (prev && now > prev.t) {
      const dt = (now - prev.t) / 1000;
      // A counter that went down (a stream deleted and made again) has
      // no rate; show zero rather than a negative spike.
      push(rate, { x: now, y: Math.max(events - prev.events, 0) / dt });
      push(byteRate, { x: now, y: Math.max(size - prev.size, 0) / dt });
    }
    const maxLag = Math.max(0, ...[...tier.values()].map(t => (t.lag_ns || 0) / 1e9));
    push(lag, { x: now, y: maxLag });
    const pending = [...tier.values()].reduce((a, t) => a + (t.pending_bytes || 0), 0);
    totals.textContent = `${st.config?.encoding} · ${segments.length} segments · ${fmtNum(events)} events appended · ${bytes(size)} in tier 1 · ${bytes(pending)} waiting for tier 2` +
      (rate.length ? ` · ${fmtNum(rate[rate.length - 1].y)} events/s` : '');
    lineChart(rateChart, rate, { label: 'events/s' });
    lineChart(byteChart, byteRate, { label: 'bytes/s' });
    lineChart(lagChart, lag, { label: 'seconds' });
    segs.replaceChildren(table('segments-table', [
      { title: 'Segment', get: s => s.id },
      { title: 'Keys', get: s => `${s.key_low}–${s.key_high}` },
      { title: 'First offset', num: true, get: s => s.first_offset },
      { title: 'Next offset', num: true, get: s => s.next_offset },
      { title: 'Tier 1', num: true, get: s => bytes(s.bytes) },
      { title: 'Tiered to', num: true, get: s => tier.get(s.id)?.tiered_offset },
      { title: 'Tier 2', num: true, get: s => bytes(tier.get(s.id)?.tiered_bytes) },
      { title: 'Chunks', num: true, get: s => tier.get(s.id)?.chunks },
      { title: 'Lag', num: true, get: s => tier.has(s.id) ? ((tier.get(s.id).lag_ns || 0) / 1e9).toFixed(1) + ' s' : '' },
      { title: 'Last tiering error', get: s => tier.get(s.id)?.last_error },
    ], segments));
  };
  await poll(gen, () => getJSON(path), render, status);
}

export async function groupView(gen, tenant, group, show) {
  const path = `/v1/tenants/${enc(tenant)}/groups/${enc(group)}/lag`;
  const behind = [];
  const segs = h('div', { id: 'group-segments' }), totals = h('p', { id: 'group-totals' });
  const chart = h('div', { id: 'lag-chart' }), status = h('div');
  show(h('div', { class: 'crumbs' }, h('a', { href: '#/tenants' }, 'tenants'), ' / ',
    h('a', { href: `#/t/${enc(tenant)}` }, tenant), ' / group ', group),
  h('h1', {}, 'Reader group ', group), status, totals,
  h('h2', {}, 'Lag (events behind)'), chart,
  h('h2', {}, 'Per segment'), segs);
  lineChart(chart, behind, { label: 'events behind' });
  const render = lag => {
    push(behind, { x: Date.now(), y: lag.events_behind });
    totals.textContent = `generation ${lag.generation} · ${fmtNum(lag.events_behind)} events, ${bytes(lag.bytes_behind)}, ${Number(lag.seconds_behind || 0).toFixed(1)} s behind`;
    lineChart(chart, behind, { label: 'events behind' });
    segs.replaceChildren(table('group-lag', [
      { title: 'Stream', get: s => h('a', { href: `#/t/${enc(tenant)}/s/${enc(s.stream)}` }, s.stream) },
      { title: 'Segment', get: s => s.segment },
      { title: 'Reader', get: s => s.reader || '—' },
      { title: 'Committed', num: true, get: s => s.committed },
      { title: 'Next', num: true, get: s => s.next },
      { title: 'Events behind', num: true, get: s => s.events_behind },
      { title: 'Bytes behind', num: true, get: s => bytes(s.bytes_behind) },
      { title: 'Seconds behind', num: true, get: s => Number(s.seconds_behind || 0).toFixed(1) },
    ], lag.segments || []));
  };
  await poll(gen, () => getJSON(path), render, status);
}
