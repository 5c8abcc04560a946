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
/// Largest memory limit: a 32-bit WebAssembly memory cannot grow past 4 GiB.
pub const MAX_MEMORY_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Limits of one Exec.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// Optional cap on the total time the script waits for nested calls. `None` (the
    /// default) waits as long as the calls take; an abort still ends the Exec.
    pub max_nested_wait: Option<Duration>,
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
        }
    }
}

impl Limits {
    /// Refuses limits no script could run under.
    pub fn check(&self) -> Result<(), String> {
        if self.budget.is_zero() {
            return Err("the budget must be more than 0 ms".into());
        }
        if self.max_memory_bytes < MIN_MEMORY_BYTES || self.max_memory_bytes > MAX_MEMORY_BYTES {
            return Err(format!(
                "the memory limit must be between {} MiB and {} MiB",
                MIN_MEMORY_BYTES >> 20,
                MAX_MEMORY_BYTES >> 20
            ));
        }
        Ok(())
    }

    /// What the JS engine may allocate on its heap.
    pub(crate) fn heap_bytes(&self) -> u64 {
        self.max_memory_bytes - ENGINE_RESERVED_BYTES
    }
}
