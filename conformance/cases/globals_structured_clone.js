const shared = { n: 1 };
const source = {
  text: 'a', number: -0, big: 2n ** 70n, nothing: null, missing: undefined, flag: true,
  date: new Date(86400000), regexp: /x+/giu,
  map: new Map([[shared, 'key is shared'], ['k', shared]]),
  set: new Set([shared, 3]),
  array: [1, , shared],
  boxed: [new Number(4), new String('s'), new Boolean(false), Object(5n)],
  error: new RangeError('out', { cause: shared }),
  custom: new (class Point { constructor() { this.x = 1; } })(),
};
source.self = source;
const buffer = new ArrayBuffer(8);
new Uint8Array(buffer).set([1, 2, 3, 4, 5, 6, 7, 8]);
source.views = [new Uint8Array(buffer, 2, 3), new DataView(buffer, 4), new Float64Array([1.5])];
source.__proto__own = JSON.parse('{"__proto__": {"polluted": true}}');
const c = structuredClone(source);
const describe = (f) => { try { f(); return 'cloned'; } catch (e) { return `${e.name} ${e instanceof DOMException} ${e.code}`; } };
return {
  distinct: c !== source && c.self === c,
  primitives: [c.text, Object.is(c.number, -0), c.big === 2n ** 70n, c.nothing, 'missing' in c, c.missing, c.flag],
  date: [c.date instanceof Date, c.date.getTime()],
  regexp: [c.regexp instanceof RegExp, c.regexp.source, c.regexp.flags, c.regexp !== source.regexp],
  sharedKept: [...c.map.keys()][0] === c.map.get('k') && [...c.set][0] === c.map.get('k') && c.array[2] === c.map.get('k'),
  sharedCopied: c.map.get('k') !== shared,
  array: [c.array.length, 1 in c.array, Array.isArray(c.array)],
  boxed: c.boxed.map((b) => [typeof b, String(b.valueOf())]),
  error: [c.error instanceof RangeError, c.error.name, c.error.message, c.error.cause === c.map.get('k')],
  custom: [Object.getPrototypeOf(c.custom) === Object.prototype, c.custom.x],
  views: [
    c.views[0] instanceof Uint8Array, [...c.views[0]], c.views[0].byteOffset,
    c.views[0].buffer === c.views[1].buffer, c.views[1].getUint8(0), c.views[0].buffer !== buffer,
    c.views[2][0],
  ],
  protoIsOwnData: Object.getPrototypeOf(c.__proto__own) === Object.prototype && Object.hasOwn(c.__proto__own, '__proto__') && ({}).polluted === undefined,
  refused: {
    function: describe(() => structuredClone({ f() {} })),
    symbol: describe(() => structuredClone(Symbol('s'))),
    proxy: describe(() => structuredClone(new Proxy({}, {}))),
    promise: describe(() => structuredClone(Promise.resolve())),
    weakMap: describe(() => structuredClone(new WeakMap())),
  },
  noArgument: describe(() => structuredClone()),
  undefinedValue: structuredClone(undefined) === undefined,
};
