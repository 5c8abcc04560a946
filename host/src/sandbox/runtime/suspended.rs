//! A parked Exec as data: everything a fresh instance needs to reach the state the Exec
//! parked in (the script, the guest's options and randomness, the journal of answers and
//! clock readings) and everything the host kept beside it (the calls waiting for approval,
//! the timers with the time they had left, the console output, images and call record so
//! far, the budget used). It is what a state store keeps; the session seals it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::calls::{NestedCall, ParkedCall};
use super::journal::{ClockReadings, Entry};
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
}

/// The pending timers of a parked Exec: each with the time it had left.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct TimersLeft {
    pub last_id: u32,
    pub pending: Vec<(u32, Duration)>,
}

/// The guest's `run-options`, as stored.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct GuestOptions {
    pub heap_bytes: u64,
    pub stack_bytes: u32,
    pub argument_bytes: u64,
    pub argument_depth: u32,
    pub log_line_chars: u32,
    pub random_seed: u64,
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
        }
    }
}
