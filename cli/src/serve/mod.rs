//! `exec-host serve`: the session as an MCP server, so any MCP client reaches every
//! downstream server through one constant `Exec` tool (and the flat tools).
//!
//! Each MCP client (the one client of stdio, each MCP session over HTTP) gets a [`Gateway`]
//! of its own over one shared session: the downstream servers, the engine and the compiled
//! guest are shared; the announcement state, the abort scope and the approvals are the
//! client's ([`Session::for_client`]).
//!
//! The spec's announcement travels in a conversation's history; MCP has none, so it is
//! mapped onto what MCP has. The names-only announcement of the pool at start is the
//! server's `instructions` (sent with `initialize`); when the pool changes later, the full
//! announcement is put before the next result the client receives, as a text block of its
//! own. The gateway keeps the last announcement it sent as the history the session reads, so
//! the session's own rule decides when to speak, as it does for a model's conversation.
//!
//! Approvals go to the client as an elicitation form ([`elicit::ClientApprover`]); progress
//! notifications report the nested calls of an Exec whose request carries a progress token.

//! The protocol's decisions (a request's plan, approval forms, request states, waiting calls,
//! tasks) are the library's (`exec_host::gateway`); this module is the process around them:
//! the transports (`stdio`, `http`), the gateway each client gets (`gateway`, its `tools/call`
//! in `call`), how many calls run at once (`capacity`), the client connection approvals and
//! questions travel on (`elicit`), and the figures (`metrics`, `traces`).

pub mod call;
pub mod capacity;
pub mod elicit;
pub mod gateway;
pub mod http;
pub mod jsonrpc;
pub mod metrics;
pub mod reload;
pub mod resources;
pub mod stdio;
pub mod traces;

use std::sync::Arc;

use exec_host::gateway::request_state::RequestStates;
use exec_host::gateway::tasks::Tasks;
use exec_host::gateway::waiting::Waiting;
use exec_host::{CancellationToken, ToolResult};

pub use capacity::Capacity;
pub use elicit::ClientApprover;
pub use gateway::Gateway;
pub use metrics::Metrics;

/// What a server with a state store keeps for its clients of 2026-07-28 between their
/// requests, so that any replica sharing the store answers: the request states of approval
/// rounds (`exec_host::gateway::request_state`) and the tasks (`exec_host::gateway::tasks`).
pub struct Parking {
    pub rounds: RequestStates,
    pub tasks: Arc<Tasks>,
    /// The calls of this process that wait on their client's answers to a downstream
    /// server's questions: not in the store, as a downstream call cannot be stored.
    pub waiting: Arc<Waiting<CallResult>>,
}

impl Parking {
    /// The parking of a server whose waiting calls end when `stop` is cancelled; why not, when
    /// the system has no randomness to name them with.
    pub fn new(
        store: exec_host::state::SealedStore,
        metrics: Option<Arc<Metrics>>,
        stop: CancellationToken,
    ) -> std::io::Result<Arc<Self>> {
        let observer = metrics.map(|metrics| metrics as Arc<dyn exec_host::gateway::events::GatewayObserver>);
        Ok(Arc::new(Parking {
            rounds: RequestStates::new(store.clone()),
            tasks: Tasks::new(store, observer),
            waiting: Waiting::new(stop)?,
        }))
    }
}

/// What a call of a client comes to: a result, or a parked Exec that cannot be resumed.
pub type CallResult = Result<ToolResult, exec_host::ResumeError>;
