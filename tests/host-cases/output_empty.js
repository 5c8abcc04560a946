const r = await tools.empty();
return r === null;
