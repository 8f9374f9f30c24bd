// Small helpers shared by the views.
const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ESC[c]);

export const $ = (id) => document.getElementById(id);

export function gpus(n) {
  return Number.isInteger(n) ? String(n) : (Math.round(n * 100) / 100).toString();
}

// Whole percent, one decimal below 10% (a team's share of a 10,000-GPU cluster is small).
export function percent(ratio) {
  const p = 100 * ratio;
  return (p !== 0 && Math.abs(p) < 10 ? p.toFixed(1) : Math.round(p)) + '%';
}

// Milliseconds since the epoch -> "12:03:04" (today) or "2026-12-01 12:03".
export function clock(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  const now = new Date();
  const hms = d.toTimeString().slice(0, 8);
  return d.toDateString() === now.toDateString() ? hms : d.toISOString().slice(0, 10) + ' ' + hms.slice(0, 5);
}

// Runs `fn` when asked, never twice at once: a request while it runs makes it run once more
// after, and runs are at least `gapMs` apart, so that a burst of events costs one fetch. The
// promise a request returns settles once a run that started after the request has ended.
export class Coalescer {
  constructor(fn, gapMs) {
    this.fn = fn; this.gapMs = gapMs; this.running = false; this.again = false; this.last = -1e9;
    this.waiters = [];
  }
  request() {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      if (this.running) this.again = true; else this.start();
    });
  }
  start() {
    this.running = true;
    setTimeout(() => this.run(), Math.max(0, this.last + this.gapMs - performance.now()));
  }
  async run() {
    const waiters = this.waiters;
    this.waiters = [];
    this.again = false;
    this.last = performance.now();
    try { await this.fn(); } catch (e) { console.warn(e); }
    for (const w of waiters) w();
    this.running = false;
    if (this.again || this.waiters.length) this.start();
  }
}

// Rows of a list (style.css .rows) in chunks of CHUNK_ROWS, each a box the browser skips while it
// is out of view: `html` is each row's markup.
export const CHUNK_ROWS = 64;
export function chunked(html) {
  const out = [];
  for (let i = 0; i < html.length; i += CHUNK_ROWS) {
    out.push('<div class="chunk">' + html.slice(i, i + CHUNK_ROWS).join('') + '</div>');
  }
  return out.join('');
}
