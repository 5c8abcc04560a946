// The format of a case, as a case: this script, and beside it format_example.json with
// "about" (what it checks), "options" (limits, files seeded in the workspace), "expect"
// (every outcome field: ok, value, text, logs, calls, summary, images, error) and
// "workspace" (files that must hold exactly this text afterwards).
const note = await tools.read_file({ path: "in.txt" });
console.log("read", note.total_lines, "line(s)");
await tools.write_file({ path: "out.txt", content: note.content.toUpperCase() });
return { echoed: await tools.echo({ value: note.content }) };
