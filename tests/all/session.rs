//! The session, end to end through the real guest and host: the announcement and its
//! broadcast state (spec 004, stories 公告只列延迟工具的名字 and 公告作为尾部消息增量播报),
//! `Exec`'s authorization at call time, the same text for a flat and a nested call,
//! compaction and `view_tool_call`, failure stages, and the provider renderings.

use std::time::Duration;

use exec_host::announcement::{CATALOGUE_HEADING, EMPTY_TEXT, MARKER_KEY, WITHDRAWN_TEXT};
use exec_host::mcp::ServerConfig;
use exec_host::settings::Layer;
use exec_host::{ContentBlock, ExecStatus, Message, Provider, Role, SessionBuilder, Stage, ToolCall, ToolResult, json};
use exec_host_tests::{Harness, call_id, exec_call, within};

use crate::mcp::{everything_server, fixture};

/// A harness whose session reads `file` as its settings, with MCP servers added.
async fn with_settings_file(file: &std::path::Path, servers: &[(&str, ServerConfig)]) -> Harness {
    let files = vec![file.to_path_buf()];
    let harness = Harness::with(|builder| builder.settings_files(files).mcp_connect_timeout(Duration::from_secs(20))).await;
    for (name, config) in servers {
        harness.session.add_server(name, config.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    }
    harness
}

/// Writes a settings file so that the change is seen even where times are kept to the second.
fn rewrite(file: &std::path::Path, text: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LATER: AtomicU64 = AtomicU64::new(2);
    std::fs::write(file, text).unwrap();
    let stamp = std::time::SystemTime::now() + Duration::from_secs(LATER.fetch_add(2, Ordering::SeqCst));
    std::fs::File::options().write(true).open(file).unwrap().set_modified(stamp).unwrap();
}

/// Prepares a request on `history`, appends what it says to append, and returns the text
/// of what was appended (`None` when nothing was).
fn step(harness: &Harness, history: &mut Vec<Message>) -> Option<String> {
    let prepared = harness.session.prepare(history).unwrap();
    assert!(prepared.append.len() <= 1, "one message at most per request");
    let text = prepared.append.first().map(Message::text);
    history.extend(prepared.append);
    text
}

/// The names an announcement lists.
fn listed(announcement: &str) -> Vec<&str> {
    let names = announcement.strip_prefix(CATALOGUE_HEADING).expect("a catalogue announcement");
    names.lines().filter(|line| !line.is_empty()).collect()
}

#[tokio::test]
async fn the_first_request_announces_every_pooled_name_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let harness = with_settings_file(&dir.path().join("none.json"), &[("fx", fixture())]).await;
    let pool = harness.session.pool().unwrap();
    let mut history = vec![Message::user("hello")];
    let announcement = step(&harness, &mut history).expect("announced in the first request");
    // Every pooled name, in the pool's order, each line a bare name: builtin and MCP alike.
    assert_eq!(listed(&announcement), pool.names().collect::<Vec<_>>());
    assert!(listed(&announcement).contains(&"read_file") && listed(&announcement).contains(&"mcp__fx__add"));
    // Neither Exec nor a flat tool, nor any count, server heading or description.
    for absent in ["Exec\n", "mcp__fx__pinned", "Answers with", "tools in", "server `", "MCP"] {
        assert!(!announcement.contains(absent), "{absent:?} in the announcement:\n{announcement}");
    }
    let message = history.last().unwrap();
    assert_eq!((message.role, message.is_meta()), (Role::User, true), "an isMeta user message at the tail");
    assert!(message.metadata.contains_key(MARKER_KEY));
    // Byte-stable: a second session over the same pool says the very same bytes.
    let again = with_settings_file(&dir.path().join("none.json"), &[("fx", fixture())]).await;
    let other = again.session.prepare(&[Message::user("hello")]).unwrap();
    assert_eq!(other.append[0].text(), announcement);
    assert_eq!(*other.declarations, *harness.session.prepare(&history).unwrap().declarations);
}

#[tokio::test]
async fn the_broadcast_follows_the_pool_and_survives_restarts_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let harness = with_settings_file(&settings, &[]).await;
    let mut history = vec![Message::user("hello")];
    let exec_declaration =
        |harness: &Harness| serde_json::to_string(&harness.session.prepare(&[]).unwrap().declarations[0]).unwrap();
    let declared_before = exec_declaration(&harness);

    // No MCP server: the builtin tools are pooled, Exec is declared, the first request announces.
    let first = step(&harness, &mut history).expect("announced in the first request");
    assert!(listed(&first).contains(&"read_file"));
    assert_eq!(step(&harness, &mut history), None, "the same pool is announced once");
    history.push(Message::assistant("ok"));
    assert_eq!(step(&harness, &mut history), None, "later messages do not hide the marker");

    // A server connects: the whole list again, appended; nothing before it changes.
    let before = serde_json::to_value(&history).unwrap();
    harness.session.add_server("fx", fixture()).await.unwrap();
    let connected = step(&harness, &mut history).expect("a changed pool is announced");
    assert!(listed(&connected).contains(&"mcp__fx__add") && listed(&connected).contains(&"read_file"), "in full, not a delta");
    assert_eq!(serde_json::to_value(&history[..history.len() - 1]).unwrap(), before, "append-only");
    assert_eq!(exec_declaration(&harness), declared_before, "Exec's declaration does not move with the pool");

    // A restart: a new session reading the same history (as JSON) says nothing new.
    let stored = serde_json::to_string(&history).unwrap();
    let restarted = with_settings_file(&settings, &[("fx", fixture())]).await;
    let mut reloaded: Vec<Message> = serde_json::from_str(&stored).unwrap();
    assert_eq!(step(&restarted, &mut reloaded), None, "the history is the only state");

    // Compaction dropped the broadcast messages: announced again in full.
    let mut compacted: Vec<Message> = history.iter().filter(|m| !m.is_meta()).cloned().collect();
    assert_eq!(step(&harness, &mut compacted), Some(connected.clone()));
    // A foreign or damaged marker counts as none.
    let mut damaged = vec![Message::user("x").with_metadata(MARKER_KEY, json!({"kind": "catalogue", "sha256": "nope"}))];
    assert_eq!(step(&harness, &mut damaged), Some(connected.clone()));

    // The server leaves: the whole list again, without it.
    harness.session.remove_server("fx").await;
    let gone = step(&harness, &mut history).unwrap();
    assert!(!gone.contains("mcp__fx__") && gone == first, "{gone}");

    // Exec turned off: the announcement no longer applies; every tool is declared flat.
    rewrite(&settings, r#"{"enableExec": false}"#);
    assert_eq!(step(&harness, &mut history).as_deref(), Some(WITHDRAWN_TEXT));
    assert_eq!(step(&harness, &mut history), None);
    let prepared = harness.session.prepare(&history).unwrap();
    assert_eq!(prepared.exec, ExecStatus::Disabled);
    assert!(
        prepared.declarations.iter().any(|d| d.name == "read_file") && !prepared.declarations.iter().any(|d| d.name == "Exec")
    );
    // Turned on again with the same pool: announced again in full, not silenced.
    rewrite(&settings, r#"{"enableExec": true}"#);
    assert_eq!(step(&harness, &mut history), Some(first.clone()));

    // The pool empties after a broadcast: one sentence, which does not name Exec.
    rewrite(
        &settings,
        r#"{"nonDeferredTools": ["ls", "read_file", "write_file", "edit_file", "glob", "grep", "rendezvous", "echo", "add",
            "busy", "sleep", "blob", "text_only", "structured", "empty", "image", "fail", "never", "count", "origin", "view_tool_call"]}"#,
    );
    assert_eq!(harness.session.prepare(&history).unwrap().exec, ExecStatus::EmptyPool);
    assert_eq!(step(&harness, &mut history).as_deref(), Some(EMPTY_TEXT));
    assert!(!EMPTY_TEXT.contains("Exec"));
    assert_eq!(step(&harness, &mut history), None);
    // A conversation that starts with an empty pool hears nothing.
    assert_eq!(step(&harness, &mut vec![Message::user("hi")]), None);
}

#[tokio::test]
async fn without_a_channel_the_session_stays_silent() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let files = vec![settings.clone()];
    let harness = Harness::with(|builder| builder.settings_files(files).without_announcements()).await;
    let mut history = vec![Message::user("hello")];
    assert_eq!(step(&harness, &mut history), None);
    // A history that did hear an announcement, read by a host without the channel.
    let announced = Harness::new().await.session.prepare(&history).unwrap().append;
    history.extend(announced);
    rewrite(&settings, r#"{"enableExec": false}"#);
    assert_eq!(step(&harness, &mut history), None, "not reading the channel is not seeing the pool vanish");
}

#[tokio::test]
async fn a_large_pool_is_announced_whole() {
    let harness = Harness::new().await;
    harness.session.add_server("everything", everything_server()).await.unwrap();
    for i in 0..30 {
        harness.session.add_server(&format!("copy{i}"), fixture()).await.unwrap();
    }
    let pool = harness.session.pool().unwrap();
    let announcement = harness.session.prepare(&[]).unwrap().append[0].text();
    assert!(pool.names().count() > 500, "{}", pool.names().count());
    assert_eq!(listed(&announcement), pool.names().collect::<Vec<_>>(), "no truncation, no rotation");
    assert!(!announcement.contains("PARTIAL") && !announcement.contains("..."));
}

#[tokio::test]
async fn exec_is_authorized_at_the_tool_layer_before_any_sandbox_starts() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let harness = with_settings_file(&settings, &[]).await;
    let code = "await tools.count(); return 'ran'";

    rewrite(&settings, r#"{"permissions": {"deny": ["Exec"]}}"#);
    let denied = harness.run(code).await;
    let failure = denied.failure().unwrap();
    assert_eq!(failure.stage, Stage::Authorization);
    assert_eq!(
        failure.message, "`Exec` is denied by the permissions.deny rule `Exec` in the settings file `settings.json`",
        "the rule and the file it came from"
    );
    assert!(denied.client.script_time.is_none() && denied.client.calls.is_empty());

    rewrite(&settings, r#"{"enableExec": false}"#);
    let disabled = harness.run(code).await;
    assert_eq!(disabled.failure().unwrap().stage, Stage::Authorization);
    assert!(disabled.text().contains("`\"enableExec\": false` in the settings file `settings.json`"), "{}", disabled.text());
    assert!(!disabled.text().contains(&dir.path().to_string_lossy().to_string()), "no host path: {}", disabled.text());

    let flat = r#"{"nonDeferredTools": ["ls", "read_file", "write_file", "edit_file", "glob", "grep", "rendezvous", "echo", "add",
        "busy", "sleep", "blob", "text_only", "structured", "empty", "image", "fail", "never", "count", "origin", "view_tool_call"]}"#;
    rewrite(&settings, flat);
    let empty = harness.run(code).await;
    assert_eq!(empty.failure().unwrap().stage, Stage::Discovery);
    assert!(empty.text().starts_with("`Exec` is not declared now"), "{}", empty.text());
    assert_eq!(harness.counter.get(), 0, "no script ran");

    // Allowed again: the same call runs, and a managed exclusion in code refuses it.
    rewrite(&settings, "{}");
    assert_eq!(harness.run(code).await.value(), Some(&json!("ran")));
    let excluded = Layer::from_value(json!({"permissions": {"deny": ["Exec"]}})).unwrap();
    let managed = Harness::with(|builder| builder.managed_settings(excluded)).await;
    let refused = managed.run(code).await;
    assert!(refused.text().ends_with("in the settings passed in code"), "{}", refused.text());
}

/// A pooled tool called from a script and the same tool declared flat (`enableExec` off)
/// and called by the model directly give the model the same text (spec 004: hooks story,
/// scenario 7).
#[tokio::test]
async fn a_flat_and_a_nested_call_of_a_tool_read_the_same() {
    let harness = Harness::new().await;
    let flat_harness = Harness::flat().await;
    for dir in [harness.dir.path(), flat_harness.dir.path()] {
        std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
    }
    for (tool, args) in [
        ("read_file", json!({"path": "notes.txt"})),
        ("text_only", json!({"text": "plain words"})),
        ("echo", json!({"value": "a string"})),
        ("structured", json!({"k": [1, 2]})),
        ("empty", json!({})),
        ("ls", json!({})),
    ] {
        let flat = flat_harness.call(tool, args.clone()).await;
        let nested = harness.run(&format!("return await tools.{tool}({args})")).await;
        assert!(flat.ok() && nested.ok(), "{tool}: {} / {}", flat.text(), nested.text());
        assert_eq!(flat.text(), nested.text(), "{tool}");
        assert_eq!(flat.value(), nested.value(), "{tool}");
    }
    // Images: attachments either way, the same text.
    let flat = flat_harness.call("image", json!({})).await;
    let nested = harness.run("return await tools.image({})").await;
    assert_eq!((flat.text(), flat.model.images.len()), (nested.text(), nested.model.images.len()));
    assert_eq!(flat.model.images.len(), 1);
    // And an MCP tool.
    harness.session.add_server("fx", fixture()).await.unwrap();
    flat_harness.session.add_server("fx", fixture()).await.unwrap();
    let flat = flat_harness.call("mcp__fx__add", json!({"a": 1, "b": 2})).await;
    let nested = harness.run("return await tools.mcp__fx__add({a: 1, b: 2})").await;
    assert_eq!(flat.text(), nested.text());
    assert_eq!(flat.text(), r#"{"sum":3}"#);
}

#[tokio::test]
async fn a_flat_result_is_capped_like_an_exec_result() {
    let limits = exec_host::Limits::default().with_max_result_chars(50);
    let harness = Harness::with_limits(limits.clone()).await;
    let off = Layer::from_value(json!({"enableExec": false})).unwrap();
    let flat_harness = Harness::with(|builder| builder.limits(limits).managed_settings(off)).await;
    let flat = flat_harness.call("blob", json!({"bytes": 80})).await;
    let nested = harness.run("return await tools.blob({ bytes: 80 })").await;
    assert_eq!(flat.text(), format!("{}\n[result cut: 80 characters in all, the first 50 shown]", "x".repeat(50)));
    assert_eq!(flat.text(), nested.text());
}

#[tokio::test]
async fn a_long_result_is_compacted_and_view_tool_call_returns_the_rest() {
    let harness = Harness::new().await;
    let code = "return Array.from({ length: 3000 }, (_, i) => `line ${i}`).join('\\n')";
    let call = exec_call(code);
    let id = call.id.clone();
    let result = harness.session.call(call, Default::default()).await;
    let whole = result.client.text.clone();
    assert!(whole.len() > 10_000 && whole.starts_with("line 0\nline 1\n") && whole.ends_with("line 2999"));
    let compaction = result.compacted.clone().expect("over 2,500 tokens: compacted");
    assert_eq!(compaction.total_chars, whole.chars().count());
    let text = result.text();
    assert!(text.len() < 10_000, "{}", text.len());
    assert!(text.starts_with(&whole[..6_000]) && text.ends_with(&whole[whole.len() - 2_000..]));
    assert!(
        text.contains(&format!("in an Exec script, tools.view_tool_call({{ id: \"{id}\", offset: 6000 }})")),
        "the marker names the call and where view_tool_call is"
    );
    // The history holds the compacted text under the call's id.
    let ContentBlock::ToolResult { tool_use_id, content, is_error } = result.persisted() else { panic!("a tool result block") };
    assert_eq!((tool_use_id.as_str(), is_error), (id.as_str(), false));
    assert_eq!(content, vec![ContentBlock::text(text)]);

    // view_tool_call costs no request a declaration: it sits behind Exec, and a script reads
    // the whole text back part by part.
    let prepared = harness.session.prepare(&[]).unwrap();
    assert!(!prepared.declarations.iter().any(|d| d.name == "view_tool_call"));
    assert!(prepared.append[0].text().contains("view_tool_call"), "the announcement lists it");
    let mut read = String::new();
    let mut offset = 0;
    loop {
        let part = harness.run(&format!("return await tools.view_tool_call({{ id: {}, offset: {offset} }})", json!(id))).await;
        assert!(part.ok() && part.compacted.is_none(), "{}", part.text());
        let (header, body) = part.text().split_once('\n').unwrap();
        read.push_str(body);
        match header.split("the next part starts at offset ").nth(1) {
            Some(next) => offset = next.trim_end_matches(']').parse().unwrap(),
            None => break,
        }
    }
    assert_eq!(read, whole, "every part of the raw result comes back");

    let missing = harness.run("try { await tools.view_tool_call({ id: 'no-such-call' }) } catch (e) { return e.message }").await;
    assert!(missing.text().contains("no result is kept for call \"no-such-call\""), "{}", missing.text());

    // With Exec off, every tool is declared flat, view_tool_call too, and the marker names it so.
    let flat = Harness::flat().await;
    let lines: String = (0..1500).map(|i| format!("a line of the file {i:>5}\n")).collect();
    std::fs::write(flat.dir.path().join("long.txt"), lines).unwrap();
    let long = flat.call("read_file", json!({"path": "long.txt"})).await;
    assert!(long.text().contains("view_tool_call({ \"id\": "), "{}", &long.text()[..200.min(long.text().len())]);
    assert!(flat.session.prepare(&[]).unwrap().declarations.iter().any(|d| d.name == "view_tool_call"));
    // A session without compaction gives the whole text and declares no view_tool_call.
    let whole_session = Harness::with(SessionBuilder::without_compaction).await;
    let uncut = whole_session.run(code).await;
    assert_eq!(uncut.text(), whole);
    assert!(!whole_session.session.prepare(&[]).unwrap().declarations.iter().any(|d| d.name == "view_tool_call"));
}

#[tokio::test]
async fn every_failure_names_its_stage() {
    let harness = Harness::new().await;
    let stage = |result: &ToolResult| result.failure().map(|failure| failure.stage);

    let unknown = harness.call("raed_file", json!({"path": "x"})).await;
    assert_eq!(stage(&unknown), Some(Stage::Discovery));
    assert!(unknown.text().contains("did you mean `read_file` (from an Exec script)"), "{}", unknown.text());
    let pooled = harness.call("read_file", json!({"path": "x"})).await;
    assert_eq!(stage(&pooled), Some(Stage::Discovery), "a pooled tool is not declared: {}", pooled.text());
    assert!(pooled.text().contains("call it from an Exec script, as tools.read_file(args)"), "{}", pooled.text());
    let long = harness.call(&"x".repeat(100_000), json!({})).await;
    assert_eq!(stage(&long), Some(Stage::Discovery));
    let search = harness.call("ToolSearch", json!({"query": "x"})).await;
    assert!(search.text().contains("call tools.ToolSearch({ query }) inside an Exec script"), "{}", search.text());

    let flat = Harness::flat().await;
    let malformed = flat.call("read_file", json!({"path": 3})).await;
    assert_eq!(stage(&malformed), Some(Stage::Params));
    assert!(malformed.text().starts_with("read_file: `path`: 3 is not of type \"string\""), "{}", malformed.text());
    let not_an_object = flat.session.call(ToolCall::new(call_id(), "read_file", json!("notes.txt")), Default::default()).await;
    assert_eq!(stage(&not_an_object), Some(Stage::Params));
    assert_eq!(not_an_object.text(), "the input of `read_file` must be a JSON object, not a string");
    let unknown_bad_input = flat.session.call(ToolCall::new(call_id(), "raed_file", json!("x")), Default::default()).await;
    assert_eq!(stage(&unknown_bad_input), Some(Stage::Discovery), "discovery comes before the input's shape");
    assert!(unknown_bad_input.text().contains("did you mean `read_file`"), "{}", unknown_bad_input.text());
    let no_code = harness.session.call(ToolCall::new(call_id(), "Exec", json!({"script": "return 1"})), Default::default()).await;
    assert_eq!(stage(&no_code), Some(Stage::Params));
    assert!(no_code.text().contains("\"code\" is a required property"), "{}", no_code.text());
    let not_code = harness.session.call(ToolCall::new(call_id(), "Exec", json!(["return 1"])), Default::default()).await;
    assert_eq!(not_code.text(), "the input of `Exec` must be a JSON object, not an array");

    let failing = flat.call("fail", json!({"message": "broke"})).await;
    assert_eq!((stage(&failing), failing.text()), (Some(Stage::Execution), "broke"));
    let silent = flat.call("fail", json!({"message": ""})).await;
    assert_eq!(silent.text(), "`fail` failed without saying why", "a model never gets an empty result");
    let thrown = harness.run("throw new Error('no')").await;
    assert_eq!(stage(&thrown), Some(Stage::Execution));

    // Nested calls each carry theirs, in the call record.
    let nested = harness
        .run("for (const f of [() => tools.add({a: 1, b: 2}), () => tools.read_file({path: 3}), () => tools.fail({}), () => tools.mcp__nope__x({})]) { try { await f(); } catch {} }")
        .await;
    let stages: Vec<Option<Stage>> = nested.client.calls.iter().map(|call| call.stage()).collect();
    assert_eq!(stages, [None, Some(Stage::Params), Some(Stage::Execution), Some(Stage::Discovery)]);
    assert!(nested.client.calls[1].args.contains("\"path\":3"), "{:?}", nested.client.calls[1]);
}

#[tokio::test]
async fn nested_calls_know_the_exec_they_come_from() {
    let harness = Harness::new().await;
    let call = exec_call("return await tools.origin({})");
    let id = call.id.clone();
    let nested = harness.session.call(call, Default::default()).await;
    assert_eq!(nested.value(), Some(&json!({"from": "script", "exec": id})));
    let flat = Harness::flat().await;
    let direct = flat.session.call(ToolCall::new("toolu_9", "origin", json!({})), Default::default()).await;
    assert_eq!(direct.value(), Some(&json!({"from": "model", "call": "toolu_9"})));
}

#[tokio::test]
async fn guidance_covers_pooled_tools() {
    let harness = Harness::new().await;
    let prepared = harness.session.prepare(&[]).unwrap();
    assert!(!prepared.declarations.iter().any(|d| d.name == "edit_file"), "edit_file is pooled");
    assert!(prepared.guidance.starts_with("# Using your tools\n- "), "{}", prepared.guidance);
    assert!(
        prepared.guidance.contains("edit_file: old_string must match"),
        "a pooled tool keeps its line: {}",
        prepared.guidance
    );
}

/// The golden transcript: a user turn, an Exec call that uses a pooled tool and returns an
/// image, its result, and the model's answer, with the announcement appended in between.
async fn transcript(harness: &Harness) -> (String, Vec<exec_host::Declaration>, Vec<Message>) {
    std::fs::write(harness.dir.path().join("notes.txt"), "alpha\n").unwrap();
    let mut history = vec![Message::user("What do the notes say?")];
    let prepared = harness.session.prepare(&history).unwrap();
    history.extend(prepared.append);
    let call = ToolCall::new(
        "toolu_01",
        "Exec",
        json!({"code": "const f = await tools.read_file({ path: 'notes.txt' }); await tools.image({}); return f.content"}),
    );
    history.push(Message::new(
        Role::Assistant,
        vec![ContentBlock::text("Reading them."), ContentBlock::tool_use(&call.id, &call.name, call.input.clone())],
    ));
    let result = harness.session.call(call, Default::default()).await;
    assert!(result.ok(), "{}", result.text());
    history.push(exec_host::tool_results_message(&[result]));
    history.push(Message::assistant("They say alpha."));
    (prepared.guidance.to_string(), prepared.declarations.to_vec(), history)
}

/// The same deferral table, presented by the provider: the Messages API and Responses get
/// the pool's tools marked `defer_loading` beside their own tool search (golden files pin
/// the `tools` arrays), Chat Completions keeps Exec; the session then takes the model's
/// direct calls of deferred tools through the same funnel, rules included.
#[tokio::test]
async fn a_provider_that_searches_deferred_tools_gets_the_pool_marked_and_the_session_takes_its_calls() {
    let exec_path = Harness::new().await;
    let refused = exec_path.call("read_file", json!({"path": "notes.txt"})).await;
    assert_eq!(refused.failure().unwrap().stage, Stage::Discovery, "on the Exec path a pooled tool is not declared");

    let deny = Layer::from_value(json!({"permissions": {"deny": ["read_file(secret.txt)"]}})).unwrap();
    let harness = Harness::with(|builder| builder.provider_deferral().managed_settings(deny)).await;
    // An MCP server's tools: Responses gets them in a namespace of their own.
    harness.session.add_server("fx", crate::mcp::fixture()).await.unwrap();
    std::fs::write(harness.dir.path().join("notes.txt"), "alpha\n").unwrap();
    std::fs::write(harness.dir.path().join("secret.txt"), "s").unwrap();
    let history = vec![Message::user("What do the notes say?")];
    let prepared = harness.session.prepare(&history).unwrap();
    assert!(prepared.append.is_empty(), "the provider's search finds the tools: nothing is announced");
    let pool = harness.session.pool().unwrap();
    let deferred: Vec<&str> = prepared.deferred.iter().map(|declaration| declaration.name.as_str()).collect();
    assert_eq!(deferred, pool.names().collect::<Vec<_>>(), "what is deferred is the pool, one table for both");
    assert!(prepared.request_deferring(Provider::OpenAiChat, &history).is_none(), "Chat Completions keeps Exec");

    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/deferring");
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    for (provider, file, search) in [
        (Provider::Anthropic, "anthropic-messages.json", exec_host::ANTHROPIC_TOOL_SEARCH),
        (Provider::OpenAiResponses, "openai-responses.json", "tool_search"),
    ] {
        let body = prepared.request_deferring(provider, &history).unwrap();
        let tools = body["tools"].as_array().unwrap();
        assert!(tools.iter().any(|tool| tool["type"] == search), "{file}: the provider's search is declared");
        let named = |tool: &serde_json::Value| tool["name"].as_str().unwrap_or_default().to_string();
        assert!(!tools.iter().any(|tool| named(tool) == "Exec"), "{file}: the search replaces Exec");
        // Each deferred tool by its whole name: a namespace's members are named within it.
        let mut marked: Vec<String> = tools
            .iter()
            .flat_map(|tool| match tool["type"] == "namespace" {
                true => tool["tools"].as_array().unwrap().iter().map(|member| (format!("{}__", named(tool)), member)).collect(),
                false => vec![(String::new(), tool)],
            })
            .filter(|(_, tool)| tool["defer_loading"] == true)
            .map(|(namespace, tool)| namespace + &named(tool))
            .collect();
        marked.sort();
        let mut pool_names: Vec<String> = deferred.iter().map(|name| name.to_string()).collect();
        pool_names.sort();
        assert_eq!(marked, pool_names, "{file}: the pool, and only it, is deferred");
        if provider == Provider::OpenAiResponses {
            assert!(tools.iter().any(|tool| tool["type"] == "namespace" && tool["name"] == "mcp__fx"), "{file}");
        }
        let rendered = serde_json::to_string_pretty(&body["tools"]).unwrap() + "\n";
        if bless {
            std::fs::create_dir_all(&golden).unwrap();
            std::fs::write(golden.join(file), &rendered).unwrap();
        } else {
            let kept = std::fs::read_to_string(golden.join(file)).unwrap_or_default();
            assert!(
                kept == rendered,
                "{file} differs; run BLESS=1 cargo test --release -p exec-host-tests a_provider_that_searches"
            );
        }
    }

    // The model calls a deferred tool by its own name: the funnel runs it, and its rules hold.
    let read = harness.call("read_file", json!({"path": "notes.txt"})).await;
    assert!(read.ok() && read.text().contains("alpha"), "{}", read.text());
    let secret = harness.call("read_file", json!({"path": "secret.txt"})).await;
    assert_eq!(secret.failure().unwrap().stage, Stage::Authorization, "{}", secret.text());
    let script = harness.run("return (await tools.read_file({ path: 'notes.txt' })).content").await;
    assert_eq!(script.value(), Some(&json!("alpha")), "Exec still reaches the pool");
}

/// Each API's reply (a documented response body, in `golden/replies/`) read into the neutral
/// assistant message, pinned by a golden file; the message rendered back into the next
/// request carries the same calls (ids, names, arguments) the API sent.
#[test]
fn provider_replies_are_read_into_neutral_messages_as_their_golden_files_say() {
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/replies");
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for (provider, name) in [
        (Provider::Anthropic, "anthropic-messages"),
        (Provider::OpenAiResponses, "openai-responses"),
        (Provider::OpenAiChat, "openai-chat-completions"),
    ] {
        let body: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(golden.join(format!("{name}.response.json"))).unwrap()).unwrap();
        let reply = provider.reply(&body).unwrap();
        let read = json!({"message": reply.message, "stop": reply.stop, "skipped": reply.skipped});
        let read = serde_json::to_string_pretty(&read).unwrap() + "\n";
        let path = golden.join(format!("{name}.reply.json"));
        if bless {
            std::fs::write(&path, &read).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(read.as_str()) {
            failures
                .push(format!("{name}.reply.json differs; run BLESS=1 cargo test --release -p exec-host-tests provider_replies"));
        }
        // Back into a request: the same calls, as the API gave them.
        let history = vec![Message::user("What do the notes say?"), reply.message.clone()];
        let request = provider.request("", &[], &history).to_string();
        for block in &reply.message.content {
            if let ContentBlock::ToolUse { id, name, .. } = block {
                assert!(request.contains(id.as_str()) && request.contains(name.as_str()), "{name}: {id} in {request}");
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn provider_renderings_match_their_golden_files() {
    let harness = Harness::new().await;
    let (system, declarations, history) = within(30, transcript(&harness)).await;
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden");
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for (provider, file) in [
        (Provider::Anthropic, "anthropic-messages.json"),
        (Provider::OpenAiResponses, "openai-responses.json"),
        (Provider::OpenAiChat, "openai-chat-completions.json"),
    ] {
        let rendered = serde_json::to_string_pretty(&provider.request(&system, &declarations, &history)).unwrap() + "\n";
        let path = golden.join(file);
        if bless {
            std::fs::create_dir_all(&golden).unwrap();
            std::fs::write(&path, &rendered).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(rendered.as_str()) {
            failures.push(format!(
                "{file} differs; run BLESS=1 cargo test --release -p exec-host-tests provider_renderings and review the diff"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn an_empty_string_is_never_an_empty_result() {
    let harness = Harness::new().await;
    let nested = harness.run("return ''").await;
    assert_eq!(nested.text(), "\"\"");
    let flat = Harness::flat().await.call("text_only", json!({"text": ""})).await;
    assert_eq!(flat.text(), nested.text());
}

#[tokio::test]
async fn calls_past_the_limit_are_counted_not_kept() {
    let harness = Harness::with_limits(exec_host::Limits::default().with_max_calls(3)).await;
    let code = "const big = 'x'.repeat(100000); let refused = 0;
      for (let i = 0; i < 5000; i++) { try { await tools.echo({ value: big }); } catch { refused++; } }
      try { await tools['mcp__' + 'y'.repeat(1000000)]({}); } catch (e) { refused += e.message.length < 2000 ? 1 : 0; }
      return refused";
    let outcome = harness.run(code).await;
    assert_eq!(outcome.value(), Some(&json!(4998)), "{}", outcome.text());
    let client = &outcome.client;
    assert_eq!(client.calls.len(), 5, "the three within the limit and the last two refused");
    assert_eq!(client.calls_omitted, 4996);
    assert_eq!(outcome.summary(), format!("... 5001 tool calls\necho\nmcp__{}…", "y".repeat(251)));
    assert!(client.calls.iter().all(|call| call.name.len() < 300 && call.args.chars().count() <= 2001));
    assert!(client.calls[4].args.is_empty(), "a refused call's arguments are not kept");
}

#[tokio::test]
async fn a_deny_rule_on_exec_withdraws_the_announcement() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let harness = with_settings_file(&settings, &[]).await;
    let mut history = vec![Message::user("hello")];
    let first = step(&harness, &mut history).unwrap();
    rewrite(&settings, r#"{"permissions": {"deny": ["Exec"]}}"#);
    assert_eq!(step(&harness, &mut history).as_deref(), Some(WITHDRAWN_TEXT));
    assert_eq!(harness.session.prepare(&history).unwrap().exec, ExecStatus::Denied);
    rewrite(&settings, "{}");
    assert_eq!(step(&harness, &mut history), Some(first));
}

/// Without a workspace, a session of MCP tools alone declares `Exec` only while a server
/// offers a tool: the builtin tools are what keep the pool from ever being empty.
#[tokio::test]
async fn a_session_without_a_workspace_pools_only_what_it_has() {
    let session = exec_host::Session::builder()
        .sandbox(exec_host_tests::sandbox().await.clone())
        .permission_mode(exec_host::settings::PermissionMode::BypassPermissions)
        .without_compaction()
        .build()
        .await
        .unwrap();
    assert_eq!(session.prepare(&[]).unwrap().exec, ExecStatus::EmptyPool);
    session.add_server("fx", fixture()).await.unwrap();
    let prepared = session.prepare(&[]).unwrap();
    assert_eq!(prepared.exec, ExecStatus::Declared);
    let call = exec_call("return await tools.mcp__fx__greet({ name: 'Ada' })");
    assert_eq!(session.call(call, Default::default()).await.value(), Some(&json!("hello, Ada")));
}
