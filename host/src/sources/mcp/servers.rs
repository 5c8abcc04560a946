//! The MCP servers of a session: started together, watched while they run, and their tools
//! kept in the [`Registry`] exactly while they are connected.
//!
//! Each connected server has one supervising task. It refreshes the server's tools when the
//! server sends `notifications/tools/list_changed`, removes them when the server exits or
//! drops the connection (calls in flight then fail naming the server), and closes the
//! connection when the server is removed or the session shuts down.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use rmcp::model::{ClientRequest, CustomResult, ListToolsRequest, PaginatedRequestParams, ServerResult};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::config::{self, McpConfig, ServerConfig};
use super::connection::{self, ConnectError, Connection};
use super::link::ServerLink;
use super::resources::ResourceServers;
use super::tool::{SkippedTool, tools_of};
use crate::sources::oauth::{SignInError, SignInSetup};
use crate::sources::tools::input::InputHandler;
use crate::sources::tools::{Registry, Tool};
use crate::support::lock::Unpoisoned;

/// Tools one server may list, over all the pages of its `tools/list`; past it, the list is
/// refused whole (the tools a model would be given cannot be a random part of it).
pub const MAX_TOOLS_PER_SERVER: usize = 10_000;

/// Pages of one `tools/list` read at most: a cursor that never ends is a server's fault.
pub const MAX_LIST_PAGES: usize = 1_000;

/// Default time a server has to start and answer `initialize` and `tools/list`. Every
/// server starts at once, so this is what one server that hangs costs a run. The published
/// servers tried answer within 2 s of a warm start (an `npx` download on first use can take
/// longer: raise it with `--mcp-connect-timeout-ms` then); 10 s leaves them room while a
/// dead server no longer holds every run for half a minute.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default bound on the bytes of calls waiting to reach one server (see
/// [`ServerLimits::queued_bytes`]).
pub const DEFAULT_QUEUED_BYTES: usize = 64 * 1024 * 1024;
/// How long a closing server may take to exit before it is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How long a server whose call failed at the transport level has to answer a `ping`.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// What the servers of a session may take of the host's time and memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// Time each server has to start and list its tools.
    pub connect_timeout: Duration,
    /// Bytes of calls one server has not yet taken from the host (requests written to a pipe
    /// the server does not read, posts not yet sent), counted as each call's arguments plus
    /// a fixed envelope. A call past it waits for room, as a call waits for its answer
    /// (the Exec's abort and nested-wait cap end the wait): a slow server slows its callers
    /// instead of growing the host.
    pub queued_bytes: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits { connect_timeout: DEFAULT_CONNECT_TIMEOUT, queued_bytes: DEFAULT_QUEUED_BYTES }
    }
}

/// A server that could not be connected, and why (its causes, in `why`). Shown once, as one
/// sentence ([`crate::error_sentence`]).
#[derive(Clone, Debug, thiserror::Error)]
#[error("MCP server `{server}` is not available")]
#[non_exhaustive]
pub struct StartError {
    pub server: String,
    #[source]
    pub why: Arc<NotStarted>,
}

impl StartError {
    pub fn new(server: &str, why: NotStarted) -> Self {
        StartError { server: server.to_string(), why: Arc::new(why) }
    }

    /// Why, as one sentence with its causes.
    pub fn reason(&self) -> String {
        crate::support::report::error_sentence(&*self.why)
    }
}

/// Why a server was not started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotStarted {
    #[error("{0}")]
    Name(&'static str),
    #[error("a server of that name is already connected; remove it first")]
    AlreadyConnected,
    #[error("not started: the permissions.deny rule `{rule}` in {file} removes all its tools")]
    Denied { rule: String, file: String },
    /// The settings that decide whether it may start could not be read.
    #[error("the settings cannot be read")]
    Settings(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("no answer to `tools/list` within {0:?}")]
    ToolsTimedOut(Duration),
    #[error(transparent)]
    Tools(#[from] ToolsError),
}

/// Why a server's tools could not be listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsError {
    #[error("`tools/list` failed")]
    Failed(#[source] rmcp::service::ServiceError),
    #[error(transparent)]
    SignIn(#[from] SignInError),
    #[error("its answer to `tools/list` is not a list of tools")]
    NotAList,
    #[error("its answer to `tools/list` has no `tools` array")]
    NoToolsArray,
    #[error("its `tools/list` has a `nextCursor` that is not a string")]
    BadCursor,
    #[error("it lists more than {MAX_TOOLS_PER_SERVER} tools, more than one server may offer")]
    TooMany,
    #[error("its `tools/list` goes on past {MAX_LIST_PAGES} pages")]
    TooManyPages,
}

/// Where a server stands.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerState {
    /// Connected; `tools` of its tools are in the registry.
    Connected { tools: usize },
    /// It exited or dropped the connection; its tools left the registry.
    Disconnected { reason: String },
}

/// What connecting a server gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Connected {
    pub tools: usize,
    /// Tools the server listed that are not offered (invalid schema or name), each logged
    /// once as a warning.
    pub skipped: Vec<SkippedTool>,
}

struct Supervised {
    stop: CancellationToken,
    task: JoinHandle<()>,
    state: Arc<Mutex<ServerState>>,
}

impl Supervised {
    fn is_connected(&self) -> bool {
        matches!(*self.state.locked(), ServerState::Connected { .. })
    }
}

/// Every MCP server of a session.
pub struct McpServers {
    registry: Arc<Registry>,
    resources: Arc<ResourceServers>,
    limits: ServerLimits,
    auth: SignInSetup,
    input: Option<Arc<dyn InputHandler>>,
    servers: Mutex<BTreeMap<String, Supervised>>,
}

impl McpServers {
    pub fn new(registry: Arc<Registry>, limits: ServerLimits, auth: SignInSetup, input: Option<Arc<dyn InputHandler>>) -> Self {
        let resources = ResourceServers::new(registry.clone());
        McpServers { registry, resources, limits, auth, input, servers: Mutex::new(BTreeMap::new()) }
    }

    /// Connects every configured server at once. Each failure is returned (and nothing is
    /// left of that server); the other servers are connected regardless.
    pub async fn start_all(&self, config: &McpConfig) -> Vec<StartError> {
        let starts = config.servers.iter().map(|(name, server)| self.add(name, server.clone()));
        join_all(starts).await.into_iter().filter_map(Result::err).collect()
    }

    /// Connects one server and puts its tools in the registry.
    pub async fn add(&self, name: &str, server: ServerConfig) -> Result<Connected, StartError> {
        let fail = |why: NotStarted| StartError::new(name, why);
        config::check_name(name).map_err(|why| fail(NotStarted::Name(why)))?;
        if self.is_connected(name) {
            return Err(fail(NotStarted::AlreadyConnected));
        }
        let connect_timeout = self.limits.connect_timeout;
        let connection = connection::connect(name, &server, &self.auth, self.input.as_ref(), connect_timeout)
            .await
            .map_err(|error| fail(error.into()))?;
        let link = ServerLink::new(name, connection.service.peer().clone(), self.limits.queued_bytes)
            .with_step_up(connection.auth.clone())
            .with_callers(connection.callers.clone());
        let listed = tokio::time::timeout(connect_timeout, list_tools(&link))
            .await
            .map_err(|_| fail(NotStarted::ToolsTimedOut(connect_timeout)))?
            .map_err(|error| fail(error.into()))?;
        let (tools, skipped) = offered(&link, listed, server.always_load);
        let connected = Connected { tools: tools.len(), skipped };

        let mut servers = self.lock();
        if servers.get(name).is_some_and(Supervised::is_connected) {
            // Another `add` of the same name finished first; this connection closes on drop.
            return Err(fail(NotStarted::AlreadyConnected));
        }
        self.registry.replace_server_tools(name, tools);
        let has_resources = link.peer.peer_info().is_some_and(|info| info.capabilities.resources.is_some());
        if has_resources {
            self.resources.connected(name, link.clone());
        }
        info!(server = name, tools = connected.tools, "MCP server connected");
        let state = Arc::new(Mutex::new(ServerState::Connected { tools: connected.tools }));
        let stop = CancellationToken::new();
        let watch = Watch {
            server: name.to_string(),
            always_load: server.always_load,
            registry: self.registry.clone(),
            resources: self.resources.clone(),
            state: state.clone(),
            refresh_timeout: connect_timeout,
        };
        let task = tokio::spawn(watch.run(connection, link, stop.clone()));
        servers.insert(name.to_string(), Supervised { stop, task, state });
        Ok(connected)
    }

    /// Disconnects a server and removes its tools; false when there was no such server.
    pub async fn remove(&self, name: &str) -> bool {
        let Some(supervised) = self.lock().remove(name) else { return false };
        supervised.stop.cancel();
        let _ = supervised.task.await;
        true
    }

    /// The tokens kept, and whether a person can be sent to sign in (what the session's HTTP
    /// APIs signed in to by a person use too).
    pub(crate) fn auth(&self) -> &SignInSetup {
        &self.auth
    }

    /// Every server added, and where it stands.
    pub fn states(&self) -> Vec<(String, ServerState)> {
        let servers = self.lock();
        servers.iter().map(|(name, s)| (name.clone(), s.state.locked().clone())).collect()
    }

    /// Closes every server, waiting at most a couple of seconds for each to exit (they are
    /// killed past that).
    pub async fn shutdown(&self) {
        let all: Vec<Supervised> = std::mem::take(&mut *self.lock()).into_values().collect();
        for supervised in &all {
            supervised.stop.cancel();
        }
        join_all(all.into_iter().map(|s| s.task)).await;
    }

    /// A server of that name is connected now (one that disconnected may be added again).
    fn is_connected(&self, name: &str) -> bool {
        self.lock().get(name).is_some_and(Supervised::is_connected)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Supervised>> {
        self.servers.locked()
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for supervised in self.lock().values() {
            supervised.stop.cancel();
        }
    }
}

/// The tools of a `tools/list` answer; each one refused is reported once, as a warning.
fn offered(link: &ServerLink, listed: Listed, always_load: bool) -> (Vec<Arc<dyn Tool>>, Vec<SkippedTool>) {
    let (tools, mut skipped) = tools_of(link, listed.tools, always_load);
    skipped.extend(listed.unreadable);
    for tool in &skipped {
        warn!("MCP server `{}`: tool `{}` is not offered: {}", link.server, tool.name, tool.reason);
    }
    (tools, skipped)
}

/// The supervising task of one connected server.
struct Watch {
    server: String,
    always_load: bool,
    registry: Arc<Registry>,
    resources: Arc<ResourceServers>,
    state: Arc<Mutex<ServerState>>,
    refresh_timeout: Duration,
}

impl Watch {
    async fn run(self, connection: Connection, link: ServerLink, stop: CancellationToken) {
        let Connection { service, tools_changed, .. } = connection;
        let close = service.cancellation_token();
        let ended = service.waiting();
        tokio::pin!(ended);
        let gone = loop {
            tokio::select! {
                quit = &mut ended => break match quit {
                    Ok(reason) => format!("{reason:?}"),
                    Err(e) => format!("its connection task failed: {e}"),
                },
                _ = tools_changed.notified() => self.refresh(&link).await,
                _ = link.suspect.notified() => {
                    if let Err(why) = self.responds(&link.peer).await {
                        break format!("it stopped answering ({why})");
                    }
                }
                _ = stop.cancelled() => {
                    self.registry.remove_server_tools(&self.server);
                    self.resources.left(&self.server);
                    close.cancel();
                    // The transport closes the child's stdin, then sends SIGTERM, then
                    // kills it; past the grace the task is dropped and the child killed
                    // (kill_on_drop) all the same.
                    if tokio::time::timeout(CLOSE_GRACE, &mut ended).await.is_err() {
                        warn!("MCP server `{}` did not exit within {CLOSE_GRACE:?} of being closed", self.server);
                    }
                    info!(server = %self.server, "MCP server closed");
                    return;
                }
            }
        };
        self.registry.remove_server_tools(&self.server);
        self.resources.left(&self.server);
        warn!("MCP server `{}` disconnected ({gone}); its tools are no longer reachable", self.server);
        *self.state.locked() = ServerState::Disconnected { reason: gone };
        close.cancel();
    }

    /// Whether the server still answers a `ping`.
    async fn responds(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let ping = peer.send_request(ClientRequest::PingRequest(Default::default()));
        match tokio::time::timeout(PING_TIMEOUT, ping).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer to `ping` within {PING_TIMEOUT:?}")),
        }
    }

    /// Lists the server's tools again and replaces them in the registry.
    async fn refresh(&self, link: &ServerLink) {
        match tokio::time::timeout(self.refresh_timeout, list_tools(link)).await {
            Ok(Ok(listed)) => {
                let (tools, _) = offered(link, listed, self.always_load);
                info!(server = %self.server, tools = tools.len(), "MCP server tools refreshed");
                *self.state.locked() = ServerState::Connected { tools: tools.len() };
                self.registry.replace_server_tools(&self.server, tools);
            }
            Ok(Err(e)) => warn!(
                "MCP server `{}`: listing its changed tools failed: {}; the previous list stays",
                self.server,
                crate::support::report::error_sentence(&e)
            ),
            Err(_) => warn!("MCP server `{}`: no answer to `tools/list` after a change; the previous list stays", self.server),
        }
    }
}

/// What a server's `tools/list` gave: its tools, and the entries that are no tool definition
/// (each skipped alone, as the rest of the list is still good).
#[derive(Default)]
struct Listed {
    tools: Vec<rmcp::model::Tool>,
    unreadable: Vec<SkippedTool>,
}

/// Every page of the server's `tools/list`, within [`MAX_TOOLS_PER_SERVER`] tools and
/// [`MAX_LIST_PAGES`] pages; why not.
async fn list_tools(link: &ServerLink) -> Result<Listed, ToolsError> {
    let mut listed = Listed::default();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let answer = loop {
            let request = ListToolsRequest::with_param(PaginatedRequestParams::default().with_cursor(cursor.clone()));
            match link.peer.send_request(ClientRequest::ListToolsRequest(request)).await {
                Ok(answer) => break answer,
                // Refused with an OAuth challenge: signed in again, the page is asked again.
                Err(error) => match link.signed_in_again(&error).await {
                    Some(signed_in) => signed_in?,
                    None => return Err(ToolsError::Failed(error)),
                },
            }
        };
        let next = match answer {
            ServerResult::ListToolsResult(page) => {
                listed.tools.extend(page.tools);
                page.next_cursor
            }
            // A page with one entry that is not a tool definition does not read as a list.
            ServerResult::CustomResult(CustomResult(page)) => read_leniently(page, &mut listed)?,
            _ => return Err(ToolsError::NotAList),
        };
        if listed.tools.len() + listed.unreadable.len() > MAX_TOOLS_PER_SERVER {
            return Err(ToolsError::TooMany);
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(listed),
        }
    }
    Err(ToolsError::TooManyPages)
}

/// A `tools/list` page read entry by entry; the next cursor.
fn read_leniently(mut page: Value, listed: &mut Listed) -> Result<Option<String>, ToolsError> {
    let Some(Value::Array(entries)) = page.get_mut("tools").map(Value::take) else {
        return Err(ToolsError::NoToolsArray);
    };
    for entry in entries {
        let name = match entry.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => "(unnamed)".to_string(),
        };
        match serde_json::from_value::<rmcp::model::Tool>(entry) {
            Ok(tool) => listed.tools.push(tool),
            Err(e) => listed.unreadable.push(SkippedTool { name, reason: format!("its definition is not valid: {e}") }),
        }
    }
    match page.get("nextCursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(cursor)) => Ok(Some(cursor.clone())),
        Some(_) => Err(ToolsError::BadCursor),
    }
}
