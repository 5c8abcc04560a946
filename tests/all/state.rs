//! The state stores against their real backends: a private folder, and a real
//! `redis-server` on a loopback port. What two replicas sharing one Redis see, what a
//! store that went away does, and that nothing a store hands back is used unsealed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use exec_host::state::{REDIS_TIMEOUT, RedisStore, SealedStore, StateKey, StateStore, StoreError, open_store};
use exec_host_tests::redis::RedisServer;

fn sealed(store: Arc<dyn StateStore>, key: &StateKey) -> SealedStore {
    SealedStore::new(store, key.clone())
}

#[tokio::test]
async fn two_replicas_share_one_redis_and_exactly_one_takes_an_entry() {
    let server = RedisServer::start();
    let key = StateKey::generate().unwrap();
    let first = sealed(open_store(&server.url(0)).await.unwrap(), &key);
    let second = sealed(open_store(&server.url(0)).await.unwrap(), &key);
    first.put("exec/conv-1/handle-a", b"parked", Duration::from_secs(60)).await.unwrap();
    assert_eq!(second.get("exec/conv-1/handle-a").await.unwrap().as_deref(), Some(&b"parked"[..]), "the other replica reads it");
    assert_eq!(second.keys("exec/conv-1/", 10).await.unwrap(), ["exec/conv-1/handle-a"]);
    let (a, b) = tokio::join!(first.take("exec/conv-1/handle-a"), second.take("exec/conv-1/handle-a"));
    let taken: Vec<_> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(taken, [b"parked".to_vec()], "exactly one replica gets it");
    assert_eq!(first.get("exec/conv-1/handle-a").await.unwrap(), None);
    // A claim takes without reading again: one replica of two gets it.
    first.put("exec/conv-1/handle-b", b"parked", Duration::from_secs(60)).await.unwrap();
    let (a, b) = tokio::join!(first.claim("exec/conv-1/handle-b"), second.claim("exec/conv-1/handle-b"));
    assert_eq!([a.unwrap(), b.unwrap()].into_iter().filter(|claimed| *claimed).count(), 1, "exactly one replica claims it");
    assert_eq!(second.get("exec/conv-1/handle-b").await.unwrap(), None);
    assert!(!first.claim("exec/conv-1/handle-b").await.unwrap(), "a claim of what is gone says so");
}

#[tokio::test]
async fn a_redis_entry_changed_moved_or_sealed_by_another_key_is_refused() {
    let server = RedisServer::start();
    let key = StateKey::generate().unwrap();
    let raw: Arc<dyn StateStore> = Arc::new(RedisStore::connect(&server.url(1)).await.unwrap());
    let store = sealed(raw.clone(), &key);
    store.put("exec/c/mine", b"payload", Duration::from_secs(60)).await.unwrap();
    let bytes = raw.get("exec/c/mine").await.unwrap().unwrap();
    raw.put("exec/c/yours", &bytes, Duration::from_secs(60)).await.unwrap();
    assert!(matches!(store.get("exec/c/yours").await, Err(StoreError::Tampered)), "moved under another key");
    let mut changed = bytes.clone();
    *changed.last_mut().unwrap() ^= 1;
    raw.put("exec/c/mine", &changed, Duration::from_secs(60)).await.unwrap();
    assert!(matches!(store.get("exec/c/mine").await, Err(StoreError::Tampered)), "changed");
    let stranger = sealed(raw.clone(), &StateKey::generate().unwrap());
    stranger.put("exec/c/theirs", b"x", Duration::from_secs(60)).await.unwrap();
    assert!(matches!(store.get("exec/c/theirs").await, Err(StoreError::Tampered)), "another host's key");
    raw.put("exec/c/huge", &vec![0u8; exec_host::state::MAX_ENTRY_BYTES + 100], Duration::from_secs(60)).await.unwrap();
    assert!(store.get("exec/c/huge").await.is_err(), "more than an entry can be is not read as one");
}

#[tokio::test]
async fn redis_expires_entries_itself() {
    let server = RedisServer::start();
    let store = sealed(open_store(&server.url(2)).await.unwrap(), &StateKey::generate().unwrap());
    store.put("short", b"x", Duration::from_millis(50)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(store.get("short").await.unwrap(), None);
    assert!(store.keys("", 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_redis_that_goes_away_fails_each_operation_in_bounded_time_and_comes_back() {
    let mut server = RedisServer::start();
    let store = sealed(open_store(&server.url(0)).await.unwrap(), &StateKey::generate().unwrap());
    store.put("k", b"v", Duration::from_secs(60)).await.unwrap();
    server.stop();
    let started = Instant::now();
    let error = store.get("k").await.unwrap_err();
    assert!(started.elapsed() < REDIS_TIMEOUT * 3, "it answered in {:?}", started.elapsed());
    assert!(matches!(error, StoreError::Unreachable { .. } | StoreError::TimedOut { .. }), "{error:?}");
    let sentence = exec_host::error_sentence(&error);
    assert!(sentence.contains(&format!("127.0.0.1:{}", server.port)), "{sentence}");
    let nobody = open_store(&format!("redis://127.0.0.1:{}/0", server.port)).await.unwrap_err();
    assert!(matches!(nobody, StoreError::Unreachable { .. } | StoreError::TimedOut { .. }), "{nobody:?}");
}

#[tokio::test]
async fn a_location_is_a_folder_or_a_redis_address_and_nothing_else() {
    let refused = open_store("http://example.invalid/store").await.unwrap_err().to_string();
    assert!(refused.contains("neither a folder nor a redis://"), "{refused}");
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("store");
    let store = sealed(open_store(folder.to_str().unwrap()).await.unwrap(), &StateKey::generate().unwrap());
    store.put("k", b"v", Duration::from_secs(60)).await.unwrap();
    assert_eq!(store.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));
    let fifo = dir.path().join("fifo");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path and a mode; mkfifo(3) has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let refused = open_store(fifo.to_str().unwrap()).await.unwrap_err().to_string();
    assert!(refused.contains("is not a plain folder"), "{refused}");
}
