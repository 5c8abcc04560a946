//! `exec-host serve` as an MCP client sees it: a real rmcp client starts the binary over
//! stdio, reads `instructions`, lists the tools, runs Execs that reach downstream servers,
//! and cancels one.

use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

use crate::common::{exec_host, fixture_mcp_server, shared_cache};

type Client = RunningService<RoleClient, ()>;

/// `serve` starts in the default permission mode (its scripts come from a model): the
/// downstream servers' tools are let run by rules, as a user would configure them.
const ALLOW_SERVERS: &[&str] = &["--allow", "mcp__fx", "--allow", "mcp__evil"];

/// `serve` in `workspace` with the fixture server as `fx` and the hostile one as `evil`.
async fn start(workspace: &Path, extra: &[&str]) -> Client {
    let fixture = fixture_mcp_server();
    let servers = json!({"mcpServers": {
        "fx": {"command": fixture, "env": {"FIXTURE_CANCEL_LOG": workspace.join("cancel.log")}},
        "evil": {"command": fixture, "args": ["--hostile"]},
    }});
    std::fs::write(workspace.join("servers.json"), servers.to_string()).unwrap();
    let mut command = tokio::process::Command::from(exec_host(workspace, &shared_cache()));
    command.args(["serve", "--mcp-config", "servers.json"]).args(extra);
    let transport = TokioChildProcess::new(command).expect("serve starts");
    tokio::time::timeout(Duration::from_secs(60), ().serve(transport)).await.expect("in time").expect("initialize")
}

async fn exec<H: rmcp::ClientHandler>(client: &RunningService<RoleClient, H>, code: &str) -> CallToolResult {
    let params = CallToolRequestParams::new("Exec").with_arguments(json!({ "code": code }).as_object().unwrap().clone());
    tokio::time::timeout(Duration::from_secs(60), client.call_tool(params)).await.expect("in time").expect("an answer")
}

/// Starts an Exec that waits on the fixture's `never` tool, and returns once the fixture
/// has logged the call's start; the handle cancels the request.
async fn exec_waiting_downstream<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
    log: &Path,
) -> rmcp::service::RequestHandle<RoleClient> {
    let params = CallToolRequestParams::new("Exec")
        .with_arguments(json!({ "code": "await tools.mcp__fx__never({}); return 'done'" }).as_object().unwrap().clone());
    let handle = client
        .send_cancellable_request(ClientRequest::CallToolRequest(CallToolRequest::new(params)), PeerRequestOptions::no_options())
        .await
        .unwrap();
    assert!(logged_within(log, "started never", 5).await, "the downstream call started");
    handle
}

/// Whether the fixture's cancel log holds `line` within `seconds`.
async fn logged_within(log: &Path, line: &str, seconds: u64) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    while tokio::time::Instant::now() < deadline {
        if std::fs::read_to_string(log).unwrap_or_default().contains(line) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn a_client_reads_the_announcement_and_runs_execs_across_downstream_servers() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "hello\n").unwrap();
    let client = start(workspace.path(), ALLOW_SERVERS).await;

    let instructions = client.peer_info().and_then(|info| info.instructions.clone()).unwrap_or_default();
    assert!(instructions.starts_with("Tools an Exec script can call"), "{instructions}");
    assert!(instructions.contains("\nmcp__fx__echo\n") && instructions.contains("\nread_file"), "{instructions}");

    let listed = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names.first(), Some(&"Exec"), "{names:?}");
    assert!(!names.contains(&"mcp__fx__echo"), "downstream tools sit behind Exec: {names:?}");

    // Two downstream servers and a workspace file in one script; an object comes back as
    // structured content too.
    let result = exec(
        &client,
        "const a = await tools.mcp__fx__echo({ n: 1 }); const b = await tools.mcp__evil__fine({});
         const f = await tools.read_file({ path: 'notes.txt' }); return { a: a.n, b, f: f.content.trim() };",
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(result.structured_content, Some(json!({"a": 1, "b": "fine", "f": "hello"})));

    // A failure is `isError` with the failure's text.
    let failed = exec(&client, "throw new Error('boom')").await;
    assert_eq!(failed.is_error, Some(true));
    assert!(text(&failed).contains("Error: boom"), "{}", text(&failed));

    // The scripts come from a model: a write must ask, and with no one to ask it is refused
    // with the rule that would let it run.
    let refused = exec(
        &client,
        "try { await tools.write_file({ path: 'x.txt', content: 'x' }); return 'written'; } catch (e) { return e.message; }",
    )
    .await;
    assert!(text(&refused).contains("--allow write_file"), "{}", text(&refused));
    assert!(!workspace.path().join("x.txt").exists());

    // A downstream server leaves: the list stays the same, and a result after the change
    // (the crash's own or the next) carries the new announcement before its text, once.
    let crashed = exec(&client, "try { await tools.mcp__evil__crash({}); } catch (e) { return e.message; }").await;
    assert!(text(&crashed).contains("disconnected"), "{}", text(&crashed));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = exec(&client, "return 1").await;
    let blocks = |result: &CallToolResult| -> Vec<String> {
        result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
    };
    let announced: Vec<String> =
        [blocks(&crashed), blocks(&after)].into_iter().filter(|b| b.len() == 2).map(|b| b[0].clone()).collect();
    assert_eq!(announced.len(), 1, "{:?} / {:?}", blocks(&crashed), blocks(&after));
    assert!(announced[0].starts_with("Tools an Exec script can call") && !announced[0].contains("mcp__evil"), "{announced:?}");
    assert_eq!(blocks(&after).last().map(String::as_str), Some("1"));
    let relisted = client.list_all_tools().await.unwrap();
    assert_eq!(serde_json::to_value(&relisted).unwrap(), serde_json::to_value(&listed).unwrap(), "tools/list is constant");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_cancelled_request_aborts_its_exec_and_reaches_the_downstream_server() {
    let workspace = tempfile::tempdir().unwrap();
    let client = start(workspace.path(), ALLOW_SERVERS).await;
    let log = workspace.path().join("cancel.log");
    let handle = exec_waiting_downstream(&client, &log).await;
    handle.cancel(Some("the user pressed stop".into())).await.unwrap();
    assert!(logged_within(&log, "cancelled never", 5).await, "the cancellation reached the downstream server");
    // The server goes on serving.
    let result = exec(&client, "return 2").await;
    assert_eq!(result.structured_content, None);
    assert_eq!(text(&result), "2");
    client.cancel().await.unwrap();
}

/// A client that records the progress notifications it receives.
#[derive(Clone, Default)]
struct ProgressRecorder {
    seen: std::sync::Arc<std::sync::Mutex<Vec<(f64, String)>>>,
}

impl rmcp::ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().push((params.progress, params.message.unwrap_or_default()));
    }
}

#[tokio::test]
async fn a_client_that_sends_a_progress_token_hears_of_each_nested_call_and_each_downstream_step() {
    use rmcp::model::{NumberOrString, ProgressToken, RequestMetaObject};
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("servers.json"),
        json!({"mcpServers": {"fx": {"command": fixture_mcp_server(), "env": {"FIXTURE_PROGRESS": "1"}}}}).to_string(),
    )
    .unwrap();
    let mut command = tokio::process::Command::from(exec_host(workspace.path(), &shared_cache()));
    command.args(["serve", "--mcp-config", "servers.json", "--allow", "mcp__fx"]);
    let recorder = ProgressRecorder::default();
    let client = recorder.clone().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let code =
        "for (let i = 1; i <= 3; i++) { await tools.mcp__fx__echo({ i }); await tools.mcp__fx__slow({ ms: 50 }); } return 'done'";
    let params = CallToolRequestParams::new("Exec").with_arguments(json!({ "code": code }).as_object().unwrap().clone());
    let mut options = PeerRequestOptions::no_options();
    options.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(NumberOrString::String("p1".into()))));
    let handle =
        client.send_request_with_option(ClientRequest::CallToolRequest(CallToolRequest::new(params)), options).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(60), handle.await_response()).await.unwrap().unwrap();
    assert!(format!("{answer:?}").contains("done"), "{answer:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seen = recorder.seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "no progress was reported");
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "progress only grows: {seen:?}");
    assert_eq!(seen.last().unwrap(), &(6.0, "6 tool calls, the last `mcp__fx__slow`".to_string()), "{seen:?}");

    // The steps a downstream tool reports are steps of the Exec.
    recorder.seen.lock().unwrap().clear();
    let code = "return await tools.mcp__fx__steps({ count: 3, ms: 100 })";
    let params = CallToolRequestParams::new("Exec").with_arguments(json!({ "code": code }).as_object().unwrap().clone());
    let mut options = PeerRequestOptions::no_options();
    options.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(NumberOrString::String("p2".into()))));
    let handle =
        client.send_request_with_option(ClientRequest::CallToolRequest(CallToolRequest::new(params)), options).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle.await_response()).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seen = recorder.seen.lock().unwrap().clone();
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "progress only grows: {seen:?}");
    assert_eq!(seen.first().map(|s| s.1.as_str()), Some("1 tool call, the last `mcp__fx__steps`"), "{seen:?}");
    assert_eq!(seen.last().map(|s| s.1.as_str()), Some("`mcp__fx__steps`: 3/3: step 3"), "{seen:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_bash_command_s_lines_reach_the_client_as_progress_while_it_runs() {
    use rmcp::model::{NumberOrString, ProgressToken, RequestMetaObject};
    let workspace = tempfile::tempdir().unwrap();
    let mut command = tokio::process::Command::from(exec_host(workspace.path(), &shared_cache()));
    command.args(["serve", "--enable-bash", "--allow", "Bash"]);
    let recorder = ProgressRecorder::default();
    let client = recorder.clone().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let code = "const r = await tools.Bash({ command: 'echo first line; sleep 0.5; echo second line' }); return r.exitCode";
    let params = CallToolRequestParams::new("Exec").with_arguments(json!({ "code": code }).as_object().unwrap().clone());
    let mut options = PeerRequestOptions::no_options();
    options.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(NumberOrString::String("b1".into()))));
    let handle =
        client.send_request_with_option(ClientRequest::CallToolRequest(CallToolRequest::new(params)), options).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(60), handle.await_response()).await.unwrap().unwrap();
    assert!(format!("{answer:?}").contains("\"0\""), "{answer:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seen: Vec<String> = recorder.seen.lock().unwrap().iter().map(|(_, message)| message.clone()).collect();
    let first = seen.iter().position(|message| message.contains("`Bash`") && message.contains("first line"));
    let second = seen.iter().position(|message| message.contains("`Bash`") && message.contains("second line"));
    assert!(first.is_some() && first < second, "each line, in order: {seen:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_documented_mcp_servers_entry_starts_a_working_gateway() {
    // The entry exactly as the guide's `serve` chapter and the README's tour show it; its
    // example paths become this test's.
    let first_json_block = |file: &str, heading: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file)).unwrap();
        let section = &text[text.find(heading).unwrap_or_else(|| panic!("{file} has the heading {heading}"))..];
        let block = section.split("```json\n").nth(1).and_then(|rest| rest.split("\n```").next()).expect("a JSON block");
        serde_json::from_str(block).unwrap_or_else(|e| panic!("the entry of {file} is JSON: {e}"))
    };
    let entry = first_json_block("docs/guide/serve.md", "# `serve`");
    assert_eq!(first_json_block("README.md", "### `serve` in an MCP client"), entry, "the README shows the guide's entry");
    let entry = &entry["mcpServers"]["exec-host"];
    assert_eq!(entry["command"], "exec-host");

    let workspace = tempfile::tempdir().unwrap();
    // The fixture server under the name the entry's rule allows.
    std::fs::write(
        workspace.path().join("servers.json"),
        json!({"mcpServers": {"github": {"command": fixture_mcp_server()}}}).to_string(),
    )
    .unwrap();
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| {
            let arg = arg.as_str().unwrap();
            match arg {
                "/path/to/project" => workspace.path().display().to_string(),
                "/path/to/servers.json" => workspace.path().join("servers.json").display().to_string(),
                _ => arg.to_string(),
            }
        })
        .collect();
    let mut command = tokio::process::Command::from(exec_host(workspace.path(), &shared_cache()));
    command.args(&args);
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let result = exec(&client, "return (await tools.mcp__github__echo({ ok: true })).ok").await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(text(&result), "true");
    client.cancel().await.unwrap();
}

/// A client that declares elicitation and answers every approval form with `decision`, or
/// declines when `decision` is `None`; it records the messages it was shown.
#[derive(Clone)]
struct Approving {
    decision: Option<&'static str>,
    shown: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Approving {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder().enable_elicitation().build(),
            rmcp::model::Implementation::new("approving-test-client", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
        if let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = &request {
            self.shown.lock().unwrap().push(format!("{message}\n{}", serde_json::to_string(requested_schema).unwrap()));
        }
        Ok(match self.decision {
            Some(decision) => {
                let mut answer = ElicitResult::new(ElicitationAction::Accept);
                answer.content = Some(json!({ "decision": decision }));
                answer
            }
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

#[tokio::test]
async fn a_call_that_must_ask_is_put_to_a_client_that_declares_elicitation() {
    for (decision, written) in [(Some("once"), true), (Some("deny"), false), (None, false)] {
        let workspace = tempfile::tempdir().unwrap();
        let mut command = tokio::process::Command::from(exec_host(workspace.path(), &shared_cache()));
        command.args(["serve"]);
        let client = Approving { decision, shown: Default::default() };
        let running = client.clone().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
        let result = exec(
            &running,
            "try { await tools.write_file({ path: 'x.txt', content: 'x' }); return 'written'; } catch (e) { return e.message; }",
        )
        .await;
        assert_eq!(workspace.path().join("x.txt").exists(), written, "{decision:?}: {}", text(&result));
        let shown = client.shown.lock().unwrap().clone();
        assert_eq!(shown.len(), 1, "{decision:?}: asked once: {shown:?}");
        assert!(shown[0].contains("`write_file` wants to run") && shown[0].contains("\"Allow always\""), "{}", shown[0]);
        if !written {
            let reason =
                if decision.is_some() { "the user denied it in the MCP client" } else { "the user declined in the MCP client" };
            assert!(text(&result).contains(reason), "{decision:?}: {}", text(&result));
        }
        running.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn bad_calls_get_failure_results_and_a_client_that_leaves_mid_exec_stops_it() {
    let workspace = tempfile::tempdir().unwrap();
    let client = start(workspace.path(), ALLOW_SERVERS).await;
    // An unknown tool, and Exec without its `code`: failure results, and the server goes on.
    let unknown = client.call_tool(CallToolRequestParams::new("no_such_tool")).await.unwrap();
    assert_eq!(unknown.is_error, Some(true), "{}", text(&unknown));
    assert!(text(&unknown).contains("no_such_tool"), "{}", text(&unknown));
    let shapeless = client
        .call_tool(CallToolRequestParams::new("Exec").with_arguments(json!({"script": 1}).as_object().unwrap().clone()))
        .await
        .unwrap();
    assert_eq!(shapeless.is_error, Some(true), "{}", text(&shapeless));
    assert!(text(&shapeless).contains("code"), "{}", text(&shapeless));
    assert_eq!(text(&exec(&client, "return 3").await), "3");

    // The client goes away while an Exec waits on a downstream call: the Exec is aborted and
    // the downstream call cancelled.
    let log = workspace.path().join("cancel.log");
    let _pending = exec_waiting_downstream(&client, &log).await;
    // The client closes the connection (its standard input to `serve`), as a client that
    // quits does.
    let _ = client.cancel().await;
    assert!(logged_within(&log, "cancelled never", 10).await, "the downstream call was cancelled when the client left");
}

#[test]
fn bad_lines_on_stdio_get_json_rpc_errors_and_the_connection_goes_on() {
    use std::io::{BufRead, BufReader, Write};
    let workspace = tempfile::tempdir().unwrap();
    let mut child = exec_host(workspace.path(), &shared_cache())
        .args(["serve", "--max-body-bytes", "100000"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> serde_json::Value { serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap() };
    let mut send = |line: &[u8]| {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
    assert_eq!(next()["id"], 1);
    send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let error = |answer: serde_json::Value| {
        (
            answer["id"].clone(),
            answer["error"]["code"].as_i64().unwrap(),
            answer["error"]["message"].as_str().unwrap().to_string(),
        )
    };
    send(b"{not json");
    let (id, code, message) = error(next());
    assert_eq!((id, code), (serde_json::Value::Null, -32700), "{message}");
    send(br#"{"jsonrpc":"2.0","id":2}"#);
    assert_eq!(error(next()).1, -32600);
    send(b"\xff\xfe");
    assert_eq!(error(next()), (serde_json::Value::Null, -32700, "the message is not UTF-8".to_string()));
    send(&vec![b'a'; 200_000]);
    let (_, code, message) = error(next());
    assert_eq!(code, -32700);
    assert!(message.contains("longer than 100000 bytes"), "{message}");
    // A malformed notification gets no answer; a request with params that do not fit its
    // method gets invalid params, an unknown method "method not found".
    send(br#"{"jsonrpc":"2.0","method":"notifications/odd","params":5}"#);
    send(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"Exec","arguments":"nope"}}"#);
    let (id, code, message) = error(next());
    assert_eq!((id, code), (json!(4), -32602), "{message}");
    assert!(message.contains("arguments: invalid type"), "{message}");
    send(br#"{"jsonrpc":"2.0","id":5,"method":"no/such"}"#);
    assert_eq!(error(next()).1, -32601);
    // And the connection still serves.
    send(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"Exec","arguments":{"code":"return 40 + 2"}}}"#);
    let answer = next();
    assert_eq!(answer["id"], 6);
    assert_eq!(answer["result"]["content"][0]["text"], "42", "{answer}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[tokio::test]
async fn a_client_lists_and_reads_the_downstream_servers_resources_under_the_rules() {
    use rmcp::model::{ReadResourceRequestParams, ResourceContents};
    let workspace = tempfile::tempdir().unwrap();
    let fixture = |env: serde_json::Value| json!({"command": fixture_mcp_server(), "env": env});
    let servers = json!({"mcpServers": {"fx": fixture(json!({"FIXTURE_RESOURCES": "1"})), "plain": fixture(json!({}))}});
    std::fs::write(workspace.path().join("servers.json"), servers.to_string()).unwrap();
    std::fs::write(workspace.path().join("deny.json"), json!({"permissions": {"deny": ["ReadMcpResourceTool(fx)"]}}).to_string())
        .unwrap();
    let start = |extra: &[&str]| {
        let mut command = tokio::process::Command::from(exec_host(workspace.path(), &shared_cache()));
        command.args(["serve", "--mcp-config", "servers.json"]).args(extra);
        ().serve(TokioChildProcess::new(command).unwrap())
    };
    let client = start(&[]).await.expect("initialize");
    assert!(client.peer_info().unwrap().capabilities.resources.is_some(), "a downstream server offers resources");
    let listed = client.list_resources(None).await.unwrap();
    let uris: Vec<&str> = listed.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["memo://today", "memo://archive", "pixel://one"]);
    assert_eq!(listed.resources[0].meta.as_ref().unwrap().0["exec-host/server"], "fx");
    assert_eq!(listed.resources[0].description.as_deref(), Some("today's memo"));
    let read = client.read_resource(ReadResourceRequestParams::new("memo://today")).await.unwrap();
    assert!(
        matches!(&read.contents[..], [ResourceContents::TextResourceContents { text, .. }] if text == "buy milk"),
        "{read:?}"
    );
    let picture = client.read_resource(ReadResourceRequestParams::new("pixel://one")).await.unwrap();
    assert!(
        matches!(&picture.contents[..], [ResourceContents::BlobResourceContents { mime_type: Some(mime), .. }] if mime == "image/png"),
        "{picture:?}"
    );
    let missing = client.read_resource(ReadResourceRequestParams::new("memo://nowhere")).await.unwrap_err().to_string();
    assert!(missing.contains("no connected MCP server lists the resource memo://nowhere"), "{missing}");
    client.cancel().await.unwrap();

    // The client's rules apply to what it reads.
    let client = start(&["--settings", "deny.json"]).await.expect("initialize");
    assert_eq!(client.list_resources(None).await.unwrap().resources.len(), 3, "listing is not reading");
    let refused = client.read_resource(ReadResourceRequestParams::new("memo://today")).await.unwrap_err().to_string();
    assert!(refused.contains("`ReadMcpResourceTool(fx)`"), "{refused}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_api_added_to_the_configuration_while_serve_runs_is_loaded_and_one_removed_leaves() {
    let workspace = tempfile::tempdir().unwrap();
    // A loopback API of one operation, described in a file beside the configuration.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/hello",
        axum::routing::get(|| async {
            axum::http::Response::builder()
                .header("content-type", "application/json")
                .body(axum::body::Body::from(r#"{"greeting":"hi"}"#))
                .unwrap()
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let spec = json!({ "openapi": "3.0.3", "info": { "title": "Hello", "version": "1" }, "paths": { "/hello": { "get": {
        "operationId": "hello", "summary": "Say hello",
        "responses": { "200": { "description": "a greeting", "content": { "application/json": { "schema": {
            "type": "object", "properties": { "greeting": { "type": "string" } } } } } } } } } } });
    std::fs::write(workspace.path().join("hello.json"), spec.to_string()).unwrap();
    let client = start(workspace.path(), ALLOW_SERVERS).await;
    let probe = "return typeof tools.api__hello__hello";
    assert_eq!(text(&exec(&client, probe).await), "undefined");

    let fixture = fixture_mcp_server();
    let with_api = json!({
        "mcpServers": {
            "fx": {"command": fixture, "env": {"FIXTURE_CANCEL_LOG": workspace.path().join("cancel.log")}},
            "evil": {"command": fixture, "args": ["--hostile"]},
        },
        "apis": { "hello": { "spec": "hello.json", "baseUrl": base } },
    });
    std::fs::write(workspace.path().join("servers.json"), with_api.to_string()).unwrap();
    let mut seen = String::new();
    for _ in 0..100 {
        seen = text(&exec(&client, probe).await);
        if seen == "function" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, "function", "the API's operation joined the pool");
    let greeted = exec(&client, "return await tools.api__hello__hello({})").await;
    assert_eq!(greeted.structured_content, Some(json!({ "greeting": "hi" })), "{}", text(&greeted));

    let mut without = with_api.clone();
    without.as_object_mut().unwrap().remove("apis");
    std::fs::write(workspace.path().join("servers.json"), without.to_string()).unwrap();
    for _ in 0..100 {
        seen = text(&exec(&client, probe).await);
        if seen == "undefined" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, "undefined", "the API's operations left the pool with its entry");
    // The servers of the file ran on through both changes.
    assert_eq!(text(&exec(&client, "return (await tools.mcp__fx__echo({ n: 2 })).n").await), "2");
}

#[tokio::test]
async fn a_scripts_fetch_through_serve_reaches_only_the_hosts_its_rules_allow() {
    let workspace = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route("/ping", axum::routing::get(|| async { "pong" }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    std::fs::write(workspace.path().join("web.json"), json!({ "webFetchPrivateHosts": ["127.0.0.1", "localhost"] }).to_string())
        .unwrap();
    let mut extra = ALLOW_SERVERS.to_vec();
    extra.extend(["--settings", "web.json", "--allow", "WebFetch(domain:127.0.0.1)"]);
    let client = start(workspace.path(), &extra).await;
    let code = format!(
        "const ok = await (await fetch('http://127.0.0.1:{port}/ping')).text();
         let other; try {{ await fetch('http://localhost:{port}/ping') }} catch (e) {{ other = e.message }}
         return {{ ok, other }}"
    );
    let result = exec(&client, &code).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let value = result.structured_content.unwrap();
    assert_eq!(value["ok"], "pong");
    // `serve` asks its client, and this client declares no elicitation: the host not named is refused.
    assert!(value["other"].as_str().unwrap().contains("WebFetch(domain:localhost)"), "{value}");
}
