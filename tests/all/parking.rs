//! Parked Execs through the real guest and host: an `Exec` whose open calls all wait for a
//! person's answer is stored, and resumes exactly (in this session or a fresh one sharing
//! the store, on a folder or a real Redis), with no call made twice.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use exec_host::settings::Layer;
use exec_host::state::{DirectoryStore, SealedStore, StateKey, StateStore, open_store};
use exec_host::{Approval, CallOptions, CancellationToken, ResumeError, Session, ToolResult};
use exec_host_tests::redis::RedisServer;
use exec_host_tests::{Counter, Harness, SharedApprover, TestApprover, call_id, exec_call, fixture_tools, sandbox};
use serde_json::{Value, json};

/// A session whose `count` calls ask, answered by parking, with Execs parked in `store`.
async fn session(dir: &std::path::Path, counter: &Counter, store: &SealedStore, conversation: &str) -> Session {
    session_with(dir, counter, store, conversation, json!({"permissions": {"ask": ["count"]}})).await
}

/// A session with `settings` (managed), whose questions park, with Execs parked in `store`.
async fn session_with(
    dir: &std::path::Path,
    counter: &Counter,
    store: &SealedStore,
    conversation: &str,
    settings: Value,
) -> Session {
    let settings = Layer::from_value(settings).unwrap();
    let approver = Arc::new(SharedApprover(TestApprover::new(|_| Approval::Park)));
    Harness::builder(dir, counter)
        .await
        .managed_settings(settings)
        .approver(approver)
        .state_store(store.clone())
        .conversation(conversation)
        .build()
        .await
        .expect("the session starts")
}

fn folder_store(dir: &std::path::Path) -> SealedStore {
    let store: Arc<dyn StateStore> = Arc::new(DirectoryStore::open(&dir.join("state")).unwrap());
    SealedStore::new(store, StateKey::generate().unwrap())
}

async fn run(session: &Session, code: &str) -> ToolResult {
    session.call(exec_call(code), CancellationToken::new()).await
}

async fn resume(session: &Session, handle: &str, answers: &[(u32, Approval)]) -> Result<ToolResult, ResumeError> {
    let answers: HashMap<u32, Approval> = answers.iter().cloned().collect();
    session.resume(handle, answers, CallOptions::new(CancellationToken::new())).await
}

fn value(result: &ToolResult) -> Value {
    assert!(result.client.ok, "{}", result.model.text);
    result.client.value.clone().unwrap_or(Value::Null)
}

#[tokio::test]
async fn an_exec_parks_on_an_approval_and_resumes_exactly_with_no_call_made_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let session = session(dir.path(), &counter, &store, "conv-1").await;
    let code = "const r = Math.random(); const t = Date.now(); console.log('before', r, t);\n\
                const echoed = await tools.echo({ value: 'kept' });\n\
                const n = await tools.count({});\n\
                console.log('after', n);\n\
                return { r, t, echoed, n, again: Math.random() !== r };";
    let parked = run(&session, code).await;
    let handle = parked.parked.as_ref().expect("the Exec parked").handle.clone();
    let approvals = &parked.parked.as_ref().unwrap().approvals;
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0].tool, "count");
    assert!(approvals[0].why.contains("permissions.ask rule `count`"), "{}", approvals[0].why);
    assert!(parked.model.text.contains(&format!("Parked as {handle}")), "{}", parked.model.text);
    assert_eq!(counter.get(), 0, "the call that waits did not run");
    assert_eq!(parked.client.logs.len(), 1);

    let id = approvals[0].id;
    let resumed = resume(&session, &handle, &[(id, Approval::AllowOnce)]).await.unwrap();
    let returned = value(&resumed);
    assert_eq!(returned["echoed"], "kept");
    assert_eq!(returned["n"], 1);
    assert_eq!(counter.get(), 1, "count ran once");
    assert_eq!(returned["again"], true);
    // The random number and the time the script read before it parked are those it logged
    // then: the replay reproduced them.
    let before = &resumed.client.logs[0];
    assert_eq!(before, &format!("before {} {}", returned["r"], returned["t"]), "{:?}", resumed.client.logs);
    assert_eq!(resumed.client.logs[1], "after 1");
    let names: Vec<&str> = resumed.client.calls.iter().map(|call| call.name.as_str()).collect();
    assert_eq!(names, ["echo", "count"], "the call record is the whole Exec's");
    let again = resume(&session, &handle, &[]).await.unwrap_err();
    assert!(matches!(again, ResumeError::Unknown { .. }), "a handle resumes once: {again}");
}

#[tokio::test]
async fn calls_around_a_parked_one_finish_first_and_timers_keep_their_time_left() {
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let session = session(dir.path(), &counter, &store, "conv-2").await;
    let code = "let fired = 0; setTimeout(() => fired++, 150);\n\
                const [a, n, b] = await Promise.all([tools.sleep({ ms: 30 }), tools.count({}), tools.echo({ value: 2 })]);\n\
                await new Promise((resolve) => setTimeout(resolve, 200));\n\
                return { a, n, b, fired };";
    let parked = run(&session, code).await;
    let waiting = parked.parked.expect("parked once the other calls finished");
    assert_eq!(waiting.approvals.len(), 1);
    let names: Vec<&str> = parked.client.calls.iter().map(|call| call.name.as_str()).collect();
    assert_eq!(names, ["sleep", "count", "echo"]);
    let started = std::time::Instant::now();
    let resumed = resume(&session, &waiting.handle, &[(waiting.approvals[0].id, Approval::AllowOnce)]).await.unwrap();
    let returned = value(&resumed);
    assert_eq!((returned["n"].clone(), returned["b"].clone(), returned["fired"].clone()), (json!(1), json!(2), json!(1)));
    assert!(started.elapsed() >= std::time::Duration::from_millis(200), "the second timer ran its time after the resume");
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn a_denied_approval_rejects_the_await_and_the_script_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let session = session(dir.path(), &counter, &store, "conv-3").await;
    let parked = run(&session, "try { await tools.count({}); return 'ran'; } catch (e) { return e.message; }").await;
    let waiting = parked.parked.unwrap();
    let denied = Approval::Deny { reason: "not now".into() };
    let resumed = resume(&session, &waiting.handle, &[(waiting.approvals[0].id, denied)]).await.unwrap();
    assert_eq!(value(&resumed), json!("`count` was denied: not now"));
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn a_person_s_answers_bind_a_resume_whatever_the_resuming_session_s_rules_allow() {
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let asking = session(dir.path(), &counter, &store, "conv-answers").await;
    // A session whose rules would run `count` without asking.
    let allows = json!({"permissions": {"allow": ["count"]}});
    let lenient = session_with(dir.path(), &counter, &store, "conv-answers", allows).await;

    // Denied: refused with the person's reason, though the resuming session allows it.
    let code = "try { await tools.count({}); return 'ran'; } catch (e) { return e.message; }";
    let parked = run(&asking, code).await.parked.unwrap();
    let denied = Approval::Deny { reason: "not on a Friday".into() };
    let resumed = resume(&lenient, &parked.handle, &[(parked.approvals[0].id, denied)]).await.unwrap();
    assert_eq!(value(&resumed), json!("`count` was denied: not on a Friday"));
    assert_eq!(counter.get(), 0);

    // Two calls wait, one is answered: the other asks again (and parks again), though the
    // resuming session allows it; it runs only once a person answers it.
    let code = "return await Promise.all([tools.count({}), tools.count({})]);";
    let parked = run(&asking, code).await.parked.unwrap();
    assert_eq!(parked.approvals.len(), 2);
    let (first, second) = (parked.approvals[0].id, parked.approvals[1].id);
    let again = resume(&lenient, &parked.handle, &[(first, Approval::AllowOnce)]).await.unwrap();
    let parked_again = again.parked.expect("the unanswered call asked again");
    assert_eq!(parked_again.approvals.iter().map(|a| a.id).collect::<Vec<_>>(), [second]);
    assert!(parked_again.approvals[0].why.contains("permissions.ask rule `count`"), "{:?}", parked_again.approvals);
    assert_eq!(counter.get(), 1, "only the approved call ran");
    let done = resume(&lenient, &parked_again.handle, &[(second, Approval::AllowOnce)]).await.unwrap();
    assert_eq!(value(&done), json!([1, 2]));

    // A refusal in the resuming session (here its hook's) is stricter than a person's
    // "allow": it wins. (A deny rule for the whole tool would take it out of reach, and the
    // Exec would stay parked for a host that has it.)
    let denies = json!({"hooks": {"PreToolUse": [{"matcher": "count", "hooks": [{"type": "command", "command": "cat > /dev/null; echo not counting today >&2; exit 2"}]}]}});
    let strict = session_with(dir.path(), &counter, &store, "conv-answers", denies).await;
    let code = "try { await tools.count({}); return 'ran'; } catch (e) { return e.message; }";
    let parked = run(&asking, code).await.parked.unwrap();
    let refused = resume(&strict, &parked.handle, &[(parked.approvals[0].id, Approval::AllowOnce)]).await.unwrap();
    assert!(value(&refused).as_str().unwrap().contains("not counting today"), "{}", value(&refused));
    assert_eq!(counter.get(), 2);
}

#[tokio::test]
async fn an_unanswered_call_parks_again_and_a_fresh_session_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let first = session(dir.path(), &counter, &store, "conv-4").await;
    let code = "const x = await tools.count({}); const y = await tools.count({}); return [x, y];";
    let parked = run(&first, code).await.parked.unwrap();
    // Another session (as another process would have) with the same store and conversation.
    let second = session(dir.path(), &counter, &store, "conv-4").await;
    let again = resume(&second, &parked.handle, &[(parked.approvals[0].id, Approval::AllowOnce)]).await.unwrap();
    let parked_again = again.parked.expect("the second call asks too: a new round");
    assert_ne!(parked_again.handle, parked.handle);
    assert_eq!(counter.get(), 1);
    let third = session(dir.path(), &counter, &store, "conv-4").await;
    let done = resume(&third, &parked_again.handle, &[(parked_again.approvals[0].id, Approval::AllowOnce)]).await.unwrap();
    assert_eq!(value(&done), json!([1, 2]));
    assert_eq!(counter.get(), 2, "each count ran once across three sessions");
}

#[tokio::test]
async fn a_handle_is_good_only_in_its_conversation_and_only_once() {
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let mine = session(dir.path(), &counter, &store, "mine").await;
    let theirs = session(dir.path(), &counter, &store, "theirs").await;
    let parked = run(&mine, "return await tools.count({})").await.parked.unwrap();
    let foreign = resume(&theirs, &parked.handle, &[]).await.unwrap_err();
    assert!(matches!(foreign, ResumeError::Unknown { .. }), "{foreign}");
    assert!(theirs.parked_execs().await.unwrap().is_empty());
    assert_eq!(mine.parked_execs().await.unwrap().len(), 1);
    let malformed = resume(&mine, "../../etc/passwd", &[]).await.unwrap_err();
    assert!(matches!(malformed, ResumeError::Malformed { .. }), "{malformed}");
    let unknown = resume(&mine, &"0".repeat(32), &[]).await.unwrap_err();
    assert!(matches!(unknown, ResumeError::Unknown { .. }), "{unknown}");
    let wrong_id = resume(&mine, &parked.handle, &[(99, Approval::AllowOnce)]).await.unwrap_err();
    assert!(matches!(wrong_id, ResumeError::NoSuchApproval { id: 99, .. }), "{wrong_id}");
    // Two resumes at once: exactly one continues.
    let id = parked.approvals[0].id;
    let answers = [(id, Approval::AllowOnce)];
    let (a, b) = tokio::join!(resume(&mine, &parked.handle, &answers), resume(&mine, &parked.handle, &answers));
    let continued = [&a, &b].iter().filter(|r| r.is_ok()).count();
    assert_eq!(continued, 1, "{a:?} {b:?}");
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn a_host_whose_tools_differ_refuses_to_resume_and_leaves_the_exec_parked() {
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let session = session(dir.path(), &counter, &store, "conv-5").await;
    let parked = run(&session, "return await tools.count({})").await.parked.unwrap();
    let fewer = Session::builder()
        .workspace(dir.path())
        .tools(fixture_tools(&counter).into_iter().filter(|tool| tool.definition().name != "echo"))
        .sandbox(sandbox().await.clone())
        .state_store(store.clone())
        .conversation("conv-5")
        .build()
        .await
        .unwrap();
    let refused = resume(&fewer, &parked.handle, &[]).await.unwrap_err();
    assert!(
        matches!(&refused, ResumeError::NotHere { why: exec_host::NotResumable::OtherTools { gone, .. }, .. } if gone == &["echo"]),
        "{refused}"
    );
    assert!(refused.to_string().contains("gone: echo"), "{refused}");
    let resumed = resume(&session, &parked.handle, &[(parked.approvals[0].id, Approval::AllowOnce)]).await.unwrap();
    assert_eq!(value(&resumed), json!(1));
}

#[tokio::test]
async fn without_a_store_a_parking_answer_is_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let counter = Counter::default();
    let asks = Layer::from_value(json!({"permissions": {"ask": ["count"]}})).unwrap();
    let approver = Arc::new(SharedApprover(TestApprover::new(|_| Approval::Park)));
    let session = Harness::builder(dir.path(), &counter).await.managed_settings(asks).approver(approver).build().await.unwrap();
    let result = run(&session, "try { await tools.count({}) } catch (e) { return e.message }").await;
    let message = value(&result);
    assert!(message.as_str().unwrap().contains("cannot wait for one here"), "{message}");
    let direct =
        session.call(exec_host::ToolCall::new(call_id(), "Exec", json!({"code": "return 1"})), CancellationToken::new()).await;
    assert!(direct.client.ok);
    assert!(matches!(session.resume(&"a".repeat(32), HashMap::new(), CallOptions::default()).await, Err(ResumeError::NoStore)));
}

#[tokio::test]
async fn two_sessions_sharing_one_redis_park_in_one_and_resume_in_the_other() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let counter = Counter::default();
    let key = StateKey::generate().unwrap();
    let one = SealedStore::new(open_store(&server.url(0)).await.unwrap(), key.clone());
    let two = SealedStore::new(open_store(&server.url(0)).await.unwrap(), key);
    let first = session(dir.path(), &counter, &one, "shared").await;
    let second = session(dir.path(), &counter, &two, "shared").await;
    let parked = run(&first, "const a = await tools.echo({ value: 1 }); return a + await tools.count({})").await.parked.unwrap();
    assert_eq!(second.parked_execs().await.unwrap().len(), 1);
    let resumed = resume(&second, &parked.handle, &[(parked.approvals[0].id, Approval::AllowOnce)]).await.unwrap();
    assert_eq!(value(&resumed), json!(2));
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn a_store_gone_when_the_exec_parks_fails_it_saying_why_and_runs_nothing_it_waited_for() {
    let mut server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let counter = Counter::default();
    let store = SealedStore::new(open_store(&server.url(0)).await.unwrap(), StateKey::generate().unwrap());
    let session = session(dir.path(), &counter, &store, "gone").await;
    server.stop();
    let started = std::time::Instant::now();
    let result = run(&session, "const a = await tools.echo({ value: 1 }); return a + await tools.count({})").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "it answered in {:?}", started.elapsed());
    assert!(!result.client.ok && result.parked.is_none());
    assert!(result.model.text.contains("could not be parked"), "{}", result.model.text);
    assert!(result.model.text.contains(&format!("127.0.0.1:{}", server.port)), "{}", result.model.text);
    assert_eq!(counter.get(), 0, "the call it waited for never ran");
}

#[tokio::test]
async fn an_exec_whose_journal_outgrew_its_bound_refuses_the_call_instead_of_parking() {
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let session = session(dir.path(), &counter, &store, "big").await;
    // Thirteen answers of 1 MiB: more than a parked Exec keeps.
    let code = "let n = 0;\nfor (let i = 0; i < 13; i++) n += (await tools.blob({ bytes: 1048576 })).length;\n\
                try { await tools.count({}); return 'ran'; } catch (e) { return [n, e.message]; }";
    let result = run(&session, code).await;
    assert!(result.parked.is_none());
    let returned = value(&result);
    assert_eq!(returned[0], 13 * 1048576);
    let message = returned[1].as_str().unwrap();
    assert!(message.contains("cannot wait for one: what it has done so far is more than a parked Exec keeps"), "{message}");
    assert_eq!(counter.get(), 0);
    assert!(session.parked_execs().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_that_may_yield_runs_on_as_a_running_exec_which_wait_gives_and_which_parks_again() {
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let session = session(dir.path(), &counter, &store, "conv-yield").await;
    let code = "console.log('before'); const n = await tools.count({}); await tools.sleep({ ms: 300 });\n\
                const m = await tools.count({}); return { n, m };";
    let parked = run(&session, code).await;
    let waiting = parked.parked.expect("the Exec parked");
    let answers = HashMap::from([(waiting.approvals[0].id, Approval::AllowOnce)]);
    let options = CallOptions::new(CancellationToken::new()).yield_after(Duration::ZERO);
    let resumed = session.resume(&waiting.handle, answers, options).await.unwrap();
    let running = resumed.running.expect("it yielded at once");
    assert_eq!(running.logs, ["before"], "what it printed before it parked is its progress");
    // It sleeps, then asks for the second count: it parks again, and waiting gives that.
    let again = session.wait(&running.handle, Duration::from_secs(30)).await.unwrap();
    let second = again.parked.expect("it parked again");
    assert_eq!(counter.get(), 1);
    let done = resume(&session, &second.handle, &[(second.approvals[0].id, Approval::AllowOnce)]).await.unwrap();
    assert_eq!(value(&done), json!({"n": 1, "m": 2}));
    assert_eq!(counter.get(), 2, "no call ran twice");
}

#[tokio::test]
async fn a_resumed_exec_keeps_the_time_zone_it_parked_in() {
    // Parked on a host in Kolkata, resumed on one in New York: the script's dates are
    // formatted in the zone it started in, before and after the wait.
    let dir = tempfile::tempdir().unwrap();
    let (counter, store) = (Counter::default(), folder_store(dir.path()));
    let in_zone = |zone: &'static str| {
        let (dir, counter, store) = (dir.path().to_path_buf(), counter.clone(), store.clone());
        async move {
            let options = exec_host::SandboxOptions::default().with_time_zone(zone);
            let sandbox = exec_host::Sandbox::with_options(options).await.expect("the sandbox sets up");
            let approver = Arc::new(SharedApprover(TestApprover::new(|_| Approval::Park)));
            Harness::builder(&dir, &counter)
                .await
                .sandbox(sandbox)
                .managed_settings(Layer::from_value(json!({"permissions": {"ask": ["count"]}})).unwrap())
                .approver(approver)
                .state_store(store)
                .conversation("conv-zone")
                .build()
                .await
                .expect("the session starts")
        }
    };
    let code = "const zone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;
      const before = zone(); await tools.count({});
      return [before, zone(), new Date(Date.UTC(2024, 2, 5, 14, 7)).toLocaleTimeString('en-GB')];";
    let kolkata = in_zone("Asia/Kolkata").await;
    let parked = run(&kolkata, code).await.parked.expect("count asks");
    let new_york = in_zone("America/New_York").await;
    let done = resume(&new_york, &parked.handle, &[(parked.approvals[0].id, Approval::AllowOnce)]).await.unwrap();
    assert_eq!(value(&done), json!(["Asia/Kolkata", "Asia/Kolkata", "19:37:00"]));
    assert_eq!(
        value(&run(&new_york, "return Intl.DateTimeFormat().resolvedOptions().timeZone").await),
        json!("America/New_York")
    );
}
