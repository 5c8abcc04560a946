//! TypeScript scripts: the types are erased on the host, before the script reaches the
//! guest, with oxc's parser and TypeScript transform (no type checking). Annotations,
//! interfaces and type aliases, `as` and `satisfies`, generics, `!`, enums, parameter
//! properties and `declare` all become plain JavaScript.
//!
//! A script is run as JavaScript first, so a JavaScript script costs nothing here: only
//! when the engine finds it does not parse is it read as TypeScript (see
//! `Session::exec`). Positions stay the original text's: a TypeScript syntax error is
//! reported at the line and column of the text the model wrote, and the positions of a
//! failure in the erased script (a syntax error's, an uncaught error's frames) are mapped
//! back through the source map the erasure makes.

use std::path::Path;

use oxc::codegen::{Codegen, CodegenOptions};
use oxc::diagnostics::OxcDiagnostic;
use oxc::semantic::SemanticBuilder;
use oxc::transformer::{TransformOptions, Transformer};

use crate::sandbox::runtime::{Failure, Position, SyntaxError};
use crate::script::parse;

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
/// a construct the transform refuses) at its position in `source`; the outer one a script
/// the host does not read (see [`parse::with_program`]).
pub(crate) fn erase(source: &str) -> Result<Result<Erased, SyntaxError>, parse::Unreadable> {
    parse::with_program(source, |allocator, program| erase_parsed(source, allocator, program))
}

/// [`erase`] on the calling thread, for the tests that measure its stack.
#[cfg(test)]
pub(crate) fn erase_here(source: &str) -> Result<Erased, SyntaxError> {
    parse::parse_here(source, |allocator, program| erase_parsed(source, allocator, program))
}

fn erase_parsed<'a>(
    source: &str,
    allocator: &'a oxc::allocator::Allocator,
    program: Result<oxc::ast::ast::Program<'a>, OxcDiagnostic>,
) -> Result<Erased, SyntaxError> {
    let mut program = program.map_err(|error| describe(source, &error))?;
    // The enum transform reads the members' values from the scoping; without them a
    // string member gets a reverse mapping it must not have.
    let scoping = SemanticBuilder::new().with_enum_eval(true).build(&program).semantic.into_scoping();
    // Only `import type` (and type-only specifiers) go: a value import stays, even unused,
    // for the engine to refuse (a script imports nothing).
    let mut options = TransformOptions::default();
    options.typescript.only_remove_type_imports = true;
    let transformed = Transformer::new(allocator, Path::new("script.ts"), &options).build_with_scoping(scoping, &mut program);
    if let Some(error) = transformed.diagnostics.first() {
        return Err(describe(source, error));
    }
    // Erasing type-only imports and exports leaves an `export {}` of the transform's own (no
    // place in the source) to keep a module a module; a script is a function's body, where
    // it means nothing and the engine refuses it.
    program.body.retain(|statement| {
        !matches!(statement, oxc::ast::ast::Statement::ExportNamedDeclaration(export)
            if export.span.is_unspanned() && export.specifiers.is_empty())
    });
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
    /// The original position of `position` in the erased code: the nearest mapped position
    /// at or before it on its line.
    fn original(&self, position: Position) -> Option<Position> {
        let wanted = (position.line.checked_sub(1)?, position.column.saturating_sub(1));
        let at = self.positions.partition_point(|(generated, _)| *generated <= wanted);
        let ((generated_line, _), (source_line, source_column)) = *self.positions[..at].last()?;
        (generated_line == wanted.0).then_some(Position { line: source_line + 1, column: source_column + 1 })
    }

    /// Every position `failure` names, given as the original's; a position that maps nowhere
    /// is left as it was.
    pub(crate) fn remap(&self, failure: &mut Failure) {
        let positions: Vec<&mut Position> = match failure {
            Failure::Syntax(error) => error.position.iter_mut().collect(),
            Failure::Thrown(error) | Failure::Unserializable(error) => {
                error.frames.iter_mut().map(|frame| &mut frame.position).collect()
            }
            _ => Vec::new(),
        };
        for position in positions {
            if let Some(original) = self.original(*position) {
                *position = original;
            }
        }
    }
}

/// The syntax error `error` at the position it names in `source`, counted as the engine
/// counts it: lines and columns from 1, columns in characters.
fn describe(source: &str, error: &OxcDiagnostic) -> SyntaxError {
    let message = format!("SyntaxError: {}", error.message);
    let offset = error.labels.iter().map(|label| label.offset() as usize).next();
    let Some(offset) = offset.filter(|offset| *offset <= source.len() && source.is_char_boundary(*offset)) else {
        return SyntaxError::new(message, None);
    };
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |text| text.chars().count()) + 1;
    let position = u32::try_from(line).ok().zip(u32::try_from(column).ok()).map(|(line, column)| Position { line, column });
    SyntaxError::new(message, position)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::runtime::{Frame, Uncaught};

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
    fn type_only_imports_and_exports_are_erased_without_a_trace() {
        let source =
            "import type { Ticket } from './tickets';\nexport type Id = string;\nconst t: Ticket = { id: 'a' as Id };\nreturn t";
        let erased = erase(source).unwrap().unwrap();
        assert!(!erased.code.contains("import") && !erased.code.contains("export"), "{}", erased.code);
        assert!(erased.code.contains("return t"), "{}", erased.code);
        // A value import stays, used or not, for the engine's refusal at its own line.
        for source in [
            "const a: number = 1;\nimport { x } from './x';\nreturn a + x",
            "import fs from 'fs';\nconst a: number = 1;\nreturn a",
        ] {
            let erased = erase(source).unwrap().unwrap();
            assert!(erased.code.contains("import"), "{}", erased.code);
        }
    }

    #[test]
    fn syntax_errors_are_at_the_original_line_and_column() {
        let error = erase("const a: number = 1;\nconst b: string = 'x';\nconst c = ;\n").unwrap().unwrap_err();
        assert_eq!(error.to_string(), "SyntaxError: Unexpected token (line 3, column 11)");
        let error = erase("const é: string = 'x'; const d = ;").unwrap().unwrap_err();
        assert_eq!(error.position, Some(Position { line: 1, column: 34 }), "{error}");
    }

    #[test]
    fn positions_in_the_erased_code_map_back() {
        let source = "type T = { a: number };\nconst v: T = { a: 1 };\n\n   null.x;";
        let erased = erase(source).unwrap().unwrap();
        let line = erased.code.lines().position(|line| line.contains("null.x")).unwrap() as u32 + 1;
        let column = erased.code.lines().nth(line as usize - 1).unwrap().find("null").unwrap() as u32 + 1;
        let at = Position { line, column };
        let mut thrown = Failure::Thrown(Uncaught {
            error: "TypeError: oops".into(),
            frames: vec![Frame::new("<anonymous>", at), Frame::new("f", Position { line: 99, column: 1 })],
        });
        erased.remap(&mut thrown);
        assert_eq!(
            thrown.message(),
            "The script failed with an uncaught error:\nTypeError: oops\n    at <anonymous> (script.js:4:4)\n    at f (script.js:99:1)"
        );
        let mut syntax = Failure::Syntax(SyntaxError::new("SyntaxError: oops", Some(at)));
        erased.remap(&mut syntax);
        assert_eq!(syntax, Failure::Syntax(SyntaxError::new("SyntaxError: oops", Some(Position { line: 4, column: 4 }))));
    }
}
