const r = await Promise.all([tools.sleep({ ms: 250 }), tools.sleep({ ms: 250 }), tools.sleep({ ms: 250 })]);
return r;
