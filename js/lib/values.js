// Values a JavaScript function gives the host, strictly: what crosses must be plain data.
// `null`, booleans, finite numbers, strings, arrays, and plain objects (made by `{}` or
// `Object.create(null)`); `undefined` is left out as JSON leaves it out. Anything else (a
// BigInt, a Date, a Map, a class instance, a function, NaN, a cycle) is refused with a
// TypeError that names where it is, and so is a value past the addon's MAX_VALUE_BYTES.

/** How deep a value may nest. */
export const MAX_DEPTH = 128

/** How long an error message from a function may be when the script reads it. */
export const MAX_ERROR_CHARS = 4096

/**
 * `value` as JSON text, or a TypeError naming what is not plain data and where
 * (`$.items[2].when`). `maxBytes` bounds its size, counted as its strings' lengths and 8 for
 * every other part, before any copy is made.
 */
export function plainJson(value, maxBytes) {
  const walk = { bytes: 0, ancestors: new Set(), maxBytes }
  check(value === undefined ? null : value, '$', 0, walk)
  return JSON.stringify(value === undefined ? null : value)
}

function count(walk, bytes, path) {
  walk.bytes += bytes
  if (walk.bytes > walk.maxBytes) {
    throw new TypeError(`more than ${walk.maxBytes / (1024 * 1024)} MiB of data, at ${path}`)
  }
}

function check(value, path, depth, walk) {
  count(walk, 8, path)
  if (depth > MAX_DEPTH) throw new TypeError(`it nests deeper than ${MAX_DEPTH} levels at ${path}`)
  switch (typeof value) {
    case 'boolean':
      return
    case 'string':
      return count(walk, value.length, path)
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${value} is not a JSON number, at ${path}`)
      return
    case 'bigint':
      throw new TypeError(`a BigInt is not plain data (give a number or a string), at ${path}`)
    case 'undefined':
      // Only an object's property may be undefined (it is left out); an array's item may not.
      throw new TypeError(`undefined is not plain data (give null), at ${path}`)
    case 'object':
      break
    default:
      throw new TypeError(`a ${typeof value} is not plain data, at ${path}`)
  }
  if (value === null) return
  if (walk.ancestors.has(value)) throw new TypeError(`a value that contains itself is not plain data, at ${path}`)
  walk.ancestors.add(value)
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      check(value[index], `${path}[${index}]`, depth + 1, walk)
    }
  } else {
    const prototype = Object.getPrototypeOf(value)
    if (prototype !== Object.prototype && prototype !== null) {
      const kind = value.constructor?.name || 'object'
      throw new TypeError(`a value of type ${kind} is not plain data, at ${path}`)
    }
    for (const key of Object.keys(value)) {
      const item = value[key]
      if (item === undefined) continue
      count(walk, key.length, path)
      check(item, `${path}.${key}`, depth + 1, walk)
    }
  }
  walk.ancestors.delete(value)
}

/** What a thrown value says to the script: an Error's name and message, or the value. */
export function describeThrown(thrown) {
  let text
  if (thrown instanceof Error) {
    text = thrown.message ? `${thrown.name}: ${thrown.message}` : thrown.name
  } else if (typeof thrown === 'string') {
    text = thrown
  } else {
    try {
      text = `a non-Error was thrown: ${JSON.stringify(thrown) ?? String(thrown)}`
    } catch {
      text = `a non-Error was thrown: ${Object.prototype.toString.call(thrown)}`
    }
  }
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}…` : text
}
