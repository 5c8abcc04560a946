class Point { constructor() { this.x = 1; } }
const withGetter = {};
Object.defineProperty(withGetter, "secret", { get() { return 1; }, enumerable: true });
const cyclic = {}; cyclic.self = cyclic;
const out = [];
for (const args of [{ f: () => 1 }, new Point(), withGetter, "text", null, [1, 2], { when: new Date(0) }, { n: NaN }, { big: 1n }, cyclic]) {
  try { await tools.echo(args); out.push("sent"); } catch (e) { out.push(e.name + ": " + e.message); }
}
return out;
