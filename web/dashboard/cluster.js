// The cluster view: every node's GPUs drawn as cells on one canvas (compact enough for
// thousands of nodes), and beside it the same nodes as a text table, so that every name and
// state is in the page as text (searchable, readable by a screen reader and by tests). Nodes come
// as changes (GET /v1/nodes/changes?since=GEN: everything once, then what changed), so an
// update at 1,250 nodes redraws the canvas and rewrites only the cells that changed of the
// nodes that changed. Oversold shares (co-location) are drawn apart from allocation: the lower
// part of the GPU's cell, and "+N oversold" in the list.
import { $, chunked, esc, gpus, percent } from './util.js';

const GAP = 3;       // px between nodes
const COLORS = { free: '#dfe4e9', alloc: '#9ecae1', used: '#1f6fb2', cordoned: '#b8a06a', bad: '#d64545',
  oversold: '#e39b3a' };

// px per GPU cell: large for a few nodes, small enough for 1,250 x 8 GPUs on one screen.
const cellSize = (count) => (count <= 100 ? 12 : count <= 400 ? 8 : 5);

let nodes = [];                 // by name, as the controller orders them
const byName = new Map();       // name -> node
const rowOf = new Map();        // name -> its <tr> in the list
// node -> per GPU index {utilization}: what the controller's feed has (gpuUsage in the node
// rows: NVML, or what tasks report) first, else the agents' own figure (/v1/usage; for
// simulated GPUs the share their tasks hold).
let reported = new Map();
let scraped = new Map();
const useOf = (node, gpu) => reported.get(node)?.[gpu] ?? scraped.get(node)?.[gpu];
let layout = [];        // per node: {x, y, w, h}
let filter = '';

function indexUsage(n) {
  const byGpu = [];
  for (const g of n.gpuUsage ?? []) byGpu[g.gpu] = g;
  if (byGpu.length) reported.set(n.name, byGpu); else reported.delete(n.name);
}

const byNameOrder = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

// Applies one answer of /v1/nodes/changes: removals first, then the rows that changed.
export function applyNodeChanges(doc) {
  let reordered = doc.full || doc.removed.length > 0;
  if (doc.full) { byName.clear(); reported = new Map(); }
  for (const name of doc.removed) byName.delete(name);
  for (const n of doc.nodes) {
    if (!byName.has(n.name)) reordered = true;
    byName.set(n.name, n);
    indexUsage(n);
  }
  if (reordered) {
    nodes = [...byName.values()].sort(byNameOrder);
    render();
    return;
  }
  nodes = nodes.map((n) => byName.get(n.name));
  draw();
  updateRows(doc.nodes);
  counts();
}

// The agents' figures (GET /v1/usage, every few seconds): only the rows whose use changed are
// rewritten.
export function setUsage(doc) {
  const before = scraped;
  scraped = new Map();
  for (const g of doc.gpus) {
    if (!scraped.has(g.node)) scraped.set(g.node, []);
    scraped.get(g.node)[g.gpu] = g;
  }
  const changed = new Set();
  for (const [node, gs] of scraped) {
    const old = before.get(node);
    if (!old || old.length !== gs.length || gs.some((g, i) => old[i]?.utilization !== g?.utilization)) changed.add(node);
  }
  for (const node of before.keys()) if (!scraped.has(node)) changed.add(node);
  const note = $('usage-note');
  note.textContent = doc.unreachable.length
    ? 'use unknown for agents ' + doc.unreachable.join(', ')
    : nodes.some((n) => n.simulated) ? 'use of simulated GPUs is the share their tasks hold' : '';
  draw();
  updateRows([...changed].map((name) => byName.get(name)).filter((n) => n));
}

function healthy(n) { return n.status === 'Ready'; }

function nodeUse(n) {
  let sum = 0, known = false;
  for (let g = 0; g < n.gpuCount; g++) {
    const u = useOf(n.name, g);
    if (u) { sum += u.utilization; known = true; }
  }
  return known && n.gpuCount > 0 ? sum / n.gpuCount : null;
}

function cellColor(n, g) {
  if (!healthy(n)) return COLORS.bad;
  const milli = (n.gpuAllocatedMilli || [])[g] || 0;
  const u = useOf(n.name, g);
  if (milli > 0 && u && u.utilization > 0) return COLORS.used;
  if (milli > 0) return COLORS.alloc;
  return n.cordoned ? COLORS.cordoned : COLORS.free;
}

let canvasSize = '';  // "WxH@dpr" of the canvas's bitmap: set again only when it changes

function draw() {
  const canvas = $('grid');
  const width = Math.max(200, canvas.parentElement.clientWidth);
  const dpr = window.devicePixelRatio || 1;
  const CELL = cellSize(nodes.length);
  layout = [];
  let x = 0, y = 0, rowH = 0;
  for (const n of nodes) {
    const cols = Math.max(1, Math.ceil(n.gpuCount / 2));
    const w = cols * CELL, h = (n.gpuCount > 1 ? 2 : 1) * CELL;
    if (x + w > width) { x = 0; y += rowH + GAP; rowH = 0; }
    layout.push({ x, y, w, h });
    x += w + GAP;
    rowH = Math.max(rowH, h);
  }
  const height = Math.max(20, y + rowH);
  const size = `${width}x${height}@${dpr}`;
  if (size !== canvasSize) {
    canvas.width = width * dpr;
    canvas.height = height * dpr;
    canvas.style.height = height + 'px';
    canvasSize = size;
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  // An oversold share (co-location: lent from an online replica's unused share) is the lower
  // part of its GPU's cell, whatever the GPU's own colour.
  const lent = Math.max(1, Math.floor((CELL - 1) / 2));
  nodes.forEach((n, i) => {
    const { x: nx, y: ny } = layout[i];
    const cols = Math.max(1, Math.ceil(n.gpuCount / 2));
    const oversold = n.gpuOversoldMilli || [];
    for (let g = 0; g < n.gpuCount; g++) {
      const cx = nx + (g % cols) * CELL, cy = ny + Math.floor(g / cols) * CELL;
      ctx.fillStyle = cellColor(n, g);
      ctx.fillRect(cx, cy, CELL - 1, CELL - 1);
      if (oversold[g] > 0) {
        ctx.fillStyle = COLORS.oversold;
        ctx.fillRect(cx, cy + CELL - 1 - lent, CELL - 1, lent);
      }
    }
    if (n.cordoned) {
      ctx.strokeStyle = COLORS.cordoned;
      ctx.strokeRect(nx - 1, ny - 1, layout[i].w + 1, layout[i].h + 1);
    }
  });
}

function flags(n) {
  const f = [];
  if (n.cordoned) f.push('cordoned');
  if (n.simulated) f.push('simulated');
  if (!n.schedulable && !n.cordoned && healthy(n)) f.push('unschedulable');
  return f.join(', ');
}

// "6/8", or "6/8 +0.8 oversold" (as `tessera get nodes` writes it).
const allocated = (n) => `${gpus(n.gpusAllocated)}/${n.gpuCount}` +
  (n.oversold > 0 ? ` +${gpus(n.oversold)} oversold` : '');

// The list's columns: node, status, GPUs allocated, use, model, flags.
function texts(n) {
  const use = nodeUse(n);
  return [n.name, n.status, allocated(n), use === null ? '' : percent(use), n.gpuModel, flags(n)];
}

const rowHtml = (n) => `<div class="tr" role="row" data-node="${esc(n.name)}">` +
  texts(n).map((t, i) => `<span role="cell"${i === 1 ? ` class="status-${esc(t)}"` : ''}>${esc(t)}</span>`).join('') + '</div>';

// Only the cells whose text changed are written: at 1,250 nodes whose jobs end and start all the
// time most rows change between two updates, but few of their cells do.
function updateRow(tr, n) {
  const t = texts(n);
  for (let i = 1; i < t.length; i++) {
    const td = tr.children[i];
    if (td.textContent === t[i]) continue;
    td.textContent = t[i];
    if (i === 1) td.className = 'status-' + t[i];
  }
}

const shown = (n, q) => !q || (n.name + ' ' + n.status + ' ' + n.gpuModel + ' ' + flags(n)).toLowerCase().includes(q);

function table() {
  const q = filter.toLowerCase();
  const rows = [];
  for (const n of nodes) {
    if (shown(n, q)) rows.push(rowHtml(n));
  }
  const body = $('node-table').querySelector('.body');
  body.innerHTML = chunked(rows);
  rowOf.clear();
  for (const tr of body.querySelectorAll('[data-node]')) rowOf.set(tr.dataset.node, tr);
}

// Rewrites the changed cells of `changed`'s rows; the whole list when one enters or leaves the
// filter.
function updateRows(changed) {
  const q = filter.toLowerCase();
  for (const n of changed) {
    const tr = rowOf.get(n.name);
    if (!tr !== !shown(n, q)) return table();
    if (tr) updateRow(tr, n);
  }
}

function counts() {
  let total = 0, alloc = 0, oversold = 0, ready = 0, cordoned = 0, simulated = 0;
  for (const n of nodes) {
    total += n.gpuCount; alloc += n.gpusAllocated; oversold += n.oversold || 0;
    ready += healthy(n); cordoned += n.cordoned; simulated += n.simulated ? n.gpuCount : 0;
  }
  $('cluster-counts').textContent = `${nodes.length} nodes (${ready} ready, ${cordoned} cordoned), ` +
    `${gpus(alloc)} of ${total} GPUs allocated` + (oversold > 0 ? ` (+${gpus(oversold)} oversold)` : '') +
    (simulated ? `, ${simulated} simulated GPUs` : '');
}

function render() { draw(); table(); counts(); }

function hit(ev) {
  const rect = $('grid').getBoundingClientRect();
  const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
  const i = layout.findIndex((l) => x >= l.x && x < l.x + l.w + 1 && y >= l.y && y < l.y + l.h + 1);
  return i < 0 ? null : { node: nodes[i], x, y };
}

export function initCluster() {
  $('node-filter').addEventListener('input', (e) => { filter = e.target.value; table(); });
  const tip = $('grid-tip');
  $('grid').addEventListener('mousemove', (ev) => {
    const h = hit(ev);
    if (!h) { tip.hidden = true; return; }
    const n = h.node, use = nodeUse(n);
    tip.textContent = `${n.name}  ${n.status}${n.cordoned ? ' (cordoned)' : ''}\n` +
      `${allocated(n)} ${n.gpuModel}${n.simulated ? ' (simulated)' : ''} allocated` +
      (use === null ? '' : `, ${percent(use)} in use`);
    tip.style.left = (h.x + 12) + 'px';
    tip.style.top = (h.y + 12) + 'px';
    tip.hidden = false;
  });
  $('grid').addEventListener('mouseleave', () => { tip.hidden = true; });
  $('grid').addEventListener('click', (ev) => {
    const h = hit(ev);
    if (!h) return;
    $('node-filter').value = filter = h.node.name;
    table();
  });
  let resizeTimer = 0;
  window.addEventListener('resize', () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(draw, 100); });
}
