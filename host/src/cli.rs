//! The `exec-host` command line. Flags are parsed raw, then resolved into one
//! [`RunConfig`] that the rest of the program reads.
//!
//! Exit status: 0 when the script succeeded, 1 when it failed, 2 for a usage or set-up
//! error (one sentence on stderr, never a backtrace).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::mcp::{ConfigError, McpConfig, McpServers};
use crate::runtime::{Limits, Sandbox, SandboxOptions, default_cache_dir};
use crate::script::{ExecOutcome, ExecRequest};
use crate::tools::builtin::{self, Workspace};
use crate::{Funnel, Registry};

#[derive(Parser, Debug)]
#[command(name = "exec-host", version, about = "Run JavaScript Exec scripts in a WebAssembly sandbox that orchestrates tools")]
struct Cli {
    /// More log output on stderr (-v: info, -vv: debug). RUST_LOG overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a script (the body of an async function) and print its result.
    Run(RunFlags),
}

#[derive(Args, Debug)]
struct RunFlags {
    /// The script file; `-` reads it from standard input.
    script: PathBuf,
    /// Directory the workspace tools work in.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Budget of the script's own running time, in milliseconds (waiting on tools is free).
    #[arg(long, value_name = "MS", default_value_t = crate::runtime::DEFAULT_BUDGET.as_millis() as u64)]
    budget_ms: u64,
    /// Tool calls one script may make; the calls past it are refused one by one.
    #[arg(long, value_name = "N", default_value_t = crate::runtime::DEFAULT_MAX_CALLS)]
    max_calls: u32,
    /// Characters of console output kept.
    #[arg(long, value_name = "N", default_value_t = crate::runtime::DEFAULT_MAX_LOG_CHARS)]
    max_log_chars: usize,
    /// Characters of the returned value shown.
    #[arg(long, value_name = "N", default_value_t = crate::runtime::DEFAULT_MAX_RESULT_CHARS)]
    max_result_chars: usize,
    /// Images attached to the result.
    #[arg(long, value_name = "N", default_value_t = crate::runtime::DEFAULT_MAX_IMAGES)]
    max_images: usize,
    /// Memory of the script's sandbox, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = crate::runtime::DEFAULT_MAX_MEMORY_BYTES >> 20)]
    max_memory_mib: u64,
    /// Cap on the total time the script may wait for tool calls, in milliseconds (default: none).
    #[arg(long, value_name = "MS")]
    max_nested_wait_ms: Option<u64>,
    /// Print one JSON object: ok, text, value, logs, images, calls, summary, error.
    #[arg(long)]
    json: bool,
    /// Do not read or write the compiled-guest cache.
    #[arg(long)]
    no_cache: bool,
    /// MCP server configuration (`{"mcpServers": {...}}`, as Claude Desktop and Claude Code
    /// keep it); repeat the flag to combine files. Their tools are `tools.mcp__<server>__<tool>`.
    #[arg(long, value_name = "FILE")]
    mcp_config: Vec<PathBuf>,
    /// Time each MCP server has to start and list its tools, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = crate::mcp::DEFAULT_CONNECT_TIMEOUT.as_millis() as u64)]
    mcp_connect_timeout_ms: u64,
}

/// Everything `run` needs, resolved from the flags.
struct RunConfig {
    code: String,
    workspace: Workspace,
    limits: Limits,
    json: bool,
    cache_dir: Option<PathBuf>,
    mcp: McpConfig,
    mcp_connect_timeout: Duration,
}

/// A usage or set-up error: one sentence, exit status 2.
struct UsageError(String);

impl<E: std::fmt::Display> From<E> for UsageError {
    fn from(error: E) -> Self {
        UsageError(error.to_string())
    }
}

/// Runs the command line; returns the process's exit status.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    init_logging(cli.verbose);
    match cli.command {
        Command::Run(flags) => match resolve(flags).and_then(run) {
            Ok(code) => code,
            Err(UsageError(message)) => {
                eprintln!("exec-host: {message}");
                ExitCode::from(2)
            }
        },
    }
}

fn init_logging(verbose: u8) {
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
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .try_init();
}

fn resolve(flags: RunFlags) -> Result<RunConfig, UsageError> {
    let code = read_script(&flags.script)?;
    if code.trim().is_empty() {
        return Err(UsageError(format!("the script {} is empty; there is nothing to run", shown(&flags.script))));
    }
    let workspace = Workspace::open(&flags.workspace)?;
    let limits = Limits {
        budget: Duration::from_millis(flags.budget_ms),
        max_calls: flags.max_calls,
        max_log_chars: flags.max_log_chars,
        max_result_chars: flags.max_result_chars,
        max_images: flags.max_images,
        max_memory_bytes: flags.max_memory_mib.saturating_mul(1024 * 1024),
        max_nested_wait: flags.max_nested_wait_ms.map(Duration::from_millis),
    };
    limits.check().map_err(|why| UsageError(format!("invalid limits: {why}")))?;
    let cache_dir = if flags.no_cache { None } else { default_cache_dir() };
    let mcp_files =
        flags.mcp_config.iter().map(|file| Ok((file.clone(), McpConfig::load(file)?))).collect::<Result<_, ConfigError>>()?;
    let mcp = McpConfig::merge(mcp_files)?;
    Ok(RunConfig {
        code,
        workspace,
        limits,
        json: flags.json,
        cache_dir,
        mcp,
        mcp_connect_timeout: Duration::from_millis(flags.mcp_connect_timeout_ms),
    })
}

fn shown(path: &std::path::Path) -> String {
    if path == std::path::Path::new("-") { "on standard input".into() } else { path.display().to_string() }
}

fn read_script(path: &std::path::Path) -> Result<String, UsageError> {
    let mut bytes = Vec::new();
    if path == std::path::Path::new("-") {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| UsageError(format!("cannot read the script from standard input: {e}")))?;
    } else {
        bytes = std::fs::read(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => UsageError(format!("the script {} does not exist", path.display())),
            std::io::ErrorKind::IsADirectory => UsageError(format!("the script {} is a directory, not a file", path.display())),
            _ => UsageError(format!("cannot read the script {}: {e}", path.display())),
        })?;
    }
    String::from_utf8(bytes).map_err(|e| {
        UsageError(format!(
            "the script {} is not valid UTF-8 (invalid byte at offset {})",
            shown(path),
            e.utf8_error().valid_up_to()
        ))
    })
}

fn run(config: RunConfig) -> Result<ExitCode, UsageError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let outcome = runtime.block_on(async {
        // Listen for Ctrl-C first, so an interrupt during set-up ends the run cleanly too.
        let abort = CancellationToken::new();
        let on_interrupt = abort.clone();
        let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        tokio::spawn(async move {
            if interrupt.recv().await.is_some() {
                on_interrupt.cancel();
            }
        });
        let registry = Arc::new(Registry::new(builtin::all(Arc::new(config.workspace)))?);
        let servers = McpServers::with_connect_timeout(registry.clone(), config.mcp_connect_timeout);
        // The sandbox and the servers start together; a server that cannot start is
        // reported once and the script runs with the others.
        let options = SandboxOptions { cache_dir: config.cache_dir.clone(), max_concurrent_execs: 4 };
        let (sandbox, failures) = tokio::join!(Sandbox::with_options(options), async {
            tokio::select! {
                failures = servers.start_all(&config.mcp) => failures,
                _ = abort.cancelled() => Vec::new(),
            }
        });
        for failure in failures {
            eprintln!("exec-host: warning: {failure}");
        }
        let sandbox = sandbox?;
        // In `run` the script's author is the only caller: every tool is reachable.
        let reachable = registry.definitions();
        let funnel = Arc::new(Funnel::new(registry));
        let request = ExecRequest::new(config.code, reachable).with_limits(config.limits).with_abort(abort);
        let outcome = sandbox.exec(request, funnel).await;
        servers.shutdown().await;
        Ok::<_, UsageError>(outcome)
    })?;
    print_outcome(&outcome, config.json);
    Ok(if outcome.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn print_outcome(outcome: &ExecOutcome, as_json: bool) {
    let mut stdout = std::io::stdout().lock();
    if as_json {
        let object = json!({
            "ok": outcome.ok(),
            "text": outcome.text(),
            "value": outcome.value().cloned().unwrap_or(serde_json::Value::Null),
            "logs": outcome.logs,
            "images": outcome.images,
            "calls": outcome.calls,
            "summary": outcome.summary(),
            "error": outcome.failure().map(|f| f.message()),
        });
        let _ = writeln!(stdout, "{object}");
        return;
    }
    let _ = writeln!(stdout, "{}", outcome.text());
    let _ = stdout.flush();
    if !outcome.images.is_empty() {
        eprintln!("[{} image(s) attached; --json prints them]", outcome.images.len());
    }
    eprintln!("{}", outcome.summary());
}
