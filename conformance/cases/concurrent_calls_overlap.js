const finished = [];
const calls = [1, 2, 3, 4].map((n) => tools.slow({ n }).then((r) => finished.push(r)));
console.log("all four started");
await Promise.all(calls);
return finished;
