// Timers are bounded on their own (1,000 pending), are not tool calls (max_calls is 1
// here), and a cleared timer frees its place.
const ids = [];
let refused = null;
try {
  for (let i = 0; i < 1001; i++) ids.push(setTimeout(() => {}, 60000));
} catch (e) {
  refused = `${e.name}: ${e.message}`;
}
clearTimeout(ids[0]);
const again = typeof setTimeout(() => {}, 60000);
const echoed = await tools.echo({ value: 'one call' });
return { pending: ids.length, refused, again, echoed };
