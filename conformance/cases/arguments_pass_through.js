const args = { a: 1, "weird key": null, nested: { list: [1, "two", true], empty: {} }, text: "ü\n\"q\"" };
const r = await tools.structured(args);
return r.kind;
