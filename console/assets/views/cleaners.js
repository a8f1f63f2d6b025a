// Cleaners: TTL countdown, next evaluation, the last result of each
// condition, targets. Live; the countdowns tick every second in the page.
import { h, replace } from '../dom.js';
import { LiveList } from '../live.js';
import { badge, phaseOf, isFailing } from '../phase.js';
import { href, span, parseDuration, filters, filterBar, lastError } from './common.js';

// ttlLeft is how long until c's TTL passes (negative: passed), in ms.
export function ttlLeft(c, now = Date.now()) {
  return Date.parse(c.metadata.creationTimestamp) + parseDuration(c.spec.ttl) - now;
}

function until(t, now) {
  if (!t) return '—';
  const ms = Date.parse(t) - now;
  return ms >= 0 ? 'in ' + span(ms) : span(-ms) + ' ago';
}

function results(c) {
  const ev = c.status && c.status.lastEvaluation;
  if (!ev) return 'not evaluated yet';
  const conds = c.spec.conditions || [];
  return h('ul', { class: 'conds' }, (ev.results || []).map(r => h('li', {},
    h('code', {}, conds[r.index] || '#' + r.index), ' → ',
    r.error ? h('span', { class: 'badge failed' }, 'error: ' + r.error) : h('span', { class: 'badge ' + (r.value ? 'ok' : 'other') }, String(r.value)))),
  ev.error ? h('li', { class: 'error' }, ev.error) : null, ev.search ? h('li', {}, 'search: ' + ev.search) : null);
}

export function cleaners(ctx) {
  document.title = 'Cleaners · cairn';
  const f = filters(ctx.query);
  const list = new LiveList('cleaners', f.ns, { labelSelector: f.labelSelector }).start();
  ctx.onCleanup(() => list.stop());
  const body = h('tbody');
  const note = h('p', { class: 'liststatus', role: 'status' });
  replace(ctx.main, h('h1', {}, 'Cleaners'), filterBar(ctx), note,
    h('table', { class: 'cleaners' }, h('thead', {}, h('tr', {}, ['cleaner', 'phase', 'TTL', 'next evaluation', 'last results', 'targets'].map(t => h('th', { scope: 'col' }, t)))), body));
  const draw = () => {
    const now = Date.now();
    const cs = list.values().filter(c => (!f.search || c.metadata.name.toLowerCase().includes(f.search)) && (!f.failing || isFailing(c)))
      .sort((a, b) => ttlLeft(a, now) - ttlLeft(b, now));
    note.textContent = list.state === 'failed' ? 'Cannot read cleaners: ' + list.error.message : `${cs.length} cleaners · live`;
    replace(body, cs.map(c => {
      const left = ttlLeft(c, now);
      const resolved = (c.status && c.status.resolvedTargets) || [];
      return h('tr', { data: { cleaner: c.metadata.name } },
        h('td', {}, h('a', { href: href(c) }, c.metadata.namespace + '/' + c.metadata.name)),
        h('td', {}, badge(phaseOf(c)), ' ', lastError(c)),
        h('td', { class: 'ttl' }, isNaN(left) ? c.spec.ttl : left > 0 ? span(left) + ' left' : 'passed ' + span(-left) + ' ago'),
        h('td', {}, until(c.status && c.status.nextScheduledEvaluation, now)),
        h('td', {}, results(c)),
        h('td', {}, h('ul', { class: 'targets' }, (c.spec.targets || []).map(t => h('li', {}, t.name, ': ', t.reference.kind, ' ',
          t.reference.name || JSON.stringify(t.reference.matchLabels || {}), t.delete ? ' (deleted)' : ''))),
        resolved.length ? h('span', { class: 'help' }, 'found: ' + resolved.join(', ')) : null));
    }));
  };
  list.subscribe(draw);
  const tick = setInterval(draw, 1000);
  ctx.onCleanup(() => clearInterval(tick));
  draw();
}
