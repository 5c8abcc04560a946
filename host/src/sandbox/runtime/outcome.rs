//! A script going in ([`ExecRequest`]) and what came out ([`ExecOutcome`]): raw facts,
//! rendered for a model or a client by [`crate::conversation::render`].

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use std::collections::HashMap;

use super::Limits;
use super::call_record::{CallWatcher, NestedCall};
use super::console::ConsoleWatcher;
use super::failure::Failure;
use super::suspended::Suspended;
use super::trace::Trace;
use crate::sandbox::guest::RunOptions;
use crate::sources::tools::Image;
use crate::support::vocabulary::Approval;

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
    /// Whether the Exec may park, or takes up one that parked.
    pub parking: Parking,
    /// Where its checkpoints go, when it keeps them (only an Exec that may park can: a
    /// checkpoint is its journal).
    pub checkpoints: Option<std::sync::Arc<dyn super::suspended::Checkpoints>>,
}

/// Whether an Exec may park when it waits only on approvals, or resumes one that did.
#[derive(Clone, Debug, Default)]
pub(crate) enum Parking {
    /// A call that waits for an approval is refused (no journal is kept).
    #[default]
    Never,
    /// The Exec keeps a journal and may park.
    Allowed,
    /// Resume this parked Exec, its parked calls answered by id (a call without an answer
    /// asks again). It may park again.
    Resume(Box<Suspended>, HashMap<u32, Approval>),
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
    /// The Exec parked: what a store keeps to resume it.
    pub suspended: Option<Box<Suspended>>,
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
            suspended: None,
        }
    }
}
