//! What the command-line test suites share: the binary under test with the tests' own
//! configuration folders, the shared compiled-guest cache, and the fixture MCP server.
// Each suite that includes this module uses a part of it.
#![allow(dead_code)]

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

/// The npm packages pinned in tests/mcp-servers (installed with `npm ci` if needed).
pub fn test_packages() -> std::path::PathBuf {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-servers");
    INSTALL.call_once(|| {
        let installed = [
            "typescript/bin/tsc",
            "@modelcontextprotocol/server-everything/dist/index.js",
            "@modelcontextprotocol/sdk/dist/esm/client/index.js",
            "@modelcontextprotocol/inspector/clients/launcher/build/index.js",
        ]
        .iter()
        .all(|file| dir.join("node_modules").join(file).exists());
        if !installed {
            let status = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&dir)
                .status()
                .expect("npm runs (Node.js is needed for the published MCP server and the TypeScript check)");
            assert!(status.success(), "`npm ci` in {} failed", dir.display());
        }
    });
    dir
}
