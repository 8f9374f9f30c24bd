// The queue tree: per queue its guaranteed GPUs, what it holds now and how much of that is
// borrowed (held beyond the guarantee), a bar of allocated against guaranteed, and each leaf
// queue's dominant share over time (sampled while the page is open) on a Chart.js line chart.
import { $, esc, gpus, percent } from './util.js';

const HISTORY_POINTS = 600;   // ten minutes at one sample a second
const PALETTE = ['#1f6fb2', '#e39b3a', '#2a7a3a', '#d64545', '#7b4fb0', '#3aa3a3', '#8a6d1d', '#c4549b'];

let chart = null;
const history = { times: [], series: new Map() };  // queue -> [share]
let lastSample = 0;

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

function sample(queues) {
  const now = Date.now();
  if (now - lastSample < 1000 && history.times.length) {
    // Within the same second: the newest sample is replaced, not added.
    history.times.pop();
    for (const s of history.series.values()) s.pop();
  }
  lastSample = now;
  history.times.push(new Date(now).toTimeString().slice(0, 8));
  const leaves = queues.filter((q) => q.leaf !== false);
  for (const q of leaves) {
    if (!history.series.has(q.name)) history.series.set(q.name, history.times.slice(1).map(() => null));
  }
  for (const [name, s] of history.series) {
    const q = leaves.find((l) => l.name === name);
    s.push(q ? q.dominantShare : null);
  }
  if (history.times.length > HISTORY_POINTS) {
    history.times.shift();
    for (const s of history.series.values()) s.shift();
  }
}

function drawChart() {
  if (typeof Chart === 'undefined') return;  // chart.js still loading; the next update draws
  const datasets = [...history.series].map(([name, data], i) => ({
    label: name, data, borderColor: PALETTE[i % PALETTE.length], backgroundColor: PALETTE[i % PALETTE.length],
    pointRadius: 0, borderWidth: 2, stepped: true, spanGaps: true,
  }));
  if (!chart) {
    chart = new Chart($('share-chart'), {
      type: 'line',
      data: { labels: history.times, datasets },
      options: {
        animation: false, maintainAspectRatio: false,
        plugins: { title: { display: true, text: 'dominant share of each leaf queue (since this page opened)' } },
        scales: { y: { min: 0, ticks: { callback: (v) => percent(v) } }, x: { ticks: { maxTicksLimit: 6 } } },
      },
    });
  } else {
    chart.data.labels = history.times;
    chart.data.datasets = datasets;
    chart.update('none');
  }
}

export function setQueues(queues) {
  table(queues);
  sample(queues);
  drawChart();
}

export function queueNames(queues) { return queues.map((q) => q.name); }
