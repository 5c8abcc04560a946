// The sandbox surface an Exec script sees: `tools`, `console`, and nothing that can compile
// code. This runs once, inside the script's own realm, before any script; it receives the
// guest's native hooks as `host` and keeps them in this closure only (no global names them).
// Every function it hands out is created here, so each belongs to the sandbox realm.
(function (host) {
  'use strict';

  // Captured now, so a script that patches globals changes only its own behaviour.
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const getPrototypeOf = Object.getPrototypeOf;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const defineProperty = Object.defineProperty;
  const create = Object.create;
  const hasOwn = Object.hasOwn;
  const ownKeys = Reflect.ownKeys;
  const isArray = Array.isArray;
  const isFinite = Number.isFinite;
  const ObjectPrototype = Object.prototype;
  const ArrayPrototype = Array.prototype;
  const PromiseCtor = Promise;
  const promiseReject = Promise.reject.bind(Promise);
  const promiseResolve = Promise.resolve.bind(Promise);
  const ProxyCtor = Proxy;
  const MapCtor = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const SetCtor = Set;
  const setHas = Set.prototype.has;
  const setAdd = Set.prototype.add;
  const setDelete = Set.prototype.delete;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const EvalErrorCtor = EvalError;
  const StringCtor = String;
  const join = Array.prototype.join;
  const arrayMap = Array.prototype.map;
  const startsWith = String.prototype.startsWith;
  const errorToString = Error.prototype.toString;

  // Nesting a script may put in one argument value; deeper values are refused, not walked.
  const MAX_ARGUMENT_DEPTH = 200;

  // ---------------------------------------------------------------- no code generation --
  // The engine itself has no eval in this realm (it was built without the Eval intrinsic),
  // so these replacements only turn its TypeError into the EvalError scripts expect, on
  // every path that leads to a function constructor.
  function refuse(what) {
    throw new EvalErrorCtor(`${what} cannot compile code in Exec scripts: code generation from strings is disabled`);
  }
  const evalReplacement = function () { refuse('eval()'); };
  defineProperty(evalReplacement, 'name', { value: 'eval' });
  globalThis.eval = evalReplacement;
  const constructorPrototypes = [
    getPrototypeOf(function () {}),
    getPrototypeOf(async function () {}),
    getPrototypeOf(function* () {}),
    getPrototypeOf(async function* () {}),
  ];
  for (const proto of constructorPrototypes) {
    const name = proto.constructor.name;
    const replacement = function () { refuse(`${name}()`); };
    defineProperty(replacement, 'name', { value: name });
    defineProperty(replacement, 'prototype', { value: proto, writable: false, enumerable: false, configurable: false });
    defineProperty(proto, 'constructor', { value: replacement, writable: false, enumerable: false, configurable: false });
    if (name === 'Function') globalThis.Function = replacement;
  }

  // ------------------------------------------------------------------- argument checks --
  function describe(value) {
    if (value === null) return 'null';
    if (isArray(value)) return 'an array';
    const type = typeof value;
    if (type === 'function') return 'a function';
    if (type !== 'object') return `a ${type}`;
    const proto = getPrototypeOf(value);
    if (proto === ObjectPrototype || proto === null) return 'a plain object';
    const ctor = proto && hasOwn(proto, 'constructor') ? proto.constructor : undefined;
    const name = typeof ctor === 'function' && typeof ctor.name === 'string' && ctor.name ? ctor.name : 'an unnamed class';
    return `an instance of ${name}`;
  }

  function propertyPath(path, key) {
    return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${stringify(key)}]`;
  }

  // Throws a TypeError naming the first value JSON would drop or distort.
  function checkPlain(value, path, depth, seen) {
    switch (typeof value) {
      case 'string':
      case 'boolean':
      case 'undefined':
        return;
      case 'number':
        if (!isFinite(value)) throw new TypeErrorCtor(`${path} is ${value}, which JSON cannot carry`);
        return;
      case 'bigint':
        throw new TypeErrorCtor(`${path} is a BigInt; pass it as a number or a string`);
      case 'symbol':
        throw new TypeErrorCtor(`${path} is a symbol, which JSON cannot carry`);
      case 'function':
        throw new TypeErrorCtor(`${path} is a function; tool arguments must be plain data`);
    }
    if (value === null) return;
    if (depth > MAX_ARGUMENT_DEPTH) throw new TypeErrorCtor(`${path} is nested more than ${MAX_ARGUMENT_DEPTH} levels deep`);
    if (setHas.call(seen, value)) throw new TypeErrorCtor(`${path} refers back to an enclosing value (a cycle)`);
    const array = isArray(value);
    const proto = getPrototypeOf(value);
    if (array ? proto !== ArrayPrototype : proto !== ObjectPrototype && proto !== null) {
      throw new TypeErrorCtor(`${path} is ${describe(value)}; tool arguments must be plain objects, arrays and primitives`);
    }
    setAdd.call(seen, value);
    for (const key of ownKeys(value)) {
      if (typeof key === 'symbol') throw new TypeErrorCtor(`${path} has a symbol key, which JSON cannot carry`);
      if (array && key === 'length') continue;
      const at = array ? `${path}[${key}]` : propertyPath(path, key);
      const d = getOwnPropertyDescriptor(value, key);
      if (d.get !== undefined || d.set !== undefined) {
        throw new TypeErrorCtor(`${at} is an accessor (a getter or setter); tool arguments must be plain data`);
      }
      if (d.enumerable) checkPlain(d.value, at, depth + 1, seen);
    }
    setDelete.call(seen, value);
  }

  // The JSON text of a call's argument object, or a TypeError for the script.
  function encodeArguments(call, args) {
    if (args === undefined) return '{}';
    if (args === null || typeof args !== 'object' || isArray(args)) {
      throw new TypeErrorCtor(`${call} takes one plain object of arguments, got ${describe(args)}`);
    }
    checkPlain(args, 'args', 0, new SetCtor());
    return stringify(args);
  }

  // ------------------------------------------------------------------------ tool calls --
  const pending = new MapCtor();

  function callTool(name, args) {
    let json;
    try {
      json = encodeArguments(`tools${propertyPath('', name)}()`, args);
    } catch (e) {
      return promiseReject(e);
    }
    const id = host.start(name, json);
    return new PromiseCtor((resolve, reject) => { mapSet.call(pending, id, [resolve, reject]); });
  }

  function toolFunction(name) {
    const f = (args) => callTool(name, args);
    defineProperty(f, 'name', { value: name });
    return f;
  }

  function ToolSearch(args) {
    try {
      return promiseResolve(parse(host.search(encodeArguments('tools.ToolSearch()', args))));
    } catch (e) {
      return promiseReject(e instanceof ErrorCtor ? e : new ErrorCtor(StringCtor(e)));
    }
  }

  // `tools` for one run: the reachable names, `ToolSearch`, and `mcp__*` names that reach
  // the host (which answers that only this session's tools are reachable). Every other
  // name is undefined, so `tools.then` stays undefined and `tools` is never a thenable.
  function makeTools(names) {
    const table = create(null);
    for (const name of names) table[name] = toolFunction(name);
    table.ToolSearch = ToolSearch;
    return new ProxyCtor(table, {
      get(target, key) {
        if (typeof key !== 'string') return undefined;
        if (hasOwn(target, key)) return target[key];
        if (startsWith.call(key, 'mcp__')) return toolFunction(key);
        return undefined;
      },
    });
  }

  // Delivers a finished call to the promise the script holds.
  function settle(id, ok, text) {
    const callbacks = mapGet.call(pending, id);
    if (callbacks === undefined) return;
    mapDelete.call(pending, id);
    if (!ok) {
      const error = new ErrorCtor(text);
      delete error.stack; // a host refusal has no script frames worth showing
      callbacks[1](error);
      return;
    }
    let value;
    try {
      value = parse(text);
    } catch (e) {
      callbacks[1](e);
      return;
    }
    callbacks[0](value);
  }

  // ---------------------------------------------------------------------------- console --
  function format(value) {
    switch (typeof value) {
      case 'string': return value;
      case 'undefined': return 'undefined';
      case 'function': return `[Function ${value.name || '(anonymous)'}]`;
      case 'bigint': return `${value}n`;
      case 'symbol': return value.toString();
      case 'object':
        if (value === null) return 'null';
        if (value instanceof ErrorCtor) return describeError(value);
        try {
          const text = stringify(value);
          if (text !== undefined) return text;
        } catch (e) {
          // a cycle or a BigInt inside: fall through to String()
        }
        try { return StringCtor(value); } catch (e) { return '[object]'; }
      default: return StringCtor(value);
    }
  }

  function writer(level) {
    return function (...values) {
      host.log(level, join.call(arrayMap.call(values, format), ' '));
    };
  }
  const console = create(ObjectPrototype);
  const levels = ['log', 'info', 'warn', 'error', 'debug'];
  for (let i = 0; i < levels.length; i++) {
    const f = writer(i);
    defineProperty(f, 'name', { value: levels[i] });
    console[levels[i]] = f;
  }
  globalThis.console = console;

  // ----------------------------------------------------------------------------- results --
  // The text of an error for the model: `Name: message`, then the script's own frames.
  function describeError(error) {
    if (!(error instanceof ErrorCtor)) {
      if (error !== null && typeof error === 'object') {
        try { return `Uncaught ${stringify(error)}`; } catch (e) { /* fall through */ }
      }
      return `Uncaught ${format(error)}`;
    }
    let text;
    try { text = errorToString.call(error); } catch (e) { text = 'Error'; }
    const stack = typeof error.stack === 'string' ? error.stack : '';
    const frames = [];
    for (const line of stack.split('\n')) {
      if (line.includes('script.js:')) frames.push(line.replace(/script\.js:1:(\d+)/, (_, c) => `script.js:1:${Math.max(1, c - host.prefixLength)}`));
    }
    return frames.length ? `${text}\n${join.call(frames, '\n')}` : text;
  }

  // The JSON text of a returned value; undefined when there is none.
  function encodeResult(value) {
    return stringify(value);
  }

  return { makeTools, settle, describeError, encodeResult };
})
