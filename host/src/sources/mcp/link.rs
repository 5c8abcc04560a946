//! The client side of one connected server that every tool of it shares: the connection,
//! the bound on bytes waiting to reach the server, who answers what it asks during each call,
//! its OAuth step-up, and the notice a server is sent when a caller stops waiting.

use std::sync::Arc;

use rmcp::model::GetExtensions as _;
use rmcp::model::{CancelledNotificationParam, ClientRequest, ProtocolVersion, RequestId, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::callers::Callers;
use super::oauth::StepUp;
use crate::sources::oauth::SignInError;
use crate::sources::tools::ProgressSink;

/// What a message to a server weighs besides a call's arguments, in the bound on bytes
/// waiting to reach the server: its envelope, or a cancellation notice.
const ENVELOPE_BYTES: usize = 1024;

/// What every tool of one connected server shares: the server's name, the client side of
/// the connection, the alarm a call raises when the connection failed under it, and the
/// room left for messages waiting to reach the server.
#[derive(Clone)]
pub struct ServerLink {
    pub server: Arc<str>,
    pub peer: Peer<RoleClient>,
    /// Notified when a call failed at the transport level; the server's watcher then checks
    /// whether the server is still there (an HTTP server can vanish without closing anything).
    pub suspect: Arc<Notify>,
    /// [`ServerLimits::queued_bytes`](super::ServerLimits::queued_bytes), as permits of one
    /// byte. A message holds its weight from before it is handed to rmcp until the
    /// transport drops it, written or failed.
    outgoing: Arc<Semaphore>,
    queued_bytes: usize,
    /// The server's OAuth, when a call it refuses with a challenge may sign in again.
    step_up: Option<Arc<StepUp>>,
    /// Who answers the server's input requests during each call in flight.
    pub(super) callers: Arc<Callers>,
    /// Whether the server speaks 2026-07-28, where a call may be answered with input
    /// requests and sent again; fixed by the handshake.
    modern: bool,
}

impl ServerLink {
    pub fn new(server: &str, peer: Peer<RoleClient>, queued_bytes: usize) -> Self {
        let queued_bytes = queued_bytes.clamp(ENVELOPE_BYTES, Semaphore::MAX_PERMITS);
        let modern = peer.peer_info().is_some_and(|info| info.protocol_version >= ProtocolVersion::V_2026_07_28);
        ServerLink {
            modern,
            server: server.into(),
            peer,
            suspect: Arc::new(Notify::new()),
            outgoing: Arc::new(Semaphore::new(queued_bytes)),
            queued_bytes,
            step_up: None,
            callers: Arc::default(),
        }
    }

    pub(crate) fn with_callers(mut self, callers: Arc<Callers>) -> Self {
        self.callers = callers;
        self
    }

    pub(crate) fn with_step_up(mut self, step_up: Option<Arc<StepUp>>) -> Self {
        self.step_up = step_up;
        self
    }

    /// Whether any call on this connection may be sent a second time: after a sign-in (it
    /// may sign in again), or with the answers to its input requests (a server of 2026-07-28).
    pub(crate) fn may_send_again(&self) -> bool {
        self.step_up.is_some() || self.modern
    }

    /// When `error` is the server refusing a request with an OAuth challenge and this
    /// connection may sign in again: that sign-in (after which the request is sent again).
    pub(crate) async fn signed_in_again(&self, error: &ServiceError) -> Option<Result<(), SignInError>> {
        let challenge = challenge_of(error)?;
        Some(self.step_up.as_ref()?.sign_in_again(&challenge).await)
    }

    /// Waits until `bytes` more may wait to reach the server. A message heavier than the
    /// whole bound waits until nothing else does.
    async fn room_for(&self, bytes: usize) -> OwnedSemaphorePermit {
        let weight = u32::try_from(bytes.saturating_add(ENVELOPE_BYTES).min(self.queued_bytes)).unwrap_or(u32::MAX);
        // The semaphore is never closed.
        self.outgoing.clone().acquire_many_owned(weight).await.expect("the outgoing bound is never closed")
    }
}

/// A message's share of the outgoing bound, carried in the request's extensions so that it
/// is given back when the transport drops the message.
#[derive(Clone)]
struct Queued {
    _room: Arc<OwnedSemaphorePermit>,
}

impl ServerLink {
    /// Sends `request`, whose parameters weigh `weight` bytes, within the outgoing bound, and
    /// waits for its answer. The server is told when the caller stops waiting first (an
    /// abort, the Exec ending); the progress it reports meanwhile goes to `progress`.
    pub(crate) async fn send(
        &self,
        mut request: ClientRequest,
        weight: usize,
        progress: Option<&ProgressSink>,
    ) -> Result<ServerResult, ServiceError> {
        let room = self.room_for(weight).await;
        request.extensions_mut().insert(Queued { _room: Arc::new(room) });
        let handle = self.peer.send_request_with_option(request, PeerRequestOptions::default()).await?;
        let _watched = progress.map(|sink| self.callers.watch(handle.progress_token.clone(), sink.clone()));
        // Dropped before the answer (abort, the Exec ending): the server is told.
        let mut pending = CancelOnDrop { link: self.clone(), id: Some(handle.id.clone()) };
        let answer = handle.await_response().await;
        pending.id = None;
        answer
    }
}

/// The `WWW-Authenticate` challenge of a 401 or 403 that failed a request, if that is why.
fn challenge_of(error: &ServiceError) -> Option<String> {
    use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(required) = current.downcast_ref::<AuthRequiredError>() {
            return Some(required.www_authenticate_header.clone());
        }
        if let Some(scope) = current.downcast_ref::<InsufficientScopeError>() {
            return Some(scope.www_authenticate_header.clone());
        }
        source = current.source();
    }
    None
}

/// Sends `notifications/cancelled` for a request whose caller stopped waiting.
///
/// rmcp's own guard tries once without waiting, and under load (thousands of abandoned
/// calls a second) its channel can be full: the notice is lost, and with it the entry rmcp
/// keeps for the request, for as long as the connection lives. This one waits its turn in
/// a task of its own, within the server's outgoing bound.
struct CancelOnDrop {
    link: ServerLink,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let link = self.link.clone();
        runtime.spawn(async move {
            let _room = link.room_for(0).await;
            let notice = CancelledNotificationParam::new(Some(id), Some("the caller stopped waiting".into()));
            // Returns once the notice is written (or could not be).
            let _ = link.peer.notify_cancelled(notice).await;
        });
    }
}

/// The length of `value` as JSON text, without writing it anywhere.
pub(crate) fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing plain JSON values into a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
