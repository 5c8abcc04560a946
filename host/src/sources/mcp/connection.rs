//! Connecting to one MCP server: the transport (a child process or streamable HTTP), the
//! handshake, and the notifications the server sends afterwards.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::support::lock::Unpoisoned;
use crate::support::report::error_sentence;
use rmcp::ClientHandler;
#[allow(deprecated)]
use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams, LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, NotificationContext, RoleClient, RunningService, serve_client,
    serve_client_with_lifecycle,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::sync::Notify;
use tracing::{debug, error, info, warn};

use super::config::{ServerConfig, Transport};
use super::credentials::{CredentialsError, CredentialsFile};
use super::oauth::{self, Login, ServerAuth};
use super::server_process::{spawn, with_stderr};
use super::tool::Answers;
use crate::sources::tools::input::{self, InputAnswer, InputHandler, InputRequest};
use crate::sources::tools::{ProgressSink, ToolProgress};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability,
    UrlElicitationCapability,
};
use rmcp::model::{ProgressNotificationParam, ProgressToken, ProtocolVersion};
use rmcp::service::RequestContext;
use rmcp::transport::auth::{AuthClient, AuthorizationManager};
use serde_json::Value;

/// Most input requests a server may make in one round of a call (2026-07-28).
pub const MAX_INPUT_REQUESTS: usize = 16;

/// A connected, initialised server.
pub(crate) struct Connection {
    pub service: RunningService<RoleClient, Events>,
    /// Signalled when the server says its tool list changed.
    pub tools_changed: Arc<Notify>,
    /// The OAuth of an HTTP server, for calls it refuses with a challenge.
    pub auth: Option<Arc<oauth::StepUp>>,
    /// The input handlers of its calls in flight.
    pub callers: Arc<Callers>,
}

/// What this client does with a server's notifications.
pub(crate) struct Events {
    server: Arc<str>,
    tools_changed: Arc<Notify>,
    callers: Arc<Callers>,
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
    pub(crate) async fn answer_all(&self, asked: rmcp::model::InputRequiredResult) -> Result<Answers, String> {
        use rmcp::model::InputRequest as Asked;
        let requests = asked.input_requests.unwrap_or_default();
        if requests.len() > MAX_INPUT_REQUESTS {
            return Err(format!(
                "it made {} input requests at once, more than the {MAX_INPUT_REQUESTS} answered",
                requests.len()
            ));
        }
        let mut responses = rmcp::model::InputResponses::new();
        for (key, request) in requests {
            let response = match request {
                Asked::Elicitation(request) => {
                    let answer = self.elicit(request.params, std::future::pending()).await;
                    serde_json::to_value(answer).map_err(|e| e.to_string())?
                }
                Asked::ListRoots(_) => serde_json::json!({"roots": []}),
                Asked::CreateMessage(_) => return Err("it asked for a sampling request, which this host does not offer".into()),
                _ => return Err("it asked for a kind of input this host does not know".into()),
            };
            responses.insert(key, response);
        }
        Ok(Answers { responses, state: asked.request_state })
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

impl ClientHandler for Events {
    fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) -> impl Future<Output = ()> + Send + '_ {
        debug!(server = %self.server, "tool list changed");
        self.tools_changed.notify_one();
        std::future::ready(())
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        // Only the token of a watched call in flight is heard; the step is bounded before
        // anyone sees it.
        let sink = self.callers.watchers.locked().get(&params.progress_token).cloned();
        if let Some(sink) = sink
            && let Some(step) = ToolProgress::new(params.progress, params.total, params.message.as_deref())
        {
            sink(step);
        }
        std::future::ready(())
    }

    // Server log notifications are deprecated in the newest protocol, but servers on the
    // versions this client negotiates still send them.
    #[allow(deprecated)]
    fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let server = &self.server;
        let data = params.data;
        match params.level {
            LoggingLevel::Debug => debug!(server = %server, "server log: {data}"),
            LoggingLevel::Info | LoggingLevel::Notice => info!(server = %server, "server log: {data}"),
            LoggingLevel::Warning => warn!(server = %server, "server log: {data}"),
            _ => error!(server = %server, "server log: {data}"),
        }
        std::future::ready(())
    }

    fn get_info(&self) -> InitializeRequestParams {
        let mut capabilities = ClientCapabilities::default();
        if self.callers.fallback.is_some() {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::default())
                    .with_url(UrlElicitationCapability::new()),
            );
        }
        InitializeRequestParams::new(capabilities, Implementation::new("exec-host", env!("CARGO_PKG_VERSION")))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        Ok(self.callers.elicit(request, context.ct.cancelled()).await)
    }
}

/// Starts the transport and runs the MCP handshake, within `timeout`. The error is one
/// sentence for the user: what failed and, for a child process, how its stderr ended. An
/// HTTP server that answers with an OAuth challenge is signed in to when `auth` can send a
/// person there (the wait for them is not part of `timeout`), and refused with the command
/// that signs in otherwise.
pub(crate) async fn connect(
    server: &str,
    config: &ServerConfig,
    auth: &ServerAuth,
    input: Option<&Arc<dyn InputHandler>>,
    timeout: Duration,
) -> Result<Connection, String> {
    let tools_changed = Arc::new(Notify::new());
    let callers = Arc::new(Callers::new(server, input.cloned()));
    let events = || Events { server: server.into(), tools_changed: tools_changed.clone(), callers: callers.clone() };
    match &config.transport {
        Transport::Stdio { command, args, env, cwd } => {
            let (child, mut stderr) = spawn(server, command, args, env, cwd.as_ref())?;
            let mut started = tokio::time::timeout(timeout, serve_client(events(), child)).await;
            if matches!(&started, Ok(Err(error)) if refuses_initialize(error)) {
                // A server of 2026-07-28 alone: started again, and asked by its own lifecycle.
                let (child, again) = spawn(server, command, args, env, cwd.as_ref())?;
                stderr = again;
                started = tokio::time::timeout(timeout, serve_client_with_lifecycle(events(), child, modern_lifecycle())).await;
            }
            match started {
                Ok(Ok(service)) => Ok(Connection { service, tools_changed, auth: None, callers }),
                Ok(Err(error)) => {
                    let reason = match &error {
                        ClientInitializeError::TransportError { error, .. } => {
                            format!("it closed its end before answering `initialize` ({})", root_cause(error))
                        }
                        ClientInitializeError::ConnectionClosed(_) => "it closed its end before answering `initialize`".into(),
                        _ => format!("the MCP handshake failed: {error}"),
                    };
                    Err(with_stderr(reason, &stderr).await)
                }
                Err(_) => Err(with_stderr(format!("no answer to `initialize` within {}", seconds(timeout)), &stderr).await),
            }
        }
        Transport::Http { url, headers } => {
            let manager = match &auth.credentials {
                Some(credentials) => Some(oauth::manager_for(server, url, &config.oauth, credentials).await?),
                None => None,
            };
            let challenge = match connect_http(&events, url, headers, manager, timeout).await {
                Ok((service, manager)) => {
                    let auth = step_up(server, url, config, auth, manager);
                    return Ok(Connection { service, tools_changed, auth, callers });
                }
                Err(HttpFailure::Challenged(challenge)) => challenge,
                Err(HttpFailure::Failed(reason)) => return Err(reason),
            };
            let (Some(credentials), Some(login)) = (&auth.credentials, &auth.login) else {
                return Err(format!("{url} asks for an OAuth sign-in: run `exec-host mcp login {server}` first"));
            };
            let manager = oauth::sign_in(server, url, &config.oauth, credentials, login, Some(&challenge)).await?;
            match connect_http(&events, url, headers, Some(manager), timeout).await {
                Ok((service, manager)) => {
                    let auth = step_up(server, url, config, auth, manager);
                    Ok(Connection { service, tools_changed, auth, callers })
                }
                Err(HttpFailure::Challenged(_)) => Err(refused_fresh_token(server, url, credentials).to_string()),
                Err(HttpFailure::Failed(reason)) => Err(reason),
            }
        }
    }
}

fn step_up(
    server: &str,
    url: &str,
    config: &ServerConfig,
    auth: &ServerAuth,
    manager: Option<Arc<tokio::sync::Mutex<AuthorizationManager>>>,
) -> Option<Arc<oauth::StepUp>> {
    Some(Arc::new(oauth::StepUp {
        server: server.to_string(),
        url: url.to_string(),
        client: config.oauth.clone(),
        credentials: auth.credentials.clone()?,
        login: auth.login.clone(),
        manager: manager?,
        used: Default::default(),
    }))
}

/// What [`log_in`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoggedIn {
    /// A person signed in, and the server accepted the new token.
    SignedIn,
    /// The server answered without asking for a sign-in: nothing was kept.
    NotAsked,
}

/// The server refused the token it was just signed in for (a token for another resource, or
/// none it takes): the token is forgotten rather than kept for later runs.
fn refused_fresh_token(server: &str, url: &str, credentials: &CredentialsFile) -> LoginError {
    if let Err(why) = credentials.forget(server) {
        warn!("the refused token of `{server}` could not be forgotten: {}", error_sentence(&why));
    }
    LoginError::FreshTokenRefused { url: url.to_string() }
}

/// Why a sign-in to a server did not leave tokens for later runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    #[error("`{0}` is a stdio server: only HTTP servers sign in with OAuth")]
    NotHttp(String),
    /// The server could not be reached or the sign-in failed, as the connection says it
    /// (rmcp's errors are written into the sentence where the transport meets them).
    #[error("{0}")]
    Failed(String),
    #[error("{url} refused the token of a fresh sign-in")]
    FreshTokenRefused { url: String },
    /// The tokens could not be kept in the credentials file.
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
}

/// Signs in to the HTTP server `name` as `exec-host mcp login` does: asks it without a
/// token; when it answers with an OAuth challenge, sends a person through `login`, keeps the
/// tokens in `credentials` and checks the server accepts them. Tokens that could not be
/// written to the file fail the login.
pub async fn log_in(
    name: &str,
    server: &ServerConfig,
    credentials: &CredentialsFile,
    login: &Login,
    timeout: Duration,
) -> Result<LoggedIn, LoginError> {
    let Transport::Http { url, headers } = &server.transport else {
        return Err(LoginError::NotHttp(name.to_string()));
    };
    let events =
        || Events { server: name.into(), tools_changed: Arc::new(Notify::new()), callers: Arc::new(Callers::new(name, None)) };
    let challenge = match connect_http(&events, url, headers, None, timeout).await {
        Ok((service, _)) => {
            let _ = service.cancel().await;
            return Ok(LoggedIn::NotAsked);
        }
        Err(HttpFailure::Challenged(challenge)) => challenge,
        Err(HttpFailure::Failed(reason)) => return Err(LoginError::Failed(reason)),
    };
    let manager =
        oauth::sign_in(name, url, &server.oauth, credentials, login, Some(&challenge)).await.map_err(LoginError::Failed)?;
    match connect_http(&events, url, headers, Some(manager), timeout).await {
        Ok((service, _)) => {
            let _ = service.cancel().await;
            // A login is for later runs: tokens this process alone holds are no login.
            credentials.check_saved(name)?;
            Ok(LoggedIn::SignedIn)
        }
        Err(HttpFailure::Challenged(_)) => Err(refused_fresh_token(name, url, credentials)),
        Err(HttpFailure::Failed(reason)) => Err(LoginError::Failed(reason)),
    }
}

/// Why an HTTP server could not be connected to.
enum HttpFailure {
    /// It answered with an OAuth challenge (its `WWW-Authenticate` header).
    Challenged(String),
    Failed(String),
}

/// The handshake with the HTTP server at `url`, with the tokens of `manager` when there is
/// one (refreshed before they expire and after a rejection, by rmcp's `AuthClient`).
async fn connect_http(
    events: &(dyn Fn() -> Events + Sync),
    url: &str,
    headers: &BTreeMap<String, String>,
    manager: Option<AuthorizationManager>,
    timeout: Duration,
) -> Result<(RunningService<RoleClient, Events>, Option<Arc<tokio::sync::Mutex<AuthorizationManager>>>), HttpFailure> {
    let headers = header_map(headers).map_err(HttpFailure::Failed)?;
    // One client for every attempt: the tokens it refreshes are the connection's.
    let client = manager.map(|manager| AuthClient::new(reqwest::Client::default(), manager));
    let auth = client.as_ref().map(|client| client.auth_manager.clone());
    let start = |lifecycle: ClientLifecycleMode| {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers.clone());
        config.retry_config = Arc::new(reconnect_policy());
        let events = events();
        let client = client.clone();
        async move {
            match client {
                Some(client) => {
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    tokio::time::timeout(timeout, serve_client_with_lifecycle(events, transport, lifecycle)).await
                }
                None => {
                    let transport = StreamableHttpClientTransport::from_config(config);
                    tokio::time::timeout(timeout, serve_client_with_lifecycle(events, transport, lifecycle)).await
                }
            }
        }
    };
    let mut started = start(ClientLifecycleMode::Initialize).await;
    if matches!(&started, Ok(Err(error)) if refuses_initialize(error)) {
        // A server of 2026-07-28 alone: asked again by its own lifecycle.
        started = start(modern_lifecycle()).await;
    }
    match started {
        Ok(Ok(service)) => Ok((service, auth)),
        Ok(Err(error)) if error.auth_challenge().is_some() => {
            Err(HttpFailure::Challenged(error.auth_challenge().unwrap_or_default().to_string()))
        }
        Ok(Err(ClientInitializeError::TransportError { error, .. })) => {
            Err(HttpFailure::Failed(format!("cannot reach {url}: {}", root_cause(&error))))
        }
        Ok(Err(error)) => Err(HttpFailure::Failed(format!("the MCP handshake with {url} failed: {error}"))),
        Err(_) => Err(HttpFailure::Failed(format!("no answer to `initialize` from {url} within {}", seconds(timeout)))),
    }
}

/// The handshake of 2026-07-28 (`server/discover`, then each request carrying its own
/// metadata), for a server that refuses `initialize`.
fn modern_lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
}

/// Whether the server answered `initialize` with an error, as a server that takes only the
/// lifecycle of 2026-07-28 does. Every server is asked with `initialize` first: on it, this
/// client hears of tool list changes without subscribing.
fn refuses_initialize(error: &ClientInitializeError) -> bool {
    matches!(error, ClientInitializeError::JsonRpcError(_))
}

/// How often a broken response stream is resumed before its request fails: a few quick
/// tries ride out a blip; a server that is gone fails its calls within a few seconds
/// instead of leaving them waiting forever (rmcp's default retries without end).
fn reconnect_policy() -> ExponentialBackoff {
    let mut policy = ExponentialBackoff::default();
    policy.max_times = Some(3);
    policy.base_duration = Duration::from_millis(200);
    policy.max_delay = Some(Duration::from_secs(1));
    policy
}

/// The innermost error of a chain: what actually went wrong, without the layers' wording.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

fn header_map(headers: &BTreeMap<String, String>) -> Result<HashMap<http::HeaderName, http::HeaderValue>, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let header =
                http::HeaderName::try_from(name.as_str()).map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
            let value = http::HeaderValue::try_from(value.as_str())
                .map_err(|_| format!("the value of header `{name}` is not a valid HTTP header value"))?;
            Ok((header, value))
        })
        .collect()
}
