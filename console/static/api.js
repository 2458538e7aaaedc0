// The console's only way to the server: the native API on the same
// origin, with the user's bearer token. The token lives in
// sessionStorage: it survives a reload of the tab, is gone when the tab
// closes, is never shared with other tabs and never put in a URL.
const KEY = 'silt.token';

export function token() { return sessionStorage.getItem(KEY); }
export function setToken(t) { sessionStorage.setItem(KEY, t); }
export function clearToken() { sessionStorage.removeItem(KEY); }
export const enc = encodeURIComponent;

export class APIError extends Error {
  constructor(status, code, message, position) {
    super(message);
    this.status = status;
    this.code = code;
    // position locates a mistake in a query (code bad_query):
    // {line, column, hint, snippet}, 1-based, in characters.
    this.position = position || null;
  }
  toString() {
    let s = `${this.status} ${this.code}: ${this.message}`;
    if (this.position && this.position.snippet) s += '\n' + this.position.snippet;
    return s;
  }
}

// call sends one request and returns {status, headers, text}; an answer
// other than 2xx throws an APIError carrying the API's own code and
// message (errors are JSON: {"error":{"code","message"}}).
export async function call(method, path, body, tok = token()) {
  const headers = {};
  if (tok) headers['Authorization'] = 'Bearer ' + tok;
  const init = { method, headers, cache: 'no-store', credentials: 'omit' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  if (!r.ok) {
    let code = 'http_' + r.status, msg = text || r.statusText, pos = null;
    try {
      const j = JSON.parse(text);
      if (j && j.error) { code = j.error.code; msg = j.error.message; pos = j.error.position; }
    } catch (_) { /* not JSON: keep the text */ }
    throw new APIError(r.status, code, msg, pos);
  }
  return { status: r.status, headers: r.headers, text };
}

export async function getJSON(path) {
  const r = await call('GET', path);
  return r.text ? JSON.parse(r.text) : null;
}

// listAll follows next_page_token through a paged listing.
export async function listAll(path, field) {
  const out = [];
  let tokenParam = '';
  for (let i = 0; i < 100; i++) {
    const sep = path.includes('?') ? '&' : '?';
    const page = await getJSON(path + (tokenParam ? sep + 'page_token=' + enc(tokenParam) : ''));
    out.push(...(page[field] || []));
    if (!page.next_page_token) break;
    tokenParam = page.next_page_token;
  }
  return out;
}
