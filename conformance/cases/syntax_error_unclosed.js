if (true) {
  return 1;
