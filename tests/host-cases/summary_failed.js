await tools.echo({ value: 1 });
throw new Error("nope");
