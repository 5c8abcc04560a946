//! An MCP server for the integration tests and the benchmark, written with rmcp. It offers
//! one tool per answer shape and misbehaviour the host must handle.
//!
//! ```text
//! fixture-mcp-server              serve MCP on stdin/stdout
//! fixture-mcp-server --http       serve streamable HTTP on 127.0.0.1 (a free port); the
//!                                 first line on stdout is the endpoint URL
//! fixture-mcp-server --mute       read stdin, never answer (not even `initialize`)
//! fixture-mcp-server --garbage    answer every line with text that is not JSON-RPC
//! fixture-mcp-server --fail-start write a reason to stderr and exit with status 1
//! fixture-mcp-server --linger     serve stdio, then keep running after stdin closes
//! fixture-mcp-server --hostile    speak MCP by hand, answering each tool with a different
//!                                 unreadable or abusive message (see `hostile`)
//! fixture-mcp-server --tasks      speak MCP by hand with tools that run only as tasks
//!                                 (2025-11-25), well and badly (see `tasks`)
//! ```
//!
//! With `FIXTURE_PAGES=endless` or `wide`, `tools/list` pages without end or very wide.
//! With `FIXTURE_ELICIT=1`, it also lists `ask`, which asks its client for a form (fields
//! with and without defaults) and answers with the client's action and content.
//! With `FIXTURE_PROGRESS=1`, it also lists `steps`, which reports `count` steps of progress
//! (to the call's progress token), `ms` apart, then answers.
//! With `FIXTURE_MODERN_ONLY=1`, it takes only the lifecycle of 2026-07-28 (it refuses
//! `initialize`), and `ask` (with `FIXTURE_ELICIT`) asks by answering `InputRequiredResult`.
//! With `FIXTURE_WELL_FORMED=1`, it leaves out `bad_schema`, for clients that refuse a whole
//! list for one malformed schema (a FastMCP proxy does).
//! With `FIXTURE_BIG=1`, it also lists `big`, which answers `mib` MiB of text.
//! With `FIXTURE_RESOURCES=1`, it declares resources: two text memos and a picture, listed
//! over two pages; with `FIXTURE_RESOURCES=long`, also one whose URI is 5 KiB and one whose
//! description is 5,000 characters.
//! With `FIXTURE_CANCEL_LOG=<file>` set, the `slow` and `never` tools append `started <tool>`
//! to that file when they start, and `cancelled <tool>` when the client cancels them.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, EmbeddedResource, ErrorData, JsonObject,
    ListToolsResult, PaginatedRequestParams, Resource, ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// A 1x1 PNG.
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[derive(Clone, Default)]
struct Fixture {
    /// Tools added at run time by `add_tool`.
    added: Arc<Mutex<Vec<String>>>,
    in_flight: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

fn tool(name: &str, description: &str, input: Value) -> Tool {
    let Value::Object(schema) = input else { unreachable!("fixture schemas are objects") };
    Tool::new(name.to_string(), description.to_string(), Arc::new(schema))
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

impl Fixture {
    fn tools(&self) -> Vec<Tool> {
        let ms = || object(json!({"ms": {"type": "integer", "description": "How long to take"}}), &["ms"]);
        let mut add = tool(
            "add",
            "Adds two numbers; answers with structured content and the same as text",
            object(json!({"a": {"type": "number"}, "b": {"type": "number"}}), &["a", "b"]),
        );
        add.output_schema = Some(Arc::new(as_object(object(json!({"sum": {"type": "number"}}), &["sum"]))));
        let mut pinned = tool("pinned", "A tool the server marks as always loaded", object(json!({}), &[]));
        pinned.meta = Some(rmcp::model::MetaObject(as_object(
            json!({"anthropic/alwaysLoad": true, "anthropic/searchHint": "pin keep loaded"}),
        )));
        // Every construct the signature renderer handles, so a declaration file of it can be
        // type-checked.
        let mut shapes = tool(
            "shapes",
            "Answers `{echo: args}`; its schema uses $defs, enums, tuples, unions and index signatures",
            json!({
                "type": "object",
                "$defs": {
                    "Point": {"type": "object", "description": "A point.", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]},
                    "Tree": {"type": "object", "properties": {"label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}, "required": ["label"]}
                },
                "properties": {
                    "mode": {"enum": ["fast", "safe"], "description": "Pick one:\n- `fast`: skips checks\n- `safe`: checks everything"},
                    "at": {"$ref": "#/$defs/Point"},
                    "path": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
                    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false},
                    "either": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}]},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "mixed": {"type": "object", "properties": {"known": {"type": "boolean"}}, "additionalProperties": {"type": "integer"}},
                    "tree": {"$ref": "#/$defs/Tree"},
                    "content-type": {"type": ["string", "null"]},
                    "limit": {"type": "integer", "nullable": true}
                },
                "required": ["mode", "at"]
            }),
        );
        shapes.output_schema = Some(Arc::new(as_object(object(json!({"echo": {"type": "object"}}), &["echo"]))));
        let mut bad_schema = tool("bad_schema", "Its input schema is not an object", object(json!({}), &[]));
        bad_schema.input_schema = Arc::new(as_object(json!({"type": "string"})));
        let mut tools = vec![
            tool("echo", "Answers with its arguments as structured content", json!({"type": "object"})),
            add,
            tool("greet", "Answers with text only", object(json!({"name": {"type": "string"}}), &["name"])),
            tool("lines", "Answers with two text blocks", object(json!({}), &[])),
            tool("nothing", "Answers with no content at all", object(json!({}), &[])),
            tool("picture", "Answers with an image only", object(json!({}), &[])),
            tool("captioned_picture", "Answers with a caption and an image", object(json!({}), &[])),
            tool("resources", "Answers with an embedded resource and a resource link", object(json!({}), &[])),
            tool("slow", "Answers after `ms` milliseconds", ms()),
            tool("overlap", "Sleeps `ms` and answers with the most calls it saw in flight at once", ms()),
            tool("never", "Never answers", object(json!({}), &[])),
            tool("fail", "Answers with isError", object(json!({}), &[])),
            tool("refuse", "Refuses its arguments with a JSON-RPC error", object(json!({}), &[])),
            tool(
                "add_tool",
                "Adds an echo tool named `name` and announces the change",
                object(json!({"name": {"type": "string"}}), &["name"]),
            ),
            tool("crash", "Exits the server process", object(json!({}), &[])),
            tool("noisy", "Writes to stderr and answers", object(json!({}), &[])),
            tool(
                "get-user.profile",
                "A name that is not a JavaScript identifier",
                object(json!({"id": {"type": "string"}}), &["id"]),
            ),
            pinned,
            shapes,
        ];
        if std::env::var_os("FIXTURE_WELL_FORMED").is_none() {
            tools.push(bad_schema);
        }
        for name in self.added.lock().unwrap().iter() {
            tools.push(tool(name, "Added at run time; answers with its arguments", json!({"type": "object"})));
        }
        if std::env::var_os("FIXTURE_ELICIT").is_some() {
            tools.push(tool("ask", "Asks its client for a form and answers with what came back", object(json!({}), &[])));
        }
        if std::env::var_os("FIXTURE_BIG").is_some() {
            tools.push(tool("big", "Answers `mib` MiB of text", object(json!({"mib": {"type": "integer"}}), &["mib"])));
        }
        if std::env::var_os("FIXTURE_PROGRESS").is_some() {
            let properties = json!({"count": {"type": "integer"}, "ms": {"type": "integer"}});
            tools.push(tool(
                "steps",
                "Reports `count` steps of progress, `ms` apart, then answers",
                object(properties, &["count"]),
            ));
        }
        tools
    }

    async fn run(&self, name: &str, args: JsonObject, context: &RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        let text = |t: String| CallToolResult::success(vec![ContentBlock::text(t)]);
        Ok(match name {
            "echo" => structured(Value::Object(args)),
            "shapes" => structured(json!({"echo": args})),
            "add" => {
                let number = |key: &str| args.get(key).and_then(Value::as_f64).ok_or_else(|| not_a_number(key));
                let sum = number("a")? + number("b")?;
                let mut result = CallToolResult::success(vec![ContentBlock::text(json!({"sum": sum}).to_string())]);
                result.structured_content = Some(json!({"sum": sum}));
                result
            }
            "greet" => text(format!("hello, {}", args.get("name").and_then(Value::as_str).unwrap_or("stranger"))),
            "lines" => CallToolResult::success(vec![ContentBlock::text("first"), ContentBlock::text("second")]),
            "nothing" => CallToolResult::success(vec![]),
            "picture" => CallToolResult::success(vec![ContentBlock::image(PIXEL_PNG, "image/png")]),
            "captioned_picture" => {
                CallToolResult::success(vec![ContentBlock::text("a single pixel"), ContentBlock::image(PIXEL_PNG, "image/png")])
            }
            "resources" => {
                let contents = ResourceContents::TextResourceContents {
                    uri: "memo://today".into(),
                    mime_type: Some("text/plain".into()),
                    text: "buy milk".into(),
                    meta: None,
                };
                let mut link = Resource::new("memo://archive", "archive");
                link.description = Some("older memos".into());
                CallToolResult::success(vec![
                    ContentBlock::Resource(EmbeddedResource::new(contents)),
                    ContentBlock::ResourceLink(link),
                ])
            }
            "slow" => {
                let ms = args.get("ms").and_then(Value::as_u64).ok_or_else(|| not_a_number("ms"))?;
                self.cancellable(name, context, Duration::from_millis(ms)).await;
                text(format!("slept {ms} ms"))
            }
            "overlap" => {
                let ms = args.get("ms").and_then(Value::as_u64).ok_or_else(|| not_a_number("ms"))?;
                let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                self.peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                self.in_flight.fetch_sub(1, Ordering::SeqCst);
                structured(json!({"peak": self.peak.load(Ordering::SeqCst)}))
            }
            "never" => {
                self.cancellable(name, context, Duration::MAX).await;
                text("unreachable".into())
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("the fixture failed on purpose")]),
            "refuse" => return Err(ErrorData::invalid_params("`x` must be a number", None)),
            "add_tool" => {
                let added = args.get("name").and_then(Value::as_str).unwrap_or("added").to_string();
                self.added.lock().unwrap().push(added.clone());
                let _ = context.peer.notify_tool_list_changed().await;
                text(format!("added {added}"))
            }
            "crash" => {
                eprintln!("fixture: crashing on purpose");
                std::process::exit(3);
            }
            "noisy" => {
                eprintln!("fixture: a line only the log may see");
                text("done".into())
            }
            "get-user.profile" => structured(json!({"id": args.get("id").cloned().unwrap_or(Value::Null), "name": "Ada"})),
            "pinned" => text("pinned".into()),
            "ask" => {
                let params: rmcp::model::ElicitRequestParams = serde_json::from_value(json!({
                    "mode": "form",
                    "message": "Who is asking?",
                    "requestedSchema": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string", "description": "Your name", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                        "verified": {"type": "boolean", "default": true},
                        "nickname": {"type": "string"}}}
                }))
                .expect("a valid elicitation");
                match context.peer.create_elicitation(params).await {
                    Ok(answer) => structured(json!({"action": answer.action, "content": answer.content})),
                    Err(error) => text(format!("the elicitation failed: {error}")),
                }
            }
            "big" => {
                let mib = args.get("mib").and_then(Value::as_u64).ok_or_else(|| not_a_number("mib"))?;
                text("x".repeat((mib as usize) << 20))
            }
            "steps" => {
                let count = args.get("count").and_then(Value::as_u64).ok_or_else(|| not_a_number("count"))?;
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                let token = context.meta.get_progress_token();
                for step in 1..=count {
                    if let Some(token) = &token {
                        let progress = rmcp::model::ProgressNotificationParam::new(token.clone(), step as f64)
                            .with_total(count as f64)
                            .with_message(format!("step {step}"));
                        let _ = context.peer.notify_progress(progress).await;
                    }
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                structured(json!({"steps": count}))
            }
            other if self.added.lock().unwrap().iter().any(|n| n == other) => structured(Value::Object(args)),
            other => return Err(ErrorData::invalid_params(format!("no tool named {other}"), None)),
        })
    }

    /// Waits `duration` unless the client cancels the call first. Both the start and a
    /// cancellation are written down.
    async fn cancellable(&self, name: &str, context: &RequestContext<RoleServer>, duration: Duration) {
        note(&format!("started {name}"));
        let sleep =
            async { if duration == Duration::MAX { std::future::pending().await } else { tokio::time::sleep(duration).await } };
        tokio::select! {
            _ = sleep => {}
            _ = context.ct.cancelled() => {
                note(&format!("cancelled {name}"));
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Appends a line to the file named by `FIXTURE_CANCEL_LOG`, when it is set.
fn note(line: &str) {
    if let Ok(file) = std::env::var("FIXTURE_CANCEL_LOG") {
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(file).expect("cancel log opens");
        writeln!(log, "{line}").expect("cancel log is writable");
    }
}

fn as_object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("fixture schemas are objects"),
    }
}

fn structured(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result
}

fn not_a_number(key: &str) -> ErrorData {
    ErrorData::invalid_params(format!("`{key}` must be a number"), None)
}

impl ServerHandler for Fixture {
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        match std::env::var_os("FIXTURE_MODERN_ONLY") {
            Some(_) => std::borrow::Cow::Owned(vec![rmcp::model::ProtocolVersion::V_2026_07_28]),
            None => std::borrow::Cow::Borrowed(rmcp::model::ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed();
        match std::env::var_os("FIXTURE_RESOURCES") {
            Some(_) => ServerConfig::new(capabilities.enable_resources().build()),
            None => ServerConfig::new(capabilities.build()),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        let second_page = request.and_then(|r| r.cursor).is_some();
        let resources = match second_page {
            false => vec![
                Resource::new("memo://today", "today").with_description("today's memo").with_mime_type("text/plain"),
                Resource::new("memo://archive", "archive").with_title("Archive"),
            ],
            true => vec![Resource::new("pixel://one", "pixel").with_mime_type("image/png")],
        };
        let mut resources = resources;
        if std::env::var("FIXTURE_RESOURCES").as_deref() == Ok("long") && !second_page {
            resources.push(Resource::new(format!("memo://{}", "u".repeat(5 * 1024)), "long uri"));
            resources.push(Resource::new("memo://wordy", "wordy").with_description("w".repeat(5_000)));
        }
        let mut result = rmcp::model::ListResourcesResult::with_all_items(resources);
        result.next_cursor = (!second_page).then(|| "2".to_string());
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let text = |text: &str| ResourceContents::TextResourceContents {
            uri: request.uri.clone(),
            mime_type: Some("text/plain".into()),
            text: text.into(),
            meta: None,
        };
        let contents = match request.uri.as_str() {
            "memo://today" => text("buy milk"),
            "memo://archive" => text("sold the car"),
            "pixel://one" => ResourceContents::BlobResourceContents {
                uri: request.uri.clone(),
                mime_type: Some("image/png".into()),
                blob: PIXEL_PNG.into(),
                meta: None,
            },
            other => return Err(ErrorData::resource_not_found(format!("no resource {other}"), None)),
        };
        Ok(rmcp::model::ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // FIXTURE_PAGES=endless: pages of 5 tools whose cursor never ends; =wide: pages of
        // 2,000 tools, ending after 20 pages.
        let (per_page, pages) = match std::env::var("FIXTURE_PAGES").as_deref() {
            Ok("endless") => (5, usize::MAX),
            Ok("wide") => (2_000, 20),
            _ => return Ok(ListToolsResult::with_all_items(self.tools())),
        };
        let page: usize = request.and_then(|r| r.cursor).and_then(|c| c.parse().ok()).unwrap_or(0);
        let tools = (0..per_page).map(|i| tool(&format!("p{page}_{i}"), "A paged tool", json!({"type": "object"}))).collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = (page + 1 < pages).then(|| (page + 1).to_string());
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "ask" && std::env::var_os("FIXTURE_MODERN_ONLY").is_some() {
            return Ok(ask_by_round(request));
        }
        let args = request.arguments.unwrap_or_default();
        self.run(&request.name, args, &context).await.map(CallToolResponse::from)
    }
}

/// `ask` on 2026-07-28: a first call answers `InputRequiredResult` (a form, and a state);
/// the call sent again with the answer gets the action, the content and the state back.
fn ask_by_round(request: CallToolRequestParams) -> CallToolResponse {
    let Some(answers) = request.input_responses else {
        let params: rmcp::model::ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "Which colour?",
            "requestedSchema": {"type": "object", "properties": {"colour": {"type": "string", "default": "blue"}}}
        }))
        .expect("a valid elicitation");
        let asked = rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(params));
        let requests = std::collections::BTreeMap::from([("colour".to_string(), asked)]);
        return CallToolResponse::InputRequired(rmcp::model::InputRequiredResult::new(Some(requests), Some("round-1".into())));
    };
    let answer = answers.get("colour").cloned().unwrap_or(Value::Null);
    CallToolResponse::from(structured(json!({"answer": answer, "state": request.request_state})))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "" => {
            let service = Fixture::default().serve(rmcp::transport::stdio()).await?;
            service.waiting().await?;
        }
        "--http" => serve_http().await?,
        "--linger" => {
            let service = Fixture::default().serve(rmcp::transport::stdio()).await?;
            service.waiting().await?;
            std::future::pending::<()>().await;
        }
        "--mute" => {
            let mut sink = tokio::io::sink();
            tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await?;
        }
        "--garbage" => {
            use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
            let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
            let mut stdout = tokio::io::stdout();
            while lines.next_line().await?.is_some() {
                stdout.write_all(b"this is not JSON-RPC\n").await?;
                stdout.flush().await?;
            }
        }
        "--hostile" => hostile()?,
        "--tasks" => tasks()?,
        "--fail-start" => {
            eprintln!("fixture: cannot open its database");
            std::process::exit(1);
        }
        other => anyhow::bail!("unknown mode {other:?}"),
    }
    Ok(())
}

/// Serves streamable HTTP until stdin closes (so the server ends with the test that
/// started it).
async fn serve_http() -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

    let fixture = Fixture::default();
    let service = StreamableHttpService::new(
        move || Ok(fixture.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    std::io::stdout().flush()?;
    let stdin_closed = async {
        let mut sink = tokio::io::sink();
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await;
    };
    axum::serve(listener, router).with_graceful_shutdown(stdin_closed).await?;
    Ok(())
}

/// The tools of `--hostile`, and what each answers.
const HOSTILE_TOOLS: &[&str] = &[
    "fine",           // a good answer, to show the connection still works
    "oversize",       // 17 MiB of text, the id first
    "oversize_late",  // 17 MiB of text, the id last
    "flood",          // 200 MiB of text on one line, the id first, written 1 MiB at a time
    "invalid_utf8",   // a byte that is not UTF-8 inside a string
    "lone_surrogate", // `\udc00` alone
    "deep",           // a result nested 100,000 deep
    "not_a_result",   // well-formed JSON that is no tool result
    "noise_first",    // a line that is not JSON, then a good answer
    "storm",          // 10,000 `tools/list_changed` notifications, then a good answer
    "crash",          // exits without answering
    "stall",          // stops reading for 2 s, then answers
    "received",       // how many `fine` calls it has read
    "hang",           // never answers
    "wrong_id",       // answers with an id nobody asked for
];

/// A server written by hand, so it can send what rmcp would never write. Its `tools/list`
/// also carries an entry whose schema is not an object and one that has no name.
fn hostile() -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut fine_calls = 0;
    for request in requests() {
        let (id, request) = request?;
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        let text = |text: &str| json!({"content": [{"type": "text", "text": text}]});
        match request["method"].as_str().unwrap_or_default() {
            "initialize" => {
                let version = request["params"]["protocolVersion"].clone();
                let result = json!({"protocolVersion": version, "capabilities": {"tools": {"listChanged": true}}, "serverInfo": {"name": "hostile", "version": "1"}});
                writeln!(out, "{}", answer(result))?;
            }
            "tools/list" => {
                let mut tools: Vec<Value> =
                    HOSTILE_TOOLS.iter().map(|name| json!({"name": name, "inputSchema": {"type": "object"}})).collect();
                tools.push(json!({"name": "bad_schema", "inputSchema": "not an object"}));
                // Names a permission rule would read as syntax: `mcp__evil__*` is the whole
                // server's rule, parentheses a specifier.
                tools.push(json!({"name": "*", "inputSchema": {"type": "object"}}));
                tools.push(json!({"name": "a(b)", "inputSchema": {"type": "object"}}));
                tools.push(json!({"inputSchema": {"type": "object"}}));
                writeln!(out, "{}", answer(json!({"tools": tools})))?;
            }
            "tools/call" => {
                let id = id.to_string();
                let huge = "x".repeat(17 << 20);
                match request["params"]["name"].as_str().unwrap_or_default() {
                    "oversize" => writeln!(
                        out,
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{huge}"}}]}}}}"#
                    )?,
                    "oversize_late" => writeln!(
                        out,
                        r#"{{"jsonrpc":"2.0","result":{{"content":[{{"type":"text","text":"{huge}"}}]}},"id":{id}}}"#
                    )?,
                    // Never held whole: a suite measures the host's memory with its reaped
                    // children's, this server's included.
                    "flood" => {
                        write!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#)?;
                        let chunk = &huge.as_bytes()[..1 << 20];
                        for _ in 0..200 {
                            out.write_all(chunk)?;
                        }
                        writeln!(out, r#""}}]}}}}"#)?;
                    }
                    "invalid_utf8" => {
                        out.write_all(
                            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#).as_bytes(),
                        )?;
                        out.write_all(b"\xff\xfe\"}]}}\n")?;
                    }
                    "lone_surrogate" => writeln!(
                        out,
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"\udc00"}}]}}}}"#
                    )?,
                    "deep" => writeln!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#, "[".repeat(100_000))?,
                    "not_a_result" => writeln!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":5}}}}"#)?,
                    "noise_first" => {
                        writeln!(out, "starting up...")?;
                        writeln!(out, "{}", answer(text("after the noise")))?;
                    }
                    "storm" => {
                        for _ in 0..10_000 {
                            writeln!(out, r#"{{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}}"#)?;
                        }
                        writeln!(out, "{}", answer(text("after the storm")))?;
                    }
                    "crash" => std::process::exit(3),
                    "stall" => {
                        std::thread::sleep(std::time::Duration::from_secs(2));
                        writeln!(out, "{}", answer(text("stalled")))?;
                    }
                    "received" => writeln!(out, "{}", answer(text(&fine_calls.to_string())))?,
                    "hang" => {}
                    "wrong_id" => writeln!(out, r#"{{"jsonrpc":"2.0","id":"not-{id}","result":{{"content":[]}}}}"#)?,
                    _ => {
                        fine_calls += 1;
                        writeln!(out, "{}", answer(text("fine")))?;
                    }
                }
            }
            _ => writeln!(out, "{}", json!({"jsonrpc": "2.0", "id": id, "result": {}}))?,
        }
        out.flush()?;
    }
    Ok(())
}

/// Tools that run only as tasks: `research` works through three status messages and
/// answers; `endless` works forever (its cancellation is written to `FIXTURE_CANCEL_LOG`);
/// `bad_id` creates a task whose id is past any bound.
fn tasks() -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // Polls of each task so far.
    let mut polls: std::collections::HashMap<String, usize> = Default::default();
    for request in requests() {
        let (id, request) = request?;
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        let task_id = request["params"]["taskId"].as_str().unwrap_or_default().to_string();
        let task = |task_id: &str, status: &str, message: &str| {
            json!({"taskId": task_id, "status": status, "statusMessage": message, "createdAt": "2026-01-01T00:00:00Z",
                   "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 60000, "pollInterval": 50})
        };
        let reply = match request["method"].as_str().unwrap_or_default() {
            "initialize" => answer(json!({"protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}, "cancel": {}}},
                "serverInfo": {"name": "tasks", "version": "1"}})),
            "tools/list" => {
                let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}});
                answer(json!({"tools": [tool("research"), tool("endless"), tool("bad_id")]}))
            }
            "tools/call" if request["params"].get("task").is_none() => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Tool requires task augmentation (taskSupport: 'required')"}})
            .to_string(),
            "tools/call" => match request["params"]["name"].as_str().unwrap_or_default() {
                "bad_id" => answer(json!({"task": task(&"x".repeat(100_000), "working", "")})),
                name => {
                    note(&format!("started {name}"));
                    answer(json!({"task": task(name, "working", "starting")}))
                }
            },
            "tasks/get" => {
                let count = polls.entry(task_id.clone()).or_default();
                *count += 1;
                let stages = ["reading", "thinking", "writing"];
                match (task_id.as_str(), stages.get(*count - 1)) {
                    ("research", Some(stage)) => answer(task(&task_id, "working", stage)),
                    ("research", None) => answer(task(&task_id, "completed", "done")),
                    _ => answer(task(&task_id, "working", "still going")),
                }
            }
            "tasks/result" => answer(json!({"content": [{"type": "text", "text": format!("{task_id} is done")}]})),
            "tasks/cancel" => {
                note(&format!("cancelled {task_id}"));
                answer(task(&task_id, "cancelled", "cancelled"))
            }
            _ => answer(json!({})),
        };
        writeln!(out, "{reply}")?;
        out.flush()?;
    }
    Ok(())
}

/// The requests read from stdin by hand, each with its id; lines that are not JSON, and
/// notifications, are skipped.
fn requests() -> impl Iterator<Item = std::io::Result<(Value, Value)>> {
    use std::io::BufRead;
    std::io::stdin().lock().lines().filter_map(|line| {
        let request: Value = match line {
            Ok(line) => serde_json::from_str(&line).ok()?,
            Err(error) => return Some(Err(error)),
        };
        Some(Ok((request.get("id").cloned()?, request)))
    })
}
