// Any object: its page at /ui/namespaces/NS/PLURAL/NAME. YAML (Secret
// values redacted), the explain trace as a timeline, owners up and
// dependents down, and for an object being deleted, what holds it.
import { h, replace } from '../dom.js';
import * as api from '../api.js';
import { LiveList } from '../live.js';
import { badge, phaseOf } from '../phase.js';
import { toYAML, redact } from '../yaml.js';
import { href, ago, lastError } from './common.js';
import { eventPanel } from './events.js';
import { operation } from './deployments.js';
import { act, confirmAction } from './dialog.js';
import { fetchDependents, dependentsPanel, retryable, count } from './dependents.js';

const protection = 'cairn.dev/deletion-protection';

// owners walks ownerReferences upwards (at most 10 levels).
async function owners(o, depth = 0) {
  if (depth > 10) return [];
  const out = [];
  for (const r of o.metadata.ownerReferences || []) {
    try {
      const p = await api.get(api.plural(r.kind), o.metadata.namespace, r.name);
      if (p.kind === 'PartialObjectMetadata') p.kind = r.kind;
      const gone = p.metadata.uid !== r.uid;
      out.push({ ref: r, obj: gone ? null : p, up: gone ? [] : await owners(p, depth + 1) });
    } catch (e) {
      out.push({ ref: r, obj: null, err: e, up: [] });
    }
  }
  return out;
}

function ownerTree(list) {
  if (!list.length) return null;
  return h('ul', { class: 'owners' }, list.map(n => h('li', {},
    n.obj ? [h('a', { href: href(n.obj) }, n.ref.kind + ' ' + n.ref.name), ' ', badge(phaseOf(n.obj))]
      : [n.ref.kind + ' ' + n.ref.name, h('span', { class: 'deleting' }, ' gone' + (n.err && n.err.code !== 404 ? ' (' + n.err.message + ')' : ''))],
    n.ref.controller ? h('span', { class: 'help' }, ' controller') : null, ownerTree(n.up))));
}

// timeline renders a trace: each reconcile, its steps and how it ended.
function timeline(tr) {
  const marks = { check: '❔', exit: '🚪', subflow: '↪', action: '✔️' };
  const recs = tr.reconciles || [];
  if (!recs.length) return h('p', {}, 'No reconciles recorded yet.');
  return h('ol', { class: 'timeline' }, recs.slice().reverse().map(r => h('li', {},
    h('div', { class: 'rec' }, h('time', { datetime: r.start }, new Date(r.start).toLocaleTimeString()), ' ', h('strong', {}, r.controller), ' ', r.result,
      r.error ? h('span', { class: 'lasterror' }, ' ' + r.error) : null),
    h('ul', { class: 'steps' }, (r.steps || []).map(s => h('li', { class: 'step ' + s.type }, h('span', { class: 'mark', title: s.type }, (marks[s.type] || '•') + ' ' + s.type), ' ', s.message))))));
}

// holds says what keeps a deleting object: finalizers, dependents,
// protection.
function holds(o, deps) {
  const m = o.metadata;
  if (!m.deletionTimestamp) return null;
  const prot = m.annotations && m.annotations[protection] === 'true';
  return h('section', { class: 'holds', id: 'holds' }, h('h2', {}, 'Being deleted since ', ago(m.deletionTimestamp), ' — what holds it'),
    h('ul', {},
      (m.finalizers || []).map(f => h('li', {}, 'finalizer ', h('code', {}, f))),
      count(deps) ? h('li', {}, count(deps) + ' dependents still exist (below)') : null,
      prot ? h('li', {}, 'the annotation ', h('code', {}, protection + ': "true"'), ' blocks the deletion until removed') : null,
      ...((deps && deps.blockers) || []).filter(b => b.name !== m.name || b.kind !== o.kind).map(b =>
        h('li', {}, 'the protected ', b.kind, ' ', b.name, ' blocks the cascade until its annotation is removed'))));
}

export function objectView(ctx) {
  const { ns, plural: pl, objName: name } = ctx.route;
  document.title = name + ' · ' + pl + ' · cairn';
  const list = new LiveList(pl, pl === 'namespaces' ? '' : ns, { fieldSelector: 'metadata.name=' + name }).start();
  ctx.onCleanup(() => list.stop());
  const head = h('div', { class: 'objhead' });
  const panel = h('div');
  const holdsBox = h('div');
  const ownersBox = h('div', {}, 'Reading owners…');
  const depsBox = h('div', {}, 'Reading dependents…');
  const traceBox = h('div', {}, 'Reading the trace…');
  const yaml = h('pre', { class: 'yaml', id: 'yaml', tabindex: '0' });
  replace(ctx.main, head, holdsBox, panel,
    h('section', {}, h('h2', {}, 'Owners (up)'), ownersBox),
    h('section', {}, h('h2', {}, 'Dependents (down)'), depsBox),
    h('section', {}, h('h2', {}, 'Why: the controllers\u2019 trace'), traceBox),
    h('section', {}, h('h2', {}, 'YAML'), yaml));
  let seen = false, ev = null, deps = null, last = '', traceTimer = 0;
  const path = api.objectPath(pl, ns, name);
  const refresh = o => {
    owners(o).then(t => replace(ownersBox, ownerTree(t) || 'No owners but its namespace.'));
    askDependents(o, 0);
    clearTimeout(traceTimer);
    traceTimer = setTimeout(() => api.request('GET', path + '/trace').then(t => replace(traceBox, timeline(t)))
      .catch(e => replace(traceBox, e.code === 503 || e.code === 404 ? 'No trace: ' + e.message : 'Cannot read the trace: ' + e.message)), 300);
  };
  // askDependents reads what deleting o would take; a 503 (the graph
  // not ready yet, no leader) is asked again, at most 10 times.
  let depsTimer = 0, depsAsk = 0;
  const askDependents = (o, tries) => {
    clearTimeout(depsTimer);
    const ask = ++depsAsk;
    fetchDependents(pl, ns, name).then(d => {
      if (ask !== depsAsk) return;
      deps = d;
      replace(depsBox, dependentsPanel(d));
      replace(holdsBox, holds(o, deps));
    }).catch(e => {
      if (ask !== depsAsk) return;
      if (retryable(e) && tries < 10) depsTimer = setTimeout(() => askDependents(o, tries + 1), 1000);
      replace(depsBox, (retryable(e) ? 'Dependents not known yet: ' : 'Cannot read the dependents: ') + e.message);
    });
  };
  ctx.onCleanup(() => { clearTimeout(traceTimer); clearTimeout(depsTimer); depsAsk++; });
  const draw = () => {
    const o = list.values()[0];
    if (list.state === 'failed') { replace(head, h('h1', {}, name), h('p', { class: 'error' }, 'Cannot read it: ' + list.error.message)); return; }
    if (!o) {
      if (list.state === 'loading') { replace(head, h('h1', {}, name), h('p', {}, 'Loading…')); return; }
      replace(head, h('h1', {}, pl + ' ', name), h('p', { class: 'gone', id: 'gone', role: 'alert' },
        seen ? 'This object is gone: it was deleted while you were viewing it.' : `There is no ${pl} ${name} in namespace ${ns}.`));
      return;
    }
    seen = true;
    const m = o.metadata;
    replace(head, h('h1', {}, h('span', { class: 'kind' }, o.kind || pl), ' ', m.namespace ? m.namespace + '/' : '', m.name, ' ', badge(phaseOf(o))),
      h('p', {}, 'created ', ago(m.creationTimestamp), ' ago · generation ', String(m.generation || ''), ' · resourceVersion ', m.resourceVersion, ' ', lastError(o)),
      o.kind === 'Installation' ? h('p', { class: 'actions' },
        h('button', { type: 'button', class: 'reconcile', onclick: () => act('reconcile of ' + m.name, () => api.annotate('installations', m.namespace, m.name, operation, 'reconcile')) }, 'reconcile'),
        h('button', { type: 'button', class: 'abort', onclick: async () => {
          if (await confirmAction(`Abort installation ${m.namespace}/${m.name}?`, 'Abort')) act('abort of ' + m.name, () => api.annotate('installations', m.namespace, m.name, operation, 'abort'));
        } }, 'abort')) : null);
    if (o.kind === 'Event') {
      if (!ev) { ev = eventPanel(o, ctx.onCleanup); replace(panel, ev.el); } else ev.update(o);
    }
    replace(yaml, pl === 'secrets' ? toYAML({ ...redact(o), data: '<the console never reads secret values>' }) : toYAML(redact(o)));
    replace(holdsBox, holds(o, deps));
    if (m.resourceVersion !== last) { last = m.resourceVersion; refresh(o); }
  };
  list.subscribe(draw);
  draw();
}
