//! The steps a call reports while it runs (an MCP server's progress notifications), and
//! where they go: the call's sink, then whoever watches the request.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::support::vocabulary::Origin;

/// Longest progress message kept, in characters; the rest is cut.
pub const MAX_PROGRESS_MESSAGE_CHARS: usize = 200;

/// A step a call reports while it runs (an MCP server's progress notification): how far,
/// out of how much when that is known, and what it is doing.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolProgress {
    pub progress: f64,
    pub total: Option<f64>,
    /// At most [`MAX_PROGRESS_MESSAGE_CHARS`] characters.
    pub message: Option<String>,
}

impl ToolProgress {
    /// A step as a tool reports it; `None` when `progress` is not a finite number. A total
    /// that is not finite is dropped, and the message cut to its bound.
    pub fn new(progress: f64, total: Option<f64>, message: Option<&str>) -> Option<Self> {
        if !progress.is_finite() {
            return None;
        }
        let message = message
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(|m| crate::support::text::cut_chars(m, MAX_PROGRESS_MESSAGE_CHARS));
        Some(ToolProgress { progress, total: total.filter(|t| t.is_finite()), message })
    }
}

impl fmt::Display for ToolProgress {
    /// `3/10: indexing`, `3`, or `40%` when the total is 100.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.total {
            Some(100.0) => write!(f, "{}%", self.progress)?,
            Some(total) => write!(f, "{}/{}", self.progress, total)?,
            None => write!(f, "{}", self.progress)?,
        }
        match &self.message {
            Some(message) => write!(f, ": {message}"),
            None => Ok(()),
        }
    }
}

/// Where one call's [`ToolProgress`] goes.
pub type ProgressSink = Arc<dyn Fn(ToolProgress) + Send + Sync>;

/// A step of one call of a model's request: the tool, which of an Exec's nested calls it is
/// (`None` for a direct call), and the step.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallProgress {
    pub tool: String,
    /// The nested call's number, as in the Exec's call record (its index there).
    pub call: Option<u32>,
    pub step: ToolProgress,
}

/// Watches the steps of every call of a request (see [`CallProgress`]).
pub type ProgressWatcher = Arc<dyn Fn(&CallProgress) + Send + Sync>;

impl CallProgress {
    /// The sink of one call of tool `tool` made from `origin`, reporting to `watcher`.
    pub(crate) fn sink(watcher: &ProgressWatcher, tool: &str, origin: &Origin) -> ProgressSink {
        let watcher = watcher.clone();
        let tool = tool.to_string();
        let call = match origin {
            Origin::Nested { call, .. } => Some(*call),
            Origin::Direct { .. } => None,
        };
        Arc::new(move |step| watcher(&CallProgress { tool: tool.clone(), call, step }))
    }
}
