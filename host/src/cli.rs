//! The `exec-host` command line: `run`, `tools`, `search`. Flags are parsed raw, then
//! resolved into one config ([`RunConfig`], [`SessionConfig`]) that the rest reads; the
//! tools of every command come from one [`Session`] and one [`Pool`].
//!
//! Exit status: 0 when the script succeeded, 1 when it failed (for `search`: when nothing
//! matched), 2 for a usage or set-up error (one sentence on stderr, never a backtrace).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::mcp::{ConfigError, McpConfig, McpServers};
use crate::pool::{DeferralTable, Pool};
use crate::runtime::{Limits, Sandbox, SandboxOptions, default_cache_dir};
use crate::script::{ExecOutcome, ExecRequest};
use crate::search::{self, SearchParams};
use crate::settings::{self, Settings, SettingsFiles};
use crate::tools::builtin::{self, Workspace};
use crate::{Funnel, Registry, dts, exec_tool, signature};

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
    /// Print what a model would be given: the declarations, Exec's description, the pool.
    Tools(ToolsFlags),
    /// Find tools as a script's tools.ToolSearch does, with their call forms.
    Search(SearchFlags),
}

/// Where the tools come from: the workspace, MCP servers, settings.
#[derive(Args, Debug)]
struct SessionFlags {
    /// Directory the workspace tools work in (its `.exec-host/settings.json` is the project settings).
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// MCP server configuration (`{"mcpServers": {...}}`, as Claude Desktop and Claude Code
    /// keep it); repeat the flag to combine files. Their tools are `tools.mcp__<server>__<tool>`.
    #[arg(long, value_name = "FILE")]
    mcp_config: Vec<PathBuf>,
    /// Time each MCP server has to start and list its tools, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = crate::mcp::DEFAULT_CONNECT_TIMEOUT.as_millis() as u64)]
    mcp_connect_timeout_ms: u64,
    /// A settings file (`permissions.deny`, `enableExec`, `nonDeferredTools`), above the
    /// project and user files and below the managed one; repeat it, the last one wins.
    #[arg(long, value_name = "FILE")]
    settings: Vec<PathBuf>,
}

#[derive(Args, Debug)]
struct RunFlags {
    /// The script file; `-` reads it from standard input.
    script: PathBuf,
    #[command(flatten)]
    session: SessionFlags,
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
}

#[derive(Args, Debug)]
struct ToolsFlags {
    #[command(flatten)]
    session: SessionFlags,
    /// Print one JSON object: exec, declarations, pool, settings.
    #[arg(long, conflicts_with_all = ["dts", "stats"])]
    json: bool,
    /// Print a TypeScript declaration file of what a script can reach.
    #[arg(long, conflicts_with = "stats")]
    dts: bool,
    /// Print the size of the declarations with Exec and without it, side by side.
    #[arg(long)]
    stats: bool,
}

#[derive(Args, Debug)]
struct SearchFlags {
    /// Keywords, `select:name1,name2`, or "" for every tool.
    query: String,
    #[command(flatten)]
    session: SessionFlags,
    /// Matches shown for keywords (as ToolSearch's `max_results`).
    #[arg(long, value_name = "N")]
    max_results: Option<usize>,
    /// Search only the pool behind Exec, as a model's script does (by default: every tool a
    /// `run` script can reach, flat ones included).
    #[arg(long)]
    pool: bool,
    /// Print ToolSearch's result object as JSON: {matches, total}.
    #[arg(long)]
    json: bool,
}

/// Where the tools of one invocation come from, resolved from [`SessionFlags`].
struct SessionConfig {
    workspace: Workspace,
    mcp: McpConfig,
    mcp_connect_timeout: Duration,
    settings: SettingsFiles,
}

/// Everything `run` needs, resolved from the flags.
struct RunConfig {
    code: String,
    session: SessionConfig,
    limits: Limits,
    json: bool,
    cache_dir: Option<PathBuf>,
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
    let outcome = match cli.command {
        Command::Run(flags) => resolve(flags).and_then(run),
        Command::Tools(flags) => {
            resolve_session(flags.session).and_then(|session| tools(session, flags.json, flags.dts, flags.stats))
        }
        Command::Search(flags) => resolve_session(flags.session).and_then(|session| {
            let params = SearchParams { query: flags.query, max_results: flags.max_results };
            search(session, params, flags.pool, flags.json)
        }),
    };
    match outcome {
        Ok(code) => code,
        Err(UsageError(message)) => {
            eprintln!("exec-host: {message}");
            ExitCode::from(2)
        }
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
    let session = resolve_session(flags.session)?;
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
    Ok(RunConfig { code, session, limits, json: flags.json, cache_dir })
}

fn resolve_session(flags: SessionFlags) -> Result<SessionConfig, UsageError> {
    let workspace = Workspace::open(&flags.workspace)?;
    let mcp_files =
        flags.mcp_config.iter().map(|file| Ok((file.clone(), McpConfig::load(file)?))).collect::<Result<_, ConfigError>>()?;
    let mcp = McpConfig::merge(mcp_files)?;
    for file in &flags.settings {
        if file.is_dir() {
            return Err(UsageError(format!("the settings file {} is a directory", file.display())));
        }
        if !file.exists() {
            return Err(UsageError(format!("the settings file {} does not exist", file.display())));
        }
    }
    let settings = SettingsFiles::new(None, settings::standard_files(&flags.workspace, &flags.settings));
    // Read once now, so a broken file stops the command before anything starts.
    settings.current()?;
    Ok(SessionConfig { workspace, mcp, mcp_connect_timeout: Duration::from_millis(flags.mcp_connect_timeout_ms), settings })
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

/// The tools of one invocation: the registry, with the MCP servers that started.
struct Session {
    registry: Arc<Registry>,
    servers: McpServers,
    settings: Arc<SettingsFiles>,
}

impl Session {
    /// Starts the MCP servers; one that cannot start is reported once and the rest go on.
    async fn start(config: SessionConfig, abort: &CancellationToken) -> Result<Session, UsageError> {
        let registry = Arc::new(Registry::new(builtin::all(Arc::new(config.workspace)))?);
        let servers = McpServers::with_connect_timeout(registry.clone(), config.mcp_connect_timeout);
        let failures = tokio::select! {
            failures = servers.start_all(&config.mcp) => failures,
            _ = abort.cancelled() => Vec::new(),
        };
        for failure in failures {
            eprintln!("exec-host: warning: {failure}");
        }
        Ok(Session { registry, servers, settings: Arc::new(config.settings) })
    }

    /// The pool and declarations as they are now, from the one builder.
    fn pool(&self, settings: &Settings) -> Pool {
        Pool::build(self.registry.snapshot().definitions(), settings, &DeferralTable::default())
    }
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
        // The sandbox and the servers start together.
        let options = SandboxOptions { cache_dir: config.cache_dir.clone(), max_concurrent_execs: 4 };
        let (sandbox, session) = tokio::join!(Sandbox::with_options(options), Session::start(config.session, &abort));
        let session = session?;
        let sandbox = sandbox?;
        // In `run` the script's author is the only caller: every tool that is not denied
        // is reachable, pooled or not.
        let settings = session.settings.current_or_last_good()?;
        let reachable = session.pool(&settings).enabled();
        let funnel = Arc::new(Funnel::new(session.registry.clone()).with_settings(session.settings.clone()));
        let request = ExecRequest::new(config.code, reachable).with_limits(config.limits).with_abort(abort);
        let outcome = sandbox.exec(request, funnel).await;
        session.servers.shutdown().await;
        Ok::<_, UsageError>(outcome)
    })?;
    print_outcome(&outcome, config.json);
    Ok(if outcome.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Starts the session's servers, hands the session and its settings to `report`, then
/// closes the servers.
fn with_session<T>(config: SessionConfig, report: impl FnOnce(&Session, &Settings) -> T) -> Result<T, UsageError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let session = Session::start(config, &CancellationToken::new()).await?;
        let settings = session.settings.current_or_last_good()?;
        let result = report(&session, &settings);
        session.servers.shutdown().await;
        Ok(result)
    })
}

fn tools(config: SessionConfig, as_json: bool, dts: bool, stats: bool) -> Result<ExitCode, UsageError> {
    let text = with_session(config, |session, settings| {
        let pool = session.pool(settings);
        if dts {
            dts::declaration_file(&pool.enabled())
        } else if stats {
            declaration_stats(session, settings)
        } else if as_json {
            let object = json!({
                "exec": pool.exec_status(),
                "declarations": pool.declarations(),
                "pool": pool.names().collect::<Vec<_>>(),
                "settings": settings_in_force(&session.settings),
            });
            format!("{object}\n")
        } else {
            describe_pool(&pool, &session.settings)
        }
    })?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// `exec-host tools` for people: what is declared, what is pooled, Exec's description.
fn describe_pool(pool: &Pool, settings: &SettingsFiles) -> String {
    let mut out = String::new();
    let declarations = pool.declarations();
    let status = pool.exec_status();
    if pool.exec_declared() {
        out += &format!("{status}; {} tools are in the pool behind it.\n", pool.pooled().len());
    } else {
        out += &format!("{status}; every tool is declared flat.\n");
    }
    out += &format!("\nDeclared to the model ({}):\n", declarations.len());
    for declaration in &declarations {
        out += &format!("  {}\n", declaration.name);
    }
    if pool.exec_declared() {
        out += &format!("\nPool ({}), reachable from Exec scripts and found with tools.ToolSearch:\n", pool.pooled().len());
        for name in pool.names() {
            out += &format!("  {name}\n");
        }
        out += "\nExec's description (the same for every pool):\n";
        for line in exec_tool::description().lines() {
            out += format!("  | {line}").trim_end();
            out += "\n";
        }
    }
    let files = settings_in_force(settings);
    out += &if files.is_empty() {
        "\nSettings: none found, defaults apply.\n".to_string()
    } else {
        format!("\nSettings: {}\n", files.join(", "))
    };
    out
}

/// The settings files that exist, highest layer first.
fn settings_in_force(settings: &SettingsFiles) -> Vec<String> {
    settings.files().iter().filter(|file| file.is_file()).map(|file| file.display().to_string()).collect()
}

/// `exec-host tools --stats`: the declarations' size with Exec and with every tool flat.
fn declaration_stats(session: &Session, settings: &Settings) -> String {
    let size = |enable_exec: bool| {
        let settings = Settings { enable_exec, ..settings.clone() };
        let pool = session.pool(&settings);
        let declarations = pool.declarations();
        let bytes = serde_json::to_string(&declarations).map(|text| text.len()).unwrap_or(0);
        (pool, declarations.len(), bytes)
    };
    let (exec_pool, exec_count, exec_bytes) = size(true);
    let (_, flat_count, flat_bytes) = size(false);
    let tokens = |bytes: usize| bytes.div_ceil(BYTES_PER_TOKEN);
    let mut out = format!("{:<11}{:>14}{:>12}{:>10}\n", "", "declarations", "bytes", "~tokens");
    out += &format!("{:<11}{:>14}{:>12}{:>10}\n", "Exec mode", exec_count, exec_bytes, tokens(exec_bytes));
    out += &format!("{:<11}{:>14}{:>12}{:>10}\n", "flat mode", flat_count, flat_bytes, tokens(flat_bytes));
    if !exec_pool.exec_declared() {
        out += &format!("{}: both modes declare the same tools.\n", exec_pool.exec_status());
    } else if exec_bytes <= flat_bytes {
        let saved = flat_bytes - exec_bytes;
        out += &format!(
            "Exec mode declares {:.1}x fewer bytes: {saved} bytes (~{} tokens) less in every request; {} tools sit in the pool.\n",
            flat_bytes as f64 / exec_bytes.max(1) as f64,
            tokens(saved),
            exec_pool.pooled().len(),
        );
    } else {
        out += &format!(
            "Exec mode declares {} bytes more: the {} pooled tools' declarations are smaller than Exec's own.\n",
            exec_bytes - flat_bytes,
            exec_pool.pooled().len(),
        );
    }
    out += &format!("Declarations are counted as compact JSON; tokens are estimated at {BYTES_PER_TOKEN} bytes each.\n");
    out
}

/// A rough, model-independent estimate of JSON bytes per token.
const BYTES_PER_TOKEN: usize = 4;

fn search(config: SessionConfig, params: SearchParams, only_pool: bool, as_json: bool) -> Result<ExitCode, UsageError> {
    let result = with_session(config, |session, settings| {
        let pool = session.pool(settings);
        if only_pool { search::search(pool.pooled(), &params) } else { search::search(&pool.enabled(), &params) }
    })?;
    if as_json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        for found in &result.matches {
            if !found.description.trim().is_empty() {
                println!("{}", signature::doc_comment(&found.description, 0));
            }
            println!("{}\n", found.signature);
        }
        let shown = result.matches.len();
        match result.total {
            0 => eprintln!("no tool matches {:?}", params.query),
            total if total > shown => {
                eprintln!("{shown} of {total} matching tools shown; narrow the query or raise --max-results")
            }
            total => eprintln!("{total} matching tool{}", if total == 1 { "" } else { "s" }),
        }
    }
    Ok(if result.total == 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
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
