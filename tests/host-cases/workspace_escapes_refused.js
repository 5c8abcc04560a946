const out = [];
for (const path of ["../outside.txt", "/etc/passwd", "a/../../outside.txt"]) {
  try { await tools.read_file({ path }); out.push("read"); } catch (e) { out.push(e.message); }
}
return out;
