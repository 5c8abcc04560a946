//! Waiting without letting the core go cold.
//!
//! A guest that waits for a nested call gives its thread back to the executor, and when
//! nothing else is runnable the core goes idle. Resuming on a core that idled for a
//! fraction of a millisecond is several times slower than on a busy one (caches and, in a
//! virtual machine, the virtual CPU itself have to come back), and that slowdown is the
//! script's own time. So a wait first spins on its thread for a bounded time, checking
//! whether it was woken, and only then returns `Pending`.
//!
//! Spinning burns a core, so [`HotWait`] spins only when it can pay off and cost little: never
//! while a call that another process answers is in flight (an MCP server, an HTTP API, a
//! command: that process needs the core, and on a machine of few cores spinning made ten nested
//! MCP calls through `serve` twice as slow; the caller passes a zero spin then), on a
//! multi-threaded runtime with a second worker to drive the I/O and timers that will wake it, at most
//! one wait in the process at a time, and never longer than the bound the sandbox was given
//! ([`crate::SandboxOptions::with_wait_spin`]), nor after the Exec is aborted (the abort is
//! seen only once the wait hands its thread back). Before it spins it goes through the executor
//! once: a task the call woke on this thread sits in the worker's own slot, which no other
//! worker can take, and would otherwise wait out the spin.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// True while some wait in the process spins.
static SPINNING: AtomicBool = AtomicBool::new(false);

/// Polls `inner`; while it is pending and it may, keeps its thread spinning for at most
/// `spin` until `inner` is woken, and polls it again on the spot.
pub struct HotWait<'a, F> {
    inner: Pin<Box<F>>,
    spin: Duration,
    /// Fires when the Exec is aborted or ends: no more spinning.
    stop: &'a CancellationToken,
    /// Whether the wait has been through the executor once (see the module's docs).
    yielded: bool,
    /// When spinning ends for this wait, however often it is polled.
    spin_until: Option<Instant>,
}

impl<'a, F> HotWait<'a, F> {
    pub fn new(inner: F, spin: Duration, stop: &'a CancellationToken) -> Self {
        HotWait { inner: Box::pin(inner), spin, stop, yielded: false, spin_until: None }
    }
}

impl<F: Future> Future for HotWait<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let may_spin = !self.spin.is_zero() && Spinner::possible();
        if !may_spin || !self.yielded {
            let polled = self.inner.as_mut().poll(cx);
            if may_spin && polled.is_pending() {
                // Through the executor once before spinning (see the module's docs).
                self.yielded = true;
                cx.waker().wake_by_ref();
            }
            return polled;
        }
        let spin = self.spin;
        let until = *self.spin_until.get_or_insert_with(|| Instant::now() + spin);
        let Some(_spinner) = Spinner::claim().filter(|_| Instant::now() < until && !self.stop.is_cancelled()) else {
            return self.inner.as_mut().poll(cx);
        };
        let signal = Arc::new(Signal { state: AtomicU8::new(SPINNING_STATE), task: cx.waker().clone() });
        let waker = Waker::from(signal.clone());
        let mut inner_cx = Context::from_waker(&waker);
        if let Poll::Ready(output) = self.inner.as_mut().poll(&mut inner_cx) {
            return Poll::Ready(output);
        }
        loop {
            // Check the clock only now and then: a wake is seen within a few hundred
            // nanoseconds either way.
            for _ in 0..64 {
                if signal.state.load(Ordering::Acquire) == WOKEN {
                    break;
                }
                std::hint::spin_loop();
            }
            if signal.state.load(Ordering::Acquire) == WOKEN {
                signal.state.store(SPINNING_STATE, Ordering::Release);
                if let Poll::Ready(output) = self.inner.as_mut().poll(&mut inner_cx) {
                    return Poll::Ready(output);
                }
                // Woken while being polled: it wants the executor (a cooperative yield),
                // not this loop.
                if signal.state.load(Ordering::Acquire) == WOKEN {
                    return signal.park();
                }
            }
            if Instant::now() >= until || self.stop.is_cancelled() {
                return signal.park();
            }
        }
    }
}

const SPINNING_STATE: u8 = 0;
const WOKEN: u8 = 1;
const PARKED: u8 = 2;

/// The waker `inner` sees: while the wait spins, a wake only flips the state; once it has
/// parked, a wake goes to the task.
struct Signal {
    state: AtomicU8,
    task: Waker,
}

impl Signal {
    /// Stops spinning and hands the wait to the executor. A wake that landed meanwhile is
    /// passed on to the task, so it is polled again.
    fn park<T>(&self) -> Poll<T> {
        if self.state.swap(PARKED, Ordering::AcqRel) == WOKEN {
            self.task.wake_by_ref();
        }
        Poll::Pending
    }
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.state.compare_exchange(SPINNING_STATE, WOKEN, Ordering::AcqRel, Ordering::Acquire).is_err()
            && self.state.load(Ordering::Acquire) == PARKED
        {
            self.task.wake_by_ref();
        }
    }
}

/// The one spinning wait of the process, while it lasts.
struct Spinner;

impl Spinner {
    /// Whether a wait here could spin: another worker is there to run what will wake it,
    /// and nobody spins now.
    fn possible() -> bool {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
            && handle.metrics().num_workers() >= 2
            && !SPINNING.load(Ordering::Relaxed)
    }

    /// Spins, unless another wait took the turn since [`Spinner::possible`].
    fn claim() -> Option<Spinner> {
        SPINNING.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).ok().map(|_| Spinner)
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        SPINNING.store(false, Ordering::Release);
    }
}
