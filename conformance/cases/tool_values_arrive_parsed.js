// A tool's structured value arrives as the value itself (parsed, not JSON text), a text
// answer as a string, and `null` as null.
const out = [];
for (const shape of ["object", "array", "number", "null", "text", "boolean"]) {
  const value = await tools.shape({ shape });
  out.push([shape, value === null ? "null" : Array.isArray(value) ? "array" : typeof value, value]);
}
return out;
