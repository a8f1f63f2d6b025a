// Objects of any kind: paged from the server (label selector and
// namespace applied there), virtualised, filtered, live.
import { h, replace } from '../dom.js';
import { LiveList } from '../live.js';
import { badge, phaseOf, isFailing } from '../phase.js';
import { href, ago, filters, matches, filterBar, listStatus, VirtualList, lastError } from './common.js';

export const kinds = ['installations', 'executions', 'deployitems', 'events', 'projects', 'cleaners', 'targets',
  'dataobjects', 'blueprints', 'secrets', 'gateways', 'namespaces'];

// sortRows puts failing objects first, then by namespace and name.
export function sortRows(items) {
  const now = Date.now();
  return items.map(o => [isFailing(o, now) ? 0 : 1, o.metadata.namespace || '', o.metadata.name, o])
    .sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0))
    .map(x => x[3]);
}

export function listView(ctx) {
  const pl = ctx.route.plural;
  const f = filters(ctx.query);
  document.title = pl + ' · cairn';
  const kindSelect = h('label', {}, 'Kind ', h('select', { id: 'filter-kind', onchange: e => {
    const q = new URLSearchParams(ctx.query);
    history.replaceState(null, '', '/ui/list/' + e.target.value + (q.toString() ? '?' + q : ''));
    ctx.setQuery(q);
  } }, kinds.map(k => h('option', { value: k, selected: k === pl }, k))));
  const list = new LiveList(pl, pl === 'namespaces' ? '' : f.ns, { labelSelector: f.labelSelector }).start();
  ctx.onCleanup(() => list.stop());
  const vl = new VirtualList(pl, o => h('a', { href: href(o), class: 'row' },
    h('span', { class: 'c-ns' }, o.metadata.namespace || ''),
    h('span', { class: 'c-name' }, o.metadata.name),
    h('span', { class: 'c-phase' }, badge(phaseOf(o))),
    h('span', { class: 'c-age' }, ago(o.metadata.creationTimestamp)),
    h('span', { class: 'c-err' }, o.metadata.deletionTimestamp ? h('span', { class: 'deleting' }, 'being deleted') : null, lastError(o))));
  const status = h('div', { id: 'liststatus' });
  replace(ctx.main, h('h1', {}, 'Objects: ', pl), filterBar(ctx, kindSelect), status,
    h('div', { class: 'row head', 'aria-hidden': 'true' }, h('span', { class: 'c-ns' }, 'namespace'), h('span', { class: 'c-name' }, 'name'),
      h('span', { class: 'c-phase' }, 'phase'), h('span', { class: 'c-age' }, 'age'), h('span', { class: 'c-err' }, 'last error')),
    vl.el);
  const draw = () => {
    const rows = sortRows(list.values().filter(o => matches(o, f)));
    replace(status, listStatus(list, rows.length));
    vl.set(rows);
  };
  list.subscribe(draw);
  draw();
  void isFailing;
}
