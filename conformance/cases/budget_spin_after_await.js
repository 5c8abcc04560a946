await tools.sleep({ ms: 300 });
while (true) {}
