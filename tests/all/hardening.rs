//! Attempts to widen a script's rights or hang the host through names, the workspace's
//! control files and its special files, each through the real guest and host.

use std::time::Duration;

use exec_host::json;
use exec_host::settings::Layer;
use exec_host_tests::{Harness, within};

use crate::mcp::{FIXTURE, fixture, stdio};

#[tokio::test]
async fn a_server_rule_covers_every_tool_of_the_server_and_degenerate_names_are_refused() {
    let harness = Harness::new().await;
    harness.session.add_server("fx", fixture()).await.unwrap();
    // The server adds tools with degenerate names: refused at registration, never pooled.
    for name in ["", " ", "a\u{7}b"] {
        let added = harness.attempt(&format!("tools.mcp__fx__add_tool({{ name: {} }})", json!(name))).await;
        assert_eq!(added, "ok");
    }
    assert_eq!(harness.attempt("tools.mcp__fx__add_tool({ name: 'late__x' })").await, "ok");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !harness.available().iter().any(|t| t.name == "mcp__fx__late__x") {
        assert!(std::time::Instant::now() < deadline, "the list was not refreshed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let fx: Vec<String> = harness.available().into_iter().map(|t| t.name).filter(|n| n.starts_with("mcp__fx__")).collect();
    assert!(fx.iter().all(|n| n.len() > "mcp__fx__".len() && !n.contains([' ', '\u{7}'])), "{fx:?}");

    // Every tool of the server, odd names included, is covered by a rule naming the server
    // (see the settings' own tests): such a server is not even started.
    let denied =
        Harness::with(|b| b.managed_settings(Layer::from_value(json!({"permissions": {"deny": ["mcp__fx"]}})).unwrap())).await;
    let refused = denied.session.add_server("fx", fixture()).await.unwrap_err();
    assert!(refused.reason().contains("the permissions.deny rule `mcp__fx`"), "{}", refused.reason());
    assert!(denied.session.server_states().is_empty(), "no process was started");
    assert!(denied.available().iter().all(|t| !t.name.starts_with("mcp__fx")));
    let search = denied.run("return (await tools.ToolSearch({ query: 'echo' })).matches.map((m) => m.name)").await;
    assert!(!search.text().contains("mcp__fx"), "{}", search.text());
}

#[tokio::test]
async fn control_files_are_read_only_to_the_workspace_tools() {
    let harness = Harness::new().await;
    let root = harness.dir.path();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.join("sub/.git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::os::unix::fs::symlink(".git", root.join("innocent")).unwrap();
    std::os::unix::fs::symlink(".exec-host", root.join("dotdir")).unwrap();
    for call in [
        "tools.write_file({ path: '.exec-host/settings.json', content: '{\"permissions\":{\"allow\":[\"write_file\"]}}' })",
        "tools.write_file({ path: '.git/hooks/pre-commit', content: '#!/bin/sh\\nexit 0' })",
        "tools.write_file({ path: '.GIT/hooks/post-checkout', content: 'x' })",
        "tools.write_file({ path: 'sub/.git/config', content: 'x' })",
        "tools.write_file({ path: 'innocent/hooks/pre-push', content: 'x' })",
        "tools.write_file({ path: 'dotdir/settings.json', content: '{}' })",
        "tools.write_file({ path: 'a/../.exec-host/x', content: '{}' })",
        "tools.edit_file({ path: '.git/config', old_string: 'core', new_string: 'x' })",
        "tools.edit_file({ path: 'innocent/config', old_string: 'core', new_string: 'x' })",
    ] {
        let message = harness.attempt(call).await;
        assert!(message.contains("which the workspace tools keep read-only"), "{call}: {message}");
    }
    assert!(!root.join(".exec-host").exists(), "no folder was made for the refused write");
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert_eq!(std::fs::read_to_string(root.join(".git/config")).unwrap(), "[core]\n");
    // Reading them is fine; so is a file whose name only looks like one.
    assert_eq!(harness.attempt("tools.read_file({ path: '.git/config' })").await, "ok");
    assert_eq!(harness.attempt("tools.write_file({ path: 'notes.git/x', content: 'x' })").await, "ok");
    assert_eq!(harness.attempt("tools.write_file({ path: '.github/x', content: 'x' })").await, "ok");
}

#[tokio::test]
async fn the_session_s_settings_files_in_the_workspace_are_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("my-settings.json");
    std::fs::write(&file, "{}").unwrap();
    let session =
        Harness::builder(dir.path(), &Default::default()).await.settings_files(vec![file.clone()]).build().await.unwrap();
    let harness = Harness { dir, session, counter: Default::default() };
    let message = harness.attempt("tools.write_file({ path: 'my-settings.json', content: '{\"enableExec\": true}' })").await;
    assert!(message.contains("settings or configuration file of this host"), "{message}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");
}

#[tokio::test]
async fn hard_links_fifos_and_devices_are_refused_at_once() {
    let harness = Harness::new().await;
    let root = harness.dir.path();
    std::fs::write(root.join("original"), "keep me").unwrap();
    std::fs::hard_link(root.join("original"), root.join("alias")).unwrap();
    let fifo = root.join("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();

    let message = harness.attempt("tools.write_file({ path: 'alias', content: 'changed' })").await;
    assert!(message.contains("has 2 hard links"), "{message}");
    let message = harness.attempt("tools.edit_file({ path: 'alias', old_string: 'keep', new_string: 'lose' })").await;
    assert!(message.contains("has 2 hard links"), "{message}");
    assert_eq!(std::fs::read_to_string(root.join("original")).unwrap(), "keep me");

    // A FIFO with nobody at the other end: nothing may block.
    let started = std::time::Instant::now();
    for call in [
        "tools.read_file({ path: 'pipe' })",
        "tools.write_file({ path: 'pipe', content: 'x' })",
        "tools.edit_file({ path: 'pipe', old_string: 'a', new_string: 'b' })",
    ] {
        let message = harness.attempt(call).await;
        assert!(message.contains("is not a regular file"), "{call}: {message}");
    }
    let grep = harness.run("return (await tools.grep({ pattern: 'x' })).matches.length").await;
    assert!(grep.ok(), "{}", grep.text());
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // /dev/zero through a link leads outside the workspace; a device inside is refused.
    let message = harness.attempt("tools.read_file({ path: 'zero' })").await;
    assert!(message.contains("leads outside the workspace"), "{message}");
}

#[tokio::test]
async fn one_endless_line_is_read_in_bounded_memory() {
    let harness = Harness::new().await;
    // 64 MiB of one line, sparse on disk: read_file keeps 2,000 characters of it.
    let file = std::fs::File::create(harness.dir.path().join("line.txt")).unwrap();
    std::io::Write::write_all(&mut &file, b"a").unwrap();
    file.set_len(64 << 20).unwrap();
    // The zeros after the first byte make it binary: check a text line instead.
    std::fs::write(harness.dir.path().join("wide.txt"), "b".repeat(20 << 20) + "\nend\n").unwrap();
    let outcome = harness.run("const r = await tools.read_file({ path: 'wide.txt' }); return [r.content.length, r.total_lines, r.content.slice(-45)]").await;
    let value = outcome.value().unwrap_or_else(|| panic!("{}", outcome.text()));
    assert_eq!(value[1], json!(2));
    assert!(value[2].as_str().unwrap().contains("[line cut: 20971520 characters in all]\nend"), "{value}");
    let binary = harness.attempt("tools.read_file({ path: 'line.txt' })").await;
    assert!(binary.contains("binary file"), "{binary}");
}

#[tokio::test]
async fn a_huge_thrown_error_is_cut_like_a_returned_value() {
    let harness = Harness::new().await;
    let outcome = within(60, harness.run("throw new Error('x'.repeat(5e6))")).await;
    assert!(!outcome.ok());
    let text = &outcome.model.text;
    assert!(text.len() < 31_000, "{} characters reached the model", text.len());
    // What the model reads is compacted from the message kept whole up to its bound.
    let note = format!("the first {} shown]", exec_host::limits::MAX_KEPT_RESULT_CHARS);
    assert!(text.contains("[result cut: ") && text.contains(&note), "{}", &text[text.len() - 200..]);
    assert!(outcome.client.text.len() < 31_000, "the client's text is cut at the result cap");
}

#[tokio::test]
async fn a_folder_swapped_for_a_link_while_writes_run_never_gets_a_byte_into_git() {
    let harness = Harness::new().await;
    let root = harness.dir.path().to_path_buf();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.join(".exec-host")).unwrap();
    // A link to a file that does not exist yet, inside a read-only folder.
    std::os::unix::fs::symlink(".exec-host/settings.json", root.join("planted")).unwrap();
    let message = harness.attempt("tools.write_file({ path: 'planted', content: '{}' })").await;
    assert!(message.contains("keep read-only"), "{message}");
    assert!(!root.join(".exec-host/settings.json").exists());

    // `swap` flips between a real folder and a link to `.git` while the script writes into it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (root, stop) = (root.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::create_dir_all(root.join("real/hooks"));
                let _ = std::fs::remove_file(root.join("swap"));
                let _ = std::os::unix::fs::symlink("real", root.join("swap"));
                let _ = std::fs::remove_file(root.join("swap"));
                let _ = std::os::unix::fs::symlink(".git", root.join("swap"));
            }
        })
    };
    let code = "let refused = 0; for (let i = 0; i < 300; i++) { try { await tools.write_file({ path: 'swap/hooks/pre-commit', content: 'evil' }); } catch (e) { refused++; } } return refused";
    let outcome = within(60, harness.run(code)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(outcome.ok(), "{}", outcome.text());
    // Not a byte, and not an empty file either: files are created only in a folder held
    // open and checked.
    assert!(!root.join(".git/hooks/pre-commit").exists(), "a write reached .git");
}

#[tokio::test]
async fn a_tool_list_without_end_or_too_wide_is_refused_not_grown() {
    let harness = Harness::new().await;
    let endless = fixture().with_env("FIXTURE_PAGES", "endless");
    let error = within(60, harness.session.add_server("endless", endless)).await.unwrap_err();
    assert!(matches!(&*error.why, exec_host::mcp::NotStarted::Tools(exec_host::mcp::ToolsError::TooManyPages)), "{error:?}");
    let error = exec_host::error_sentence(&error);
    assert!(error.contains("goes on past 1000 pages"), "{error}");
    let wide = fixture().with_env("FIXTURE_PAGES", "wide");
    let error = exec_host::error_sentence(&within(60, harness.session.add_server("wide", wide)).await.unwrap_err());
    assert!(error.contains("more than 10000 tools"), "{error}");
    assert!(harness.available().iter().all(|t| !t.name.starts_with("mcp__endless") && !t.name.starts_with("mcp__wide")));
}

#[tokio::test]
async fn arguments_are_bounded_per_call_and_in_flight_before_the_host_parses_them() {
    let limits = exec_host::Limits::default().with_max_argument_bytes(1024 * 1024);
    let harness = Harness::with_limits(limits).await;
    // A sparse array: small in the guest, 5 MB of `null`s as JSON.
    let code = "try { await tools.echo({ value: new Array(1e6) }); return 'ran'; } catch (e) { return e.message; }";
    let outcome = within(60, harness.run(code)).await;
    let message = outcome.value().and_then(|v| v.as_str()).unwrap_or_default().to_string();
    assert!(message.contains("more than 1048576 bytes as JSON, more than a call may pass"), "{}", outcome.text());
    // Many parked calls of 300 KB each: past 4 MiB in flight, the next is refused; awaited, it goes on.
    let code = "const big = 'x'.repeat(300000); const parked = []; let refused = '';
      for (let i = 0; i < 20; i++) { const p = tools.sleep({ ms: 300, pad: big }).catch((e) => { refused = refused || e.message; }); parked.push(p); }
      await Promise.all(parked); const after = await tools.echo({ value: big.length }); return [refused, after];";
    let outcome = within(60, harness.run(code)).await;
    let value = outcome.value().unwrap_or_else(|| panic!("{}", outcome.text()));
    assert!(value[0].as_str().unwrap().contains("the calls in flight already hold"), "{value}");
    assert_eq!(value[1], json!(300000));
}

#[tokio::test]
async fn a_hostile_server_fails_each_unreadable_answer_at_once_and_skips_only_its_bad_tools() {
    let harness = Harness::new().await;
    let connected = within(60, harness.session.add_server("evil", stdio(FIXTURE, &["--hostile"]))).await.unwrap();
    let skipped: Vec<_> = connected.skipped.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(skipped, ["*", "a(b)", "bad_schema", "(unnamed)"], "{:?}", connected.skipped);
    assert_eq!(connected.tools, 15, "the rest of the list is offered");
    // Each unreadable answer fails its own call with a sentence naming server and tool; the
    // connection goes on serving the next call.
    let code = "const out = {};
      for (const name of ['oversize', 'oversize_late', 'invalid_utf8', 'lone_surrogate', 'deep', 'not_a_result', 'noise_first', 'storm']) {
        try { out[name] = ['ok', await tools['mcp__evil__' + name]({})]; } catch (e) { out[name] = ['error', e.message]; }
        out[name].push(await tools.mcp__evil__fine({}));
      }
      try { await tools.mcp__evil__crash({}); } catch (e) { out.crash = e.message; }
      return out;";
    let outcome = within(120, harness.run(code)).await;
    let value = outcome.value().unwrap_or_else(|| panic!("{}", outcome.text()));
    for name in ["oversize", "oversize_late", "invalid_utf8", "lone_surrogate", "deep", "not_a_result"] {
        let [kind, message, after] = value[name].as_array().unwrap().as_slice() else { panic!("{value}") };
        assert_eq!(kind, "error", "{name}: {value}");
        let message = message.as_str().unwrap();
        assert!(message.contains("MCP server `evil`") && message.contains(&format!("`{name}`")), "{name}: {message}");
        assert_eq!(after, "fine", "{name}: the connection serves the next call");
    }
    assert!(value["oversize"][1].as_str().unwrap().contains("longer than 16 MiB"), "{value}");
    assert!(value["not_a_result"][1].as_str().unwrap().contains("not a tool result"), "{value}");
    assert_eq!(value["noise_first"], json!(["ok", "after the noise", "fine"]));
    assert_eq!(value["storm"], json!(["ok", "after the storm", "fine"]));
    assert!(value["crash"].as_str().unwrap().contains("disconnected before answering `crash`"), "{value}");
}

#[tokio::test]
async fn calls_to_a_server_that_stops_reading_wait_for_room_instead_of_queueing_in_the_host() {
    // 1 MiB may wait to reach the server; each call below weighs its 200 KB of arguments and
    // a 1 KiB envelope, so five fit and the other three wait.
    // The server stops reading for 2 s; the script gives up waiting after 0.5 s.
    let limits = exec_host::Limits::default().with_max_nested_wait(Some(Duration::from_millis(500)));
    let harness = Harness::with(|builder| builder.mcp_queued_bytes(1 << 20).limits(limits)).await;
    within(60, harness.session.add_server("evil", stdio(FIXTURE, &["--hostile"]))).await.unwrap();
    let code = "tools.mcp__evil__stall({}); const blob = 'x'.repeat(200000);
      await Promise.allSettled(Array.from({ length: 8 }, () => tools.mcp__evil__fine({ blob })));";
    let outcome = within(60, harness.run(code)).await;
    assert!(outcome.text().contains("waited"), "{}", outcome.text());
    // What was admitted reaches the server once it reads again; what waited never does.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let outcome = within(60, harness.run("return await tools.mcp__evil__received({})")).await;
    assert_eq!(outcome.value(), Some(&json!("5")), "{}", outcome.text());
}

#[tokio::test]
async fn arguments_past_their_bounds_are_a_catchable_error_in_the_guest_never_a_panic() {
    let harness = Harness::new().await;
    // A sparse array of 200 million holes, a 50 MB string: refused while being encoded.
    for value in ["new Array(2e8)", "'x'.repeat(5e7)"] {
        let code = format!(
            "try {{ await tools.echo({{ value: {value} }}); return 'ran'; }} catch (e) {{ return e.name + ': ' + e.message; }}"
        );
        let outcome = within(60, harness.run(&code)).await;
        let message = outcome.value().and_then(|v| v.as_str()).unwrap_or_else(|| panic!("{value}: {}", outcome.text()));
        assert_eq!(message, "TypeError: args take more than 8388608 bytes as JSON, more than a call may pass", "{value}");
    }
    // The nesting bound has one owner (MAX_ARGUMENT_DEPTH), enforced in the guest: 100 levels
    // pass, 101 are refused there with the path, before the host's parser sees them.
    let depth = exec_host::limits::MAX_ARGUMENT_DEPTH;
    // `v` has `arrays` levels of arrays; the argument object around it is one more.
    let nest = |arrays: u32| format!("let v = 1; for (let i = 0; i < {arrays}; i++) v = [v];");
    let code = format!("{} const out = await tools.echo({{ value: v }}); return JSON.stringify(out).length", nest(depth - 1));
    let outcome = within(60, harness.run(&code)).await;
    assert!(outcome.ok(), "{depth} levels must pass: {}", outcome.text());
    let code =
        format!("{} try {{ await tools.echo({{ value: v }}); return 'passed'; }} catch (e) {{ return e.message; }}", nest(depth));
    let outcome = within(60, harness.run(&code)).await;
    let message = outcome.value().and_then(|v| v.as_str()).unwrap_or_else(|| panic!("{}", outcome.text())).to_string();
    assert!(message.contains(&format!("is nested more than {depth} levels deep")), "{message}");
}

#[tokio::test]
async fn running_out_of_memory_around_a_call_is_catchable_at_every_size() {
    // A small sandbox and a bound far above it: wherever memory runs out (building the
    // value, encoding it, copying it), the script gets an error it can catch.
    let limits = exec_host::Limits::default().with_max_memory_bytes(40 << 20).with_max_argument_bytes(64 << 20);
    let harness = Harness::with_limits(limits).await;
    for count in [100_000, 400_000, 800_000, 1_600_000, 3_200_000] {
        let code = format!(
            "try {{ const a = []; for (let i = 0; i < {count}; i++) a.push('abcdefghij' + i);
               const out = await tools.echo({{ value: a }}); return 'ran ' + out.length; }}
             catch (e) {{ return e === null ? 'caught null' : 'caught ' + e; }}"
        );
        // With the heap exhausted, QuickJS may have no memory left even for the error object
        // and throws `null`: still a value the script catches. The array is still alive in
        // the handler, so the handler answers with a constant rather than building a string.
        let outcome = within(60, harness.run(&code)).await;
        let message = outcome.value().and_then(|v| v.as_str()).unwrap_or_else(|| panic!("{count}: {}", outcome.text()));
        assert!(message.starts_with("ran ") || message.starts_with("caught "), "{count}: {message}");
    }
}

#[tokio::test]
async fn a_huge_console_line_is_cut_in_the_guest_and_counted() {
    let limits = exec_host::Limits::default().with_max_log_chars(10);
    let outcome =
        within(60, Harness::new().await.run_with("console.log('y'.repeat(3e7)); console.log('z'); return 'ok'", limits)).await;
    assert_eq!(outcome.value(), Some(&json!("ok")), "{}", outcome.text());
    assert_eq!(outcome.client.logs, vec!["y".repeat(10)]);
    assert!(
        outcome.text().contains(&format!("[console output cut: {} more characters not shown]", 30_000_000 - 10 + 1)),
        "{}",
        outcome.text()
    );
}

#[tokio::test]
async fn deeply_nested_scripts_are_refused_without_harming_the_host() {
    let harness = Harness::new().await;
    // The host reads a script's text when the engine cannot parse it (TypeScript) and when
    // a call fails on a non-function: neither may exhaust the host's stack.
    for code in [
        format!("const x: number = {}1{};", "(".repeat(300_000), ")".repeat(300_000)),
        format!("let x: {}number{} = 1;", "Array<".repeat(100_000), ">".repeat(100_000)),
        format!("let f;\nf({}{});", "[".repeat(100_000), "]".repeat(100_000)),
    ] {
        let outcome = harness.run(&code).await;
        assert!(!outcome.ok(), "{}", outcome.text());
        assert!(outcome.text().len() < 2_000, "{}", outcome.text());
    }
    assert_eq!(harness.run("const n: number = 2; return n * 21").await.value(), Some(&json!(42)), "the host still runs scripts");
}
