//! The calls in flight to one server, and who answers what the server asks during each: a
//! request the server makes during a call (an elicitation, or the input requests of a
//! 2026-07-28 `InputRequiredResult`) goes to the handler of the client whose call it is, and
//! the progress it reports to whoever watches that call.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ProgressToken};
use serde_json::Value;
use tracing::warn;

use crate::sources::tools::ProgressSink;
use crate::sources::tools::input::{self, InputAnswer, InputHandler, InputRequest};
use crate::support::lock::Unpoisoned;

/// Most input requests a server may make in one round of a call (2026-07-28).
pub const MAX_INPUT_REQUESTS: usize = 16;

/// Why a round of a server's input requests (2026-07-28) was not answered: the call fails.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unanswerable {
    #[error("it made {0} input requests at once, more than the {MAX_INPUT_REQUESTS} answered")]
    TooMany(usize),
    #[error("an answer could not be written: {0}")]
    Unwritable(serde_json::Error),
    #[error("it asked for a sampling request, which this host does not offer")]
    Sampling,
    #[error("it asked for a kind of input this host does not know")]
    Unknown,
}

/// The answers to a server's input requests, and the state it asked to have back.
pub(crate) struct Answers {
    pub responses: rmcp::model::InputResponses,
    pub state: Option<String>,
}

/// The calls in flight to one server: a request the server makes during a call goes to the
/// client whose call it is, and the progress it reports to whoever watches that call.
#[derive(Default)]
pub(crate) struct Callers {
    server: Arc<str>,
    /// Who answers the server's input requests when no call in flight names its own; without
    /// one, elicitation is not declared.
    fallback: Option<Arc<dyn InputHandler>>,
    handlers: std::sync::Mutex<Vec<(u64, Arc<dyn InputHandler>)>>,
    /// By the progress token the call was sent with.
    watchers: std::sync::Mutex<HashMap<ProgressToken, ProgressSink>>,
    next: std::sync::atomic::AtomicU64,
}

/// A call's progress watcher among the [`Callers`] while the call is in flight.
pub(crate) struct Watched {
    callers: Arc<Callers>,
    token: ProgressToken,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.callers.watchers.locked().remove(&self.token);
    }
}

/// A call's handler among the [`Callers`] while the call is in flight.
pub(crate) struct Caller {
    callers: Arc<Callers>,
    id: u64,
}

impl Callers {
    pub(crate) fn enter(self: &Arc<Self>, handler: Arc<dyn InputHandler>) -> Caller {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.handlers.locked().push((id, handler));
        Caller { callers: self.clone(), id }
    }

    pub(crate) fn new(server: &str, fallback: Option<Arc<dyn InputHandler>>) -> Self {
        Callers { server: server.into(), fallback, ..Callers::default() }
    }

    /// Answers the server's input request `request` (an `elicitation/create`, or one of an
    /// `InputRequiredResult`) through the handler of the call it belongs to, else the
    /// session's; declined when there is none or which it is cannot be told. `cancelled`
    /// ends the wait (the server withdrew the request, the connection closed).
    pub(crate) async fn elicit(&self, request: ElicitRequestParams, cancelled: impl Future<Output = ()>) -> ElicitResult {
        let declined = ElicitResult::new(ElicitationAction::Decline);
        let server = &self.server;
        let handler = match self.only() {
            Ok(Some(handler)) => handler,
            Ok(None) => match &self.fallback {
                Some(handler) => handler.clone(),
                None => {
                    warn!(server = %server, "the server asked for input, and nobody here can answer: declined");
                    return declined;
                }
            },
            Err(()) => {
                warn!(server = %server, "the server asked for input while calls of several clients were in flight to it, and which one it is for cannot be told: declined");
                return declined;
            }
        };
        let request = match request {
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                match InputRequest::form(server, message, serde_json::to_value(&requested_schema).unwrap_or_default()) {
                    Ok(request) => request,
                    Err(why) => {
                        warn!(server = %server, "the server's input request is declined unseen: {why}");
                        return declined;
                    }
                }
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => InputRequest::url(server, message, url),
            _ => {
                warn!(server = %server, "the server asked for a kind of input this host does not know: declined");
                return declined;
            }
        };
        let fields = request.fields().to_vec();
        let answer = tokio::select! {
            answer = handler.answer(request) => answer,
            _ = cancelled => InputAnswer::Cancel,
        };
        match answer {
            InputAnswer::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(input::with_defaults(&fields, content)))
            }
            InputAnswer::Decline => declined,
            InputAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }

    /// Whether someone answers this server's input requests when a call names nobody (the
    /// session's own handler).
    pub(crate) fn can_answer(&self) -> bool {
        self.fallback.is_some()
    }

    /// Answers every input request of `asked` (a server of 2026-07-28 that needs input before
    /// it answers a call): forms through [`elicit`](Self::elicit), a roots request with no
    /// roots. At most [`MAX_INPUT_REQUESTS`] per round; sampling is not offered.
    pub(crate) async fn answer_all(&self, asked: rmcp::model::InputRequiredResult) -> Result<Answers, Unanswerable> {
        use rmcp::model::InputRequest as Asked;
        let requests = asked.input_requests.unwrap_or_default();
        if requests.len() > MAX_INPUT_REQUESTS {
            return Err(Unanswerable::TooMany(requests.len()));
        }
        let mut responses = rmcp::model::InputResponses::new();
        for (key, request) in requests {
            let response = match request {
                Asked::Elicitation(request) => {
                    let answer = self.elicit(request.params, std::future::pending()).await;
                    serde_json::to_value(answer).map_err(Unanswerable::Unwritable)?
                }
                Asked::ListRoots(_) => serde_json::json!({"roots": []}),
                Asked::CreateMessage(_) => return Err(Unanswerable::Sampling),
                _ => return Err(Unanswerable::Unknown),
            };
            responses.insert(key, response);
        }
        Ok(Answers { responses, state: asked.request_state })
    }

    /// Who watches the progress of the request sent with `token`, if anyone.
    pub(crate) fn watcher(&self, token: &ProgressToken) -> Option<ProgressSink> {
        self.watchers.locked().get(token).cloned()
    }

    /// Routes the progress notifications of the request sent with `token` (rmcp gives every
    /// request its own) to `sink` until the guard is dropped.
    pub(crate) fn watch(self: &Arc<Self>, token: ProgressToken, sink: ProgressSink) -> Watched {
        self.watchers.locked().insert(token.clone(), sink);
        Watched { callers: self.clone(), token }
    }

    /// The one handler of the calls in flight; `Err` when calls of several clients are.
    fn only(&self) -> Result<Option<Arc<dyn InputHandler>>, ()> {
        let handlers = self.handlers.locked();
        let Some((_, first)) = handlers.first() else { return Ok(None) };
        match handlers.iter().all(|(_, handler)| Arc::ptr_eq(handler, first)) {
            true => Ok(Some(first.clone())),
            false => Err(()),
        }
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        self.callers.handlers.locked().retain(|(id, _)| *id != self.id);
    }
}
