const u = new URL('../b/./c?x=1&y=%20two#frag', 'https://user:pa%20ss@Example.COM:8080/a/d/e');
const parts = ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'];
const read = (url) => Object.fromEntries(parts.map((p) => [p, url[p]]));
const before = read(u);
u.searchParams.append('z', 'a b&c');
u.searchParams.delete('x');
const afterParams = u.href;
u.search = '?q=1&q=2';
const fromSearch = u.searchParams.getAll('q');
u.hash = '';
u.port = '443';
u.protocol = 'http';
u.hostname = 'münchen.example';
u.pathname = '/p q';
u.username = '';
u.password = '';
const setters = u.href;
const attempt = (f) => { try { return f(); } catch (e) { return `${e.name}: ${e.message}`; } };
const p = new URLSearchParams('?b=2&a=1&b=3&c=%F0%9F%98%80+x');
p.sort();
const sorted = [...p];
p.set('b', 'only');
const entries = [];
p.forEach((value, key) => entries.push(`${key}=${value}`));
return {
  before,
  afterParams,
  fromSearch,
  setters,
  defaultPort: new URL('https://a.example:443/').port,
  file: [new URL('file:///tmp/x').origin, new URL('file:///tmp/x').pathname],
  blank: new URL('about:blank').pathname,
  invalid: attempt(() => new URL('not a url')),
  invalidBase: attempt(() => new URL('/x', 'relative')),
  canParse: [URL.canParse('https://a'), URL.canParse('/x'), URL.canParse('/x', 'https://a'), URL.parse('nope')],
  hrefSetterThrows: attempt(() => { new URL('https://a').href = 'bad'; }),
  json: JSON.stringify({ u: new URL('https://a.example/x') }),
  params: {
    sorted,
    entries,
    size: p.size,
    get: [p.get('a'), p.get('missing'), p.has('b'), p.has('b', 'nope')],
    string: p.toString(),
    fromRecord: new URLSearchParams({ k: 'v', n: 1 }).toString(),
    fromPairs: new URLSearchParams([['a', '1'], ['a', '2']]).getAll('a'),
    badPair: attempt(() => new URLSearchParams([['a']])),
    keys: [...new URLSearchParams('a=1&b=2').keys()],
    values: [...new URLSearchParams('a=1&b=2').values()],
    encoded: new URLSearchParams({ 'a b': 'é&=+' }).toString(),
  },
  tags: [Object.prototype.toString.call(u), Object.prototype.toString.call(p)],
};
