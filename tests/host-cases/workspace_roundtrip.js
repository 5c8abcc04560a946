await tools.write_file({ path: "notes/new/today.md", content: "alpha\nbeta\ngamma\n" });
await tools.edit_file({ path: "notes/new/today.md", old_string: "beta", new_string: "BETA" });
const read = await tools.read_file({ path: "notes/new/today.md", offset: 2, limit: 1 });
const listing = await tools.ls({ path: "notes" });
const found = await tools.grep({ pattern: "^g", path: "notes" });
const globbed = await tools.glob({ pattern: "**/*.md" });
return { read, listing, found, globbed };
