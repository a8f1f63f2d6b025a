// Events: per project, Event → worker → jobs, with phases, durations and
// exit codes; an event's page (eventPanel) follows the logs and cancels.
import { h, replace } from '../dom.js';
import * as api from '../api.js';
import { LiveList } from '../live.js';
import { badge, isTerminalEvent, isFailing } from '../phase.js';
import { href, span, filters, filterBar } from './common.js';
import { act, confirmAction } from './dialog.js';

const perProject = 100;

// duration of a worker or job: ended (or now) minus started.
export function duration(u, now = Date.now()) {
  if (!u || !u.started) return '';
  return span((u.ended ? Date.parse(u.ended) : now) - Date.parse(u.started)) + (u.ended ? '' : ' so far');
}

function unitCells(u) {
  return [h('td', {}, badge((u && u.phase) || 'PENDING')), h('td', {}, duration(u)),
    h('td', {}, u && u.exitCode !== undefined && u.exitCode !== null && u.ended ? 'exit ' + u.exitCode : ''),
    h('td', {}, (u && u.reason) || '')];
}

export function events(ctx) {
  document.title = 'Events · cairn';
  const f = filters(ctx.query);
  const list = new LiveList('events', f.ns, { labelSelector: f.labelSelector }).start();
  ctx.onCleanup(() => list.stop());
  const out = h('div', { id: 'events' });
  const note = h('p', { class: 'liststatus', role: 'status' });
  replace(ctx.main, h('h1', {}, 'Events'), filterBar(ctx), note, out);
  const draw = () => {
    const byProject = new Map();
    for (const e of list.values()) {
      if (f.search && !e.metadata.name.toLowerCase().includes(f.search)) continue;
      if (f.failing && !isFailing(e)) continue;
      const k = e.metadata.namespace + '/' + (e.spec.project || '');
      if (!byProject.has(k)) byProject.set(k, []);
      byProject.get(k).push(e);
    }
    note.textContent = list.state === 'failed' ? 'Cannot read events: ' + list.error.message
      : `${list.items.size} events in ${byProject.size} projects · live`;
    replace(out, [...byProject.keys()].sort().map(k => {
      const evs = byProject.get(k).sort((a, b) => b.metadata.creationTimestamp.localeCompare(a.metadata.creationTimestamp) || a.metadata.name.localeCompare(b.metadata.name));
      return h('section', { class: 'project' }, h('h2', {}, 'Project ', k),
        h('table', { class: 'events' },
          h('thead', {}, h('tr', {}, ['event', 'source / type', 'worker', 'duration', 'exit', 'reason', 'jobs'].map(t => h('th', { scope: 'col' }, t)))),
          h('tbody', {}, evs.slice(0, perProject).map(e => {
            const w = (e.status && e.status.worker) || {};
            const jobs = (e.status && e.status.jobs) || [];
            return h('tr', { data: { event: e.metadata.name } },
              h('td', {}, h('a', { href: href(e) }, e.metadata.name)),
              h('td', {}, (e.spec.source || '') + ' ' + (e.spec.type || '')),
              unitCells(w),
              h('td', {}, jobs.map(j => h('span', { class: 'job' }, j.name, ' ', badge(j.phase), j.ended && j.exitCode !== undefined ? ' exit ' + j.exitCode : ''))));
          }))),
        evs.length > perProject ? h('p', {}, `${evs.length - perProject} older events not shown: filter by name to find them.`) : null);
    }));
  };
  list.subscribe(draw);
  draw();
}

// Log shows one unit's output, following it while it runs.
class Log {
  constructor(ns, name, job) {
    this.path = api.objectPath('events', ns, name) + '/logs?follow=true' + (job ? '&job=' + encodeURIComponent(job) : '');
    this.pre = h('pre', { class: 'log', tabindex: '0', 'aria-label': (job ? 'job ' + job : 'worker') + ' log', data: { unit: job || 'worker' } });
    this.state = h('span', { class: 'logstate' }, 'not started');
    this.el = h('div', { class: 'logbox' }, h('h3', {}, job ? 'Job ' + job : 'Worker', ' log ', this.state), this.pre);
    this.running = false;
    this.done = false;
    this.ctl = new AbortController();
  }

  // update starts following once the unit has started.
  update(phase) {
    if (this.running || this.done || !phase || phase === 'PENDING') return;
    this.running = true;
    this.state.textContent = 'following…';
    this.pre.textContent = '';
    api.follow(this.path, { signal: this.ctl.signal }, t => {
      const atEnd = this.pre.scrollTop + this.pre.clientHeight >= this.pre.scrollHeight - 4;
      this.pre.append(t);
      if (atEnd) this.pre.scrollTop = this.pre.scrollHeight;
    }).then(() => { this.done = true; this.state.textContent = 'complete'; })
      .catch(e => {
        if (e.name === 'AbortError') return;
        this.running = false;
        this.state.textContent = e.code === 404 ? 'not started' : 'unavailable: ' + e.message;
      });
  }

  stop() { this.ctl.abort(); }
}

// eventPanel is the live part of an Event's page: worker, jobs, logs and
// the cancel action. update(ev) is called with each new version.
export function eventPanel(ev, onCleanup) {
  const m = ev.metadata;
  const logs = new Map();
  const worker = new Log(m.namespace, m.name, '');
  onCleanup(() => { worker.stop(); logs.forEach(l => l.stop()); });
  const table = h('tbody');
  const logBox = h('div', { class: 'logs' }, worker.el);
  const cancel = h('button', { id: 'cancel-event', type: 'button', class: 'danger', onclick: async () => {
    if (await confirmAction(`Cancel event ${m.namespace}/${m.name}? A pending event is canceled; a running one is aborted with its jobs.`, 'Cancel event')) {
      act('cancel of ' + m.name, () => api.request('POST', api.objectPath('events', m.namespace, m.name) + '/cancel'));
    }
  } }, 'Cancel event…');
  const el = h('section', { class: 'eventpanel' }, h('h2', {}, 'Worker and jobs'), cancel,
    h('table', { class: 'events' }, h('thead', {}, h('tr', {}, ['unit', 'phase', 'duration', 'exit', 'reason'].map(t => h('th', { scope: 'col' }, t)))), table), logBox);
  const update = e => {
    const w = (e.status && e.status.worker) || {};
    const jobs = (e.status && e.status.jobs) || [];
    cancel.hidden = isTerminalEvent(w.phase);
    replace(table, h('tr', { data: { unit: 'worker' } }, h('th', { scope: 'row' }, 'worker'), unitCells(w)),
      jobs.map(j => h('tr', { data: { unit: j.name } }, h('th', { scope: 'row' }, 'job ' + j.name), unitCells(j))));
    worker.update(w.phase);
    for (const j of jobs) {
      if (!logs.has(j.name)) { const l = new Log(m.namespace, m.name, j.name); logs.set(j.name, l); logBox.append(l.el); }
      logs.get(j.name).update(j.phase);
    }
  };
  update(ev);
  return { el, update };
}
