// `Atomics`, which the engine leaves out when built for WebAssembly (its waiting needs
// threads). An Exec script is one agent with no other to share memory with, so every
// operation is a plain read and write of one element, made with the standard's checks and
// conversions in the standard's order. The agent cannot suspend, as a browser's main thread
// cannot: `Atomics.wait` throws a TypeError once its arguments are checked, and
// `Atomics.notify` finds no waiter. This runs once in the script's realm, after the web
// globals.
(function () {
  'use strict';

  const apply = Reflect.apply;
  const defineProperty = Object.defineProperty;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const getPrototypeOf = Object.getPrototypeOf;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const BigIntCtor = BigInt;
  const mathTrunc = Math.trunc;
  const isIntegerNumber = Number.isInteger;
  const toPrimitiveSymbol = Symbol.toPrimitive;
  const TypedArrayPrototype = getPrototypeOf(Int8Array.prototype);
  const uncurry = (f) => (self, ...args) => apply(f, self, args);
  const getter = (proto, key) => uncurry(getOwnPropertyDescriptor(proto, key).get);
  const typedArrayName = getter(TypedArrayPrototype, Symbol.toStringTag);
  const typedArrayBuffer = getter(TypedArrayPrototype, 'buffer');
  const typedArrayLength = getter(TypedArrayPrototype, 'length');
  // `at` checks that the view is neither detached nor out of its buffer's bounds, and
  // nothing else observable: the standard's ValidateTypedArray.
  const typedArrayAt = uncurry(TypedArrayPrototype.at);
  const sharedByteLength = getter(SharedArrayBuffer.prototype, 'byteLength');
  const bufferImmutable = getter(ArrayBuffer.prototype, 'immutable');

  // A scratch element of each integer type: storing into it converts a value to the type.
  const scratch = {
    Int8Array: new Int8Array(1), Uint8Array: new Uint8Array(1),
    Int16Array: new Int16Array(1), Uint16Array: new Uint16Array(1),
    Int32Array: new Int32Array(1), Uint32Array: new Uint32Array(1),
    BigInt64Array: new BigInt64Array(1), BigUint64Array: new BigUint64Array(1),
  };
  const isBigIntType = (type) => type === 'BigInt64Array' || type === 'BigUint64Array';

  function toIntegerOrInfinity(value) {
    const number = +value;
    if (number !== number) return 0;
    return mathTrunc(number) + 0;
  }

  function toPrimitiveNumber(value) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return value;
    const exotic = value[toPrimitiveSymbol];
    if (exotic !== undefined && exotic !== null) {
      if (typeof exotic !== 'function') throw new TypeErrorCtor('Symbol.toPrimitive is not a function');
      const result = apply(exotic, value, ['number']);
      if (result !== null && (typeof result === 'object' || typeof result === 'function')) {
        throw new TypeErrorCtor('cannot convert an object to a primitive value');
      }
      return result;
    }
    // OrdinaryToPrimitive, valueOf first (no loop: a script may have replaced the array
    // iterator).
    let method = value.valueOf;
    if (typeof method === 'function') {
      const result = apply(method, value, []);
      if (result === null || (typeof result !== 'object' && typeof result !== 'function')) return result;
    }
    method = value.toString;
    if (typeof method === 'function') {
      const result = apply(method, value, []);
      if (result === null || (typeof result !== 'object' && typeof result !== 'function')) return result;
    }
    throw new TypeErrorCtor('cannot convert an object to a primitive value');
  }

  // The standard's ToBigInt: booleans, BigInts and numeric strings, never a Number.
  function toBigInt(value) {
    const primitive = toPrimitiveNumber(value);
    switch (typeof primitive) {
      case 'bigint': return primitive;
      case 'boolean': return primitive ? 1n : 0n;
      case 'string': return BigIntCtor(primitive);
      default: throw new TypeErrorCtor(`cannot convert ${typeof primitive} to a BigInt`);
    }
  }

  // ValidateIntegerTypedArray: the array's element type and its length now, once it is known
  // to be in bounds (and, for a write, not over an immutable buffer).
  function validate(typedArray, waitable, write) {
    const type = typedArray !== null && typeof typedArray === 'object' ? typedArrayName(typedArray) : undefined;
    if (type === undefined) throw new TypeErrorCtor('the argument is not a typed array');
    typedArrayAt(typedArray, 0);
    if (write) {
      const buffer = typedArrayBuffer(typedArray);
      if (!isSharedBuffer(buffer) && bufferImmutable(buffer)) throw new TypeErrorCtor('the typed array\'s buffer is immutable');
    }
    if (waitable ? type !== 'Int32Array' && type !== 'BigInt64Array' : scratch[type] === undefined) {
      throw new TypeErrorCtor(`Atomics cannot operate on ${waitable ? 'this kind of' : 'a non-integer'} typed array (${type})`);
    }
    return { type, length: typedArrayLength(typedArray) };
  }

  // ValidateAtomicAccess: the element's index, within the length the array had when it was
  // validated (the index's conversion may run script code that changes it).
  function elementIndex(record, requestIndex) {
    const index = toIntegerOrInfinity(requestIndex);
    if (index < 0 || index > 9007199254740991) throw new RangeErrorCtor('invalid array index');
    if (index >= record.length) throw new RangeErrorCtor('out-of-bound access');
    return index;
  }

  // RevalidateAtomicAccess: the conversions ran script code, which may have shrunk or
  // detached the buffer.
  function revalidate(typedArray, index) {
    typedArrayAt(typedArray, 0);
    if (index >= typedArrayLength(typedArray)) throw new RangeErrorCtor('out-of-bound access');
  }

  const convert = (type, value) => (isBigIntType(type) ? toBigInt(value) : toIntegerOrInfinity(value));

  // `value` as an element of `type` holds it (wrapped as the element's raw bytes are).
  function asElement(type, value) {
    const cell = scratch[type];
    cell[0] = value;
    return cell[0];
  }

  function readModifyWrite(typedArray, requestIndex, value, combine) {
    const record = validate(typedArray, false, true);
    const index = elementIndex(record, requestIndex);
    const operand = asElement(record.type, convert(record.type, value));
    revalidate(typedArray, index);
    const old = typedArray[index];
    typedArray[index] = combine(old, operand);
    return old;
  }

  function isSharedBuffer(buffer) {
    try {
      sharedByteLength(buffer);
      return true;
    } catch (e) {
      return false;
    }
  }

  const Atomics = {
    add(typedArray, index, value) { return readModifyWrite(typedArray, index, value, (a, b) => a + b); },
    and(typedArray, index, value) { return readModifyWrite(typedArray, index, value, (a, b) => a & b); },
    compareExchange(typedArray, index, expectedValue, replacementValue) {
      const record = validate(typedArray, false, true);
      const i = elementIndex(record, index);
      const expected = asElement(record.type, convert(record.type, expectedValue));
      const replacement = convert(record.type, replacementValue);
      revalidate(typedArray, i);
      const old = typedArray[i];
      // Compared as raw bytes: the expected value is already an element of the type.
      if (old === expected) typedArray[i] = replacement;
      return old;
    },
    exchange(typedArray, index, value) { return readModifyWrite(typedArray, index, value, (a, b) => b); },
    isLockFree(size) {
      const n = toIntegerOrInfinity(size);
      return n === 1 || n === 2 || n === 4 || n === 8;
    },
    load(typedArray, index) {
      const i = elementIndex(validate(typedArray, false, false), index);
      revalidate(typedArray, i);
      return typedArray[i];
    },
    notify(typedArray, index, count) {
      elementIndex(validate(typedArray, true, false), index);
      if (count !== undefined) toIntegerOrInfinity(count);
      // No agent but this one exists, so none waits.
      return 0;
    },
    or(typedArray, index, value) { return readModifyWrite(typedArray, index, value, (a, b) => a | b); },
    pause(n) {
      if (n !== undefined && !(typeof n === 'number' && isIntegerNumber(n))) {
        throw new TypeErrorCtor('Atomics.pause takes an integral number');
      }
    },
    store(typedArray, index, value) {
      const record = validate(typedArray, false, true);
      const i = elementIndex(record, index);
      const v = convert(record.type, value);
      revalidate(typedArray, i);
      typedArray[i] = v;
      return v;
    },
    sub(typedArray, index, value) { return readModifyWrite(typedArray, index, value, (a, b) => a - b); },
    wait(typedArray, index, value, timeout) {
      const record = validate(typedArray, true, false);
      if (!isSharedBuffer(typedArrayBuffer(typedArray))) {
        throw new TypeErrorCtor('Atomics.wait needs a typed array over a SharedArrayBuffer');
      }
      elementIndex(record, index);
      if (record.type === 'BigInt64Array') toBigInt(value);
      else toIntegerOrInfinity(value);
      // The timeout is converted (a script can see that), then there is no waiting.
      +timeout;
      throw new TypeErrorCtor('Atomics.wait cannot suspend an Exec script: it is the only agent, and nothing could wake it');
    },
    xor(typedArray, index, value) { return readModifyWrite(typedArray, index, value, (a, b) => a ^ b); },
  };
  for (const name of Object.keys(Atomics)) defineProperty(Atomics, name, { enumerable: false });
  defineProperty(Atomics.pause, 'length', { value: 0 });
  defineProperty(Atomics, Symbol.toStringTag, { value: 'Atomics', configurable: true });
  defineProperty(globalThis, 'Atomics', { value: Atomics, writable: true, configurable: true });
})
