//! `exec-host serve`: the session as an MCP server, so any MCP client reaches every
//! downstream server through one constant `Exec` tool (and the flat tools).
//!
//! The spec's announcement travels in a conversation's history; MCP has none, so it is
//! mapped onto what MCP has. The names-only announcement of the pool at start is the
//! server's `instructions` (sent with `initialize`); when the pool changes later, the full
//! announcement is put before the next result the client receives, as a text block of its
//! own. The gateway keeps the announcements it sent as the history the session reads, so
//! the session's own rule decides when to speak, as it does for a model's conversation.
//!
//! Approvals go to the client as an elicitation form ([`ClientApprover`]); progress
//! notifications report the nested calls of an Exec whose request carries a progress token.

use std::sync::{Arc, Mutex, OnceLock};

use exec_host::{
    Approval, ApprovalRequest, Approver, BoxFuture, CallOptions, CancellationToken, ContentBlock, Message, Session, ToolCall,
    ToolResult,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as McpContent, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, EnumSchema};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};

/// The MCP server in front of one session.
pub struct Gateway {
    session: Arc<Session>,
    /// The last announcement sent: all of the history the session's announcement rule
    /// reads (its last marker), so nothing grows however often the pool changes.
    announced: Mutex<Option<Message>>,
    /// Cancelled when the server stops: every Exec still running is aborted.
    stop: CancellationToken,
    /// The names-only announcement of the pool when the server started.
    instructions: String,
    /// Told of the client by the first call, before that call can need an approval.
    approver: ClientApprover,
}

impl Gateway {
    /// A gateway for `session`; the first announcement is made now, as `instructions`.
    pub fn new(session: Arc<Session>, approver: ClientApprover, stop: CancellationToken) -> Self {
        let mut gateway = Gateway { session, announced: Mutex::new(None), stop, instructions: String::new(), approver };
        gateway.instructions = gateway.announce().join("\n\n");
        gateway
    }

    /// The announcements the session wants to make now, recorded as made.
    fn announce(&self) -> Vec<String> {
        let mut announced = self.announced.lock().unwrap_or_else(|e| e.into_inner());
        let Ok(prepared) = self.session.prepare(announced.as_slice()) else { return Vec::new() };
        let texts = prepared.append.iter().flat_map(texts_of).collect();
        if let Some(last) = prepared.append.into_iter().last() {
            *announced = Some(last);
        }
        texts
    }
}

fn texts_of(message: &Message) -> Vec<String> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// A session result as an MCP tool result: the model's text (and images) as content, the
/// script's value as `structuredContent` when it is an object, `isError` on failure.
pub fn call_tool_result(result: &ToolResult, announcements: Vec<String>) -> CallToolResult {
    let mut content: Vec<McpContent> = announcements.into_iter().map(McpContent::text).collect();
    content.push(McpContent::text(result.model.text.clone()));
    content.extend(result.model.images.iter().map(|image| McpContent::image(image.base64.clone(), image.mime_type.clone())));
    let mut answer = if result.is_error() { CallToolResult::error(content) } else { CallToolResult::success(content) };
    if !result.is_error() {
        answer.structured_content = result.value().filter(|value| value.is_object()).cloned();
    }
    answer
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("exec-host", env!("CARGO_PKG_VERSION")));
        if self.instructions.is_empty() { info } else { info.with_instructions(self.instructions.clone()) }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let prepared = self.session.prepare(&[]).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let tools = prepared
            .declarations
            .iter()
            .map(|declaration| {
                let schema = match declaration.input_schema.as_ref() {
                    serde_json::Value::Object(schema) => schema.clone(),
                    _ => serde_json::Map::new(),
                };
                Tool::new(declaration.name.clone(), declaration.description.clone(), Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.approver.connected(context.peer.clone());
        let input = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new(format!("mcp-{}", context.id), request.name.to_string(), input);
        // The client's `notifications/cancelled` or the server stopping aborts the call.
        let abort = CancellationToken::new();
        let _abort_on_cancel = {
            let (abort, cancelled, stop) = (abort.clone(), context.ct.clone(), self.stop.clone());
            tokio::spawn(async move {
                tokio::select! {
                    _ = cancelled.cancelled() => abort.cancel(),
                    _ = stop.cancelled() => abort.cancel(),
                    _ = abort.cancelled() => {}
                }
            })
        };
        let mut options = CallOptions::new(abort.clone());
        if let Some(token) = context.meta.get_progress_token() {
            // Each nested call reaching the host is a step. One task sends the latest step
            // whenever there is a newer one: in order, and never a backlog for a slow client.
            let (latest, mut changed) = tokio::sync::watch::channel(None::<ProgressNotificationParam>);
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while changed.changed().await.is_ok() {
                    let step = changed.borrow_and_update().clone();
                    if let Some(step) = step
                        && peer.notify_progress(step).await.is_err()
                    {
                        break;
                    }
                }
            });
            options = options.on_nested_call(move |calls| {
                let Some(last) = calls.last() else { return };
                let plural = if calls.len() == 1 { "" } else { "s" };
                let message = format!("{} tool call{plural}, the last `{}`", calls.len(), last.name);
                latest
                    .send_replace(Some(ProgressNotificationParam::new(token.clone(), calls.len() as f64).with_message(message)));
            });
        }
        let result = self.session.call_with(call, options).await;
        abort.cancel();
        Ok(CallToolResponse::from(call_tool_result(&result, self.announce())))
    }
}

/// Answers calls that must ask by asking the MCP client (elicitation): allow once, allow
/// always, or deny. A client that did not declare elicitation cannot be asked, and the call
/// is refused with the rule that would let it run.
#[derive(Clone, Default)]
pub struct ClientApprover {
    /// The connection to the client, known once it has initialized.
    client: Arc<OnceLock<Peer<RoleServer>>>,
}

/// The choices offered, as the elicitation's `decision` enum, with their titles.
const CHOICES: [(&str, &str); 3] = [("once", "Allow once"), ("always", "Allow always"), ("deny", "Deny")];

impl ClientApprover {
    /// Records the connection to the client (the first time only).
    pub fn connected(&self, client: Peer<RoleServer>) {
        let _ = self.client.set(client);
    }
}

impl Approver for ClientApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        let client = self.client.get().cloned();
        Box::pin(async move {
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
