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

pub mod elicit;
pub mod http;
pub mod jsonrpc;
pub mod metrics;
pub mod reload;
pub mod resources;
pub mod stdio;
pub mod tasks;
pub mod traces;
pub mod waiting;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use exec_host::gateway::approval_forms;
use exec_host::gateway::request_state::{self, RequestStates, Retry};
use exec_host::{CallOptions, CancellationToken, ContentBlock, Declaration, Message, Session, ToolCall, ToolResult};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock as McpContent,
    DiscoverResult, GetTaskParams, GetTaskResult, Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use elicit::{Asking, ClientApprover};
pub use metrics::Metrics;
use metrics::{ApprovalEvent, QuestionEvent};
pub use tasks::Tasks;
pub use waiting::Waiting;

/// What a server with a state store keeps for its clients of 2026-07-28 between their
/// requests, so that any replica sharing the store answers: the request states of approval
/// rounds (`exec_host::gateway::request_state`) and the tasks (`tasks`).
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
        store: exec_host::state_store::SealedStore,
        metrics: Option<Arc<Metrics>>,
        stop: CancellationToken,
    ) -> Result<Arc<Self>, String> {
        Ok(Arc::new(Parking {
            rounds: RequestStates::new(store.clone()),
            tasks: Tasks::new(store, metrics),
            waiting: Waiting::new(stop)?,
        }))
    }
}

/// What a call of a client comes to: a result, or a parked Exec that cannot be resumed.
type CallResult = Result<ToolResult, exec_host::ResumeError>;

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
    fn take(&self, client: &Arc<Semaphore>) -> Result<(OwnedSemaphorePermit, OwnedSemaphorePermit), String> {
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

    fn client_slots(&self) -> Arc<Semaphore> {
        Arc::new(Semaphore::new(self.per_client as usize))
    }
}

/// How long a client of 2026-07-28 may keep `tools/list` (`ttlMs`). `Exec`'s declaration never
/// changes; the list changes only when a server whose tools are always loaded comes or goes,
/// or the settings deny a tool, and a client sees that within this time. Private: it is what
/// this server's settings give its principal, not a public fact.
pub const TOOLS_LIST_TTL_MS: u64 = 60_000;

/// The MCP server in front of one client's session.
pub struct Gateway {
    session: Session,
    /// The last announcement sent: all of the history the session's announcement rule
    /// reads (its last marker), so nothing grows however often the pool changes.
    announced: Mutex<Option<Message>>,
    /// Cancelled when the server stops: every call still running is aborted.
    stop: CancellationToken,
    /// The names-only announcement of the pool when the client connected.
    instructions: String,
    /// The tools this client was last given (`tools/list`): when the declarations change (a
    /// server with always-loaded tools came or went), the client is told the list changed.
    declared: Mutex<Option<Arc<[Declaration]>>>,
    /// Told of the client by its first call, before that call can need an approval.
    approver: ClientApprover,
    capacity: Arc<Capacity>,
    /// This client's share of the calls that run at once.
    slots: Arc<Semaphore>,
    /// Names this client's calls: the ids key the results kept for `view_tool_call`, which
    /// every client shares, so they must neither collide with nor be guessed by another's.
    call_ids: CallIds,
    /// Approvals over MRTR and tasks (2026-07-28), when Execs can park.
    parking: Option<Arc<Parking>>,
    /// The server's figures (`/metrics`), over HTTP.
    metrics: Option<Arc<Metrics>>,
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
    fn announce(&self) -> (Vec<String>, bool) {
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
fn client_identity(context: &RequestContext<RoleServer>) -> String {
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let token = parts.and_then(|parts| parts.headers.get(axum::http::header::AUTHORIZATION));
    request_state::client_identity(token.map(|value| value.as_bytes()))
}

/// Who makes the call of a request, and what it is.
struct ThisCall {
    /// The client's identity ([`client_identity`]).
    client: String,
    tool: String,
    /// Ends the call (the client cancelled it, or the server stops).
    abort: CancellationToken,
    arrived: std::time::Instant,
}

/// A call of this request: one to run, or one that waited on questions its retry answers.
enum Running {
    Future(std::pin::Pin<Box<dyn std::future::Future<Output = CallResult> + Send>>),
    Call(waiting::Call<CallResult>),
}

/// Unguessable, unique call ids: the client's random session id and a counter.
struct CallIds {
    prefix: String,
    next: AtomicU64,
}

impl CallIds {
    fn new(session_id: &str) -> Self {
        CallIds { prefix: format!("mcp-{session_id}"), next: AtomicU64::new(1) }
    }

    fn next(&self) -> String {
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
    /// One `tools/call`: run, parked with forms, waiting on a downstream server's questions,
    /// become a task, or refused.
    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arrived = std::time::Instant::now();
        self.approver.connected(context.peer.clone());
        let modern = context.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let asking = self.asking(modern, &context);
        self.approver.ask_by(asking);
        let _slots = match self.capacity.take(&self.slots) {
            Ok(slots) => slots,
            Err(busy) => {
                self.count(|metrics| metrics.busy(&request.name, arrived.elapsed()));
                return Ok(CallToolResponse::from(CallToolResult::error(vec![McpContent::text(busy)])));
            }
        };
        let this = ThisCall {
            client: client_identity(&context),
            tool: request.name.to_string(),
            abort: CancellationToken::new(),
            arrived,
        };
        let (client, tool, abort) = (&this.client, &this.tool, &this.abort);
        let mut options = self.call_options(abort, &context);
        let parking = self.parking.as_ref().filter(|_| modern);
        let tasks = self.tasks_for(modern, &context);
        // A client asked by parking gets a downstream server's questions in the call's answer
        // too, while the call waits (`waiting`); a call that may become a task does not.
        let questions = match (asking, tasks) {
            (Asking::Park, None) => {
                let (asker, questions) = waiting::asker();
                options = options.on_input(asker);
                Some(questions)
            }
            _ => None,
        };
        let session = self.session.clone();
        let (running, round): (Running, u32) = match (&request.request_state, parking) {
            (Some(state), Some(parking)) => {
                let retry = parking.rounds.open(client, tool, state).map_err(|error| self.refused_retry(error))?;
                let round = retry.round + 1;
                match &retry.waits_in {
                    // A call that waits on questions: the answers go to them, and it goes on.
                    Some(replica) => {
                        let call = parking
                            .waiting
                            .resume(replica, &retry.handle, request.input_responses.as_ref())
                            .map_err(|why| self.refused_retry(approval_forms::refused(why.sentence())))?;
                        self.count(|metrics| metrics.question(QuestionEvent::answered));
                        (Running::Call(call), round)
                    }
                    // A parked Exec: the answers resume it.
                    None => {
                        let answers = self.answers_of(&retry, request.input_responses.as_ref()).await?;
                        let metrics = self.metrics.clone();
                        let resumed = async move {
                            let resumed = session.resume(&retry.handle, answers, options).await;
                            if let (Ok(_), Some(metrics)) = (&resumed, metrics) {
                                metrics.approval(ApprovalEvent::retried);
                            }
                            resumed
                        };
                        (Running::Future(Box::pin(resumed)), round)
                    }
                }
            }
            (Some(_), _) => {
                return Err(ErrorData::invalid_params("the retry was refused: this server made no requestState", None));
            }
            (None, _) => {
                let input = serde_json::Value::Object(request.arguments.unwrap_or_default());
                let call = ToolCall::new(self.call_ids.next(), tool.clone(), input);
                // An Exec of a client that takes tasks runs on as one past a moment.
                let options = match tasks {
                    Some(_) => options.yield_after(exec_host::gateway::task_record::TASK_AFTER),
                    None => options,
                };
                (Running::Future(Box::pin(async move { Ok(session.call_with(call, options).await) })), 1)
            }
        };
        let mut call = match (running, questions) {
            (Running::Call(call), _) => call,
            (Running::Future(run), Some(questions)) => waiting::Call::start(run, questions, abort.clone()),
            (Running::Future(run), None) => {
                let result = self.until_done(run, abort, &context).await;
                return self.answered(result, round, &this, &context).await;
            }
        };
        loop {
            match call.follow(self.stopped(&context)).await {
                waiting::Followed::Done(result) => {
                    // A task that ended without a result panicked: never expected.
                    let result =
                        result.ok_or_else(|| ErrorData::internal_error("the call's task ended without a result", None))?;
                    return self.answered(result, round, &this, &context).await;
                }
                waiting::Followed::Asks(asks, forms) => {
                    let Some(parking) = parking else { unreachable!("only a client asked by parking is asked questions") };
                    if !request_state::within_bound(round) {
                        asks.end();
                        return Ok(CallToolResponse::from(request_state::too_many_rounds()));
                    }
                    match parking.waiting.keep(asks) {
                        Ok(handle) => {
                            self.count(|metrics| metrics.question(QuestionEvent::asked));
                            let replica = parking.waiting.replica();
                            let asked = parking.rounds.questions_required(client, tool, forms, (replica, handle), round);
                            return Ok(CallToolResponse::from(asked));
                        }
                        // No room to wait: its questions were declined, and it goes on.
                        Err(back) => call = back,
                    }
                }
            }
        }
    }

    /// The answer to a call that ran to `result`: its result, the forms of its parked Exec,
    /// or a task it became.
    async fn answered(
        &self,
        result: CallResult,
        round: u32,
        this: &ThisCall,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (client, tool) = (this.client.as_str(), this.tool.as_str());
        let mut result = result.map_err(|error| self.refused(error))?;
        let modern = context.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let rounds = self.parking.as_ref().filter(|_| modern).map(|parking| &parking.rounds);
        if let (Some(running), Some(tasks)) = (&result.running, self.tasks_for(modern, context)) {
            if let Some(created) = tasks.create(&self.session, client, &running.handle).await {
                self.count(|metrics| metrics.became_task(this.arrived.elapsed()));
                return Ok(CallToolResponse::Task(created));
            }
            // It could not become a task: the call waits for it.
            let waited =
                self.until_done(self.session.wait(&running.handle, std::time::Duration::MAX), &this.abort, context).await;
            result = waited.map_err(|error| ErrorData::internal_error(exec_host::error_sentence(&error), None))?;
        }
        // A parked Exec's forms go back in the answer, within the bound on rounds.
        let forms = match (&result.parked, rounds) {
            (Some(parked), Some(rounds)) if request_state::within_bound(round) => {
                Some(rounds.input_required(client, tool, parked, round))
            }
            _ => None,
        };
        self.count(|metrics| metrics.call_ended(tool, &result, forms.is_some()));
        if let Some(forms) = forms {
            self.count(|metrics| metrics.approval(ApprovalEvent::parked));
            return Ok(CallToolResponse::from(forms));
        }
        if let (Some(parked), Some(_)) = (&result.parked, rounds) {
            let _ = self.session.discard_parked(&parked.handle).await;
            return Ok(CallToolResponse::from(request_state::too_many_rounds()));
        }
        let (announcements, list_changed) = self.announce();
        if list_changed {
            let _ = context.peer.notify_tool_list_changed().await;
        }
        Ok(CallToolResponse::from(call_tool_result(&result, announcements)))
    }

    /// Counts on the server's figures, when it keeps them.
    fn count(&self, what: impl FnOnce(&Metrics)) {
        if let Some(metrics) = &self.metrics {
            what(metrics);
        }
    }

    /// The answers a retry gives to the approvals of the parked Exec it names, or why it is
    /// refused.
    async fn answers_of(
        &self,
        retry: &Retry,
        responses: Option<&rmcp::model::InputResponses>,
    ) -> Result<std::collections::HashMap<u32, exec_host::Approval>, ErrorData> {
        let parked = self.session.parked_exec(&retry.handle).await.map_err(|error| self.refused(error))?;
        let pending: Vec<u32> = parked.approvals.iter().map(|approval| approval.id).collect();
        approval_forms::answers(&pending, responses).map_err(|error| self.refused_retry(error))
    }

    /// A retry refused for what it carries, counted.
    fn refused_retry(&self, error: ErrorData) -> ErrorData {
        self.count(|metrics| metrics.approval(ApprovalEvent::refused));
        error
    }

    /// A retry whose parked Exec cannot be taken up, counted, as the protocol's error.
    fn refused(&self, error: exec_host::ResumeError) -> ErrorData {
        self.count(|metrics| {
            metrics.approval(ApprovalEvent::refused);
            if matches!(error, exec_host::ResumeError::Unreadable { .. }) {
                metrics.store_error();
            }
        });
        ErrorData::invalid_params(format!("the retry was refused: {}", exec_host::error_sentence(&error)), None)
    }

    /// The tasks, when a call of this request may become one: an `Exec` of a client of
    /// 2026-07-28 that declared the Tasks extension, on a server with a store.
    fn tasks_for(&self, modern: bool, context: &RequestContext<RoleServer>) -> Option<&Arc<Tasks>> {
        let declared = context.client_capabilities().is_some_and(|capabilities| capabilities.supports_tasks());
        self.parking.as_ref().filter(|_| modern && declared).map(|parking| &parking.tasks)
    }

    /// The tasks for a `tasks/*` request; the Execs it resumes or takes up ask as the calls
    /// of the request's client do.
    fn tasks_of(&self, context: &RequestContext<RoleServer>) -> Result<&Arc<Tasks>, ErrorData> {
        self.approver.connected(context.peer.clone());
        self.approver.ask_by(self.asking(true, context));
        let parking = self.parking.as_ref().ok_or_else(ErrorData::method_not_found::<rmcp::model::GetTaskMethod>)?;
        Ok(&parking.tasks)
    }

    /// How a call of this request that must ask reaches its client: by a request (2025-11-25),
    /// by parking its Exec (2026-07-28, with a state store), or not at all.
    fn asking(&self, modern: bool, context: &RequestContext<RoleServer>) -> Asking {
        if !modern {
            return Asking::Request;
        }
        let elicits = context.client_capabilities().is_some_and(|capabilities| capabilities.elicitation.is_some());
        match (elicits, &self.parking) {
            (false, _) => Asking::Refuse("the MCP client cannot be asked (it did not declare elicitation)"),
            (true, None) => Asking::Refuse("this server keeps no parked Execs (it has no state store)"),
            (true, Some(_)) => Asking::Park,
        }
    }

    /// The options of one call: its abort, and progress notifications when the request
    /// carries a progress token.
    fn call_options(&self, abort: &CancellationToken, context: &RequestContext<RoleServer>) -> CallOptions {
        let mut options = CallOptions::new(abort.clone());
        if let Some(token) = context.meta.get_progress_token() {
            // Each nested call reaching the host is a step, and so is each step a downstream
            // tool reports. One task sends the latest step whenever there is a newer one: in
            // order, and never a backlog for a slow client.
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
            // Progress must grow with each notification: it counts the steps so far, counted
            // and handed on under one lock so that they leave in order.
            let steps = Mutex::new(0u64);
            let step = move |message: String| {
                let mut count = steps.lock().unwrap_or_else(|e| e.into_inner());
                *count += 1;
                latest.send_replace(Some(ProgressNotificationParam::new(token.clone(), *count as f64).with_message(message)));
            };
            let step = Arc::new(step);
            let reported = std::sync::atomic::AtomicUsize::new(0);
            let on_call = step.clone();
            options = options
                .on_nested_call(move |calls| {
                    // A call that finishes is not news.
                    if reported.swap(calls.len(), Ordering::Relaxed) == calls.len() {
                        return;
                    }
                    let Some(last) = calls.last() else { return };
                    let plural = if calls.len() == 1 { "" } else { "s" };
                    on_call(format!("{} tool call{plural}, the last `{}`", calls.len(), last.name));
                })
                .on_tool_progress(move |progress| step(format!("`{}`: {}", progress.tool, progress.step)));
        }
        options
    }

    /// Resolves when the call of this request is to stop: the client cancelled it or left,
    /// or the server stops.
    fn stopped(&self, context: &RequestContext<RoleServer>) -> impl std::future::Future<Output = ()> + use<> {
        let (client, server) = (context.ct.clone(), self.stop.clone());
        async move {
            tokio::select! {
                () = client.cancelled() => {}
                () = server.cancelled() => {}
            }
        }
    }

    /// `running` to its end. The client's `notifications/cancelled`, the client leaving, or
    /// the server stopping aborts it, and it then ends promptly with its failure result.
    async fn until_done<T>(
        &self,
        running: impl std::future::Future<Output = T>,
        abort: &CancellationToken,
        context: &RequestContext<RoleServer>,
    ) -> T {
        tokio::pin!(running);
        tokio::select! {
            result = &mut running => result,
            _ = context.ct.cancelled() => { abort.cancel(); running.await }
            _ = self.stop.cancelled() => { abort.cancel(); running.await }
        }
    }
}
