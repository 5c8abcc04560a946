//! `exec-host doctor`: what works on this machine and why not, one check per line. It sets
//! up what `run` and `serve` set up, from the same flags, and reports each part instead of
//! stopping at the first that fails: the guest and its compiled cache, each layer of
//! `Bash`'s confinement, each configured MCP server and API, the state store, and the
//! settings files in force with the warnings they raise.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use exec_host::command::{CommandError, LayerReport};
use exec_host::state::StorePlaces;
use exec_host::{CancellationToken, Limits, error_sentence};
use serde_json::json;

use crate::config::{SessionConfig, resolve_session, shown};
use crate::flags::DoctorFlags;
use crate::session::{Start, cancel_on_stop_signals, start_session};
use crate::{UsageError, approve, mcp, terminal};

/// How one check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok,
    /// Works, or is not needed by what is configured, but worth knowing.
    Warning,
    /// Something configured does not work: the exit status is 1.
    Failed,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Failed => "failed",
        }
    }
}

struct Check {
    name: String,
    status: Status,
    detail: String,
}

/// The checks, printed as they are made.
struct Report {
    checks: Vec<Check>,
    json: bool,
}

impl Report {
    fn add(&mut self, name: impl Into<String>, status: Status, detail: impl Into<String>) {
        let check = Check { name: name.into(), status, detail: detail.into() };
        let line = match self.json {
            true => json!({"check": check.name, "status": check.status.word(), "detail": check.detail}).to_string(),
            false => terminal::out(&format!("{:<8} {}: {}", check.status.word(), check.name, check.detail)).into_owned(),
        };
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
        self.checks.push(check);
    }
}

/// The warnings the host logs while the checks run (a settings rule that applies to nothing,
/// a hook of an unknown kind): kept to be reported, not printed as they come.
#[derive(Clone, Default)]
pub(crate) struct Warnings(Arc<Mutex<Vec<u8>>>);

impl Warnings {
    /// Sends the process's warnings here from now on.
    pub(crate) fn capture(verbose: u8) -> Self {
        use tracing_subscriber::Layer;
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        let warnings = Warnings::default();
        let default = if verbose == 0 { "warn,rmcp=off" } else { "info,rmcp=warn" };
        let filter = tracing_subscriber::filter::FilterExt::and(
            tracing_subscriber::EnvFilter::new(default),
            terminal::WithoutUnheardAnswers,
        );
        let layer = tracing_subscriber::fmt::layer().with_writer(warnings.clone()).with_ansi(false).event_format(terminal::Plain);
        let _ = tracing_subscriber::registry().with(layer.with_filter(filter)).try_init();
        warnings
    }

    /// The warnings so far, each without the prefix every log line has, and forgotten.
    fn take(&self) -> Vec<String> {
        let bytes = std::mem::take(&mut *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| line.strip_prefix("exec-host: ").unwrap_or(line).strip_prefix("warning: ").unwrap_or(line).to_string())
            .collect()
    }
}

/// Bytes of warnings kept to report; the rest (a server's flood of them, say) is dropped.
const MAX_WARNING_BYTES: usize = 64 * 1024;

impl std::io::Write for Warnings {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut kept = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if kept.len() + bytes.len() <= MAX_WARNING_BYTES {
            kept.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Warnings {
    type Writer = Warnings;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// `exec-host doctor`.
pub(crate) fn run(flags: DoctorFlags, warnings: Warnings) -> Result<ExitCode, UsageError> {
    let mut report = Report { checks: Vec::new(), json: flags.json };
    let sandbox = flags.sandbox.options();
    let places = flags.store.places();
    let mut session_config = resolve_session(flags.session)?;
    session_config.private.extend(places.private_places());
    let workspace = session_config.workspace.clone();
    let sandbox = sandbox.for_workspace(Some(&workspace));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let abort = CancellationToken::new();
        cancel_on_stop_signals(abort.clone())?;
        guest(&mut report, sandbox.clone()).await;
        let layers =
            tokio::task::spawn_blocking(exec_host::command::layer_report).await.map_err(|e| UsageError(e.to_string()))?;
        store(&mut report, &places, &workspace).await;
        session(&mut report, session_config, sandbox, layers, &warnings, &abort).await
    })?;
    let failed = report.checks.iter().filter(|check| check.status == Status::Failed).count();
    if !report.json {
        let warned = report.checks.iter().filter(|check| check.status == Status::Warning).count();
        let summary = match failed {
            0 => format!("everything configured works ({warned} warning(s))"),
            n => format!("{n} check(s) failed, {warned} warning(s)"),
        };
        eprintln!("exec-host: {summary}");
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The guest: it loads, and whether a later process maps its compiled code from the cache.
async fn guest(report: &mut Report, options: exec_host::SandboxOptions) {
    match exec_host::Sandbox::with_options(options).await {
        Err(error) => report.add("guest", Status::Failed, error_sentence(&error)),
        Ok(sandbox) => {
            let cache = sandbox.guest_cache();
            let origin = format!("it loads; its native code was {}", cache.origin);
            match (&cache.file, &cache.trusted) {
                (Some(file), Ok(())) => {
                    report.add("guest cache", Status::Ok, format!("{origin}; the cache {} is trusted", file.display()))
                }
                (Some(file), Err(why)) => report.add(
                    "guest cache",
                    Status::Warning,
                    format!(
                        "{origin}; the cache {} is not used ({why}), so each process compiles or loads the guest anew",
                        file.display()
                    ),
                ),
                (None, _) => report.add(
                    "guest cache",
                    Status::Warning,
                    format!("{origin}; no cache is used (none is known, it is turned off, or it lies in the workspace)"),
                ),
            }
        }
    }
}

/// The state store the flags name (or this machine's default): it opens with its key, which
/// only this user can read, and answers a read.
async fn store(report: &mut Report, places: &StorePlaces, workspace: &std::path::Path) {
    let key = places.private_places().into_iter().last();
    match places.open(Some(workspace)).await {
        Err(error) => report.add("state store", Status::Failed, error_sentence(&error)),
        Ok(store) => match store.get("doctor-probe").await {
            Ok(_) => {
                let key = key.map(|key| format!("; its key {} is private", shown(&key))).unwrap_or_default();
                report.add("state store", Status::Ok, format!("{} answers{key}", store.describe()))
            }
            Err(error) => report.add(
                "state store",
                Status::Failed,
                format!("{} does not answer: {}", store.describe(), error_sentence(&error)),
            ),
        },
    }
}

/// The session `run` would start: the settings in force, `Bash`'s layers (failed only when
/// `Bash` is offered), each MCP server and API.
async fn session(
    report: &mut Report,
    config: SessionConfig,
    sandbox: exec_host::SandboxOptions,
    layers: LayerReport,
    warnings: &Warnings,
    abort: &CancellationToken,
) -> Result<(), UsageError> {
    let servers = config.mcp.servers.clone();
    let apis = config.mcp.apis.clone();
    let credentials = config.mcp_credentials.clone();
    let start = Start { login: false, ..Start::for_the_author(approve::nobody("exec-host doctor runs no call")) };
    let session = match start_session(config, sandbox.with_max_concurrent_execs(1), Limits::default(), start, abort, false).await
    {
        Ok(Some(session)) => session,
        Ok(None) => return Err(UsageError("stopped by a signal".into())),
        Err(UsageError(why)) => {
            // Nothing configured can be checked past this; the machine's layers still can.
            report.add("set-up", Status::Failed, why);
            bash_layers(report, &layers, false);
            return Ok(());
        }
    };
    // The settings: the files in force, valid, and what they warn about.
    let files: Vec<String> = session.settings_files().iter().map(|file| shown(file)).collect();
    let files = match files.is_empty() {
        true => "no settings file is in force".to_string(),
        false => format!("in force, highest first: {}", files.join(", ")),
    };
    match session.permission_mode() {
        Ok(mode) => report.add("settings", Status::Ok, format!("{files}; the permission mode is {mode}")),
        Err(error) => report.add("settings", Status::Failed, format!("{files}; {}", error_sentence(&error))),
    }
    let bash_offered = session.pool().is_ok_and(|pool| pool.names().any(|name| name == exec_host::BASH));
    bash_layers(report, &layers, bash_offered);
    let inventory = mcp::inventory(&session, &servers, &apis, credentials.as_ref()).await;
    session.shutdown().await;
    for server in inventory.servers {
        let sign_in = server.signed_in.map(|state| format!(", {state}")).unwrap_or_default();
        match server.tools {
            Some(tools) => report.add(
                format!("MCP server {}", server.name),
                Status::Ok,
                format!("{}: started, {tools} tools{sign_in}", server.transport),
            ),
            None => report.add(
                format!("MCP server {}", server.name),
                Status::Failed,
                format!("{}: {}{sign_in}", server.transport, server.error.unwrap_or_else(|| "it did not start".into())),
            ),
        }
    }
    for api in inventory.apis {
        let sign_in = api.signed_in.map(|state| format!(", {state}")).unwrap_or_default();
        let status = if api.operations > 0 { Status::Ok } else { Status::Failed };
        report.add(format!("API {}", api.name), status, format!("{}: {} operations{sign_in}", api.spec, api.operations));
    }
    for warning in warnings.take() {
        report.add("warning", Status::Warning, warning);
    }
    Ok(())
}

/// Each layer of `Bash`'s confinement on this machine. A missing one fails only when `Bash`
/// is offered: without it, `Bash` is refused and nothing else needs the layers.
fn bash_layers(report: &mut Report, layers: &LayerReport, offered: bool) {
    let missing = if offered { Status::Failed } else { Status::Warning };
    let why = |error: &CommandError| error_sentence(error);
    match &layers.namespaces {
        Ok(()) => report.add("Bash: namespaces", Status::Ok, "a command gets its own user, mount and PID namespaces"),
        Err(error) => report.add("Bash: namespaces", missing, why(error)),
    }
    match &layers.landlock {
        Ok(abi) => {
            let (status, note) = match abi {
                1..=3 => (
                    Status::Warning,
                    ": TCP is not bound by Landlock (ABI 4) nor are signals (ABI 6); the namespaces and seccomp still hold",
                ),
                4 | 5 => (
                    Status::Warning,
                    ": signals to outside processes are not bound by Landlock (ABI 6); the PID namespace still holds",
                ),
                _ => (Status::Ok, ""),
            };
            report.add("Bash: Landlock", status, format!("ABI {abi}{note}"))
        }
        Err(error) => report.add("Bash: Landlock", missing, why(error)),
    }
    match &layers.seccomp {
        Ok(()) => report.add("Bash: seccomp", Status::Ok, "a command runs under the seccomp filters"),
        Err(CommandError::NamespacesRefused(status)) => {
            report.add("Bash: seccomp", missing, format!("a command under the seccomp filters did not run ({status})"))
        }
        Err(error) => report.add("Bash: seccomp", missing, why(error)),
    }
    // SAFETY: geteuid only reads this process's effective user id.
    let root = unsafe { libc::geteuid() } == 0;
    match (layers.pids_cgroup, root) {
        (true, _) => report.add("Bash: pids cgroup", Status::Ok, "a command gets a pids cgroup of its own (pids.max)"),
        (false, false) => report.add(
            "Bash: pids cgroup",
            Status::Warning,
            "none can be made here, so RLIMIT_NPROC alone bounds a command's processes (enough for a user other than root)",
        ),
        (false, true) => report.add(
            "Bash: pids cgroup",
            missing,
            "none can be made here, and the host runs as root, whom RLIMIT_NPROC does not bind: run as another user, or give the host a cgroup with the pids controller",
        ),
    }
    let (status, detail) = match (&layers.all, offered) {
        (Ok(()), true) => (Status::Ok, "offered, and commands run confined here".to_string()),
        (Ok(()), false) => (
            Status::Ok,
            "not offered (--enable-bash or \"enableBash\": true offers it); commands would run confined here".to_string(),
        ),
        (Err(error), true) => (Status::Failed, format!("offered, but commands cannot run here: {}", why(error))),
        (Err(error), false) => (Status::Warning, format!("not offered; commands could not run here: {}", why(error))),
    };
    report.add("Bash", status, detail);
}
