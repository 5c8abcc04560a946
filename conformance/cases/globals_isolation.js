// The new globals hand out nothing that compiles code, and never compile a string.
const out = {};
const escapes = {
  setTimeout: () => setTimeout.constructor('return 1')(),
  clearTimeout: () => clearTimeout.constructor('return 1')(),
  queueMicrotask: () => queueMicrotask.constructor('return 1')(),
  structuredClone: () => structuredClone.constructor('return 1')(),
  atob: () => atob.constructor('return 1')(),
  URL: () => URL.constructor('return 1')(),
  searchParamsIterator: () => Object.getPrototypeOf(new URLSearchParams().entries()).constructor.constructor('return 1')(),
  TextDecoder: () => new TextDecoder().decode.constructor('return 1')(),
  toLocaleString: () => (1).toLocaleString.constructor('return 1')(),
  DOMException: () => DOMException.constructor('return 1')(),
  clonedFunctionProto: () => structuredClone({}).constructor.constructor('return 1')(),
};
for (const [name, f] of Object.entries(escapes)) {
  try { f(); out[name] = 'escaped'; } catch (e) { out[name] = e.name; }
}
globalThis.compiled = false;
try { setTimeout('globalThis.compiled = true', 0); out.stringHandler = 'accepted'; } catch (e) { out.stringHandler = e.name; }
await new Promise((resolve) => setTimeout(resolve, 5));
out.compiled = globalThis.compiled;
out.realm = [structuredClone({}) instanceof Object, new TextEncoder().encode('a') instanceof Uint8Array, new URL('https://a').searchParams instanceof URLSearchParams];
return out;
