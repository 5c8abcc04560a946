await tools.add({ a: 1, b: 1 });
await tools.echo({ value: 1 });
return "ok";
