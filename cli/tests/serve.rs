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

mod common;
use common::{exec_host, fixture_mcp_server, shared_cache};

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

async fn exec(client: &Client, code: &str) -> CallToolResult {
    let params = CallToolRequestParams::new("Exec").with_arguments(json!({ "code": code }).as_object().unwrap().clone());
    tokio::time::timeout(Duration::from_secs(60), client.call_tool(params)).await.expect("in time").expect("an answer")
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
    let params = CallToolRequestParams::new("Exec")
        .with_arguments(json!({ "code": "await tools.mcp__fx__never({}); return 'done'" }).as_object().unwrap().clone());
    let handle = client
        .send_cancellable_request(ClientRequest::CallToolRequest(CallToolRequest::new(params)), PeerRequestOptions::no_options())
        .await
        .unwrap();
    let log = workspace.path().join("cancel.log");
    let started = |what: &str| std::fs::read_to_string(&log).unwrap_or_default().contains(what);
    for _ in 0..200 {
        if started("started never") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(started("started never"), "the downstream call started");
    handle.cancel(Some("the user pressed stop".into())).await.unwrap();
    for _ in 0..200 {
        if started("cancelled never") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(started("cancelled never"), "the cancellation reached the downstream server");
    // The server goes on serving.
    let result = exec(&client, "return 2").await;
    assert_eq!(result.structured_content, None);
    assert_eq!(text(&result), "2");
    client.cancel().await.unwrap();
}
