// The queue tree: per queue its guaranteed GPUs, what it holds now and how much of that is
// borrowed (held beyond the guarantee), a bar of allocated against guaranteed, and each leaf
// queue's dominant share over time on a Chart.js line chart: the controller's samples (GET
// /v1/queues/history: the last hour, one every 5 s, so the chart does not start when the page
// opened), then the share of the latest /v1/queues as its last point.
import { $, esc, gpus, percent } from './util.js';

const PALETTE = ['#1f6fb2', '#e39b3a', '#2a7a3a', '#d64545', '#7b4fb0', '#3aa3a3', '#8a6d1d', '#c4549b'];
const KEEP_MS = 3600 * 1000;  // as much as the controller keeps

let chart = null;
// The controller's samples: times, and per queue its shares aligned with them.
const history = { timesMs: [], series: new Map() };  // queue -> {leaf, shares}
let intervalS = 5;  // the controller's sampling interval
let live = null;  // {timeMs, shares: Map queue -> share, leaves: Set}

function borrowed(q) {
  return q.guaranteedGpus === undefined ? 0 : Math.max(0, q.gpusAllocated - q.guaranteedGpus);
}

// Each queue against its own guarantee: the bar spans the larger of the two, the mark is the
// guarantee, orange is what it holds beyond it (borrowed).
function bar(q) {
  const g = q.guaranteedGpus ?? 0;
  const scale = Math.max(q.gpusAllocated, g);
  if (scale <= 0) return '<div class="bar"></div>';
  const own = Math.min(q.gpusAllocated, q.guaranteedGpus ?? q.gpusAllocated);
  const b = borrowed(q);
  const px = (v) => (100 * v / scale).toFixed(1) + '%';
  return `<div class="bar" title="allocated ${gpus(q.gpusAllocated)} of ${gpus(g)} guaranteed">` +
    `<span class="a" style="width:${px(own)}"></span>` +
    `<span class="b" style="left:${px(own)};width:${px(b)}"></span>` +
    (q.guaranteedGpus !== undefined ? `<span class="g" style="left:calc(${px(g)} - 2px)"></span>` : '') + '</div>';
}

function table(queues) {
  $('queue-table').tBodies[0].innerHTML = queues.map((q) => {
    const indent = (q.depth ?? 0) * 14;
    return `<tr data-queue="${esc(q.name)}"><td style="padding-left:${indent + 6}px">${esc(q.name)}</td>` +
      `<td>${q.guaranteedGpus === undefined ? '–' : gpus(q.guaranteedGpus)}</td>` +
      `<td>${gpus(q.gpusAllocated)}</td><td>${gpus(borrowed(q))}</td><td>${bar(q)}</td>` +
      `<td>${percent(q.dominantShare)}</td><td>${q.pendingJobs}</td><td>${q.activeJobs}</td></tr>`;
  }).join('');
}

// Appends the controller's samples after the last one held (GET /v1/queues/history?sinceMs=).
export function addHistory(doc) {
  intervalS = doc.intervalMs / 1000;
  const before = history.timesMs.length;
  history.timesMs.push(...doc.timesMs);
  for (const q of doc.queues) {
    let s = history.series.get(q.name);
    if (!s) {
      s = { leaf: q.leaf, shares: new Array(before).fill(null) };
      history.series.set(q.name, s);
    }
    s.leaf = q.leaf;
    s.shares.push(...q.shares);
  }
  for (const s of history.series.values()) {
    while (s.shares.length < history.timesMs.length) s.shares.push(null);
  }
  const cut = history.timesMs.findIndex((t) => t >= Date.now() - KEEP_MS);
  if (cut > 0) {
    history.timesMs.splice(0, cut);
    for (const s of history.series.values()) s.shares.splice(0, cut);
  }
  drawChart();
}
export const lastHistoryMs = () => history.timesMs[history.timesMs.length - 1] ?? 0;

function sample(queues) {
  const leaves = queues.filter((q) => q.leaf !== false);
  live = { timeMs: Date.now(), shares: new Map(leaves.map((q) => [q.name, q.dominantShare])) };
}

const clockOf = (ms) => new Date(ms).toTimeString().slice(0, 8);

function drawChart() {
  if (typeof Chart === 'undefined') return;  // chart.js still loading; the next update draws
  const labels = history.timesMs.map(clockOf);
  if (live) labels.push(clockOf(live.timeMs));
  const names = new Set([...history.series].filter(([, s]) => s.leaf !== false).map(([n]) => n));
  if (live) for (const n of live.shares.keys()) names.add(n);
  const datasets = [...names].map((name, i) => {
    const data = history.series.get(name)?.shares.slice() ?? new Array(history.timesMs.length).fill(null);
    if (live) data.push(live.shares.get(name) ?? null);
    return {
      label: name, data, borderColor: PALETTE[i % PALETTE.length], backgroundColor: PALETTE[i % PALETTE.length],
      pointRadius: 0, borderWidth: 2, stepped: true, spanGaps: true,
    };
  });
  const title = `dominant share of each leaf queue (sampled every ${intervalS} s)`;
  if (!chart) {
    chart = new Chart($('share-chart'), {
      type: 'line',
      data: { labels, datasets },
      options: {
        animation: false, maintainAspectRatio: false,
        plugins: { title: { display: true, text: title } },
        scales: { y: { min: 0, ticks: { callback: (v) => percent(v) } }, x: { ticks: { maxTicksLimit: 6 } } },
      },
    });
  } else {
    chart.data.labels = labels;
    chart.data.datasets = datasets;
    chart.options.plugins.title.text = title;
    chart.update('none');
  }
}

export function setQueues(queues) {
  table(queues);
  sample(queues);
  drawChart();
}

// Chart.js (200 KB) runs once the first render is drawn, so that its parse is no part of the
// first paint (index.html fetches it beside the page); the chart is drawn when it has run.
export function loadChart() {
  if (typeof Chart !== 'undefined' || document.getElementById('chart-js')) return;
  const script = document.createElement('script');
  script.id = 'chart-js';
  script.src = 'chart.js';
  script.addEventListener('load', drawChart);
  document.head.append(script);
}

export function queueNames(queues) { return queues.map((q) => q.name); }
