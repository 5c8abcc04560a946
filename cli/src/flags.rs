//! The command line's flags, as parsed: one struct per command and per group of flags.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use exec_host::SandboxOptions;
use exec_host::guest::GuestSource;
use exec_host::settings::PermissionMode;

use crate::park::OnAsk;
use crate::serve;

#[derive(Parser, Debug)]
#[command(name = "exec-host", version, about = "Run JavaScript Exec scripts in a WebAssembly sandbox that orchestrates tools")]
pub(crate) struct Cli {
    /// More log output on stderr (-v: info, -vv: debug). RUST_LOG overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The id of the permission-rule flag that refuses calls: `--deny` everywhere but `resume`.
const DENY_RULE: &str = "deny_rule";

const RESUME_DENY_RULE_HELP: &str =
    "A permission rule that refuses calls, as `run --deny` (here `--deny` answers a waiting call); repeatable";

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Run a script (the body of an async function) as a model's Exec call, and print its result.
    Run(RunFlags),
    /// Continue an Exec that parked (`run --on-ask park`, exit status 3) with answers to what
    /// it waits for, and print its result as `run` would have had it never stopped.
    // One meaning per flag: here `--deny` answers a waiting call, so the rule is `--deny-rule`.
    #[command(mut_arg(DENY_RULE, |rule| rule.long("deny-rule").help(RESUME_DENY_RULE_HELP)))]
    Resume(ResumeFlags),
    /// Print what a model would be given: the declarations, Exec's description, the pool.
    Tools(ToolsFlags),
    /// Find tools as a script's tools.ToolSearch does, with their call forms.
    Search(SearchFlags),
    /// Print part of a result that was shortened (kept by `run` and `serve` under its call
    /// id, as the shortened result says): what a model reads with `view_tool_call`.
    View(ViewFlags),
    /// Serve the session over MCP (stdio, or streamable HTTP at /mcp): one constant `Exec`
    /// tool in front of every configured MCP server, for any MCP client.
    Serve(ServeFlags),
    /// Run the WIT-level conformance cases against a guest component (the built-in one by
    /// default) and print a table of which pass.
    Conformance(ConformanceFlags),
    /// Sign in to, sign out of and list the configured MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Say what works on this machine and why not: the guest's compiled cache, each layer
    /// of `Bash`'s confinement, each configured MCP server and API, the state store, the
    /// settings files in force and their warnings. Exit status 0 when everything configured
    /// works, 1 otherwise. Give it the flags `run` or `serve` gets.
    Doctor(DoctorFlags),
    /// Print the manual page (roff) on stdout.
    #[command(after_help = "Install it where man looks, for example:\n  \
        mkdir -p ~/.local/share/man/man1 && exec-host man > ~/.local/share/man/man1/exec-host.1")]
    Man,
    /// Print a completion script for SHELL (bash, elvish, fish, powershell, zsh) on stdout.
    #[command(after_help = "Install it where your shell looks, for example:\n  \
        exec-host completions bash > ~/.local/share/bash-completion/completions/exec-host\n  \
        exec-host completions zsh > ~/.zfunc/_exec-host   (with ~/.zfunc in fpath)\n  \
        exec-host completions fish > ~/.config/fish/completions/exec-host.fish")]
    Completions { shell: clap_complete::Shell },
}

#[derive(Subcommand, Debug)]
pub(crate) enum McpCommand {
    /// Sign in to the HTTP server NAME, or the API NAME whose `auth` is the OAuth authorization
    /// code flow: opens the authorization URL with $BROWSER (or prints it), waits for the
    /// redirect back, and keeps the tokens for `run` and `serve`.
    Login {
        name: String,
        /// NAME is the API of that name (needed only when an MCP server has the same name).
        #[arg(long)]
        api: bool,
        /// How long to wait for the sign-in to finish, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = exec_host::mcp::DEFAULT_LOGIN_WAIT.as_secs())]
        wait: u64,
        #[command(flatten)]
        session: SessionFlags,
    },
    /// Forget the tokens kept for NAME.
    Logout {
        name: String,
        /// NAME is the API of that name (needed only when an MCP server has the same name).
        #[arg(long)]
        api: bool,
        #[command(flatten)]
        session: SessionFlags,
    },
    /// Each configured server: its transport, whether it connects (or why not), its tool
    /// count, and whether it is signed in; then each API, with its operation count and, for
    /// one a person signs in to, whether it is signed in.
    List {
        /// One JSON object per server, one per line.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        session: SessionFlags,
    },
}

/// Where the tools come from: the workspace, MCP servers, settings.
#[derive(Args, Debug)]
pub(crate) struct SessionFlags {
    /// Directory the workspace tools work in (its `.exec-host/settings.json` is the project settings).
    #[arg(long, default_value = ".")]
    pub(crate) workspace: PathBuf,
    /// MCP server configuration (`{"mcpServers": {...}}`, as Claude Desktop and Claude Code
    /// keep it), with HTTP APIs described by OpenAPI beside them (`"apis": {...}`, see
    /// docs/http-apis.md); repeat the flag to combine files. Their tools are
    /// `tools.mcp__<server>__<tool>` and `tools.api__<api>__<operation>`.
    #[arg(long, value_name = "FILE")]
    pub(crate) mcp_config: Vec<PathBuf>,
    /// Where the OAuth tokens of HTTP MCP servers and APIs are kept (`exec-host mcp login`
    /// writes them); default `$XDG_DATA_HOME/exec-host/credentials.json`.
    #[arg(long, value_name = "FILE")]
    pub(crate) mcp_credentials: Option<PathBuf>,
    /// Time each MCP server has to start and list its tools, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = exec_host::mcp::DEFAULT_CONNECT_TIMEOUT.as_millis() as u64)]
    pub(crate) mcp_connect_timeout_ms: u64,
    /// A settings file (`permissions`, `hooks`, `enableExec`, `nonDeferredTools`), above the
    /// project and user files and below the managed one; repeat it, the last one wins.
    #[arg(long, value_name = "FILE")]
    pub(crate) settings: Vec<PathBuf>,
    /// Offers the `Bash` tool: shell commands in the workspace, confined (Landlock, seccomp,
    /// namespaces, limits), asked before they run unless a rule allows them
    /// (`--allow 'Bash(npm test:*)'`). As `"enableBash": true` in a settings file; a managed
    /// `"enableBash": false` wins.
    #[arg(long)]
    pub(crate) enable_bash: bool,
    /// A permission rule that lets calls run (`write_file`, `mcp__srv`, `read_file(docs/**)`);
    /// repeatable. Rules given here sit above every settings file but the managed one.
    #[arg(long, value_name = "RULE")]
    pub(crate) allow: Vec<String>,
    /// A permission rule that asks before calls run; repeatable.
    #[arg(long, value_name = "RULE")]
    pub(crate) ask: Vec<String>,
    /// A permission rule that refuses calls; repeatable. `resume` calls it `--deny-rule`, as
    /// its `--deny` answers a waiting call.
    #[arg(long = "deny", id = DENY_RULE, value_name = "RULE")]
    pub(crate) deny: Vec<String>,
    /// The permission mode: default, acceptEdits, dontAsk or bypassPermissions (`run`
    /// starts in bypassPermissions: its user wrote the script; ask and deny rules still apply;
    /// `serve` starts in default: its scripts come from a model).
    #[arg(long, value_name = "MODE", value_parser = PermissionMode::parse)]
    pub(crate) permission_mode: Option<PermissionMode>,
}

#[derive(Args, Debug)]
pub(crate) struct RunFlags {
    /// The script file; `-` reads it from standard input.
    #[arg(required_unless_present = "eval", conflicts_with = "eval")]
    pub(crate) script: Option<PathBuf>,
    /// Run CODE, given on the command line, instead of a script file.
    #[arg(short = 'e', long = "eval", value_name = "CODE")]
    pub(crate) eval: Option<String>,
    #[command(flatten)]
    pub(crate) exec: ExecFlags,
    /// The conversation a parked Exec belongs to (default: a new one for this run).
    #[arg(long, value_name = "ID")]
    pub(crate) conversation: Option<String>,
}

/// How one Exec runs and is shown: `run` and `resume` alike.
#[derive(Args, Debug)]
pub(crate) struct ExecFlags {
    #[command(flatten)]
    pub(crate) session: SessionFlags,
    #[command(flatten)]
    pub(crate) limits: LimitFlags,
    /// Print one JSON object: ok, text, value, logs, images, calls, call_details, messages,
    /// summary, error, error_stage (and paused, for a script that parked).
    #[arg(long)]
    pub(crate) json: bool,
    /// No live progress on standard error (shown only when it is a terminal): the count
    /// of calls, the tools being waited on, and console lines as the script writes them.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) sandbox: SandboxFlags,
    /// What a call that must ask gets: `prompt` asks on the terminal (the default there),
    /// `park` parks the Exec (stored; `exec-host resume` continues it; exit status 3),
    /// `refuse` refuses it (the default off a terminal).
    #[arg(long, value_enum, value_name = "WHAT")]
    pub(crate) on_ask: Option<OnAsk>,
    /// An MCP server that asks for input during a call (a form) gets the form's defaults,
    /// when every required field has one, instead of a prompt on the terminal (or, off a
    /// terminal, instead of not being allowed to ask).
    #[arg(long)]
    pub(crate) accept_input_defaults: bool,
    #[command(flatten)]
    pub(crate) state: StateFlags,
}

/// Where parked Execs and kept values are kept.
#[derive(Args, Debug)]
pub(crate) struct StorePlaceFlags {
    /// Where parked Execs and kept values are kept: a folder (default:
    /// $XDG_STATE_HOME/exec-host/store), or redis://HOST:PORT[/DB] to share them between hosts.
    #[arg(long, value_name = "DIR|redis://HOST:PORT[/DB]")]
    pub(crate) state_store: Option<String>,
    /// The key that seals what is stored: 64 hex digits in a file only you can read (default:
    /// state.key beside the default folder, made when missing). Hosts that resume each
    /// other's Execs share it.
    #[arg(long, value_name = "FILE")]
    pub(crate) state_key_file: Option<PathBuf>,
}

impl StorePlaceFlags {
    pub(crate) fn places(&self) -> exec_host::state::StorePlaces {
        exec_host::state::StorePlaces::new(self.state_store.clone(), self.state_key_file.clone())
    }
}

/// Where parked Execs and kept values are kept, and what kept values may take.
#[derive(Args, Debug)]
pub(crate) struct StateFlags {
    #[command(flatten)]
    pub(crate) places: StorePlaceFlags,
    /// Bytes of one value a script keeps with store(key, value), as JSON.
    #[arg(long, value_name = "BYTES", default_value_t = exec_host::state::DEFAULT_MAX_VALUE_BYTES)]
    pub(crate) max_stored_value_bytes: usize,
    /// Keys one conversation's scripts keep with store().
    #[arg(long, value_name = "N", default_value_t = exec_host::state::DEFAULT_MAX_VALUE_KEYS)]
    pub(crate) max_stored_keys: usize,
    /// Bytes one conversation's kept values take, keys and values together (at most 8 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = exec_host::state::DEFAULT_MAX_CONVERSATION_VALUE_BYTES)]
    pub(crate) max_stored_bytes: usize,
    /// Seconds this host's claim on an Exec it runs after it yielded (a task of `serve`)
    /// lasts unless renewed: another host sharing the store takes the Exec up from its last
    /// checkpoint this long after this one stopped.
    #[arg(long, value_name = "SECONDS", default_value_t = exec_host::DEFAULT_RUNNING_LEASE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) running_lease: u64,
}

#[derive(Args, Debug)]
pub(crate) struct ResumeFlags {
    /// The parked Exec, as `run` printed it: CONVERSATION/HANDLE.
    pub(crate) handle: String,
    /// Allow a waiting call once, by its id, or every one with `all`; repeatable.
    #[arg(long, value_name = "ID|all")]
    pub(crate) approve: Vec<String>,
    /// Allow a waiting call and save the rule so it does not ask again; repeatable.
    #[arg(long, value_name = "ID")]
    pub(crate) approve_always: Vec<u32>,
    /// Refuse a waiting call by its id (the script's await rejects with REASON); repeatable.
    /// A permission rule is `--deny-rule` here.
    #[arg(long, value_name = "ID[=REASON]")]
    pub(crate) deny: Vec<String>,
    #[command(flatten)]
    pub(crate) exec: ExecFlags,
}

/// Which guest runs the scripts, and whether its compiled form is cached.
#[derive(Args, Debug)]
pub(crate) struct SandboxFlags {
    /// Run the scripts in this guest component instead of the built-in one: any component of
    /// the exec-host:sandbox world (see wit/README.md). It is checked before anything runs.
    #[arg(long, value_name = "FILE.wasm")]
    pub(crate) guest: Option<PathBuf>,
    /// Do not read or write the compiled-guest cache.
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// How long a script waiting for a tool keeps its thread spinning before it lets the
    /// core idle: answers within it resume the script on a warm core. It never spins while
    /// another process (an MCP server, an HTTP API, a command) answers. 0 never spins.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = SandboxOptions::DEFAULT_WAIT_SPIN.as_micros() as u64,
          value_parser = clap::value_parser!(u64).range(0..=MAX_WAIT_SPIN_US))]
    pub(crate) wait_spin_us: u64,
    /// The time zone scripts see as the host's, an IANA name (Europe/Paris): Intl's default.
    /// By default TZ when it names a zone, else the zone /etc/localtime links to, else UTC.
    #[arg(long, value_name = "ZONE")]
    pub(crate) time_zone: Option<String>,
}

/// The longest spin the command line takes: a second of a core per wait.
pub(crate) const MAX_WAIT_SPIN_US: u64 = 1_000_000;

impl SandboxFlags {
    pub(crate) fn options(&self) -> SandboxOptions {
        let cache_dir = if self.no_cache { None } else { exec_host::guest::default_cache_dir() };
        let guest = match &self.guest {
            Some(path) => GuestSource::File(path.clone()),
            None => GuestSource::Builtin,
        };
        let options = SandboxOptions::default()
            .with_cache_dir(cache_dir)
            .with_guest(guest)
            .with_wait_spin(std::time::Duration::from_micros(self.wait_spin_us));
        match &self.time_zone {
            Some(zone) => options.with_time_zone(zone.clone()),
            None => options,
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct ConformanceFlags {
    /// Run only the cases whose names contain one of these words.
    pub(crate) filter: Vec<String>,
    /// Read the cases from DIR (each NAME.js with its NAME.json) instead of the built-in ones.
    #[arg(long, value_name = "DIR")]
    pub(crate) cases: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) sandbox: SandboxFlags,
}

#[derive(Args, Debug)]
pub(crate) struct ServeFlags {
    /// Serve one client on standard input and output (the default).
    #[arg(long, conflicts_with = "http")]
    pub(crate) stdio: bool,
    /// Serve MCP's streamable HTTP transport at http://ADDR/mcp. ADDR is `HOST:PORT`, or a
    /// port alone for 127.0.0.1 (port 0 picks a free one; the address is printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<String>,
    /// File holding the bearer token every /mcp request must carry (`Authorization: Bearer
    /// <token>`); required when ADDR is not a loopback address.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) auth_token_file: Option<PathBuf>,
    /// A browser origin allowed to call the server (`https://app.example.com:443`); repeat for
    /// more. A request with any other `Origin` is refused (loopback origins are allowed on a
    /// loopback address); requests without `Origin` are not browsers and pass.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub(crate) allow_origin: Vec<String>,
    /// A `Host` header value accepted (`mcp.example.com`, or with a port); repeat for more.
    /// Default: the loopback names on a loopback address, any name elsewhere (the token
    /// guards it).
    #[arg(long, value_name = "HOST", requires = "http")]
    pub(crate) allow_host: Vec<String>,
    /// Keep no state between HTTP requests in the process, so any number of replicas can serve
    /// behind a load balancer: the announcement travels only in `instructions`. Calls that must
    /// ask reach clients of MCP 2026-07-28 as forms in the call's answer, and any replica
    /// sharing the --state-store (Redis) and its key resumes them; clients of 2025-11-25
    /// cannot be asked, and such calls are refused.
    #[arg(long, requires = "http")]
    pub(crate) stateless: bool,
    /// Tool calls run at once, over all clients; a call past it gets a "busy" failure.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub(crate) concurrency: u32,
    /// Tool calls one client (one MCP session) runs at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub(crate) client_concurrency: u32,
    /// MCP sessions open at once; a new one past it is answered 503 "busy".
    #[arg(long, value_name = "N", default_value_t = serve::http::DEFAULT_MAX_SESSIONS, requires = "http")]
    pub(crate) max_sessions: usize,
    /// Bytes of one message from the client (an HTTP request body, a line on stdin); a
    /// larger one is refused (HTTP 413, or JSON-RPC's parse error on stdio).
    #[arg(long, value_name = "BYTES", default_value_t = serve::http::DEFAULT_MAX_BODY_BYTES)]
    pub(crate) max_body_bytes: usize,
    /// Seconds a stopping HTTP server (SIGTERM, SIGINT) gives running calls before aborting them.
    #[arg(long, value_name = "SECONDS", default_value_t = serve::http::DEFAULT_GRACE.as_secs(), requires = "http")]
    pub(crate) grace: u64,
    /// Send traces (a span per call, Exec and nested call) to this OpenTelemetry collector's
    /// OTLP/HTTP address, e.g. http://localhost:4318. Without it, OTEL_EXPORTER_OTLP_ENDPOINT
    /// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turn traces on; with none of them they are off.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    #[command(flatten)]
    pub(crate) session: SessionFlags,
    #[command(flatten)]
    pub(crate) limits: LimitFlags,
    #[command(flatten)]
    pub(crate) sandbox: SandboxFlags,
    #[command(flatten)]
    pub(crate) state: StateFlags,
}

/// What one script may use.
#[derive(Args, Debug)]
pub(crate) struct LimitFlags {
    /// Budget of the script's own running time, in milliseconds (waiting on tools is free).
    #[arg(long, value_name = "MS", default_value_t = exec_host::limits::DEFAULT_BUDGET.as_millis() as u64)]
    pub(crate) budget_ms: u64,
    /// Tool calls one script may make; the calls past it are refused one by one.
    #[arg(long, value_name = "N", default_value_t = exec_host::limits::DEFAULT_MAX_CALLS)]
    pub(crate) max_calls: u32,
    /// Characters of console output kept.
    #[arg(long, value_name = "N", default_value_t = exec_host::limits::DEFAULT_MAX_LOG_CHARS)]
    pub(crate) max_log_chars: usize,
    /// Characters of the returned value shown.
    #[arg(long, value_name = "N", default_value_t = exec_host::limits::DEFAULT_MAX_RESULT_CHARS)]
    pub(crate) max_result_chars: usize,
    /// Images attached to the result.
    #[arg(long, value_name = "N", default_value_t = exec_host::limits::DEFAULT_MAX_IMAGES)]
    pub(crate) max_images: usize,
    /// Memory of the script's sandbox, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = exec_host::limits::DEFAULT_MAX_MEMORY_BYTES >> 20)]
    pub(crate) max_memory_mib: u64,
    /// Cap on the total time the script may wait for tool calls, in milliseconds (default: none).
    #[arg(long, value_name = "MS")]
    pub(crate) max_nested_wait_ms: Option<u64>,
}

#[derive(Args, Debug)]
pub(crate) struct ToolsFlags {
    #[command(flatten)]
    pub(crate) session: SessionFlags,
    /// Print one JSON object: exec, declarations, pool, announcement, guidance, settings.
    #[arg(long, conflicts_with_all = ["dts", "stats"])]
    pub(crate) json: bool,
    /// Print a TypeScript declaration file of what a script can reach.
    #[arg(long, conflicts_with = "stats")]
    pub(crate) dts: bool,
    /// With --dts: print SCRIPT as Exec runs it (the body of an async function) followed by
    /// the declarations, one file for `tsc --noEmit` to check; its lines are the script's.
    #[arg(long, value_name = "SCRIPT", requires = "dts")]
    pub(crate) script: Option<PathBuf>,
    /// Print the size of the declarations with Exec and without it, side by side.
    #[arg(long)]
    pub(crate) stats: bool,
}

#[derive(Args, Debug)]
pub(crate) struct ViewFlags {
    /// The call id the shortened result names (`run-...` for `run`).
    pub(crate) id: String,
    /// The character to start at (the previous part says where the next one starts).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) offset: usize,
    /// Characters to print (8000 unless given, at most 8000).
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) session: SessionFlags,
}

#[derive(Args, Debug)]
pub(crate) struct DoctorFlags {
    #[command(flatten)]
    pub(crate) session: SessionFlags,
    #[command(flatten)]
    pub(crate) sandbox: SandboxFlags,
    #[command(flatten)]
    pub(crate) store: StorePlaceFlags,
    /// Print one JSON object per check: {"check", "status" (ok, warning, failed), "detail"}.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args, Debug)]
pub(crate) struct SearchFlags {
    /// Keywords, `select:name1,name2`, or "" for every tool.
    pub(crate) query: String,
    #[command(flatten)]
    pub(crate) session: SessionFlags,
    /// Matches shown for keywords (as ToolSearch's `max_results`).
    #[arg(long, value_name = "N")]
    pub(crate) max_results: Option<usize>,
    /// Print ToolSearch's result object as JSON: {matches, total}.
    #[arg(long)]
    pub(crate) json: bool,
}
