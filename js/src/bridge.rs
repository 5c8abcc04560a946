//! Work started for JavaScript: it runs on this addon's own tokio runtime, never on the
//! JavaScript thread, and its outcome reaches JavaScript through one threadsafe function, the
//! settler the package registers ([`init`]), as `(id, envelope)`: `{"ok": true, "value": …}` or
//! `{"ok": false, "kind": "session"|"resume"|"invalid"|"aborted", "message": …}`.
//!
//! Each operation is known by the id the package gave it while it runs, so that [`cancel`]
//! reaches its token. At exit, [`shutdown`] refuses new work, cancels what runs and waits a
//! little for it to end, so that commands and servers started for it are stopped, not left
//! behind.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use exec_host::CancellationToken;
use exec_host_embed::Fault;
use exec_host_embed::work::{self, InFlight, Spun};
use napi::bindgen_prelude::{FnArgs, Function, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Result, Status};
use napi_derive::napi;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// The runtime every session and Exec of this process runs on.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| work::runtime(|builder| builder))
}

/// The package's settler: `(id, envelope)`. Weak: a pending operation keeps the process
/// alive from the JavaScript side (the package holds a timer while any is pending).
type Settler = ThreadsafeFunction<FnArgs<(u32, String)>, Unknown<'static>, FnArgs<(u32, String)>, Status, false, true>;

fn settler() -> &'static OnceLock<Settler> {
    static SETTLER: OnceLock<Settler> = OnceLock::new();
    &SETTLER
}

/// The tokens of the operations that run, by the package's id.
fn running() -> &'static Mutex<HashMap<u32, CancellationToken>> {
    static RUNNING: OnceLock<Mutex<HashMap<u32, CancellationToken>>> = OnceLock::new();
    RUNNING.get_or_init(Mutex::default)
}

/// Registers the package's settler. The package does so once, when it loads; a second
/// registration is the package loaded in a second JavaScript environment of the process (a
/// worker thread), which the addon does not serve: it is refused, saying so.
#[napi]
pub fn init(settle: Function<'_, FnArgs<(u32, String)>, Unknown<'static>>) -> Result<()> {
    let built = settle.build_threadsafe_function().weak::<true>().callee_handled::<false>().build()?;
    settler().set(built).map_err(|_| {
        napi::Error::new(
            Status::GenericFailure,
            "exec-host runs in one JavaScript environment per process, and another (the main thread or a worker) has it",
        )
    })
}

/// Cancels the operation `id`, if it still runs.
#[napi]
pub fn cancel(id: u32) {
    if let Some(token) = running().lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
        token.cancel();
    }
}

/// An envelope of success.
pub fn ok(value: Value) -> String {
    json!({ "ok": true, "value": value }).to_string()
}

/// An envelope of failure.
pub fn failed(fault: &Fault) -> String {
    let kind = match fault {
        Fault::Session(_) => "session",
        Fault::Resume(_) => "resume",
        Fault::Invalid(_) => "invalid",
    };
    json!({ "ok": false, "kind": kind, "message": fault.message() }).to_string()
}

/// Starts `make(token)` on the runtime as the operation `id`; its outcome is delivered to the
/// settler. Cancelling the operation (or exiting) ends it with an `aborted` envelope.
pub fn start<F>(id: u32, make: impl FnOnce(CancellationToken) -> F)
where
    F: Future<Output = std::result::Result<Value, Fault>> + Send + 'static,
{
    let counted = match InFlight::enter() {
        Ok(counted) => counted,
        Err(fault) => return deliver(id, failed(&fault)),
    };
    let token = work::work_token();
    running().lock().unwrap_or_else(|e| e.into_inner()).insert(id, token.clone());
    let work = make(token.clone());
    work::hand_off(runtime(), async move {
        // Biased: work that ends because it was cancelled is reported as aborted.
        let outcome = tokio::select! {
            biased;
            () = token.cancelled() => json!({ "ok": false, "kind": "aborted", "message": "aborted" }).to_string(),
            outcome = work => outcome.map(ok).unwrap_or_else(|fault| failed(&fault)),
        };
        running().lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        drop(counted);
        deliver(id, outcome);
    });
}

/// Messages sent to the JavaScript thread through its event loop (calls into JavaScript,
/// outcomes for the settler): a spin of that thread ends when one is sent, for the thread
/// must return to its event loop to take it.
static SENT: AtomicU64 = AtomicU64::new(0);

/// How many messages have been sent to the JavaScript thread.
pub fn sent() -> u64 {
    SENT.load(Ordering::SeqCst)
}

/// Counts a message sent to the JavaScript thread.
pub fn note_sent() {
    SENT.fetch_add(1, Ordering::SeqCst);
}

/// How long the JavaScript thread, having answered a call, spins for what comes next.
const LINGER: Duration = Duration::from_micros(100);
static LINGERING: AtomicBool = AtomicBool::new(false);

/// After JavaScript answered a call (`sent` messages had been sent then), the script goes on
/// and its next call or its outcome follows within microseconds: the thread spins until one
/// is sent, for at most [`LINGER`], so that its event loop finds it at once instead of
/// sleeping and being woken. Only while nothing but one Exec and its call is counted.
pub fn linger(sent_before: u64) {
    let _ = work::spin_for(2, LINGER, &LINGERING, || (sent() != sent_before).then_some(()));
}

/// How long the JavaScript thread, having started an operation, spins for its outcome
/// ([`await_briefly`]).
const SETTLE_SPIN: Duration = Duration::from_micros(150);
/// The operation the JavaScript thread spins for, by id, with [`CLAIMED`] added once its
/// outcome is on its way to the spin rather than to the settler.
static WATCHED: AtomicU64 = AtomicU64::new(0);
const CLAIMED: u64 = 1 << 32;
/// The outcome of the watched operation, handed over.
static CAUGHT: Mutex<Option<String>> = Mutex::new(None);
static SETTLE_SPINNING: AtomicBool = AtomicBool::new(false);

/// The outcome of the operation `id` just started, if it ends within [`SETTLE_SPIN`]; else
/// nothing, and the settler delivers it. A short operation (a trivial Exec takes about
/// 50 µs) otherwise ends while the JavaScript thread sleeps in its event loop, and waking it
/// costs as much again. The thread spins only when this is the one operation counted (it
/// then blocks no other of ours, and the event loop's other work waits at most the spin),
/// and stops as soon as the operation calls into JavaScript, which needs the event loop.
#[napi]
pub fn await_briefly(id: u32) -> Option<String> {
    let watched = u64::from(id);
    let caught = || CAUGHT.lock().unwrap_or_else(|e| e.into_inner()).take();
    let calls = sent();
    WATCHED.store(watched, Ordering::SeqCst);
    // Some(Some(envelope)): caught; Some(None): JavaScript is needed.
    let poll = || match caught() {
        Some(envelope) => Some(Some(envelope)),
        None => (sent() != calls).then_some(None),
    };
    // An operation that ended before it was watched has its outcome with the settler.
    let runs = running().lock().unwrap_or_else(|e| e.into_inner()).contains_key(&id);
    if runs && let Spun::Found(Some(envelope)) = work::spin_for(1, SETTLE_SPIN, &SETTLE_SPINNING, poll) {
        WATCHED.store(0, Ordering::SeqCst);
        return Some(envelope);
    }
    if WATCHED.compare_exchange(watched, 0, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
        return None;
    }
    // Claimed as the spin ended: the outcome is a moment away.
    loop {
        if let Some(envelope) = caught() {
            WATCHED.store(0, Ordering::SeqCst);
            return Some(envelope);
        }
        std::hint::spin_loop();
    }
}

/// Hands an envelope to the JavaScript thread's spin when it watches `id`, else to the
/// settler (nobody is told when the process is gone).
fn deliver(id: u32, envelope: String) {
    let watched = u64::from(id);
    if WATCHED.compare_exchange(watched, watched | CLAIMED, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
        *CAUGHT.lock().unwrap_or_else(|e| e.into_inner()) = Some(envelope);
        return;
    }
    if let Some(settle) = settler().get() {
        note_sent();
        let _ = settle.call(FnArgs { data: (id, envelope) }, ThreadsafeFunctionCallMode::NonBlocking);
    }
}

/// The process exits (the package calls this from its `exit` handler): no new work starts,
/// what runs is cancelled, and this waits until nothing runs or `timeout_ms` have passed.
#[napi]
pub fn shutdown(timeout_ms: u32) {
    work::shut_down(Instant::now() + Duration::from_millis(u64::from(timeout_ms)));
    exec_host_embed::remove_private_store();
}

/// The state store and key file a framework adapter parks in when given none (see
/// `exec_host_embed::private_store`), as an envelope.
#[napi]
pub fn private_store() -> String {
    match exec_host_embed::private_store() {
        Ok((store, key)) => ok(json!({ "state_store": store, "state_key_file": key })),
        Err(fault) => failed(&fault),
    }
}
