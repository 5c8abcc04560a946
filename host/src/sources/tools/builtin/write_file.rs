//! `write_file {path, content}`: creates or replaces a file, and its parent folders.

use std::io::Write;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::FileTool;
use super::workspace::{Access, Workspace, display_path};
use crate::sources::tools::Effect;
use crate::support::vocabulary::ToolError;

pub struct WriteFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// File to write, relative to the workspace. Missing parent folders are created.
    pub path: String,
    /// The whole new content of the file.
    pub content: String,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub path: String,
    /// Bytes written.
    pub bytes: usize,
    /// True when the file did not exist before.
    pub created: bool,
}

impl FileTool for WriteFile {
    const NAME: &'static str = "write_file";
    const EFFECT: Effect = Effect::WorkspaceEdit;
    const DESCRIPTION: &'static str =
        "Write a text file in the workspace, replacing it if it exists and creating missing parent folders.";
    type Params = Params;
    type Output = Output;

    fn run(workspace: &Workspace, params: Params, _cancelled: &dyn Fn() -> bool) -> Result<Output, ToolError> {
        let relative = workspace.relative(Some(&params.path))?;
        let shown = display_path(&relative);
        if relative == std::path::Path::new(".") {
            return Err(ToolError::params("write_file: the path names the workspace itself, not a file"));
        }
        let created = !workspace.dir().exists(&relative);
        let mut file = workspace.open_file(&relative, Access::Create)?;
        file.set_len(0).map_err(|e| workspace.io_error(&shown, e))?;
        file.write_all(params.content.as_bytes()).map_err(|e| workspace.io_error(&shown, e))?;
        file.flush().map_err(|e| workspace.io_error(&shown, e))?;
        Ok(Output { path: shown, bytes: params.content.len(), created })
    }
}
