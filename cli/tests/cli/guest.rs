//! Pluggable guests: `--guest FILE.wasm` runs any component of the exec-host:sandbox world
//! (and `exec-host conformance` checks it), and refuses anything else with one sentence
//! before a script runs.

use std::path::Path;
use std::process::Output;

use crate::common::{exec_host, shared_cache};

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The built-in guest, as a file of its own.
fn guest_file(dir: &Path) -> String {
    let path = dir.join("guest.wasm");
    std::fs::write(&path, exec_host::guest::GUEST_COMPONENT).unwrap();
    path.display().to_string()
}

#[test]
fn a_guest_file_runs_scripts_and_passes_every_conformance_case() {
    let workspace = tempfile::tempdir().unwrap();
    let guest = guest_file(workspace.path());
    let run =
        exec_host(workspace.path(), &shared_cache()).args(["run", "--guest", &guest, "-e", "return 6 * 7"]).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(stdout(&run).trim(), "42");

    let cases = exec_host::conformance::builtin_cases().len();
    for guest in [None, Some(guest.as_str())] {
        let mut command = exec_host(workspace.path(), &shared_cache());
        command.arg("conformance");
        if let Some(guest) = guest {
            command.args(["--guest", guest]);
        }
        let output = command.output().unwrap();
        let table = stdout(&output);
        assert_eq!(output.status.code(), Some(0), "{table}{}", stderr(&output));
        assert!(table.contains(&format!("{cases} cases: {cases} passed, 0 failed")), "{table}");
        assert!(table.contains("budget_sync_spin") && table.contains("pass (host limits)"), "{table}");
    }
}

#[test]
fn conformance_names_what_differs_and_exits_1() {
    let workspace = tempfile::tempdir().unwrap();
    let cases = workspace.path().join("cases");
    std::fs::create_dir(&cases).unwrap();
    std::fs::write(cases.join("wrong.js"), "console.log('hello');\nreturn 1;").unwrap();
    std::fs::write(
        cases.join("wrong.json"),
        r#"{"about": "expects what does not happen",
            "expect": {"events": [{"console": "log", "message": "goodbye"}], "result": {"kind": "value", "value": 2}}}"#,
    )
    .unwrap();
    let output = exec_host(workspace.path(), &shared_cache())
        .args(["conformance", "--cases", &cases.display().to_string()])
        .output()
        .unwrap();
    let table = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{table}{}", stderr(&output));
    assert!(table.contains("wrong  FAIL"), "{table}");
    assert!(
        table.contains(r#"event 0: expected {"console":"log","message":"goodbye"}, got {"console":"log","message":"hello"}"#),
        "{table}"
    );
    assert!(table.contains(r#"result: expected {"kind":"value","value":2}, got {"kind":"value","value":1}"#), "{table}");
    assert!(table.contains("1 cases: 0 passed, 1 failed"), "{table}");
}

/// Each bad guest is refused with a sentence naming what is wrong, and the script (which
/// would write a file) never runs.
#[test]
fn a_guest_outside_the_world_is_refused_before_any_script_runs() {
    let workspace = tempfile::tempdir().unwrap();
    let dir = workspace.path();
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.join(name), bytes).unwrap();
        name.to_string()
    };
    let component = |text: &str| wat::parse_str(text).unwrap();
    let big = dir.join("huge.wasm");
    std::fs::File::create(&big).unwrap().set_len(exec_host::limits::MAX_GUEST_COMPONENT_BYTES + 1).unwrap();
    let fifo = dir.join("fifo.wasm");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let cases = [
        (write("text.wasm", b"not a component"), "it is not WebAssembly"),
        (write("module.wasm", &component("(module)")), "it is a core WebAssembly module, not a component"),
        (
            write("files.wasm", &component(r#"(component (import "wasi:filesystem/types@0.2.6" (instance)))"#)),
            "it imports `wasi:filesystem/types@0.2.6`, which the sandbox does not provide",
        ),
        (
            write("sockets.wasm", &component(r#"(component (import "wasi:sockets/tcp@0.2.6" (instance)))"#)),
            "it imports `wasi:sockets/tcp@0.2.6`",
        ),
        (write("empty.wasm", &component("(component)")), "it does not export the exec-host:sandbox world's `init` and `run`"),
        (
            write(
                "other_world.wasm",
                &component(r#"(component (import "exec-host:sandbox/tools@0.2.0" (instance (export "call" (func)))))"#),
            ),
            "its imports do not link with this host's exec-host:sandbox and WASI",
        ),
        ("huge.wasm".to_string(), "it takes 134217729 bytes, more than the 134217728 a guest component may"),
        ("fifo.wasm".to_string(), "it is not a regular file"),
        ("missing.wasm".to_string(), "it cannot be opened"),
    ];
    for (guest, reason) in cases {
        let output = exec_host(dir, &shared_cache())
            .args(["run", "--guest", &guest, "-e", "await tools.write_file({ path: 'ran.txt', content: 'ran' })"])
            .output()
            .unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{guest}: {err}");
        assert!(err.contains(&format!("the guest component `{guest}` was refused: {reason}")), "{guest}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!dir.join("ran.txt").exists(), "{guest}: the script ran");
    }
}
