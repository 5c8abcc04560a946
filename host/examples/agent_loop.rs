//! An agent loop around a [`Session`], with a scripted model instead of a network call.
//!
//! Each turn the loop prepares the request (declarations, and the announcement appended to
//! the history), "sends" it to the model, runs the tool calls the model answers with, and
//! appends their results. The model here is a script of two answers: first an `Exec` call
//! whose script searches the pool, calls a tool of the published MCP server
//! `@modelcontextprotocol/server-everything` and the workspace tools; then a final text.
//! The whole transcript is printed as the Anthropic Messages request the last turn sends.
//! The session starts in the `default` permission mode, so the MCP call asks: an approver
//! stands in for the user and allows it once.
//!
//! ```text
//! scripts/install-test-servers      # once: the published MCP server, pinned
//! cargo run --release -p exec-host --example agent_loop
//! ```

use std::path::{Path, PathBuf};

use exec_host::mcp::{McpConfig, ServerConfig};
use exec_host::tool_results_message;
use exec_host::{
    Approval, ApprovalRequest, Approver, BoxFuture, CancellationToken, ContentBlock, Message, Origin, Prepared, Provider, Role,
    Session, ToolCall, json, serde_json,
};

/// The model's script for its first turn: find a tool it has only seen named, read its call
/// form, call it, and use the workspace tools, in one Exec.
const SCRIPT: &str = r#"
const { matches } = await tools.ToolSearch({ query: "sum" });
const sum = matches.find((m) => m.name.endsWith("get-sum"));
console.log(sum.signature.split("\n")[0]);
const added = await tools[sum.name]({ a: 2, b: 40 });
const notes = await tools.glob({ pattern: "notes/*.md" });
const files = await Promise.all(notes.matches.map((path) => tools.read_file({ path })));
const todos = files.flatMap((f) => f.content.split("\n").filter((line) => line.includes("TODO:")));
return { added, notes: notes.matches.length, todos: todos.length };
"#;

/// A stand-in for a model API: answers each request from a script, and checks that the
/// request is what a real model would need.
fn model(turn: usize, prepared: &Prepared, history: &[Message]) -> Message {
    match turn {
        0 => {
            assert!(prepared.declarations.iter().any(|d| d.name == "Exec"), "Exec is declared");
            assert!(history.last().is_some_and(Message::is_meta), "the announcement was appended in this very request");
            Message::new(
                Role::Assistant,
                vec![
                    ContentBlock::text("I'll look it up in one script."),
                    ContentBlock::tool_use("toolu_01", "Exec", json!({ "code": SCRIPT })),
                ],
            )
        }
        _ => Message::assistant("2 + 40 is 42, and your notes hold 4 open items."),
    }
}

/// The user, asked before a call that is not read-only: allows the `everything` server's
/// tools once, and nothing else.
struct User;

impl Approver for User {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        let from = match &request.origin {
            Origin::Nested { exec_call_id, call } => format!("call {call} of the script of {exec_call_id}"),
            _ => "the model".to_string(),
        };
        eprintln!("asked: may {from} call {} with {}? ({})", request.tool, request.input, request.why);
        let answer = if request.tool.starts_with("mcp__everything__") {
            Approval::AllowOnce
        } else {
            Approval::Deny { reason: "the user said no".into() }
        };
        Box::pin(std::future::ready(answer))
    }
}

fn everything_server() -> Result<ServerConfig, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let entry = root.join("tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !entry.exists() {
        return Err(format!("{} is missing: run scripts/install-test-servers first", entry.display()));
    }
    Ok(ServerConfig::stdio("node", [entry.display().to_string(), "stdio".to_string()]))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace");
    let servers = McpConfig::new([("everything".to_string(), everything_server()?)].into());
    let session =
        Session::builder().workspace(workspace).mcp_servers(servers).approver(std::sync::Arc::new(User)).build().await?;
    if let Some(failure) = session.start_failures().first() {
        return Err(exec_host::error_sentence(failure).into());
    }

    let mut history = vec![Message::user("What is 2 + 40, and how many open items do my notes hold?")];
    for turn in 0.. {
        // Before each request: the declarations, and the messages to append to the history.
        let prepared = session.prepare(&history)?;
        history.extend(prepared.append.iter().cloned());
        // ... here a real loop sends Provider::Anthropic.request(&system, &prepared.declarations, &history).
        let answer = model(turn, &prepared, &history);
        let calls = ToolCall::all_in(&answer);
        history.push(answer);
        if calls.is_empty() {
            break;
        }
        let mut results = Vec::new();
        for call in calls {
            let result = session.call(call, CancellationToken::new()).await;
            if !result.ok() {
                return Err(format!("{} failed: {}", result.name, result.text()).into());
            }
            eprintln!("{}: {}", result.name, result.summary().replace('\n', ", "));
            results.push(result);
        }
        history.push(tool_results_message(&results));
    }
    // The transcript, as the request body the next turn would send.
    let prepared = session.prepare(&history)?;
    let request = Provider::Anthropic.request(&prepared.guidance, &prepared.declarations, &history);
    session.shutdown().await;
    println!("{}", serde_json::to_string_pretty(&request)?);
    Ok(())
}
