return "line one\nline two";
