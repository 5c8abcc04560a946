//! Long scripts: an `Exec` that yields after a wall-clock time returns its output so far and
//! a handle, runs on, and is waited for or cancelled through the session that ran it; with a
//! state store it is checkpointed, and another host takes it up once the first has stopped.

use std::sync::Arc;
use std::time::Duration;

use exec_host::state::{DirectoryStore, SealedStore, StateKey, StateStore};
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
    let other = harness.session.for_client(
        std::sync::Arc::new(exec_host_tests::SharedApprover(exec_host_tests::TestApprover::new(|_| {
            exec_host::Approval::AllowOnce
        }))),
        None,
    );
    assert!(matches!(other.cancel(&handle).await, Err(ResumeError::Unknown { .. })));
    let cancelled = harness.session.cancel(&handle).await.unwrap();
    assert!(!cancelled.client.ok);
    assert!(cancelled.model.text.contains("aborted"), "{}", cancelled.model.text);
}

/// A session of conversation `crash` whose Execs are checkpointed to `store` under a lease
/// of one second.
async fn checkpointed(dir: &std::path::Path, counter: &exec_host_tests::Counter, store: &SealedStore) -> exec_host::Session {
    leased(dir, counter, store, Duration::from_secs(1)).await
}

/// [`checkpointed`] with a lease of `lease`.
async fn leased(
    dir: &std::path::Path,
    counter: &exec_host_tests::Counter,
    store: &SealedStore,
    lease: Duration,
) -> exec_host::Session {
    exec_host_tests::Harness::builder(dir, counter)
        .await
        .state_store(store.clone())
        .conversation("crash")
        .running_lease(lease)
        .build()
        .await
        .expect("the session starts")
}

#[test]
fn a_running_exec_whose_host_stopped_is_taken_up_from_its_last_wait_and_no_call_runs_twice() {
    let dir = tempfile::tempdir().unwrap();
    let counter = exec_host_tests::Counter::default();
    let raw: Arc<dyn StateStore> = Arc::new(DirectoryStore::open(&dir.path().join("state")).unwrap());
    let store = SealedStore::new(raw, StateKey::generate().unwrap());
    let code = "console.log('before'); const n = await tools.count({});\n\
                let slept; try { slept = await tools.sleep({ ms: 60000 }); } catch (e) { slept = e.message; }\n\
                const m = await tools.count({}); return { n, m, slept };";

    // A lease long enough that the second host, started on a loaded machine, still finds it
    // held; the test then waits for it to lapse.
    let lease = Duration::from_secs(4);
    // The first host runs on a runtime of its own, dropped at once with everything on it (no
    // cleanup runs), as a killed process would be, while the Exec waits for its 60 s call.
    let first_host = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let handle = first_host.block_on(async {
        let session = leased(dir.path(), &counter, &store, lease).await;
        let options = CallOptions::new(CancellationToken::new()).yield_after(Duration::from_millis(300));
        let first = session.call_with(exec_call(code), options).await;
        first.running.expect("it runs on after 300 ms").handle
    });
    first_host.shutdown_background();
    assert_eq!(counter.get(), 1);

    let second_host = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    second_host.block_on(async {
        let session = leased(dir.path(), &counter, &store, lease).await;
        // Until the first host's lease lapses, nobody else runs its Exec.
        let early = session.wait(&handle, Duration::ZERO).await.unwrap_err();
        assert!(matches!(early, ResumeError::RunningElsewhere { .. }), "{early}");
        tokio::time::sleep(lease + Duration::from_millis(300)).await;
        let done = session.wait(&handle, Duration::from_secs(30)).await.unwrap();
        let value = done.client.value.clone().expect("it finished");
        assert_eq!(value["n"], json!(1), "the call before the checkpoint answered from the journal: {value}");
        assert_eq!(value["m"], json!(2));
        let slept = value["slept"].as_str().unwrap();
        assert!(slept.contains("`sleep` was running when the host that ran this script stopped"), "{slept}");
        assert!(slept.contains("may have taken effect"), "{slept}");
        assert_eq!(done.client.logs, ["before"], "its console output before the stop is kept");
        assert_eq!(counter.get(), 2, "no call ran twice");
        // Taken up once: its entries are gone, and the handle is done.
        let gone = session.wait(&handle, Duration::ZERO).await.unwrap_err();
        assert!(matches!(gone, ResumeError::Unknown { .. }), "{gone}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_exec_that_finishes_leaves_no_checkpoint_behind() {
    let dir = tempfile::tempdir().unwrap();
    let counter = exec_host_tests::Counter::default();
    let raw: Arc<dyn StateStore> = Arc::new(DirectoryStore::open(&dir.path().join("state")).unwrap());
    let store = SealedStore::new(raw.clone(), StateKey::generate().unwrap());
    // A lease that cannot lapse on a loaded machine while the Exec runs: a host whose lease
    // lapsed rightly leaves the checkpoint to whoever holds it now.
    let session = leased(dir.path(), &counter, &store, Duration::from_secs(30)).await;
    let options = CallOptions::new(CancellationToken::new()).yield_after(Duration::from_millis(50));
    let code = "await tools.sleep({ ms: 200 }); await tools.sleep({ ms: 200 }); return 'done'";
    let handle = session.call_with(exec_call(code), options).await.running.expect("it yields").handle;
    assert!(!raw.keys("running/crash/", 10).await.unwrap().is_empty(), "checkpointed while it runs");
    assert!(!raw.keys("lease/crash/", 10).await.unwrap().is_empty(), "and leased");
    let done = session.wait(&handle, Duration::from_secs(20)).await.unwrap();
    assert_eq!(done.client.value, Some(json!("done")));
    assert!(raw.keys("running/crash/", 10).await.unwrap().is_empty());
    assert!(raw.keys("lease/crash/", 10).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_cannot_keep_its_lease_stops_the_exec_rather_than_run_it_beside_another() {
    let mut server = exec_host_tests::redis::RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let counter = exec_host_tests::Counter::default();
    let raw = exec_host::state::open_store(&server.url(5)).await.unwrap();
    let store = SealedStore::new(raw, StateKey::generate().unwrap());
    let session = checkpointed(dir.path(), &counter, &store).await;
    let options = CallOptions::new(CancellationToken::new()).yield_after(Duration::from_millis(100));
    let handle = session.call_with(exec_call("await tools.never({})"), options).await.running.expect("it yields").handle;
    server.stop();
    let done = exec_host_tests::within(30, session.wait(&handle, Duration::from_secs(60))).await.unwrap();
    assert!(!done.client.ok);
    assert!(
        done.model.text.contains("The Exec was stopped because its lease in the state store could not be renewed"),
        "{}",
        done.model.text
    );
    assert!(done.model.text.contains(&format!("127.0.0.1:{}", server.port)), "{}", done.model.text);
}
