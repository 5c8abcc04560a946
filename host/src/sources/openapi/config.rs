//! How an HTTP API is configured, beside `mcpServers` in the same file:
//!
//! ```json
//! { "apis": {
//!     "github": { "spec": "github-openapi.json", "baseUrl": "https://api.github.com",
//!                 "auth": { "type": "bearer", "token": "${GITHUB_TOKEN}" },
//!                 "include": ["repos_*", "pulls_*"], "exclude": ["repos_delete*"] },
//!     "billing": { "spec": "https://billing.example/openapi.yaml",
//!                  "auth": { "type": "apiKey", "in": "header", "name": "X-Api-Key", "value": "${BILLING_KEY}" } } } }
//! ```
//!
//! `spec` is a file (relative to the configuration file) or an `https://` URL; `baseUrl`
//! defaults to the description's first server. `auth` is `bearer` (`token`), `apiKey` (`in`
//! `header`, `query` or `cookie`, `name`, `value`), `basic` (`username`, `password`) or
//! `oauth2`, either with `"flow": "clientCredentials"` (`tokenUrl`, `clientId`, `clientSecret`,
//! `scopes`) or with `"flow": "authorizationCode"` (`authorizationUrl`, `tokenUrl`,
//! `clientId`, `clientSecret` for a confidential client, `scopes`, `callbackPort`): a person
//! signs in once with `exec-host mcp login NAME`, as for an MCP server, and the tokens are
//! kept and refreshed in the same credentials file. Its values, like every value here, may
//! name environment variables as `${VAR}`. `include` and
//! `exclude` are globs over the operations' names (as in `api__<source>__<name>`). The
//! bounds are `timeoutSeconds`, `maxResponseBytes`, `maxRedirects` and `maxConcurrent`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::sources::oauth::OAuthClient;
use crate::support::text::expand_env;

/// Default bound on one answer's body: past it nothing more is read and the call fails.
pub const DEFAULT_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// Default time one request has, from sending to the last byte of its answer.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default redirects one request follows (each within the API's origin).
pub const DEFAULT_REDIRECTS: usize = 5;
/// Default requests one source has in flight at once; more wait for room.
pub const DEFAULT_CONCURRENT_REQUESTS: usize = 8;
/// Largest `maxResponseBytes` accepted (the bound the host keeps for a value anyway).
pub const MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// One API: where its description is, where requests go, with which credential, which of
/// its operations are offered, and its bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiConfig {
    pub spec: SpecPlace,
    /// Where requests go; the description's first server when not given.
    pub base_url: Option<String>,
    pub auth: Option<ApiAuth>,
    /// Globs over operation names; none means all.
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    /// Every operation's tool is always loaded (never deferred into the pool).
    pub always_load: bool,
    pub limits: ApiLimits,
}

/// Where a description is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecPlace {
    File(PathBuf),
    /// An `https://` URL (or `http://` on a loopback address).
    Url(String),
}

/// A credential the host adds to every request of a source. It never reaches a script, a
/// result, a hook or a log: its text prints as `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub enum ApiAuth {
    Bearer {
        token: String,
    },
    ApiKey {
        place: KeyPlace,
        name: String,
        value: String,
    },
    Basic {
        username: String,
        password: String,
    },
    /// OAuth 2.1's client credentials grant: the host asks `token_url` for an access token
    /// with the client's identity, sends it as a bearer token, and asks again when it expires
    /// or the API refuses it.
    ClientCredentials {
        token_url: String,
        client_id: String,
        client_secret: String,
        scopes: Vec<String>,
    },
    /// OAuth 2.1's authorization code grant with PKCE: a person signs in at
    /// `authorization_url` (`exec-host mcp login`, or when a call first needs it and a
    /// person can be sent), the tokens are kept in the credentials file under the API's name
    /// and refreshed at `token_url`.
    AuthorizationCode {
        authorization_url: String,
        token_url: String,
        /// The client registered with the authorization server (`client_id` is required:
        /// an API's server offers no registration of its own).
        client: OAuthClient,
        scopes: Vec<String>,
    },
}

impl fmt::Debug for ApiAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiAuth::Bearer { .. } => f.write_str("Bearer([redacted])"),
            ApiAuth::ApiKey { place, name, .. } => write!(f, "ApiKey({place:?} {name}: [redacted])"),
            ApiAuth::Basic { username, .. } => write!(f, "Basic({username}: [redacted])"),
            ApiAuth::ClientCredentials { token_url, client_id, .. } => {
                write!(f, "ClientCredentials({client_id} at {token_url}: [redacted])")
            }
            ApiAuth::AuthorizationCode { authorization_url, client, .. } => {
                write!(f, "AuthorizationCode({} at {authorization_url}: [redacted])", client.client_id.as_deref().unwrap_or(""))
            }
        }
    }
}

impl ApiAuth {
    /// The secret texts of the credential, as they could appear in an answer (the token,
    /// the key, the password and the `Basic` header's encoding), for scrubbing.
    pub fn secrets(&self) -> Vec<String> {
        use base64::Engine;
        match self {
            ApiAuth::Bearer { token } => vec![token.clone()],
            ApiAuth::ApiKey { value, .. } => vec![value.clone()],
            ApiAuth::Basic { username, password } => {
                vec![password.clone(), base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))]
            }
            // The access tokens it is given are added by the source that holds them.
            ApiAuth::ClientCredentials { client_id, client_secret, .. } => vec![
                client_secret.clone(),
                base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{client_secret}")),
            ],
            // As above: the tokens are added by the source.
            ApiAuth::AuthorizationCode { client, .. } => client.client_secret.iter().cloned().collect(),
        }
    }
}

/// Where an API key goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyPlace {
    Header,
    Query,
    Cookie,
}

/// What one source may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiLimits {
    pub response_bytes: usize,
    pub timeout: Duration,
    pub redirects: usize,
    pub concurrent: usize,
}

impl Default for ApiLimits {
    fn default() -> Self {
        ApiLimits {
            response_bytes: DEFAULT_RESPONSE_BYTES,
            timeout: DEFAULT_REQUEST_TIMEOUT,
            redirects: DEFAULT_REDIRECTS,
            concurrent: DEFAULT_CONCURRENT_REQUESTS,
        }
    }
}

impl ApiConfig {
    /// An API whose description is `spec`, with the defaults.
    pub fn new(spec: SpecPlace) -> Self {
        ApiConfig {
            spec,
            base_url: None,
            auth: None,
            include: Vec::new(),
            exclude: Vec::new(),
            always_load: false,
            limits: ApiLimits::default(),
        }
    }

    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    pub fn with_auth(mut self, auth: ApiAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    pub fn with_limits(mut self, limits: ApiLimits) -> Self {
        self.limits = limits;
        self
    }
}

/// An entry of `apis` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ApiEntry {
    spec: String,
    base_url: Option<String>,
    auth: Option<AuthEntry>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    #[serde(default)]
    always_load: bool,
    timeout_seconds: Option<f64>,
    max_response_bytes: Option<usize>,
    max_redirects: Option<usize>,
    max_concurrent: Option<usize>,
    /// Kept in the file but not loaded.
    #[serde(default)]
    disabled: bool,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
enum AuthEntry {
    Bearer {
        token: String,
    },
    ApiKey {
        #[serde(rename = "in")]
        place: KeyPlace,
        name: String,
        value: String,
    },
    Basic {
        username: String,
        password: String,
    },
    #[serde(rename_all = "camelCase")]
    Oauth2 {
        flow: String,
        authorization_url: Option<String>,
        token_url: String,
        client_id: String,
        client_secret: Option<String>,
        #[serde(default)]
        scopes: Vec<String>,
        callback_port: Option<u16>,
    },
}

impl ApiEntry {
    /// The entry checked, with its values expanded and its relative file made relative to
    /// `folder` (the configuration file's); `None` when it is disabled.
    pub(crate) fn config(self, folder: &Path) -> Result<Option<ApiConfig>, String> {
        if self.disabled {
            return Ok(None);
        }
        let spec = expand_env(&self.spec, "spec")?;
        let spec = match spec.split_once("://") {
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => SpecPlace::Url(spec),
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("http") && is_loopback_url(&spec) => SpecPlace::Url(spec),
            Some(_) => return Err(format!("`spec` {spec:?}: a description is read from a file or an https:// URL")),
            None => SpecPlace::File(folder.join(spec)),
        };
        let base_url = self.base_url.map(|url| expand_env(&url, "baseUrl")).transpose()?;
        if let Some(url) = &base_url {
            check_base_url(url)?;
        }
        let auth = match self.auth {
            None => None,
            Some(AuthEntry::Bearer { token }) => Some(ApiAuth::Bearer { token: secret(&token, "auth.token")? }),
            Some(AuthEntry::ApiKey { place, name, value }) => {
                if name.is_empty()
                    || name.chars().any(|c| c.is_control() || c.is_whitespace() || c == ':' || c == '=' || c == ';')
                {
                    return Err("`auth.name` must be a plain header, query or cookie name".into());
                }
                Some(ApiAuth::ApiKey { place, name, value: secret(&value, "auth.value")? })
            }
            Some(AuthEntry::Basic { username, password }) => {
                let username = expand_env(&username, "auth.username")?;
                if username.contains(':') {
                    return Err("`auth.username` may not contain `:`".into());
                }
                Some(ApiAuth::Basic { username, password: secret(&password, "auth.password")? })
            }
            Some(AuthEntry::Oauth2 { flow, authorization_url, token_url, client_id, client_secret, scopes, callback_port }) => {
                let endpoint = |url: &str, field: &str| {
                    let url = expand_env(url, field)?;
                    check_base_url(&url).map_err(|why| why.replace("`baseUrl`", &format!("`{field}`")))?;
                    Ok::<_, String>(url)
                };
                let token_url = endpoint(&token_url, "auth.tokenUrl")?;
                let client_id = expand_env(&client_id, "auth.clientId")?;
                if client_id.is_empty() || client_id.contains(':') {
                    return Err("`auth.clientId` must be given, without `:`".into());
                }
                let client_secret = client_secret.map(|text| secret(&text, "auth.clientSecret")).transpose()?;
                match (flow.as_str(), authorization_url, client_secret) {
                    ("clientCredentials", None, Some(client_secret)) if callback_port.is_none() => {
                        Some(ApiAuth::ClientCredentials { token_url, client_id, client_secret, scopes })
                    }
                    ("clientCredentials", _, None) => {
                        return Err("`auth.clientSecret` must be given for the client credentials flow".into());
                    }
                    ("clientCredentials", _, _) => {
                        return Err(
                            "`auth.authorizationUrl` and `auth.callbackPort` belong to the authorization code flow".into()
                        );
                    }
                    ("authorizationCode", Some(authorization_url), client_secret) => {
                        let authorization_url = endpoint(&authorization_url, "auth.authorizationUrl")?;
                        let mut client = OAuthClient::registered(client_id);
                        client.client_secret = client_secret;
                        client.callback_port = callback_port;
                        Some(ApiAuth::AuthorizationCode { authorization_url, token_url, client, scopes })
                    }
                    ("authorizationCode", None, _) => {
                        return Err("`auth.authorizationUrl` must be given for the authorization code flow".into());
                    }
                    (flow, _, _) => {
                        return Err(format!(
                            "`auth.flow` {flow:?}: exec-host signs in to APIs with \"authorizationCode\" (a person signs in) or \"clientCredentials\""
                        ));
                    }
                }
            }
        };
        let defaults = ApiLimits::default();
        let timeout = match self.timeout_seconds {
            None => defaults.timeout,
            Some(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0 => Duration::from_secs_f64(seconds),
            Some(_) => return Err("`timeoutSeconds` must be more than 0 and at most 3600".into()),
        };
        let response_bytes = match self.max_response_bytes {
            None => defaults.response_bytes,
            Some(bytes) if (1..=MAX_RESPONSE_BYTES).contains(&bytes) => bytes,
            Some(_) => return Err(format!("`maxResponseBytes` must be between 1 and {MAX_RESPONSE_BYTES}")),
        };
        let redirects = match self.max_redirects {
            None => defaults.redirects,
            Some(count) if count <= 20 => count,
            Some(_) => return Err("`maxRedirects` must be at most 20".into()),
        };
        let concurrent = match self.max_concurrent {
            None => defaults.concurrent,
            Some(count) if (1..=256).contains(&count) => count,
            Some(_) => return Err("`maxConcurrent` must be between 1 and 256".into()),
        };
        for glob in self.include.iter().chain(&self.exclude) {
            globset::Glob::new(glob).map_err(|e| format!("`include`/`exclude` glob {glob:?}: {e}"))?;
        }
        Ok(Some(ApiConfig {
            spec,
            base_url,
            auth,
            include: self.include,
            exclude: self.exclude,
            always_load: self.always_load,
            limits: ApiLimits { response_bytes, timeout, redirects, concurrent },
        }))
    }
}

/// A credential's value, expanded; an empty one is refused (a `${VAR:-}` left empty would
/// send requests without it, and fail far from the cause).
fn secret(text: &str, field: &str) -> Result<String, String> {
    let value = expand_env(text, field)?;
    if value.is_empty() {
        return Err(format!("`{field}` is empty"));
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(format!("`{field}` contains control characters"));
    }
    Ok(value)
}

/// Requests go over `https://`, or `http://` to a loopback address.
pub(crate) fn check_base_url(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("`baseUrl` {url:?} is not a URL: {e}"))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback_url(url) => Ok(()),
        _ => Err(format!("`baseUrl` {url:?}: requests go over https:// (or http:// to a loopback address)")),
    }
}

/// Whether `url` names a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`).
pub(crate) fn is_loopback_url(url: &str) -> bool {
    match url::Url::parse(url).ok().and_then(|parsed| parsed.host().map(|host| host.to_owned())) {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(json: &str) -> Result<Option<ApiConfig>, String> {
        let entry: ApiEntry = serde_json::from_str(json).map_err(|e| e.to_string())?;
        entry.config(Path::new("/etc/apis"))
    }

    #[test]
    fn an_entry_reads_with_its_defaults_and_its_values_expanded() {
        // SAFETY: no other test of this binary reads or writes this variable.
        unsafe { std::env::set_var("EXEC_HOST_API_TEST_TOKEN", "s3cret-token") };
        let config =
            entry(r#"{"spec": "gh.json", "auth": {"type": "bearer", "token": "${EXEC_HOST_API_TEST_TOKEN}"}}"#).unwrap().unwrap();
        assert_eq!(config.spec, SpecPlace::File(PathBuf::from("/etc/apis/gh.json")));
        assert_eq!(config.auth, Some(ApiAuth::Bearer { token: "s3cret-token".into() }));
        assert_eq!(config.limits, ApiLimits::default());
        assert!(!format!("{config:?}").contains("s3cret"), "a credential never prints");
        let config = entry(
            r#"{"spec": "https://x.example/o.yaml", "baseUrl": "http://127.0.0.1:4010", "timeoutSeconds": 2.5, "maxResponseBytes": 1024,
                "maxRedirects": 0, "maxConcurrent": 2, "auth": {"type": "apiKey", "in": "query", "name": "key", "value": "k"}}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(config.spec, SpecPlace::Url("https://x.example/o.yaml".into()));
        assert_eq!(
            config.limits,
            ApiLimits { response_bytes: 1024, timeout: Duration::from_millis(2500), redirects: 0, concurrent: 2 }
        );
        assert_eq!(entry(r#"{"spec": "a.json", "disabled": true}"#).unwrap(), None);
        let config = entry(
            r#"{"spec": "a.json", "auth": {"type": "oauth2", "flow": "authorizationCode", "authorizationUrl": "https://as.example/authorize",
                "tokenUrl": "https://as.example/token", "clientId": "exec-host", "scopes": ["repo"], "callbackPort": 8765}}"#,
        )
        .unwrap()
        .unwrap();
        let client = OAuthClient::registered("exec-host").with_callback_port(8765);
        assert_eq!(
            config.auth,
            Some(ApiAuth::AuthorizationCode {
                authorization_url: "https://as.example/authorize".into(),
                token_url: "https://as.example/token".into(),
                client,
                scopes: vec!["repo".into()],
            })
        );
    }

    #[test]
    fn a_wrong_entry_is_refused_with_what_is_wrong() {
        let cases = [
            (r#"{"spec": "ftp://x/a.json"}"#, "from a file or an https:// URL"),
            (r#"{"spec": "http://example.com/a.json"}"#, "from a file or an https:// URL"),
            (r#"{"spec": "a.json", "baseUrl": "http://example.com"}"#, "requests go over https://"),
            (r#"{"spec": "a.json", "baseUrl": "not a url"}"#, "is not a URL"),
            (
                r#"{"spec": "a.json", "auth": {"type": "bearer", "token": "${EXEC_HOST_API_TEST_UNSET:-}"}}"#,
                "`auth.token` is empty",
            ),
            (r#"{"spec": "a.json", "auth": {"type": "apiKey", "in": "header", "name": "X: y", "value": "k"}}"#, "plain header"),
            (r#"{"spec": "a.json", "auth": {"type": "basic", "username": "a:b", "password": "p"}}"#, "may not contain `:`"),
            (r#"{"spec": "a.json", "auth": {"type": "oauth9"}}"#, "unknown variant"),
            (
                r#"{"spec": "a.json", "auth": {"type": "oauth2", "flow": "implicit", "tokenUrl": "https://x", "clientId": "a", "clientSecret": "b"}}"#,
                "\"authorizationCode\" (a person signs in) or \"clientCredentials\"",
            ),
            (
                r#"{"spec": "a.json", "auth": {"type": "oauth2", "flow": "authorizationCode", "tokenUrl": "https://x", "clientId": "a"}}"#,
                "`auth.authorizationUrl` must be given",
            ),
            (
                r#"{"spec": "a.json", "auth": {"type": "oauth2", "flow": "authorizationCode", "authorizationUrl": "http://as.example/a", "tokenUrl": "https://x", "clientId": "a"}}"#,
                "`auth.authorizationUrl` \"http://as.example/a\": requests go over https://",
            ),
            (
                r#"{"spec": "a.json", "auth": {"type": "oauth2", "flow": "clientCredentials", "tokenUrl": "https://x", "clientId": "a"}}"#,
                "`auth.clientSecret` must be given",
            ),
            (
                r#"{"spec": "a.json", "auth": {"type": "oauth2", "flow": "clientCredentials", "tokenUrl": "https://x", "clientId": "a", "clientSecret": "b", "callbackPort": 9}}"#,
                "belong to the authorization code flow",
            ),
            (
                r#"{"spec": "a.json", "auth": {"type": "oauth2", "flow": "clientCredentials", "tokenUrl": "http://example.com/t", "clientId": "a", "clientSecret": "b"}}"#,
                "`auth.tokenUrl`",
            ),
            (r#"{"spec": "a.json", "timeoutSeconds": 0}"#, "more than 0"),
            (r#"{"spec": "a.json", "maxResponseBytes": 0}"#, "between 1 and"),
            (r#"{"spec": "a.json", "maxConcurrent": 1000}"#, "between 1 and 256"),
            (r#"{"spec": "a.json", "include": ["a[b"]}"#, "glob"),
            (r#"{"spec": "a.json", "spek": 1}"#, "unknown field `spek`"),
        ];
        for (json, expected) in cases {
            let error = entry(json).unwrap_err();
            assert!(error.contains(expected), "{json}: {error}");
        }
    }
}
