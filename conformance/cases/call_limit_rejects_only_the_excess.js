const out = [];
for (let i = 0; i < 5; i++) {
  try { out.push(await tools.count()); } catch (e) { out.push(e.message); }
}
return out;
