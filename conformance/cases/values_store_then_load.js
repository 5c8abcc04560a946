// `store` keeps a copy: changing the object afterwards changes nothing kept, and `load`
// gives a fresh copy each time.
const plan = { steps: ["read", "write"], done: 0 };
store("plan", plan);
plan.done = 99;
const first = load("plan");
first.steps.push("mutated");
const second = load("plan");
return { first: first.done, second, missing: load("nothing"), typeOfMissing: typeof load("nothing") };
