//! The journal of an Exec that may park: every answer the host gave the guest, in order,
//! and every reading of the clocks it let the guest make. A fresh instance of the same
//! guest, given the same script, options and randomness and then the same answers,
//! reaches the same state: the engine is deterministic, and these are all it learns from
//! outside. That is how a parked Exec resumes in another process: its journal is replayed
//! into a new instance, which is never allowed to reach a tool while it replays, and the
//! Exec goes on live from where the journal ends.
//!
//! Replay checks itself: each import the guest makes must be the one the journal has next,
//! asking the same thing (a call's name and arguments, a search's arguments, a kept value's
//! key and value, by digest).
//! Anything else is a divergence: from then on nothing reaches a tool, and the Exec fails
//! saying so. It never continues wrong.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::sandbox::guest::{Completion, Event, ToolValue};
use crate::support::lock::Unpoisoned;

/// Bytes of answers one journal keeps. An Exec whose journal grows past it cannot park: a
/// call that would park it is refused instead (its journal is what a store would keep).
pub const MAX_JOURNAL_BYTES: usize = 12 * 1024 * 1024;

/// Clock readings one journal keeps; past them the Exec cannot park either.
const MAX_CLOCK_READINGS: usize = 1_000_000;

/// One answer the host gave, in the order given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "import", rename_all = "kebab-case")]
pub(crate) enum Entry {
    /// `tools.call`: what was asked (by digest) and the answer.
    Call { asked: Asked, answer: CallAnswer },
    /// `tools.cancel-call`.
    CancelCall { id: u32 },
    /// `tools.start-timer`.
    StartTimer { delay_ms: u32, answer: Result<u32, String> },
    /// `tools.cancel-timer`.
    CancelTimer { id: u32 },
    /// `tools.wait-next`.
    WaitNext { events: Vec<WaitEvent> },
    /// `tool-search.search`.
    Search { asked: Asked, answer: Result<String, String> },
    /// `console.write`: only its place; the line itself is in the console log.
    Console,
    /// `state.load`: the key asked (by digest) and the value given.
    Load { asked: Asked, answer: Result<Option<String>, String> },
    /// `state.store`: the key and value asked (by digest) and the answer. A replayed store
    /// changes nothing: what the Exec stored before it parked was kept when it parked.
    Store { asked: Asked, answer: Result<(), String> },
}

/// A digest of what an import was asked, to find a replay that asks something else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Asked(pub [u8; 16]);

impl Asked {
    pub fn of(parts: &[&str]) -> Self {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part.as_bytes());
        }
        let digest = hasher.finalize();
        let mut bytes = [0; 16];
        bytes.copy_from_slice(&digest[..16]);
        Asked(bytes)
    }
}

/// What `tools.call` answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum CallAnswer {
    Pending(u32),
    Done(Delivered),
}

/// A finished call as the guest got it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Delivered {
    Json(String),
    Text(String),
    Error(String),
}

impl Delivered {
    fn bytes(&self) -> usize {
        match self {
            Delivered::Json(text) | Delivered::Text(text) | Delivered::Error(text) => text.len(),
        }
    }
}

/// One event of a `wait-next` answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum WaitEvent {
    Call { id: u32, delivered: Delivered },
    Timer { id: u32 },
}

impl From<&Result<ToolValue, String>> for Delivered {
    fn from(outcome: &Result<ToolValue, String>) -> Self {
        match outcome {
            Ok(ToolValue::Json(json)) => Delivered::Json(json.clone()),
            Ok(ToolValue::Text(text)) => Delivered::Text(text.clone()),
            Err(message) => Delivered::Error(message.clone()),
        }
    }
}

impl From<Delivered> for Result<ToolValue, String> {
    fn from(delivered: Delivered) -> Self {
        match delivered {
            Delivered::Json(json) => Ok(ToolValue::Json(json)),
            Delivered::Text(text) => Ok(ToolValue::Text(text)),
            Delivered::Error(message) => Err(message),
        }
    }
}

impl WaitEvent {
    pub fn from_event(event: &Event) -> Self {
        match event {
            Event::Call(done) => WaitEvent::Call { id: done.id, delivered: Delivered::from(&done.outcome) },
            Event::Timer(id) => WaitEvent::Timer { id: *id },
        }
    }

    pub fn into_event(self) -> Event {
        match self {
            WaitEvent::Call { id, delivered } => Event::Call(Completion { id, outcome: delivered.into() }),
            WaitEvent::Timer { id } => Event::Timer(id),
        }
    }
}

impl Entry {
    /// Roughly what the entry takes when stored.
    fn bytes(&self) -> usize {
        32 + match self {
            Entry::Call { answer: CallAnswer::Done(delivered), .. } => delivered.bytes(),
            Entry::WaitNext { events } => events
                .iter()
                .map(|event| match event {
                    WaitEvent::Call { delivered, .. } => 16 + delivered.bytes(),
                    WaitEvent::Timer { .. } => 16,
                })
                .sum(),
            Entry::Search { answer, .. } => answer.as_ref().map_or_else(String::len, String::len),
            Entry::StartTimer { answer: Err(message), .. } => message.len(),
            Entry::Load { answer, .. } => answer.as_ref().map_or_else(String::len, |value| value.as_ref().map_or(0, String::len)),
            Entry::Store { answer: Err(message), .. } => message.len(),
            _ => 0,
        }
    }

    /// The import this entry answers, for the message of a divergence.
    fn import(&self) -> &'static str {
        match self {
            Entry::Call { .. } => "tools.call",
            Entry::CancelCall { .. } => "tools.cancel-call",
            Entry::StartTimer { .. } => "tools.start-timer",
            Entry::CancelTimer { .. } => "tools.cancel-timer",
            Entry::WaitNext { .. } => "tools.wait-next",
            Entry::Search { .. } => "tool-search.search",
            Entry::Console => "console.write",
            Entry::Load { .. } => "state.load",
            Entry::Store { .. } => "state.store",
        }
    }
}

/// What the guest read of the clocks, in order, per clock.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClockReadings {
    /// Wall-clock readings as nanoseconds since the epoch.
    pub wall: Vec<u128>,
    /// Monotonic readings in nanoseconds.
    pub monotonic: Vec<u64>,
}

/// The journal of one Exec: recording while live, answering while replaying.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    /// Whether answers are recorded at all (only for an Exec that may park).
    on: bool,
    entries: Vec<Entry>,
    /// While replaying: where the next answer is.
    replay_at: Option<usize>,
    bytes: usize,
    /// Grown past [`MAX_JOURNAL_BYTES`]: recording stopped, and the Exec cannot park.
    overflowed: bool,
    /// The first way a replay went another way than the journal.
    diverged: Option<String>,
}

/// What the journal says of an import the guest makes now.
pub(crate) enum Replayed<T> {
    /// Not replaying: answer it live (and record it).
    Live,
    /// The journal's answer.
    Answer(T),
    /// The replay went another way: refuse without reaching anything.
    Diverged,
}

impl Journal {
    /// A journal that replays `entries` first.
    pub fn replaying(entries: Vec<Entry>) -> Self {
        let bytes = entries.iter().map(Entry::bytes).sum();
        Journal { on: true, entries, replay_at: Some(0), bytes, overflowed: false, diverged: None }
    }

    /// A journal that records from the start.
    pub fn recording() -> Self {
        Journal { on: true, ..Journal::default() }
    }

    /// Whether answers are recorded (or replayed).
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// How a replay went another way, if it did.
    pub fn diverged(&self) -> Option<&str> {
        self.diverged.as_deref()
    }

    /// Notes a divergence found outside the journal (the clocks).
    pub fn diverge_because(&mut self, why: String) {
        self.diverged.get_or_insert(why);
    }

    pub fn can_park(&self) -> bool {
        self.on && !self.overflowed && self.diverged.is_none()
    }

    /// Records a live answer.
    pub fn record(&mut self, entry: Entry) {
        if !self.on || self.overflowed || self.replay_at.is_some() {
            return;
        }
        self.bytes += entry.bytes();
        if self.bytes > MAX_JOURNAL_BYTES {
            self.overflowed = true;
            self.entries = Vec::new();
            return;
        }
        self.entries.push(entry);
    }

    /// The entries so far, for a parked Exec.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The journal's answer for the import the guest makes now: `pick` reads it from the
    /// next entry, or says it is another import or asks another thing.
    pub fn replay<T>(&mut self, pick: impl FnOnce(&Entry) -> Result<T, String>) -> Replayed<T> {
        if self.diverged.is_some() {
            return Replayed::Diverged;
        }
        let Some(at) = self.replay_at else { return Replayed::Live };
        let Some(entry) = self.entries.get(at) else {
            return self.diverge(format!("the script made more requests than it had made before it parked ({at})"));
        };
        match pick(entry) {
            Ok(answer) => {
                self.replay_at = Some(at + 1);
                Replayed::Answer(answer)
            }
            Err(why) => {
                let expected = entry.import();
                self.diverge(format!("request {} was {why}, where the parked script made {expected}", at + 1))
            }
        }
    }

    /// Whether the replay has given every answer: the next `wait-next` is the one the Exec
    /// parked in, and it runs live.
    pub fn replayed_all(&self) -> bool {
        self.replay_at.is_some_and(|at| at == self.entries.len())
    }

    /// Ends the replay: from now on every import is live and recorded.
    pub fn go_live(&mut self) {
        self.replay_at = None;
    }

    fn diverge<T>(&mut self, why: String) -> Replayed<T> {
        self.diverged.get_or_insert(why);
        Replayed::Diverged
    }
}

/// A resumed script read the clocks another number of times than before it parked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the script read the clocks a different number of times than before it parked")]
pub(crate) struct ClocksDiverged;

/// The clocks the guest reads through WASI, recorded live and replayed, shared by the two
/// clocks and the Exec's state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Clocks(Arc<Mutex<ClockState>>);

#[derive(Debug, Default)]
struct ClockState {
    recorded: ClockReadings,
    /// While replaying: the readings still to give back.
    replay: Option<(VecDeque<u128>, VecDeque<u64>)>,
    recording: bool,
    overflowed: bool,
    /// A replay read a clock more often than the parked script did.
    diverged: bool,
    /// Live monotonic readings count from here, plus the last reading before it.
    monotonic_start: Option<(std::time::Instant, u64)>,
}

impl Clocks {
    /// Clocks that record what the guest reads (`recording`), or only read the time.
    pub fn new(recording: bool) -> Self {
        Clocks(Arc::new(Mutex::new(ClockState { recording, ..ClockState::default() })))
    }

    /// Clocks that give back `readings` first, then record.
    pub fn replaying(readings: ClockReadings) -> Self {
        let replay = Some((readings.wall.iter().copied().collect(), readings.monotonic.iter().copied().collect()));
        Clocks(Arc::new(Mutex::new(ClockState { recorded: readings, replay, recording: true, ..ClockState::default() })))
    }

    /// Ends the replay: every reading from now on is the real time. Readings the replay did
    /// not use are a divergence.
    pub fn go_live(&self) -> Result<(), ClocksDiverged> {
        let mut state = self.0.locked();
        let left = state.replay.take().map_or(0, |(wall, monotonic)| wall.len() + monotonic.len());
        if state.diverged || left > 0 {
            return Err(ClocksDiverged);
        }
        let last = state.recorded.monotonic.last().copied().unwrap_or(0);
        state.monotonic_start = Some((std::time::Instant::now(), last));
        Ok(())
    }

    /// What was read, for a parked Exec; `None` when too much was read to keep.
    pub fn readings(&self) -> Option<ClockReadings> {
        let state = self.0.locked();
        (!state.overflowed).then(|| state.recorded.clone())
    }

    fn read<T: Copy + Default>(
        &self,
        replayed: impl FnOnce(&mut (VecDeque<u128>, VecDeque<u64>)) -> Option<T>,
        now: impl FnOnce(&mut ClockState) -> T,
        keep: impl FnOnce(&mut ClockReadings, T),
    ) -> T {
        let mut state = self.0.locked();
        if let Some(replay) = &mut state.replay {
            return match replayed(replay) {
                Some(value) => value,
                None => {
                    state.diverged = true;
                    T::default()
                }
            };
        }
        let value = now(&mut state);
        if state.recording && !state.overflowed {
            let readings = state.recorded.wall.len() + state.recorded.monotonic.len();
            if readings >= MAX_CLOCK_READINGS {
                state.overflowed = true;
                state.recorded = ClockReadings::default();
            } else {
                keep(&mut state.recorded, value);
            }
        }
        value
    }
}

/// `wasi:clocks/wall-clock` through the journal.
pub(crate) struct WallClock(pub Clocks);

impl wasmtime_wasi::HostWallClock for WallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let nanos = self.0.read(
            |(wall, _)| wall.pop_front(),
            |_| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_nanos()),
            |recorded, value| recorded.wall.push(value),
        );
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// `wasi:clocks/monotonic-clock` through the journal. Live readings after a replay go on
/// from the last replayed one, so the clock never runs back across a resume.
pub(crate) struct MonotonicClock(pub Clocks);

impl wasmtime_wasi::HostMonotonicClock for MonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.0.read(
            |(_, monotonic)| monotonic.pop_front(),
            // Nanoseconds since the Exec's first live moment, after the last reading of
            // any process it ran in before.
            |state| {
                let (start, after) = *state.monotonic_start.get_or_insert((std::time::Instant::now(), 0));
                after.saturating_add(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX))
            },
            |recorded, value| recorded.monotonic.push(value),
        )
    }
}
