const out = [];
const paths = [
  () => tools.echo.constructor("return process")(),
  () => console.log.constructor("return process")(),
  () => tools.ToolSearch.constructor("return 1")(),
  () => globalThis.constructor.constructor("return process")(),
  () => Object.getPrototypeOf(async function () {}).constructor("return 1"),
];
for (const p of paths) {
  try { p(); out.push("escaped"); } catch (e) { out.push(e.name); }
}
const value = await tools.echo({ value: { a: 1 } });
try { value.constructor.constructor("return process")(); out.push("escaped"); } catch (e) { out.push(e.name); }
out.push(value instanceof Object, tools.echo({ value: 1 }) instanceof Promise);
return out;
