//! Text cut to a bound, as every record of what a script or a server said is kept, and the
//! environment's values put into configuration text.

/// `text` as one quoted line of a sentence: cut at `max` characters, every control
/// character and every character that reorders text written as a visible `\u{..}` escape.
pub fn one_line(text: &str, max: usize) -> String {
    let obeyed = |c: char| c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    cut_chars(text, max).chars().map(|c| if obeyed(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() }).collect()
}

/// `text` cut at `max` characters, with an ellipsis when cut.
pub fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// `text` with each `${NAME}` replaced by the environment variable `NAME`, and each
/// `${NAME:-default}` by `NAME`, or `default` when it is unset or empty (as Claude Code
/// expands its configuration). A `$` not followed by `{` stays as it is. `field` names where
/// the text came from in errors.
pub(crate) fn expand_env(text: &str, field: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let inside = &rest[at + 2..];
        let end = inside.find('}').ok_or_else(|| format!("`{field}`: `${{` without its closing `}}` in {text:?}"))?;
        let (name, default) = match inside[..end].split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (&inside[..end], None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{field}`: `${{{}}}` does not name an environment variable", &inside[..end]));
        }
        match (std::env::var(name).ok().filter(|value| !value.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "`{field}` uses `${{{name}}}`, which is not set in the environment (write `${{{name}:-default}}` to give a default)"
                ));
            }
        }
        rest = &inside[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{cut_chars, one_line};

    #[test]
    fn text_is_cut_at_a_character_boundary_with_an_ellipsis() {
        assert_eq!(cut_chars("short", 10), "short");
        assert_eq!(cut_chars("exactly", 7), "exactly");
        assert_eq!(cut_chars("ééééé", 2), "éé…");
        assert_eq!(cut_chars("", 0), "");
    }

    #[test]
    fn a_line_for_a_sentence_obeys_nothing_and_is_bounded() {
        assert_eq!(one_line("javascript:alert(1)\n\u{1b}[2J\u{202e}", 100), "javascript:alert(1)\\u{a}\\u{1b}[2J\\u{202e}");
        assert_eq!(one_line(&"x".repeat(500), 10), format!("{}…", "x".repeat(10)));
    }
}
