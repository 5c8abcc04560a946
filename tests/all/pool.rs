//! The deferred pool behind Exec, end to end: the pool one builder makes from the registry
//! and the settings is exactly what a script reaches and what `tools.ToolSearch` searches,
//! against real MCP servers and the real guest.

use std::time::Duration;

use exec_host::exec_tool;
use exec_host::mcp::ServerConfig;
use exec_host::settings::Layer;
use exec_host::{ExecStatus, Pool, SessionBuilder, Stage, ToolDefinition, ToolOutput, json};
use exec_host_tests::{FixtureTool, Harness};

use crate::mcp::{everything_server, fixture};

/// The builtin tool that asks to be deferred (`web_fetch`), beside the workspace tools and
/// the fixtures.
fn web_fetch() -> std::sync::Arc<dyn exec_host::Tool> {
    let definition = ToolDefinition::new(
        "web_fetch",
        "Fetches a web page (a fixture: it answers with the URL it was given).",
        json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}),
    )
    .unwrap()
    .deferred(true);
    FixtureTool::with_definition(definition, |args, _| {
        Box::pin(async move { Ok(ToolOutput::text(format!("fetched {}", args["url"].as_str().unwrap_or("?")))) })
    })
}

/// A session with `web_fetch`, set up further by `configure`, and MCP servers added.
async fn session(servers: &[(&str, ServerConfig)], configure: impl FnOnce(SessionBuilder) -> SessionBuilder) -> Harness {
    let harness =
        Harness::with(|builder| configure(builder.tool(web_fetch()).mcp_connect_timeout(Duration::from_secs(20)))).await;
    for (name, config) in servers {
        harness.session.add_server(name, config.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    }
    harness
}

fn managed(settings: serde_json::Value) -> impl FnOnce(SessionBuilder) -> SessionBuilder {
    move |builder| builder.managed_settings(Layer::from_value(settings).unwrap())
}

fn pool(harness: &Harness) -> std::sync::Arc<Pool> {
    harness.session.pool().unwrap()
}

fn names(pool: &Pool) -> Vec<String> {
    pool.names().map(String::from).collect()
}

fn declared(pool: &Pool) -> Vec<String> {
    pool.declarations().into_iter().map(|d| d.name).collect()
}

#[tokio::test]
async fn a_script_finds_a_tool_it_has_never_seen_reads_its_signature_and_calls_it() {
    let session = session(&[("fx", fixture())], |b| b).await;
    let outcome = session
        .run(
            r#"
            const { matches, total } = await tools.ToolSearch({ query: "greet" });
            const found = matches[0];
            const answer = await tools[found.name]({ name: "Ada" });
            return { name: found.name, signature: found.signature, total, answer };"#,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value["name"], "mcp__fx__greet");
    assert_eq!(value["signature"], "tools.mcp__fx__greet(args: {\n  name: string;\n}): Promise<unknown>");
    assert_eq!(value["total"], 1);
    assert_eq!(value["answer"], "hello, Ada");
    assert_eq!(outcome.call_names(), ["ToolSearch", "mcp__fx__greet"], "a search is a call of its own");
    assert_eq!(outcome.client.calls[0].stage(), None);
}

#[tokio::test]
async fn a_script_reaches_and_searches_exactly_the_pool() {
    let settings = json!({"permissions": {"deny": ["mcp__fx__fail"]}, "nonDeferredTools": ["echo"]});
    let session = session(&[("fx", fixture())], managed(settings)).await;
    let pool = pool(&session);
    assert!(names(&pool).contains(&"web_fetch".to_string()), "a builtin tool that asks to be deferred is pooled");
    assert!(names(&pool).contains(&"read_file".to_string()), "the workspace tools are pooled by default");
    assert!(!names(&pool).contains(&"mcp__fx__pinned".to_string()), "alwaysLoad keeps an MCP tool flat");
    assert!(declared(&pool).contains(&"mcp__fx__pinned".to_string()) && declared(&pool).contains(&"echo".to_string()));
    assert!(!declared(&pool).iter().chain(&names(&pool)).any(|name| name == "mcp__fx__fail"), "denied: nowhere");

    let outcome = session
        .run(
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
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value["searched"], json!(names(&pool)), "search covers the whole pool and nothing else");
    assert_eq!(value["total"], names(&pool).len());
    assert_eq!(value["fetched"], "fetched https://example.com");
    assert_eq!(value["readFile"], "function");
    assert_eq!(value["echo"], "undefined", "a flat tool stays out of the sandbox");
    for key in ["pinned", "denied"] {
        let message = value[key].as_str().unwrap();
        assert!(message.contains("is not reachable from this script"), "{key}: {message}");
        assert!(message.contains("tools.ToolSearch"), "{key}: {message}");
    }
    assert!(value["pinned"].as_str().unwrap().contains("declared to the model directly"), "{value}");
    assert!(
        value["denied"].as_str().unwrap().contains("the permissions.deny rule `mcp__fx__fail` in the settings passed in code"),
        "{value}"
    );
    // The script's own TypeError, named as the host names an uncaught one: no call is made.
    assert_eq!(
        value["oldSearch"],
        "TypeError: tools.search is not a function (`search` is not a tool this script can reach; tools.ToolSearch finds tools by keyword.)",
        "an unknown plain name never reaches the host as a call"
    );
    assert!(!outcome.call_names().contains(&"search"));
}

#[tokio::test]
async fn every_exec_reaches_the_pool_of_its_own_moment_and_exec_s_declaration_never_changes() {
    let session = session(&[], |b| b).await;
    let before = pool(&session);
    assert!(names(&before).contains(&"web_fetch".to_string()) && !names(&before).iter().any(|n| n.starts_with("mcp__")));
    assert_eq!(before.exec_status(), ExecStatus::Declared, "without any MCP server, Exec is declared");
    let exec_before = serde_json::to_vec(&before.declarations()[0]).unwrap();
    let declarations_before = session.session.prepare(&[]).unwrap().declarations;

    session.session.add_server("late", fixture()).await.unwrap();
    let connected = pool(&session);
    assert!(names(&connected).contains(&"mcp__late__echo".to_string()));
    assert_eq!(serde_json::to_vec(&connected.declarations()[0]).unwrap(), exec_before, "Exec's declaration is byte-identical");
    let builtin = |pool: &Pool| names(pool).into_iter().filter(|n| !n.starts_with("mcp__")).collect::<Vec<_>>();
    assert_eq!(builtin(&connected), builtin(&before), "the builtin tools' deferral does not depend on MCP");
    let flat_late: Vec<String> = session.session.prepare(&[]).unwrap().declarations[1..]
        .iter()
        .filter(|d| d.name.starts_with("mcp__late__"))
        .map(|d| d.name.clone())
        .collect();
    assert_eq!(flat_late, ["mcp__late__pinned"], "only the server's alwaysLoad tool is declared");
    let outcome = session.run("return await tools.mcp__late__echo({ text: 'hi' })").await;
    assert!(outcome.ok(), "a server that just connected is reachable: {}", outcome.text());

    session.session.remove_server("late").await;
    let gone = pool(&session);
    assert_eq!(names(&gone), names(&before));
    assert_eq!(session.session.prepare(&[]).unwrap().declarations, declarations_before, "the same declarations, byte for byte");
    let outcome = session.run("return await tools.mcp__late__echo({ text: 'hi' })").await;
    let failure = outcome.failure().expect("a server that left is not reachable");
    assert!(failure.message.contains("no MCP server `late` is configured"), "{}", failure.message);
}

#[tokio::test]
async fn a_pooled_tool_is_available_from_a_script_and_not_declared_for_direct_calls() {
    let session = session(&[("fx", fixture())], |b| b).await;
    let pool = pool(&session);
    assert!(!declared(&pool).contains(&"mcp__fx__greet".to_string()), "not declared flat");
    assert!(pool.is_available("mcp__fx__greet"), "but available to the session");
    let direct = session.call("mcp__fx__greet", json!({"name": "Ada"})).await;
    assert_eq!(direct.failure().unwrap().stage, Stage::Discovery);
    assert!(direct.text().contains("call it from an Exec script, as tools.mcp__fx__greet(args)"), "{}", direct.text());
    let nested = session.run("return await tools.mcp__fx__greet({ name: 'Ada' })").await;
    assert_eq!(nested.text(), "hello, Ada");
}

#[tokio::test]
async fn settings_switch_exec_and_single_tools_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("settings.json");
    let files = vec![project.clone()];
    let session = session(&[("fx", fixture())], |b| b.settings_files(files)).await;
    let write = |text: &str| rewrite(&project, text);
    let pool = || pool(&session);

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
    for (managed_value, file, status) in [
        (json!({"enableExec": false}), r#"{"enableExec": true}"#, ExecStatus::Disabled),
        (json!({"enableExec": true}), r#"{"enableExec": false}"#, ExecStatus::Declared),
    ] {
        write(file);
        let files = vec![project.clone()];
        let session = self::session(&[], |b| managed(managed_value)(b).settings_files(files)).await;
        assert_eq!(pool_of(&session).exec_status(), status);
    }
    let session = self::session(&[("fx", fixture())], managed(json!({"nonDeferredTools": ["mcp__fx__greet"]}))).await;
    assert!(!names(&pool_of(&session)).contains(&"mcp__fx__greet".to_string()));
}

fn pool_of(harness: &Harness) -> std::sync::Arc<Pool> {
    harness.session.pool().unwrap()
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
    let session = session(&[], |b| b).await;
    let outcome = session
        .run(
            r#"
            const attempt = async (args) => { try { await tools.ToolSearch(args); return "accepted"; } catch (e) { return e.message; } };
            return [await attempt({ q: "fetch" }), await attempt("fetch"), await attempt({ query: "fetch", max_results: "all" })];"#,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let messages: Vec<String> = serde_json::from_value(outcome.value().unwrap().clone()).unwrap();
    assert!(messages[0].starts_with("ToolSearch: Additional properties are not allowed ('q' was unexpected)"), "{}", messages[0]);
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
    let session = session(&[], |b| b).await;
    let description = exec_tool::description();
    let example = description.split("Example: `").nth(1).and_then(|rest| rest.split('`').next()).expect("an example");
    let code = format!("return {}", example.replace("select:a,b", "select:web_fetch"));
    let outcome = session.run(&code).await;
    assert!(outcome.ok(), "{}", outcome.text());
    let signatures = outcome.value().and_then(|value| value.as_array()).expect("a list of signatures");
    assert!(signatures[0].as_str().unwrap().starts_with("tools.web_fetch(args: {"), "{signatures:?}");
}

#[tokio::test]
async fn a_pool_from_the_published_everything_server() {
    let session = session(&[("everything", everything_server())], |b| b).await;
    let pool = pool(&session);
    let everything: Vec<String> = names(&pool).into_iter().filter(|name| name.starts_with("mcp__everything__")).collect();
    assert!(everything.len() >= 10, "every tool of the server is pooled: {everything:?}");
    assert!(!declared(&pool).iter().any(|name| name.starts_with("mcp__everything__")));

    let outcome = session
        .run(
            r#"
            const byName = await tools.ToolSearch({ query: "mcp__everything__echo" });
            const bySelect = await tools.ToolSearch({ query: "select:mcp__everything__get-sum" });
            const sum = await tools[bySelect.matches[0].name]({ a: 20, b: 22 });
            return { first: byName.matches[0].name, signature: bySelect.matches[0].signature, sum };"#,
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
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(&file, r#"{"permissions": {"deny": ["mcp__fx__fail"]}}"#).unwrap();
    let files = vec![file.clone()];
    let session = session(&[("fx", fixture())], |b| b.settings_files(files)).await;
    // A direct call of a tool no declaration offers (a model may still try it).
    let result = session.call("mcp__fx__fail", json!({})).await;
    let failure = result.failure().unwrap();
    assert_eq!(failure.stage, Stage::Authorization);
    // The model reads the file's role or name, never where it lies on the host.
    assert_eq!(
        failure.message,
        "`mcp__fx__fail` is denied by the permissions.deny rule `mcp__fx__fail` in the settings file `settings.json`"
    );

    // A nested call of a pooled tool that a rule denies after the Exec started.
    let outcome = session
        .run_while(
            2,
            "try { await tools.mcp__fx__greet({ name: 'x' }); return 'ran'; } catch (e) { return e.message; }",
            || async { rewrite(&file, r#"{"permissions": {"deny": ["mcp__fx"]}}"#) },
        )
        .await;
    let expected = "`mcp__fx__greet` is denied by the permissions.deny rule `mcp__fx` in the settings file `settings.json`";
    assert_eq!(outcome.value(), Some(&json!(expected)));
    assert_eq!(outcome.client.calls[1].stage(), Some(Stage::Authorization));

    // Settings that were never valid keep the session from starting; a file broken later
    // leaves the last valid settings in force.
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, r#"{"permissions": {"deny": "not a list"}}"#).unwrap();
    let error = Harness::builder(dir.path(), &Default::default()).await.settings_files(vec![broken]).build().await.unwrap_err();
    assert!(error.to_string().contains("permissions.deny: invalid type"), "{error}");
    rewrite(&file, "{ broken");
    let result = session.call("mcp__fx__greet", json!({"name": "y"})).await;
    assert!(!result.ok(), "the last valid settings (denying mcp__fx) stay in force: {}", result.text());
}

/// A tool without an output schema shows the type of what it answered, marked as observed:
/// keys and types merged over its answers, never a value, and only to the session (the
/// client) whose calls saw it.
#[tokio::test]
async fn a_tool_without_an_output_schema_shows_what_it_answered_to_this_client_only() {
    let harness = session(&[("fx", fixture())], |b| b).await;
    let signature = |session: &exec_host::Session| {
        session
            .search("select:mcp__fx__echo,mcp__fx__shapes", None)
            .unwrap()
            .matches
            .into_iter()
            .map(|m| m.signature)
            .collect::<Vec<_>>()
    };
    let before = signature(&harness.session);
    assert_eq!(before[0], "tools.mcp__fx__echo(args?: {}): Promise<unknown>");

    let outcome = harness
        .run(
            r#"
            await tools.mcp__fx__echo({ id: 7, name: "Ada Lovelace", tags: ["secret-tag"] });
            await tools.mcp__fx__echo({ id: 8, tags: [] });
            await tools.mcp__fx__shapes({ mode: "a", at: 1 });
            const { matches } = await tools.ToolSearch({ query: "select:mcp__fx__echo" });
            return matches[0].signature;"#,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let expected =
        "tools.mcp__fx__echo(args?: {}): Promise<{\n  id: number;\n  name?: string;\n  tags: string[];\n} /* observed */>";
    assert_eq!(*outcome.value().unwrap(), json!(expected), "the script's own search reads it at once");
    let after = signature(&harness.session);
    assert_eq!(after[0], expected, "later searches of the session too");
    assert_eq!(after[1], before[1], "a declared output schema stays as declared");
    for value in ["Ada", "secret", "7"] {
        assert!(!after[0].contains(value), "{value} in {}", after[0]);
    }
    let file = harness.session.declaration_file().unwrap();
    assert!(file.contains("  mcp__fx__echo(args?: {}): Promise<{\n    id: number;"), "{file}");
    assert!(file.contains("} /* observed */>;"), "{file}");

    // Another client of the same session (a serve client) has seen nothing.
    let approver = exec_host_tests::TestApprover::new(|_| exec_host::Approval::AllowOnce);
    let other = harness.session.for_client(std::sync::Arc::new(exec_host_tests::SharedApprover(approver)), None);
    assert_eq!(signature(&other), before);
    assert!(other.declaration_file().unwrap().contains("mcp__fx__echo(args?: {}): Promise<unknown>;"));
}

#[tokio::test]
async fn every_global_the_declaration_file_declares_is_in_the_guest_and_is_what_it_says() {
    let harness = Harness::new().await;
    let file = harness.session.declaration_file().unwrap();
    let declared: Vec<(&str, &str)> = file
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("declare ")?;
            let (kind, rest) = rest.split_once(' ')?;
            let name = rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').next()?;
            Some((kind, name))
        })
        .collect();
    assert!(declared.len() > 20, "{declared:?}");
    let names: Vec<&str> = declared.iter().map(|(_, name)| *name).collect();
    let outcome =
        harness.run(&format!("return {}.map(name => typeof globalThis[name])", serde_json::to_string(&names).unwrap())).await;
    assert!(outcome.ok(), "{}", outcome.text());
    let kinds = outcome.value().unwrap().as_array().unwrap().clone();
    for ((kind, name), seen) in declared.iter().zip(kinds) {
        let expected = if *kind == "const" { "object" } else { "function" };
        assert_eq!(seen, expected, "`declare {kind} {name}` but the guest's {name} is a {seen}");
    }
}
