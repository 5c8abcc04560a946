//! `exec-host doctor`: one test per check it makes, each with the set-up that passes it and
//! one that fails or warns, on the real binary.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::common::fixture_mcp_server;
use crate::{Setup, mcp_config, stderr, stdout};

/// The checks `doctor --json` printed: (name, status, detail).
fn checks_in(output: &Output) -> Vec<(String, String, String)> {
    stdout(output)
        .lines()
        .map(|line| {
            let check: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("one JSON object a line: {line}"));
            let text = |key: &str| check[key].as_str().unwrap().to_string();
            (text("check"), text("status"), text("detail"))
        })
        .collect()
}

/// The status and detail of check `name`.
fn check(checks: &[(String, String, String)], name: &str) -> (String, String) {
    let (_, status, detail) =
        checks.iter().find(|(check, ..)| check == name).unwrap_or_else(|| panic!("no check {name:?}: {checks:?}"));
    (status.clone(), detail.clone())
}

/// A state store and its key outside the workspace, as `run` and `serve` take them.
fn store_flags(state: &Path) -> Vec<String> {
    let key = state.join("state.key");
    std::fs::write(&key, "cd".repeat(32)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    vec!["--state-store".into(), state.join("store").display().to_string(), "--state-key-file".into(), key.display().to_string()]
}

fn doctor(setup: &Setup, state: &Path, more: &[&str]) -> Output {
    let flags = store_flags(state);
    let mut args: Vec<&str> = vec!["doctor", "--json"];
    args.extend(flags.iter().map(String::as_str));
    args.extend(more);
    setup.run(&args)
}

#[test]
fn a_machine_where_everything_configured_works_exits_0_and_says_so() {
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let config = mcp_config(&setup, json!({"fx": {"command": fixture_mcp_server()}}));
    let output = doctor(&setup, state.path(), &["--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    let checks = checks_in(&output);
    for (name, status, detail) in &checks {
        assert_ne!(status, "failed", "{name}: {detail}");
    }
    // Without --json, one line per check and a summary.
    let plain = setup.run(&[
        "doctor",
        "--state-store",
        &state.path().join("store").display().to_string(),
        "--state-key-file",
        &state.path().join("state.key").display().to_string(),
    ]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert!(stdout(&plain).lines().any(|line| line.starts_with("ok       state store: ")), "{}", stdout(&plain));
    assert!(stderr(&plain).contains("everything configured works"), "{}", stderr(&plain));
}

#[test]
fn the_guest_cache_is_trusted_only_when_it_is_this_users_alone() {
    let setup = Setup::with_empty_cache();
    let state = tempfile::tempdir().unwrap();
    // The first process compiles or loads the guest and writes the cache; it is trusted.
    let output = doctor(&setup, state.path(), &[]);
    let (status, detail) = check(&checks_in(&output), "guest cache");
    assert_eq!(status, "ok", "{detail}");
    assert!(detail.contains("is trusted") && detail.contains(setup.cache.to_str().unwrap()), "{detail}");
    let again = doctor(&setup, state.path(), &[]);
    let (_, detail) = check(&checks_in(&again), "guest cache");
    assert!(detail.contains("mapped from the cache"), "the second process maps it: {detail}");

    // A folder others may write is not trusted: a warning, and the run still works.
    std::fs::set_permissions(&setup.cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let output = doctor(&setup, state.path(), &[]);
    let (status, detail) = check(&checks_in(&output), "guest cache");
    assert_eq!(status, "warning", "{detail}");
    assert!(detail.contains("is not used") && detail.contains("writable"), "{detail}");
    assert_eq!(output.status.code(), Some(0), "a cache not used is a warning, not a failure");
    std::fs::set_permissions(&setup.cache, std::fs::Permissions::from_mode(0o700)).unwrap();

    // No cache at all.
    let output = doctor(&setup, state.path(), &["--no-cache"]);
    let (status, detail) = check(&checks_in(&output), "guest cache");
    assert_eq!((status.as_str(), detail.contains("no cache is used")), ("warning", true), "{detail}");
}

#[test]
fn each_layer_of_bash_is_checked_and_bash_offered_is_said() {
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let output = doctor(&setup, state.path(), &["--enable-bash"]);
    let checks = checks_in(&output);
    // This machine runs the Bash tests, so it has every layer.
    for layer in ["Bash: namespaces", "Bash: seccomp", "Bash: pids cgroup"] {
        assert_eq!(check(&checks, layer).0, "ok", "{layer}: {}", check(&checks, layer).1);
    }
    let (status, detail) = check(&checks, "Bash: Landlock");
    assert!(status != "failed" && detail.starts_with("ABI "), "{detail}");
    let (status, detail) = check(&checks, "Bash");
    assert_eq!((status.as_str(), detail.as_str()), ("ok", "offered, and commands run confined here"));
    let off = doctor(&setup, state.path(), &[]);
    let (status, detail) = check(&checks_in(&off), "Bash");
    assert!(status == "ok" && detail.starts_with("not offered (--enable-bash"), "{detail}");
}

#[test]
fn each_mcp_server_is_started_and_counted_and_one_that_does_not_start_fails_the_doctor() {
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let config = mcp_config(
        &setup,
        json!({"fx": {"command": fixture_mcp_server()}, "gone": {"command": "/nonexistent/exec-host-test-server"}}),
    );
    let output = doctor(&setup, state.path(), &["--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let checks = checks_in(&output);
    let (status, detail) = check(&checks, "MCP server fx");
    assert!(status == "ok" && detail.contains("started, ") && detail.contains(" tools"), "{detail}");
    let (status, detail) = check(&checks, "MCP server gone");
    assert_eq!(status, "failed", "{detail}");
    assert!(detail.contains("/nonexistent/exec-host-test-server"), "says which and why: {detail}");
}

#[test]
fn the_state_store_must_answer_and_its_key_must_be_private() {
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let output = doctor(&setup, state.path(), &[]);
    let (status, detail) = check(&checks_in(&output), "state store");
    assert_eq!(status, "ok", "{detail}");
    assert!(detail.contains("answers") && detail.contains("is private"), "{detail}");

    // A key others can read is refused.
    let key = state.path().join("open.key");
    std::fs::write(&key, "cd".repeat(32)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = state.path().join("store").display().to_string();
    let output = setup.run(&["doctor", "--json", "--state-store", &store, "--state-key-file", key.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let (status, detail) = check(&checks_in(&output), "state store");
    assert_eq!(status, "failed", "{detail}");
    assert!(detail.contains("open.key"), "{detail}");

    // A Redis store nobody listens at.
    let key = state.path().join("state.key").display().to_string();
    let output = setup.run(&["doctor", "--json", "--state-store", "redis://127.0.0.1:1", "--state-key-file", &key]);
    assert_eq!(output.status.code(), Some(1));
    let (status, detail) = check(&checks_in(&output), "state store");
    assert_eq!(status, "failed", "{detail}");
}

#[test]
fn the_settings_files_in_force_are_named_with_their_warnings_and_a_broken_one_fails() {
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let project = setup.workspace.path().join(".exec-host");
    std::fs::create_dir_all(&project).unwrap();
    // A rule for a tool this host does not have applies to no call: a warning.
    std::fs::write(project.join("settings.json"), r#"{"permissions": {"allow": ["read_file(docs/**)", "NoSuchTool(x)"]}}"#)
        .unwrap();
    let output = doctor(&setup, state.path(), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let checks = checks_in(&output);
    let (status, detail) = check(&checks, "settings");
    assert_eq!(status, "ok", "{detail}");
    assert!(detail.contains(".exec-host/settings.json") && detail.contains("the permission mode is"), "{detail}");
    let (status, detail) = check(&checks, "warning");
    assert!(status == "warning" && detail.contains("NoSuchTool(x)"), "{detail}");

    std::fs::write(project.join("settings.json"), "{ not json").unwrap();
    let output = doctor(&setup, state.path(), &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let checks = checks_in(&output);
    let (status, detail) = check(&checks, "set-up");
    assert!(status == "failed" && detail.contains("settings.json"), "{detail}");
    assert_eq!(check(&checks, "Bash: namespaces").0, "ok", "the machine's checks are still made");
}
