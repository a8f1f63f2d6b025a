// Deployments: Installation → subinstallations → Execution → DeployItems
// (→ the objects a Kubernetes deployer manages), live.
import { h, replace } from '../dom.js';
import * as api from '../api.js';
import { LiveList } from '../live.js';
import { badge, phaseOf, isFailing } from '../phase.js';
import { href, filters, filterBar, lastError } from './common.js';
import { act, confirmAction } from './dialog.js';

const maxRoots = 200;
export const operation = 'cairn.dev/operation';

// forest links installations, executions and deploy items by their
// owner references: roots are installations no Installation owns.
export function forest(insts, execs, items) {
  const children = new Map(); // owner uid → dependents
  const add = (o) => {
    for (const r of o.metadata.ownerReferences || []) {
      if (!children.has(r.uid)) children.set(r.uid, []);
      children.get(r.uid).push(o);
    }
  };
  [...insts, ...execs, ...items].forEach(add);
  const roots = insts.filter(o => !(o.metadata.ownerReferences || []).some(r => r.kind === 'Installation'));
  return { roots, children: uid => children.get(uid) || [] };
}

// importEdges says, for each data import of inst, which sibling exports it.
export function importEdges(inst, siblings) {
  const imports = (inst.spec && inst.spec.imports && inst.spec.imports.data) || [];
  return imports.map(i => {
    const from = siblings.find(s => s !== inst && ((s.spec && s.spec.exports && s.spec.exports.data) || []).some(e => e.dataRef && e.dataRef === i.dataRef));
    return { name: i.name, dataRef: i.dataRef, from };
  });
}

function actions(o) {
  if (o.kind !== 'Installation') return null;
  const m = o.metadata;
  return h('span', { class: 'actions' },
    h('button', { type: 'button', class: 'reconcile', 'aria-label': 'reconcile ' + m.name,
      onclick: () => act('reconcile of ' + m.name, () => api.annotate('installations', m.namespace, m.name, operation, 'reconcile')) }, 'reconcile'),
    h('button', { type: 'button', class: 'abort', 'aria-label': 'abort ' + m.name,
      onclick: async () => {
        if (await confirmAction(`Abort installation ${m.namespace}/${m.name}? Its deploy items are aborted.`, 'Abort')) {
          act('abort of ' + m.name, () => api.annotate('installations', m.namespace, m.name, operation, 'abort'));
        }
      } }, 'abort'));
}

// node renders o and what it owns.
function node(o, f, open, siblings) {
  const kids = f.children(o.metadata.uid).filter(c => c.kind !== 'DataObject');
  const order = { Installation: 0, Execution: 1, DeployItem: 2 };
  kids.sort((a, b) => (order[a.kind] ?? 9) - (order[b.kind] ?? 9) || a.metadata.name.localeCompare(b.metadata.name));
  const managed = (o.status && o.status.providerStatus && o.status.providerStatus.managedResources) || [];
  const edges = o.kind === 'Installation' ? importEdges(o, siblings).filter(e => e.dataRef) : [];
  const summary = h('summary', {},
    h('span', { class: 'kind' }, o.kind), ' ',
    h('a', { href: href(o), class: 'name' }, o.metadata.name), ' ', badge(phaseOf(o)),
    o.metadata.deletionTimestamp ? h('span', { class: 'deleting' }, ' being deleted') : null,
    ' ', lastError(o), ' ', actions(o));
  const subInsts = kids.filter(k => k.kind === 'Installation');
  const body = [
    edges.length ? h('ul', { class: 'edges' }, edges.map(e => h('li', {}, 'imports ', h('code', {}, e.name), ' from ', h('code', {}, e.dataRef),
      e.from ? [' ← exported by sibling ', h('a', { href: href(e.from) }, e.from.metadata.name), ' ', badge(phaseOf(e.from))] : ''))) : null,
    kids.map(k => node(k, f, open, subInsts)),
    managed.length ? h('ul', { class: 'managed' }, managed.map(r => h('li', {}, `${r.kind} ${r.namespace ? r.namespace + '/' : ''}${r.name}`,
      r.policy ? h('span', { class: 'policy' }, ' (' + r.policy + ')') : ''))) : null,
  ];
  const uid = o.metadata.uid;
  const d = h('details', { class: 'node ' + o.kind.toLowerCase(), open: !open.has(uid), data: { uid } }, summary, body);
  d.addEventListener('toggle', () => { if (d.open) open.delete(uid); else open.add(uid); });
  return d;
}

export function deployments(ctx) {
  document.title = 'Deployments · cairn';
  const f = filters(ctx.query);
  const opts = { labelSelector: f.labelSelector };
  const insts = new LiveList('installations', f.ns, opts).start();
  const execs = new LiveList('executions', f.ns, {}).start();
  const items = new LiveList('deployitems', f.ns, {}).start();
  const all = [insts, execs, items];
  ctx.onCleanup(() => all.forEach(l => l.stop()));
  const closed = new Set();
  const tree = h('div', { class: 'tree', id: 'tree' });
  const note = h('p', { class: 'liststatus', role: 'status' });
  replace(ctx.main, h('h1', {}, 'Deployments'), filterBar(ctx), note, tree);
  const draw = () => {
    const failed = all.find(l => l.state === 'failed');
    const fr = forest(insts.values(), execs.values(), items.values());
    let roots = fr.roots.filter(o => !f.search || o.metadata.name.toLowerCase().includes(f.search));
    if (f.failing) roots = roots.filter(o => isFailing(o));
    roots.sort((a, b) => (isFailing(b) - isFailing(a)) || a.metadata.name.localeCompare(b.metadata.name));
    const more = roots.length - maxRoots;
    note.textContent = failed ? 'Cannot read ' + failed.plural + ': ' + failed.error.message
      : `${roots.length} root installations · live` + (more > 0 ? ` · showing the first ${maxRoots}: filter to see others` : '');
    const focused = document.activeElement && tree.contains(document.activeElement) ? document.activeElement.getAttribute('aria-label') || document.activeElement.getAttribute('href') : null;
    replace(tree, roots.slice(0, maxRoots).map(o => node(o, fr, closed, roots)));
    if (focused) {
      const again = [...tree.querySelectorAll('a,button')].find(e => (e.getAttribute('aria-label') || e.getAttribute('href')) === focused);
      if (again) again.focus({ preventScroll: true });
    }
    if (!roots.length && !all.some(l => l.state === 'loading')) replace(tree, h('p', {}, 'No installations match.'));
  };
  all.forEach(l => l.subscribe(draw));
  draw();
}
