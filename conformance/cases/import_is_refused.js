try {
  await import("node:fs");
  return "imported";
} catch (e) {
  return String(e);
}
