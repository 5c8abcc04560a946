//! Budget and limits beyond the conformance cases: the edges where a script tries to keep
//! running after it should stop.

use std::time::Duration;

use exec_host::{Failure, Limits};
use exec_host_tests::Harness;

fn budget(ms: u64) -> Limits {
    Limits::default().with_budget(Duration::from_millis(ms))
}

#[tokio::test]
async fn try_catch_cannot_swallow_the_budget() {
    let outcome = Harness::new().await.run_with("for (;;) { try { while (true) {} } catch (e) {} }", budget(100)).await;
    assert_eq!(outcome.exec_failure(), Some(&Failure::BudgetExceeded { budget: Duration::from_millis(100) }));
}

#[tokio::test]
async fn spinning_in_promise_jobs_is_stopped() {
    let code = "const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {});";
    let outcome = Harness::new().await.run_with(code, budget(100)).await;
    assert!(matches!(outcome.exec_failure(), Some(Failure::BudgetExceeded { .. })), "{}", outcome.text());
}

#[tokio::test]
async fn spinning_after_many_awaits_is_stopped() {
    let code = "for (let i = 0; i < 50; i++) await tools.add({ a: i, b: 1 }); while (true) {}";
    let outcome = Harness::new().await.run_with(code, budget(100)).await;
    assert!(matches!(outcome.exec_failure(), Some(Failure::BudgetExceeded { .. })), "{}", outcome.text());
    assert_eq!(outcome.call_names().len(), 50);
}

#[tokio::test]
async fn a_memory_bomb_is_contained() {
    let limits = Limits::default().with_max_memory_bytes(64 << 20);
    let outcome = Harness::new().await.run_with("let s = 'x'; for (;;) s = s + s;", limits).await;
    assert!(!outcome.ok());
    assert!(
        outcome.text().contains("out of memory")
            || outcome.text().contains("Invalid string length")
            || outcome.text().contains("string too long"),
        "{}",
        outcome.text()
    );
}

#[tokio::test]
async fn a_huge_result_is_cut_not_dumped() {
    let outcome = Harness::new().await.run("return 'y'.repeat(5_000_000)").await;
    assert!(outcome.ok());
    let whole = &outcome.client.text;
    assert!(whole.len() < 31_000, "{} characters", whole.len());
    assert!(whole.ends_with("[result cut: 5000000 characters in all, the first 30000 shown]"), "{}", &whole[whole.len() - 100..]);
    // The model reads it compacted; the whole value is kept for view_tool_call, up to the
    // kept bound, where it is cut in turn.
    let kept = exec_host::limits::MAX_KEPT_RESULT_CHARS;
    let note = format!("[result cut: 5000000 characters in all, the first {kept} shown]");
    assert!(outcome.text().len() < 10_000 && outcome.text().ends_with(&note), "{}", outcome.text());
    assert_eq!(outcome.compacted.as_ref().map(|c| c.total_chars), Some(kept + 1 + note.len()));
}

#[tokio::test]
async fn the_call_limit_counts_searches_too() {
    let limits = Limits::default().with_max_calls(2);
    let code = "await tools.ToolSearch({ query: 'add' }); await tools.ToolSearch({ query: 'add' });
      try { await tools.ToolSearch({ query: 'add' }); return 'third search ran'; } catch (e) { return e.message; }";
    let outcome = Harness::new().await.run_with(code, limits).await;
    assert_eq!(
        outcome.value().and_then(|v| v.as_str()),
        Some("`ToolSearch` was refused: this script has reached its limit of 2 tool calls")
    );
    assert_eq!(outcome.call_names(), vec!["ToolSearch", "ToolSearch", "ToolSearch"]);
}

#[tokio::test]
async fn a_large_payload_reaches_the_script_whole() {
    let outcome = Harness::new().await.run("const s = await tools.blob({ bytes: 1048576 }); return s.length").await;
    assert_eq!(outcome.value(), Some(&serde_json::json!(1048576)));
}

#[tokio::test]
async fn logs_after_the_cap_are_counted_not_kept() {
    let limits = Limits::default().with_max_log_chars(10);
    let outcome = Harness::new().await.run_with("console.log('x'.repeat(1_000_000)); return 1", limits).await;
    assert_eq!(outcome.client.logs, vec!["x".repeat(10)]);
    assert!(outcome.text().contains("[console output cut: 999990 more characters not shown]"), "{}", outcome.text());
}

#[tokio::test]
async fn a_tools_own_work_is_not_charged_to_the_script() {
    // `busy` answers in its first poll, inside the guest's import: its 150 ms x 3 are the
    // tool's time; the script's own budget of 100 ms is untouched.
    let code = "for (let i = 0; i < 3; i++) await tools.busy({ ms: 150 }); return 'ok'";
    let outcome = Harness::new().await.run_with(code, budget(100)).await;
    assert_eq!(outcome.value(), Some(&serde_json::json!("ok")), "{}", outcome.text());
    assert!(outcome.script_time() < Duration::from_millis(100), "{:?}", outcome.script_time());
}
