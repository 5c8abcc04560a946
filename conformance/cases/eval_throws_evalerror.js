const out = [];
for (const attempt of [
  () => eval("1 + 1"),
  () => (0, globalThis.eval)("1 + 1"),
  () => new Function("return 1"),
  () => Function("return 1"),
  () => (async () => {}).constructor("return 1"),
  () => (function* () {}).constructor("yield 1"),
  () => (async function* () {}).constructor("yield 1"),
]) {
  try { attempt(); out.push("compiled"); } catch (e) { out.push(e.name); }
}
return out;
