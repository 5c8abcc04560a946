//! One configured API, loaded: its description read (from a file, or fetched within the
//! same bound), its operations chosen by the configuration's globs, one client that keeps
//! its requests within the API's origin, and its credential (for a person's sign-in, with the
//! session's credentials file and whether a person can be sent).

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::authorization::{Endpoints, PersonSignIn};
use super::config::{ApiAuth, ApiConfig, ApiLimits, SpecPlace, check_base_url};
use super::document::{Document, MAX_SPEC_BYTES, SpecError};
use super::operations::{SkippedOperation, operations};
use super::token::{Client, Tokens};
use super::tool::ApiTool;
use crate::sources::oauth::SignInSetup;
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
pub(crate) struct LoadedApi {
    pub tools: Vec<Arc<dyn Tool>>,
    pub skipped: Vec<SkippedOperation>,
    /// Where its requests go (without a trailing `/`): the resource its tokens are bound to.
    pub base_url: String,
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
    /// The access token, for an API signed in to with client credentials; the tokens given
    /// lately, for every OAuth API.
    pub tokens: Tokens,
    /// The sign-in, for an API a person signs in to.
    pub person: Option<PersonSignIn>,
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
            Some(ApiAuth::AuthorizationCode { .. }) => {
                let person = self.person.as_ref().expect("an API a person signs in to has its sign-in");
                match person.token(renew).await {
                    Ok(token) => {
                        self.tokens.remember(&token);
                        Ok(Some(token))
                    }
                    Err(why) => Err(ToolError::execution(self.scrubbed(&crate::support::report::error_sentence(&why)))),
                }
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

/// Loads API `name` as `config` describes it; `auth` is where a person's sign-in keeps its
/// tokens, and whether a person can be sent to one.
pub(crate) async fn load(name: &str, config: &ApiConfig, auth: &SignInSetup) -> Result<LoadedApi, ApiError> {
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
    let base_url = base_url.trim_end_matches('/').to_string();
    let person = endpoints(config).map(|endpoints| PersonSignIn::new(name, &base_url, endpoints, auth.clone()));
    let source = Arc::new(ApiSource {
        name: name.to_string(),
        client: client(&base_url, config.limits).map_err(failed)?,
        base_url,
        auth: config.auth.clone(),
        limits: config.limits,
        room: Semaphore::new(config.limits.concurrent),
        tokens: Tokens::default(),
        person,
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
    Ok(LoadedApi { tools, skipped, base_url: source.base_url.clone() })
}

/// Where a person signs in to the API, when its credential is a person's sign-in.
fn endpoints(config: &ApiConfig) -> Option<Endpoints> {
    match &config.auth {
        Some(ApiAuth::AuthorizationCode { authorization_url, token_url, client, scopes }) => Some(Endpoints {
            authorization_url: authorization_url.clone(),
            token_url: token_url.clone(),
            client: client.clone(),
            scopes: scopes.clone(),
        }),
        _ => None,
    }
}

/// Sends a person to sign in to API `name`, as `exec-host mcp login NAME` does, and keeps
/// the tokens in `credentials`: for an API whose `auth` is the authorization code flow. The
/// tokens are bound to the API's base URL, so its description is read for its server when
/// the configuration gives no `baseUrl`.
pub async fn log_in(
    name: &str,
    config: &ApiConfig,
    credentials: &crate::sources::oauth::CredentialsFile,
    login: &crate::sources::oauth::Login,
) -> Result<(), ApiError> {
    let failed = |why: String| ApiError { api: name.to_string(), why };
    let Some(endpoints) = endpoints(config) else {
        return Err(failed("it is not signed in to by a person (its `auth` is not the OAuth authorization code flow)".into()));
    };
    let base_url = resource(name, config).await?;
    super::authorization::log_in(name, &base_url, &endpoints, credentials, login)
        .await
        .map_err(|why| failed(crate::support::report::error_sentence(&why)))
}

/// Whether API `name` is signed in to in `credentials`; `None` when its `auth` is not a
/// person's sign-in.
pub async fn sign_in_state(
    name: &str,
    config: &ApiConfig,
    credentials: &crate::sources::oauth::CredentialsFile,
) -> Result<Option<crate::sources::oauth::SignIn>, ApiError> {
    if endpoints(config).is_none() {
        return Ok(None);
    }
    let base_url = resource(name, config).await?;
    let holder = crate::sources::oauth::Holder::Api(name.to_string());
    credentials.sign_in(&holder, &base_url).map(Some).map_err(|why| ApiError { api: name.to_string(), why: why.to_string() })
}

/// The base URL of API `name`: the configuration's, or its description's first server.
async fn resource(name: &str, config: &ApiConfig) -> Result<String, ApiError> {
    match &config.base_url {
        Some(url) => Ok(url.trim_end_matches('/').to_string()),
        None => Ok(load(name, config, &SignInSetup::default()).await?.base_url),
    }
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
