console.log("only a log");
