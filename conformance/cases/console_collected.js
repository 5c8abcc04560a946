console.log("step", 1, { a: [1, 2] });
console.info("info line");
console.warn("careful");
console.error(new TypeError("bad thing"));
console.debug(null, undefined, true, 3n);
return "done";
