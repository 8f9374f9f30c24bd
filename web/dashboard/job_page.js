// One job: its summary, tasks (rank, attempt, state, node, GPUs), the nodes and GPUs it holds,
// its events and the tail of a task's log (GET /v1/logs, which the controller reads from the
// task's agent).
import { $, esc, gpus, clock } from './util.js';
import { get, getResponse, jobPath } from './api.js';
import { eventItem } from './events.js';

const LOG_LINES = 80;
const LOG_TAIL_BYTES = 32768;
let current = null;  // {queue, name}

export function openJob(queue, name) {
  current = { queue, name };
  $('job-title').textContent = queue + '/' + name;
  $('job-log').textContent = '';
  $('log-rank').innerHTML = '';
  return refreshJob();
}

export function closeJob() { current = null; }

export function showsJob(object) {
  return current !== null && object === 'job/' + current.queue + '/' + current.name;
}

function summary(j) {
  const facts = [['phase', j.phase], ['kind', j.kind], ['priority', j.priority],
    ['tasks', `${j.runningTasks} running of ${j.tasks}`], ['GPUs', gpus(j.gpus)],
    ['attempt', j.attempt], ['restarts', `${j.restarts} of at most ${j.maxRestarts}`],
    ['submitted', clock(j.submitTimeMs)], ['started', clock(j.startTimeMs)],
    ['finished', clock(j.finishTimeMs)], ['user', j.user ?? ''], ['message', j.message ?? '']];
  $('job-summary').innerHTML = facts.filter(([, v]) => v !== '' && v !== undefined)
    .map(([k, v]) => `<dt>${esc(k)}</dt><dd class="${k === 'phase' ? 'phase-' + esc(v) : ''}">${esc(v)}</dd>`).join('');
}

function tasks(j) {
  $('job-tasks').tBodies[0].innerHTML = j.taskList.map((t) =>
    `<tr><td>${t.rank}</td><td>${t.attempt}</td><td>${esc(t.state)}</td><td>${esc(t.node)}</td>` +
    `<td>${esc(t.gpus.join(','))}${t.gpuMilli ? ` (${t.gpuMilli / 1000} each)` : ''}${t.simulatedGpus ? ' simulated' : ''}</td>` +
    `<td>${t.finishedMs ? t.exitCode : ''}</td><td>${clock(t.startedMs)}</td><td class="msg">${esc(t.message ?? '')}</td></tr>`).join('');
  const live = j.taskList.filter((t) => ['Pending', 'Starting', 'Running', 'Stopping'].includes(t.state));
  const byNode = new Map();
  for (const t of live) byNode.set(t.node, (byNode.get(t.node) ?? []).concat(t.gpus));
  $('job-nodes').textContent = byNode.size
    ? [...byNode].map(([n, g]) => `${n}: GPUs ${g.join(',')}`).join('; ')
    : 'no live tasks';
  const ranks = [...new Set(j.taskList.map((t) => t.rank))].sort((a, b) => a - b);
  const select = $('log-rank');
  if (select.options.length !== ranks.length) {
    const keep = select.value;
    select.innerHTML = ranks.map((r) => `<option value="${r}">rank ${r}</option>`).join('');
    if (keep) select.value = keep;
  }
}

// The log's last LOG_LINES lines: its size first (X-Tessera-Size, from the agent), then its
// last LOG_TAIL_BYTES, so that a long log costs no more than a short one.
async function logTail(j) {
  if (!j.taskList.length) { $('job-log').textContent = '(no task has started yet)'; return; }
  const rank = $('log-rank').value || '0';
  const path = jobPath('/v1/logs/', current.queue, current.name) + `?rank=${rank}`;
  try {
    const head = await getResponse(path + '&offset=0&limit=1');
    const size = Number(head.headers.get('X-Tessera-Size') || 0);
    const from = Math.max(0, size - LOG_TAIL_BYTES);
    const text = await (await getResponse(path + `&offset=${from}&limit=${LOG_TAIL_BYTES}`)).text();
    const lines = text.split('\n');
    if (from > 0) lines.shift();  // cut mid-line
    $('job-log').textContent = lines.slice(-LOG_LINES).join('\n') || '(empty log)';
  } catch (e) {
    $('job-log').textContent = '(log unavailable: ' + e.message + ')';
  }
}

export async function refreshJob() {
  if (!current) return;
  const j = await get(jobPath('/v1/jobs/', current.queue, current.name));
  summary(j);
  tasks(j);
  $('job-events').innerHTML = j.events.slice().reverse().map((e) => eventItem({ ...e, object: '' })).join('');
  await logTail(j);
}

export function initJobPage() { $('log-rank').addEventListener('change', () => refreshJob()); }
