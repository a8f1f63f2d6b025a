// LiveList: a collection kept current over watch, as an informer does.
// It reads the first page, shows it, reads the other pages in the
// background (every page is of one revision), and watches from that
// revision meanwhile. A dropped watch is resumed from the last
// resourceVersion seen, so no change is lost; only a 410 Gone (the
// revision was compacted) lists again.
import * as api from './api.js';

// The first page is small, to show something at once; the others are
// larger, to read the rest in few requests.
const firstPage = 200;
const pageSize = 500;
const maxBackoff = 5000;

// Every running LiveList (and LiveCount), for the connection banner.
export const running = new Set();
const stateListeners = new Set();

// onConnection calls f(reconnecting, lastError) whenever a list's
// connection state changes; it returns a function that stops it.
export function onConnection(f) {
  stateListeners.add(f);
  return () => stateListeners.delete(f);
}

// connectionChanged tells the listeners whether any running list or
// count is reconnecting.
export function connectionChanged() {
  let bad = null;
  for (const l of running) if (l.state === 'reconnecting') bad = l;
  for (const f of stateListeners) f(!!bad, bad && bad.error);
}

// keyOf is an object's key in a list: namespace/name.
export function keyOf(o) { return (o.metadata.namespace || '') + '/' + o.metadata.name; }

function rvOf(o) { return Number(o.metadata.resourceVersion || 0); }

// afterWatch decides what a live collection does after its list or watch
// failed with err: 'relist' on 410 Gone (its revision was compacted: read
// everything again), 'fail' when the server refuses the request itself
// (400, 401, 403, 404: asking again cannot help), 'retry' otherwise (the
// network, a restart, a 5xx: resume from the last resourceVersion seen).
export function afterWatch(err) {
  const code = err && err.code;
  if (code === 410) return 'relist';
  if (code === 400 || code === 401 || code === 403 || code === 404) return 'fail';
  return 'retry';
}

// nextBackoff is the wait before the next retry: twice the last, at most
// maxBackoff.
export function nextBackoff(ms) { return Math.min(ms * 2, maxBackoff); }

// sleep resolves after ms, or at once when signal aborts.
export const sleep = (ms, signal) => new Promise(r => {
  const t = setTimeout(r, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); r(); }, { once: true });
});

// LiveSource is what LiveList and LiveCount share: the collection they
// follow, their connection state, their listeners (called at most once
// per frame) and their place among the running sources.
export class LiveSource {
  // plural and ns name the collection ("" or "*" for all namespaces);
  // opts: labelSelector, fieldSelector (applied by the server).
  constructor(pl, ns, opts = {}) {
    this.plural = pl;
    this.ns = ns;
    this.opts = opts;
    this.rv = '';
    this.state = 'loading'; // loading | live | reconnecting | failed
    this.error = null;
    this.listeners = new Set();
    this.ctl = new AbortController();
    this.scheduled = false;
  }

  // subscribe calls f(this) after changes (at most once per frame).
  subscribe(f) { this.listeners.add(f); return () => this.listeners.delete(f); }

  changed() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      for (const f of this.listeners) f(this);
    });
  }

  setState(s, err) {
    this.state = s;
    this.error = err || null;
    connectionChanged();
    this.changed();
  }

  // start begins following the collection; it returns at once.
  start() { running.add(this); this.run(); return this; }

  // stop ends the watch and every request.
  stop() { this.ctl.abort(); running.delete(this); connectionChanged(); }
}

export class LiveList extends LiveSource {
  constructor(pl, ns, opts = {}) {
    super(pl, ns, opts);
    this.items = new Map();
    this.tombs = new Map(); // key → rv of deletions seen before their page
    this.complete = false; // every page read
  }

  // apply records o as of a page (fromPage) or a watch event.
  put(o, fromPage) {
    if (!o.kind || o.kind === 'PartialObjectMetadata') o.kind = api.kindOf(this.plural);
    const k = keyOf(o);
    const cur = this.items.get(k);
    if (cur && rvOf(cur) >= rvOf(o)) return;
    if (fromPage && this.tombs.has(k)) return;
    this.items.set(k, o);
  }

  async run() {
    const signal = this.ctl.signal;
    let backoff = 250;
    while (!signal.aborted) {
      try {
        if (!this.rv) await this.listFirst(signal);
        this.setState('live');
        await api.watch(this.plural, this.ns, this.rv, { ...this.opts, signal }, ev => this.event(ev));
        backoff = 250; // the server ended the stream cleanly: watch again
      } catch (e) {
        if (signal.aborted) return;
        const next = afterWatch(e);
        if (next === 'relist') { this.relist(); continue; }
        if (next === 'fail') { this.setState('failed', e); return; }
        this.setState('reconnecting', e);
        await sleep(backoff, signal);
        backoff = nextBackoff(backoff);
      }
    }
  }

  relist() {
    this.rv = '';
    this.items.clear();
    this.tombs.clear();
    this.complete = false;
  }

  async listFirst(signal) {
    const page = await api.list(this.plural, this.ns, { ...this.opts, limit: firstPage, signal });
    for (const o of page.items || []) this.put(o, true);
    this.rv = page.metadata.resourceVersion;
    this.changed();
    if (page.metadata.continue) this.listRest(page.metadata.continue, signal);
    else { this.complete = true; }
  }

  async listRest(cont, signal) {
    try {
      while (cont && !signal.aborted) {
        const page = await api.list(this.plural, this.ns, { ...this.opts, limit: pageSize, cont, signal });
        for (const o of page.items || []) this.put(o, true);
        cont = page.metadata.continue;
        this.changed();
      }
      this.complete = true;
      this.changed();
    } catch (e) {
      if (signal.aborted) return;
      // The pages' revision was compacted: read everything again.
      this.relist();
      this.ctl.abort();
      this.ctl = new AbortController();
      this.run();
    }
  }

  event(ev) {
    const o = ev.object;
    switch (ev.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.put(o, false);
        break;
      case 'DELETED':
        this.items.delete(keyOf(o));
        this.tombs.set(keyOf(o), rvOf(o));
        break;
      case 'BOOKMARK':
        break;
      case 'ERROR': {
        const err = new api.ApiError(o.code || 500, o.reason || 'Error', o.message || 'the watch failed');
        throw err;
      }
      default:
        return;
    }
    if (o.metadata && o.metadata.resourceVersion) this.rv = o.metadata.resourceVersion;
    this.changed();
  }

  // values returns the objects, in no order.
  values() { return [...this.items.values()]; }
}
