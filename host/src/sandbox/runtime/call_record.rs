//! The record of a script's calls, as whoever watches the Exec sees it live, and the images
//! its calls returned.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sources::tools::{Image, MAX_TOOL_NAME_LEN, ToolOutput};
use crate::support::text::cut_chars as cut;
use crate::support::vocabulary::{Stage, ToolError};

/// Characters of a call's arguments kept in the call record.
pub const RECORDED_ARGS_CHARS: usize = 2_000;

/// Characters of a failed call's message kept in the call record.
pub const RECORDED_MESSAGE_CHARS: usize = 2_000;

/// One call a script made that reached the host.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct NestedCall {
    /// The tool's name as the script wrote it.
    pub name: String,
    /// The arguments as JSON text, cut at [`RECORDED_ARGS_CHARS`] characters.
    pub args: String,
    pub outcome: CallOutcome,
    /// From the moment the call reached the host until it finished (or the Exec ended).
    pub duration: Duration,
    /// What happened in the call besides its outcome (an input request nobody here could
    /// answer, declined), cut at [`RECORDED_MESSAGE_CHARS`] characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How a nested call ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum CallOutcome {
    Succeeded,
    /// It failed or was refused at `stage`; the message is what the script saw, cut at
    /// [`RECORDED_MESSAGE_CHARS`] characters.
    Failed {
        stage: Stage,
        message: String,
    },
    /// The Exec ended while the call was in flight; the call was cancelled.
    Unfinished,
}

impl NestedCall {
    pub fn ok(&self) -> bool {
        self.outcome == CallOutcome::Succeeded
    }

    /// The stage a failed call failed at; `Unfinished` calls count as execution failures.
    pub fn stage(&self) -> Option<Stage> {
        match &self.outcome {
            CallOutcome::Succeeded => None,
            CallOutcome::Failed { stage, .. } => Some(*stage),
            CallOutcome::Unfinished => Some(Stage::Execution),
        }
    }
}

/// Sees the call record each time a call reaches the host or finishes, for a live summary.
pub type CallWatcher = Arc<dyn Fn(&[NestedCall]) + Send + Sync>;

/// Every call a script attempted that reached the host, in order, without de-duplication:
/// refused calls included (past the call limit, the last two of them, the others counted).
/// Shown to whoever watches the Exec live.
pub(crate) struct CallRecord {
    calls: Vec<NestedCall>,
    /// When each unfinished call started; `None` once it finished.
    started: Vec<Option<Instant>>,
    /// Calls refused past the limit that are counted but no longer listed.
    omitted: usize,
    watcher: Option<CallWatcher>,
}

impl CallRecord {
    pub fn new(watcher: Option<CallWatcher>) -> Self {
        CallRecord { calls: Vec::new(), started: Vec::new(), omitted: 0, watcher }
    }

    /// How many calls reached the host, listed or not.
    pub(super) fn attempted(&self) -> usize {
        self.calls.len() + self.omitted
    }

    /// Adds one call; returns its id (its place in the record, which never moves for a
    /// call within the limit).
    pub(super) fn push(&mut self, name: &str, args_json: &str) -> u32 {
        let id = self.calls.len() as u32;
        self.calls.push(NestedCall {
            name: cut(name, MAX_TOOL_NAME_LEN),
            args: cut(args_json, RECORDED_ARGS_CHARS),
            outcome: CallOutcome::Unfinished,
            duration: Duration::ZERO,
            note: None,
        });
        self.started.push(Some(Instant::now()));
        if let Some(watcher) = &self.watcher {
            watcher(&self.calls);
        }
        id
    }

    /// Adds a call refused past the limit of `limit` calls: only two such calls stay listed
    /// (the latest), without their arguments; older ones are only counted. Returns its id,
    /// good until the next refused call.
    pub(super) fn push_refused(&mut self, name: &str, limit: usize) -> u32 {
        if self.calls.len() >= limit + 2 {
            self.calls.remove(limit);
            self.started.remove(limit);
            self.omitted += 1;
        }
        self.push(name, "")
    }

    /// Notes how call `id` ended and hands its result on.
    pub(super) fn finish(&mut self, id: u32, result: Result<ToolOutput, ToolError>) -> Result<ToolOutput, ToolError> {
        let index = id as usize;
        if let (Some(call), Some(started)) = (self.calls.get_mut(index), self.started.get_mut(index))
            && let Some(at) = started.take()
        {
            call.duration = at.elapsed();
            call.note = match &result {
                Ok(output) => output.note.as_deref().map(|note| cut(note, RECORDED_MESSAGE_CHARS)),
                Err(_) => None,
            };
            call.outcome = match &result {
                Ok(_) => CallOutcome::Succeeded,
                Err(error) => CallOutcome::Failed { stage: error.stage, message: cut(&error.message, RECORDED_MESSAGE_CHARS) },
            };
            if let Some(watcher) = &self.watcher {
                watcher(&self.calls);
            }
        }
        result
    }

    /// The record so far (calls in flight unfinished, with their time so far).
    pub(super) fn so_far(&self) -> (Vec<NestedCall>, usize) {
        let mut calls = self.calls.clone();
        for (call, started) in calls.iter_mut().zip(&self.started) {
            if let Some(at) = started {
                call.duration = at.elapsed();
            }
        }
        (calls, self.omitted)
    }

    /// The record of a parked Exec taken up again: its unfinished calls still running, for
    /// the time they had run.
    pub(super) fn resume(&mut self, calls: Vec<NestedCall>, omitted: usize) {
        let now = Instant::now();
        self.started = calls
            .iter()
            .map(|call| (call.outcome == CallOutcome::Unfinished).then(|| now.checked_sub(call.duration).unwrap_or(now)))
            .collect();
        self.calls = calls;
        self.omitted = omitted;
    }

    /// Every call, in order, once the Exec is over: calls still in flight are unfinished.
    pub(super) fn into_calls(mut self) -> (Vec<NestedCall>, usize) {
        self.close();
        (self.calls, self.omitted)
    }

    /// Closes the record when the Exec ends: calls still in flight get their time so far.
    pub fn close(&mut self) {
        for (call, started) in self.calls.iter_mut().zip(&mut self.started) {
            if let Some(at) = started.take() {
                call.duration = at.elapsed();
            }
        }
    }
}

/// Images returned by nested calls, capped; the model gets them as attachments.
#[derive(Debug, Default)]
pub(crate) struct Images {
    pub kept: Vec<Image>,
    pub dropped: usize,
    max: usize,
}

impl Images {
    pub fn new(max: usize) -> Self {
        Images { kept: Vec::new(), dropped: 0, max }
    }

    pub fn add(&mut self, images: Vec<Image>) {
        for image in images {
            if self.kept.len() < self.max {
                self.kept.push(image);
            } else {
                self.dropped += 1;
            }
        }
    }
}
