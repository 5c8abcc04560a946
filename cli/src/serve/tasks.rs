//! Execs as tasks, for clients of MCP 2026-07-28 that declare the Tasks extension
//! (`io.modelcontextprotocol/tasks`) in a request's capabilities.
//!
//! An `Exec` such a client calls that is still running after [`TASK_AFTER`] becomes a task:
//! the call answers `CreateTaskResult`, the Exec runs on (it yielded, see
//! `CallOptions::yield_after`, so it is checkpointed in the store), and the client polls
//! `tasks/get` for its state. A task whose Exec parks waiting for approvals is
//! `input_required` with the same forms MRTR sends (`mrtr::forms`); `tasks/update` answers
//! them, and once every form has its answer the Exec resumes. `tasks/cancel` ends it.
//!
//! ```text
//! tools/call Exec --(still running after TASK_AFTER)--> working --> completed (its result)
//!                                                         |  ^  \-> failed (no result: a host error)
//!                                             parks       v  |  \-> cancelled (tasks/cancel)
//!                                            input_required -- tasks/update (every form answered)
//! ```
//!
//! The task's record lives in the state store, sealed and bound to the client that made it,
//! so any replica sharing the store answers `tasks/get`, `tasks/update` and `tasks/cancel`.
//! The replica running the Exec writes the record when the task changes state. A replica
//! asked about a task whose host stopped without ending it takes the Exec up from its last
//! checkpoint, once that host's lease has lapsed. A cancel that reaches another replica than
//! the one running the Exec is left in the store, which that one reads every [`CANCEL_POLL`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use exec_host::state_store::SealedStore;
use exec_host::{CallOptions, CancellationToken, ResumeError, Session, ToolResult};
use rmcp::ErrorData;
use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputRequests, InputResponses, JsonObject, Task, TaskPayload, TaskStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::metrics::TaskEvent;
use super::{Metrics, call_tool_result, mrtr};

/// An `Exec` still running after this long becomes a task; one that ends sooner answers its
/// call as any other does.
pub const TASK_AFTER: Duration = Duration::from_secs(1);

/// How long a task is kept from its last change (its `ttlMs`): as long as a parked Exec.
pub const TASK_TTL: Duration = exec_host::DEFAULT_PARKED_TTL;

/// How often a client is asked to poll `tasks/get` (`pollIntervalMs`).
pub const POLL_INTERVAL_MS: u64 = 500;

/// How often the replica running a task's Exec looks for a cancel sent to another replica.
const CANCEL_POLL: Duration = Duration::from_secs(1);

/// Bytes of a task id: 16 random bytes, in hex.
const TASK_ID_CHARS: usize = 32;

/// A task as the store keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// Who made it (`mrtr::client_identity`): nobody else reads or changes it.
    client: String,
    created_at: String,
    updated_at: String,
    /// The round of approvals the Exec is in, or would start when it parks next.
    round: u32,
    state: State,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum State {
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

/// How a task's Exec stopped running here.
enum End {
    /// It ran to its end (or parked).
    Ran,
    /// The client cancelled it.
    Cancelled,
    /// The server stopped before it ended.
    Stopped,
}

/// The tasks of one server: their records in the store, and the ones running here.
pub struct Tasks {
    store: SealedStore,
    /// The tasks whose Exec this process runs, with the token that cancels each.
    here: Mutex<HashMap<String, CancellationToken>>,
    /// Cancelled when the server begins to stop: it takes no task up from another host.
    closing: CancellationToken,
    /// Cancelled when the grace period has passed: the tasks still running here end as failed.
    stopping: CancellationToken,
    metrics: Option<Arc<Metrics>>,
}

impl Tasks {
    pub fn new(store: SealedStore, metrics: Option<Arc<Metrics>>) -> Arc<Self> {
        Arc::new(Tasks {
            store,
            here: Mutex::default(),
            closing: CancellationToken::new(),
            stopping: CancellationToken::new(),
            metrics,
        })
    }

    /// The task the Exec `handle` (which yielded) of `session` becomes, written to the store
    /// before it is announced, so that a `tasks/get` sent at once finds it. None when it
    /// cannot be written: the caller then waits for the Exec and answers with its result.
    pub async fn create(self: &Arc<Self>, session: &Session, client: &str, handle: &str) -> Option<CreateTaskResult> {
        let id = random_hex();
        let now = now();
        let record = Record { client: client.into(), created_at: now.clone(), updated_at: now, round: 1, state: working(handle) };
        if let Err(error) = self.write(&id, &record).await {
            tracing::warn!("an Exec could not become a task ({}); its call waits for it", exec_host::error_sentence(&error));
            self.count_store_error();
            return None;
        }
        self.count(TaskEvent::created);
        self.follow(session.clone(), id.clone(), handle.to_string(), 1);
        Some(CreateTaskResult::new(task_of(&id, &record)))
    }

    /// `tasks/get`: the task `id` of `client`, with its forms, result or error. A working
    /// task whose host stopped is taken up here first.
    pub async fn get(self: &Arc<Self>, session: &Session, client: &str, id: &str) -> Result<GetTaskResult, ErrorData> {
        let mut record = self.owned(client, id).await?;
        if let State::Working { handle } = &record.state
            && !self.is_here(id)
            && self.adopt(session, id, &handle.clone(), record.round).await
        {
            record = self.owned(client, id).await?;
        }
        Ok(GetTaskResult::new(detailed(id, &record)))
    }

    /// `tasks/update`: answers to the forms of an `input_required` task. Answers to forms
    /// not asked (or answered already) are ignored; once every form has its answer, the
    /// Exec resumes here.
    pub async fn update(
        self: &Arc<Self>,
        session: &Session,
        client: &str,
        id: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let mut record = self.owned(client, id).await?;
        let State::InputRequired { handle, requests, answered } = &mut record.state else { return Ok(()) };
        for (key, response) in responses {
            if requests.contains_key(key) && !answered.contains_key(key) {
                mrtr::answer(key, response)
                    .map_err(|why| ErrorData::invalid_params(format!("the update was refused: {why}"), None))?;
                answered.insert(key.clone(), response.clone());
            }
        }
        if answered.len() < requests.len() {
            record.updated_at = now();
            return self.write(id, &record).await.map_err(|error| self.store_failed(&error));
        }
        let pending: Vec<u32> = requests.keys().filter_map(|key| mrtr::approval_id(key)).collect();
        let answers = mrtr::answers(&pending, Some(answered))?;
        let handle = handle.clone();
        // Resumed as one that yields at once: the update is acknowledged while it runs.
        let options = CallOptions::new(CancellationToken::new()).yield_after(Duration::ZERO);
        let round = record.round + 1;
        match session.resume(&handle, answers, options).await {
            Ok(result) => match &result.running {
                Some(running) => {
                    record.state = working(&running.handle);
                    record.round = round;
                    record.updated_at = now();
                    self.write(id, &record).await.map_err(|error| self.store_failed(&error))?;
                    self.follow(session.clone(), id.to_string(), running.handle.clone(), round);
                    Ok(())
                }
                None => {
                    self.settle(session, id, Ok(result), End::Ran, round).await;
                    Ok(())
                }
            },
            // Another update (here or on another replica) resumed it first.
            Err(ResumeError::Unknown { .. }) => Ok(()),
            Err(error) => {
                Err(ErrorData::internal_error(format!("the task could not resume: {}", exec_host::error_sentence(&error)), None))
            }
        }
    }

    /// `tasks/cancel`: ends the task's Exec, wherever it runs; a task that has ended already
    /// stays as it is.
    pub async fn cancel(self: &Arc<Self>, session: &Session, client: &str, id: &str) -> Result<(), ErrorData> {
        let mut record = self.owned(client, id).await?;
        match &record.state {
            State::Working { handle } => {
                let handle = handle.clone();
                if !self.is_here(id) {
                    self.adopt(session, id, &handle, record.round).await;
                }
                let here = self.here.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned();
                match here {
                    Some(cancel) => cancel.cancel(),
                    None => self.ask_to_cancel(id).await?,
                }
            }
            State::InputRequired { handle, .. } => match session.discard_parked(handle).await {
                Ok(()) => {
                    record.state = State::Cancelled;
                    record.updated_at = now();
                    self.write(id, &record).await.map_err(|error| self.store_failed(&error))?;
                    self.count(TaskEvent::cancelled);
                }
                // An update resumed it meanwhile: whoever runs it now reads the cancel.
                Err(_) => self.ask_to_cancel(id).await?,
            },
            State::Completed { .. } | State::Failed { .. } | State::Cancelled => {}
        }
        Ok(())
    }

    /// Stops taking tasks up; waits up to `grace` for the tasks running here to end, then
    /// ends the rest, which are failed saying so.
    pub async fn drain(&self, grace: Duration) {
        self.closing.cancel();
        if tokio::time::timeout(grace, self.none_running_here()).await.is_err() {
            self.stopping.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(5), self.none_running_here()).await;
        }
    }

    async fn none_running_here(&self) {
        while !self.here.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Follows the running Exec `handle` of task `id` to its end, here, and records how it ended.
    fn follow(self: &Arc<Self>, session: Session, id: String, handle: String, round: u32) {
        let cancel = CancellationToken::new();
        self.here.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), cancel.clone());
        let tasks = self.clone();
        tokio::spawn(async move {
            let (ended, end) = tasks.until_end(&session, &id, &handle, &cancel).await;
            tasks.settle(&session, &id, ended, end, round).await;
            tasks.here.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        });
    }

    async fn until_end(
        &self,
        session: &Session,
        id: &str,
        handle: &str,
        cancel: &CancellationToken,
    ) -> (Result<ToolResult, ResumeError>, End) {
        loop {
            tokio::select! {
                waited = session.wait(handle, CANCEL_POLL) => match waited {
                    Ok(result) if result.running.is_some() => {
                        if self.cancel_asked(id).await {
                            return (session.cancel(handle).await, End::Cancelled);
                        }
                    }
                    ended => return (ended, End::Ran),
                },
                () = cancel.cancelled() => return (session.cancel(handle).await, End::Cancelled),
                () = self.stopping.cancelled() => return (session.cancel(handle).await, End::Stopped),
            }
        }
    }

    /// Records how the Exec of task `id` (in approval round `round`) ended.
    async fn settle(&self, session: &Session, id: &str, ended: Result<ToolResult, ResumeError>, end: End, round: u32) {
        let Ok(Some(mut record)) = self.read(id).await else { return };
        record.state = match (ended, end) {
            (_, End::Stopped) => failed("the server stopped before the Exec ended; call the tool again"),
            (Err(error), _) => failed(&format!("the Exec was lost: {}", exec_host::error_sentence(&error))),
            (Ok(result), end) => match (&result.parked, end) {
                (Some(parked), End::Ran) if mrtr::within_bound(round) => {
                    record.round = round;
                    let requests = mrtr::forms(parked);
                    State::InputRequired { handle: parked.handle.clone(), requests, answered: InputResponses::new() }
                }
                (Some(parked), end) => {
                    // What it waits for never runs.
                    let _ = session.discard_parked(&parked.handle).await;
                    match end {
                        End::Cancelled => State::Cancelled,
                        _ => State::Completed { result: object_of(&mrtr::too_many_rounds()) },
                    }
                }
                (None, End::Cancelled) => State::Cancelled,
                (None, _) => State::Completed { result: object_of(&call_tool_result(&result, Vec::new())) },
            },
        };
        record.updated_at = now();
        self.count(match &record.state {
            State::InputRequired { .. } => TaskEvent::input_required,
            State::Completed { .. } => TaskEvent::completed,
            State::Cancelled => TaskEvent::cancelled,
            _ => TaskEvent::failed,
        });
        if let Err(error) = self.write(id, &record).await {
            self.count_store_error();
            tracing::warn!("task {id} ended, and its record could not be written: {}", exec_host::error_sentence(&error));
        }
    }

    /// Takes up the Exec of a working task whose host stopped (its lease lapsed), so that it
    /// runs on here; true when the task's record may have changed.
    async fn adopt(self: &Arc<Self>, session: &Session, id: &str, handle: &str, round: u32) -> bool {
        if self.closing.is_cancelled() {
            return false;
        }
        match session.wait(handle, Duration::ZERO).await {
            Ok(result) if result.running.is_some() => {
                self.count(TaskEvent::taken_up);
                self.follow(session.clone(), id.to_string(), handle.to_string(), round);
                false
            }
            Ok(result) => {
                self.settle(session, id, Ok(result), End::Ran, round).await;
                true
            }
            // Its host holds it, or it is ending there: the record says what is known.
            Err(_) => false,
        }
    }

    /// The task `id` of `client`; the same error for one that does not exist, has expired,
    /// or is another client's.
    async fn owned(&self, client: &str, id: &str) -> Result<Record, ErrorData> {
        let unknown = || {
            ErrorData::invalid_params(
                format!("unknown task `{}`: it never existed, expired, or is another client's", cut(id)),
                None,
            )
        };
        if id.len() != TASK_ID_CHARS || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(unknown());
        }
        match self.read(id).await {
            Ok(Some(record)) if record.client == client => Ok(record),
            Ok(_) => Err(unknown()),
            Err(error) => Err(self.store_failed(&error)),
        }
    }

    async fn read(&self, id: &str) -> Result<Option<Record>, exec_host::state_store::StoreError> {
        let Some(bytes) = self.store.get(&record_key(id)).await? else { return Ok(None) };
        Ok(serde_json::from_slice(&bytes).ok())
    }

    async fn write(&self, id: &str, record: &Record) -> Result<(), exec_host::state_store::StoreError> {
        let bytes = serde_json::to_vec(record).unwrap_or_default();
        self.store.put(&record_key(id), &bytes, TASK_TTL).await
    }

    async fn ask_to_cancel(&self, id: &str) -> Result<(), ErrorData> {
        self.store.put(&cancel_key(id), b"1", TASK_TTL).await.map_err(|error| self.store_failed(&error))
    }

    async fn cancel_asked(&self, id: &str) -> bool {
        matches!(self.store.get(&cancel_key(id)).await, Ok(Some(_)))
    }

    fn is_here(&self, id: &str) -> bool {
        self.here.lock().unwrap_or_else(|e| e.into_inner()).contains_key(id)
    }

    fn store_failed(&self, error: &exec_host::state_store::StoreError) -> ErrorData {
        self.count_store_error();
        ErrorData::internal_error(format!("the state store failed: {}", exec_host::error_sentence(error)), None)
    }

    fn count(&self, event: TaskEvent) {
        if let Some(metrics) = &self.metrics {
            metrics.task(event);
        }
    }

    fn count_store_error(&self) {
        if let Some(metrics) = &self.metrics {
            metrics.store_error();
        }
    }
}

/// What a client is shown of a task.
fn task_of(id: &str, record: &Record) -> Task {
    let status = match record.state {
        State::Working { .. } => TaskStatus::Working,
        State::InputRequired { .. } => TaskStatus::InputRequired,
        State::Completed { .. } => TaskStatus::Completed,
        State::Failed { .. } => TaskStatus::Failed,
        State::Cancelled => TaskStatus::Cancelled,
    };
    let task = Task::new(id, status, record.created_at.clone(), record.updated_at.clone())
        .with_ttl_ms(TASK_TTL.as_millis() as u64)
        .with_poll_interval_ms(POLL_INTERVAL_MS);
    match &record.state {
        State::InputRequired { .. } => task.with_status_message("waiting for approvals: answer the forms with tasks/update"),
        State::Failed { error } => task.with_status_message(error.get("message").and_then(Value::as_str).unwrap_or_default()),
        _ => task,
    }
}

/// A task with what its status carries: the forms not answered yet, the result, the error.
fn detailed(id: &str, record: &Record) -> DetailedTask {
    let payload = match &record.state {
        State::Working { .. } => TaskPayload::Working,
        State::InputRequired { requests, answered, .. } => TaskPayload::InputRequired {
            input_requests: requests
                .iter()
                .filter(|(key, _)| !answered.contains_key(*key))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        },
        State::Completed { result } => TaskPayload::Completed { result: result.clone() },
        State::Failed { error } => TaskPayload::Failed { error: error.clone() },
        State::Cancelled => TaskPayload::Cancelled,
    };
    DetailedTask::new(task_of(id, record), payload)
}

fn working(handle: &str) -> State {
    State::Working { handle: handle.to_string() }
}

fn failed(message: &str) -> State {
    let mut error = JsonObject::new();
    error.insert("code".into(), Value::from(rmcp::model::ErrorCode::INTERNAL_ERROR.0));
    error.insert("message".into(), Value::from(message));
    State::Failed { error }
}

fn object_of(result: &rmcp::model::CallToolResult) -> JsonObject {
    match serde_json::to_value(result) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

fn record_key(id: &str) -> String {
    format!("tasks/{id}")
}

fn cancel_key(id: &str) -> String {
    format!("tasks/{id}.cancel")
}

/// 16 random bytes, in hex: a task id, and every other name a client must not guess.
pub(super) fn random_hex() -> String {
    let mut bytes = [0u8; TASK_ID_CHARS / 2];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: a task id must still not be guessed, so use the clock's nanoseconds
        // mixed by the standard library's random hasher keys.
        use std::hash::{BuildHasher, Hasher};
        for chunk in bytes.chunks_mut(8) {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
            chunk.copy_from_slice(&hasher.finish().to_le_bytes()[..chunk.len()]);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Now, as ISO 8601 (RFC 3339, UTC, milliseconds).
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn cut(text: &str) -> String {
    text.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use exec_host::state_store::{StateKey, open_store};

    #[tokio::test]
    async fn a_task_is_its_clients_alone_and_what_is_not_a_task_id_is_unknown() {
        let folder = tempfile::tempdir().unwrap();
        let store = folder.path().join("store");
        let store = open_store(&store.display().to_string()).await.unwrap();
        let tasks = Tasks::new(SealedStore::new(store, StateKey::from_bytes([7; 32])), None);
        let id = random_hex();
        let record = Record {
            client: "alice".into(),
            created_at: now(),
            updated_at: now(),
            round: 1,
            state: State::Completed { result: JsonObject::new() },
        };
        tasks.write(&id, &record).await.unwrap();
        assert!(tasks.owned("alice", &id).await.is_ok());
        let foreign = tasks.owned("mallory", &id).await.unwrap_err();
        let other = random_hex();
        let unknown = tasks.owned("alice", &other).await.unwrap_err();
        assert_eq!(foreign.message.replace(&id, "ID"), unknown.message.replace(&other, "ID"), "nothing tells the two apart");
        assert_eq!(foreign.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        for bad in ["", "../../etc/passwd", &"g".repeat(32), &"a".repeat(33), &format!("{id}.cancel")] {
            assert_eq!(tasks.owned("alice", bad).await.unwrap_err().code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad}");
        }
        // Ids are random: a thousand never repeat.
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| random_hex()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
