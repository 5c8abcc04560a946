//! MCP server configuration, in the format users already keep for Claude Desktop and
//! Claude Code:
//!
//! ```json
//! { "mcpServers": {
//!     "files":   { "command": "npx", "args": ["-y", "some-server"], "env": {"K": "v"}, "cwd": "/srv" },
//!     "tickets": { "type": "http", "url": "https://tickets.example/mcp", "headers": {"Authorization": "Bearer ..."},
//!                  "alwaysLoad": true },
//!     "crm":     { "type": "http", "url": "https://crm.example/mcp",
//!                  "oauth": { "clientId": "exec-host", "clientSecret": "${CRM_SECRET}", "callbackPort": 8765 } } } }
//! ```
//!
//! A server without `type` is a stdio server when it has a `command`. Keys this host does
//! not use (`disabled`, `autoApprove`, ...) are ignored so existing files load unchanged.
//! Every error names the file, the key path and, when JSON says so, the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::sources::oauth::OAuthClient;
use crate::sources::openapi::{ApiConfig, ApiEntry};
pub(crate) use crate::sources::tools::names::check_source_name as check_name;
use crate::support::text::expand_env as expand;
use crate::support::text_file::ReadError;

/// Every configured server, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerConfig>,
    /// HTTP APIs configured in the same file (`apis`, see [`crate::openapi::ApiConfig`]).
    pub apis: BTreeMap<String, ApiConfig>,
}

/// One server: how to reach it, and whether its tools are never deferred.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConfig {
    pub transport: Transport,
    /// Every tool of this server is always loaded (never deferred into the pool).
    pub always_load: bool,
    /// How this client identifies itself when an HTTP server asks for OAuth.
    pub oauth: OAuthClient,
}

impl McpConfig {
    /// A configuration of these servers, by name.
    pub fn new(servers: BTreeMap<String, ServerConfig>) -> Self {
        McpConfig { servers, apis: BTreeMap::new() }
    }
}

impl ServerConfig {
    /// A server started as `command args...`, speaking MCP on its stdin and stdout.
    pub fn stdio(command: impl Into<String>, args: impl IntoIterator<Item = String>) -> Self {
        let transport =
            Transport::Stdio { command: command.into(), args: args.into_iter().collect(), env: BTreeMap::new(), cwd: None };
        ServerConfig { transport, always_load: false, oauth: OAuthClient::default() }
    }

    /// A streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        let transport = Transport::Http { url: url.into(), headers: BTreeMap::new() };
        ServerConfig { transport, always_load: false, oauth: OAuthClient::default() }
    }

    /// The client identity an OAuth login with this server uses (HTTP servers).
    pub fn with_oauth(mut self, oauth: OAuthClient) -> Self {
        self.oauth = oauth;
        self
    }

    /// Adds a variable to a stdio server's environment (ignored for HTTP).
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// The directory a stdio server starts in (ignored for HTTP).
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Transport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header to every request to an HTTP server (ignored for stdio).
    pub fn with_header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Http { headers, .. } = &mut self.transport {
            headers.insert(key.into(), value.into());
        }
        self
    }

    /// Marks every tool of the server as never deferred.
    pub fn always_load(mut self, always_load: bool) -> Self {
        self.always_load = always_load;
        self
    }
}

/// How to reach a server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio { command: String, args: Vec<String>, env: BTreeMap<String, String>, cwd: Option<PathBuf> },
    /// A streamable HTTP endpoint.
    Http { url: String, headers: BTreeMap<String, String> },
}

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("{file}: the file {source}")]
    Unreadable {
        file: PathBuf,
        #[source]
        source: ReadError,
    },
    #[error("{file}: {reason}")]
    Invalid { file: PathBuf, reason: String },
    #[error("{file}: server `{name}`: {reason}")]
    Server { file: PathBuf, name: String, reason: String },
    #[error("server `{name}` is configured twice ({first} and {second}); server names must be unique")]
    Duplicate { name: String, first: PathBuf, second: PathBuf },
    #[error("{file}: API `{name}`: {reason}")]
    Api { file: PathBuf, name: String, reason: String },
    #[error("API `{name}` is configured twice ({first} and {second}); API names must be unique")]
    DuplicateApi { name: String, first: PathBuf, second: PathBuf },
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<BTreeMap<String, Entry>>,
    apis: Option<BTreeMap<String, ApiEntry>>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default, rename = "alwaysLoad")]
    always_load: bool,
    /// The entry is kept in the file but not started (as Claude Code and Cursor write it).
    #[serde(default)]
    disabled: bool,
    oauth: Option<OAuthEntry>,
}

/// `oauth`, with Claude Code's key names.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuthEntry {
    #[serde(rename = "clientId")]
    client_id: Option<String>,
    #[serde(rename = "clientSecret")]
    client_secret: Option<String>,
    #[serde(rename = "callbackPort")]
    callback_port: Option<u16>,
    #[serde(rename = "clientMetadataUrl")]
    client_metadata_url: Option<String>,
}

impl McpConfig {
    /// Reads and checks one configuration file.
    pub fn load(file: &Path) -> Result<Self, ConfigError> {
        let text = crate::support::text_file::read_text(file, crate::support::text_file::MAX_CONFIG_FILE_BYTES)
            .map_err(|source| ConfigError::Unreadable { file: file.to_path_buf(), source })?;
        Self::parse(&text, file)
    }

    /// Checks the text of a configuration; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<Self, ConfigError> {
        let invalid = |reason: String| ConfigError::Invalid { file: file.to_path_buf(), reason };
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let parsed: File = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            let key = crate::support::report::json_key(e.path());
            let inner = e.into_inner();
            match key {
                None => invalid(inner.to_string()),
                Some(key) => invalid(format!("{key}: {inner}")),
            }
        })?;
        if parsed.mcp_servers.is_none() && parsed.apis.is_none() {
            return Err(invalid("it has neither `mcpServers` nor `apis`".into()));
        }
        let mut apis = BTreeMap::new();
        let folder = file.parent().unwrap_or(Path::new("."));
        for (name, entry) in parsed.apis.unwrap_or_default() {
            let api_error = |reason: String| ConfigError::Api { file: file.to_path_buf(), name: name.clone(), reason };
            check_name(&name).map_err(|why| api_error(why.to_string()))?;
            if let Some(config) = entry.config(folder).map_err(api_error)? {
                apis.insert(name, config);
            }
        }
        let mut servers = BTreeMap::new();
        for (name, mut entry) in parsed.mcp_servers.unwrap_or_default() {
            let server_error = |reason: String| ConfigError::Server { file: file.to_path_buf(), name: name.clone(), reason };
            check_name(&name).map_err(|why| server_error(why.to_string()))?;
            if entry.disabled {
                continue;
            }
            if entry.kind.as_deref() == Some("sse") {
                // One server other clients can reach and this host cannot is no reason to
                // refuse the file's other servers.
                tracing::warn!(
                    "{}: server `{name}` is skipped: it uses the SSE transport, which exec-host does not support (write \"type\": \"http\" if it also serves streamable HTTP)",
                    file.display()
                );
                continue;
            }
            let always_load = entry.always_load;
            let oauth = entry.oauth.take().map(OAuthEntry::client).transpose().map_err(server_error)?.unwrap_or_default();
            let transport = entry.transport().map_err(server_error)?;
            if oauth != OAuthClient::default() && matches!(transport, Transport::Stdio { .. }) {
                return Err(server_error("`oauth` applies to HTTP servers only".into()));
            }
            servers.insert(name, ServerConfig { transport, always_load, oauth });
        }
        Ok(McpConfig { servers, apis })
    }

    /// Combines configurations (one per `--mcp-config`); a server name in two files is an
    /// error rather than a silent override.
    pub fn merge(configs: Vec<(PathBuf, McpConfig)>) -> Result<Self, ConfigError> {
        let mut merged = McpConfig::default();
        let mut origin: BTreeMap<String, PathBuf> = BTreeMap::new();
        let mut configs_apis = Vec::new();
        for (file, mut config) in configs {
            configs_apis.push((file.clone(), std::mem::take(&mut config.apis)));
            for (name, server) in config.servers {
                if let Some(first) = origin.get(&name) {
                    return Err(ConfigError::Duplicate { name, first: first.clone(), second: file });
                }
                origin.insert(name.clone(), file.clone());
                merged.servers.insert(name, server);
            }
        }
        let mut api_origin: BTreeMap<String, PathBuf> = BTreeMap::new();
        for (file, config) in configs_apis {
            for (name, api) in config {
                if let Some(first) = api_origin.get(&name) {
                    return Err(ConfigError::DuplicateApi { name, first: first.clone(), second: file });
                }
                api_origin.insert(name.clone(), file.clone());
                merged.apis.insert(name, api);
            }
        }
        Ok(merged)
    }
}

impl OAuthEntry {
    fn client(self) -> Result<OAuthClient, String> {
        let client_id = self.client_id.map(|id| expand(&id, "oauth.clientId")).transpose()?;
        let client_secret = self.client_secret.map(|secret| expand(&secret, "oauth.clientSecret")).transpose()?;
        if client_secret.is_some() && client_id.is_none() {
            return Err("`oauth.clientSecret` needs the `oauth.clientId` it belongs to".into());
        }
        let client_metadata_url = self.client_metadata_url.map(|url| expand(&url, "oauth.clientMetadataUrl")).transpose()?;
        if let Some(url) = &client_metadata_url
            && !url.starts_with("https://")
        {
            return Err(format!("`oauth.clientMetadataUrl` must be an https:// URL, got {url:?}"));
        }
        if self.callback_port == Some(0) {
            return Err("`oauth.callbackPort` must be a port number from 1 to 65535".into());
        }
        Ok(OAuthClient { client_id, client_secret, callback_port: self.callback_port, client_metadata_url })
    }
}

impl Entry {
    fn transport(self) -> Result<Transport, String> {
        let kind = match (self.kind.as_deref(), &self.command, &self.url) {
            (Some(kind), _, _) => kind.to_string(),
            (None, Some(_), _) => "stdio".to_string(),
            // A `url` alone is a streamable HTTP server, as Cursor writes it.
            (None, None, Some(_)) => "http".to_string(),
            (None, None, None) => return Err("needs a `command` (stdio) or a `url` (streamable HTTP)".into()),
        };
        match kind.as_str() {
            "stdio" => {
                let command = self.command.map(|c| expand(&c, "command")).transpose()?;
                let command = command.filter(|c| !c.trim().is_empty()).ok_or("a stdio server needs a non-empty `command`")?;
                let args = self.args.iter().map(|arg| expand(arg, "args")).collect::<Result<_, _>>()?;
                let env = expand_values(self.env, "env")?;
                Ok(Transport::Stdio { command, args, env, cwd: self.cwd })
            }
            "http" | "streamable-http" | "streamableHttp" => {
                let url = expand(&self.url.ok_or("an http server needs a `url`")?, "url")?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("`url` must start with http:// or https://, got {url:?}"));
                }
                Ok(Transport::Http { url, headers: expand_values(self.headers, "headers")? })
            }
            "sse" => Err("the SSE transport is not supported; use \"type\": \"http\" (streamable HTTP)".into()),
            other => Err(format!("unknown `type` {other:?}; use \"stdio\" or \"http\"")),
        }
    }
}

fn expand_values(map: BTreeMap<String, String>, field: &str) -> Result<BTreeMap<String, String>, String> {
    map.into_iter().map(|(key, value)| Ok((key, expand(&value, field)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<McpConfig, ConfigError> {
        McpConfig::parse(text, Path::new("servers.json"))
    }

    #[test]
    fn reads_stdio_and_http_servers() {
        let config = parse(
            r#"{ "mcpServers": {
                "files": { "command": "node", "args": ["server.js"], "env": { "K": "v" }, "cwd": "/srv", "disabled": false },
                "tickets": { "type": "http", "url": "https://tickets.example/mcp", "headers": { "Authorization": "Bearer x" }, "alwaysLoad": true }
            } }"#,
        )
        .unwrap();
        assert_eq!(
            config.servers["files"],
            ServerConfig {
                transport: Transport::Stdio {
                    command: "node".into(),
                    args: vec!["server.js".into()],
                    env: [("K".to_string(), "v".to_string())].into(),
                    cwd: Some("/srv".into()),
                },
                always_load: false,
                oauth: OAuthClient::default(),
            }
        );
        assert!(config.servers["tickets"].always_load);
        assert!(
            matches!(&config.servers["tickets"].transport, Transport::Http { url, .. } if url == "https://tickets.example/mcp")
        );
    }

    #[test]
    fn oauth_takes_claude_codes_keys_and_refuses_what_cannot_work() {
        // SAFETY: no other test of this binary reads or writes this variable.
        unsafe { std::env::set_var("EXEC_HOST_TEST_OAUTH_SECRET", "s3cret") };
        let config = parse(
            r#"{ "mcpServers": { "crm": { "type": "http", "url": "https://crm.example/mcp",
                "oauth": { "clientId": "exec-host", "clientSecret": "${EXEC_HOST_TEST_OAUTH_SECRET}", "callbackPort": 8765 } } } }"#,
        )
        .unwrap();
        let oauth = &config.servers["crm"].oauth;
        assert_eq!(*oauth, OAuthClient::registered("exec-host").with_secret("s3cret").with_callback_port(8765));
        assert!(!format!("{oauth:?}").contains("s3cret"), "the secret never reaches a log");
        for (entry, why) in [
            (r#""oauth": {"clientSecret": "x"}"#, "needs the `oauth.clientId`"),
            (r#""oauth": {"clientMetadataUrl": "http://x/doc.json"}"#, "must be an https:// URL"),
            (r#""oauth": {"callbackPort": 0}"#, "port number"),
            (r#""oauth": {"clientID": "x"}"#, "unknown field"),
        ] {
            let text = format!(r#"{{ "mcpServers": {{ "crm": {{ "url": "https://crm.example/mcp", {entry} }} }} }}"#);
            let error = parse(&text).unwrap_err().to_string();
            assert!(error.contains(why), "{entry}: {error}");
        }
        let stdio = parse(r#"{ "mcpServers": { "s": { "command": "x", "oauth": { "clientId": "a" } } } }"#).unwrap_err();
        assert!(stdio.to_string().contains("HTTP servers only"), "{stdio}");
    }

    #[test]
    fn errors_name_the_file_the_key_and_the_line() {
        let err = parse("{ \"mcpServers\": {\n  \"files\": { \"command\": \"node\", \"args\": \"server.js\" }\n} }").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("servers.json: mcpServers.files.args: invalid type: string"), "{text}");
        assert!(text.contains("line 2"), "{text}");
        let err = parse("{ \"mcpServers\": { ").unwrap_err().to_string();
        assert!(err.starts_with("servers.json: ") && err.contains("line 1"), "{err}");
        let err = parse("{}").unwrap_err().to_string();
        assert!(err.contains("it has neither `mcpServers` nor `apis`"), "{err}");
        let err = parse(r#"{"apis": {"gh": {"spec": "gh.json", "baseUrl": "ftp://x"}}}"#).unwrap_err().to_string();
        assert!(err.starts_with("servers.json: API `gh`: `baseUrl`"), "{err}");
        let apis = parse(r#"{"apis": {"gh": {"spec": "gh.json"}, "off": {"spec": "x.json", "disabled": true}}}"#).unwrap().apis;
        assert_eq!(apis.keys().collect::<Vec<_>>(), ["gh"]);
        // A syntax error names no key the reader could not name.
        for text in [r#"{"mcpServers": {},}"#, r#"{"mcpServers": {"a": {"command": "x",}}}"#] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains("trailing comma") && !err.contains('?'), "{err}");
        }
    }

    #[test]
    fn servers_without_a_usable_transport_are_refused() {
        let cases = [
            (r#"{"mcpServers": {"a": {}}}"#, "needs a `command`"),
            (r#"{"mcpServers": {"a": {"type": "http", "url": "ftp://x"}}}"#, "must start with http://"),
            (r#"{"mcpServers": {"a": {"type": "grpc"}}}"#, "unknown `type`"),
            (r#"{"mcpServers": {"a": {"command": "  "}}}"#, "non-empty `command`"),
        ];
        for (text, needle) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.starts_with("servers.json: server `a`: ") && err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn entries_as_other_clients_write_them() {
        let config = parse(
            r#"{"mcpServers": {
                "cursor": {"url": "https://x.example/mcp"},
                "old": {"type": "sse", "url": "https://y.example/sse"},
                "off": {"command": "server", "disabled": true}
            }}"#,
        )
        .unwrap();
        assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["cursor"], "the SSE entry and the disabled one are skipped");
        assert_eq!(
            config.servers["cursor"].transport,
            Transport::Http { url: "https://x.example/mcp".into(), headers: BTreeMap::new() }
        );
    }

    #[test]
    fn environment_variables_are_expanded() {
        // SAFETY: this test alone sets and reads these variable names.
        unsafe {
            std::env::set_var("EXEC_HOST_CONFIG_TEST_TOKEN", "t0k");
            std::env::remove_var("EXEC_HOST_CONFIG_TEST_UNSET");
        }
        let config = parse(
            r#"{"mcpServers": {
                "s": {"command": "${EXEC_HOST_CONFIG_TEST_UNSET:-node}", "args": ["--token=${EXEC_HOST_CONFIG_TEST_TOKEN}", "$HOME", "a$b"],
                      "env": {"T": "${EXEC_HOST_CONFIG_TEST_TOKEN}-x"}},
                "h": {"url": "https://${EXEC_HOST_CONFIG_TEST_UNSET:-h.example}/mcp",
                      "headers": {"Authorization": "Bearer ${EXEC_HOST_CONFIG_TEST_TOKEN}"}}
            }}"#,
        )
        .unwrap();
        let Transport::Stdio { command, args, env, .. } = &config.servers["s"].transport else { panic!() };
        assert_eq!(command, "node");
        assert_eq!(args, &["--token=t0k", "$HOME", "a$b"]);
        assert_eq!(env["T"], "t0k-x");
        let Transport::Http { url, headers } = &config.servers["h"].transport else { panic!() };
        assert_eq!((url.as_str(), headers["Authorization"].as_str()), ("https://h.example/mcp", "Bearer t0k"));
        for (text, needle) in [
            (r#"{"mcpServers": {"s": {"command": "${EXEC_HOST_CONFIG_TEST_UNSET}"}}}"#, "is not set in the environment"),
            (r#"{"mcpServers": {"s": {"command": "x", "args": ["${OPEN"]}}}"#, "without its closing"),
            (r#"{"mcpServers": {"s": {"command": "x", "args": ["${a b}"]}}}"#, "does not name an environment variable"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.starts_with("servers.json: server `s`: ") && err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn ambiguous_server_names_are_refused() {
        for name in ["my__server", "_x", "x_", "a b", "ü", ""] {
            let text = format!(r#"{{"mcpServers": {{"{name}": {{"command": "x"}}}}}}"#);
            assert!(parse(&text).is_err(), "{name:?} was accepted");
        }
        for name in ["files", "my-server", "s3_bucket", "A1"] {
            assert!(check_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn a_server_in_two_files_is_an_error() {
        let a = parse(r#"{"mcpServers": {"s": {"command": "x"}}}"#).unwrap();
        let b = parse(r#"{"mcpServers": {"s": {"command": "y"}, "t": {"command": "z"}}}"#).unwrap();
        let err = McpConfig::merge(vec![("a.json".into(), a.clone()), ("b.json".into(), b)]).unwrap_err();
        assert_eq!(err.to_string(), "server `s` is configured twice (a.json and b.json); server names must be unique");
        assert_eq!(McpConfig::merge(vec![("a.json".into(), a)]).unwrap().servers.len(), 1);
    }
}
