try { await tools.ToolSearch({ q: "add" }); } catch (e) { return e.message; }
