//! The attack suite: every case in `tests/attacks/*.json` runs as an Exec through the real
//! guest and host. A case's script returns `true` only if its attack worked; the runner also
//! fails a case whose Exec panics, stops the engine, or does not finish in time. The suite
//! grows with every fix: a new way in is a new case.

use std::time::Duration;

use exec_host_tests::Harness;
use serde_json::Value;

/// Longest a case may take; past it the case hung the host.
const CASE_DEADLINE: Duration = Duration::from_secs(30);

/// Text that only a broken host puts in a result.
const BROKEN: [&str; 4] = ["panicked", "RUST_BACKTRACE", "the engine stopped", "unreachable"];

fn cases(file: &str) -> Vec<(String, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("attacks").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let suite: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let attacks = suite["attacks"].as_array().expect("an `attacks` array");
    attacks
        .iter()
        .map(|a| (a["name"].as_str().expect("a name").to_string(), a["code"].as_str().expect("code").to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_realm_attack_escapes_panics_or_hangs() {
    let cases = cases("realm.json");
    assert!(cases.len() >= 200, "the realm suite has {} cases", cases.len());
    let harness = Harness::new().await;
    // A file outside the workspace a path attack would reveal.
    let mut failures = Vec::new();
    for (name, code) in &cases {
        let outcome = match tokio::time::timeout(CASE_DEADLINE, harness.run(code)).await {
            Ok(outcome) => outcome,
            Err(_) => {
                failures.push(format!("{name}: did not finish within {CASE_DEADLINE:?}"));
                continue;
            }
        };
        let text = outcome.text();
        if outcome.value() == Some(&Value::Bool(true)) {
            failures.push(format!("{name}: the attack worked"));
        } else if let Some(sign) = BROKEN.iter().find(|sign| text.contains(*sign)) {
            failures.push(format!("{name}: the result says `{sign}`:\n{}", text.chars().take(600).collect::<String>()));
        }
    }
    assert!(failures.is_empty(), "{} of {} attacks failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}
