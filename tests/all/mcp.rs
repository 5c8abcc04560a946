//! MCP servers as tool sources, against real servers: the rmcp fixture server of this crate
//! (over stdio and streamable HTTP) and the published `@modelcontextprotocol/server-everything`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use exec_host::mcp::{McpConfig, ServerConfig, ServerState};
use exec_host::{CallOptions, CancellationToken, Failure, Limits, Stage};
use exec_host_tests::{Harness, within};
use serde_json::json;

pub(crate) const FIXTURE: &str = env!("CARGO_BIN_EXE_fixture-mcp-server");

pub(crate) fn stdio(command: &str, args: &[&str]) -> ServerConfig {
    ServerConfig::stdio(command, args.iter().map(|a| a.to_string()))
}

pub(crate) fn fixture() -> ServerConfig {
    stdio(FIXTURE, &[])
}

/// A fixture server whose cancelled calls are written to `log`.
fn fixture_logging_cancellations(log: &Path) -> ServerConfig {
    fixture().with_env("FIXTURE_CANCEL_LOG", log.display().to_string())
}

/// The fixture server over streamable HTTP, in a child process that ends with this value.
struct HttpFixture {
    _child: tokio::process::Child,
    url: String,
}

impl HttpFixture {
    async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// The fixture with `env` set.
    async fn start_with(env: &[(&str, &str)]) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(FIXTURE)
            .arg("--http")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the fixture server starts");
        let stdout = child.stdout.take().unwrap();
        let url = tokio::io::BufReader::new(stdout).lines().next_line().await.unwrap().expect("the fixture prints its URL");
        HttpFixture { _child: child, url }
    }

    fn config(&self) -> ServerConfig {
        ServerConfig::http(self.url.clone())
    }
}

/// A harness (builtin and fixture tools) with MCP servers added to its session.
pub(crate) async fn harness_with(servers: &[(&str, ServerConfig)]) -> Harness {
    harness_with_limits(servers, Limits::default()).await
}

pub(crate) async fn harness_with_limits(servers: &[(&str, ServerConfig)], limits: Limits) -> Harness {
    let harness = Harness::with(|builder| builder.limits(limits).mcp_connect_timeout(Duration::from_secs(20))).await;
    for (name, config) in servers {
        harness.session.add_server(name, config.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    }
    harness
}

/// Whether tool `name` is available to the session now.
fn available(harness: &Harness, name: &str) -> bool {
    harness.session.pool().unwrap().is_available(name)
}

/// Waits until `condition` holds (state that changes in the background), at most 10 s.
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..200 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("waited 10 s for {what}");
}

#[tokio::test]
async fn a_script_receives_structured_content_else_text_else_null_never_an_envelope() {
    let harness = harness_with(&[("fx", fixture())]).await;
    let outcome = harness
        .run(
            r#"
            return {
              structured: await tools.mcp__fx__add({a: 1, b: 2}),
              text: await tools.mcp__fx__greet({name: "Ada"}),
              joined: await tools.mcp__fx__lines({}),
              nothing: await tools.mcp__fx__nothing({}),
              picture: await tools.mcp__fx__picture({}),
              caption: await tools.mcp__fx__captioned_picture({}),
              resources: await tools.mcp__fx__resources({}),
              profile: await tools["mcp__fx__get-user.profile"]({id: "u1"}),
            }"#,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(
        outcome.value().unwrap(),
        &json!({
            "structured": {"sum": 3},
            "text": "hello, Ada",
            "joined": "first\nsecond",
            "nothing": null,
            "picture": null,
            "caption": "a single pixel",
            "resources": "[resource memo://today (text/plain)]\nbuy milk\n[resource link memo://archive: archive - older memos]",
            "profile": {"id": "u1", "name": "Ada"},
        })
    );
    assert_eq!(outcome.client.images.len(), 2, "both images are attachments of the result");
    assert_eq!(outcome.client.images[0].mime_type, "image/png");
}

#[tokio::test]
async fn images_are_capped_by_the_image_limit() {
    let harness = harness_with_limits(&[("fx", fixture())], Limits::default().with_max_images(1)).await;
    let outcome = harness.run("for (let i = 0; i < 3; i++) await tools.mcp__fx__picture({}); return 'ok'").await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(outcome.client.images.len(), 1);
    assert!(outcome.text().ends_with("[2 more image(s) were dropped: an Exec result carries at most 1]"), "{}", outcome.text());
}

#[tokio::test]
async fn errors_reject_with_the_servers_text_and_their_stage() {
    let harness = harness_with(&[("fx", fixture())]).await;
    let outcome = harness
        .run(
            r#"
            const messages = [];
            for (const call of [() => tools.mcp__fx__fail({}), () => tools.mcp__fx__refuse({}), () => tools.mcp__fx__add({a: "x"})]) {
              try { await call(); } catch (e) { messages.push(e.message); }
            }
            return messages"#,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let messages = outcome.value().unwrap().as_array().unwrap();
    // The server's own text, after the name of the tool that failed.
    assert_eq!(messages[0], "mcp__fx__fail: the fixture failed on purpose");
    assert_eq!(messages[1], "mcp__fx__refuse: MCP server `fx` refused the arguments of `refuse`: `x` must be a number");
    assert_eq!(messages[2], "mcp__fx__add: MCP server `fx` refused the arguments of `add`: `a` must be a number");

    let flat = Harness::flat().await;
    flat.session.add_server("fx", fixture()).await.unwrap();
    let direct = |name: &'static str| {
        let flat = &flat;
        async move { flat.call(name, json!({})).await.failure().unwrap().stage }
    };
    assert_eq!(direct("mcp__fx__fail").await, Stage::Execution);
    assert_eq!(direct("mcp__fx__refuse").await, Stage::Params);
    assert_eq!(direct("mcp__fx__missing").await, Stage::Discovery);
}

#[tokio::test]
async fn tools_carry_their_names_meta_and_schemas_and_invalid_ones_are_skipped() {
    let harness = Harness::new().await;
    let connected = harness.session.add_server("fx", fixture()).await.unwrap();
    assert_eq!(connected.skipped.len(), 1);
    assert_eq!(connected.skipped[0].name, "bad_schema");
    assert!(connected.skipped[0].reason.contains("top level is an object"), "{}", connected.skipped[0].reason);

    let definitions = harness.available();
    let find = |name: &str| definitions.iter().find(|d| d.name == name);
    assert!(find("mcp__fx__bad_schema").is_none());
    let pinned = find("mcp__fx__pinned").unwrap();
    assert!(pinned.always_load);
    assert_eq!(pinned.search_hint.as_deref(), Some("pin keep loaded"));
    let add = find("mcp__fx__add").unwrap();
    assert!(!add.always_load && add.output_schema.is_some());
    assert_eq!(add.source, exec_host::ToolSource::Mcp { server: "fx".into() });
    assert!(find("mcp__fx__get-user.profile").is_some());

    // The server's own flag marks every one of its tools.
    let harness = Harness::new().await;
    harness.session.add_server("fx", fixture().always_load(true)).await.unwrap();
    assert!(harness.available().iter().filter(|d| d.name.starts_with("mcp__fx__")).all(|d| d.always_load));
}

#[tokio::test]
async fn one_script_chains_calls_across_a_stdio_and_an_http_server() {
    let http = HttpFixture::start().await;
    let harness = harness_with(&[("local", fixture()), ("remote", http.config())]).await;
    let outcome = harness
        .run(
            r#"
            const { sum } = await tools.mcp__local__add({a: 20, b: 22});
            const echoed = await tools.mcp__remote__echo({sum, from: "local"});
            const added = await tools.mcp__remote__add({a: echoed.sum, b: 0.5});
            return [echoed, added]"#,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(outcome.value().unwrap(), &json!([{"sum": 42, "from": "local"}, {"sum": 42.5}]));
    assert_eq!(outcome.call_names(), ["mcp__local__add", "mcp__remote__echo", "mcp__remote__add"]);
}

#[tokio::test]
async fn concurrent_calls_to_one_server_overlap() {
    let http = HttpFixture::start().await;
    let harness = harness_with(&[("stdio", fixture()), ("http", http.config())]).await;
    for server in ["stdio", "http"] {
        let code = format!(
            "const r = await Promise.all([1, 2, 3, 4, 5].map(() => tools.mcp__{server}__overlap({{ms: 400}})));
             return Math.max(...r.map(x => x.peak))"
        );
        let outcome = harness.run(&code).await;
        assert!(outcome.ok(), "{}", outcome.text());
        assert_eq!(outcome.value().unwrap(), &json!(5), "{server}: the five calls were not in flight together");
    }
}

#[tokio::test]
async fn a_changed_tool_list_is_reachable_in_the_next_exec() {
    let harness = harness_with(&[("fx", fixture())]).await;
    let outcome = harness.run("return await tools.mcp__fx__add_tool({name: 'late'})").await;
    assert!(outcome.ok(), "{}", outcome.text());
    eventually("the new tool to be listed", || available(&harness, "mcp__fx__late")).await;
    let outcome = harness.run("return await tools.mcp__fx__late({x: 1})").await;
    assert_eq!(outcome.value(), Some(&json!({"x": 1})), "{}", outcome.text());
}

#[tokio::test]
async fn a_server_that_exits_fails_its_calls_in_flight_and_leaves_the_reachable_set() {
    let harness = harness_with(&[("fx", fixture()), ("other", fixture())]).await;
    let outcome = harness
        .run(
            r#"
            const slow = tools.mcp__fx__slow({ms: 30000}).catch(e => e.message);
            const crash = tools.mcp__fx__crash({}).catch(e => e.message);
            return [await slow, await crash]"#,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(
        outcome.value().unwrap(),
        &json!([
            "mcp__fx__slow: MCP server `fx` disconnected before answering `slow`",
            "mcp__fx__crash: MCP server `fx` disconnected before answering `crash`"
        ])
    );
    eventually("the server's tools to leave", || !harness.available().iter().any(|d| d.name.starts_with("mcp__fx__"))).await;
    assert!(matches!(&harness.session.server_states()[0], (name, ServerState::Disconnected { .. }) if name == "fx"));

    let outcome = harness.run("return await tools.mcp__fx__echo({})").await;
    assert!(outcome.text().contains("MCP server `fx` disconnected ("), "{}", outcome.text());
    assert!(outcome.text().contains("and its tools left the catalogue"), "{}", outcome.text());
    let outcome = harness.run("return await tools.mcp__other__greet({name: 'still here'})").await;
    assert_eq!(outcome.value(), Some(&json!("hello, still here")), "the other server is unaffected");

    // A server that left may be added again.
    harness.session.add_server("fx", fixture()).await.unwrap();
    assert_eq!(harness.run("return await tools.mcp__fx__nothing({})").await.value(), Some(&json!(null)));
}

#[tokio::test]
async fn servers_added_and_removed_at_run_time_are_reachable_exactly_while_connected() {
    let harness = harness_with(&[]).await;
    // The reachable set is the pool of the moment an Exec starts: a server that connects
    // while a script waits is not reachable from that script, only from the next one.
    let call_late = "return await tools.mcp__late__greet({name: 'x'})";
    let outcome = harness
        .run_while(2, call_late, || async {
            harness.session.add_server("late", fixture()).await.unwrap();
        })
        .await;
    assert!(outcome.text().contains("`mcp__late__greet` is not reachable from this script"), "{}", outcome.text());
    assert_eq!(harness.run("return await tools.mcp__late__greet({name: 'x'})").await.value(), Some(&json!("hello, x")));
    // Removed while a script waits: the funnel no longer finds the tool.
    let outcome = harness.run_while(4, call_late, || async { assert!(harness.session.remove_server("late").await) }).await;
    assert!(outcome.text().contains("MCP server `late` is not connected or does not offer `greet` now"), "{}", outcome.text());
    assert!(!harness.session.remove_server("late").await);
    let refused = harness.session.add_server("bad__name", fixture()).await.unwrap_err();
    assert!(exec_host::error_sentence(&refused).contains("ambiguous"), "{refused:?}");
}

#[tokio::test]
async fn an_aborted_exec_cancels_its_mcp_requests() {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("cancelled");
    let harness = harness_with(&[("fx", fixture_logging_cancellations(&log))]).await;
    let code = "await Promise.all([tools.mcp__fx__slow({ms: 60000}), tools.mcp__fx__never({})])";
    // Abort once the server is running both calls, however long getting there took.
    let abort = CancellationToken::new();
    let trigger = abort.clone();
    let started = log.clone();
    tokio::spawn(async move {
        eventually("the server to start both calls", || {
            let text = std::fs::read_to_string(&started).unwrap_or_default();
            text.contains("started slow") && text.contains("started never")
        })
        .await;
        trigger.cancel();
    });
    let outcome = within(30, harness.run_options(code, CallOptions::new(abort))).await;
    assert!(matches!(outcome.exec_failure(), Some(Failure::Aborted)), "{}", outcome.text());
    eventually("the server to see both cancellations", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.contains("cancelled slow") && text.contains("cancelled never")
    })
    .await;
}

#[tokio::test]
async fn a_call_that_never_returns_ends_with_the_nested_wait_cap() {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("cancelled");
    let limits = Limits::default().with_max_nested_wait(Some(Duration::from_millis(1000)));
    let harness = harness_with_limits(&[("fx", fixture_logging_cancellations(&log))], limits).await;
    let outcome = within(30, harness.run("await tools.mcp__fx__never({})")).await;
    assert!(matches!(outcome.exec_failure(), Some(Failure::NestedWaitExceeded { .. })), "{}", outcome.text());
    eventually("the server to see the cancellation", || {
        std::fs::read_to_string(&log).unwrap_or_default().contains("cancelled never")
    })
    .await;
}

#[tokio::test]
async fn servers_that_cannot_start_are_reported_once_each_and_the_others_work() {
    let missing_cwd = stdio(FIXTURE, &[]).with_cwd("/no/such/dir");
    let config = McpConfig::new(
        [
            ("good".to_string(), fixture()),
            ("missing".to_string(), stdio("no-such-mcp-server-command", &[])),
            ("exits".to_string(), stdio(FIXTURE, &["--fail-start"])),
            ("mute".to_string(), stdio(FIXTURE, &["--mute"])),
            ("garbage".to_string(), stdio(FIXTURE, &["--garbage"])),
            ("nowhere".to_string(), missing_cwd),
            ("unreachable".to_string(), ServerConfig::http("http://127.0.0.1:9/mcp")),
        ]
        .into(),
    );
    let configure =
        |builder: exec_host::SessionBuilder| builder.mcp_servers(config).mcp_connect_timeout(Duration::from_millis(1500));
    let harness = within(30, Harness::with(configure)).await;
    let failures = harness.session.start_failures();
    let reason = |server: &str| {
        let found: Vec<_> = failures.iter().filter(|f| f.server == server).collect();
        assert_eq!(found.len(), 1, "{server} is reported once: {failures:?}");
        exec_host::error_sentence(found[0])
    };
    assert_eq!(failures.len(), 6, "{failures:#?}");
    let missing = reason("missing");
    assert!(missing.starts_with("MCP server `missing` is not available: "), "{missing}");
    assert!(missing.contains("command `no-such-mcp-server-command` was not found"), "{missing}");
    // The causes are types an embedder can match, not only words.
    let typed = failures.iter().find(|f| f.server == "missing").map(|f| &*f.why);
    assert!(
        matches!(
            typed,
            Some(exec_host::mcp::NotStarted::Connect(exec_host::mcp::ConnectError::Spawn(exec_host::mcp::SpawnError::NotFound(
                command
            )))) if command == "no-such-mcp-server-command"
        ),
        "{typed:?}"
    );
    assert!(reason("exits").contains("cannot open its database"), "the reason quotes the server's stderr");
    assert!(reason("mute").contains("no answer to `initialize` within 1.5 s"), "{}", reason("mute"));
    let garbage = reason("garbage");
    assert!(garbage.contains("initialize") || garbage.contains("handshake"), "{garbage}");
    assert!(reason("nowhere").contains("/no/such/dir is not a directory"), "{}", reason("nowhere"));
    assert!(reason("unreachable").contains("127.0.0.1:9"), "{}", reason("unreachable"));

    let outcome = harness.run("return await tools.mcp__good__greet({name: 'ok'})").await;
    assert_eq!(outcome.value(), Some(&json!("hello, ok")), "{}", outcome.text());
    assert_eq!(harness.session.server_states().len(), 1, "nothing is left of the servers that failed");

    // A script that names an unreachable tool hears the real reason, and what is close.
    let why = |call: &'static str| {
        let harness = &harness;
        async move {
            let code = format!("try {{ await {call}; return 'ran' }} catch (e) {{ return e.message }}");
            harness.run(&code).await.value().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        }
    };
    let failed = why("tools.mcp__exits__anything({})").await;
    assert!(failed.contains("MCP server `exits` failed to start: ") && failed.contains("cannot open its database"), "{failed}");
    let missing_tool = why("tools.mcp__good__greeet({})").await;
    assert!(missing_tool.contains("MCP server `good` has no tool `greeet`. Did you mean `mcp__good__greet`?"), "{missing_tool}");
    let unknown = why("tools.mcp__nobody__greet({})").await;
    assert!(unknown.contains("no MCP server `nobody` is configured. Did you mean `mcp__good__greet`?"), "{unknown}");
    within(10, harness.session.shutdown()).await;
    assert!(harness.available().iter().all(|d| !d.name.starts_with("mcp__")));
}

/// The published reference server, installed from the npm lockfile in tests/mcp-servers.
pub(crate) fn everything_server() -> ServerConfig {
    let entry = published("@modelcontextprotocol/server-everything/dist/index.js");
    stdio("node", &[entry.to_str().unwrap(), "stdio"])
}

/// A file of a published package the tests use, installed (once per run) from the npm
/// lockfile in tests/mcp-servers when it is missing.
pub(crate) fn published(file: &str) -> PathBuf {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp-servers");
    let entry: PathBuf = dir.join("node_modules").join(file);
    INSTALL.call_once(|| {
        if !entry.exists() {
            let status = std::process::Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&dir)
                .status()
                .expect("npm runs (Node.js is needed for the tests of published packages)");
            assert!(status.success(), "`npm ci` in {} failed", dir.display());
        }
    });
    assert!(entry.exists(), "{} is missing after npm ci (run scripts/install-test-servers)", entry.display());
    entry
}

#[tokio::test]
async fn the_published_everything_server_is_reachable_from_a_script() {
    let harness = harness_with(&[("everything", everything_server())]).await;
    let names: Vec<String> = harness.available().into_iter().map(|d| d.name).collect();
    for tool in ["echo", "get-sum", "get-tiny-image", "get-structured-content"] {
        assert!(names.contains(&format!("mcp__everything__{tool}")), "{tool} is not listed: {names:?}");
    }
    let weather = harness.available().into_iter().find(|d| d.name == "mcp__everything__get-structured-content").unwrap();
    assert!(weather.output_schema.is_some(), "its outputSchema is kept for signatures");

    let outcome = harness
        .run(
            r#"
            const echo = await tools.mcp__everything__echo({message: "hi"});
            const sum = await tools["mcp__everything__get-sum"]({a: 2, b: 3});
            const image = await tools["mcp__everything__get-tiny-image"]({});
            const weather = await tools["mcp__everything__get-structured-content"]({location: "Chicago"});
            return {echo, sum, image, weather, typeofWeather: typeof weather}"#,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value["echo"], "Echo: hi");
    assert!(value["sum"].as_str().is_some_and(|s| s.contains('5')), "{value}");
    assert!(value["image"].is_string(), "the image answer's captions reach the script: {value}");
    assert_eq!(value["typeofWeather"], "object", "structured content arrives parsed");
    assert_eq!(value["weather"]["conditions"], "Light rain / drizzle");
    assert_eq!(outcome.client.images.len(), 1);
    assert_eq!(outcome.client.images[0].mime_type, "image/png");
}

#[tokio::test]
async fn an_http_server_that_goes_away_fails_its_calls_naming_it_and_leaves() {
    let http = HttpFixture::start().await;
    let harness = harness_with(&[("remote", http.config()), ("local", fixture())]).await;
    let outcome = within(60, harness.run("return await tools.mcp__remote__crash({}).catch(e => e.message)")).await;
    assert_eq!(
        outcome.value(),
        Some(&json!("mcp__remote__crash: MCP server `remote` disconnected before answering `crash`")),
        "{}",
        outcome.text()
    );
    eventually("the server's tools to leave", || !harness.available().iter().any(|d| d.name.starts_with("mcp__remote__"))).await;
    let states = harness.session.server_states();
    assert!(
        matches!(&states[1], (name, ServerState::Disconnected { reason }) if name == "remote" && reason.contains("stopped answering")),
        "{states:?}"
    );
    assert_eq!(harness.run("return await tools.mcp__local__nothing({})").await.value(), Some(&json!(null)));
}

/// Answers every input request with `name` filled in, and keeps what was asked.
struct Answering(std::sync::Mutex<Vec<exec_host::mcp::input::InputRequest>>);

impl exec_host::mcp::input::InputHandler for Answering {
    fn answer(
        &self,
        request: exec_host::mcp::input::InputRequest,
    ) -> exec_host::BoxFuture<'static, exec_host::mcp::input::InputAnswer> {
        self.0.lock().unwrap().push(request);
        let content = serde_json::Map::from_iter([("name".to_string(), json!("Ada"))]);
        Box::pin(std::future::ready(exec_host::mcp::input::InputAnswer::Accept(content)))
    }
}

#[tokio::test]
async fn a_servers_input_request_reaches_the_embedders_handler_and_its_answer_gets_the_defaults() {
    use exec_host::mcp::input::{FieldKind, InputKind};
    let handler = std::sync::Arc::new(Answering(Default::default()));
    let asking = fixture().with_env("FIXTURE_ELICIT", "1");
    let harness = Harness::with(|builder| builder.mcp_input(handler.clone())).await;
    harness.session.add_server("fx", asking.clone()).await.unwrap();
    let outcome = harness.run("return await tools.mcp__fx__ask({})").await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(
        outcome.value().unwrap(),
        &json!({"action": "accept", "content": {"name": "Ada", "age": 30, "status": "active", "verified": true}}),
        "the answer's own value wins, the defaults fill the rest, a field without a default stays out"
    );
    let asked = handler.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!((asked[0].server.as_str(), asked[0].message.as_str()), ("fx", "Who is asking?"));
    let InputKind::Form { fields, .. } = &asked[0].kind else { panic!("a form: {asked:?}") };
    let age = fields.iter().find(|field| field.name == "age").unwrap();
    assert_eq!((age.kind, age.default.clone(), age.required), (FieldKind::Integer, Some(json!(30)), false));

    // Without a handler the server is not told it may ask; one that asks anyway is declined.
    let harness = harness_with(&[("fx", asking)]).await;
    let outcome = harness.run("return await tools.mcp__fx__ask({})").await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(outcome.value().unwrap(), &json!({"action": "decline", "content": null}));
    assert_eq!(
        outcome.client.calls[0].note.as_deref(),
        Some("the server asked for input (\"Who is asking?\"), and nobody here could answer: declined"),
        "the call record says so"
    );
}

#[tokio::test]
async fn a_servers_progress_reaches_the_embedders_watcher_named_by_tool_and_call() {
    let steps = std::sync::Arc::new(std::sync::Mutex::new(Vec::<exec_host::CallProgress>::new()));
    let harness = harness_with(&[("fx", fixture().with_env("FIXTURE_PROGRESS", "1"))]).await;
    let seen = steps.clone();
    let options = CallOptions::default().on_tool_progress(move |step| seen.lock().unwrap().push(step.clone()));
    let code = "await tools.mcp__fx__echo({}); return await tools.mcp__fx__steps({ count: 3, ms: 20 })";
    let outcome = harness.run_options(code, options).await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(outcome.value().unwrap(), &json!({"steps": 3}));
    let steps = steps.lock().unwrap().clone();
    let seen: Vec<(String, Option<u32>, String)> =
        steps.iter().map(|step| (step.tool.clone(), step.call, step.step.to_string())).collect();
    let expected: Vec<(String, Option<u32>, String)> =
        (1..=3).map(|i| ("mcp__fx__steps".to_string(), Some(1), format!("{i}/3: step {i}"))).collect();
    assert_eq!(seen, expected, "each step, in order, named by the tool and its number in the record");

    // Nobody watching: the steps go nowhere, and the call is as it was.
    let outcome = harness.run("return await tools.mcp__fx__steps({ count: 2 })").await;
    assert_eq!(outcome.value().unwrap(), &json!({"steps": 2}));
}

#[tokio::test]
async fn scripts_list_and_read_the_resources_of_servers_that_offer_them_under_rules_by_server() {
    use exec_host::settings::Layer;
    let resourceful = || fixture().with_env("FIXTURE_RESOURCES", "1");
    // Only a server with resources brings the resource tools.
    let harness = harness_with(&[("plain", fixture())]).await;
    assert!(!available(&harness, "ListMcpResourcesTool") && !available(&harness, "ReadMcpResourceTool"));
    harness.session.add_server("fx", resourceful()).await.unwrap();
    harness.session.add_server("more", resourceful()).await.unwrap();
    assert!(available(&harness, "ListMcpResourcesTool") && available(&harness, "ReadMcpResourceTool"));

    let listed = harness.run("return await tools.ListMcpResourcesTool({ server: 'fx' })").await;
    assert_eq!(
        listed.value().unwrap(),
        &json!({"resources": [
            {"server": "fx", "uri": "memo://today", "name": "today", "description": "today's memo", "mimeType": "text/plain"},
            {"server": "fx", "uri": "memo://archive", "name": "archive", "title": "Archive"},
            {"server": "fx", "uri": "pixel://one", "name": "pixel", "mimeType": "image/png"}
        ]}),
        "both pages"
    );
    let every = harness.run("return (await tools.ListMcpResourcesTool({})).resources.map(r => r.server)").await;
    assert_eq!(every.value().unwrap(), &json!(["fx", "fx", "fx", "more", "more", "more"]));
    let memo = harness.run("return await tools.ReadMcpResourceTool({ server: 'fx', uri: 'memo://today' })").await;
    assert_eq!(
        memo.value().unwrap(),
        &json!({"contents": [{"uri": "memo://today", "mimeType": "text/plain", "text": "buy milk"}]})
    );
    let picture = harness.run("return await tools.ReadMcpResourceTool({ server: 'fx', uri: 'pixel://one' })").await;
    assert_eq!(picture.value().unwrap()["contents"][0]["binary"], "an image, attached for the model");
    assert_eq!(picture.client.images.len(), 1, "the image is attached");
    let refusal = |code: &str| format!("try {{ await {code}; return 'ran' }} catch (e) {{ return e.message }}");
    let missing = harness.run(&refusal("tools.ReadMcpResourceTool({ server: 'fx', uri: 'memo://nope' })")).await;
    assert!(missing.value().unwrap().as_str().unwrap().contains("no resource memo://nope"), "{}", missing.text());
    let unknown = harness.run(&refusal("tools.ListMcpResourcesTool({ server: 'plain' })")).await;
    assert_eq!(
        unknown.value().unwrap(),
        "ListMcpResourcesTool: no connected MCP server `plain` offers resources; those that do: `fx`, `more`"
    );

    // A tool's rule with a server is about that server; a whole server's rule applies too.
    let with_rules = |permissions: serde_json::Value| async move {
        let layer = Layer::from_value(json!({ "permissions": permissions })).unwrap();
        let harness =
            Harness::with(move |builder| builder.managed_settings(layer).mcp_connect_timeout(Duration::from_secs(20))).await;
        harness.session.add_server("fx", resourceful()).await.unwrap();
        harness.session.add_server("more", resourceful()).await.unwrap();
        harness
    };
    let harness = with_rules(json!({"deny": ["ListMcpResourcesTool(fx)"]})).await;
    let every = harness.run("return (await tools.ListMcpResourcesTool({})).resources.map(r => r.server)").await;
    assert_eq!(every.value().unwrap(), &json!(["more", "more", "more"]), "the denied server is left out");
    let one = harness.run(&refusal("tools.ListMcpResourcesTool({ server: 'fx' })")).await;
    assert!(
        one.value().unwrap().as_str().unwrap().contains("denied by the permissions.deny rule `ListMcpResourcesTool(fx)`"),
        "{}",
        one.text()
    );
    let read =
        harness.run("return (await tools.ReadMcpResourceTool({ server: 'fx', uri: 'memo://today' })).contents[0].text").await;
    assert_eq!(read.value().unwrap(), "buy milk", "a rule about listing does not keep a read out");

    let harness = with_rules(json!({"ask": ["mcp__fx"]})).await;
    let read = harness.run(&refusal("tools.ReadMcpResourceTool({ server: 'fx', uri: 'memo://today' })")).await;
    assert!(read.value().unwrap().as_str().unwrap().contains("the permissions.ask rule `mcp__fx`"), "{}", read.text());
    let read =
        harness.run("return (await tools.ReadMcpResourceTool({ server: 'more', uri: 'memo://today' })).contents[0].text").await;
    assert_eq!(read.value().unwrap(), "buy milk");

    let denied = |rules: serde_json::Value| with_rules(json!({ "deny": rules }));
    let harness = denied(json!(["ReadMcpResourceTool(more)"])).await;
    let read = harness.run(&refusal("tools.ReadMcpResourceTool({ server: 'more', uri: 'memo://today' })")).await;
    assert!(read.value().unwrap().as_str().unwrap().contains("`ReadMcpResourceTool(more)`"), "{}", read.text());
    let read =
        harness.run("return (await tools.ReadMcpResourceTool({ server: 'fx', uri: 'memo://today' })).contents[0].text").await;
    assert_eq!(read.value().unwrap(), "buy milk");
    let listed = harness.run("return (await tools.ListMcpResourcesTool({})).resources.length").await;
    assert_eq!(listed.value().unwrap(), &json!(6), "a rule about reading does not hide the list");

    // What a listing keeps of a server is bounded: a URI past its bound leaves its resource
    // out, a long description is cut.
    harness.session.add_server("long", fixture().with_env("FIXTURE_RESOURCES", "long")).await.unwrap();
    let long = harness.run("return await tools.ListMcpResourcesTool({ server: 'long' })").await;
    let long = long.value().unwrap();
    let resources = long["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 4, "{long}");
    let wordy = resources.iter().find(|r| r["name"] == "wordy").unwrap();
    assert_eq!(wordy["description"].as_str().unwrap().chars().count(), exec_host::mcp::MAX_RESOURCE_DESCRIPTION_CHARS + 1);
    assert_eq!(long["notes"], json!(["MCP server `long`: resources whose URI is longer than 4096 bytes are left out (1)"]));
    assert!(harness.session.remove_server("long").await);

    // The tools leave with the last server that has resources.
    assert!(harness.session.remove_server("fx").await && harness.session.remove_server("more").await);
    assert!(!available(&harness, "ListMcpResourcesTool"));
}

/// Answers every input request with one interpretation, and keeps the messages asked.
struct Interpreting(std::sync::Mutex<Vec<String>>);

impl exec_host::mcp::input::InputHandler for Interpreting {
    fn answer(
        &self,
        request: exec_host::mcp::input::InputRequest,
    ) -> exec_host::BoxFuture<'static, exec_host::mcp::input::InputAnswer> {
        self.0.lock().unwrap().push(request.message);
        let content = serde_json::Map::from_iter([("interpretation".to_string(), json!("historical"))]);
        Box::pin(std::future::ready(exec_host::mcp::input::InputAnswer::Accept(content)))
    }
}

#[tokio::test]
async fn a_published_tool_that_runs_only_as_a_task_is_called_as_one_with_its_status_as_progress_and_its_input_requests_answered()
{
    let handler = std::sync::Arc::new(Interpreting(Default::default()));
    let harness = Harness::with(|builder| builder.mcp_input(handler.clone()).mcp_connect_timeout(Duration::from_secs(20))).await;
    harness.session.add_server("everything", everything_server()).await.unwrap();
    let steps = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = steps.clone();
    let options = CallOptions::default().on_tool_progress(move |step| seen.lock().unwrap().push(step.step.to_string()));
    let code = r#"
        const research = tools["mcp__everything__simulate-research-query"];
        const [plain, asked] = await Promise.all([research({ topic: "rust" }), research({ topic: "rome", ambiguous: true })]);
        return { plain, asked }"#;
    let outcome = within(60, harness.run_options(code, options)).await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert!(value["plain"].as_str().unwrap().contains("# Research Report: rust"), "{value}");
    assert!(
        value["asked"].as_str().unwrap().contains("# Research Report: rome (historical)"),
        "the answer reached the task: {value}"
    );
    let asked = handler.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("could have multiple interpretations"), "{asked:?}");
    let steps = steps.lock().unwrap().clone();
    assert!(
        steps.iter().any(|step| step.ends_with(": Gathering sources...")),
        "the task's status messages are its progress: {steps:?}"
    );
    assert!(steps.iter().any(|step| step.contains("Generating report")), "{steps:?}");
}

#[tokio::test]
async fn a_task_reports_its_status_ends_with_its_result_is_cancelled_when_left_and_a_bad_one_fails_clearly() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let tasks = stdio(FIXTURE, &["--tasks"]).with_env("FIXTURE_CANCEL_LOG", log.path().display().to_string());
    let harness = harness_with(&[("t", tasks)]).await;
    let steps = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = steps.clone();
    let options = CallOptions::default().on_tool_progress(move |step| seen.lock().unwrap().push(step.step.to_string()));
    let outcome = harness.run_options("return await tools.mcp__t__research({})", options).await;
    assert_eq!(outcome.value(), Some(&json!("research is done")), "{}", outcome.text());
    assert_eq!(*steps.lock().unwrap(), ["1: reading", "2: thinking", "3: writing", "4: done"]);

    // Left running when the Exec ends: the task is cancelled.
    let outcome = harness.run("tools.mcp__t__endless({}); await new Promise(r => setTimeout(r, 300)); return 'left'").await;
    assert_eq!(outcome.value(), Some(&json!("left")), "{}", outcome.text());
    eventually("the task to be cancelled", || std::fs::read_to_string(log.path()).unwrap().contains("cancelled endless")).await;

    let outcome = harness.run("try { await tools.mcp__t__bad_id({}) } catch (e) { return e.message }").await;
    let message = outcome.value().unwrap().as_str().unwrap().to_string();
    assert!(message.starts_with("mcp__t__bad_id: MCP server `t`") && message.len() < 300, "{message}");
}

#[tokio::test]
async fn an_answer_past_the_message_bound_fails_its_call_alone_awaited_or_not_over_stdio_and_http() {
    let http = HttpFixture::start_with(&[("FIXTURE_BIG", "1")]).await;
    let servers = [("local", fixture().with_env("FIXTURE_BIG", "1")), ("remote", http.config())];
    let harness = harness_with(&servers).await;
    for server in ["local", "remote"] {
        // Awaited: the call fails with a sentence; the server stays.
        let code =
            format!("try {{ await tools.mcp__{server}__big({{ mib: 20 }}); return 'read' }} catch (e) {{ return e.message }}");
        let outcome = harness.run(&code).await;
        let message = outcome.value().unwrap().as_str().unwrap().to_string();
        assert!(message.starts_with(&format!("mcp__{server}__big: MCP server `{server}`")), "{server}: {message}");
        assert!(message.len() < 1_000, "{server}: {message}");
        // Not awaited: the Exec ends; the answer is dropped as it arrives.
        let outcome = harness.run(&format!("tools.mcp__{server}__big({{ mib: 20 }}); return 'left'")).await;
        assert_eq!(outcome.value(), Some(&json!("left")), "{server}: {}", outcome.text());
        // A small answer of the same tool still comes through.
        let small = harness.run(&format!("return (await tools.mcp__{server}__big({{ mib: 1 }})).length")).await;
        assert_eq!(small.value(), Some(&json!(1 << 20)), "{server}: {}", small.text());
    }
}

#[tokio::test]
async fn a_server_of_2026_07_28_alone_is_spoken_to_in_its_lifecycle_and_its_input_rounds_are_answered() {
    let env = [("FIXTURE_MODERN_ONLY", "1"), ("FIXTURE_ELICIT", "1")];
    let http = HttpFixture::start_with(&env).await;
    let stdio = fixture().with_env(env[0].0, env[0].1).with_env(env[1].0, env[1].1);
    for (transport, modern) in [("stdio", stdio), ("http", http.config())] {
        let handler = std::sync::Arc::new(Answering(Default::default()));
        let harness =
            Harness::with(|builder| builder.mcp_input(handler.clone()).mcp_connect_timeout(Duration::from_secs(20))).await;
        harness.session.add_server("modern", modern.clone()).await.unwrap_or_else(|e| panic!("{transport}: {e}"));
        let outcome =
            harness.run("return [await tools.mcp__modern__add({ a: 2, b: 3 }), await tools.mcp__modern__ask({})]").await;
        assert!(outcome.ok(), "{transport}: {}", outcome.text());
        let value = outcome.value().unwrap();
        assert_eq!(value[0], json!({"sum": 5}), "{transport}: {value}");
        assert_eq!(
            value[1],
            json!({"answer": {"action": "accept", "content": {"name": "Ada", "colour": "blue"}}, "state": "round-1"}),
            "{transport}: the form was answered (with its default filled in) and the state sent back: {value}"
        );
        let asked = handler.0.lock().unwrap().clone();
        assert_eq!((asked.len(), asked[0].message.as_str()), (1, "Which colour?"), "{transport}");

        // With nobody to ask, the round is declined, and the server hears so.
        let harness = harness_with(&[("modern", modern)]).await;
        let outcome = harness.run("return await tools.mcp__modern__ask({})").await;
        assert_eq!(outcome.value().unwrap()["answer"]["action"], "decline", "{transport}: {}", outcome.text());
    }
}
