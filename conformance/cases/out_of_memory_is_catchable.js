const keep = [];
try {
  for (;;) keep.push("x".repeat(1 << 20) + keep.length);
} catch (e) {
  const name = e.name;
  keep.length = 0;
  return name + ": " + e.message;
}
