//! The session: an agent's whole tool layer behind two operations.
//!
//! A [`Session`] owns the registry (the builtin workspace tools, the embedding's tools, the
//! MCP servers' tools), the settings, the deferral table, the funnel, the sandbox and the
//! store of compacted results. Every caller (the command line, the tests, the benchmarks,
//! an embedding) goes through it:
//!
//! - [`Session::prepare`] turns the conversation so far into what the next request needs:
//!   the declarations (`Exec` and the flat tools, byte-stable) and the messages to append
//!   at the end of the history (the announcement of the pool's names).
//! - [`Session::call`] runs one tool call of the model, `Exec` or a flat tool, through the
//!   one funnel, and gives its result in every projection ([`ToolResult`]).
//!
//! What a request sees is computed from the registry and the settings of that moment and
//! kept while neither changes, so preparing a request with an unchanged pool costs a
//! comparison, not a rebuild.
//!
//! The builder and the start are in `builder`, the scope one `Exec`'s script reaches in
//! `scope`, the hints a refusal gives (the names close to a wrong one) in `hints`.

use crate::sources::tools::input::InputHandler;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::calls::funnel::{CallRequest, Funnel, object_input};
use crate::calls::guards::Guards;
use crate::calls::policy::{Approver, Authorized, Notes};
use crate::calls::settings::{PermissionMode, Settings, SettingsError, SettingsFiles};
use crate::catalogue::exec_tool::ExecParams;
use crate::catalogue::pool::{Declaration, DeferralTable, ExecStatus, Pool};
use crate::catalogue::search::{Reachable, SearchParams, SearchResult};
use crate::conversation::announcement::{self, Catalogue};
use crate::conversation::message::Message;
use crate::conversation::render::{self, Compaction, ToolResult};
use crate::conversation::results::{ResultStore, VIEW_TOOL_CALL};
use crate::sandbox::runtime::{ExecOutcome, ExecRequest, Failure, Limits, Parking, Sandbox, SetupError, SyntaxError};
use crate::script::typescript;
use crate::sources::mcp::servers::McpServers;
use crate::sources::mcp::{Connected, NotStarted, ServerConfig, ServerState, StartError};
use crate::sources::tools::builtin::WorkspaceError;
use crate::sources::tools::names::EXEC;
use crate::sources::tools::{CallContext, CallProgress, Effect, Registry, RegistryError, Tool, ToolSet};
use crate::state::ConversationValues;
use crate::support::lock::Unpoisoned;
use crate::support::vocabulary::Unfinished;
use crate::support::vocabulary::{Origin, ToolError};

mod builder;
mod call;
mod checkpoint;
mod hints;
mod parking;
mod resources;
mod running;
mod scope;

pub use builder::SessionBuilder;
pub use call::{CallOptions, ToolCall};
pub use checkpoint::DEFAULT_RUNNING_LEASE;
use hints::{explain_not_a_function, unknown_tool};
pub use parking::{DEFAULT_PARKED_TTL, MAX_PARKED_LISTED, ResumeError};
pub use running::{FINISHED_KEPT, MAX_RUNNING_EXECS};
use scope::ExecScope;

/// Why a session could not start, or cannot say what a request may use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// A settings file is invalid (and no valid settings were read before it).
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// The tools given cannot form a registry (a duplicate or reserved name).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The sandbox could not be set up.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The settings name a workspace backend this session does not have.
    #[error("{why}")]
    Backend { why: String },
    /// A conversation id that is not one (see [`SessionBuilder::conversation`]).
    #[error("{id:?} is not a conversation id: 1 to 128 letters, digits, `.`, `_`, `:` and `-`")]
    Conversation { id: String },
    /// A configured HTTP API could not be loaded (its description, its base URL).
    #[error(transparent)]
    Api(#[from] crate::sources::openapi::ApiError),
}

/// What a request needs, from [`Session::prepare`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Prepared {
    /// The tools to declare: `Exec` first when it is declared, then the flat tools. The
    /// same bytes for as long as the settings and the flat tools stay the same, whatever
    /// enters or leaves the pool.
    pub declarations: Arc<[Declaration]>,
    /// Messages to append at the end of the history before this request is sent (the
    /// announcement, when it has something to say). Append them and keep them: their
    /// metadata is what the next `prepare` reads.
    pub append: Vec<Message>,
    /// The system prompt's section on using the tools (empty when no tool has a line).
    pub guidance: Arc<str>,
    /// Whether `Exec` is declared, or why not.
    pub exec: ExecStatus,
    /// The tools the deferral table defers (the pool behind `Exec`), for a provider that
    /// searches deferred tools itself (see [`Prepared::request_deferring`]).
    pub deferred: Arc<[Declaration]>,
}

impl Prepared {
    /// The request body with `provider`'s own tool search over [`Prepared::deferred`] in
    /// place of `Exec` (the Messages API, `defer_loading` beside its BM25 tool search, which
    /// needs the `anthropic-beta` header [`ANTHROPIC_TOOL_SEARCH_BETA`](crate::ANTHROPIC_TOOL_SEARCH_BETA);
    /// Responses, its `tool_search`); `None` for an API without one, which keeps the
    /// `Exec` path ([`Provider::request`](crate::Provider::request)). The model then calls a deferred tool by its own
    /// name: build the session with [`SessionBuilder::provider_deferral`] so that `call`
    /// takes such calls.
    pub fn request_deferring(
        &self,
        provider: crate::conversation::provider::Provider,
        history: &[Message],
    ) -> Option<serde_json::Value> {
        let declared: Vec<Declaration> =
            self.declarations.iter().filter(|declaration| declaration.name != EXEC).cloned().collect();
        provider.request_deferring(&self.guidance, &declared, &self.deferred, history)
    }
}

/// An agent's tool layer. Cheap to clone; every clone is the same session.
///
/// [`Session::for_client`] makes a session of its own for another client over the same
/// tools: the MCP servers, the engine and the compiled guest are shared, the approvals are not.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
    /// The one path of this session's calls; its policy holds the session's approver and
    /// what was allowed always.
    funnel: Arc<Funnel>,
}

/// What every session made from one builder shares.
struct Inner {
    registry: Arc<Registry>,
    servers: McpServers,
    /// The tool behind a script's `fetch`, outside the registry: no model and no `tools.`
    /// name reaches it; or why it could not be made.
    web_fetch: Result<Arc<dyn Tool>, Arc<str>>,
    settings: Arc<SettingsFiles>,
    deferral: DeferralTable,
    sandbox: Sandbox,
    limits: Limits,
    store: Option<Arc<dyn ResultStore>>,
    announcements: bool,
    /// The provider searches the deferred tools itself: a pooled tool may be called directly.
    provider_deferral: bool,
    start_failures: Vec<StartError>,
    /// What the hooks and stdio servers name in the workspace, kept read-only.
    guards: Option<Guards>,
    /// What requests see now, kept while the registry and the settings stay the same.
    view: Mutex<Option<Arc<View>>>,
    /// Where the session's Execs park, when they may.
    parking: Option<parking::Parking>,
    /// Execs that yielded and run on.
    running: running::Running,
    /// What the conversation's scripts keep with `store()`.
    values: Arc<ConversationValues>,
}

/// The pool of one moment and everything made from it.
struct View {
    tools: Arc<ToolSet>,
    settings: Arc<Settings>,
    pool: Arc<Pool>,
    declarations: Arc<[Declaration]>,
    /// The pool's tools as declarations, for a provider's own deferral.
    deferred: Arc<[Declaration]>,
    catalogue: Catalogue,
    guidance: Arc<str>,
    reachable: Arc<Reachable>,
}

impl Session {
    pub fn builder() -> SessionBuilder {
        SessionBuilder::default()
    }

    /// What the next request needs, from the conversation so far: the declarations, the
    /// messages to append at its end (the announcement), the guidance section.
    pub fn prepare(&self, history: &[Message]) -> Result<Prepared, SessionError> {
        let view = self.view()?;
        let status = view.pool.exec_status();
        let append = match self.inner.announcements {
            true => announcement::next(history, status, &view.catalogue).into_iter().collect(),
            false => Vec::new(),
        };
        Ok(Prepared {
            declarations: view.declarations.clone(),
            append,
            guidance: view.guidance.clone(),
            exec: status,
            deferred: view.deferred.clone(),
        })
    }

    /// A session for another client of the same tools, whose calls that must ask go to
    /// `approver`: it shares the registry, the MCP servers, the settings, the sandbox and
    /// the result store with this one, and has its own approvals (what was allowed always
    /// in this session is not allowed in the new one, except through a rule saved to the
    /// settings) and its own `session_id` for hooks. Shutting down either closes the
    /// shared MCP servers.
    /// A server that asks for input during one of its calls is answered by `input` (an MCP
    /// gateway passes the request on to its client), else by the session's own handler.
    pub fn for_client(&self, approver: Arc<dyn Approver>, input: Option<Arc<dyn InputHandler>>) -> Session {
        let policy = self.funnel.policy().for_client(approver, input);
        Session { inner: self.inner.clone(), funnel: Arc::new(self.funnel.with_policy(policy)) }
    }

    /// This session's id: random, 32 hex digits, as its hooks receive it (`session_id`).
    pub fn id(&self) -> &str {
        self.funnel.policy().session_id()
    }

    /// Runs one tool call of the model's: `Exec` or any tool the session may call.
    pub async fn call(&self, call: ToolCall, abort: CancellationToken) -> ToolResult {
        self.call_with(call, CallOptions::new(abort)).await
    }

    /// [`call`](Self::call) with every option.
    pub async fn call_with(&self, call: ToolCall, options: CallOptions) -> ToolResult {
        if call.name == EXEC
            && let Some(after) = options.yield_after
        {
            return self.exec_yielding(call, options, after).await;
        }
        self.call_now(call, options).await
    }

    /// [`call_with`](Self::call_with), the call run to its end.
    async fn call_now(&self, call: ToolCall, options: CallOptions) -> ToolResult {
        let started = Instant::now();
        let ToolCall { id, name, input } = call;
        let result = if name == EXEC {
            let span = exec_span(&id);
            let result = self.exec(id, input, options, started).instrument(span.clone()).await;
            record_exec(&span, &result);
            result
        } else {
            self.flat(id, name, input, options, started).await
        };
        self.compact(result)
    }

    /// The pool now: what is declared, what sits behind `Exec`.
    pub fn pool(&self) -> Result<Arc<Pool>, SessionError> {
        Ok(self.view()?.pool.clone())
    }

    /// Searches what an `Exec` script reaches now, as `tools.ToolSearch` does.
    pub fn search(&self, query: impl Into<String>, max_results: Option<usize>) -> Result<SearchResult, SessionError> {
        let params = SearchParams { query: query.into(), max_results };
        Ok(self.view()?.reachable.search(&params, self.funnel.observed()))
    }

    /// A TypeScript declaration file of what an `Exec` script reaches now.
    pub fn declaration_file(&self) -> Result<String, SessionError> {
        Ok(crate::catalogue::typings::declaration_file(self.view()?.reachable.definitions(), self.funnel.observed()))
    }

    /// Connects an MCP server while the session runs; its tools join the pool of every
    /// later request.
    /// A server whose every tool a `permissions.deny` rule removes is not started.
    pub async fn add_server(&self, name: &str, config: ServerConfig) -> Result<Connected, StartError> {
        let settings =
            self.inner.settings.current_or_last_good().map_err(|e| StartError::new(name, NotStarted::Settings(Box::new(e))))?;
        if let Some(rule) = settings.denying_server_rule(name) {
            let denied = NotStarted::Denied { rule: rule.value.to_string(), file: rule.source.to_string() };
            return Err(StartError::new(name, denied));
        }
        if let Some(guards) = &self.inner.guards {
            guards.add_server(name, &config);
        }
        self.inner.servers.add(name, config).await
    }

    /// Disconnects an MCP server; false when there was no such server.
    pub async fn remove_server(&self, name: &str) -> bool {
        self.inner.servers.remove(name).await
    }

    /// Loads HTTP API `name` while the session runs, or loads it again (an entry that
    /// changed): its operations replace whatever tools of that name were there, in the pool
    /// of every later request. An API that cannot be loaded leaves the tools it had.
    /// Gives the number of operations offered.
    pub async fn add_api(&self, name: &str, config: &crate::sources::openapi::ApiConfig) -> Result<usize, SessionError> {
        let tools = load_api(name, config, self.inner.servers.auth()).await?;
        let offered = tools.len();
        self.inner.registry.replace_api_tools(name, tools);
        Ok(offered)
    }

    /// Takes HTTP API `name`'s operations out of the pool; false when it had none.
    pub fn remove_api(&self, name: &str) -> bool {
        self.inner.registry.remove_api_tools(name)
    }

    /// Every MCP server added, and where it stands.
    pub fn server_states(&self) -> Vec<(String, ServerState)> {
        self.inner.servers.states()
    }

    /// The servers of the configuration that could not start, each with its reason.
    pub fn start_failures(&self) -> &[StartError] {
        &self.inner.start_failures
    }

    /// The settings files, highest layer first.
    pub fn settings_files(&self) -> Vec<&Path> {
        self.inner.settings.files()
    }

    /// The permission mode in force now.
    pub fn permission_mode(&self) -> Result<PermissionMode, SessionError> {
        Ok(self.funnel.policy().mode(&self.view()?.settings))
    }

    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Closes the MCP servers (each gets a couple of seconds to exit before it is killed).
    pub async fn shutdown(&self) {
        self.inner.servers.shutdown().await;
    }

    /// The view of this moment: rebuilt only when the registry or the settings changed.
    fn view(&self) -> Result<Arc<View>, SessionError> {
        let settings = self.inner.settings.current_or_last_good()?;
        if let Some(guards) = &self.inner.guards {
            guards.hooks_of(&settings);
        }
        let tools = self.inner.registry.snapshot();
        let mut cached = self.inner.view.locked();
        if let Some(view) = &*cached
            && Arc::ptr_eq(&view.tools, &tools)
            && Arc::ptr_eq(&view.settings, &settings)
        {
            return Ok(view.clone());
        }
        let pool = Pool::build(tools.definitions(), &settings, &self.inner.deferral);
        let view = Arc::new(View {
            declarations: pool.declarations().into(),
            deferred: pool.pooled().iter().map(Declaration::from).collect(),
            catalogue: Catalogue::of(pool.pooled()),
            guidance: pool.guidance().into(),
            reachable: Arc::new(Reachable::new(pool.pooled().to_vec())),
            pool: Arc::new(pool),
            tools,
            settings,
        });
        *cached = Some(view.clone());
        Ok(view)
    }

    /// An `Exec` call: authorized at the tool layer, then run over the pool of this moment.
    async fn exec(&self, id: String, input: Value, options: CallOptions, started: Instant) -> ToolResult {
        let max_chars = self.inner.limits.max_result_chars;
        let refuse = |error: ToolError| render::failure_result(id.clone(), EXEC.to_string(), error, max_chars, started.elapsed());
        let view = match self.view() {
            Ok(view) => view,
            Err(error) => {
                let why = crate::support::report::error_sentence(&error);
                return refuse(ToolError::authorization(format!("`Exec` was not run: {why}")));
            }
        };
        if let Err(refusal) = exec_declared(&view) {
            return refuse(refusal);
        }
        let context = CallContext::new(Origin::Direct { call_id: id.as_str().into() }, options.abort.clone());
        let funnel = &self.funnel;
        let Authorized { input, post_hook_input } =
            match funnel.authorize(EXEC, Effect::ReadOnly, input, &context, &view.settings, None).await {
                Ok(authorized) => authorized,
                Err(refusal) => return refuse(refusal.or_refused()),
            };
        let params = match object_input(EXEC, input).and_then(ExecParams::from_args) {
            Ok(params) => params,
            Err(error) => return refuse(error),
        };
        let notes = Notes::default();
        let scope = self.exec_scope(&view, &id, &notes, &options);
        let parking = if self.inner.parking.is_some() { Parking::Allowed } else { Parking::Never };
        let request = self.exec_request(params.code, options, parking);
        let mut outcome = self.inner.sandbox.exec(request.clone(), scope.clone()).await;
        // A script the engine cannot parse may be TypeScript: read as such, with its types
        // erased, it runs; if it does not parse either, the error that says more is kept (the
        // engine's names the token, the TypeScript parser's reads past the types).
        if let Err(Failure::Syntax(engine_error)) = &mut outcome.result {
            match typescript::erase(&request.code) {
                Ok(Ok(erased)) => outcome = self.exec_erased(&request, scope, erased).await,
                Ok(Err(error)) if line_of(&error) != line_of(engine_error) => *engine_error = error,
                Ok(Err(_)) => {}
                Err(unreadable) => engine_error.message.push_str(&format!(" (nor was it read as TypeScript: {unreadable})")),
            }
        }
        if let Err(Failure::Thrown(error)) = &mut outcome.result {
            explain_not_a_function(&request.code, error, &view.reachable);
        }
        let suspended = outcome.suspended.take();
        let mut result = render::exec_result(id, outcome, &self.inner.limits, started.elapsed());
        self.keep_parked(&mut result, suspended).await;
        if result.ok() {
            let value = || result.value().cloned().unwrap_or(Value::Null);
            funnel.after(EXEC, &context.origin, post_hook_input, value, &view.settings, &notes).await;
        }
        result.messages = take(&notes);
        result
    }

    /// One Exec of this session: its code, the session's limits, the call's options.
    fn exec_request(&self, code: String, options: CallOptions, parking: Parking) -> ExecRequest {
        ExecRequest {
            code,
            limits: self.inner.limits.clone(),
            abort: options.abort,
            watcher: options.on_nested_call,
            console: options.on_console,
            trace: false,
            run_options: None,
            parking,
            checkpoints: options.checkpoints,
        }
    }

    /// What one `Exec`'s script reaches: the pool of `view`, through the funnel.
    fn exec_scope(&self, view: &Arc<View>, exec_call_id: &str, notes: &Notes, options: &CallOptions) -> Arc<ExecScope> {
        Arc::new(ExecScope {
            session: self.inner.clone(),
            reachable: view.reachable.clone(),
            funnel: self.funnel.clone(),
            exec_call_id: exec_call_id.into(),
            view: view.clone(),
            notes: notes.clone(),
            progress: options.on_tool_progress.clone(),
            input: options.on_input.clone(),
        })
    }

    /// Runs a TypeScript script with its types erased (see [`crate::script::typescript`]); the
    /// positions its failure names are the original text's.
    async fn exec_erased(&self, request: &ExecRequest, scope: Arc<ExecScope>, erased: typescript::Erased) -> ExecOutcome {
        let request = ExecRequest { code: erased.code.clone(), ..request.clone() };
        let mut outcome = self.inner.sandbox.exec(request, scope).await;
        if let Err(failure) = &mut outcome.result {
            erased.remap(failure);
        }
        outcome
    }

    /// A call of a tool declared flat. A pooled tool is not declared: the model reaches it
    /// from an `Exec` script, and a direct call of it is refused with the way to call it.
    async fn flat(&self, id: String, name: String, input: Value, options: CallOptions, started: Instant) -> ToolResult {
        let notes = Notes::default();
        let outcome = match self.view() {
            Err(error) => {
                Err(ToolError::authorization(format!("`{name}` was not run: {}", crate::support::report::error_sentence(&error))))
            }
            Ok(view) if view.reachable.contains(&name) && !self.inner.provider_deferral => Err(ToolError::discovery(format!(
                "`{name}` is in the Exec catalogue, not declared as a tool of its own: call it from an Exec script, as {}(args)",
                crate::catalogue::signature::access(&name)
            ))),
            Ok(view) if !view.tools.contains(&name) => Err(ToolError::discovery(unknown_tool(&name, &view))),
            Ok(view) => {
                let mut context = CallContext::new(Origin::Direct { call_id: id.as_str().into() }, options.abort);
                context.progress =
                    options.on_tool_progress.as_ref().map(|watcher| CallProgress::sink(watcher, &name, &context.origin));
                context.input = options.on_input;
                let settings = Some(view.settings.clone());
                let request =
                    CallRequest { name: name.clone(), input, context, settings, notes: notes.clone(), asked_before: None };
                self.funnel.call(request).await.map_err(Unfinished::or_refused)
            }
        };
        let mut result = render::flat_result(id, name, outcome, &self.inner.limits, started.elapsed());
        result.messages = take(&notes);
        result
    }

    /// Compacts a long result for the model, keeping the whole text under the call's id.
    fn compact(&self, mut result: ToolResult) -> ToolResult {
        let Some(store) = &self.inner.store else {
            result.uncut = None;
            return result;
        };
        if result.name == VIEW_TOOL_CALL || !render::needs_compaction(&result.model.text) {
            result.uncut = None;
            return result;
        }
        // What the result cap cut is kept whole, and the model reads the head and tail of
        // that: the offsets view_tool_call takes are into the same text.
        let whole = result.uncut.take().unwrap_or_else(|| std::mem::take(&mut result.model.text));
        let kept = match store.keep(&result.call_id, &whole) {
            Ok(()) => true,
            Err(error) => {
                let why = crate::support::report::error_sentence(&error);
                tracing::warn!("the whole result of call `{}` could not be kept: {why}", result.call_id);
                false
            }
        };
        let total_chars = whole.chars().count();
        let location = if kept { store.location(&result.call_id) } else { None };
        // Where the model reaches view_tool_call: behind Exec (no declaration in any request
        // until it is needed) or declared flat when every tool is.
        let from_scripts = self.pool().is_ok_and(|pool| pool.names().any(|name| name == VIEW_TOOL_CALL));
        result.model.text = render::compact(&whole, &result.call_id, kept, from_scripts);
        result.compacted = Some(Compaction { total_chars, kept, location });
        result
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("tools", &self.inner.registry.snapshot()).finish_non_exhaustive()
    }
}

/// `Ok` when `Exec` is declared under the settings in force; otherwise the refusal, naming
/// the setting (and where it was written) that turned it off. A deny rule is the funnel's
/// to refuse, before this is asked.
fn exec_declared(view: &View) -> Result<(), ToolError> {
    match view.pool.exec_status() {
        ExecStatus::Disabled => {
            let from = view.settings.enable_exec_source.as_ref().map(|source| format!(" in {source}")).unwrap_or_default();
            Err(ToolError::authorization(format!(
                "`Exec` is turned off by `\"enableExec\": false`{from}; no script was run. Call the tools directly."
            )))
        }
        ExecStatus::EmptyPool => Err(ToolError::discovery(
            "`Exec` is not declared now: no tool is in its catalogue, so every tool is declared directly; no script was run.",
        )),
        _ => Ok(()),
    }
}

/// The line a syntax error names.
fn line_of(syntax_error: &SyntaxError) -> Option<u32> {
    syntax_error.position.map(|position| position.line)
}

/// The messages collected in `notes`, taken out.
fn take(notes: &Notes) -> Vec<Message> {
    std::mem::take(&mut *notes.locked()).into_iter().map(Message::meta).collect()
}

/// The span of one Exec (with `tool_call` spans beneath it for its nested calls): what a
/// trace of the host shows of it.
pub(crate) fn exec_span(call_id: &str) -> tracing::Span {
    tracing::info_span!(
        "exec",
        otel.name = "Exec",
        exec_host.call_id = %call_id,
        exec_host.nested_calls = tracing::field::Empty,
        exec_host.outcome = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// How the Exec of `span` ended.
pub(crate) fn record_exec(span: &tracing::Span, result: &ToolResult) {
    span.record("exec_host.nested_calls", result.client.calls.len());
    let outcome = match (&result.parked, &result.running, result.is_error()) {
        (Some(_), _, _) => "parked",
        (_, Some(_), _) => "running",
        (_, _, true) => "failed",
        _ => "succeeded",
    };
    span.record("exec_host.outcome", outcome);
    if result.is_error() {
        span.record("otel.status_code", "ERROR");
    }
}

/// API `name`'s operations as tools, each operation it could not offer logged with why.
async fn load_api(
    name: &str,
    config: &crate::sources::openapi::ApiConfig,
    auth: &crate::sources::oauth::SignInSetup,
) -> Result<Vec<Arc<dyn Tool>>, SessionError> {
    let loaded = crate::sources::openapi::load(name, config, auth).await?;
    for skipped in &loaded.skipped {
        tracing::warn!(api = %name, "operation {} is not offered: {}", skipped.operation, skipped.reason);
    }
    Ok(loaded.tools)
}
