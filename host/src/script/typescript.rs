//! TypeScript scripts: the types are erased on the host, before the script reaches the
//! guest, with oxc's parser and TypeScript transform (no type checking). Annotations,
//! interfaces and type aliases, `as` and `satisfies`, generics, `!`, enums, parameter
//! properties and `declare` all become plain JavaScript.
//!
//! A script is run as JavaScript first, so a JavaScript script costs nothing here: only
//! when the engine finds it does not parse is it read as TypeScript (see
//! `Session::exec`). Positions stay the original text's: a TypeScript syntax error is
//! reported at the line and column of the text the model wrote, and the positions of a
//! failure in the erased script (`script.js:4:9` in a stack, `line 4, column 9`) are
//! mapped back through the source map the erasure makes.

use std::path::Path;

use oxc::codegen::{Codegen, CodegenOptions};
use oxc::diagnostics::OxcDiagnostic;
use oxc::semantic::SemanticBuilder;
use oxc::transformer::{TransformOptions, Transformer};
use regex::{Captures, Regex};

use crate::script::parse;

/// The name positions in the guest's messages are given under.
const SCRIPT_NAME: &str = "script.js";

/// A script with its types erased, and the way back to the original positions.
#[derive(Debug)]
pub(crate) struct Erased {
    /// Plain JavaScript, the body of the same async function.
    pub code: String,
    /// `(line, column)` in the erased code to `(line, column)` in the original, all from
    /// 0, in the order of the erased code.
    positions: Vec<((u32, u32), (u32, u32))>,
}

/// Reads `source` as TypeScript and erases its types. The inner `Err` is a syntax error (or
/// a construct the transform refuses) as `SyntaxError: <what> (line L, column C)` of
/// `source`; the outer one a script the host does not read (see [`parse::with_program`]).
pub(crate) fn erase(source: &str) -> Result<Result<Erased, String>, parse::Unreadable> {
    parse::with_program(source, |allocator, program| erase_parsed(source, allocator, program))
}

/// [`erase`] on the calling thread, for the tests that measure its stack.
#[cfg(test)]
pub(crate) fn erase_here(source: &str) -> Result<Erased, String> {
    parse::parse_here(source, |allocator, program| erase_parsed(source, allocator, program))
}

fn erase_parsed<'a>(
    source: &str,
    allocator: &'a oxc::allocator::Allocator,
    program: Result<oxc::ast::ast::Program<'a>, OxcDiagnostic>,
) -> Result<Erased, String> {
    let mut program = program.map_err(|error| describe(source, &error))?;
    // The enum transform reads the members' values from the scoping; without them a
    // string member gets a reverse mapping it must not have.
    let scoping = SemanticBuilder::new().with_enum_eval(true).build(&program).semantic.into_scoping();
    let transformed = Transformer::new(allocator, Path::new("script.ts"), &TransformOptions::default())
        .build_with_scoping(scoping, &mut program);
    if let Some(error) = transformed.diagnostics.first() {
        return Err(describe(source, error));
    }
    let options = CodegenOptions { source_map_path: Some("script.ts".into()), ..CodegenOptions::default() };
    let generated = Codegen::new().with_options(options).build(&program);
    let positions = generated
        .map
        .map(|map| {
            map.get_tokens()
                .map(|token| ((token.get_dst_line(), token.get_dst_col()), (token.get_src_line(), token.get_src_col())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Erased { code: generated.code, positions })
}

impl Erased {
    /// The original position of `(line, column)` of the erased code, both from 1: the
    /// nearest mapped position at or before it on its line.
    fn original(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        let wanted = (line.checked_sub(1)?, column.saturating_sub(1));
        let at = self.positions.partition_point(|(generated, _)| *generated <= wanted);
        let ((generated_line, _), (source_line, source_column)) = *self.positions[..at].last()?;
        (generated_line == wanted.0).then_some((source_line + 1, source_column + 1))
    }

    /// `text` (a failure's message) with every position in the erased code given as the
    /// original's; a position that maps nowhere is left as it was.
    pub(crate) fn remap(&self, text: &str) -> String {
        static FRAME: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
            Regex::new(r"script\.js:(\d+):(\d+)|\(line (\d+), column (\d+)\)").expect("the pattern is valid")
        });
        FRAME
            .replace_all(text, |found: &Captures| {
                let number = |i: usize| found.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
                let frame = found.get(1).is_some();
                let (line, column) = if frame { (number(1), number(2)) } else { (number(3), number(4)) };
                match line.zip(column).and_then(|(line, column)| self.original(line, column)) {
                    Some((line, column)) if frame => format!("{SCRIPT_NAME}:{line}:{column}"),
                    Some((line, column)) => format!("(line {line}, column {column})"),
                    None => found[0].to_string(),
                }
            })
            .into_owned()
    }
}

/// `SyntaxError: <message> (line L, column C)`, at the position `error` names in `source`,
/// counted as the engine counts it: lines and columns from 1, columns in characters.
fn describe(source: &str, error: &OxcDiagnostic) -> String {
    let message = &error.message;
    let offset = error.labels.iter().map(|label| label.offset() as usize).next();
    let Some(offset) = offset.filter(|offset| *offset <= source.len() && source.is_char_boundary(*offset)) else {
        return format!("SyntaxError: {message}");
    };
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |text| text.chars().count()) + 1;
    format!("SyntaxError: {message} (line {line}, column {column})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_erased_and_what_runs_is_kept() {
        let erased = erase(
            "interface P { x: number }\nenum Color { Red, Green = 5 }\nconst add = <T extends number>(a: T, b: number): number => a + b;\n\
             const p = { x: 1 } satisfies P;\nreturn [Color.Green, add(1, 2) as number, p!.x];",
        )
        .unwrap()
        .unwrap();
        assert!(!erased.code.contains("interface") && !erased.code.contains(": number"), "{}", erased.code);
        assert!(erased.code.contains("return [") && erased.code.contains("Color[\"Green\"] = 5"), "{}", erased.code);
    }

    #[test]
    fn syntax_errors_are_at_the_original_line_and_column() {
        let error = erase("const a: number = 1;\nconst b: string = 'x';\nconst c = ;\n").unwrap().unwrap_err();
        assert_eq!(error, "SyntaxError: Unexpected token (line 3, column 11)");
        let error = erase("const é: string = 'x'; const d = ;").unwrap().unwrap_err();
        assert!(error.ends_with("(line 1, column 34)"), "{error}");
    }

    #[test]
    fn positions_in_the_erased_code_map_back() {
        let source = "type T = { a: number };\nconst v: T = { a: 1 };\n\n   null.x;";
        let erased = erase(source).unwrap().unwrap();
        let line = erased.code.lines().position(|line| line.contains("null.x")).unwrap() as u32 + 1;
        let column = erased.code.lines().nth(line as usize - 1).unwrap().find("null").unwrap() as u32 + 1;
        assert_eq!(erased.remap(&format!("at <anonymous> (script.js:{line}:{column})")), "at <anonymous> (script.js:4:4)");
        assert_eq!(erased.remap(&format!("oops (line {line}, column {column})")), "oops (line 4, column 4)");
        assert_eq!(erased.remap("script.js:99:1 stays"), "script.js:99:1 stays");
    }
}
