// A small YAML writer for showing objects, with Secret values redacted.

const redacted = '<redacted: the console never shows secret values>';

// redact returns a copy of o without secret values: a Secret's data and
// stringData. (The console reads Secrets as metadata only; this is the
// second guard.)
export function redact(o) {
  if (!o || o.kind !== 'Secret') return o;
  const c = { ...o };
  for (const f of ['data', 'stringData']) {
    if (c[f]) c[f] = Object.fromEntries(Object.keys(c[f]).map(k => [k, redacted]));
  }
  return c;
}

function scalar(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = String(v);
  if (s === '' || /^[\s\-?:,[\]{}#&*!|>'"%@`]|[:#]\s|\s$|^(true|false|null|yes|no|~)$|^[\d.+-]/i.test(s) || s.includes('\n')) return JSON.stringify(s);
  return s;
}

// toYAML renders v as YAML.
export function toYAML(v, indent = '') {
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return v.map(x => {
      if (x && typeof x === 'object' && Object.keys(x).length) {
        const body = toYAML(x, indent + '  ');
        return indent + '- ' + body.slice(indent.length + 2);
      }
      return indent + '- ' + (x && typeof x === 'object' ? (Array.isArray(x) ? '[]' : '{}') : scalar(x));
    }).join('\n');
  }
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 0) return '{}';
    return keys.map(k => {
      const x = v[k];
      const key = indent + scalar(k) + ':';
      if (x && typeof x === 'object' && (Array.isArray(x) ? x.length : Object.keys(x).length)) {
        return key + '\n' + toYAML(x, Array.isArray(x) ? indent : indent + '  ');
      }
      return key + ' ' + (x && typeof x === 'object' ? (Array.isArray(x) ? '[]' : '{}') : scalar(x));
    }).join('\n');
  }
  return indent + scalar(v);
}
