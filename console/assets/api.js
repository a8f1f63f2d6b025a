// The public API, as any client uses it: REST and watch with a bearer
// token. The token lives in sessionStorage only (never a URL, a cookie or
// a log) and is sent in the Authorization header.

export const base = '/apis/cairn.dev/v1alpha1';
const tokenKey = 'cairn.token';
const partial = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
const partialList = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

// Kinds whose values must never reach the page: read as metadata only.
const metadataOnly = new Set(['secrets']);

export const token = {
  get: () => sessionStorage.getItem(tokenKey) || '',
  set: t => sessionStorage.setItem(tokenKey, t),
  clear: () => sessionStorage.removeItem(tokenKey),
};

// ApiError is a Status the server answered (or a network failure, code 0).
export class ApiError extends Error {
  constructor(code, reason, message) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

// onUnauthorized is called when the server refuses the token (401).
let unauthorized = () => {};
export function onUnauthorized(f) { unauthorized = f; }

const kindNames = ['Namespace', 'Secret', 'Target', 'DataObject', 'Blueprint', 'Installation', 'Execution',
  'DeployItem', 'Project', 'Event', 'Cleaner', 'Gateway'];

// kindOf is the kind of a plural ("deployitems" → "DeployItem").
export function kindOf(pl) { return kindNames.find(k => plural(k) === pl) || pl; }

// plural is the path segment of a kind: lower case + "s".
export function plural(kind) { return kind.toLowerCase() + 's'; }

// collection is the path of a collection of plural in ns ("" or "*": all).
export function collection(pl, ns) {
  if (pl === 'namespaces') return base + '/namespaces';
  return ns && ns !== '*' ? `${base}/namespaces/${encodeURIComponent(ns)}/${pl}` : `${base}/${pl}`;
}

// objectPath is the path of one object.
export function objectPath(pl, ns, name) {
  if (pl === 'namespaces') return `${base}/namespaces/${encodeURIComponent(name)}`;
  return `${collection(pl, ns)}/${encodeURIComponent(name)}`;
}

function headers(extra) {
  const h = { Authorization: 'Bearer ' + token.get(), ...extra };
  return h;
}

async function failure(res) {
  let st = {};
  try { st = await res.json(); } catch { /* not a Status */ }
  const err = new ApiError(res.status, st.reason || res.statusText, st.message || `${res.status} ${res.statusText}`);
  if (res.status === 401) unauthorized(err);
  return err;
}

// request sends one call and returns the decoded JSON answer. It rejects
// with ApiError: the server's Status, or code 0 when the network failed.
export async function request(method, path, { body, contentType, accept, signal } = {}) {
  const h = headers({ Accept: accept || 'application/json' });
  if (body !== undefined) h['Content-Type'] = contentType || 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal, cache: 'no-store', referrerPolicy: 'no-referrer' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'NetworkError', 'the server cannot be reached: ' + e.message);
  }
  if (!res.ok) throw await failure(res);
  const text = await res.text();
  return text ? JSON.parse(text) : {};
}

// get reads one object (a Secret as metadata only).
export function get(pl, ns, name, opts = {}) {
  return request('GET', objectPath(pl, ns, name), { ...opts, accept: metadataOnly.has(pl) ? partial : undefined });
}

// list reads one page of a collection.
export function list(pl, ns, { labelSelector, fieldSelector, limit, cont, signal } = {}) {
  const q = new URLSearchParams();
  if (labelSelector) q.set('labelSelector', labelSelector);
  if (fieldSelector) q.set('fieldSelector', fieldSelector);
  if (limit) q.set('limit', String(limit));
  if (cont) q.set('continue', cont);
  const qs = q.toString();
  return request('GET', collection(pl, ns) + (qs ? '?' + qs : ''), { signal, accept: metadataOnly.has(pl) ? partialList : undefined });
}

const phaseCount = 'application/json;as=PhaseCount;g=cairn.dev;v=v1alpha1';

// count reads how many objects of a collection are in each phase, by
// namespace (a PhaseCount: no objects), at one resourceVersion.
export function count(pl, ns, { labelSelector, signal } = {}) {
  const q = new URLSearchParams();
  if (labelSelector) q.set('labelSelector', labelSelector);
  const qs = q.toString();
  return request('GET', collection(pl, ns) + (qs ? '?' + qs : ''), { signal, accept: phaseCount });
}

// annotate sets one annotation by a JSON merge patch.
export function annotate(pl, ns, name, key, value) {
  return request('PATCH', objectPath(pl, ns, name), {
    body: { metadata: { annotations: { [key]: value } } }, contentType: 'application/merge-patch+json',
  });
}

// lines calls onLine for every newline-terminated line of a streamed
// answer; it resolves when the stream ends and rejects when it breaks.
async function lines(res, onLine) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line) onLine(line);
      }
    }
  } catch (e) {
    reader.cancel().catch(() => {});
    throw e;
  }
}

// watch streams the changes of a collection after resourceVersion rv,
// calling onEvent({type, object}) for each. It resolves when the server
// ends the stream and rejects with ApiError when it refuses it (410 Gone:
// rv was compacted) or with another error when the connection drops.
export async function watch(pl, ns, rv, { labelSelector, fieldSelector, signal }, onEvent) {
  const q = new URLSearchParams({ watch: 'true', allowWatchBookmarks: 'true' });
  if (rv) q.set('resourceVersion', rv);
  if (labelSelector) q.set('labelSelector', labelSelector);
  if (fieldSelector) q.set('fieldSelector', fieldSelector);
  const accept = metadataOnly.has(pl) ? partial : 'application/json';
  let res;
  try {
    res = await fetch(collection(pl, ns) + '?' + q, { headers: headers({ Accept: accept }), signal, cache: 'no-store', referrerPolicy: 'no-referrer' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'NetworkError', 'the server cannot be reached: ' + e.message);
  }
  if (!res.ok) throw await failure(res);
  await lines(res, line => onEvent(JSON.parse(line)));
}

// follow streams text (a log) to onText until the stream ends. It rejects
// with ApiError when the server refuses (404: not started yet).
export async function follow(path, { signal }, onText) {
  let res;
  try {
    res = await fetch(path, { headers: headers({ Accept: 'text/plain, application/json' }), signal, cache: 'no-store', referrerPolicy: 'no-referrer' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'NetworkError', 'the server cannot be reached: ' + e.message);
  }
  if (!res.ok) throw await failure(res);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    onText(dec.decode(value, { stream: true }));
  }
}
