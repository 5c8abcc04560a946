//! Approvals for clients of MCP 2026-07-28, to which a server sends no requests
//! (multi round-trip requests). A call that must ask parks its Exec in the session's state
//! store, and `tools/call` answers `InputRequiredResult`: one elicitation form per pending
//! approval, keyed `approval-ID`, and a `requestState` that names the parked Exec. The
//! client retries the same call with the answers (`inputResponses`) and the state; the Exec
//! resumes, in this process or any replica sharing the store and its key. A call that asks
//! again is another round, up to [`MAX_ROUNDS`].
//!
//! The request state is sealed with the state key (HMAC-SHA256), bound to the client's
//! identity (its bearer token, hashed) and to the tool called, expires with the parked Exec,
//! and is at most [`MAX_REQUEST_STATE_BYTES`]. The Exec it names resumes once. A state that
//! is stale, changed, another client's or another server's, or used already is refused with
//! invalid params (-32602), and nothing runs twice.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use exec_host::state_store::SealedStore;
use exec_host::{Approval, ParkedExec, PendingApproval};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams, InputRequest, InputRequests, InputRequiredResult,
    InputResponses,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::elicit::{decision, decision_form};

/// Rounds of approvals one call may take; past them its Exec is discarded.
pub const MAX_ROUNDS: u32 = 8;

/// Bytes of a request state a client may send back.
pub const MAX_REQUEST_STATE_BYTES: usize = 4096;

/// How long a request state is good: as long as the Exec it names is kept.
const REQUEST_STATE_TTL: Duration = exec_host::DEFAULT_PARKED_TTL;

/// The prefix of an approval's key in `inputRequests` and `inputResponses`.
const APPROVAL_KEY: &str = "approval-";

/// What a request state says, sealed.
#[derive(Serialize, Deserialize)]
struct RequestState {
    /// The parked Exec, or the call waiting for answers to its questions.
    handle: String,
    /// The rounds of approvals and questions so far.
    round: u32,
    /// The tool called: a state is good only for a retry of the same call.
    tool: String,
    /// The process a call waiting on a downstream server's questions runs in (see
    /// `waiting`); none for a parked Exec, which any replica resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waits_in: Option<String>,
}

/// Where a retry continues: the parked Exec or the waiting call, and its round.
#[derive(Debug)]
pub struct Retry {
    pub handle: String,
    pub round: u32,
    /// The process whose call waits, for a call waiting on questions.
    pub waits_in: Option<String>,
}

/// Seals and opens the request states of one server.
pub struct Rounds {
    store: SealedStore,
}

impl Rounds {
    pub fn new(store: SealedStore) -> Self {
        Rounds { store }
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

    /// The parked Exec a retry of `tool` by `client` names.
    pub fn open(&self, client: &str, tool: &str, state: &str) -> Result<Retry, ErrorData> {
        if state.len() > MAX_REQUEST_STATE_BYTES {
            return Err(refused(format!("its requestState has {} bytes, more than a state this server makes", state.len())));
        }
        let sealed = URL_SAFE_NO_PAD.decode(state).map_err(|_| refused("its requestState is not one this server made".into()))?;
        let payload = self.store.open_token(&binding(client), &sealed).map_err(|error| {
            refused(match error {
                exec_host::state_store::StoreError::Expired => "its requestState has expired; call the tool again".into(),
                _ => "its requestState is not one this server made for this client (changed, another client's, or sealed with another key)".into(),
            })
        })?;
        let state: RequestState =
            serde_json::from_slice(&payload).map_err(|_| refused("its requestState is not one this server made".into()))?;
        if state.tool != tool {
            return Err(refused(format!("its requestState belongs to a call of `{}`, not of `{tool}`", state.tool)));
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

/// The forms of a parked Exec: one elicitation per pending approval, keyed `approval-ID`.
pub fn forms(parked: &ParkedExec) -> InputRequests {
    let Some(schema) = decision_form() else { return InputRequests::new() };
    parked
        .approvals
        .iter()
        .map(|approval| {
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message(approval),
                requested_schema: schema.clone(),
            };
            (format!("{APPROVAL_KEY}{}", approval.id), InputRequest::Elicitation(ElicitRequest::new(params)))
        })
        .collect()
}

/// The answers a retry gives, by approval id: every key must name a pending approval, and
/// every answer must be an elicitation result. An approval without an answer asks again.
pub fn answers(pending: &[u32], responses: Option<&InputResponses>) -> Result<HashMap<u32, Approval>, ErrorData> {
    let mut answers = HashMap::new();
    for (key, response) in responses.into_iter().flatten() {
        let Some(id) = approval_id(key).filter(|id| pending.contains(id)) else {
            return Err(refused(format!("its inputResponses answer `{}`, which this call did not ask", cut(key))));
        };
        answers.insert(id, answer(key, response).map_err(refused)?);
    }
    Ok(answers)
}

/// The approval one answer gives, or why it is not an elicitation result.
pub fn answer(key: &str, response: &Value) -> Result<Approval, String> {
    match response.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(decision(true, response.get("content"))),
        Some("decline" | "cancel") => Ok(decision(false, None)),
        _ => Err(format!("its answer to `{}` is not an elicitation result (action accept, decline or cancel)", cut(key))),
    }
}

/// The approval id a form's key names.
pub fn approval_id(key: &str) -> Option<u32> {
    key.strip_prefix(APPROVAL_KEY).and_then(|id| id.parse::<u32>().ok())
}

/// Who is calling: the hash of the bearer token it presented over HTTP, else the one client
/// of a local transport.
pub fn client_identity(context: &RequestContext<RoleServer>) -> String {
    let token = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.headers.get(axum::http::header::AUTHORIZATION))
        .map(|value| value.as_bytes().to_vec());
    match token {
        Some(token) => URL_SAFE_NO_PAD.encode(&Sha256::digest(&token)[..16]),
        None => "local".to_string(),
    }
}

fn binding(client: &str) -> String {
    format!("mcp-request-state:{client}")
}

/// What the form says of one approval.
fn message(approval: &PendingApproval) -> String {
    format!(
        "`{}` wants to run ({}). It asks because of {}.",
        approval.tool,
        crate::approve::shown_value(&approval.input),
        approval.why
    )
}

/// A refused retry, saying why, as the protocol's error.
pub fn refused(why: String) -> ErrorData {
    ErrorData::invalid_params(format!("the retry was refused: {why}"), None)
}

fn cut(text: &str) -> String {
    text.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn responses(value: Value) -> InputResponses {
        serde_json::from_value(value).unwrap()
    }

    #[tokio::test]
    async fn a_state_that_expired_or_is_another_clients_is_refused_saying_which() {
        let folder = tempfile::tempdir().unwrap();
        let store = exec_host::state_store::open_store(&folder.path().join("store").display().to_string()).await.unwrap();
        let store = SealedStore::new(store, exec_host::state_store::StateKey::from_bytes([3; 32]));
        let rounds = Rounds::new(store.clone());
        let state = |ttl: Duration| {
            let state = RequestState { handle: "h".into(), round: 1, tool: "Exec".into(), waits_in: None };
            let payload = serde_json::to_vec(&state).unwrap();
            URL_SAFE_NO_PAD.encode(store.seal_token(&binding("alice"), &payload, ttl))
        };
        let fresh = state(Duration::from_secs(60));
        assert_eq!(rounds.open("alice", "Exec", &fresh).unwrap().handle, "h");
        let foreign = rounds.open("mallory", "Exec", &fresh).unwrap_err();
        assert!(foreign.message.contains("for this client"), "{}", foreign.message);
        let expired = state(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        let refused = rounds.open("alice", "Exec", &expired).unwrap_err();
        assert!(refused.message.contains("has expired; call the tool again"), "{}", refused.message);
        let huge = "A".repeat(MAX_REQUEST_STATE_BYTES + 1);
        assert!(rounds.open("alice", "Exec", &huge).unwrap_err().message.contains("more than a state"));
    }

    #[test]
    fn answers_name_only_what_was_asked_and_are_elicitation_results() {
        let asked = [0, 2];
        let given = responses(serde_json::json!({
            "approval-0": {"action": "accept", "content": {"decision": "always"}},
            "approval-2": {"action": "decline"},
        }));
        let given = answers(&asked, Some(&given)).unwrap();
        assert_eq!(given[&0], Approval::AllowAlways);
        assert!(matches!(given[&2], Approval::Deny { .. }));
        assert!(answers(&asked, None).unwrap().is_empty(), "no answers: each asks again");
        for (bad, needle) in [
            (serde_json::json!({"approval-1": {"action": "accept"}}), "did not ask"),
            (serde_json::json!({"other": {"action": "accept"}}), "did not ask"),
            (serde_json::json!({"approval-0": {"action": "maybe"}}), "not an elicitation result"),
            (serde_json::json!({"approval-0": "yes"}), "not an elicitation result"),
        ] {
            let refused = answers(&asked, Some(&responses(bad))).unwrap_err();
            assert!(refused.message.contains(needle), "{}", refused.message);
        }
    }
}
