const r = await tools.image({});
return { value: r, keys: r === null ? null : Object.keys(r) };
