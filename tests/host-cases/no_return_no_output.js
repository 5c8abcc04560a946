const x = 1 + 1;
