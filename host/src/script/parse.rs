//! Reading a script's text on the host (oxc's parser, TypeScript syntax, the script being
//! the body of an async function), bounded against hostile scripts.
//!
//! The parser, the semantic pass, the TypeScript transform and the code generator all
//! descend recursively, so a script nesting a construct deeply enough (brackets, but also
//! unary operators, `await`, `new`, `**`, labels, `keyof`) would exhaust a thread's stack
//! and abort the whole process. No guess at which characters nest holds against that;
//! a bound on the *tokens* does: each level of any construct takes at least one token, so
//! the depth of every pass is at most proportional to the token count. A script is read
//! on a thread whose stack holds [`STACK_PER_TOKEN`] for each token it may have (counted
//! from above by [`token_bound`], whatever the text is), and one with more than
//! [`MAX_TOKENS`] is not read at all. The unit tests measure what each nesting construct
//! really takes per token and hold it under [`STACK_PER_TOKEN`].

use oxc::allocator::Allocator;
use oxc::ast::ast::Program;
use oxc::diagnostics::OxcDiagnostic;
use oxc::parser::{ParseOptions, Parser};
use oxc::span::SourceType;

/// Stack one token of a script may take in the passes that read it, deepest nesting
/// included: the worst construct measured in a release build (unclosed parentheses, about
/// 1.55 KiB a token) with room to spare. Builds without optimisation keep larger frames.
#[cfg(not(debug_assertions))]
pub const STACK_PER_TOKEN: usize = 2 * 1024;
#[cfg(debug_assertions)]
pub const STACK_PER_TOKEN: usize = 32 * 1024;

/// Stack of a reading thread beyond what its tokens may take.
const BASE_STACK: usize = 1024 * 1024;

/// The largest stack a reading thread gets: untouched unless the script nests that deep,
/// and then given back when the thread ends. A script nesting as deep as it may still
/// keeps the host inside the memory the attack suites allow it.
const MAX_READ_STACK: usize = 256 * 1024 * 1024;

/// Tokens a script may have to be read on the host (see [`token_bound`]): 130,560, some
/// 400 KiB of typical TypeScript.
pub const MAX_TOKENS: usize = (MAX_READ_STACK - BASE_STACK) / STACK_PER_TOKEN;

/// Why a script's text was not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unreadable {
    #[error("it has more than {MAX_TOKENS} tokens (counted as up to {tokens}), more than the host reads")]
    TooLarge { tokens: usize },
    #[error("the host could not start a thread to read it")]
    NoThread,
}

/// An upper bound on the tokens of `source`, whatever it holds: every run of ASCII letters,
/// digits, `_` and `$` counts one, every other character but ASCII white space counts one
/// (inside strings and comments too). No token of JavaScript or TypeScript is split across
/// fewer counted units than that, so the real count is never higher.
pub(crate) fn token_bound(source: &str) -> usize {
    let mut tokens = 0;
    let mut in_word = false;
    for c in source.chars() {
        let word = c.is_ascii_alphanumeric() || c == '_' || c == '$';
        if !(word && in_word || c.is_ascii_whitespace()) {
            tokens += 1;
        }
        in_word = word;
    }
    tokens
}

/// Parses `source` and hands the program (or the first syntax error) to `read`, with the
/// allocator it lives in, on a thread whose stack holds any nesting `source` can have.
pub(crate) fn with_program<R: Send>(
    source: &str,
    read: impl for<'a> FnOnce(&'a Allocator, Result<Program<'a>, OxcDiagnostic>) -> R + Send,
) -> Result<R, Unreadable> {
    let tokens = token_bound(source);
    if tokens > MAX_TOKENS {
        return Err(Unreadable::TooLarge { tokens });
    }
    let stack = BASE_STACK + tokens * STACK_PER_TOKEN;
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new().name("exec-host-parse".into()).stack_size(stack);
        let reading = thread.spawn_scoped(scope, move || parse_here(source, read)).map_err(|_| Unreadable::NoThread)?;
        // A panic in the parser (none is known) is this script's failure, not the host's.
        reading.join().map_err(|_| Unreadable::NoThread)
    })
}

/// The reading itself, on the calling thread.
pub(crate) fn parse_here<R>(
    source: &str,
    read: impl for<'a> FnOnce(&'a Allocator, Result<Program<'a>, OxcDiagnostic>) -> R,
) -> R {
    let allocator = Allocator::default();
    // `await` and `return` at the top level: the script is a function's body.
    let options = ParseOptions { allow_return_outside_function: true, ..ParseOptions::default() };
    let mut parsed = Parser::new(&allocator, source, SourceType::ts()).with_options(options).parse();
    match parsed.diagnostics.drain(..).next() {
        Some(error) => read(&allocator, Err(error)),
        None => read(&allocator, Ok(parsed.program)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_bound_is_never_below_the_real_count() {
        assert_eq!(token_bound("let x = await f(a_b, $c);"), 11);
        assert_eq!(token_bound("await\u{a0}await\u{a0}x"), 5, "a non-ASCII space separates words and counts");
        assert_eq!(token_bound("  \n\t"), 0);
        assert_eq!(token_bound("'a b'"), 4);
        assert_eq!(token_bound("x=>y"), 4);
    }

    #[test]
    fn a_script_past_the_bound_is_refused_not_a_crash() {
        let deep = "-".repeat(MAX_TOKENS + 1);
        assert_eq!(with_program(&deep, |_, _| ()), Err(Unreadable::TooLarge { tokens: MAX_TOKENS + 1 }));
        // A flat script of many tokens is read whatever its brackets and operators.
        let line = "f(a, [b], {c: d} as T, (e = 1) => e ? g : h);\n";
        let flat = line.repeat(MAX_TOKENS / token_bound(line));
        assert_eq!(with_program(&flat, |_, program| program.is_ok()), Ok(true));
    }

    /// Scripts nesting one construct `levels` deep, by name.
    fn nestings(levels: usize) -> Vec<(&'static str, String)> {
        let n = levels;
        let wrap = |open: &str, inner: &str, close: &str| format!("{}{inner}{}", open.repeat(n), close.repeat(n));
        vec![
            ("parentheses", wrap("(", "1", ")")),
            ("brackets", wrap("[", "1", "]")),
            ("objects", format!("x = {}1{}", "{a:".repeat(n), "}".repeat(n))),
            ("blocks", wrap("{", "", "}")),
            ("unary minus", format!("x = {}1", "- ".repeat(n))),
            ("not", format!("x = {}1", "!".repeat(n))),
            ("await", format!("{}x", "await ".repeat(n))),
            ("void", format!("{}x", "void ".repeat(n))),
            ("typeof", format!("{}x", "typeof ".repeat(n))),
            ("new", format!("{}X", "new ".repeat(n))),
            ("exponent", format!("x = {}1", "1**".repeat(n))),
            ("assignment", format!("{}1", "a=".repeat(n))),
            ("arrows", format!("{}1", "a=>".repeat(n))),
            ("conditional", format!("{}1", "a?1:".repeat(n))),
            ("labels", format!("{}x;", "a:".repeat(n))),
            ("if", format!("{}x;", "if(a)".repeat(n))),
            ("else if", format!("if(a)x;{}", "else if(a)x;".repeat(n))),
            ("functions", wrap("function f(){", "", "}")),
            ("template", wrap("`${", "1", "}`")),
            ("calls", format!("{}1{}", "f(".repeat(n), ")".repeat(n))),
            ("keyof", format!("let x: {}T;", "keyof ".repeat(n))),
            ("readonly", format!("let x: {}T[]{};", "readonly (".repeat(n), ")[]".repeat(n))),
            // Not scripts, but the parser descends before it finds out, one token a level.
            ("readonly runs", format!("let x: {}T[];", "readonly ".repeat(n))),
            ("unclosed parentheses", format!("x = {}1", "(".repeat(n))),
            ("unclosed brackets", format!("x = {}1", "[".repeat(n))),
            ("unclosed objects", format!("x = {}1", "{a:".repeat(n))),
            ("unclosed calls", format!("x = {}1", "f(".repeat(n))),
            ("unclosed generics", format!("let x: {}T", "A<".repeat(n))),
            ("unclosed templates", format!("x = {}1", "`${".repeat(n))),
            ("unclosed blocks", "{".repeat(n)),
            ("generics", format!("let x: {}T{};", "A<".repeat(n), ">".repeat(n))),
            ("type assertions", format!("x = {}a;", "<T>".repeat(n))),
            ("conditional types", format!("type X = {}T;", "A extends B ? C : ".repeat(n))),
            ("arrays of types", format!("let x: {}T{};", "(".repeat(n), "[])".repeat(n))),
            ("as", format!("x = {}a{};", "(".repeat(n), " as T)".repeat(n))),
        ]
    }

    /// The stack `work` touched, in bytes: run on a thread of its own with a large stack,
    /// whose pages are resident only where they were used.
    fn stack_touched(work: impl FnOnce() + Send) -> usize {
        std::thread::scope(|scope| {
            let measure = move || {
                work();
                let marker = 0u8;
                let at = std::ptr::from_ref(&marker) as usize;
                let maps = std::fs::read_to_string("/proc/self/smaps").unwrap();
                let mut inside = false;
                for line in maps.lines() {
                    if let Some((range, _)) = line.split_once(' ')
                        && let Some((start, end)) = range.split_once('-')
                        && let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16))
                    {
                        inside = (start..end).contains(&at);
                    } else if inside && let Some(kib) = line.strip_prefix("Rss:") {
                        return kib.trim().trim_end_matches(" kB").trim().parse::<usize>().unwrap() * 1024;
                    }
                }
                panic!("the thread's stack is not in /proc/self/smaps");
            };
            std::thread::Builder::new().stack_size(1 << 30).spawn_scoped(scope, measure).unwrap().join().unwrap()
        })
    }

    /// Every nesting construct, read as the host reads a TypeScript script (parsed, its
    /// types erased, its calls searched for a callee), takes less than [`STACK_PER_TOKEN`]
    /// for each token it has.
    #[test]
    fn no_construct_takes_more_stack_per_token_than_the_bound() {
        let levels = 5_000;
        let idle = stack_touched(|| ());
        let mut worst = (0.0, "");
        for (name, script) in nestings(levels) {
            let mut erased = false;
            let used = stack_touched(|| {
                erased = crate::script::typescript::erase_here(&script).is_ok();
                std::hint::black_box(crate::script::callee::callee_here(&script, script.len() as u32 / 2));
            });
            let parses = !(name.starts_with("unclosed") || name == "readonly runs");
            assert_eq!(erased, parses, "{name}: the script should {}parse", if parses { "" } else { "not " });
            let per_token = used.saturating_sub(idle) as f64 / token_bound(&script) as f64;
            if per_token > worst.0 {
                worst = (per_token, name);
            }
            assert!(per_token < STACK_PER_TOKEN as f64, "{name}: {per_token:.0} bytes of stack a token");
        }
        eprintln!("the deepest construct per token: {} ({:.0} bytes a token)", worst.1, worst.0);
    }
}
