//! The result summary a user sees beside an Exec: how many tool calls the script made and
//! the last two, one per line. Host-only: it never reaches the model.

/// `0 tool calls`, `1 tool call`, `N tool calls`, then the last two names one per line,
/// with a leading `... ` when earlier calls are not listed; `failed` for a failed script.
pub fn of(calls: &[String], ok: bool) -> String {
    if !ok {
        return "failed".to_string();
    }
    let count = match calls.len() {
        1 => "1 tool call".to_string(),
        n => format!("{n} tool calls"),
    };
    let shown = &calls[calls.len().saturating_sub(2)..];
    let mut text = if calls.len() > 2 { format!("... {count}") } else { count };
    for name in shown {
        text.push('\n');
        text.push_str(name);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::of;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn counts_and_lists_the_last_two() {
        assert_eq!(of(&[], true), "0 tool calls");
        assert_eq!(of(&names(&["a"]), true), "1 tool call\na");
        assert_eq!(of(&names(&["a", "b"]), true), "2 tool calls\na\nb");
        assert_eq!(of(&names(&["a", "b", "c"]), true), "... 3 tool calls\nb\nc");
        assert_eq!(of(&names(&["a", "a", "a"]), true), "... 3 tool calls\na\na");
        assert_eq!(of(&names(&["a"]), false), "failed");
    }
}
