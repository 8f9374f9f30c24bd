// The live event stream: the controller's event log, newest first, as it arrives from the
// long-poll GET /v1/events?since=SEQ&wait=S (the same stream `tessera get -w` and `tessera get
// events` read). Scheduling-cycle records are hidden unless asked for.
import { $, esc, clock } from './util.js';
import { jobPath } from './api.js';

const KEEP = 300;
let events = [];

function objectLink(object) {
  const m = /^job\/(.+)\/([^/]+)$/.exec(object);
  return m ? `<a href="#${esc(jobPath('/job/', m[1], m[2]))}">${esc(object)}</a>` : esc(object);
}

export function eventItem(e) {
  return `<li data-seq="${e.seq}">${clock(e.timeMs)} <span class="etype">${esc(e.type)}</span> ` +
    `${objectLink(e.object)} ${esc(e.message)}</li>`;
}

const SHOWN = 200;
const hidden = (e) => $('hide-cycles').checked && e.type === 'SchedulingCycle';

function render() {
  const shown = [];
  for (let i = events.length - 1; i >= 0 && shown.length < SHOWN; i--) {
    if (!hidden(events[i])) shown.push(eventItem(events[i]));
  }
  $('event-list').innerHTML = shown.join('');
}

// A batch's events go on top of the list and the oldest beyond SHOWN leave it; the items
// already there are not written again.
function prepend(batch) {
  const added = [];
  for (let i = batch.length - 1; i >= 0 && added.length < SHOWN; i--) {
    if (!hidden(batch[i])) added.push(eventItem(batch[i]));
  }
  if (!added.length) return;
  const list = $('event-list');
  list.insertAdjacentHTML('afterbegin', added.join(''));
  while (list.children.length > SHOWN) list.lastElementChild.remove();
}

export function addEvents(batch) {
  events.push(...batch);
  if (events.length > KEEP) events = events.slice(events.length - KEEP);
  prepend(batch);
}

export function initEvents() { $('hide-cycles').addEventListener('change', render); }
