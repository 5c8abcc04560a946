//! Values kept between Execs with `store(key, value)` and `load(key)`, through the real
//! guest and host: across sessions of one conversation (a folder store, a real Redis),
//! never across conversations, within their bounds, across a park, and with a store that
//! went away.

use std::collections::HashMap;
use std::sync::Arc;

use exec_host::settings::Layer;
use exec_host::state::{DirectoryStore, SealedStore, StateKey, StateStore, open_store};
use exec_host::{Approval, CallOptions, CancellationToken, Session, ToolResult, ValueBounds};
use exec_host_tests::redis::RedisServer;
use exec_host_tests::{Counter, Harness, SharedApprover, TestApprover, exec_call};
use serde_json::{Value, json};

async fn session(dir: &std::path::Path, store: Option<&SealedStore>, conversation: &str, bounds: ValueBounds) -> Session {
    let counter = Counter::default();
    let mut builder = Harness::builder(dir, &counter).await.conversation(conversation).value_bounds(bounds);
    if let Some(store) = store {
        builder = builder.state_store(store.clone());
    }
    builder.build().await.expect("the session starts")
}

fn folder_store(dir: &std::path::Path, key: &StateKey) -> SealedStore {
    let store: Arc<dyn StateStore> = Arc::new(DirectoryStore::open(&dir.join("state")).unwrap());
    SealedStore::new(store, key.clone())
}

async fn run(session: &Session, code: &str) -> ToolResult {
    session.call(exec_call(code), CancellationToken::new()).await
}

fn value(result: &ToolResult) -> Value {
    assert!(result.client.ok, "{}", result.model.text);
    result.client.value.clone().unwrap_or(Value::Null)
}

#[tokio::test]
async fn values_outlive_the_session_in_their_conversation_and_no_other_sees_them() {
    let dir = tempfile::tempdir().unwrap();
    let key = StateKey::generate().unwrap();
    let store = folder_store(dir.path(), &key);
    let first = session(dir.path(), Some(&store), "conv-a", ValueBounds::default()).await;
    let stored =
        run(&first, r#"store("plan", { steps: ["read", "write"], done: 1 }); store("n", 1); return load("plan").done"#).await;
    assert_eq!(value(&stored), json!(1));
    first.shutdown().await;

    // A new process would open the same folder with the same key: a fresh session does.
    let again = session(dir.path(), Some(&folder_store(dir.path(), &key)), "conv-a", ValueBounds::default()).await;
    let read = run(
        &again,
        r#"const plan = load("plan"); store("n", load("n") + 1); store("plan", undefined); return { plan, n: load("n") }"#,
    )
    .await;
    assert_eq!(value(&read), json!({"plan": {"steps": ["read", "write"], "done": 1}, "n": 2}));
    let after = run(&again, r#"return [load("plan"), load("n")]"#).await;
    assert_eq!(value(&after), json!([null, 2]), "the removal and the change were kept");

    let other = session(dir.path(), Some(&store), "conv-b", ValueBounds::default()).await;
    let isolated = run(&other, r#"return [typeof load("n"), typeof load("plan")]"#).await;
    assert_eq!(value(&isolated), json!(["undefined", "undefined"]), "another conversation sees nothing");
}

#[tokio::test]
async fn without_a_store_values_last_as_long_as_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let one = session(dir.path(), None, "memory", ValueBounds::default()).await;
    run(&one, r#"store("x", [1, 2, 3])"#).await;
    assert_eq!(value(&run(&one, r#"return load("x")"#).await), json!([1, 2, 3]));
    let two = session(dir.path(), None, "memory", ValueBounds::default()).await;
    assert_eq!(value(&run(&two, r#"return load("x") === undefined"#).await), json!(true));
}

#[tokio::test]
async fn two_sessions_sharing_one_redis_share_a_conversations_values() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let key = StateKey::generate().unwrap();
    let one = SealedStore::new(open_store(&server.url(3)).await.unwrap(), key.clone());
    let two = SealedStore::new(open_store(&server.url(3)).await.unwrap(), key);
    let first = session(dir.path(), Some(&one), "shared", ValueBounds::default()).await;
    let second = session(dir.path(), Some(&two), "shared", ValueBounds::default()).await;
    run(&first, r#"store("cursor", { page: 7 })"#).await;
    assert_eq!(value(&run(&second, r#"return load("cursor").page"#).await), json!(7));
}

#[tokio::test]
async fn each_bound_throws_at_the_store_that_passes_it_and_keeps_nothing_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let bounds = ValueBounds::default().with_value_bytes(100).with_keys(3).with_bytes(150);
    let session = session(dir.path(), None, "bounded", bounds).await;
    let script = r#"
        const refused = [];
        const attempt = (f) => { try { f(); } catch (e) { refused.push(`${e.name}: ${e.message}`); } };
        attempt(() => store("big", "x".repeat(200)));
        store("a", 1); store("b", 2); store("c", "y".repeat(90));
        attempt(() => store("d", 4));
        attempt(() => store("b", "z".repeat(95)));
        attempt(() => store("", 1));
        attempt(() => store("k".repeat(257), 1));
        store("a", undefined);
        store("d", 4);
        return { refused, kept: [load("a"), load("b"), load("d"), load("big")] };
    "#;
    let result = value(&run(&session, script).await);
    let refused: Vec<String> = serde_json::from_value(result["refused"].clone()).unwrap();
    assert_eq!(refused.len(), 5, "{refused:?}");
    assert!(
        refused[0].starts_with("Error: store(): the value of \"big\" takes 202 bytes as JSON, more than the 100"),
        "{}",
        refused[0]
    );
    assert!(refused[1].contains("keeps 3 keys already"), "{}", refused[1]);
    assert!(
        refused[2].contains("this conversation's values would take 193 bytes, more than the 150 it may keep"),
        "{}",
        refused[2]
    );
    assert!(refused[3].contains("a key is a string of 1 to 256 bytes; this one has 0"), "{}", refused[3]);
    assert!(refused[4].contains("this one has 257"), "{}", refused[4]);
    assert_eq!(result["kept"], json!([null, 2, 4, null]));
    assert_eq!(value(&run(&session, r#"return [load("b"), load("c").length, load("d")]"#).await), json!([2, 90, 4]));
}

#[tokio::test]
async fn a_value_with_an_unpaired_surrogate_is_refused_not_kept_altered() {
    // A kept value reads back as it was stored: half of a UTF-16 pair has no UTF-8 spelling,
    // so `store` throws rather than keep U+FFFD in its place (tool arguments carry U+FFFD).
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path(), None, "surrogates", ValueBounds::default()).await;
    let script = r#"
        const refused = [];
        for (const value of ["\ud800", { list: ["ok", "a\udfffb"] }, { ["\udc00"]: 1 }]) {
          try { store("k", value); } catch (e) { refused.push(`${e.name}: ${e.message}`); }
        }
        store("pair", "😀 \ud83d\ude00");
        return { refused, kept: load("k"), pair: load("pair") };
    "#;
    let result = value(&run(&session, script).await);
    let refused: Vec<String> = serde_json::from_value(result["refused"].clone()).unwrap();
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(refused[0].starts_with("TypeError: store(\"k\"): value holds an unpaired surrogate"), "{}", refused[0]);
    assert!(refused[1].contains("value.list[1] holds an unpaired surrogate"), "{}", refused[1]);
    assert!(refused[2].contains("holds an unpaired surrogate"), "{}", refused[2]);
    assert_eq!(result["kept"], json!(null), "nothing was kept under the key");
    assert_eq!(result["pair"], json!("😀 😀"));
}

#[tokio::test]
async fn values_stored_before_a_park_are_kept_and_the_resumed_script_reads_them_again_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let key = StateKey::generate().unwrap();
    let store = folder_store(dir.path(), &key);
    let counter = Counter::default();
    let asks = Layer::from_value(json!({"permissions": {"ask": ["count"]}})).unwrap();
    let parking = Harness::builder(dir.path(), &counter)
        .await
        .managed_settings(asks.clone())
        .approver(Arc::new(SharedApprover(TestApprover::new(|_| Approval::Park))))
        .state_store(store.clone())
        .conversation("parks")
        .build()
        .await
        .unwrap();
    let script = r#"
        store("before", load("before") === undefined ? 1 : "replayed wrong");
        const seen = load("before");
        await tools.count({});
        store("after", seen + 1);
        return { seen, after: load("after") };
    "#;
    let parked = run(&parking, script).await.parked.expect("the Exec parks");
    // Another Exec of the conversation changes the value while the first is parked: the
    // resumed one still reads what it read before it parked.
    let other = session(dir.path(), Some(&store), "parks", ValueBounds::default()).await;
    assert_eq!(value(&run(&other, r#"const b = load("before"); store("before", 100); return b"#).await), json!(1));
    let resumed = parking
        .resume(&parked.handle, HashMap::from([(parked.approvals[0].id, Approval::AllowOnce)]), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(value(&resumed), json!({"seen": 1, "after": 2}));
    assert_eq!(value(&run(&other, r#"return [load("before"), load("after")]"#).await), json!([100, 2]));
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn a_resumed_exec_reads_its_own_writes_over_what_another_exec_stored_while_it_was_parked() {
    let dir = tempfile::tempdir().unwrap();
    let store = folder_store(dir.path(), &StateKey::generate().unwrap());
    let counter = Counter::default();
    let asks = Layer::from_value(json!({"permissions": {"ask": ["count"]}})).unwrap();
    let parking = Harness::builder(dir.path(), &counter)
        .await
        .managed_settings(asks)
        .approver(Arc::new(SharedApprover(TestApprover::new(|_| Approval::Park))))
        .state_store(store.clone())
        .conversation("own")
        .build()
        .await
        .unwrap();
    let script = r#"
        store("mine", "stored before the park");
        store("removed", 1);
        store("removed", undefined);
        await tools.count({});
        return { mine: load("mine"), removed: load("removed") ?? "none", theirs: load("theirs") };
    "#;
    let parked = run(&parking, script).await.parked.expect("the Exec parks");
    let other = session(dir.path(), Some(&store), "own", ValueBounds::default()).await;
    let wrote = r#"store("mine", "the other's"); store("removed", "the other's"); store("theirs", "the other's"); return 1"#;
    assert_eq!(value(&run(&other, wrote).await), json!(1));
    let resumed = parking
        .resume(&parked.handle, HashMap::from([(parked.approvals[0].id, Approval::AllowOnce)]), CallOptions::default())
        .await
        .unwrap();
    // Its own keys read as it left them; a key it never stored reads the conversation's.
    assert_eq!(value(&resumed), json!({"mine": "stored before the park", "removed": "none", "theirs": "the other's"}));
    // What it stored before the park was kept then, and is not kept again over the later write.
    assert_eq!(value(&run(&other, r#"return [load("mine"), load("removed")]"#).await), json!(["the other's", "the other's"]));
}

#[tokio::test]
async fn values_that_cannot_be_kept_when_the_script_ends_are_said_in_its_output() {
    let mut server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = SealedStore::new(open_store(&server.url(4)).await.unwrap(), StateKey::generate().unwrap());
    let session = session(dir.path(), Some(&store), "gone", ValueBounds::default()).await;
    // The script reads the values first, then the store goes away before it ends.
    let script = r#"load("x"); await tools.sleep({ ms: 300 }); store("x", 1); return "done""#;
    let (result, ()) = tokio::join!(run(&session, script), async {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        server.stop();
    });
    assert_eq!(value(&result), json!("done"), "the script's own result is not lost");
    assert!(result.model.text.contains("what this script stored was not kept"), "{}", result.model.text);
    assert!(result.model.text.contains(&format!("127.0.0.1:{}", server.port)), "{}", result.model.text);
    // A script that reads with the store gone gets an Error it can catch.
    let caught = run(&session, r#"try { load("x"); return "read" } catch (e) { return e.message }"#).await;
    assert!(
        value(&caught).as_str().unwrap().starts_with("load(): the conversation's values cannot be read"),
        "{}",
        caught.model.text
    );
}
