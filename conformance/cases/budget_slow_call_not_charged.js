const r = await tools.sleep({ ms: 400 });
return r;
