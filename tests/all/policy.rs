//! Permissions and hooks on every call, nested or flat, builtin or MCP (spec 004, stories
//! 嵌套调用复用同一套权限 and 嵌套调用触发同一套 hook), through the real guest and host, with
//! real hook commands (shell and Python scripts in the workspace).

use std::sync::Arc;
use std::time::Duration;

use exec_host::settings::{Layer, PermissionMode};
use exec_host::{Approval, Failure, Origin, Stage, json};
use exec_host_tests::{Harness, SharedApprover, TestApprover, exec_call, within};
use serde_json::Value;

use crate::mcp::fixture;

/// A harness with managed settings `settings`, mode `mode` (else the harness's own start,
/// bypassPermissions) and `approver`.
async fn harness(settings: Value, mode: Option<PermissionMode>, approver: &Arc<TestApprover>) -> Harness {
    let layer = Layer::from_value(settings).unwrap();
    let approver = Arc::new(SharedApprover(approver.clone()));
    Harness::with(|builder| {
        let builder = builder.managed_settings(layer).approver(approver);
        match mode {
            Some(mode) => builder.permission_mode(mode),
            None => builder,
        }
    })
    .await
}

fn allow_once() -> Arc<TestApprover> {
    TestApprover::new(|_| Approval::AllowOnce)
}

#[tokio::test]
async fn rules_take_precedence_deny_over_ask_over_allow_over_the_mode() {
    use PermissionMode::*;
    // (settings, mode, tool call, expected: "ok" (ran), "asked" (and ran), or a refusal's start)
    let cases: Vec<(Value, PermissionMode, &str, &str)> = vec![
        (
            json!({"permissions": {"deny": ["read_file(a.txt)"], "ask": ["read_file"], "allow": ["read_file"]}}),
            BypassPermissions,
            "tools.read_file({ path: 'a.txt' })",
            "`read_file` is denied by the permissions.deny rule `read_file(a.txt)` in the settings passed in code",
        ),
        (json!({"permissions": {"ask": ["echo"], "allow": ["echo"]}}), Default, "tools.echo({})", "asked"),
        (json!({"permissions": {"allow": ["echo"]}}), Default, "tools.echo({})", "ok"),
        (json!({}), Default, "tools.echo({})", "asked"),
        (json!({}), Default, "tools.read_file({ path: 'a.txt' })", "ok"),
        (json!({}), Default, "tools.write_file({ path: 'b.txt', content: '' })", "asked"),
        (json!({}), AcceptEdits, "tools.write_file({ path: 'b.txt', content: '' })", "ok"),
        (json!({}), AcceptEdits, "tools.echo({})", "asked"),
        (json!({}), DontAsk, "tools.echo({})", "`echo` was not run: it needs approval (the permission mode dontAsk"),
        (
            json!({"permissions": {"ask": ["read_file"]}}),
            DontAsk,
            "tools.read_file({ path: 'a.txt' })",
            "`read_file` was not run: it needs approval (the permissions.ask rule",
        ),
        (json!({"permissions": {"allow": ["echo"]}}), DontAsk, "tools.echo({})", "ok"),
        (json!({}), BypassPermissions, "tools.echo({})", "ok"),
        (json!({"permissions": {"ask": ["echo"]}}), BypassPermissions, "tools.echo({})", "asked"),
        // A tool denied whole is not in the pool (spec 004): the script cannot even name it.
        (json!({"permissions": {"deny": ["echo"]}}), BypassPermissions, "tools.echo({})", "tools.echo is not a function"),
        // The mode of the settings, when none is given in code.
        (json!({"permissions": {"defaultMode": "dontAsk"}}), BypassPermissions, "tools.echo({})", "ok"),
    ];
    for (settings, mode, call, expected) in cases {
        let approver = allow_once();
        let harness = harness(settings.clone(), Some(mode), &approver).await;
        std::fs::write(harness.dir.path().join("a.txt"), "a").unwrap();
        let got = harness.attempt(call).await;
        let asked = !approver.tools().is_empty();
        match expected {
            "asked" => assert!(asked && got == "ok", "{settings} {mode} {call}: {got}, asked {asked}"),
            "ok" => assert!(!asked && got == "ok", "{settings} {mode} {call}: {got}, asked {asked}"),
            refusal => assert!(!asked && got.starts_with(refusal), "{settings} {mode} {call}: {got}"),
        }
    }
    // An explicit mode in code wins over the settings' defaultMode; without one, it applies.
    let approver = allow_once();
    let from_settings = Harness::with(|builder| {
        builder
            .managed_settings(Layer::from_value(json!({"permissions": {"defaultMode": "dontAsk"}})).unwrap())
            .approver(Arc::new(SharedApprover(approver.clone())))
    })
    .await;
    assert!(from_settings.attempt("tools.echo({})").await.contains("the permission mode is dontAsk"));
}

#[tokio::test]
async fn a_session_starts_in_default_and_bypass_can_be_disabled_by_the_managed_layer() {
    let session = exec_host::Session::builder().sandbox(exec_host_tests::sandbox().await.clone()).build().await.unwrap();
    assert_eq!(session.permission_mode().unwrap(), PermissionMode::Default);
    let approver = allow_once();
    let managed = json!({"permissions": {"disableBypassPermissionsMode": "disable"}});
    let harness = harness(managed, Some(PermissionMode::BypassPermissions), &approver).await;
    assert_eq!(harness.session.permission_mode().unwrap(), PermissionMode::Default, "bypass refused: default applies");
    assert_eq!(harness.attempt("tools.echo({})").await, "ok");
    assert_eq!(approver.tools(), ["echo"], "it asked, as default does");
}

#[tokio::test]
async fn path_specifiers_apply_to_the_workspace_tools_through_links_too() {
    let approver = TestApprover::new(|_| Approval::Deny { reason: "no".into() });
    let settings = json!({"permissions": {"deny": ["read_file(secrets/**)", "ls(/secrets)"], "allow": ["write_file(out/*.md)"]}});
    let harness = harness(settings, Some(PermissionMode::Default), &approver).await;
    let dir = harness.dir.path();
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    std::fs::create_dir_all(dir.join("public")).unwrap();
    std::fs::write(dir.join("secrets/key"), "k").unwrap();
    std::fs::write(dir.join("public/readme"), "r").unwrap();
    std::os::unix::fs::symlink("secrets", dir.join("shortcut")).unwrap();
    let denied = "`read_file` is denied by the permissions.deny rule `read_file(secrets/**)`";
    assert!(harness.attempt("tools.read_file({ path: 'secrets/key' })").await.starts_with(denied));
    assert!(harness.attempt("tools.read_file({ path: './public/../secrets/key' })").await.starts_with(denied));
    assert!(harness.attempt("tools.read_file({ path: 'shortcut/key' })").await.starts_with(denied), "a link is followed");
    assert_eq!(harness.attempt("tools.read_file({ path: 'public/readme' })").await, "ok");
    assert!(harness.attempt("tools.ls({ path: 'secrets' })").await.starts_with("`ls` is denied"));
    assert_eq!(harness.attempt("tools.ls({ path: 'public' })").await, "ok");
    assert_eq!(harness.attempt("tools.write_file({ path: 'out/r.md', content: 'x' })").await, "ok");
    assert!(approver.tools().is_empty());
    let other = harness.attempt("tools.write_file({ path: 'out/r.txt', content: 'x' })").await;
    assert_eq!(other, "`write_file` was denied: no", "outside the allowed pattern it asks (and is denied)");
    assert_eq!(approver.tools(), ["write_file"]);
}

#[tokio::test]
async fn a_nested_call_asks_with_its_leaf_name_and_its_exec_and_always_saves_a_rule() {
    let approver = TestApprover::new(|_| Approval::AllowAlways);
    let harness = harness(json!({}), Some(PermissionMode::Default), &approver).await;
    let call = exec_call("await tools.echo({ value: 1 }); await tools.echo({ value: 2 }); return 'done'");
    let id = call.id.clone();
    let outcome = harness.session.call(call, Default::default()).await;
    assert_eq!(outcome.value(), Some(&json!("done")), "{}", outcome.text());
    let asked = approver.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "allowed always: the second call does not ask");
    let request = &asked[0];
    assert_eq!((request.tool.as_str(), request.rule.as_str()), ("echo", "echo"), "the leaf tool, never Exec");
    assert_eq!(request.origin, Origin::Nested { exec_call_id: id.as_str().into(), call: 0 });
    assert_eq!(request.input, json!({"value": 1}));
    assert!(request.why.contains("the permission mode default asks"), "{}", request.why);
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(harness.dir.path().join(".exec-host/settings.json")).unwrap()).unwrap();
    assert_eq!(saved["permissions"]["allow"], json!(["echo"]), "the rule is in the project settings");
    assert_eq!(harness.attempt("tools.echo({})").await, "ok");
    assert_eq!(approver.tools().len(), 1, "the saved rule holds for later Execs too");
}

#[tokio::test]
async fn under_an_ask_rule_always_lasts_the_session_saves_nothing_and_an_allow_rule_does_not_lift_it() {
    let approver = TestApprover::new(|_| Approval::AllowAlways);
    let settings = json!({"permissions": {"ask": ["echo"], "allow": ["echo"]}});
    let harness = harness(settings, Some(PermissionMode::Default), &approver).await;
    let outcome = harness.run("await tools.echo({ value: 1 }); await tools.echo({ value: 2 }); return 'done'").await;
    assert_eq!(outcome.value(), Some(&json!("done")), "{}", outcome.text());
    let asked = approver.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "asked once, though an allow rule names the tool; then always held");
    assert!(asked[0].why.contains("the permissions.ask rule `echo`"), "{}", asked[0].why);
    assert!(!asked[0].allow_rule_stops_asking, "saving an allow rule would not stop an ask rule");
    assert!(!harness.dir.path().join(".exec-host/settings.json").exists(), "no rule saved");
    assert_eq!(harness.attempt("tools.echo({})").await, "ok");
    assert_eq!(approver.tools().len(), 1, "always lasts the session");
}

#[tokio::test]
async fn a_denied_approval_rejects_the_await_and_an_uncaught_one_fails_the_exec() {
    let approver = TestApprover::new(|_| Approval::Deny { reason: "not today".into() });
    let harness = harness(json!({}), Some(PermissionMode::Default), &approver).await;
    assert_eq!(harness.attempt("tools.echo({})").await, "`echo` was denied: not today");
    let outcome = harness.run("await tools.echo({}); return 'ran'").await;
    let failure = outcome.exec_failure().expect("the Exec fails");
    assert!(matches!(failure, Failure::Thrown(error) if error.error.contains("`echo` was denied: not today")), "{failure:?}");
    assert_eq!(outcome.call_names(), ["echo"], "a refused call counts");
    assert_eq!(outcome.summary(), "failed");
    assert_eq!(outcome.client.calls[0].stage(), Some(Stage::Authorization));
    // Exec itself never asks: only its calls do.
    assert!(approver.tools().iter().all(|tool| tool == "echo"));
}

#[tokio::test]
async fn an_approval_parks_one_call_while_the_script_goes_on_and_the_wait_is_not_charged() {
    let approver = TestApprover::slow(Duration::from_millis(400), |_| Approval::AllowOnce);
    let settings = json!({"permissions": {"ask": ["echo"]}});
    let layer = Layer::from_value(settings).unwrap();
    let shared = Arc::new(SharedApprover(approver.clone()));
    let limits = exec_host::Limits::default().with_budget(Duration::from_millis(100));
    let harness = Harness::with(|builder| builder.managed_settings(layer).approver(shared).limits(limits)).await;
    let code = "const asked = tools.echo({ value: 'approved' });
      let counted = 0; for (let i = 0; i < 3; i++) counted = await tools.count({});
      return [counted, await asked]";
    let outcome = within(30, harness.run(code)).await;
    assert_eq!(outcome.value(), Some(&json!([3, "approved"])), "{}", outcome.text());
    assert!(outcome.script_time() < Duration::from_millis(100), "{:?}", outcome.script_time());
    assert_eq!(approver.tools(), ["echo"]);
}

#[tokio::test]
async fn an_approval_that_never_comes_ends_with_the_abort() {
    let approver = TestApprover::slow(Duration::from_secs(3600), |_| Approval::AllowOnce);
    let harness = harness(json!({}), Some(PermissionMode::Default), &approver).await;
    let abort = exec_host::CancellationToken::new();
    let options = exec_host_tests::abort_after_call(abort, "echo", 100);
    let outcome = within(30, harness.run_options("await tools.echo({})", options)).await;
    assert_eq!(outcome.exec_failure(), Some(&Failure::Aborted));
    // Or by the cap on nested waits, when one is set.
    let capped = exec_host::Limits::default().with_max_nested_wait(Some(Duration::from_millis(200)));
    let shared = Arc::new(SharedApprover(approver.clone()));
    let harness = Harness::with(|builder| builder.permission_mode(PermissionMode::Default).approver(shared).limits(capped)).await;
    let outcome = within(30, harness.run("await tools.echo({})")).await;
    assert!(
        matches!(outcome.exec_failure(), Some(Failure::NestedWaitExceeded { .. })),
        "{:?} {}",
        outcome.exec_failure(),
        outcome.text()
    );
}

/// Writes a hook script into the workspace and gives the command that runs it.
fn script(harness: &Harness, name: &str, body: &str) -> String {
    std::fs::write(harness.dir.path().join(name), body).unwrap();
    if name.ends_with(".py") { format!("python3 {name}") } else { format!("sh {name}") }
}

fn hooks(event: &str, matcher: &str, command: &str) -> Value {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}})
}

/// A harness whose hooks are written after it exists (they live in its workspace).
async fn with_hooks(write: impl FnOnce(&Harness) -> Value) -> Harness {
    let probe = Harness::new().await;
    let settings = write(&probe);
    let dir = probe.dir;
    let file = dir.path().join("hooks.json");
    std::fs::write(&file, settings.to_string()).unwrap();
    let session = Harness::builder(dir.path(), &probe.counter)
        .await
        .settings_files(vec![file])
        .transcript_path(dir.path().join("transcript.jsonl"))
        .build()
        .await
        .unwrap();
    Harness { dir, session, counter: probe.counter }
}

#[tokio::test]
async fn a_pre_tool_use_hook_blocks_nested_calls_of_builtin_and_mcp_tools() {
    let harness = with_hooks(|h| {
        let command = script(h, "block.sh", "cat > /dev/null\necho \"writes are frozen\" >&2\nexit 2\n");
        hooks("PreToolUse", "write_file|mcp__fx__add", &command)
    })
    .await;
    harness.session.add_server("fx", fixture()).await.unwrap();
    let blocked = "PreToolUse:write_file hook error: writes are frozen";
    assert_eq!(harness.attempt("tools.write_file({ path: 'x', content: '' })").await, blocked);
    assert!(!harness.dir.path().join("x").exists(), "the call did not run");
    assert_eq!(
        harness.attempt("tools.mcp__fx__add({ a: 1, b: 2 })").await,
        "PreToolUse:mcp__fx__add hook error: writes are frozen"
    );
    assert_eq!(harness.attempt("tools.read_file({ path: 'block.sh' })").await, "ok", "the matcher names the leaf tool");
    let outcome = harness.run("await tools.write_file({ path: 'x', content: '' }); return 'ran'").await;
    assert!(outcome.text().contains(blocked), "uncaught, the Exec fails with it: {}", outcome.text());
    assert_eq!(outcome.call_names(), ["write_file"], "a blocked call counts in the record");
}

#[tokio::test]
async fn the_same_hook_gives_a_flat_call_the_same_text() {
    let blocked = with_hooks(|h| {
        let command = script(h, "block.sh", "cat > /dev/null\necho \"frozen\" >&2\nexit 2\n");
        let mut settings = hooks("PreToolUse", "echo", &command);
        settings["enableExec"] = json!(false);
        settings
    })
    .await;
    let flat = blocked.call("echo", json!({"value": 1})).await;
    assert_eq!(flat.failure().unwrap().stage, Stage::Authorization);
    assert_eq!(flat.text(), "PreToolUse:echo hook error: frozen");
}

#[tokio::test]
async fn a_post_tool_use_hook_reports_into_the_conversation_and_the_script_goes_on() {
    let harness = with_hooks(|h| {
        let command = script(h, "review.sh", "cat > /dev/null\necho \"needs review\" >&2\nexit 2\n");
        let mut settings = hooks("PostToolUse", "echo", &command);
        // A deferred builtin and an MCP tool, reported through `decision: block`.
        let block = script(h, "block.py", "import json, sys\nname = json.load(sys.stdin)['tool_name']\nprint(json.dumps({'decision': 'block', 'reason': 'saw ' + name}))\n");
        settings["hooks"]["PostToolUse"].as_array_mut().unwrap().push(json!({"matcher": "read_file|mcp__fx__.*", "hooks": [{"type": "command", "command": block}]}));
        settings
    })
    .await;
    let outcome =
        harness.run("const a = await tools.echo({ value: 1 }); const b = await tools.add({ a: 1, b: 1 }); return [a, b]").await;
    assert_eq!(outcome.value(), Some(&json!([1, 2])), "{}", outcome.text());
    let messages: Vec<String> = outcome.messages.iter().map(exec_host::Message::text).collect();
    assert_eq!(messages, ["PostToolUse:echo hook blocking error from command: \"sh review.sh\": needs review"]);
    assert!(outcome.messages[0].is_meta());
    // The history gets them after the turn's results.
    let mut history = Vec::new();
    exec_host::append_results(&mut history, &[outcome]);
    assert_eq!(history.len(), 2);

    harness.session.add_server("fx", fixture()).await.unwrap();
    let outcome = harness
        .run("const sum = await tools.mcp__fx__add({ a: 2, b: 3 }); const text = await tools.read_file({ path: 'block.py' }); return sum")
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let messages: Vec<String> = outcome.messages.iter().map(exec_host::Message::text).collect();
    assert_eq!(
        messages,
        [
            "PostToolUse:mcp__fx__add hook blocking error from command: \"python3 block.py\": saw mcp__fx__add",
            "PostToolUse:read_file hook blocking error from command: \"python3 block.py\": saw read_file",
        ]
    );
}

#[tokio::test]
async fn hooks_that_fail_or_hang_let_the_call_go_on() {
    let harness = with_hooks(|h| {
        let crash = script(h, "crash.sh", "cat > /dev/null\necho broken >&2\nexit 1\n");
        let hang = script(h, "hang.sh", "sleep 30\n");
        json!({"hooks": {
            "PreToolUse": [{"matcher": "echo", "hooks": [{"type": "command", "command": crash}, {"type": "command", "command": hang, "timeout": 1}]},
                           {"matcher": "add", "hooks": [{"type": "command", "command": "no-such-command-anywhere"}]},
                           // Invalid JSON that would deny if it were read: plain output, no decision.
                           {"matcher": "count", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"permissionDecision\": \"deny\"'"}]}],
            "PostToolUse": [{"matcher": "echo", "hooks": [{"type": "command", "command": "exit 7"}]},
                            {"matcher": "count", "hooks": [{"type": "command", "command": "echo '{\"decision\": \"block\", '"}]}]}})
    })
    .await;
    let code = "return [await tools.echo({ value: 'ok' }), await tools.add({ a: 2, b: 2 }), await tools.count({})]";
    let outcome = within(30, harness.run(code)).await;
    assert_eq!(outcome.value(), Some(&json!(["ok", 4, 1])), "{}", outcome.text());
    assert!(outcome.messages.is_empty());
}

#[tokio::test]
async fn a_hook_that_prints_without_end_is_cut_and_stopped() {
    let harness = with_hooks(|_| {
        json!({"hooks": {
            // Endless output: kept up to its bound, stopped at its timeout, the call goes on.
            "PreToolUse": [{"matcher": "echo", "hooks": [{"type": "command", "command": "yes 'no end'", "timeout": 1}]}],
            // A large answer that ends, and blocks: the message keeps the bound, not the flood.
            "PostToolUse": [{"matcher": "echo", "hooks": [{"type": "command", "command": "head -c 5000000 /dev/zero | tr '\\0' x >&2; exit 2"}]}]}})
    })
    .await;
    let started = std::time::Instant::now();
    let outcome = within(30, harness.run("return await tools.echo({ value: 'ok' })")).await;
    assert_eq!(outcome.value(), Some(&json!("ok")), "{}", outcome.text());
    assert!(started.elapsed() < Duration::from_secs(20));
    let text = outcome.messages[0].text();
    assert!(text.len() <= exec_host::limits::HOOK_OUTPUT_BYTES + 200, "{}", text.len());
    assert!(text.ends_with("xxx"));
}

#[tokio::test]
async fn a_flat_call_asks_and_is_refused_with_the_nested_text() {
    let approver = TestApprover::new(|_| Approval::Deny { reason: "not today".into() });
    let settings = json!({"enableExec": false});
    let harness = harness(settings, Some(PermissionMode::Default), &approver).await;
    let flat = harness.call("echo", json!({"value": 1})).await;
    assert_eq!(flat.failure().unwrap().stage, Stage::Authorization);
    assert_eq!(flat.text(), "`echo` was denied: not today", "the same text as nested");
    let request = approver.asked.lock().unwrap()[0].clone();
    assert!(matches!(request.origin, Origin::Direct { .. }), "{:?}", request.origin);
    // With no approver, the refusal names the rule that would let it run.
    let nobody = Harness::with(|builder| {
        builder
            .managed_settings(Layer::from_value(json!({"enableExec": false})).unwrap())
            .permission_mode(PermissionMode::Default)
    })
    .await;
    let refused = nobody.call("echo", json!({"value": 1})).await;
    assert!(refused.text().contains("a permissions.allow rule `echo` lets it run"), "{}", refused.text());
}

#[tokio::test]
async fn a_hook_can_decide_and_change_the_input() {
    let harness = with_hooks(|h| {
        let decide = script(
            h,
            "decide.py",
            r#"import json, sys
event = json.load(sys.stdin)
value = event["tool_input"].get("value")
decision = {"deny": "deny", "ask": "ask", "allow": "allow"}.get(value)
out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecisionReason": "said " + str(value)}}
if decision:
    out["hookSpecificOutput"]["permissionDecision"] = decision
if value == "rewrite":
    out["hookSpecificOutput"]["updatedInput"] = {"value": "rewritten"}
print(json.dumps(out))
"#,
        );
        hooks("PreToolUse", "echo", &decide)
    })
    .await;
    // Start the same workspace's session in default mode, with an approver.
    let approver = TestApprover::new(|_| Approval::AllowOnce);
    let file = harness.dir.path().join("hooks.json");
    let session = Harness::builder(harness.dir.path(), &harness.counter)
        .await
        .settings_files(vec![file])
        .permission_mode(PermissionMode::Default)
        .approver(Arc::new(SharedApprover(approver.clone())))
        .build()
        .await
        .unwrap();
    let harness = Harness { dir: harness.dir, session, counter: harness.counter };
    // A hook's deny is a decision, worded as one.
    assert_eq!(harness.attempt("tools.echo({ value: 'deny' })").await, "`echo` was denied by a PreToolUse hook: said deny");
    assert_eq!(harness.attempt("tools.echo({ value: 'allow' })").await, "ok", "allow: no question asked");
    assert!(approver.tools().is_empty());
    assert_eq!(harness.attempt("tools.echo({ value: 'ask' })").await, "ok");
    assert_eq!(approver.tools(), ["echo"]);
    assert!(approver.asked.lock().unwrap()[0].why.contains("said ask"));
    let rewritten = harness.run("return await tools.echo({ value: 'rewrite' })").await;
    assert_eq!(rewritten.value(), Some(&json!("rewritten")), "{}", rewritten.text());
    assert_eq!(approver.tools().len(), 2, "a changed input alone decides nothing: the mode asks");
    // An answer without a decision decides nothing: the mode asks.
    assert_eq!(harness.attempt("tools.echo({ value: 'other' })").await, "ok");
    assert_eq!(approver.tools().len(), 3);
}

#[tokio::test]
async fn hooks_see_the_call_as_claude_code_describes_it_and_not_tool_search() {
    let harness = with_hooks(|h| {
        let log = script(
            h,
            "log.py",
            "import json, sys\nwith open('events.jsonl', 'a') as f:\n    f.write(json.dumps(json.load(sys.stdin)) + '\\n')\n",
        );
        json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": log}]}],
                         "PostToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": log}]}]}})
    })
    .await;
    let outcome = harness.run("await tools.ToolSearch({ query: 'echo' }); return await tools.echo({ value: { n: 1 } })").await;
    assert!(outcome.ok(), "{}", outcome.text());
    let events: Vec<Value> = std::fs::read_to_string(harness.dir.path().join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let seen: Vec<(String, String)> = events
        .iter()
        .map(|e| (e["hook_event_name"].as_str().unwrap().to_string(), e["tool_name"].as_str().unwrap().to_string()))
        .collect();
    let seen: Vec<(&str, &str)> = seen.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(
        seen,
        [("PreToolUse", "Exec"), ("PreToolUse", "echo"), ("PostToolUse", "echo"), ("PostToolUse", "Exec")],
        "no ToolSearch"
    );
    let post = &events[2];
    assert_eq!(post["tool_input"], json!({"value": {"n": 1}}));
    assert_eq!(post["tool_response"], json!({"n": 1}), "the value the script received");
    assert_eq!(post["permission_mode"], "bypassPermissions");
    assert_eq!(post["cwd"], json!(harness.dir.path().display().to_string()));
    assert!(post["session_id"].as_str().is_some_and(|id| id.len() == 32));
    assert_eq!(events[3]["tool_response"], json!({"n": 1}), "Exec's own response is its value");
    // Each call's id pairs its PreToolUse with its PostToolUse; a script's call is named
    // after its Exec.
    let ids: Vec<&str> = events.iter().map(|e| e["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!((ids[0], ids[1]), (ids[3], ids[2]), "{ids:?}");
    assert!(ids[1].starts_with(&format!("{}#", ids[0])), "{ids:?}");
    let transcript = harness.dir.path().join("transcript.jsonl").display().to_string();
    assert!(events.iter().all(|e| e["transcript_path"] == json!(transcript)), "{events:?}");
}

#[tokio::test]
async fn exec_s_own_hook_stops_it_before_any_script_runs() {
    let harness = with_hooks(|h| {
        let block = script(h, "block.sh", "cat > /dev/null\necho \"no scripts\" >&2\nexit 2\n");
        let log = script(h, "log.sh", "cat >> log.txt\n");
        json!({"hooks": {"PreToolUse": [{"matcher": "Exec", "hooks": [{"type": "command", "command": block}]},
                                        {"matcher": "count", "hooks": [{"type": "command", "command": log}]}]}})
    })
    .await;
    let outcome = harness.run("await tools.count({}); return 1").await;
    assert_eq!(outcome.failure().unwrap().stage, Stage::Authorization);
    assert_eq!(outcome.text(), "PreToolUse:Exec hook error: no scripts");
    assert_eq!(harness.counter.get(), 0);
    assert!(!harness.dir.path().join("log.txt").exists(), "no nested hook ran");
}

#[tokio::test]
async fn the_hooks_of_concurrent_calls_run_concurrently() {
    // Each hook waits until all five have started (or gives up after 10 s): they finish only
    // if they run together.
    let harness = with_hooks(|h| {
        let gather = script(
            h,
            "gather.py",
            r#"import os, sys, time, uuid
sys.stdin.read()
open(os.path.join("arrivals", uuid.uuid4().hex), "w").close()
deadline = time.time() + 10
while len(os.listdir("arrivals")) < 5 and time.time() < deadline:
    time.sleep(0.01)
if len(os.listdir("arrivals")) < 5:
    print("alone", file=sys.stderr)
    sys.exit(2)
"#,
        );
        std::fs::create_dir(h.dir.path().join("arrivals")).unwrap();
        hooks("PreToolUse", "echo", &gather)
    })
    .await;
    let outcome =
        within(60, harness.run("return await Promise.all([1, 2, 3, 4, 5].map((value) => tools.echo({ value })))")).await;
    assert_eq!(outcome.value(), Some(&json!([1, 2, 3, 4, 5])), "{}", outcome.text());
}

#[tokio::test]
async fn a_rule_with_a_specifier_that_cannot_apply_stops_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(&file, "{\"permissions\": {\n  \"deny\": [\"mcp__fx__add(secret)\"]\n}}").unwrap();
    let error = Harness::builder(dir.path(), &Default::default()).await.settings_files(vec![file]).build().await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("permissions.deny[0]: rule \"mcp__fx__add(secret)\": a rule about a tool of an MCP server or an API takes no specifier"), "{text}");
}

#[tokio::test]
async fn an_mcp_tool_asks_by_its_full_name_nested_and_flat_and_a_server_rule_allows_it() {
    let approver = TestApprover::new(|_| Approval::AllowOnce);
    let harness = harness(json!({"nonDeferredTools": ["mcp__fx__echo"]}), Some(PermissionMode::Default), &approver).await;
    harness.session.add_server("fx", fixture()).await.unwrap();
    assert_eq!(harness.attempt("tools.mcp__fx__add({ a: 1, b: 2 })").await, "ok");
    let flat = harness.call("mcp__fx__echo", json!({"text": "hi"})).await;
    assert!(flat.ok(), "{}", flat.text());
    let asked = approver.asked.lock().unwrap().clone();
    let seen: Vec<(&str, &str)> = asked.iter().map(|r| (r.tool.as_str(), r.rule.as_str())).collect();
    assert_eq!(seen, [("mcp__fx__add", "mcp__fx__add"), ("mcp__fx__echo", "mcp__fx__echo")]);
    assert!(matches!(asked[1].origin, Origin::Direct { .. }));

    // A rule naming the server covers its tools, nested and flat.
    let quiet = allow_once();
    let settings = json!({"nonDeferredTools": ["mcp__fx__echo"], "permissions": {"allow": ["mcp__fx"]}});
    let harness = self::harness(settings, Some(PermissionMode::Default), &quiet).await;
    harness.session.add_server("fx", fixture()).await.unwrap();
    assert_eq!(harness.attempt("tools.mcp__fx__add({ a: 1, b: 2 })").await, "ok");
    assert!(harness.call("mcp__fx__echo", json!({"text": "hi"})).await.ok());
    assert!(quiet.tools().is_empty());
}

#[tokio::test]
async fn a_session_for_another_client_asks_that_client_and_shares_the_tools() {
    let first = allow_once();
    let harness = harness(json!({}), Some(PermissionMode::Default), &first).await;
    let second = TestApprover::new(|_| Approval::Deny { reason: "the second client said no".into() });
    let other = harness.session.for_client(Arc::new(SharedApprover(second.clone())), None);
    assert_ne!(other.id(), harness.session.id(), "hooks see a session id of its own");

    let run = |session: &exec_host::Session, code: &str| {
        let (session, call) = (session.clone(), exec_call(code));
        async move { session.call(call, Default::default()).await }
    };
    let code = "try { await tools.echo({ value: 1 }); return 'ran'; } catch (e) { return e.message; }";
    assert_eq!(run(&harness.session, code).await.value(), Some(&json!("ran")));
    let refused = run(&other, code).await;
    assert!(refused.text().contains("the second client said no"), "{}", refused.text());
    assert_eq!((first.tools(), second.tools()), (vec!["echo".to_string()], vec!["echo".to_string()]), "each asked its own");

    // The tools are shared: a server added through one session is reachable from the other.
    harness.session.add_server("late", fixture()).await.unwrap();
    let reached = run(&other, "return (await tools.mcp__late__add({ a: 2, b: 3 })).sum").await;
    assert!(reached.text().contains("the second client said no"), "{}", reached.text());
    assert_eq!(second.tools().last().map(String::as_str), Some("mcp__late__add"), "reached, and asked about");
}
