//! A script going in ([`ExecRequest`]) and what came out ([`ExecOutcome`]), with the one
//! function that turns an outcome into the text a model reads.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::runtime::Limits;
use crate::summary;
use crate::tools::{Image, ToolDefinition};

/// Sees the call record each time a call reaches the host, for a live summary.
pub type CallWatcher = Arc<dyn Fn(&[String]) + Send + Sync>;

/// One Exec: the script, the tools it may reach, its limits and its abort signal.
#[derive(Clone)]
pub struct ExecRequest {
    /// The body of an async function.
    pub code: String,
    /// The tools the script may reach as `tools.<name>`; every other name is unreachable.
    pub reachable: Vec<ToolDefinition>,
    pub limits: Limits,
    /// Cancelling it ends the Exec promptly with a failure result.
    pub abort: CancellationToken,
    pub watcher: Option<CallWatcher>,
}

impl ExecRequest {
    pub fn new(code: impl Into<String>, reachable: Vec<ToolDefinition>) -> Self {
        ExecRequest { code: code.into(), reachable, limits: Limits::default(), abort: CancellationToken::new(), watcher: None }
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn with_abort(mut self, abort: CancellationToken) -> Self {
        self.abort = abort;
        self
    }

    /// Calls `watcher` with the whole call record each time a call reaches the host.
    pub fn on_call(mut self, watcher: impl Fn(&[String]) + Send + Sync + 'static) -> Self {
        self.watcher = Some(Arc::new(watcher));
        self
    }
}

/// How an Exec failed. Every way a script can go wrong ends here; none is a panic or a
/// transport error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The request was refused before any sandbox started (empty code, impossible limits).
    InvalidRequest(String),
    /// The code does not parse; the message names line and column.
    Syntax(String),
    /// The script threw, or its promise rejected.
    Thrown(String),
    /// The script returned a value JSON cannot carry.
    Unserializable(String),
    /// The script awaits a promise that nothing can settle.
    NeverSettles,
    /// The script ran for its whole budget of its own time.
    BudgetExceeded { budget: Duration },
    /// The script waited longer than the caller's `max_nested_wait` for nested calls.
    NestedWaitExceeded { limit: Duration },
    /// The caller aborted the Exec.
    Aborted,
    /// The sandbox itself stopped: out of memory, stack exhausted, an engine fault.
    Crashed(String),
    /// No sandbox could be started for the script (every instance slot is in use).
    Unavailable(String),
}

const COMPLETED_CALLS_NOTE: &str = "Tool calls that had already completed took effect.";

impl Failure {
    /// What the model reads about this failure.
    pub fn message(&self) -> String {
        match self {
            Failure::InvalidRequest(why) => format!("Exec was not run: {why}."),
            Failure::Syntax(error) => format!("The script does not parse: {error}"),
            Failure::Thrown(error) => format!("The script failed with an uncaught error:\n{error}"),
            Failure::Unserializable(error) => format!("The script's return value cannot be turned into JSON: {error}"),
            Failure::NeverSettles => format!(
                "The script was ended: it awaits a promise that can never settle (no tool call is in flight), so it could never finish. {COMPLETED_CALLS_NOTE}"
            ),
            Failure::BudgetExceeded { budget } => format!(
                "The script exceeded its execution budget of {} ms of its own running time and was terminated (time spent waiting for tool calls does not count). {COMPLETED_CALLS_NOTE}",
                budget.as_millis()
            ),
            Failure::NestedWaitExceeded { limit } => format!(
                "The script was ended: it waited more than {} ms in all for tool calls to finish. {COMPLETED_CALLS_NOTE}",
                limit.as_millis()
            ),
            Failure::Aborted => format!("The script was aborted before it finished. {COMPLETED_CALLS_NOTE}"),
            Failure::Crashed(why) => format!("The script's sandbox stopped: {why}. {COMPLETED_CALLS_NOTE}"),
            Failure::Unavailable(why) => {
                format!(
                    "Exec was not run: no sandbox could be started ({why}). Too many Execs may be running at once; try again."
                )
            }
        }
    }
}

/// Everything an Exec produced.
#[derive(Clone, Debug)]
pub struct ExecOutcome {
    /// The returned value (`None` for `undefined`), or how the script failed.
    pub result: Result<Option<Value>, Failure>,
    /// Console output, capped.
    pub logs: Vec<String>,
    /// Characters of console output past the cap.
    pub logs_cut_chars: usize,
    /// Images from nested calls, capped; attachments of the result.
    pub images: Vec<Image>,
    pub images_dropped: usize,
    /// Every call that reached the host, in order, refused ones included.
    pub calls: Vec<String>,
    /// Time the script itself ran.
    pub guest_time: Duration,
    pub(crate) max_result_chars: usize,
    pub(crate) max_images: usize,
}

impl ExecOutcome {
    pub(crate) fn refused(why: impl Into<String>, limits: &Limits) -> Self {
        ExecOutcome {
            result: Err(Failure::InvalidRequest(why.into())),
            logs: Vec::new(),
            logs_cut_chars: 0,
            images: Vec::new(),
            images_dropped: 0,
            calls: Vec::new(),
            guest_time: Duration::ZERO,
            max_result_chars: limits.max_result_chars,
            max_images: limits.max_images,
        }
    }

    pub fn ok(&self) -> bool {
        self.result.is_ok()
    }

    /// The returned value, `None` when there is none or the script failed.
    pub fn value(&self) -> Option<&Value> {
        self.result.as_ref().ok().and_then(Option::as_ref)
    }

    pub fn failure(&self) -> Option<&Failure> {
        self.result.as_ref().err()
    }

    /// The host-only summary: `N tool calls` and the last two names, or `failed`.
    pub fn summary(&self) -> String {
        summary::of(&self.calls, self.ok())
    }

    /// The text the model reads: the value (or the failure), console output, and notes on
    /// anything cut. Never empty.
    pub fn text(&self) -> String {
        let mut sections = Vec::new();
        let logs = self.logs_section();
        match &self.result {
            Ok(value) => match (value, &logs) {
                (None, None) => {
                    sections.push("The script finished without returning a value and without console output.".to_string())
                }
                (None, Some(logs)) => {
                    sections.push(format!("Console output:\n{logs}"));
                    sections.push("The script returned no value.".to_string());
                }
                (Some(value), None) => sections.push(self.render_value(value)),
                (Some(value), Some(logs)) => {
                    sections.push(format!("Console output:\n{logs}"));
                    sections.push(format!("Return value:\n{}", self.render_value(value)));
                }
            },
            Err(failure) => {
                sections.push(failure.message());
                if let Some(logs) = logs {
                    sections.push(format!("Console output before the failure:\n{logs}"));
                }
            }
        }
        if self.images_dropped > 0 {
            sections.push(format!(
                "[{} more image(s) were dropped: an Exec result carries at most {}]",
                self.images_dropped, self.max_images
            ));
        }
        sections.join("\n\n")
    }

    fn logs_section(&self) -> Option<String> {
        if self.logs.is_empty() && self.logs_cut_chars == 0 {
            return None;
        }
        let mut text = self.logs.join("\n");
        if self.logs_cut_chars > 0 {
            text.push_str(&format!("\n[console output cut: {} more characters not shown]", self.logs_cut_chars));
        }
        Some(text)
    }

    /// Strings as they are, anything else as JSON; cut at the result limit, saying the total.
    fn render_value(&self, value: &Value) -> String {
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let total = text.chars().count();
        if total <= self.max_result_chars {
            return text;
        }
        let cut: String = text.chars().take(self.max_result_chars).collect();
        format!("{cut}\n[result cut: {total} characters in all, the first {} shown]", self.max_result_chars)
    }
}
