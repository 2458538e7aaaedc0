// The route generation: each route change starts a new one, and the
// polls of an older view stop at their next turn.
let generation = 0;
export function next() { return ++generation; }
export function alive(gen) { return gen === generation; }

// POLL_MS is how often live views ask the API again. Rates are computed
// between two answers, so they need two polls before the first point.
export const POLL_MS = 2000;

// sleep waits ms, then reports whether the view is still shown.
export function sleep(gen, ms = POLL_MS) {
  return new Promise(r => setTimeout(() => r(alive(gen)), ms));
}
