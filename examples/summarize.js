// Gathers every open TODO from the meeting notes into one report, in one Exec:
// find the notes, read them all at once, and write the report back to the workspace.
const notes = await tools.glob({ pattern: "notes/*.md" });
const files = await Promise.all(notes.matches.map((path) => tools.read_file({ path })));

const todos = [];
for (const file of files) {
  const title = file.content.split("\n")[0].replace(/^#\s*/, "");
  for (const line of file.content.split("\n")) {
    const todo = line.match(/TODO:\s*(.*)/);
    if (todo) todos.push({ from: title, task: todo[1] });
  }
}
console.log(`read ${files.length} notes, found ${todos.length} open items`);

const report = ["# Open items", "", ...todos.map((t) => `- [ ] ${t.task} (${t.from})`), ""].join("\n");
const written = await tools.write_file({ path: "out/open-items.md", content: report });
return { report: written.path, todos };
