//! A task of the Tasks extension (`io.modelcontextprotocol/tasks`) as the state store keeps it,
//! and what a client is shown of it. An `Exec` a declaring client calls that still runs after
//! [`TASK_AFTER`] becomes a task under a random id; any replica sharing the store answers
//! `tasks/get`, `tasks/update` and `tasks/cancel` from its record, sealed and bound to the
//! client that made it.
//!
//! ```text
//! working --> completed (its result) | failed (a host error) | cancelled
//!   |  ^
//!   v  |  parks / every form answered (tasks/update)
//! input_required
//! ```

use std::collections::HashMap;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{DetailedTask, InputRequests, InputResponses, JsonObject, Task, TaskPayload, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::approval_forms::{answer, answers, approval_id, quoted};
use crate::calls::policy::Approval;

/// An `Exec` still running after this long becomes a task; one that ends sooner answers its
/// call as any other does.
pub const TASK_AFTER: Duration = Duration::from_secs(1);

/// How long a task is kept from its last change (its `ttlMs`): as long as a parked Exec.
pub const TASK_TTL: Duration = crate::session::DEFAULT_PARKED_TTL;

/// How often a client is asked to poll `tasks/get` (`pollIntervalMs`).
pub const POLL_INTERVAL_MS: u64 = 500;

/// A task as the store keeps it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Record {
    /// Who made it (`request_state::client_identity`): nobody else reads or changes it.
    pub client: String,
    pub created_at: String,
    pub updated_at: String,
    /// The round of approvals the Exec is in, or would start when it parks next.
    pub round: u32,
    pub state: TaskState,
}

/// Where a task is.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TaskState {
    /// The running Exec `handle`.
    Working {
        handle: String,
    },
    /// The parked Exec `handle` waits for the answers to `requests`; `answered` holds those
    /// given so far, and it resumes once every one has its answer.
    InputRequired {
        handle: String,
        requests: InputRequests,
        answered: InputResponses,
    },
    /// The Exec ended: its result (a failed script included, with `isError`).
    Completed {
        result: JsonObject,
    },
    /// The host failed it: a JSON-RPC error object, and no result.
    Failed {
        error: JsonObject,
    },
    Cancelled,
}

/// A parked Exec with an answer to every form it asked: what a `tasks/update` resumes.
#[derive(Debug)]
pub struct Answered {
    pub handle: String,
    pub answers: HashMap<u32, Approval>,
}

/// A new task's id ([`super::unguessable_id`]); why not when the system has no randomness.
pub fn new_task_id() -> std::io::Result<String> {
    super::unguessable_id()
}

/// Whether `id` is spelled as a task id is: anything else names no task, and never reaches
/// the store.
pub fn is_task_id(id: &str) -> bool {
    id.len() == 2 * super::UNGUESSABLE_ID_BYTES && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The store key of task `id`'s record.
pub fn record_key(id: &str) -> String {
    format!("tasks/{id}")
}

/// The store key of a cancel asked of task `id` on another replica than the one running it.
pub fn cancel_key(id: &str) -> String {
    format!("tasks/{id}.cancel")
}

/// The error every request about a task a client may not see gets: one that does not exist,
/// has expired, or is another client's.
pub fn unknown_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task `{}`: it never existed, expired, or is another client's", quoted(id)), None)
}

impl Record {
    /// A task just made by `client`, whose Exec `handle` runs.
    pub fn new(client: &str, handle: &str) -> Record {
        let now = now();
        Record { client: client.into(), created_at: now.clone(), updated_at: now, round: 1, state: TaskState::working(handle) }
    }

    /// The record the store kept, when it is one (else the task is unknown).
    pub fn read(bytes: &[u8]) -> Option<Record> {
        serde_json::from_slice(bytes).ok()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Marks the record changed now.
    pub fn touch(&mut self) {
        self.updated_at = now();
    }

    /// `tasks/update`'s answers: each answer to a form asked and not answered yet is kept
    /// (answers to other keys are ignored). Once every form has its answer: the parked Exec
    /// and the approvals to resume it with. A task that waits for no answers takes none.
    pub fn take_answers(&mut self, responses: &InputResponses) -> Result<Option<Answered>, ErrorData> {
        let TaskState::InputRequired { handle, requests, answered } = &mut self.state else { return Ok(None) };
        for (key, response) in responses {
            if requests.contains_key(key) && !answered.contains_key(key) {
                answer(key, response).map_err(|why| ErrorData::invalid_params(format!("the update was refused: {why}"), None))?;
                answered.insert(key.clone(), response.clone());
            }
        }
        if answered.len() < requests.len() {
            return Ok(None);
        }
        let pending: Vec<u32> = requests.keys().filter_map(|key| approval_id(key)).collect();
        Ok(Some(Answered { handle: handle.clone(), answers: answers(&pending, Some(answered))? }))
    }

    /// What a client is shown of task `id`.
    pub fn task(&self, id: &str) -> Task {
        let status = match self.state {
            TaskState::Working { .. } => TaskStatus::Working,
            TaskState::InputRequired { .. } => TaskStatus::InputRequired,
            TaskState::Completed { .. } => TaskStatus::Completed,
            TaskState::Failed { .. } => TaskStatus::Failed,
            TaskState::Cancelled => TaskStatus::Cancelled,
        };
        let task = Task::new(id, status, self.created_at.clone(), self.updated_at.clone())
            .with_ttl_ms(TASK_TTL.as_millis() as u64)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        match &self.state {
            TaskState::InputRequired { .. } => {
                task.with_status_message("waiting for approvals: answer the forms with tasks/update")
            }
            TaskState::Failed { error } => {
                task.with_status_message(error.get("message").and_then(Value::as_str).unwrap_or_default())
            }
            _ => task,
        }
    }

    /// Task `id` with what its status carries (`tasks/get`): the forms not answered yet, the
    /// result, the error.
    pub fn detailed(&self, id: &str) -> DetailedTask {
        let payload = match &self.state {
            TaskState::Working { .. } => TaskPayload::Working,
            TaskState::InputRequired { requests, answered, .. } => TaskPayload::InputRequired {
                input_requests: requests
                    .iter()
                    .filter(|(key, _)| !answered.contains_key(*key))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            },
            TaskState::Completed { result } => TaskPayload::Completed { result: result.clone() },
            TaskState::Failed { error } => TaskPayload::Failed { error: error.clone() },
            TaskState::Cancelled => TaskPayload::Cancelled,
        };
        DetailedTask::new(self.task(id), payload)
    }
}

impl TaskState {
    /// The running Exec `handle`.
    pub fn working(handle: &str) -> TaskState {
        TaskState::Working { handle: handle.to_string() }
    }

    /// Failed by the host, saying why.
    pub fn failed(message: &str) -> TaskState {
        let mut error = JsonObject::new();
        error.insert("code".into(), Value::from(rmcp::model::ErrorCode::INTERNAL_ERROR.0));
        error.insert("message".into(), Value::from(message));
        TaskState::Failed { error }
    }

    /// Ended with `result`.
    pub fn completed(result: &rmcp::model::CallToolResult) -> TaskState {
        let result = match serde_json::to_value(result) {
            Ok(Value::Object(object)) => object,
            _ => JsonObject::new(),
        };
        TaskState::Completed { result }
    }
}

/// Now, as ISO 8601 (RFC 3339, UTC, milliseconds).
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting_on(keys: &[&str]) -> Record {
        let request = |key: &str| {
            let form = serde_json::json!({"method": "elicitation/create", "params": {"mode": "form", "message": key, "requestedSchema": {"type": "object", "properties": {}}}});
            (key.to_string(), serde_json::from_value(form).unwrap())
        };
        let mut record = Record::new("alice", "h");
        record.state = TaskState::InputRequired {
            handle: "h".into(),
            requests: keys.iter().map(|k| request(k)).collect(),
            answered: InputResponses::new(),
        };
        record
    }

    fn responses(value: Value) -> InputResponses {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn ids_are_random_hex_and_nothing_else_is_one() {
        let id = new_task_id().unwrap();
        assert!(is_task_id(&id) && id != new_task_id().unwrap());
        for not_an_id in ["", "../tasks/x", &"g".repeat(32), &"a".repeat(31), &"a".repeat(33), "tasks/aaaa"] {
            assert!(!is_task_id(not_an_id), "{not_an_id}");
        }
    }

    #[test]
    fn a_task_resumes_once_every_form_has_its_answer() {
        let mut record = waiting_on(&["approval-0", "approval-3"]);
        let first =
            responses(serde_json::json!({"approval-0": {"action": "accept", "content": {"decision": "once"}}, "other": 1}));
        assert!(record.take_answers(&first).unwrap().is_none(), "one form is still open");
        let shown = serde_json::to_value(record.detailed("id")).unwrap();
        assert!(shown.to_string().contains("approval-3") && !shown.to_string().contains("approval-0"), "{shown}");
        let second = responses(serde_json::json!({"approval-3": {"action": "decline"}, "approval-0": {"action": "decline"}}));
        let Answered { handle, answers } = record.take_answers(&second).unwrap().unwrap();
        assert_eq!(handle, "h");
        assert_eq!(answers[&0], Approval::AllowOnce, "an answer given is not taken back");
        assert!(matches!(answers[&3], Approval::Deny { .. }));
    }

    #[test]
    fn an_update_that_is_no_elicitation_result_is_refused_and_a_task_not_waiting_takes_none() {
        let mut record = waiting_on(&["approval-0"]);
        let refused = record.take_answers(&responses(serde_json::json!({"approval-0": "yes"}))).unwrap_err();
        assert!(refused.message.contains("the update was refused"), "{}", refused.message);
        let mut working = Record::new("alice", "h");
        assert!(working.take_answers(&responses(serde_json::json!({"approval-0": {"action": "accept"}}))).unwrap().is_none());
    }

    #[test]
    fn a_record_reads_back_and_garbage_is_no_record() {
        let mut record = Record::new("alice", "h");
        record.state = TaskState::failed("the server stopped");
        let read = Record::read(&record.to_bytes()).unwrap();
        let shown = serde_json::to_value(read.task("id")).unwrap();
        assert_eq!(shown["status"], "failed");
        assert_eq!(shown["statusMessage"], "the server stopped");
        assert!(Record::read(b"{\"client\":1}").is_none() && Record::read(b"\xff").is_none());
    }
}
