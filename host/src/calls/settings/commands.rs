//! What a `Bash` rule's specifier means, as in Claude Code: `Bash(npm run test:*)` is a
//! prefix (the words `npm run test`, then anything), `Bash(git status)` the exact command,
//! and `*` elsewhere stands for any text (`Bash(git * main)`).
//!
//! A command is read as bash reads it, by a shell parser (`brush-parser`): comments, every
//! quoting form, here-documents, function definitions, groups, subshells, `coproc`, and
//! what runs inside `$( )`, backticks and `<( )`. Each simple command it runs is a part,
//! checked on its own, so `Bash(git status:*)` does not allow `git status && rm -rf x`.
//!
//! A part is read twice: as written (its words with their quotes and escapes taken off),
//! which an allow rule must match; and as bash resolves what runs (wrappers such as
//! `command`, `env`, `exec` or `nice` taken off, a path cut to its base name), which a deny
//! or ask rule also names, so `\rm`, `'rm'`, `/bin/rm` and `command rm` are all `rm` to
//! `Bash(rm:*)`. What cannot be read with certainty is never allowed by a specifier (it
//! asks), and a command that cannot be read at all is named by every deny and ask rule.
//! No rule sees what a program does with its arguments (`find -delete`, a script file, an
//! interpreter's code): the confinement, not the rules, is the boundary.

use brush_parser::ast;
use brush_parser::word::{WordPiece, WordPieceWithSource};

/// Parts of one command checked at most; a longer chain is one part too many, which no
/// specifier allows.
pub const MAX_PARTS: usize = 64;

/// Bytes of a command the parser reads; a longer one is not read (it asks).
pub const MAX_COMMAND_BYTES: usize = 16 * 1024;

/// Levels of nesting (substitutions, `sh -c`, groups, as the walk counts them) read;
/// deeper is not read.
const MAX_DEPTH: usize = 16;

/// Levels of nesting the parser is given, counted on its tokens (conservatively: a word
/// such as `if` opens a level wherever it stands); a deeper command is not read. The parser
/// reads nesting by recursion, a few KiB of stack a level, on a stack of
/// `PARSER_STACK_BYTES`.
const MAX_NESTING: usize = 128;

/// How much backtracking the parser may be led into, for all of one command: its work grows
/// about twofold with each `(` and each `case` of a program it cannot read, so their count
/// (a `case` counted twice) is bounded per program and in all.
const MAX_BRANCHING: usize = 16;
const MAX_BRANCHING_IN_ALL: usize = 48;

/// The stack the reader runs on.
const PARSER_STACK_BYTES: usize = 64 << 20;

/// The name of the reader's thread, as a panic message names it.
pub const READER_THREAD: &str = "exec-host-bash-rules";

/// One part of a command, as a rule sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// Its words as written, quotes and escapes taken off, joined by spaces: what an allow
    /// rule must match.
    pub text: String,
    /// What runs, a command with its arguments: each wrapper (`command`, `env`, `nice`, ...)
    /// with what follows it, then what that runs, each command's path cut to its base name;
    /// deny and ask rules match these too.
    pub runs: Vec<String>,
    /// Whether something in it is run and substituted (`$( )`, backticks, `<( )`) or it
    /// defines a function: no specifier allows it.
    pub opaque: bool,
    /// Whether what it runs cannot be known (it could not be read, its name expands, it
    /// runs a file's code): every deny and ask rule about commands names it, and it is
    /// opaque too.
    pub unreadable: bool,
}

impl Part {
    /// A construct around a substitution (`for x in $(ls)`) or a function's definition:
    /// allowed by no specifier.
    fn substituted(text: String) -> Part {
        Part { runs: Vec::new(), text, opaque: true, unreadable: false }
    }

    /// What could not be read (its start, to show): every deny and ask rule names it.
    fn unreadable(text: &str) -> Part {
        let text: String = text.chars().take(200).collect();
        Part { runs: Vec::new(), text, opaque: true, unreadable: true }
    }
}

/// The parts of `command`, each to be checked on its own.
pub fn parts(command: &str) -> Vec<Part> {
    // The parser and the walk recurse as deep as the command nests: on a stack made for
    // the deepest command they are given. A panic of the parser's (brush-parser 0.4's
    // tokenizer unwraps at the end of some inputs, `${x:-<<EOF` say) ends only its thread,
    // and the command is unreadable.
    let read = std::thread::scope(|scope| {
        let read = move || {
            let mut reader = Reader { parts: Vec::new(), branching_left: MAX_BRANCHING_IN_ALL };
            reader.program(command, 0);
            reader.parts
        };
        let reader = std::thread::Builder::new().name(READER_THREAD.into()).stack_size(PARSER_STACK_BYTES);
        reader.spawn_scoped(scope, read).ok()?.join().ok()
    });
    let mut parts = read.unwrap_or_else(|| vec![Part::unreadable(command)]);
    if parts.len() > MAX_PARTS {
        parts.truncate(MAX_PARTS);
        parts.push(Part::unreadable(""));
    }
    parts
}

/// Collects the parts of a command as it walks what bash would run.
struct Reader {
    parts: Vec<Part>,
    /// What is left of `MAX_BRANCHING_IN_ALL`.
    branching_left: usize,
}

/// How bash reads a command given with `bash -c`: no extended globs, no POSIX mode.
fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions { enable_extended_globbing: false, ..brush_parser::ParserOptions::default() }
}

impl Reader {
    fn full(&self) -> bool {
        self.parts.len() > MAX_PARTS
    }

    /// A whole program: `text` as `bash -c` would read it.
    fn program(&mut self, text: &str, depth: usize) {
        if self.full() {
            return;
        }
        match self.parse(text, depth) {
            Some(program) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            None => self.parts.push(Part::unreadable(text)),
        }
    }

    /// `text` parsed, when it is a program bash would read within the bounds.
    fn parse(&mut self, text: &str, depth: usize) -> Option<ast::Program> {
        if text.len() > MAX_COMMAND_BYTES || depth > MAX_DEPTH {
            return None;
        }
        let tokens = brush_parser::tokenize_str_with_options(text, &options().tokenizer_options()).ok()?;
        let (mut nesting, mut deepest, mut branching) = (0usize, 0usize, 0usize);
        for token in &tokens {
            match token {
                brush_parser::Token::Operator(operator, _) if operator == "(" => {
                    branching += 1;
                    nesting += 1;
                }
                brush_parser::Token::Operator(operator, _) if operator == ")" => nesting = nesting.saturating_sub(1),
                brush_parser::Token::Word(word, _) => match word.as_str() {
                    "case" => {
                        branching += 2;
                        nesting += 1;
                    }
                    "{" | "if" | "while" | "until" | "for" | "select" | "[[" | "function" | "coproc" | "!" => nesting += 1,
                    "}" | "fi" | "done" | "esac" | "]]" => nesting = nesting.saturating_sub(1),
                    _ => {}
                },
                brush_parser::Token::Operator(..) => {}
            }
            deepest = deepest.max(nesting);
        }
        if deepest > MAX_NESTING || branching > MAX_BRANCHING.min(self.branching_left) {
            return None;
        }
        self.branching_left -= branching;
        brush_parser::parse_tokens(&tokens, &options()).ok()
    }

    fn list(&mut self, list: &ast::CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                let (ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline)) = next;
                self.pipeline(pipeline, depth);
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        for command in &pipeline.seq {
            self.command(command, depth);
        }
    }

    fn command(&mut self, command: &ast::Command, depth: usize) {
        if self.full() {
            return;
        }
        let depth = depth + 1;
        if depth > MAX_DEPTH {
            self.parts.push(Part::unreadable(&command.to_string()));
            return;
        }
        match command {
            ast::Command::Simple(simple) => self.simple(simple, depth),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, depth);
                if let Some(redirects) = redirects {
                    self.redirects(&redirects.0, depth);
                }
            }
            ast::Command::Function(function) => {
                // Its name may shadow any command: what calls it runs the body, which is read
                // here for deny rules, and the definition is allowed by no specifier.
                let name = literal(&function.fname.value).unwrap_or_else(|| function.fname.value.clone());
                self.parts.push(Part::substituted(format!("{name} ()")));
                let ast::FunctionBody(body, redirects) = &function.body;
                self.compound(body, depth);
                if let Some(redirects) = redirects {
                    self.redirects(&redirects.0, depth);
                }
            }
            ast::Command::ExtendedTest(test, redirects) => {
                let mut opaque = false;
                self.test(&test.expr, depth, &mut opaque);
                if opaque {
                    self.parts.push(Part::substituted(format!("[[ {} ]]", test.expr)));
                }
                if let Some(redirects) = redirects {
                    self.redirects(&redirects.0, depth);
                }
            }
        }
    }

    fn test(&mut self, expr: &ast::ExtendedTestExpr, depth: usize, opaque: &mut bool) {
        match expr {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.test(a, depth, opaque);
                self.test(b, depth, opaque);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => self.test(a, depth, opaque),
            ast::ExtendedTestExpr::UnaryTest(_, word) => *opaque |= self.word(&word.value, depth),
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                *opaque |= self.word(&a.value, depth);
                *opaque |= self.word(&b.value, depth);
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, depth: usize) {
        use ast::CompoundCommand as C;
        match compound {
            C::BraceGroup(group) => self.list(&group.list, depth),
            C::Subshell(subshell) => self.list(&subshell.list, depth),
            C::ForClause(clause) => {
                let mut opaque = false;
                for value in clause.values.iter().flatten() {
                    opaque |= self.word(&value.value, depth);
                }
                if opaque {
                    self.parts.push(Part::substituted(format!("for {} in ...", clause.variable_name)));
                }
                self.list(&clause.body.list, depth);
            }
            C::CaseClause(clause) => {
                let mut opaque = self.word(&clause.value.value, depth);
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        opaque |= self.word(&pattern.value, depth);
                    }
                    if let Some(list) = &item.cmd {
                        self.list(list, depth);
                    }
                }
                if opaque {
                    self.parts.push(Part::substituted(format!("case {} in ...", clause.value.value)));
                }
            }
            C::IfClause(clause) => {
                self.list(&clause.condition, depth);
                self.list(&clause.then, depth);
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition, depth);
                    }
                    self.list(&other.body, depth);
                }
            }
            C::WhileClause(ast::WhileOrUntilClauseCommand(condition, body, _))
            | C::UntilClause(ast::WhileOrUntilClauseCommand(condition, body, _)) => {
                self.list(condition, depth);
                self.list(&body.list, depth);
            }
            C::Coprocess(coprocess) => self.command(&coprocess.body, depth),
            C::Arithmetic(arithmetic) => self.arithmetic(&arithmetic.expr.value, depth),
            C::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater].into_iter().flatten() {
                    self.arithmetic(&expr.value, depth);
                }
                self.list(&clause.body.list, depth);
            }
        }
    }

    /// An arithmetic expression: it runs nothing unless it substitutes a command, which is
    /// then read as a word's would be.
    fn arithmetic(&mut self, expr: &str, depth: usize) {
        if self.word(expr, depth) {
            self.parts.push(Part::substituted(format!("(( {expr} ))")));
        }
    }

    fn redirects(&mut self, redirects: &[ast::IoRedirect], depth: usize) -> bool {
        let mut opaque = false;
        for redirect in redirects {
            opaque |= self.redirect(redirect, depth);
        }
        opaque
    }

    /// Reads what a redirection runs; whether it substitutes anything.
    fn redirect(&mut self, redirect: &ast::IoRedirect, depth: usize) -> bool {
        match redirect {
            ast::IoRedirect::File(_, _, target) => match target {
                ast::IoFileRedirectTarget::Filename(word) | ast::IoFileRedirectTarget::Duplicate(word) => {
                    self.word(&word.value, depth)
                }
                ast::IoFileRedirectTarget::Fd(_) => false,
                ast::IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                    self.list(&subshell.list, depth);
                    true
                }
            },
            // An unquoted here-document's body expands as a double-quoted word does.
            ast::IoRedirect::HereDocument(_, document) => {
                document.requires_expansion && self.word(&format!("\"{}\"", document.doc.value), depth)
            }
            ast::IoRedirect::HereString(_, word) | ast::IoRedirect::OutputAndError(word, _) => self.word(&word.value, depth),
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, depth: usize) {
        let mut opaque = false;
        let mut words: Vec<&str> = Vec::new();
        for item in simple.prefix.iter().flat_map(|prefix| prefix.0.iter()) {
            opaque |= self.item(item, &mut words, depth);
        }
        if let Some(name) = &simple.word_or_name {
            opaque |= self.word(&name.value, depth);
            words.push(&name.value);
        }
        for item in simple.suffix.iter().flat_map(|suffix| suffix.0.iter()) {
            opaque |= self.item(item, &mut words, depth);
        }
        if words.is_empty() {
            // Assignments and redirections alone run nothing of their own.
            if opaque {
                self.parts.push(Part::substituted(simple.to_string()));
            }
            return;
        }
        let read: Vec<Option<String>> = words.iter().map(|word| literal(word)).collect();
        let shown: Vec<String> =
            words.iter().zip(&read).map(|(raw, read)| read.as_deref().map_or_else(|| raw.to_string(), quoted)).collect();
        let (runs, resolved) = resolve(&shown, &read);
        let text = shown.join(" ");
        match resolved {
            Resolved::Runs => {}
            // `sh -c CODE`, `eval CODE`: CODE runs, read as a command of its own.
            Resolved::Shell(code) => self.program(&code, depth + 1),
            // What it runs cannot be known: it may be any command.
            Resolved::Unknown => {
                self.parts.push(Part { runs, text, opaque: true, unreadable: true });
                return;
            }
        }
        self.parts.push(Part { text, runs, opaque, unreadable: false });
    }

    /// Reads one item around a command's name, adding its words to `words`; whether it
    /// substitutes anything.
    fn item<'a>(&mut self, item: &'a ast::CommandPrefixOrSuffixItem, words: &mut Vec<&'a str>, depth: usize) -> bool {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect, depth),
            ast::CommandPrefixOrSuffixItem::Word(word) => {
                words.push(&word.value);
                self.word(&word.value, depth)
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                let mut opaque = self.word(&word.value, depth);
                // An array's items may substitute too (the word holds them as well, but
                // read apart they are certain).
                if let ast::AssignmentValue::Array(items) = &assignment.value {
                    for (key, value) in items {
                        opaque |= key.as_ref().is_some_and(|key| self.word(&key.value, depth));
                        opaque |= self.word(&value.value, depth);
                    }
                }
                // `FOO=1 cmd` runs `cmd`; a declaration's arguments (`export a=1`) are words
                // of the command.
                if !words.is_empty() {
                    words.push(&word.value);
                }
                opaque
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                self.list(&subshell.list, depth);
                true
            }
        }
    }

    /// Reads the commands a word substitutes (`$( )`, backticks, and those inside double
    /// quotes); whether it substitutes any. A substitution it cannot reach into (inside a
    /// parameter expansion's default, say) is a part no rule can read.
    fn word(&mut self, word: &str, depth: usize) -> bool {
        if !might_substitute(word) {
            return false;
        }
        match brush_parser::word::parse(word, &options()) {
            Ok(pieces) => {
                self.pieces(word, &pieces, depth);
                true
            }
            Err(_) => {
                self.parts.push(Part::unreadable(word));
                true
            }
        }
    }

    fn pieces(&mut self, word: &str, pieces: &[WordPieceWithSource], depth: usize) {
        for piece in pieces {
            match &piece.piece {
                WordPiece::CommandSubstitution(code) => self.program(code, depth + 1),
                WordPiece::BackquotedCommandSubstitution(code) => self.program(&unescape_backquoted(code), depth + 1),
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(word, inner, depth)
                }
                _ => {
                    let source = word.get(piece.start_index..piece.end_index).unwrap_or(word);
                    if might_substitute(source)
                        && !matches!(
                            piece.piece,
                            WordPiece::SingleQuotedText(_) | WordPiece::AnsiCQuotedText(_) | WordPiece::EscapeSequence(_)
                        )
                    {
                        self.parts.push(Part::unreadable(source));
                    }
                }
            }
        }
    }
}

/// Whether `text` may substitute a command: it has `$(`, a backtick, `<(` or `>(`.
fn might_substitute(text: &str) -> bool {
    text.contains("$(") || text.contains('`') || text.contains("<(") || text.contains(">(")
}

/// A backquoted substitution's code as bash runs it: a backslash before `$`, a backtick or
/// a backslash is taken off.
fn unescape_backquoted(code: &str) -> String {
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
fn quoted(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| word.replace('\0', ""), |quoted| quoted.into_owned())
}

/// The word as bash passes it to the command, when nothing in it expands: its quotes and
/// escapes taken off. `None` when it holds a parameter, an arithmetic expansion, a
/// substitution or a tilde.
fn literal(word: &str) -> Option<String> {
    let pieces = brush_parser::word::parse(word, &options()).ok()?;
    let mut text = String::new();
    literal_pieces(&pieces, &mut text)?;
    Some(text)
}

fn literal_pieces(pieces: &[WordPieceWithSource], text: &mut String) -> Option<()> {
    for piece in pieces {
        match &piece.piece {
            WordPiece::Text(part) | WordPiece::SingleQuotedText(part) => text.push_str(part),
            WordPiece::AnsiCQuotedText(part) => text.push_str(&ansi_c(part)?),
            WordPiece::EscapeSequence(escaped) => text.push_str(escaped.strip_prefix('\\').unwrap_or(escaped)),
            WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                literal_pieces(inner, text)?
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
fn ansi_c(quoted: &str) -> Option<String> {
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

/// How a simple command's reading ends, once its words are read.
enum Resolved {
    /// With the command that runs.
    Runs,
    /// With code run as a command of its own: a shell's `-c`, `eval`'s arguments.
    Shell(String),
    /// It cannot be known: a command name that expands, code this reading cannot see
    /// (`source`, `trap`), a wrapper whose options are not understood.
    Unknown,
}

/// Commands that run the command their arguments name, with the options each takes before
/// it (`true`: the option takes a value).
const WRAPPERS: &[(&str, &[(&str, bool)])] = &[
    ("command", &[("-p", false), ("-v", false), ("-V", false)]),
    ("builtin", &[]),
    ("exec", &[("-c", false), ("-l", false), ("-a", true)]),
    ("nice", &[("-n", true)]),
    ("nohup", &[]),
    ("time", &[("-p", false)]),
    ("setsid", &[("-f", false), ("-w", false)]),
    ("stdbuf", &[("-i", true), ("-o", true), ("-e", true)]),
    ("xargs", &[("-0", false), ("-r", false), ("-t", false), ("-n", true), ("-I", true), ("-d", true), ("-P", true)]),
    ("sudo", &[]),
    ("doas", &[]),
];

/// Commands that run code this reading cannot see: a file's (`source`), or later (`trap`).
const CODE_RUNNERS: &[&str] = &["source", ".", "trap", "fc", "bind", "enable", "alias", "complete", "compgen"];

/// Shells whose `-c` code is read as a command.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

/// Resolves what runs from a command's words, `shown` (quoted where needed) and `read` (as
/// bash passes them, when they do not expand): wrappers taken off (`env` with its
/// assignments, `timeout` with its duration), a path cut to its base name. A wrapper's own
/// words must not expand.
fn resolve(shown: &[String], read: &[Option<String>]) -> (Vec<String>, Resolved) {
    let mut stages = Vec::new();
    let mut at = 0;
    for _ in 0..MAX_DEPTH {
        // The command's name, or a wrapper's, that expands cannot be known; nor one with a
        // `[` (bash reads `name[...]` as one word up to the matching `]`, spaces and all).
        let Some(Some(first)) = read.get(at) else { return (stages, Resolved::Unknown) };
        if first.contains('[') && first != "[" {
            return (stages, Resolved::Unknown);
        }
        let name = base_name(first);
        let words = &read[at..];
        stages.push(std::iter::once(quoted(name)).chain(shown[at + 1..].iter().cloned()).collect::<Vec<_>>().join(" "));
        if CODE_RUNNERS.contains(&name) {
            return (stages, Resolved::Unknown);
        }
        if name == "eval" {
            // `eval` runs its arguments, joined by spaces, as code.
            let code: Option<Vec<&str>> = words[1..].iter().map(Option::as_deref).collect();
            return match code {
                Some(code) => (stages, Resolved::Shell(code.join(" "))),
                None => (stages, Resolved::Unknown),
            };
        }
        if SHELLS.contains(&name) {
            let resolved = match words.get(1..) {
                Some([Some(flag), Some(code), ..]) if flag == "-c" => Resolved::Shell(code.clone()),
                // Code that expands, or options this reading does not follow.
                Some([Some(flag), ..]) if flag.starts_with('-') => Resolved::Unknown,
                Some([None, ..]) => Resolved::Unknown,
                // A shell reading a script file, or standard input: nothing to read here.
                _ => Resolved::Runs,
            };
            return (stages, resolved);
        }
        let skipped = match name {
            "env" => skip_env(words),
            "timeout" => skip_options(
                words,
                &[("-s", true), ("-k", true), ("--foreground", false), ("--preserve-status", false), ("-v", false)],
            )
            .map(|at| at + 1),
            _ => match WRAPPERS.iter().find(|(wrapper, _)| *wrapper == name) {
                Some((_, options)) => skip_options(words, options),
                None => return (stages, Resolved::Runs),
            },
        };
        match skipped {
            Some(skip) if skip < words.len() => at += skip,
            // `command -v x` or `nice` alone: the wrapper runs nothing but itself.
            Some(_) => return (stages, Resolved::Runs),
            None => return (stages, Resolved::Unknown),
        }
    }
    (stages, Resolved::Unknown)
}

/// Where a wrapper's command starts: after its name and the options it takes (`--` ends
/// them); `None` for an option not known, or one that expands.
fn skip_options(words: &[Option<String>], options: &[(&str, bool)]) -> Option<usize> {
    let mut at = 1;
    while let Some(word) = words.get(at) {
        let word = word.as_deref()?;
        if word == "--" {
            return Some(at + 1);
        }
        if !word.starts_with('-') || word == "-" {
            return Some(at);
        }
        let (takes_value, attached) = match options.iter().find(|(option, _)| word.starts_with(option)) {
            Some((option, takes_value)) => (*takes_value, word.len() > option.len()),
            // `nice -5`: a number is nice's adjustment.
            None if word[1..].chars().all(|c| c.is_ascii_digit()) => (false, false),
            None => return None,
        };
        // Flags run together (`-cl`): each must be one that takes no value.
        if !takes_value
            && attached
            && !word[1..].chars().all(|flag| options.iter().any(|(option, takes)| !takes && option[1..] == *flag.to_string()))
        {
            return None;
        }
        at += if takes_value && !attached { 2 } else { 1 };
    }
    Some(at)
}

/// Where `env`'s command starts: after its options (`-i`, `-u NAME`) and assignments.
fn skip_env(words: &[Option<String>]) -> Option<usize> {
    let mut at = skip_options(words, &[("-i", false), ("-u", true), ("-0", false), ("--ignore-environment", false)])?;
    while let Some(word) = words.get(at) {
        match word.as_deref()? {
            word if word.contains('=') && !word.starts_with('=') => at += 1,
            _ => break,
        }
    }
    Some(at)
}

/// What bash looks up for `word`: the last part of a path.
fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
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

    /// Whether an allow rule with this pattern lets `part` run: it can be read, and its
    /// words as written match.
    pub fn allows(&self, part: &Part) -> bool {
        !part.opaque && self.matches(&part.text)
    }

    /// Whether a deny or ask rule with this pattern names `part`: as written, as it runs,
    /// or because it cannot be read.
    pub fn names(&self, part: &Part) -> bool {
        part.unreadable || self.matches(&part.text) || part.runs.iter().any(|runs| self.matches(runs))
    }

    fn matches(&self, text: &str) -> bool {
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

    /// Each part: (what it runs in the end, or its text where it runs nothing of its own;
    /// opaque).
    fn runs(command: &str) -> Vec<(String, bool)> {
        parts(command).into_iter().map(|part| (part.runs.last().cloned().unwrap_or(part.text), part.opaque)).collect()
    }

    fn plain(texts: &[&str]) -> Vec<(String, bool)> {
        texts.iter().map(|text| (text.to_string(), false)).collect()
    }

    /// Whether an allow rule `Bash(specifier)` lets all of `command` run.
    fn allowed(specifier: &str, command: &str) -> bool {
        let pattern = CommandPattern::new(specifier);
        let parts = parts(command);
        !parts.is_empty() && parts.iter().all(|part| pattern.allows(part))
    }

    /// Whether a deny rule `Bash(specifier)` names any part of `command`.
    fn denied(specifier: &str, command: &str) -> bool {
        let pattern = CommandPattern::new(specifier);
        parts(command).iter().any(|part| pattern.names(part))
    }

    #[test]
    fn commands_split_at_every_operator_and_substitutions_are_parts_of_their_own() {
        assert_eq!(runs("git status && rm -rf x"), plain(&["git status", "rm -rf x"]));
        assert_eq!(runs("a || b; c | d & e\nf"), plain(&["a", "b", "c", "d", "e", "f"]));
        assert_eq!(runs("echo 'a && b' \"c; d\""), plain(&["echo 'a && b' 'c; d'"]));
        assert_eq!(runs("make 2>&1 | tee log"), plain(&["make", "tee log"]));
        assert_eq!(runs("echo $(rm -rf x)"), [("rm -rf x".into(), false), ("echo $(rm -rf x)".into(), true)]);
        assert_eq!(runs("echo \"`id`\""), [("id".into(), false), ("echo \"`id`\"".into(), true)]);
        assert_eq!(runs("(cd a && make)"), plain(&["cd a", "make"]));
        assert_eq!(runs("diff <(ls a) <(ls b)"), [("ls a".into(), false), ("ls b".into(), false), ("diff".into(), true)]);
        assert_eq!(runs("cat <<EOF\n$(rm x)\nEOF\n"), [("rm x".into(), false), ("cat".into(), true)]);
        assert_eq!(runs("cat <<'EOF'\n$(rm x)\nEOF\n"), plain(&["cat"]));
        assert_eq!(
            runs("for f in $(ls); do rm $f; done"),
            [("ls".into(), false), ("for f in ...".into(), true), ("rm $f".into(), false)]
        );
        assert_eq!(runs("if test -f a; then rm a; else touch b; fi"), plain(&["test -f a", "rm a", "touch b"]));
        assert_eq!(runs("coproc rm x"), plain(&["rm x"]));
        assert!(parts("echo 'unclosed").iter().all(|part| part.unreadable));
        assert_eq!(parts(&"a;".repeat(100)).len(), MAX_PARTS + 1);
    }

    #[test]
    fn a_command_is_read_as_bash_reads_it_so_no_prefix_rule_lets_a_second_command_through() {
        // Each of these runs `touch pwned` in bash; none may pass `Bash(echo:*)` or the
        // README's `Bash(git status:*)`.
        for attack in [
            "echo #'\ntouch pwned\n#'",
            "echo #\"\ntouch pwned\n#\"",
            "echo $'\\'' ; touch pwned ; echo $'\\''",
            "echo () { touch pwned; }; echo",
            "echo x; eval 'touch pwned'",
            "echo x | xargs touch pwned",
            "echo `touch pwned`",
            "echo \"$(touch pwned)\"",
            "echo ${x:-$(touch pwned)}",
            "echo x > >(touch pwned)",
            "echo x && bash -c 'touch pwned'",
            "echo x; source ./script",
            "echo x; . ./script",
            "echo x; exec touch pwned",
            "echo x; command touch pwned",
            "echo x; trap 'touch pwned' EXIT",
            "echo x\ncoproc touch pwned",
        ] {
            assert!(!allowed("echo:*", attack), "{attack:?}: {:?}", parts(attack));
        }
        assert!(!allowed("git status:*", "git status #'\ntouch pwned\n#'"));
        assert!(!allowed("git * main", "git push origin main; touch pwned; git log main"));
        // And what is plainly one command still is.
        assert!(allowed("echo:*", "echo 'a;b' \"c && d\" # a comment; touch nothing"));
        assert!(allowed("git status:*", "git status --short"));
        assert!(allowed("git * main", "git push origin main"));
        assert!(allowed("npm run test:*", "npm run test -- --watch"));
        assert!(!allowed("npm run test:*", "npm run testing"));
    }

    #[test]
    fn a_deny_rule_names_the_command_however_it_is_spelled_or_wrapped() {
        for spelling in [
            "rm x",
            "\\rm x",
            "'rm' x",
            "\"rm\" x",
            "r\"m\" x",
            "$'rm' x",
            "/bin/rm x",
            "/usr/bin/../bin/rm x",
            "command rm x",
            "command -p rm x",
            "builtin rm x",
            "exec rm x",
            "env rm x",
            "env -i FOO=1 rm x",
            "FOO=1 rm x",
            "nice -n 5 rm x",
            "nohup rm x",
            "timeout 5 rm x",
            "timeout -s KILL 5 rm x",
            "time rm x",
            "xargs rm",
            "sudo rm x",
            "sh -c 'rm x'",
            "bash -c \"cd a && rm x\"",
            "echo $(rm x)",
            "true && { rm x; }",
            "f() { rm x; }; f",
            "eval 'rm x'",
            "eval rm x",
            // What runs cannot be known: every deny rule names it.
            "$CMD x",
            "source ./cleanup.sh",
        ] {
            assert!(denied("rm:*", spelling), "{spelling:?}: {:?}", parts(spelling));
        }
        // `$'...'` as bash decodes it: every escape that spells the name.
        for spelling in ["$'\\x72m' x", "$'\\x72\\x6d' x", "$'\\162m' x", "$'\\u0072m' x", "$'\\U00000072\\155' x", "r$'\\x6d' x"]
        {
            assert!(denied("rm:*", spelling), "{spelling:?}: {:?}", parts(spelling));
        }
        assert!(!denied("rm:*", "echo rm x"));
        assert!(!denied("rm:*", "rmdir x"));
        // What cannot be read is named by every deny rule.
        assert!(denied("rm:*", "echo 'unclosed"));
        // A name that expands cannot be known: it asks, never allowed.
        assert!(!allowed("rm:*", "$CMD x"));
        assert!(!allowed("echo:*", "\"$CMD\" x"));
    }

    #[test]
    fn an_allow_rule_matches_only_the_command_as_written() {
        // A path is not its base name to an allow rule: `./rm` is a program the workspace holds.
        assert!(!allowed("rm:*", "./rm x"));
        assert!(!allowed("rm:*", "command rm x"));
        assert!(allowed("rm:*", "\\rm x"));
        assert!(!allowed("ls:*", "ls -la | grep x"));
        assert!(allowed("ls:*", "ls -la"));
    }

    #[test]
    fn nesting_past_the_bound_and_huge_commands_are_not_read_and_never_crash() {
        for deep in
            ["(".repeat(5000), "$(".repeat(2000), "{ ".repeat(3000), "echo \"$(".repeat(500), "if true; then ".repeat(2000)]
        {
            let parts = parts(&deep);
            assert!(parts.iter().any(|part| part.unreadable), "{}", parts.len());
        }
        let huge = "echo x; ".repeat(MAX_COMMAND_BYTES / 4);
        assert!(parts(&huge).iter().all(|part| part.unreadable));
    }

    #[test]
    fn ansi_c_quoted_text_reads_as_bash_decodes_it() {
        for (quoted, decoded) in [
            ("rm", Some("rm")),
            ("\\x72m", Some("rm")),
            ("\\x7", Some("\u{7}")),
            ("\\xg", Some("\\xg")),
            ("\\101\\0101", Some("A\u{8}1")),
            ("\\7", Some("\u{7}")),
            ("a\\tb\\n", Some("a\tb\n")),
            ("\\'\\\"\\\\\\?", Some("'\"\\?")),
            ("\\u00e9\\U0001F600", Some("é😀")),
            ("\\q\\", Some("\\q\\")),
            ("\\u", Some("\\u")),
            ("\\cA", None),
            ("a\\0b", None),
            ("\\777", None),
            ("\\xff", None),
            ("\\ud800", None),
        ] {
            assert_eq!(ansi_c(quoted).as_deref(), decoded, "{quoted:?}");
        }
    }

    #[test]
    fn a_command_the_parser_panics_on_is_unreadable_and_the_host_goes_on() {
        // Found by the `bash_rules` fuzz target: the parser's tokenizer unwraps past the end
        // of a here-document opened inside `${...}`.
        let parts = parts("bash -c ${x:-<<EOF\n}$true \nEOF\n");
        assert!(parts.iter().any(|part| part.unreadable), "{parts:?}");
        assert!(denied("shutdown", "bash -c ${x:-<<EOF\n}$true \nEOF\n"), "every deny rule names what cannot be read");
    }

    #[test]
    fn prefix_exact_and_wildcard_specifiers_match_as_claude_code_s() {
        let part = |text: &str| Part { text: text.into(), runs: vec![text.into()], opaque: false, unreadable: false };
        let prefix = CommandPattern::new("npm run test:*");
        assert!(prefix.allows(&part("npm run test")));
        assert!(prefix.allows(&part("npm run test --watch")));
        assert!(!prefix.allows(&part("npm run testing")));
        assert!(!prefix.allows(&Part { opaque: true, ..part("npm run test") }));
        let exact = CommandPattern::new("git status");
        assert!(exact.allows(&part("git status")) && !exact.allows(&part("git status -s")));
        let wildcard = CommandPattern::new("git * main");
        assert!(wildcard.allows(&part("git push origin main")) && !wildcard.allows(&part("git push origin dev")));
    }
}
