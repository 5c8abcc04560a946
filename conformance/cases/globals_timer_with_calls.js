// Timers and tool calls share the one wait: whichever is due first wakes the script.
const order = [];
setTimeout(() => order.push('timer 10'), 10);
const slept = tools.sleep({ ms: 200 }).then(() => order.push('call 200'));
const winner = await Promise.race([
  tools.sleep({ ms: 2000 }).then(() => 'call 2000'),
  new Promise((resolve) => setTimeout(() => resolve('timer 100'), 100)),
]);
await slept;
return { winner, order };
