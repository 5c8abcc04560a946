//! `glob {pattern, path?}`: paths in the workspace that match a glob pattern.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::FileTool;
use super::workspace::{Workspace, display_path, walk};
use crate::sources::tools::Effect;
use crate::support::vocabulary::ToolError;

/// Paths returned at most.
pub const MAX_MATCHES: usize = 1_000;

pub struct Glob;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Glob pattern matched against paths relative to `path`, for example "**/*.rs" or "src/*.txt".
    pub pattern: String,
    /// Directory to search in, relative to the workspace. Defaults to the workspace itself.
    #[serde(default)]
    pub path: Option<String>,
    /// Include hidden files and folders (names starting with ".") and what .gitignore files
    /// exclude; left out by default.
    #[serde(default)]
    pub all: Option<bool>,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    /// Matching paths relative to the workspace, in walk order: a folder's entries by name,
    /// then its subfolders'.
    pub matches: Vec<String>,
    /// True when more paths matched than were returned, or the walk stopped early.
    pub truncated: bool,
}

impl FileTool for Glob {
    const NAME: &'static str = "glob";
    const EFFECT: Effect = Effect::ReadOnly;
    const DESCRIPTION: &'static str = "Find files and folders in the workspace whose paths match a glob pattern such as \"**/*.md\". Hidden entries and \
what .gitignore files exclude are left out unless `all` is true.";
    type Params = Params;
    type Output = Output;

    fn run(workspace: &Workspace, params: Params, cancelled: &dyn Fn() -> bool) -> Result<Output, ToolError> {
        let base = workspace.relative(params.path.as_deref())?;
        let matcher = matcher(Self::NAME, &params.pattern)?;
        let prefix = display_path(&base);
        let mut matches = Vec::new();
        let mut more = false;
        let stopped = walk(workspace, &base, params.all.unwrap_or(false), cancelled, &mut |entry| {
            let relative = strip_base(&entry.path, &prefix);
            if matcher.is_match(relative) {
                if matches.len() == MAX_MATCHES {
                    more = true;
                    return false;
                }
                matches.push(entry.path.clone());
            }
            true
        })?;
        Ok(Output { matches, truncated: more || stopped })
    }
}

/// A glob pattern compiled the way every tool matches paths (`*` stops at `/`, `**`
/// crosses folders).
pub(super) fn matcher(tool: &str, pattern: &str) -> Result<globset::GlobMatcher, ToolError> {
    let glob = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::params(format!("{tool}: the glob {pattern:?} is not valid: {e}")))?;
    Ok(glob.compile_matcher())
}

/// `path` relative to the walk's base, as patterns are written.
pub(super) fn strip_base<'a>(path: &'a str, base: &str) -> &'a str {
    if base == "." || base.is_empty() {
        return path;
    }
    path.strip_prefix(base).map(|rest| rest.trim_start_matches('/')).unwrap_or(path)
}
