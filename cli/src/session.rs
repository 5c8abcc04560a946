//! The session of one invocation: how it starts, who answers the calls that must ask, and
//! the signals that stop it.

use std::sync::Arc;

use exec_host::results::{DIRECTORY_STORE_FILES, DirectoryResultStore};
use exec_host::settings::PermissionMode;
use exec_host::state::SealedStore;
use exec_host::{CancellationToken, Limits, SandboxOptions, Session, ValueBounds};

use crate::config::SessionConfig;
use crate::{UsageError, approve, terminal};

/// How a session starts: its permission mode unless one is given, and who answers the calls
/// that must ask.
pub(crate) struct Start {
    pub(crate) mode: PermissionMode,
    pub(crate) approver: Arc<dyn exec_host::Approver>,
    /// Where Execs park (opened), and the conversation they belong to, when they may.
    pub(crate) store: Option<(SealedStore, Option<String>)>,
    /// How long this host's claim on an Exec it runs after it yielded lasts.
    pub(crate) running_lease: std::time::Duration,
    /// What the values scripts keep with `store()` may take.
    pub(crate) values: ValueBounds,
    /// Whether a person can be sent to sign in to an HTTP MCP server that asks for it.
    pub(crate) login: bool,
    /// Who answers an MCP server that asks for input during a call.
    pub(crate) input: Option<Arc<dyn exec_host::mcp::input::InputHandler>>,
}

impl Start {
    /// `run`, `tools`, `search`: the script's author is the one running it, at a terminal
    /// when there is one.
    pub(crate) fn for_the_author(approver: Arc<dyn exec_host::Approver>) -> Self {
        Start {
            mode: PermissionMode::BypassPermissions,
            approver,
            store: None,
            values: ValueBounds::default(),
            running_lease: exec_host::DEFAULT_RUNNING_LEASE,
            login: can_send_to_sign_in(),
            input: crate::input::for_this_process(false),
        }
    }

    /// `serve`: scripts come from a model, and the MCP client is asked.
    pub(crate) fn for_a_model(approver: Arc<dyn exec_host::Approver>) -> Self {
        Start {
            mode: PermissionMode::Default,
            approver,
            store: None,
            values: ValueBounds::default(),
            running_lease: exec_host::DEFAULT_RUNNING_LEASE,
            login: false,
            input: None,
        }
    }
}

/// A person can be sent to an authorization URL from here: there is a browser to open it
/// with (`$BROWSER`), or a terminal to show it on.
pub(crate) fn can_send_to_sign_in() -> bool {
    use std::io::IsTerminal as _;
    std::env::var_os("BROWSER").is_some_and(|browser| !browser.is_empty()) || std::io::stderr().is_terminal()
}

/// The session of one invocation: its tools, settings and servers; a server that cannot
/// start is reported once (when `report_failures`) and the others go on.
pub(crate) async fn start_session(
    config: SessionConfig,
    sandbox: SandboxOptions,
    limits: Limits,
    start: Start,
    abort: &CancellationToken,
    report_failures: bool,
) -> Result<Option<Session>, UsageError> {
    let explicit_mode = config.permission_mode;
    let mut builder = Session::builder()
        .workspace(&config.workspace)
        .standard_settings(&config.settings, Some(config.rules))
        .mcp_servers(config.mcp)
        .read_only_files(config.mcp_files)
        .private_places(config.private)
        .mcp_connect_timeout(config.mcp_connect_timeout)
        .mcp_credentials(config.mcp_credentials)
        .sandbox_options(sandbox)
        .limits(limits)
        .starting_permission_mode(start.mode)
        .approver(start.approver)
        .value_bounds(start.values);
    if let Some(mode) = explicit_mode {
        builder = builder.permission_mode(mode);
    }
    if start.login {
        builder = builder.mcp_login(exec_host::mcp::Login::browser_or_print());
    }
    if let Some(input) = start.input {
        builder = builder.mcp_input(input);
    }
    if let Some((store, conversation)) = start.store {
        builder = builder.state_store(store).running_lease(start.running_lease);
        if let Some(conversation) = conversation {
            builder = builder.conversation(conversation);
        }
    }
    if let Some(dir) = exec_host::results::default_dir() {
        builder = builder.result_store(Arc::new(DirectoryResultStore::new(dir, DIRECTORY_STORE_FILES)));
    }
    let session = tokio::select! {
        session = builder.build() => session.map_err(UsageError::from)?,
        _ = abort.cancelled() => return Ok(None),
    };
    if explicit_mode == Some(PermissionMode::BypassPermissions)
        && session.permission_mode().map_err(UsageError::from)? != PermissionMode::BypassPermissions
    {
        session.shutdown().await;
        return Err(UsageError("the permission mode bypassPermissions is disabled by the managed settings".into()));
    }
    for failure in session.start_failures().iter().filter(|_| report_failures) {
        eprintln!("exec-host: warning: {}", terminal::err(&exec_host::error_sentence(failure)));
    }
    if report_failures && !session.start_failures().is_empty() {
        eprintln!("exec-host: `exec-host doctor` with the same flags checks each server and the rest of the set-up");
    }
    Ok(Some(session))
}

/// Cancels `abort` on the first SIGINT (Ctrl-C), SIGTERM or SIGHUP (the terminal went
/// away): the script is aborted and the MCP servers are shut down, never left behind.
pub(crate) fn cancel_on_stop_signals(abort: CancellationToken) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
        abort.cancel();
    });
    Ok(())
}

/// Starts the session, hands it to `report`, then closes its servers.
pub(crate) fn with_session<T>(
    config: SessionConfig,
    report: impl AsyncFnOnce(&Session) -> Result<T, UsageError>,
) -> Result<T, UsageError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let sandbox = SandboxOptions::default().with_max_concurrent_execs(1);
        let abort = CancellationToken::new();
        cancel_on_stop_signals(abort.clone())?;
        let Some(session) =
            start_session(config, sandbox, Limits::default(), Start::for_the_author(approve::for_this_process()), &abort, true)
                .await?
        else {
            return Err(UsageError("stopped by a signal before the tools were listed".into()));
        };
        let result = report(&session).await;
        session.shutdown().await;
        result
    })
}
