// Overview: counts by kind and phase per namespace, failing first.
import { h, replace } from '../dom.js';
import { LiveList } from '../live.js';
import { badge, phaseOf, classOf, isFailing, isStuck } from '../phase.js';
import { filters, filterBar } from './common.js';

const watched = ['installations', 'executions', 'deployitems', 'events', 'cleaners', 'projects', 'targets'];

// tally counts objects by namespace, plural and phase; failing counts
// the failing and stuck ones. Rows come failing first.
export function tally(lists) {
  const rows = new Map();
  const now = Date.now();
  for (const l of lists) {
    for (const o of l.items.values()) {
      const ns = o.metadata.namespace || '';
      const k = ns + '\u0000' + l.plural;
      let r = rows.get(k);
      if (!r) rows.set(k, r = { ns, plural: l.plural, phases: new Map(), failing: 0, stuck: 0, total: 0 });
      const p = phaseOf(o) || 'no phase';
      r.phases.set(p, (r.phases.get(p) || 0) + 1);
      r.total++;
      if (isStuck(o, now)) r.stuck++;
      else if (isFailing(o, now)) r.failing++;
    }
  }
  return [...rows.values()].sort((a, b) => (b.failing + b.stuck) - (a.failing + a.stuck) || a.ns.localeCompare(b.ns) || a.plural.localeCompare(b.plural));
}

export function overview(ctx) {
  document.title = 'Overview · cairn';
  const f = filters(ctx.query);
  const lists = watched.map(pl => new LiveList(pl, f.ns, { labelSelector: f.labelSelector }).start());
  ctx.onCleanup(() => lists.forEach(l => l.stop()));
  const body = h('tbody');
  const note = h('p', { class: 'liststatus', role: 'status' });
  replace(ctx.main, h('h1', {}, 'Overview'), filterBar(ctx), note,
    h('table', { class: 'overview' }, h('caption', {}, 'Objects by namespace, kind and phase; failing and stuck first'),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'namespace'), h('th', { scope: 'col' }, 'kind'), h('th', { scope: 'col' }, 'total'),
        h('th', { scope: 'col' }, 'failing'), h('th', { scope: 'col' }, 'stuck'), h('th', { scope: 'col' }, 'phases'))), body));
  const draw = () => {
    const failed = lists.filter(l => l.state === 'failed');
    note.textContent = failed.length
      ? 'Not shown (this token may not read them): ' + failed.map(l => l.plural + ' (' + l.error.message + ')').join('; ')
      : lists.some(l => l.state === 'loading') ? 'Loading…' : 'Live.';
    let rows = tally(lists.filter(l => l.state !== 'failed'));
    if (f.failing) rows = rows.filter(r => r.failing + r.stuck > 0);
    if (f.search) rows = rows.filter(r => r.ns.includes(f.search) || r.plural.includes(f.search));
    replace(body, rows.map(r => {
      const q = new URLSearchParams({ ns: r.ns });
      const fq = new URLSearchParams({ ns: r.ns, failing: '1' });
      return h('tr', { class: r.failing + r.stuck ? 'has-failing' : '' },
        h('td', {}, r.ns),
        h('td', {}, h('a', { href: '/ui/list/' + r.plural + '?' + q }, r.plural)),
        h('td', {}, String(r.total)),
        h('td', {}, r.failing ? h('a', { href: '/ui/list/' + r.plural + '?' + fq, class: 'count failed' }, r.failing + ' failing') : '0'),
        h('td', {}, r.stuck ? h('span', { class: 'count failed' }, r.stuck + ' stuck') : '0'),
        h('td', { class: 'phases' }, [...r.phases].sort((a, b) => (classOf(a[0]) === 'failed' ? 0 : 1) - (classOf(b[0]) === 'failed' ? 0 : 1) || b[1] - a[1])
          .map(([p, n]) => h('span', { class: 'phasecount' }, badge(p), ' ', String(n)))));
    }));
    if (!rows.length && !lists.some(l => l.state === 'loading')) replace(body, h('tr', {}, h('td', { colspan: 6 }, 'Nothing here yet.')));
  };
  lists.forEach(l => l.subscribe(draw));
  draw();
}
