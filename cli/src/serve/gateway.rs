//! The MCP server in front of one client's session: what it declares, lists and reads, and
//! the `tasks/*` requests; its `tools/call` is `call.rs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use exec_host::gateway::plan::Plan;
use exec_host::gateway::request_state;
use exec_host::gateway::tasks::Tasks;
use exec_host::{CancellationToken, ContentBlock, Declaration, Message, Session};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, DiscoverResult, GetTaskParams, GetTaskResult,
    Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;
use tokio::sync::Semaphore;

use super::{Capacity, ClientApprover, Metrics, Parking, resources, traces};

/// How long a client of 2026-07-28 may keep `tools/list` (`ttlMs`). `Exec`'s declaration never
/// changes; the list changes only when a server whose tools are always loaded comes or goes,
/// or the settings deny a tool, and a client sees that within this time. Private: it is what
/// this server's settings give its principal, not a public fact.
pub const TOOLS_LIST_TTL_MS: u64 = 60_000;

/// The MCP server in front of one client's session.
pub struct Gateway {
    pub(super) session: Session,
    /// The last announcement sent: all of the history the session's announcement rule
    /// reads (its last marker), so nothing grows however often the pool changes.
    pub(super) announced: Mutex<Option<Message>>,
    /// Cancelled when the server stops: every call still running is aborted.
    pub(super) stop: CancellationToken,
    /// The names-only announcement of the pool when the client connected.
    pub(super) instructions: String,
    /// The tools this client was last given (`tools/list`): when the declarations change (a
    /// server with always-loaded tools came or went), the client is told the list changed.
    pub(super) declared: Mutex<Option<Arc<[Declaration]>>>,
    /// Told of the client by its first call, before that call can need an approval.
    pub(super) approver: ClientApprover,
    pub(super) capacity: Arc<Capacity>,
    /// This client's share of the calls that run at once.
    pub(super) slots: Arc<Semaphore>,
    /// Names this client's calls: the ids key the results kept for `view_tool_call`, which
    /// every client shares, so they must neither collide with nor be guessed by another's.
    pub(super) call_ids: CallIds,
    /// Approvals over MRTR and tasks (2026-07-28), when Execs can park.
    pub(super) parking: Option<Arc<Parking>>,
    /// The server's figures (`/metrics`), over HTTP.
    pub(super) metrics: Option<Arc<Metrics>>,
}

impl Gateway {
    /// A gateway for one client of `shared`, whose calls that must ask go to `approver`; the
    /// first announcement is made now, as `instructions`.
    pub fn new(
        shared: &Session,
        approver: ClientApprover,
        capacity: Arc<Capacity>,
        stop: CancellationToken,
        parking: Option<Arc<Parking>>,
        metrics: Option<Arc<Metrics>>,
    ) -> Self {
        let session = shared.for_client(Arc::new(approver.clone()), Some(Arc::new(approver.clone())));
        let mut gateway = Gateway {
            call_ids: CallIds::new(session.id()),
            session,
            announced: Mutex::new(None),
            stop,
            instructions: String::new(),
            declared: Mutex::new(None),
            approver,
            slots: capacity.client_slots(),
            capacity,
            parking,
            metrics,
        };
        gateway.instructions = gateway.announce().0.join("\n\n");
        gateway
    }

    /// The announcements the session wants to make now, recorded as made, and whether the
    /// declarations differ from those the client was given.
    pub(super) fn announce(&self) -> (Vec<String>, bool) {
        let mut announced = self.announced.lock().unwrap_or_else(|e| e.into_inner());
        let Ok(prepared) = self.session.prepare(announced.as_slice()) else { return (Vec::new(), false) };
        let texts = prepared.append.iter().flat_map(texts_of).collect();
        if let Some(last) = prepared.append.into_iter().last() {
            *announced = Some(last);
        }
        let mut declared = self.declared.lock().unwrap_or_else(|e| e.into_inner());
        let changed = declared
            .as_ref()
            .is_some_and(|given| !Arc::ptr_eq(given, &prepared.declarations) && **given != *prepared.declarations);
        *declared = Some(prepared.declarations);
        (texts, changed)
    }
}

/// Who is calling: the hash of the bearer token it presented over HTTP, else the one client
/// of a local transport (`request_state::client_identity`).
pub(super) fn client_identity(context: &RequestContext<RoleServer>) -> String {
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let token = parts.and_then(|parts| parts.headers.get(axum::http::header::AUTHORIZATION));
    request_state::client_identity(token.map(|value| value.as_bytes()))
}

/// Unguessable, unique call ids: the client's random session id and a counter.
pub(super) struct CallIds {
    prefix: String,
    next: AtomicU64,
}

impl CallIds {
    fn new(session_id: &str) -> Self {
        CallIds { prefix: format!("mcp-{session_id}"), next: AtomicU64::new(1) }
    }

    pub(super) fn next(&self) -> String {
        format!("{}-{}", self.prefix, self.next.fetch_add(1, Ordering::Relaxed))
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

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let builder = ServerCapabilities::builder().enable_tools().enable_tool_list_changed();
        // Tasks live in the store: without one there are none.
        let mut capabilities = match self.parking {
            Some(_) => builder.enable_tasks().build(),
            None => builder.build(),
        };
        // The downstream servers' resources, when one offers any.
        if self.session.offers_resources() {
            capabilities.resources = Some(rmcp::model::ResourcesCapability::default());
        }
        let info = ServerConfig::new(capabilities).with_server_info(Implementation::new("exec-host", env!("CARGO_PKG_VERSION")));
        if self.instructions.is_empty() { info } else { info.with_instructions(self.instructions.clone()) }
    }

    /// `server/discover` (2026-07-28). That revision tells clients of list changes only
    /// through `subscriptions/listen`, which this server does not offer, so it does not
    /// claim `listChanged` there: such a client keeps `tools/list` for its `ttlMs`.
    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        let mut info = self.get_info();
        if let Some(tools) = info.capabilities.tools.as_mut() {
            tools.list_changed = None;
        }
        Ok(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), info))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let prepared = self.session.prepare(&[]).map_err(|e| ErrorData::internal_error(exec_host::error_sentence(&e), None))?;
        *self.declared.lock().unwrap_or_else(|e| e.into_inner()) = Some(prepared.declarations.clone());
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
        Ok(ListToolsResult::with_all_items(tools).with_ttl_ms(TOOLS_LIST_TTL_MS).with_cache_scope(CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        use tracing::Instrument;
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let span = tracing::info_span!(
            "tools/call",
            otel.name = %format_args!("tools/call {}", request.name),
            otel.kind = "server",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = %request.name,
            otel.status_code = tracing::field::Empty,
        );
        if let Some(parent) = traces::client_context(&context) {
            let _ = span.set_parent(parent);
        }
        let answer = self.answer_call(request, context).instrument(span.clone()).await;
        if answer.is_err() {
            span.record("otel.status_code", "ERROR");
        }
        answer
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.approver.connected(context.peer.clone());
        let listed = self.session.list_resources(context.ct.child_token()).await.map_err(resource_error)?;
        let resources = listed["resources"].as_array().cloned().unwrap_or_default();
        let resources = resources.into_iter().filter_map(|entry| resources::listed(&entry)).collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.approver.connected(context.peer.clone());
        let server = resources::server_of(&request);
        let output = self.session.read_resource(server.as_deref(), &request.uri, context.ct.child_token()).await;
        let output = output.map_err(|error| match error.stage {
            exec_host::Stage::Discovery => ErrorData::resource_not_found(error.message, Some(json!({"uri": request.uri}))),
            _ => resource_error(error),
        })?;
        Ok(ReadResourceResult::new(resources::contents(&request.uri, output)).into())
    }

    async fn get_task(&self, request: GetTaskParams, context: RequestContext<RoleServer>) -> Result<GetTaskResult, ErrorData> {
        let tasks = self.tasks_of(&context)?;
        tasks.get(&self.session, &client_identity(&context), &request.task_id).await
    }

    async fn update_task(&self, request: UpdateTaskParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let tasks = self.tasks_of(&context)?;
        tasks.update(&self.session, &client_identity(&context), &request.task_id, &request.input_responses).await
    }

    async fn cancel_task(&self, request: CancelTaskParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let tasks = self.tasks_of(&context)?;
        tasks.cancel(&self.session, &client_identity(&context), &request.task_id).await
    }
}

/// A resource request the session refused, as the protocol's error.
fn resource_error(error: exec_host::ToolError) -> ErrorData {
    match error.stage {
        exec_host::Stage::Authorization => ErrorData::invalid_request(error.message, None),
        exec_host::Stage::Params => ErrorData::invalid_params(error.message, None),
        _ => ErrorData::internal_error(error.message, None),
    }
}

impl Gateway {
    /// Counts on the server's figures, when it keeps them.
    pub(super) fn count(&self, what: impl FnOnce(&Metrics)) {
        if let Some(metrics) = &self.metrics {
            what(metrics);
        }
    }

    /// The tasks for a `tasks/*` request; the Execs it resumes or takes up ask as the calls
    /// of the request's client do.
    fn tasks_of(&self, context: &RequestContext<RoleServer>) -> Result<&Arc<Tasks>, ErrorData> {
        self.approver.connected(context.peer.clone());
        let elicits = context.client_capabilities().is_some_and(|capabilities| capabilities.elicitation.is_some());
        let (Some(plan), Some(parking)) = (Plan::for_tasks(elicits, self.parking.is_some()), &self.parking) else {
            return Err(ErrorData::method_not_found::<rmcp::model::GetTaskMethod>());
        };
        self.approver.ask_by(plan.asking());
        Ok(&parking.tasks)
    }
}
