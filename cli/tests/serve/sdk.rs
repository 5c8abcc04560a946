//! `exec-host serve` driven by the official MCP TypeScript SDK client
//! (tests/mcp-servers/sdk-client.mjs) over stdio and over streamable HTTP, and by the
//! published MCP Inspector's command-line client; plus the HTTP service's own guards
//! (token, `Origin`, body and session bounds, busy answers, `/healthz`, the graceful stop)
//! with plain HTTP requests.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{HttpServer, JSON_POST, exec_host, fixture_mcp_server, request, shared_cache, test_packages};

/// The downstream servers' tools are let run by rules, as a user would configure them.
const ALLOW_SERVERS: &[&str] = &["--allow", "mcp__fx", "--allow", "mcp__evil", "--allow", "mcp__late"];

/// A workspace with the fixture server as `fx` (logging cancellations) and the hostile one as
/// `evil`, in `servers.json`.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
        let setup = Setup { dir };
        setup.write_servers(false);
        setup
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn cancel_log(&self) -> PathBuf {
        self.path().join("cancel.log")
    }

    /// The servers file, with or without the server `late` (the published reference server),
    /// and with `pinned` (the fixture, one of whose tools is always loaded) when asked.
    fn servers(&self, with_late: bool) -> String {
        self.servers_and(with_late, false)
    }

    fn servers_and(&self, with_late: bool, with_pinned: bool) -> String {
        let fixture = fixture_mcp_server();
        let mut servers = json!({
            "fx": {"command": fixture, "env": {"FIXTURE_CANCEL_LOG": self.cancel_log()}},
            "evil": {"command": fixture, "args": ["--hostile"]},
        });
        if with_late {
            let everything = test_packages().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
            servers["late"] = json!({"command": "node", "args": [everything]});
        }
        if with_pinned {
            servers["pinned"] = json!({"command": fixture});
        }
        json!({ "mcpServers": servers }).to_string()
    }

    fn write_servers(&self, with_late: bool) {
        std::fs::write(self.path().join("servers.json"), self.servers(with_late)).unwrap();
    }

    /// `serve` over stdio, as the SDK client starts it.
    fn stdio(&self, extra: &[&str]) -> Value {
        let command = exec_host(self.path(), &shared_cache());
        let mut args = vec!["serve", "--mcp-config", "servers.json"];
        args.extend(ALLOW_SERVERS);
        args.extend(extra);
        let env: serde_json::Map<String, Value> = command
            .get_envs()
            .filter_map(|(key, value)| Some((key.to_str()?.to_string(), json!(value?.to_str()?))))
            .chain(std::env::var("PATH").ok().map(|path| ("PATH".to_string(), json!(path))))
            .collect();
        json!({"stdio": {"command": command.get_program().to_str().unwrap(), "args": args, "cwd": self.path(), "env": env}})
    }

    /// `serve --http` on a free loopback port.
    fn http(&self, extra: &[&str]) -> HttpServer {
        let mut command = exec_host(self.path(), &shared_cache());
        command.args(["serve", "--http", "127.0.0.1:0", "--mcp-config", "servers.json"]).args(ALLOW_SERVERS).args(extra);
        HttpServer::start(command)
    }
}

/// Runs the SDK client with `connect` and `steps` (and elicitation answers); its observations,
/// one per step, after the first line (connected, or why not).
fn sdk(connect: Value, steps: Value, elicit: Option<Value>) -> Vec<Value> {
    let mut plan = json!({ "connect": connect, "steps": steps });
    if let Some(elicit) = elicit {
        plan["elicit"] = elicit;
    }
    let output = Command::new("node")
        .arg(test_packages().join("sdk-client.mjs"))
        .arg(plan.to_string())
        .current_dir(test_packages())
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<Value> = stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert!(!lines.is_empty(), "the SDK client printed nothing: {}", String::from_utf8_lossy(&output.stderr));
    lines
}

fn exec(code: &str) -> Value {
    json!({"do": "exec", "code": code})
}

/// Whether `file` holds `line` within `seconds`.
fn logged_within(file: &Path, line: &str, seconds: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline {
        if std::fs::read_to_string(file).unwrap_or_default().contains(line) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}

/// Both transports: the same client steps, the same observations.
fn over_both(setup: &Setup, extra: &[&str], run: impl Fn(Value, &str)) {
    run(setup.stdio(extra), "stdio");
    let server = setup.http(extra);
    run(server.connect(None, None), "http");
}

#[test]
fn the_sdk_client_reads_the_announcement_lists_chains_servers_and_gets_images_and_failures() {
    let setup = Setup::new();
    over_both(&setup, &[], |connect, transport| {
        let seen = sdk(
            connect,
            json!([
                {"do": "info"},
                {"do": "list"},
                exec("const a = await tools.mcp__fx__echo({ n: 1 }); const b = await tools.mcp__evil__fine({});
                      const f = await tools.read_file({ path: 'notes.txt' }); return { a: a.n, b, f: f.content.trim() };"),
                exec("await tools.mcp__fx__picture({}); return 'drawn'"),
                exec("throw new Error('boom')"),
            ]),
            None,
        );
        assert_eq!(seen[0], json!({"connected": true}), "{transport}");
        let instructions = seen[1]["instructions"].as_str().unwrap_or_default();
        assert!(instructions.starts_with("Tools an Exec script can call"), "{transport}: {instructions}");
        assert!(
            instructions.contains("\nmcp__fx__echo\n") && instructions.contains("\nread_file"),
            "{transport}: {instructions}"
        );
        assert_eq!(seen[1]["server"], "exec-host");
        let names: Vec<&str> = seen[2]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names.first(), Some(&"Exec"), "{transport}: {names:?}");
        // Only the tool its server marks as always loaded is declared on its own.
        assert_eq!(names, ["Exec", "mcp__fx__pinned"], "{transport}: downstream tools and view_tool_call sit behind Exec");
        assert_eq!(seen[3]["isError"], false, "{transport}: {}", seen[3]);
        assert_eq!(seen[3]["structuredContent"], json!({"a": 1, "b": "fine", "f": "hello"}), "{transport}");
        let blocks = seen[4]["blocks"].as_array().unwrap();
        assert_eq!(blocks[0], json!({"type": "text", "text": "drawn"}), "{transport}: {}", seen[4]);
        assert!(blocks[1..].iter().any(|b| b["type"] == "image" && b["mimeType"] == "image/png"), "{transport}: {}", seen[4]);
        assert_eq!(seen[5]["isError"], true, "{transport}");
        assert!(seen[5]["text"].as_str().unwrap().contains("Error: boom"), "{transport}: {}", seen[5]);
    });
}

#[test]
fn tools_list_stays_the_same_as_a_downstream_server_is_added_and_removed() {
    let setup = Setup::new();
    over_both(&setup, &[], |connect, transport| {
        setup.write_servers(false);
        let servers = setup.path().join("servers.json");
        let seen = sdk(
            connect,
            json!([
                {"do": "list"},
                {"do": "write", "path": servers, "text": setup.servers(true)},
                {"do": "exec_until", "code": "return 'x'", "contains": "mcp__late__get-sum", "seconds": 30},
                exec("return await tools['mcp__late__get-sum']({ a: 3, b: 4 })"),
                {"do": "list"},
                {"do": "write", "path": servers, "text": setup.servers(false)},
                {"do": "exec_until", "code": "return 'y'", "contains": "Tools an Exec script can call", "seconds": 30},
                {"do": "list"},
                // A server one of whose tools is always loaded changes the declarations: the
                // client is told the list changed.
                {"do": "write", "path": servers, "text": setup.servers_and(false, true)},
                {"do": "exec_until", "code": "return 'z'", "contains": "mcp__pinned__echo", "seconds": 30},
                {"do": "list"},
            ]),
            None,
        );
        let names = |tools: &Value| -> Vec<String> {
            tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
        };
        assert_eq!(seen[10]["found"], true, "{transport}: {}", seen[10]);
        assert_eq!(names(&seen[11]["tools"]), ["Exec", "mcp__fx__pinned", "mcp__pinned__pinned"], "{transport}");
        assert_eq!(seen[8]["listChanged"], 0, "{transport}: nothing declared changed before");
        assert_eq!(seen[11]["listChanged"], 1, "{transport}: the client was told the list changed");
        assert_eq!(seen[3]["found"], true, "{transport}: the added server was announced: {}", seen[3]);
        assert!(seen[4]["text"].as_str().unwrap().contains("The sum of 3 and 4 is 7"), "{transport}: {}", seen[4]);
        assert_eq!(seen[7]["found"], true, "{transport}: the removal was announced: {}", seen[7]);
        assert!(!seen[7]["text"].as_str().unwrap().contains("mcp__late"), "{transport}: {}", seen[7]);
        assert_eq!(seen[1]["tools"], seen[5]["tools"], "{transport}: tools/list is the same with the server added");
        assert_eq!(seen[1]["tools"], seen[8]["tools"], "{transport}: and after it left");
        setup.write_servers(false);
    });
}

#[test]
fn a_cancelled_exec_is_aborted_down_to_the_downstream_call_and_the_server_goes_on() {
    let setup = Setup::new();
    over_both(&setup, &[], |connect, transport| {
        let _ = std::fs::remove_file(setup.cancel_log());
        let seen = sdk(
            connect,
            json!([
                {"do": "exec_cancelled", "code": "await tools.mcp__fx__never({}); return 'done'", "file": setup.cancel_log(), "line": "started never"},
                exec("return 2"),
            ]),
            None,
        );
        assert_eq!(seen[1]["seen"], true, "{transport}: the downstream call started: {}", seen[1]);
        assert_eq!(seen[1]["settled"], "rejected", "{transport}: {}", seen[1]);
        assert!(
            logged_within(&setup.cancel_log(), "cancelled never", 10),
            "{transport}: the cancellation reached the downstream server"
        );
        assert_eq!(seen[2]["text"], "2", "{transport}: {}", seen[2]);
    });
}

#[test]
fn an_approval_is_asked_through_elicitation_and_a_declined_one_refuses_the_call() {
    let setup = Setup::new();
    over_both(&setup, &[], |connect, transport| {
        let (first, second) = (format!("{transport}-1.txt"), format!("{transport}-2.txt"));
        let write = |name: &str| {
            exec(&format!(
                "try {{ await tools.write_file({{ path: '{name}', content: 'x' }}); return 'written'; }} catch (e) {{ return e.message; }}"
            ))
        };
        let seen = sdk(connect, json!([write(&first), write(&second)]), Some(json!(["once", "decline"])));
        assert_eq!(seen[1]["text"], "written", "{transport}: {}", seen[1]);
        let asked = &seen[1]["elicitations"][0];
        assert!(asked["message"].as_str().unwrap().contains("`write_file` wants to run"), "{transport}: {asked}");
        assert!(asked["requestedSchema"]["properties"]["decision"].is_object(), "{transport}: {asked}");
        assert!(setup.path().join(&first).exists(), "{transport}");
        assert!(seen[2]["text"].as_str().unwrap().contains("the user declined in the MCP client"), "{transport}: {}", seen[2]);
        assert!(!setup.path().join(&second).exists(), "{transport}");
    });
}

#[test]
fn progress_notifications_count_the_nested_calls() {
    let setup = Setup::new();
    over_both(&setup, &[], |connect, transport| {
        let code = "for (let i = 1; i <= 3; i++) { await tools.mcp__fx__echo({ i }); await tools.mcp__fx__slow({ ms: 50 }); } return 'done'";
        let seen = sdk(connect, json!([{"do": "exec", "code": code, "progress": true}]), None);
        assert_eq!(seen[1]["text"], "done", "{transport}: {}", seen[1]);
        let progress = seen[1]["progress"].as_array().unwrap();
        assert!(!progress.is_empty(), "{transport}: no progress was reported");
        let counts: Vec<f64> = progress.iter().map(|p| p["progress"].as_f64().unwrap()).collect();
        assert!(counts.windows(2).all(|w| w[0] < w[1]), "{transport}: progress only grows: {counts:?}");
        assert_eq!(progress.last().unwrap()["message"], "6 tool calls, the last `mcp__fx__slow`", "{transport}");
    });
}

#[test]
fn over_http_a_token_is_required_and_a_foreign_origin_is_refused() {
    let setup = Setup::new();
    std::fs::write(setup.path().join("token"), "s3cret-token\n").unwrap();
    let server = setup.http(&["--auth-token-file", "token"]);
    let connected = |token, origin| sdk(server.connect(token, origin), json!([exec("return 'in'")]), None);

    let without = connected(None, None);
    assert_eq!(without[0]["code"], 401, "{without:?}");
    assert!(without[0]["connect_error"].as_str().unwrap().contains("Authorization: Bearer"), "{without:?}");
    let wrong = connected(Some("s3cret-tokem"), None);
    assert_eq!(wrong[0]["code"], 401, "{wrong:?}");
    let foreign = connected(Some("s3cret-token"), Some("http://attacker.example"));
    assert_eq!(foreign[0]["code"], 403, "{foreign:?}");
    // A loopback page may call a loopback server; the token still applies.
    let local = connected(Some("s3cret-token"), Some("http://localhost:3000"));
    assert_eq!(local[1]["text"], "in", "{local:?}");
    let right = connected(Some("s3cret-token"), None);
    assert_eq!(right[1]["text"], "in", "{right:?}");
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls_through_serve_over_both_transports() {
    let setup = Setup::new();
    let inspector = test_packages().join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let inspect = |target: &[String], method: &[&str]| -> Value {
        let output = Command::new("node")
            .arg(&inspector)
            .arg("--cli")
            .args(target)
            .args(method)
            .current_dir(setup.path())
            // The inspector keeps a catalog of servers: the test's own, not the user's.
            .env("MCP_CATALOG_PATH", setup.path().join("inspector-catalog.json"))
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
    };
    // The inspector starts a stdio server with an environment of its own: the test's
    // configuration folders go through `env`.
    let command = exec_host(setup.path(), &shared_cache());
    let mut stdio = vec!["env".to_string()];
    stdio.extend(command.get_envs().filter_map(|(key, value)| Some(format!("{}={}", key.to_str()?, value?.to_str()?))));
    stdio.extend([env!("CARGO_BIN_EXE_exec-host"), "serve", "--mcp-config", "servers.json"].map(String::from));
    stdio.extend(ALLOW_SERVERS.iter().map(|arg| arg.to_string()));
    let server = setup.http(&[]);
    for target in [stdio, vec![server.url.clone()]] {
        let listed = inspect(&target, &["--method", "tools/list"]);
        assert_eq!(listed["tools"][0]["name"], "Exec", "{listed}");
        let called = inspect(
            &target,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "Exec",
                "--tool-arg",
                "code=return (await tools.mcp__fx__add({ a: 2, b: 3 })).sum",
            ],
        );
        assert_eq!(called["isError"], false, "{called}");
        assert_eq!(called["content"][0]["text"], "5", "{called}");
    }
}

fn initialize() -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
    .into_bytes()
}

#[test]
fn over_http_bad_requests_get_the_protocol_s_errors_and_bounds_answer_busy() {
    let setup = Setup::new();
    let server = setup.http(&["--max-sessions", "2", "--max-body-bytes", "65536"]);
    let (status, _, body) = request("GET", &format!("{}/healthz", server.base()), &[], Vec::new());
    assert_eq!((status, body.as_str()), (200, "ok\n"));

    let (status, _, body) = request("POST", &server.url, JSON_POST, b"{not json".to_vec());
    assert_eq!(status, 400, "malformed JSON-RPC: {body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], -32700, "{body}");
    let (status, _, body) = request("POST", &server.url, JSON_POST, json!({"jsonrpc": "2.0", "id": 1}).to_string().into_bytes());
    assert!((400..500).contains(&status), "a request without a method: {status} {body}");
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "Exec", "arguments": [1]}});
    let (status, _, body) = request("POST", &server.url, JSON_POST, call.to_string().into_bytes());
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(3), json!(-32602)),
        "wrong argument shape: {body}"
    );
    let (status, _, body) = request("POST", &server.url, JSON_POST, vec![b' '; 70_000]);
    assert_eq!(status, 413, "an oversized body: {body}");
    assert!(body.contains("larger than 65536 bytes"), "{body}");
    let (status, _, body) =
        request("POST", &server.url, &[JSON_POST[0], JSON_POST[1], ("host", "rebind.example:80")], initialize());
    assert!((400..500).contains(&status), "a foreign Host header: {status} {body}");

    // Two sessions may be open; the third is told the server is busy.
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let (status, headers, body) = request("POST", &server.url, JSON_POST, initialize());
        assert_eq!(status, 200, "{body}");
        sessions.push(headers["mcp-session-id"].to_str().unwrap().to_string());
    }
    let (status, headers, body) = request("POST", &server.url, JSON_POST, initialize());
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("busy: the server has 2 MCP sessions open"), "{body}");
    assert_eq!(headers.get("retry-after").unwrap(), "5");
    // The server still serves: the SDK client gets an error for its new session, not a hang.
    let refused = sdk(server.connect(None, None), json!([]), None);
    assert_eq!(refused[0]["code"], 503, "{refused:?}");
    // A client that ends its session is told it ended (204, as the SDKs expect), and makes room.
    let (status, _, body) = request("DELETE", &server.url, &[("mcp-session-id", &sessions[0])], Vec::new());
    assert_eq!(status, 204, "{body}");
    let (status, _, body) = request("POST", &server.url, JSON_POST, initialize());
    assert_eq!(status, 200, "{body}");
}

#[test]
fn over_http_each_session_has_its_own_approvals() {
    let setup = Setup::new();
    let server = setup.http(&[]);
    let write = |name: &str| {
        exec(&format!(
            "try {{ await tools.write_file({{ path: '{name}', content: 'x' }}); return 'written'; }} catch (e) {{ return e.message; }}"
        ))
    };
    // Two sessions at once: one client allows its write when asked, the other cannot be asked.
    let asking = {
        let (connect, step) = (server.connect(None, None), write("a.txt"));
        std::thread::spawn(move || sdk(connect, json!([step]), Some(json!(["once"]))))
    };
    let other = sdk(server.connect(None, None), json!([write("b.txt")]), None);
    let asking = asking.join().unwrap();
    assert_eq!(asking[1]["text"], "written", "{asking:?}");
    assert_eq!(asking[1]["elicitations"].as_array().map(Vec::len), Some(1), "{asking:?}");
    assert!(other[1]["text"].as_str().unwrap().contains("did not declare elicitation"), "{other:?}");
    assert!(setup.path().join("a.txt").exists() && !setup.path().join("b.txt").exists());
}

/// What a client's calls answered shapes its own signatures only: another MCP session of the
/// same server is told `unknown`, and never sees the first client's keys.
#[test]
fn over_http_each_session_observes_the_output_types_of_its_own_calls() {
    let setup = Setup::new();
    let server = setup.http(&[]);
    let signature = "const { matches } = await tools.ToolSearch({ query: 'select:mcp__fx__echo' }); return matches[0].signature;";
    let first = sdk(
        server.connect(None, None),
        json!([exec("await tools.mcp__fx__echo({ accountNumber: 12345678, holder: 'Ada' }); return 'called';"), exec(signature)]),
        None,
    );
    assert_eq!(first[1]["text"], "called", "{first:?}");
    let observed = first[2]["text"].as_str().unwrap();
    assert!(observed.contains("accountNumber: number;") && observed.ends_with("} /* observed */>"), "{first:?}");
    assert!(!observed.contains("12345678") && !observed.contains("Ada"), "no value: {observed}");
    let other = sdk(server.connect(None, None), json!([exec(signature)]), None);
    assert_eq!(other[1]["text"], "tools.mcp__fx__echo(args?: {}): Promise<unknown>", "{other:?}");
}

#[test]
fn over_http_calls_past_the_bounds_are_answered_busy() {
    let setup = Setup::new();
    let server = setup.http(&["--concurrency", "1"]);
    let slow = "await tools.mcp__fx__slow({ ms: 2000 }); return 'first'";
    // One client: its second call while the first runs is past its own bound.
    let first = {
        let connect = server.connect(None, None);
        std::thread::spawn(move || {
            sdk(connect, json!([{"do": "exec_parallel", "codes": [slow, "return 'second'"], "stagger_ms": 400}]), None)
        })
    };
    std::thread::sleep(Duration::from_millis(900));
    // Another client while the server's one call runs: past the server's bound.
    let other = sdk(server.connect(None, None), json!([exec("return 'other'")]), None);
    let first = first.join().unwrap();
    let results = first[1]["results"].as_array().unwrap();
    assert_eq!(results[0]["text"], "first", "{first:?}");
    assert_eq!(results[1]["isError"], true, "{first:?}");
    assert!(results[1]["text"].as_str().unwrap().starts_with("busy: this client already has as many calls running"), "{first:?}");
    assert_eq!(other[1]["isError"], true, "{other:?}");
    assert!(other[1]["text"].as_str().unwrap().starts_with("busy: the server already runs as many calls"), "{other:?}");
    // Once the call has finished, the server takes calls again.
    let later = sdk(server.connect(None, None), json!([exec("return 'later'")]), None);
    assert_eq!(later[1]["text"], "later", "{later:?}");
}

#[test]
fn sigterm_lets_running_execs_finish_within_the_grace_period_then_aborts_the_rest() {
    let setup = Setup::new();
    // A call that ends within the grace period is answered; the server then exits.
    let mut server = setup.http(&["--grace", "5"]);
    let finishing = {
        let connect = server.connect(None, None);
        std::thread::spawn(move || {
            sdk(connect, json!([exec("await tools.mcp__fx__slow({ ms: 1500 }); return 'finished'")]), None)
        })
    };
    std::thread::sleep(Duration::from_millis(700));
    server.terminate();
    let seen = finishing.join().unwrap();
    assert_eq!(seen[1]["text"], "finished", "{seen:?}\n{}", server.stderr.lock().unwrap());
    assert_eq!(server.exited_within(10).map(|s| s.success()), Some(true), "{}", server.stderr.lock().unwrap());

    // A call still running when the grace period ends is aborted, down to the downstream call.
    let _ = std::fs::remove_file(setup.cancel_log());
    let mut server = setup.http(&["--grace", "1"]);
    let hanging = {
        let connect = server.connect(None, None);
        std::thread::spawn(move || sdk(connect, json!([exec("await tools.mcp__fx__never({}); return 'never'")]), None))
    };
    assert!(logged_within(&setup.cancel_log(), "started never", 20));
    let stopping = Instant::now();
    server.terminate();
    // While it drains, a probe hears it is stopping (once the signal has been handled: a
    // probe sent the same instant may still find it serving).
    let stopping_seen = (0..40).any(|_| {
        let (status, _, _) = request("GET", &format!("{}/healthz", server.base()), &[], Vec::new());
        status == 503 || {
            std::thread::sleep(Duration::from_millis(25));
            false
        }
    });
    assert!(stopping_seen, "the health probe never answered 503 while the server drained");
    assert!(logged_within(&setup.cancel_log(), "cancelled never", 10), "the downstream call was cancelled");
    assert_eq!(server.exited_within(15).map(|s| s.success()), Some(true), "{}", server.stderr.lock().unwrap());
    assert!(stopping.elapsed() >= Duration::from_secs(1), "the grace period was given");
    // Its client still hears how it ended, before the sessions close.
    let seen = hanging.join().unwrap();
    assert_eq!(seen[1]["isError"], true, "{seen:?}");
    assert!(seen[1]["text"].as_str().unwrap().contains("aborted"), "{seen:?}");
}

#[test]
fn stateless_replicas_answer_any_request_and_refuse_what_would_need_a_session() {
    let setup = Setup::new();
    let (first, second) = (setup.http(&["--stateless"]), setup.http(&["--stateless"]));
    // The SDK client initializes with one replica and reads the announcement there.
    let seen = sdk(
        first.connect(None, None),
        json!([
            {"do": "info"},
            exec("return (await tools.mcp__fx__add({ a: 1, b: 2 })).sum"),
            exec("try { await tools.write_file({ path: 'w.txt', content: 'x' }); return 'written'; } catch (e) { return e.message; }"),
        ]),
        Some(json!(["once"])),
    );
    assert!(seen[1]["instructions"].as_str().unwrap().contains("\nmcp__fx__add\n"), "{seen:?}");
    assert_eq!(seen[2]["text"], "3", "{seen:?}");
    // No session to ask the client on: refused with the rule that would let it run.
    assert!(seen[3]["text"].as_str().unwrap().contains("a stateless server cannot send a request to its client"), "{seen:?}");
    assert!(!setup.path().join("w.txt").exists());
    // The other replica answers a call it never saw an initialize for.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "Exec", "arguments": {"code": "return 6 * 7"}}});
    let (status, headers, body) = request("POST", &second.url, JSON_POST, call.to_string().into_bytes());
    assert_eq!(status, 200, "{body}");
    assert!(!headers.contains_key("mcp-session-id"), "no session is kept");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "42", "{body}");
}

#[test]
fn over_http_a_client_that_vanishes_mid_exec_has_it_aborted_down_to_the_downstream_call() {
    let setup = Setup::new();
    for mode in [&["-v"][..], &["-v", "--stateless"][..]] {
        let _ = std::fs::remove_file(setup.cancel_log());
        let server = setup.http(mode);
        let plan =
            json!({"connect": server.connect(None, None), "steps": [exec("await tools.mcp__fx__never({}); return 'never'")]});
        let mut client = Command::new("node")
            .arg(test_packages().join("sdk-client.mjs"))
            .arg(plan.to_string())
            .current_dir(test_packages())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(logged_within(&setup.cancel_log(), "started never", 20), "{mode:?}: the downstream call started");
        // The client process dies: its connections close without a word.
        client.kill().unwrap();
        client.wait().unwrap();
        assert!(logged_within(&setup.cancel_log(), "cancelled never", 10), "{mode:?}: the downstream call was cancelled");
        // And the server serves the next client.
        let next = sdk(server.connect(None, None), json!([exec("return 'next'")]), None);
        assert_eq!(next[1]["text"], "next", "{mode:?}: {next:?}");
        // An answer nobody is left to read is how such a call ends, not an error.
        let logged = server.stderr.lock().unwrap().clone();
        assert!(!logged.contains("error"), "{mode:?}:\n{logged}");
    }
}

#[test]
fn a_downstream_servers_input_request_is_passed_on_to_the_client_whose_call_it_is() {
    let setup = Setup::new();
    let asking = json!({"mcpServers": {"asker": {"command": fixture_mcp_server(), "env": {"FIXTURE_ELICIT": "1"}}}});
    std::fs::write(setup.path().join("asker.json"), asking.to_string()).unwrap();
    over_both(&setup, &["--mcp-config", "asker.json", "--allow", "mcp__asker"], |connect, transport| {
        let seen = sdk(
            connect,
            json!([exec("return await tools.mcp__asker__ask({})"), exec("return await tools.mcp__asker__ask({})")]),
            Some(json!([{"name": "Grace", "age": 41}, "decline"])),
        );
        let asked = &seen[1]["elicitations"][0];
        assert_eq!(asked["message"], "MCP server `asker` asks: Who is asking?", "{transport}: {asked}");
        assert_eq!(asked["requestedSchema"]["properties"]["age"]["default"], 30, "{transport}: the schema as sent: {asked}");
        let answer: Value = serde_json::from_str(seen[1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {"name": "Grace", "age": 41, "status": "active", "verified": true}}),
            "{transport}: the client's answer, with the defaults it left out"
        );
        let declined: Value = serde_json::from_str(seen[2]["text"].as_str().unwrap()).unwrap();
        assert_eq!(declined["action"], "decline", "{transport}: {declined}");
    });
}
