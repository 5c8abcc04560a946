//! What `exec-host serve` adds to an Exec, in one run:
//!
//! - the overhead of a trivial Exec through `serve` over stdio and over streamable HTTP
//!   (rmcp clients, sequential calls) against the same Exec made in process, and over HTTP as
//!   a client of 2026-07-28 makes it (a JSON answer per request);
//! - the throughput of trivial Execs over HTTP with 32 concurrent clients (each its own MCP
//!   session), with p50 and p99 latencies;
//! - the server's resident memory with 1,000 open MCP sessions;
//! - one approval as a client of MCP 2026-07-28 makes it (multi round-trip requests): the
//!   call whose Exec parks, answered `InputRequiredResult`, and the retry that resumes it, on
//!   one server (folder store) and across two stateless replicas sharing a Redis;
//! - a `tasks/get` round trip for a working task, on the replica running it and on another;
//! - the throughput of trivial Execs with 100 concurrent clients of each protocol revision:
//!   2025-11-25 (an MCP session each) and 2026-07-28 (no sessions: a request per call);
//! - the same hundred clients of 2026-07-28 through nginx (`deploy/nginx/exec-host.conf`),
//!   round-robin over two stateless replicas sharing one Redis, against one replica alone.
//!
//! ```text
//! cargo build --release --workspace --bins
//! cargo run --release -p exec-host-bench --bin serve-bench -- [--quick] [--record FILE]
//! ```
//!
//! `--record FILE` appends the run's main figures to FILE as a line of
//! `docs/bench-history.jsonl`.
//!
//! Clients and server share the machine: on 2 cores the clients' own work is part of every
//! figure, as it is for a client on the same machine.

#![recursion_limit = "256"]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use exec_host_bench::stats::{median, quantile, round1, round2};
use exec_host_tests::Harness;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

const TRIVIAL: &str = "return 1+1";
/// Concurrent clients of the throughput run.
const CLIENTS: usize = 32;
/// Concurrent clients of the throughput runs on each protocol revision.
const MANY_CLIENTS: usize = 100;
/// Sessions held open for the memory figure.
const SESSIONS: usize = 1000;

struct Sizes {
    sequential: usize,
    throughput_for: Duration,
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<()> {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let record = std::env::args().skip_while(|arg| arg != "--record").nth(1).map(std::path::PathBuf::from);
    if std::env::args().any(|arg| arg == "--record") && record.is_none() {
        bail!("--record needs a file");
    }
    let sizes = if quick {
        Sizes { sequential: 300, throughput_for: Duration::from_secs(3) }
    } else {
        Sizes { sequential: 3000, throughput_for: Duration::from_secs(10) }
    };
    let target = std::env::current_exe()?.parent().context("the bench binary has a folder")?.to_path_buf();
    let binary = target.join("exec-host");
    if !binary.exists() {
        bail!("{} is missing: build it first (cargo build --release --workspace --bins)", binary.display());
    }
    let workdir = target.join("serve-bench-work");
    std::fs::create_dir_all(&workdir)?;
    let cache = target.join("serve-bench-cache");
    std::fs::create_dir_all(&cache)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700))?;

    let harness = Harness::new().await;
    let in_process = sequential_us(sizes.sequential, || {
        let harness = &harness;
        async move {
            let result = harness.run(TRIVIAL).await;
            check(result.text())
        }
    })
    .await?;

    let stdio = {
        let mut command = tokio::process::Command::new(&binary);
        command.args(["serve", "--stdio"]).current_dir(&workdir).env("EXEC_HOST_CACHE_DIR", &cache);
        let client = ().serve(TokioChildProcess::new(command)?).await?;
        let figures = sequential_us(sizes.sequential, || exec(&client)).await?;
        let ping = sequential_us(sizes.sequential, || ping(&client)).await?;
        client.cancel().await?;
        (figures, ping)
    };
    let (stdio, stdio_ping) = stdio;

    let mut server = HttpServer::start(&binary, &workdir, &cache)?;
    let http = {
        let client = connect(&server.url).await?;
        let figures = sequential_us(sizes.sequential, || exec(&client)).await?;
        let ping = sequential_us(sizes.sequential, || ping(&client)).await?;
        client.cancel().await?;
        (figures, ping)
    };
    let (http, http_ping) = http;
    // The same Exec as a client of 2026-07-28 makes it: a plain POST answered with JSON, no
    // session and no event stream.
    let http_modern = {
        let client = reqwest::Client::new();
        let call = json!({"name": "Exec", "arguments": {"code": TRIVIAL}});
        sequential_us(sizes.sequential, || {
            let (client, url, call) = (&client, &server.url, call.clone());
            async move { check(modern_call(client, url, call).await?["content"][0]["text"].as_str().unwrap_or_default()) }
        })
        .await?
    };
    let throughput = sessions_throughput(&server.url, CLIENTS, sizes.throughput_for).await?;
    let memory = sessions_rss(&server).await?;
    server.stop();

    // A hundred clients need a server that runs more calls at once than the one above.
    let many = HttpServer::start_with(&binary, &workdir, &cache, &["--concurrency", "128", "--max-sessions", "512"])?;
    let legacy_100 = sessions_throughput(&many.url, MANY_CLIENTS, sizes.throughput_for).await?;
    let modern_100 = modern_throughput(&many.url, MANY_CLIENTS, sizes.throughput_for).await?;
    drop(many);
    let balanced = balanced(&binary, &workdir, &cache, sizes.throughput_for).await?;

    let rounds = if quick { 20 } else { 100 };
    let approvals = approvals(&binary, &workdir, &cache, rounds).await?;

    let overhead = |through: &Figures| through.median_us - in_process.median_us;
    println!(
        "{}",
        json!({
            "name": "serve",
            "sequential_calls": sizes.sequential,
            "in_process_median_us": round1(in_process.median_us), "in_process_p99_us": round1(in_process.p99_us),
            "stdio_median_us": round1(stdio.median_us), "stdio_p99_us": round1(stdio.p99_us),
            "stdio_overhead_us": round1(overhead(&stdio)), "stdio_ping_median_us": round1(stdio_ping.median_us),
            "http_median_us": round1(http.median_us), "http_p99_us": round1(http.p99_us),
            "http_overhead_us": round1(overhead(&http)), "http_ping_median_us": round1(http_ping.median_us),
            "http_modern_median_us": round1(http_modern.median_us), "http_modern_p99_us": round1(http_modern.p99_us),
            "http_clients": CLIENTS, "http_execs_per_s": round1(throughput.per_second),
            "http_p50_ms": round2(throughput.p50_ms), "http_p99_ms": round2(throughput.p99_ms),
            "http_busy_answers": throughput.busy,
            "rss_base_mb": round1(memory.base_mb), "rss_sessions_mb": round1(memory.with_sessions_mb),
            "rss_per_session_kb": round1(memory.per_session_kb()),
            "mrtr_rounds": rounds,
            "mrtr_park_median_us": round1(approvals.one.0), "mrtr_resume_median_us": round1(approvals.one.1),
            "mrtr_redis_park_median_us": round1(approvals.two.0), "mrtr_redis_resume_median_us": round1(approvals.two.1),
            "tasks_get_median_us": round1(approvals.task_get), "tasks_get_other_replica_median_us": round1(approvals.task_get_other),
            "clients_100_legacy_execs_per_s": round1(legacy_100.per_second),
            "clients_100_legacy_p50_ms": round2(legacy_100.p50_ms), "clients_100_legacy_p99_ms": round2(legacy_100.p99_ms),
            "clients_100_legacy_busy": legacy_100.busy,
            "clients_100_modern_execs_per_s": round1(modern_100.per_second),
            "clients_100_modern_p50_ms": round2(modern_100.p50_ms), "clients_100_modern_p99_ms": round2(modern_100.p99_ms),
            "clients_100_modern_busy": modern_100.busy,
            "clients_100_one_replica_execs_per_s": round1(balanced.alone.per_second),
            "clients_100_one_replica_p50_ms": round2(balanced.alone.p50_ms), "clients_100_one_replica_p99_ms": round2(balanced.alone.p99_ms),
            "clients_100_nginx_execs_per_s": round1(balanced.nginx.per_second),
            "clients_100_nginx_p50_ms": round2(balanced.nginx.p50_ms), "clients_100_nginx_p99_ms": round2(balanced.nginx.p99_ms),
            "clients_100_nginx_busy": balanced.nginx.busy,
        })
    );
    println!();
    println!("trivial Exec ({TRIVIAL:?}), {} sequential calls, medians", sizes.sequential);
    println!("  in process          {:>8.1} µs   p99 {:>8.1} µs", in_process.median_us, in_process.p99_us);
    println!(
        "  serve over stdio    {:>8.1} µs   p99 {:>8.1} µs   overhead {:>7.1} µs (goal ≤ 100)",
        stdio.median_us,
        stdio.p99_us,
        overhead(&stdio)
    );
    println!(
        "  serve over HTTP     {:>8.1} µs   p99 {:>8.1} µs   overhead {:>7.1} µs",
        http.median_us,
        http.p99_us,
        overhead(&http)
    );
    println!(
        "  HTTP, 2026-07-28    {:>8.1} µs   p99 {:>8.1} µs   (a JSON answer per request, no session; goal ≤ 300, p99 ≤ 1,000)",
        http_modern.median_us, http_modern.p99_us
    );
    println!(
        "  a ping (the transport and both MCP ends, no tool): stdio {:.1} µs, HTTP {:.1} µs",
        stdio_ping.median_us, http_ping.median_us
    );
    println!(
        "HTTP, {CLIENTS} clients for {:?}: {:.0} Execs/s (goal ≥ 2,000), p50 {:.2} ms, p99 {:.2} ms, {} busy answers",
        sizes.throughput_for, throughput.per_second, throughput.p50_ms, throughput.p99_ms, throughput.busy
    );
    println!(
        "resident memory: {:.1} MB serving, {:.1} MB with {SESSIONS} open sessions ({:.1} KB per session)",
        memory.base_mb,
        memory.with_sessions_mb,
        memory.per_session_kb()
    );
    println!(
        "an approval over MRTR (2026-07-28), {rounds} rounds, medians: the call that parks {:.2} ms, the retry that resumes {:.2} ms; \
         across two stateless replicas through Redis: {:.2} ms and {:.2} ms",
        approvals.one.0 / 1e3,
        approvals.one.1 / 1e3,
        approvals.two.0 / 1e3,
        approvals.two.1 / 1e3
    );
    println!(
        "tasks/get of a working task, median: {:.2} ms on the replica that runs it, {:.2} ms on another (through Redis)",
        approvals.task_get / 1e3,
        approvals.task_get_other / 1e3
    );
    for (protocol, figures) in [("2025-11-25 (sessions)", &legacy_100), ("2026-07-28 (no sessions)", &modern_100)] {
        println!(
            "HTTP, {MANY_CLIENTS} clients of {protocol} for {:?}: {:.0} Execs/s, p50 {:.2} ms, p99 {:.2} ms, {} busy answers",
            sizes.throughput_for, figures.per_second, figures.p50_ms, figures.p99_ms, figures.busy
        );
    }
    println!(
        "HTTP, {MANY_CLIENTS} clients of 2026-07-28 for {:?}, stateless replicas sharing one Redis: \
         one replica alone {:.0} Execs/s (p50 {:.2} ms, p99 {:.2} ms); two behind nginx, round-robin \
         (deploy/nginx/exec-host.conf) {:.0} Execs/s (p50 {:.2} ms, p99 {:.2} ms, {} busy answers): {:.2}x the throughput, \
         {:.2}x the p99",
        sizes.throughput_for,
        balanced.alone.per_second,
        balanced.alone.p50_ms,
        balanced.alone.p99_ms,
        balanced.nginx.per_second,
        balanced.nginx.p50_ms,
        balanced.nginx.p99_ms,
        balanced.nginx.busy,
        balanced.nginx.per_second / balanced.alone.per_second,
        balanced.nginx.p99_ms / balanced.alone.p99_ms,
    );
    if let Some(file) = record {
        let medians =
            [("serve_stdio", stdio.median_us), ("serve_http", http.median_us), ("serve_http_modern", http_modern.median_us)];
        let extras = [
            ("serve_stdio.p99_us", stdio.p99_us),
            ("serve_http.p99_us", http.p99_us),
            ("serve_http_modern.p99_us", http_modern.p99_us),
            ("serve_in_process.median_us", in_process.median_us),
            ("serve_clients_32.execs_per_s", throughput.per_second),
            ("serve_clients_100_modern.execs_per_s", modern_100.per_second),
            ("serve_clients_100_one_replica.execs_per_s", balanced.alone.per_second),
            ("serve_clients_100_one_replica.p99_ms", balanced.alone.p99_ms),
            ("serve_clients_100_nginx.execs_per_s", balanced.nginx.per_second),
            ("serve_clients_100_nginx.p99_ms", balanced.nginx.p99_ms),
            ("serve_mrtr.park_us", approvals.one.0),
            ("serve_mrtr.resume_us", approvals.one.1),
        ];
        let line = |pairs: &[(&str, f64)]| pairs.iter().map(|(name, value)| (name.to_string(), json!(round1(*value)))).collect();
        exec_host_bench::history::record(&file, line(&medians), line(&extras), quick)?;
    }
    Ok(())
}

/// A hundred clients of 2026-07-28 against one stateless replica alone, and through nginx
/// configured by the deployment's file, round-robin over two such replicas sharing one Redis.
struct Balanced {
    alone: Throughput,
    nginx: Throughput,
}

async fn balanced(binary: &Path, workdir: &Path, cache: &Path, duration: Duration) -> Result<Balanced> {
    let (_, key) = state_folder(workdir)?;
    let redis = exec_host_tests::redis::RedisServer::start();
    let store = redis.url(0);
    let flags = ["--stateless", "--state-store", &store, "--state-key-file", &key, "--concurrency", "128"];
    let alone = {
        let replica = HttpServer::start_with(binary, workdir, cache, &flags)?;
        modern_throughput(&replica.url, MANY_CLIENTS, duration).await?
    };
    let first = HttpServer::start_with(binary, workdir, cache, &flags)?;
    let second = HttpServer::start_with(binary, workdir, cache, &flags)?;
    let address = |server: &HttpServer| server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let nginx = exec_host_tests::nginx::Nginx::start(&[address(&first), address(&second)]);
    let nginx = modern_throughput(&nginx.url("/mcp"), MANY_CLIENTS, duration).await?;
    Ok(Balanced { alone, nginx })
}

/// A folder for the state store beside the workspace (never in it: the host refuses a store
/// scripts could read), and the path of the key file written in it.
fn state_folder(workdir: &Path) -> Result<(std::path::PathBuf, String)> {
    let state = workdir.with_file_name("serve-bench-state");
    std::fs::create_dir_all(&state)?;
    let key = state.join("state.key");
    std::fs::write(&key, "5a".repeat(32))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))?;
    Ok((state.clone(), key.display().to_string()))
}

/// Medians of the two requests of one approval (microseconds): on one server, and parked on
/// one replica and resumed on another; and of a `tasks/get` of a working task, on the
/// replica that runs it and on another.
struct Approvals {
    one: (f64, f64),
    two: (f64, f64),
    task_get: f64,
    task_get_other: f64,
}

async fn approvals(binary: &Path, workdir: &Path, cache: &Path, rounds: usize) -> Result<Approvals> {
    let (state, key) = state_folder(workdir)?;
    let folder = state.join("store").display().to_string();
    let http = reqwest::Client::new();
    // The fixture server's `never` keeps a task's Exec working for as long as it is polled.
    let fixture = binary.with_file_name("fixture-mcp-server");
    let servers = state.join("servers.json");
    std::fs::write(&servers, json!({"mcpServers": {"fx": {"command": fixture}}}).to_string())?;
    let servers = servers.display().to_string();
    let tools = ["--mcp-config", &servers, "--allow", "mcp__fx"];
    let single = HttpServer::start_with(
        binary,
        workdir,
        cache,
        &[&["--state-store", &folder, "--state-key-file", &key][..], &tools].concat(),
    )?;
    let one = approval_rounds(&http, &single.url, &single.url, rounds).await?;
    let task_get = task_gets(&http, &single.url, &single.url, rounds * 10).await?;
    drop(single);
    let redis = exec_host_tests::redis::RedisServer::start();
    let url = redis.url(0);
    let flags = [&["--stateless", "--state-store", &url, "--state-key-file", &key][..], &tools].concat();
    let first = HttpServer::start_with(binary, workdir, cache, &flags)?;
    let second = HttpServer::start_with(binary, workdir, cache, &flags)?;
    let two = approval_rounds(&http, &first.url, &second.url, rounds).await?;
    let task_get_other = task_gets(&http, &first.url, &second.url, rounds * 10).await?;
    Ok(Approvals { one, two, task_get, task_get_other })
}

/// The median of `n` `tasks/get` round trips (microseconds) to `poll`, for a task whose Exec
/// runs on at `run`; then the task is cancelled.
async fn task_gets(http: &reqwest::Client, run: &str, poll: &str, n: usize) -> Result<f64> {
    let code = "await tools.mcp__fx__never({}); return 'never'";
    let created = modern_call(http, run, json!({"name": "Exec", "arguments": {"code": code}})).await?;
    let id = created["taskId"].as_str().with_context(|| format!("the Exec did not become a task: {created}"))?.to_string();
    let get = || modern_request(http, poll, "tasks/get", &id, json!({"taskId": id}));
    let mut us = Vec::with_capacity(n);
    for round in 0..n + n / 10 {
        let started = Instant::now();
        let task = get().await?;
        if round >= n / 10 {
            us.push(started.elapsed().as_secs_f64() * 1e6);
        }
        if task["status"] != "working" {
            bail!("the task is not working: {task}");
        }
    }
    modern_request(http, poll, "tasks/cancel", &id, json!({"taskId": id})).await?;
    Ok(median(&mut us))
}

/// `rounds` approvals: a write that asks is parked at `park`, and resumed at `resume`.
async fn approval_rounds(http: &reqwest::Client, park: &str, resume: &str, rounds: usize) -> Result<(f64, f64)> {
    let code = "await tools.write_file({ path: 'mrtr.txt', content: 'x' }); return 'written'";
    let (mut parks, mut resumes) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        let started = Instant::now();
        let asked = modern_call(http, park, json!({"name": "Exec", "arguments": {"code": code}})).await?;
        parks.push(started.elapsed().as_secs_f64() * 1e6);
        let state = asked["requestState"].as_str().with_context(|| format!("the call did not park: {asked}"))?;
        let retry = json!({"name": "Exec", "arguments": {"code": code}, "requestState": state,
                           "inputResponses": {"approval-0": {"action": "accept", "content": {"decision": "once"}}}});
        let started = Instant::now();
        let done = modern_call(http, resume, retry).await?;
        resumes.push(started.elapsed().as_secs_f64() * 1e6);
        if !done.to_string().contains("written") {
            bail!("the retry answered {done}");
        }
    }
    Ok((median(&mut parks), median(&mut resumes)))
}

/// A `tools/call` as a client of 2026-07-28 sends it (no session; the protocol and the
/// capabilities in `_meta`, the routing headers), and its result.
async fn modern_call(http: &reqwest::Client, url: &str, params: serde_json::Value) -> Result<serde_json::Value> {
    let name = params["name"].as_str().unwrap_or_default().to_string();
    modern_request(http, url, "tools/call", &name, params).await
}

/// A request of a client of 2026-07-28 (which declares elicitation and the Tasks extension),
/// `name` its `Mcp-Name`, and its result.
async fn modern_request(
    http: &reqwest::Client,
    url: &str,
    method: &str,
    name: &str,
    mut params: serde_json::Value,
) -> Result<serde_json::Value> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "serve-bench", "version": "1"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(body.to_string())
        .send()
        .await?
        .text()
        .await?;
    // A JSON body, or a stream of events whose data lines carry the answer.
    let message = response
        .lines()
        .map(|line| line.strip_prefix("data:").map_or(line, str::trim))
        .find_map(|line| serde_json::from_str::<serde_json::Value>(line).ok().filter(|value| value.get("jsonrpc").is_some()))
        .with_context(|| format!("no JSON-RPC answer in {response:?}"))?;
    message.get("result").cloned().with_context(|| format!("the request failed: {message}"))
}

struct Figures {
    median_us: f64,
    p99_us: f64,
}

/// Runs `call` a tenth of `n` times to warm up, then `n` times, timing each.
async fn sequential_us<F, Fut>(n: usize, call: F) -> Result<Figures>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    for _ in 0..n / 10 {
        call().await?;
    }
    let mut us = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        call().await?;
        us.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let p99_us = quantile(&us, 0.99);
    Ok(Figures { median_us: median(&mut us), p99_us })
}

fn check(text: &str) -> Result<()> {
    if text != "2" {
        bail!("a trivial Exec answered {text:?}");
    }
    Ok(())
}

/// One trivial Exec through an MCP client; `Ok(false)` when the server answered busy.
async fn exec_once(client: &RunningService<RoleClient, ()>) -> Result<bool> {
    let params =
        CallToolRequestParams::new("Exec").with_arguments(json!({ "code": TRIVIAL }).as_object().cloned().unwrap_or_default());
    let result = client.call_tool(params).await?;
    let text: String = result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    if text.starts_with("busy:") {
        return Ok(false);
    }
    check(&text)?;
    Ok(true)
}

async fn exec(client: &RunningService<RoleClient, ()>) -> Result<()> {
    if !exec_once(client).await? {
        bail!("the server answered busy to a single client");
    }
    Ok(())
}

/// A `ping` round trip: the transport and both MCP ends, without a tool.
async fn ping(client: &RunningService<RoleClient, ()>) -> Result<()> {
    use rmcp::model::{ClientRequest, PingRequest};
    client.send_request(ClientRequest::PingRequest(PingRequest::default())).await?;
    Ok(())
}

async fn connect(url: &str) -> Result<RunningService<RoleClient, ()>> {
    Ok(().serve(StreamableHttpClientTransport::from_uri(url.to_string())).await?)
}

struct Throughput {
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    busy: usize,
}

/// `count` sessions each calling trivial Execs back to back for `duration`.
async fn sessions_throughput(url: &str, count: usize, duration: Duration) -> Result<Throughput> {
    let mut clients = Vec::with_capacity(count);
    for _ in 0..count {
        clients.push(Arc::new(connect(url).await?));
    }
    for client in &clients {
        exec(client).await?;
    }
    let started = Instant::now();
    let deadline = started + duration;
    let runs = clients.iter().cloned().map(|client| {
        tokio::spawn(async move {
            let (mut ms, mut busy) = (Vec::new(), 0usize);
            while Instant::now() < deadline {
                let call = Instant::now();
                match exec_once(&client).await? {
                    true => ms.push(call.elapsed().as_secs_f64() * 1e3),
                    false => busy += 1,
                }
            }
            Ok::<_, anyhow::Error>((ms, busy))
        })
    });
    let throughput = gathered(runs, started).await?;
    for client in clients {
        if let Ok(client) = Arc::try_unwrap(client) {
            client.cancel().await?;
        }
    }
    Ok(throughput)
}

/// The figures of client `runs` (each its call times in ms and its busy answers) that
/// started at `started`.
async fn gathered(
    runs: impl Iterator<Item = tokio::task::JoinHandle<Result<(Vec<f64>, usize)>>>,
    started: Instant,
) -> Result<Throughput> {
    let mut all = Vec::new();
    let mut busy = 0;
    for run in futures::future::join_all(runs).await {
        let (ms, refused) = run??;
        all.extend(ms);
        busy += refused;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let p99_ms = quantile(&all, 0.99);
    let per_second = all.len() as f64 / elapsed;
    Ok(Throughput { per_second, p50_ms: median(&mut all), p99_ms, busy })
}

/// `count` clients of 2026-07-28 (no sessions: each call a request of its own) each calling
/// trivial Execs back to back for `duration`.
async fn modern_throughput(url: &str, count: usize, duration: Duration) -> Result<Throughput> {
    let http = reqwest::Client::builder().pool_max_idle_per_host(count).build()?;
    let call = json!({"name": "Exec", "arguments": {"code": TRIVIAL}});
    modern_call(&http, url, call.clone()).await?;
    let started = Instant::now();
    let deadline = started + duration;
    let runs = (0..count).map(|_| {
        let (http, url, call) = (http.clone(), url.to_string(), call.clone());
        tokio::spawn(async move {
            let (mut ms, mut busy) = (Vec::new(), 0usize);
            while Instant::now() < deadline {
                let at = Instant::now();
                let result = modern_call(&http, &url, call.clone()).await?;
                let text = result["content"][0]["text"].as_str().unwrap_or_default();
                if text.starts_with("busy:") {
                    busy += 1;
                    continue;
                }
                check(text)?;
                ms.push(at.elapsed().as_secs_f64() * 1e3);
            }
            Ok::<_, anyhow::Error>((ms, busy))
        })
    });
    gathered(runs, started).await
}

struct Memory {
    base_mb: f64,
    with_sessions_mb: f64,
}

impl Memory {
    fn per_session_kb(&self) -> f64 {
        (self.with_sessions_mb - self.base_mb) * 1024.0 / SESSIONS as f64
    }
}

/// The server's RSS, then again with `SESSIONS` more sessions initialized and left open.
async fn sessions_rss(server: &HttpServer) -> Result<Memory> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base_mb = rss_mb(server.child.id())?;
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    for _ in 0..SESSIONS {
        let response = http
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string())
            .send()
            .await?;
        let session = response.headers().get("mcp-session-id").context("a session id")?.to_str()?.to_string();
        // The answer's stream ends once the answer is out.
        response.bytes().await?;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        http.post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", session)
            .body(initialized.to_string())
            .send()
            .await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(Memory { base_mb, with_sessions_mb: rss_mb(server.child.id())? })
}

fn rss_mb(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .context("VmRSS")?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?;
    Ok(kb / 1024.0)
}

struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(binary: &Path, workdir: &Path, cache: &Path) -> Result<Self> {
        Self::start_with(binary, workdir, cache, &[])
    }

    fn start_with(binary: &Path, workdir: &Path, cache: &Path, flags: &[&str]) -> Result<Self> {
        // 64 calls at once, 4 per client, unless `flags` say otherwise.
        let concurrency = if flags.contains(&"--concurrency") { &[][..] } else { &["--concurrency", "64"][..] };
        let mut child = Command::new(binary)
            .args(["serve", "--http", "127.0.0.1:0", "--client-concurrency", "4"])
            .args(concurrency)
            .args(flags)
            .current_dir(workdir)
            .env("EXEC_HOST_CACHE_DIR", cache)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
        let url = loop {
            let line = lines.next().context("serve --http ended before it served")??;
            if let Some(url) = line.strip_prefix("exec-host: serving MCP at ") {
                break url.to_string();
            }
        };
        std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
        Ok(HttpServer { child, url })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}
