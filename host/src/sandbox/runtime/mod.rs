//! The runtime: one wasmtime engine, the guest component compiled once (and cached across
//! processes), and a fresh store per Exec from a pre-initialised snapshot.
//!
//! Per Exec: a store with memory limits, the budget clock, the nested calls in flight, the
//! pending timers, and an instance from the pooling allocator. The script runs in the
//! guest's `run` export; whatever happens to it (a throw, a trap, the budget, an abort)
//! becomes an `ExecOutcome`; this module never panics on a script's behalf.
//!
//! The runtime knows nothing of pools, settings or the funnel: where a script's calls go
//! is a `ScriptTools` handed in by the layer above.

mod artefact;
mod call_record;
pub(crate) mod calls;
mod clock;
mod compile_settings;
mod console;
mod failure;
mod guest_cache;
mod hot_wait;
mod journal;
mod limits;
mod outcome;
mod preinitialise;
mod state;
mod suspended;
mod timers;
mod trace;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wasmtime::component::Linker;
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreLimitsBuilder, Trap, UpdateDeadline,
};

pub use artefact::{GUEST_COMPONENT, GUEST_SOURCES_SHA256, GuestSource, MAX_GUEST_COMPONENT_BYTES, SetupError};
pub use call_record::{CallOutcome, CallWatcher, NestedCall, RECORDED_ARGS_CHARS, RECORDED_MESSAGE_CHARS};
pub(crate) use calls::{ScriptTools, ToolFuture};
pub use console::{ConsoleLevel, ConsoleWatcher};
pub use failure::{Failure, Frame, Position, SyntaxError, Uncaught};
pub use guest_cache::default_cache_dir;
pub use limits::{
    DEFAULT_BUDGET, DEFAULT_MAX_ARGUMENT_BYTES, DEFAULT_MAX_CALLS, DEFAULT_MAX_IMAGES, DEFAULT_MAX_LOG_CHARS,
    DEFAULT_MAX_MEMORY_BYTES, DEFAULT_MAX_RESULT_CHARS, ENGINE_RESERVED_BYTES, ENGINE_STACK_BYTES, IN_FLIGHT_ARGUMENTS, Limits,
    LimitsError, MAX_ARGUMENT_DEPTH, MAX_MEMORY_BYTES, MAX_PENDING_TIMERS, MIN_MEMORY_BYTES,
};
pub(crate) use outcome::{ExecOutcome, ExecRequest, Parking};
pub use preinitialise::preinitialise;
pub(crate) use state::ExecState;
use suspended::Checkpointing;
pub(crate) use suspended::{Checkpoints, Suspended};
pub use trace::{BoundaryEvent, MAX_TRACE_BYTES, MAX_TRACE_EVENTS, Trace};

use self::call_record::{CallRecord, Images};
use self::calls::{NestedCalls, NestedWaitExceeded};
use self::clock::{Charged, GuestClock, TICK, Ticker};
use self::console::ConsoleLog;
use self::journal::{Clocks, Journal};
use self::state::ParkNow;
use crate::sandbox::guest::{self, RunOptions, SandboxPre, ScriptError};

/// Time a replay may take beyond twice the budget (see the epoch callback in `exec`).
const REPLAY_SLACK: Duration = Duration::from_secs(1);

/// Native stack WebAssembly may use; deep recursion past it traps cleanly.
const MAX_WASM_STACK: usize = 4 * 1024 * 1024;
/// Stack of the fiber each Exec runs on; must exceed [`MAX_WASM_STACK`].
const ASYNC_STACK: usize = MAX_WASM_STACK + 1024 * 1024;
/// Core instances, memories and tables one guest instance may use (the guest has a few
/// shim modules around its main module).
const PER_COMPONENT_CORE_INSTANCES: u32 = 20;
const PER_COMPONENT_MEMORIES: u32 = 2;
const PER_COMPONENT_TABLES: u32 = 20;
/// Set to `1`, the process writes `/tmp/perf-PID.map` naming the guest's compiled
/// functions, so `perf record` and `perf report` show where a script's time goes.
const PERF_MAP_VARIABLE: &str = "EXEC_HOST_PERF_MAP";
/// Bytes of a slot's memory (and tables) reset in place rather than returned to the kernel.
const KEEP_RESIDENT_BYTES: usize = 16 * 1024 * 1024;
const KEEP_RESIDENT_TABLE_BYTES: usize = 1024 * 1024;
/// How the sandbox is set up.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SandboxOptions {
    /// Where compiled guests are cached; `None` keeps them in memory only (the built-in
    /// guest's code from the build, or the guest compiled anew by every process).
    pub cache_dir: Option<PathBuf>,
    /// Execs that can run at once; each holds one slot of the instance pool.
    pub max_concurrent_execs: u32,
    /// The guest component that runs the scripts.
    pub guest: GuestSource,
    /// How long a waiting Exec spins before it gives its thread back.
    pub wait_spin: Duration,
    /// The time zone scripts see as the host's (an IANA name): the default of `Intl`'s
    /// date formats. By default the host's own: `TZ` when it names a zone, else the zone
    /// `/etc/localtime` links to, else `UTC`.
    pub time_zone: String,
}

impl SandboxOptions {
    /// How long a waiting Exec keeps its thread busy by default (see
    /// [`SandboxOptions::with_wait_spin`]): an answer of the host's own tools and a timer's
    /// tick come within it.
    pub const DEFAULT_WAIT_SPIN: Duration = Duration::from_millis(2);

    /// Where compiled guests are cached; `None` keeps them in memory only (the built-in
    /// guest's code from the build, or the guest compiled anew by every process).
    pub fn with_cache_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.cache_dir = dir;
        self
    }

    /// These options for a session whose tools work in `workspace`. The compiled-guest cache
    /// holds native code the next run maps and executes: it is never used from inside the
    /// workspace, where a script's writes could reach it (a workspace of `~` and a cache in
    /// `~/.cache`, say); without it the guest's code stays in memory. Sessions of different
    /// workspaces may share one sandbox only when this gives them the same options.
    pub fn for_workspace(self, workspace: Option<&std::path::Path>) -> Self {
        let (Some(cache), Some(workspace)) = (&self.cache_dir, workspace) else { return self };
        if let Err(inside) = crate::support::private::check_outside_workspace(cache, workspace) {
            tracing::warn!("the compiled-guest cache {inside}: it is not used (set EXEC_HOST_CACHE_DIR elsewhere)");
            return self.with_cache_dir(None);
        }
        self
    }

    /// How many Execs can run at once.
    pub fn with_max_concurrent_execs(mut self, execs: u32) -> Self {
        self.max_concurrent_execs = execs;
        self
    }

    /// The guest component that runs the scripts (the built-in one by default).
    pub fn with_guest(mut self, guest: GuestSource) -> Self {
        self.guest = guest;
        self
    }

    /// How long an Exec waiting for a nested call or a timer keeps its thread spinning
    /// before it gives the thread back ([`Self::DEFAULT_WAIT_SPIN`] by default; zero never spins).
    ///
    /// A script resumed on a core that went idle runs several times slower for its first
    /// microseconds, and that is the script's own time; an answer that comes within the
    /// spin finds the core warm and is seen at once. Only one wait in the process spins at
    /// a time, and only on a multi-threaded tokio runtime with two or more workers, so at
    /// most one core is kept busy, for at most this long per wait; and never while a call
    /// that another process answers (an MCP server, an HTTP API, `Bash`) is in flight, as
    /// that process needs the core.
    pub fn with_wait_spin(mut self, spin: Duration) -> Self {
        self.wait_spin = spin;
        self
    }

    /// The time zone scripts see as the host's, an IANA name (`"Europe/Paris"`): what
    /// `Intl.DateTimeFormat().resolvedOptions().timeZone` says and what dates are formatted
    /// in by default. A name the guest's time zone database does not know is taken as `UTC`.
    pub fn with_time_zone(mut self, name: impl Into<String>) -> Self {
        self.time_zone = name.into();
        self
    }
}

/// The host's time zone as an IANA name: `TZ` when it holds one (`Europe/Paris` or
/// `:Europe/Paris`), else the zone `/etc/localtime` links to, else `UTC`. The names of UTC
/// itself (`Etc/UTC`, `GMT`, `Zulu`, ...) are `UTC`, as V8 reports them.
pub(crate) fn host_time_zone() -> String {
    let from_tz = std::env::var("TZ").ok().map(|tz| tz.trim_start_matches(':').to_string());
    let name = from_tz
        .filter(|tz| tz.contains('/') || tz.eq_ignore_ascii_case("UTC"))
        .or_else(|| iana_time_zone::get_timezone().ok())
        .unwrap_or_else(|| "UTC".into());
    let utc = [
        "UTC",
        "Etc/UTC",
        "Etc/UCT",
        "UCT",
        "Etc/GMT",
        "GMT",
        "Etc/Universal",
        "Universal",
        "Etc/Zulu",
        "Zulu",
        "Etc/GMT0",
        "GMT0",
    ];
    if utc.iter().any(|alias| alias.eq_ignore_ascii_case(&name)) { "UTC".into() } else { name }
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            cache_dir: default_cache_dir(),
            max_concurrent_execs: 1000,
            guest: GuestSource::Builtin,
            wait_spin: Self::DEFAULT_WAIT_SPIN,
            time_zone: host_time_zone(),
        }
    }
}

/// Runs Exec scripts. Cheap to clone; share one per process.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    pre: SandboxPre<ExecState>,
    /// Whether the guest's `init` already ran (pre-initialised); if not, each Exec runs it.
    initialised: bool,
    ticker: Ticker,
    wait_spin: Duration,
    /// The time zone scripts see as the host's.
    time_zone: String,
    /// The SHA-256 of the guest component, in hex: a parked Exec resumes only in the guest
    /// it parked in.
    guest_digest: String,
    /// Where the guest's native code came from, and its cache file.
    origin: artefact::Origin,
    cache_file: Option<PathBuf>,
}

/// The compiled-guest cache as a sandbox uses it: what `exec-host doctor` reports.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GuestCacheReport {
    /// Where this sandbox's guest code came from: "mapped from the cache", "compiled when
    /// exec-host was built" or "compiled now".
    pub origin: String,
    /// The cache file of this guest and engine; `None` without a cache folder (none is
    /// known, or it lies inside the workspace).
    pub file: Option<PathBuf>,
    /// Whether a later process maps that file: `Ok`, or why not (it is missing, or it or
    /// its folder is not this user's alone).
    pub trusted: Result<(), String>,
}

/// Why no instance could be made for a script (for example every pool slot is in use).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct CouldNotStart(String);

/// Why the host ended a script that overran its budget.
#[derive(Debug, thiserror::Error)]
#[error("the script exceeded its execution budget")]
struct BudgetExceeded;

impl Sandbox {
    /// Sets up the sandbox with default options.
    pub async fn new() -> Result<Self, SetupError> {
        Self::with_options(SandboxOptions::default()).await
    }

    pub async fn with_options(options: SandboxOptions) -> Result<Self, SetupError> {
        let engine = Engine::new(&engine_config(options.max_concurrent_execs)).map_err(SetupError::engine)?;
        let mut linker = Linker::new(&engine);
        guest::add_to_linker(&mut linker).map_err(SetupError::engine)?;
        // Loading takes milliseconds, but compiling (a first run where the code from the
        // build does not run, or another guest) a second or so: on a thread of its own, so
        // the tasks of the caller's runtime (MCP servers starting, on a single-threaded one)
        // go on.
        let loaded = {
            let (engine, guest, cache_dir) = (engine.clone(), options.guest.clone(), options.cache_dir.clone());
            tokio::task::spawn_blocking(move || artefact::load(&engine, &guest, cache_dir.as_deref()))
                .await
                .map_err(|e| SetupError::guest("compiling it stopped", e))??
        };
        tracing::debug!("the guest's native code: {}", loaded.origin);
        let component = loaded.component;
        let imports: Vec<String> = component.component_type().imports(&engine).map(|(name, _)| name.to_string()).collect();
        guest::check_imports(imports.iter().map(String::as_str))
            .map_err(|why| SetupError::refused(&options.guest, why.to_string()))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            SetupError::refused(
                &options.guest,
                format!("its imports do not link with this host's exec-host:sandbox and WASI ({e:#})"),
            )
        })?;
        let pre = SandboxPre::new(pre).map_err(|e| {
            SetupError::refused(
                &options.guest,
                format!(
                    "it does not export the exec-host:sandbox world's `init` and `run` as this host's WIT declares them ({e:#})"
                ),
            )
        })?;
        let ticker = Ticker::start(engine.clone());
        Ok(Sandbox {
            inner: Arc::new(Inner {
                engine,
                pre,
                initialised: loaded.initialised,
                ticker,
                wait_spin: options.wait_spin,
                time_zone: options.time_zone.clone(),
                guest_digest: crate::support::hex::hex(&loaded.digest),
                origin: loaded.origin,
                cache_file: loaded.cache_file,
            }),
        })
    }

    /// The compiled-guest cache as this sandbox uses it, checked now.
    pub fn guest_cache(&self) -> GuestCacheReport {
        let file = self.inner.cache_file.clone();
        let trusted = match &file {
            None => Err("there is no cache folder".to_string()),
            Some(path) if !path.exists() => Err("the file was not written".to_string()),
            Some(path) => guest_cache::trusted(path).map(|_| ()).map_err(|why| why.to_string()),
        };
        GuestCacheReport { origin: self.inner.origin.to_string(), file, trusted }
    }

    /// The interfaces the guest component imports, as `package/interface@version`.
    pub fn guest_imports(&self) -> Vec<String> {
        let component = self.inner.pre.instance_pre().component();
        component.component_type().imports(&self.inner.engine).map(|(name, _)| name.to_string()).collect()
    }

    /// Runs one script whose `tools` reach `tools`. Never panics and never fails as a call:
    /// every way a script can go wrong is a failure in the outcome.
    pub(crate) async fn exec(&self, request: ExecRequest, tools: Arc<dyn ScriptTools>) -> ExecOutcome {
        let ExecRequest { code, limits, abort, watcher, console, trace, run_options, parking, checkpoints } = request;
        if code.trim().is_empty() && !matches!(parking, Parking::Resume(..)) {
            return ExecOutcome::refused("the code is empty");
        }
        if let Err(why) = limits.check() {
            return ExecOutcome::refused(why.to_string());
        }
        if let Parking::Resume(parked, _) = &parking
            && let Err(why) = self.resumable(parked, tools.names())
        {
            return ExecOutcome { result: Err(Failure::NotResumed(why.to_string())), ..ExecOutcome::refused("") };
        }
        // Fires when this Exec ends, however it ends: calls still in flight are cancelled.
        let calls_cancel = abort.child_token();
        let _cancel_calls_on_exit = calls_cancel.clone().drop_guard();
        let replaying = matches!(parking, Parking::Resume(..));
        let clock = Arc::new(if replaying { GuestClock::replaying() } else { GuestClock::new() });
        let calls = NestedCalls::new(tools, &limits, calls_cancel, CallRecord::new(watcher));
        let calls = if matches!(parking, Parking::Never) { calls } else { calls.parkable() };
        let memory = usize::try_from(limits.max_memory_bytes).unwrap_or(usize::MAX);
        let store_limits = StoreLimitsBuilder::new().memory_size(memory).build();
        let mut state = ExecState::new(
            calls,
            ConsoleLog::new(limits.max_log_chars).watched(console),
            Images::new(limits.max_images),
            clock.clone(),
            store_limits,
        );
        state.trace = trace.then(Trace::default);
        state.wait_spin = self.inner.wait_spin;
        let (code, options, wasi_seed) = match parking {
            Parking::Never => (code, run_options.unwrap_or_else(|| guest_options(&limits, &self.inner.time_zone)), None),
            Parking::Allowed => {
                let seed = wasi_seed();
                state = state.journaled(Journal::recording(), Clocks::new(true), seed);
                (code, run_options.unwrap_or_else(|| guest_options(&limits, &self.inner.time_zone)), Some(seed))
            }
            Parking::Resume(parked, answers) => {
                let seed = parked.wasi_seed;
                let journal = Journal::replaying(parked.journal.clone());
                state = state.journaled(journal, Clocks::replaying(parked.clocks.clone()), seed);
                let (code, options) = (parked.code.clone(), parked.options.clone().into());
                state.resume = Some((parked, answers));
                (code, options, Some(seed))
            }
        };

        state.script = code.as_str().into();
        if let (Some(sink), Some(seed)) = (checkpoints, wasi_seed) {
            let guest = self.inner.guest_digest.clone();
            let options = (&options).into();
            state.checkpointing = Some(Checkpointing { sink, guest, code: code.clone(), options, seed, written: 0 });
        }
        let mut store = Store::new(&self.inner.engine, state);
        store.limiter(|state| &mut state.limiter);
        let budget = limits.budget;
        store.epoch_deadline_callback(move |context| {
            let clock = &context.data().clock;
            // A replayed journal ran within the budget once; replaying it gets twice that,
            // and more is a replay gone wrong, not a script to wait for.
            let limit = if clock.charging() { budget } else { budget.saturating_mul(2).saturating_add(REPLAY_SLACK) };
            if clock.spent() >= limit {
                return Err(BudgetExceeded.into());
            }
            // The epoch moves on while the guest waits too; only a guest that has held the
            // thread for a tick gives it up.
            Ok(if clock.held_executor_for() >= TICK { UpdateDeadline::Yield(1) } else { UpdateDeadline::Continue(1) })
        });
        store.set_epoch_deadline(1);

        let initialised = self.inner.initialised;
        let finished = if abort.is_cancelled() {
            None
        } else {
            let _ticking = self.inner.ticker.hold();
            let pre = &self.inner.pre;
            let store = &mut store;
            let code = &code;
            let options = &options;
            let run = Charged::new(
                async move {
                    let sandbox = pre
                        .instantiate_async(&mut *store)
                        .await
                        .map_err(|e| wasmtime::Error::new(CouldNotStart(format!("{e:#}"))))?;
                    if !initialised {
                        sandbox.call_init(&mut *store).await?;
                    }
                    let names = store.data().calls.tools().clone();
                    sandbox.call_run(&mut *store, code, names.names(), options).await
                },
                clock.clone(),
            );
            tokio::select! {
                biased;
                _ = abort.cancelled() => None,
                finished = run => Some(finished),
            }
        };
        let mut state = store.into_data();
        state.keep_values().await;
        let parked = matches!(&finished, Some(Err(trap)) if trap.downcast_ref::<ParkNow>().is_some()) && !abort.is_cancelled();
        let mut result = match finished {
            None => Err(Failure::Aborted),
            // An abort that lands while the guest runs cancels the calls in flight first;
            // the script may fail on that before the abort is seen. It failed because of the abort.
            Some(Ok(Err(_)) | Err(_)) if abort.is_cancelled() => Err(Failure::Aborted),
            Some(Err(_)) if parked => Err(Failure::Parked { approvals: state.calls.parked().len() }),
            Some(Ok(Ok(value))) => parse_value(value),
            Some(Ok(Err(error))) => Err(script_failure(error)),
            Some(Err(trap)) => Err(trap_failure(trap, budget, &state)),
        };
        // However the script ended, a replay that went another way is what happened.
        if let Some(why) = state.journal.diverged() {
            result = Err(Failure::NotResumed(why.to_string()));
        }
        let suspended = match (parked, wasi_seed) {
            (true, Some(seed)) => {
                Some(Box::new(Suspended::of(&state, &self.inner.guest_digest, code, (&options).into(), seed, Vec::new())))
            }
            _ => None,
        };
        let (calls, calls_omitted) = state.calls.into_record();
        ExecOutcome {
            result,
            logs: state.console.lines,
            logs_cut_chars: state.console.cut_chars,
            images: state.images.kept,
            images_dropped: state.images.dropped,
            calls,
            calls_omitted,
            guest_time: clock.spent(),
            trace: state.trace,
            suspended,
        }
    }

    /// Why `parked` cannot be taken up by this sandbox with `names` reachable: `Ok` when it
    /// can.
    pub(crate) fn resumable(&self, parked: &Suspended, names: &[String]) -> Result<(), NotResumable> {
        if parked.format != suspended::SUSPENDED_FORMAT {
            return Err(NotResumable::Format { stored: parked.format, read: suspended::SUSPENDED_FORMAT });
        }
        if parked.guest != self.inner.guest_digest {
            return Err(NotResumable::OtherGuest {
                parked_in: short(&parked.guest).to_string(),
                runs: short(&self.inner.guest_digest).to_string(),
            });
        }
        if parked.tool_names != names {
            let gone = parked.tool_names.iter().filter(|n| !names.contains(n)).cloned().collect();
            let new = names.iter().filter(|n| !parked.tool_names.contains(n)).cloned().collect();
            return Err(NotResumable::OtherTools { gone, new });
        }
        Ok(())
    }
}

/// Why a parked or running Exec cannot be taken up by this host: it is left for one that can.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotResumable {
    #[error("it was stored in format {stored}, and this host reads format {read}")]
    Format { stored: u32, read: u32 },
    /// The guests' digests, their first twelve digits.
    #[error("it parked in another guest component (sha256 {parked_in}), and this host runs {runs}")]
    OtherGuest { parked_in: String, runs: String },
    #[error(
        "the tools it can reach are not those it could reach when it parked (gone: {}; new: {})",
        list_or_none(gone),
        list_or_none(new)
    )]
    OtherTools { gone: Vec<String>, new: Vec<String> },
}

/// The first twelve digits of a digest.
fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() { "none".into() } else { names.join(", ") }
}

/// A fresh seed for the randomness WASI gives a guest whose Exec may park.
fn wasi_seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    if getrandom::fill(&mut seed).is_err() {
        // The operating system's randomness failed: a seed from the hasher's, as for Math.random.
        for (chunk, value) in seed.chunks_mut(8).zip(std::iter::repeat_with(random_seed)) {
            chunk.copy_from_slice(&value.to_le_bytes());
        }
    }
    seed
}

/// What the guest is told of the limits (the host enforces its own as well), and the
/// host's time zone.
fn guest_options(limits: &Limits, time_zone: &str) -> RunOptions {
    RunOptions {
        heap_bytes: limits.heap_bytes(),
        stack_bytes: ENGINE_STACK_BYTES,
        random_seed: random_seed(),
        argument_bytes: limits.max_argument_bytes as u64,
        argument_depth: MAX_ARGUMENT_DEPTH,
        // One unit past the cap, so the host still sees that the line was cut.
        log_line_chars: u32::try_from(limits.max_log_chars.saturating_add(1)).unwrap_or(u32::MAX),
        time_zone: time_zone.to_string(),
    }
}

/// The store the guest's `init` runs in when it is pre-initialised: no tools, no calls, and
/// WASI whose randomness and clocks are fixed, so the snapshot is the same bytes wherever
/// it is made (`scripts/build-guest --check` compares them).
pub(crate) fn snapshot_state() -> ExecState {
    let calls = NestedCalls::new(
        Arc::new(NoTools),
        &Limits::default().with_max_calls(0),
        CancellationToken::new(),
        CallRecord::new(None),
    );
    ExecState::new(calls, ConsoleLog::new(0), Images::new(0), Arc::new(GuestClock::new()), StoreLimitsBuilder::new().build())
        .with_fixed_wasi()
}

/// The tools of the run that pre-initialises the guest: none.
struct NoTools;

impl ScriptTools for NoTools {
    fn names(&self) -> &[String] {
        &[]
    }

    fn call(
        &self,
        _: u32,
        name: String,
        _: serde_json::Map<String, serde_json::Value>,
        _: CancellationToken,
        _: Option<crate::support::vocabulary::AskedBefore>,
    ) -> ToolFuture {
        Box::pin(std::future::ready(Err(
            crate::support::vocabulary::ToolError::discovery(format!("`{name}` is not reachable")).into()
        )))
    }

    fn search(&self, _: serde_json::Map<String, serde_json::Value>) -> Result<String, crate::support::vocabulary::ToolError> {
        Ok(r#"{"matches":[],"total":0}"#.to_string())
    }

    fn values(&self) -> Arc<crate::state::ConversationValues> {
        Arc::new(crate::state::ConversationValues::in_memory(Default::default(), Default::default()))
    }

    fn explain_not_a_function(&self, _: &str, _: Position) -> Option<String> {
        None
    }
}

fn engine_config(max_concurrent_execs: u32) -> Config {
    let mut config = compile_settings::compiler_config();
    config.max_wasm_stack(MAX_WASM_STACK);
    config.async_stack_size(ASYNC_STACK);
    if std::env::var_os(PERF_MAP_VARIABLE).is_some_and(|value| value == "1") {
        // For profiling: `perf` then names the guest's functions (docs/performance.md).
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let slots = max_concurrent_execs.max(1);
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(slots)
        .total_core_instances(slots * PER_COMPONENT_CORE_INSTANCES)
        .total_memories(slots * PER_COMPONENT_MEMORIES)
        .total_tables(slots * PER_COMPONENT_TABLES)
        .total_stacks(slots)
        .max_core_instances_per_component(PER_COMPONENT_CORE_INSTANCES)
        .max_memories_per_component(PER_COMPONENT_MEMORIES)
        .max_tables_per_component(PER_COMPONENT_TABLES)
        .max_memory_size(MAX_MEMORY_BYTES as usize)
        // Reset a finished Exec's memory by rewriting the pages it dirtied (found with
        // PAGEMAP_SCAN where the kernel has it) instead of unmapping them: the next Exec
        // takes no page faults and the process no TLB shootdowns.
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_TABLE_BYTES)
        .pagemap_scan(wasmtime::Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

/// A fresh seed for the script's `Math.random`.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the operating system's randomness.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or(Duration::ZERO).as_nanos());
    hasher.finish()
}

fn parse_value(json: Option<String>) -> Result<Option<serde_json::Value>, Failure> {
    let Some(json) = json else { return Ok(None) };
    match serde_json::from_str(&json) {
        Ok(value) => Ok(Some(value)),
        Err(e) => Err(Failure::Unserializable(Uncaught::new(format!(
            "the value could not be read back ({e}); it may be nested too deeply"
        )))),
    }
}

fn script_failure(error: ScriptError) -> Failure {
    match error {
        ScriptError::Syntax(error) => Failure::Syntax(SyntaxError {
            message: error.message,
            position: error.position.map(position),
            unclosed: error.unclosed,
        }),
        ScriptError::Thrown(error) => Failure::Thrown(uncaught(error)),
        ScriptError::Unserializable(error) => Failure::Unserializable(uncaught(error)),
        ScriptError::NeverSettles => Failure::NeverSettles,
    }
}

fn uncaught(error: guest::Uncaught) -> Uncaught {
    let frames = error.frames.into_iter().map(|frame| Frame::new(frame.function, position(frame.position))).collect();
    Uncaught { error: error.error, frames }
}

fn position(position: guest::Position) -> Position {
    Position { line: position.line, column: position.column }
}

fn trap_failure(error: wasmtime::Error, budget: Duration, state: &ExecState) -> Failure {
    if error.downcast_ref::<BudgetExceeded>().is_some() {
        return Failure::BudgetExceeded { budget };
    }
    if let Some(exceeded) = error.downcast_ref::<NestedWaitExceeded>() {
        return Failure::NestedWaitExceeded { limit: exceeded.limit };
    }
    if let Some(CouldNotStart(why)) = error.downcast_ref::<CouldNotStart>() {
        return Failure::Unavailable(why.clone());
    }
    match error.downcast_ref::<Trap>() {
        // QuickJS has no stack limit on WASI, so runaway recursion ends here: either the
        // engine's native stack or its shadow stack in linear memory runs out.
        Some(Trap::StackOverflow | Trap::MemoryOutOfBounds) => {
            Failure::Crashed("it ran out of stack (the script recursed too deeply)".into())
        }
        // The guest aborts through `unreachable`; what it printed says why.
        _ => Failure::Crashed(describe_crash(state, &error)),
    }
}

/// Why the guest stopped, from what it printed before it did.
fn describe_crash(state: &ExecState, error: &wasmtime::Error) -> String {
    let stderr = state.stderr.contents();
    let text = String::from_utf8_lossy(&stderr);
    // For the operator (`-v`): what the guest printed. The model is told only what it can
    // act on, never the engine's own words.
    tracing::debug!("the guest stopped ({error}); it printed: {}", text.trim());
    if text.contains("memory allocation") || text.contains("out of memory") {
        return "it ran out of memory".into();
    }
    if text.contains("panicked") {
        return "the engine stopped on an internal error".into();
    }
    match error.downcast_ref::<Trap>() {
        Some(trap) => format!("the engine stopped unexpectedly ({trap})"),
        None => format!("the engine stopped unexpectedly ({})", error.root_cause()),
    }
}
