//! Text cut to a bound, as every record of what a script or a server said is kept.

/// `text` cut at `max` characters, with an ellipsis when cut.
pub fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

#[cfg(test)]
mod tests {
    use super::cut_chars;

    #[test]
    fn text_is_cut_at_a_character_boundary_with_an_ellipsis() {
        assert_eq!(cut_chars("short", 10), "short");
        assert_eq!(cut_chars("exactly", 7), "exactly");
        assert_eq!(cut_chars("ééééé", 2), "éé…");
        assert_eq!(cut_chars("", 0), "");
    }
}
