//! The deferred pool behind Exec, end to end: the pool one builder makes from the registry
//! and the settings is exactly what a script reaches and what `tools.ToolSearch` searches,
//! against real MCP servers and the real guest.

use std::sync::Arc;
use std::time::Duration;

use exec_host::exec_tool;
use exec_host::mcp::McpServers;
use exec_host::settings::Layer;
use exec_host::{
    CallContext, CallRequest, DeferralTable, ExecOutcome, ExecRequest, ExecStatus, Funnel, Origin, Pool, Registry, Settings,
    SettingsFiles, ToolDefinition, ToolOutput, Workspace, builtin,
};
use exec_host_tests::{Counter, FixtureTool, fixture_tools, sandbox, within};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::mcp::{everything_server, fixture};

/// A session: the builtin workspace tools, the fixture tools, one builtin tool that asks to
/// be deferred (`web_fetch`), and MCP servers added as a test needs them.
struct Session {
    _dir: tempfile::TempDir,
    funnel: Arc<Funnel>,
    servers: McpServers,
}

impl Session {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut tools = builtin::all(Arc::new(Workspace::open(dir.path()).unwrap()));
        tools.extend(fixture_tools(&Counter::default()));
        let definition = ToolDefinition::new(
            "web_fetch",
            "Fetches a web page (a fixture: it answers with the URL it was given).",
            json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}),
        )
        .unwrap()
        .deferred(true);
        tools.push(FixtureTool::with_definition(definition, |args, _| {
            Box::pin(async move { Ok(ToolOutput::text(format!("fetched {}", args["url"].as_str().unwrap_or("?")))) })
        }));
        let registry = Arc::new(Registry::new(tools).unwrap());
        let servers = McpServers::with_connect_timeout(registry.clone(), Duration::from_secs(20));
        Session { _dir: dir, funnel: Arc::new(Funnel::new(registry)), servers }
    }

    async fn with_servers(servers: &[(&str, exec_host::mcp::ServerConfig)]) -> Self {
        let session = Session::new();
        for (name, config) in servers {
            session.servers.add(name, config.clone()).await.unwrap_or_else(|e| panic!("{e}"));
        }
        session
    }

    /// The pool as the one builder makes it now.
    fn pool(&self, settings: &Settings) -> Pool {
        Pool::build(self.funnel.registry().snapshot().definitions(), settings, &DeferralTable::default())
    }

    /// Runs `code` as an Exec of a request built now: it reaches exactly the pool.
    async fn exec(&self, code: &str, settings: &Settings) -> ExecOutcome {
        let pool = self.pool(settings);
        assert!(pool.exec_declared(), "{}", pool.exec_status());
        let request = ExecRequest::new(code, pool.pooled().to_vec());
        within(30, sandbox().await.exec(request, self.funnel.clone())).await
    }
}

fn names(pool: &Pool) -> Vec<String> {
    pool.names().map(String::from).collect()
}

fn declared(pool: &Pool) -> Vec<String> {
    pool.declarations().into_iter().map(|d| d.name).collect()
}

fn settings(text: &str) -> Settings {
    Settings::from_layers([&Layer::parse(text, std::path::Path::new("settings.json")).unwrap()])
}

#[tokio::test]
async fn a_script_finds_a_tool_it_has_never_seen_reads_its_signature_and_calls_it() {
    let session = Session::with_servers(&[("fx", fixture())]).await;
    let outcome = session
        .exec(
            r#"
            const { matches, total } = await tools.ToolSearch({ query: "greet" });
            const found = matches[0];
            const answer = await tools[found.name]({ name: "Ada" });
            return { name: found.name, signature: found.signature, total, answer };"#,
            &Settings::default(),
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value["name"], "mcp__fx__greet");
    assert_eq!(value["signature"], "tools.mcp__fx__greet(args: {\n  name: string;\n}): Promise<unknown>");
    assert_eq!(value["total"], 1);
    assert_eq!(value["answer"], "hello, Ada");
    assert_eq!(outcome.calls, ["ToolSearch", "mcp__fx__greet"], "a search is a call of its own");
}

#[tokio::test]
async fn a_script_reaches_and_searches_exactly_the_pool() {
    let session = Session::with_servers(&[("fx", fixture())]).await;
    let settings = settings(r#"{"permissions": {"deny": ["mcp__fx__fail"]}}"#);
    let pool = session.pool(&settings);
    assert!(names(&pool).contains(&"web_fetch".to_string()), "a builtin tool that asks to be deferred is pooled");
    assert!(!names(&pool).contains(&"mcp__fx__pinned".to_string()), "alwaysLoad keeps an MCP tool flat");
    assert!(declared(&pool).contains(&"mcp__fx__pinned".to_string()));
    assert!(!declared(&pool).iter().chain(&names(&pool)).any(|name| name == "mcp__fx__fail"), "denied: nowhere");

    let outcome = session
        .exec(
            r#"
            const everything = await tools.ToolSearch({ query: "" });
            const refused = async (call) => { try { await call(); return "ran"; } catch (e) { return e.message; } };
            return {
              searched: everything.matches.map(m => m.name),
              total: everything.total,
              fetched: await tools.web_fetch({ url: "https://example.com" }),
              readFile: typeof tools.read_file,
              echo: typeof tools.echo,
              pinned: await refused(() => tools.mcp__fx__pinned({})),
              denied: await refused(() => tools.mcp__fx__fail({})),
              oldSearch: await (async () => { try { await tools.search({ query: "x" }); } catch (e) { return `${e.name}: ${e.message}`; } })(),
            };"#,
            &settings,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value["searched"], json!(names(&pool)), "search covers the whole pool and nothing else");
    assert_eq!(value["total"], names(&pool).len());
    assert_eq!(value["fetched"], "fetched https://example.com");
    assert_eq!(value["readFile"], "undefined", "flat tools stay out of the sandbox");
    assert_eq!(value["echo"], "undefined");
    for key in ["pinned", "denied"] {
        let message = value[key].as_str().unwrap();
        assert!(message.contains("is not reachable from this script"), "{key}: {message}");
        assert!(message.contains("tools.ToolSearch"), "{key}: {message}");
    }
    // The engine words it without the name; it is the script's own TypeError either way.
    assert_eq!(value["oldSearch"], "TypeError: not a function", "an unknown plain name never reaches the host");
    assert!(!outcome.calls.iter().any(|name| name == "search"));
}

#[tokio::test]
async fn every_exec_reaches_the_pool_of_its_own_moment_and_exec_s_declaration_never_changes() {
    let session = Session::new();
    let defaults = Settings::default();
    let before = session.pool(&defaults);
    assert_eq!(names(&before), ["web_fetch"], "without MCP the pool holds the deferred builtin");
    assert_eq!(before.exec_status(), ExecStatus::Declared);
    let exec_before = serde_json::to_vec(&before.declarations()[0]).unwrap();

    session.servers.add("late", fixture()).await.unwrap();
    let connected = session.pool(&defaults);
    assert!(names(&connected).contains(&"mcp__late__echo".to_string()));
    assert_eq!(serde_json::to_vec(&connected.declarations()[0]).unwrap(), exec_before, "Exec's declaration is byte-identical");
    assert_eq!(
        connected.pooled().iter().filter(|t| !t.name.starts_with("mcp__")).map(|t| &t.name).collect::<Vec<_>>(),
        ["web_fetch"],
        "the builtin tools' deferral does not depend on MCP"
    );
    let outcome = session.exec("return await tools.mcp__late__echo({ text: 'hi' })", &defaults).await;
    assert!(outcome.ok(), "a server that just connected is reachable: {}", outcome.text());

    session.servers.remove("late").await;
    let gone = session.pool(&defaults);
    assert_eq!(names(&gone), ["web_fetch"]);
    assert_eq!(serde_json::to_vec(&gone.declarations()[0]).unwrap(), exec_before);
    let outcome = session.exec("return await tools.mcp__late__echo({ text: 'hi' })", &defaults).await;
    let failure = outcome.failure().expect("a server that left is not reachable");
    assert!(failure.message().contains("MCP server `late` did not offer `echo`"), "{}", failure.message());
}

#[tokio::test]
async fn a_pooled_tool_is_still_registered_and_a_direct_call_reaches_it() {
    let session = Session::with_servers(&[("fx", fixture())]).await;
    let pool = session.pool(&Settings::default());
    assert!(!declared(&pool).contains(&"mcp__fx__greet".to_string()), "not declared flat");
    assert!(pool.is_available("mcp__fx__greet"), "but available to the session");
    let args = json!({"name": "Ada"}).as_object().cloned().unwrap();
    let context = CallContext { origin: Origin::Direct, cancel: CancellationToken::new() };
    let output = session.funnel.call(CallRequest { name: "mcp__fx__greet".into(), args, context }).await.unwrap();
    assert_eq!(output.text.as_deref(), Some("hello, Ada"));
}

#[tokio::test]
async fn settings_switch_exec_and_single_tools_without_a_restart() {
    let session = Session::with_servers(&[("fx", fixture())]).await;
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("settings.json");
    let files = SettingsFiles::new(None, vec![project.clone()]);
    let write = |text: &str| rewrite(&project, text);
    let pool = || session.pool(&files.current().unwrap());

    assert_eq!(pool().exec_status(), ExecStatus::Declared, "enableExec unset: on by default");
    write(r#"{"enableExec": true}"#);
    assert_eq!(pool().exec_status(), ExecStatus::Declared);
    let every_tool = declared(&pool()).len() - 1 + pool().pooled().len();

    write(r#"{"enableExec": false}"#);
    let off = pool();
    assert_eq!(off.exec_status(), ExecStatus::Disabled, "reloaded: Exec is withdrawn at once");
    assert!(declared(&off).contains(&"mcp__fx__greet".to_string()) && declared(&off).contains(&"web_fetch".to_string()));
    assert_eq!(declared(&off).len(), every_tool, "no capability is lost");

    write(r#"{"nonDeferredTools": ["web_fetch"]}"#);
    let one_out = pool();
    assert_eq!(one_out.exec_status(), ExecStatus::Declared);
    assert!(declared(&one_out).contains(&"web_fetch".to_string()) && !names(&one_out).contains(&"web_fetch".to_string()));

    // The managed layer (a value an administrator pushes, here passed in code) wins over
    // the project file, in both directions.
    let managed_off = Layer { enable_exec: Some(false), ..Layer::default() };
    write(r#"{"enableExec": true}"#);
    let managed = SettingsFiles::new(Some(managed_off), vec![project.clone()]);
    assert_eq!(session.pool(&managed.current().unwrap()).exec_status(), ExecStatus::Disabled);
    let managed_on = Layer { enable_exec: Some(true), ..Layer::default() };
    write(r#"{"enableExec": false}"#);
    let managed = SettingsFiles::new(Some(managed_on), vec![project.clone()]);
    assert_eq!(session.pool(&managed.current().unwrap()).exec_status(), ExecStatus::Declared);
    let managed_list = Layer { non_deferred_tools: vec!["mcp__fx__greet".into()], ..Layer::default() };
    let managed = SettingsFiles::new(Some(managed_list), vec![]);
    assert!(!names(&session.pool(&managed.current().unwrap())).contains(&"mcp__fx__greet".to_string()));
}

/// Writes `text` to a settings file with a modification time later than any before it, so
/// the change is seen on filesystems that keep times to the second.
fn rewrite(file: &std::path::Path, text: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LATER: AtomicU64 = AtomicU64::new(2);
    std::fs::write(file, text).unwrap();
    let stamp = std::time::SystemTime::now() + Duration::from_secs(LATER.fetch_add(2, Ordering::SeqCst));
    std::fs::File::options().write(true).open(file).unwrap().set_modified(stamp).unwrap();
}

#[tokio::test]
async fn tool_search_refuses_a_wrong_shape_with_the_expected_one() {
    let session = Session::new();
    let outcome = session
        .exec(
            r#"
            const attempt = async (args) => { try { await tools.ToolSearch(args); return "accepted"; } catch (e) { return e.message; } };
            return [await attempt({ q: "fetch" }), await attempt("fetch"), await attempt({ query: "fetch", max_results: "all" })];"#,
            &Settings::default(),
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let messages: Vec<String> = serde_json::from_value(outcome.value().unwrap().clone()).unwrap();
    assert!(messages[0].starts_with("ToolSearch: unknown field `q`"), "{}", messages[0]);
    assert!(
        messages[0].contains("It takes one object of this shape: {") && messages[0].contains("query: string;"),
        "{}",
        messages[0]
    );
    assert!(messages[1].contains("plain object"), "a positional argument meets the payload contract: {}", messages[1]);
    assert!(messages[2].contains("max_results") && messages[2].contains("query: string;"), "{}", messages[2]);
}

#[tokio::test]
async fn the_example_in_exec_s_description_runs_as_written() {
    let session = Session::new();
    let description = exec_tool::description();
    let example = description.split("For example: `").nth(1).and_then(|rest| rest.split('`').next()).expect("an example");
    let code = example.replace("name_a,name_b", "web_fetch");
    let outcome = session.exec(&code, &Settings::default()).await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert!(outcome.logs.join("\n").starts_with("tools.web_fetch(args: {"), "{:?}", outcome.logs);
}

#[tokio::test]
async fn a_pool_from_the_published_everything_server() {
    let session = Session::with_servers(&[("everything", everything_server())]).await;
    let pool = session.pool(&Settings::default());
    let everything: Vec<String> = names(&pool).into_iter().filter(|name| name.starts_with("mcp__everything__")).collect();
    assert!(everything.len() >= 10, "every tool of the server is pooled: {everything:?}");
    assert!(!declared(&pool).iter().any(|name| name.starts_with("mcp__everything__")));

    let outcome = session
        .exec(
            r#"
            const byName = await tools.ToolSearch({ query: "mcp__everything__echo" });
            const bySelect = await tools.ToolSearch({ query: "select:mcp__everything__get-sum" });
            const sum = await tools[bySelect.matches[0].name]({ a: 20, b: 22 });
            return { first: byName.matches[0].name, signature: bySelect.matches[0].signature, sum };"#,
            &Settings::default(),
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value["first"], "mcp__everything__echo", "the exact name comes first");
    let signature = value["signature"].as_str().unwrap();
    assert!(signature.starts_with("tools[\"mcp__everything__get-sum\"](args: {"), "{signature}");
    assert!(signature.contains("a: number;") && signature.contains("b: number;"), "{signature}");
    assert!(value["sum"].as_str().is_some_and(|text| text.contains("42")), "{value}");
}

#[tokio::test]
async fn the_funnel_refuses_denied_tools_whoever_calls_them() {
    let session = Session::with_servers(&[("fx", fixture())]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(&file, r#"{"permissions": {"deny": ["mcp__fx__fail"]}}"#).unwrap();
    let settings = Arc::new(SettingsFiles::new(None, vec![file.clone()]));
    let funnel = Arc::new(Funnel::new(session.funnel.registry().clone()).with_settings(settings.clone()));
    let call = |name: &str| {
        let context = CallContext { origin: Origin::Direct, cancel: CancellationToken::new() };
        funnel.call(CallRequest { name: name.into(), args: Default::default(), context })
    };
    // A direct call of a tool no declaration offers (a model may still try it).
    let error = call("mcp__fx__fail").await.unwrap_err();
    assert_eq!(error.stage, exec_host::Stage::Authorization);
    assert_eq!(error.message, "`mcp__fx__fail` is denied by the permissions.deny rule `mcp__fx__fail`");

    // A nested call of a pooled tool that a rule denies after the Exec started.
    let pool = session.pool(&settings.current().unwrap());
    let denied_later = r#"{"permissions": {"deny": ["mcp__fx"]}}"#;
    let request = ExecRequest::new(
        "try { await tools.mcp__fx__greet({ name: 'x' }); return 'ran'; } catch (e) { return e.message; }",
        pool.pooled().to_vec(),
    );
    rewrite(&file, denied_later);
    let outcome = within(30, sandbox().await.exec(request, funnel.clone())).await;
    assert_eq!(outcome.value(), Some(&json!("`mcp__fx__greet` is denied by the permissions.deny rule `mcp__fx`")));

    // Settings that were never valid deny everything rather than nothing.
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, r#"{"permissions": {"deny": "not a list"}}"#).unwrap();
    let closed = Funnel::new(session.funnel.registry().clone()).with_settings(Arc::new(SettingsFiles::new(None, vec![broken])));
    let context = CallContext { origin: Origin::Direct, cancel: CancellationToken::new() };
    let error = closed.call(CallRequest { name: "mcp__fx__greet".into(), args: Default::default(), context }).await.unwrap_err();
    assert_eq!(error.stage, exec_host::Stage::Authorization);
    assert!(error.message.starts_with("`mcp__fx__greet` was not run: the settings cannot be read ("), "{}", error.message);
    assert!(error.message.contains("permissions.deny: invalid type"), "{}", error.message);
}
