// The jobs table with filters: queue and phase are asked of the controller (GET /v1/jobs
// filters them), kind and the text search are applied here to what it returned.
import { $, esc, gpus, clock } from './util.js';
import { jobPath } from './api.js';

export const PHASES = ['Pending', 'Running', 'Stopping', 'Restarting', 'Cancelling', 'Succeeded', 'Failed', 'Cancelled'];
const KINDS = ['TrainingJob', 'InferenceService', 'BatchJob', 'DevSession', 'RLJob'];
export const JOB_LIMIT = 500;

let jobs = [];

export function jobQuery() {
  const p = new URLSearchParams({ limit: String(JOB_LIMIT), order: 'newest' });
  if ($('f-queue').value) p.set('queue', $('f-queue').value);
  if ($('f-phase').value) p.set('phase', $('f-phase').value);
  return '/v1/jobs?' + p;
}

function options(select, values) {
  const keep = select.value;
  select.innerHTML = '<option value="">all</option>' +
    values.map((v) => `<option${v === keep ? ' selected' : ''}>${esc(v)}</option>`).join('');
}

export function setQueueChoices(names) {
  const current = [...$('f-queue').options].slice(1).map((o) => o.value).join('\n');
  if (current !== names.join('\n')) options($('f-queue'), names);
}

// key "queue/name" -> {html, tr}: the rows on the page, so that an update writes only the rows
// that changed (at 100,000 jobs the newest 500 are mostly the same from one update to the next).
const rows = new Map();

const cells = (j) => `<td>${esc(j.queue)}</td>` +
  `<td><a href="#${esc(jobPath('/job/', j.queue, j.name))}">${esc(j.name)}</a></td>` +
  `<td>${esc(j.kind)}</td><td class="phase phase-${esc(j.phase)}">${esc(j.phase)}</td>` +
  `<td>${j.runningTasks}/${j.tasks}</td><td>${gpus(j.gpus)}</td><td>${esc(j.user ?? '')}</td>` +
  `<td>${clock(j.submitTimeMs)}</td><td class="msg">${esc(j.message ?? '')}</td>`;

// All rows at once (the first render, or after every row left).
function writeAll(body, shown) {
  body.innerHTML = shown.map((j) => `<tr data-job="${esc(j.queue + '/' + j.name)}">${cells(j)}</tr>`).join('');
  rows.clear();
  shown.forEach((j, i) => rows.set(j.queue + '/' + j.name, { html: cells(j), tr: body.rows[i] }));
}

// Row i of the table becomes job j's, reusing its row when it has one.
function place(body, i, j, next) {
  const key = j.queue + '/' + j.name;
  const html = cells(j);
  let r = rows.get(key);
  if (!r) {
    const tr = document.createElement('tr');
    tr.dataset.job = key;
    tr.innerHTML = html;
    r = { html, tr };
  } else if (r.html !== html) {
    r.tr.innerHTML = html;
    r.html = html;
  }
  next.set(key, r);
  if (body.rows[i] !== r.tr) body.insertBefore(r.tr, body.rows[i] ?? null);
}

function table() {
  const kind = $('f-kind').value;
  const text = $('f-text').value.toLowerCase();
  const shown = jobs.filter((j) => (!kind || j.kind === kind) &&
    (!text || (j.name + ' ' + (j.user ?? '')).toLowerCase().includes(text)));
  const body = $('job-table').tBodies[0];
  if (!rows.size) {
    writeAll(body, shown);
  } else {
    const next = new Map();
    shown.forEach((j, i) => place(body, i, j, next));
    while (body.rows.length > shown.length) body.lastElementChild.remove();
    rows.clear();
    for (const [k, r] of next) rows.set(k, r);
  }
  $('job-counts').textContent = `${shown.length} shown` +
    (jobs.length >= JOB_LIMIT ? ` (the newest ${JOB_LIMIT} asked for; narrow by queue or phase)` : '');
}

// Whether the last listing had the job "queue/name" (shown, or hidden by the kind or text
// filter applied here).
let listed = new Set();
export const showsJobRow = (key) => listed.has(key);

export function setJobs(list) {
  jobs = list;
  listed = new Set(list.map((j) => j.queue + '/' + j.name));
  table();
}

export function initJobs(onServerFilter) {
  options($('f-phase'), PHASES);
  options($('f-kind'), KINDS);
  $('f-queue').addEventListener('change', onServerFilter);
  $('f-phase').addEventListener('change', onServerFilter);
  $('f-kind').addEventListener('change', table);
  $('f-text').addEventListener('input', table);
}
