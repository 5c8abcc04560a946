try {
  await tools.mcp__srv__fetch({ id: 1 });
  return "reached";
} catch (e) {
  return e.message;
}
