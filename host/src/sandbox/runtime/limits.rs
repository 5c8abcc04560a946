//! The limits of one Exec: each is a field here, a CLI flag, and has a default.

use std::time::Duration;

/// Default budget of the script's own execution time.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(10);
/// Default number of nested calls (ToolSearch included) one script may start.
pub const DEFAULT_MAX_CALLS: u32 = 200;
/// Default characters of console output kept for the model.
pub const DEFAULT_MAX_LOG_CHARS: usize = 20_000;
/// Default characters of the returned value shown to the model.
pub const DEFAULT_MAX_RESULT_CHARS: usize = 30_000;
/// Default number of images attached to the result.
pub const DEFAULT_MAX_IMAGES: usize = 8;
/// Default linear memory of one script's sandbox.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 256 * 1024 * 1024;
/// Memory the engine keeps outside the JS heap (its own code, stack and bookkeeping); the
/// JS heap limit is the memory limit less this, so running out of heap is a catchable
/// JS error rather than a trap.
pub const ENGINE_RESERVED_BYTES: u64 = 16 * 1024 * 1024;
/// Native stack the engine may use before deep recursion is a `RangeError`.
pub const ENGINE_STACK_BYTES: u32 = 512 * 1024;
/// Smallest memory limit that leaves the engine room to start.
pub const MIN_MEMORY_BYTES: u64 = 32 * 1024 * 1024;
/// Default bound on one call's arguments, as JSON text.
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 8 * 1024 * 1024;

/// Nesting one call's arguments may have, the argument object being level 1. Below the
/// 128 levels the host's JSON parser reads, so nothing the guest passes is refused twice.
pub const MAX_ARGUMENT_DEPTH: u32 = 100;

/// The arguments of all the calls one script has in flight take at most this many times
/// `max_argument_bytes` together.
pub const IN_FLIGHT_ARGUMENTS: usize = 4;

/// Timers one script may have pending at once (`setTimeout` past it throws a
/// `RangeError`). The host keeps a deadline for each: this is what keeps a script from
/// sizing the host's memory with timers. Timers are not tool calls and do not count
/// toward `max_calls`.
pub const MAX_PENDING_TIMERS: usize = 1_000;

/// Largest memory limit: a 32-bit WebAssembly memory cannot grow past 4 GiB.
pub const MAX_MEMORY_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Limits no script could run under ([`Limits::check`]); no sandbox starts with them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitsError {
    #[error("the budget must be more than 0 ms")]
    NoBudget,
    #[error("the argument limit must allow at least `{{}}`")]
    NoRoomForArguments,
    #[error("the memory limit must be between {min_mib} MiB and {max_mib} MiB")]
    MemoryOutOfRange { min_mib: u64, max_mib: u64 },
}

/// Limits of one Exec. Start from the defaults and change what you need:
/// `Limits::default().with_budget(Duration::from_secs(2))`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Time the script itself may run. Time spent waiting on nested calls does not count.
    pub budget: Duration,
    /// Nested calls one script may start; the call past the limit alone is refused.
    pub max_calls: u32,
    /// Characters of console output kept; the rest is cut with a note.
    pub max_log_chars: usize,
    /// Characters of the returned value shown; the rest is cut, saying the total.
    pub max_result_chars: usize,
    /// Images attached to the result; later ones are dropped with a note.
    pub max_images: usize,
    /// Memory of the script's sandbox, in bytes.
    pub max_memory_bytes: u64,
    /// Optional cap on the total time the script waits for nested calls and timers. `None`
    /// (the default) waits as long as they take; an abort still ends the Exec.
    pub max_nested_wait: Option<Duration>,
    /// Bytes of one call's arguments (as JSON text); a larger call alone is refused, and
    /// the calls in flight hold [`IN_FLIGHT_ARGUMENTS`] times this at most together. The
    /// host parses arguments into its own memory: this is what keeps a script from
    /// sizing it.
    pub max_argument_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            budget: DEFAULT_BUDGET,
            max_calls: DEFAULT_MAX_CALLS,
            max_log_chars: DEFAULT_MAX_LOG_CHARS,
            max_result_chars: DEFAULT_MAX_RESULT_CHARS,
            max_images: DEFAULT_MAX_IMAGES,
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            max_nested_wait: None,
            max_argument_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
        }
    }
}

impl Limits {
    pub fn with_budget(mut self, budget: Duration) -> Self {
        self.budget = budget;
        self
    }

    pub fn with_max_calls(mut self, max_calls: u32) -> Self {
        self.max_calls = max_calls;
        self
    }

    pub fn with_max_log_chars(mut self, max_log_chars: usize) -> Self {
        self.max_log_chars = max_log_chars;
        self
    }

    pub fn with_max_result_chars(mut self, max_result_chars: usize) -> Self {
        self.max_result_chars = max_result_chars;
        self
    }

    pub fn with_max_images(mut self, max_images: usize) -> Self {
        self.max_images = max_images;
        self
    }

    pub fn with_max_memory_bytes(mut self, max_memory_bytes: u64) -> Self {
        self.max_memory_bytes = max_memory_bytes;
        self
    }

    pub fn with_max_argument_bytes(mut self, max_argument_bytes: usize) -> Self {
        self.max_argument_bytes = max_argument_bytes;
        self
    }

    pub fn with_max_nested_wait(mut self, max_nested_wait: Option<Duration>) -> Self {
        self.max_nested_wait = max_nested_wait;
        self
    }

    /// Refuses limits no script could run under.
    pub fn check(&self) -> Result<(), LimitsError> {
        if self.budget.is_zero() {
            return Err(LimitsError::NoBudget);
        }
        if self.max_argument_bytes < 2 {
            return Err(LimitsError::NoRoomForArguments);
        }
        if self.max_memory_bytes < MIN_MEMORY_BYTES || self.max_memory_bytes > MAX_MEMORY_BYTES {
            return Err(LimitsError::MemoryOutOfRange { min_mib: MIN_MEMORY_BYTES >> 20, max_mib: MAX_MEMORY_BYTES >> 20 });
        }
        Ok(())
    }

    /// What the JS engine may allocate on its heap.
    pub(crate) fn heap_bytes(&self) -> u64 {
        self.max_memory_bytes - ENGINE_RESERVED_BYTES
    }
}
