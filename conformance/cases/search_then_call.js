const found = await tools.ToolSearch({ query: "add" });
const first = found.matches[0];
const sum = await tools[first.name]({ a: 20, b: 22 });
return { name: first.name, total: found.total, sum };
