//! What a `Bash` rule's specifier means, as in Claude Code: `Bash(npm run test:*)` is a
//! prefix (the words `npm run test`, then anything), `Bash(git status)` the exact command,
//! and `*` elsewhere stands for any text (`Bash(git * main)`). A command is checked part by
//! part: `&&`, `||`, `;`, `|`, `&` and new lines join commands, so `Bash(git status:*)` does
//! not allow `git status && rm -rf x`. What runs inside `$( )`, backticks or `<( )` is a
//! part too, and the part around it is never allowed by a specifier (its text is not what
//! runs).

/// Parts of one command checked at most; a longer chain is one part too many, which no
/// specifier allows.
pub const MAX_PARTS: usize = 64;

/// One part of a command, as a rule sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The part's text, trimmed, with a leading `(` `{` of a group taken off.
    pub text: String,
    /// Whether something in it is run and substituted (`$( )`, backticks, `<( )`, `>( )`),
    /// or it could not be read (an unclosed quote): no specifier allows it.
    pub opaque: bool,
}

/// The parts of `command`, each to be checked on its own.
pub fn parts(command: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    split_into(command, &mut parts, 0);
    if parts.len() > MAX_PARTS {
        parts.truncate(MAX_PARTS);
        parts.push(Part { text: String::new(), opaque: true });
    }
    parts
}

fn split_into(command: &str, parts: &mut Vec<Part>, depth: usize) {
    let chars: Vec<char> = command.chars().collect();
    let mut current = String::new();
    let mut opaque = false;
    let mut i = 0;
    let push = |current: &mut String, opaque: &mut bool, parts: &mut Vec<Part>| {
        let text = ungroup(current.trim());
        if !text.is_empty() || *opaque {
            parts.push(Part { text, opaque: *opaque });
        }
        current.clear();
        *opaque = false;
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                current.push(c);
                if let Some(&next) = chars.get(i + 1) {
                    current.push(next);
                }
                i += 2;
                continue;
            }
            '\'' => match chars[i + 1..].iter().position(|&q| q == '\'') {
                Some(end) => {
                    current.extend(&chars[i..=i + 1 + end]);
                    i += end + 2;
                    continue;
                }
                None => {
                    opaque = true;
                    current.extend(&chars[i..]);
                    break;
                }
            },
            '"' => {
                // Inside double quotes, `$( )` and backticks still run.
                let mut j = i + 1;
                while j < chars.len() && chars[j] != '"' {
                    if chars[j] == '\\' {
                        j += 1;
                    } else if chars[j] == '`' || (chars[j] == '$' && chars.get(j + 1) == Some(&'(')) {
                        opaque = true;
                        if let Some((inner, end)) = substitution(&chars, j) {
                            if depth < 8 {
                                split_into(&inner, parts, depth + 1);
                            }
                            j = end;
                        }
                    }
                    j += 1;
                }
                if j >= chars.len() {
                    opaque = true;
                }
                current.extend(&chars[i..chars.len().min(j + 1)]);
                i = j + 1;
                continue;
            }
            '`' | '$' | '<' | '>' if starts_substitution(&chars, i) => {
                opaque = true;
                match substitution(&chars, i) {
                    Some((inner, end)) => {
                        if depth < 8 {
                            split_into(&inner, parts, depth + 1);
                        }
                        current.extend(&chars[i..=end]);
                        i = end + 1;
                    }
                    None => {
                        current.extend(&chars[i..]);
                        break;
                    }
                }
                continue;
            }
            ';' | '\n' => push(&mut current, &mut opaque, parts),
            '&' => {
                // `>&2`, `&>` and `2>&1` redirect; they do not join commands.
                let redirect = current.ends_with('>') || chars.get(i + 1) == Some(&'>');
                if redirect {
                    current.push(c);
                } else {
                    push(&mut current, &mut opaque, parts);
                    if chars.get(i + 1) == Some(&'&') {
                        i += 1;
                    }
                }
            }
            '|' => {
                push(&mut current, &mut opaque, parts);
                if chars.get(i + 1) == Some(&'|') || chars.get(i + 1) == Some(&'&') {
                    i += 1;
                }
            }
            _ => current.push(c),
        }
        i += 1;
    }
    push(&mut current, &mut opaque, parts);
}

/// A part without the brackets of a group it opens or closes (`(cd a`, `make)`), keeping
/// those it holds whole (`echo $(id)`).
fn ungroup(text: &str) -> String {
    let mut text = text.trim_start_matches(['(', '{']).trim();
    let unclosed = |text: &str, open: char, close: char| text.matches(close).count() > text.matches(open).count();
    while (text.ends_with(')') && unclosed(text, '(', ')')) || (text.ends_with('}') && unclosed(text, '{', '}')) {
        text = text[..text.len() - 1].trim_end();
    }
    text.to_string()
}

/// Whether a substitution starts at `i`: `` ` ``, `$(`, `<(` or `>(`.
fn starts_substitution(chars: &[char], i: usize) -> bool {
    match chars[i] {
        '`' => true,
        '$' | '<' | '>' => chars.get(i + 1) == Some(&'('),
        _ => false,
    }
}

/// The command inside the substitution starting at `start`, and where it ends; `None`
/// when it is not closed.
fn substitution(chars: &[char], start: usize) -> Option<(String, usize)> {
    if chars[start] == '`' {
        let end = start + 1 + chars[start + 1..].iter().position(|&c| c == '`')?;
        return Some((chars[start + 1..end].iter().collect(), end));
    }
    let mut depth = 0usize;
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some((chars[start + 2..i].iter().collect(), i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A `Bash` rule's specifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandPattern {
    /// `prefix:*`: the command is `prefix`, or starts with it and a space.
    Prefix(String),
    /// Text with `*`s, each standing for any text.
    Wildcard(Vec<String>),
    Exact(String),
}

impl CommandPattern {
    pub fn new(specifier: &str) -> Self {
        let specifier = specifier.trim();
        if let Some(prefix) = specifier.strip_suffix(":*") {
            return CommandPattern::Prefix(prefix.trim().to_string());
        }
        if specifier.contains('*') {
            return CommandPattern::Wildcard(specifier.split('*').map(str::to_string).collect());
        }
        CommandPattern::Exact(specifier.to_string())
    }

    /// Whether the pattern allows (or names, for deny and ask) `part`.
    pub fn matches(&self, part: &Part) -> bool {
        if part.opaque {
            return false;
        }
        let text = part.text.as_str();
        match self {
            CommandPattern::Prefix(prefix) => {
                text == prefix || text.strip_prefix(prefix.as_str()).is_some_and(|rest| rest.starts_with([' ', '\t']))
            }
            CommandPattern::Exact(exact) => text == exact,
            CommandPattern::Wildcard(pieces) => {
                let (first, rest) = pieces.split_first().expect("split gives at least one piece");
                let Some(mut left) = text.strip_prefix(first.as_str()) else { return false };
                let Some((last, middle)) = rest.split_last() else { return left.is_empty() };
                for piece in middle {
                    match left.find(piece.as_str()) {
                        Some(at) => left = &left[at + piece.len()..],
                        None => return false,
                    }
                }
                left.ends_with(last.as_str())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(command: &str) -> Vec<(String, bool)> {
        parts(command).into_iter().map(|part| (part.text, part.opaque)).collect()
    }

    #[test]
    fn commands_split_at_every_operator_and_substitutions_are_parts_of_their_own() {
        assert_eq!(texts("git status && rm -rf x"), [("git status".into(), false), ("rm -rf x".into(), false)]);
        assert_eq!(texts("a || b; c | d & e\nf"), ["a", "b", "c", "d", "e", "f"].map(|t| (t.to_string(), false)));
        assert_eq!(texts("echo 'a && b' \"c; d\""), [("echo 'a && b' \"c; d\"".into(), false)]);
        assert_eq!(texts("make 2>&1 | tee log"), [("make 2>&1".into(), false), ("tee log".into(), false)]);
        assert_eq!(texts("echo $(rm -rf x)"), [("rm -rf x".into(), false), ("echo $(rm -rf x)".into(), true)]);
        assert_eq!(texts("echo \"`id`\""), [("id".into(), false), ("echo \"`id`\"".into(), true)]);
        assert_eq!(texts("(cd a && make)"), [("cd a".into(), false), ("make".into(), false)]);
        assert_eq!(texts("echo 'unclosed"), [("echo 'unclosed".into(), true)]);
        assert_eq!(parts(&"a;".repeat(100)).len(), MAX_PARTS + 1);
    }

    #[test]
    fn prefix_exact_and_wildcard_specifiers_match_as_claude_code_s() {
        let part = |text: &str| Part { text: text.into(), opaque: false };
        let prefix = CommandPattern::new("npm run test:*");
        assert!(prefix.matches(&part("npm run test")));
        assert!(prefix.matches(&part("npm run test --watch")));
        assert!(!prefix.matches(&part("npm run testing")));
        assert!(!prefix.matches(&Part { text: "npm run test".into(), opaque: true }));
        let exact = CommandPattern::new("git status");
        assert!(exact.matches(&part("git status")) && !exact.matches(&part("git status -s")));
        let wildcard = CommandPattern::new("git * main");
        assert!(wildcard.matches(&part("git push origin main")) && !wildcard.matches(&part("git push origin dev")));
    }
}
