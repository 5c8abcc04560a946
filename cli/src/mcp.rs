//! `exec-host mcp login`, `logout` and `list`: signing in to the configured MCP servers that
//! ask for OAuth and the APIs a person signs in to, and what each configured one is.

use std::process::ExitCode;
use std::time::Duration;

use exec_host::mcp::{CredentialsFile, Holder, LoggedIn, Login, ServerConfig, ServerState, SignIn, Transport};
use exec_host::openapi::{ApiConfig, SpecPlace};
use exec_host::{CancellationToken, Limits, SandboxOptions, error_sentence};
use serde_json::json;

use crate::config::SessionConfig;
use crate::session::{Start, cancel_on_stop_signals, start_session};
use crate::{UsageError, approve, terminal};

/// The credentials file `login` and `logout` change: never one the workspace reaches.
fn credentials(config: &SessionConfig) -> Result<&CredentialsFile, UsageError> {
    let file = config
        .mcp_credentials
        .as_ref()
        .ok_or_else(|| UsageError("there is no home folder to keep credentials in: name a file with --mcp-credentials".into()))?;
    file.check_place().map_err(|e| UsageError(format!("{e} (give --mcp-credentials elsewhere)")))?;
    Ok(file)
}

/// What `login` signs in to.
enum Target<'a> {
    Server(&'a ServerConfig),
    Api(&'a ApiConfig),
}

/// The server or API `name` (the API when `api`); an MCP server and an API may share a name,
/// and then `--api` says which.
fn target<'a>(config: &'a SessionConfig, name: &str, api: bool) -> Result<Target<'a>, UsageError> {
    let (servers, apis) = (&config.mcp.servers, &config.mcp.apis);
    match (servers.get(name), apis.get(name)) {
        (_, Some(found)) if api => Ok(Target::Api(found)),
        (Some(_), Some(_)) => Err(UsageError(format!(
            "an MCP server and an API are both named `{name}`: this signs in to the server; add --api for the API"
        ))),
        (Some(found), None) if !api => Ok(Target::Server(found)),
        (None, Some(found)) => Ok(Target::Api(found)),
        _ => {
            let known = |names: Vec<&String>| match names.is_empty() {
                true => "none".to_string(),
                false => names.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", "),
            };
            let (what, hint) = if api { ("API", "") } else { ("MCP server or API", " (pass --mcp-config FILE)") };
            Err(UsageError(format!(
                "no {what} is named `{name}`{hint}; the configured servers: {}; the configured APIs: {}",
                known(servers.keys().collect()),
                known(apis.keys().collect())
            )))
        }
    }
}

/// `exec-host mcp login NAME`.
pub(crate) fn login(config: SessionConfig, name: &str, api: bool, wait: u64) -> Result<ExitCode, UsageError> {
    let target = target(&config, name, api)?;
    let credentials = credentials(&config)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let login = Login::browser_or_print().with_wait(Duration::from_secs(wait));
    let outcome = runtime.block_on(async {
        let signal = CancellationToken::new();
        cancel_on_stop_signals(signal.clone())?;
        let signing_in = async {
            match target {
                Target::Server(server) => exec_host::mcp::log_in(name, server, credentials, &login, config.mcp_connect_timeout)
                    .await
                    .map_err(|reason| error_sentence(&reason)),
                Target::Api(api) => exec_host::openapi::log_in(name, api, credentials, &login)
                    .await
                    .map(|()| LoggedIn::SignedIn)
                    .map_err(|reason| reason.why),
            }
        };
        Ok::<_, UsageError>(tokio::select! {
            outcome = signing_in => Some(outcome),
            _ = signal.cancelled() => None,
        })
    })?;
    let what = match target {
        Target::Server(_) => Holder::Server(name.to_string()),
        Target::Api(_) => Holder::Api(name.to_string()),
    };
    match outcome {
        None => Err(UsageError("stopped by a signal before the sign-in finished".into())),
        Some(Ok(LoggedIn::SignedIn)) => {
            eprintln!("exec-host: signed in to {what}; its tokens are kept in {}", credentials.path().display());
            Ok(ExitCode::SUCCESS)
        }
        Some(Ok(_)) => {
            eprintln!("exec-host: {what} answered without asking for a sign-in; nothing was kept");
            Ok(ExitCode::SUCCESS)
        }
        Some(Err(reason)) => {
            eprintln!("exec-host: cannot sign in to {what}: {}", terminal::err(&reason));
            Ok(ExitCode::from(1))
        }
    }
}

/// `exec-host mcp logout NAME`: forgets the tokens of the server NAME, or of the API NAME
/// (with `api`, or when only an API of that name is configured). The entry need not be
/// configured any more.
pub(crate) fn logout(config: SessionConfig, name: &str, api: bool) -> Result<ExitCode, UsageError> {
    let credentials = credentials(&config)?;
    let only_an_api = config.mcp.apis.contains_key(name) && !config.mcp.servers.contains_key(name);
    let holder = if api || only_an_api { Holder::Api(name.to_string()) } else { Holder::Server(name.to_string()) };
    match credentials.forget(&holder) {
        Ok(true) => eprintln!("exec-host: signed out of {holder}: its tokens are removed from {}", credentials.path().display()),
        Ok(false) => eprintln!("exec-host: {holder} was not signed in"),
        Err(reason) => return Err(UsageError(error_sentence(&reason))),
    }
    Ok(ExitCode::SUCCESS)
}

/// What one configured server is: how it is reached, its tool count when it started, why
/// not when it did not, and whether it is signed in (HTTP servers).
pub(crate) struct ServerRow {
    pub(crate) name: String,
    pub(crate) transport: String,
    pub(crate) tools: Option<usize>,
    pub(crate) error: Option<String>,
    pub(crate) signed_in: Option<&'static str>,
}

/// What one configured API is: where its description is, how many operations it offers,
/// and whether it is signed in (one a person signs in to).
pub(crate) struct ApiRow {
    pub(crate) name: String,
    pub(crate) spec: String,
    pub(crate) operations: usize,
    pub(crate) signed_in: Option<&'static str>,
}

/// Every configured server and API, as `session` (started from that configuration) found
/// them: what `mcp list` prints and `doctor` checks.
pub(crate) struct Inventory {
    pub(crate) servers: Vec<ServerRow>,
    pub(crate) apis: Vec<ApiRow>,
}

pub(crate) async fn inventory(
    session: &exec_host::Session,
    servers: &std::collections::BTreeMap<String, ServerConfig>,
    apis: &std::collections::BTreeMap<String, ApiConfig>,
    credentials: Option<&CredentialsFile>,
) -> Inventory {
    let states = session.server_states();
    let failures: Vec<(String, String)> =
        session.start_failures().iter().map(|failure| (failure.server.clone(), failure.reason())).collect();
    let pool = session.pool().ok();
    let operations = |api: &str| {
        pool.as_ref().map_or(0, |pool| pool.available().filter(|tool| tool.name.starts_with(&format!("api__{api}__"))).count())
    };
    let mut rows = Vec::new();
    for (name, server) in servers {
        let (transport, url) = match &server.transport {
            Transport::Stdio { command, args, .. } => {
                (format!("stdio: {}", [command.clone()].iter().chain(args).cloned().collect::<Vec<_>>().join(" ")), None)
            }
            Transport::Http { url, .. } => (format!("http: {url}"), Some(url.as_str())),
            _ => ("unknown".to_string(), None),
        };
        let state = states.iter().find(|(server, _)| server == name).map(|(_, state)| state);
        let (tools, error) = match (state, failures.iter().find(|(server, _)| server == name)) {
            (Some(ServerState::Connected { tools }), _) => (Some(*tools), None),
            (Some(ServerState::Disconnected { reason }), _) => (None, Some(reason.clone())),
            (_, Some((_, reason))) => (None, Some(reason.clone())),
            _ => (None, Some("it did not start".to_string())),
        };
        let signed_in = match (url, credentials) {
            (Some(url), Some(credentials)) => match credentials.sign_in(&Holder::Server(name.clone()), url) {
                Ok(state) => Some(sign_in_words(state)),
                Err(_) => Some("credentials unreadable"),
            },
            _ => None,
        };
        rows.push(ServerRow { name: name.clone(), transport, tools, error, signed_in });
    }
    let mut api_rows = Vec::new();
    for (name, api) in apis {
        let spec = match &api.spec {
            SpecPlace::File(file) => file.display().to_string(),
            SpecPlace::Url(url) => url.clone(),
        };
        let signed_in = match credentials {
            Some(credentials) => match exec_host::openapi::sign_in_state(name, api, credentials).await {
                Ok(Some(state)) => Some(sign_in_words(state)),
                Ok(None) => None,
                Err(_) => Some("credentials unreadable"),
            },
            None => None,
        };
        api_rows.push(ApiRow { name: name.clone(), spec, operations: operations(name), signed_in });
    }
    Inventory { servers: rows, apis: api_rows }
}

/// `exec-host mcp list`: starts the servers as `run` would (without sending anyone to sign
/// in) and says what each is.
pub(crate) fn list(config: SessionConfig, as_json: bool) -> Result<ExitCode, UsageError> {
    let servers = config.mcp.servers.clone();
    let apis = config.mcp.apis.clone();
    if servers.is_empty() && apis.is_empty() {
        eprintln!("exec-host: no MCP server or API is configured (pass --mcp-config FILE)");
        return Ok(ExitCode::SUCCESS);
    }
    let credentials = config.mcp_credentials.clone();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let inventory = runtime.block_on(async {
        let abort = CancellationToken::new();
        cancel_on_stop_signals(abort.clone())?;
        let start = Start { login: false, ..Start::for_the_author(approve::for_this_process()) };
        let sandbox = SandboxOptions::default().with_max_concurrent_execs(1);
        let Some(session) = start_session(config, sandbox, Limits::default(), start, &abort, false).await? else {
            return Err(UsageError("stopped by a signal before the servers were listed".into()));
        };
        let inventory = inventory(&session, &servers, &apis, credentials.as_ref()).await;
        session.shutdown().await;
        Ok::<_, UsageError>(inventory)
    })?;
    for server in inventory.servers {
        if as_json {
            let line = json!({"name": server.name, "transport": server.transport, "connected": server.tools.is_some(),
                              "tools": server.tools, "error": server.error, "signIn": server.signed_in});
            terminal::println(&line.to_string());
        } else {
            let status = match (server.tools, &server.error) {
                (Some(tools), _) => format!("connected, {tools} tools"),
                (None, Some(why)) => format!("not connected: {why}"),
                (None, None) => "not connected".to_string(),
            };
            let sign_in = server.signed_in.map(|s| format!(", {s}")).unwrap_or_default();
            terminal::println(&terminal::out(&format!("{}  {}  {status}{sign_in}", server.name, server.transport)));
        }
    }
    for api in inventory.apis {
        if as_json {
            let line = json!({"name": api.name, "api": api.spec, "operations": api.operations, "signIn": api.signed_in});
            terminal::println(&line.to_string());
        } else {
            let sign_in = api.signed_in.map(|s| format!(", {s}")).unwrap_or_default();
            terminal::println(&terminal::out(&format!(
                "{}  api: {}  {} operations{sign_in}",
                api.name, api.spec, api.operations
            )));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How `list` says whether a server or an API is signed in.
fn sign_in_words(state: SignIn) -> &'static str {
    match state {
        SignIn::SignedIn => "signed in",
        SignIn::OtherUrl => "signed in for another URL (sign in again)",
        _ => "not signed in",
    }
}
