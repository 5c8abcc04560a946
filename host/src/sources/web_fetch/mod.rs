//! `WebFetch`: one HTTP request of a script's `fetch`, as a tool the funnel authorises like
//! any other (Claude Code's `WebFetch(domain:...)` rules, hooks, approvals, parking).
//!
//! The guest's `fetch` makes one call per request and follows redirects itself, so each hop
//! is a call of its own, checked again; this tool never follows one. It keeps no cookies,
//! adds no credential of the host's, goes through no proxy, and reaches no private,
//! loopback, link-local or metadata address unless the settings name the host
//! (`address`). What it reads is bounded: [`MAX_FETCH_RESPONSE_BYTES`] of answer, within
//! [`FETCH_TIMEOUT`]; what it sends is bounded by the call's arguments
//! (`Limits::max_argument_bytes`). A script that stops waiting (an aborted signal) cancels
//! the call, which drops the request.

mod address;

use std::time::Duration;

use base64::Engine as _;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub(crate) use address::PrivateHosts;

use super::tools::names::WEB_FETCH;
use super::tools::{CallContext, Effect, Tool, ToolDefinition, ToolOutput};
use crate::support::vocabulary::ToolError;

/// Bytes of one answer's body `fetch` reads; past them the call fails and no more is read.
pub const MAX_FETCH_RESPONSE_BYTES: usize = 10 * 1024 * 1024;

/// Time one request may take, from connecting to the last byte of its answer.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Time to connect, within [`FETCH_TIMEOUT`].
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Headers of one request or answer passed on.
const MAX_HEADERS: usize = 256;

/// Request headers the host sets itself (or that name the connection, not the request):
/// a script's are dropped, as browsers drop them.
const HOST_SET_HEADERS: [&str; 10] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-connection",
];

/// One request, as the guest's `fetch` sends it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Params {
    /// An absolute http or https URL, without a user name or password.
    url: String,
    /// The method (GET when absent).
    #[serde(default)]
    method: Option<String>,
    /// Request headers, as `[name, value]` pairs.
    #[serde(default)]
    headers: Vec<(String, String)>,
    /// The body as text (sent as UTF-8).
    #[serde(default)]
    body: Option<String>,
    /// The body as base64, for bytes that are not text.
    #[serde(default)]
    body_base64: Option<String>,
}

/// The answer, as the guest's `fetch` builds its `Response` from it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Answer {
    status: u16,
    status_text: String,
    /// The URL that answered.
    url: String,
    /// Answer headers as `[name, value]` pairs, in the order received.
    headers: Vec<(String, String)>,
    /// The body, when it is UTF-8 text.
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    /// The body as base64, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    body_base64: Option<String>,
}

/// The tool behind `fetch`.
pub struct WebFetch {
    definition: ToolDefinition,
    client: reqwest::Client,
    private_hosts: PrivateHosts,
}

impl WebFetch {
    /// The tool, reaching the private addresses of the hosts `private_hosts` names at the
    /// moment of each request.
    pub(crate) fn new(private_hosts: PrivateHosts) -> Result<Self, String> {
        let definition = ToolDefinition::from_types::<Params, Answer>(
            WEB_FETCH,
            "One HTTP request of a script's fetch(); redirects are followed by the script, each a call of its own.",
        )
        .map_err(|e| e.to_string())?
        .with_effect(Effect::Network);
        let resolver = std::sync::Arc::new(address::CheckedResolver { private_hosts: private_hosts.clone() });
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(resolver)
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .referer(false)
            .user_agent(concat!("exec-host/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(WebFetch { definition, client, private_hosts })
    }

    async fn run(&self, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let params: Params = serde_json::from_value(Value::Object(args))
            .map_err(|e| ToolError::params(format!("`{WEB_FETCH}` takes {{url, method?, headers?, body?, bodyBase64?}}: {e}")))?;
        let request = self.request(params)?;
        let what = format!("{} {}", request.method(), request.url());
        let failed = |e: reqwest::Error| {
            let why = match e.is_timeout() {
                true => format!("no whole answer within {FETCH_TIMEOUT:?}"),
                false => crate::support::report::error_sentence(&e.without_url()),
            };
            ToolError::execution(format!("{what} failed: {why}"))
        };
        let mut response = self.client.execute(request).await.map_err(failed)?;
        let too_large = || {
            ToolError::execution(format!("{what}: the answer is larger than {MAX_FETCH_RESPONSE_BYTES} bytes; no more was read"))
        };
        if response.content_length().is_some_and(|length| length > MAX_FETCH_RESPONSE_BYTES as u64) {
            return Err(too_large());
        }
        let status = response.status();
        let url = response.url().to_string();
        let headers = response
            .headers()
            .iter()
            .take(MAX_HEADERS)
            .map(|(name, value)| (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > MAX_FETCH_RESPONSE_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        let (body, body_base64) = match String::from_utf8(body) {
            Ok(text) => (Some(text), None),
            Err(bytes) => (None, Some(base64::engine::general_purpose::STANDARD.encode(bytes.into_bytes()))),
        };
        let answer = Answer {
            status: status.as_u16(),
            status_text: status.canonical_reason().unwrap_or_default().to_string(),
            url,
            headers,
            body,
            body_base64,
        };
        let value = serde_json::to_value(answer).map_err(|e| ToolError::projection(format!("{what}: {e}")))?;
        Ok(ToolOutput::structured(value))
    }

    /// The request `params` ask for, or why it may not be sent.
    fn request(&self, params: Params) -> Result<reqwest::Request, ToolError> {
        let refused = |why: String| ToolError::params(format!("`{WEB_FETCH}`: {why}"));
        let url = url::Url::parse(&params.url).map_err(|e| refused(format!("{:?} is not an absolute URL: {e}", params.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refused(format!("only http and https URLs can be fetched, not {}:", url.scheme())));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refused("a URL with a user name or password cannot be fetched".into()));
        }
        let (Some(host), Some(written)) = (url.host(), url.host_str()) else {
            return Err(refused("the URL has no host".into()));
        };
        if let Some(why) = address::refused_literal(&host, written, &self.private_hosts) {
            return Err(ToolError::execution(format!("`{WEB_FETCH}` refused {url}: {why}")));
        }
        let method = params.method.as_deref().unwrap_or("GET");
        let method =
            reqwest::Method::from_bytes(method.as_bytes()).map_err(|_| refused(format!("{method:?} is not a method")))?;
        if params.headers.len() > MAX_HEADERS {
            return Err(refused(format!("a request carries at most {MAX_HEADERS} headers")));
        }
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &params.headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| refused(format!("{name:?} is not a header name")))?;
            if HOST_SET_HEADERS.contains(&name.as_str()) || name.as_str().starts_with("proxy-") {
                continue;
            }
            // `HeaderValue` refuses CR, LF and NUL: no header can be added through a value.
            let value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| refused(format!("the value of header `{name}` may not contain line breaks or NUL")))?;
            headers.append(name, value);
        }
        let body = match (params.body, params.body_base64) {
            (Some(_), Some(_)) => return Err(refused("give the body as text or as base64, not both".into())),
            (Some(text), None) => Some(text.into_bytes()),
            (None, Some(encoded)) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map_err(|e| refused(format!("bodyBase64 is not base64: {e}")))?,
            ),
            (None, None) => None,
        };
        if body.is_some() && matches!(method, reqwest::Method::GET | reqwest::Method::HEAD) {
            return Err(refused(format!("a {method} request cannot have a body")));
        }
        let mut request = reqwest::Request::new(method, url);
        *request.headers_mut() = headers;
        if let Some(body) = body {
            *request.body_mut() = Some(body.into());
        }
        Ok(request)
    }
}

impl Tool for WebFetch {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, _context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.run(args))
    }
}

/// The host a call of `WebFetch` asks for, as its rules read it (`WebFetch(domain:HOST)`):
/// the URL's host, lowercase, or `None` when the input has no URL that parses.
pub(crate) fn requested_host(input: &Value) -> Option<String> {
    let url = url::Url::parse(input.get("url")?.as_str()?).ok()?;
    url.host_str().map(str::to_ascii_lowercase)
}
