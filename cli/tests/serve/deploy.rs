//! The deployment files in deploy/ against the binary: the Kubernetes container's arguments
//! start a server whose probe and MCP endpoint answer as the manifests expect, the memory
//! limit covers the engine's pool those arguments allow, and the container image runs the
//! same command line.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{exec_host, shared_cache};

fn deploy_file(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(name)).unwrap()
}

/// The JSON array that follows `key` on one line (a YAML flow sequence of quoted strings, or
/// a Dockerfile exec form, is JSON).
fn json_array_after(text: &str, key: &str) -> Vec<String> {
    let line = text.lines().find_map(|line| line.trim_start().strip_prefix(key)).unwrap_or_else(|| panic!("no `{key}` line"));
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("`{key}` is not a JSON array: {e}"))
}

/// The indented block under `key: |` in the manifest.
fn block_after(text: &str, key: &str) -> String {
    let mut lines = text.lines().skip_while(|line| line.trim() != format!("{key}: |"));
    let header = lines.next().expect("the block's key");
    let indent = header.len() - header.trim_start().len();
    lines
        .take_while(|line| line.trim().is_empty() || line.len() - line.trim_start().len() > indent)
        .collect::<Vec<_>>()
        .join("\n")
}

fn flag(args: &[String], name: &str) -> String {
    let at = args.iter().position(|arg| arg == name).unwrap_or_else(|| panic!("no {name} in {args:?}"));
    args[at + 1].clone()
}

/// Mebibytes in a Kubernetes quantity such as `2304Mi` or `2Gi`.
fn mebibytes(quantity: &str) -> u64 {
    match quantity.trim() {
        q if q.ends_with("Gi") => q.trim_end_matches("Gi").parse::<u64>().unwrap() * 1024,
        q => q.trim_end_matches("Mi").parse().unwrap(),
    }
}

#[test]
fn the_kubernetes_memory_limit_covers_the_engine_s_pool() {
    let manifest = deploy_file("kubernetes/exec-host.yaml");
    let args = json_array_after(&manifest, "args:");
    let pool = flag(&args, "--concurrency").parse::<u64>().unwrap() * flag(&args, "--max-memory-mib").parse::<u64>().unwrap();
    let limits = manifest.lines().find_map(|line| line.trim_start().strip_prefix("limits:")).expect("resource limits");
    let memory = limits.split("memory:").nth(1).unwrap().trim_end_matches('}').trim();
    // The host's own share, as the attack suites bound it.
    assert!(mebibytes(memory) >= pool + 160, "limit {memory} for a pool of {pool} MiB");
    let grace: u64 = flag(&args, "--grace").parse().unwrap();
    let period: u64 = manifest
        .lines()
        .find_map(|line| line.trim_start().strip_prefix("terminationGracePeriodSeconds:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(period > grace + 5, "the pod's grace ({period} s) outlasts the server's ({grace} s) and its stop");
    for probe in ["startupProbe:", "readinessProbe:", "livenessProbe:"] {
        let at = manifest.find(probe).unwrap_or_else(|| panic!("no {probe}"));
        assert!(manifest[at..].lines().nth(1).unwrap().contains("path: /healthz"), "{probe}");
    }
}

#[test]
fn the_kubernetes_container_arguments_start_a_gateway_that_answers_probes_and_calls() {
    let manifest = deploy_file("kubernetes/exec-host.yaml");
    let dir = tempfile::tempdir().unwrap();
    let (config, token_dir, workspace) = (dir.path().join("config"), dir.path().join("token"), dir.path().join("workspace"));
    for folder in [&config, &token_dir, &workspace] {
        std::fs::create_dir_all(folder).unwrap();
    }
    for file in ["servers.json", "settings.json"] {
        let text = block_after(&manifest, file);
        serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("the ConfigMap's {file} is not JSON: {e}"));
        std::fs::write(config.join(file), text).unwrap();
    }
    std::fs::write(token_dir.join("token"), "k8s-test-token\n").unwrap();
    // The shared Redis is a real one here, and the key the init container copies a file.
    let redis = exec_host_tests::redis::RedisServer::start();
    let state = tempfile::tempdir().unwrap();
    let key = state.path().join("state.key");
    std::fs::write(&key, "0a".repeat(32)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    // The manifest's arguments, with its mount points in the test's folders and a free port.
    let args: Vec<String> = json_array_after(&manifest, "args:")
        .into_iter()
        .map(|arg| match arg.as_str() {
            "0.0.0.0:8080" => "0.0.0.0:0".to_string(),
            _ => arg
                .replace("/etc/exec-host/config", &config.display().to_string())
                .replace("/run/exec-host/token", &token_dir.display().to_string())
                .replace("redis://exec-host-redis:6379/0", &redis.url(0))
                .replace("/var/lib/exec-host/state.key", &key.display().to_string())
                .replace("/var/lib/exec-host/credentials.json", &state.path().join("credentials.json").display().to_string())
                .replace("/workspace", &workspace.display().to_string()),
        })
        .collect();
    let mut child = exec_host(&workspace, &shared_cache())
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("exec-host: serving MCP at ").map(str::to_string))
        .expect("the server starts");
    std::thread::spawn(move || lines.for_each(drop));
    let port = url.rsplit(':').next().unwrap().trim_end_matches("/mcp").to_string();
    let local = format!("http://127.0.0.1:{port}");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
        let probe = http.get(format!("{local}/healthz")).send().await.unwrap();
        assert_eq!(probe.status(), 200);
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "Exec", "arguments": {"code": "return (await tools.ToolSearch({ query: 'select:read_file,write_file' })).matches.map(m => m.name)"}}});
        let post = |token: Option<&str>| {
            let mut request = http
                .post(format!("{local}/mcp"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(call.to_string());
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send()
        };
        assert_eq!(post(None).await.unwrap().status(), 401, "the token is required");
        let answer: Value = post(Some("k8s-test-token")).await.unwrap().json().await.unwrap();
        // The ConfigMap's settings apply: its deny rule takes `write_file` out of reach.
        assert_eq!(answer["result"]["structuredContent"], Value::Null, "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], "[\"read_file\"]", "{answer}");
    });
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_container_image_runs_serve_as_the_manifest_does() {
    let dockerfile = deploy_file("Dockerfile");
    let entrypoint = json_array_after(&dockerfile, "ENTRYPOINT");
    assert_eq!(entrypoint, ["/usr/local/bin/exec-host"]);
    let command = json_array_after(&dockerfile, "CMD");
    assert_eq!(command[..3], ["serve", "--http", "0.0.0.0:8080"]);
    assert_eq!(flag(&command, "--auth-token-file"), "/run/exec-host/token/token", "the Secret's mount point");
    // The image's command line parses as the binary reads it (`--help` after it stops there).
    let output = Command::new(env!("CARGO_BIN_EXE_exec-host")).args(&command).arg("--help").output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let manifest = deploy_file("kubernetes/exec-host.yaml");
    assert!(manifest.contains(&format!("containerPort: {}", command[2].rsplit(':').next().unwrap())));
}
