// The web-standard globals an Exec script may reach for: timers, queueMicrotask,
// structuredClone, atob/btoa, TextEncoder/TextDecoder, URL/URLSearchParams, DOMException,
// and en-US `toLocaleString` for numbers. None adds a capability: no I/O, no clock beyond
// `Date`, no code from strings. This runs once in the script's realm, after the prelude,
// with the same native `host` hooks (see web.rs); every function it installs is created
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
  const isNaNumber = Number.isNaN;
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

  // --------------------------------------------------------------------- DOMException --
  const exceptionCodes = ObjectCtor.assign(ObjectCtor.create(null), {
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
    NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
    SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
    TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20, URLMismatchError: 21,
    QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25,
  });

  class DOMException extends ErrorCtor {
    #name;
    #message;
    constructor(message = '', name = 'Error') {
      super();
      this.#message = `${message}`;
      this.#name = `${name}`;
    }
    get name() { return this.#name; }
    get message() { return this.#message; }
    get code() { return exceptionCodes[this.#name] ?? 0; }
  }
  install('DOMException', DOMException);

  // ---------------------------------------------------------- timers and microtasks --
  // The host keeps each timer's deadline and wakes the guest when it is due (wait-next);
  // the engine runs the callback as a task of its own. An error a callback throws fails
  // the run, as an uncaught error of the script's body does.
  const timers = {
    setTimeout(handler, timeout = 0, ...args) {
      if (typeof handler !== 'function') {
        throw new TypeErrorCtor('setTimeout() takes a function to call: Exec scripts do not compile code from strings');
      }
      const delay = toLong(timeout);
      return host.startTimer(delay > 0 ? delay : 0, () => { apply(handler, globalThis, args); });
    },
    clearTimeout(id = 0) {
      const n = toLong(id);
      if (n > 0) host.cancelTimer(n);
    },
    queueMicrotask(callback) {
      if (typeof callback !== 'function') throw new TypeErrorCtor('queueMicrotask() takes a function to call');
      nativeQueueMicrotask(() => {
        try {
          apply(callback, undefined, []);
        } catch (error) {
          host.reportError(error);
        }
      });
    },
  };
  install('setTimeout', timers.setTimeout);
  install('clearTimeout', timers.clearTimeout);
  install('queueMicrotask', timers.queueMicrotask);

  // ------------------------------------------------------------------ structuredClone --
  function cloneError(what) {
    return new DOMException(`structuredClone(): ${what} could not be cloned`, 'DataCloneError');
  }

  function data(value) {
    return { value, writable: true, enumerable: true, configurable: true };
  }

  function copyBuffer(buffer) {
    if (bufferDetached(buffer)) throw cloneError('a detached ArrayBuffer');
    const length = bufferByteLength(buffer);
    const copy = bufferResizable(buffer)
      ? new ArrayBufferCtor(length, { maxByteLength: bufferMaxByteLength(buffer) })
      : new ArrayBufferCtor(length);
    typedArraySet(new Uint8ArrayCtor(copy), new Uint8ArrayCtor(buffer));
    return copy;
  }

  function cloneInto(value, memory) {
    const type = typeof value;
    if (type === 'symbol') throw cloneError(`${StringCtor(value)}`);
    if (type === 'function') throw cloneError(`the function ${value.name || '(anonymous)'}`);
    if (value === null || type !== 'object') return value;
    if (mapHas(memory, value)) return mapGet(memory, value);
    const kind = host.kindOf(value);
    let copy;
    switch (kind) {
      case 'boolean': copy = ObjectCtor(booleanValueOf(value)); break;
      case 'number': copy = ObjectCtor(numberValueOf(value)); break;
      case 'string': copy = ObjectCtor(stringValueOf(value)); break;
      case 'bigint': copy = ObjectCtor(bigintValueOf(value)); break;
      case 'date': copy = new DateCtor(dateGetTime(value)); break;
      case 'regexp': copy = new RegExpCtor(regExpSource(value), regExpFlags(value)); break;
      case 'arraybuffer': copy = copyBuffer(value); break;
      case 'typedarray': {
        const buffer = cloneInto(typedArrayBuffer(value), memory);
        const Ctor = typedArrays[typedArrayTag(value)];
        copy = new Ctor(buffer, typedArrayByteOffset(value), typedArrayLength(value));
        break;
      }
      case 'dataview': {
        const buffer = cloneInto(dataViewBuffer(value), memory);
        copy = new DataViewCtor(buffer, dataViewByteOffset(value), dataViewByteLength(value));
        break;
      }
      case 'map': {
        copy = new MapCtor();
        mapSet(memory, value, copy);
        const entries = [];
        mapForEach(value, (v, k) => { entries[entries.length] = k; entries[entries.length] = v; });
        for (let i = 0; i < entries.length; i += 2) {
          mapSet(copy, cloneInto(entries[i], memory), cloneInto(entries[i + 1], memory));
        }
        return copy;
      }
      case 'set': {
        copy = new SetCtor();
        mapSet(memory, value, copy);
        const members = [];
        setForEach(value, (v) => { members[members.length] = v; });
        for (let i = 0; i < members.length; i++) setAdd(copy, cloneInto(members[i], memory));
        return copy;
      }
      case 'error': {
        const name = value.name;
        const Ctor = typeof name === 'string' && errorTypes[name] ? errorTypes[name] : ErrorCtor;
        const message = getOwnPropertyDescriptor(value, 'message');
        copy = message && 'value' in message ? new Ctor(`${message.value}`) : new Ctor();
        mapSet(memory, value, copy);
        const stack = getOwnPropertyDescriptor(value, 'stack');
        if (stack && typeof stack.value === 'string') {
          defineProperty(copy, 'stack', { value: stack.value, writable: true, enumerable: false, configurable: true });
        }
        const cause = getOwnPropertyDescriptor(value, 'cause');
        if (cause && 'value' in cause) {
          defineProperty(copy, 'cause', { value: cloneInto(cause.value, memory), writable: true, enumerable: false, configurable: true });
        }
        return copy;
      }
      case 'array':
      case 'object': {
        copy = kind === 'array' ? new ArrayCtor(value.length) : {};
        mapSet(memory, value, copy);
        const keys = objectKeys(value);
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i];
          if (hasOwn(value, key)) defineProperty(copy, key, data(cloneInto(value[key], memory)));
        }
        return copy;
      }
      case 'proxy': throw cloneError('a Proxy');
      default: throw cloneError(`#<${stringSlice(objectToString(value), 8, -1)}>`);
    }
    mapSet(memory, value, copy);
    return copy;
  }

  const cloning = {
    structuredClone(value, options = undefined) {
      requireArguments(arguments.length, 1, 'structuredClone()');
      if (options !== undefined && options !== null) {
        const transfer = options.transfer;
        if (transfer !== undefined && (transfer === null || transfer.length !== 0)) {
          throw cloneError('a transfer list (transferring is not supported in Exec scripts); the value');
        }
      }
      return cloneInto(value, new MapCtor());
    },
  };
  install('structuredClone', cloning.structuredClone);

  // ----------------------------------------------------------------------- atob, btoa --
  const base64 = {
    atob(data) {
      requireArguments(arguments.length, 1, 'atob()');
      const bytes = host.base64Decode(usv(data));
      if (bytes == null) throw new DOMException('atob(): the string to be decoded is not correctly encoded', 'InvalidCharacterError');
      return bytes;
    },
    btoa(data) {
      requireArguments(arguments.length, 1, 'btoa()');
      const text = host.base64Encode(usv(data));
      if (text == null) throw new DOMException('btoa(): the string to be encoded contains characters outside of the Latin1 range', 'InvalidCharacterError');
      return text;
    },
  };
  install('atob', base64.atob);
  install('btoa', base64.btoa);

  // ---------------------------------------------------------- TextEncoder, TextDecoder --
  // The bytes of a BufferSource (an ArrayBuffer or a view of one), as a Uint8Array over them.
  function bytesOf(source, what) {
    if (source !== null && typeof source === 'object') {
      switch (host.kindOf(source)) {
        case 'arraybuffer': return new Uint8ArrayCtor(source);
        case 'typedarray': return new Uint8ArrayCtor(typedArrayBuffer(source), typedArrayByteOffset(source), typedArrayByteLength(source));
        case 'dataview': return new Uint8ArrayCtor(dataViewBuffer(source), dataViewByteOffset(source), dataViewByteLength(source));
      }
    }
    throw new TypeErrorCtor(`${what} takes an ArrayBuffer, a typed array or a DataView`);
  }

  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input = '') {
      return host.utf8Encode(usv(input));
    }
    encodeInto(source, destination) {
      requireArguments(arguments.length, 2, 'TextEncoder.encodeInto()');
      const text = usv(source);
      if (typedArrayTag(destination) !== 'Uint8Array') throw new TypeErrorCtor('TextEncoder.encodeInto() writes into a Uint8Array');
      const counts = host.utf8EncodeInto(text, destination);
      return { read: counts[0], written: counts[1] };
    }
  }
  defineProperty(TextEncoder.prototype, toStringTagSymbol, { value: 'TextEncoder', configurable: true });
  install('TextEncoder', TextEncoder);

  const utf8Labels = ['unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8'];

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    // Stream state: whether the stream is past its start (a BOM is only stripped there),
    // and the bytes of a character the last chunk left incomplete.
    #started = false;
    #held = null;
    constructor(label = 'utf-8', options = undefined) {
      const name = stringToLowerCase(stringTrim(`${label}`));
      let known = false;
      for (let i = 0; i < utf8Labels.length; i++) known = known || utf8Labels[i] === name;
      if (!known) throw new RangeErrorCtor(`TextDecoder: the encoding "${label}" is not supported (Exec scripts decode UTF-8 only)`);
      if (options !== undefined && options !== null && typeof options !== 'object' && typeof options !== 'function') {
        throw new TypeErrorCtor('TextDecoder: the options must be an object');
      }
      this.#fatal = !!(options && options.fatal);
      this.#ignoreBOM = !!(options && options.ignoreBOM);
    }
    get encoding() { return 'utf-8'; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }
    decode(input = undefined, options = undefined) {
      let bytes = input === undefined ? new Uint8ArrayCtor(0) : bytesOf(input, 'TextDecoder.decode()');
      const stream = !!(options && options.stream);
      if (this.#held !== null) {
        const joined = new Uint8ArrayCtor(this.#held.length + typedArrayLength(bytes));
        typedArraySet(joined, this.#held);
        typedArraySet(joined, bytes, this.#held.length);
        bytes = joined;
        this.#held = null;
      }
      const decoded = host.utf8Decode(bytes, this.#fatal, !this.#ignoreBOM && !this.#started, stream);
      if (decoded == null) {
        this.#started = false;
        throw new TypeErrorCtor('TextDecoder.decode(): the data is not valid UTF-8');
      }
      const text = decoded[0];
      const held = decoded[1];
      const length = typedArrayLength(bytes);
      if (stream) {
        if (held > 0) this.#held = typedArraySlice(bytes, length - held);
        this.#started = this.#started || length > held;
      } else {
        this.#started = false;
      }
      return text;
    }
  }
  defineProperty(TextDecoder.prototype, toStringTagSymbol, { value: 'TextDecoder', configurable: true });
  install('TextDecoder', TextDecoder);

  // ---------------------------------------------------------- URL, URLSearchParams --
  // Parsing, resolution and the setters are the `url` crate's (WHATWG URL); a URL keeps
  // its parts as the native side last returned them, in this order.
  const HREF = 0, ORIGIN = 1, PROTOCOL = 2, USERNAME = 3, PASSWORD = 4, HOST = 5, HOSTNAME = 6;
  const PORT = 7, PATHNAME = 8, SEARCH = 9, HASH = 10;

  // Reach across the two classes' private state; set by their static blocks.
  let linkParams, resetParams, writeQuery;

  function parseQuery(query) {
    const flat = host.formParse(query);
    const list = [];
    for (let i = 0; i < flat.length; i += 2) list[list.length] = [flat[i], flat[i + 1]];
    return list;
  }

  class URL {
    #parts;
    #params;
    constructor(url, base = undefined) {
      requireArguments(arguments.length, 1, 'new URL()');
      const input = usv(url);
      let parts;
      if (base === undefined) {
        parts = host.urlParse(input);
      } else {
        const baseText = usv(base);
        if (host.urlParse(baseText) == null) throw new TypeErrorCtor(`Invalid base URL: ${baseText}`);
        parts = host.urlParse(input, baseText);
      }
      if (parts == null) throw new TypeErrorCtor(`Invalid URL: ${input}`);
      this.#parts = parts;
      this.#params = new URLSearchParams();
      resetParams(this.#params, stringSlice(parts[SEARCH], 1));
      linkParams(this.#params, this);
    }
    static canParse(url, base = undefined) {
      requireArguments(arguments.length, 1, 'URL.canParse()');
      const input = usv(url);
      if (base === undefined) return host.urlParse(input) != null;
      const baseText = usv(base);
      return host.urlParse(baseText) != null && host.urlParse(input, baseText) != null;
    }
    static parse(url, base = undefined) {
      requireArguments(arguments.length, 1, 'URL.parse()');
      try {
        return new URL(url, base);
      } catch (error) {
        return null;
      }
    }
    static {
      writeQuery = (url, query) => {
        url.#parts = host.urlSet(url.#parts[HREF], SEARCH, query) ?? url.#parts;
      };
    }
    #set(part, value) {
      const parts = host.urlSet(this.#parts[HREF], part, usv(value));
      if (parts == null) throw new TypeErrorCtor(`Invalid URL: ${usv(value)}`);
      this.#parts = parts;
      if (part === HREF || part === SEARCH) resetParams(this.#params, stringSlice(parts[SEARCH], 1));
    }
    get href() { return this.#parts[HREF]; }
    set href(value) { this.#set(HREF, value); }
    get origin() { return this.#parts[ORIGIN]; }
    get protocol() { return this.#parts[PROTOCOL]; }
    set protocol(value) { this.#set(PROTOCOL, value); }
    get username() { return this.#parts[USERNAME]; }
    set username(value) { this.#set(USERNAME, value); }
    get password() { return this.#parts[PASSWORD]; }
    set password(value) { this.#set(PASSWORD, value); }
    get host() { return this.#parts[HOST]; }
    set host(value) { this.#set(HOST, value); }
    get hostname() { return this.#parts[HOSTNAME]; }
    set hostname(value) { this.#set(HOSTNAME, value); }
    get port() { return this.#parts[PORT]; }
    set port(value) { this.#set(PORT, value); }
    get pathname() { return this.#parts[PATHNAME]; }
    set pathname(value) { this.#set(PATHNAME, value); }
    get search() { return this.#parts[SEARCH]; }
    set search(value) { this.#set(SEARCH, value); }
    get hash() { return this.#parts[HASH]; }
    set hash(value) { this.#set(HASH, value); }
    get searchParams() { return this.#params; }
    toString() { return this.#parts[HREF]; }
    toJSON() { return this.#parts[HREF]; }
  }
  defineProperty(URL.prototype, toStringTagSymbol, { value: 'URL', configurable: true });
  install('URL', URL);

  class URLSearchParams {
    #list = [];
    #url = null;
    constructor(init = '') {
      if (init !== null && (typeof init === 'object' || typeof init === 'function')) {
        const iterate = init[iteratorSymbol];
        if (iterate !== undefined && iterate !== null) {
          if (typeof iterate !== 'function') throw new TypeErrorCtor('URLSearchParams: the initializer is not iterable');
          for (const pair of init) {
            if (pair === null || (typeof pair !== 'object' && typeof pair !== 'function')) {
              throw new TypeErrorCtor('URLSearchParams: each pair of the initializer must be a sequence of a name and a value');
            }
            const items = [...pair];
            if (items.length !== 2) throw new TypeErrorCtor('URLSearchParams: each pair of the initializer must have exactly two items');
            this.#list[this.#list.length] = [usv(items[0]), usv(items[1])];
          }
        } else {
          const keys = ownKeys(init);
          for (let i = 0; i < keys.length; i++) {
            const descriptor = getOwnPropertyDescriptor(init, keys[i]);
            if (descriptor !== undefined && descriptor.enumerable) {
              this.#list[this.#list.length] = [usv(keys[i]), usv(init[keys[i]])];
            }
          }
        }
      } else {
        const text = usv(init);
        this.#list = parseQuery(text[0] === '?' ? stringSlice(text, 1) : text);
      }
    }
    static {
      linkParams = (params, url) => { params.#url = url; };
      resetParams = (params, query) => { params.#list = parseQuery(query); };
    }
    // The URL this object belongs to follows every change.
    #update() {
      if (this.#url !== null) writeQuery(this.#url, this.toString());
    }
    get size() { return this.#list.length; }
    append(name, value) {
      requireArguments(arguments.length, 2, 'URLSearchParams.append()');
      this.#list[this.#list.length] = [usv(name), usv(value)];
      this.#update();
    }
    delete(name, value = undefined) {
      requireArguments(arguments.length, 1, 'URLSearchParams.delete()');
      const key = usv(name);
      const match = value === undefined ? undefined : usv(value);
      const list = this.#list;
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i][0] === key && (match === undefined || list[i][1] === match)) arraySplice(list, i, 1);
      }
      this.#update();
    }
    get(name) {
      requireArguments(arguments.length, 1, 'URLSearchParams.get()');
      const key = usv(name);
      const list = this.#list;
      for (let i = 0; i < list.length; i++) if (list[i][0] === key) return list[i][1];
      return null;
    }
    getAll(name) {
      requireArguments(arguments.length, 1, 'URLSearchParams.getAll()');
      const key = usv(name);
      const values = [];
      const list = this.#list;
      for (let i = 0; i < list.length; i++) if (list[i][0] === key) values[values.length] = list[i][1];
      return values;
    }
    has(name, value = undefined) {
      requireArguments(arguments.length, 1, 'URLSearchParams.has()');
      const key = usv(name);
      const match = value === undefined ? undefined : usv(value);
      const list = this.#list;
      for (let i = 0; i < list.length; i++) {
        if (list[i][0] === key && (match === undefined || list[i][1] === match)) return true;
      }
      return false;
    }
    set(name, value) {
      requireArguments(arguments.length, 2, 'URLSearchParams.set()');
      const key = usv(name);
      const text = usv(value);
      const list = this.#list;
      let found = false;
      for (let i = 0; i < list.length; i++) {
        if (list[i][0] !== key) continue;
        if (found) {
          arraySplice(list, i, 1);
          i--;
        } else {
          list[i] = [key, text];
          found = true;
        }
      }
      if (!found) list[list.length] = [key, text];
      this.#update();
    }
    sort() {
      // Stable, by UTF-16 code units of the names.
      arraySort(this.#list, (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      this.#update();
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== 'function') throw new TypeErrorCtor('URLSearchParams.forEach() takes a function');
      const list = this.#list;
      for (let i = 0; i < list.length; i++) apply(callback, thisArg, [list[i][1], list[i][0], this]);
    }
    *entries() {
      const list = this.#list;
      for (let i = 0; i < list.length; i++) yield [list[i][0], list[i][1]];
    }
    *keys() {
      const list = this.#list;
      for (let i = 0; i < list.length; i++) yield list[i][0];
    }
    *values() {
      const list = this.#list;
      for (let i = 0; i < list.length; i++) yield list[i][1];
    }
    toString() {
      const list = this.#list;
      const flat = [];
      for (let i = 0; i < list.length; i++) {
        flat[flat.length] = list[i][0];
        flat[flat.length] = list[i][1];
      }
      return host.formSerialize(flat);
    }
  }
  defineProperty(URLSearchParams.prototype, iteratorSymbol, {
    value: URLSearchParams.prototype.entries, writable: true, enumerable: false, configurable: true,
  });
  defineProperty(URLSearchParams.prototype, toStringTagSymbol, { value: 'URLSearchParams', configurable: true });
  install('URLSearchParams', URLSearchParams);

  // ------------------------------------------------------------- toLocaleString (en-US) --
  // Intl-free: every locale formats as en-US does. The digits are the shortest decimal
  // form of the number, rounded half away from zero, as V8's ICU does.
  const currencySymbols = ObjectCtor.assign(ObjectCtor.create(null), {
    USD: '$', EUR: '€', GBP: '£', JPY: '¥', CNY: 'CN¥', INR: '₹', KRW: '₩', CAD: 'CA$', AUD: 'A$',
    BRL: 'R$', MXN: 'MX$', HKD: 'HK$', NZD: 'NZ$', TWD: 'NT$', ILS: '₪', VND: '₫', PHP: '₱',
  });
  const currencyDigits = ObjectCtor.assign(ObjectCtor.create(null), {
    JPY: 0, KRW: 0, VND: 0, CLP: 0, ISK: 0, UGX: 0, PYG: 0, XAF: 0, XOF: 0,
    BHD: 3, KWD: 3, OMR: 3, JOD: 3, TND: 3, LYD: 3,
  });

  function unsupported(what) {
    return new RangeErrorCtor(`toLocaleString(): ${what} is not supported in Exec scripts (numbers format as en-US, without Intl)`);
  }

  function digitOption(options, name, min, max) {
    const value = options[name];
    if (value === undefined) return undefined;
    const n = +value;
    if (isNaNumber(n) || n < min || n > max) throw new RangeErrorCtor(`${name} value is out of range.`);
    return n - (n % 1);
  }

  function stringOption(options, name, allowed, fallback) {
    const value = options[name];
    if (value === undefined) return fallback;
    const text = `${value}`;
    for (let i = 0; i < allowed.length; i++) if (allowed[i] === text) return text;
    throw new RangeErrorCtor(`Value ${text} out of range for toLocaleString() options property ${name}`);
  }

  // ECMA-402's number format options, those this formatter has.
  function numberFormat(options) {
    if (options === null) throw new TypeErrorCtor('toLocaleString(): the options cannot be null');
    const o = options === undefined ? ObjectCtor.create(null) : ObjectCtor(options);
    const minimumIntegerDigits = digitOption(o, 'minimumIntegerDigits', 1, 21) ?? 1;
    let minimumFraction = digitOption(o, 'minimumFractionDigits', 0, 100);
    let maximumFraction = digitOption(o, 'maximumFractionDigits', 0, 100);
    if (o.minimumSignificantDigits !== undefined || o.maximumSignificantDigits !== undefined) {
      throw unsupported('significant-digit rounding');
    }
    const notation = stringOption(o, 'notation', ['standard', 'scientific', 'engineering', 'compact'], 'standard');
    if (notation !== 'standard') throw unsupported(`notation "${notation}"`);
    const style = stringOption(o, 'style', ['decimal', 'percent', 'currency', 'unit'], 'decimal');
    if (style === 'unit') throw unsupported('style "unit"');
    let prefix = '';
    let suffix = style === 'percent' ? '%' : '';
    let defaultMin = 0;
    let defaultMax = style === 'percent' ? 0 : 3;
    if (style === 'currency') {
      const currency = o.currency;
      if (currency === undefined) throw new TypeErrorCtor('Currency code is required with currency style.');
      const code = stringToUpperCase(`${currency}`);
      if (!regExpTest(/^[A-Z]{3}$/, code)) throw new RangeErrorCtor(`Invalid currency code : ${currency}`);
      const display = stringOption(o, 'currencyDisplay', ['symbol', 'narrowSymbol', 'code', 'name'], 'symbol');
      if (display === 'name') throw unsupported('currencyDisplay "name"');
      prefix = display !== 'code' && currencySymbols[code] !== undefined ? currencySymbols[code] : `${code}\u00a0`;
      defaultMin = defaultMax = currencyDigits[code] ?? 2;
    }
    if (minimumFraction === undefined && maximumFraction === undefined) {
      minimumFraction = defaultMin;
      maximumFraction = defaultMax;
    } else if (minimumFraction === undefined) {
      minimumFraction = defaultMin < maximumFraction ? defaultMin : maximumFraction;
    } else if (maximumFraction === undefined) {
      maximumFraction = defaultMax > minimumFraction ? defaultMax : minimumFraction;
    } else if (minimumFraction > maximumFraction) {
      throw new RangeErrorCtor('maximumFractionDigits value is out of range.');
    }
    const grouping = o.useGrouping !== false && o.useGrouping !== 'false';
    return { minimumIntegerDigits, minimumFraction, maximumFraction, grouping, prefix, suffix, percent: style === 'percent' };
  }

  // `digits` with the point after `point` of them, in the format `f`.
  function formatDigits(negative, digits, point, f) {
    const body = host.formatDecimal(digits, f.percent ? point + 2 : point, f.minimumIntegerDigits,
      f.minimumFraction, f.maximumFraction, f.grouping);
    return `${negative ? '-' : ''}${f.prefix}${body}${f.suffix}`;
  }

  const localeFormats = {
    toLocaleString(locales = undefined, options = undefined) {
      const x = numberValueOf(this);
      const f = numberFormat(options);
      if (isNaNumber(x)) return `${f.prefix}NaN${f.suffix}`;
      const negative = x < 0 || (x === 0 && 1 / x < 0);
      if (x === Infinity || x === -Infinity) return `${negative ? '-' : ''}${f.prefix}∞${f.suffix}`;
      // Read by index: a script may have patched the array iterator.
      const shortest = host.numberDigits(x);
      return formatDigits(negative, shortest[0], shortest[1], f);
    },
  };
  const bigintFormats = {
    toLocaleString(locales = undefined, options = undefined) {
      const x = bigintValueOf(this);
      const f = numberFormat(options);
      const negative = x < 0n;
      const digits = `${negative ? -x : x}`;
      return formatDigits(negative, digits, digits.length, f);
    },
  };
  defineProperty(Number.prototype, 'toLocaleString', { value: localeFormats.toLocaleString, writable: true, enumerable: false, configurable: true });
  defineProperty(BigInt.prototype, 'toLocaleString', { value: bigintFormats.toLocaleString, writable: true, enumerable: false, configurable: true });
})
