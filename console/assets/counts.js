// Counts by namespace and phase, kept from the server's PhaseCount and
// the watch events after it, without holding the objects. Pure: no DOM,
// no I/O (livecount.js feeds it).
//
// A watch event tells an object's new state; moving its count needs its
// previous one. PhaseCounts knows it for every object it has seen an
// event of, and for the deleting objects the count names. A DELETED
// event of an unknown object carries its last state, which is what the
// count holds; an ADDED one had none. Only a MODIFIED event of an object
// unknown so far leaves the counts unsure: needsCount() then asks for a
// new count, and the deltas of the events that arrive meanwhile are
// applied again over it when they are newer than it.
import { phaseOf, classOf } from './phase.js';

// stuckAfter: an object being deleted for longer is stuck.
export const stuckAfter = 60_000;

const gkey = (ns, phase) => ns + '\u0000' + phase;

// entryOf is what an object counts as: its namespace, phase, whether it
// carries a lastError, when its deletion began, at revision rv.
export function entryOf(o, rv) {
  const s = o.status || {};
  return {
    ns: o.metadata.namespace || '',
    phase: phaseOf(o),
    lastError: !!(s.lastError && s.lastError.message),
    deletion: o.metadata.deletionTimestamp || '',
    rv,
  };
}

export class PhaseCounts {
  // kind is the kind counted ("Installation").
  constructor(kind) {
    this.kind = kind;
    this.groups = new Map(); // ns\0phase → {ns, phase, count, lastError}
    this.rv = 0; // the revision of the count the groups started from
    this.known = new Map(); // ns/name → entryOf
    this.dirtyRV = 0; // the newest revision of a change the groups miss
    this.log = null; // deltas since a count was asked for
    this.loaded = false;
  }

  // load takes a PhaseCount answer as the base of the counts. The deltas
  // of events newer than it, seen since recounting(), are applied again.
  load(pc) {
    const rv = Number(pc.metadata.resourceVersion);
    this.groups = new Map();
    for (const g of pc.groups || []) {
      const ns = g.namespace || '';
      this.groups.set(gkey(ns, g.phase), { ns, phase: g.phase, count: g.count, lastError: g.lastError || 0 });
    }
    for (const d of pc.deleting || []) {
      const k = (d.namespace || '') + '/' + d.name;
      const cur = this.known.get(k);
      if (!cur || cur.rv <= rv) {
        this.known.set(k, { ns: d.namespace || '', phase: d.phase, lastError: !!d.lastError, deletion: d.deletionTimestamp, rv });
      }
    }
    for (const d of this.log || []) if (d.rv > rv) this.shift(d.prev, d.next);
    this.log = null;
    this.rv = rv;
    this.loaded = true;
    if (this.dirtyRV <= rv) this.dirtyRV = 0;
  }

  // recounting notes that a count has been asked for: the deltas from now
  // on are kept, to apply over it.
  recounting() { this.log = []; }

  // needsCount reports whether the counts miss a change (or have none).
  needsCount() { return !this.loaded || this.dirtyRV > 0; }

  // event applies a watch event ({type, object}); it returns needsCount().
  event(ev) {
    if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED' && ev.type !== 'DELETED') return this.needsCount();
    const o = ev.object;
    const rv = Number(o.metadata.resourceVersion || 0);
    const k = (o.metadata.namespace || '') + '/' + o.metadata.name;
    const seen = this.known.get(k);
    if (seen && seen.rv >= rv) return this.needsCount(); // an older event
    let prev;
    if (ev.type === 'ADDED') prev = null;
    else if (seen) prev = seen;
    else if (ev.type === 'DELETED') prev = entryOf(o, rv);
    const next = ev.type === 'DELETED' ? null : entryOf(o, rv);
    if (next) this.known.set(k, next);
    else this.known.delete(k);
    if (prev === undefined) {
      if (rv > this.rv) this.dirtyRV = Math.max(this.dirtyRV, rv);
      return this.needsCount();
    }
    if (rv > this.rv) this.shift(prev, next);
    if (this.log) this.log.push({ rv, prev, next });
    return this.needsCount();
  }

  shift(prev, next) {
    if (prev) this.add(prev, -1);
    if (next) this.add(next, 1);
  }

  add(e, n) {
    const k = gkey(e.ns, e.phase);
    let g = this.groups.get(k);
    if (!g) this.groups.set(k, g = { ns: e.ns, phase: e.phase, count: 0, lastError: 0 });
    g.count += n;
    if (e.lastError) g.lastError += n;
    if (g.count <= 0) this.groups.delete(k);
  }
}

// failingIn is how many of a group fail: all of a failed phase, those
// with a lastError in a phase that is not a success.
export function failingIn(g) {
  const c = classOf(g.phase);
  if (c === 'failed') return g.count;
  return c === 'ok' ? 0 : g.lastError;
}

// isFailingEntry is failingIn for one object.
function isFailingEntry(e) {
  const c = classOf(e.phase);
  return c === 'failed' || (c !== 'ok' && e.lastError);
}

// tallyCounts turns the counts of several kinds ([{plural, counts}])
// into the Overview's rows: by namespace and kind, with the phases, the
// total, the failing and the stuck (being deleted for over stuckAfter;
// a stuck object is counted as stuck, not failing). Rows with failing or
// stuck objects come first, then by namespace and kind.
export function tallyCounts(kinds, now = Date.now()) {
  const rows = new Map();
  const row = (ns, plural) => {
    const k = ns + '\u0000' + plural;
    let r = rows.get(k);
    if (!r) rows.set(k, r = { ns, plural, phases: new Map(), failing: 0, stuck: 0, total: 0 });
    return r;
  };
  for (const { plural, counts } of kinds) {
    for (const g of counts.groups.values()) {
      const r = row(g.ns, plural);
      const p = g.phase || 'no phase';
      r.phases.set(p, (r.phases.get(p) || 0) + g.count);
      r.total += g.count;
      r.failing += failingIn(g);
    }
    for (const e of counts.known.values()) {
      if (!e.deletion || now - Date.parse(e.deletion) <= stuckAfter) continue;
      const r = row(e.ns, plural);
      r.stuck++;
      if (isFailingEntry(e)) r.failing--;
    }
  }
  return [...rows.values()].filter(r => r.total > 0)
    .sort((a, b) => (b.failing + b.stuck) - (a.failing + a.stuck) || a.ns.localeCompare(b.ns) || a.plural.localeCompare(b.plural));
}
