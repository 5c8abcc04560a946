//! The attack suite: every case in `tests/attacks/*.json` runs as an Exec through the real
//! guest and host. A case's script returns `true` only if its attack worked; the runner also
//! fails a case whose Exec panics, stops the engine, or does not finish in time. The suite
//! grows with every fix: a new way in is a new case.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use exec_host::ToolResult;
use exec_host_tests::Harness;
use exec_host_tests::attack::{BROKEN, cases, field, flip, make, snapshot};
use serde_json::Value;

/// Longest a case may take; past it the case hung the host.
const CASE_DEADLINE: Duration = Duration::from_secs(30);

/// The secret a path attack tries to read; it stands in `outside/secret.txt`.
const SECRET: &str = "TOP-SECRET-7f3a";

/// Put before every path case: `tries(promise)` is true when the promise's value or its
/// error shows the secret.
const PATH_PRELUDE: &str = "const tries = async (p) => { let v; try { v = await p; } catch (e) { v = String(e && e.message); } return JSON.stringify(v === undefined ? null : v).includes('TOP-SECRET'); };\n";

/// Runs one case's script within the deadline; `Err` says how the host failed it.
async fn attempt(harness: &Harness, name: &str, code: &str) -> Result<(), String> {
    let outcome: ToolResult = tokio::time::timeout(CASE_DEADLINE, harness.run(code))
        .await
        .map_err(|_| format!("{name}: did not finish within {CASE_DEADLINE:?}"))?;
    let text = outcome.text();
    if outcome.value() == Some(&Value::Bool(true)) {
        return Err(format!("{name}: the attack worked"));
    }
    if let Some(sign) = BROKEN.iter().find(|sign| text.contains(*sign)) {
        return Err(format!("{name}: the result says `{sign}`:\n{}", text.chars().take(600).collect::<String>()));
    }
    Ok(())
}

fn report(failures: &[String], total: usize) {
    assert!(failures.is_empty(), "{} of {total} attacks failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_realm_attack_escapes_panics_or_hangs() {
    let cases = cases("realm.json");
    assert!(cases.len() >= 200, "the realm suite has {} cases", cases.len());
    let harness = Harness::new().await;
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(failure) = attempt(&harness, field(case, "name"), field(case, "code")).await {
            failures.push(failure);
        }
    }
    report(&failures, cases.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_path_attack_leaves_the_workspace_writes_a_control_file_or_blocks() {
    let cases = cases("path.json");
    assert!(cases.len() >= 60, "the path suite has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let name = field(case, "name");
        if let Err(failure) = path_case(case).await {
            failures.push(format!("{name}: {failure}"));
        }
    }
    report(&failures, cases.len());
}

/// One path case in a fresh `ws/` beside `outside/`.
async fn path_case(case: &Value) -> Result<(), String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (ws, outside) = (root.path().join("ws"), root.path().join("outside"));
    std::fs::create_dir_all(outside.join("sub")).map_err(|e| e.to_string())?;
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).map_err(|e| e.to_string())?;
    std::fs::create_dir(&ws).map_err(|e| e.to_string())?;
    let place = |s: &str| {
        s.replace("$OUTSIDE", &outside.to_string_lossy())
            .replace("$WS_ABS", &ws.to_string_lossy())
            .replace("$PID", &std::process::id().to_string())
    };
    let mut sockets = Vec::new();
    for entry in case["setup"].as_array().into_iter().flatten() {
        make(&ws, entry, &place, &mut sockets)?;
    }
    // What no case may change: the folder outside, the control folders, and what the case
    // names as run by the host (a hook's script, a server's folder).
    let kept: Vec<String> = [".git", ".exec-host"]
        .into_iter()
        .map(str::to_string)
        .chain(case["unchanged"].as_array().into_iter().flatten().map(|path| path.as_str().unwrap_or_default().to_string()))
        .collect();
    let watched = || {
        std::iter::once(("outside/".to_string(), snapshot(&outside)))
            .chain(kept.iter().map(|path| (format!("ws/{path}"), snapshot(&ws.join(path)))))
            .collect::<Vec<_>>()
    };
    let before = watched();

    let session = path_session(case, &ws, &place).await?;
    let harness = Harness::from_session(session);
    let stop = Arc::new(AtomicBool::new(false));
    let racer = case.get("race").map(|race| {
        let at = ws.join(field(race, "path"));
        let states: Vec<String> =
            race["between"].as_array().expect("two states").iter().map(|s| place(s.as_str().unwrap())).collect();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for state in &states {
                    flip(&at, state);
                }
            }
        })
    });
    let code = format!("{PATH_PRELUDE}{}", place(field(case, "code")));
    let result = attempt(&harness, "the script", &code).await;
    stop.store(true, Ordering::Relaxed);
    if let Some(racer) = racer {
        racer.join().map_err(|_| "the race thread panicked".to_string())?;
    }
    result?;
    let after = watched();
    for ((what, before), (_, after)) in before.iter().zip(&after) {
        if before != after {
            return Err(format!("{what} changed: before {before:?}, after {after:?}"));
        }
    }
    Ok(())
}

/// The session of a path case: the harness's, with the case's `settings` (a settings layer:
/// hooks, rules), `mcp` (servers, as an MCP configuration file says them) and `approve`
/// (`"always"`: every call that asks is approved always, in the default permission mode).
async fn path_session(case: &Value, ws: &std::path::Path, place: &dyn Fn(&str) -> String) -> Result<exec_host::Session, String> {
    let mut builder = Harness::builder(ws, &Default::default()).await;
    if let Some(settings) = case.get("settings") {
        let settings: Value = serde_json::from_str(&place(&settings.to_string())).map_err(|e| e.to_string())?;
        let layer = exec_host::settings::Layer::from_value(settings).map_err(|e| e.to_string())?;
        builder = builder.settings_sources(vec![exec_host::settings::SettingsSource::Values(Box::new(layer))]);
    }
    if let Some(servers) = case.get("mcp") {
        let text = place(&serde_json::json!({ "mcpServers": servers }).to_string());
        let config = exec_host::mcp::McpConfig::parse(&text, std::path::Path::new("case.json")).map_err(|e| e.to_string())?;
        builder = builder.mcp_servers(config);
    }
    if case["approve"].as_str() == Some("always") {
        let approver = exec_host_tests::TestApprover::new(|_| exec_host::Approval::AllowAlways);
        builder = builder
            .approver(Arc::new(exec_host_tests::SharedApprover(approver)))
            .starting_permission_mode(exec_host::settings::PermissionMode::Default);
    }
    builder.build().await.map_err(|e| e.to_string())
}
