const order = [];
queueMicrotask(() => order.push('first microtask'));
Promise.resolve().then(() => order.push('promise reaction'));
queueMicrotask(() => queueMicrotask(() => order.push('nested microtask')));
setTimeout(() => order.push('timer'), 0);
order.push('sync');
let refused;
try { queueMicrotask('order.push(1)'); } catch (e) { refused = e.name; }
await new Promise((resolve) => setTimeout(resolve, 10));
return { order, refused, constructible: (() => { try { new queueMicrotask(() => {}); return true; } catch (e) { return e.name; } })() };
