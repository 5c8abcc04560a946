//! One operation of an API as a [`Tool`]: `api__<source>__<operation>`. A call becomes the
//! operation's request with the source's credential added by the host; a 2xx answer becomes
//! the call's value (parsed when it is JSON), any other answer an error with its status and
//! the start of its body. The credential never reaches the script: an answer that quotes it
//! has it replaced.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::config::{ApiAuth, KeyPlace};
use super::operations::Operation;
use super::request::{Prepared, prepare};
use super::source::ApiSource;
use crate::sources::tools::names::api_name;
use crate::sources::tools::{CallContext, DefinitionError, Tool, ToolDefinition, ToolOutput, ToolSource};
use crate::support::vocabulary::ToolError;

/// Longest excerpt of a failed answer's body in the error a script reads, in characters.
pub const MAX_ERROR_EXCERPT_CHARS: usize = 500;

/// One operation of an API.
pub(crate) struct ApiTool {
    definition: ToolDefinition,
    operation: Operation,
    source: Arc<ApiSource>,
}

impl ApiTool {
    pub fn new(source: Arc<ApiSource>, operation: Operation, always_load: bool) -> Result<Self, DefinitionError> {
        let mut definition =
            ToolDefinition::new(api_name(&source.name, &operation.name), &operation.description, operation.input_schema.clone())?
                .deferred(true)
                .always_load(always_load)
                .with_effect(operation.effect)
                .with_source(ToolSource::Api { source: source.name.clone() });
        if let Some(schema) = &operation.output_schema {
            definition = definition.with_output_schema(schema.clone());
        }
        if !operation.tags.is_empty() {
            definition = definition.with_search_hint(operation.tags.join(" ")).with_tags(operation.tags.clone());
        }
        Ok(ApiTool { definition, operation, source })
    }

    async fn run(&self, args: Map<String, Value>, context: CallContext) -> Result<ToolOutput, ToolError> {
        let prepared = prepare(&self.operation, &self.source.base_url, &args, &self.definition.name)?;
        let waited = tokio::select! {
            room = self.source.room.acquire() => room,
            () = context.cancel.cancelled() => return Err(ToolError::execution("the call was cancelled")),
        };
        let _room = waited.map_err(|_| ToolError::execution("the API is closed"))?;
        let answered = tokio::select! {
            answered = self.send(prepared) => answered,
            () = context.cancel.cancelled() => return Err(ToolError::execution("the call was cancelled")),
        };
        answered
    }

    /// Sends the request; when the API refuses an access token from its authorization server
    /// (401), once more with a new one.
    async fn send(&self, prepared: Prepared) -> Result<ToolOutput, ToolError> {
        let renewable = matches!(self.source.auth, Some(ApiAuth::ClientCredentials { .. } | ApiAuth::AuthorizationCode { .. }));
        let bearer = self.source.bearer(false).await?;
        match self.exchange(self.request(prepared.clone(), bearer.as_deref())?).await {
            Exchange::Unauthorized(_) if renewable => {
                let bearer = self.source.bearer(true).await?;
                match self.exchange(self.request(prepared, bearer.as_deref())?).await {
                    Exchange::Done(answer) => answer,
                    Exchange::Unauthorized(error) => Err(error),
                }
            }
            Exchange::Done(answer) => answer,
            Exchange::Unauthorized(error) => Err(error),
        }
    }

    /// The request with the credential added (`bearer`, the token of a bearer credential).
    fn request(&self, prepared: Prepared, bearer: Option<&str>) -> Result<reqwest::Request, ToolError> {
        let mut url =
            url::Url::parse(&prepared.url).map_err(|e| ToolError::params(format!("the request's URL is not valid: {e}")))?;
        let mut headers = http::HeaderMap::new();
        for (name, value) in prepared.headers {
            headers.append(name, value);
        }
        let secret_header = |value: String| {
            let mut value = http::HeaderValue::from_str(&value)
                .map_err(|_| ToolError::execution("the API's credential is not valid in a header"))?;
            value.set_sensitive(true);
            Ok::<_, ToolError>(value)
        };
        if let Some(token) = bearer {
            headers.insert(http::header::AUTHORIZATION, secret_header(format!("Bearer {token}"))?);
        }
        match &self.source.auth {
            None | Some(ApiAuth::Bearer { .. } | ApiAuth::ClientCredentials { .. } | ApiAuth::AuthorizationCode { .. }) => {}
            Some(ApiAuth::Basic { username, password }) => {
                use base64::Engine;
                let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
                headers.insert(http::header::AUTHORIZATION, secret_header(format!("Basic {encoded}"))?);
            }
            Some(ApiAuth::ApiKey { place: KeyPlace::Header, name, value }) => {
                let name = http::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| ToolError::execution("the API key's header name is not valid"))?;
                headers.insert(name, secret_header(value.clone())?);
            }
            Some(ApiAuth::ApiKey { place: KeyPlace::Query, name, value }) => {
                url.query_pairs_mut().append_pair(name, value);
            }
            Some(ApiAuth::ApiKey { place: KeyPlace::Cookie, name, value }) => {
                let cookie = match headers.get(http::header::COOKIE).and_then(|v| v.to_str().ok()) {
                    Some(others) => format!("{others}; {name}={value}"),
                    None => format!("{name}={value}"),
                };
                headers.insert(http::header::COOKIE, secret_header(cookie)?);
            }
        }
        let mut request = reqwest::Request::new(prepared.method, url);
        *request.headers_mut() = headers;
        if let Some((content_type, body)) = prepared.body {
            let content_type = http::HeaderValue::from_str(&content_type)
                .map_err(|_| ToolError::execution("the operation's media type is not valid in a header"))?;
            request.headers_mut().insert(http::header::CONTENT_TYPE, content_type);
            *request.body_mut() = Some(body.into());
        }
        Ok(request)
    }

    /// Sends `request` and reads its answer within the source's bounds.
    async fn exchange(&self, request: reqwest::Request) -> Exchange {
        match self.answer(request).await {
            Ok(output) => Exchange::Done(Ok(output)),
            Err(Failed { error, unauthorized: true }) => Exchange::Unauthorized(error),
            Err(Failed { error, .. }) => Exchange::Done(Err(error)),
        }
    }

    /// The answer to `request` as the call's output.
    async fn answer(&self, request: reqwest::Request) -> Result<ToolOutput, Failed> {
        let what = format!("{} {}", self.operation.method, self.operation.path);
        // Said without the URL: an API key may be in its query.
        let failed = |e: reqwest::Error| {
            let e = e.without_url();
            let why = match e.is_timeout() {
                true => format!("no whole answer within {:?}", self.source.limits.timeout),
                false => crate::support::report::error_sentence(&e),
            };
            ToolError::execution(self.scrubbed(&format!("{what} failed: {why}")))
        };
        let mut response = self.source.client.execute(request).await.map_err(failed)?;
        let status = response.status();
        let limit = self.source.limits.response_bytes;
        if response.content_length().is_some_and(|length| length > limit as u64) {
            return Err(ToolError::execution(format!(
                "{what}: the answer is larger than {limit} bytes (the source's maxResponseBytes)"
            ))
            .into());
        }
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > limit {
                return Err(ToolError::execution(format!(
                    "{what}: the answer is larger than {limit} bytes (the source's maxResponseBytes); no more was read"
                ))
                .into());
            }
            body.extend_from_slice(&chunk);
        }
        let text = self.scrubbed(&String::from_utf8_lossy(&body));
        if !status.is_success() {
            let excerpt = crate::support::text::one_line(text.trim(), MAX_ERROR_EXCERPT_CHARS);
            let message = match excerpt.is_empty() {
                true => format!("{what} answered {status}"),
                false => format!("{what} answered {status}: {excerpt}"),
            };
            return Err(Failed { error: ToolError::execution(message), unauthorized: status == http::StatusCode::UNAUTHORIZED });
        }
        if body.is_empty() {
            return Ok(ToolOutput::empty());
        }
        let media = content_type.split(';').next().unwrap_or_default().trim();
        let is_json = media == "application/json" || media.ends_with("+json");
        if is_json && let Ok(value) = serde_json::from_str::<Value>(&text) {
            return Ok(ToolOutput::structured(value));
        }
        let is_text = media.is_empty()
            || media.starts_with("text/")
            || is_json
            || media.ends_with("xml")
            || std::str::from_utf8(&body).is_ok();
        match is_text {
            true => Ok(ToolOutput::text(text)),
            false => Ok(ToolOutput::text(format!("({} bytes of {media}, not text)", body.len()))),
        }
    }

    fn scrubbed(&self, text: &str) -> String {
        self.source.scrubbed(text)
    }
}

/// What one exchange came to: an answer (or a failure), or the API's refusal of the token.
enum Exchange {
    Done(Result<ToolOutput, ToolError>),
    Unauthorized(ToolError),
}

/// A failed exchange, and whether the API answered 401.
struct Failed {
    error: ToolError,
    unauthorized: bool,
}

impl From<ToolError> for Failed {
    fn from(error: ToolError) -> Self {
        Failed { error, unauthorized: false }
    }
}

impl Tool for ApiTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.run(args, context))
    }
}
