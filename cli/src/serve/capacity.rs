//! How many tool calls the server runs at once, in all and per client, and whether it stops.

use std::sync::Arc;

use exec_host::CancellationToken;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many tool calls the server runs at once, in all and per client, and whether it is
/// stopping. One owner for both bounds: every gateway asks it before a call runs.
pub struct Capacity {
    all: Arc<Semaphore>,
    total: u32,
    per_client: u32,
    stopping: CancellationToken,
}

impl Capacity {
    pub fn new(total: u32, per_client: u32) -> Arc<Self> {
        let total = total.max(1);
        Arc::new(Capacity {
            all: Arc::new(Semaphore::new(total as usize)),
            total,
            per_client: per_client.clamp(1, total),
            stopping: CancellationToken::new(),
        })
    }

    /// The two slots a call holds while it runs, or the sentence saying why there is none.
    pub(super) fn take(&self, client: &Arc<Semaphore>) -> Result<(OwnedSemaphorePermit, OwnedSemaphorePermit), String> {
        if self.stopping.is_cancelled() {
            return Err("busy: the server is stopping and takes no new calls; try another replica or retry shortly".into());
        }
        let Ok(mine) = client.clone().try_acquire_owned() else {
            return Err(format!(
                "busy: this client already has as many calls running as one client may ({}); retry when one has finished",
                self.per_client
            ));
        };
        let Ok(any) = self.all.clone().try_acquire_owned() else {
            return Err(format!("busy: the server already runs as many calls as it may at once ({}); retry shortly", self.total));
        };
        Ok((mine, any))
    }

    /// Stops taking calls, then waits until those running have finished, or `grace` has passed.
    /// True when every call finished in time.
    pub async fn drain(&self, grace: std::time::Duration) -> bool {
        self.stopping.cancel();
        tokio::time::timeout(grace, self.all.acquire_many(self.total)).await.is_ok()
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.is_cancelled()
    }

    pub(super) fn client_slots(&self) -> Arc<Semaphore> {
        Arc::new(Semaphore::new(self.per_client as usize))
    }
}
