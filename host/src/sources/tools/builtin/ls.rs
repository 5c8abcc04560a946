//! `ls {path?}`: the entries of one directory.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::FileTool;
use super::workspace::{Workspace, display_path};
use crate::sources::tools::Effect;
use crate::support::vocabulary::ToolError;

/// Entries returned at most; the rest are counted in `total`.
pub const MAX_ENTRIES: usize = 1_000;

pub struct Ls;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Directory to list, relative to the workspace. Defaults to the workspace itself.
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    /// The directory listed, relative to the workspace.
    pub path: String,
    /// Entries in name order.
    pub entries: Vec<Entry>,
    /// How many entries the directory has; more than `entries.length` when cut.
    pub total: usize,
    pub truncated: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct Entry {
    pub name: String,
    pub kind: Kind,
    /// Size in bytes (files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

#[derive(Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

impl FileTool for Ls {
    const NAME: &'static str = "ls";
    const EFFECT: Effect = Effect::ReadOnly;
    const DESCRIPTION: &'static str = "List the entries of a directory in the workspace (name, kind, size), in name order.";
    type Params = Params;
    type Output = Output;

    fn run(workspace: &Workspace, params: Params, _cancelled: &dyn Fn() -> bool) -> Result<Output, ToolError> {
        let relative = workspace.relative(params.path.as_deref())?;
        let shown = display_path(&relative);
        let reader = workspace.dir().read_dir(&relative).map_err(|e| workspace.io_error(&shown, e))?;
        let mut entries = Vec::new();
        for entry in reader {
            let entry = entry.map_err(|e| workspace.io_error(&shown, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let file_type = entry.file_type().map_err(|e| workspace.io_error(&shown, e))?;
            let kind = if file_type.is_symlink() {
                Kind::Symlink
            } else if file_type.is_dir() {
                Kind::Dir
            } else if file_type.is_file() {
                Kind::File
            } else {
                Kind::Other
            };
            let size = match kind {
                Kind::File => entry.metadata().ok().map(|m| m.len()),
                _ => None,
            };
            entries.push(Entry { name, kind, size });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let total = entries.len();
        entries.truncate(MAX_ENTRIES);
        Ok(Output { path: shown, truncated: total > entries.len(), entries, total })
    }
}
