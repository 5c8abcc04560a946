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

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::calls::funnel::{CallRequest, Funnel, object_input};
use crate::calls::guards::Guards;
use crate::calls::policy::{Approver, Authorized, ModeChoice, Notes, Policy};
use crate::calls::settings::{self, Layer, PermissionMode, Settings, SettingsError, SettingsFiles, SettingsSource};
use crate::catalogue::exec_tool::ExecParams;
use crate::catalogue::pool::{Declaration, DeferralTable, ExecStatus, Pool};
use crate::catalogue::search::{self, Reachable, SearchParams, SearchResult};
use crate::conversation::announce::{self, Catalogue};
use crate::conversation::message::Message;
use crate::conversation::render::{self, Compaction, ToolResult};
use crate::conversation::results::{MemoryResultStore, ResultStore, VIEW_TOOL_CALL, ViewToolCall};
use crate::sandbox::runtime::{
    CallWatcher, ConsoleWatcher, ExecOutcome, ExecRequest, Failure, Limits, Sandbox, SandboxOptions, ScriptTools, SetupError,
    ToolFuture,
};
use crate::script::{callee, typescript};
use crate::sources::mcp::servers::McpServers;
use crate::sources::mcp::{Connected, McpConfig, ServerConfig, ServerLimits, ServerState, StartError};
use crate::sources::tools::builtin::{self, Workspace, WorkspaceError};
use crate::sources::tools::names::{EXEC, TOOL_SEARCH, split_mcp_name};
use crate::sources::tools::{CallContext, Effect, MAX_TOOL_NAME_LEN, Origin, Registry, RegistryError, Tool, ToolError, ToolSet};
use crate::support::lock::Unpoisoned;

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
}

/// One tool call of the model's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The call's arguments: a JSON object.
    pub input: Value,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ToolCall { id: id.into(), name: name.into(), input }
    }

    /// The tool calls of an assistant message, in order.
    pub fn all_in(message: &Message) -> Vec<ToolCall> {
        message.tool_uses().map(|(id, name, input)| ToolCall::new(id, name, input.clone())).collect()
    }
}

/// How one call is made: its abort signal, and who watches an `Exec`'s nested calls.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Cancelling it ends the call promptly with a failure result.
    pub abort: CancellationToken,
    /// Sees an `Exec`'s call record each time a nested call reaches the host or finishes.
    pub on_nested_call: Option<CallWatcher>,
    /// Sees each console line of an `Exec` as the script writes it.
    pub on_console: Option<ConsoleWatcher>,
}

impl CallOptions {
    pub fn new(abort: CancellationToken) -> Self {
        CallOptions { abort, on_nested_call: None, on_console: None }
    }

    /// Calls `watcher` with the whole record of an `Exec`'s nested calls each time one
    /// reaches the host and each time one finishes (for a live summary).
    pub fn on_nested_call(mut self, watcher: impl Fn(&[crate::sandbox::runtime::NestedCall]) + Send + Sync + 'static) -> Self {
        self.on_nested_call = Some(Arc::new(watcher));
        self
    }

    /// Calls `watcher` with each console line of an `Exec` as the script writes it (within
    /// the log cap, which bounds what it sees): its level and its text.
    pub fn on_console(mut self, watcher: impl Fn(crate::sandbox::runtime::ConsoleLevel, &str) + Send + Sync + 'static) -> Self {
        self.on_console = Some(Arc::new(watcher));
        self
    }
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
}

/// Sets up a [`Session`].
pub struct SessionBuilder {
    workspace: Option<PathBuf>,
    tools: Vec<Arc<dyn Tool>>,
    servers: McpConfig,
    server_limits: ServerLimits,
    managed: Option<Layer>,
    settings_sources: Vec<SettingsSource>,
    deferral: DeferralTable,
    mode: ModeChoice,
    approver: Option<Arc<dyn Approver>>,
    rules_file: Option<PathBuf>,
    read_only_files: Vec<PathBuf>,
    sandbox: Option<Sandbox>,
    sandbox_options: SandboxOptions,
    limits: Limits,
    store: Option<Arc<dyn ResultStore>>,
    announcements: bool,
}

impl Default for SessionBuilder {
    fn default() -> Self {
        SessionBuilder {
            workspace: None,
            tools: Vec::new(),
            servers: McpConfig::default(),
            server_limits: ServerLimits::default(),
            managed: None,
            settings_sources: Vec::new(),
            deferral: DeferralTable::default(),
            mode: ModeChoice { explicit: None, start: PermissionMode::Default },
            approver: None,
            rules_file: None,
            read_only_files: Vec::new(),
            sandbox: None,
            sandbox_options: SandboxOptions::default(),
            limits: Limits::default(),
            store: Some(Arc::new(MemoryResultStore::default())),
            announcements: true,
        }
    }
}

impl SessionBuilder {
    /// The directory the builtin workspace tools work in. Without one the session has no
    /// builtin workspace tools.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// A tool of the embedding's own.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// MCP servers to connect while the session starts; more can join later with
    /// [`Session::add_server`].
    pub fn mcp_servers(mut self, config: McpConfig) -> Self {
        self.servers = config;
        self
    }

    /// Time each MCP server has to start and list its tools.
    pub fn mcp_connect_timeout(mut self, timeout: Duration) -> Self {
        self.server_limits.connect_timeout = timeout;
        self
    }

    /// Bytes of calls one MCP server may leave waiting in the host before further calls to
    /// it wait for room ([`ServerLimits::queued_bytes`]; default
    /// [`DEFAULT_QUEUED_BYTES`](crate::sources::mcp::DEFAULT_QUEUED_BYTES)).
    pub fn mcp_queued_bytes(mut self, bytes: usize) -> Self {
        self.server_limits.queued_bytes = bytes;
        self
    }

    /// Settings passed in code: the managed layer, above every file (an administrator's
    /// override, or an embedding's `disallowedTools` as deny rules).
    pub fn managed_settings(mut self, layer: Layer) -> Self {
        self.managed = Some(layer);
        self
    }

    /// Settings files, highest layer first; a file that does not exist is an empty layer.
    /// Each is read again when it changes.
    pub fn settings_files(mut self, files: impl IntoIterator<Item = PathBuf>) -> Self {
        self.settings_sources = files.into_iter().map(SettingsSource::File).collect();
        self
    }

    /// Every layer of settings below the managed values, highest first.
    pub fn settings_sources(mut self, sources: Vec<SettingsSource>) -> Self {
        self.settings_sources = sources;
        self
    }

    /// The layers `exec-host` itself reads: the managed file, `command_line` (rules given
    /// as flags), `extra` files (the last one highest), the workspace's project file and the
    /// user's file.
    pub fn standard_settings(mut self, extra: &[PathBuf], command_line: Option<Layer>) -> Self {
        let workspace = self.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
        self.settings_sources = settings::standard_sources(&workspace, extra, command_line);
        self
    }

    /// The permission mode, above the settings' `defaultMode` (as `--permission-mode`).
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.mode.explicit = Some(mode);
        self
    }

    /// The mode the session starts in when neither [`permission_mode`](Self::permission_mode)
    /// nor the settings say (`default` unless set here).
    pub fn starting_permission_mode(mut self, mode: PermissionMode) -> Self {
        self.mode.start = mode;
        self
    }

    /// Who answers the calls that must ask. Without one, such calls are refused with the
    /// rule that would let them run.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Files the workspace tools must never write, besides the settings files (kept
    /// read-only already): the MCP configuration files the embedding reads, say. Only those
    /// inside the workspace matter.
    pub fn read_only_files(mut self, files: impl IntoIterator<Item = PathBuf>) -> Self {
        self.read_only_files.extend(files);
        self
    }

    /// The settings file "allow always" adds its rules to (by default the workspace's
    /// project file, `.exec-host/settings.json`).
    pub fn rules_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.rules_file = Some(file.into());
        self
    }

    /// The deferral table (to replace the engine's exemption list).
    pub fn deferral(mut self, table: DeferralTable) -> Self {
        self.deferral = table;
        self
    }

    /// A sandbox to share with other sessions of the process (one engine, one compiled guest).
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// How to set up the sandbox when none is shared.
    pub fn sandbox_options(mut self, options: SandboxOptions) -> Self {
        self.sandbox_options = options;
        self
    }

    /// The limits of every `Exec` of the session, and the result cap of flat calls.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Where the whole text of compacted results is kept (in memory by default).
    pub fn result_store(mut self, store: Arc<dyn ResultStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// No compaction: results reach the model whole, and `view_tool_call` is not declared.
    pub fn without_compaction(mut self) -> Self {
        self.store = None;
        self
    }

    /// The host has no history channel for the announcement: `prepare` appends nothing.
    pub fn without_announcements(mut self) -> Self {
        self.announcements = false;
        self
    }

    /// Starts the session: the sandbox and the MCP servers start together. A server that
    /// cannot start does not stop the session; see [`Session::start_failures`].
    pub async fn build(self) -> Result<Session, SessionError> {
        let mut sources: Vec<SettingsSource> = self.managed.into_iter().map(SettingsSource::Values).collect();
        sources.extend(self.settings_sources);
        let settings = Arc::new(SettingsFiles::new(sources));
        // Read once now, so a broken file stops the session before anything starts.
        let current = settings.current()?;
        let mut tools = self.tools;
        let workspace = match &self.workspace {
            Some(dir) => {
                // The files that steer this host are out of the tools' reach: a script must
                // not widen its own rights, or the next run's.
                let mut control = settings.files().into_iter().map(Path::to_path_buf).collect::<Vec<_>>();
                control.extend(self.read_only_files.iter().cloned());
                Some(Arc::new(Workspace::open(dir)?.with_read_only_files(&control)))
            }
            None => None,
        };
        if let Some(workspace) = &workspace {
            tools.extend(builtin::all(workspace.clone()));
        }
        // What the hooks and servers run stays out of the tools' writes from the start.
        let guards = workspace.as_ref().zip(self.workspace.as_deref()).map(|(workspace, given)| {
            let guards = Guards::new(workspace.clone(), given);
            guards.hooks_of(&current);
            guards
        });
        let rules_file = self.rules_file.or_else(|| self.workspace.as_ref().map(|dir| dir.join(settings::PROJECT_FILE)));
        let policy = Policy::new(workspace, self.workspace.clone(), self.mode, self.approver, rules_file, settings.clone());
        if let Some(store) = &self.store {
            tools.push(Arc::new(ViewToolCall::new(store.clone())));
        }
        let registry = Arc::new(Registry::new(tools)?);
        let servers = McpServers::new(registry.clone(), self.server_limits);
        let sandbox = async {
            match self.sandbox {
                Some(sandbox) => Ok(sandbox),
                None => Sandbox::with_options(cache_outside(self.sandbox_options, self.workspace.as_deref())).await,
            }
        };
        let wanted = not_denied(self.servers, &current);
        if let Some(guards) = &guards {
            wanted.servers.iter().for_each(|(name, server)| guards.add_server(name, server));
        }
        let (sandbox, start_failures) = tokio::join!(sandbox, servers.start_all(&wanted));
        let funnel = Arc::new(Funnel::new(registry.clone(), settings.clone(), policy));
        let inner = Inner {
            registry,
            servers,
            settings,
            deferral: self.deferral,
            sandbox: sandbox?,
            limits: self.limits,
            store: self.store,
            announcements: self.announcements,
            start_failures,
            guards,
            view: Mutex::new(None),
        };
        Ok(Session { inner: Arc::new(inner), funnel })
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
    settings: Arc<SettingsFiles>,
    deferral: DeferralTable,
    sandbox: Sandbox,
    limits: Limits,
    store: Option<Arc<dyn ResultStore>>,
    announcements: bool,
    start_failures: Vec<StartError>,
    /// What the hooks and stdio servers name in the workspace, kept read-only.
    guards: Option<Guards>,
    /// What requests see now, kept while the registry and the settings stay the same.
    view: Mutex<Option<Arc<View>>>,
}

/// The pool of one moment and everything made from it.
struct View {
    tools: Arc<ToolSet>,
    settings: Arc<Settings>,
    pool: Arc<Pool>,
    declarations: Arc<[Declaration]>,
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
            true => announce::next(history, status, &view.catalogue).into_iter().collect(),
            false => Vec::new(),
        };
        Ok(Prepared { declarations: view.declarations.clone(), append, guidance: view.guidance.clone(), exec: status })
    }

    /// A session for another client of the same tools, whose calls that must ask go to
    /// `approver`: it shares the registry, the MCP servers, the settings, the sandbox and
    /// the result store with this one, and has its own approvals (what was allowed always
    /// in this session is not allowed in the new one, except through a rule saved to the
    /// settings) and its own `session_id` for hooks. Shutting down either closes the
    /// shared MCP servers.
    pub fn for_client(&self, approver: Arc<dyn Approver>) -> Session {
        let policy = self.funnel.policy().for_client(approver);
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
        let started = Instant::now();
        let ToolCall { id, name, input } = call;
        let result = if name == EXEC {
            self.exec(id, input, options, started).await
        } else {
            self.flat(id, name, input, options.abort, started).await
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
        Ok(self.view()?.reachable.search(&params))
    }

    /// A TypeScript declaration file of what an `Exec` script reaches now.
    pub fn declaration_file(&self) -> Result<String, SessionError> {
        Ok(crate::catalogue::typings::declaration_file(self.view()?.reachable.definitions()))
    }

    /// Connects an MCP server while the session runs; its tools join the pool of every
    /// later request.
    /// A server whose every tool a `permissions.deny` rule removes is not started.
    pub async fn add_server(&self, name: &str, config: ServerConfig) -> Result<Connected, StartError> {
        let settings = self
            .inner
            .settings
            .current_or_last_good()
            .map_err(|e| StartError { server: name.into(), reason: crate::support::report::error_sentence(&e) })?;
        if let Some(rule) = settings.denying_server_rule(name) {
            let reason =
                format!("not started: the permissions.deny rule `{}` in {} removes all its tools", rule.value, rule.source);
            return Err(StartError { server: name.into(), reason });
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
            catalogue: Catalogue::of(pool.names()),
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
            match funnel.authorize(EXEC, Effect::ReadOnly, input, &context, &view.settings).await {
                Ok(authorized) => authorized,
                Err(refusal) => return refuse(refusal),
            };
        let params = match object_input(EXEC, input).and_then(ExecParams::from_args) {
            Ok(params) => params,
            Err(error) => return refuse(error),
        };
        let notes = Notes::default();
        let scope = Arc::new(ExecScope {
            session: self.inner.clone(),
            reachable: view.reachable.clone(),
            funnel: self.funnel.clone(),
            exec_call_id: id.as_str().into(),
            view: view.clone(),
            notes: notes.clone(),
        });
        let request = ExecRequest {
            code: params.code,
            limits: self.inner.limits.clone(),
            abort: options.abort,
            watcher: options.on_nested_call,
            console: options.on_console,
            trace: false,
            run_options: None,
        };
        let mut outcome = self.inner.sandbox.exec(request.clone(), scope.clone()).await;
        // A script the engine cannot parse may be TypeScript: read as such, with its types
        // erased, it runs; if it does not parse either, the error that says more is kept (the
        // engine's names the token, the TypeScript parser's reads past the types).
        if let Err(Failure::Syntax(engine_error)) = &mut outcome.result {
            match typescript::erase(&request.code) {
                Ok(Ok(erased)) => outcome = self.exec_erased(&request, scope, erased).await,
                Ok(Err(error)) if line_of(&error) != line_of(engine_error) => *engine_error = error,
                Ok(Err(_)) => {}
                Err(unreadable) => engine_error.push_str(&format!(" (nor was it read as TypeScript: {unreadable})")),
            }
        }
        if let Err(Failure::Thrown(error)) = &mut outcome.result {
            explain_not_a_function(&request.code, error, &view.reachable);
        }
        let mut result = render::exec_result(id, outcome, &self.inner.limits, started.elapsed());
        if result.ok() {
            let value = || result.value().cloned().unwrap_or(Value::Null);
            funnel.after(EXEC, post_hook_input, value, &view.settings, &notes).await;
        }
        result.messages = take(&notes);
        result
    }

    /// Runs a TypeScript script with its types erased (see [`crate::script::typescript`]); the
    /// positions its failure names are the original text's.
    async fn exec_erased(&self, request: &ExecRequest, scope: Arc<ExecScope>, erased: typescript::Erased) -> ExecOutcome {
        let request = ExecRequest { code: erased.code.clone(), ..request.clone() };
        let mut outcome = self.inner.sandbox.exec(request, scope).await;
        if let Err(Failure::Syntax(text) | Failure::Thrown(text) | Failure::Unserializable(text) | Failure::Crashed(text)) =
            &mut outcome.result
        {
            *text = erased.remap(text);
        }
        outcome
    }

    /// A call of a tool declared flat. A pooled tool is not declared: the model reaches it
    /// from an `Exec` script, and a direct call of it is refused with the way to call it.
    async fn flat(&self, id: String, name: String, input: Value, abort: CancellationToken, started: Instant) -> ToolResult {
        let notes = Notes::default();
        let outcome = match self.view() {
            Err(error) => {
                Err(ToolError::authorization(format!("`{name}` was not run: {}", crate::support::report::error_sentence(&error))))
            }
            Ok(view) if view.reachable.contains(&name) => Err(ToolError::discovery(format!(
                "`{name}` is in the Exec catalogue, not declared as a tool of its own: call it from an Exec script, as {}(args)",
                crate::catalogue::signature::access(&name)
            ))),
            Ok(view) if !view.tools.contains(&name) => Err(ToolError::discovery(unknown_tool(&name, &view))),
            Ok(view) => {
                let context = CallContext::new(Origin::Direct { call_id: id.as_str().into() }, abort);
                let settings = Some(view.settings.clone());
                let request = CallRequest { name: name.clone(), input, context, settings, notes: notes.clone() };
                self.funnel.call(request).await
            }
        };
        let mut result = render::flat_result(id, name, outcome, &self.inner.limits, started.elapsed());
        result.messages = take(&notes);
        result
    }

    /// Compacts a long result for the model, keeping the whole text under the call's id.
    fn compact(&self, mut result: ToolResult) -> ToolResult {
        let Some(store) = &self.inner.store else { return result };
        if result.name == VIEW_TOOL_CALL || !render::needs_compaction(&result.model.text) {
            return result;
        }
        let kept = match store.keep(&result.call_id, &result.model.text) {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!("the whole result of call `{}` could not be kept: {error}", result.call_id);
                false
            }
        };
        let total_chars = result.model.text.chars().count();
        let location = if kept { store.location(&result.call_id) } else { None };
        result.model.text = render::compact(&result.model.text, &result.call_id, kept);
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

/// Why a direct call names no tool, with the names close to it (declared, or pooled and
/// called from a script).
fn unknown_tool(name: &str, view: &View) -> String {
    if name == TOOL_SEARCH {
        return "`ToolSearch` is not a tool of its own: call tools.ToolSearch({ query }) inside an Exec script".to_string();
    }
    let mut message = crate::calls::funnel::unknown_tool(name);
    let declared = view.declarations.iter().map(|declaration| (declaration.name.as_str(), ""));
    let pooled = view.pool.names().map(|pooled| (pooled, " (from an Exec script)"));
    if let Some(close) = close_names(name, declared.chain(pooled)) {
        message.push_str(&format!("; did you mean {close}?"));
    }
    message
}

/// Up to three of `candidates` (a name, and how it is reached) close to `name`, best first,
/// as `` `a` or `b` ``; `None` when none is close. Two MCP tool names are compared by their
/// tool parts alone: the shared `mcp__` and server would make every tool of a server look
/// alike, and the same tool on another server is a good guess for a wrong server name.
/// A name too long to be a tool's is not compared (the model chose it; comparing costs its
/// length).
fn close_names<'a>(name: &str, candidates: impl Iterator<Item = (&'a str, &'a str)>) -> Option<String> {
    if name.len() > MAX_TOOL_NAME_LEN {
        return None;
    }
    let similarity = |candidate: &str| match (split_mcp_name(name), split_mcp_name(candidate)) {
        (Some((_, tool)), Some((_, other_tool))) => strsim::normalized_damerau_levenshtein(tool, other_tool),
        _ => strsim::normalized_damerau_levenshtein(name, candidate),
    };
    let mut close: Vec<(f64, &str, &str)> = candidates
        .map(|(candidate, how)| (similarity(candidate), candidate, how))
        .filter(|(similarity, _, _)| *similarity >= 0.6)
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let shown: Vec<String> = close.iter().take(3).map(|(_, candidate, how)| format!("`{candidate}`{how}")).collect();
    (!shown.is_empty()).then(|| shown.join(" or "))
}

/// The engine's bare `TypeError: not a function` in `error`, naming what was called; a
/// `tools.<name>` this script cannot reach is said to be one, with the closest names.
fn explain_not_a_function(code: &str, error: &mut String, reachable: &Reachable) {
    let Some((named, callee)) = callee::name_callee(code, error) else { return };
    *error = named;
    let Some(name) = callee.strip_prefix("tools.").filter(|name| !reachable.contains(name)) else { return };
    let close = close_names(name, reachable.names().iter().map(|pooled| (pooled.as_str(), "")));
    let close = close.map(|close| format!(" Did you mean {close}?")).unwrap_or_default();
    let (first, frames) =
        error.split_once('\n').map_or((error.as_str(), String::new()), |(first, rest)| (first, format!("\n{rest}")));
    *error = format!(
        "{first} (`{name}` is not a tool this script can reach; tools.ToolSearch finds tools by keyword.{close}){frames}"
    );
}

/// The line a syntax error names (`(line 3, column 7)`).
fn line_of(syntax_error: &str) -> Option<&str> {
    syntax_error.rsplit_once("(line ")?.1.split(',').next()
}

/// `config` without the servers whose every tool the settings deny: starting one would
/// only run a process no call may reach.
fn not_denied(mut config: McpConfig, settings: &Settings) -> McpConfig {
    config.servers.retain(|name, _| match settings.denying_server_rule(name) {
        Some(rule) => {
            tracing::info!(server = %name, "MCP server not started: the permissions.deny rule `{}` in {} removes all its tools", rule.value, rule.source);
            false
        }
        None => true,
    });
    config
}

/// What one `Exec`'s script reaches: the pool of the moment it started, through the funnel.
struct ExecScope {
    /// The session's servers and their start failures, for the reason a name is unreachable.
    session: Arc<Inner>,
    reachable: Arc<Reachable>,
    funnel: Arc<Funnel>,
    exec_call_id: Arc<str>,
    view: Arc<View>,
    /// What the hooks of the script's calls add to the conversation.
    notes: Notes,
}

impl ScriptTools for ExecScope {
    fn names(&self) -> &[String] {
        self.reachable.names()
    }

    fn call(&self, name: String, args: Map<String, Value>, cancel: CancellationToken) -> ToolFuture {
        if !self.reachable.contains(&name) {
            return Box::pin(std::future::ready(Err(self.unreachable(&name))));
        }
        let funnel = self.funnel.clone();
        let context = CallContext::new(Origin::Nested { exec_call_id: self.exec_call_id.clone() }, cancel);
        // The settings are read at the moment of the call: a rule added while the script
        // runs applies to it.
        let tool = name.clone();
        let request = CallRequest { name, input: Value::Object(args), context, settings: None, notes: self.notes.clone() };
        Box::pin(async move { funnel.call(request).await.map_err(|error| error.naming(&tool)) })
    }

    fn search(&self, args: Map<String, Value>) -> Result<String, ToolError> {
        let params = search::parse_params(args)?;
        let result = self.reachable.search(&params);
        serde_json::to_string(&result)
            .map_err(|e| ToolError::projection(format!("ToolSearch: the result could not be encoded: {e}")))
    }
}

impl ExecScope {
    /// The refusal of a name outside the pool, with the reason when there is one to give.
    fn unreachable(&self, name: &str) -> ToolError {
        let flat = self.view.pool.flat().iter().any(|tool| tool.name == name);
        let why = if flat {
            "it is declared to the model directly, outside the catalogue, so a script cannot call it".to_string()
        } else if let Some(rule) = self.view.settings.denying_rule(name) {
            format!("the permissions.deny rule `{}` in {} removes it", rule.value, rule.source)
        } else if let Some((server, tool)) = split_mcp_name(name) {
            self.server_reason(name, server, tool)
        } else {
            "only this session's catalogue tools are".to_string()
        };
        let close = close_names(name, self.reachable.names().iter().map(|pooled| (pooled.as_str(), "")));
        let close = close.map(|close| format!(" Did you mean {close}?")).unwrap_or_default();
        ToolError::discovery(format!(
            "`{name}` is not reachable from this script: {why}.{close} \
             Use tools.ToolSearch({{ query: \"...\" }}) to find a tool's exact name and call shape."
        ))
    }

    /// Why MCP server `server` gives the script no `tool`: it has none, it left, it never
    /// started, there is no such server, or the tool came after the script started.
    fn server_reason(&self, name: &str, server: &str, tool: &str) -> String {
        if self.session.registry.snapshot().contains(name) {
            return format!("MCP server `{server}` offers `{tool}` only since the script started; the next Exec can call it");
        }
        let state = self.session.servers.states().into_iter().find(|(known, _)| known == server).map(|(_, state)| state);
        match state {
            Some(ServerState::Connected { .. }) => format!("MCP server `{server}` has no tool `{tool}`"),
            Some(ServerState::Disconnected { reason }) => {
                format!("MCP server `{server}` disconnected ({reason}), and its tools left the catalogue")
            }
            _ => match self.session.start_failures.iter().find(|failure| failure.server == server) {
                Some(failure) => format!("MCP server `{server}` failed to start: {}", failure.reason),
                None => format!("no MCP server `{server}` is configured"),
            },
        }
    }
}

/// The messages collected in `notes`, taken out.
fn take(notes: &Notes) -> Vec<Message> {
    std::mem::take(&mut *notes.locked()).into_iter().map(Message::meta).collect()
}

/// The compiled-guest cache holds native code the next run maps and executes: it is never
/// used from inside the workspace, where a script's writes could reach it (a workspace of
/// `~` and a cache in `~/.cache`, say). Without a cache the guest's code stays in memory.
fn cache_outside(options: SandboxOptions, workspace: Option<&Path>) -> SandboxOptions {
    let (Some(cache), Some(workspace)) = (&options.cache_dir, workspace) else { return options };
    let (cache_real, workspace_real) = (builtin::real_path(cache), builtin::real_path(workspace));
    if cache_real.starts_with(&workspace_real) {
        tracing::warn!(
            "the compiled-guest cache {} is inside the workspace {}, where scripts write: it is not used (set EXEC_HOST_CACHE_DIR elsewhere)",
            cache.display(),
            workspace.display()
        );
        return options.with_cache_dir(None);
    }
    options
}
