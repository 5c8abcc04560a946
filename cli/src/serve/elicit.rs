//! Approvals through the MCP client: a call that must ask becomes an elicitation form.

use std::sync::{Arc, OnceLock};

use exec_host::{Approval, ApprovalRequest, Approver, BoxFuture};
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, EnumSchema};
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
}

/// The choices offered, as the elicitation's `decision` enum, with their titles.
const CHOICES: [(&str, &str); 3] = [("once", "Allow once"), ("always", "Allow always"), ("deny", "Deny")];

impl ClientApprover {
    /// Asks the client once it is connected and when it declared elicitation.
    pub fn new() -> Self {
        ClientApprover { client: Arc::default(), unreachable: None }
    }

    /// Never asks: on this transport the client cannot answer (`why` says so in refusals).
    pub fn never(why: &'static str) -> Self {
        ClientApprover { client: Arc::default(), unreachable: Some(why) }
    }

    /// Records the connection to the client (the first time only).
    pub fn connected(&self, client: Peer<RoleServer>) {
        let _ = self.client.set(client);
    }
}

impl Approver for ClientApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        let client = self.client.get().cloned();
        let unreachable = self.unreachable;
        Box::pin(async move {
            if let Some(why) = unreachable {
                return crate::approve::refusal(&request, why);
            }
            let Some(client) = client.filter(|c| c.peer_info().is_some_and(|info| info.capabilities.elicitation.is_some()))
            else {
                return crate::approve::refusal(&request, "the MCP client cannot be asked (it did not declare elicitation)");
            };
            let values = CHOICES.iter().map(|(value, _)| value.to_string()).collect();
            let titles = CHOICES.iter().map(|(_, title)| title.to_string()).collect();
            let Ok(choice) = EnumSchema::builder(values).enum_titles(titles) else {
                return crate::approve::refusal(&request, "the approval form could not be built");
            };
            let Ok(schema) = ElicitationSchema::builder().required_enum_schema("decision", choice.build()).build() else {
                return crate::approve::refusal(&request, "the approval form could not be built");
            };
            let message = format!(
                "`{}` wants to run ({}). It asks because of {}. Allowing it always saves the rule `{}`.",
                request.tool,
                crate::approve::shown_input(&request),
                request.why,
                request.rule
            );
            let asked = client
                .create_elicitation(ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema })
                .await;
            match asked {
                Ok(answer) if answer.action == ElicitationAction::Accept => {
                    match answer.content.as_ref().and_then(|c| c.get("decision")).and_then(|d| d.as_str()) {
                        Some("once") => Approval::AllowOnce,
                        Some("always") => Approval::AllowAlways,
                        _ => Approval::Deny { reason: "the user denied it in the MCP client".into() },
                    }
                }
                Ok(_) => Approval::Deny { reason: "the user declined in the MCP client".into() },
                Err(e) => Approval::Deny { reason: format!("asking the MCP client failed: {e}") },
            }
        })
    }
}
