//! Text cut to a bound, as every record of what a script or a server said is kept.

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
