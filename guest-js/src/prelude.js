// The sandbox surface an Exec script sees: `tools`, `console`, and nothing that can compile
// code. This runs once, inside the script's own realm, before any script; it receives the
// guest's native hooks as `host` and keeps them in this closure only (no global names them).
// Every function it hands out is created here, so each belongs to the sandbox realm.
(function (host) {
  'use strict';

  // Captured now, so a script that patches globals changes only its own behaviour.
  const stringify = JSON.stringify;
  const getPrototypeOf = Object.getPrototypeOf;
  const setPrototypeOf = Object.setPrototypeOf;
  const defineProperty = Object.defineProperty;
  const create = Object.create;
  const ObjectPrototype = Object.prototype;
  const ArrayPrototype = Array.prototype;
  const ProxyCtor = Proxy;
  const ErrorCtor = Error;
  const EvalErrorCtor = EvalError;
  const StringCtor = String;
  const join = Array.prototype.join;
  const arrayMap = Array.prototype.map;
  const stringSlice = String.prototype.slice;
  const startsWith = String.prototype.startsWith;
  const errorToString = Error.prototype.toString;

  // ---------------------------------------------------------------- no code generation --
  // The engine itself has no eval in this realm (it was built without the Eval intrinsic),
  // so these replacements only turn its TypeError into the EvalError scripts expect, on
  // every path that leads to a function constructor. Everything else about them is the
  // standard's: `eval` is a method (no constructor, no `prototype`) of length 1 that returns
  // anything but a string unchanged; each function constructor has length 1, its
  // `prototype`, and `Function` as its prototype.
  function refuse(what) {
    throw new EvalErrorCtor(`${what} cannot compile code in Exec scripts: code generation from strings is disabled`);
  }
  globalThis.eval = {
    eval(x) {
      if (typeof x !== 'string') return x;
      return refuse('eval()');
    },
  }.eval;
  const constructorPrototypes = [
    getPrototypeOf(function () {}),
    getPrototypeOf(async function () {}),
    getPrototypeOf(function* () {}),
    getPrototypeOf(async function* () {}),
  ];
  let FunctionReplacement;
  for (let i = 0; i < constructorPrototypes.length; i++) {
    const proto = constructorPrototypes[i];
    const name = proto.constructor.name;
    const replacement = function (body) { refuse(`${name}()`); };
    defineProperty(replacement, 'name', { value: name });
    defineProperty(replacement, 'prototype', { value: proto, writable: false, enumerable: false, configurable: false });
    if (i === 0) {
      FunctionReplacement = replacement;
      globalThis.Function = replacement;
      defineProperty(proto, 'constructor', { value: replacement, writable: true, enumerable: false, configurable: true });
    } else {
      setPrototypeOf(replacement, FunctionReplacement);
      defineProperty(proto, 'constructor', { value: replacement, writable: false, enumerable: false, configurable: true });
    }
  }

  // ------------------------------------------------------------------------ tool calls --
  // `host.toolFunction(name)` makes the native function `tools.<name>`: calling it checks
  // and encodes the arguments, starts the call and returns the promise the script awaits;
  // the guest's loop settles it. `host.search` answers at once.
  const toolFunction = host.toolFunction;

  const ToolSearch = (args) => host.search(args);
  defineProperty(ToolSearch, 'name', { value: 'ToolSearch' });

  // The guest builds `tools` for each run: one own property per reachable name, then
  // `ToolSearch`, with this proxy as its prototype. Names that are not own properties fall
  // through to it: `mcp__*` names reach the host (which answers that only this session's
  // tools are reachable), every other name is undefined, so `tools.then` stays undefined
  // and `tools` is never a thenable. Own properties are found without running any trap.
  const fallback = new ProxyCtor(create(null), {
    get(target, key) {
      return typeof key === 'string' && startsWith.call(key, 'mcp__') ? toolFunction(key) : undefined;
    },
  });

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
      const line = join.call(arrayMap.call(values, format), ' ');
      // Only what the host keeps crosses the boundary: a huge line is cut in the guest.
      const keep = host.logLineChars();
      if (line.length > keep) host.log(level, stringSlice.call(line, 0, keep), line.length - keep);
      else host.log(level, line, 0);
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

  // ------------------------------------------------------------------ values kept between Execs --
  // `store(key, value)` keeps a copy of plain data for this conversation's later Execs
  // (`undefined` removes the key); `load(key)` gives back a fresh copy, or undefined. The
  // host answers both at once, so neither returns a promise.
  const hostStore = host.store;
  const hostLoad = host.load;
  globalThis.store = function store(key, value) { hostStore(key, value); };
  globalThis.load = function load(key) { return hostLoad(key); };

  // ----------------------------------------------------------------------------- results --
  // An error's `Name: message` and the engine's stack text (empty for a value that is not
  // an Error), as the host reads an uncaught error.
  function errorParts(error) {
    if (!(error instanceof ErrorCtor)) {
      if (error !== null && typeof error === 'object') {
        try { return [`Uncaught ${className(error)}${stringify(error)}`, '']; } catch (e) { /* fall through */ }
      }
      return [`Uncaught ${format(error)}`, ''];
    }
    let text;
    try { text = errorToString.call(error); } catch (e) { text = 'Error'; }
    return [text, typeof error.stack === 'string' ? error.stack : ''];
  }

  // `Name ` for an object made by a class of its own (`throw new Test262Error(...)`), so
  // the report says what was thrown; nothing for plain objects and arrays.
  function className(object) {
    const proto = getPrototypeOf(object);
    if (proto === null || proto === ObjectPrototype || proto === ArrayPrototype) return '';
    const ctor = proto.constructor;
    const name = typeof ctor === 'function' ? ctor.name : undefined;
    return typeof name === 'string' && name !== '' ? `${name} ` : '';
  }

  // An error as the console writes it: `Name: message`, then the script's own frames.
  function describeError(error) {
    const parts = errorParts(error);
    const frames = host.scriptFrames(parts[1]);
    return frames ? `${parts[0]}\n${frames}` : parts[0];
  }

  // The JSON text of a returned value; undefined when there is none.
  function encodeResult(value) {
    return stringify(value);
  }

  return { fallback, ToolSearch, errorParts, encodeResult };
})
