// Dependents (down) of an object's page: what deleting it would take, as
// the server answers GET .../{plural}/{name}/dependents from the garbage
// collector's graph (never a scan of lists in the browser): the tree, the
// counts, the protected objects that would block the cascade and the
// dependents that keep another owner.
import { h } from '../dom.js';
import * as api from '../api.js';
import { href } from './common.js';

// shown caps the nodes of a tree built on the page (a namespace's tree
// holds everything in it); the counts still tell the whole.
const shown = 500;

// fetchDependents asks the server what deleting pl ns/name would take.
// It rejects with ApiError: 503 while the graph is not ready (or no
// process leads the controllers), 403 when the token may not get it.
export function fetchDependents(pl, ns, name) {
  return api.request('GET', api.objectPath(pl, ns, name) + '/dependents');
}

// retryable reports whether a failed ask may succeed later (503).
export function retryable(err) { return !!err && err.code === 503; }

const refOf = r => ({ kind: r.kind, metadata: { namespace: r.namespace, name: r.name } });
const link = r => h('a', { href: href(refOf(r)) }, r.kind + ' ' + r.name);

// tree renders the dependents of node, at most budget.n nodes.
function tree(node, budget) {
  const ds = node.dependents || [];
  if (!ds.length || budget.n <= 0) return null;
  const items = [];
  for (const d of ds) {
    if (budget.n-- <= 0) break;
    items.push(h('li', {}, link(d),
      d.protected ? h('span', { class: 'badge failed' }, 'deletion-protected: blocks the cascade') : null,
      d.deleting ? h('span', { class: 'deleting' }, ' deleting') : null,
      tree(d, budget)));
  }
  return h('ul', { class: 'dependents' }, items);
}

// dependentsPanel renders an answer: the tree below the object, what
// its deletion would take by kind, the blockers and the detached.
export function dependentsPanel(d) {
  const budget = { n: shown };
  const t = tree(d.root, budget);
  const taken = Object.entries(d.counts || {}).sort((a, b) => a[0].localeCompare(b[0])).map(([k, n]) => n + ' ' + k).join(', ');
  return h('div', { id: 'dependents' },
    t || h('p', {}, 'No dependents.'),
    budget.n < 0 ? h('p', { class: 'help' }, 'Only the first ' + shown + ' are shown.') : null,
    h('p', { class: 'help' }, 'Deleting it would take ' + (d.total || 0) + (taken ? ' (' + taken + ')' : '') + ', the object included.'),
    d.blockers && d.blockers.length ? h('div', { class: 'blockers', id: 'blockers' },
      h('p', {}, 'Blocked by protected objects (', h('code', {}, 'cairn.dev/deletion-protection: "true"'), '): each stays, with what it owns, and its owners stay deleting until the annotation is removed:'),
      h('ul', {}, d.blockers.map(b => h('li', {}, link(b))))) : null,
    d.detached && d.detached.length ? h('div', { class: 'detached', id: 'detached' },
      h('p', {}, 'Kept by another owner (they only lose their reference):'),
      h('ul', {}, d.detached.map(r => h('li', {}, link(r))))) : null);
}

// count is the number of dependents in an answer, the object excluded.
export function count(d) {
  const walk = n => (n.dependents || []).reduce((s, c) => s + 1 + walk(c), 0);
  return d ? walk(d.root) : 0;
}
