//! `serve --http`: the gateway over MCP's streamable HTTP transport at `/mcp`, hardened for
//! a network: loopback unless told otherwise, a bearer token (required off loopback), `Host`
//! and `Origin` checks against DNS rebinding, bounded bodies, sessions and calls, a probe at
//! `/healthz`, and a graceful stop.
//!
//! ```text
//! request -> /healthz (no token: probes)            -> 200 "ok", 503 while stopping
//!         -> /metrics (the token, when there is one) -> Prometheus figures (`metrics`)
//!         -> /mcp -> bearer token -> session bound  -> rmcp: Host, Origin, body size,
//!                                                      JSON-RPC, sessions -> Gateway
//! SIGTERM -> no new sessions or calls ("busy", /healthz 503) -> running calls and tasks
//!            finish within the grace period (their clients can still answer approvals) ->
//!            the rest are aborted (tasks fail, saying so) -> sessions closed, listener
//!            closed -> downstream servers closed
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use exec_host::{CancellationToken, Session};
use futures::StreamExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::task::{TaskTracker, task_tracker::TaskTrackerToken};

use super::jsonrpc::{INVALID_PARAMS, METHOD_NOT_FOUND, Screened, error_response, screen};
use super::{Capacity, ClientApprover, Gateway, Metrics, Parking};

/// How long a stopping server gives its running calls by default.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);
/// MCP sessions open at once, by default.
pub const DEFAULT_MAX_SESSIONS: usize = 4096;
/// Bytes of one request body, by default.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// A client sent nothing on its session for this long: the session is closed.
const SESSION_IDLE: Duration = Duration::from_secs(10 * 60);
/// After the calls still running at the end of the grace period are aborted, how long they
/// have to end (an aborted call ends at its next step; this only bounds the stop).
const ABORTED_CALLS_END: Duration = Duration::from_secs(5);

/// Everything the HTTP service is told on the command line.
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// The bearer token every `/mcp` request must carry, when one is required.
    pub token: Option<String>,
    /// Browser origins allowed beyond the loopback ones a loopback server allows.
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted: the loopback names by default on loopback; any when empty off
    /// loopback (the token guards it there).
    pub allowed_hosts: Vec<String>,
    pub max_body_bytes: usize,
    pub max_sessions: usize,
    /// No state kept between requests: any replica answers any request.
    pub stateless: bool,
    pub grace: Duration,
}

/// Serves `session` until `signal` is cancelled, then stops gracefully (see the module's
/// doc). Prints the address it listens on to stderr once it does.
pub async fn serve(
    session: Session,
    options: HttpOptions,
    capacity: Arc<Capacity>,
    parking: Option<Arc<Parking>>,
    metrics: Arc<Metrics>,
    signal: CancellationToken,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let addr = listener.local_addr()?;
    // Stopping the transport closes every session and its streams.
    let transport_stop = CancellationToken::new();
    // Aborts every call still running.
    let abort_calls = CancellationToken::new();
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(SESSION_IDLE);
    let manager = Arc::new(manager);
    let stateless = options.stateless;
    let factory = {
        let (session, capacity, abort_calls, metrics, parking) =
            (session.clone(), capacity.clone(), abort_calls.clone(), metrics.clone(), parking.clone());
        move || {
            let approver = match stateless {
                true => ClientApprover::never(
                    "a stateless server cannot send a request to its client (a client of MCP 2026-07-28 is asked in the call's answer instead)",
                ),
                false => ClientApprover::new(),
            };
            Ok(Gateway::new(
                &session,
                approver,
                capacity.clone(),
                abort_calls.child_token(),
                parking.clone(),
                Some(metrics.clone()),
            ))
        }
    };
    let mcp = StreamableHttpService::new(factory, manager.clone(), transport_config(&options, addr, transport_stop.clone()));
    let responses = TaskTracker::new();
    let token: Option<Arc<str>> = options.token.map(Arc::from);
    // The figures need the token too: they say what the server is doing.
    let figures = {
        let (token, metrics) = (token.clone(), metrics.clone());
        move |headers: axum::http::HeaderMap| {
            let (token, metrics) = (token.clone(), metrics.clone());
            async move {
                if let Some(token) = &token
                    && !bearer_matches(headers.get(header::AUTHORIZATION), token)
                {
                    return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], String::new()).into_response();
                }
                let kind = "application/openmetrics-text; version=1.0.0; charset=utf-8";
                ([(header::CONTENT_TYPE, kind)], metrics.render()).into_response()
            }
        }
    };
    let guard = Guard {
        responses: responses.clone(),
        token,
        manager,
        max_sessions: options.max_sessions,
        max_body_bytes: options.max_body_bytes,
        stateless,
        capacity: capacity.clone(),
    };
    let app = Router::new()
        .route_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(Arc::new(guard), guard_mcp))
        .route("/healthz", get(healthz))
        .route("/metrics", get(figures))
        .with_state(capacity.clone());
    eprintln!("exec-host: serving MCP at http://{addr}/mcp");
    // The listener stays open while calls drain: a client whose call waits on an approval
    // answers it with a request of its own.
    let closed = transport_stop.clone();
    // Answers are small writes (an event stream's head, then its event): sent at once, not
    // held back by Nagle's algorithm until the client's delayed acknowledgement.
    let listener = axum::serve::ListenerExt::tap_io(listener, |connection| {
        if let Err(error) = connection.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY could not be set on a connection: {error}");
        }
    });
    let server = tokio::spawn(async move { axum::serve(listener, app).with_graceful_shutdown(closed.cancelled_owned()).await });
    signal.cancelled().await;
    // Tasks running here get the same grace as calls; those still running then fail.
    let tasks = async {
        if let Some(parking) = &parking {
            parking.tasks.drain(options.grace).await;
        }
    };
    let (drained, ()) = tokio::join!(capacity.drain(options.grace), tasks);
    if !drained {
        tracing::warn!("calls still running after the grace period of {:?} are aborted", options.grace);
        abort_calls.cancel();
        capacity.drain(ABORTED_CALLS_END).await;
    }
    abort_calls.cancel();
    // The calls have ended; their answers may still be on their way to the clients.
    responses.close();
    let _ = tokio::time::timeout(ABORTED_CALLS_END, responses.wait()).await;
    transport_stop.cancel();
    match tokio::time::timeout(ABORTED_CALLS_END, server).await {
        Ok(Ok(served)) => served,
        Ok(Err(_)) | Err(_) => Ok(()),
    }
}

/// rmcp's transport settings: the `Host` and `Origin` checks, the body bound, sessions or not.
fn transport_config(options: &HttpOptions, addr: SocketAddr, stop: CancellationToken) -> StreamableHttpServerConfig {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop)
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless);
    let mut origins = options.allowed_origins.clone();
    if addr.ip().is_loopback() {
        // A page of any other origin (DNS rebinding included) is refused; local tools
        // that send no Origin pass.
        origins.extend(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"].map(String::from));
        if !options.allowed_hosts.is_empty() {
            config = config.with_allowed_hosts(options.allowed_hosts.clone());
        }
    } else if options.allowed_hosts.is_empty() {
        config = config.disable_allowed_hosts();
    } else {
        config = config.with_allowed_hosts(options.allowed_hosts.clone());
    }
    config.with_allowed_origins(origins).enforce_origin_validation()
}

/// What every `/mcp` request passes before rmcp reads it.
struct Guard {
    /// One token per answer to a POST still being sent: a stopping server closes the
    /// sessions only once they are out.
    responses: TaskTracker,
    token: Option<Arc<str>>,
    manager: Arc<LocalSessionManager>,
    max_sessions: usize,
    max_body_bytes: usize,
    stateless: bool,
    capacity: Arc<Capacity>,
}

/// JSON-RPC's error code for the server's own refusals.
const SERVER_ERROR: i32 = -32000;

async fn guard_mcp(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if let Some(token) = &guard.token
        && !bearer_matches(request.headers().get(header::AUTHORIZATION), token)
    {
        let mut refused = refusal(
            StatusCode::UNAUTHORIZED,
            SERVER_ERROR,
            "unauthorized: send the server's token as `Authorization: Bearer <token>`",
        );
        refused.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return refused;
    }
    let opens_session = request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
    if opens_session && guard.capacity.is_stopping() {
        return busy("busy: the server is stopping and opens no new sessions; retry on another replica");
    }
    if opens_session && !guard.stateless && guard.manager.sessions.read().await.len() >= guard.max_sessions {
        return busy(&format!(
            "busy: the server has {} MCP sessions open, its limit; close one (DELETE /mcp) or retry later",
            guard.max_sessions
        ));
    }
    if request.method() != Method::POST {
        let ends_session = request.method() == Method::DELETE;
        let response = next.run(request).await;
        // rmcp answers a session's end with 202; the transport's clients expect 200 or 204
        // (the Python SDK logs any other status as a failed termination).
        if ends_session && response.status() == StatusCode::ACCEPTED {
            return StatusCode::NO_CONTENT.into_response();
        }
        return response;
    }
    // The body is read here, within its bound, so that one that is not a message gets
    // JSON-RPC's error rather than a transport's status alone.
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, guard.max_body_bytes).await else {
        let message =
            format!("the request body is larger than {} bytes, this server's bound (--max-body-bytes)", guard.max_body_bytes);
        return refusal(StatusCode::PAYLOAD_TOO_LARGE, SERVER_ERROR, &message);
    };
    // MCP 2026-07-28 has no `initialize`: a request that declares that revision and sends one
    // is answered as any unknown method is on it (404, method not found), not as a
    // handshake or bad params of the older revision.
    if declares_2026(&parts.headers) && method_of(&bytes).as_deref() == Some("initialize") {
        let id = serde_json::from_slice::<serde_json::Value>(&bytes).ok().and_then(|v| v.get("id").cloned());
        let body = error_response(
            id.unwrap_or(serde_json::Value::Null),
            METHOD_NOT_FOUND,
            "method not found: `initialize` is not a method of MCP 2026-07-28 (server/discover is)",
        );
        return (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "application/json")], Body::from(body.to_string()))
            .into_response();
    }
    let request_id = match screen(&bytes) {
        Screened::Pass(message) => match *message {
            ClientJsonRpcMessage::Request(request) => Some(request.id),
            _ => None,
        },
        Screened::Ignore => return StatusCode::ACCEPTED.into_response(),
        Screened::Answer { code, response } => {
            // A request that cannot be read is a bad request; one with params that do not
            // fit its method is answered as any failed request is.
            let status = if code == INVALID_PARAMS { StatusCode::OK } else { StatusCode::BAD_REQUEST };
            return (status, [(header::CONTENT_TYPE, "application/json")], Body::from(response.to_string())).into_response();
        }
    };
    let session = parts.headers.get("mcp-session-id").and_then(|id| id.to_str().ok()).map(SessionId::from);
    let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    // A client whose connection closes before its answer was sent has left: its request is
    // cancelled as if it had said so, down to the downstream calls.
    let on_abandon = match (session, request_id) {
        (Some(session), Some(id)) => {
            let manager = guard.manager.clone();
            Some(move || {
                let cancelled = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": id, "reason": "the client's connection closed before the answer"}});
                let Ok(cancelled) = serde_json::from_value::<ClientJsonRpcMessage>(cancelled) else { return };
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move { manager.accept_message(&session, cancelled).await });
                }
            })
        }
        _ => None,
    };
    let sending = guard.responses.token();
    response.map(|body| Body::from_stream(Answer { body: body.into_data_stream(), sent: false, on_abandon, _sending: sending }))
}

/// An answer on its way to the client: counted among those being sent, and told when it is
/// dropped before its end (the client's connection closed).
struct Answer<F: FnOnce()> {
    body: axum::body::BodyDataStream,
    sent: bool,
    on_abandon: Option<F>,
    _sending: TaskTrackerToken,
}

impl<F: FnOnce() + Unpin> futures::Stream for Answer<F> {
    type Item = Result<axum::body::Bytes, axum::Error>;

    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Self::Item>> {
        let next = self.body.poll_next_unpin(cx);
        if let std::task::Poll::Ready(None) = next {
            self.sent = true;
        }
        next
    }
}

impl<F: FnOnce()> Drop for Answer<F> {
    fn drop(&mut self) {
        if !self.sent
            && let Some(on_abandon) = self.on_abandon.take()
        {
            on_abandon();
        }
    }
}

/// Compares the `Authorization` header with the token in constant time.
fn bearer_matches(header: Option<&HeaderValue>, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    let Some(given) = header.and_then(|value| value.as_bytes().strip_prefix(b"Bearer ")) else { return false };
    bool::from(given.ct_eq(token.as_bytes()))
}

/// A refusal as a JSON-RPC error, which MCP clients show.
fn refusal(status: StatusCode, code: i32, message: &str) -> Response {
    let body = error_response(serde_json::Value::Null, code, message);
    (status, [(header::CONTENT_TYPE, "application/json")], Body::from(body.to_string())).into_response()
}

/// Whether a request declares MCP 2026-07-28 or later in its `MCP-Protocol-Version` header.
fn declares_2026(headers: &axum::http::HeaderMap) -> bool {
    headers.get("mcp-protocol-version").and_then(|version| version.to_str().ok()).is_some_and(|version| version >= "2026-07-28")
}

/// The `method` of a JSON-RPC message's bytes, when it has one.
fn method_of(bytes: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Method {
        method: String,
    }
    serde_json::from_slice::<Method>(bytes).ok().map(|message| message.method)
}

fn busy(message: &str) -> Response {
    let mut response = refusal(StatusCode::SERVICE_UNAVAILABLE, SERVER_ERROR, message);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// The probe: `ok` while serving, 503 once stopping (so a load balancer sends no more).
async fn healthz(State(capacity): State<Arc<Capacity>>) -> Response {
    match capacity.is_stopping() {
        false => (StatusCode::OK, "ok\n").into_response(),
        true => (StatusCode::SERVICE_UNAVAILABLE, "stopping\n").into_response(),
    }
}
