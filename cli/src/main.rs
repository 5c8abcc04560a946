//! The `exec-host` command line: `run`, `tools`, `search`, `serve`. Flags are parsed raw, then
//! resolved into one config ([`RunConfig`], [`SessionConfig`]) that the rest reads; every
//! command works through one [`Session`], as an agent does.
//!
//! Exit status: 0 when the script succeeded, 1 when it failed or `Exec` was refused (for
//! `search`: when nothing matched), 2 for a usage or set-up error (one sentence on stderr,
//! never a backtrace).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use exec_host::guest::GuestSource;
use exec_host::mcp::McpConfig;
use exec_host::results::{DIRECTORY_STORE_FILES, DirectoryResultStore};
use exec_host::settings::{Layer, PermissionMode};
use exec_host::{CallOptions, CancellationToken, Limits, Pool, SandboxOptions, Session, ToolCall, ToolResult, exec_tool};

mod approve;
mod conformance;
mod progress;
mod serve;
mod terminal;
use serde_json::{Value, json};

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
    /// Run a script (the body of an async function) as a model's Exec call, and print its result.
    Run(RunFlags),
    /// Print what a model would be given: the declarations, Exec's description, the pool.
    Tools(ToolsFlags),
    /// Find tools as a script's tools.ToolSearch does, with their call forms.
    Search(SearchFlags),
    /// Serve the session over MCP (stdio, or streamable HTTP at /mcp): one constant `Exec`
    /// tool in front of every configured MCP server, for any MCP client.
    Serve(ServeFlags),
    /// Run the WIT-level conformance cases against a guest component (the built-in one by
    /// default) and print a table of which pass.
    Conformance(ConformanceFlags),
    /// Print a completion script for SHELL (bash, elvish, fish, powershell, zsh) on stdout.
    #[command(after_help = "Install it where your shell looks, for example:\n  \
        exec-host completions bash > ~/.local/share/bash-completion/completions/exec-host\n  \
        exec-host completions zsh > ~/.zfunc/_exec-host   (with ~/.zfunc in fpath)\n  \
        exec-host completions fish > ~/.config/fish/completions/exec-host.fish")]
    Completions { shell: clap_complete::Shell },
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
    #[arg(long, value_name = "MS", default_value_t = exec_host::mcp::DEFAULT_CONNECT_TIMEOUT.as_millis() as u64)]
    mcp_connect_timeout_ms: u64,
    /// A settings file (`permissions`, `hooks`, `enableExec`, `nonDeferredTools`), above the
    /// project and user files and below the managed one; repeat it, the last one wins.
    #[arg(long, value_name = "FILE")]
    settings: Vec<PathBuf>,
    /// A permission rule that lets calls run (`write_file`, `mcp__srv`, `read_file(docs/**)`);
    /// repeatable. Rules given here sit above every settings file but the managed one.
    #[arg(long, value_name = "RULE")]
    allow: Vec<String>,
    /// A permission rule that asks before calls run; repeatable.
    #[arg(long, value_name = "RULE")]
    ask: Vec<String>,
    /// A permission rule that refuses calls; repeatable.
    #[arg(long, value_name = "RULE")]
    deny: Vec<String>,
    /// The permission mode: default, acceptEdits, dontAsk or bypassPermissions (`run`
    /// starts in bypassPermissions: its user wrote the script; ask and deny rules still apply;
    /// `serve` starts in default: its scripts come from a model).
    #[arg(long, value_name = "MODE", value_parser = PermissionMode::parse)]
    permission_mode: Option<PermissionMode>,
}

#[derive(Args, Debug)]
struct RunFlags {
    /// The script file; `-` reads it from standard input.
    #[arg(required_unless_present = "eval", conflicts_with = "eval")]
    script: Option<PathBuf>,
    /// Run CODE, given on the command line, instead of a script file.
    #[arg(short = 'e', long = "eval", value_name = "CODE")]
    eval: Option<String>,
    #[command(flatten)]
    session: SessionFlags,
    #[command(flatten)]
    limits: LimitFlags,
    /// Print one JSON object: ok, text, value, logs, images, calls, call_details, summary, error.
    #[arg(long)]
    json: bool,
    /// No live progress on standard error (shown only when it is a terminal): the count
    /// of calls, the tools being waited on, and console lines as the script writes them.
    #[arg(short, long)]
    quiet: bool,
    #[command(flatten)]
    sandbox: SandboxFlags,
}

/// Which guest runs the scripts, and whether its compiled form is cached.
#[derive(Args, Debug)]
struct SandboxFlags {
    /// Run the scripts in this guest component instead of the built-in one: any component of
    /// the exec-host:sandbox world (see wit/README.md). It is checked before anything runs.
    #[arg(long, value_name = "FILE.wasm")]
    guest: Option<PathBuf>,
    /// Do not read or write the compiled-guest cache.
    #[arg(long)]
    no_cache: bool,
    /// How long a script waiting for a tool keeps its thread spinning before it lets the
    /// core idle: answers within it resume the script on a warm core. 0 never spins.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = SandboxOptions::DEFAULT_WAIT_SPIN.as_micros() as u64,
          value_parser = clap::value_parser!(u64).range(0..=MAX_WAIT_SPIN_US))]
    wait_spin_us: u64,
}

/// The longest spin the command line takes: a second of a core per wait.
const MAX_WAIT_SPIN_US: u64 = 1_000_000;

impl SandboxFlags {
    fn options(&self) -> SandboxOptions {
        let cache_dir = if self.no_cache { None } else { exec_host::guest::default_cache_dir() };
        let guest = match &self.guest {
            Some(path) => GuestSource::File(path.clone()),
            None => GuestSource::Builtin,
        };
        SandboxOptions::default()
            .with_cache_dir(cache_dir)
            .with_guest(guest)
            .with_wait_spin(std::time::Duration::from_micros(self.wait_spin_us))
    }
}

#[derive(Args, Debug)]
struct ConformanceFlags {
    /// Run only the cases whose names contain one of these words.
    filter: Vec<String>,
    /// Read the cases from DIR (each NAME.js with its NAME.json) instead of the built-in ones.
    #[arg(long, value_name = "DIR")]
    cases: Option<PathBuf>,
    #[command(flatten)]
    sandbox: SandboxFlags,
}

#[derive(Args, Debug)]
struct ServeFlags {
    /// Serve one client on standard input and output (the default).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve MCP's streamable HTTP transport at http://ADDR/mcp. ADDR is `HOST:PORT`, or a
    /// port alone for 127.0.0.1 (port 0 picks a free one; the address is printed on stderr).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// File holding the bearer token every /mcp request must carry (`Authorization: Bearer
    /// <token>`); required when ADDR is not a loopback address.
    #[arg(long, value_name = "FILE", requires = "http")]
    auth_token_file: Option<PathBuf>,
    /// A browser origin allowed to call the server (`https://app.example.com:443`); repeat for
    /// more. A request with any other `Origin` is refused (loopback origins are allowed on a
    /// loopback address); requests without `Origin` are not browsers and pass.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// A `Host` header value accepted (`mcp.example.com`, or with a port); repeat for more.
    /// Default: the loopback names on a loopback address, any name elsewhere (the token
    /// guards it).
    #[arg(long, value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// Keep no state between HTTP requests, so any number of replicas can serve behind a load
    /// balancer: the announcement travels only in `instructions`, and calls that must ask
    /// are refused (there is no channel to ask the client on).
    #[arg(long, requires = "http")]
    stateless: bool,
    /// Tool calls run at once, over all clients; a call past it gets a "busy" failure.
    #[arg(long, value_name = "N", default_value_t = 16)]
    concurrency: u32,
    /// Tool calls one client (one MCP session) runs at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    client_concurrency: u32,
    /// MCP sessions open at once; a new one past it is answered 503 "busy".
    #[arg(long, value_name = "N", default_value_t = serve::http::DEFAULT_MAX_SESSIONS, requires = "http")]
    max_sessions: usize,
    /// Bytes of one message from the client (an HTTP request body, a line on stdin); a
    /// larger one is refused (HTTP 413, or JSON-RPC's parse error on stdio).
    #[arg(long, value_name = "BYTES", default_value_t = serve::http::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// Seconds a stopping HTTP server (SIGTERM, SIGINT) gives running calls before aborting them.
    #[arg(long, value_name = "SECONDS", default_value_t = serve::http::DEFAULT_GRACE.as_secs(), requires = "http")]
    grace: u64,
    #[command(flatten)]
    session: SessionFlags,
    #[command(flatten)]
    limits: LimitFlags,
    #[command(flatten)]
    sandbox: SandboxFlags,
}

/// What one script may use.
#[derive(Args, Debug)]
struct LimitFlags {
    /// Budget of the script's own running time, in milliseconds (waiting on tools is free).
    #[arg(long, value_name = "MS", default_value_t = exec_host::limits::DEFAULT_BUDGET.as_millis() as u64)]
    budget_ms: u64,
    /// Tool calls one script may make; the calls past it are refused one by one.
    #[arg(long, value_name = "N", default_value_t = exec_host::limits::DEFAULT_MAX_CALLS)]
    max_calls: u32,
    /// Characters of console output kept.
    #[arg(long, value_name = "N", default_value_t = exec_host::limits::DEFAULT_MAX_LOG_CHARS)]
    max_log_chars: usize,
    /// Characters of the returned value shown.
    #[arg(long, value_name = "N", default_value_t = exec_host::limits::DEFAULT_MAX_RESULT_CHARS)]
    max_result_chars: usize,
    /// Images attached to the result.
    #[arg(long, value_name = "N", default_value_t = exec_host::limits::DEFAULT_MAX_IMAGES)]
    max_images: usize,
    /// Memory of the script's sandbox, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = exec_host::limits::DEFAULT_MAX_MEMORY_BYTES >> 20)]
    max_memory_mib: u64,
    /// Cap on the total time the script may wait for tool calls, in milliseconds (default: none).
    #[arg(long, value_name = "MS")]
    max_nested_wait_ms: Option<u64>,
}

#[derive(Args, Debug)]
struct ToolsFlags {
    #[command(flatten)]
    session: SessionFlags,
    /// Print one JSON object: exec, declarations, pool, announcement, guidance, settings.
    #[arg(long, conflicts_with_all = ["dts", "stats"])]
    json: bool,
    /// Print a TypeScript declaration file of what a script can reach.
    #[arg(long, conflicts_with = "stats")]
    dts: bool,
    /// With --dts: print SCRIPT as Exec runs it (the body of an async function) followed by
    /// the declarations, one file for `tsc --noEmit` to check; its lines are the script's.
    #[arg(long, value_name = "SCRIPT", requires = "dts")]
    script: Option<PathBuf>,
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
    /// Print ToolSearch's result object as JSON: {matches, total}.
    #[arg(long)]
    json: bool,
}

/// Where the tools of one invocation come from, resolved from [`SessionFlags`].
struct SessionConfig {
    workspace: PathBuf,
    mcp: McpConfig,
    /// The files `mcp` was read from (the workspace tools may not write them).
    mcp_files: Vec<PathBuf>,
    mcp_connect_timeout: Duration,
    settings: Vec<PathBuf>,
    /// The rules given as flags.
    rules: Layer,
    permission_mode: Option<PermissionMode>,
}

/// Everything `run` needs, resolved from the flags.
struct RunConfig {
    code: String,
    session: SessionConfig,
    limits: Limits,
    json: bool,
    quiet: bool,
    sandbox: SandboxOptions,
}

/// Everything `serve` needs, resolved from the flags.
struct ServeConfig {
    session: SessionConfig,
    limits: Limits,
    sandbox: SandboxOptions,
    concurrency: u32,
    client_concurrency: u32,
    max_message_bytes: usize,
    /// `None`: stdio.
    http: Option<serve::http::HttpOptions>,
}

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
            let script = flags.script.as_deref().map(read_script).transpose();
            script.and_then(|script| {
                let dts = flags.dts.then_some(script);
                resolve_session(flags.session).and_then(|session| tools(session, flags.json, dts, flags.stats))
            })
        }
        Command::Search(flags) => {
            resolve_session(flags.session).and_then(|session| search(session, flags.query, flags.max_results, flags.json))
        }
        Command::Serve(flags) => resolve_serve(flags).and_then(serve),
        Command::Conformance(flags) => conformance::run(flags.sandbox.options(), flags.cases.as_deref(), &flags.filter),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "exec-host", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    };
    match outcome {
        Ok(code) => code,
        Err(UsageError(message)) => {
            eprintln!("exec-host: {}", terminal::err(&message));
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
    let session = resolve_session(flags.session)?;
    let limits = resolve_limits(&flags.limits)?;
    Ok(RunConfig { code, session, limits, json: flags.json, quiet: flags.quiet, sandbox: flags.sandbox.options() })
}

fn resolve_serve(flags: ServeFlags) -> Result<ServeConfig, UsageError> {
    let http = match &flags.http {
        None => None,
        Some(addr) => Some(resolve_http(addr, &flags)?),
    };
    if flags.concurrency == 0 || flags.client_concurrency == 0 || flags.max_body_bytes == 0 {
        return Err(UsageError("--concurrency, --client-concurrency and --max-body-bytes must be at least 1".into()));
    }
    let session = resolve_session(flags.session)?;
    let limits = resolve_limits(&flags.limits)?;
    Ok(ServeConfig {
        session,
        limits,
        sandbox: flags.sandbox.options(),
        concurrency: flags.concurrency,
        client_concurrency: flags.client_concurrency.min(flags.concurrency),
        max_message_bytes: flags.max_body_bytes,
        http,
    })
}

/// The HTTP service's options: the address (a port alone is on 127.0.0.1), the token (read
/// now, required off loopback), the bounds.
fn resolve_http(addr: &str, flags: &ServeFlags) -> Result<serve::http::HttpOptions, UsageError> {
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
const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// The bearer token in `file`: its text without surrounding whitespace; never empty.
fn read_token(file: &Path) -> Result<String, UsageError> {
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

fn resolve_limits(flags: &LimitFlags) -> Result<Limits, UsageError> {
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
fn command_line_rule_error(error: exec_host::settings::SettingsError) -> String {
    let list = error.key.as_deref().and_then(|key| key.strip_prefix("permissions.")).and_then(|key| key.split('[').next());
    match list {
        Some(list @ ("allow" | "ask" | "deny")) => format!("--{list}: {}", error.reason),
        _ => exec_host::error_sentence(&error),
    }
}

fn resolve_session(flags: SessionFlags) -> Result<SessionConfig, UsageError> {
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
    let rules = Layer::from_rules(&flags.allow, &flags.ask, &flags.deny).map_err(|e| UsageError(command_line_rule_error(e)))?;
    Ok(SessionConfig {
        workspace: flags.workspace,
        mcp,
        mcp_files: flags.mcp_config,
        mcp_connect_timeout: Duration::from_millis(flags.mcp_connect_timeout_ms),
        settings: flags.settings,
        rules,
        permission_mode: flags.permission_mode,
    })
}

fn shown(path: &Path) -> String {
    if path == Path::new("-") { "on standard input".into() } else { path.display().to_string() }
}

fn read_script(path: &Path) -> Result<String, UsageError> {
    use exec_host::text_file::{MAX_SCRIPT_FILE_BYTES, bounded_text, read_text};
    let read = if path == Path::new("-") {
        bounded_text(std::io::stdin().lock(), MAX_SCRIPT_FILE_BYTES)
    } else {
        read_text(path, MAX_SCRIPT_FILE_BYTES)
    };
    read.map_err(|e| UsageError(format!("the script {} {}", shown(path), exec_host::error_sentence(&e))))
}

/// How a session starts: its permission mode unless one is given, and who answers the calls
/// that must ask.
struct Start {
    mode: PermissionMode,
    approver: Arc<dyn exec_host::Approver>,
}

impl Start {
    /// `run`, `tools`, `search`: the script's author is the one running it, at a terminal
    /// when there is one.
    fn for_the_author() -> Self {
        Start { mode: PermissionMode::BypassPermissions, approver: approve::for_this_process() }
    }

    /// `serve`: scripts come from a model, and the MCP client is asked.
    fn for_a_model(approver: Arc<dyn exec_host::Approver>) -> Self {
        Start { mode: PermissionMode::Default, approver }
    }
}

/// The session of one invocation: its tools, settings and servers; a server that cannot
/// start is reported once and the others go on.
async fn start_session(
    config: SessionConfig,
    sandbox: SandboxOptions,
    limits: Limits,
    start: Start,
    abort: &CancellationToken,
) -> Result<Option<Session>, UsageError> {
    let explicit_mode = config.permission_mode;
    let mut builder = Session::builder()
        .workspace(&config.workspace)
        .standard_settings(&config.settings, Some(config.rules))
        .mcp_servers(config.mcp)
        .read_only_files(config.mcp_files)
        .mcp_connect_timeout(config.mcp_connect_timeout)
        .sandbox_options(sandbox)
        .limits(limits)
        .starting_permission_mode(start.mode)
        .approver(start.approver);
    if let Some(mode) = explicit_mode {
        builder = builder.permission_mode(mode);
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
    for failure in session.start_failures() {
        eprintln!("exec-host: warning: {}", terminal::err(&failure.to_string()));
    }
    Ok(Some(session))
}

fn run(config: RunConfig) -> Result<ExitCode, UsageError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let json = config.json;
    let result = runtime.block_on(async {
        // Listen first, so a signal during set-up ends the run cleanly too.
        let abort = CancellationToken::new();
        cancel_on_stop_signals(abort.clone())?;
        let sandbox = config.sandbox.with_max_concurrent_execs(4);
        let Some(session) = start_session(config.session, sandbox, config.limits, Start::for_the_author(), &abort).await? else {
            return Ok::<_, UsageError>(None);
        };
        // The script is a model's Exec call: authorized like one, reaching the same pool.
        let call = ToolCall::new(run_id(), exec_host::exec_tool::NAME, json!({ "code": config.code }));
        let progress = progress::Progress::for_stderr(config.quiet);
        let options = CallOptions::new(abort);
        let options = match &progress {
            Some(progress) => progress.watch(options),
            None => options,
        };
        let result = session.call_with(call, options).await;
        if let Some(progress) = &progress {
            progress.finish();
        }
        // The result is out before the servers are closed: closing them never delays it.
        print_result(&result, json);
        session.shutdown().await;
        Ok(Some(result.ok()))
    })?;
    match result {
        None => {
            eprintln!("exec-host: interrupted before the script started");
            Ok(ExitCode::from(1))
        }
        Some(true) => Ok(ExitCode::SUCCESS),
        Some(false) => Ok(ExitCode::from(1)),
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
        let start = Start::for_a_model(Arc::new(nobody));
        let (mcp_files, mcp) = (config.session.mcp_files.clone(), config.session.mcp.clone());
        let Some(session) = start_session(config.session, sandbox, config.limits, start, &signal).await? else {
            return Ok(ExitCode::from(1));
        };
        let following = tokio::spawn(serve::reload::follow(session.clone(), mcp_files, mcp, signal.clone()));
        let capacity = serve::Capacity::new(config.concurrency, config.client_concurrency);
        let served = match config.http {
            Some(options) => serve::http::serve(session.clone(), options, capacity, signal.clone())
                .await
                .map_err(|e| UsageError(format!("the HTTP server failed: {e}"))),
            None => serve::stdio::serve(&session, capacity, config.max_message_bytes, signal.clone()).await.map_err(UsageError),
        };
        signal.cancel();
        // A server it is starting now would only be closed again.
        following.abort();
        session.shutdown().await;
        served.map(|()| ExitCode::SUCCESS)
    })
}

/// Cancels `abort` on the first SIGINT (Ctrl-C), SIGTERM or SIGHUP (the terminal went
/// away): the script is aborted and the MCP servers are shut down, never left behind.
fn cancel_on_stop_signals(abort: CancellationToken) -> std::io::Result<()> {
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

/// The id of a run's `Exec` call: unique enough to name its kept result.
fn run_id() -> String {
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("run-{millis}-{}", std::process::id())
}

/// Starts the session, hands it to `report`, then closes its servers.
fn with_session<T>(config: SessionConfig, report: impl FnOnce(&Session) -> Result<T, UsageError>) -> Result<T, UsageError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let sandbox = SandboxOptions::default().with_max_concurrent_execs(1);
        let abort = CancellationToken::new();
        cancel_on_stop_signals(abort.clone())?;
        let Some(session) = start_session(config, sandbox, Limits::default(), Start::for_the_author(), &abort).await? else {
            return Err(UsageError("stopped by a signal before the tools were listed".into()));
        };
        let result = report(&session);
        session.shutdown().await;
        result
    })
}

/// `exec-host tools`; `dts` is `Some` for `--dts`, with the script of `--script`.
fn tools(config: SessionConfig, as_json: bool, dts: Option<Option<String>>, stats: bool) -> Result<ExitCode, UsageError> {
    let text = with_session(config, |session| {
        let pool = session.pool().map_err(UsageError::from)?;
        Ok(if let Some(script) = dts {
            let declarations = session.declaration_file().map_err(UsageError::from)?;
            match script {
                Some(script) => exec_host::typings::checkable_script(&script, &declarations),
                None => declarations,
            }
        } else if stats {
            let prepared = session.prepare(&[]).map_err(UsageError::from)?;
            declaration_stats(&pool, prepared.append.first())
        } else if as_json {
            let prepared = session.prepare(&[]).map_err(UsageError::from)?;
            let announcement = prepared.append.first().map(|message| message.text());
            let object = json!({
                "exec": pool.exec_status(),
                "declarations": &*prepared.declarations,
                "pool": pool.names().collect::<Vec<_>>(),
                "announcement": announcement,
                "guidance": &*prepared.guidance,
                "settings": settings_in_force(session),
            });
            format!("{object}\n")
        } else {
            describe_pool(session, &pool)?
        })
    })?;
    print!("{}", terminal::out(&text));
    Ok(ExitCode::SUCCESS)
}

/// `exec-host tools` for people: what is declared, what is pooled, Exec's description.
fn describe_pool(session: &Session, pool: &Pool) -> Result<String, UsageError> {
    let mut out = String::new();
    let prepared = session.prepare(&[]).map_err(UsageError::from)?;
    let status = pool.exec_status();
    if pool.exec_declared() {
        out += &format!("{status}; {} tools are in the pool behind it.\n", pool.pooled().len());
    } else {
        out += &format!("{status}; every tool is declared flat.\n");
    }
    out += &format!("\nDeclared to the model ({}):\n", prepared.declarations.len());
    for declaration in prepared.declarations.iter() {
        out += &format!("  {}\n", declaration.name);
    }
    if pool.exec_declared() {
        out += &format!("\nPool ({}), reachable from Exec scripts and found with tools.ToolSearch:\n", pool.pooled().len());
        for name in pool.names() {
            out += &format!("  {name}\n");
        }
        out += "\nExec's description (the same for every pool):\n";
        out += &indented(exec_tool::description());
    }
    if let Some(announcement) = prepared.append.first() {
        out += "\nAnnouncement appended to the first request of a conversation:\n";
        out += &indented(&announcement.text());
    }
    if !prepared.guidance.is_empty() {
        out += "\nGuidance for the system prompt:\n";
        out += &indented(&prepared.guidance);
    }
    let files = settings_in_force(session);
    out += &if files.is_empty() {
        "\nSettings: none found, defaults apply.\n".to_string()
    } else {
        format!("\nSettings: {}\n", files.join(", "))
    };
    Ok(out)
}

fn indented(text: &str) -> String {
    text.lines().map(|line| format!("{}\n", format!("  | {line}").trim_end())).collect()
}

/// The settings files that exist, highest layer first.
fn settings_in_force(session: &Session) -> Vec<String> {
    session.settings_files().iter().filter(|file| file.is_file()).map(|file| file.display().to_string()).collect()
}

/// `exec-host tools --stats`: the declarations' size with Exec and with every tool flat,
/// and the announcement that Exec mode adds once per conversation.
fn declaration_stats(exec_pool: &Pool, announcement: Option<&exec_host::Message>) -> String {
    // The library's own estimate, the one compaction counts with.
    use exec_host::limits::CHARS_PER_TOKEN;
    let size = |declarations: &[exec_host::Declaration]| {
        let bytes = serde_json::to_string(declarations).map(|text| text.len()).unwrap_or(0);
        (declarations.len(), bytes)
    };
    let (exec_count, exec_bytes) = size(&exec_pool.declarations());
    let (flat_count, flat_bytes) = size(&exec_pool.declarations_without_exec());
    let tokens = |bytes: usize| bytes.div_ceil(CHARS_PER_TOKEN);
    let row = |label: &str, count: usize, bytes: usize| format!("{label:<14}{count:>8}{bytes:>10}{:>10}\n", tokens(bytes));
    let mut out = format!("{:<14}{:>8}{:>10}{:>10}\n", "", "count", "bytes", "~tokens");
    out += &row("Exec mode", exec_count, exec_bytes);
    out += &row("flat mode", flat_count, flat_bytes);
    if let Some(announcement) = announcement {
        out += &row("announcement", exec_pool.pooled().len(), announcement.text().len());
    }
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
    out += "Counts are declarations, and for the announcement the pool's names it lists; it is sent once per \
conversation (again when the pool changes), not in every request.\n";
    out += &format!(
        "Bytes are UTF-8 bytes of the declarations as compact JSON and of the announcement's text; tokens are estimated \
as bytes / {CHARS_PER_TOKEN}, rounded up (a model-independent rule of thumb, not a tokenizer).\n"
    );
    out
}

fn search(config: SessionConfig, query: String, max_results: Option<usize>, as_json: bool) -> Result<ExitCode, UsageError> {
    let result = with_session(config, |session| session.search(query.clone(), max_results).map_err(UsageError::from))?;
    if as_json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        for found in &result.matches {
            if !found.description.trim().is_empty() {
                println!("{}", terminal::out(&exec_host::typings::doc_comment(&found.description, 0)));
            }
            println!("{}\n", terminal::out(&found.signature));
        }
        let shown = result.matches.len();
        match result.total {
            0 => eprintln!("no tool matches {}", terminal::err(&format!("{query:?}"))),
            total if total > shown => {
                eprintln!("{shown} of {total} matching tools shown; narrow the query or raise --max-results")
            }
            total => eprintln!("{total} matching tool{}", if total == 1 { "" } else { "s" }),
        }
    }
    Ok(if result.total == 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn print_result(result: &ToolResult, as_json: bool) {
    let client = &result.client;
    let mut stdout = std::io::stdout().lock();
    if as_json {
        let details: Vec<Value> = client
            .calls
            .iter()
            .map(|call| {
                json!({
                    "name": call.name,
                    "ok": call.ok(),
                    "stage": call.stage(),
                    "ms": (call.duration.as_secs_f64() * 1e6).round() / 1e3,
                })
            })
            .collect();
        let object = json!({
            "ok": result.ok(),
            "text": result.text(),
            "value": result.value().cloned().unwrap_or(Value::Null),
            "logs": client.logs,
            "images": client.images,
            "calls": result.call_names(),
            "call_details": details,
            "messages": result.messages.iter().map(exec_host::Message::text).collect::<Vec<_>>(),
            "summary": result.summary(),
            "error": client.failure.as_ref().map(|failure| &failure.message),
        });
        let _ = writeln!(stdout, "{object}");
    } else {
        let _ = writeln!(stdout, "{}", terminal::out(result.text()));
        let _ = stdout.flush();
        if !client.images.is_empty() {
            eprintln!("[{} image(s) attached; --json prints them]", client.images.len());
        }
        if let Some(summary) = &client.summary {
            eprintln!("{}", terminal::err(summary));
        }
        for message in &result.messages {
            eprintln!("[{}]", terminal::err(&message.text()));
        }
    }
    if let Some(location) = result.compacted.as_ref().and_then(|compacted| compacted.location.as_ref()) {
        let total = result.compacted.as_ref().map_or(0, |compacted| compacted.total_chars);
        eprintln!("[the whole result ({total} characters) is in {location}]");
    }
}
