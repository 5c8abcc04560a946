// What JSON cannot carry is refused before anything reaches the host, naming where it is;
// a key must be a string.
const refused = [];
for (const [key, value] of [["f", { run() {} }], ["big", 1n], ["date", new Date(0)], ["nan", [NaN]]]) {
  try {
    store(key, value);
  } catch (e) {
    refused.push(`${e.name}: ${e.message}`);
  }
}
try {
  load(42);
} catch (e) {
  refused.push(`${e.name}: ${e.message}`);
}
store("ok", { fine: [1, 2] });
return refused;
