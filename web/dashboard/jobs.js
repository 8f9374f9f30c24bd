// The jobs table with filters: queue and phase are asked of the controller (GET /v1/jobs
// filters them), kind and the text search are applied here to what it returned.
import { $, chunked, esc, gpus, clock } from './util.js';
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
let rows = new Map();
let order = '';  // the keys shown, in order

const cells = (j) => `<span role="cell">${esc(j.queue)}</span>` +
  `<span role="cell"><a href="#${esc(jobPath('/job/', j.queue, j.name))}">${esc(j.name)}</a></span>` +
  `<span role="cell">${esc(j.kind)}</span><span role="cell" class="phase phase-${esc(j.phase)}">${esc(j.phase)}</span>` +
  `<span role="cell">${j.runningTasks}/${j.tasks}</span><span role="cell">${gpus(j.gpus)}</span>` +
  `<span role="cell">${esc(j.user ?? '')}</span><span role="cell">${clock(j.submitTimeMs)}</span>` +
  `<span role="cell" class="msg">${esc(j.message ?? '')}</span>`;
const keyOf = (j) => j.queue + '/' + j.name;

// Every row written again: the first render, or the jobs shown or their order changed (cheap:
// rows out of view are neither laid out nor painted, style.css .chunk).
function writeAll(body, shown) {
  const html = shown.map(cells);
  body.innerHTML = chunked(shown.map((j, i) => `<div class="tr" role="row" data-job="${esc(keyOf(j))}">${html[i]}</div>`));
  rows = new Map();
  const trs = body.querySelectorAll('[data-job]');
  shown.forEach((j, i) => rows.set(keyOf(j), { html: html[i], tr: trs[i] }));
}

function table() {
  const kind = $('f-kind').value;
  const text = $('f-text').value.toLowerCase();
  const shown = jobs.filter((j) => (!kind || j.kind === kind) &&
    (!text || (j.name + ' ' + (j.user ?? '')).toLowerCase().includes(text)));
  const body = $('job-table').querySelector('.body');
  const keys = shown.map(keyOf).join('\n');
  if (keys !== order) {
    writeAll(body, shown);
    order = keys;
  } else {
    for (const j of shown) {
      const r = rows.get(keyOf(j));
      const html = cells(j);
      if (r.html !== html) { r.tr.innerHTML = html; r.html = html; }
    }
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
