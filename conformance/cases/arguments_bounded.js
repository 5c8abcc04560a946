// Arguments past `argument-bytes` or nested deeper than `argument-depth` are refused in the
// guest with a TypeError: nothing reaches the host. Arguments within both pass.
const attempt = async (args) => {
  try { return await tools.echo(args); } catch (e) { return `${e.name}: ${e.message}`; }
};
return [
  await attempt({ text: "x".repeat(200) }),
  await attempt({ a: { b: { c: {} } } }),
  await attempt({ a: { b: 1 } }),
];
