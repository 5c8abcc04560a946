// JSON-value comparison for the conformance runner.
//
// Cases compare what a run produced with what the case expects as JSON values: objects
// are equal when they have the same keys with equal values, whatever the key order;
// arrays are equal element by element. `differences` says where two values part, as
// paths like `events[2].message`, so a failure prints what differs instead of two
// whole documents.

/** True when `a` and `b` are equal JSON values (object key order does not matter). */
export function jsonEqual(a, b) {
  return differences(a, b, '', 1).length === 0;
}

/**
 * The places where `got` differs from `expected`, at most `limit` of them, each as
 * `{ path, expected, got }`. A key present on one side only shows `undefined` on the
 * other.
 */
export function differences(expected, got, path = '', limit = 8) {
  const out = [];
  walk(expected, got, path, out, limit);
  return out;
}

function walk(expected, got, path, out, limit) {
  if (out.length >= limit) return;
  if (Array.isArray(expected) && Array.isArray(got)) {
    const n = Math.max(expected.length, got.length);
    for (let i = 0; i < n && out.length < limit; i++) {
      walk(expected[i], got[i], `${path}[${i}]`, out, limit);
    }
    return;
  }
  if (isObject(expected) && isObject(got)) {
    const keys = new Set([...Object.keys(expected), ...Object.keys(got)]);
    for (const key of keys) {
      if (out.length >= limit) return;
      walk(expected[key], got[key], path ? `${path}.${key}` : key, out, limit);
    }
    return;
  }
  // Scalars (and a mismatch of kinds: array against object, object against scalar).
  // `===` makes 0 and -0 equal, as JSON text cannot tell them apart either.
  if (expected !== got) out.push({ path: path || '(value)', expected, got });
}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** One-line JSON text of `v`, cut to `max` characters (`undefined` shows as absent). */
export function brief(v, max = 400) {
  if (v === undefined) return '(absent)';
  const text = JSON.stringify(v);
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}
