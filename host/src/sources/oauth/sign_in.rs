//! The part of an OAuth sign-in a person takes, for MCP servers and HTTP APIs alike: the
//! loopback listener the authorization server redirects to, opening the authorization URL
//! ([`Login`]), the bounded wait between, and the code exchanged for tokens ([`authorize`],
//! through rmcp's `auth` feature: PKCE S256, `state`, the `resource` parameter of RFC 8707,
//! the issuer checks of RFC 9207). It also owns the one rule for the URLs a server chose
//! ([`server_url`]): what a sign-in opens or fetches is `https`, or `http` on a loopback
//! host, and nothing else.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::credentials::{CredentialsError, CredentialsFile, Holder};

/// How long a login waits for the person to finish at the authorization server.
pub const DEFAULT_LOGIN_WAIT: Duration = Duration::from_secs(300);
/// Bytes of one request to the loopback listener read at most (its request line and headers).
const CALLBACK_REQUEST_BYTES: usize = 8 * 1024;
/// Time one connection to the loopback listener has, from its opening to its answer.
const CALLBACK_REQUEST_TIME: Duration = Duration::from_secs(5);
/// Connections to the loopback listener served at once; one past it is closed unread.
const CALLBACK_CONNECTIONS: usize = 64;
/// Characters of a refused URL quoted in its refusal.
const SHOWN_URL_CHARS: usize = 200;
/// The path of the redirect URI on the loopback listener.
const CALLBACK_PATH: &str = "/callback";
/// Logins one connection of a session may run for step-up before the call fails (a server
/// that asks for more scope after every login would otherwise loop).
pub const MAX_STEP_UPS: u32 = 2;

/// A URL a server chose that the sign-in will not open or fetch.
#[derive(Debug, thiserror::Error)]
#[error("{what} `{shown}` is refused: a sign-in opens and fetches only https URLs, or http ones on a loopback host")]
pub struct RefusedUrl {
    /// What the URL was for: "the authorization endpoint".
    what: &'static str,
    /// The URL as it may be shown: bounded, no control characters.
    shown: String,
}

/// The one rule for every URL a server (an MCP server or an authorization server) chose
/// that the sign-in opens in a browser or fetches: `https`, or `http` when the host is
/// loopback (127.0.0.0/8, `::1`, `localhost`). Anything else (`file:`, `javascript:`,
/// `data:`, `ftp:`, plain `http` across a network) is refused, saying `what` it was for.
pub(crate) fn server_url(what: &'static str, url: &str) -> Result<reqwest::Url, RefusedUrl> {
    let refused = || RefusedUrl { what, shown: crate::support::text::one_line(url, SHOWN_URL_CHARS) };
    let parsed = reqwest::Url::parse(url).map_err(|_| refused())?;
    // The parser writes an IPv4 host in dotted decimal and an IPv6 one in brackets.
    let loopback = parsed.host_str().is_some_and(|host| {
        host.eq_ignore_ascii_case("localhost")
            || host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    });
    match parsed.scheme() {
        "https" if parsed.host_str().is_some() => Ok(parsed),
        "http" if loopback => Ok(parsed),
        _ => Err(refused()),
    }
}

/// Checks every URL of an authorization server's metadata the sign-in or a refresh may
/// open or fetch, and the issuer (where the metadata itself was fetched from).
pub(crate) fn check_metadata(metadata: &AuthorizationMetadata) -> Result<(), RefusedUrl> {
    if let Some(issuer) = &metadata.issuer {
        server_url("the authorization server", issuer)?;
    }
    server_url("the authorization endpoint", &metadata.authorization_endpoint)?;
    server_url("the token endpoint", &metadata.token_endpoint)?;
    if let Some(registration) = &metadata.registration_endpoint {
        server_url("the registration endpoint", registration)?;
    }
    Ok(())
}

/// Sends a person to an authorization URL: `open(what, url)`.
type Opener = dyn Fn(&str, &str) -> Result<(), String> + Send + Sync;

/// Whether, and how, a person can be sent to sign in: who opens the authorization URL, and
/// how long the loopback listener waits for the redirect back.
#[derive(Clone)]
pub struct Login {
    open: Arc<Opener>,
    wait: Duration,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login").field("wait", &self.wait).finish_non_exhaustive()
    }
}

impl Login {
    /// Opens the URL with `open(what, url)`: a browser, a message to the person. `what` is
    /// what the sign-in is for, as a sentence names it: ``MCP server `notes` `` or
    /// ``API `github` ``.
    pub fn with_opener(open: impl Fn(&str, &str) -> Result<(), String> + Send + Sync + 'static) -> Self {
        Login { open: Arc::new(open), wait: DEFAULT_LOGIN_WAIT }
    }

    /// Prints the URL on standard error and, when `$BROWSER` is set, runs it with the URL
    /// as its argument (the first command of a `:`-separated list; `%s` is replaced by the
    /// URL when present).
    pub fn browser_or_print() -> Self {
        Login::with_opener(|what, url| {
            eprintln!("exec-host: to sign in to {what}, open this URL:\n  {url}");
            let Some(browser) = std::env::var("BROWSER").ok().filter(|b| !b.trim().is_empty()) else {
                return Ok(());
            };
            let command = browser.split(':').next().unwrap_or_default().trim().to_string();
            let mut words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
            if words.is_empty() {
                return Ok(());
            }
            if words.iter().any(|word| word.contains("%s")) {
                words.iter_mut().for_each(|word| *word = word.replace("%s", url));
            } else {
                words.push(url.to_string());
            }
            std::process::Command::new(&words[0])
                .args(&words[1..])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .map(drop)
                .map_err(|e| format!("$BROWSER (`{}`) cannot be started: {e}", words[0]))
        })
    }

    /// Waits `wait` for the redirect back (default [`DEFAULT_LOGIN_WAIT`]).
    pub fn with_wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }
}

/// Why a sign-in, the kept tokens or a new sign-in for a server's challenge did not give a
/// connection its tokens.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignInError {
    /// The credentials file cannot keep tokens (nobody is sent to sign in for them).
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    #[error("the loopback port {port} for the OAuth redirect (`oauth.callbackPort`) cannot be used")]
    CallbackPort {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("no loopback port for the OAuth redirect")]
    NoLoopbackPort(#[source] std::io::Error),
    /// A step of the sign-in failed: discovery, registration, the code exchange.
    #[error("signing in to {url} failed")]
    Failed {
        url: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("signing in to {url} failed: the authorization URL has no `state`")]
    NoState { url: String },
    /// The person could not be sent to the authorization page (the embedding's words).
    #[error("{0}")]
    NotOpened(String),
    #[error("no sign-in to {holder} within {} s (the authorization server never redirected back)", .waited.as_secs())]
    NoRedirect { holder: Holder, waited: Duration },
    #[error("the OAuth redirect listener failed")]
    Listener(#[source] std::io::Error),
    #[error("the authorization server refused the sign-in ({0})")]
    Refused(String),
    /// The OAuth set-up of a server's URL failed before any token was used.
    #[error("OAuth for {url}")]
    OAuth {
        url: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("the kept tokens of {holder} cannot be used; sign in again with `exec-host mcp login {}`", .holder.name())]
    KeptTokens {
        holder: Holder,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{holder} needs an OAuth sign-in ({why}): run `exec-host mcp login {}`", .holder.name())]
    NobodyToAsk { holder: Holder, why: String },
    #[error("{holder} still refuses the call after {MAX_STEP_UPS} new sign-ins ({why})")]
    TooManySignIns { holder: Holder, why: String },
}

/// What the sign-ins of a session (its MCP servers' and its APIs') use: the tokens kept, and
/// whether a person can be sent to sign in while it runs.
#[derive(Clone, Debug, Default)]
pub(crate) struct SignInSetup {
    pub credentials: Option<CredentialsFile>,
    pub login: Option<Login>,
}

/// The part of a sign-in a person takes, for `manager`, which knows its authorization server
/// and keeps the tokens where `holder`'s go: a loopback listener for the redirect, the
/// authorization URL (PKCE S256, a `state`) opened through `login`, the bounded wait, and
/// the code exchanged for tokens. `scopes` are asked for (none: the server's choice).
pub(crate) async fn authorize(
    holder: &Holder,
    url: &str,
    manager: AuthorizationManager,
    client: &OAuthClient,
    scopes: Vec<String>,
    challenge: Option<&str>,
    login: &Login,
) -> Result<AuthorizationManager, SignInError> {
    let fail = |source: Box<dyn std::error::Error + Send + Sync>| SignInError::Failed { url: url.to_string(), source };
    let listener = TcpListener::bind(("127.0.0.1", client.callback_port.unwrap_or(0))).await.map_err(|source| {
        match client.callback_port {
            Some(port) => SignInError::CallbackPort { port, source },
            None => SignInError::NoLoopbackPort(source),
        }
    })?;
    let port = listener.local_addr().map_err(|e| fail(e.into()))?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");

    let mut request = AuthorizationRequest::new(redirect_uri).with_client_name("exec-host");
    if let Some(id) = &client.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &client.client_secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if let Some(document) = &client.client_metadata_url {
        request = request.with_client_metadata_url(document.clone());
    }
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    if !scopes.is_empty() {
        request = request.with_scopes(scopes);
    }
    let session = AuthorizationSession::new(manager, request).await.map_err(|(_, e)| fail(e.into()))?;
    let authorization_url =
        server_url("the authorization URL", session.get_authorization_url()).map_err(|e| fail(e.into()))?.to_string();
    let expected_state = reqwest::Url::parse(&authorization_url)
        .ok()
        .and_then(|parsed| parsed.query_pairs().find(|(key, _)| key == "state").map(|(_, value)| value.into_owned()))
        .ok_or_else(|| SignInError::NoState { url: url.to_string() })?;
    (login.open)(&holder.to_string(), &authorization_url).map_err(SignInError::NotOpened)?;
    let callback = tokio::time::timeout(login.wait, redirect(&listener, port, &expected_state))
        .await
        .map_err(|_| SignInError::NoRedirect { holder: holder.clone(), waited: login.wait })??;
    session.handle_callback_url(&callback).await.map_err(|e| fail(e.into()))?;
    Ok(session.auth_manager)
}

/// The URL the authorization server redirected the browser to, with its `state` the one this
/// login sent. Connections are served at once, side by side, each for at most
/// [`CALLBACK_REQUEST_TIME`] and [`CALLBACK_REQUEST_BYTES`], so a slow or silent one never
/// holds up the redirect. Anything else that reaches the listener (another path, another
/// state, a request that is not HTTP) is answered with an error and the wait goes on.
async fn redirect(listener: &TcpListener, port: u16, expected_state: &str) -> Result<String, SignInError> {
    let mut connections = futures::stream::FuturesUnordered::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = accepted.map_err(SignInError::Listener)?;
                // Past the bound, a connection is closed unread (dropped here).
                if connections.len() < CALLBACK_CONNECTIONS {
                    connections.push(tokio::time::timeout(CALLBACK_REQUEST_TIME, answer(stream, port, expected_state)));
                }
            }
            // A connection that ran out of time is dropped, closing it; the others stay.
            Some(answered) = connections.next() => {
                if let Ok(Some(outcome)) = answered {
                    return outcome;
                }
            }
        }
    }
}

/// Answers one connection to the loopback listener: the redirect's URL, or the authorization
/// server's refusal, when it is this login's redirect; `None` otherwise.
async fn answer(mut stream: TcpStream, port: u16, expected_state: &str) -> Option<Result<String, SignInError>> {
    let Some(target) = request_target(&mut stream).await else {
        let _ = respond(&mut stream, "400 Bad Request", "Not an OAuth redirect.").await;
        return None;
    };
    let Ok(url) = reqwest::Url::parse(&format!("http://127.0.0.1:{port}{target}")) else {
        let _ = respond(&mut stream, "400 Bad Request", "Not an OAuth redirect.").await;
        return None;
    };
    if url.path() != CALLBACK_PATH {
        let _ = respond(&mut stream, "404 Not Found", "Not an OAuth redirect.").await;
        return None;
    }
    let query = |name: &str| url.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
    if query("state").as_deref() != Some(expected_state) {
        let _ = respond(&mut stream, "400 Bad Request", "This redirect does not belong to the sign-in in progress.").await;
        return None;
    }
    if let Some(error) = query("error") {
        let _ = respond(&mut stream, "200 OK", "Sign-in refused. You can close this tab.").await;
        let detail = query("error_description").map(|d| format!(": {d}")).unwrap_or_default();
        return Some(Err(SignInError::Refused(format!("{error}{detail}"))));
    }
    let _ = respond(&mut stream, "200 OK", "Signed in to exec-host. You can close this tab.").await;
    Some(Ok(url.to_string()))
}

/// The request target of one HTTP request, read within [`CALLBACK_REQUEST_BYTES`].
async fn request_target(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buffer) {
            Ok(httparse::Status::Complete(_)) if request.method == Some("GET") => return request.path.map(str::to_string),
            Ok(httparse::Status::Complete(_)) | Err(_) => return None,
            Ok(httparse::Status::Partial) if buffer.len() >= CALLBACK_REQUEST_BYTES => return None,
            Ok(httparse::Status::Partial) => {}
        }
    }
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// The client identity an OAuth login uses: a client registered beforehand with the
/// authorization server (`clientId`, and `clientSecret` for a confidential one), or a
/// client ID metadata document's URL; with neither, the client registers itself where the
/// authorization server allows it (RFC 7591).
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthClient {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// The loopback port the authorization server redirects to (one registered with it);
    /// without it, a free port.
    pub callback_port: Option<u16>,
    /// The URL of a client ID metadata document describing this client (used when the
    /// authorization server supports them).
    pub client_metadata_url: Option<String>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "[hidden]"))
            .field("callback_port", &self.callback_port)
            .field("client_metadata_url", &self.client_metadata_url)
            .finish()
    }
}

impl OAuthClient {
    /// A client registered with the authorization server beforehand as `client_id`.
    pub fn registered(client_id: impl Into<String>) -> Self {
        OAuthClient { client_id: Some(client_id.into()), ..OAuthClient::default() }
    }

    /// With the secret of a confidential client.
    pub fn with_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// Redirected to this loopback port.
    pub fn with_callback_port(mut self, port: u16) -> Self {
        self.callback_port = Some(port);
        self
    }

    /// Identified by the client ID metadata document at `url`.
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends `request` to the listener and returns the status line of its answer.
    async fn hit(port: u16, request: String) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer).await;
        answer.lines().next().unwrap_or_default().to_string()
    }

    #[tokio::test]
    async fn the_redirect_listener_answers_only_its_own_state_and_waits_on_past_anything_else() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { redirect(&listener, port, "the-state").await });
        let get = |target: &str| format!("GET {target} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
        assert!(hit(port, get("/callback?code=stolen&state=another")).await.contains("400"), "another login's state");
        assert!(hit(port, get("/elsewhere?code=x&state=the-state")).await.contains("404"), "another path");
        assert!(hit(port, "POST /callback HTTP/1.1\r\n\r\n".into()).await.contains("400"), "not a GET");
        let endless = format!("GET /callback?state=the-state HTTP/1.1\r\nx: {}", "a".repeat(CALLBACK_REQUEST_BYTES));
        assert!(hit(port, endless).await.contains("400"), "a request head past the bound");
        assert!(!waiting.is_finished(), "none of these ends the wait");
        assert!(hit(port, get("/callback?code=good&state=the-state&iss=https%3A%2F%2Fas")).await.contains("200"));
        let url = waiting.await.unwrap().unwrap();
        assert!(url.contains("code=good") && url.contains("iss="), "{url}");

        // The authorization server's refusal ends the wait with its reason.
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { redirect(&listener, port, "s").await });
        hit(port, get("/callback?error=access_denied&error_description=no+thanks&state=s")).await;
        let refused = waiting.await.unwrap().unwrap_err();
        let refused = refused.to_string();
        assert!(refused.contains("refused the sign-in (access_denied: no thanks)"), "{refused}");
    }

    #[tokio::test]
    async fn silent_and_trickling_connections_never_hold_up_the_redirect_and_are_dropped() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { redirect(&listener, port, "s").await });
        let mut slow = Vec::new();
        for _ in 0..12 {
            slow.push(tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap());
        }
        // One that sends its request a byte at a time, never finishing.
        let mut trickle = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let trickling = tokio::spawn(async move {
            for byte in b"GET /callback?state=s".iter().cycle() {
                if trickle.write_all(&[*byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let get = "GET /callback?code=good&state=s HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n".to_string();
        // Served one after another, the 13 before it held the redirect for a minute.
        let answered = tokio::time::timeout(Duration::from_secs(15), hit(port, get)).await.expect("the redirect is answered");
        assert!(answered.contains("200"), "{answered}");
        let url = tokio::time::timeout(Duration::from_secs(15), waiting).await.expect("the wait ends").unwrap().unwrap();
        assert!(url.contains("code=good"), "{url}");
        // The wait is over: the slow connections are closed, not left open.
        for mut stream in slow {
            let mut rest = Vec::new();
            let read = tokio::time::timeout(Duration::from_secs(15), stream.read_to_end(&mut rest)).await;
            assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "a silent connection was left open: {read:?}");
        }
        tokio::time::timeout(Duration::from_secs(15), trickling).await.expect("the trickling connection is closed").unwrap();
    }

    #[test]
    fn only_https_or_loopback_http_urls_pass_and_a_refusal_is_one_safe_line() {
        for url in [
            "https://auth.example/authorize",
            "http://127.0.0.1:8080/authorize",
            "http://127.9.9.9/authorize",
            "http://[::1]:9/authorize",
            "http://localhost/authorize",
            "http://LOCALHOST:1/x",
        ] {
            assert!(server_url("the authorization endpoint", url).is_ok(), "{url}");
        }
        for url in [
            "file:///etc/passwd",
            "javascript:alert(document.cookie)",
            "data:text/html,<script>alert(1)</script>",
            "ftp://auth.example/authorize",
            "http://auth.example/authorize",
            "http://10.0.0.1/authorize",
            "http://localhost.evil.example/authorize",
            "http://[::ffff:8.8.8.8]/x",
            "not a url",
            "",
        ] {
            let refused = server_url("the authorization endpoint", url).unwrap_err().to_string();
            assert!(refused.starts_with("the authorization endpoint `"), "{refused}");
            assert!(refused.contains("is refused: a sign-in opens and fetches only https URLs"), "{refused}");
        }
        let hostile = format!("javascript:\u{1b}]0;pwned\u{7}\n{}", "x".repeat(10_000));
        let refused = server_url("the token endpoint", &hostile).unwrap_err().to_string();
        assert!(!refused.chars().any(char::is_control), "{refused:?}");
        assert!(refused.len() < 500 && refused.contains("\\u{1b}]0;pwned"), "{refused}");

        let metadata: AuthorizationMetadata = serde_json::from_value(serde_json::json!({
            "issuer": "https://as.example", "authorization_endpoint": "https://as.example/authorize",
            "token_endpoint": "https://as.example/token", "registration_endpoint": "ftp://as.example/register"
        }))
        .unwrap();
        let refused = check_metadata(&metadata).unwrap_err().to_string();
        assert!(refused.starts_with("the registration endpoint `ftp://as.example/register`"), "{refused}");
    }
}
