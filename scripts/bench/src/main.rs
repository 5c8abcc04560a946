//! Benchmarks exec-host on the peers' workloads and, in the same run, the peer
//! implementations themselves, then prints medians side by side with ratios.
//!
//! ```text
//! cargo run --release -p exec-host-bench -- [--peers DIR] [--quick] [--only=a,b] [--record FILE]
//! ```
//!
//! `--record FILE` appends one JSON line to FILE: the commit measured, the date, the
//! machine's cores and the median of every benchmark run (ours only), so a history of the
//! figures per commit (`docs/bench-history.jsonl`) shows a regression.
//!
//! `--peers DIR` (or `EXEC_HOST_PEERS`) points at a folder holding the peer implementations
//! (`node-vm-worker/`, `quickjs-emscripten/`, each with `bench.mjs`); they are copied into
//! the target folder, installed with `npm ci` and run with Node. Without it only exec-host
//! is measured. Our lines use the peers' JSON format, so one aggregator reads both.
//!
//! The `mcp_*` benchmarks call the rmcp fixture server of the test crate over stdio; build
//! it first (`cargo build --release --workspace --bins`). Their table compares the script
//! path with the host's own path and with the TypeScript SDK client in Node.

mod mcp;
mod parking;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use exec_host::{Failure, Limits, Sandbox, SandboxOptions, ToolResult};
use exec_host_bench::stats::{median, p90, round1};
use exec_host_tests::{FixtureTool, Harness};
use serde_json::{Value, json};

const BIG_BUDGET: Duration = Duration::from_secs(60);

/// The built-in guest component as a file in the bench's folder, for `process_first_run`.
const GUEST_FILE: &str = "guest.wasm";

/// Trivial Execs one `throughput_N` sample runs.
const THROUGHPUT_EXECS: usize = 2_000;

const COMPUTE: &str = r#"
const t0 = Date.now();
let sum = 0;
for (let i = 0; i < 5e6; i++) sum += i * i;
const t1 = Date.now();
const arr = [];
for (let i = 0; i < 10000; i++) arr.push({ id: i, name: 'item' + i, tags: ['a', 'b', 'c'], score: i * 0.5, ok: i % 2 === 0 });
const back = JSON.parse(JSON.stringify(arr));
const t2 = Date.now();
return { sum, len: back.length, last: back[9999].name, loop_ms: t1 - t0, json_ms: t2 - t1 };
"#;

struct Bench {
    name: &'static str,
    samples: usize,
    quick_samples: usize,
    warmup: usize,
}

const BENCHES: &[Bench] = &[
    Bench { name: "trivial", samples: 200, quick_samples: 20, warmup: 10 },
    Bench { name: "calls_seq_1000", samples: 10, quick_samples: 2, warmup: 3 },
    Bench { name: "calls_parallel_100", samples: 10, quick_samples: 2, warmup: 2 },
    Bench { name: "sleep_10", samples: 20, quick_samples: 5, warmup: 2 },
    Bench { name: "payload_1mb", samples: 20, quick_samples: 3, warmup: 3 },
    Bench { name: "compute", samples: 5, quick_samples: 1, warmup: 1 },
    Bench { name: "concurrent_100", samples: 3, quick_samples: 1, warmup: 1 },
    Bench { name: "spin_budget", samples: 5, quick_samples: 2, warmup: 1 },
    Bench { name: "spin_budget_after_sleep", samples: 5, quick_samples: 2, warmup: 1 },
    Bench { name: "process_trivial", samples: 30, quick_samples: 5, warmup: 3 },
    Bench { name: "process_first_run", samples: 5, quick_samples: 1, warmup: 1 },
    Bench { name: "calls_seq_waiting", samples: 5, quick_samples: 2, warmup: 1 },
    Bench { name: "calls_seq_hop", samples: 5, quick_samples: 2, warmup: 1 },
    Bench { name: "resume_native", samples: 5, quick_samples: 2, warmup: 1 },
    Bench { name: "mcp_seq", samples: 30, quick_samples: 5, warmup: 3 },
    Bench { name: "mcp_parallel_100", samples: 20, quick_samples: 3, warmup: 3 },
    Bench { name: "search_1000_tools", samples: 10, quick_samples: 2, warmup: 2 },
    Bench { name: "prepare_1000_tools", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "flat_call", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "policy_50_rules", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "hooks", samples: 10, quick_samples: 2, warmup: 1 },
    Bench { name: "throughput_1", samples: 5, quick_samples: 1, warmup: 1 },
    Bench { name: "throughput_2", samples: 5, quick_samples: 1, warmup: 1 },
    Bench { name: "throughput_16", samples: 5, quick_samples: 1, warmup: 1 },
    Bench { name: "park_trivial", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "park_after_10_calls", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "park_after_100_calls", samples: 10, quick_samples: 2, warmup: 1 },
    Bench { name: "resume_same_session", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "resume_fresh_session", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "resume_redis", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "resume_process", samples: 10, quick_samples: 2, warmup: 1 },
    Bench { name: "replay_baseline", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "values_store_load", samples: 20, quick_samples: 3, warmup: 2 },
    Bench { name: "checkpoint_calls_100", samples: 10, quick_samples: 2, warmup: 1 },
    Bench { name: "bash_true", samples: 30, quick_samples: 5, warmup: 3 },
    Bench { name: "bash_output_kept", samples: 5, quick_samples: 2, warmup: 1 },
    Bench { name: "bash_vs_bwrap", samples: 30, quick_samples: 5, warmup: 3 },
    Bench { name: "process_bash_vs_bwrap", samples: 10, quick_samples: 3, warmup: 1 },
];

/// The parking benchmarks (see `parking.rs`), measured by exec-host alone.
const PARKING: [&str; 10] = [
    "park_trivial",
    "park_after_10_calls",
    "park_after_100_calls",
    "resume_same_session",
    "resume_fresh_session",
    "resume_redis",
    "resume_process",
    "replay_baseline",
    "values_store_load",
    "checkpoint_calls_100",
];

/// Whether the peers' suites know a benchmark (the others measure exec-host alone).
fn peers_have(name: &str) -> bool {
    !matches!(
        name,
        "process_trivial"
            | "process_first_run"
            | "sleep_10"
            | "calls_seq_waiting"
            | "calls_seq_hop"
            | "resume_native"
            | "search_1000_tools"
            | "prepare_1000_tools"
            | "flat_call"
            | "policy_50_rules"
            | "hooks"
    ) && !name.starts_with("mcp_")
        && !name.starts_with("throughput_")
        && !PARKING.contains(&name)
}

struct Options {
    peers: Option<PathBuf>,
    quick: bool,
    only: Option<Vec<String>>,
    /// Where to append this run's medians (see the module documentation).
    record: Option<PathBuf>,
    /// Internal: measure concurrent_100 once in this fresh process and print it.
    isolated_concurrent: bool,
}

fn parse_options() -> Result<Options> {
    let mut options = Options {
        peers: std::env::var_os("EXEC_HOST_PEERS").map(PathBuf::from),
        quick: false,
        only: None,
        record: None,
        isolated_concurrent: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--record" => options.record = Some(PathBuf::from(args.next().context("--record needs a file")?)),
            "--isolated-concurrent" => options.isolated_concurrent = true,
            "--peers" => options.peers = Some(PathBuf::from(args.next().context("--peers needs a folder")?)),
            _ if arg.starts_with("--peers=") => options.peers = Some(PathBuf::from(&arg[8..])),
            _ if arg.starts_with("--only=") => options.only = Some(arg[7..].split(',').map(String::from).collect()),
            _ => bail!("unknown argument {arg}; see the module documentation"),
        }
    }
    Ok(options)
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

fn expect_value(outcome: &ToolResult, expected: Value, what: &str) -> Result<()> {
    match outcome.value() {
        Some(value) if *value == expected => Ok(()),
        _ => bail!("{what}: expected {expected}, got {}", outcome.text()),
    }
}

fn expect_budget(outcome: &ToolResult, what: &str) -> Result<()> {
    match outcome.exec_failure() {
        Some(Failure::BudgetExceeded { .. }) => Ok(()),
        _ => bail!("{what}: expected a budget failure, got {}", outcome.text()),
    }
}

/// One measured sample: wall time end to end, and the extras a benchmark reports.
struct Sample {
    us: f64,
    script_us: Option<f64>,
    extra: BTreeMap<&'static str, f64>,
}

/// The sessions the benchmarks run in: one with a large budget (and no call limit worth
/// the name: the peers have none, and calls_seq_1000 needs more than the default 200), one
/// with the 100 ms budget of the spin benchmarks. Both on the same shared sandbox.
struct Sessions {
    big: Arc<Harness>,
    spin: Arc<Harness>,
    /// `echo` declared flat, for the model's direct calls, with the four settings files the
    /// command line reads (absent here, as they often are: each is still looked at).
    flat: Arc<Harness>,
    /// 50 permission rules in the default mode; the last allow rule lets `add` run.
    rules: Arc<Harness>,
    /// The big session's limits, with the `hop` tool added.
    hop: Arc<Harness>,
    /// The same as `hop`, on a sandbox whose waits never spin
    /// ([`SandboxOptions::with_wait_spin`] zero), for the waiting benchmarks' other figure.
    no_spin: Arc<Harness>,
    /// A `PreToolUse` hook on `echo` that only reads its input, and one on `add` that
    /// sleeps 100 ms.
    hooks: Arc<Harness>,
}

/// 50 rules as a project might have them: none covers `add` but the last allow rule, so
/// every list is read to its end.
fn fifty_rules() -> Value {
    let deny: Vec<String> =
        (0..20).map(|i| if i % 2 == 0 { format!("mcp__srv{i}__delete") } else { format!("read_file(secret{i}/**)") }).collect();
    let ask: Vec<String> = (0..15).map(|i| format!("mcp__tickets{i}")).collect();
    let mut allow: Vec<String> = (0..14).map(|i| format!("write_file(out{i}/*.md)")).collect();
    allow.push("add".into());
    json!({"permissions": {"deny": deny, "ask": ask, "allow": allow}})
}

impl Sessions {
    async fn new() -> Self {
        let big = Limits::default().with_budget(BIG_BUDGET).with_max_calls(100_000);
        let spin = Limits::default().with_budget(SPIN_BUDGET).with_max_calls(100_000);
        let flat = exec_host::settings::Layer::from_value(json!({"nonDeferredTools": ["echo"]})).expect("valid settings");
        let rules = exec_host::settings::Layer::from_value(fifty_rules()).expect("valid rules");
        let hooks = exec_host::settings::Layer::from_value(json!({"hooks": {"PreToolUse": [
            {"matcher": "echo", "hooks": [{"type": "command", "command": "cat > /dev/null"}]},
            {"matcher": "add", "hooks": [{"type": "command", "command": "cat > /dev/null; sleep 0.1"}]}]}}))
        .expect("valid hooks");
        let no_spin_sandbox =
            Sandbox::with_options(SandboxOptions::default().with_wait_spin(Duration::ZERO)).await.expect("the sandbox sets up");
        Sessions {
            rules: Arc::new(
                Harness::with(|builder| {
                    builder
                        .managed_settings(rules)
                        .permission_mode(exec_host::settings::PermissionMode::Default)
                        .limits(big.clone())
                })
                .await,
            ),
            hooks: Arc::new(Harness::with(|builder| builder.managed_settings(hooks).limits(big.clone())).await),
            hop: Arc::new(Harness::with(|builder| builder.tool(exec_host_tests::hop_tool()).limits(big.clone())).await),
            no_spin: Arc::new(
                Harness::with(|builder| {
                    builder.tool(exec_host_tests::hop_tool()).limits(big.clone()).sandbox(no_spin_sandbox.clone())
                })
                .await,
            ),
            big: Arc::new(Harness::with_limits(big).await),
            spin: Arc::new(Harness::with_limits(spin).await),
            flat: Arc::new(
                Harness::with(|builder| {
                    let dir = std::env::temp_dir().join(format!("exec-host-bench-settings-{}", std::process::id()));
                    let files = ["managed", "extra", "project", "user"].map(|name| dir.join(format!("{name}.json")));
                    builder.managed_settings(flat).settings_files(files)
                })
                .await,
            ),
        }
    }
}

const SPIN_BUDGET: Duration = Duration::from_millis(100);

/// Runs `code` as a model's Exec call in the session of `budget`; returns the result and
/// the wall time in microseconds.
async fn exec(sessions: &Sessions, code: &str, budget: Duration) -> (ToolResult, f64) {
    let harness = if budget == SPIN_BUDGET { &sessions.spin } else { &sessions.big };
    let started = Instant::now();
    let outcome = harness.run(code).await;
    (outcome, started.elapsed().as_secs_f64() * 1e6)
}

/// Runs `code` as a model's Exec call in `harness`; the result and the wall time in µs.
async fn timed(harness: &Harness, code: &str) -> (ToolResult, f64) {
    let started = Instant::now();
    let outcome = harness.run(code).await;
    (outcome, started.elapsed().as_secs_f64() * 1e6)
}

/// Calls in a row that each wait: `call` awaited [`WAITING_CALLS`] times from one script, with
/// the wall time and the script's own time per call, then the same on a sandbox whose
/// waits never spin (the `_no_spin` figures).
async fn waiting_calls(sessions: &Sessions, harness: &Harness, call: &str, name: &str) -> Result<Sample> {
    let code = format!("for (let i = 0; i < {WAITING_CALLS}; i++) await {call};\nreturn 1;");
    let calls = WAITING_CALLS as f64;
    let (still, still_us) = timed(&sessions.no_spin, &code).await;
    expect_value(&still, json!(1), name)?;
    let (outcome, us) = timed(harness, &code).await;
    expect_value(&outcome, json!(1), name)?;
    let extra = BTreeMap::from([
        ("per_call_us", us / calls),
        ("script_per_call_us", script_us(&outcome) / calls),
        ("per_call_us_no_spin", still_us / calls),
        ("script_per_call_us_no_spin", script_us(&still) / calls),
    ]);
    Ok(Sample { us, script_us: None, extra })
}

const WAITING_CALLS: usize = 200;

fn script_us(outcome: &ToolResult) -> f64 {
    outcome.script_time().as_secs_f64() * 1e6
}

async fn sample(name: &str, sessions: &Sessions, binary: &Path, workdir: &Path) -> Result<Sample> {
    let mut extra = BTreeMap::new();
    let plain = |us: f64, outcome: &ToolResult| Sample { us, script_us: Some(script_us(outcome)), extra: BTreeMap::new() };
    let harness = &sessions.big;
    if PARKING.contains(&name) {
        let (us, extra) = parking::sample(name, binary, workdir).await?;
        return Ok(Sample { us, script_us: None, extra });
    }
    Ok(match name {
        "trivial" => {
            let (outcome, us) = exec(sessions, "return 1+1", BIG_BUDGET).await;
            expect_value(&outcome, json!(2), name)?;
            plain(us, &outcome)
        }
        "calls_seq_1000" => {
            let code = "let t = 0;\nfor (let i = 0; i < 1000; i++) t += await tools.add({ a: i, b: 1 });\nreturn t;";
            let (outcome, us) = exec(sessions, code, BIG_BUDGET).await;
            expect_value(&outcome, json!(500500), name)?;
            plain(us, &outcome)
        }
        "calls_parallel_100" => {
            let code =
                "const r = await Promise.all(Array.from({ length: 100 }, () => tools.sleep({ ms: 10 })));\nreturn r.length;";
            let (outcome, us) = exec(sessions, code, BIG_BUDGET).await;
            expect_value(&outcome, json!(100), name)?;
            plain(us, &outcome)
        }
        // The floor under calls_parallel_100: one 10 ms sleep, timer granularity included.
        "sleep_10" => {
            let (outcome, us) = exec(sessions, "return await tools.sleep({ ms: 10 });", BIG_BUDGET).await;
            expect_value(&outcome, json!("slept"), name)?;
            plain(us, &outcome)
        }
        "payload_1mb" => {
            let (outcome, us) =
                exec(sessions, "const s = await tools.blob({ bytes: 1048576 });\nreturn s.length;", BIG_BUDGET).await;
            expect_value(&outcome, json!(1048576), name)?;
            plain(us, &outcome)
        }
        // Trivial Execs per second in this process, N at a time on the bench's two worker
        // threads: each Exec a model's call through the session, as in `trivial`.
        _ if name.starts_with("throughput_") => {
            let in_flight: usize = name["throughput_".len()..].parse().context("throughput_N")?;
            let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let started = Instant::now();
            let workers: Vec<_> = (0..in_flight)
                .map(|_| {
                    let (harness, next) = (harness.clone(), next.clone());
                    tokio::spawn(async move {
                        while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < THROUGHPUT_EXECS {
                            let outcome = harness.run("return 1+1").await;
                            if outcome.value() != Some(&json!(2)) {
                                bail!("throughput: {}", outcome.text());
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            for worker in workers {
                worker.await??;
            }
            let us = started.elapsed().as_secs_f64() * 1e6;
            extra.insert("execs_per_s", (THROUGHPUT_EXECS as f64 / (us / 1e6)).round());
            Sample { us, script_us: None, extra }
        }
        "compute" => {
            let (outcome, us) = exec(sessions, COMPUTE, BIG_BUDGET).await;
            let value = outcome.value().cloned().unwrap_or(Value::Null);
            if value["len"] != json!(10000) || value["last"] != json!("item9999") {
                bail!("compute: wrong result {}", outcome.text());
            }
            extra.insert("loop_ms", value["loop_ms"].as_f64().unwrap_or(f64::NAN));
            extra.insert("json_ms", value["json_ms"].as_f64().unwrap_or(f64::NAN));
            Sample { us, script_us: Some(script_us(&outcome)), extra }
        }
        "concurrent_100" => {
            let base = rss_mb();
            let peak = Arc::new(std::sync::Mutex::new(base));
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let sampler = {
                let (peak, stop) = (peak.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let now = rss_mb();
                        let mut p = peak.lock().unwrap();
                        *p = p.max(now);
                        drop(p);
                        std::thread::sleep(Duration::from_millis(5));
                    }
                })
            };
            let started = Instant::now();
            let runs = (0..100).map(|_| {
                let harness = harness.clone();
                tokio::spawn(async move { harness.run("return await tools.sleep({ ms: 1000 });").await })
            });
            let outcomes = futures_join(runs.collect()).await?;
            let us = started.elapsed().as_secs_f64() * 1e6;
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            sampler.join().ok();
            for outcome in &outcomes {
                expect_value(outcome, json!("slept"), name)?;
            }
            let peak = peak.lock().unwrap().max(rss_mb());
            extra.insert("rss_base_mb", base);
            extra.insert("rss_peak_mb", peak);
            Sample { us, script_us: None, extra }
        }
        "spin_budget" => {
            let (outcome, us) = exec(sessions, "while (true) {}", SPIN_BUDGET).await;
            expect_budget(&outcome, name)?;
            plain(us, &outcome)
        }
        "spin_budget_after_sleep" => {
            let (outcome, us) = exec(sessions, "await tools.sleep({ ms: 300 });\nwhile (true) {}", SPIN_BUDGET).await;
            expect_budget(&outcome, name)?;
            plain(us, &outcome)
        }
        "process_trivial" => {
            let started = Instant::now();
            let output = Command::new(binary).args(["run", "trivial.js"]).current_dir(workdir).output()?;
            let us = started.elapsed().as_secs_f64() * 1e6;
            if !output.status.success() || output.stdout != b"2\n" {
                bail!("process_trivial: {}", String::from_utf8_lossy(&output.stderr));
            }
            Sample { us, script_us: None, extra }
        }
        // The first run on a machine: the same process with an empty cache, which takes the
        // guest's code compiled when exec-host was built. `compiling_us`: the same first run
        // when the guest must be compiled, as where the processor lacks one of the build
        // machine's features (the built-in component given as a file, which wasmtime
        // compiles in full; its `init` then runs in the Exec, a few milliseconds).
        "process_first_run" => {
            // The host's debug lines say where the guest's code came from, so a binary
            // without the build's code cannot pass a compiling run off as the first run
            // (only the host's: wasmtime's own would slow the compiling run).
            let first_run = |args: &[&str], origin: &str| -> Result<f64> {
                let cache = tempfile::tempdir()?;
                let started = Instant::now();
                let output = Command::new(binary)
                    .arg("run")
                    .args(args)
                    .arg("trivial.js")
                    .env("EXEC_HOST_CACHE_DIR", cache.path())
                    .env("RUST_LOG", "warn,exec_host=debug")
                    .current_dir(workdir)
                    .output()?;
                let us = started.elapsed().as_secs_f64() * 1e6;
                let stderr = String::from_utf8_lossy(&output.stderr);
                if !output.status.success() || output.stdout != b"2\n" {
                    bail!("process_first_run: {stderr}");
                }
                if !stderr.contains(&format!("the guest's native code: {origin}")) {
                    bail!("process_first_run: the guest's code was not {origin}: {stderr}");
                }
                if std::fs::read_dir(cache.path())?.count() != 1 {
                    bail!("process_first_run: the run did not cache the compiled guest");
                }
                Ok(us)
            };
            let us = first_run(&[], "compiled when exec-host was built")?;
            extra.insert("compiling_us", first_run(&["--guest", GUEST_FILE], "compiled now")?);
            Sample { us, script_us: None, extra }
        }
        "mcp_seq" => {
            let (outcome, us) = exec(sessions, &mcp::seq_script(), BIG_BUDGET).await;
            expect_value(&outcome, mcp::seq_expected(), name)?;
            let floor = mcp::funnel_calls(harness).await?;
            let calls = mcp::CALLS as f64;
            extra.insert("per_call_us", us / calls);
            extra.insert("floor_per_call_us", floor / calls);
            extra.insert("overhead_per_call_us", (us - floor) / calls);
            extra.insert("script_per_call_us", script_us(&outcome) / calls);
            let started = Instant::now();
            let still = sessions.no_spin.run(&mcp::seq_script()).await;
            let still_us = started.elapsed().as_secs_f64() * 1e6;
            expect_value(&still, mcp::seq_expected(), name)?;
            extra.insert("per_call_us_no_spin", still_us / calls);
            extra.insert("script_per_call_us_no_spin", script_us(&still) / calls);
            Sample { us, script_us: Some(script_us(&outcome)), extra }
        }
        // Like calls_seq_1000, but every call waits (a 0 ms timer): what a call costs the
        // script when it must suspend in wait-next and resume, as every MCP call does.
        "calls_seq_waiting" => waiting_calls(sessions, &sessions.big, "tools.sleep({ ms: 0 })", name).await?,
        // The same, but each call is pending for one trip through the executor only: the
        // cost of suspending and resuming itself, without the idle millisecond before it.
        "calls_seq_hop" => waiting_calls(sessions, &sessions.hop, "tools.hop({})", name).await?,
        // No guest at all: a few microseconds of native work (JSON in and out) right after
        // a trip through the executor and right after an idle millisecond, to show what
        // the machine charges any code for resuming on a core that went idle.
        // `true` through the Bash tool's engine, every layer of confinement on, start to
        // exit; beside it a bare fork/exec of `/bin/true` and of `bash -c true` (the shell
        // the tool runs), and the engine with no layer, so that the confinement's share is
        // their difference.
        "bash_true" => {
            let folder = workdir.join("bash-workspace");
            std::fs::create_dir_all(&folder)?;
            let confinement = exec_host::command::Confinement::new(&folder, exec_host::command::Layers::default());
            let bare = |program: &str, args: &[&str]| -> Result<f64> {
                let started = Instant::now();
                let status = Command::new(program).args(args).status()?;
                anyhow::ensure!(status.success(), "{program} failed");
                Ok(started.elapsed().as_secs_f64() * 1e6)
            };
            extra.insert("bare_true_us", bare("/bin/true", &[])?);
            extra.insert("bare_shell_us", bare("/bin/bash", &["-c", "true"])?);
            let cancel = exec_host::CancellationToken::new();
            let second = std::time::Duration::from_secs(10);
            // The same start with no layer: its own session, forked from this process.
            let unconfined = exec_host::command::Confinement::new(&folder, exec_host::command::Layers::only("none"));
            let started = Instant::now();
            exec_host::command::run("true", &unconfined, second, &cancel, &|_| {}).await.map_err(anyhow::Error::msg)?;
            extra.insert("no_layers_us", started.elapsed().as_secs_f64() * 1e6);
            let started = Instant::now();
            let outcome =
                exec_host::command::run("true", &confinement, second, &cancel, &|_| {}).await.map_err(anyhow::Error::msg)?;
            let us = started.elapsed().as_secs_f64() * 1e6;
            anyhow::ensure!(outcome.exit_code == Some(0), "bash_true: {outcome:?}");
            Sample { us, script_us: None, extra }
        }
        // The same `bash -c true` three ways in one sample, in turn: bare, under bubblewrap
        // with the layers of ours it has (user, mount, PID and network namespaces, a new
        // session, a private /tmp, a fresh /proc, the workspace bound writable and the rest
        // read-only, killed with its parent), and through the engine with every layer on
        // (Landlock, seccomp and the limits besides). Claude Code confines its commands with
        // bubblewrap on Linux.
        "bash_vs_bwrap" => {
            let folder = workdir.join("bash-workspace");
            std::fs::create_dir_all(&folder)?;
            let bwrap = which("bwrap").context("bash_vs_bwrap needs bubblewrap (Debian's package `bubblewrap`)")?;
            let timed = |command: &mut Command| -> Result<f64> {
                let started = Instant::now();
                let status = command.stdin(std::process::Stdio::null()).status()?;
                anyhow::ensure!(status.success(), "{command:?} failed");
                Ok(started.elapsed().as_secs_f64() * 1e6)
            };
            extra.insert("bare_shell_us", timed(Command::new("/bin/bash").args(["-c", "true"]).current_dir(&folder))?);
            let workspace = folder.canonicalize()?;
            let workspace = workspace.to_str().context("a workspace path in UTF-8")?;
            let mut wrapped = Command::new(&bwrap);
            wrapped
                .args(["--unshare-user", "--unshare-pid", "--unshare-net", "--new-session", "--die-with-parent"])
                .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"])
                .args(["--bind", workspace, workspace, "--chdir", workspace, "--clearenv", "--setenv", "HOME", "/tmp"])
                .args(["/bin/bash", "-c", "true"]);
            extra.insert("bwrap_us", timed(&mut wrapped)?);
            let confinement = exec_host::command::Confinement::new(&folder, exec_host::command::Layers::default());
            let cancel = exec_host::CancellationToken::new();
            let started = Instant::now();
            let outcome = exec_host::command::run("true", &confinement, Duration::from_secs(10), &cancel, &|_| {})
                .await
                .map_err(anyhow::Error::msg)?;
            let us = started.elapsed().as_secs_f64() * 1e6;
            anyhow::ensure!(outcome.exit_code == Some(0), "bash_vs_bwrap: {outcome:?}");
            Sample { us, script_us: None, extra }
        }
        // The same comparison as whole processes, as a user meets it: `exec-host run` of a
        // script making 20 `Bash` calls of `true`, less the same run without them, per call;
        // beside it 20 `bwrap` processes (the layers above) and 20 bare `bash -c true`, per
        // process. `median_us` is ours.
        "process_bash_vs_bwrap" => {
            const CALLS: u32 = 20;
            let folder = workdir.join("bash-workspace");
            std::fs::create_dir_all(&folder)?;
            let calls = format!("for (let i = 0; i < {CALLS}; i++) await tools.Bash({{ command: 'true' }});\nreturn 2");
            std::fs::write(folder.join("bash_calls.js"), calls)?;
            std::fs::write(folder.join("no_calls.js"), "return 2")?;
            let run = |script: &str| -> Result<f64> {
                let started = Instant::now();
                let output = Command::new(binary)
                    .args(["run", "--enable-bash", "--allow", "Bash", script])
                    .current_dir(&folder)
                    .output()?;
                anyhow::ensure!(output.status.success(), "{script}: {}", String::from_utf8_lossy(&output.stderr));
                Ok(started.elapsed().as_secs_f64() * 1e6)
            };
            let us = (run("bash_calls.js")? - run("no_calls.js")?) / CALLS as f64;
            let bwrap = which("bwrap").context("process_bash_vs_bwrap needs bubblewrap (Debian's package `bubblewrap`)")?;
            let workspace = folder.canonicalize()?;
            let workspace = workspace.to_str().context("a workspace path in UTF-8")?;
            let each = |program: &Path, args: &[&str]| -> Result<f64> {
                let started = Instant::now();
                for _ in 0..CALLS {
                    let status = Command::new(program).args(args).stdin(std::process::Stdio::null()).status()?;
                    anyhow::ensure!(status.success(), "{} failed", program.display());
                }
                Ok(started.elapsed().as_secs_f64() * 1e6 / CALLS as f64)
            };
            let mut wrapped = vec!["--unshare-user", "--unshare-pid", "--unshare-net", "--new-session", "--die-with-parent"];
            wrapped.extend(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]);
            wrapped.extend(["--bind", workspace, workspace, "--chdir", workspace, "--clearenv", "--setenv", "HOME", "/tmp"]);
            wrapped.extend(["/bin/bash", "-c", "true"]);
            extra.insert("bwrap_us", each(&bwrap, &wrapped)?);
            extra.insert("bare_shell_us", each(Path::new("/bin/bash"), &["-c", "true"])?);
            Sample { us, script_us: None, extra }
        }
        // A confined command that prints 200 MB in 2,000 lines: the memory this process
        // gains while it runs (its resident size, sampled at every line) beside the bytes
        // the engine keeps by design (head and tail).
        "bash_output_kept" => {
            let folder = workdir.join("bash-workspace");
            std::fs::create_dir_all(&folder)?;
            let confinement = exec_host::command::Confinement::new(&folder, exec_host::command::Layers::default());
            let resident_kib = || -> u64 {
                let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
                let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap_or_default();
                line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).unwrap_or(0)
            };
            let before = resident_kib();
            let peak = std::sync::atomic::AtomicU64::new(before);
            let watch = |_: exec_host::command::CommandEvent| {
                peak.fetch_max(resident_kib(), std::sync::atomic::Ordering::Relaxed);
            };
            let cancel = exec_host::CancellationToken::new();
            let command = "head -c 200000000 /dev/zero | tr '\\0' a | fold -w 100000";
            let started = Instant::now();
            let outcome = exec_host::command::run(command, &confinement, Duration::from_secs(120), &cancel, &watch)
                .await
                .map_err(anyhow::Error::msg)?;
            let us = started.elapsed().as_secs_f64() * 1e6;
            anyhow::ensure!(outcome.output_bytes >= 200_000_000, "bash_output_kept: {} bytes", outcome.output_bytes);
            extra.insert("host_gain_kib", peak.into_inner().saturating_sub(before) as f64);
            extra.insert("kept_kib", (2 * exec_host::command::KEPT_BYTES) as f64 / 1024.0);
            extra.insert("printed_mb", outcome.output_bytes as f64 / 1e6);
            Sample { us, script_us: None, extra }
        }
        "resume_native" => {
            const ROUNDS: usize = 200;
            let document = r#"[{"id":1,"name":"item1","tags":["a","b"]},{"id":2,"name":"item2","tags":["a","b"]}]"#;
            let work = || {
                let started = Instant::now();
                let value: Value = serde_json::from_str(document).expect("valid JSON");
                std::hint::black_box(serde_json::to_string(&value).expect("serialisable"));
                started.elapsed().as_secs_f64() * 1e6
            };
            let (mut warm, mut hopped, mut idle) = (Vec::new(), Vec::new(), Vec::new());
            let started = Instant::now();
            for _ in 0..ROUNDS {
                warm.push(work());
                tokio::spawn(async {}).await.context("the hop task")?;
                hopped.push(work());
                tokio::time::sleep(Duration::from_millis(1)).await;
                idle.push(work());
            }
            extra.insert("warm_us", median(&mut warm));
            extra.insert("after_hop_us", median(&mut hopped));
            extra.insert("after_idle_ms_us", median(&mut idle));
            Sample { us: started.elapsed().as_secs_f64() * 1e6, script_us: None, extra }
        }
        "mcp_parallel_100" => {
            let (outcome, us) = exec(sessions, mcp::PARALLEL_SCRIPT, BIG_BUDGET).await;
            expect_value(&outcome, json!(100), name)?;
            plain(us, &outcome)
        }
        // ToolSearch from a script over a pool of 1,000 MCP-like tools.
        "search_1000_tools" => {
            let session = large_session().await?;
            let code = "let found = 0;\nfor (let i = 0; i < 100; i++) found += (await tools.ToolSearch({ query: `invoice ${i % 20}` })).total;\nreturn found > 0;";
            let started = Instant::now();
            let outcome = session.run(code).await;
            let us = started.elapsed().as_secs_f64() * 1e6;
            expect_value(&outcome, json!(true), name)?;
            extra.insert("per_search_us", us / 100.0);
            Sample { us, script_us: Some(script_us(&outcome)), extra }
        }
        // Session::prepare over a pool of 1,000 tools: the first request builds the pool,
        // its declarations and announcement; later ones with an unchanged pool reuse them.
        "prepare_1000_tools" => {
            let session = large_session().await?;
            let history = vec![exec_host::Message::user("hello")];
            let started = Instant::now();
            let first = session.session.prepare(&history)?;
            let cold_us = started.elapsed().as_secs_f64() * 1e6;
            let mut history = history;
            history.extend(first.append);
            const WARM: usize = 1000;
            let started = Instant::now();
            for _ in 0..WARM {
                let again = session.session.prepare(&history)?;
                if !again.append.is_empty() || again.declarations.len() != 1 {
                    bail!("prepare_1000_tools: an unchanged pool was announced again");
                }
            }
            let warm_us = started.elapsed().as_secs_f64() * 1e6 / WARM as f64;
            extra.insert("cold_us", cold_us);
            extra.insert("warm_us", warm_us);
            Sample { us: cold_us, script_us: None, extra }
        }
        // A flat call through the session (the model calls `echo`, declared flat, directly)
        // against the same tool called on its own: the session's overhead per call.
        "flat_call" => {
            let harness = &sessions.flat;
            const CALLS: usize = 1000;
            let tool = exec_host_tests::fixture_tools(&Default::default())
                .into_iter()
                .find(|tool| tool.definition().name == "echo")
                .context("the echo fixture")?;
            let args = json!({"value": 1}).as_object().cloned().unwrap_or_default();
            let started = Instant::now();
            for _ in 0..CALLS {
                let context = exec_host::CallContext::new(
                    exec_host::Origin::Direct { call_id: "c".into() },
                    exec_host::CancellationToken::new(),
                );
                tool.call(args.clone(), context).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            }
            let tool_us = started.elapsed().as_secs_f64() * 1e6 / CALLS as f64;
            let started = Instant::now();
            for _ in 0..CALLS {
                let result = harness.call("echo", json!({"value": 1})).await;
                if result.value() != Some(&json!(1)) {
                    bail!("flat_call: {}", result.text());
                }
            }
            let session_us = started.elapsed().as_secs_f64() * 1e6 / CALLS as f64;
            extra.insert("tool_us", tool_us);
            extra.insert("session_us", session_us);
            extra.insert("overhead_us", session_us - tool_us);
            Sample { us: session_us, script_us: None, extra }
        }
        // 1,000 nested calls of `add` in a session without rules and in one with 50 (the
        // same sample, so under the same load): what the rules add to a nested call.
        "policy_50_rules" => {
            const CALLS: f64 = 1000.0;
            let code = "let t = 0;\nfor (let i = 0; i < 1000; i++) t += await tools.add({ a: i, b: 1 });\nreturn t;";
            let (plain, plain_us) = timed(harness, code).await;
            let (ruled, rules_us) = timed(&sessions.rules, code).await;
            let (plain_us, rules_us) = (plain_us / CALLS, rules_us / CALLS);
            expect_value(&plain, json!(500500), name)?;
            expect_value(&ruled, json!(500500), name)?;
            extra.insert("no_rules_per_call_us", plain_us);
            extra.insert("rules_per_call_us", rules_us);
            extra.insert("added_per_call_us", rules_us - plain_us);
            Sample { us: rules_us, script_us: None, extra }
        }
        // A hook is a process: 20 calls with a hook that only reads its input, against the
        // same calls without; then 10 concurrent calls whose hook sleeps 100 ms.
        "hooks" => {
            const CALLS: f64 = 20.0;
            let code = "for (let i = 0; i < 20; i++) await tools.echo({ value: i });\nreturn 1;";
            let (plain, plain_us) = timed(harness, code).await;
            let (hooked, hooked_us) = timed(&sessions.hooks, code).await;
            let (plain_us, hooked_us) = (plain_us / CALLS, hooked_us / CALLS);
            expect_value(&plain, json!(1), name)?;
            expect_value(&hooked, json!(1), name)?;
            let concurrent =
                "return (await Promise.all(Array.from({ length: 10 }, (_, i) => tools.add({ a: i, b: 1 })))).length;";
            let (ten, ten_us) = timed(&sessions.hooks, concurrent).await;
            let ten_ms = ten_us / 1e3;
            expect_value(&ten, json!(10), name)?;
            extra.insert("hook_per_call_us", hooked_us - plain_us);
            extra.insert("ten_concurrent_100ms_hooks_ms", ten_ms);
            Sample { us: hooked_us, script_us: None, extra }
        }
        other => bail!("unknown benchmark {other}"),
    })
}

/// A session whose pool holds 1,000 tools of 50 MCP-like servers, with descriptions and
/// small schemas, as a large pool has them (and no workspace tools).
async fn large_session() -> Result<Harness> {
    let topics = ["invoice", "customer", "ticket", "order", "report"];
    let tools: Vec<Arc<dyn exec_host::Tool>> = (0..1000)
        .map(|i| {
            let (server, topic) = (format!("svc{}", i % 50), topics[i % topics.len()]);
            let schema = json!({"type": "object", "properties": {"id": {"type": "string", "description": "Which one."},
                "limit": {"type": "integer"}}, "required": ["id"]});
            let definition = exec_host::ToolDefinition::new(
                exec_host::mcp::mcp_name(&server, &format!("get_{topic}_{i}")),
                format!("Reads one {topic} record number {i}."),
                schema,
            )
            .expect("an object schema")
            .with_source(exec_host::ToolSource::Mcp { server });
            FixtureTool::with_definition(definition, |_, _| Box::pin(async { Ok(exec_host::ToolOutput::empty()) }))
        })
        .collect();
    let limits = Limits::default().with_budget(BIG_BUDGET).with_max_calls(100_000);
    let session = exec_host::Session::builder()
        .tools(tools)
        .limits(limits)
        .without_compaction()
        .sandbox(exec_host_tests::sandbox().await.clone())
        .build()
        .await?;
    Ok(Harness::from_session(session))
}

async fn futures_join(handles: Vec<tokio::task::JoinHandle<ToolResult>>) -> Result<Vec<ToolResult>> {
    let mut outcomes = Vec::with_capacity(handles.len());
    for handle in handles {
        outcomes.push(handle.await?);
    }
    Ok(outcomes)
}

fn summarize(name: &str, samples: &[Sample]) -> Value {
    let mut us: Vec<f64> = samples.iter().map(|s| s.us).collect();
    let mut line = json!({
        "runner": "exec-host",
        "mode": "wasmtime",
        "name": name,
        "n": samples.len(),
        "p90_us": round1(p90(&us)),
        "min_us": round1(us.iter().cloned().fold(f64::INFINITY, f64::min)),
        "max_us": round1(us.iter().cloned().fold(0.0, f64::max)),
        "median_us": round1(median(&mut us)),
    });
    let mut script: Vec<f64> = samples.iter().filter_map(|s| s.script_us).collect();
    if script.len() == samples.len() {
        line["script_median_us"] = json!(round1(median(&mut script)));
    }
    let mut extras: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for sample in samples {
        for (key, value) in &sample.extra {
            extras.entry(key).or_default().push(*value);
        }
    }
    match name {
        "calls_seq_1000" => {
            line["calls"] = json!(1000);
            line["per_call_us"] = json!(round1(line["median_us"].as_f64().unwrap() / 1000.0));
            if let Some(s) = line["script_median_us"].as_f64() {
                line["per_call_script_us"] = json!(round1(s / 1000.0));
            }
        }
        "concurrent_100" => {
            let peak = extras.get("rss_peak_mb").map(|v| v.iter().cloned().fold(0.0, f64::max)).unwrap_or(f64::NAN);
            let base = extras.get("rss_base_mb").map(|v| v.iter().cloned().fold(f64::INFINITY, f64::min)).unwrap_or(f64::NAN);
            line["execs"] = json!(100);
            line["rss_mb"] = json!(round1(peak));
            line["rss_base_mb"] = json!(round1(base));
            line["rss_per_exec_kb"] = json!(((peak - base) * 1024.0 / 100.0).round());
        }
        _ => {
            for (key, mut values) in extras {
                line[key] = json!(round1(median(&mut values)));
            }
        }
    }
    if name == "bash_vs_bwrap" || name == "process_bash_vs_bwrap" {
        let ours = line["median_us"].as_f64().unwrap_or(f64::NAN);
        let (bwrap, bare) = (line["bwrap_us"].as_f64().unwrap_or(f64::NAN), line["bare_shell_us"].as_f64().unwrap_or(f64::NAN));
        line["ours_over_bwrap"] = json!((ours / bwrap * 100.0).round() / 100.0);
        line["ours_above_bare_us"] = json!(round1(ours - bare));
        line["bwrap_above_bare_us"] = json!(round1(bwrap - bare));
    }
    line
}

/// The path of `program` on `PATH`, if it is there.
fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join(program)).find(|path| path.is_file())
}

/// Runs one peer configuration's suite; returns its JSON lines by benchmark name.
fn run_peer(
    peers: &Path,
    folder: &str,
    flags: &[&str],
    only: &[&str],
    quick: bool,
    scratch: &Path,
) -> Result<BTreeMap<String, Value>> {
    let source = peers.join(folder);
    let copy = scratch.join(folder);
    if !copy.join("bench.mjs").exists() {
        std::fs::create_dir_all(&copy)?;
        for entry in std::fs::read_dir(&source).with_context(|| format!("reading {}", source.display()))? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                std::fs::copy(entry.path(), copy.join(entry.file_name()))?;
            }
        }
        let status = Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--silent"]).current_dir(&copy).status()?;
        if !status.success() {
            bail!("npm ci failed in {}", copy.display());
        }
    }
    let mut command = Command::new("node");
    command.arg("bench.mjs").args(flags).current_dir(&copy);
    command.arg(format!("--only={}", only.join(",")));
    if quick {
        command.arg("--quick");
    }
    let output = command.output()?;
    if !output.status.success() {
        bail!("{folder} {flags:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
    let mut lines = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines().filter(|l| l.starts_with('{')) {
        let value: Value = serde_json::from_str(line)?;
        if let Some(name) = value["name"].as_str() {
            lines.insert(name.to_string(), value);
        }
    }
    Ok(lines)
}

/// Whole-process time of a peer running `return 1+1`, median of `n`.
fn peer_process(peers_scratch: &Path, folder: &str, n: usize) -> Result<f64> {
    let mut times = Vec::new();
    for _ in 0..n {
        let started = Instant::now();
        let output =
            Command::new("node").args(["bench.mjs", "--exec=return 1+1"]).current_dir(peers_scratch.join(folder)).output()?;
        if !output.status.success() {
            bail!("{folder} --exec failed");
        }
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    Ok(median(&mut times))
}

/// One row of the comparison table: which benchmark, which field, how to show it.
struct Row {
    label: &'static str,
    bench: &'static str,
    /// Our field and the peers' field (they differ where we measure in a fresh process).
    ours: &'static str,
    theirs: &'static str,
    unit: Unit,
}

#[derive(Clone, Copy)]
enum Unit {
    Micros,
    PerCall,
    Megabytes,
    Kilobytes,
}

const ROWS: &[Row] = &[
    Row { label: "trivial Exec, end to end", bench: "trivial", ours: "median_us", theirs: "median_us", unit: Unit::Micros },
    Row {
        label: "nested call round trip",
        bench: "calls_seq_1000",
        ours: "per_call_us",
        theirs: "per_call_us",
        unit: Unit::PerCall,
    },
    Row {
        label: "Promise.all of 100 x 10 ms",
        bench: "calls_parallel_100",
        ours: "median_us",
        theirs: "median_us",
        unit: Unit::Micros,
    },
    Row {
        label: "1 MiB payload into the script",
        bench: "payload_1mb",
        ours: "median_us",
        theirs: "median_us",
        unit: Unit::Micros,
    },
    Row { label: "compute (5e6 loop + JSON 10k)", bench: "compute", ours: "median_us", theirs: "median_us", unit: Unit::Micros },
    Row {
        label: "100 concurrent Execs, wall",
        bench: "concurrent_100",
        ours: "median_us",
        theirs: "median_us",
        unit: Unit::Micros,
    },
    Row {
        label: "100 parked Execs, RSS each (fresh process)",
        bench: "concurrent_100",
        ours: "isolated_rss_per_exec_kb",
        theirs: "isolated_rss_per_exec_kb",
        unit: Unit::Kilobytes,
    },
    Row {
        label: "100 concurrent Execs, peak RSS (in suite)",
        bench: "concurrent_100",
        ours: "rss_mb",
        theirs: "rss_mb",
        unit: Unit::Megabytes,
    },
    Row { label: "spin, 100 ms budget", bench: "spin_budget", ours: "median_us", theirs: "median_us", unit: Unit::Micros },
    Row {
        label: "spin after a 300 ms sleep, 100 ms budget",
        bench: "spin_budget_after_sleep",
        ours: "median_us",
        theirs: "median_us",
        unit: Unit::Micros,
    },
    Row {
        label: "whole process, trivial script",
        bench: "process_trivial",
        ours: "median_us",
        theirs: "median_us",
        unit: Unit::Micros,
    },
    Row {
        label: "first run on a machine (empty cache; the peers keep no cache)",
        bench: "process_first_run",
        ours: "median_us",
        theirs: "median_us",
        unit: Unit::Micros,
    },
];

fn show(value: Option<f64>, unit: Unit) -> String {
    match (value, unit) {
        (None, _) => "-".into(),
        (Some(v), Unit::PerCall) => format!("{v:.1} µs"),
        (Some(v), Unit::Megabytes) => format!("{v:.0} MB"),
        (Some(v), Unit::Kilobytes) => format!("{v:.0} KB"),
        (Some(v), Unit::Micros) if v >= 10_000.0 => format!("{:.0} ms", v / 1000.0),
        (Some(v), Unit::Micros) if v >= 1_000.0 => format!("{:.2} ms", v / 1000.0),
        (Some(v), Unit::Micros) => format!("{:.3} ms", v / 1000.0),
    }
}

/// Peak RSS above baseline per Exec for a peer's concurrent_100 run alone, in KB.
fn peer_isolated_rss(peers_scratch: &Path, folder: &str, flags: &[&str]) -> Result<f64> {
    let output = Command::new("node")
        .arg("bench.mjs")
        .args(flags)
        .args(["--only=concurrent_100", "--quick"])
        .current_dir(peers_scratch.join(folder))
        .output()?;
    let line =
        String::from_utf8_lossy(&output.stdout).lines().find(|l| l.starts_with('{')).map(str::to_string).context("no output")?;
    let value: Value = serde_json::from_str(&line)?;
    let (peak, base) = (value["rss_mb"].as_f64().unwrap_or(f64::NAN), value["rss_base_mb"].as_f64().unwrap_or(f64::NAN));
    Ok(((peak - base) * 1024.0 / 100.0).round())
}

/// Appends this run's medians to `file` as one line of the history, with the extra figures
/// of each line that the history keeps.
fn record(file: &Path, ours: &BTreeMap<String, Value>, quick: bool) -> Result<()> {
    let medians: BTreeMap<String, Value> = ours.iter().map(|(name, line)| (name.clone(), line["median_us"].clone())).collect();
    let extras: BTreeMap<String, Value> = ours
        .iter()
        .flat_map(|(name, line)| {
            [
                "per_call_us",
                "per_call_script_us",
                "script_per_call_us",
                "script_median_us",
                "execs_per_s",
                "overhead_us",
                "warm_us",
                "after_hop_us",
                "after_idle_ms_us",
                "compiling_us",
                "bwrap_us",
                "bare_shell_us",
            ]
            .into_iter()
            .filter_map(move |key| line.get(key).map(|value| (format!("{name}.{key}"), value.clone())))
        })
        .collect();
    exec_host_bench::history::record(file, medians, extras, quick)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let options = parse_options()?;
    let selected: Vec<&Bench> =
        BENCHES.iter().filter(|b| options.only.as_ref().is_none_or(|only| only.iter().any(|o| o == b.name))).collect();
    let target = std::env::current_exe()?.parent().context("the bench binary has a folder")?.to_path_buf();
    let binary = target.join("exec-host");
    let workdir = target.join("bench-work");
    std::fs::create_dir_all(&workdir)?;
    std::fs::write(workdir.join("trivial.js"), "return 1+1")?;
    std::fs::write(workdir.join(GUEST_FILE), exec_host::guest::GUEST_COMPONENT)?;
    if selected.iter().any(|b| b.name.starts_with("process_") || b.name == "resume_process") {
        if !binary.exists() {
            bail!("{} is missing: build it first (cargo build --release -p exec-host)", binary.display());
        }
        // Fill the compiled-guest cache outside the measurement.
        Command::new(&binary).args(["run", "trivial.js"]).current_dir(&workdir).output()?;
    }

    exec_host_tests::sandbox().await;
    let sessions = Sessions::new().await;
    if options.isolated_concurrent {
        // One trivial Exec so the baseline includes a set-up engine, then one batch.
        sessions.big.run("return 1").await;
        let line = summarize("concurrent_100", &[sample("concurrent_100", &sessions, &binary, &workdir).await?]);
        println!("{line}");
        return Ok(());
    }
    // Kept connected for the whole run.
    if selected.iter().any(|b| b.name.starts_with("mcp_")) {
        mcp::connect(&sessions.big, &target).await?;
        mcp::connect(&sessions.no_spin, &target).await?;
    }
    let mut ours = BTreeMap::new();
    for bench in &selected {
        let n = if options.quick { bench.quick_samples } else { bench.samples };
        for _ in 0..bench.warmup {
            sample(bench.name, &sessions, &binary, &workdir).await?;
        }
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            samples.push(sample(bench.name, &sessions, &binary, &workdir).await?);
        }
        let mut line = summarize(bench.name, &samples);
        if bench.name == "concurrent_100" {
            // RSS per Exec only means something in a fresh process (warm pool slots stay
            // resident after the first batch): measure it there, as the peers do.
            let child = Command::new(std::env::current_exe()?).arg("--isolated-concurrent").output()?;
            let isolated: Value = serde_json::from_slice(&child.stdout).context("the isolated concurrent_100 run")?;
            for key in ["rss_mb", "rss_base_mb", "rss_per_exec_kb"] {
                line[format!("isolated_{key}")] = isolated[key].clone();
            }
        }
        println!("{line}");
        ours.insert(bench.name.to_string(), line);
    }
    if let Some(file) = &options.record {
        record(file, &ours, options.quick)?;
    }
    for (name, how) in [("bash_vs_bwrap", "in this process"), ("process_bash_vs_bwrap", "as whole processes")] {
        let Some(line) = ours.get(name) else { continue };
        let ms = |key: &str| line[key].as_f64().unwrap_or(f64::NAN) / 1e3;
        println!(
            "bash -c true {how}, medians: bare {:.2} ms, bubblewrap {:.2} ms, exec-host's engine {:.2} ms: {:.2}x bubblewrap's time, \
             {:.2} ms above bare (bubblewrap {:.2} ms above)",
            ms("bare_shell_us"),
            ms("bwrap_us"),
            ms("median_us"),
            line["ours_over_bwrap"].as_f64().unwrap_or(f64::NAN),
            ms("ours_above_bare_us"),
            ms("bwrap_above_bare_us"),
        );
    }

    if selected.iter().any(|b| b.name.starts_with("mcp_")) {
        let node = mcp::node_sdk_per_call(&target, options.quick)?;
        mcp::print_table(&ours, node);
    }

    let Some(peers) = options.peers else {
        eprintln!("(no --peers folder given: only exec-host was measured)");
        return Ok(());
    };
    let scratch = target.join("bench-peers");
    // Benchmarks of ours alone are not asked of the peers.
    let peer_names: Vec<&str> = selected.iter().map(|b| b.name).filter(|n| peers_have(n)).collect();
    // `qjs` is the peer's default build, Bellard's QuickJS; `qjs-ng` is its build of
    // quickjs-ng, the engine the guest runs, so compute compares like with like too.
    let configs: [(&str, &str, &[&str]); 4] = [
        ("node-fresh", "node-vm-worker", &[]),
        ("node-reuse", "node-vm-worker", &["--reuse-worker"]),
        ("qjs", "quickjs-emscripten", &[]),
        ("qjs-ng", "quickjs-emscripten", &["--variant=quickjs-ng"]),
    ];
    let mut columns = Vec::new();
    for (label, folder, flags) in configs {
        eprintln!("running peer {label} ...");
        let mut lines = run_peer(&peers, folder, flags, &peer_names, options.quick, &scratch)?;
        // A peer keeps no cache: each of its processes is a first run, so one measurement
        // answers both.
        let processes: Vec<&str> = ["process_trivial", "process_first_run"]
            .into_iter()
            .filter(|name| selected.iter().any(|b| b.name == *name))
            .collect();
        if !processes.is_empty() && flags.is_empty() {
            let us = peer_process(&scratch, folder, if options.quick { 3 } else { 10 })?;
            for name in processes {
                lines.insert(name.into(), json!({"median_us": us}));
            }
        }
        if let Some(line) = lines.get_mut("concurrent_100") {
            line["isolated_rss_per_exec_kb"] = json!(peer_isolated_rss(&scratch, folder, flags)?);
        }
        for line in lines.values() {
            if line.get("runner").is_some() {
                println!("{line}");
            }
        }
        columns.push((label, lines));
    }

    println!();
    println!("| median | exec-host | {} | best peer / exec-host |", columns.iter().map(|c| c.0).collect::<Vec<_>>().join(" | "));
    println!("|---|---:|{}---:|", "---:|".repeat(columns.len()));
    for row in ROWS.iter().filter(|row| selected.iter().any(|b| b.name == row.bench)) {
        let mine = ours.get(row.bench).and_then(|line| line[row.ours].as_f64());
        let theirs: Vec<Option<f64>> =
            columns.iter().map(|(_, lines)| lines.get(row.bench).and_then(|line| line[row.theirs].as_f64())).collect();
        let best = theirs.iter().flatten().cloned().fold(f64::INFINITY, f64::min);
        let ratio = match mine {
            Some(m) if best.is_finite() && m > 0.0 && best / m < 1.0 => format!("{:.2}x", best / m),
            Some(m) if best.is_finite() && m > 0.0 => format!("{:.1}x", best / m),
            _ => "-".into(),
        };
        let peers = theirs.iter().map(|t| show(*t, row.unit)).collect::<Vec<_>>().join(" | ");
        println!("| {} | {} | {peers} | {ratio} |", row.label, show(mine, row.unit));
    }
    Ok(())
}
