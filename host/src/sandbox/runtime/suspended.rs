//! A parked Exec as data: everything a fresh instance needs to reach the state the Exec
//! parked in (the script, the guest's options and randomness, the journal of answers and
//! clock readings) and everything the host kept beside it (the calls waiting for approval,
//! the timers with the time they had left, the console output, images and call record so
//! far, the budget used). It is what a state store keeps; the session seals it. A running
//! Exec's checkpoint is the same data, taken at a wait, with the calls then running.

use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::call_record::NestedCall;
use super::calls::ParkedCall;
use super::journal::{ClockReadings, Entry};
use super::state::ExecState;
use crate::sandbox::guest::RunOptions;
use crate::sources::tools::Image;

/// The format of [`Suspended`]; a host refuses an entry of another.
pub(crate) const SUSPENDED_FORMAT: u32 = 1;

/// A parked Exec.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Suspended {
    pub format: u32,
    /// The digest of the guest component it ran in: another guest would not replay the same.
    pub guest: String,
    /// The script as the guest ran it (a TypeScript script's erased text).
    pub code: String,
    pub tool_names: Vec<String>,
    pub options: GuestOptions,
    /// Seeds the randomness WASI gives the guest.
    pub wasi_seed: [u8; 32],
    pub journal: Vec<Entry>,
    pub clocks: ClockReadings,
    /// The calls that wait for a person's answer, by the id the guest knows them by.
    pub parked: Vec<ParkedCall>,
    pub timers: TimersLeft,
    pub console: Vec<String>,
    pub console_cut_chars: usize,
    pub images: Vec<Image>,
    pub images_dropped: usize,
    pub calls: Vec<NestedCall>,
    pub calls_omitted: usize,
    /// The guest's own running time so far, charged to its budget.
    pub guest_time: Duration,
    /// Time waited for calls and timers so far, charged to `max_nested_wait`.
    pub waited: Duration,
    /// The calls that were running when a running Exec was checkpointed: a host that takes
    /// it up cannot know how they ended, so they reject there, saying so.
    #[serde(default)]
    pub unfinished: Vec<UnfinishedCall>,
}

/// A call running when its Exec was checkpointed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct UnfinishedCall {
    pub id: u32,
    pub name: String,
}

/// Where a running Exec's checkpoints go. A checkpoint is the Exec as it is at a wait,
/// with the calls then running; a host that takes it up replays it to that wait.
pub(crate) trait Checkpoints: Send + Sync + 'static {
    /// Keeps `checkpoint` (the one before it is of no more use). It deals with its own
    /// failures: the Exec goes on either way.
    fn keep<'a>(&'a self, checkpoint: Suspended) -> BoxFuture<'a, ()>;
}

/// What an Exec that keeps checkpoints needs to write one: what a fresh instance needs
/// beside the journal.
pub(crate) struct Checkpointing {
    pub sink: std::sync::Arc<dyn Checkpoints>,
    pub guest: String,
    pub code: String,
    pub options: GuestOptions,
    pub seed: [u8; 32],
    /// Journal entries at the last checkpoint: a wait with nothing new writes none.
    pub written: usize,
}

impl Suspended {
    /// `state` as a store keeps it: parked (its calls all wait for approvals) or
    /// checkpointed (`unfinished` are the calls running).
    pub(crate) fn of(
        state: &ExecState,
        guest: &str,
        code: String,
        options: GuestOptions,
        seed: [u8; 32],
        unfinished: Vec<UnfinishedCall>,
    ) -> Suspended {
        let (last_id, pending) = state.timers.left(std::time::Instant::now());
        let (calls, calls_omitted) = state.calls.record_so_far();
        Suspended {
            format: SUSPENDED_FORMAT,
            guest: guest.to_string(),
            code,
            tool_names: state.calls.tools().names().to_vec(),
            options,
            wasi_seed: seed,
            journal: state.journal.entries().to_vec(),
            clocks: state.clocks.readings().unwrap_or_default(),
            parked: state.calls.parked().to_vec(),
            timers: TimersLeft { last_id, pending },
            console: state.console.lines.clone(),
            console_cut_chars: state.console.cut_chars,
            images: state.images.kept.clone(),
            images_dropped: state.images.dropped,
            calls,
            calls_omitted,
            guest_time: state.clock.spent(),
            waited: state.calls.waited(),
            unfinished,
        }
    }
}

/// The pending timers of a parked Exec: each with the time it had left.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct TimersLeft {
    pub last_id: u32,
    pub pending: Vec<(u32, Duration)>,
}

/// The guest's `run-options`, as stored: a parked Exec resumes with the time zone it
/// started with, on whichever host.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct GuestOptions {
    pub heap_bytes: u64,
    pub stack_bytes: u32,
    pub argument_bytes: u64,
    pub argument_depth: u32,
    pub log_line_chars: u32,
    pub random_seed: u64,
    /// Absent from Execs parked before the guest took a time zone, which ran in UTC.
    #[serde(default = "utc")]
    pub time_zone: String,
}

fn utc() -> String {
    "UTC".into()
}

impl From<&RunOptions> for GuestOptions {
    fn from(options: &RunOptions) -> Self {
        GuestOptions {
            heap_bytes: options.heap_bytes,
            stack_bytes: options.stack_bytes,
            argument_bytes: options.argument_bytes,
            argument_depth: options.argument_depth,
            log_line_chars: options.log_line_chars,
            random_seed: options.random_seed,
            time_zone: options.time_zone.clone(),
        }
    }
}

impl From<GuestOptions> for RunOptions {
    fn from(options: GuestOptions) -> Self {
        RunOptions {
            heap_bytes: options.heap_bytes,
            stack_bytes: options.stack_bytes,
            argument_bytes: options.argument_bytes,
            argument_depth: options.argument_depth,
            log_line_chars: options.log_line_chars,
            random_seed: options.random_seed,
            time_zone: options.time_zone,
        }
    }
}
