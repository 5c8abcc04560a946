function down(n) { return down(n + 1) + 1; }
return down(0);
