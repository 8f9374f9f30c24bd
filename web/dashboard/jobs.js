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

function table() {
  const kind = $('f-kind').value;
  const text = $('f-text').value.toLowerCase();
  const shown = jobs.filter((j) => (!kind || j.kind === kind) &&
    (!text || (j.name + ' ' + (j.user ?? '')).toLowerCase().includes(text)));
  $('job-table').tBodies[0].innerHTML = shown.map((j) =>
    `<tr data-job="${esc(j.queue + '/' + j.name)}"><td>${esc(j.queue)}</td>` +
    `<td><a href="#${esc(jobPath('/job/', j.queue, j.name))}">${esc(j.name)}</a></td>` +
    `<td>${esc(j.kind)}</td><td class="phase phase-${esc(j.phase)}">${esc(j.phase)}</td>` +
    `<td>${j.runningTasks}/${j.tasks}</td><td>${gpus(j.gpus)}</td><td>${esc(j.user ?? '')}</td>` +
    `<td>${clock(j.submitTimeMs)}</td><td class="msg">${esc(j.message ?? '')}</td></tr>`).join('');
  $('job-counts').textContent = `${shown.length} shown` +
    (jobs.length >= JOB_LIMIT ? ` (the newest ${JOB_LIMIT} asked for; narrow by queue or phase)` : '');
}

export function setJobs(list) { jobs = list; table(); }

export function initJobs(onServerFilter) {
  options($('f-phase'), PHASES);
  options($('f-kind'), KINDS);
  $('f-queue').addEventListener('change', onServerFilter);
  $('f-phase').addEventListener('change', onServerFilter);
  $('f-kind').addEventListener('change', table);
  $('f-text').addEventListener('input', table);
}
