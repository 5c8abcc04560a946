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

