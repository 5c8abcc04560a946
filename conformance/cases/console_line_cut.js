// The guest passes at most `log-line-chars` UTF-16 units of a line and says how many it kept
// back; short lines pass whole.
console.log("short");
console.warn("0123456789abcdefghij");
console.log("😀".repeat(8));
return "logged";
