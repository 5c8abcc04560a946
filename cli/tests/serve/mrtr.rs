//! `exec-host serve --http` for clients of MCP 2026-07-28, driven by the official MCP Python
//! SDK (tests/python/drive.py; the SDK pinned with hashes by tests/python/requirements.txt and
//! installed by scripts/install-python-sdk when missing): approvals as multi-round-trip
//! requests, retries that must be refused, Execs as tasks (the Tasks extension, which the
//! SDK leaves to an extension the driver declares), and two stateless replicas sharing one
//! real Redis, the retry, the task's polls and its answers sent to the other.

use std::path::{Path, PathBuf};
use std::process::Command;

use exec_host_tests::nginx::Nginx;
use exec_host_tests::redis::RedisServer;
use serde_json::{Value, json};

use crate::common;
use common::{HttpServer, exec_host, fixture_mcp_server, shared_cache};

/// The Python of the venv holding the pinned SDK.
fn python() -> PathBuf {
    common::python_sdk()
}

/// Runs the driver with `spec` and gives its report.
fn drive(spec: Value) -> Value {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python/drive.py");
    let output = Command::new(python()).arg(driver).arg(spec.to_string()).output().expect("the driver runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the Python client failed:\n{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("the driver's report is not JSON ({e}): {stdout}"))
}

/// A workspace, and a state folder outside it with a key file.
struct Setup {
    workspace: tempfile::TempDir,
    state: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let setup = Setup { workspace: tempfile::tempdir().unwrap(), state: tempfile::tempdir().unwrap() };
        std::fs::write(setup.key(), "ef".repeat(32)).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(setup.key(), std::fs::Permissions::from_mode(0o600)).unwrap();
        setup
    }

    fn key(&self) -> PathBuf {
        self.state.path().join("state.key")
    }

    /// `serve --http` (whose permission mode asks before workspace edits), with Execs parked
    /// in `store` (the state folder by default).
    fn serve(&self, store: Option<&str>, extra: &[&str]) -> HttpServer {
        let folder = self.state.path().join("store").display().to_string();
        let mut command = exec_host(self.workspace.path(), &shared_cache());
        command
            .args(["serve", "--http", "0", "--state-store", store.unwrap_or(&folder)])
            .arg("--state-key-file")
            .arg(self.key())
            .args(extra);
        HttpServer::start(command)
    }

    /// `serve` as [`serve`](Self::serve) does, with the fixture MCP server's tools allowed.
    fn serve_with_fixture(&self, store: Option<&str>, extra: &[&str]) -> HttpServer {
        let config = json!({"mcpServers": {"fx": {"command": fixture_mcp_server()}}});
        std::fs::write(self.workspace.path().join("servers.json"), config.to_string()).unwrap();
        let mut args = vec!["--mcp-config", "servers.json", "--allow", "mcp__fx"];
        args.extend_from_slice(extra);
        self.serve(store, &args)
    }

    /// A stateless replica parking in `store`, with the fixture's tools; its fixture server
    /// notes each slow call it starts in the log this gives, so a test can tell which
    /// replica runs a call.
    fn replica(&self, store: &str, name: &str, extra: &[&str]) -> (HttpServer, PathBuf) {
        let log = self.state.path().join(format!("{name}.log"));
        let config = json!({"mcpServers": {"fx": {"command": fixture_mcp_server(), "env": {"FIXTURE_CANCEL_LOG": log}}}});
        let servers = format!("servers-{name}.json");
        std::fs::write(self.workspace.path().join(&servers), config.to_string()).unwrap();
        let mut args = vec!["--stateless", "--mcp-config", &servers, "--allow", "mcp__fx"];
        args.extend_from_slice(extra);
        (self.serve(Some(store), &args), log)
    }

    fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.workspace.path().join(name)).ok()
    }
}

const WRITE_A: &str = "await tools.write_file({ path: 'a.txt', content: 'A' }); return 'wrote a'";

#[test]
fn an_approval_reaches_a_client_of_2026_07_28_as_a_form_in_the_answer_and_its_retry_resumes_the_script() {
    let setup = Setup::new();
    let server = setup.serve(None, &[]);
    let report = drive(json!({
        "url": server.url,
        "decisions": ["once"],
        "calls": [{"tool": "Exec", "args": {"code": format!("console.log('before'); {WRITE_A}")}}],
    }));
    assert_eq!(report["protocol"], "2026-07-28", "the SDK's auto mode negotiated the current revision: {report}");
    assert_eq!(report["ttl_ms"], 60_000, "tools/list may be kept a minute: {report}");
    assert_eq!(report["calls"][0]["is_error"], false, "{report}");
    assert!(report["calls"][0]["text"].as_str().unwrap().contains("wrote a"), "{report}");
    assert!(report["calls"][0]["text"].as_str().unwrap().contains("before"), "the output before the park is kept: {report}");
    let asked = report["elicitations"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{report}");
    assert!(asked[0].as_str().unwrap().contains("`write_file` wants to run"), "{report}");
    assert!(asked[0].as_str().unwrap().contains("the permission mode default asks before workspace edits"), "{report}");
    assert_eq!(setup.file("a.txt").as_deref(), Some("A"));
}

#[test]
fn several_approvals_in_one_round_a_declined_one_and_allow_always() {
    let setup = Setup::new();
    let server = setup.serve(None, &[]);
    let both = "const r = await Promise.allSettled([\n\
                tools.write_file({ path: 'b.txt', content: 'B' }), tools.write_file({ path: 'c.txt', content: 'C' })]);\n\
                return r.map(x => x.status)";
    let report = drive(json!({
        "url": server.url,
        "mode": "2026-07-28",
        "decisions": ["once", "once", "decline", "always"],
        "calls": [
            {"tool": "Exec", "args": {"code": both}},
            {"tool": "Exec", "args": {"code": "try { await tools.write_file({ path: 'd.txt', content: 'D' }); return 'wrote' } catch (e) { return e.message }"}},
            {"tool": "Exec", "args": {"code": "await tools.write_file({ path: 'e.txt', content: 'E' }); return 'e'"}},
            {"tool": "Exec", "args": {"code": "await tools.write_file({ path: 'f.txt', content: 'F' }); return 'f, not asked'"}},
        ],
    }));
    let calls = report["calls"].as_array().unwrap();
    assert!(calls[0]["text"].as_str().unwrap().contains(r#"["fulfilled","fulfilled"]"#), "{report}");
    assert!(calls[1]["text"].as_str().unwrap().contains("declined"), "a declined form denies the call: {report}");
    assert!(calls[2]["text"].as_str().unwrap().contains('e'), "{report}");
    assert!(calls[3]["text"].as_str().unwrap().contains("not asked"), "{report}");
    assert_eq!(report["elicitations"].as_array().unwrap().len(), 4, "allowed always, the last write asked nothing: {report}");
    assert_eq!(setup.file("b.txt").as_deref(), Some("B"));
    assert_eq!(setup.file("c.txt").as_deref(), Some("C"));
    assert_eq!(setup.file("d.txt"), None);
    assert_eq!(setup.file("f.txt").as_deref(), Some("F"));
}

#[test]
fn a_retry_that_is_tampered_replayed_answers_what_was_not_asked_or_names_another_tool_is_refused() {
    let setup = Setup::new();
    let server = setup.serve(None, &[]);
    let exec = |manual: Value| json!({"tool": "Exec", "args": {"code": WRITE_A}, "manual": manual});
    let mut renamed = exec(json!({}));
    renamed["retry_tool"] = json!("view_tool_call");
    let report = drive(json!({
        "url": server.url,
        "mode": "2026-07-28",
        "calls": [
            exec(json!({"state": "tampered"})),
            exec(json!({"responses": {"approval-99": {"action": "accept", "content": {"decision": "once"}}}})),
            renamed,
            exec(json!({"again": true})),
            exec(json!({"concurrent": true})),
        ],
    }));
    let calls = report["calls"].as_array().unwrap();
    for call in calls {
        assert_eq!(call["input_required"], json!(["approval-0"]), "{report}");
    }
    let refusal = |call: &Value, retry: &str, needle: &str| {
        assert_eq!(call[retry]["error"], -32602, "{report}");
        assert!(call[retry]["message"].as_str().unwrap().contains(needle), "{needle}: {report}");
    };
    refusal(&calls[0], "retry_0", "not one this server made for this client");
    refusal(&calls[1], "retry_0", "answer `approval-99`, which this call did not ask");
    refusal(&calls[2], "retry_0", "belongs to a call of `Exec`, not of `view_tool_call`");
    // The same state twice: the first retry resumes, the second finds nothing to resume.
    assert_eq!(calls[3]["retry_0"]["is_error"], false, "{report}");
    refusal(&calls[3], "retry_1", "no parked Exec");
    // The same state twice at once: one resumes, the other is told it was resumed.
    let concurrent = [&calls[4]["retry_0"], &calls[4]["retry_1"]];
    assert_eq!(concurrent.iter().filter(|retry| retry["is_error"] == false).count(), 1, "{report}");
    assert_eq!(concurrent.iter().filter(|retry| retry["error"] == -32602).count(), 1, "{report}");
    assert_eq!(setup.file("a.txt").as_deref(), Some("A"), "written once");
}

#[test]
fn a_client_that_declared_no_elicitation_is_refused_with_the_rule_that_would_let_the_call_run() {
    let setup = Setup::new();
    let server = setup.serve(None, &[]);
    let report = drive(json!({
        "url": server.url,
        "mode": "2026-07-28",
        "elicit": false,
        "calls": [{"tool": "Exec", "args": {"code": WRITE_A}}],
    }));
    let text = report["calls"][0]["text"].as_str().unwrap();
    assert!(text.contains("did not declare elicitation") && text.contains("--allow write_file"), "{report}");
    assert_eq!(setup.file("a.txt"), None);
}

#[test]
fn a_legacy_client_is_still_asked_by_a_request_while_the_call_waits() {
    let setup = Setup::new();
    let server = setup.serve(None, &[]);
    let report = drive(json!({
        "url": server.url,
        "mode": "legacy",
        "decisions": ["once"],
        "calls": [{"tool": "Exec", "args": {"code": WRITE_A}}],
    }));
    assert_eq!(report["protocol"], "2025-11-25", "{report}");
    assert!(report["calls"][0]["text"].as_str().unwrap().contains("wrote a"), "{report}");
    assert_eq!(setup.file("a.txt").as_deref(), Some("A"));
}

#[test]
fn two_stateless_replicas_sharing_one_redis_the_retry_answered_by_the_other() {
    let redis = RedisServer::start();
    let setup = Setup::new();
    let store = redis.url(0);
    let first = setup.serve(Some(&store), &["--stateless"]);
    let second = setup.serve(Some(&store), &["--stateless"]);
    let report = drive(json!({
        "url": first.url,
        "calls": [{"tool": "Exec", "args": {"code": WRITE_A}, "manual": {"retry_url": second.url}}],
    }));
    let call = &report["calls"][0];
    assert_eq!(call["input_required"], json!(["approval-0"]), "{report}");
    assert_eq!(call["retry_0"]["is_error"], false, "{report}");
    assert!(call["retry_0"]["text"].as_str().unwrap().contains("wrote a"), "{report}");
    assert_eq!(setup.file("a.txt").as_deref(), Some("A"));
}

#[test]
fn a_script_that_asks_in_more_rounds_than_the_bound_is_ended_and_what_it_waited_for_never_runs() {
    let setup = Setup::new();
    let server = setup.serve(None, &[]);
    let rounds = MAX_ROUNDS;
    let code = format!(
        "for (let i = 0; i <= {rounds}; i++) await tools.write_file({{ path: `r${{i}}.txt`, content: 'x' }}); return 'all'"
    );
    let report = drive(json!({
        "url": server.url,
        "mode": "2026-07-28",
        "decisions": vec!["once"; rounds as usize + 1],
        "calls": [{"tool": "Exec", "args": {"code": code}}],
    }));
    let text = report["calls"][0]["text"].as_str().unwrap();
    assert_eq!(report["calls"][0]["is_error"], true, "{report}");
    assert!(
        text.contains(&format!("asked its client (approvals, or a downstream server's questions) in more than {rounds} rounds")),
        "{report}"
    );
    assert_eq!(report["elicitations"].as_array().unwrap().len(), rounds as usize, "a form a round: {report}");
    assert!(setup.file(&format!("r{}.txt", rounds - 1)).is_some(), "the calls approved in the rounds allowed ran");
    assert_eq!(setup.file(&format!("r{rounds}.txt")), None, "the call of the round past the bound never ran");
}

/// The bound on rounds of approvals of one call, as docs/serve.md states it.
const MAX_ROUNDS: u32 = 8;

#[test]
fn a_store_that_went_away_fails_the_call_saying_why_and_nothing_it_waited_for_runs() {
    let mut redis = RedisServer::start();
    let setup = Setup::new();
    let server = setup.serve(Some(&redis.url(1)), &[]);
    redis.stop();
    let started = std::time::Instant::now();
    let report = drive(json!({
        "url": server.url,
        "mode": "2026-07-28",
        "calls": [{"tool": "Exec", "args": {"code": WRITE_A}}],
    }));
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "it answered in {:?}", started.elapsed());
    let text = report["calls"][0]["text"].as_str().unwrap();
    assert!(text.contains("could not be parked") && text.contains(&format!("127.0.0.1:{}", redis.port)), "{report}");
    assert_eq!(setup.file("a.txt"), None);
}

#[test]
fn on_2026_07_28_initialize_is_an_unknown_method_and_discover_claims_no_list_changes() {
    let setup = Setup::new();
    let server = setup.serve(None, &[]);
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "initialize"),
    ];
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let initialize = json!({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {"_meta": meta}});
    let (status, _, body) = common::request("POST", &server.url, &headers, initialize.to_string().into_bytes());
    assert_eq!(status, 404, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["error"]["code"], -32601, "{body}");
    assert_eq!(answer["id"], 5, "{body}");
    let discover = json!({"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": {"_meta": meta}});
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "server/discover"),
    ];
    let (status, _, body) = common::request("POST", &server.url, &headers, discover.to_string().into_bytes());
    assert_eq!(status, 200, "{body}");
    let data = body.lines().find_map(|line| line.strip_prefix("data:")).map_or(body.as_str(), str::trim);
    let answer: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert!(answer["result"]["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")), "{body}");
    assert_eq!(answer["result"]["capabilities"]["tools"].get("listChanged"), None, "{body}");
}

/// A client of 2026-07-28 has no MCP session: what its calls observed of an untyped tool's
/// answers lasts its request (the Exec's own later search reads it), and the next request,
/// which may be another client's, is told `unknown`.
#[test]
fn on_2026_07_28_observed_output_types_last_one_request_and_never_reach_the_next() {
    let setup = Setup::new();
    let server = setup.serve_with_fixture(None, &[]);
    let signature = "(await tools.ToolSearch({ query: 'select:mcp__fx__echo' })).matches[0].signature";
    let report = drive(json!({
        "url": server.url,
        "calls": [
            {"tool": "Exec", "args": {"code": format!("await tools.mcp__fx__echo({{ balance: 1234.5 }}); return {signature};")}},
            {"tool": "Exec", "args": {"code": format!("return {signature};")}},
        ],
    }));
    assert_eq!(report["protocol"], "2026-07-28", "{report}");
    let observed = report["calls"][0]["text"].as_str().unwrap();
    assert!(observed.contains("balance: number;") && observed.contains("} /* observed */>"), "{report}");
    assert!(!observed.contains("1234"), "no value: {report}");
    assert!(report["calls"][1]["text"].as_str().unwrap().contains("Promise<unknown>"), "{report}");
}

/// On 2026-07-28 a load balancer may route on `Mcp-Method` and `Mcp-Name` without reading the
/// body, so a request whose headers are missing or say another call than its body is refused
/// before anything runs: otherwise a proxy's rule for one tool could be passed by naming it.
#[test]
fn on_2026_07_28_routing_headers_that_are_missing_or_name_another_call_are_refused_before_anything_runs() {
    let setup = Setup::new();
    let server = setup.serve(None, &["--permission-mode", "acceptEdits"]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let call = |id: u32| {
        let params = json!({"name": "Exec", "arguments": {"code": WRITE_A}, "_meta": meta});
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string().into_bytes()
    };
    let with = |changed: &[(&'static str, Option<&'static str>)]| {
        let mut headers: Vec<(&str, &str)> = common::EXEC_CALL_HEADERS.to_vec();
        for (name, value) in changed {
            headers.retain(|(header, _)| header != name);
            headers.extend(value.map(|value| (*name, value)));
        }
        headers
    };
    for (id, changed, needle) in [
        (1, with(&[("mcp-name", Some("read_file"))]), "does not match body value `Exec`"),
        (2, with(&[("mcp-method", Some("tools/list"))]), "does not match"),
        (3, with(&[("mcp-name", None)]), "missing required Mcp-Name"),
        (4, with(&[("mcp-method", None)]), "Mcp-Method"),
    ] {
        let (status, _, body) = common::request("POST", &server.url, &changed, call(id));
        assert_eq!(status, 400, "{changed:?}: {body}");
        let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(answer["error"]["code"], -32020, "{changed:?}: {body}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(needle), "{needle}: {body}");
        assert_eq!(setup.file("a.txt"), None, "{changed:?}: nothing ran");
    }
    // The same call with its headers right runs: the refusals above were the headers'.
    let (status, _, body) = common::request("POST", &server.url, &common::EXEC_CALL_HEADERS, call(5));
    assert_eq!(status, 200, "{body}");
    assert_eq!(setup.file("a.txt").as_deref(), Some("A"), "{body}");
}

#[test]
fn metrics_count_calls_nested_calls_and_approvals_and_need_the_token() {
    let setup = Setup::new();
    let token_file = setup.state.path().join("token");
    std::fs::write(&token_file, "metrics-test-token").unwrap();
    let server = setup.serve(None, &["--auth-token-file", token_file.to_str().unwrap()]);
    let report = drive(json!({
        "url": server.url,
        "token": "metrics-test-token",
        "mode": "2026-07-28",
        "decisions": ["once"],
        "calls": [
            {"tool": "Exec", "args": {"code": WRITE_A}},
            {"tool": "Exec", "args": {"code": "await tools.read_file({ path: 'missing.txt' })"}},
        ],
    }));
    assert_eq!(report["calls"][0]["is_error"], false, "{report}");
    let metrics = format!("{}/metrics", server.url.trim_end_matches("/mcp"));
    let (status, _, _) = common::request("GET", &metrics, &[], Vec::new());
    assert_eq!(status, 401, "the figures need the token");
    let (status, headers, body) = common::request("GET", &metrics, &[("authorization", "Bearer metrics-test-token")], Vec::new());
    assert_eq!(status, 200, "{body}");
    assert!(headers["content-type"].to_str().unwrap().starts_with("application/openmetrics-text"), "{headers:?}");
    for line in [
        r#"exec_host_calls_total{tool="exec",outcome="parked"} 1"#,
        r#"exec_host_calls_total{tool="exec",outcome="ok"} 1"#,
        r#"exec_host_calls_total{tool="exec",outcome="error"} 1"#,
        r#"exec_host_approvals_total{event="parked"} 1"#,
        r#"exec_host_approvals_total{event="retried"} 1"#,
        r#"exec_host_nested_calls_total{outcome="succeeded"} 1"#,
        r#"exec_host_nested_calls_total{outcome="execution"} 1"#,
        r#"exec_host_call_duration_seconds_count{tool="exec"} 3"#,
    ] {
        assert!(body.lines().any(|l| l == line), "missing `{line}` in:\n{body}");
    }
}

/// A script that becomes a task: it waits on a slow call past the moment an Exec answers in.
const SLOW_THEN: &str = "await tools.mcp__fx__slow({ ms: 1500 });";

fn task_call(code: &str, task: Value) -> Value {
    json!({"tool": "Exec", "args": {"code": code}, "task": task})
}

#[test]
fn an_exec_past_a_moment_becomes_a_task_that_tasks_get_follows_to_its_result() {
    let setup = Setup::new();
    let server = setup.serve_with_fixture(None, &[]);
    let report = drive(json!({
        "url": server.url,
        "mode": "2026-07-28",
        "tasks": true,
        "calls": [
            task_call(&format!("console.log('started'); {SLOW_THEN} return {{ done: true }}"), json!({})),
            {"tool": "Exec", "args": {"code": "return 6 * 7"}},
        ],
    }));
    let slow = &report["calls"][0];
    let task = &slow["task"];
    assert_eq!(task["created"], "working", "{report}");
    assert_eq!(task["statuses"][0], "working", "{report}");
    assert_eq!(task["final"]["status"], "completed", "{report}");
    assert_eq!(task["final"]["ttlMs"], 86_400_000, "{report}");
    assert!(task["final"].get("requestState").is_none(), "{report}");
    assert_eq!(slow["structured"], json!({"done": true}), "{report}");
    assert!(slow["text"].as_str().unwrap().contains("started"), "{report}");
    assert_eq!(task["cancel_after_end"]["resultType"], "complete", "cancelling an ended task is acknowledged: {report}");
    assert_eq!(task["unknown"]["error"], -32602, "{report}");
    // A quick Exec answers its call as any call does.
    assert!(report["calls"][1].get("task").is_none(), "{report}");
    assert!(report["calls"][1]["text"].as_str().unwrap().contains("42"), "{report}");
    let (_, _, figures) = common::request("GET", &format!("{}/metrics", server.base()), &[], Vec::new());
    for line in [
        r#"exec_host_calls_total{tool="exec",outcome="task"} 1"#,
        r#"exec_host_tasks_total{event="created"} 1"#,
        r#"exec_host_tasks_total{event="completed"} 1"#,
    ] {
        assert!(figures.lines().any(|l| l == line), "missing `{line}` in:\n{figures}");
    }
}

#[test]
fn a_task_whose_exec_parks_is_input_required_and_tasks_update_answers_its_forms_one_by_one() {
    let setup = Setup::new();
    let server = setup.serve_with_fixture(None, &[]);
    let code = format!(
        "{SLOW_THEN} await tools.write_file({{ path: 'a.txt', content: 'A' }});
         const both = await Promise.allSettled([
           tools.write_file({{ path: 'b.txt', content: 'B' }}),
           tools.write_file({{ path: 'c.txt', content: 'C' }}),
         ]);
         return both.map(r => r.status).join(',')"
    );
    let report = drive(json!({
        "url": server.url,
        "mode": "2026-07-28",
        "tasks": true,
        "decisions": ["once", "once", "decline"],
        "calls": [task_call(&code, json!({"one_by_one": true, "bad_update": true}))],
    }));
    let call = &report["calls"][0];
    let task = &call["task"];
    assert_eq!(task["final"]["status"], "completed", "{report}");
    let forms: Vec<usize> = task["forms"].as_array().unwrap().iter().map(|f| f.as_array().unwrap().len()).collect();
    assert_eq!(forms, [1, 2], "a form for a.txt, then one each for b.txt and c.txt: {report}");
    assert_eq!(task["between"][0].as_array().unwrap().len(), 1, "after one answer, one form is left: {report}");
    assert_eq!(task["bad_update"]["error"], -32602, "{report}");
    assert!(task["bad_update"]["message"].as_str().unwrap().contains("not an elicitation result"), "{report}");
    assert!(call["text"].as_str().unwrap().contains("fulfilled,rejected"), "{report}");
    assert_eq!(setup.file("a.txt").as_deref(), Some("A"));
    assert_eq!(setup.file("b.txt").as_deref(), Some("B"));
    assert_eq!(setup.file("c.txt"), None, "declined");
}

#[test]
fn tasks_cancel_ends_a_running_task_as_cancelled() {
    let setup = Setup::new();
    let server = setup.serve_with_fixture(None, &[]);
    let report = drive(json!({
        "url": server.url,
        "mode": "2026-07-28",
        "tasks": true,
        "calls": [task_call("await tools.mcp__fx__never({}); return 'never'", json!({"cancel": true}))],
    }));
    let task = &report["calls"][0]["task"];
    assert_eq!(task["cancel_ack"]["resultType"], "complete", "{report}");
    assert_eq!(task["final"]["status"], "cancelled", "{report}");
    assert_eq!(report["calls"][0]["is_error"], true, "{report}");
}

#[test]
fn two_stateless_replicas_sharing_one_redis_one_makes_the_task_the_other_answers_for_it() {
    let redis = RedisServer::start();
    let setup = Setup::new();
    let store = redis.url(0);
    let first = setup.serve_with_fixture(Some(&store), &["--stateless"]);
    let second = setup.serve_with_fixture(Some(&store), &["--stateless"]);
    let code = format!("{SLOW_THEN} await tools.write_file({{ path: 'a.txt', content: 'A' }}); return 'wrote a'");
    let report = drive(json!({
        "url": first.url,
        "tasks": true,
        "decisions": ["once"],
        "calls": [task_call(&code, json!({"get_url": second.url}))],
    }));
    let call = &report["calls"][0];
    assert_eq!(call["task"]["final"]["status"], "completed", "{report}");
    assert_eq!(call["task"]["forms"].as_array().unwrap().len(), 1, "{report}");
    assert!(call["text"].as_str().unwrap().contains("wrote a"), "{report}");
    assert_eq!(setup.file("a.txt").as_deref(), Some("A"));
}

#[test]
fn a_replica_that_dies_mid_task_leaves_it_to_another_which_takes_it_up_from_its_checkpoint() {
    let redis = RedisServer::start();
    let setup = Setup::new();
    let store = redis.url(0);
    let lease = ["--stateless", "--running-lease", "1"];
    let first = setup.serve_with_fixture(Some(&store), &lease);
    let second = setup.serve_with_fixture(Some(&store), &lease);
    let code = "console.log('before');
        try { await tools.mcp__fx__slow({ ms: 8000 }); return 'the call ended'; }
        catch (e) { return 'taken up: ' + e.message; }";
    let report = drive(json!({
        "url": first.url,
        "tasks": true,
        "calls": [task_call(code, json!({"get_url": second.url, "kill_pid": first.child.id()}))],
    }));
    let call = &report["calls"][0];
    assert_eq!(call["task"]["killed"], true, "{report}");
    assert_eq!(call["task"]["final"]["status"], "completed", "{report}");
    let text = call["text"].as_str().unwrap();
    assert!(text.contains("before") && text.contains("taken up") && text.contains("may have taken effect"), "{report}");
}

/// `host:port` of a server's URL.
fn address(server: &HttpServer) -> String {
    server.base().trim_start_matches("http://").to_string()
}

#[test]
fn behind_nginx_round_robin_two_replicas_answer_approvals_and_tasks_and_a_replica_killed_mid_task_is_taken_over() {
    let redis = RedisServer::start();
    let setup = Setup::new();
    let store = redis.url(0);
    let lease = ["--running-lease", "1"];
    let (first, first_log) = setup.replica(&store, "first", &lease);
    let (second, second_log) = setup.replica(&store, "second", &lease);
    let nginx = Nginx::start(&[address(&first), address(&second)]);
    let form_then_write = format!("{SLOW_THEN} await tools.write_file({{ path: 'b.txt', content: 'B' }}); return 'wrote b'");
    let taken_up = "try { await tools.mcp__fx__never({}); return 'the call ended'; }
        catch (e) { return 'taken up: ' + e.message; }";
    let logs = json!({first_log.display().to_string(): first.child.id(), second_log.display().to_string(): second.child.id()});
    let report = drive(json!({
        "url": nginx.url("/mcp"),
        "mode": "2026-07-28",
        "tasks": true,
        "decisions": ["once", "once", "once"],
        "calls": [
            // An approval as multi round-trip requests: the retry goes to the next replica.
            {"tool": "Exec", "args": {"code": WRITE_A}},
            // A task whose form is answered by tasks/update, polled through the balancer.
            task_call(&form_then_write, json!({})),
            // A task whose replica is killed while its call runs: the other takes it up.
            task_call(taken_up, json!({"kill_where": {"line": "started never", "logs": logs}})),
            // The balancer leaves the dead replica out, and calls go on.
            {"tool": "Exec", "args": {"code": "return 6 * 7"}},
            {"tool": "Exec", "args": {"code": "await tools.write_file({ path: 'c.txt', content: 'C' }); return 'wrote c'"}},
        ],
    }));
    let calls = report["calls"].as_array().unwrap_or_else(|| panic!("{report}\n{}", nginx.log()));
    assert!(calls[0]["text"].as_str().unwrap().contains("wrote a"), "{report}");
    assert_eq!(calls[1]["task"]["final"]["status"], "completed", "{report}");
    assert_eq!(calls[1]["task"]["forms"].as_array().unwrap().len(), 1, "{report}");
    assert!(calls[1]["text"].as_str().unwrap().contains("wrote b"), "{report}");
    let killed = calls[2]["task"]["killed"].as_u64().unwrap_or_else(|| panic!("no replica was killed: {report}"));
    assert!([first.child.id(), second.child.id()].contains(&(killed as u32)), "{report}");
    assert_eq!(calls[2]["task"]["final"]["status"], "completed", "{report}");
    let text = calls[2]["text"].as_str().unwrap();
    assert!(text.contains("taken up") && text.contains("may have taken effect"), "{report}");
    assert!(calls[3]["text"].as_str().unwrap().contains("42"), "{report}");
    assert!(calls[4]["text"].as_str().unwrap().contains("wrote c"), "{report}");
    assert_eq!(report["elicitations"].as_array().unwrap().len(), 3, "one form for each write: {report}");
    for (file, content) in [("a.txt", "A"), ("b.txt", "B"), ("c.txt", "C")] {
        assert_eq!(setup.file(file).as_deref(), Some(content), "{file}");
    }
}

/// [`common::EXEC_CALL_HEADERS`] as reqwest sends them.
fn exec_call_headers() -> reqwest::header::HeaderMap {
    common::EXEC_CALL_HEADERS.into_iter().map(|(name, value)| (name.parse().unwrap(), value.parse().unwrap())).collect()
}

#[test]
fn a_client_of_2026_07_28_that_drops_its_request_mid_exec_stops_it_down_to_the_downstream_call() {
    let setup = Setup::new();
    let log = setup.workspace.path().join("cancel.log");
    let config = json!({"mcpServers": {"fx": {"command": fixture_mcp_server(), "env": {"FIXTURE_CANCEL_LOG": log}}}});
    std::fs::write(setup.workspace.path().join("servers.json"), config.to_string()).unwrap();
    let server = setup.serve(None, &["--mcp-config", "servers.json", "--allow", "mcp__fx", "-v"]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "Exec", "arguments": {"code": "await tools.mcp__fx__never({})"}, "_meta": meta}});
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let request = reqwest::Client::new().post(&server.url).headers(exec_call_headers()).body(call.to_string());
        // The client gives up: its request, and with it its connection, is dropped.
        let gave_up = tokio::time::timeout(std::time::Duration::from_secs(2), async { request.send().await?.text().await }).await;
        assert!(gave_up.is_err(), "the call cannot end by itself: {gave_up:?}");
    });
    // The client's connections close with its runtime.
    drop(runtime);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let cancelled = || std::fs::read_to_string(&log).is_ok_and(|text| text.contains("cancelled never"));
    while !cancelled() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(cancelled(), "the downstream call was not cancelled: {:?}", std::fs::read_to_string(&log));
    let logged = server.stderr.lock().unwrap().clone();
    assert!(!logged.contains("error"), "a cancellation that worked is no error:\n{logged}");
}

/// `serve` with two asking servers: `asker` asks by elicitation (2025-11-25), `modern` only
/// speaks 2026-07-28 and asks by answering `InputRequiredResult`.
fn serve_with_askers(setup: &Setup, store: Option<&str>) -> HttpServer {
    let fixture = fixture_mcp_server();
    let config = json!({"mcpServers": {
        "asker": {"command": fixture, "env": {"FIXTURE_ELICIT": "1"}},
        "modern": {"command": fixture, "env": {"FIXTURE_ELICIT": "1", "FIXTURE_MODERN_ONLY": "1"}},
    }});
    std::fs::write(setup.workspace.path().join("servers.json"), config.to_string()).unwrap();
    setup.serve(store, &["--mcp-config", "servers.json", "--allow", "mcp__asker", "--allow", "mcp__modern"])
}

#[test]
fn a_downstream_servers_question_during_a_call_of_2026_07_28_travels_in_the_answer_and_the_retry_answers_it() {
    let setup = Setup::new();
    let server = serve_with_askers(&setup, None);
    let both = "const a = await tools.mcp__modern__ask({});\n\
                await tools.write_file({ path: 'q.txt', content: a.answer.content.colour });\n\
                return a";
    let report = drive(json!({
        "url": server.url,
        "decisions": [{"name": "Grace", "age": 41}, {"colour": "red"}, "once", "decline"],
        "calls": [
            {"tool": "Exec", "args": {"code": "return await tools.mcp__asker__ask({})"}},
            {"tool": "Exec", "args": {"code": both}},
            {"tool": "Exec", "args": {"code": "return await tools.mcp__asker__ask({})"}},
        ],
    }));
    assert_eq!(report["protocol"], "2026-07-28", "{report}");
    let calls = report["calls"].as_array().unwrap();
    let value = |call: &Value| -> Value {
        let text = call["text"].as_str().unwrap_or_else(|| panic!("{report}"));
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {report}"))
    };
    assert_eq!(
        value(&calls[0]),
        json!({"action": "accept", "content": {"name": "Grace", "age": 41, "status": "active", "verified": true}}),
        "the client's answer reached the server, with the schema's defaults for what it left out: {report}"
    );
    assert_eq!(value(&calls[1])["answer"], json!({"action": "accept", "content": {"colour": "red"}}), "{report}");
    assert_eq!(setup.file("q.txt").as_deref(), Some("red"), "a question, then an approval, in two rounds");
    assert_eq!(value(&calls[2])["action"], "decline", "a declined form declines the server: {report}");
    let asked: Vec<&str> = report["elicitations"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    assert_eq!(asked[0], "MCP server `asker` asks: Who is asking?", "{report}");
    assert_eq!(asked[1], "MCP server `modern` asks: Which colour?", "{report}");
    assert!(asked[2].contains("`write_file` wants to run"), "{report}");
    assert_eq!(asked.len(), 4, "{report}");
}

#[test]
fn a_retry_of_a_call_waiting_on_a_question_that_is_replayed_sent_to_another_replica_or_answers_wrong_is_refused() {
    let setup = Setup::new();
    // (An answer that is no elicitation result is refused too; the SDK cannot send one: see
    // the unit test of `waiting`.) One server per call: a server that asks while calls of two clients are in flight to it
    // is declined (which call it asks for cannot be told), and a refused retry leaves its
    // call waiting.
    let askers: serde_json::Map<String, Value> =
        (0..4).map(|n| (format!("a{n}"), json!({"command": fixture_mcp_server(), "env": {"FIXTURE_ELICIT": "1"}}))).collect();
    std::fs::write(setup.workspace.path().join("servers.json"), json!({"mcpServers": askers}).to_string()).unwrap();
    let allow =
        ["--mcp-config", "servers.json", "--allow", "mcp__a0", "--allow", "mcp__a1", "--allow", "mcp__a2", "--allow", "mcp__a3"];
    let server = setup.serve(None, &allow);
    let other = setup.serve(None, &allow);
    let calls = std::cell::Cell::new(0);
    let ask = |manual: Value| {
        let n = calls.replace(calls.get() + 1);
        json!({"tool": "Exec", "args": {"code": format!("return await tools.mcp__a{n}__ask({{}})")}, "manual": manual})
    };
    let ada = json!({"input-0": {"action": "accept", "content": {"name": "Ada"}}});
    let report = drive(json!({
        "url": server.url,
        "mode": "2026-07-28",
        "calls": [
            ask(json!({"responses": ada, "again": true})),
            ask(json!({"responses": ada, "retry_url": other.url})),
            ask(json!({"responses": {"input-7": {"action": "accept", "content": {}}}})),
            ask(json!({"state": "tampered", "responses": ada})),
        ],
    }));
    let calls = report["calls"].as_array().unwrap();
    for call in calls {
        assert_eq!(call["input_required"], json!(["input-0"]), "{report}");
    }
    let answered: Value = serde_json::from_str(calls[0]["retry_0"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answered["content"]["name"], "Ada", "{report}");
    let refusal = |call: &Value, retry: &str, needle: &str| {
        assert_eq!(call[retry]["error"], -32602, "{report}");
        assert!(call[retry]["message"].as_str().unwrap().contains(needle), "{needle}: {report}");
    };
    refusal(&calls[0], "retry_1", "the call that asked waits no more");
    refusal(&calls[1], "retry_0", "waits in another server process");
    refusal(&calls[2], "retry_0", "answer `input-7`, which this call did not ask");
    refusal(&calls[3], "retry_0", "not one this server made for this client");
    let (_, _, metrics) = common::request("GET", &format!("{}/metrics", server.base()), &[], Vec::new());
    assert!(metrics.contains(r#"exec_host_questions_total{event="asked"} 4"#), "{metrics}");
    assert!(metrics.contains(r#"exec_host_questions_total{event="answered"} 1"#), "{metrics}");
}

#[test]
fn an_apis_operation_and_a_fetch_ask_a_client_of_either_revision_and_each_request_is_sent_once() {
    // A loopback API: `POST /notes` counts what reached it, `GET /ping` answers a fetch.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let base = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let counted = made.clone();
        let app = axum::Router::new()
            .route(
                "/notes",
                axum::routing::post(move || {
                    let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    async move {
                        axum::http::Response::builder()
                            .status(201)
                            .header("content-type", "application/json")
                            .body(axum::body::Body::from(format!(r#"{{"id":{n}}}"#)))
                            .unwrap()
                    }
                }),
            )
            .route("/ping", axum::routing::get(|| async { "pong" }));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        base
    });
    let setup = Setup::new();
    let spec = json!({ "openapi": "3.0.3", "info": { "title": "Notes", "version": "1" }, "paths": { "/notes": { "post": {
        "operationId": "createNote", "summary": "Make a note",
        "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object" } } } },
        "responses": { "201": { "description": "made", "content": { "application/json": { "schema": {
            "type": "object", "properties": { "id": { "type": "integer" } } } } } } } } } } });
    std::fs::write(setup.workspace.path().join("notes.json"), spec.to_string()).unwrap();
    let config = json!({ "apis": { "notes": { "spec": "notes.json", "baseUrl": base } } });
    std::fs::write(setup.workspace.path().join("servers.json"), config.to_string()).unwrap();
    std::fs::write(setup.workspace.path().join("web.json"), json!({ "webFetchPrivateHosts": ["127.0.0.1"] }).to_string())
        .unwrap();
    let server = setup.serve(None, &["--mcp-config", "servers.json", "--settings", "web.json"]);
    let code = format!(
        "const made = await tools.api__notes__createNote({{ body: {{ title: 'milk' }} }});
         const ping = await (await fetch('{base}/ping')).text();
         return {{ made: made.id, ping }}"
    );
    for (mode, protocol, n) in [("2026-07-28", "2026-07-28", 1), ("legacy", "2025-11-25", 2)] {
        let report = drive(json!({
            "url": server.url, "mode": mode, "decisions": ["once", "once"],
            "calls": [{"tool": "Exec", "args": {"code": code}}],
        }));
        assert_eq!(report["protocol"], protocol, "{report}");
        assert_eq!(report["calls"][0]["is_error"], false, "{report}");
        let text = report["calls"][0]["text"].as_str().unwrap();
        assert!(text.contains(&format!(r#""made":{n}"#)) && text.contains(r#""ping":"pong""#), "{mode}: {report}");
        let asked: Vec<&str> = report["elicitations"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        assert_eq!(asked.len(), 2, "{mode}: {report}");
        assert!(asked[0].contains("`api__notes__createNote` wants to run"), "{mode}: {asked:?}");
        assert!(asked[1].contains("`WebFetch` wants to run") && asked[1].contains("127.0.0.1"), "{mode}: {asked:?}");
        // A 2026-07-28 client's answers come back with a retry that resumes the parked Exec:
        // the request made before the second question is not made again.
        assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), n, "{mode}: each note made once");
    }
}
