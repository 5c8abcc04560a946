//! OAuth 2.1's client credentials grant, for an API whose `auth` asks for it: the host asks
//! the token endpoint for an access token with the client's identity (HTTP Basic, as RFC 6749
//! requires every server to accept), keeps it until shortly before it expires, and asks again
//! then, or at once when the API refuses it. The client's secret and every token stay in the
//! host, as the other credentials do.

use std::time::{Duration, Instant};

use serde::Deserialize;

/// Largest answer of a token endpoint read.
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;

/// A token is asked for again this long before it says it expires.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// Tokens remembered for scrubbing answers: the current one and a few before it, which an
/// answer to a request in flight when it was renewed may still quote.
const TOKENS_REMEMBERED: usize = 4;

/// The client's identity at its authorization server.
pub(crate) struct Client<'a> {
    pub token_url: &'a str,
    pub client_id: &'a str,
    pub client_secret: &'a str,
    pub scopes: &'a [String],
}

/// The access token of one API, and those it was given before.
#[derive(Default)]
pub(crate) struct Tokens {
    current: tokio::sync::Mutex<Option<Held>>,
    issued: std::sync::Mutex<Vec<String>>,
}

struct Held {
    token: String,
    /// When to ask again; never, when the server did not say.
    renew_at: Option<Instant>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    token_type: Option<String>,
    expires_in: Option<u64>,
}

impl Tokens {
    /// A token that is good now: the one held, or a new one (always a new one when `renew`,
    /// after the API refused the one held). One request at a time asks; the others wait for
    /// its token.
    pub async fn token(&self, client: &Client<'_>, timeout: Duration, renew: bool) -> Result<String, String> {
        let mut current = self.current.lock().await;
        if let Some(held) = &*current
            && !renew
            && held.renew_at.is_none_or(|at| Instant::now() < at)
        {
            return Ok(held.token.clone());
        }
        let answer = ask(client, timeout).await?;
        let renew_at =
            answer.expires_in.map(|seconds| Instant::now() + Duration::from_secs(seconds).saturating_sub(EXPIRY_MARGIN));
        self.remember(&answer.access_token);
        *current = Some(Held { token: answer.access_token.clone(), renew_at });
        Ok(answer.access_token)
    }

    /// Remembers `token` among those given lately (a person's sign-in gives its own).
    pub fn remember(&self, token: &str) {
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        if issued.last().is_some_and(|last| last == token) {
            return;
        }
        issued.push(token.to_string());
        if issued.len() > TOKENS_REMEMBERED {
            issued.remove(0);
        }
    }

    /// The tokens given lately, for scrubbing.
    pub fn issued(&self) -> Vec<String> {
        self.issued.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// One request to the token endpoint.
async fn ask(client: &Client<'_>, timeout: Duration) -> Result<TokenAnswer, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .build()
        .map_err(|e| e.to_string())?;
    let form = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "client_credentials");
        if !client.scopes.is_empty() {
            form.append_pair("scope", &client.scopes.join(" "));
        }
        form.finish()
    };
    let failed = |why: String| format!("signing in at {} failed: {why}", client.token_url);
    let mut response = http
        .post(client.token_url)
        .basic_auth(client.client_id, Some(client.client_secret))
        .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(http::header::ACCEPT, "application/json")
        .body(form)
        .send()
        .await
        .map_err(|e| failed(crate::support::report::error_sentence(&e.without_url())))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| failed(e.without_url().to_string()))? {
        if body.len() + chunk.len() > MAX_TOKEN_RESPONSE_BYTES {
            return Err(failed(format!("its answer is larger than {MAX_TOKEN_RESPONSE_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        // The excerpt is scrubbed by the caller, which knows every secret of the API.
        let excerpt = crate::support::text::one_line(String::from_utf8_lossy(&body).trim(), 200);
        return Err(failed(format!("it answered {status}: {excerpt}")));
    }
    let answer: TokenAnswer = serde_json::from_slice(&body).map_err(|e| failed(format!("its answer is not a token ({e})")))?;
    if answer.token_type.as_deref().is_some_and(|kind| !kind.eq_ignore_ascii_case("bearer")) {
        return Err(failed("it gave a token that is not a bearer token".into()));
    }
    if answer.access_token.is_empty() || answer.access_token.chars().any(|c| c.is_control() || c == ' ') {
        return Err(failed("it gave an empty or malformed token".into()));
    }
    Ok(answer)
}
