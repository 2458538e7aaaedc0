// The console's router and its navigation views. Views live in hash
// routes (#/t/acme/s/clicks), so names never reach a server log as a
// path, and every view reads only what the API lets the token read.
import { call, getJSON, listAll, token, setToken, clearToken, enc, APIError } from './api.js';
import { h, table, errorBox, notice } from './dom.js';
import { streamView, groupView } from './live.js';
import { healthView, queryView } from './ops.js';
import { next, alive } from './state.js';

const view = document.getElementById('view');


function show(...nodes) { view.replaceChildren(...nodes); }

function loginView(message) {
  const input = h('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'off', placeholder: 'silt_…', required: true });
  const out = h('div', { id: 'login-out' });
  if (message) out.replaceChildren(notice(message));
  const form = h('form', { class: 'login', id: 'login' },
    h('h1', {}, 'Log in to silt'),
    h('label', { for: 'token' }, 'API token'), input,
    h('button', { type: 'submit', id: 'login-submit' }, 'Log in'),
    h('p', { class: 'muted' }, 'The token is checked with GET /v1/whoami and kept in this tab only (sessionStorage); closing the tab forgets it.'),
    out);
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const tok = input.value.trim();
    try {
      const r = await call('GET', '/v1/whoami', undefined, tok);
      setToken(tok);
      await header(JSON.parse(r.text));
      location.hash = '#/tenants';
    } catch (err) {
      out.replaceChildren(errorBox(err instanceof APIError ? err : 'cannot reach the server: ' + err, 'login-error'));
    }
  });
  show(form);
  input.focus();
}

async function header(who) {
  document.getElementById('nav').hidden = false;
  document.getElementById('who').textContent = who ? who.principal + (who.insecure ? ' (insecure mode)' : '') : '';
}

async function tenantsView(gen) {
  const tenants = await listAll('/v1/tenants', 'tenants');
  if (!alive(gen)) return;
  show(h('h1', {}, 'Tenants'),
    tenants.length === 0 ? notice('This token sees no tenant.', 'no-tenants') :
      table('tenants', [
        { title: 'Tenant', get: t => h('a', { href: `#/t/${enc(t.name)}` }, t.name) },
        { title: 'Created', get: t => t.created },
        { title: 'Metadata', get: t => Object.entries(t.metadata || {}).map(([k, v]) => `${k}=${v}`).join(' ') },
      ], tenants));
}

async function tenantView(gen, tenant) {
  const streams = await listAll(`/v1/tenants/${enc(tenant)}/streams`, 'streams');
  let groups;
  try {
    groups = (await getJSON(`/v1/tenants/${enc(tenant)}/groups`)).groups || [];
  } catch (err) {
    groups = err;
  }
  if (!alive(gen)) return;
  show(h('div', { class: 'crumbs' }, h('a', { href: '#/tenants' }, 'tenants'), ' / ', tenant),
    h('h1', {}, 'Tenant ', tenant),
    h('h2', {}, 'Streams'),
    streams.length === 0 ? notice('No stream this token may read.') :
      table('streams', [
        { title: 'Stream', get: s => h('a', { href: `#/t/${enc(tenant)}/s/${enc(s.name)}` }, s.name) },
        { title: 'Encoding', get: s => s.config?.encoding },
        { title: 'Segments', num: true, get: s => s.config?.segments },
        { title: 'Set', get: s => s.config?.set },
        { title: 'Created', get: s => s.created },
      ], streams),
    h('h2', {}, 'Reader groups'),
    groups instanceof Error ? (groups.status === 501 ? notice('This server has no reader groups.') : errorBox(groups)) :
      groups.length === 0 ? notice('No reader group.') :
        table('groups', [
          { title: 'Group', get: g => h('a', { href: `#/t/${enc(tenant)}/g/${enc(g.name)}` }, g.name) },
          { title: 'Streams', get: g => (g.streams || []).join(', ') },
        ], groups));
}

async function route() {
  const gen = next();
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (!token()) {
    document.getElementById('nav').hidden = true;
    loginView();
    return;
  }
  try {
    switch (parts[0]) {
      case '': case 'tenants': return await tenantsView(gen);
      case 't':
        if (parts.length === 2) return await tenantView(gen, parts[1]);
        if (parts[2] === 's') return await streamView(gen, parts[1], parts[3], show);
        if (parts[2] === 'g') return await groupView(gen, parts[1], parts[3], show);
        break;
      case 'health': return await healthView(gen, show);
      case 'query': return await queryView(gen, show);
      case 'login': clearToken(); return loginView();
    }
    show(notice('No such page.'));
  } catch (err) {
    if (!alive(gen)) return;
    if (err instanceof APIError && err.status === 401) {
      // The token expired or was revoked while the tab was open.
      clearToken();
      loginView('The server no longer accepts this token (' + err + '); log in again.');
      return;
    }
    show(errorBox(err, 'view-error'));
  }
}

document.getElementById('logout').addEventListener('click', () => {
  clearToken();
  location.hash = '#/login';
  route();
});
window.addEventListener('hashchange', route);

(async () => {
  if (token()) {
    try { await header(await getJSON('/v1/whoami')); } catch (_) { clearToken(); }
  }
  route();
})();
