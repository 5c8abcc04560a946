//! Approvals and downstream servers' questions through the connection to the MCP client.
//! What the request's plan (`exec_host::gateway::plan`) says about asking is followed here:
//! a client of 2025-11-25 is sent an elicitation request while the call waits
//! (`exec_host::gateway::elicitation`); for a client of 2026-07-28, to which a server sends no
//! requests, the call parks its Exec instead and the form travels in the call's answer.

use std::sync::{Arc, Mutex, OnceLock};

use exec_host::gateway::approval_forms::decision;
use exec_host::gateway::elicitation::{approval_request, input_answer, passed_on};
use exec_host::gateway::plan::Asking;
use exec_host::mcp::input::{InputAnswer, InputHandler, InputRequest};
use exec_host::{Approval, ApprovalRequest, Approver, BoxFuture};
use rmcp::model::ElicitationAction;
use rmcp::service::{Peer, RoleServer};

/// Answers calls that must ask by asking the MCP client (elicitation): allow once, allow
/// always, or deny. A client that did not declare elicitation cannot be asked, and the call
/// is refused with the rule that would let it run.
#[derive(Clone)]
pub struct ClientApprover {
    /// The connection to the client, known once it has initialized.
    client: Arc<OnceLock<Peer<RoleServer>>>,
    /// Why no client can ever be asked on this transport, when that is so.
    unreachable: Option<&'static str>,
    /// How the client of the call being made now is asked.
    asking: Arc<Mutex<Asking>>,
}

impl ClientApprover {
    /// Asks the client once it is connected and when it declared elicitation.
    pub fn new() -> Self {
        ClientApprover { client: Arc::default(), unreachable: None, asking: Arc::new(Mutex::new(Asking::Request)) }
    }

    /// Never asks: on this transport the client cannot answer (`why` says so in refusals).
    pub fn never(why: &'static str) -> Self {
        ClientApprover { unreachable: Some(why), ..ClientApprover::new() }
    }

    /// Records the connection to the client (the first time only).
    pub fn connected(&self, client: Peer<RoleServer>) {
        let _ = self.client.set(client);
    }

    /// How the client's calls from now on are asked.
    pub fn ask_by(&self, asking: Asking) {
        *self.asking.lock().unwrap_or_else(|e| e.into_inner()) = asking;
    }
}

impl Approver for ClientApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        let client = self.client.get().cloned();
        let unreachable = self.unreachable;
        let asking = *self.asking.lock().unwrap_or_else(|e| e.into_inner());
        Box::pin(async move {
            match (asking, unreachable) {
                // A parked Exec needs no channel to the client: its answer carries the form.
                (Asking::Park, _) => return Approval::Park,
                (Asking::Refuse(why), _) | (Asking::Request, Some(why)) => return crate::approve::refusal(&request, why),
                (Asking::Request, None) => {}
            }
            let Some(client) = client.filter(|c| c.peer_info().is_some_and(|info| info.capabilities.elicitation.is_some()))
            else {
                return crate::approve::refusal(&request, "the MCP client cannot be asked (it did not declare elicitation)");
            };
            let Some(params) = approval_request(&request) else {
                return crate::approve::refusal(&request, "the approval form could not be built");
            };
            match client.create_elicitation(params).await {
                Ok(answer) => decision(answer.action == ElicitationAction::Accept, answer.content.as_ref()),
                Err(e) => Approval::Deny { reason: format!("asking the MCP client failed: {e}") },
            }
        })
    }
}

/// Input a downstream server asks for during one of this client's calls is passed on to the
/// client as an elicitation of its own (2025-11-25, when the client declared elicitation),
/// the form's schema or the URL as the server sent it. A client of 2026-07-28, which is
/// sent no requests, and one that cannot be asked, are not asked: the server is declined.
impl InputHandler for ClientApprover {
    fn answer(&self, request: InputRequest) -> BoxFuture<'static, InputAnswer> {
        let client = self.client.get().cloned();
        let asking = *self.asking.lock().unwrap_or_else(|e| e.into_inner());
        Box::pin(async move {
            let declined = |why: &str| {
                tracing::warn!(server = %request.server, "its input request is declined: {why}");
                InputAnswer::Decline
            };
            if asking != Asking::Request {
                return declined("the MCP client of the call is not sent requests");
            }
            let Some(client) = client.filter(|c| c.peer_info().is_some_and(|info| info.capabilities.elicitation.is_some()))
            else {
                return declined("the MCP client of the call did not declare elicitation");
            };
            let params = match passed_on(&request) {
                Ok(params) => params,
                Err(why) => return declined(&exec_host::error_sentence(&why)),
            };
            match client.create_elicitation(params).await {
                Ok(answer) => input_answer(&answer.action, answer.content.as_ref()),
                Err(e) => declined(&format!("asking the MCP client failed: {e}")),
            }
        })
    }
}

/// The gateway's own answer to input a downstream server asks for outside any client's call
/// (no client is waiting on it): declined. Its presence tells the servers they may ask.
pub struct OutsideAnyCall;

impl InputHandler for OutsideAnyCall {
    fn answer(&self, request: InputRequest) -> BoxFuture<'static, InputAnswer> {
        tracing::warn!(server = %request.server, "it asked for input outside any client's call: declined");
        Box::pin(std::future::ready(InputAnswer::Decline))
    }
}
