//! What one Exec's store holds (its WASI context with no files, no sockets and no
//! environment; its nested calls, timers, console output, images and clock) and how it
//! answers the guest's imports.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wasmtime::StoreLimits;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::call_record::Images;
use super::calls::{self, NestedCalls, WaitEnd, Woken};
use super::clock::GuestClock;
use super::console::ConsoleLog;
use super::failure::Position;
use super::hot_wait::HotWait;
use super::journal::{Asked, CallAnswer, Clocks, Delivered, Entry, Journal, MonotonicClock, Replayed, WaitEvent, WallClock};
use super::suspended::{Checkpointing, Checkpoints, Suspended};
use super::timers::Timers;
use super::trace::{BoundaryEvent, Trace};
use crate::sandbox::guest::{Completion, Event, GuestHost, Level, Started, ToolValue};
use crate::sources::tools::{ScriptValue, ToolOutput};
use crate::state::{ExecValues, ValueError};
use crate::support::report::error_sentence;
use crate::support::vocabulary::{Approval, ToolError};

/// Bytes of the guest's own stderr kept (it carries an engine panic's message).
pub const GUEST_STDERR_BYTES: usize = 16 * 1024;

/// The randomness a pre-initialising guest reads, over and over.
const FIXED_RANDOM: &[u8; 16] = b"exec-host:snapsh";

/// The clocks of a pre-initialising guest: always the Unix epoch, always 0.
struct FixedClock;

impl wasmtime_wasi::HostWallClock for FixedClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl wasmtime_wasi::HostMonotonicClock for FixedClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        0
    }
}

pub(crate) struct ExecState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: StoreLimits,
    pub(crate) calls: NestedCalls,
    pub(crate) timers: Timers,
    pub(crate) console: ConsoleLog,
    pub(crate) images: Images,
    pub(crate) clock: Arc<GuestClock>,
    pub(crate) stderr: MemoryOutputPipe,
    /// The boundary's events, when the Exec asked for them.
    pub(crate) trace: Option<Trace>,
    /// How long a wait spins before it gives the thread back (see [`HotWait`]).
    pub(crate) wait_spin: Duration,
    /// The calls' cancellation: a spinning wait stops when the Exec is aborted.
    stop: CancellationToken,
    /// Every answer given, when the Exec may park; the answers to give again, when it resumes.
    pub(crate) journal: Journal,
    /// The clocks WASI gives the guest, through the journal.
    pub(crate) clocks: Clocks,
    /// What a resumed Exec takes up once its journal is replayed: the parked Exec and the
    /// answers to its approvals.
    pub(crate) resume: Option<(Box<Suspended>, HashMap<u32, Approval>)>,
    /// What the script's `store` and `load` see, and what it changed.
    pub(crate) values: ExecValues,
    /// The script the guest runs, for naming what it failed to call.
    pub(crate) script: Arc<str>,
    /// The places of the script named already, and what was said of each: a script that
    /// fails the same call in a loop has its text parsed once per place, and at most
    /// [`MAX_EXPLAINED_PLACES`] places are ever parsed for.
    explained: HashMap<(u32, u32), Option<String>>,
    /// Where the Exec's checkpoints go, when it keeps them.
    pub(crate) checkpointing: Option<Checkpointing>,
}

/// Where an import that asks something stands with the journal ([`ExecState::replay_asked`]).
enum Asking<T> {
    /// The answer the journal recorded for the same question.
    Replayed(T),
    /// The replay went another way: refuse without reaching anything.
    Diverged,
    /// Not replaying: answer it live, and record the answer under this digest.
    Live(Option<Asked>),
}

/// The message a replaying guest gets for a request its journal does not have: nothing
/// reaches a tool, and the Exec fails once it returns (see [`Journal`]).
const DIVERGED: &str = "the parked script did not run the same way again; nothing was called";

/// Ends the run: every call still open waits for a person's answer, and the Exec parks.
#[derive(Debug, thiserror::Error)]
#[error("the Exec parked: its calls wait for approvals")]
pub(crate) struct ParkNow;

/// Ends the run: a resumed Exec did not replay the same way (the journal says how).
#[derive(Debug, thiserror::Error)]
#[error("the parked Exec did not replay the same way")]
pub(crate) struct Diverged;

/// Places of a script whose `not a function` the host names, per run; past them the engine's
/// bare message stands.
pub(crate) const MAX_EXPLAINED_PLACES: usize = 64;

impl ExecState {
    pub(crate) fn new(
        calls: NestedCalls,
        console: ConsoleLog,
        images: Images,
        clock: Arc<GuestClock>,
        limiter: StoreLimits,
    ) -> Self {
        let stderr = MemoryOutputPipe::new(GUEST_STDERR_BYTES);
        // No preopens, no environment, no arguments; stdout is discarded.
        let wasi = wasmtime_wasi::WasiCtxBuilder::new().stderr(stderr.clone()).build();
        let stop = calls.cancellation().clone();
        ExecState {
            stop,
            wasi,
            table: ResourceTable::new(),
            limiter,
            calls,
            timers: Timers::default(),
            console,
            images,
            clock,
            stderr,
            trace: None,
            wait_spin: Duration::ZERO,
            journal: Journal::default(),
            clocks: Clocks::new(false),
            resume: None,
            values: ExecValues::default(),
            script: Arc::from(""),
            explained: HashMap::new(),
            checkpointing: None,
        }
    }

    /// The same state recording a journal (or replaying `journal` first), with WASI whose
    /// clocks go through it and whose randomness comes from `seed`: what a fresh instance
    /// needs to reach the same state again.
    pub(crate) fn journaled(mut self, journal: Journal, clocks: Clocks, seed: [u8; 32]) -> Self {
        use rand::SeedableRng;
        let mut insecure_seed = seed;
        insecure_seed[0] ^= 1;
        let mut seed_bytes = [0u8; 16];
        seed_bytes.copy_from_slice(&seed[16..]);
        self.wasi = wasmtime_wasi::WasiCtxBuilder::new()
            .stderr(self.stderr.clone())
            .secure_random(rand::rngs::StdRng::from_seed(seed))
            .insecure_random(rand::rngs::StdRng::from_seed(insecure_seed))
            .insecure_random_seed(u128::from_le_bytes(seed_bytes))
            .wall_clock(WallClock(clocks.clone()))
            .monotonic_clock(MonotonicClock(clocks.clone()))
            .build();
        self.journal = journal;
        self.clocks = clocks;
        self
    }

    /// The journal's answer for an import, or `Live` to answer it now.
    fn replay<T>(&mut self, pick: impl FnOnce(&Entry) -> Result<T, String>) -> Replayed<T> {
        self.journal.replay(pick)
    }

    /// The journal's side of an import that asks something (`parts`, kept by digest): when
    /// replaying, the answer `answer_of` reads from the next entry if it asked the same, else
    /// a divergence (`expected` says what the journal has); live, the digest its answer is
    /// recorded under (none when nothing is journaled). One rule for every such import.
    fn replay_asked<T>(
        &mut self,
        parts: &[&str],
        answer_of: impl FnOnce(&Entry) -> Option<(Asked, T)>,
        expected: impl FnOnce(&Entry) -> String,
    ) -> Asking<T> {
        let asked = self.journal.is_on().then(|| Asked::of(parts));
        let replayed = self.replay(|entry| match answer_of(entry) {
            Some((then, answer)) if Some(then) == asked => Ok(answer),
            _ => Err(expected(entry)),
        });
        match replayed {
            Replayed::Answer(answer) => Asking::Replayed(answer),
            Replayed::Diverged => Asking::Diverged,
            Replayed::Live => Asking::Live(asked),
        }
    }

    /// Records the live answer of an import that asked (`asked`, from [`Self::replay_asked`]).
    fn record_asked(&mut self, asked: Option<Asked>, entry: impl FnOnce(Asked) -> Entry) {
        if let Some(asked) = asked {
            self.journal.record(entry(asked));
        }
    }

    /// The replay has reached the wait the Exec parked in: from here it runs live, as it
    /// was when it parked, with its parked calls asked again with their answers.
    fn go_live(&mut self) -> wasmtime::Result<()> {
        if let Err(why) = self.clocks.go_live() {
            self.journal.diverge_because(why.to_string());
            return Err(Diverged.into());
        }
        self.journal.go_live();
        let Some((parked, answers)) = self.resume.take() else { return Ok(()) };
        let parked = *parked;
        let now = std::time::Instant::now();
        self.timers.restore(parked.timers.last_id, &parked.timers.pending, now);
        self.console.restore(parked.console, parked.console_cut_chars);
        self.images.kept = parked.images;
        self.images.dropped = parked.images_dropped;
        self.clock.resumed(parked.guest_time);
        self.calls.resume(parked.calls, parked.calls_omitted, parked.waited, parked.parked, parked.unfinished, &answers);
        Ok(())
    }

    /// The Exec as it is now, at a wait, when it keeps checkpoints and has done something
    /// since the last one (and can be taken up: its journal is whole).
    fn checkpoint(&mut self) -> Option<(Arc<dyn Checkpoints>, Suspended)> {
        let checkpointing = self.checkpointing.as_ref()?;
        let entries = self.journal.entries().len();
        if entries == checkpointing.written || !self.journal.can_park() || self.clocks.readings().is_none() {
            return None;
        }
        let unfinished = self.calls.running();
        let checkpoint = Suspended::of(
            self,
            &checkpointing.guest,
            checkpointing.code.clone(),
            checkpointing.options.clone(),
            checkpointing.seed,
            unfinished,
        );
        let checkpointing = self.checkpointing.as_mut()?;
        checkpointing.written = entries;
        Some((checkpointing.sink.clone(), checkpoint))
    }

    /// The same state with WASI whose randomness and clocks are fixed: what the guest reads
    /// from them while it is pre-initialised ends up in the snapshot, which must be the
    /// same bytes on every machine.
    pub(crate) fn with_fixed_wasi(mut self) -> Self {
        self.wasi = wasmtime_wasi::WasiCtxBuilder::new()
            .stderr(self.stderr.clone())
            .secure_random(wasmtime_wasi::Deterministic::new(FIXED_RANDOM.to_vec()))
            .insecure_random(wasmtime_wasi::Deterministic::new(FIXED_RANDOM.to_vec()))
            .insecure_random_seed(u128::from_le_bytes(*FIXED_RANDOM))
            .wall_clock(FixedClock)
            .monotonic_clock(FixedClock)
            .build();
        self
    }

    fn trace(&mut self, event: impl FnOnce() -> BoundaryEvent) {
        if let Some(trace) = &mut self.trace {
            trace.push(event());
        }
    }

    /// A finished call as the script gets it: images set aside as attachments, the value
    /// as text or JSON, a failure as its message.
    fn deliver(&mut self, result: Result<ToolOutput, ToolError>) -> Result<ToolValue, String> {
        match result {
            Ok(mut output) => {
                self.images.add(std::mem::take(&mut output.images));
                Ok(match output.into_script_value() {
                    ScriptValue::Json(json) => ToolValue::Json(json),
                    ScriptValue::Text(text) => ToolValue::Text(text),
                })
            }
            Err(error) => Err(error.message),
        }
    }
}

impl WasiView for ExecState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl GuestHost for ExecState {
    fn call(&mut self, name: String, args_json: String) -> Started {
        self.trace(|| BoundaryEvent::Call { name: name.clone(), args_json: args_json.clone() });
        let replayed = self.replay_asked(
            &[&name, &args_json],
            |entry| match entry {
                Entry::Call { asked, answer } => Some((*asked, answer.clone())),
                _ => None,
            },
            |entry| match entry {
                Entry::Call { .. } => format!("a call of `{name}` with other arguments"),
                _ => format!("a call of `{name}`"),
            },
        );
        let asked = match replayed {
            Asking::Replayed(CallAnswer::Pending(id)) => return Started::Pending(id),
            Asking::Replayed(CallAnswer::Done(delivered)) => return Started::Done(delivered.into()),
            Asking::Diverged => return Started::Done(Err(DIVERGED.into())),
            Asking::Live(asked) => asked,
        };
        // The tool's first poll is the tool's time (and any wake-up of another thread it
        // causes), not the script's.
        let paused = self.clock.pause();
        let started = self.calls.start(name, args_json);
        drop(paused);
        let started = match started {
            calls::Started::Pending(id) => Started::Pending(id),
            calls::Started::Done(result) => Started::Done(self.deliver(result)),
        };
        let answer = match &started {
            Started::Pending(id) => CallAnswer::Pending(*id),
            Started::Done(outcome) => CallAnswer::Done(Delivered::from(outcome)),
        };
        self.record_asked(asked, |asked| Entry::Call { asked, answer });
        started
    }

    fn start_timer(&mut self, delay_ms: u32) -> Result<u32, String> {
        let replayed = self.replay(|entry| match entry {
            Entry::StartTimer { delay_ms: then, answer } if *then == delay_ms => Ok(answer.clone()),
            _ => Err(format!("a timer of {delay_ms} ms")),
        });
        match replayed {
            Replayed::Answer(answer) => return answer,
            Replayed::Diverged => return Err(DIVERGED.into()),
            Replayed::Live => {}
        }
        let answer = self.timers.start(Duration::from_millis(u64::from(delay_ms))).map_err(|refused| refused.to_string());
        self.journal.record(Entry::StartTimer { delay_ms, answer: answer.clone() });
        answer
    }

    fn cancel_call(&mut self, id: u32) {
        let replayed = self.replay(|entry| match entry {
            Entry::CancelCall { id: then } if *then == id => Ok(()),
            _ => Err(format!("stopping call {id}")),
        });
        if let Replayed::Live = replayed {
            self.calls.cancel(id);
            self.journal.record(Entry::CancelCall { id });
        }
    }

    fn cancel_timer(&mut self, id: u32) {
        let replayed = self.replay(|entry| match entry {
            Entry::CancelTimer { id: then } if *then == id => Ok(()),
            _ => Err(format!("clearing timer {id}")),
        });
        if let Replayed::Live = replayed {
            self.timers.cancel(id);
            self.journal.record(Entry::CancelTimer { id });
        }
    }

    async fn wait_next(&mut self) -> wasmtime::Result<Vec<Event>> {
        if self.journal.replayed_all() {
            let clock = self.clock.clone();
            let _paused = clock.pause();
            self.go_live()?;
        }
        let replayed = self.replay(|entry| match entry {
            Entry::WaitNext { events } => Ok(events.clone()),
            _ => Err("a wait for calls and timers".to_string()),
        });
        match replayed {
            Replayed::Answer(events) => return Ok(events.into_iter().map(WaitEvent::into_event).collect()),
            Replayed::Diverged => return Err(Diverged.into()),
            Replayed::Live => {}
        }
        // Polling the calls in flight, the last poll of each included, waiting for a timer
        // and writing a checkpoint are not the script's time.
        let clock = self.clock.clone();
        let paused = clock.pause();
        if let Some((sink, checkpoint)) = self.checkpoint() {
            sink.keep(checkpoint).await;
        }
        // Another process answering needs a core more than this thread needs to stay warm.
        let spin = if self.calls.waiting_elsewhere() { Duration::ZERO } else { self.wait_spin };
        let woken = HotWait::new(self.calls.finished(&mut self.timers), spin, &self.stop).await;
        drop(paused);
        let woken = match woken {
            Ok(woken) => woken,
            Err(WaitEnd::Exceeded(exceeded)) => return Err(exceeded.into()),
            Err(WaitEnd::Park) if self.journal.can_park() && self.clocks.readings().is_some() => return Err(ParkNow.into()),
            Err(WaitEnd::Park) => Woken {
                calls: self.calls.refuse_parked("what it has done so far is more than a parked Exec keeps"),
                timers: Vec::new(),
            },
        };
        self.clock.waited();
        let mut events = Vec::with_capacity(woken.calls.len() + woken.timers.len());
        for (id, result) in woken.calls {
            events.push(Event::Call(Completion { id, outcome: self.deliver(result) }));
        }
        events.extend(woken.timers.into_iter().map(Event::Timer));
        if self.journal.is_on() {
            self.journal.record(Entry::WaitNext { events: events.iter().map(WaitEvent::from_event).collect() });
        }
        Ok(events)
    }

    fn search(&mut self, args_json: String) -> Result<String, String> {
        // Searching is the host's work, like a tool's, not the script's time.
        self.trace(|| BoundaryEvent::Search { args_json: args_json.clone() });
        let replayed = self.replay_asked(
            &[&args_json],
            |entry| match entry {
                Entry::Search { asked, answer } => Some((*asked, answer.clone())),
                _ => None,
            },
            |_| "a search".to_string(),
        );
        let asked = match replayed {
            Asking::Replayed(answer) => return answer,
            Asking::Diverged => return Err(DIVERGED.into()),
            Asking::Live(asked) => asked,
        };
        let clock = self.clock.clone();
        let _paused = clock.pause();
        let answer = self.calls.search(&args_json).map_err(|error| error.message);
        self.record_asked(asked, |asked| Entry::Search { asked, answer: answer.clone() });
        answer
    }

    fn explain_not_a_function(&mut self, line: u32, column: u32) -> Option<String> {
        // Charged to the script's time (the clock runs): a script that makes such errors in
        // a loop pays for them. The same answer whenever it is asked, so nothing is journaled.
        if let Some(said) = self.explained.get(&(line, column)) {
            return said.clone();
        }
        if self.explained.len() >= MAX_EXPLAINED_PLACES {
            return None;
        }
        let said = self.calls.explain_not_a_function(&self.script, Position { line, column });
        self.explained.insert((line, column), said.clone());
        said
    }

    fn console_write(&mut self, level: Level, message: String, cut_units: u64) {
        // A replayed line is in the console log already, and was shown when first written.
        match self.replay(|entry| if let Entry::Console = entry { Ok(()) } else { Err("a console line".to_string()) }) {
            Replayed::Live => {}
            Replayed::Answer(()) | Replayed::Diverged => return,
        }
        self.console.write(level, &message, cut_units);
        self.journal.record(Entry::Console);
        self.trace(|| BoundaryEvent::Console { level: level.into(), message, cut_units });
    }

    async fn load(&mut self, key: String) -> Result<Option<String>, String> {
        self.trace(|| BoundaryEvent::Load { key: key.clone() });
        let replayed = self.replay_asked(
            &["load", &key],
            |entry| match entry {
                Entry::Load { asked, answer } => Some((*asked, answer.clone())),
                _ => None,
            },
            |_| format!("load() of a {}-byte key", key.len()),
        );
        let asked = match replayed {
            Asking::Replayed(answer) => return answer,
            Asking::Diverged => return Err(DIVERGED.into()),
            Asking::Live(asked) => asked,
        };
        // Reading the conversation's values is the store's time, not the script's.
        let clock = self.clock.clone();
        let paused = clock.pause();
        let from = self.calls.tools().values();
        let answer = self.values.load(&from, &key).await.map_err(|error| value_message("load", &error));
        drop(paused);
        self.record_asked(asked, |asked| Entry::Load { asked, answer: answer.clone() });
        answer
    }

    async fn store(&mut self, key: String, value_json: Option<String>) -> Result<(), String> {
        self.trace(|| BoundaryEvent::Store { key: key.clone(), value_json: value_json.clone() });
        let replayed = self.replay_asked(
            &["store", &key, value_json.as_deref().unwrap_or("")],
            |entry| match entry {
                Entry::Store { asked, answer } => Some((*asked, answer.clone())),
                _ => None,
            },
            |_| format!("store() of a {}-byte key", key.len()),
        );
        let asked = match replayed {
            Asking::Replayed(answer) => {
                if answer.is_ok() {
                    self.values.stored_before(&key, value_json);
                }
                return answer;
            }
            Asking::Diverged => return Err(DIVERGED.into()),
            Asking::Live(asked) => asked,
        };
        let clock = self.clock.clone();
        let paused = clock.pause();
        let from = self.calls.tools().values();
        let answer = self.values.store(&from, &key, value_json).await.map_err(|error| value_message("store", &error));
        drop(paused);
        self.record_asked(asked, |asked| Entry::Store { asked, answer: answer.clone() });
        answer
    }
}

impl ExecState {
    /// Keeps what the script changed with `store`, once it has returned (or parked). What
    /// cannot be kept is said in its console output, so the model reads it.
    pub(crate) async fn keep_values(&mut self) {
        let changes = self.values.take_changes();
        if changes.is_empty() {
            return;
        }
        if let Err(error) = self.calls.tools().values().commit(&changes).await {
            let line = format!("exec-host: what this script stored was not kept: {}", error_sentence(&error));
            self.console.write(Level::Warn, &line, 0);
        }
    }
}

/// The message `store()` or `load()` throws.
fn value_message(function: &str, error: &ValueError) -> String {
    format!("{function}(): {}", error_sentence(error))
}
