//! The flags resolved into what the commands read: one config per command, the files the
//! flags name read and checked, every mistake one sentence.

use std::path::{Path, PathBuf};
use std::time::Duration;

use exec_host::mcp::McpConfig;
use exec_host::settings::{Layer, PermissionMode};
use exec_host::{Limits, SandboxOptions, ValueBounds};

use crate::UsageError;
use crate::flags::{ExecFlags, LimitFlags, ResumeFlags, RunFlags, ServeFlags, SessionFlags, StateFlags};
use crate::park::{Answers, OnAsk, StoreConfig};
use crate::serve;

/// Where the tools of one invocation come from, resolved from [`SessionFlags`].
pub(crate) struct SessionConfig {
    pub(crate) workspace: PathBuf,
    pub(crate) mcp: McpConfig,
    /// The files `mcp` was read from (the workspace tools may not write them).
    pub(crate) mcp_files: Vec<PathBuf>,
    pub(crate) mcp_connect_timeout: Duration,
    /// Where the OAuth tokens of HTTP servers are kept.
    pub(crate) mcp_credentials: Option<exec_host::mcp::CredentialsFile>,
    pub(crate) settings: Vec<PathBuf>,
    /// The rules given as flags.
    pub(crate) rules: Layer,
    pub(crate) permission_mode: Option<PermissionMode>,
    /// Places of this host a command may never read: the state store's folder and key, the
    /// token file.
    pub(crate) private: Vec<PathBuf>,
}

/// How one Exec runs and is shown, resolved from the flags (`run` and `resume`).
pub(crate) struct ExecConfig {
    pub(crate) session: SessionConfig,
    pub(crate) limits: Limits,
    pub(crate) json: bool,
    pub(crate) quiet: bool,
    pub(crate) sandbox: SandboxOptions,
    pub(crate) on_ask: Option<OnAsk>,
    /// Servers' input requests get their forms' defaults (`--accept-input-defaults`).
    pub(crate) accept_input_defaults: bool,
    /// Where Execs park: set when they may.
    pub(crate) store: Option<StoreConfig>,
    /// What the values scripts keep with `store()` may take.
    pub(crate) values: ValueBounds,
}

/// Everything `run` needs, resolved from the flags.
pub(crate) struct RunConfig {
    pub(crate) code: String,
    pub(crate) exec: ExecConfig,
}

/// Everything `resume` needs, resolved from the flags.
pub(crate) struct ResumeConfig {
    /// The handle of `CONVERSATION/HANDLE` (the conversation is the store's).
    pub(crate) handle: String,
    pub(crate) answers: Answers,
    pub(crate) exec: ExecConfig,
}

/// Everything `serve` needs, resolved from the flags.
pub(crate) struct ServeConfig {
    pub(crate) session: SessionConfig,
    pub(crate) limits: Limits,
    pub(crate) sandbox: SandboxOptions,
    pub(crate) concurrency: u32,
    pub(crate) client_concurrency: u32,
    pub(crate) max_message_bytes: usize,
    /// `None`: stdio.
    pub(crate) http: Option<serve::http::HttpOptions>,
    /// Where Execs park (approvals of 2026-07-28 clients) and kept values live; `explicit`
    /// when the flags named it.
    pub(crate) store: StoreConfig,
    pub(crate) store_explicit: bool,
    pub(crate) values: ValueBounds,
}

pub(crate) fn resolve(flags: RunFlags) -> Result<RunConfig, UsageError> {
    let code = match (&flags.eval, &flags.script) {
        (Some(code), _) if code.trim().is_empty() => {
            return Err(UsageError("the code given with -e is empty; there is nothing to run".into()));
        }
        (Some(code), _) => code.clone(),
        (None, Some(script)) => {
            let code = read_script(script)?;
            if code.trim().is_empty() {
                return Err(UsageError(format!("the script {} is empty; there is nothing to run", shown(script))));
            }
            code
        }
        (None, None) => return Err(UsageError("give a script file, `-` for standard input, or -e CODE".into())),
    };
    // A store is opened only when an Exec may park: `--on-ask park`, or a store named.
    let parks =
        flags.exec.on_ask == Some(OnAsk::Park) || flags.exec.state.places.state_store.is_some() || flags.conversation.is_some();
    let exec = resolve_exec(flags.exec, parks.then_some(flags.conversation))?;
    Ok(RunConfig { code, exec })
}

pub(crate) fn resolve_resume(flags: ResumeFlags) -> Result<ResumeConfig, UsageError> {
    let answers = Answers::parse(&flags.approve, &flags.approve_always, &flags.deny)?;
    let Some((conversation, handle)) = flags.handle.split_once('/') else {
        return Err(UsageError(format!(
            "{:?} is not a parked Exec's name: `exec-host run` prints it as CONVERSATION/HANDLE",
            flags.handle
        )));
    };
    let exec = resolve_exec(flags.exec, Some(Some(conversation.to_string())))?;
    Ok(ResumeConfig { handle: handle.to_string(), answers, exec })
}

/// `flags` resolved; `store` is `Some(conversation)` when Execs may park (in that
/// conversation, or a new one).
fn resolve_exec(flags: ExecFlags, store: Option<Option<String>>) -> Result<ExecConfig, UsageError> {
    let state = flags.state;
    let values = resolve_value_bounds(&state)?;
    let store = store.map(|conversation| StoreConfig {
        places: state.places.places(),
        conversation,
        running_lease: std::time::Duration::from_secs(state.running_lease),
    });
    let mut session = resolve_session(flags.session)?;
    session.private.extend(store.iter().flat_map(StoreConfig::private_places));
    Ok(ExecConfig {
        session,
        limits: resolve_limits(&flags.limits)?,
        json: flags.json,
        quiet: flags.quiet,
        sandbox: flags.sandbox.options(),
        on_ask: flags.on_ask,
        accept_input_defaults: flags.accept_input_defaults,
        store,
        values,
    })
}

/// The bounds of kept values the flags set.
fn resolve_value_bounds(state: &StateFlags) -> Result<ValueBounds, UsageError> {
    let most = exec_host::state::MAX_CONVERSATION_VALUE_BYTES;
    if state.max_stored_bytes > most {
        return Err(UsageError(format!(
            "--max-stored-bytes {} is more than a conversation's values can take ({most} bytes: they are kept as one entry)",
            state.max_stored_bytes
        )));
    }
    Ok(ValueBounds::default()
        .with_value_bytes(state.max_stored_value_bytes)
        .with_keys(state.max_stored_keys)
        .with_bytes(state.max_stored_bytes))
}

/// The conversation of `serve`'s Execs: its clients are one principal (they hold its token),
/// and a parked Exec's handle travels sealed to the client that made it.
const SERVE_CONVERSATION: &str = "serve";

pub(crate) fn resolve_serve(flags: ServeFlags) -> Result<ServeConfig, UsageError> {
    let http = match &flags.http {
        None => None,
        Some(addr) => Some(resolve_http(addr, &flags)?),
    };
    if flags.concurrency == 0 || flags.client_concurrency == 0 || flags.max_body_bytes == 0 {
        return Err(UsageError("--concurrency, --client-concurrency and --max-body-bytes must be at least 1".into()));
    }
    let mut session = resolve_session(flags.session)?;
    let limits = resolve_limits(&flags.limits)?;
    let values = resolve_value_bounds(&flags.state)?;
    let store_explicit = flags.state.places.state_store.is_some() || flags.state.places.state_key_file.is_some();
    if flags.stateless && !flags.state.places.state_store.as_deref().is_some_and(|store| store.starts_with("redis")) {
        tracing::warn!(
            "--stateless without --state-store redis://...: replicas keep parked Execs apart, so an approval's retry must reach the replica that asked"
        );
    }
    let store = StoreConfig {
        places: flags.state.places.places(),
        conversation: Some(SERVE_CONVERSATION.to_string()),
        running_lease: std::time::Duration::from_secs(flags.state.running_lease),
    };
    session.private.extend(store.private_places());
    session.private.extend(flags.auth_token_file.clone());
    Ok(ServeConfig {
        session,
        limits,
        sandbox: flags.sandbox.options(),
        concurrency: flags.concurrency,
        client_concurrency: flags.client_concurrency.min(flags.concurrency),
        max_message_bytes: flags.max_body_bytes,
        http,
        store,
        store_explicit,
        values,
    })
}

/// The HTTP service's options: the address (a port alone is on 127.0.0.1), the token (read
/// now, required off loopback), the bounds.
pub(crate) fn resolve_http(addr: &str, flags: &ServeFlags) -> Result<serve::http::HttpOptions, UsageError> {
    let addr: std::net::SocketAddr = match addr.parse::<u16>() {
        Ok(port) => std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Err(_) => addr.parse().map_err(|_| {
            UsageError(format!("--http {addr:?} is not an address: give HOST:PORT (127.0.0.1:8080, [::1]:8080) or a port"))
        })?,
    };
    let token = match &flags.auth_token_file {
        None => None,
        Some(file) => Some(read_token(file)?),
    };
    if token.is_none() && !addr.ip().is_loopback() {
        return Err(UsageError(format!(
            "--http {addr} is reachable from other machines: give --auth-token-file FILE so that only holders of the token can call it"
        )));
    }
    for origin in &flags.allow_origin {
        if !origin.contains("://") && origin != "null" {
            return Err(UsageError(format!("--allow-origin {origin:?} needs a scheme, as in https://{origin}")));
        }
    }
    if flags.max_sessions == 0 {
        return Err(UsageError("--max-sessions must be at least 1".into()));
    }
    Ok(serve::http::HttpOptions {
        addr,
        token,
        allowed_origins: flags.allow_origin.clone(),
        allowed_hosts: flags.allow_host.clone(),
        max_body_bytes: flags.max_body_bytes,
        max_sessions: flags.max_sessions,
        stateless: flags.stateless,
        grace: Duration::from_secs(flags.grace),
    })
}

/// Bytes of a token file read: a token is short; anything longer is not one.
pub(crate) const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// The bearer token in `file`: its text without surrounding whitespace; never empty.
pub(crate) fn read_token(file: &Path) -> Result<String, UsageError> {
    let text = exec_host::text_file::read_text(file, MAX_TOKEN_FILE_BYTES)
        .map_err(|e| UsageError(format!("the token file {} {}", shown(file), exec_host::error_sentence(&e))))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(UsageError(format!("the token file {} is empty", shown(file))));
    }
    // What an `Authorization` header can carry of it, byte for byte.
    if !token.bytes().all(|byte| byte.is_ascii_graphic()) {
        return Err(UsageError(format!(
            "the token in {} must be printable ASCII without spaces, as a bearer token is sent",
            shown(file)
        )));
    }
    Ok(token.to_string())
}

pub(crate) fn resolve_limits(flags: &LimitFlags) -> Result<Limits, UsageError> {
    let limits = Limits::default()
        .with_budget(Duration::from_millis(flags.budget_ms))
        .with_max_calls(flags.max_calls)
        .with_max_log_chars(flags.max_log_chars)
        .with_max_result_chars(flags.max_result_chars)
        .with_max_images(flags.max_images)
        .with_max_memory_bytes(flags.max_memory_mib.saturating_mul(1024 * 1024))
        .with_max_nested_wait(flags.max_nested_wait_ms.map(Duration::from_millis));
    limits.check().map_err(|why| UsageError(format!("invalid limits: {why}")))?;
    Ok(limits)
}

/// A rule of `--allow`, `--ask` or `--deny` that is not one, said with its flag.
pub(crate) fn command_line_rule_error(error: exec_host::settings::SettingsError) -> String {
    let list = error.key.as_deref().and_then(|key| key.strip_prefix("permissions.")).and_then(|key| key.split('[').next());
    match list {
        Some(list @ ("allow" | "ask" | "deny")) => format!("--{list}: {}", error.reason),
        _ => exec_host::error_sentence(&error),
    }
}

pub(crate) fn resolve_session(flags: SessionFlags) -> Result<SessionConfig, UsageError> {
    match std::fs::metadata(&flags.workspace) {
        Err(_) => return Err(UsageError(format!("the workspace {} does not exist", flags.workspace.display()))),
        Ok(metadata) if !metadata.is_dir() => {
            return Err(UsageError(format!("the workspace {} is not a directory", flags.workspace.display())));
        }
        Ok(_) => {}
    }
    let mcp_files = flags.mcp_config.iter().map(|file| Ok((file.clone(), McpConfig::load(file)?)));
    let mcp = McpConfig::merge(mcp_files.collect::<Result<_, exec_host::mcp::ConfigError>>()?)?;
    for file in &flags.settings {
        if file.is_dir() {
            return Err(UsageError(format!("the settings file {} is a directory", file.display())));
        }
        if !file.exists() {
            return Err(UsageError(format!("the settings file {} does not exist", file.display())));
        }
    }
    let mut rules =
        Layer::from_rules(&flags.allow, &flags.ask, &flags.deny).map_err(|e| UsageError(command_line_rule_error(e)))?;
    if flags.enable_bash {
        rules = rules.enabling_bash();
    }
    // Scripts read the workspace's files: the tokens are never kept where it reaches.
    let mcp_credentials = flags
        .mcp_credentials
        .or_else(exec_host::mcp::CredentialsFile::default_path)
        .map(|file| exec_host::mcp::CredentialsFile::at(file).kept_out_of(&flags.workspace));
    Ok(SessionConfig {
        workspace: flags.workspace,
        mcp,
        mcp_files: flags.mcp_config,
        mcp_connect_timeout: Duration::from_millis(flags.mcp_connect_timeout_ms),
        mcp_credentials,
        settings: flags.settings,
        rules,
        permission_mode: flags.permission_mode,
        private: Vec::new(),
    })
}

pub(crate) fn shown(path: &Path) -> String {
    if path == Path::new("-") { "on standard input".into() } else { path.display().to_string() }
}

pub(crate) fn read_script(path: &Path) -> Result<String, UsageError> {
    use exec_host::text_file::{MAX_SCRIPT_FILE_BYTES, bounded_text, read_text};
    let read = if path == Path::new("-") {
        bounded_text(std::io::stdin().lock(), MAX_SCRIPT_FILE_BYTES)
    } else {
        read_text(path, MAX_SCRIPT_FILE_BYTES)
    };
    read.map_err(|e| UsageError(format!("the script {} {}", shown(path), exec_host::error_sentence(&e))))
}
