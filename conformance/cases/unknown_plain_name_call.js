await tools.search({ query: "x" });
