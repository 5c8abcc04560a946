// Math.random is seeded from the run's `random-seed`: the same seed gives the same numbers.
const draws = Array.from({ length: 4 }, () => Math.random());
return { inRange: draws.every((x) => x >= 0 && x < 1), distinct: new Set(draws).size, draws };
