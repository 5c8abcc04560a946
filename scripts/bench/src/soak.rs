//! The soak run: many Execs at once for a long time, mixing builtin and MCP calls, failures
//! and aborts, while the host's resident memory, open file descriptors, threads and child
//! processes are sampled. None may grow: after a warm-up, the last samples are compared with
//! the first. Prints one line per sample and a verdict; exits 1 when something grew.
//!
//! ```text
//! cargo build --release --workspace --bins
//! target/release/soak [--minutes 60] [--concurrency 1000] [--sample-seconds 30] [--only N]
//!
//! `--only N` runs only the Nth script of `SCRIPTS` (from 0), to find which one leaks.
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use exec_host::mcp::ServerConfig;
use exec_host::{CallOptions, CancellationToken};
use exec_host_tests::{Harness, exec_call};

/// The scripts the soak cycles through: builtin and MCP calls, failures, aborts, a parked
/// call left behind, logs, and errors thrown.
const SCRIPTS: &[&str] = &[
    "let n = 0; for (let i = 0; i < 20; i++) n += (await tools.mcp__fx__echo({ i })).i; return n;",
    "await tools.write_file({ path: `f${Math.floor(Math.random() * 50)}.txt`, content: 'x'.repeat(1000) }); return (await tools.ls({ path: '.' })).total;",
    "const r = await Promise.allSettled([tools.echo({ value: 1 }), tools.mcp__fx__fail({}), tools.fail({}), tools.mcp__fx__slow({ ms: 20 })]); return r.map((x) => x.status);",
    "console.log('a line', { k: [1, 2, 3] }); throw new Error('thrown on purpose');",
    "tools.mcp__fx__never({}); await tools.sleep({ ms: 5 }); return 'left an MCP call behind';",
    "tools.never({}); await tools.sleep({ ms: 5 }); return 'left a call behind';",
    "await tools.mcp__fx__slow({ ms: 2000 }); return 'not aborted';",
    "const s = await tools.ToolSearch({ query: 'echo' }); return s.total;",
    "let v = 0; for (let i = 0; i < 1e5; i++) v += i; return v;",
];

/// Growth past which a resource counts as leaking, from the first sample after warm-up to
/// the last: a fraction of the first value plus a small absolute slack.
const GROWTH_FRACTION: f64 = 0.25;

/// The runtime's threads for blocking work (the workspace tools' file access). The pool
/// grows and shrinks with the load (idle threads leave after 10 s), so its size at any one
/// sample says nothing about a leak: threads are checked against this bound instead.
const BLOCKING_THREADS: usize = 64;

/// Threads besides the runtime's: the main thread, the engine's epoch ticker, a few spare.
const OTHER_THREADS: usize = 8;

struct Sample {
    at: Duration,
    rss_kib: u64,
    fds: u64,
    threads: u64,
    children: u64,
    execs: u64,
}

fn main() -> Result<()> {
    let mut minutes = 60.0;
    let mut concurrency = 1000usize;
    let mut sample_seconds = 30u64;
    let mut only = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--minutes" => minutes = value()?.parse()?,
            "--concurrency" => concurrency = value()?.parse()?,
            "--sample-seconds" => sample_seconds = value()?.parse()?,
            "--only" => {
                let n: usize = value()?.parse()?;
                if n >= SCRIPTS.len() {
                    bail!("--only takes 0 to {}", SCRIPTS.len() - 1);
                }
                only = Some(n);
            }
            other => bail!("unknown argument {other}"),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().max_blocking_threads(BLOCKING_THREADS).enable_all().build()?;
    let scripts: Vec<&'static str> = match only {
        Some(n) => vec![SCRIPTS[n]],
        None => SCRIPTS.to_vec(),
    };
    runtime.block_on(soak(Duration::from_secs_f64(minutes * 60.0), concurrency, Duration::from_secs(sample_seconds), scripts))
}

async fn soak(length: Duration, concurrency: usize, every: Duration, scripts: Vec<&'static str>) -> Result<()> {
    let scripts = Arc::new(scripts);
    let target = std::env::current_exe()?.parent().context("the soak binary has a folder")?.to_path_buf();
    let fixture = target.join("fixture-mcp-server");
    if !fixture.exists() {
        bail!("{} is missing: build it first (cargo build --release --workspace --bins)", fixture.display());
    }
    let harness = Arc::new(Harness::new().await);
    harness.session.add_server("fx", ServerConfig::stdio(fixture.display().to_string(), [])).await?;
    let execs = Arc::new(AtomicU64::new(0));
    let stop = CancellationToken::new();
    let start = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let (harness, execs, stop, scripts) = (harness.clone(), execs.clone(), stop.clone(), scripts.clone());
            tokio::spawn(async move {
                let mut round = worker;
                while !stop.is_cancelled() {
                    let script = scripts[round % scripts.len()];
                    let abort = CancellationToken::new();
                    // Every script that waits on a slow call is aborted part way.
                    if script.contains("2000") {
                        let abort = abort.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            abort.cancel();
                        });
                    }
                    let _ = harness.session.call_with(exec_call(script), CallOptions::new(abort)).await;
                    execs.fetch_add(1, Ordering::Relaxed);
                    round += concurrency;
                }
            })
        })
        .collect();

    println!("{:>8} {:>10} {:>6} {:>8} {:>9} {:>10}", "seconds", "rss_kib", "fds", "threads", "children", "execs");
    let mut samples = Vec::new();
    while start.elapsed() < length {
        tokio::time::sleep(every.min(length.saturating_sub(start.elapsed()))).await;
        let sample = measure(start.elapsed(), execs.load(Ordering::Relaxed))?;
        println!(
            "{:>8.0} {:>10} {:>6} {:>8} {:>9} {:>10}",
            sample.at.as_secs_f64(),
            sample.rss_kib,
            sample.fds,
            sample.threads,
            sample.children,
            sample.execs
        );
        samples.push(sample);
    }
    stop.cancel();
    for worker in workers {
        let _ = worker.await;
    }
    harness.session.shutdown().await;
    verdict(&samples)
}

/// This process's resources, read from /proc.
fn measure(at: Duration, execs: u64) -> Result<Sample> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir("/proc/self/fd")?.count() as u64;
    Ok(Sample { at, rss_kib: field("VmRSS:"), fds, threads: field("Threads:"), children: children()?, execs })
}

/// Processes whose parent is this one.
fn children() -> Result<u64> {
    let me = std::process::id().to_string();
    let mut count = 0;
    for entry in std::fs::read_dir("/proc")?.flatten() {
        if !entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // A process may exit between the listing and the read.
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The parent pid is the second field after the command, which is in parentheses.
        let parent = text.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if parent == Some(me.as_str()) {
            count += 1;
        }
    }
    Ok(count)
}

/// Compares the first sample after a warm-up (a quarter of the run) with the mean of the
/// last quarter; threads, whose pool breathes with the load, must stay within their bound
/// at every sample.
fn verdict(samples: &[Sample]) -> Result<()> {
    if samples.len() < 4 {
        bail!("too few samples ({}) to judge growth; run longer or sample more often", samples.len());
    }
    let warm = &samples[samples.len() / 4];
    let tail = &samples[samples.len() * 3 / 4..];
    let mean = |f: fn(&Sample) -> u64| tail.iter().map(f).sum::<u64>() as f64 / tail.len() as f64;
    let last = samples.last().expect("samples");
    let rate = last.execs as f64 / last.at.as_secs_f64();
    println!("{} Execs in {:.0} s ({rate:.0} per second)", last.execs, last.at.as_secs_f64());
    let mut grew = Vec::new();
    let thread_bound = std::thread::available_parallelism().map_or(1, |n| n.get()) + BLOCKING_THREADS + OTHER_THREADS;
    let most_threads = samples.iter().map(|s| s.threads).max().unwrap_or(0);
    println!("threads: at most {most_threads} (bound {thread_bound}: workers, the blocking pool, {OTHER_THREADS} others)");
    if most_threads as usize > thread_bound {
        grew.push("threads");
    }
    for (name, first, end, slack) in [
        ("rss_kib", warm.rss_kib as f64, mean(|s| s.rss_kib), 16_384.0),
        ("fds", warm.fds as f64, mean(|s| s.fds), 8.0),
        ("children", warm.children as f64, mean(|s| s.children), 0.0),
    ] {
        let bound = first * (1.0 + GROWTH_FRACTION) + slack;
        println!("{name}: {first:.0} after warm-up, {end:.0} at the end (bound {bound:.0})");
        if end > bound {
            grew.push(name);
        }
    }
    if grew.is_empty() {
        println!("nothing grew");
        Ok(())
    } else {
        bail!("grew: {}", grew.join(", "))
    }
}
