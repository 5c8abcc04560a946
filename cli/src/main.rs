//! The `exec-host` command line: `run`, `tools`, `search`, `serve`. Flags are parsed raw
//! (`flags`), then resolved into one config per command (`config`) that the rest reads;
//! every command works through one session (`session`), as an agent does: `run`, `listing`
//! (`tools` and `search`), `serve`, `conformance`.
//!
//! Exit status: 0 when the script succeeded, 1 when it failed or `Exec` was refused (for
//! `search`: when nothing matched), 2 for a usage or set-up error (one sentence on stderr,
//! never a backtrace), 3 when the script parked (`run --on-ask park`, `resume`).

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use exec_host::CancellationToken;

mod approve;
mod config;
mod conformance;
mod doctor;
mod flags;
mod input;
mod listing;
mod manual;
mod mcp;
mod park;
mod progress;
mod run;
mod serve;
mod session;
mod terminal;

use config::{ServeConfig, read_script, resolve, resolve_resume, resolve_serve, resolve_session};
use flags::{Cli, Command, McpCommand};
use listing::{search, tools};
use run::run;
use session::{Start, cancel_on_stop_signals, start_session};

/// A usage or set-up error: one sentence, exit status 2.
pub(crate) struct UsageError(String);

/// The one conversion of an error into the command line's: the error and every cause
/// beneath it, as one sentence.
impl<E: std::error::Error + 'static> From<E> for UsageError {
    fn from(error: E) -> Self {
        UsageError(exec_host::error_sentence(&error))
    }
}

fn main() -> ExitCode {
    // Whatever our parent left open (a service manager's, a shell's redirections) reaches
    // none of the servers, hooks and commands this process starts.
    exec_host::inherited_descriptors_stay_here();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    // Traces are for `serve` alone; the exporter is made before any runtime starts. `doctor`
    // reports the warnings among its checks.
    let mut warnings = None;
    let traces = match &cli.command {
        Command::Serve(flags) => init_logging(cli.verbose, Some(flags.otlp_endpoint.as_deref())),
        Command::Doctor(_) => {
            warnings = Some(doctor::Warnings::capture(cli.verbose));
            Ok(None)
        }
        _ => init_logging(cli.verbose, None),
    };
    let traces = match traces {
        Ok(traces) => traces,
        Err(message) => {
            eprintln!("exec-host: {}", terminal::err(&message));
            return ExitCode::from(2);
        }
    };
    let outcome = match cli.command {
        Command::Run(flags) => resolve(flags).and_then(run),
        Command::Resume(flags) => resolve_resume(flags).and_then(park::resume),
        Command::Tools(flags) => {
            let script = flags.script.as_deref().map(read_script).transpose();
            script.and_then(|script| {
                let dts = flags.dts.then_some(script);
                resolve_session(flags.session).and_then(|session| tools(session, flags.json, dts, flags.stats))
            })
        }
        Command::Search(flags) => {
            resolve_session(flags.session).and_then(|session| search(session, flags.query, flags.max_results, flags.json))
        }
        Command::View(flags) => {
            resolve_session(flags.session).and_then(|session| listing::view(session, flags.id, flags.offset, flags.limit))
        }
        Command::Serve(flags) => resolve_serve(flags).and_then(serve),
        Command::Mcp(McpCommand::Login { name, api, wait, session }) => {
            resolve_session(session).and_then(|session| mcp::login(session, &name, api, wait))
        }
        Command::Mcp(McpCommand::Logout { name, api, session }) => {
            resolve_session(session).and_then(|session| mcp::logout(session, &name, api))
        }
        Command::Mcp(McpCommand::List { json, session }) => resolve_session(session).and_then(|session| mcp::list(session, json)),
        Command::Conformance(flags) => conformance::run(flags.sandbox.options(), flags.cases.as_deref(), &flags.filter),
        Command::Doctor(flags) => doctor::run(flags, warnings.unwrap_or_default()),
        Command::Man => manual::print(),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "exec-host", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    };
    if let Some(traces) = traces {
        traces.finish();
    }
    match outcome {
        Ok(code) => code,
        Err(UsageError(message)) => {
            eprintln!("exec-host: {}", terminal::err(&message));
            ExitCode::from(2)
        }
    }
}

/// Logs to stderr, as `-v` says; and, when `traces` is `Some` (serve) and an endpoint is
/// set, the host's spans to an OpenTelemetry collector (`serve::traces`).
fn init_logging(verbose: u8, traces: Option<Option<&str>>) -> Result<Option<serve::traces::Traces>, String> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    // rmcp logs what this host already reports in its own words (a server that cannot start,
    // a dropped connection); its own lines appear from -v on.
    let default = match verbose {
        0 => "warn,rmcp=off",
        1 => "info,rmcp=warn",
        _ => "debug",
    };
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi).with_target(false);
    // Warnings read as the command's own (`exec-host: warning: ...`); -vv adds times and places.
    let filter = tracing_subscriber::filter::FilterExt::and(filter, terminal::WithoutUnheardAnswers);
    let logs: Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync> = match verbose {
        0 | 1 => logs.event_format(terminal::Plain).with_filter(filter).boxed(),
        _ => logs.with_filter(filter).boxed(),
    };
    let registry = tracing_subscriber::registry().with(logs);
    let Some(endpoint) = traces else {
        let _ = registry.try_init();
        return Ok(None);
    };
    match serve::traces::Traces::start(endpoint)? {
        Some((traces, layer)) => {
            let spans = tracing_subscriber::filter::Targets::new().with_target("exec_host", tracing::Level::INFO);
            let _ = registry.with(layer.with_filter(spans)).try_init();
            Ok(Some(traces))
        }
        None => {
            let _ = registry.try_init();
            Ok(None)
        }
    }
}

/// Serves the session over MCP (stdio or HTTP) until the client closes the connection
/// (stdio) or a signal stops the server; Execs still running are aborted (over HTTP after a
/// grace period) and the servers closed.
fn serve(config: ServeConfig) -> Result<ExitCode, UsageError> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let signal = CancellationToken::new();
        cancel_on_stop_signals(signal.clone())?;
        let sandbox = config.sandbox.with_max_concurrent_execs(config.concurrency);
        // Each client's gateway makes a session of its own whose calls ask that client.
        let nobody = serve::ClientApprover::never("no MCP client is connected");
        // Execs park in the store for clients of 2026-07-28; a default folder that cannot be
        // used only turns that off, a store the flags name must open.
        let store = match config.store.open(&config.session.workspace).await {
            Ok(store) => Some(store),
            Err(error) if config.store_explicit => return Err(error),
            Err(error) => {
                eprintln!(
                    "exec-host: warning: no state store, so calls that must ask are refused for clients of MCP 2026-07-28: {} (`exec-host doctor` checks the store)",
                    error.0
                );
                None
            }
        };
        let metrics = Arc::new(serve::Metrics::new());
        let parking = store
            .clone()
            .map(|store| serve::Parking::new(store, Some(metrics.clone()), signal.clone()))
            .transpose()
            .map_err(|error| UsageError(format!("the server cannot name its waiting calls: {error}")))?;
        let start = Start {
            store: store.map(|store| (store, config.store.conversation.clone())),
            values: config.values,
            running_lease: config.store.running_lease,
            input: Some(Arc::new(serve::elicit::OutsideAnyCall)),
            ..Start::for_a_model(Arc::new(nobody))
        };
        let (mcp_files, mcp) = (config.session.mcp_files.clone(), config.session.mcp.clone());
        let Some(session) = start_session(config.session, sandbox, config.limits, start, &signal, true).await? else {
            return Ok(ExitCode::from(1));
        };
        // Bash offered where commands cannot run: every call of it would be refused.
        if session.pool().is_ok_and(|pool| pool.names().any(|name| name == exec_host::BASH))
            && let Some(why) = exec_host::command::unavailable()
        {
            eprintln!(
                "exec-host: warning: Bash is offered, but commands cannot run on this system: {} (`exec-host doctor` checks each layer)",
                exec_host::error_sentence(why)
            );
        }
        let following = tokio::spawn(serve::reload::follow(session.clone(), mcp_files, mcp, signal.clone()));
        let capacity = serve::Capacity::new(config.concurrency, config.client_concurrency);
        let served = match config.http {
            Some(options) => serve::http::serve(session.clone(), options, capacity, parking, metrics, signal.clone())
                .await
                .map_err(|e| UsageError(format!("the HTTP server failed: {e}"))),
            None => serve::stdio::serve(&session, capacity, config.max_message_bytes, parking, signal.clone())
                .await
                .map_err(UsageError),
        };
        signal.cancel();
        // A server it is starting now would only be closed again.
        following.abort();
        session.shutdown().await;
        served.map(|()| ExitCode::SUCCESS)
    })
}
