//! The Task plan (`crate::gateway::plan::Plan::Task`): Execs as tasks, for clients of MCP
//! 2026-07-28 that declare the Tasks extension (`io.modelcontextprotocol/tasks`) in a
//! request's capabilities.
//!
//! An `Exec` such a client calls that is still running after `task_record::TASK_AFTER`
//! becomes a task: the call answers `CreateTaskResult`, the Exec runs on (it yielded, see
//! `CallOptions::yield_after`, so it is checkpointed in the store), and the client polls
//! `tasks/get` for its state. A task whose Exec parks waiting for approvals is
//! `input_required` with the same forms a multi-round-trip answer carries
//! (`approval_forms::forms`); `tasks/update` answers them, and once every form has its
//! answer the Exec resumes. `tasks/cancel` ends it.
//!
//! ```text
//! tools/call Exec --(still running after TASK_AFTER)--> working --> completed (its result)
//!                                                         |  ^  \-> failed (no result: a host error)
//!                                             parks       v  |  \-> cancelled (tasks/cancel)
//!                                            input_required -- tasks/update (every form answered)
//! ```
//!
//! The task's record (`crate::gateway::task_record`) lives in the state store, sealed and
//! bound to the client that made it, so any replica sharing the store answers `tasks/get`,
//! `tasks/update` and `tasks/cancel`. The replica running the Exec writes the record when the
//! task changes state. A replica asked about a task whose host stopped without ending it takes
//! the Exec up from its last checkpoint, once that host's lease has lapsed. A cancel that
//! reaches another replica than the one running the Exec is left in the store, which that one
//! reads every second (`CANCEL_POLL`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{CreateTaskResult, GetTaskResult, InputResponses};
use tokio_util::sync::CancellationToken;

use crate::conversation::render::ToolResult;
use crate::gateway::events::{GatewayObserver, TaskEvent};
use crate::gateway::task_record::{
    Answered, Record, TASK_TTL, TaskState, cancel_key, is_task_id, new_task_id, record_key, unknown_task,
};
use crate::gateway::tool_result::call_tool_result;
use crate::gateway::{approval_forms, request_state};
use crate::session::{CallOptions, ResumeError, Session};
use crate::state::{SealedStore, StoreError};
use crate::support::report::error_sentence;

/// How often the replica running a task's Exec looks for a cancel sent to another replica.
const CANCEL_POLL: Duration = Duration::from_secs(1);

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
    observer: Option<Arc<dyn GatewayObserver>>,
}

impl Tasks {
    /// The tasks of a server whose store is `store`; `observer` is told what happens to them.
    pub fn new(store: SealedStore, observer: Option<Arc<dyn GatewayObserver>>) -> Arc<Self> {
        Arc::new(Tasks {
            store,
            here: Mutex::default(),
            closing: CancellationToken::new(),
            stopping: CancellationToken::new(),
            observer,
        })
    }

    /// The task the Exec `handle` (which yielded) of `session` becomes, written to the store
    /// before it is announced, so that a `tasks/get` sent at once finds it. None when it
    /// cannot be written: the caller then waits for the Exec and answers with its result.
    pub async fn create(self: &Arc<Self>, session: &Session, client: &str, handle: &str) -> Option<CreateTaskResult> {
        let id = match new_task_id() {
            Ok(id) => id,
            Err(why) => {
                tracing::warn!("an Exec could not become a task (no id could be made: {why}); its call waits for it");
                return None;
            }
        };
        let record = Record::new(client, handle);
        if let Err(error) = self.write(&id, &record).await {
            tracing::warn!("an Exec could not become a task ({}); its call waits for it", error_sentence(&error));
            self.count_store_error();
            return None;
        }
        self.count(TaskEvent::Created);
        self.follow(session.clone(), id.clone(), handle.to_string(), 1);
        Some(CreateTaskResult::new(record.task(&id)))
    }

    /// `tasks/get`: the task `id` of `client`, with its forms, result or error. A working
    /// task whose host stopped is taken up here first.
    pub async fn get(self: &Arc<Self>, session: &Session, client: &str, id: &str) -> Result<GetTaskResult, ErrorData> {
        let mut record = self.owned(client, id).await?;
        if let TaskState::Working { handle } = &record.state
            && !self.is_here(id)
            && self.adopt(session, id, &handle.clone(), record.round).await
        {
            record = self.owned(client, id).await?;
        }
        Ok(GetTaskResult::new(record.detailed(id)))
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
        let waiting = matches!(record.state, TaskState::InputRequired { .. });
        let Some(Answered { handle, answers }) = record.take_answers(responses)? else {
            if waiting {
                record.touch();
                return self.write(id, &record).await.map_err(|error| self.store_failed(&error));
            }
            return Ok(());
        };
        // Resumed as one that yields at once: the update is acknowledged while it runs.
        let options = CallOptions::new(CancellationToken::new()).yield_after(Duration::ZERO);
        let round = record.round + 1;
        match session.resume(&handle, answers, options).await {
            Ok(result) => match &result.running {
                Some(running) => {
                    record.state = TaskState::working(&running.handle);
                    record.round = round;
                    record.touch();
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
            Err(error) => Err(ErrorData::internal_error(format!("the task could not resume: {}", error_sentence(&error)), None)),
        }
    }

    /// `tasks/cancel`: ends the task's Exec, wherever it runs; a task that has ended already
    /// stays as it is.
    pub async fn cancel(self: &Arc<Self>, session: &Session, client: &str, id: &str) -> Result<(), ErrorData> {
        let mut record = self.owned(client, id).await?;
        match &record.state {
            TaskState::Working { handle } => {
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
            TaskState::InputRequired { handle, .. } => match session.discard_parked(handle).await {
                Ok(()) => {
                    record.state = TaskState::Cancelled;
                    record.touch();
                    self.write(id, &record).await.map_err(|error| self.store_failed(&error))?;
                    self.count(TaskEvent::Cancelled);
                }
                // An update resumed it meanwhile: whoever runs it now reads the cancel.
                Err(_) => self.ask_to_cancel(id).await?,
            },
            TaskState::Completed { .. } | TaskState::Failed { .. } | TaskState::Cancelled => {}
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
            (_, End::Stopped) => TaskState::failed("the server stopped before the Exec ended; call the tool again"),
            (Err(error), _) => TaskState::failed(&format!("the Exec was lost: {}", error_sentence(&error))),
            (Ok(result), end) => match (&result.parked, end) {
                (Some(parked), End::Ran) if request_state::within_bound(round) => {
                    record.round = round;
                    let requests = approval_forms::forms(parked);
                    TaskState::InputRequired { handle: parked.handle.clone(), requests, answered: InputResponses::new() }
                }
                (Some(parked), end) => {
                    // What it waits for never runs.
                    let _ = session.discard_parked(&parked.handle).await;
                    match end {
                        End::Cancelled => TaskState::Cancelled,
                        _ => TaskState::completed(&request_state::too_many_rounds()),
                    }
                }
                (None, End::Cancelled) => TaskState::Cancelled,
                (None, _) => TaskState::completed(&call_tool_result(&result, Vec::new())),
            },
        };
        record.touch();
        self.count(match &record.state {
            TaskState::InputRequired { .. } => TaskEvent::InputRequired,
            TaskState::Completed { .. } => TaskEvent::Completed,
            TaskState::Cancelled => TaskEvent::Cancelled,
            _ => TaskEvent::Failed,
        });
        if let Err(error) = self.write(id, &record).await {
            self.count_store_error();
            tracing::warn!("task {id} ended, and its record could not be written: {}", error_sentence(&error));
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
                self.count(TaskEvent::TakenUp);
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
        if !is_task_id(id) {
            return Err(unknown_task(id));
        }
        match self.read(id).await {
            Ok(Some(record)) if record.client == client => Ok(record),
            Ok(_) => Err(unknown_task(id)),
            Err(error) => Err(self.store_failed(&error)),
        }
    }

    async fn read(&self, id: &str) -> Result<Option<Record>, StoreError> {
        let Some(bytes) = self.store.get(&record_key(id)).await? else { return Ok(None) };
        Ok(Record::read(&bytes))
    }

    async fn write(&self, id: &str, record: &Record) -> Result<(), StoreError> {
        self.store.put(&record_key(id), &record.to_bytes(), TASK_TTL).await
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

    fn store_failed(&self, error: &StoreError) -> ErrorData {
        self.count_store_error();
        ErrorData::internal_error(format!("the state store failed: {}", error_sentence(error)), None)
    }

    fn count(&self, event: TaskEvent) {
        if let Some(observer) = &self.observer {
            observer.task(event);
        }
    }

    fn count_store_error(&self) {
        if let Some(observer) = &self.observer {
            observer.store_error();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{StateKey, open_store};

    #[tokio::test]
    async fn a_task_is_its_clients_alone_and_what_is_not_a_task_id_is_unknown() {
        let folder = tempfile::tempdir().unwrap();
        let store = folder.path().join("store");
        let store = open_store(&store.display().to_string()).await.unwrap();
        let tasks = Tasks::new(SealedStore::new(store, StateKey::from_bytes([7; 32])), None);
        let id = new_task_id().unwrap();
        let mut record = Record::new("alice", "h");
        record.state = TaskState::Cancelled;
        tasks.write(&id, &record).await.unwrap();
        assert!(tasks.owned("alice", &id).await.is_ok());
        let foreign = tasks.owned("mallory", &id).await.unwrap_err();
        let other = new_task_id().unwrap();
        let unknown = tasks.owned("alice", &other).await.unwrap_err();
        assert_eq!(foreign.message.replace(&id, "ID"), unknown.message.replace(&other, "ID"), "nothing tells the two apart");
        assert_eq!(foreign.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        for bad in ["", "../../etc/passwd", &"g".repeat(32), &"a".repeat(33), &format!("{id}.cancel")] {
            assert_eq!(tasks.owned("alice", bad).await.unwrap_err().code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad}");
        }
        // Ids are random: a thousand never repeat.
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| new_task_id().unwrap()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
