// The cluster view: every node's GPUs drawn as cells on one canvas (compact enough for
// thousands of nodes), and beside it the same nodes as a text table, so that every name and
// state is in the page as text (searchable, readable by a screen reader and by tests). Nodes come
// as changes (GET /v1/nodes/changes?since=GEN: everything once, then what changed), so an
// update at 1,250 nodes redraws the canvas and rewrites only the rows of the nodes that changed.
import { $, esc, gpus, percent } from './util.js';

const GAP = 3;       // px between nodes
const COLORS = { free: '#dfe4e9', alloc: '#9ecae1', used: '#1f6fb2', cordoned: '#b8a06a', bad: '#d64545' };

// px per GPU cell: large for a few nodes, small enough for 1,250 x 8 GPUs on one screen.
const cellSize = (count) => (count <= 100 ? 12 : count <= 400 ? 8 : 5);

let nodes = [];                 // by name, as the controller orders them
const byName = new Map();       // name -> node
const rowOf = new Map();        // name -> its <tr> in the list
// "node/gpu" -> {utilization, memoryUsedBytes}: what the controller's feed has (gpuUsage in
// /v1/nodes: NVML, or what tasks report) first, else the agents' own figure (/v1/usage; for
// simulated GPUs the share their tasks hold).
let reported = new Map();
let scraped = new Map();
const useOf = (node, gpu) => reported.get(node + '/' + gpu) ?? scraped.get(node + '/' + gpu);
let layout = [];        // per node: {x, y, w, h}
let filter = '';

function indexUsage(n) {
  for (let g = 0; g < n.gpuCount; g++) reported.delete(n.name + '/' + g);
  for (const g of n.gpuUsage ?? []) reported.set(n.name + '/' + g.gpu, g);
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
  scraped = new Map(doc.gpus.map((g) => [g.node + '/' + g.gpu, g]));
  const changed = new Set();
  for (const [key, g] of scraped) if (before.get(key)?.utilization !== g.utilization) changed.add(key.slice(0, key.lastIndexOf('/')));
  for (const key of before.keys()) if (!scraped.has(key)) changed.add(key.slice(0, key.lastIndexOf('/')));
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
  canvas.width = width * dpr;
  canvas.height = height * dpr;
  canvas.style.height = height + 'px';
  const ctx = canvas.getContext('2d');
  ctx.scale(dpr, dpr);
  nodes.forEach((n, i) => {
    const { x: nx, y: ny } = layout[i];
    const cols = Math.max(1, Math.ceil(n.gpuCount / 2));
    for (let g = 0; g < n.gpuCount; g++) {
      ctx.fillStyle = cellColor(n, g);
      ctx.fillRect(nx + (g % cols) * CELL, ny + Math.floor(g / cols) * CELL, CELL - 1, CELL - 1);
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

function cells(n) {
  const use = nodeUse(n);
  return `<td>${esc(n.name)}</td><td class="status-${esc(n.status)}">${esc(n.status)}</td>` +
    `<td>${gpus(n.gpusAllocated)}/${n.gpuCount}</td><td>${use === null ? '' : percent(use)}</td>` +
    `<td>${esc(n.gpuModel)}</td><td>${esc(flags(n))}</td>`;
}

const shown = (n, q) => !q || (n.name + ' ' + n.status + ' ' + n.gpuModel + ' ' + flags(n)).toLowerCase().includes(q);

function table() {
  const q = filter.toLowerCase();
  const rows = [];
  for (const n of nodes) {
    if (shown(n, q)) rows.push(`<tr data-node="${esc(n.name)}">${cells(n)}</tr>`);
  }
  const body = $('node-table').tBodies[0];
  body.innerHTML = rows.join('');
  rowOf.clear();
  for (const tr of body.rows) rowOf.set(tr.dataset.node, tr);
}

// Rewrites the rows of `changed` in place; the whole list when one enters or leaves the filter.
function updateRows(changed) {
  const q = filter.toLowerCase();
  for (const n of changed) {
    const tr = rowOf.get(n.name);
    if (!tr !== !shown(n, q)) return table();
    if (tr) tr.innerHTML = cells(n);
  }
}

function counts() {
  let total = 0, alloc = 0, ready = 0, cordoned = 0, simulated = 0;
  for (const n of nodes) {
    total += n.gpuCount; alloc += n.gpusAllocated;
    ready += healthy(n); cordoned += n.cordoned; simulated += n.simulated ? n.gpuCount : 0;
  }
  $('cluster-counts').textContent = `${nodes.length} nodes (${ready} ready, ${cordoned} cordoned), ` +
    `${gpus(alloc)} of ${total} GPUs allocated` + (simulated ? `, ${simulated} simulated GPUs` : '');
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
      `${gpus(n.gpusAllocated)}/${n.gpuCount} ${n.gpuModel}${n.simulated ? ' (simulated)' : ''} allocated` +
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
