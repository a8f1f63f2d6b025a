// The console's pure decisions, checked in a real browser against the
// modules the console serves (/ui/...). decisions_test.go opens this page
// and reports every result: {name, ok, got, want}.
import { classOf, phaseOf, isFailing, isStuck, isTerminalEvent } from '/ui/phase.js';
import { filters, matches, parseDuration, span, ago } from '/ui/views/common.js';
import { forest, importEdges } from '/ui/views/deployments.js';
import { sortRows } from '/ui/views/list.js';
import { ttlLeft } from '/ui/views/cleaners.js';
import { duration } from '/ui/views/events.js';
import { retryable } from '/ui/views/dependents.js';
import { afterWatch, nextBackoff, LiveList, keyOf } from '/ui/live.js';
import { PhaseCounts, tallyCounts, failingIn, stuckAfter } from '/ui/counts.js';
import { route } from '/ui/route.js';
import { redact, toYAML } from '/ui/yaml.js';

const results = [];

// eq records whether got equals want (as JSON).
function eq(name, got, want) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  results.push({ name, ok: g === w, got: g, want: w });
}

function cases(name, f) {
  try {
    f();
  } catch (e) {
    results.push({ name, ok: false, got: 'threw ' + e, want: 'no error' });
  }
}

const now = Date.parse('2026-11-28T12:00:00Z');

cases('phases', () => {
  eq('classOf Failed', classOf('Failed'), 'failed');
  eq('classOf TIMED_OUT', classOf('TIMED_OUT'), 'failed');
  eq('classOf Unreachable', classOf('Unreachable'), 'failed');
  eq('classOf PendingDependencies', classOf('PendingDependencies'), 'progress');
  eq('classOf SUCCEEDED', classOf('SUCCEEDED'), 'ok');
  eq('classOf CANCELED', classOf('CANCELED'), 'other');
  eq('classOf no phase', classOf(''), 'other');
  eq('phaseOf an Event is its worker phase', phaseOf({ kind: 'Event', status: { phase: 'Failed', worker: { phase: 'RUNNING' } } }), 'RUNNING');
  eq('phaseOf an Event without a worker is PENDING', phaseOf({ kind: 'Event', status: {} }), 'PENDING');
  eq('phaseOf a reachable Target', phaseOf({ kind: 'Target', status: { conditions: [{ type: 'Reachable', status: 'True' }] } }), 'Reachable');
  eq('phaseOf an unreachable Target', phaseOf({ kind: 'Target', status: { conditions: [{ type: 'Reachable', status: 'False' }] } }), 'Unreachable');
  eq('phaseOf no status', phaseOf({ kind: 'Project', metadata: {} }), '');
  eq('isTerminalEvent CANCELED', isTerminalEvent('CANCELED'), true);
  eq('isTerminalEvent UNKNOWN', isTerminalEvent('UNKNOWN'), false);
  const del = t => ({ kind: 'DataObject', metadata: { name: 'x', deletionTimestamp: t } });
  eq('isStuck after a minute', isStuck(del('2026-11-28T11:58:59Z'), now), true);
  eq('isStuck within a minute', isStuck(del('2026-11-28T11:59:30Z'), now), false);
  eq('isFailing a lastError while progressing', isFailing({ kind: 'Installation', metadata: {}, status: { phase: 'Progressing', lastError: { message: 'm' } } }, now), true);
  eq('isFailing not a lastError once succeeded', isFailing({ kind: 'Installation', metadata: {}, status: { phase: 'Succeeded', lastError: { message: 'm' } } }, now), false);
  eq('isFailing ABORTED', isFailing({ kind: 'Event', metadata: {}, status: { worker: { phase: 'ABORTED' } } }, now), true);
});

cases('phase ordering', () => {
  const o = (ns, name, phase) => ({ kind: 'Installation', metadata: { namespace: ns, name }, status: { phase } });
  const rows = sortRows([o('b', 'z', 'Succeeded'), o('b', 'a', 'Failed'), o('a', 'y', 'Succeeded'), o('c', 'c', 'Aborted')]);
  eq('sortRows: failing first, then namespace and name', rows.map(r => r.metadata.namespace + '/' + r.metadata.name), ['b/a', 'c/c', 'a/y', 'b/z']);
});

cases('filters', () => {
  const f = filters(new URLSearchParams('ns=prod&labelSelector=app%3Dweb&failing=1&q=Shop'));
  eq('filters', f, { ns: 'prod', labelSelector: 'app=web', failing: true, search: 'shop' });
  eq('filters default', filters(new URLSearchParams('')), { ns: '', labelSelector: '', failing: false, search: '' });
  eq('filters failing=0 is off', filters(new URLSearchParams('failing=0')).failing, false);
  const inst = (name, phase) => ({ kind: 'Installation', metadata: { name }, status: { phase } });
  eq('matches: search is on names, case-insensitive', matches(inst('My-Shop', 'Succeeded'), f), false);
  eq('matches: a failing name that contains the search', matches(inst('My-Shop', 'Failed'), f), true);
  eq('matches: not failing', matches(inst('shop', 'Succeeded'), { search: '', failing: true }), false);
  eq('parseDuration 1h30m', parseDuration('1h30m'), 5400000);
  eq('parseDuration 90s', parseDuration('90s'), 90000);
  eq('parseDuration 1.5s', parseDuration('1.5s'), 1500);
  eq('parseDuration a bad one is NaN', Number.isNaN(parseDuration('90 s')), true);
  eq('parseDuration a days unit is NaN', Number.isNaN(parseDuration('3d')), true);
});

cases('countdowns', () => {
  eq('span seconds', span(59_999), '59s');
  eq('span minutes', span(3_723_000), '1h2m');
  eq('span 2m5s', span(125_000), '2m5s');
  eq('span days', span(90_000_000), '1d1h');
  eq('span negative', span(-1), '');
  eq('ago', ago('2026-11-28T11:57:00Z', now), '3m0s');
  const c = { metadata: { creationTimestamp: '2026-11-28T11:00:00Z' }, spec: { ttl: '90m' } };
  eq('ttlLeft before the TTL', ttlLeft(c, now), 30 * 60_000);
  eq('ttlLeft after the TTL is negative', ttlLeft(c, now + 3600_000), -30 * 60_000);
  eq('duration of a running unit', duration({ started: '2026-11-28T11:59:00Z' }, now), '1m0s so far');
  eq('duration of an ended unit', duration({ started: '2026-11-28T11:59:00Z', ended: '2026-11-28T11:59:42Z' }, now), '42s');
  eq('duration of a unit not started', duration({}, now), '');
});

cases('tree', () => {
  const ref = (kind, name, uid) => ({ kind, name, uid });
  const mk = (kind, name, uid, owners = [], spec = {}) => ({ kind, metadata: { name, uid, ownerReferences: owners }, spec });
  const root = mk('Installation', 'shop', 'u1');
  const db = mk('Installation', 'db', 'u2', [ref('Installation', 'shop', 'u1')], { exports: { data: [{ name: 'c', dataRef: 'conn' }] } });
  const app = mk('Installation', 'app', 'u3', [ref('Installation', 'shop', 'u1')], { imports: { data: [{ name: 'db', dataRef: 'conn' }, { name: 'x', dataRef: 'none' }] } });
  const other = mk('Installation', 'lonely', 'u9', [ref('Target', 't', 'ut')]);
  const ex = mk('Execution', 'shop', 'u4', [ref('Installation', 'shop', 'u1')]);
  const item = mk('DeployItem', 'web', 'u5', [ref('Execution', 'shop', 'u4')]);
  const f = forest([root, db, app, other], [ex], [item]);
  eq('forest roots: installations no Installation owns', f.roots.map(o => o.metadata.name), ['shop', 'lonely']);
  eq('forest children of the root', f.children('u1').map(o => o.kind + ' ' + o.metadata.name), ['Installation db', 'Installation app', 'Execution shop']);
  eq('forest children of the execution', f.children('u4').map(o => o.metadata.name), ['web']);
  eq('forest a leaf has none', f.children('u5'), []);
  const edges = importEdges(app, [db, app]);
  eq('importEdges: the sibling that exports the import', edges.map(e => [e.name, e.from ? e.from.metadata.name : null]), [['db', 'db'], ['x', null]]);
});

cases('routes', () => {
  const r = p => { const x = route(p); delete x.view; return x; };
  eq('route overview', r('/ui/'), { name: 'overview' });
  eq('route an object', r('/ui/namespaces/demo/installations/shop%2Dx'), { name: 'object', ns: 'demo', plural: 'installations', objName: 'shop-x' });
  eq('route a namespace', r('/ui/namespaces/demo'), { name: 'object', ns: '', plural: 'namespaces', objName: 'demo' });
  eq('route a list', r('/ui/list/events'), { name: 'list', plural: 'events' });
  eq('route unknown', r('/ui/namespaces/demo/installations'), { name: 'notfound' });
});

cases('reconnect and resume', () => {
  eq('afterWatch 410 lists again', afterWatch({ code: 410 }), 'relist');
  eq('afterWatch 403 fails', afterWatch({ code: 403 }), 'fail');
  eq('afterWatch 401 fails', afterWatch({ code: 401 }), 'fail');
  eq('afterWatch a network failure retries', afterWatch({ code: 0 }), 'retry');
  eq('afterWatch 503 retries', afterWatch({ code: 503 }), 'retry');
  eq('afterWatch a broken stream retries', afterWatch(new TypeError('network error')), 'retry');
  eq('nextBackoff doubles', nextBackoff(250), 500);
  eq('nextBackoff is capped', nextBackoff(4000), 5000);
  eq('dependents 503 is asked again', retryable({ code: 503 }), true);
  eq('dependents 404 is not', retryable({ code: 404 }), false);

  const l = new LiveList('installations', 'ns');
  const o = (name, rv, phase) => ({ kind: 'Installation', metadata: { namespace: 'ns', name, resourceVersion: String(rv) }, status: { phase } });
  l.put(o('a', 5, 'Progressing'), true);
  l.event({ type: 'MODIFIED', object: o('a', 7, 'Succeeded') });
  l.put(o('a', 5, 'Progressing'), true); // a page older than the watch
  eq('LiveList keeps the newer version', l.items.get('ns/a').status.phase, 'Succeeded');
  eq('LiveList resumes from the last event', l.rv, '7');
  l.event({ type: 'DELETED', object: o('b', 8, 'Failed') });
  l.put(o('b', 6, 'Failed'), true); // its page comes after its deletion
  eq('LiveList: a page does not bring back a deleted object', l.items.has('ns/b'), false);
  l.event({ type: 'BOOKMARK', object: { kind: 'Installation', metadata: { resourceVersion: '9' } } });
  eq('LiveList resumes from a bookmark', l.rv, '9');
  let threw = '';
  try { l.event({ type: 'ERROR', object: { code: 410, reason: 'Expired', message: 'too old' } }); } catch (e) { threw = afterWatch(e); }
  eq('LiveList: an ERROR event of 410 lists again', threw, 'relist');
  eq('keyOf', keyOf(o('x', 1)), 'ns/x');
});

cases('counts', () => {
  const ev = (type, name, rv, status, md = {}) => ({ type, object: { kind: 'Installation', metadata: { namespace: 'ns', name, resourceVersion: String(rv), ...md }, status } });
  const groups = c => Object.fromEntries([...c.groups.values()].map(g => [g.ns + ':' + g.phase, [g.count, g.lastError]]));
  const c = new PhaseCounts('Installation');
  eq('counts need a count first', c.needsCount(), true);
  c.load({ metadata: { resourceVersion: '10' }, groups: [{ namespace: 'ns', phase: 'Succeeded', count: 3 }, { namespace: 'ns', phase: 'Failed', count: 2, lastError: 1 }],
    deleting: [{ namespace: 'ns', name: 'old', phase: 'Succeeded', deletionTimestamp: '2026-11-28T11:50:00Z' }] });
  eq('counts loaded', groups(c), { 'ns:Succeeded': [3, 0], 'ns:Failed': [2, 1] });
  eq('counts loaded need nothing', c.needsCount(), false);
  eq('an ADDED counts one more', c.event(ev('ADDED', 'n', 11, { phase: 'Init' })), false);
  eq('an ADDED counts one more: groups', groups(c)['ns:Init'], [1, 0]);
  c.event(ev('MODIFIED', 'n', 12, { phase: 'Failed', lastError: { message: 'x' } }));
  eq('a MODIFIED of a known object moves it', groups(c), { 'ns:Succeeded': [3, 0], 'ns:Failed': [3, 2] });
  c.event(ev('DELETED', 'gone', 13, { phase: 'Succeeded' }));
  eq('a DELETED of an unknown object takes its last state off', groups(c)['ns:Succeeded'], [2, 0]);
  eq('an older event changes nothing', c.event(ev('MODIFIED', 'n', 12, { phase: 'Succeeded' })), false);
  eq('an older event changes nothing: groups', groups(c)['ns:Failed'], [3, 2]);
  eq('a MODIFIED of an unknown object asks a count', c.event(ev('MODIFIED', 'u', 14, { phase: 'Failed' })), true);
  eq('a MODIFIED of an unknown object moves nothing', groups(c)['ns:Failed'], [3, 2]);
  c.recounting();
  c.event(ev('ADDED', 'late', 16, { phase: 'Init' })); // newer than the count below
  c.event(ev('MODIFIED', 'n', 15, { phase: 'Progressing' })); // older than it: in it
  c.load({ metadata: { resourceVersion: '15' }, groups: [{ namespace: 'ns', phase: 'Succeeded', count: 2 }, { namespace: 'ns', phase: 'Failed', count: 2, lastError: 1 }, { namespace: 'ns', phase: 'Progressing', count: 1 }] });
  eq('a recount, with the changes newer than it applied again', groups(c), { 'ns:Succeeded': [2, 0], 'ns:Failed': [2, 1], 'ns:Progressing': [1, 0], 'ns:Init': [1, 0] });
  eq('a recount newer than the unsure change settles it', c.needsCount(), false);
  c.event(ev('MODIFIED', 'u', 17, { phase: 'Succeeded' }));
  eq('the object a recount was asked for is known after it', groups(c)['ns:Succeeded'], [3, 0]);
  eq('failingIn a failed phase', failingIn({ phase: 'ABORTED', count: 4, lastError: 1 }), 4);
  eq('failingIn a lastError while progressing', failingIn({ phase: 'Progressing', count: 4, lastError: 1 }), 1);
  eq('failingIn a success', failingIn({ phase: 'Succeeded', count: 4, lastError: 1 }), 0);
  const rows = tallyCounts([{ plural: 'installations', counts: c }], Date.parse('2026-11-28T11:50:00Z') + stuckAfter + 1);
  eq('tallyCounts: totals, failing, stuck (deleting for over a minute) and phases', rows.map(r => [r.ns, r.plural, r.total, r.failing, r.stuck, Object.fromEntries(r.phases)]),
    [['ns', 'installations', 6, 1, 1, { Succeeded: 3, Failed: 1, Progressing: 1, Init: 1 }]]);
  eq('tallyCounts: not stuck within a minute', tallyCounts([{ plural: 'installations', counts: c }], Date.parse('2026-11-28T11:50:30Z'))[0].stuck, 0);
  const two = new PhaseCounts('Event');
  two.load({ metadata: { resourceVersion: '1' }, groups: [{ namespace: 'a', phase: 'SUCCEEDED', count: 1 }, { namespace: 'b', phase: 'FAILED', count: 1 }] });
  eq('tallyCounts: rows with failing first', tallyCounts([{ plural: 'events', counts: two }], now).map(r => r.ns), ['b', 'a']);
});

cases('yaml', () => {
  const s = redact({ kind: 'Secret', metadata: { name: 's' }, data: { password: 'aHVudGVyMg==' } });
  eq('redact: no value of a Secret', JSON.stringify(s).includes('aHVudGVyMg'), false);
  eq('redact: other kinds as they are', redact({ kind: 'DataObject', data: { a: 1 } }).data.a, 1);
  eq('toYAML quotes what would read otherwise', toYAML({ a: 'true', b: '1.5', c: 'plain', d: [] }), 'a: "true"\nb: "1.5"\nc: plain\nd: []');
});

window.decisions = results;
document.getElementById('state').textContent = 'done';
