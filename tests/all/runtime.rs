//! The runtime as a whole: the component's imports, fresh state per Exec, aborts, the
//! nested-wait cap, concurrency, the live call record and the guest artefact.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use exec_host::guest::{SANDBOX_INTERFACES, WASI_INTERFACES};
use exec_host::settings::Layer;
use exec_host::{CallOptions, CancellationToken, Failure, Limits, json};
use exec_host_tests::{Harness, abort_after_call, sandbox, within};

#[tokio::test]
async fn the_component_imports_no_filesystem_no_sockets_and_nothing_unexpected() {
    let imports = sandbox().await.guest_imports();
    assert!(!imports.is_empty());
    for import in &imports {
        assert!(!import.starts_with("wasi:filesystem"), "the guest imports {import}");
        assert!(!import.starts_with("wasi:sockets"), "the guest imports {import}");
        assert!(!import.starts_with("wasi:http"), "the guest imports {import}");
        let interface = import.split('@').next().unwrap();
        assert!(
            WASI_INTERFACES.contains(&interface) || SANDBOX_INTERFACES.contains(&interface),
            "the guest imports {import}, which the host does not mean to give"
        );
    }
    for ours in SANDBOX_INTERFACES {
        assert!(imports.iter().any(|i| i.starts_with(ours)), "the guest does not import {ours}");
    }
}

#[tokio::test]
async fn the_guest_artefact_is_built_from_the_current_sources() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let output = std::process::Command::new("bash").arg(root.join("scripts/guest-sources-hash")).output().expect("bash runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let current = String::from_utf8(output.stdout).unwrap().trim().to_string();
    assert_eq!(
        current,
        exec_host::guest::GUEST_SOURCES_SHA256.trim(),
        "guest-js/ or wit/ changed since host/artefacts/exec-guest.wasm was built: run scripts/build-guest and commit the artefact"
    );
}

#[tokio::test]
async fn math_random_differs_between_runs() {
    let harness = Harness::new().await;
    let a = harness.run("return [Math.random(), Math.random()]").await;
    let b = harness.run("return [Math.random(), Math.random()]").await;
    assert!(a.ok() && b.ok());
    assert_ne!(a.value(), b.value());
    let values = a.value().unwrap().as_array().unwrap();
    assert_ne!(values[0], values[1]);
    assert!(values.iter().all(|v| (0.0..1.0).contains(&v.as_f64().unwrap())));
}

#[tokio::test]
async fn nothing_leaks_from_one_exec_to_the_next() {
    let harness = Harness::new().await;
    let first = harness.run("globalThis.leak = 42; Object.prototype.polluted = 1; Array.prototype.push = null; JSON.stringify = () => 'x'; return 1").await;
    assert!(first.ok(), "{}", first.text());
    let second =
        harness.run("return [typeof globalThis.leak, ({}).polluted === undefined, typeof [].push, JSON.stringify({a: 1})]").await;
    assert_eq!(second.value().unwrap(), &serde_json::json!(["undefined", true, "function", "{\"a\":1}"]));
}

#[tokio::test]
async fn an_empty_script_is_refused_before_any_sandbox_starts() {
    let harness = Harness::new().await;
    for code in ["", "   \n\t  "] {
        let outcome = harness.run(code).await;
        let failure = outcome.failure().unwrap();
        assert_eq!(failure.stage, exec_host::Stage::Params, "refused at the tool layer, no script ran");
        assert_eq!(outcome.text(), "Exec: `code` is empty; there is no script to run");
        assert_eq!(outcome.summary(), "failed");
        assert!(outcome.client.script_time.is_none() && outcome.client.calls.is_empty());
    }
}

#[tokio::test]
async fn an_abort_before_the_start_ends_at_once() {
    let harness = Harness::new().await;
    let abort = CancellationToken::new();
    abort.cancel();
    let outcome = harness.run_options("await tools.count(); return 1", CallOptions::new(abort)).await;
    assert_eq!(outcome.exec_failure(), Some(&Failure::Aborted));
    assert_eq!(harness.counter.get(), 0, "an aborted Exec must not run any call");
}

#[tokio::test]
async fn an_abort_ends_a_spinning_script() {
    let harness = Harness::with_limits(Limits::default().with_budget(Duration::from_secs(600))).await;
    let options = abort_after_call(CancellationToken::new(), "count", 100);
    let outcome = within(30, harness.run_options("await tools.count(); while (true) {}", options)).await;
    assert_eq!(outcome.exec_failure(), Some(&Failure::Aborted));
    assert!(outcome.text().contains("aborted"), "{}", outcome.text());
    assert_eq!(harness.counter.get(), 1, "the script got past its call into the loop");
}

#[tokio::test]
async fn an_abort_ends_a_wait_and_cancels_the_calls_in_flight() {
    let harness = Harness::new().await;
    let code = "await tools.count(); await tools.never(); return 1";
    let outcome = within(30, harness.run_options(code, abort_after_call(CancellationToken::new(), "never", 100))).await;
    assert_eq!(outcome.exec_failure(), Some(&Failure::Aborted));
    assert_eq!(outcome.call_names(), vec!["count", "never"]);
    assert_eq!(harness.counter.get(), 1, "the call completed before the abort took effect");
}

#[tokio::test]
async fn max_nested_wait_ends_a_call_that_never_returns() {
    let harness = Harness::new().await;
    let limits = Limits::default().with_max_nested_wait(Some(Duration::from_millis(100)));
    let outcome = within(30, harness.run_with("await tools.never(); return 1", limits)).await;
    assert_eq!(outcome.exec_failure(), Some(&Failure::NestedWaitExceeded { limit: Duration::from_millis(100) }));
    assert!(outcome.text().contains("waited more than 100 ms"), "{}", outcome.text());
}

#[tokio::test]
async fn without_max_nested_wait_a_long_call_is_simply_awaited() {
    let harness = Harness::new().await;
    let limits = Limits::default().with_budget(Duration::from_millis(100));
    let outcome = harness.run_with("return await tools.sleep({ ms: 600 })", limits).await;
    assert_eq!(outcome.value(), Some(&serde_json::json!("slept")), "{}", outcome.text());
    assert!(outcome.script_time() < Duration::from_millis(100));
}

#[tokio::test]
async fn calls_left_in_flight_after_return_are_harmless() {
    let harness = Harness::new().await;
    let outcome = harness.run("tools.sleep({ ms: 5000 }); tools.never(); return 'early'").await;
    assert_eq!(outcome.value(), Some(&serde_json::json!("early")));
    let next = harness.run("return await tools.add({ a: 40, b: 2 })").await;
    assert_eq!(next.value(), Some(&serde_json::json!(42)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_execs_run_at_once() {
    let harness = Arc::new(Harness::new().await);
    let runs = (0..50).map(|i| {
        let harness = harness.clone();
        async move { harness.run(&format!("await tools.sleep({{ ms: 200 }}); return {i}")).await }
    });
    let outcomes = within(60, futures::future::join_all(runs)).await;
    for (i, outcome) in outcomes.iter().enumerate() {
        assert_eq!(outcome.value(), Some(&serde_json::json!(i)), "{}", outcome.text());
    }
}

#[tokio::test]
async fn the_call_record_updates_while_the_script_runs() {
    let harness = Harness::new().await;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    let options =
        CallOptions::default().on_nested_call(move |calls| sink.lock().unwrap().push(exec_host::calls_summary(calls, 0, true)));
    let code = "await tools.echo({ value: 1 }); await tools.add({ a: 1, b: 2 }); await tools.text_only({}); return 1";
    let outcome = harness.run_options(code, options).await;
    assert!(outcome.ok());
    // Each call is seen when it starts and again when it finishes.
    let mut seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 6, "{seen:?}");
    seen.dedup();
    assert_eq!(seen, vec!["1 tool call\necho", "2 tool calls\necho\nadd", "... 3 tool calls\nadd\ntext_only"]);
}

#[tokio::test]
async fn console_lines_are_seen_as_they_are_written_within_the_log_cap() {
    use exec_host::ConsoleLevel::*;
    let harness = Harness::with_limits(Limits::default().with_max_log_chars(30)).await;
    let seen: Arc<Mutex<Vec<(exec_host::ConsoleLevel, String)>>> = Arc::default();
    let (sink, calls_seen) = (seen.clone(), seen.clone());
    // A line written before a call is seen before the call reaches the host.
    let options = CallOptions::default()
        .on_console(move |level, text| sink.lock().unwrap().push((level, text.to_string())))
        .on_nested_call(move |_| calls_seen.lock().unwrap().push((Info, "(a call)".into())));
    let code = "console.log('a'); await tools.echo({}); console.warn('b'); console.error('c'); console.debug('d');
                console.info('e'); console.log('x'.repeat(100)); console.log('past the cap'); return 1";
    let outcome = harness.run_options(code, options).await;
    assert!(outcome.ok(), "{}", outcome.text());
    let expected: Vec<(exec_host::ConsoleLevel, String)> = vec![
        (Log, "a".into()),
        (Info, "(a call)".into()),
        (Info, "(a call)".into()),
        (Warn, "b".into()),
        (Error, "c".into()),
        (Debug, "d".into()),
        (Info, "e".into()),
        // "a", "[warn] b", "[error] c", "d", "e" took 20 of the 30 characters.
        (Log, "x".repeat(10)),
    ];
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[tokio::test]
async fn the_outcome_records_calls_even_when_the_script_fails() {
    let harness = Harness::new().await;
    let limits = Limits::default().with_budget(Duration::from_millis(100));
    let outcome = harness.run_with("await tools.count(); await tools.count(); while (true) {}", limits).await;
    assert!(matches!(outcome.exec_failure(), Some(Failure::BudgetExceeded { .. })));
    assert_eq!(outcome.call_names(), vec!["count", "count"]);
    assert_eq!(harness.counter.get(), 2, "completed calls took effect");
    assert_eq!(outcome.summary(), "failed");
}

#[tokio::test]
async fn the_budget_counts_only_the_scripts_own_time() {
    let harness = Harness::new().await;
    let limits = Limits::default().with_budget(Duration::from_millis(200));
    let code =
        "await Promise.all([tools.sleep({ ms: 300 }), tools.sleep({ ms: 300 })]); await tools.sleep({ ms: 300 }); return 'done'";
    let outcome = harness.run_with(code, limits).await;
    assert_eq!(outcome.value(), Some(&serde_json::json!("done")), "{}", outcome.text());
    assert!(outcome.script_time() < Duration::from_millis(200), "charged {:?}", outcome.script_time());
}

#[tokio::test]
async fn impossible_limits_are_refused_clearly() {
    let harness = Harness::new().await;
    let limits = Limits::default().with_max_memory_bytes(1024);
    let outcome = harness.run_with("return 1", limits).await;
    assert!(
        matches!(outcome.exec_failure(), Some(Failure::InvalidRequest(why)) if why.contains("memory limit")),
        "{:?}",
        outcome.exec_failure()
    );
}

#[tokio::test]
async fn a_tool_kept_flat_is_out_of_the_sandbox() {
    let settings = Layer::from_value(json!({"nonDeferredTools": ["echo"]})).unwrap();
    let harness = Harness::with(|builder| builder.managed_settings(settings)).await;
    let code = "return [typeof tools.add, typeof tools.echo, (await tools.ToolSearch({ query: 'select:echo,add' })).total]";
    let outcome = harness.run(code).await;
    assert_eq!(outcome.value(), Some(&json!(["function", "undefined", 1])), "{}", outcome.text());
    // The model still calls it directly.
    assert_eq!(harness.call("echo", json!({"value": 7})).await.value(), Some(&json!(7)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_instance_pool_is_a_clear_failure_not_a_hang() {
    let options = exec_host::SandboxOptions::default().with_max_concurrent_execs(1);
    let small = exec_host::Sandbox::with_options(options).await.unwrap();
    let harness = Harness::with(|builder| builder.sandbox(small)).await;
    let abort = CancellationToken::new();
    let (started, mut running) = tokio::sync::watch::channel(false);
    let options = CallOptions::new(abort.clone()).on_nested_call(move |_| {
        let _ = started.send(true);
    });
    let session = harness.session.clone();
    let parked = tokio::spawn(async move { session.call_with(exec_host_tests::exec_call("await tools.never()"), options).await });
    // The first Exec holds the only slot once its call has reached the host.
    within(30, running.wait_for(|started| *started)).await.unwrap();
    let refused = harness.run("return 1").await;
    let text = refused.text();
    assert!(matches!(refused.exec_failure(), Some(Failure::Unavailable(_))), "{text}");
    assert!(text.starts_with("Exec was not run: no sandbox could be started (") && text.contains("Too many Execs"), "{text}");
    abort.cancel();
    assert_eq!(within(30, parked).await.unwrap().exec_failure(), Some(&Failure::Aborted));
    // The slot is free again.
    assert!(harness.run("return 2").await.ok());
}

/// A harness on a sandbox whose waits spin for up to `spin`, with the `hop` tool.
async fn spinning_harness(spin: Duration, limits: Limits) -> Arc<Harness> {
    let options = exec_host::SandboxOptions::default().with_wait_spin(spin);
    let sandbox = exec_host::Sandbox::with_options(options).await.expect("the sandbox sets up");
    Arc::new(Harness::with(|builder| builder.tool(exec_host_tests::hop_tool()).sandbox(sandbox).limits(limits)).await)
}

/// Long enough that a wait which spun when it must not would stall its test far past the
/// test's own limit.
const A_MINUTE: Duration = Duration::from_secs(60);

/// One test, so that no other long spin takes the process's one spinning turn meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_wait_is_free_for_the_script_and_stalls_nothing() {
    // Not charged: both sleeps together are twice the budget. With a minute's spin the
    // waits spin through them; with 60 ms, each spins that long and then hands the thread
    // back. Both on a worker, as a served Exec runs, and on the runtime's own thread, as
    // `exec-host run`'s.
    let budget = Limits::default().with_budget(Duration::from_millis(100));
    let code = "await tools.sleep({ ms: 200 }); await tools.sleep({ ms: 200 }); return 1";
    for spin in [A_MINUTE, Duration::from_millis(60)] {
        let harness = spinning_harness(spin, budget.clone()).await;
        let task = tokio::spawn({
            let harness = harness.clone();
            async move { harness.run(code).await }
        });
        let on_worker = within(30, task).await.unwrap();
        assert_eq!(on_worker.value(), Some(&json!(1)), "{spin:?}: {}", on_worker.text());
        let on_main = within(30, harness.run(code)).await;
        assert_eq!(on_main.value(), Some(&json!(1)), "{spin:?}: {}", on_main.text());
    }

    // `hop` answers once a task it spawns has run; spawned from the Exec's worker, that task
    // sits in the worker's own slot, which no other worker takes, so the wait must let the
    // worker run it before spinning.
    let harness = spinning_harness(A_MINUTE, Limits::default()).await;
    let task = tokio::spawn({
        let harness = harness.clone();
        async move { harness.run("for (let i = 0; i < 20; i++) await tools.hop({}); return 2").await }
    });
    let outcome = within(30, task).await.unwrap();
    assert_eq!(outcome.value(), Some(&json!(2)), "{}", outcome.text());

    // Were both workers spinning, nothing would drive the timers the calls wait for.
    let runs: Vec<_> = (0..4)
        .map(|i| {
            let harness = harness.clone();
            tokio::spawn(async move {
                harness.run(&format!("for (let j = 0; j < 5; j++) await tools.sleep({{ ms: 20 }}); return {i}")).await
            })
        })
        .collect();
    for (i, run) in runs.into_iter().enumerate() {
        let outcome = within(30, run).await.unwrap();
        assert_eq!(outcome.value(), Some(&json!(i)), "{}", outcome.text());
    }

    // An abort stops a spin: the wait is for a timer no abort cancels, and the spin would
    // otherwise last its minute.
    let abort = CancellationToken::new();
    let trigger = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let waiting = "await new Promise((done) => setTimeout(done, 600000)); return 4";
    let outcome = within(30, harness.run_options(waiting, CallOptions::new(abort))).await;
    assert_eq!(outcome.exec_failure(), Some(&Failure::Aborted), "{}", outcome.text());

    // A single-threaded runtime never spins: nothing else would run the timer meanwhile.
    let single = tokio::task::spawn_blocking(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        runtime.block_on(async {
            let harness = spinning_harness(A_MINUTE, Limits::default()).await;
            within(30, harness.run("await tools.sleep({ ms: 10 }); await tools.hop({}); return 3")).await
        })
    });
    let outcome = within(60, single).await.unwrap();
    assert_eq!(outcome.value(), Some(&json!(3)), "{}", outcome.text());
}

/// A tool function finds its name by its place among the script's tools, which QuickJS
/// keeps in 16 bits: past them, each call must still reach its own tool and no other.
#[tokio::test]
async fn with_more_tools_than_sixteen_bits_count_each_call_reaches_its_own_tool() {
    const TOOLS: usize = 70_000;
    let tools: Vec<_> = (0..TOOLS)
        .map(|i| {
            let name = format!("t{i:05}");
            let answer = name.clone();
            exec_host_tests::FixtureTool::shared(&name, "Answers with its own name.", json!({"type": "object"}), move |_, _| {
                let answer = answer.clone();
                Box::pin(async move { Ok(exec_host::ToolOutput::structured(json!(answer))) })
            })
        })
        .collect();
    let harness = within(120, Harness::with(|builder| builder.tools(tools))).await;
    let picks = [0, 1, 65_534, 65_535, 65_536, 65_537, TOOLS - 1];
    let calls: Vec<String> = picks.iter().map(|i| format!("await tools.t{i:05}({{}})")).collect();
    let outcome = within(120, harness.run(&format!("return [{}];", calls.join(", ")))).await;
    let expected: Vec<String> = picks.iter().map(|i| format!("t{i:05}")).collect();
    assert_eq!(outcome.value(), Some(&json!(expected)), "{}", outcome.text());
}
