for (let i = 0; i < 3; i++) await tools.echo({ value: i });
return "ok";
