return "abcdefghij".repeat(20);
