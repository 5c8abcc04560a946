const a = await tools.echo({ value: { id: 1, name: "first" } });
return await tools.echo({ value: { stored: a } });
