//! The MCP benchmarks: nested calls from a script to a stdio MCP server (the rmcp fixture
//! server of the test crate), against the floor of the same calls made by the host without
//! a script, and the same server called by the official TypeScript SDK client from Node.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use exec_host::mcp::ServerConfig;
use exec_host_tests::Harness;
use serde_json::{Value, json};

/// Calls per sequential sample (one sample = this many calls from a script, then as many
/// from the host directly, so the two are measured under the same machine load).
pub const CALLS: usize = 200;

/// Connects the fixture server (built next to this binary) twice: as `fx`, pooled, for
/// scripts, and as `fxd`, `alwaysLoad` and so declared flat, for the model's direct calls.
pub async fn connect(harness: &Harness, target: &Path) -> Result<()> {
    let fixture = target.join("fixture-mcp-server");
    if !fixture.exists() {
        bail!("{} is missing: build it first (cargo build --release --workspace --bins)", fixture.display());
    }
    let server = ServerConfig::stdio(fixture.display().to_string(), []);
    harness.session.add_server("fx", server.clone()).await?;
    harness.session.add_server("fxd", server.always_load(true)).await?;
    Ok(())
}

pub fn seq_script() -> String {
    format!("let n = 0;\nfor (let i = 0; i < {CALLS}; i++) n += (await tools.mcp__fx__echo({{ i }})).i;\nreturn n;")
}

pub fn seq_expected() -> Value {
    json!(CALLS * (CALLS - 1) / 2)
}

pub const PARALLEL_SCRIPT: &str =
    "const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.mcp__fx__echo({ i })));\nreturn r.length;";

/// The same calls as [`seq_script`], made directly by the model through the session (the
/// funnel, the rmcp client, the server and the output mapping, no script): the floor under
/// the script's calls. Returns microseconds.
pub async fn funnel_calls(harness: &Harness) -> Result<f64> {
    let started = Instant::now();
    for i in 0..CALLS {
        let result = harness.call("mcp__fxd__echo", json!({ "i": i })).await;
        if result.value() != Some(&json!({ "i": i })) {
            bail!("mcp_seq: wrong answer from the direct path: {}", result.text());
        }
    }
    Ok(started.elapsed().as_secs_f64() * 1e6)
}

/// Per-call microseconds of the TypeScript SDK client calling the fixture from Node, when
/// the npm packages of tests/mcp-servers are installed.
pub fn node_sdk_per_call(target: &Path, quick: bool) -> Result<Option<f64>> {
    let packages = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp-servers");
    if !packages.join("node_modules/@modelcontextprotocol/sdk").exists() {
        eprintln!("(tests/mcp-servers has no node_modules: run scripts/install-test-servers for the Node SDK baseline)");
        return Ok(None);
    }
    let rounds = if quick { "2" } else { "5" };
    let output = Command::new("node")
        .arg("node-client-bench.mjs")
        .arg(target.join("fixture-mcp-server"))
        .args([&CALLS.to_string(), rounds])
        .current_dir(&packages)
        .output()?;
    if !output.status.success() {
        bail!("node-client-bench.mjs: {}", String::from_utf8_lossy(&output.stderr));
    }
    let line = String::from_utf8_lossy(&output.stdout).lines().find(|l| l.starts_with('{')).map(str::to_string);
    let value: Value = serde_json::from_str(&line.context("node-client-bench.mjs printed no result")?)?;
    Ok(value["per_call_us"].as_f64())
}

/// The MCP table: per-call costs and the script's overhead above the host's own path.
pub fn print_table(ours: &BTreeMap<String, Value>, node: Option<f64>) {
    let seq = ours.get("mcp_seq");
    let field = |key: &str| seq.and_then(|line| line[key].as_f64());
    let parallel = ours.get("mcp_parallel_100").and_then(|line| line["median_us"].as_f64());
    if seq.is_none() && parallel.is_none() {
        return;
    }
    let us = |v: Option<f64>| v.map(|v| format!("{v:.1} µs")).unwrap_or_else(|| "-".into());
    let script = field("per_call_us");
    println!();
    println!("| MCP, stdio fixture server, median | per call |");
    println!("|---|---:|");
    println!("| script in exec-host -> server ({CALLS} sequential calls) | {} |", us(script));
    println!("| host funnel -> server, no script (the floor, same sample) | {} |", us(field("floor_per_call_us")));
    println!("| script overhead above the floor (median of paired samples) | {} |", us(field("overhead_per_call_us")));
    println!("| script's own running time | {} |", us(field("script_per_call_us")));
    println!("| Node, TypeScript SDK client -> same server, no sandbox | {} |", us(node));
    if let (Some(s), Some(n)) = (script, node) {
        println!("| Node SDK client / exec-host script | {:.2}x |", n / s);
    }
    if let Some(p) = parallel {
        println!("| Promise.all of 100 calls from a script, wall | {:.2} ms |", p / 1000.0);
    }
}
