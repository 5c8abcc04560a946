//! What the command-line test suites share: the binary under test with the tests' own
//! configuration folders, the shared compiled-guest cache, and the fixture MCP server.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `exec-host` binary, run in `workspace` with the compiled guest cached in `cache`.
pub fn exec_host(workspace: &Path, cache: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_exec-host"));
    // The user settings file is looked for under XDG_CONFIG_HOME: keep the tests' own.
    command
        .current_dir(workspace)
        .env("EXEC_HOST_CACHE_DIR", cache)
        .env("XDG_CONFIG_HOME", workspace.join(".config"))
        .env("XDG_STATE_HOME", workspace.join(".state"))
        .env_remove("RUST_LOG");
    command
}

/// One compiled-guest cache folder for every test, private as the host wants it.
pub fn shared_cache() -> PathBuf {
    let shared = Path::new(env!("CARGO_TARGET_TMPDIR")).join("exec-host-cli-cache");
    std::fs::create_dir_all(&shared).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o700)).unwrap();
    shared
}

/// The rmcp fixture server of the test crate, built by the same `cargo test` as this binary.
pub fn fixture_mcp_server() -> PathBuf {
    test_crate_binary("fixture-mcp-server")
}

/// A binary of the test crate, built by the same `cargo test` as this test.
pub fn test_crate_binary(name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let path = deps.parent().unwrap().parent().unwrap().join(name);
    assert!(path.exists(), "{} is missing: run the tests with `cargo test --release` from the workspace root", path.display());
    path
}
