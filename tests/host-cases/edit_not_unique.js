try {
  await tools.edit_file({ path: "a.txt", old_string: "x", new_string: "y" });
} catch (e) {
  return e.message;
}
