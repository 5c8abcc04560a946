//! Connecting to one MCP server: the transport (a child process or streamable HTTP), the
//! handshake, and the notifications the server sends afterwards.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

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

use super::callers::Callers;
use super::config::{ServerConfig, Transport};
use super::oauth;
use super::server_process::{SpawnError, spawn, with_stderr};
use crate::sources::oauth::{CredentialsError, CredentialsFile, Holder, Login, SignInError, SignInSetup};
use crate::sources::tools::ToolProgress;
use crate::sources::tools::input::InputHandler;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationCapability, FormElicitationCapability, UrlElicitationCapability,
};
use rmcp::model::{ProgressNotificationParam, ProtocolVersion};
use rmcp::service::RequestContext;
use rmcp::transport::auth::{AuthClient, AuthorizationManager};

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
        let sink = self.callers.watcher(&params.progress_token);
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
        if self.callers.can_answer() {
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

/// Why a server could not be connected to.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// Its process could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The handshake failed or timed out, as the transport said it (its innermost cause) and,
    /// for a child process, how its stderr ended.
    #[error("{0}")]
    Handshake(String),
    #[error("`{name}` is not a valid HTTP header name")]
    HeaderName { name: String },
    #[error("the value of header `{name}` is not a valid HTTP header value")]
    HeaderValue { name: String },
    #[error("{url} asks for an OAuth sign-in: run `exec-host mcp login {server}` first")]
    SignInNeeded { url: String, server: String },
    #[error(transparent)]
    SignIn(#[from] SignInError),
    #[error("{url} refused the token of a fresh sign-in")]
    FreshTokenRefused { url: String },
}

/// Starts the transport and runs the MCP handshake, within `timeout`. The error is one
/// sentence for the user: what failed and, for a child process, how its stderr ended. An
/// HTTP server that answers with an OAuth challenge is signed in to when `auth` can send a
/// person there (the wait for them is not part of `timeout`), and refused with the command
/// that signs in otherwise.
pub(crate) async fn connect(
    server: &str,
    config: &ServerConfig,
    auth: &SignInSetup,
    input: Option<&Arc<dyn InputHandler>>,
    timeout: Duration,
) -> Result<Connection, ConnectError> {
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
                    Err(ConnectError::Handshake(with_stderr(reason, &stderr).await))
                }
                Err(_) => Err(ConnectError::Handshake(
                    with_stderr(format!("no answer to `initialize` within {}", seconds(timeout)), &stderr).await,
                )),
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
                Err(HttpFailure::Failed(failure)) => return Err(failure),
            };
            let (Some(credentials), Some(login)) = (&auth.credentials, &auth.login) else {
                return Err(ConnectError::SignInNeeded { url: url.clone(), server: server.to_string() });
            };
            let manager = oauth::sign_in(server, url, &config.oauth, credentials, login, Some(&challenge)).await?;
            match connect_http(&events, url, headers, Some(manager), timeout).await {
                Ok((service, manager)) => {
                    let auth = step_up(server, url, config, auth, manager);
                    Ok(Connection { service, tools_changed, auth, callers })
                }
                Err(HttpFailure::Challenged(_)) => Err(refused_fresh_token(server, url, credentials)),
                Err(HttpFailure::Failed(failure)) => Err(failure),
            }
        }
    }
}

fn step_up(
    server: &str,
    url: &str,
    config: &ServerConfig,
    auth: &SignInSetup,
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
fn refused_fresh_token(server: &str, url: &str, credentials: &CredentialsFile) -> ConnectError {
    if let Err(why) = credentials.forget(&Holder::Server(server.to_string())) {
        warn!("the refused token of `{server}` could not be forgotten: {}", error_sentence(&why));
    }
    ConnectError::FreshTokenRefused { url: url.to_string() }
}

/// Why a sign-in to a server did not leave tokens for later runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    #[error("`{0}` is a stdio server: only HTTP servers sign in with OAuth")]
    NotHttp(String),
    /// The server could not be reached, or it refused the fresh token.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error(transparent)]
    SignIn(#[from] SignInError),
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
        Err(HttpFailure::Failed(failure)) => return Err(failure.into()),
    };
    let manager = oauth::sign_in(name, url, &server.oauth, credentials, login, Some(&challenge)).await?;
    match connect_http(&events, url, headers, Some(manager), timeout).await {
        Ok((service, _)) => {
            let _ = service.cancel().await;
            // A login is for later runs: tokens this process alone holds are no login.
            credentials.check_saved(&Holder::Server(name.to_string()))?;
            Ok(LoggedIn::SignedIn)
        }
        Err(HttpFailure::Challenged(_)) => Err(refused_fresh_token(name, url, credentials).into()),
        Err(HttpFailure::Failed(failure)) => Err(failure.into()),
    }
}

/// Why an HTTP server could not be connected to.
enum HttpFailure {
    /// It answered with an OAuth challenge (its `WWW-Authenticate` header).
    Challenged(String),
    Failed(ConnectError),
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
            Err(HttpFailure::Failed(ConnectError::Handshake(format!("cannot reach {url}: {}", root_cause(&error)))))
        }
        Ok(Err(error)) => {
            Err(HttpFailure::Failed(ConnectError::Handshake(format!("the MCP handshake with {url} failed: {error}"))))
        }
        Err(_) => Err(HttpFailure::Failed(ConnectError::Handshake(format!(
            "no answer to `initialize` from {url} within {}",
            seconds(timeout)
        )))),
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

fn header_map(headers: &BTreeMap<String, String>) -> Result<HashMap<http::HeaderName, http::HeaderValue>, ConnectError> {
    headers
        .iter()
        .map(|(name, value)| {
            let header =
                http::HeaderName::try_from(name.as_str()).map_err(|_| ConnectError::HeaderName { name: name.clone() })?;
            let value =
                http::HeaderValue::try_from(value.as_str()).map_err(|_| ConnectError::HeaderValue { name: name.clone() })?;
            Ok((header, value))
        })
        .collect()
}
