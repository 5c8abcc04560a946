const payload = JSON.parse("{\"__proto__\": {\"polluted\": 1}, \"constructor\": {\"prototype\": {\"polluted\": 2}}}");
const back = await tools.echo({ value: payload });
const again = await tools.echo({ value: {} });
return [({}).polluted === undefined, again.polluted === undefined, Object.keys(back)];
