// The dashboard in a real browser: Debian's Chromium, headless, driven by puppeteer-core over
// the DevTools protocol (never a downloaded browser). Run by tests/cli/dashboard_browser_test.cpp
// against a `tessera up` cluster; usable by hand too:
//
//   node web/test/dashboard_check.mjs --url http://127.0.0.1:PORT [--token T] --out DIR \
//     [--finishing QUEUE/NAME] [--cancel QUEUE/NAME] [--job QUEUE/NAME] \
//     [--measure-seconds S --reloads K]
//
// It opens /ui/, waits for the first render and checks that every node, queue and job the API
// lists is in the page as text; then it watches the page while a job finishes on its own
// (--finishing: a held job it releases) and while it cancels one (--cancel) and measures how long after the event the
// page showed it; it opens one job's page (--job: tasks, log tail) and saves screenshots in
// --out. It checks that the page reads nodes as changes (/v1/nodes/changes, never the whole
// /v1/nodes) and that the queue chart starts from the controller's history. With
// --measure-seconds (bench/dashboard_scale.sh, on a cluster whose jobs end and start all the
// time) it loads the page --reloads times (first render each) and then, for S seconds, records
// how long after each event the page had applied it (perf.batches of app.js: the listings the
// batch touched fetched again and drawn, minus its oldest event's commit time); jobs are not checked
// as text then (they change under the check). The last line of stdout is one JSON object: the timings and the problems found (none:
// the checks passed). Exits non-zero when a problem was found.
import puppeteer from 'puppeteer-core';
import { mkdirSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' }, token: { type: 'string', default: '' }, out: { type: 'string' },
    finishing: { type: 'string', default: '' }, cancel: { type: 'string', default: '' },
    job: { type: 'string', default: '' },
    'measure-seconds': { type: 'string', default: '0' }, reloads: { type: 'string', default: '1' },
    chromium: { type: 'string', default: process.env.TESSERA_CHROMIUM || '/usr/bin/chromium' },
    'timeout-ms': { type: 'string', default: '15000' },
    // `tessera up`'s own CA signs the controller's certificate; Node trusts it through
    // NODE_EXTRA_CA_CERTS, Chromium is told to accept it (a test's browser only).
    'insecure-tls': { type: 'boolean', default: false },
  },
});
const TIMEOUT = Number(opt['timeout-ms']);
const MEASURE_S = Number(opt['measure-seconds']);
const report = { problems: [], stagesMs: {} };
const started = Date.now();
const stage = (name) => { report.stagesMs[name] = Date.now() - started; };
const problem = (text) => { report.problems.push(text); console.error('problem: ' + text); };

async function api(path, method = 'GET', body = undefined) {
  const headers = opt.token ? { Authorization: 'Bearer ' + opt.token } : {};
  const res = await fetch(opt.url + path, { method, headers, body: body && JSON.stringify(body) });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}
const jobApiPath = (qn) => {
  const i = qn.lastIndexOf('/');
  return '/v1/jobs/' + qn.slice(0, i) + '/' + qn.slice(i + 1);
};

// Records, in the page, when each job row first showed each phase (wall-clock ms, the
// controller's clock on this machine).
function watchPhases() {
  window.__phaseSeen = {};
  const note = () => {
    for (const row of document.querySelectorAll('#job-table [data-job]')) {
      const key = row.dataset.job + '|' + row.querySelector('.phase').textContent;
      if (!(key in window.__phaseSeen)) window.__phaseSeen[key] = Date.now();
    }
  };
  note();
  new MutationObserver(note).observe(document.getElementById('job-table'), { childList: true, subtree: true, characterData: true });
}

async function phaseSeenAt(page, job, phases) {
  const handle = await page.waitForFunction((j, ps) => {
    for (const p of ps) if (window.__phaseSeen[j + '|' + p]) return window.__phaseSeen[j + '|' + p];
    return false;
  }, { timeout: TIMEOUT, polling: 50 }, job, phases);
  return handle.jsonValue();
}

async function textCheck(page, selector, names, what) {
  const text = await page.$eval(selector, (el) => el.textContent);
  const missing = names.filter((n) => !text.includes(n));
  if (missing.length) problem(`${what} not shown as text in ${selector}: ${missing.slice(0, 5).join(', ')}` +
    (missing.length > 5 ? ` and ${missing.length - 5} more` : ''));
  return names.length - missing.length;
}

// First render: from navigation start to nodes, queues and jobs all drawn.
async function load(page) {
  await page.goto(opt.url + '/ui/' + (opt.token ? '#token=' + encodeURIComponent(opt.token) : ''),
                  { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => document.body.dataset.ready === 'true', { timeout: TIMEOUT });
  Object.assign(report, await page.evaluate(() => ({
    firstContentfulPaintMs: performance.getEntriesByType('paint').find((p) => p.name === 'first-contentful-paint')?.startTime ?? null,
    firstRenderMs: window.tesseraDashboard.firstRenderMs,
    fragmentAfterLoad: location.hash,
  })));
  if (report.fragmentAfterLoad.includes('token')) problem('the token stayed in the address bar');
}

// Every node, queue and job the API lists, as text in the page.
async function checkContents(page) {
  const [nodes, queues] = await Promise.all([api('/v1/nodes'), api('/v1/queues')]);
  report.nodes = await textCheck(page, '#node-table', nodes.nodes.map((n) => n.name), 'nodes');
  report.queues = await textCheck(page, '#queue-table', queues.queues.map((q) => q.name), 'queues');
  if (!MEASURE_S) {
    const jobs = await api('/v1/jobs?limit=500&order=newest');
    report.jobs = await textCheck(page, '#job-table', jobs.jobs.map((j) => j.name), 'jobs');
  }
  if (await page.$eval('#grid', (c) => c.height) <= 0) problem('the cluster grid is empty');
  // The chart's points: the controller's samples (at least the one taken at its start) and now.
  await page.waitForFunction(() => (window.Chart?.getChart('share-chart')?.data.labels.length ?? 0) >= 2,
    { timeout: TIMEOUT, polling: 100 }).catch(() => {});
  report.shareChartPoints = await page.evaluate(() => window.Chart?.getChart('share-chart')?.data.labels.length ?? 0);
  if (report.shareChartPoints < 2) problem(`the share chart has ${report.shareChartPoints} points, not the controller's history and now`);
  await (await page.$('#cluster')).screenshot({ path: opt.out + '/dashboard-cluster.png' });
}

// Released now (it was submitted held), the job runs and ends by itself: the page shows it
// Succeeded this long after the controller recorded its end (finishTimeMs).
async function measureFinish(page, job) {
  const i = job.lastIndexOf('/');
  await api('/v1/release', 'POST', { queue: job.slice(0, i), names: [job.slice(i + 1)] });
  const seen = await phaseSeenAt(page, job, ['Succeeded', 'Failed']);
  const finished = await api(jobApiPath(job));
  report.finishUpdateMs = seen - finished.finishTimeMs;
  report.finishedPhase = finished.phase;
}

// A cancel sent from here: the page shows the job Cancelling (or already Cancelled) this long
// after the request was sent.
async function measureCancel(page, job) {
  const sent = Date.now();
  await api(jobApiPath(job), 'DELETE');
  report.cancelUpdateMs = await phaseSeenAt(page, job, ['Cancelling', 'Cancelled']) - sent;
}

// The job's page, reached by its link in the jobs table: its tasks and its log tail.
async function openJobPage(page, job) {
  const i = job.lastIndexOf('/');
  const href = '#/job/' + job.slice(0, i).split('/').map(encodeURIComponent).join('/') + '/' + encodeURIComponent(job.slice(i + 1));
  // Clicked inside the page: the table may be redrawn by an update between a lookup from
  // here and the click.
  await page.$eval('#job-table', (table, h) => table.querySelector(`a[href="${h}"]`).click(), href);
  await page.waitForFunction(() => document.querySelectorAll('#job-tasks tbody tr').length > 0 &&
    document.getElementById('job-log').textContent.length > 0, { timeout: TIMEOUT });
  report.jobPageTasks = await page.$$eval('#job-tasks tbody tr', (rows) => rows.length);
  report.jobLogTail = await page.$eval('#job-log', (el) => el.textContent.slice(-200));
  await page.screenshot({ path: opt.out + '/dashboard-job.png', fullPage: true });
}

// Where one load's time went (--measure-seconds): per API request of the first render its
// bytes, the server's answer time (request sent -> first byte) and the whole fetch; and the
// page's main-thread work (DevTools Performance.getMetrics: scripts, style, layout, all tasks).
const METRICS = ['TaskDuration', 'ScriptDuration', 'RecalcStyleDuration', 'LayoutDuration'];
async function mainThread(page) {
  const m = (await page.metrics());
  return Object.fromEntries(METRICS.map((k) => [k, m[k] ?? 0]));
}
const minus = (a, b) => Object.fromEntries(METRICS.map((k) => [k, Math.round((a[k] - b[k]) * 1000)]));
async function firstLoadRequests(page) {
  return page.evaluate(() => performance.getEntriesByType('resource')
    .filter((r) => r.responseEnd <= window.tesseraDashboard.firstRenderMs)
    .map((r) => ({ path: new URL(r.name).pathname + new URL(r.name).search, bytes: r.decodedBodySize,
      startMs: Math.round(r.startTime), answerMs: Math.round(r.responseStart - r.requestStart),
      totalMs: Math.round(r.responseEnd - r.startTime) })));
}

const percentile = (v, p) => {
  if (!v.length) return null;
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

// First render over --reloads loads, then each event batch's delay for MEASURE_S seconds.
async function measureAtScale(page) {
  const renders = [report.firstRenderMs];
  report.firstLoads = [];
  for (let i = 1; i < Number(opt.reloads); i++) {
    await page.reload({ waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => document.body.dataset.ready === 'true', { timeout: TIMEOUT });
    // The figures start again with each document: these are the load's own.
    const work = minus(await mainThread(page), Object.fromEntries(METRICS.map((k) => [k, 0])));
    renders.push(await page.evaluate(() => window.tesseraDashboard.firstRenderMs));
    report.firstLoads.push({ firstRenderMs: Math.round(renders[renders.length - 1]),
      mainThreadMs: work, requests: await firstLoadRequests(page) });
  }
  report.firstRenderMsAll = renders;
  report.firstRender = { p50: percentile(renders, 50), max: Math.max(...renders) };
  const from = Date.now();  // batches applied during the reloads are not timed
  const before = await mainThread(page);
  await new Promise((r) => setTimeout(r, MEASURE_S * 1000));
  // The page's main thread over the window: busy ms per second of it.
  report.windowMainThreadMsPerS = Object.fromEntries(Object.entries(minus(await mainThread(page), before))
    .map(([k, v]) => [k, Math.round(v / MEASURE_S)]));
  const batches = (await page.evaluate(() => window.tesseraDashboard.batches))
    .filter((b) => b.appliedAt >= from);
  // Per batch: from its oldest event's commit to the page having drawn what it touched.
  const delays = batches.map((b) => b.appliedAt - b.oldestEventMs);
  report.updateAfterEventMs = { p50: percentile(delays, 50), p99: percentile(delays, 99),
    max: delays.length ? Math.max(...delays) : null, batches: delays.length,
    events: batches.reduce((n, b) => n + b.events, 0) };
  // Where it went: the event reaching the page (its poll answered), then the page's fetches of
  // what it touched, answered and drawn.
  const arrive = batches.map((b) => b.receivedAt - b.oldestEventMs);
  const fetch = batches.map((b) => b.appliedAt - b.receivedAt);
  report.eventToPageMs = { p50: percentile(arrive, 50), p99: percentile(arrive, 99) };
  report.fetchAndDrawMs = { p50: percentile(fetch, 50), p99: percentile(fetch, 99) };
  if (!delays.length) problem(`no event batch applied in ${MEASURE_S} s`);
}

const browser = await puppeteer.launch({
  executablePath: opt.chromium, headless: true, acceptInsecureCerts: opt['insecure-tls'],
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
try {
  mkdirSync(opt.out, { recursive: true });
  stage('browser');
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  page.on('pageerror', (e) => problem('page error: ' + e.message));
  const unauthorised = [];
  report.wholeNodeListings = 0;
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === '/v1/nodes') report.wholeNodeListings++;
    if (opt.token && new URL(r.url()).pathname.startsWith('/v1/') &&
        r.headers().authorization !== 'Bearer ' + opt.token) unauthorised.push(r.url());
  });
  await load(page);
  stage('loaded');
  await checkContents(page);
  stage('checked');
  if (MEASURE_S) await measureAtScale(page);
  await page.evaluate(watchPhases);
  if (opt.finishing) {
    await measureFinish(page, opt.finishing);
    stage('finished');
  }
  if (opt.cancel) {
    await measureCancel(page, opt.cancel);
    stage('cancelled');
  }
  await page.screenshot({ path: opt.out + '/dashboard-after-updates.png', fullPage: true });
  if (opt.job) {
    await openJobPage(page, opt.job);
    stage('jobPage');
  }
  if (report.wholeNodeListings) problem(`the page fetched the whole /v1/nodes ${report.wholeNodeListings} times`);
  if (unauthorised.length) problem('API requests without the bearer token: ' + unauthorised.slice(0, 3).join(', '));
} catch (e) {
  problem(e.message);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
process.exit(report.problems.length ? 1 : 0);
