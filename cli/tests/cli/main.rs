//! The `exec-host` binary as a user runs it, one module per command or concern: `run`,
//! the compiled-guest cache, pluggable guests (`--guest`), MCP servers, `tools` and
//! `search`, permissions, a terminal.
//! The helpers every module shares are here.

use std::process::Output;

use serde_json::{Value, json};

mod apis;
#[path = "../common/mod.rs"]
mod common;
mod doctor;
mod guest;
mod guest_cache;
mod mcp;
mod park;
mod permissions;
mod run;
mod search;
mod terminal;
mod tools;

use common::{exec_host, fixture_mcp_server, shared_cache};

struct Setup {
    workspace: tempfile::TempDir,
    cache: std::path::PathBuf,
    _own_cache: Option<tempfile::TempDir>,
}

impl Setup {
    /// A fresh workspace; the compiled guest is cached in one folder shared by the tests.
    fn new() -> Self {
        Setup { workspace: tempfile::tempdir().unwrap(), cache: shared_cache(), _own_cache: None }
    }

    /// A fresh workspace and an empty cache of its own.
    fn with_empty_cache() -> Self {
        let own = tempfile::tempdir().unwrap();
        Setup { workspace: tempfile::tempdir().unwrap(), cache: own.path().to_path_buf(), _own_cache: Some(own) }
    }

    fn script(&self, name: &str, code: &str) -> String {
        std::fs::write(self.workspace.path().join(name), code).unwrap();
        name.to_string()
    }

    fn run(&self, args: &[&str]) -> Output {
        exec_host(self.workspace.path(), &self.cache).args(args).output().unwrap()
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn json_of(output: &Output) -> Value {
    let text = stdout(output);
    assert_eq!(text.lines().count(), 1, "--json prints exactly one line: {text}");
    serde_json::from_str(&text).unwrap()
}

/// A usage error: exit 2, one sentence, no panic and no backtrace.
fn assert_usage_error(output: &Output, needle: &str) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "{err}");
    assert!(!err.contains("panicked") && !err.contains("backtrace") && !err.contains("RUST_BACKTRACE"), "{err}");
    assert!(stdout(output).is_empty());
}

/// Polls `condition` until it holds or `seconds` have passed; the caller asserts the outcome.
fn wait_until(seconds: u64, condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while !condition() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn send(child: &std::process::Child, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) with a pid this test spawned and has not reaped yet.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "{}", std::io::Error::last_os_error());
}

fn mcp_config(setup: &Setup, servers: Value) -> String {
    std::fs::write(setup.workspace.path().join("servers.json"), json!({"mcpServers": servers}).to_string()).unwrap();
    "servers.json".into()
}

/// A workspace with the fixture server configured as `fx` and `other`, a project settings
/// file that denies `mcp__fx__fail`, and a user settings file that keeps `mcp__fx__greet` flat.
fn pool_setup() -> (Setup, String) {
    let setup = Setup::new();
    let fixture = fixture_mcp_server();
    let config = mcp_config(&setup, json!({"fx": {"command": fixture}}));
    let project = setup.workspace.path().join(".exec-host");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("settings.json"), r#"{"permissions": {"deny": ["mcp__fx__fail"]}}"#).unwrap();
    let user = setup.workspace.path().join(".config/exec-host");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("settings.json"), r#"{"nonDeferredTools": ["mcp__fx__greet"]}"#).unwrap();
    (setup, config)
}

/// A script that writes a file, then reads it back.
const WRITES: &str = "await tools.write_file({ path: 'a.txt', content: 'x' }); return await tools.read_file({ path: 'a.txt' }).then((r) => r.content)";
