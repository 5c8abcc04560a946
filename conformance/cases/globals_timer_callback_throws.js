setTimeout(() => { throw new RangeError('thrown in a timer'); }, 0);
await new Promise((resolve) => setTimeout(resolve, 20));
return 'unreachable';
