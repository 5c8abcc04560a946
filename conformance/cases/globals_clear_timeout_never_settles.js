let fired = false;
const id = setTimeout(() => { fired = true; }, 10);
clearTimeout(id);
clearTimeout(id);
clearTimeout(12345);
clearTimeout();
await new Promise(() => {});
return fired;
