//! `read_file {path, offset?, limit?}`: lines of a text file.

use std::io::{BufRead, BufReader};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::FileTool;
use super::workspace::{Access, Workspace, display_path, looks_binary, read_line_bounded};
use crate::sources::tools::Effect;
use crate::support::vocabulary::ToolError;

/// Lines returned when the caller does not say.
pub const DEFAULT_LINES: usize = 2_000;
/// Lines returned at most, whatever the caller asks.
pub const MAX_LINES: usize = 10_000;
/// Characters kept of one line; the rest is replaced by a marker.
pub const MAX_LINE_CHARS: usize = 2_000;
/// Characters returned at most in `content`; reading stops at the line that passes it.
pub const MAX_CONTENT_CHARS: usize = 256 * 1024;
/// Bytes inspected for NUL to tell a binary file.
const BINARY_PROBE_BYTES: usize = 8 * 1024;

pub struct ReadFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// File to read, relative to the workspace.
    pub path: String,
    /// First line to return, counting from 1. Defaults to 1.
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many lines to return. Defaults to 2000; at most 10000.
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub path: String,
    /// The lines read, joined with "\n". Lines longer than 2000 characters are cut.
    pub content: String,
    /// Number of the first line in `content` (from 1).
    pub start_line: usize,
    /// Number of the last line in `content`; `start_line - 1` when nothing was read.
    pub end_line: usize,
    /// Lines in the whole file.
    pub total_lines: usize,
    /// True when the file goes on after `end_line`.
    pub truncated: bool,
}

impl FileTool for ReadFile {
    const NAME: &'static str = "read_file";
    const EFFECT: Effect = Effect::ReadOnly;
    const DESCRIPTION: &'static str = "Read lines of a text file in the workspace. Returns the text of the requested lines, where they start and end, and whether the file goes on; binary files are refused.";
    type Params = Params;
    type Output = Output;

    fn run(workspace: &Workspace, params: Params, cancelled: &dyn Fn() -> bool) -> Result<Output, ToolError> {
        let relative = workspace.relative(Some(&params.path))?;
        let shown = display_path(&relative);
        let offset = params.offset.unwrap_or(1);
        if offset == 0 {
            return Err(ToolError::params("read_file: offset counts lines from 1"));
        }
        let limit = params.limit.unwrap_or(DEFAULT_LINES).min(MAX_LINES);
        let file = workspace.open_file(&relative, Access::Read)?;
        let metadata = file.metadata().map_err(|e| workspace.io_error(&shown, e))?;
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        let probe = reader.fill_buf().map_err(|e| workspace.io_error(&shown, e))?;
        if looks_binary(&probe[..probe.len().min(BINARY_PROBE_BYTES)]) {
            return Err(ToolError::execution(format!(
                "`{shown}` is a binary file ({} bytes); read_file reads text only",
                metadata.len()
            )));
        }

        let mut content = String::new();
        let mut line = Vec::new();
        let mut number = 0usize;
        let mut end_line = offset - 1;
        let mut full = false;
        // Enough bytes for MAX_LINE_CHARS characters of any width, and the line's end.
        let keep = MAX_LINE_CHARS * 4 + 2;
        loop {
            let length = read_line_bounded(&mut reader, &mut line, keep, cancelled).map_err(|e| match e.kind() {
                std::io::ErrorKind::Interrupted => ToolError::execution("read_file was cancelled"),
                _ => workspace.io_error(&shown, e),
            })?;
            let Some(length) = length else { break };
            number += 1;
            if number.is_multiple_of(4096) && cancelled() {
                return Err(ToolError::execution("read_file was cancelled"));
            }
            if full || number < offset || number >= offset + limit {
                continue;
            }
            let text = String::from_utf8_lossy(trim_newline(&line));
            let text = cut_line(&text, length.text_chars);
            if content.len() + text.len() > MAX_CONTENT_CHARS && number > offset {
                full = true;
                continue;
            }
            if number > offset {
                content.push('\n');
            }
            content.push_str(&text);
            end_line = number;
        }
        if number > 0 && offset > number {
            return Err(ToolError::params(format!("read_file: `{shown}` has {number} lines; offset {offset} is past its end")));
        }
        Ok(Output { path: shown, content, start_line: offset, end_line, total_lines: number, truncated: end_line < number })
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `text` cut to [`MAX_LINE_CHARS`] characters, saying how long the whole line was
/// (`line_chars`, without its line end).
fn cut_line(text: &str, line_chars: u64) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        None => text.into(),
        Some((at, _)) => format!("{}… [line cut: {line_chars} characters in all]", &text[..at]).into(),
    }
}
