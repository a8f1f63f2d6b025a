// Overview: counts by kind and phase per namespace, failing and stuck
// first. It holds counts, not objects: each kind is counted by the server
// (a PhaseCount) and kept live over its watch (livecount.js).
import { h, replace } from '../dom.js';
import { LiveCount } from '../livecount.js';
import { badge, classOf } from '../phase.js';
import { tallyCounts } from '../counts.js';
import { filters, filterBar } from './common.js';

// The kinds with a phase, one watch each: over plain HTTP/1.1 a browser
// opens at most six connections to a server, and a recount needs one.
export const watched = ['installations', 'executions', 'deployitems', 'events', 'cleaners'];

export function overview(ctx) {
  document.title = 'Overview · cairn';
  const f = filters(ctx.query);
  const lists = watched.map(pl => new LiveCount(pl, f.ns, { labelSelector: f.labelSelector }).start());
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
    let rows = tallyCounts(lists.filter(l => l.state !== 'failed').map(l => ({ plural: l.plural, counts: l.counts })));
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
  // Objects become stuck as time passes: the page looks again (no request).
  const tick = setInterval(draw, 5000);
  ctx.onCleanup(() => clearInterval(tick));
  draw();
}
