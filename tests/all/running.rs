//! Long scripts: an `Exec` that yields after a wall-clock time returns its output so far and
//! a handle, runs on, and is waited for or cancelled through the session that ran it.

use std::time::Duration;

use exec_host::{CallOptions, CancellationToken, ResumeError};
use exec_host_tests::{Harness, exec_call};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_exec_yields_its_output_so_far_and_is_waited_for() {
    let harness = Harness::new().await;
    let code = "console.log('started'); await tools.sleep({ ms: 300 }); console.log('slept'); return 7";
    let options = CallOptions::new(CancellationToken::new()).yield_after(Duration::from_millis(50));
    let first = harness.session.call_with(exec_call(code), options).await;
    let running = first.running.clone().expect("it was still running after 50 ms");
    assert_eq!(running.logs, ["started"]);
    assert_eq!(running.calls, 1);
    assert!(first.model.text.contains(&running.handle), "{}", first.model.text);
    let progress = harness.session.wait(&running.handle, Duration::from_millis(10)).await.unwrap();
    assert!(progress.running.is_some(), "still running after another 10 ms");
    let done = harness.session.wait(&running.handle, Duration::from_secs(20)).await.unwrap();
    assert!(done.running.is_none());
    assert_eq!(done.client.value, Some(json!(7)));
    assert_eq!(done.client.logs, ["started", "slept"]);
    let again = harness.session.wait(&running.handle, Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(again, ResumeError::Unknown { .. }), "an outcome is given once: {again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_exec_does_not_yield_and_a_cancelled_one_is_aborted() {
    let harness = Harness::new().await;
    let options = CallOptions::new(CancellationToken::new()).yield_after(Duration::from_secs(10));
    let quick = harness.session.call_with(exec_call("return 1"), options).await;
    assert!(quick.running.is_none());
    assert_eq!(quick.client.value, Some(json!(1)));

    let options = CallOptions::new(CancellationToken::new()).yield_after(Duration::from_millis(20));
    let never = harness.session.call_with(exec_call("await tools.never({}); return 'unreachable'"), options).await;
    let handle = never.running.expect("it runs on").handle;
    // Another client's session over the same tools cannot see it.
    let other = harness.session.for_client(std::sync::Arc::new(exec_host_tests::SharedApprover(
        exec_host_tests::TestApprover::new(|_| exec_host::Approval::AllowOnce),
    )));
    assert!(matches!(other.cancel(&handle).await, Err(ResumeError::Unknown { .. })));
    let cancelled = harness.session.cancel(&handle).await.unwrap();
    assert!(!cancelled.client.ok);
    assert!(cancelled.model.text.contains("aborted"), "{}", cancelled.model.text);
}
