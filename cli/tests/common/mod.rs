//! What the command-line test suites share: the binary under test with the tests' own
//! configuration folders, the shared compiled-guest cache, the fixture MCP server, and a
//! running `serve --http` with plain requests to it.
// Each suite that includes this module uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

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
/// The HTTP headers of an `Exec` call by a client of 2026-07-28.
pub const EXEC_CALL_HEADERS: [(&str, &str); 5] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "Exec"),
];

/// The Python of the venv holding the pinned MCP Python SDK, installed first when it is not.
pub fn python_sdk() -> PathBuf {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    INSTALL.call_once(|| {
        let status = Command::new("bash").arg(root.join("scripts/install-python-sdk")).status().expect("bash runs");
        assert!(status.success(), "scripts/install-python-sdk failed: the MCP Python SDK is needed for these tests");
    });
    root.join("tests/python/.venv/bin/python")
}

pub fn test_packages() -> std::path::PathBuf {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-servers");
    INSTALL.call_once(|| {
        let installed = [
            "typescript/bin/tsc",
            "@modelcontextprotocol/server-everything/dist/index.js",
            "@modelcontextprotocol/sdk/dist/esm/client/index.js",
            "@modelcontextprotocol/inspector/clients/launcher/build/index.js",
            "@octokit/openapi/generated/api.github.com.json",
            "@stoplight/prism-cli/dist/index.js",
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

/// A running `serve --http`; killed when dropped.
pub struct HttpServer {
    pub child: Child,
    pub url: String,
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl HttpServer {
    pub fn start(mut command: Command) -> Self {
        let mut child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut url = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            stderr.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(at) = line.strip_prefix("exec-host: serving MCP at ") {
                url = Some(at.to_string());
                break;
            }
        }
        let url = url.unwrap_or_else(|| panic!("serve --http did not start: {}", stderr.lock().unwrap()));
        // Keep reading, so the server never blocks on a full pipe.
        let kept = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        HttpServer { child, url, stderr }
    }

    pub fn connect(&self, token: Option<&str>, origin: Option<&str>) -> Value {
        json!({"http": {"url": self.url, "token": token, "origin": origin}})
    }

    pub fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    pub fn terminate(&self) {
        // SAFETY: kill(2) with a child's pid and a signal number has no memory effects.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
    }

    /// The exit status within `seconds`, or `None`.
    pub fn exited_within(&mut self, seconds: u64) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP request to the server: status, headers and body.
pub fn request(method: &str, url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> (u16, reqwest::header::HeaderMap, String) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let mut request = client.request(method.parse().unwrap(), url).body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        // A stream of events ends only when the server closes it: take its first event.
        let mut body = String::new();
        let mut response = response;
        while let Ok(Ok(Some(chunk))) = tokio::time::timeout(Duration::from_secs(5), response.chunk()).await {
            body.push_str(&String::from_utf8_lossy(&chunk));
            if headers.get("content-type").is_some_and(|t| t == "text/event-stream") && body.contains("\"jsonrpc\"") {
                break;
            }
        }
        (status, headers, body)
    })
}

pub const JSON_POST: &[(&str, &str)] = &[("content-type", "application/json"), ("accept", "application/json, text/event-stream")];
