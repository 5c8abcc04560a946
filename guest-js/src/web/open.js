// The web-standard globals an Exec script may reach for: timers, queueMicrotask,
// structuredClone, atob/btoa, TextEncoder/TextDecoder, URL/URLSearchParams, DOMException
// and fetch. None adds a capability: no I/O, no clock beyond
// `Date`, no code from strings. This runs once in the script's realm, after the prelude,
// with the same native `host` hooks (see mod.rs); every function it installs is created
// here, so each belongs to the sandbox realm. docs/script-globals.md says what each does.
(function (host) {
  'use strict';

  // Captured now, so a script that patches built-ins changes only its own behaviour.
  const apply = Reflect.apply;
  const ownKeys = Reflect.ownKeys;
  const defineProperty = Object.defineProperty;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const getPrototypeOf = Object.getPrototypeOf;
  const objectKeys = Object.keys;
  const hasOwn = Object.hasOwn;
  const ObjectCtor = Object;
  const ArrayCtor = Array;
  const MapCtor = Map;
  const SetCtor = Set;
  const DateCtor = Date;
  const RegExpCtor = RegExp;
  const ArrayBufferCtor = ArrayBuffer;
  const DataViewCtor = DataView;
  const Uint8ArrayCtor = Uint8Array;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const StringCtor = String;
  const iteratorSymbol = Symbol.iterator;
  const toStringTagSymbol = Symbol.toStringTag;
  const uncurry = (f) => (self, ...args) => apply(f, self, args);
  const getter = (proto, key) => uncurry(getOwnPropertyDescriptor(proto, key).get);

  const mapGet = uncurry(Map.prototype.get);
  const mapSet = uncurry(Map.prototype.set);
  const mapHas = uncurry(Map.prototype.has);
  const mapForEach = uncurry(Map.prototype.forEach);
  const setAdd = uncurry(Set.prototype.add);
  const setForEach = uncurry(Set.prototype.forEach);
  const arraySort = uncurry(Array.prototype.sort);
  const arraySplice = uncurry(Array.prototype.splice);
  const stringSlice = uncurry(String.prototype.slice);
  const stringToLowerCase = uncurry(String.prototype.toLowerCase);
  const stringToUpperCase = uncurry(String.prototype.toUpperCase);
  const stringTrim = uncurry(String.prototype.trim);
  const isWellFormed = uncurry(String.prototype.isWellFormed);
  const toWellFormed = uncurry(String.prototype.toWellFormed);
  const regExpTest = uncurry(RegExp.prototype.test);
  const objectToString = uncurry(Object.prototype.toString);
  const numberValueOf = uncurry(Number.prototype.valueOf);
  const stringValueOf = uncurry(String.prototype.valueOf);
  const booleanValueOf = uncurry(Boolean.prototype.valueOf);
  const bigintValueOf = uncurry(BigInt.prototype.valueOf);
  const dateGetTime = uncurry(Date.prototype.getTime);
  const regExpSource = getter(RegExp.prototype, 'source');
  const regExpFlags = getter(RegExp.prototype, 'flags');
  const bufferByteLength = getter(ArrayBuffer.prototype, 'byteLength');
  const bufferResizable = getter(ArrayBuffer.prototype, 'resizable');
  const bufferMaxByteLength = getter(ArrayBuffer.prototype, 'maxByteLength');
  const bufferDetached = getter(ArrayBuffer.prototype, 'detached');
  const TypedArrayPrototype = getPrototypeOf(Uint8Array.prototype);
  const typedArrayTag = getter(TypedArrayPrototype, toStringTagSymbol);
  const typedArrayBuffer = getter(TypedArrayPrototype, 'buffer');
  const typedArrayByteOffset = getter(TypedArrayPrototype, 'byteOffset');
  const typedArrayByteLength = getter(TypedArrayPrototype, 'byteLength');
  const typedArrayLength = getter(TypedArrayPrototype, 'length');
  const typedArraySet = uncurry(TypedArrayPrototype.set);
  const typedArraySlice = uncurry(TypedArrayPrototype.slice);
  const dataViewBuffer = getter(DataView.prototype, 'buffer');
  const dataViewByteOffset = getter(DataView.prototype, 'byteOffset');
  const dataViewByteLength = getter(DataView.prototype, 'byteLength');
  const nativeQueueMicrotask = queueMicrotask;

  const typedArrays = ObjectCtor.create(null);
  for (const name of ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
    'Uint32Array', 'Float16Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
    if (typeof globalThis[name] === 'function') typedArrays[name] = globalThis[name];
  }
  const errorTypes = ObjectCtor.create(null);
  for (const ctor of [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError]) {
    errorTypes[ctor.name] = ctor;
  }

  // A global as browsers define them: writable, configurable, not enumerable.
  function install(name, value) {
    defineProperty(globalThis, name, { value, writable: true, enumerable: false, configurable: true });
  }

  // WebIDL's USVString: ToString (a Symbol throws), lone surrogates replaced by U+FFFD.
  function usv(value) {
    const text = `${value}`;
    return isWellFormed(text) ? text : toWellFormed(text);
  }

  // WebIDL's `long`: ToNumber, then modulo 2^32 into the signed range (NaN and ±∞ are 0).
  function toLong(value) {
    return +value | 0;
  }

  function requireArguments(count, needed, what) {
    if (count < needed) throw new TypeErrorCtor(`${what} takes ${needed} argument${needed > 1 ? 's' : ''}, got ${count}`);
  }

