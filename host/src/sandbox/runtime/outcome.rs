//! A script going in ([`ExecRequest`]) and what came out ([`ExecOutcome`]): raw facts,
//! rendered for a model or a client by [`crate::conversation::render`].

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Limits;
use super::calls::{CallWatcher, NestedCall};
use super::state::ConsoleWatcher;
use super::trace::Trace;
use crate::sandbox::guest::RunOptions;
use crate::sources::tools::{Image, Stage};

/// One Exec: the script, its limits, its abort signal, and who watches its calls.
#[derive(Clone)]
pub(crate) struct ExecRequest {
    /// The body of an async function.
    pub code: String,
    pub limits: Limits,
    /// Cancelling it ends the Exec promptly with a failure result.
    pub abort: CancellationToken,
    pub watcher: Option<CallWatcher>,
    /// Sees each console line as it is kept.
    pub console: Option<ConsoleWatcher>,
    /// Whether to keep the boundary's [`Trace`].
    pub trace: bool,
    /// The guest's own limits, when they are not derived from `limits` (a conformance
    /// case sets them as they are).
    pub run_options: Option<RunOptions>,
}

/// How an Exec failed. Every way a script can go wrong ends here; none is a panic or a
/// transport error.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The request was refused before any sandbox started (empty code, impossible limits).
    InvalidRequest(String),
    /// The code does not parse; the message names line and column.
    Syntax(String),
    /// The script threw, or its promise rejected.
    Thrown(String),
    /// The script returned a value JSON cannot carry.
    Unserializable(String),
    /// The script awaits a promise that nothing can settle (no call in flight, no timer
    /// pending).
    NeverSettles,
    /// The script ran for its whole budget of its own time.
    BudgetExceeded { budget: Duration },
    /// The script waited longer than the caller's `max_nested_wait` for nested calls and
    /// timers.
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
                "The script was ended: it waited more than {} ms in all for tool calls and timers to finish. {COMPLETED_CALLS_NOTE}",
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

    /// Where in the life of the `Exec` call it failed (spec 000): a request refused before
    /// any sandbox started is a params failure, a value that cannot be turned into JSON a
    /// projection failure, everything else happened while the script ran.
    pub fn stage(&self) -> Stage {
        match self {
            Failure::InvalidRequest(_) => Stage::Params,
            Failure::Unserializable(_) => Stage::Projection,
            _ => Stage::Execution,
        }
    }
}

/// Everything an Exec produced.
#[derive(Clone, Debug)]
pub(crate) struct ExecOutcome {
    /// The returned value (`None` for `undefined`), or how the script failed.
    pub result: Result<Option<Value>, Failure>,
    /// Console output, capped.
    pub logs: Vec<String>,
    /// Characters of console output past the cap.
    pub logs_cut_chars: usize,
    /// Images from nested calls, capped; attachments of the result.
    pub images: Vec<Image>,
    pub images_dropped: usize,
    /// Every call that reached the host, in order, refused ones included (past the call
    /// limit, only the last two refused ones).
    pub calls: Vec<NestedCall>,
    /// Calls refused past the limit and not listed in `calls`.
    pub calls_omitted: usize,
    /// Time the script itself ran.
    pub guest_time: Duration,
    /// What the guest asked of the host, when the request asked for it.
    pub trace: Option<Trace>,
}

impl ExecOutcome {
    pub(crate) fn refused(why: impl Into<String>) -> Self {
        ExecOutcome {
            result: Err(Failure::InvalidRequest(why.into())),
            logs: Vec::new(),
            logs_cut_chars: 0,
            images: Vec::new(),
            images_dropped: 0,
            calls: Vec::new(),
            calls_omitted: 0,
            guest_time: Duration::ZERO,
            trace: None,
        }
    }
}
