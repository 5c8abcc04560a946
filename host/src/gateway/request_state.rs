//! The request state of a multi-round-trip retry (MCP 2026-07-28, whose clients a server
//! sends no requests). A call that must ask answers `InputRequiredResult` with the forms and a
//! `requestState` naming the parked Exec (or the call waiting on a downstream server's
//! questions); the client retries the same call with its answers and that state.
//!
//! The state is sealed with the state key (HMAC-SHA256), bound to the client's identity (its
//! bearer token, hashed) and to the tool called, expires with the parked Exec, and is at most
//! [`MAX_REQUEST_STATE_BYTES`]. A state that is stale, changed, another client's or another
//! server's is refused with invalid params (-32602), saying which.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, InputRequests, InputRequiredResult};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::approval_forms::{forms, quoted, refused};
use crate::conversation::render::ParkedExec;
use crate::state::{SealedStore, StoreError};

/// Rounds of approvals one call may take; past them its Exec is discarded.
pub const MAX_ROUNDS: u32 = 8;

/// Bytes of a request state a client may send back.
pub const MAX_REQUEST_STATE_BYTES: usize = 4096;

/// How long a request state is good: as long as the Exec it names is kept.
const REQUEST_STATE_TTL: Duration = crate::session::DEFAULT_PARKED_TTL;

/// What a request state says, sealed.
#[derive(Serialize, Deserialize)]
struct RequestState {
    /// The parked Exec, or the call waiting for answers to its questions.
    handle: String,
    /// The rounds of approvals and questions so far.
    round: u32,
    /// The tool called: a state is good only for a retry of the same call.
    tool: String,
    /// The process a call waiting on a downstream server's questions runs in; none for a
    /// parked Exec, which any replica resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waits_in: Option<String>,
}

/// Where a retry continues: the parked Exec or the waiting call, and its round.
#[derive(Debug, PartialEq, Eq)]
pub struct Retry {
    pub handle: String,
    pub round: u32,
    /// The process whose call waits, for a call waiting on questions.
    pub waits_in: Option<String>,
}

/// Seals and opens the request states of one server.
pub struct RequestStates {
    store: SealedStore,
}

impl RequestStates {
    pub fn new(store: SealedStore) -> Self {
        RequestStates { store }
    }

    /// The answer to a call whose Exec parked in round `round`: a form per approval and the
    /// state that names the Exec.
    pub fn input_required(&self, client: &str, tool: &str, parked: &ParkedExec, round: u32) -> InputRequiredResult {
        let state = RequestState { handle: parked.handle.clone(), round, tool: tool.to_string(), waits_in: None };
        InputRequiredResult::new(Some(forms(parked)), Some(self.seal(client, &state)))
    }

    /// The answer to a call that waits in process `replica` under `handle` for the answers
    /// to its questions (`forms`), in round `round`.
    pub fn questions_required(
        &self,
        client: &str,
        tool: &str,
        forms: InputRequests,
        (replica, handle): (&str, String),
        round: u32,
    ) -> InputRequiredResult {
        let state = RequestState { handle, round, tool: tool.to_string(), waits_in: Some(replica.to_string()) };
        InputRequiredResult::new(Some(forms), Some(self.seal(client, &state)))
    }

    fn seal(&self, client: &str, state: &RequestState) -> String {
        let payload = serde_json::to_vec(state).unwrap_or_default();
        URL_SAFE_NO_PAD.encode(self.store.seal_token(&binding(client), &payload, REQUEST_STATE_TTL))
    }

    /// Where a retry of `tool` by `client` with request state `state` continues.
    pub fn open(&self, client: &str, tool: &str, state: &str) -> Result<Retry, ErrorData> {
        if state.len() > MAX_REQUEST_STATE_BYTES {
            return Err(refused(format!("its requestState has {} bytes, more than a state this server makes", state.len())));
        }
        let not_ours = || refused("its requestState is not one this server made".into());
        let sealed = URL_SAFE_NO_PAD.decode(state).map_err(|_| not_ours())?;
        let payload = self.store.open_token(&binding(client), &sealed).map_err(|error| {
            refused(match error {
                StoreError::Expired => "its requestState has expired; call the tool again".into(),
                _ => "its requestState is not one this server made for this client (changed, another client's, or sealed with another key)".into(),
            })
        })?;
        let state: RequestState = serde_json::from_slice(&payload).map_err(|_| not_ours())?;
        if state.tool != tool {
            return Err(refused(format!(
                "its requestState belongs to a call of `{}`, not of `{}`",
                quoted(&state.tool),
                quoted(tool)
            )));
        }
        Ok(Retry { handle: state.handle, round: state.round, waits_in: state.waits_in })
    }
}

/// Whether a script that parks in round `round` of one call is still within the bound.
pub fn within_bound(round: u32) -> bool {
    round <= MAX_ROUNDS
}

/// The result of a call whose script asked for approvals, or whose downstream servers asked
/// questions, in more rounds than the bound.
pub fn too_many_rounds() -> CallToolResult {
    let text = format!(
        "The call asked its client (approvals, or a downstream server's questions) in more than {MAX_ROUNDS} rounds, so it was ended; none of the calls it waited for ran."
    );
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// Who is calling: the hash of the bearer token it presented (the `Authorization` header's
/// value), else the one client of a local transport.
pub fn client_identity(bearer: Option<&[u8]>) -> String {
    match bearer {
        Some(token) => URL_SAFE_NO_PAD.encode(&Sha256::digest(token)[..16]),
        None => "local".to_string(),
    }
}

fn binding(client: &str) -> String {
    format!("mcp-request-state:{client}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{StateKey, open_store};

    async fn states() -> (tempfile::TempDir, SealedStore, RequestStates) {
        let folder = tempfile::tempdir().unwrap();
        let store = open_store(&folder.path().join("store").display().to_string()).await.unwrap();
        let store = SealedStore::new(store, StateKey::from_bytes([3; 32]));
        (folder, store.clone(), RequestStates::new(store))
    }

    fn sealed(store: &SealedStore, client: &str, tool: &str, ttl: Duration) -> String {
        let state = RequestState { handle: "h".into(), round: 1, tool: tool.into(), waits_in: None };
        URL_SAFE_NO_PAD.encode(store.seal_token(&binding(client), &serde_json::to_vec(&state).unwrap(), ttl))
    }

    #[tokio::test]
    async fn a_state_opens_for_its_client_and_tool_alone() {
        let (_folder, store, states) = states().await;
        let fresh = sealed(&store, "alice", "Exec", Duration::from_secs(60));
        assert_eq!(states.open("alice", "Exec", &fresh).unwrap(), Retry { handle: "h".into(), round: 1, waits_in: None });
        let foreign = states.open("mallory", "Exec", &fresh).unwrap_err();
        assert!(foreign.message.contains("for this client"), "{}", foreign.message);
        let other_tool = states.open("alice", "Read", &fresh).unwrap_err();
        assert!(other_tool.message.contains("belongs to a call of `Exec`, not of `Read`"), "{}", other_tool.message);
    }

    #[tokio::test]
    async fn a_state_that_expired_is_too_long_or_is_not_ours_is_refused_saying_which() {
        let (_folder, store, states) = states().await;
        let expired = sealed(&store, "alice", "Exec", Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        let refused = states.open("alice", "Exec", &expired).unwrap_err();
        assert!(refused.message.contains("has expired; call the tool again"), "{}", refused.message);
        let huge = "A".repeat(MAX_REQUEST_STATE_BYTES + 1);
        assert!(states.open("alice", "Exec", &huge).unwrap_err().message.contains("more than a state"));
        for garbage in ["", "not base64!", "AAAA"] {
            let refused = states.open("alice", "Exec", garbage).unwrap_err();
            assert!(refused.message.contains("not one this server made"), "{garbage}: {}", refused.message);
        }
    }

    #[tokio::test]
    async fn the_forms_of_a_parked_exec_go_out_with_a_state_that_names_it() {
        let (_folder, _store, states) = states().await;
        let approval = crate::conversation::render::PendingApproval {
            id: 4,
            tool: "Bash".into(),
            input: serde_json::json!({"command": "ls"}),
            why: "the ask rule `Bash`".into(),
        };
        let parked = ParkedExec { handle: "parked-1".into(), approvals: vec![approval], exec_call_id: "call-1".into() };
        let answer = serde_json::to_value(states.input_required("alice", "Exec", &parked, 2)).unwrap();
        let form = &answer["inputRequests"]["approval-4"];
        assert!(form["params"]["message"].as_str().unwrap().contains("`Bash` wants to run"), "{answer}");
        let state = answer["requestState"].as_str().unwrap();
        assert_eq!(states.open("alice", "Exec", state).unwrap(), Retry { handle: "parked-1".into(), round: 2, waits_in: None });
    }

    #[test]
    fn clients_are_told_apart_by_their_token_and_a_local_one_is_one() {
        assert_eq!(client_identity(None), "local");
        assert_ne!(client_identity(Some(b"Bearer a")), client_identity(Some(b"Bearer b")));
        assert_eq!(client_identity(Some(b"Bearer a")), client_identity(Some(b"Bearer a")));
        assert!(within_bound(MAX_ROUNDS) && !within_bound(MAX_ROUNDS + 1));
    }
}
