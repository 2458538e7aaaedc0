// DOM helpers. Text from the server goes in as text nodes, never as
// HTML, so a stream whose name looks like markup stays a name.
export function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// table builds a table from column specs [{title, get, num}] and rows.
export function table(id, cols, rows) {
  return h('table', { id },
    h('thead', {}, h('tr', {}, cols.map(c => h('th', { class: c.num ? 'num' : null }, c.title)))),
    h('tbody', {}, rows.map(r => h('tr', {}, cols.map(c => {
      const v = c.get(r);
      return h('td', { class: c.num ? 'num' : null }, v instanceof Node ? v : (v ?? ''));
    })))));
}

export function errorBox(err, id = null) {
  return h('div', { class: 'error', id, role: 'alert' }, String(err));
}

export function notice(text, id = null) {
  return h('div', { class: 'notice', id }, text);
}

export function bytes(n) {
  if (n == null) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0, v = Number(n);
  while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i === 0 ? String(v) : v.toFixed(1)) + ' ' + u[i];
}
