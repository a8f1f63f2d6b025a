// What the views share: links to objects, times, the filter bar and a
// virtualised, keyboard-navigable list.
import { h, replace } from '../dom.js';
import { plural } from '../api.js';
import { phaseOf, isFailing } from '../phase.js';

// href is the stable console URL of an object.
export function href(o) {
  const m = o.metadata;
  if (o.kind === 'Namespace') return '/ui/namespaces/' + encodeURIComponent(m.name);
  return `/ui/namespaces/${encodeURIComponent(m.namespace)}/${plural(o.kind)}/${encodeURIComponent(m.name)}`;
}

// ago renders the time since an RFC 3339 time, e.g. "3m12s".
export function ago(t, now = Date.now()) { return t ? span(now - Date.parse(t)) : ''; }

// span renders a duration in milliseconds.
export function span(ms) {
  if (!(ms >= 0)) return '';
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm' + (s % 60) + 's';
  if (s < 86400) return Math.floor(s / 3600) + 'h' + Math.floor((s % 3600) / 60) + 'm';
  return Math.floor(s / 86400) + 'd' + Math.floor((s % 86400) / 3600) + 'h';
}

// parseDuration reads a Go duration ("90s", "1h30m") into milliseconds.
export function parseDuration(d) {
  if (!d) return NaN;
  const units = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60000, h: 3600000 };
  let ms = 0;
  const re = /([\d.]+)(ns|us|µs|ms|s|m|h)/g;
  let m, seen = 0;
  while ((m = re.exec(d))) { ms += parseFloat(m[1]) * units[m[2]]; seen += m[0].length; }
  return seen === d.length ? ms : NaN;
}

// filters reads the filters of a URL query.
export function filters(q) {
  return {
    ns: q.get('ns') || '',
    labelSelector: q.get('labelSelector') || '',
    failing: q.get('failing') === '1',
    search: (q.get('q') || '').toLowerCase(),
  };
}

// matches applies the filters the browser applies (the server applies
// the namespace and the label selector).
export function matches(o, f) {
  if (f.search && !o.metadata.name.toLowerCase().includes(f.search)) return false;
  if (f.failing && !isFailing(o)) return false;
  return true;
}

// filterBar is the form of the filters; extra nodes go first (a kind
// select). Changes update the URL (ctx.setQuery).
export function filterBar(ctx, extra) {
  const q = ctx.query;
  const f = filters(q);
  const set = (k, v) => { const n = new URLSearchParams(q); if (v) n.set(k, v); else n.delete(k); ctx.setQuery(n); };
  const search = h('input', { id: 'filter-q', type: 'search', placeholder: 'name contains…', value: f.search, 'aria-label': 'search names (press / to focus)' });
  let timer;
  search.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => set('q', search.value.trim()), 200); });
  const onKey = e => {
    if (e.key === '/' && document.activeElement.tagName !== 'INPUT') { e.preventDefault(); search.focus(); }
  };
  document.addEventListener('keydown', onKey);
  ctx.onCleanup(() => document.removeEventListener('keydown', onKey));
  return h('form', { class: 'filters', role: 'search', onsubmit: e => e.preventDefault() },
    extra,
    h('label', {}, 'Namespace ', h('input', { id: 'filter-ns', value: f.ns, placeholder: 'all', size: 12,
      onchange: e => set('ns', e.target.value.trim()) })),
    h('label', {}, 'Labels ', h('input', { id: 'filter-labels', value: f.labelSelector, placeholder: 'app=web,tier!=db', size: 18,
      onchange: e => set('labelSelector', e.target.value.trim()) })),
    h('label', {}, h('input', { id: 'filter-failing', type: 'checkbox', checked: f.failing,
      onchange: e => set('failing', e.target.checked ? '1' : '') }), ' only failing'),
    h('label', {}, 'Search ', search));
}

// status tells a list's state: loading, live, failed, how many objects.
export function listStatus(list, shown) {
  let text;
  if (list.state === 'failed') text = 'Cannot read ' + list.plural + ': ' + list.error.message;
  else if (list.state === 'loading') text = 'Loading ' + list.plural + '…';
  else text = `${shown} of ${list.items.size} ${list.plural}` + (list.complete ? '' : ' (more loading…)') + ' · live';
  return h('p', { class: 'liststatus' + (list.state === 'failed' ? ' error' : ''), role: 'status', data: { state: list.state } }, text);
}

const rowHeight = 32;

// VirtualList shows many rows, building only those on screen. row(item)
// returns an element (an <a> for keyboard use). Arrow keys and j/k move
// the focus between rows; Enter follows the focused row's link.
export class VirtualList {
  constructor(label, row) {
    this.row = row;
    this.items = [];
    this.focus = -1;
    this.spacer = h('div', { class: 'vspacer' });
    this.el = h('div', { class: 'vlist', role: 'list', 'aria-label': label, tabindex: '0' }, this.spacer);
    this.el.addEventListener('scroll', () => this.draw());
    this.el.addEventListener('keydown', e => this.key(e));
    new ResizeObserver(() => this.draw()).observe(this.el);
  }

  set(items) { this.items = items; this.draw(); }

  key(e) {
    const moves = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1, PageDown: 10, PageUp: -10, Home: -1e9, End: 1e9 };
    if (!(e.key in moves) || e.target.tagName === 'INPUT') return;
    e.preventDefault();
    this.focus = Math.max(0, Math.min(this.items.length - 1, this.focus + moves[e.key]));
    const top = this.focus * rowHeight;
    if (top < this.el.scrollTop) this.el.scrollTop = top;
    else if (top + rowHeight > this.el.scrollTop + this.el.clientHeight) this.el.scrollTop = top + rowHeight - this.el.clientHeight;
    this.draw();
    const r = this.el.querySelector('[data-index="' + this.focus + '"]');
    if (r) r.focus();
  }

  draw() {
    this.spacer.style.height = this.items.length * rowHeight + 'px';
    const first = Math.max(0, Math.floor(this.el.scrollTop / rowHeight) - 5);
    const last = Math.min(this.items.length, first + Math.ceil((this.el.clientHeight || 600) / rowHeight) + 10);
    const rows = [];
    for (let i = first; i < last; i++) {
      const r = this.row(this.items[i]);
      r.dataset.index = i;
      r.classList.add('vrow');
      r.setAttribute('role', 'listitem');
      r.style.transform = `translateY(${i * rowHeight}px)`;
      r.addEventListener('focus', () => { this.focus = i; });
      rows.push(r);
    }
    const hadFocus = this.el.contains(document.activeElement) && document.activeElement !== this.el;
    replace(this.el, this.spacer, rows);
    if (hadFocus) {
      const r = this.el.querySelector('[data-index="' + this.focus + '"]');
      if (r) r.focus({ preventScroll: true });
    }
  }
}

// lastError renders an object's status.lastError inline.
export function lastError(o) {
  const e = o.status && o.status.lastError;
  if (!e || !e.message) return null;
  return h('span', { class: 'lasterror', title: e.reason || '' }, (e.reason ? e.reason + ': ' : '') + e.message);
}

export { phaseOf };
