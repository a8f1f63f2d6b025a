// The router's decision: which view, with which parameters, a path under
// /ui/ shows. Pure (app.js renders what it decides).
import { overview } from './views/overview.js';
import { listView } from './views/list.js';
import { deployments } from './views/deployments.js';
import { events } from './views/events.js';
import { cleaners } from './views/cleaners.js';
import { objectView } from './views/object.js';

// route maps a path under /ui/ to a view and its parameters: name is
// the view's (overview, deployments, events, cleaners, list, object,
// signin, notfound), view its function (null for signin and notfound).
export function route(path) {
  const p = path.replace(/^\/ui\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (p.length === 0) return { view: overview, name: 'overview' };
  if (p[0] === 'signin') return { view: null, name: 'signin' };
  if (p.length === 1 && p[0] === 'deployments') return { view: deployments, name: 'deployments' };
  if (p.length === 1 && p[0] === 'events') return { view: events, name: 'events' };
  if (p.length === 1 && p[0] === 'cleaners') return { view: cleaners, name: 'cleaners' };
  if (p.length === 2 && p[0] === 'list') return { view: listView, name: 'list', plural: p[1] };
  if (p.length === 4 && p[0] === 'namespaces') return { view: objectView, name: 'object', ns: p[1], plural: p[2], objName: p[3] };
  if (p.length === 2 && p[0] === 'namespaces') return { view: objectView, name: 'object', ns: '', plural: 'namespaces', objName: p[1] };
  return { view: null, name: 'notfound' };
}
