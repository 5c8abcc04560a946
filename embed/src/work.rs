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

/// A piece of work on its way to the runtime.
type Job = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// How long a runtime thread that finished a piece of work, when nothing else is counted,
/// spins for the next before it returns to sleep.
const HANDOFF_SPIN: Duration = Duration::from_micros(200);

/// Whether a thread spins for the next piece of work, and the work handed to it.
static SPINNING: AtomicBool = AtomicBool::new(false);
static HANDED: std::sync::Mutex<Option<Job>> = std::sync::Mutex::new(None);

/// Starts `job` on `runtime`: on the thread that spins for work, if one does, else as a new
/// task. A language's caller waits for each result before it starts the next (a loop of
/// Execs, the step after a result): work that comes within the spin starts at once on a
/// thread and core that are awake, where a new task wakes a sleeping thread on an idle core,
/// which costs as much as a short Exec (measured from Node.js: 172-180 µs a trivial Exec
/// without, 100-115 µs with). Only one thread spins, for at most [`HANDOFF_SPIN`], and only
/// when no work is counted: work that runs may wait for the caller's thread, which needs the
/// core.
pub fn hand_off(runtime: &tokio::runtime::Runtime, job: impl std::future::Future<Output = ()> + Send + 'static) {
    let job: Job = Box::pin(job);
    if SPINNING.load(Ordering::Acquire) {
        let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
        if handed.is_none() && SPINNING.load(Ordering::Acquire) {
            *handed = Some(job);
            return;
        }
    }
    runtime.spawn(run_jobs(job));
}

/// Runs `job`, then the work handed to this thread while it spins after each.
async fn run_jobs(mut job: Job) {
    loop {
        job.await;
        match next_job() {
            Some(next) => job = next,
            None => return,
        }
    }
}

/// The next piece of work, if it comes within [`HANDOFF_SPIN`] and this thread may spin.
fn next_job() -> Option<Job> {
    let take = || HANDED.lock().unwrap_or_else(|e| e.into_inner()).take();
    match spin_for(0, HANDOFF_SPIN, &SPINNING, take) {
        Spun::Found(job) => Some(job),
        // Work handed over as the spin ended is taken too: none is left behind.
        Spun::Nothing => take(),
        Spun::NotNow => None,
    }
}

/// What a spin came to.
pub enum Spun<T> {
    /// What the spin waited for.
    Found(T),
    /// The spin ran its time and found nothing.
    Nothing,
    /// The thread did not spin: other work is counted, another thread spins for the same, or
    /// the process exits.
    NotNow,
}

/// Spins on this thread until `poll` finds something or `limit` passes, when at most
/// `counted` pieces of work are counted and no other thread holds `spinning`. A thread that
/// sleeps until another wakes it pays that wake-up, on this kind of machine as much as a short
/// Exec; one that spins pays a core, which only an otherwise idle process can spare. The one
/// rule for every spin of the packages, each with its own `spinning` flag.
pub fn spin_for<T>(counted: usize, limit: Duration, spinning: &AtomicBool, mut poll: impl FnMut() -> Option<T>) -> Spun<T> {
    if IN_FLIGHT.load(Ordering::SeqCst) > counted
        || closing()
        || spinning.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err()
    {
        return Spun::NotNow;
    }
    let until = Instant::now() + limit;
    let spun = loop {
        if let Some(found) = poll() {
            break Spun::Found(found);
        }
        if Instant::now() >= until {
            break Spun::Nothing;
        }
        std::hint::spin_loop();
    };
    spinning.store(false, Ordering::Release);
    spun
}

/// How long a runtime thread that called into its language spins for the answer before it
/// sleeps until the answer wakes it.
const ANSWER_SPIN: Duration = Duration::from_micros(150);
/// Work counted, at most, for a call's thread to spin: the operation that runs the Exec and
/// the call itself.
const ANSWER_SPIN_WORK: usize = 2;
/// Whether a thread spins for an answer.
static ANSWER_SPINNING: AtomicBool = AtomicBool::new(false);

/// What a call into the language answers. A script's calls to a function of its language come
/// one after another (`await` in a loop): each wakes the language's thread, which answers in
/// microseconds, and then a sleeping runtime thread, which costs as much again (measured from
/// Node.js: 57 µs a call in a loop of 100 without). The runtime thread spins for the answer
/// first, for at most [`ANSWER_SPIN`], only one thread at a time, and only when nothing but
/// this Exec and this call is counted: other work would need the core.
pub async fn answer<T>(mut answered: tokio::sync::oneshot::Receiver<T>) -> Result<T, tokio::sync::oneshot::error::RecvError> {
    match answered_soon(&mut answered) {
        Some(answer) => Ok(answer),
        None => answered.await,
    }
}

/// The answer, if it comes within [`ANSWER_SPIN`] and this thread may spin.
fn answered_soon<T>(answered: &mut tokio::sync::oneshot::Receiver<T>) -> Option<T> {
    use tokio::sync::oneshot::error::TryRecvError;
    let poll = || match answered.try_recv() {
        Ok(answer) => Some(Some(answer)),
        Err(TryRecvError::Closed) => Some(None),
        Err(TryRecvError::Empty) => None,
    };
    match spin_for(ANSWER_SPIN_WORK, ANSWER_SPIN, &ANSWER_SPINNING, poll) {
        Spun::Found(answer) => answer,
        Spun::Nothing | Spun::NotNow => None,
    }
}
