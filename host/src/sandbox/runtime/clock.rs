//! Guest time: the budget counts only the time the script itself runs.
//!
//! The guest runs only while the future driving it is being polled, and it waits for
//! nested calls by making that future return `Pending`. So the clock adds up the time
//! spent inside `poll`: waiting on calls (one window for any number of concurrent calls),
//! and time the executor spends on other work, are never charged. Epoch interruption
//! interrupts a running guest every tick so the store can compare this clock to the budget.

use crate::support::lock::Unpoisoned;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How often a running guest is interrupted to check its budget (and to yield).
pub const TICK: Duration = Duration::from_millis(1);

/// Time one guest has run.
#[derive(Debug)]
pub struct GuestClock {
    base: Instant,
    spent_ns: AtomicU64,
    /// Nanoseconds after `base` when the current poll began; `u64::MAX` outside a poll.
    running_since_ns: AtomicU64,
    /// Nanoseconds after `base` when the executor last polled the guest.
    polled_at_ns: AtomicU64,
    /// True while the guest is inside a host import that paused the clock: a poll that
    /// resumes that import (a wait polled again) does not charge until it returns.
    paused: AtomicBool,
    /// True while a parked Exec's journal is replayed: that time was charged when the
    /// script first ran it, so it is not charged again (the replay is bounded apart).
    replaying: AtomicBool,
}

const NOT_RUNNING: u64 = u64::MAX;

impl GuestClock {
    pub fn new() -> Self {
        GuestClock {
            base: Instant::now(),
            spent_ns: AtomicU64::new(0),
            running_since_ns: AtomicU64::new(NOT_RUNNING),
            polled_at_ns: AtomicU64::new(0),
            paused: AtomicBool::new(false),
            replaying: AtomicBool::new(false),
        }
    }

    /// A clock for an Exec whose journal is replayed first (see [`GuestClock::resumed`]).
    pub fn replaying() -> Self {
        let clock = Self::new();
        clock.replaying.store(true, Ordering::Relaxed);
        clock
    }

    /// Whether what runs now is charged to the budget: not while a journal is replayed.
    pub fn charging(&self) -> bool {
        !self.replaying.load(Ordering::Relaxed)
    }

    /// The replay is over: the guest has run `spent` of its budget, as when it parked, and
    /// what it runs from now on is charged. Called inside an import, with the clock paused.
    pub fn resumed(&self, spent: Duration) {
        self.spent_ns.store(u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.replaying.store(false, Ordering::Relaxed);
    }

    fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    fn enter(&self) {
        self.running_since_ns.store(self.now_ns(), Ordering::Relaxed);
    }

    /// A poll begins: the guest runs from here (see [`GuestClock::held_executor_for`]).
    fn polled(&self) {
        let now = self.now_ns();
        self.polled_at_ns.store(now, Ordering::Relaxed);
        if !self.paused.load(Ordering::Relaxed) {
            self.running_since_ns.store(now, Ordering::Relaxed);
        }
    }

    /// A wait ended inside the current poll (it spun instead of returning `Pending`):
    /// the guest resumes as if freshly polled.
    pub fn waited(&self) {
        self.polled_at_ns.store(self.now_ns(), Ordering::Relaxed);
    }

    /// How long the current poll has kept the executor's thread: whether it is time to
    /// yield to other tasks. Right after a wait this is short, and yielding again would
    /// only send the guest through the executor a second time.
    pub fn held_executor_for(&self) -> Duration {
        Duration::from_nanos(self.now_ns().saturating_sub(self.polled_at_ns.load(Ordering::Relaxed)))
    }

    fn leave(&self) {
        let since = self.running_since_ns.swap(NOT_RUNNING, Ordering::Relaxed);
        if since != NOT_RUNNING {
            self.spent_ns.fetch_add(self.now_ns().saturating_sub(since), Ordering::Relaxed);
        }
    }

    /// Stops charging until the guard is dropped: for host work done inside a guest import
    /// (a tool's first poll, finished calls being polled), which is not the script's time.
    pub fn pause(&self) -> Paused<'_> {
        self.leave();
        self.paused.store(true, Ordering::Relaxed);
        Paused { clock: self }
    }

    /// Time the guest has run so far, the current slice included.
    pub fn spent(&self) -> Duration {
        let mut ns = self.spent_ns.load(Ordering::Relaxed);
        let since = self.running_since_ns.load(Ordering::Relaxed);
        if since != NOT_RUNNING {
            ns += self.now_ns().saturating_sub(since);
        }
        Duration::from_nanos(ns)
    }
}

/// Charging resumes when this is dropped (see [`GuestClock::pause`]).
pub struct Paused<'a> {
    clock: &'a GuestClock,
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        self.clock.paused.store(false, Ordering::Relaxed);
        self.clock.enter();
    }
}

impl Default for GuestClock {
    fn default() -> Self {
        Self::new()
    }
}

/// Drives a future and charges the time inside its `poll` to a [`GuestClock`].
pub struct Charged<F> {
    inner: Pin<Box<F>>,
    clock: Arc<GuestClock>,
}

impl<F> Charged<F> {
    pub fn new(inner: F, clock: Arc<GuestClock>) -> Self {
        Charged { inner: Box::pin(inner), clock }
    }
}

impl<F: Future> Future for Charged<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let clock = self.clock.clone();
        clock.polled();
        let result = self.inner.as_mut().poll(cx);
        clock.leave();
        result
    }
}

/// Advances the engine's epoch every [`TICK`] while Execs run, and a little longer
/// ([`IDLE_TICKS`]) so that Execs in quick succession find it awake; then it sleeps until
/// the next Exec wakes it.
// SeqCst on `active` and `parked`: a new Exec either sees the ticker parked and wakes it,
// or the ticker sees the Exec before it parks.
pub struct Ticker {
    shared: Arc<TickerShared>,
}

/// Ticks the ticker goes on after the last Exec ended before it sleeps.
const IDLE_TICKS: u32 = 100;

struct TickerShared {
    active: AtomicUsize,
    /// True while the ticker thread waits for work (so a new Exec must wake it).
    parked: AtomicBool,
    lock: Mutex<bool>, // true once the ticker must stop
    wake: Condvar,
}

impl Ticker {
    pub fn start(engine: wasmtime::Engine) -> Self {
        let shared = Arc::new(TickerShared {
            active: AtomicUsize::new(0),
            parked: AtomicBool::new(false),
            lock: Mutex::new(false),
            wake: Condvar::new(),
        });
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("exec-host-ticker".into())
            .spawn(move || {
                let shared = thread_shared;
                let mut idle = 0u32;
                loop {
                    if shared.active.load(Ordering::SeqCst) > 0 {
                        idle = 0;
                    } else {
                        idle += 1;
                    }
                    if idle > IDLE_TICKS {
                        let mut stop = shared.lock.locked();
                        shared.parked.store(true, Ordering::SeqCst);
                        while !*stop && shared.active.load(Ordering::SeqCst) == 0 {
                            stop = crate::support::lock::wait(&shared.wake, stop);
                        }
                        shared.parked.store(false, Ordering::SeqCst);
                        idle = 0;
                    }
                    if *shared.lock.locked() {
                        return;
                    }
                    std::thread::sleep(TICK);
                    engine.increment_epoch();
                }
            })
            .expect("the epoch ticker thread could not start");
        Ticker { shared }
    }

    /// Keeps the ticker running until the guard is dropped.
    pub fn hold(&self) -> TickerGuard {
        self.shared.active.fetch_add(1, Ordering::SeqCst);
        if self.shared.parked.load(Ordering::SeqCst) {
            let _held = self.shared.lock.locked();
            self.shared.wake.notify_one();
        }
        TickerGuard { shared: self.shared.clone() }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        *self.shared.lock.locked() = true;
        self.shared.wake.notify_one();
    }
}

pub struct TickerGuard {
    shared: Arc<TickerShared>,
}

impl Drop for TickerGuard {
    fn drop(&mut self) {
        self.shared.active.fetch_sub(1, Ordering::SeqCst);
    }
}
