//! A word as bash passes it to the command it runs: quotes and escapes taken off,
//! `$'...'` decoded, and `None` wherever expansion makes it uncertain.

use brush_parser::word::{WordPiece, WordPieceWithSource};

/// How bash reads a command given with `bash -c`: no extended globs, no POSIX mode.
pub(super) fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions { enable_extended_globbing: false, ..brush_parser::ParserOptions::default() }
}

/// A backquoted substitution's code as bash runs it: a backslash before `$`, a backtick or
/// a backslash is taken off.
pub(super) fn unescape_backquoted(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '$' | '`' | '\\')
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// A word as a rule reads it: as it is, or single-quoted where its characters would
/// otherwise read as more than one word or as syntax (`'rm x'` is not `rm` with `x`).
pub(super) fn quoted(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| word.replace('\0', ""), |quoted| quoted.into_owned())
}

/// The word as bash passes it to the command, when nothing in it expands: its quotes and
/// escapes taken off. `None` when it holds a parameter, an arithmetic expansion, a
/// substitution, a tilde, or an unquoted `*`, `?`, `[` or `{`: a pattern bash replaces by
/// the names of files (which a command may just have made: `>rm; * x` runs `rm x`), or a
/// brace expansion (`{rm,x}` is `rm x`).
pub(super) fn literal(word: &str) -> Option<String> {
    let pieces = brush_parser::word::parse(word, &options()).ok()?;
    let mut text = String::new();
    literal_pieces(&pieces, false, &mut text)?;
    Some(text)
}

/// `pieces` as [`literal`] reads them; `in_double_quotes` where a pattern is text.
fn literal_pieces(pieces: &[WordPieceWithSource], in_double_quotes: bool, text: &mut String) -> Option<()> {
    for piece in pieces {
        match &piece.piece {
            WordPiece::Text(part) if !in_double_quotes && part.contains(['*', '?', '[', '{']) => return None,
            WordPiece::Text(part) | WordPiece::SingleQuotedText(part) => text.push_str(part),
            WordPiece::AnsiCQuotedText(part) => text.push_str(&ansi_c(part)?),
            WordPiece::EscapeSequence(escaped) => text.push_str(escaped.strip_prefix('\\').unwrap_or(escaped)),
            WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                literal_pieces(inner, true, text)?
            }
            _ => return None,
        }
    }
    Some(())
}

/// The text of `$'...'` (`quoted`, between the quotes) as bash decodes it: `\n`, `\x72`,
/// `\162`, `\u0072` and the rest are the characters they name, so `$'\x72m'` is `rm`; an
/// escape bash does not know keeps its backslash. `None` where the decoding is not certain:
/// a control character by `\c`, a NUL (bash cuts the word there), bytes that are not UTF-8.
pub(super) fn ansi_c(quoted: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(quoted.len());
    let mut chars = quoted.chars().peekable();
    // Up to `most` digits of `radix` that follow, as a number and how many there were.
    let digits = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, radix: u32, most: usize| {
        let (mut value, mut count) = (0u32, 0usize);
        while count < most {
            let Some(digit) = chars.peek().and_then(|c| c.to_digit(radix)) else { break };
            chars.next();
            (value, count) = (value * radix + digit, count + 1);
        }
        (count > 0).then_some((value, count))
    };
    let push = |bytes: &mut Vec<u8>, c: char| bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    while let Some(c) = chars.next() {
        if c != '\\' {
            push(&mut bytes, c);
            continue;
        }
        let Some(escape) = chars.next() else {
            bytes.push(b'\\');
            break;
        };
        let simple = match escape {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(escape),
            _ => None,
        };
        match escape {
            _ if simple.is_some() => push(&mut bytes, simple?),
            'x' => match digits(&mut chars, 16, 2) {
                Some((byte, _)) => bytes.push(u8::try_from(byte).ok()?),
                None => bytes.extend_from_slice(b"\\x"),
            },
            'u' | 'U' => match digits(&mut chars, 16, if escape == 'u' { 4 } else { 8 }) {
                Some((code, _)) => push(&mut bytes, char::from_u32(code)?),
                None => {
                    bytes.push(b'\\');
                    push(&mut bytes, escape);
                }
            },
            '0'..='7' => {
                let first = escape.to_digit(8)?;
                let value = match digits(&mut chars, 8, 2) {
                    Some((rest, count)) => first * 8u32.pow(count as u32) + rest,
                    None => first,
                };
                bytes.push(u8::try_from(value).ok()?);
            }
            'c' => return None,
            other => {
                bytes.push(b'\\');
                push(&mut bytes, other);
            }
        }
    }
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}
