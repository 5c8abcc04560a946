await tools.add({ a: 1, b: 1 });
await tools.echo({ value: 1 });
await tools.text_only({});
return "ok";
