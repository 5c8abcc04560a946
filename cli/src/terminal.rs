//! Text a script or an MCP server chose (a result, a tool's description, a hook's report)
//! reaches the operator's terminal. Escape sequences in it could rewrite the screen, set
//! the window title or answer back to the shell; printed to a terminal, control characters
//! are shown as escapes, not obeyed. Output to files and pipes is left as it is.

use std::borrow::Cow;
use std::io::IsTerminal;

/// `text` as it may be printed to standard output.
pub fn out(text: &str) -> Cow<'_, str> {
    if std::io::stdout().is_terminal() { neutralise(text) } else { text.into() }
}

/// `text` as it may be printed to standard error.
pub fn err(text: &str) -> Cow<'_, str> {
    if std::io::stderr().is_terminal() { neutralise(text) } else { text.into() }
}

/// Every control character but newline and tab, and the characters that reorder text
/// (bidirectional overrides and isolates), written as a visible `\u{..}` escape.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    let obeyed =
        |c: char| (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(obeyed) {
        return text.into();
    }
    text.chars().map(|c| if obeyed(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() }).collect::<String>().into()
}

#[cfg(test)]
mod tests {
    use super::neutralise;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(neutralise("plain\ttext\nok"), "plain\ttext\nok");
        assert_eq!(neutralise("\u{1b}]0;title\u{7}"), "\\u{1b}]0;title\\u{7}");
        assert_eq!(neutralise("a\u{9b}31mb\rc\u{7f}"), "a\\u{9b}31mb\\u{d}c\\u{7f}");
        assert_eq!(neutralise("x\u{202E}y"), "x\\u{202e}y");
    }
}
