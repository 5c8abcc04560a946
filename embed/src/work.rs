//! Work a package starts for its language (an operation awaited there, a call into one of its
//! functions), counted while it runs, so that the package can end all of it when the process
//! exits: no new work starts, what runs is cancelled, and the package waits, a bounded time,
//! until nothing is counted, so that no thread of ours touches the language's runtime as it
//! goes and commands started for the work are stopped, not left behind.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use exec_host::CancellationToken;

use crate::Fault;

/// Work started and not finished.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Set once the process exits: no new work starts.
static CLOSING: AtomicBool = AtomicBool::new(false);

/// The parent of every piece of work's token: cancelled at exit.
fn everything() -> &'static CancellationToken {
    static ALL: OnceLock<CancellationToken> = OnceLock::new();
    ALL.get_or_init(CancellationToken::new)
}

/// A new piece of work's token: cancelled with everything at exit.
pub fn work_token() -> CancellationToken {
    everything().child_token()
}

/// Whether the process is exiting (no new work starts).
pub fn closing() -> bool {
    CLOSING.load(Ordering::SeqCst)
}

/// One piece of work, counted while it lives.
pub struct InFlight(());

impl InFlight {
    /// Counts a new piece of work, or refuses it once the process exits.
    pub fn enter() -> Result<InFlight, Fault> {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        let counted = InFlight(());
        match closing() {
            true => Err(Fault::Session("exec-host is shutting down with the process".into())),
            false => Ok(counted),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The process exits: no new work starts and what runs is cancelled; then this waits (call it
/// where waiting holds nothing the work needs) until nothing is counted or `until`.
pub fn shut_down(until: Instant) {
    CLOSING.store(true, Ordering::SeqCst);
    everything().cancel();
    while IN_FLIGHT.load(Ordering::SeqCst) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The runtime a package runs its work on, as `configure` finishes building it.
pub fn runtime(configure: impl FnOnce(&mut tokio::runtime::Builder) -> &mut tokio::runtime::Builder) -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.thread_name("exec-host").enable_all();
    configure(&mut builder).build().expect("the operating system gives a process threads")
}
