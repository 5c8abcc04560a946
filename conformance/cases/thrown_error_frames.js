function inner() {
  throw new Error("deep");
}
function outer() {
  return inner();
}
outer();
