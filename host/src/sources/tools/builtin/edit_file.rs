//! `edit_file {path, old_string, new_string, replace_all?}`: exact string replacement.

use std::io::{Read, Seek, SeekFrom, Write};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::FileTool;
use super::workspace::{Access, Workspace, display_path, looks_binary};
use crate::sources::tools::Effect;
use crate::support::vocabulary::ToolError;

/// Largest file edit_file reads.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

pub struct EditFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// File to edit, relative to the workspace.
    pub path: String,
    /// Exact text to find. Without `replace_all` it must occur exactly once.
    pub old_string: String,
    /// Text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub path: String,
    /// How many occurrences were replaced.
    pub replacements: usize,
}

impl FileTool for EditFile {
    const NAME: &'static str = "edit_file";
    const EFFECT: Effect = Effect::WorkspaceEdit;
    const DESCRIPTION: &'static str =
        "Replace an exact string in a text file in the workspace. The string must occur exactly once unless replace_all is true.";
    const GUIDANCE: Option<&'static str> =
        Some("Read a file before you change it with edit_file: old_string must match the file's text exactly.");
    type Params = Params;
    type Output = Output;

    fn run(workspace: &Workspace, params: Params, _cancelled: &dyn Fn() -> bool) -> Result<Output, ToolError> {
        let relative = workspace.relative(Some(&params.path))?;
        let shown = display_path(&relative);
        if params.old_string.is_empty() {
            return Err(ToolError::params("edit_file: old_string is empty; use write_file to write a whole file"));
        }
        if params.old_string == params.new_string {
            return Err(ToolError::params("edit_file: old_string and new_string are the same; nothing would change"));
        }
        let mut file = workspace.open_file(&relative, Access::Edit)?;
        let metadata = file.metadata().map_err(|e| workspace.io_error(&shown, e))?;
        if metadata.len() > MAX_FILE_BYTES {
            return Err(ToolError::execution(format!(
                "`{shown}` has {} bytes; edit_file edits files up to {MAX_FILE_BYTES} bytes",
                metadata.len()
            )));
        }
        // Bounded even if the file grows after the look above.
        let mut bytes = Vec::new();
        (&mut file).take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| workspace.io_error(&shown, e))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(ToolError::execution(format!("`{shown}` grew past {MAX_FILE_BYTES} bytes while it was read")));
        }
        if looks_binary(&bytes) {
            return Err(ToolError::execution(format!("`{shown}` is a binary file; edit_file edits text only")));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| ToolError::execution(format!("`{shown}` is not valid UTF-8; edit_file edits UTF-8 text only")))?;
        let count = text.matches(&params.old_string).count();
        match count {
            0 => return Err(ToolError::execution(format!("edit_file: old_string was not found in `{shown}`"))),
            1 => {}
            n if !params.replace_all => {
                return Err(ToolError::execution(format!(
                    "edit_file: old_string occurs {n} times in `{shown}`; add surrounding text to make it unique, or pass replace_all: true to replace all {n}"
                )));
            }
            _ => {}
        }
        let edited = text.replace(&params.old_string, &params.new_string);
        file.set_len(0).map_err(|e| workspace.io_error(&shown, e))?;
        file.seek(SeekFrom::Start(0)).map_err(|e| workspace.io_error(&shown, e))?;
        file.write_all(edited.as_bytes()).map_err(|e| workspace.io_error(&shown, e))?;
        Ok(Output { path: shown, replacements: count })
    }
}
