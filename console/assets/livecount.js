// LiveCount: how many objects of a collection are in each phase, by
// namespace, kept current over watch without holding the objects. It
// asks the server for a PhaseCount (a list answered as counts), watches
// from its revision and moves the counts with each event (counts.js);
// when an event leaves them unsure (a change of an object it has not
// seen before), it asks for a new count, at most every recountDelay,
// while the watch goes on. A dropped watch resumes from the last
// resourceVersion seen; only a 410 Gone counts everything again.
import * as api from './api.js';
import { PhaseCounts } from './counts.js';
import { LiveSource, afterWatch, nextBackoff, sleep } from './live.js';

const recountDelay = 300;

export class LiveCount extends LiveSource {
  // plural and ns name the collection ("" for all namespaces); opts:
  // labelSelector (applied by the server).
  constructor(pl, ns, opts = {}) {
    super(pl, ns, opts);
    this.counts = new PhaseCounts(api.kindOf(pl));
    this.recount = null; // the timer of an asked recount
    this.asked = 0; // counts asked of the server
  }

  // stop ends the watch, every request and an asked recount.
  stop() {
    clearTimeout(this.recount);
    super.stop();
  }

  async count(signal) {
    this.asked++;
    return api.count(this.plural, this.ns, { ...this.opts, signal });
  }

  async run() {
    const signal = this.ctl.signal;
    let backoff = 250;
    while (!signal.aborted) {
      try {
        if (!this.rv) {
          const pc = await this.count(signal);
          this.counts.load(pc);
          this.rv = pc.metadata.resourceVersion;
          this.changed();
        }
        this.setState('live');
        await api.watch(this.plural, this.ns, this.rv, { ...this.opts, signal }, ev => this.event(ev));
        backoff = 250;
      } catch (e) {
        if (signal.aborted) return;
        const next = afterWatch(e);
        if (next === 'relist') { this.rv = ''; this.counts = new PhaseCounts(this.counts.kind); continue; }
        if (next === 'fail') { this.setState('failed', e); return; }
        this.setState('reconnecting', e);
        await sleep(backoff, signal);
        backoff = nextBackoff(backoff);
      }
    }
  }

  event(ev) {
    if (ev.type === 'ERROR') {
      const o = ev.object || {};
      throw new api.ApiError(o.code || 500, o.reason || 'Error', o.message || 'the watch failed');
    }
    const unsure = this.counts.event(ev);
    const md = ev.object && ev.object.metadata;
    if (md && md.resourceVersion) this.rv = md.resourceVersion;
    if (ev.type !== 'BOOKMARK') this.changed();
    if (unsure) this.askRecount();
  }

  // askRecount asks for a new count after recountDelay, unless one is
  // asked already; it asks again while the counts still miss a change.
  askRecount() {
    if (this.recount) return;
    this.recount = setTimeout(async () => {
      const signal = this.ctl.signal;
      const counts = this.counts;
      try {
        counts.recounting();
        const pc = await this.count(signal);
        if (counts === this.counts) counts.load(pc);
        this.changed();
      } catch (e) {
        counts.log = null; // the next unsure event asks again
      }
      this.recount = null;
      if (!signal.aborted && this.counts.needsCount()) this.askRecount();
    }, recountDelay);
  }
}
