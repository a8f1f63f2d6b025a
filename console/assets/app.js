// The console's shell: sign-in, navigation, the connection banner and the
// router that maps stable URLs to views. Every view is live over watch.
import * as api from './api.js';
import { h, replace } from './dom.js';
import { onConnection } from './live.js';
import { route } from './route.js';

const root = document.getElementById('root');
let cleanup = [];
let refusal = '';

// navigate shows path without reloading the page.
export function navigate(path, replaceState = false) {
  if (replaceState) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  render();
}

function signIn(message) {
  document.title = 'Sign in · cairn';
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'signin-help' });
  const msg = h('p', { id: 'signin-error', class: 'error', role: 'alert' }, message || '');
  const form = h('form', { id: 'signin', class: 'signin', method: 'post', onsubmit: async e => {
    e.preventDefault();
    const t = input.value.trim();
    if (!t) { msg.textContent = 'Enter a token: the admin token is in <data-dir>/admin.token, or ask for a scoped one.'; return; }
    api.token.set(t);
    input.value = '';
    try {
      await api.request('GET', api.base);
      refusal = '';
      const next = new URLSearchParams(location.search).get('next');
      navigate(next && next.startsWith('/ui/') ? next : '/ui/', true);
    } catch (err) {
      api.token.clear();
      msg.textContent = err.code === 401
        ? 'The server refused this token: ' + err.message + '. Check that it is whole and not expired, or get a new one.'
        : 'Signing in failed: ' + err.message;
    }
  } },
  h('h1', {}, 'cairn'),
  h('label', { for: 'token' }, 'Bearer token'),
  input,
  h('p', { id: 'signin-help', class: 'help' }, 'The token stays in this tab (session storage) and is sent only to this server.'),
  h('button', { type: 'submit' }, 'Sign in'),
  msg);
  replace(root, h('main', { class: 'signin-page' }, form));
  input.focus();
}

function signOut() {
  api.token.clear();
  navigate('/ui/signin', true);
}

function shell(current) {
  const link = (href, text, name) => h('a', { href, 'aria-current': current === name ? 'page' : undefined }, text);
  const banner = h('div', { id: 'connection', class: 'banner', role: 'status', hidden: true });
  const stop = onConnection((bad, err) => {
    banner.hidden = !bad;
    banner.textContent = bad ? 'Connection lost: reconnecting… (' + (err ? err.message : 'the watch dropped') + '). Changes made meanwhile will arrive.' : '';
  });
  cleanup.push(stop);
  const main = h('main', { id: 'main', tabindex: '-1' });
  replace(root,
    h('header', { class: 'top' },
      h('a', { href: '/ui/', class: 'brand' }, 'cairn'),
      h('nav', { 'aria-label': 'views' },
        link('/ui/', 'Overview', 'overview'),
        link('/ui/deployments', 'Deployments', 'deployments'),
        link('/ui/events', 'Events', 'events'),
        link('/ui/cleaners', 'Cleaners', 'cleaners'),
        link('/ui/list/installations', 'Objects', 'list')),
      h('button', { id: 'signout', type: 'button', onclick: signOut }, 'Sign out')),
    banner, main);
  return main;
}

// render shows the view of the current URL.
export function render() {
  for (const f of cleanup) f();
  cleanup = [];
  const r = route(location.pathname);
  if (r.name === 'signin' || !api.token.get()) {
    if (r.name !== 'signin') {
      history.replaceState(null, '', '/ui/signin?next=' + encodeURIComponent(location.pathname + location.search));
    }
    signIn(refusal);
    return;
  }
  const main = shell(r.name);
  if (!r.view) {
    replace(main, h('h1', {}, 'Not found'), h('p', {}, 'The console has no page at ' + location.pathname + '.'));
    return;
  }
  const ctx = {
    route: r,
    query: new URLSearchParams(location.search),
    main,
    onCleanup: f => cleanup.push(f),
    // setQuery changes the URL's query (filters) and renders again.
    setQuery: q => {
      const qs = q.toString();
      navigate(location.pathname + (qs ? '?' + qs : ''), true);
    },
  };
  r.view(ctx);
}

api.onUnauthorized(err => {
  api.token.clear();
  refusal = 'The server refused the token: ' + err.message + '. Sign in again.';
  if (route(location.pathname).name !== 'signin') navigate('/ui/signin?next=' + encodeURIComponent(location.pathname + location.search), true);
});

document.addEventListener('click', e => {
  const a = e.target.closest && e.target.closest('a[href]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/ui/')) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
});
window.addEventListener('popstate', render);
render();
