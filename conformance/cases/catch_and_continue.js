let caught = null;
try {
  await tools.fail({ message: "first step failed" });
} catch (e) {
  caught = e.message;
}
const next = await tools.add({ a: 2, b: 3 });
return { caught, next };
