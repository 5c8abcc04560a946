return [typeof tools.search, typeof tools.then, typeof tools.constructor, "search" in tools];
