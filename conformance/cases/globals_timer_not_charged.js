const started = Date.now();
await new Promise((resolve) => setTimeout(resolve, 300));
return Date.now() - started >= 300 ? 'waited' : 'too early';
