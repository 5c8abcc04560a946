//! `exec-host mcp login`, `logout` and `list`: signing in to the configured MCP servers that
//! ask for OAuth, and what each configured server is.

use std::process::ExitCode;
use std::time::Duration;

use exec_host::mcp::{CredentialsFile, LoggedIn, Login, ServerState, SignIn, Transport};
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

fn server<'a>(config: &'a SessionConfig, name: &str) -> Result<&'a exec_host::mcp::ServerConfig, UsageError> {
    config.mcp.servers.get(name).ok_or_else(|| {
        let known: Vec<&str> = config.mcp.servers.keys().map(String::as_str).collect();
        let known = if known.is_empty() { "none is configured (pass --mcp-config FILE)".to_string() } else { known.join(", ") };
        UsageError(format!("no MCP server is named `{name}`; the configured ones: {known}"))
    })
}

/// `exec-host mcp login NAME`.
pub(crate) fn login(config: SessionConfig, name: &str, wait: u64) -> Result<ExitCode, UsageError> {
    let server = server(&config, name)?;
    let credentials = credentials(&config)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let login = Login::browser_or_print().with_wait(Duration::from_secs(wait));
    let outcome = runtime.block_on(async {
        let signal = CancellationToken::new();
        cancel_on_stop_signals(signal.clone())?;
        Ok::<_, UsageError>(tokio::select! {
            outcome = exec_host::mcp::log_in(name, server, credentials, &login, config.mcp_connect_timeout) => Some(outcome),
            _ = signal.cancelled() => None,
        })
    })?;
    match outcome {
        None => Err(UsageError("stopped by a signal before the sign-in finished".into())),
        Some(Ok(LoggedIn::SignedIn)) => {
            eprintln!("exec-host: signed in to `{name}`; its tokens are kept in {}", credentials.path().display());
            Ok(ExitCode::SUCCESS)
        }
        Some(Ok(_)) => {
            eprintln!("exec-host: `{name}` answered without asking for a sign-in; nothing was kept");
            Ok(ExitCode::SUCCESS)
        }
        Some(Err(reason)) => {
            eprintln!("exec-host: cannot sign in to `{name}`: {}", terminal::err(&error_sentence(&reason)));
            Ok(ExitCode::from(1))
        }
    }
}

/// `exec-host mcp logout NAME`.
pub(crate) fn logout(config: SessionConfig, name: &str) -> Result<ExitCode, UsageError> {
    let credentials = credentials(&config)?;
    match credentials.forget(name) {
        Ok(true) => eprintln!("exec-host: signed out of `{name}`: its tokens are removed from {}", credentials.path().display()),
        Ok(false) => eprintln!("exec-host: `{name}` was not signed in"),
        Err(reason) => return Err(UsageError(error_sentence(&reason))),
    }
    Ok(ExitCode::SUCCESS)
}

/// `exec-host mcp list`: starts the servers as `run` would (without sending anyone to sign
/// in) and says what each is.
pub(crate) fn list(config: SessionConfig, as_json: bool) -> Result<ExitCode, UsageError> {
    let servers = config.mcp.servers.clone();
    if servers.is_empty() {
        eprintln!("exec-host: no MCP server is configured (pass --mcp-config FILE)");
        return Ok(ExitCode::SUCCESS);
    }
    let credentials = config.mcp_credentials.clone();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (states, failures) = runtime.block_on(async {
        let abort = CancellationToken::new();
        cancel_on_stop_signals(abort.clone())?;
        let start = Start { login: false, ..Start::for_the_author(approve::for_this_process()) };
        let sandbox = SandboxOptions::default().with_max_concurrent_execs(1);
        let Some(session) = start_session(config, sandbox, Limits::default(), start, &abort, false).await? else {
            return Err(UsageError("stopped by a signal before the servers were listed".into()));
        };
        let states = session.server_states();
        let failures: Vec<(String, String)> =
            session.start_failures().iter().map(|failure| (failure.server.clone(), failure.reason())).collect();
        session.shutdown().await;
        Ok::<_, UsageError>((states, failures))
    })?;
    for (name, server) in &servers {
        let (transport, url) = match &server.transport {
            Transport::Stdio { command, args, .. } => {
                (format!("stdio: {}", [command.clone()].iter().chain(args).cloned().collect::<Vec<_>>().join(" ")), None)
            }
            Transport::Http { url, .. } => (format!("http: {url}"), Some(url.as_str())),
            _ => ("unknown".to_string(), None),
        };
        let state = states.iter().find(|(server, _)| server == name).map(|(_, state)| state);
        let (connected, tools, why) = match (state, failures.iter().find(|(server, _)| server == name)) {
            (Some(ServerState::Connected { tools }), _) => (true, Some(*tools), None),
            (Some(ServerState::Disconnected { reason }), _) => (false, None, Some(reason.clone())),
            (_, Some((_, reason))) => (false, None, Some(reason.clone())),
            _ => (false, None, Some("it did not start".to_string())),
        };
        let signed_in = match (url, &credentials) {
            (Some(url), Some(credentials)) => match credentials.sign_in(name, url) {
                Ok(SignIn::SignedIn) => Some("signed in"),
                Ok(SignIn::OtherUrl) => Some("signed in for another URL (sign in again)"),
                Ok(_) => Some("not signed in"),
                Err(_) => Some("credentials unreadable"),
            },
            _ => None,
        };
        if as_json {
            let line = json!({"name": name, "transport": transport, "connected": connected, "tools": tools,
                              "error": why, "signIn": signed_in});
            terminal::println(&line.to_string());
        } else {
            let status = match (tools, &why) {
                (Some(tools), _) => format!("connected, {tools} tools"),
                (None, Some(why)) => format!("not connected: {why}"),
                (None, None) => "not connected".to_string(),
            };
            let sign_in = signed_in.map(|s| format!(", {s}")).unwrap_or_default();
            terminal::println(&terminal::out(&format!("{name}  {transport}  {status}{sign_in}")));
        }
    }
    Ok(ExitCode::SUCCESS)
}
