//! Naming what a script tried to call. The engine's `TypeError: not a function` does not
//! say what was called; the host has the script's text and the position of the failed call,
//! so it reads the call there and says it, as V8 does: `tools.raed_file is not a function`.

use oxc::ast::ast::{CallExpression, NewExpression};
use oxc::ast_visit::{Visit, walk};
use oxc::span::{GetSpan, Span};

use crate::sandbox::runtime::{Position, Uncaught};
use crate::script::parse;

/// The engine's message for a call of something that is not a function.
const NOT_A_FUNCTION: &str = "TypeError: not a function";

/// Characters of a callee's text quoted; a longer one is not named.
const MAX_CALLEE_CHARS: usize = 120;

/// The text of what `failure` failed to call, when it is the engine's bare `not a function`
/// and the call is found in `source` at the failure's innermost frame (the fuzz target's
/// entry; the session asks [`callee_at`] once it knows the error is that one).
#[cfg(any(test, fuzzing))]
pub(crate) fn name_callee(source: &str, failure: &Uncaught) -> Option<String> {
    if !is_bare_not_a_function(failure) {
        return None;
    }
    callee_at(source, failure.frames.first()?.position)
}

/// Whether `failure` is the engine's bare `not a function`, which names nothing.
pub(crate) fn is_bare_not_a_function(failure: &Uncaught) -> bool {
    failure.error == NOT_A_FUNCTION
}

/// The text of the callee of the innermost call at `position` of `source`.
pub(crate) fn callee_at(source: &str, position: Position) -> Option<String> {
    let Position { line, column } = position;
    let offset = byte_offset(source, line as usize, column as usize)?;
    let callee = parse::with_program(source, |_, program| innermost_call(program.ok()?, offset)).ok()??;
    let text = source.get(callee.start as usize..callee.end as usize)?;
    let text = if text.contains('\n') { text.split_whitespace().collect::<String>() } else { text.to_string() };
    (text.chars().count() <= MAX_CALLEE_CHARS).then_some(text)
}

/// The innermost call in `program` around byte `offset`. The engine points into the call;
/// on the script's first line it may point one character before it.
fn innermost_call(program: oxc::ast::ast::Program<'_>, offset: u32) -> Option<Span> {
    [offset, offset + 1].into_iter().find_map(|offset| {
        let mut finder = InnermostCall { offset, callee: None };
        finder.visit_program(&program);
        finder.callee
    })
}

/// [`innermost_call`] of `source` on the calling thread, for the tests that measure its
/// stack.
#[cfg(test)]
pub(crate) fn callee_here(source: &str, offset: u32) -> Option<Span> {
    parse::parse_here(source, |_, program| innermost_call(program.ok()?, offset))
}

/// The byte offset of `line` and `column` (both from 1, the column in characters).
fn byte_offset(source: &str, line: usize, column: usize) -> Option<u32> {
    let start: usize = source.split_inclusive('\n').take(line.checked_sub(1)?).map(str::len).sum();
    let text = source.get(start..)?.split('\n').next()?;
    let within = text.char_indices().nth(column.checked_sub(1)?).map_or(text.len(), |(at, _)| at);
    u32::try_from(start + within).ok()
}

/// Finds the callee of the innermost call (or `new`) whose text holds `offset`.
struct InnermostCall {
    offset: u32,
    callee: Option<Span>,
}

impl InnermostCall {
    fn holds(&self, span: Span) -> bool {
        span.start <= self.offset && self.offset < span.end
    }
}

impl<'a> Visit<'a> for InnermostCall {
    fn visit_call_expression(&mut self, call: &CallExpression<'a>) {
        if self.holds(call.span) {
            self.callee = Some(call.callee.span());
        }
        walk::walk_call_expression(self, call);
    }

    fn visit_new_expression(&mut self, call: &NewExpression<'a>) {
        if self.holds(call.span) {
            self.callee = Some(call.callee.span());
        }
        walk::walk_new_expression(self, call);
    }
}

#[cfg(test)]
mod tests {
    use super::name_callee;
    use crate::sandbox::runtime::{Frame, Position, Uncaught};

    fn failure(error: &str, line: u32, column: u32) -> Uncaught {
        Uncaught { error: error.into(), frames: vec![Frame::new("<anonymous>", Position { line, column })] }
    }

    fn named(source: &str, line: u32, column: u32) -> Option<String> {
        name_callee(source, &failure("TypeError: not a function", line, column))
    }

    #[test]
    fn the_call_at_the_position_is_named() {
        assert_eq!(named("await tools.raed_file({ path: 'x' })", 1, 12).as_deref(), Some("tools.raed_file"));
        assert_eq!(named("let f;\nf(1)", 2, 1).as_deref(), Some("f"));
        assert_eq!(named("let f; f(1)", 1, 7).as_deref(), Some("f"), "one character early on the first line");
        assert_eq!(named("const r = [1].mapp((x) => g(x))", 1, 20).as_deref(), Some("[1].mapp"));
        assert_eq!(named("await tools\n  .nope({})", 2, 4).as_deref(), Some("tools.nope"));
        assert_eq!(named("new tools.nope()", 1, 5).as_deref(), Some("tools.nope"));
        assert_eq!(named("const x: number = 1; x()", 1, 22).as_deref(), Some("x"), "TypeScript is read too");
    }

    #[test]
    fn anything_else_is_left_alone() {
        assert_eq!(named("let f; f(1)", 5, 1), None, "no such line");
        assert_eq!(named("const = ;", 1, 1), None, "no parse");
        assert!(name_callee("let f; f()", &failure("TypeError: not a function of mine", 1, 8)).is_none());
        assert!(name_callee("let f; f()", &failure("TypeError: x is not iterable", 1, 8)).is_none());
        assert!(name_callee("let f; f()", &Uncaught::new("TypeError: not a function")).is_none());
    }
}
