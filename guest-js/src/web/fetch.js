
  // ------------------------------------------------------------ Event, EventTarget --
  // As much of DOM events as `AbortSignal` needs: listeners by type, `once`, `signal`,
  // `handleEvent` objects, and an error a listener throws reported as uncaught.
  const arrayPush = uncurry(Array.prototype.push);
  const arraySlice = uncurry(Array.prototype.slice);
  const arrayIndexOf = uncurry(Array.prototype.indexOf);
  const arrayJoin = uncurry(Array.prototype.join);
  const stringIndexOf = uncurry(String.prototype.indexOf);
  const stringCharCodeAt = uncurry(String.prototype.charCodeAt);
  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const PromiseCtor = Promise;
  const promiseThen = uncurry(Promise.prototype.then);
  const isArray = Array.isArray;

  let setEventTarget, setEventPhase;

  class Event {
    #type;
    #cancelable;
    #target = null;
    #dispatching = false;
    #canceled = false;
    #stopped = false;
    constructor(type, init = undefined) {
      requireArguments(arguments.length, 1, 'new Event()');
      this.#type = `${type}`;
      this.#cancelable = !!(init != null && init.cancelable);
    }
    static {
      setEventTarget = (event, target) => { event.#target = target; };
      setEventPhase = (event, dispatching) => {
        if (dispatching && event.#dispatching) throw new DOMException('The event is already being dispatched', 'InvalidStateError');
        event.#dispatching = dispatching;
        return event.#stopped;
      };
    }
    get type() { return this.#type; }
    get target() { return this.#target; }
    get currentTarget() { return this.#dispatching ? this.#target : null; }
    get cancelable() { return this.#cancelable; }
    get defaultPrevented() { return this.#canceled; }
    get isTrusted() { return false; }
    get bubbles() { return false; }
    get composed() { return false; }
    get eventPhase() { return this.#dispatching ? 2 : 0; }
    preventDefault() { if (this.#cancelable) this.#canceled = true; }
    stopPropagation() {}
    stopImmediatePropagation() { this.#stopped = true; }
  }
  defineProperty(Event.prototype, toStringTagSymbol, { value: 'Event', configurable: true });
  install('Event', Event);

  class EventTarget {
    // type -> [{ callback, once }]
    #listeners = new MapCtor();
    addEventListener(type, callback, options = undefined) {
      requireArguments(arguments.length, 2, 'EventTarget.addEventListener()');
      if (callback == null) return;
      const once = typeof options === 'object' && options !== null && !!options.once;
      const signal = typeof options === 'object' && options !== null ? options.signal : undefined;
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new TypeErrorCtor("EventTarget.addEventListener(): `signal` must be an AbortSignal");
      }
      if (signal !== undefined && signal.aborted) return;
      const name = `${type}`;
      let list = mapGet(this.#listeners, name);
      if (list === undefined) mapSet(this.#listeners, name, list = []);
      for (let i = 0; i < list.length; i++) if (list[i].callback === callback) return;
      const entry = { callback, once };
      arrayPush(list, entry);
      if (signal !== undefined) onAbort(signal, () => this.removeEventListener(name, callback));
    }
    removeEventListener(type, callback) {
      requireArguments(arguments.length, 2, 'EventTarget.removeEventListener()');
      const list = mapGet(this.#listeners, `${type}`);
      if (list === undefined) return;
      for (let i = 0; i < list.length; i++) {
        if (list[i].callback === callback) {
          list[i].removed = true;
          arraySplice(list, i, 1);
          return;
        }
      }
    }
    dispatchEvent(event) {
      if (!(event instanceof Event)) throw new TypeErrorCtor('EventTarget.dispatchEvent() takes an Event');
      setEventPhase(event, true);
      setEventTarget(event, this);
      try {
        const list = mapGet(this.#listeners, event.type);
        if (list !== undefined) {
          for (const entry of arraySlice(list)) {
            if (entry.removed) continue;
            if (entry.once) this.removeEventListener(event.type, entry.callback);
            try {
              const callback = entry.callback;
              if (typeof callback === 'function') apply(callback, this, [event]);
              else if (typeof callback.handleEvent === 'function') apply(callback.handleEvent, callback, [event]);
            } catch (error) {
              host.reportError(error);
            }
            if (setEventPhase(event, false)) break;
            setEventPhase(event, true);
          }
        }
      } finally {
        setEventPhase(event, false);
      }
      return !event.defaultPrevented;
    }
  }
  defineProperty(EventTarget.prototype, toStringTagSymbol, { value: 'EventTarget', configurable: true });
  install('EventTarget', EventTarget);

  // ------------------------------------------------------ AbortController, AbortSignal --
  let newSignal, abortSignal, onAbort;
  const constructing = Symbol('constructing');

  class AbortSignal extends EventTarget {
    #aborted = false;
    #reason = undefined;
    // What the guest's own code runs on abort (before the event): a fetch stops its call.
    #algorithms = [];
    #onabort = null;
    constructor(key = undefined) {
      if (key !== constructing) throw new TypeErrorCtor('AbortSignal has no public constructor: use new AbortController().signal');
      super();
    }
    static {
      newSignal = () => new AbortSignal(constructing);
      abortSignal = (signal, reason) => {
        if (signal.#aborted) return;
        signal.#aborted = true;
        signal.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
        const algorithms = signal.#algorithms;
        signal.#algorithms = [];
        for (const algorithm of algorithms) {
          try { algorithm(signal.#reason); } catch (error) { host.reportError(error); }
        }
        signal.dispatchEvent(new Event('abort'));
      };
      // Runs `algorithm` when the signal aborts; gives back what forgets it.
      onAbort = (signal, algorithm) => {
        if (signal.#aborted) return () => {};
        arrayPush(signal.#algorithms, algorithm);
        return () => {
          const at = arrayIndexOf(signal.#algorithms, algorithm);
          if (at >= 0) arraySplice(signal.#algorithms, at, 1);
        };
      };
    }
    get aborted() { return this.#aborted; }
    get reason() { return this.#reason; }
    get onabort() { return this.#onabort; }
    set onabort(handler) {
      if (this.#onabort !== null) this.removeEventListener('abort', this.#onabort);
      this.#onabort = typeof handler === 'function' ? handler : null;
      if (this.#onabort !== null) this.addEventListener('abort', this.#onabort);
    }
    throwIfAborted() {
      if (this.#aborted) throw this.#reason;
    }
    static abort(reason = undefined) {
      const signal = newSignal();
      abortSignal(signal, reason);
      return signal;
    }
    static timeout(milliseconds) {
      requireArguments(arguments.length, 1, 'AbortSignal.timeout()');
      const delay = +milliseconds;
      if (!(delay >= 0) || delay > 0x1FFFFFFFFFFFFF) throw new TypeErrorCtor('AbortSignal.timeout() takes a number of milliseconds, 0 or more');
      const signal = newSignal();
      host.startTimer(delay < 0x7FFFFFFF ? delay - (delay % 1) : 0x7FFFFFFF, () => {
        abortSignal(signal, new DOMException('The operation timed out', 'TimeoutError'));
      });
      return signal;
    }
    static any(signals) {
      requireArguments(arguments.length, 1, 'AbortSignal.any()');
      const list = [];
      for (const signal of signals) {
        if (!(signal instanceof AbortSignal)) throw new TypeErrorCtor('AbortSignal.any() takes AbortSignals');
        arrayPush(list, signal);
      }
      const combined = newSignal();
      for (const signal of list) {
        if (signal.aborted) {
          abortSignal(combined, signal.reason);
          return combined;
        }
      }
      for (const signal of list) onAbort(signal, (reason) => abortSignal(combined, reason));
      return combined;
    }
  }
  defineProperty(AbortSignal.prototype, toStringTagSymbol, { value: 'AbortSignal', configurable: true });
  install('AbortSignal', AbortSignal);

  class AbortController {
    #signal = newSignal();
    get signal() { return this.#signal; }
    abort(reason = undefined) { abortSignal(this.#signal, reason); }
  }
  defineProperty(AbortController.prototype, toStringTagSymbol, { value: 'AbortController', configurable: true });
  install('AbortController', AbortController);

  // ------------------------------------------------------------------------- Headers --
  // RFC 9110's token for names; a value without NUL, CR or LF, its spaces and tabs at
  // either end removed.
  const headerName = new RegExpCtor("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$");
  const badValue = new RegExpCtor('[\\0\\r\\n]');
  const edgeSpace = new RegExpCtor('^[\\t ]+|[\\t ]+$', 'g');
  const stringReplace = uncurry(String.prototype.replace);

  function checkedName(name, what) {
    const text = `${name}`;
    if (!regExpTest(headerName, text)) throw new TypeErrorCtor(`${what}: ${jsonStringify(text)} is not a valid header name`);
    return stringToLowerCase(text);
  }

  function checkedValue(value, what) {
    const text = stringReplace(`${value}`, edgeSpace, '');
    if (regExpTest(badValue, text)) throw new TypeErrorCtor(`${what}: a header value may not contain NUL, CR or LF`);
    for (let i = 0; i < text.length; i++) {
      if (stringCharCodeAt(text, i) > 0xFF) throw new TypeErrorCtor(`${what}: a header value is a byte string (characters up to U+00FF)`);
    }
    return text;
  }

  let headerList, setHeadersGuard, headersFromList;

  class Headers {
    // [[lowercased name, value], ...] in the order added
    #list = [];
    #immutable = false;
    constructor(init = undefined) {
      if (init === undefined || init === null) return;
      if (typeof init !== 'object' && typeof init !== 'function') throw new TypeErrorCtor('new Headers() takes headers, pairs or a record');
      if (init instanceof Headers) {
        for (const [name, value] of init.#list) arrayPush(this.#list, [name, value]);
      } else if (typeof init[iteratorSymbol] === 'function') {
        for (const pair of init) {
          const items = [];
          for (const item of pair) arrayPush(items, item);
          if (items.length !== 2) throw new TypeErrorCtor('new Headers(): each header is a [name, value] pair');
          this.append(items[0], items[1]);
        }
      } else {
        for (const key of ownKeys(init)) {
          const descriptor = getOwnPropertyDescriptor(init, key);
          if (descriptor === undefined || !descriptor.enumerable) continue;
          if (typeof key === 'symbol') throw new TypeErrorCtor('new Headers(): a header name cannot be a Symbol');
          this.append(key, init[key]);
        }
      }
    }
    static {
      headerList = (headers) => headers.#list;
      setHeadersGuard = (headers) => { headers.#immutable = true; };
      headersFromList = (list) => {
        const headers = new Headers();
        headers.#list = list;
        return headers;
      };
    }
    #writable(what) {
      if (this.#immutable) throw new TypeErrorCtor(`Headers.${what}(): these headers are immutable`);
    }
    append(name, value) {
      requireArguments(arguments.length, 2, 'Headers.append()');
      const key = checkedName(name, 'Headers.append()');
      const text = checkedValue(value, 'Headers.append()');
      this.#writable('append');
      arrayPush(this.#list, [key, text]);
    }
    delete(name) {
      requireArguments(arguments.length, 1, 'Headers.delete()');
      const key = checkedName(name, 'Headers.delete()');
      this.#writable('delete');
      for (let i = this.#list.length - 1; i >= 0; i--) if (this.#list[i][0] === key) arraySplice(this.#list, i, 1);
    }
    get(name) {
      requireArguments(arguments.length, 1, 'Headers.get()');
      const key = checkedName(name, 'Headers.get()');
      const values = [];
      for (const [n, v] of this.#list) if (n === key) arrayPush(values, v);
      return values.length === 0 ? null : arrayJoin(values, ', ');
    }
    getSetCookie() {
      const values = [];
      for (const [n, v] of this.#list) if (n === 'set-cookie') arrayPush(values, v);
      return values;
    }
    has(name) {
      requireArguments(arguments.length, 1, 'Headers.has()');
      const key = checkedName(name, 'Headers.has()');
      for (const [n] of this.#list) if (n === key) return true;
      return false;
    }
    set(name, value) {
      requireArguments(arguments.length, 2, 'Headers.set()');
      const key = checkedName(name, 'Headers.set()');
      const text = checkedValue(value, 'Headers.set()');
      this.#writable('set');
      let found = false;
      for (let i = 0; i < this.#list.length; i++) {
        if (this.#list[i][0] !== key) continue;
        if (found) {
          arraySplice(this.#list, i, 1);
          i--;
        } else {
          this.#list[i] = [key, text];
          found = true;
        }
      }
      if (!found) arrayPush(this.#list, [key, text]);
    }
    // The sorted and combined view the standard iterates: one entry per name (its values
    // joined), except `set-cookie`, one entry per value.
    #sorted() {
      const names = [];
      for (const [n] of this.#list) if (arrayIndexOf(names, n) < 0) arrayPush(names, n);
      arraySort(names);
      const entries = [];
      for (const name of names) {
        if (name === 'set-cookie') {
          for (const value of this.getSetCookie()) arrayPush(entries, [name, value]);
        } else {
          arrayPush(entries, [name, this.get(name)]);
        }
      }
      return entries;
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== 'function') throw new TypeErrorCtor('Headers.forEach() takes a function');
      for (const [name, value] of this.#sorted()) apply(callback, thisArg, [value, name, this]);
    }
    *entries() { yield* this.#sorted(); }
    *keys() { for (const [name] of this.#sorted()) yield name; }
    *values() { for (const [, value] of this.#sorted()) yield value; }
    [iteratorSymbol]() { return this.entries(); }
  }
  defineProperty(Headers.prototype, toStringTagSymbol, { value: 'Headers', configurable: true });
  install('Headers', Headers);

  // ---------------------------------------------------------------------------- bodies --
  // A body is text or bytes (a Uint8Array of its own), kept as given and converted only
  // when read the other way.
  function extractBody(init, what) {
    if (init === undefined || init === null) return { source: null, type: null };
    if (typeof init === 'string') return { source: usv(init), type: 'text/plain;charset=UTF-8' };
    if (init instanceof URLSearchParams) return { source: init.toString(), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
    if (typeof init === 'object') {
      switch (host.kindOf(init)) {
        case 'arraybuffer':
        case 'typedarray':
        case 'dataview':
          return { source: typedArraySlice(bytesOf(init, what)), type: null };
      }
      if (typeof init[iteratorSymbol] === 'function' || typeof init.getReader === 'function') {
        throw new TypeErrorCtor(`${what}: a body is a string, URLSearchParams, an ArrayBuffer or a view of one (streams, Blob and FormData are not available)`);
      }
    }
    return { source: usv(init), type: 'text/plain;charset=UTF-8' };
  }

  function bodyText(source) {
    if (source === null) return '';
    return typeof source === 'string' ? source : host.utf8Decode(source, false, true, false)[0];
  }

  function bodyBytes(source) {
    if (source === null) return new Uint8ArrayCtor(0);
    return typeof source === 'string' ? host.utf8Encode(source) : typedArraySlice(source);
  }

  // The body methods shared by Request and Response, over `state` = { source, used }.
  function consume(state, what) {
    if (state.used) return PromiseCtor.reject(new TypeErrorCtor(`${what}: the body was already read`));
    state.used = true;
    return null;
  }

  function addBodyMethods(Class, stateOf, name) {
    const methods = {
      text() {
        const state = stateOf(this);
        return consume(state, `${name}.text()`) ?? PromiseCtor.resolve(bodyText(state.source));
      },
      json() {
        const state = stateOf(this);
        const used = consume(state, `${name}.json()`);
        if (used !== null) return used;
        return new PromiseCtor((resolve) => resolve(jsonParse(bodyText(state.source))));
      },
      arrayBuffer() {
        const state = stateOf(this);
        return consume(state, `${name}.arrayBuffer()`) ?? PromiseCtor.resolve(typedArrayBuffer(bodyBytes(state.source)));
      },
      bytes() {
        const state = stateOf(this);
        return consume(state, `${name}.bytes()`) ?? PromiseCtor.resolve(bodyBytes(state.source));
      },
    };
    for (const key of objectKeys(methods)) {
      defineProperty(Class.prototype, key, { value: methods[key], writable: true, enumerable: false, configurable: true });
    }
    defineProperty(Class.prototype, 'bodyUsed', { get() { return stateOf(this).used; }, enumerable: false, configurable: true });
  }

  // ---------------------------------------------------------------------------- Request --
  const forbiddenMethods = ['CONNECT', 'TRACE', 'TRACK'];
  const normalizedMethods = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH'];
  const redirectModes = ['follow', 'error', 'manual'];
  const methodToken = new RegExpCtor("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$");
  let requestState;

  // An absolute http(s) URL without credentials, as the parts `host.urlParse` returns.
  function requestUrl(input, what) {
    const text = usv(input);
    const parts = host.urlParse(text);
    if (parts == null) throw new TypeErrorCtor(`${what}: ${jsonStringify(text)} is not an absolute URL (scripts have no page to resolve a relative one against)`);
    if (parts[2] !== 'http:' && parts[2] !== 'https:') throw new TypeErrorCtor(`${what}: only http and https URLs can be fetched, not ${parts[2]}`);
    if (parts[3] !== '' || parts[4] !== '') throw new TypeErrorCtor(`${what}: a URL with a user name or password cannot be fetched`);
    return parts;
  }

  class Request {
    #url;
    #method;
    #headers;
    #redirect;
    #signal;
    #body;
    constructor(input, init = undefined) {
      requireArguments(arguments.length, 1, 'new Request()');
      const options = init === undefined || init === null ? {} : init;
      const from = input instanceof Request ? input : null;
      this.#url = from !== null ? from.#url : requestUrl(input, 'new Request()')[0];
      let method = from !== null ? from.#method : 'GET';
      if (options.method !== undefined) {
        method = `${options.method}`;
        if (!regExpTest(methodToken, method)) throw new TypeErrorCtor(`new Request(): ${jsonStringify(method)} is not a valid method`);
        const upper = stringToUpperCase(method);
        if (arrayIndexOf(forbiddenMethods, upper) >= 0) throw new TypeErrorCtor(`new Request(): the method ${upper} cannot be used`);
        if (arrayIndexOf(normalizedMethods, upper) >= 0) method = upper;
      }
      this.#method = method;
      this.#headers = new Headers(options.headers !== undefined ? options.headers : from !== null ? from.#headers : undefined);
      const redirect = options.redirect !== undefined ? `${options.redirect}` : from !== null ? from.#redirect : 'follow';
      if (arrayIndexOf(redirectModes, redirect) < 0) throw new TypeErrorCtor(`new Request(): redirect is "follow", "error" or "manual", not ${jsonStringify(redirect)}`);
      this.#redirect = redirect;
      const signal = options.signal !== undefined ? options.signal : from !== null ? from.#signal : null;
      if (signal !== null && !(signal instanceof AbortSignal)) throw new TypeErrorCtor('new Request(): signal must be an AbortSignal');
      this.#signal = newSignal();
      if (signal !== null) {
        if (signal.aborted) abortSignal(this.#signal, signal.reason);
        else onAbort(signal, (reason) => abortSignal(this.#signal, reason));
      }
      let body;
      if (options.body !== undefined && options.body !== null) {
        if (method === 'GET' || method === 'HEAD') throw new TypeErrorCtor(`new Request(): a ${method} request cannot have a body`);
        const extracted = extractBody(options.body, 'new Request()');
        if (extracted.type !== null && !this.#headers.has('content-type')) this.#headers.append('content-type', extracted.type);
        body = { source: extracted.source, used: false };
      } else if (from !== null && from.#body.source !== null) {
        if (from.#body.used) throw new TypeErrorCtor('new Request(): the body of the request given was already read');
        from.#body.used = true;
        body = { source: from.#body.source, used: false };
      } else {
        body = { source: null, used: false };
      }
      this.#body = body;
    }
    static {
      requestState = (request) => request.#body;
    }
    get method() { return this.#method; }
    get url() { return this.#url; }
    get headers() { return this.#headers; }
    get redirect() { return this.#redirect; }
    get signal() { return this.#signal; }
    get credentials() { return 'omit'; }
    get mode() { return 'cors'; }
    get cache() { return 'no-store'; }
    clone() {
      if (this.#body.used) throw new TypeErrorCtor('Request.clone(): the body was already read');
      return new Request(this, { body: this.#body.source === null ? null : typeof this.#body.source === 'string' ? this.#body.source : typedArraySlice(this.#body.source) });
    }
  }
  addBodyMethods(Request, (request) => requestState(request), 'Request');
  defineProperty(Request.prototype, toStringTagSymbol, { value: 'Request', configurable: true });
  install('Request', Request);

  // --------------------------------------------------------------------------- Response --
  const nullBodyStatuses = [101, 103, 204, 205, 304];
  const redirectStatuses = [301, 302, 303, 307, 308];
  const reasonPhrase = new RegExpCtor('^[\\t\\x20-\\x7E\\x80-\\xFF]*$');
  let responseState, makeResponse;

  class Response {
    #status = 200;
    #statusText = '';
    #headers;
    #type = 'default';
    #url = '';
    #redirected = false;
    #body;
    constructor(body = null, init = undefined) {
      const options = init === undefined || init === null ? {} : init;
      const status = options.status !== undefined ? toLong(options.status) : 200;
      if (status < 200 || status > 599) throw new RangeErrorCtor(`new Response(): the status ${status} is not in 200-599`);
      const statusText = options.statusText !== undefined ? `${options.statusText}` : '';
      if (!regExpTest(reasonPhrase, statusText)) throw new TypeErrorCtor('new Response(): statusText is not a valid reason phrase');
      this.#status = status;
      this.#statusText = statusText;
      this.#headers = new Headers(options.headers);
      const extracted = extractBody(body, 'new Response()');
      if (extracted.source !== null && arrayIndexOf(nullBodyStatuses, status) >= 0) {
        throw new TypeErrorCtor(`new Response(): a response with the status ${status} cannot have a body`);
      }
      if (extracted.type !== null && !this.#headers.has('content-type')) this.#headers.append('content-type', extracted.type);
      this.#body = { source: extracted.source, used: false };
    }
    static {
      responseState = (response) => response.#body;
      makeResponse = (fields) => {
        const response = new Response();
        response.#status = fields.status;
        response.#statusText = fields.statusText;
        response.#headers = fields.headers;
        setHeadersGuard(response.#headers);
        response.#type = fields.type;
        response.#url = fields.url;
        response.#redirected = fields.redirected;
        response.#body = { source: fields.source, used: false };
        return response;
      };
    }
    static error() {
      return makeResponse({ status: 0, statusText: '', headers: new Headers(), type: 'error', url: '', redirected: false, source: null });
    }
    static json(data, init = undefined) {
      const text = jsonStringify(data);
      if (text === undefined) throw new TypeErrorCtor('Response.json(): the value has no JSON form');
      const response = new Response(text, init);
      response.#headers.set('content-type', 'application/json');
      return response;
    }
    static redirect(url, status = 302) {
      const parts = host.urlParse(usv(url));
      if (parts == null) throw new TypeErrorCtor(`Response.redirect(): ${jsonStringify(usv(url))} is not an absolute URL`);
      const code = toLong(status);
      if (arrayIndexOf(redirectStatuses, code) < 0) throw new RangeErrorCtor(`Response.redirect(): ${code} is not a redirect status`);
      return makeResponse({ status: code, statusText: '', headers: new Headers([['location', parts[0]]]), type: 'default', url: '', redirected: false, source: null });
    }
    get type() { return this.#type; }
    get url() { return this.#url; }
    get redirected() { return this.#redirected; }
    get status() { return this.#status; }
    get ok() { return this.#status >= 200 && this.#status <= 299; }
    get statusText() { return this.#statusText; }
    get headers() { return this.#headers; }
    clone() {
      if (this.#body.used) throw new TypeErrorCtor('Response.clone(): the body was already read');
      const source = this.#body.source;
      const headers = new Headers(this.#headers);
      return makeResponse({
        status: this.#status, statusText: this.#statusText, headers, type: this.#type, url: this.#url,
        redirected: this.#redirected, source: source === null || typeof source === 'string' ? source : typedArraySlice(source),
      });
    }
  }
  addBodyMethods(Response, (response) => responseState(response), 'Response');
  defineProperty(Response.prototype, toStringTagSymbol, { value: 'Response', configurable: true });
  install('Response', Response);

  // ------------------------------------------------------------------------------ fetch --
  // Each request, and each redirect followed, is one call of the host's tool `WebFetch`,
  // which the permission rules (`WebFetch(domain:...)`), hooks and approvals see as any
  // call. The host never follows a redirect itself: following one here makes its target a
  // call of its own, checked again. The wait is the host's time, never the script's.
  const MAX_REDIRECTS = 20;

  function origin(href) {
    const parts = host.urlParse(href);
    return parts == null ? '' : parts[1];
  }

  // One call of `WebFetch`: its answer, or the reason it failed; the signal's abort stops it.
  function fetchOnce(args, signal) {
    return new PromiseCtor((resolve, reject) => {
      const started = host.startCall('WebFetch', args);
      const id = started[1];
      const forget = onAbort(signal, (reason) => {
        if (id >= 0) host.cancelCall(id);
        reject(reason);
      });
      promiseThen(started[0], (answer) => { forget(); resolve(answer); }, (error) => { forget(); reject(error); });
    });
  }

  async function follow(request, signal) {
    let url = request.url;
    let method = request.method;
    const headers = arraySlice(headerList(request.headers));
    const state = requestState(request);
    let source = state.source;
    state.used = source !== null || state.used;
    let redirected = false;
    for (let hop = 0; ; hop++) {
      const args = { url, method, headers };
      if (source !== null) {
        if (typeof source === 'string') args.body = source;
        else args.bodyBase64 = host.bytesToBase64(source);
      }
      let answer;
      try {
        answer = await fetchOnce(args, signal);
      } catch (error) {
        if (signal.aborted && error === signal.reason) throw error;
        throw new TypeErrorCtor(`fetch(${jsonStringify(url)}) failed: ${error instanceof ErrorCtor ? error.message : `${error}`}`);
      }
      const list = [];
      for (const pair of answer.headers) arrayPush(list, [stringToLowerCase(pair[0]), pair[1]]);
      const responseHeaders = headersFromList(list);
      const status = answer.status;
      const location = responseHeaders.get('location');
      if (arrayIndexOf(redirectStatuses, status) >= 0 && location !== null && request.redirect !== 'manual') {
        if (request.redirect === 'error') throw new TypeErrorCtor(`fetch(${jsonStringify(url)}) failed: it redirects, and the request's redirect mode is "error"`);
        if (hop >= MAX_REDIRECTS) throw new TypeErrorCtor(`fetch(${jsonStringify(request.url)}) failed: more than ${MAX_REDIRECTS} redirects`);
        const next = host.urlParse(location, url);
        if (next == null) throw new TypeErrorCtor(`fetch(${jsonStringify(url)}) failed: it redirects to ${jsonStringify(location)}, which is not a URL`);
        if (next[2] !== 'http:' && next[2] !== 'https:') throw new TypeErrorCtor(`fetch(${jsonStringify(url)}) failed: it redirects to a ${next[2]} URL`);
        if (next[3] !== '' || next[4] !== '') throw new TypeErrorCtor(`fetch(${jsonStringify(url)}) failed: it redirects to a URL with a user name or password`);
        if (((status === 301 || status === 302) && method === 'POST') || (status === 303 && method !== 'GET' && method !== 'HEAD')) {
          method = 'GET';
          source = null;
          for (let i = headers.length - 1; i >= 0; i--) {
            const name = headers[i][0];
            if (name === 'content-type' || name === 'content-length' || name === 'content-encoding' || name === 'content-language' || name === 'content-location') arraySplice(headers, i, 1);
          }
        }
        // A credential the script gave one origin does not go to another.
        if (origin(next[0]) !== origin(url)) {
          for (let i = headers.length - 1; i >= 0; i--) {
            const name = headers[i][0];
            if (name === 'authorization' || name === 'cookie' || name === 'proxy-authorization') arraySplice(headers, i, 1);
          }
        }
        url = next[0];
        redirected = true;
        continue;
      }
      let body = null;
      if (arrayIndexOf(nullBodyStatuses, status) < 0 && method !== 'HEAD') {
        if (typeof answer.body === 'string') body = answer.body;
        else if (typeof answer.bodyBase64 === 'string') body = host.base64ToBytes(answer.bodyBase64);
        else body = '';
      }
      return makeResponse({ status, statusText: answer.statusText, headers: responseHeaders, type: 'basic', url: answer.url, redirected, source: body });
    }
  }

  function fetch(input, init = undefined) {
    if (arguments.length < 1) return PromiseCtor.reject(new TypeErrorCtor('fetch() takes 1 argument, got 0'));
    let request;
    try {
      request = new Request(input, init);
    } catch (error) {
      return PromiseCtor.reject(error);
    }
    const signal = request.signal;
    if (signal.aborted) return PromiseCtor.reject(signal.reason);
    return follow(request, signal);
  }
  install('fetch', fetch);
})
