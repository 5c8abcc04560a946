queueMicrotask(() => { throw new TypeError('thrown in a microtask'); });
await null;
await null;
return 'unreachable';
