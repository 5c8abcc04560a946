//! A `requestState` a client of MCP 2026-07-28 sends back with its retry, from any bytes: as
//! sent, and as a state this server sealed with some of its bytes changed. Nothing but the
//! state sealed for this client and tool opens, and what opens is what was sealed.
#![no_main]

use std::sync::OnceLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use exec_host::gateway::request_state::{RequestStates, Retry};
use exec_host::state::{DirectoryStore, SealedStore, StateKey};
use libfuzzer_sys::fuzz_target;

/// The request states of one server, whose store lives as long as the run.
fn states() -> &'static (tempfile::TempDir, RequestStates, String) {
    static STATES: OnceLock<(tempfile::TempDir, RequestStates, String)> = OnceLock::new();
    STATES.get_or_init(|| {
        let folder = tempfile::tempdir().unwrap();
        let store = DirectoryStore::open(&folder.path().join("store")).unwrap();
        let states = RequestStates::new(SealedStore::new(std::sync::Arc::new(store), StateKey::from_bytes([5; 32])));
        let forms = rmcp::model::InputRequests::new();
        let answer = serde_json::to_value(states.questions_required("alice", "Exec", forms, ("replica", "waiting".into()), 3));
        let answer = answer.unwrap();
        let sealed = answer["requestState"].as_str().unwrap().to_string();
        (folder, states, sealed)
    })
}

fuzz_target!(|data: &[u8]| {
    let (_, states, sealed) = states();
    // As sent: only a state this server sealed opens.
    let sent = String::from_utf8_lossy(data);
    if let Ok(retry) = states.open("alice", "Exec", &sent) {
        assert_eq!(retry, Retry { handle: "waiting".into(), round: 3, waits_in: Some("replica".into()) }, "{sent:?}");
    }
    // A sealed state with bytes changed (at the offsets and to the values the input says):
    // refused, unless nothing changed.
    let mut bytes = URL_SAFE_NO_PAD.decode(sealed).unwrap();
    let original = bytes.clone();
    for pair in data.chunks_exact(2) {
        let at = pair[0] as usize % bytes.len();
        bytes[at] ^= pair[1];
    }
    let changed = URL_SAFE_NO_PAD.encode(&bytes);
    let opened = states.open("alice", "Exec", &changed);
    assert_eq!(opened.is_ok(), bytes == original, "a changed state opened: {changed}");
    // Another client or tool never opens it.
    assert!(states.open("mallory", "Exec", sealed).is_err());
    assert!(states.open("alice", "Read", sealed).is_err());
});
