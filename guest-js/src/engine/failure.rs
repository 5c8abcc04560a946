//! How a script's failure crosses the boundary: as data, never as text to parse back. An
//! uncaught error is its `Name: message` and the script's own frames; a syntax error is its
//! message and where the parser stopped. The engine gives positions only inside its stack
//! text, so this module is the one place that reads that text.

use rquickjs::{Array, Ctx, Function, Object, Value};

use crate::encode;
use crate::{Frame, Position, ScriptError, SyntaxError, Uncaught};

use super::{SCRIPT_NAME_TEXT, SCRIPT_PREFIX};

/// Frames of one error kept: a script can write any stack text on an error it throws, and
/// every frame kept crosses the boundary.
pub(super) const MAX_FRAMES: usize = 64;

/// The script's error as data, using the prelude's reading of the error when it still works.
pub(super) fn thrown<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, error: rquickjs::Error) -> ScriptError {
    match error {
        rquickjs::Error::Exception => thrown_value(ctx, hooks, ctx.catch()),
        other => ScriptError::Thrown(bare(format!("InternalError: {other}"))),
    }
}

/// A thrown value as the script's error.
pub(super) fn thrown_value<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, reason: Value<'js>) -> ScriptError {
    ScriptError::Thrown(uncaught(ctx, hooks, reason))
}

/// What the script returned could not be made JSON: the error `JSON.stringify` threw.
pub(super) fn unserializable<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, error: rquickjs::Error) -> ScriptError {
    match thrown(ctx, hooks, error) {
        ScriptError::Thrown(uncaught) => ScriptError::Unserializable(uncaught),
        other => other,
    }
}

/// The engine itself could not set a run up.
pub(super) fn internal(ctx: &Ctx<'_>, error: rquickjs::Error) -> ScriptError {
    let why = match error {
        rquickjs::Error::Exception => encode::message_of(&ctx.catch()).unwrap_or_default(),
        other => other.to_string(),
    };
    ScriptError::Thrown(bare(format!("InternalError: the sandbox could not start the script: {why}")))
}

/// An error with no frames.
pub(super) fn bare(error: String) -> Uncaught {
    Uncaught { error, frames: Vec::new() }
}

/// `reason` read by the prelude's `errorParts` (`[text, stack]`); when a script has broken
/// even that, its message alone.
fn uncaught<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, reason: Value<'js>) -> Uncaught {
    let parts = hooks.get::<_, Function>("errorParts").and_then(|parts| parts.call::<_, Array>((reason.clone(),)));
    let read = parts.and_then(|parts| Ok((parts.get::<String>(0)?, parts.get::<String>(1)?)));
    match read {
        Ok((error, stack)) => Uncaught { error, frames: frames_of(&stack) },
        Err(_) => {
            ctx.catch();
            bare(
                encode::message_of(&reason)
                    .unwrap_or_else(|| "the script failed with an error that could not be described".into()),
            )
        }
    }
}

/// The script's own frames in an engine stack text (`    at NAME (script.js:L:C)` lines),
/// columns on the first line counted from the script's start rather than the wrapper's.
pub(super) fn frames_of(stack: &str) -> Vec<Frame> {
    stack.lines().filter_map(frame_of).take(MAX_FRAMES).collect()
}

fn frame_of(text: &str) -> Option<Frame> {
    let inside = text.strip_prefix("    at ")?.strip_suffix(')')?;
    let (function, place) = inside.rsplit_once(&format!(" ({SCRIPT_NAME_TEXT}:"))?;
    let (line, column) = place.split_once(':')?;
    Some(Frame { function: function.to_string(), position: in_script(line.parse().ok()?, column.parse().ok()?) })
}

/// A frame as the console writes it, as the host renders an uncaught error's frames.
pub(super) fn frame_text(frame: &Frame) -> String {
    let Position { line, column } = frame.position;
    format!("    at {} ({SCRIPT_NAME_TEXT}:{line}:{column})", frame.function)
}

/// An engine position of the wrapped script as a position of the script's own text: the
/// wrapper's prefix shares the first line and adds no line break.
pub(super) fn in_script(line: u32, column: u32) -> Position {
    let column = if line == 1 { column.saturating_sub(SCRIPT_PREFIX.len() as u32).max(1) } else { column };
    Position { line, column }
}

/// The syntax error the engine threw while compiling `script` (the script's own text,
/// without the wrapper). A position past the script's last line is the wrapper's closing
/// line: the script left something open.
pub(super) fn syntax_error(error: Value<'_>, script: &str) -> SyntaxError {
    let Some(object) = error.as_object() else {
        return SyntaxError { message: "SyntaxError: the script does not parse".into(), position: None, unclosed: false };
    };
    let name: String = object.get("name").unwrap_or_else(|_| "SyntaxError".into());
    let message: String = object.get("message").unwrap_or_default();
    let message = format!("{name}: {message}");
    let stack: String = object.get("stack").unwrap_or_default();
    let position = stack.split(&format!("{SCRIPT_NAME_TEXT}:")).nth(1).and_then(|rest| {
        let mut numbers = rest.split(|c: char| !c.is_ascii_digit()).filter(|part| !part.is_empty());
        Some(in_script(numbers.next()?.parse().ok()?, numbers.next()?.parse().ok()?))
    });
    let lines = script.lines().count().max(1) as u32;
    match position {
        Some(position) if position.line > lines => {
            let last = script.lines().last().map_or(0, |text| text.chars().count()) as u32;
            SyntaxError { message, position: Some(Position { line: lines, column: last + 1 }), unclosed: true }
        }
        position => SyntaxError { message, position, unclosed: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_scripts_own_frames_are_read_and_the_first_line_is_the_scripts() {
        let stack =
            "    at f (script.js:3:7)\n    at map (native)\n    at g (prelude.js:9:1)\n    at <anonymous> (script.js:1:30)\n";
        let frames = frames_of(stack);
        assert_eq!(frames.len(), 2);
        assert_eq!((frames[0].function.as_str(), frames[0].position.line, frames[0].position.column), ("f", 3, 7));
        let first = SCRIPT_PREFIX.len() as u32;
        assert_eq!((frames[1].position.line, frames[1].position.column), (1, 30 - first));
        assert_eq!(frame_text(&frames[0]), "    at f (script.js:3:7)");
    }

    #[test]
    fn a_name_that_looks_like_a_place_is_still_a_name() {
        let frames = frames_of("    at a (script.js:9:9) b (script.js:2:4)");
        assert_eq!(frames[0].function, "a (script.js:9:9) b");
        assert_eq!(frames[0].position.line, 2);
    }

    #[test]
    fn a_written_stack_keeps_at_most_the_bound() {
        let stack = "    at f (script.js:2:1)\n".repeat(MAX_FRAMES * 3);
        assert_eq!(frames_of(&stack).len(), MAX_FRAMES);
    }
}
