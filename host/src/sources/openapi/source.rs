//! One configured API, loaded: its description read (from a file, or fetched within the
//! same bound), its operations chosen by the configuration's globs, one client that keeps
//! its requests within the API's origin, and its credential.

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::config::{ApiAuth, ApiConfig, ApiLimits, SpecPlace, check_base_url};
use super::document::{Document, MAX_SPEC_BYTES, SpecError};
use super::operations::{SkippedOperation, operations};
use super::token::{Client, Tokens};
use super::tool::ApiTool;
use crate::sources::tools::Tool;
use crate::support::vocabulary::ToolError;

/// How long fetching a description may take.
const SPEC_FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Why an API could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("API `{api}`: {why}")]
#[non_exhaustive]
pub struct ApiError {
    pub api: String,
    pub why: String,
}

/// An API's tools, and the operations it could not offer.
pub struct LoadedApi {
    pub tools: Vec<Arc<dyn Tool>>,
    pub skipped: Vec<SkippedOperation>,
}

/// What every tool of one API shares.
pub(crate) struct ApiSource {
    pub name: String,
    /// Without a trailing `/`.
    pub base_url: String,
    pub auth: Option<ApiAuth>,
    pub client: reqwest::Client,
    pub limits: ApiLimits,
    /// Requests in flight, at most `limits.concurrent`.
    pub room: Semaphore,
    /// The access token, for an API signed in to with client credentials.
    pub tokens: Tokens,
}

impl ApiSource {
    /// The bearer token requests carry, if the API's credential is one: the configured
    /// token, or an access token from its authorization server (a new one when `renew`).
    pub async fn bearer(&self, renew: bool) -> Result<Option<String>, ToolError> {
        match &self.auth {
            Some(ApiAuth::Bearer { token }) => Ok(Some(token.clone())),
            Some(ApiAuth::ClientCredentials { token_url, client_id, client_secret, scopes }) => {
                let client = Client { token_url, client_id, client_secret, scopes };
                let token = self.tokens.token(&client, self.limits.timeout, renew).await;
                token.map(Some).map_err(|why| ToolError::execution(self.scrubbed(&format!("API `{}`: {why}", self.name))))
            }
            _ => Ok(None),
        }
    }

    /// `text` with every quote of the API's credentials (and of the access tokens it was
    /// given) replaced.
    pub fn scrubbed(&self, text: &str) -> String {
        let mut out = text.to_string();
        let secrets = self.auth.iter().flat_map(ApiAuth::secrets).chain(self.tokens.issued());
        for secret in secrets {
            if secret.chars().count() >= MIN_SCRUBBED_CHARS && out.contains(&secret) {
                out = out.replace(&secret, SCRUBBED);
            }
        }
        out
    }
}

/// What a credential quoted in an answer is replaced with.
const SCRUBBED: &str = "[credential]";

/// A credential shorter than this is not looked for in answers: it would match ordinary
/// text.
const MIN_SCRUBBED_CHARS: usize = 6;

/// Loads API `name` as `config` describes it.
pub async fn load(name: &str, config: &ApiConfig) -> Result<LoadedApi, ApiError> {
    let failed = |why: String| ApiError { api: name.to_string(), why };
    crate::sources::tools::names::check_source_name(name).map_err(|why| failed(why.to_string()))?;
    let text = match &config.spec {
        SpecPlace::File(file) => Ok(SpecText::File(file.clone())),
        SpecPlace::Url(url) => fetch_spec(url).await.map(|text| SpecText::Fetched(url.clone(), text)),
    }
    .map_err(failed)?;
    // Reading GitHub's description takes half a second of a core: off the runtime's threads.
    let parsed = tokio::task::spawn_blocking(move || -> Result<_, SpecError> {
        let document = match text {
            SpecText::File(file) => Document::load(&file)?,
            SpecText::Fetched(url, text) => Document::parse(&text, &url)?,
        };
        let (found, skipped) = operations(&document)?;
        Ok((document.server_url().map(str::to_string), found, skipped))
    })
    .await
    .map_err(|e| failed(e.to_string()))?;
    let (server_url, found, skipped) = parsed.map_err(|e| failed(e.to_string()))?;
    let base_url = match (&config.base_url, server_url) {
        (Some(url), _) => url.clone(),
        (None, Some(url)) if url.contains("://") => url,
        (None, Some(url)) => return Err(failed(format!("its description's server is {url:?}, not a whole URL: give `baseUrl`"))),
        (None, None) => return Err(failed("its description names no server: give `baseUrl`".into())),
    };
    check_base_url(&base_url).map_err(failed)?;
    let chosen = choose(config).map_err(failed)?;
    let source = Arc::new(ApiSource {
        name: name.to_string(),
        base_url: base_url.trim_end_matches('/').to_string(),
        auth: config.auth.clone(),
        client: client(&base_url, config.limits).map_err(failed)?,
        limits: config.limits,
        room: Semaphore::new(config.limits.concurrent),
        tokens: Tokens::default(),
    });
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut skipped = skipped;
    for operation in found.into_iter().filter(|operation| chosen(&operation.name)) {
        let label = format!("{} {}", operation.method, operation.path);
        match ApiTool::new(source.clone(), operation, config.always_load) {
            Ok(tool) => tools.push(Arc::new(tool)),
            Err(error) => skipped.push(SkippedOperation { operation: label, reason: error.reason() }),
        }
    }
    Ok(LoadedApi { tools, skipped })
}

enum SpecText {
    File(std::path::PathBuf),
    Fetched(String, String),
}

/// Whether an operation name is offered: it matches an `include` glob (or there is none)
/// and no `exclude` glob.
fn choose(config: &ApiConfig) -> Result<impl Fn(&str) -> bool, String> {
    let set = |globs: &[String]| {
        let mut builder = globset::GlobSetBuilder::new();
        for glob in globs {
            builder.add(globset::Glob::new(glob).map_err(|e| format!("glob {glob:?}: {e}"))?);
        }
        builder.build().map_err(|e| e.to_string())
    };
    let (include, exclude) = (set(&config.include)?, set(&config.exclude)?);
    let everything = config.include.is_empty();
    Ok(move |name: &str| (everything || include.is_match(name)) && !exclude.is_match(name))
}

/// The client of one API: no cookies kept, its bounds, and redirects followed only within
/// the origin of `base_url` (a credential never leaves it).
fn client(base_url: &str, limits: ApiLimits) -> Result<reqwest::Client, String> {
    let origin = url::Url::parse(base_url).map_err(|e| e.to_string())?.origin();
    let most = limits.redirects;
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > most {
            attempt.error(format!("more than {most} redirects"))
        } else if attempt.url().origin() != origin {
            attempt.error("a redirect to another origin, which is not followed")
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .redirect(policy)
        .timeout(limits.timeout)
        .user_agent(concat!("exec-host/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| e.to_string())
}

/// A description fetched from `url`, at most [`MAX_SPEC_BYTES`].
async fn fetch_spec(url: &str) -> Result<String, String> {
    let client = reqwest::Client::builder()
        .timeout(SPEC_FETCH_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
        .map_err(|e| e.to_string())?;
    let fetch_failed =
        |e: reqwest::Error| format!("its description could not be fetched: {}", crate::support::report::error_sentence(&e));
    let mut response = client.get(url).send().await.map_err(fetch_failed)?;
    if !response.status().is_success() {
        return Err(format!("fetching its description answered {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(fetch_failed)? {
        if body.len() + chunk.len() > MAX_SPEC_BYTES as usize {
            return Err(format!("its description is larger than {} MiB", MAX_SPEC_BYTES >> 20));
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|_| "its description is not UTF-8 text".to_string())
}
