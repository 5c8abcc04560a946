try { await tools.mcp__gone__tool({}); } catch (e) {}
try { await tools.fail({}); } catch (e) {}
return "ok";
