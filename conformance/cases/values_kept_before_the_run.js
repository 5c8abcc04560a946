// Values a previous Exec of the conversation stored, read, changed and removed.
const count = load("count");
store("count", count + 1);
store("old", undefined);
return { count: load("count"), old: load("old"), list: load("list") };
