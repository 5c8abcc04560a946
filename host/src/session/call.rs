//! One call of the model's, and how the session makes it: its abort signal, and who
//! watches an `Exec`'s nested calls, console and tools' progress.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::conversation::message::Message;
use crate::sandbox::runtime::{CallWatcher, ConsoleWatcher};
use crate::sources::tools::input::InputHandler;
use crate::sources::tools::{CallProgress, ProgressWatcher};

/// One tool call of the model's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The call's arguments: a JSON object.
    pub input: Value,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ToolCall { id: id.into(), name: name.into(), input }
    }

    /// The tool calls of an assistant message, in order.
    pub fn all_in(message: &Message) -> Vec<ToolCall> {
        message.tool_uses().map(|(id, name, input)| ToolCall::new(id, name, input.clone())).collect()
    }
}

/// How one call is made: its abort signal, and who watches an `Exec`'s nested calls.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Cancelling it ends the call promptly with a failure result.
    pub abort: CancellationToken,
    /// Sees an `Exec`'s call record each time a nested call reaches the host or finishes.
    pub on_nested_call: Option<CallWatcher>,
    /// Sees each console line of an `Exec` as the script writes it.
    pub on_console: Option<ConsoleWatcher>,
    /// Sees each step a tool reports while it runs (a nested call's or a direct call's).
    pub on_tool_progress: Option<ProgressWatcher>,
    /// Answers the input a tool's source asks for during this call, in place of the
    /// session's handler (see [`CallOptions::on_input`]).
    pub on_input: Option<Arc<dyn InputHandler>>,
    /// An `Exec` still running this long after it started returns a handle and keeps
    /// running (see [`CallOptions::yield_after`]).
    pub yield_after: Option<std::time::Duration>,
    /// Where a running `Exec`'s checkpoints go (set by the session for an Exec that yields).
    pub(crate) checkpoints: Option<Arc<dyn crate::sandbox::runtime::Checkpoints>>,
}

impl CallOptions {
    pub fn new(abort: CancellationToken) -> Self {
        CallOptions {
            abort,
            on_nested_call: None,
            on_console: None,
            on_tool_progress: None,
            on_input: None,
            yield_after: None,
            checkpoints: None,
        }
    }

    /// Calls `watcher` with the whole record of an `Exec`'s nested calls each time one
    /// reaches the host and each time one finishes (for a live summary).
    pub fn on_nested_call(mut self, watcher: impl Fn(&[crate::sandbox::runtime::NestedCall]) + Send + Sync + 'static) -> Self {
        self.on_nested_call = Some(Arc::new(watcher));
        self
    }

    /// Calls `watcher` with each console line of an `Exec` as the script writes it (within
    /// the log cap, which bounds what it sees): its level and its text.
    pub fn on_console(mut self, watcher: impl Fn(crate::sandbox::runtime::ConsoleLevel, &str) + Send + Sync + 'static) -> Self {
        self.on_console = Some(Arc::new(watcher));
        self
    }

    /// Calls `watcher` with each step a tool reports while it runs (an MCP server's progress
    /// notifications), naming the tool and, for a script's call, its number in the record.
    pub fn on_tool_progress(mut self, watcher: impl Fn(&CallProgress) + Send + Sync + 'static) -> Self {
        self.on_tool_progress = Some(Arc::new(watcher));
        self
    }

    /// Sends the input a tool's source asks for during this call (an MCP server's
    /// elicitation, in a nested call or a direct one) to `handler` rather than to the
    /// session's handler: for a caller that answers each call's questions in its own way.
    pub fn on_input(mut self, handler: Arc<dyn InputHandler>) -> Self {
        self.on_input = Some(handler);
        self
    }
}
