// Timers run as tasks: after the microtasks queued before them, shorter delays first,
// equal delays in the order they were created; extra arguments reach the callback.
const order = [];
setTimeout((a, b) => order.push(`args ${a} ${b}`), 100, 'x', 'y');
setTimeout(() => order.push('zero A'), 0);
setTimeout(function () { order.push(`zero B this=${this === globalThis}`); }, 0);
setTimeout(() => {
  order.push('five');
  Promise.resolve().then(() => order.push('microtask queued by five'));
  setTimeout(() => order.push('nested zero'), 0);
}, 5);
setTimeout(() => order.push('five again'), 5);
Promise.resolve().then(() => order.push('microtask'));
order.push('sync');
await new Promise((resolve) => setTimeout(resolve, 150));
return order;
