//! Checkpoints of running Execs. An `Exec` that yielded (see `running`) in a session with a
//! state store is written to the store at each of its waits, so that when its process dies
//! another session of its conversation takes it up from its last wait ([`Session::wait`] or
//! [`Session::cancel`] on its handle) instead of losing it.
//!
//! One host runs it at a time. The host running it holds a lease: an entry it writes again
//! every third of the lease. Another host takes the checkpoint only once the lease has
//! lapsed, and a host that could not renew its lease for two thirds of it, or could not
//! write a checkpoint, stops the Exec first; so a host cut off from the store never runs on
//! beside the one that took its Exec up.
//!
//! What a takeover cannot know is said to the script: the calls that were running at the
//! last checkpoint reject with stage "execution", saying they may have taken effect.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::sandbox::runtime::{Checkpoints, Suspended};
use crate::support::lock::Unpoisoned;

use super::parking::{Kept, Parking};

/// How long a host's claim on a running Exec lasts unless it renews it: a takeover waits
/// this long after the host stopped.
pub const DEFAULT_RUNNING_LEASE: Duration = Duration::from_secs(30);

/// Writes one running Exec's checkpoints and keeps its lease.
pub(super) struct Checkpointer {
    parking: Parking,
    handle: String,
    exec_call_id: String,
    /// This host's mark in the lease, so it never removes another host's entries.
    owner: String,
    state: Mutex<State>,
    /// Held while checkpoints start being written and while the Exec's entries are removed,
    /// so an Exec that ends as it yields leaves nothing behind.
    gate: tokio::sync::Mutex<()>,
    /// Stops the Exec when its checkpoint or lease cannot be kept.
    stop: CancellationToken,
    /// Ends the lease's renewal when the Exec ends.
    ended: CancellationToken,
}

#[derive(Default)]
struct State {
    /// Whether checkpoints are written: from the moment the Exec yields (before, its caller
    /// waits for it, and a crash loses the call as any call is lost).
    writing: bool,
    /// The last checkpoint, kept (not encoded) until the Exec yields.
    latest: Option<Suspended>,
    /// Why the Exec was stopped, when it was.
    stopped: Option<String>,
}

impl Checkpointer {
    pub(super) fn new(parking: Parking, handle: &str, exec_call_id: &str, stop: CancellationToken) -> Self {
        Checkpointer {
            parking,
            handle: handle.to_string(),
            exec_call_id: exec_call_id.to_string(),
            owner: super::builder::random_id(),
            state: Mutex::default(),
            gate: tokio::sync::Mutex::new(()),
            stop,
            ended: CancellationToken::new(),
        }
    }

    /// From now on every checkpoint is written: the last one at once, with the lease, and
    /// the lease is renewed until the Exec ends.
    pub(super) async fn start_writing(self: &std::sync::Arc<Self>) {
        let _gate = self.gate.lock().await;
        if self.ended.is_cancelled() {
            return;
        }
        let latest = {
            let mut state = self.state.locked();
            state.writing = true;
            state.latest.take()
        };
        if let Err(why) = self.renew_lease().await {
            return self.stop_because(format!("its lease could not be written to the state store: {why}"));
        }
        if let Some(checkpoint) = latest {
            self.write(checkpoint).await;
        }
        let this = self.clone();
        tokio::spawn(async move { this.keep_lease().await });
    }

    /// The Exec ended here: its lease is given up and its checkpoint removed (unless another
    /// host holds it now). Why it was stopped, if it was.
    pub(super) async fn finish(&self) -> Option<String> {
        self.ended.cancel();
        let _gate = self.gate.lock().await;
        let writing = self.state.locked().writing;
        if writing && self.lease_is_mine().await {
            let _ = self.parking.store.remove(&self.parking.key(Kept::Running, &self.handle)).await;
            let _ = self.parking.store.remove(&self.parking.key(Kept::Lease, &self.handle)).await;
        }
        self.state.locked().stopped.clone()
    }

    async fn keep_lease(&self) {
        let mut renewed = Instant::now();
        loop {
            tokio::select! {
                () = self.ended.cancelled() => return,
                () = tokio::time::sleep(self.parking.lease / 3) => {}
            }
            match self.renew_lease().await {
                Ok(()) => renewed = Instant::now(),
                Err(why) if renewed.elapsed() >= self.parking.lease * 2 / 3 => {
                    return self.stop_because(format!("its lease in the state store could not be renewed: {why}"));
                }
                Err(_) => {}
            }
        }
    }

    async fn renew_lease(&self) -> Result<(), String> {
        let key = self.parking.key(Kept::Lease, &self.handle);
        self.parking
            .store
            .put(&key, self.owner.as_bytes(), self.parking.lease)
            .await
            .map_err(|e| crate::support::report::error_sentence(&e))
    }

    async fn lease_is_mine(&self) -> bool {
        let key = self.parking.key(Kept::Lease, &self.handle);
        matches!(self.parking.store.get(&key).await, Ok(Some(owner)) if owner == self.owner.as_bytes())
    }

    async fn write(&self, checkpoint: Suspended) {
        let payload = match self.parking.encode(&self.exec_call_id, checkpoint) {
            Ok(payload) => payload,
            Err(error) => {
                let why = crate::support::report::error_sentence(&error);
                return self.stop_because(format!("its checkpoint could not be encoded: {why}"));
            }
        };
        let key = self.parking.key(Kept::Running, &self.handle);
        if let Err(error) = self.parking.store.put(&key, &payload, self.parking.ttl).await {
            let why = crate::support::report::error_sentence(&error);
            self.stop_because(format!("its checkpoint could not be written to the state store: {why}"));
        }
    }

    fn stop_because(&self, why: String) {
        self.state.locked().stopped.get_or_insert(why);
        self.stop.cancel();
    }
}

impl Checkpoints for Checkpointer {
    fn keep<'a>(&'a self, checkpoint: Suspended) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            {
                let mut state = self.state.locked();
                if !state.writing {
                    state.latest = Some(checkpoint);
                    return;
                }
            }
            self.write(checkpoint).await;
        })
    }
}

/// The sentence a result gets when its Exec was stopped to keep it from running twice.
pub(super) fn stopped_text(why: &str) -> String {
    format!(
        "The Exec was stopped because {why}; a running Exec whose state no other host could take up exactly is not left running."
    )
}
