// Small SVG charts drawn with DOM calls (no library, no inline style, so
// the page's Content-Security-Policy holds). Points carry data-x and
// data-y attributes so that a test or a curious user can read them back.
const NS = 'http://www.w3.org/2000/svg';
const W = 640, H = 200, L = 56, R = 12, T = 12, B = 28;

function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (parent) parent.appendChild(e);
  return e;
}

function text(parent, x, y, s, anchor = 'start') {
  const t = el('text', { x, y, 'text-anchor': anchor }, parent);
  t.textContent = s;
  return t;
}

export function fmtNum(v) {
  if (!isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(2) + 'G';
  if (a >= 1e6) return (v / 1e6).toFixed(2) + 'M';
  if (a >= 1e4) return (v / 1e3).toFixed(1) + 'k';
  if (Number.isInteger(v)) return String(v);
  return v.toFixed(2);
}

function svg(label) {
  const s = el('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': label });
  el('line', { class: 'axis', x1: L, y1: H - B, x2: W - R, y2: H - B }, s);
  el('line', { class: 'axis', x1: L, y1: T, x2: L, y2: H - B }, s);
  return s;
}

// lineChart draws points [{x, y}] with x a time in ms (or any number) as a
// line with a dot per point, replacing what el held.
export function lineChart(container, points, { label = '', time = true } = {}) {
  const s = svg(label);
  s.dataset.points = String(points.length);
  container.replaceChildren(s);
  text(s, L + 4, T + 10, label);
  if (points.length === 0) {
    text(s, W / 2, H / 2, 'waiting for data…', 'middle');
    return s;
  }
  const xs = points.map(p => p.x), ys = points.map(p => p.y);
  let x0 = Math.min(...xs), x1 = Math.max(...xs);
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  const y1 = Math.max(...ys, 0) * 1.1 || 1, y0 = Math.min(0, ...ys);
  const px = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const py = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  text(s, L - 4, T + 4, fmtNum(y1), 'end');
  text(s, L - 4, H - B, fmtNum(y0), 'end');
  const fx = x => time ? new Date(x).toLocaleTimeString() : fmtNum(x);
  text(s, L, H - 8, fx(x0));
  text(s, W - R, H - 8, fx(x1), 'end');
  el('polyline', { class: 'line', points: points.map(p => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ') }, s);
  for (const p of points) {
    const c = el('circle', { class: 'dot', cx: px(p.x).toFixed(1), cy: py(p.y).toFixed(1), r: 2.5, 'data-x': p.x, 'data-y': p.y }, s);
    el('title', {}, c).textContent = `${fx(p.x)}: ${fmtNum(p.y)}`;
  }
  return s;
}

// barChart draws [{key, y}] as bars, one per key, in the given order.
export function barChart(container, bars, { label = '' } = {}) {
  const s = svg(label);
  s.dataset.points = String(bars.length);
  container.replaceChildren(s);
  text(s, L + 4, T + 10, label);
  if (bars.length === 0) return s;
  const y1 = Math.max(...bars.map(b => b.y), 0) * 1.1 || 1;
  const y0 = Math.min(0, ...bars.map(b => b.y));
  const bw = (W - L - R) / bars.length;
  const py = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  text(s, L - 4, T + 4, fmtNum(y1), 'end');
  text(s, L - 4, H - B, fmtNum(y0), 'end');
  bars.forEach((b, i) => {
    const x = L + i * bw + bw * 0.1, top = py(Math.max(b.y, 0)), bottom = py(Math.min(b.y, 0));
    const r = el('rect', { class: 'bar', x: x.toFixed(1), y: top.toFixed(1), width: (bw * 0.8).toFixed(1), height: Math.max(bottom - top, 1).toFixed(1), 'data-x': b.key, 'data-y': b.y }, s);
    el('title', {}, r).textContent = `${b.key}: ${fmtNum(b.y)}`;
    if (bars.length <= 20) text(s, x + bw * 0.4, H - B + 12, String(b.key).slice(0, 12), 'middle');
  });
  return s;
}
