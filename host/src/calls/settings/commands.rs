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

mod resolve;
mod words;

use brush_parser::ast;
use brush_parser::word::{Parameter, ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource};

use resolve::{Resolved, resolve};
use words::{literal, options, quoted, unescape_backquoted};

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
            ast::ExtendedTestExpr::BinaryTest(predicate, a, b) => {
                *opaque |= self.word(&a.value, depth);
                *opaque |= self.word(&b.value, depth);
                // `-eq` and its kin evaluate both sides as arithmetic: `[[ x -eq 0 ]]`
                // evaluates x's value.
                use ast::BinaryPredicate as P;
                let arithmetic = matches!(
                    predicate,
                    P::ArithmeticEqualTo
                        | P::ArithmeticNotEqualTo
                        | P::ArithmeticLessThan
                        | P::ArithmeticLessThanOrEqualTo
                        | P::ArithmeticGreaterThan
                        | P::ArithmeticGreaterThanOrEqualTo
                );
                *opaque |= arithmetic && !(plain_arithmetic(&a.value) && plain_arithmetic(&b.value));
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
            // A coprocess of a simple command runs something else inside `$( )` and `<( )`:
            // bash (5.2) prints it back as `coproc COPROC cmd ...` and runs `COPROC`. Its
            // command is not certain, so it is not read (a compound one is read as written).
            C::Coprocess(coprocess) if matches!(*coprocess.body, ast::Command::Simple(_)) => {
                self.parts.push(Part::unreadable(&coprocess.to_string()))
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

    /// An arithmetic command's expression: it runs nothing when it is made of numbers and
    /// operators (see [`plain_arithmetic`]); otherwise what it substitutes is read and no
    /// specifier allows it.
    fn arithmetic(&mut self, expr: &str, depth: usize) {
        if !plain_arithmetic(expr) {
            self.word(expr, depth);
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
                // An array element's subscript is arithmetic (`a[x]=1` evaluates x's value).
                opaque |= matches!(&assignment.name, ast::AssignmentName::ArrayElementName(_, index) if !plain_arithmetic(index));
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
    /// quotes); whether it substitutes any or evaluates a variable's value as code (see
    /// [`evaluates_a_variable`]). A substitution it cannot reach into (inside a parameter
    /// expansion's default, say) is a part no rule can read.
    fn word(&mut self, word: &str, depth: usize) -> bool {
        if !might_run(word) {
            return false;
        }
        match brush_parser::word::parse(word, &options()) {
            Ok(pieces) => self.pieces(word, &pieces, depth),
            Err(_) => {
                self.parts.push(Part::unreadable(word));
                true
            }
        }
    }

    fn pieces(&mut self, word: &str, pieces: &[WordPieceWithSource], depth: usize) -> bool {
        let mut opaque = false;
        for piece in pieces {
            let source = word.get(piece.start_index..piece.end_index).unwrap_or(word);
            opaque |= match &piece.piece {
                WordPiece::CommandSubstitution(code) => {
                    self.program(code, depth + 1);
                    true
                }
                WordPiece::BackquotedCommandSubstitution(code) => {
                    self.program(&unescape_backquoted(code), depth + 1);
                    true
                }
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(word, inner, depth)
                }
                WordPiece::SingleQuotedText(_) | WordPiece::AnsiCQuotedText(_) | WordPiece::EscapeSequence(_) => false,
                // `$(( 6 * 7 ))` runs nothing; one that names a variable may (see
                // `evaluates_a_variable`), and what it substitutes is read.
                WordPiece::ArithmeticExpression(expr) => {
                    !plain_arithmetic(&expr.value) && {
                        self.word(&expr.value, depth);
                        true
                    }
                }
                _ if might_substitute(source) => {
                    self.parts.push(Part::unreadable(source));
                    true
                }
                WordPiece::ParameterExpansion(expr) => evaluates_a_variable(expr),
                // `$[ ]`, bash's old arithmetic expansion, reads as text to the parser.
                _ => source.contains("$["),
            };
        }
        opaque
    }
}

/// Whether `text` may substitute a command: it has `$(`, a backtick, `<(` or `>(`.
fn might_substitute(text: &str) -> bool {
    text.contains("$(") || text.contains('`') || text.contains("<(") || text.contains(">(")
}

/// Whether `text` may substitute a command or evaluate code: it may substitute, or it has
/// a parameter expansion in braces or bash's old arithmetic expansion `$[ ]`.
fn might_run(text: &str) -> bool {
    might_substitute(text) || text.contains("${") || text.contains("$[")
}

/// Whether an arithmetic expression is made of numbers and operators alone. One that names
/// a variable is not: bash evaluates a variable's value as an expression in turn, and a
/// subscript there runs what it substitutes (`x='a[$(rm y)]'; echo $((x))` runs `rm y`),
/// whatever set the variable (an assignment, `read`, `for`, `printf -v`).
fn plain_arithmetic(expr: &str) -> bool {
    let mut in_number = false;
    for c in expr.chars() {
        match c {
            // A number: a digit first, then digits, letters, `#`, `@` and `_` (`0x1f`, `2#101`).
            '0'..='9' => in_number = true,
            'a'..='z' | 'A'..='Z' | '_' | '#' | '@' if in_number => {}
            ' ' | '\t' | '\n' | '+' | '-' | '*' | '/' | '%' | '<' | '>' | '=' | '!' | '&' | '|' | '^' | '~' | '?' | ':' | '('
            | ')' | ',' => in_number = false,
            _ => return false,
        }
    }
    true
}

/// Whether expanding `${...}` evaluates a variable's value as code: through indirection
/// (`${!x}`), an array subscript or a substring's offset or length that is not a plain
/// number (both are arithmetic, see [`plain_arithmetic`]), prompt expansion (`${x@P}` runs
/// what the value substitutes), or an expansion nested in its default, pattern or
/// replacement that may.
fn evaluates_a_variable(expr: &ParameterExpr) -> bool {
    use ParameterExpr as E;
    let nested = |text: &Option<String>| text.as_deref().is_some_and(might_run);
    let (parameter, indirect, more) = match expr {
        // `${!prefix*}` and `${!a[@]}` list names and keys: nothing is evaluated.
        E::VariableNames { .. } | E::MemberKeys { .. } => return false,
        E::Parameter { parameter, indirect } | E::ParameterLength { parameter, indirect } => (parameter, *indirect, false),
        E::UseDefaultValues { parameter, indirect, default_value: text, .. }
        | E::AssignDefaultValues { parameter, indirect, default_value: text, .. }
        | E::IndicateErrorIfNullOrUnset { parameter, indirect, error_message: text, .. }
        | E::UseAlternativeValue { parameter, indirect, alternative_value: text, .. }
        | E::RemoveSmallestSuffixPattern { parameter, indirect, pattern: text }
        | E::RemoveLargestSuffixPattern { parameter, indirect, pattern: text }
        | E::RemoveSmallestPrefixPattern { parameter, indirect, pattern: text }
        | E::RemoveLargestPrefixPattern { parameter, indirect, pattern: text }
        | E::UppercaseFirstChar { parameter, indirect, pattern: text }
        | E::UppercasePattern { parameter, indirect, pattern: text }
        | E::LowercaseFirstChar { parameter, indirect, pattern: text }
        | E::LowercasePattern { parameter, indirect, pattern: text } => (parameter, *indirect, nested(text)),
        E::ReplaceSubstring { parameter, indirect, pattern, replacement, .. } => {
            (parameter, *indirect, might_run(pattern) || nested(replacement))
        }
        E::Substring { parameter, indirect, offset, length } => {
            let arithmetic = !plain_arithmetic(&offset.value) || length.as_ref().is_some_and(|l| !plain_arithmetic(&l.value));
            (parameter, *indirect, arithmetic)
        }
        E::Transform { parameter, indirect, op } => (parameter, *indirect, matches!(op, ParameterTransformOp::PromptExpand)),
    };
    let subscript = matches!(parameter, Parameter::NamedWithIndex { index, .. } if !plain_arithmetic(index));
    indirect || more || subscript
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
mod tests;
