//! Reading a script's text on the host (oxc's parser, TypeScript syntax, the script being
//! the body of an async function), bounded against hostile scripts. The parser descends
//! recursively, so deeply nested brackets would exhaust a thread's stack and abort the
//! process: a script is parsed only when its nesting cannot outgrow [`PARSE_STACK_BYTES`],
//! and always on a thread of that stack size.

use oxc::allocator::Allocator;
use oxc::ast::ast::Program;
use oxc::diagnostics::OxcDiagnostic;
use oxc::parser::{ParseOptions, Parser};
use oxc::span::SourceType;

/// Characters that can open one more level of the parser's recursion (a bracket, a type
/// argument, an arrow or assignment, a conditional) a script may hold to be parsed: a
/// bound on its nesting whatever the characters are inside. Measured, one level takes at
/// most about 2.5 KiB of stack in a release build.
pub const MAX_NESTING_CHARACTERS: usize = 16_384;

/// Stack of the thread a script is parsed on.
const PARSE_STACK_BYTES: usize = 64 * 1024 * 1024;

/// Parses `source` and hands the program (or the first syntax error) to `read`, with the
/// allocator it lives in, on a thread with a stack large enough for any script within
/// [`MAX_NESTING_CHARACTERS`]. `None` when the script holds more, or the thread could not be
/// started.
pub(crate) fn with_program<R: Send>(
    source: &str,
    read: impl for<'a> FnOnce(&'a Allocator, Result<Program<'a>, OxcDiagnostic>) -> R + Send,
) -> Option<R> {
    let nesting = source.bytes().filter(|b| matches!(b, b'(' | b'[' | b'{' | b'<' | b'=' | b'?')).count();
    if nesting > MAX_NESTING_CHARACTERS {
        return None;
    }
    std::thread::scope(|scope| {
        let parse = move || {
            let allocator = Allocator::default();
            // `await` and `return` at the top level: the script is a function's body.
            let options = ParseOptions { allow_return_outside_function: true, ..ParseOptions::default() };
            let mut parsed = Parser::new(&allocator, source, SourceType::ts()).with_options(options).parse();
            match parsed.diagnostics.drain(..).next() {
                Some(error) => read(&allocator, Err(error)),
                None => read(&allocator, Ok(parsed.program)),
            }
        };
        let thread = std::thread::Builder::new().name("exec-host-parse".into()).stack_size(PARSE_STACK_BYTES);
        thread.spawn_scoped(scope, parse).ok()?.join().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let deep = format!("{}1{}", "(".repeat(200_000), ")".repeat(200_000));
        assert!(with_program(&deep, |_, _| ()).is_none());
        let bound = format!("{}1{}", "[".repeat(MAX_NESTING_CHARACTERS), "]".repeat(MAX_NESTING_CHARACTERS));
        assert_eq!(with_program(&bound, |_, program| program.is_ok()), Some(true), "at the bound it parses");
        let types = format!("let x: {}number{};", "Array<".repeat(8_000), ">".repeat(8_000));
        assert_eq!(with_program(&types, |_, program| program.is_ok()), Some(true));
    }
}
