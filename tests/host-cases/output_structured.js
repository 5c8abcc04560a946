const r = await tools.structured({ q: 1 });
return [typeof r, r.kind, r.received];
