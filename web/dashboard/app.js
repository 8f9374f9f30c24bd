// The dashboard's main module: the first load (status, nodes, queues and their history, jobs at
// once), then the event stream drives every update: each batch of events asks for the listings
// it touches again (coalesced, so a burst costs one fetch of each; nodes as the changes since the
// last answer, not the whole list; jobs only when an event is of a job the table lists or
// changes which jobs it lists). Nothing reloads the page. Nodes and jobs are also read every few
// seconds (a heartbeat that stops is no event until the node is lost; a pending job's reason
// changes with the free GPUs), the GPUs' use every few seconds (it is measured by the agents,
// not an event), and the controller's new samples of the queues' dominant share as it takes
// them.
import { $, Coalescer } from './util.js';
import { AuthError, get, setToken, takeTokenFromFragment, token } from './api.js';
import { applyNodeChanges, initCluster, setUsage } from './cluster.js';
import { addHistory, lastHistoryMs, loadChart, setQueues, queueNames } from './queues.js';
import { initJobs, jobQuery, setJobs, setQueueChoices, showsJobRow } from './jobs.js';
import { addEvents, initEvents } from './events.js';
import { closeJob, initJobPage, openJob, refreshJob, showsJob } from './job_page.js';

const NODE_REFRESH_MS = 5000;
const JOB_REFRESH_MS = 5000;
const USAGE_REFRESH_MS = 3000;
const HISTORY_REFRESH_MS = 5000;
const POLL_WAIT_S = 20;
const BATCH_GAP_MS = 100;
// A busy cluster commits a thousand events a second or more (1,250 nodes whose jobs end and
// start all the time): one poll must be able to take a second's worth, or the page falls behind.
const POLL_LIMIT = 10000;
const RECENT_EVENTS = 200;

// Timings the browser test reads (tests/web): when the first full render was done, and when
// each event batch had been applied to the page.
const perf = { firstRenderMs: null, loadedSeq: Infinity, batches: [] };
window.tesseraDashboard = perf;

let authProblem = null;

function showAuth(reason) {
  authProblem = reason;
  $('auth').hidden = false;
  $('auth-reason').textContent = reason + (token() ? ' (the stored token was refused)' : '');
}

async function guarded(fn) {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof AuthError) showAuth(e.message);
    throw e;
  }
}

async function loadStatus() {
  const s = await guarded(() => get('/v1/status'));
  const phases = Object.entries(s.jobs).map(([p, n]) => `${n} ${p}`).join(', ') || 'no jobs';
  $('summary').textContent = `${s.readyNodes}/${s.nodes} nodes ready · jobs: ${phases} · ` +
    `queue policy ${s.queuePolicy}, placement ${s.placementPolicy}` +
    (s.schedulerError ? ' · scheduler error: ' + s.schedulerError : '');
  return s;
}
let nodeGeneration = 0;  // of the last /v1/nodes/changes answer applied (0: none yet)
async function loadNodes() {
  const doc = await guarded(() => get(`/v1/nodes/changes?since=${nodeGeneration}`));
  applyNodeChanges(doc);
  nodeGeneration = doc.generation;
}
const loadHistory = async () =>
  addHistory(await guarded(() => get(`/v1/queues/history?sinceMs=${lastHistoryMs()}`)));
const loadUsage = async () => setUsage(await guarded(() => get('/v1/usage')));
async function loadQueues() {
  const queues = (await guarded(() => get('/v1/queues'))).queues;
  setQueues(queues);
  setQueueChoices(queueNames(queues));
}
const loadJobs = async () => setJobs((await guarded(() => get(jobQuery()))).jobs);

const refresh = {
  status: new Coalescer(loadStatus, 250),
  nodes: new Coalescer(loadNodes, 250),
  queues: new Coalescer(loadQueues, 250),
  jobs: new Coalescer(loadJobs, 250),
  job: new Coalescer(refreshJob, 250),
  usage: new Coalescer(loadUsage, 1000),
  history: new Coalescer(loadHistory, 1000),
};

function setLive(on, text) {
  const el = $('live');
  el.className = 'live ' + (on ? 'on' : 'off');
  el.textContent = text;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Resolves once what was just written to the page has been drawn (the next frame), or after
// 200 ms (a hidden page draws no frames).
const painted = () => new Promise((r) => {
  requestAnimationFrame(() => setTimeout(r, 0));
  setTimeout(r, 200);
});

// Applies one batch: the listings it touches are fetched again, then the batch is recorded
// with the time its fetches had all been rendered. Not awaited by the event loop: the next
// poll goes out at once, and batches that arrive while a listing is being fetched share its
// next fetch (a backlog of batches each waiting for its own fetches would delay every later
// event by all of them).
// The jobs table changes with an event of a job it shows, or one that adds or removes a job
// (the newest jobs, of a queue: nothing else changes which jobs those are), or any job event
// while it is filtered by phase. At 100,000 jobs most events are of jobs it does not show.
function touchesJobTable(e) {
  if (!e.object.startsWith('job/')) return false;
  return e.type === 'JobSubmitted' || e.type === 'JobPurged' || $('f-phase').value !== '' ||
    showsJobRow(e.object.slice(4));
}

async function applyBatch(batch) {
  const receivedAt = Date.now();
  addEvents(batch);
  const touched = new Set(['status']);
  for (const e of batch) {
    if (e.object.startsWith('node/') || e.object.startsWith('job/') || e.type === 'SchedulingCycle') {
      touched.add('nodes'); touched.add('queues');
    }
    if (touchesJobTable(e)) touched.add('jobs');
    if (showsJob(e.object)) touched.add('job');
  }
  await Promise.all([...touched].map((k) => refresh[k].request()));
  await painted();
  // Timed from the oldest event committed after the page's first load (the ones before it are
  // history it reads, not updates).
  let oldest = Infinity, count = 0;
  for (const e of batch) if (e.seq > perf.loadedSeq) { oldest = Math.min(oldest, e.timeMs); count++; }
  if (!count) return;
  perf.batches.push({ lastSeq: batch[batch.length - 1].seq, receivedAt, appliedAt: Date.now(),
    oldestEventMs: oldest, events: count });
  if (perf.batches.length > 2000) perf.batches.shift();
}

async function eventLoop(since) {
  for (;;) {
    try {
      const r = await guarded(() => get(`/v1/events?since=${since}&wait=${POLL_WAIT_S}&limit=${POLL_LIMIT}`));
      setLive(true, 'live');
      if (r.events.length) {
        since = r.next;
        applyBatch(r.events);
        await sleep(BATCH_GAP_MS);  // lets a burst gather into one batch
      } else if (r.lastSeq < since) {
        since = r.lastSeq;  // a fresh controller (new store) started its sequence again
      }
    } catch (e) {
      setLive(false, e instanceof AuthError ? 'not authorised' : 'disconnected: ' + e.message);
      await sleep(e instanceof AuthError ? 5000 : 1000);
    }
  }
}

function route() {
  const m = /^#\/job\/(.+)\/([^/]+)$/.exec(location.hash);
  const onJob = m !== null;
  $('overview').hidden = onJob;
  $('job-page').hidden = !onJob;
  if (onJob) {
    const queue = m[1].split('/').map(decodeURIComponent).join('/');
    openJob(queue, decodeURIComponent(m[2])).catch((e) => { $('job-title').textContent += ' — ' + e.message; });
  } else {
    closeJob();
  }
}

async function start() {
  try {
    refresh.history.request();  // the chart draws when its history comes; not part of the render
    const [status] = await Promise.all([loadStatus(), loadNodes(), loadQueues(), loadJobs()]);
    await painted();
    perf.firstRenderMs = performance.now();
    loadChart();
    document.body.dataset.ready = 'true';
    $('auth').hidden = true;
    loadUsage().catch(() => {});
    const since = Math.max(0, status.lastEventSeq - RECENT_EVENTS);
    perf.loadedSeq = status.lastEventSeq;
    setInterval(() => refresh.nodes.request(), NODE_REFRESH_MS);
    // A pending job's message (why it waits) changes with the free GPUs, without its own event.
    setInterval(() => refresh.jobs.request(), JOB_REFRESH_MS);
    setInterval(() => { if (!document.hidden) refresh.usage.request(); }, USAGE_REFRESH_MS);
    setInterval(() => refresh.history.request(), HISTORY_REFRESH_MS);
    eventLoop(since);
  } catch (e) {
    if (!(e instanceof AuthError)) {
      setLive(false, 'cannot reach the controller: ' + e.message);
      setTimeout(start, 2000);
    }
  }
}

function init() {
  takeTokenFromFragment();
  $('forget-token').hidden = !token();
  $('forget-token').addEventListener('click', () => { setToken(''); location.reload(); });
  $('auth').addEventListener('submit', (ev) => {
    ev.preventDefault();
    setToken($('auth-token').value.trim());
    $('forget-token').hidden = !token();
    if (authProblem !== null) { authProblem = null; $('auth').hidden = true; start(); }
  });
  initCluster();
  initJobs(() => refresh.jobs.request());
  initEvents();
  initJobPage();
  window.addEventListener('hashchange', route);
  route();
  start();
}

init();
