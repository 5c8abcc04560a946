//! Parked Execs of a session: an `Exec` whose every open call waits for a person's answer
//! is written to the session's state store under an unguessable handle, bound to its
//! conversation, and resumed from there, in this process or another, exactly: its journal is
//! replayed into a fresh instance (see the runtime's `journal`), no call it made is made
//! again, and the calls that waited are asked again with their answers.
//!
//! The store is taken, not read, when an Exec resumes: of two resumes of one handle,
//! exactly one continues. A parked Exec another host could not take up exactly (another
//! guest, other tools) is left in the store for one that can.

use std::collections::HashMap;
use std::time::Duration;
use tracing::Instrument;

use serde::{Deserialize, Serialize};

use crate::calls::policy::Notes;
use crate::conversation::render::{self, ParkedExec, PendingApproval, ToolResult};
use crate::sandbox::runtime::{Parking as ExecParking, Suspended};
use crate::state::{SealedStore, StoreError};
use crate::support::vocabulary::Approval;

use super::{Session, take};

/// How long a parked Exec is kept by default.
pub const DEFAULT_PARKED_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Parked Execs one conversation may list at most.
pub const MAX_PARKED_LISTED: usize = 1_000;

/// Where a session parks its Execs (and checkpoints those that run on).
#[derive(Clone, Debug)]
pub(super) struct Parking {
    pub store: SealedStore,
    /// The conversation the session's Execs belong to: a handle is good only in it.
    pub conversation: String,
    pub ttl: Duration,
    /// How long a host's claim on a running Exec lasts unless renewed.
    pub lease: Duration,
}

/// What a store keeps for a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kept {
    /// A parked Exec.
    Parked,
    /// A running Exec's last checkpoint.
    Running,
    /// The claim of the host running it.
    Lease,
}

/// What a store keeps for one parked (or checkpointed) Exec.
#[derive(Serialize, Deserialize)]
pub(super) struct Stored {
    conversation: String,
    /// The model's call id of the `Exec` that parked.
    pub exec_call_id: String,
    pub suspended: Suspended,
}

/// Why a parked Exec could not be resumed (or listed, or discarded).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    #[error("this session has no state store, so it parks no Exec")]
    NoStore,
    #[error("no parked Exec `{handle}` in this conversation: it is unknown, expired, resumed already, or another conversation's")]
    Unknown { handle: String },
    #[error("`{handle}` is not a handle of a parked Exec")]
    Malformed { handle: String },
    #[error("the parked Exec `{handle}` cannot be read")]
    Unreadable {
        handle: String,
        #[source]
        source: StoreError,
    },
    #[error("the parked Exec `{handle}` cannot be resumed by this host: {why}; it is left as it was")]
    NotHere { handle: String, why: crate::sandbox::runtime::NotResumable },
    #[error("the Exec `{handle}` is running on another host, which holds it; wait there, or again once that host has stopped for {} s", .lease.as_secs())]
    RunningElsewhere { handle: String, lease: Duration },
    #[error("an answer names call {id}, which the parked Exec `{handle}` does not wait for")]
    NoSuchApproval { handle: String, id: u32 },
    #[error(transparent)]
    Session(#[from] super::SessionError),
}

/// A new handle: 128 random bits, as 32 hex digits.
fn new_handle() -> Result<String, StoreError> {
    crate::support::hex::random_hex(16).map_err(StoreError::Random)
}

pub(super) fn is_handle(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase())
}

impl Parking {
    pub(super) fn key(&self, kept: Kept, handle: &str) -> String {
        let kind = match kept {
            Kept::Parked => "exec",
            Kept::Running => "running",
            Kept::Lease => "lease",
        };
        format!("{kind}/{}/{handle}", self.conversation)
    }

    /// What the store keeps of `suspended`.
    pub(super) fn encode(&self, exec_call_id: &str, suspended: Suspended) -> Result<Vec<u8>, StoreError> {
        let stored = Stored { conversation: self.conversation.clone(), exec_call_id: exec_call_id.into(), suspended };
        serde_json::to_vec(&stored)
            .map_err(|e| StoreError::Io { what: "an Exec could not be written".into(), source: std::io::Error::other(e) })
    }

    /// Stores `suspended` under a new handle; what the caller shows of it.
    pub(super) async fn park(&self, exec_call_id: &str, suspended: Suspended) -> Result<ParkedExec, StoreError> {
        let handle = new_handle()?;
        let approvals = approvals_of(&suspended);
        let payload = self.encode(exec_call_id, suspended)?;
        self.store.put(&self.key(Kept::Parked, &handle), &payload, self.ttl).await?;
        Ok(ParkedExec { handle, approvals, exec_call_id: exec_call_id.into() })
    }

    /// Takes the parked Exec `handle` out of the store, without reading it again: a parked
    /// Exec is written once, under a handle made for it, so what was read before is what is
    /// taken. Of two resumes of one handle, one gets it; the other is told it is unknown.
    pub(super) async fn claim(&self, handle: &str) -> Result<(), ResumeError> {
        let unreadable = |source| ResumeError::Unreadable { handle: handle.into(), source };
        match self.store.claim(&self.key(Kept::Parked, handle)).await.map_err(unreadable)? {
            true => Ok(()),
            false => Err(ResumeError::Unknown { handle: handle.into() }),
        }
    }

    /// The parked (or checkpointed) Exec `handle`, taken out of the store when `take_it`.
    pub(super) async fn read(&self, kept: Kept, handle: &str, take_it: bool) -> Result<Stored, ResumeError> {
        if !is_handle(handle) {
            return Err(ResumeError::Malformed { handle: handle.chars().take(64).collect() });
        }
        let key = self.key(kept, handle);
        let read = if take_it { self.store.take(&key).await } else { self.store.get(&key).await };
        let unreadable = |source| ResumeError::Unreadable { handle: handle.into(), source };
        let payload = read.map_err(unreadable)?.ok_or_else(|| ResumeError::Unknown { handle: handle.into() })?;
        let stored: Stored = serde_json::from_slice(&payload).map_err(|e| {
            unreadable(StoreError::Io { what: "its entry is not a parked Exec".into(), source: std::io::Error::other(e) })
        })?;
        if stored.conversation != self.conversation {
            return Err(ResumeError::Unknown { handle: handle.into() });
        }
        Ok(stored)
    }
}

/// The approvals a parked Exec waits for.
fn approvals_of(suspended: &Suspended) -> Vec<PendingApproval> {
    suspended
        .parked
        .iter()
        .map(|call| PendingApproval {
            id: call.id,
            tool: call.request.tool.clone(),
            input: call.request.input.clone(),
            why: call.request.why.clone(),
        })
        .collect()
}

impl Session {
    /// The session's parking, or the error that says it has none.
    pub(super) fn parking(&self) -> Result<&Parking, ResumeError> {
        self.inner.parking.as_ref().ok_or(ResumeError::NoStore)
    }

    /// The conversation this session's Execs belong to (the scope of their handles), when
    /// it parks Execs.
    pub fn conversation(&self) -> Option<&str> {
        self.inner.parking.as_ref().map(|parking| parking.conversation.as_str())
    }

    /// Stores an Exec that parked; the result then says how to resume it. When it cannot be
    /// stored, the result is a failure that says why: the calls it waited for never ran.
    pub(super) async fn keep_parked(&self, result: &mut ToolResult, suspended: Option<Box<Suspended>>) {
        let (Some(suspended), Some(parking)) = (suspended, &self.inner.parking) else { return };
        match parking.park(&result.call_id, *suspended).await {
            Ok(parked) => {
                result.model.text = render::parked_text(&result.model.text, &parked);
                result.client.text = result.model.text.clone();
                result.parked = Some(parked);
            }
            Err(error) => {
                let why = crate::support::report::error_sentence(&error);
                let text = format!(
                    "The script waited for approvals, and could not be parked: {why}. None of the calls it waited for ran."
                );
                result.model.text = text.clone();
                result.client.text = text;
            }
        }
    }

    /// Resumes the parked Exec `handle` of this conversation with `answers` to its approvals,
    /// by id (a call without an answer asks again, and may park the Exec again). Its result
    /// is the `Exec`'s, as if it had never stopped: its console output, calls and value.
    /// With [`CallOptions::yield_after`](super::CallOptions::yield_after) it yields as a new
    /// Exec does, and [`Session::wait`] gives its outcome.
    pub async fn resume(
        &self,
        handle: &str,
        answers: HashMap<u32, Approval>,
        options: super::CallOptions,
    ) -> Result<ToolResult, ResumeError> {
        let started = std::time::Instant::now();
        let parking = self.parking()?;
        let view = self.view()?;
        // Looked at first: a host that cannot take it up exactly leaves it for one that can.
        let Stored { exec_call_id, suspended, .. } = parking.read(Kept::Parked, handle, false).await?;
        if let Some(id) = answers.keys().find(|id| !suspended.parked.iter().any(|call| call.id == **id)) {
            return Err(ResumeError::NoSuchApproval { handle: handle.into(), id: *id });
        }
        if let Err(why) = self.inner.sandbox.resumable(&suspended, view.reachable.names()) {
            return Err(ResumeError::NotHere { handle: handle.into(), why });
        }
        // Taken: of two resumes of one handle, one gets it.
        parking.claim(handle).await?;
        let Some(after) = options.yield_after else {
            return Ok(self.run_resumed(&view, exec_call_id, suspended, answers, options, started).await);
        };
        // Resumed as one that may yield: it is then a running Exec, as a new one would be.
        let (session, call_id, logs) = (self.clone(), exec_call_id.clone(), suspended.console.clone());
        let run = move |options| async move { session.run_resumed(&view, call_id, suspended, answers, options, started).await };
        Ok(self.yielding(exec_call_id, options, after, logs, run).await)
    }

    /// Runs `suspended` on from where it stopped, its parked calls answered by `answers`.
    pub(super) async fn run_resumed(
        &self,
        view: &std::sync::Arc<super::View>,
        exec_call_id: String,
        suspended: Suspended,
        answers: HashMap<u32, Approval>,
        options: super::CallOptions,
        started: std::time::Instant,
    ) -> ToolResult {
        let notes = Notes::default();
        let scope = self.exec_scope(view, &exec_call_id, &notes, &options);
        let request = self.exec_request(String::new(), options, ExecParking::Resume(Box::new(suspended), answers));
        let span = super::exec_span(&exec_call_id);
        let mut outcome = self.inner.sandbox.exec(request, scope).instrument(span.clone()).await;
        let suspended = outcome.suspended.take();
        let mut result = render::exec_result(exec_call_id, outcome, &self.inner.limits, started.elapsed());
        self.keep_parked(&mut result, suspended).await;
        super::record_exec(&span, &result);
        result.messages = take(&notes);
        self.compact(result)
    }

    /// The parked Exec `handle` of this conversation, with what it waits for.
    pub async fn parked_exec(&self, handle: &str) -> Result<ParkedExec, ResumeError> {
        let stored = self.parking()?.read(Kept::Parked, handle, false).await?;
        Ok(ParkedExec { handle: handle.into(), approvals: approvals_of(&stored.suspended), exec_call_id: stored.exec_call_id })
    }

    /// The Execs of this conversation that are parked now, with what each waits for.
    pub async fn parked_execs(&self) -> Result<Vec<ParkedExec>, ResumeError> {
        let parking = self.parking()?;
        let prefix = parking.key(Kept::Parked, "");
        let keys = parking
            .store
            .keys(&prefix, MAX_PARKED_LISTED)
            .await
            .map_err(|source| ResumeError::Unreadable { handle: "*".into(), source })?;
        let mut parked = Vec::new();
        for key in keys {
            let Some(handle) = key.strip_prefix(&prefix) else { continue };
            // One gone since it was listed (resumed, expired) is simply not listed.
            if let Ok(stored) = parking.read(Kept::Parked, handle, false).await {
                parked.push(ParkedExec {
                    handle: handle.into(),
                    approvals: approvals_of(&stored.suspended),
                    exec_call_id: stored.exec_call_id,
                });
            }
        }
        parked.sort_by(|a, b| a.handle.cmp(&b.handle));
        Ok(parked)
    }

    /// Ends a parked Exec without resuming it: none of the calls it waited for runs.
    pub async fn discard_parked(&self, handle: &str) -> Result<(), ResumeError> {
        let parking = self.parking()?;
        parking.read(Kept::Parked, handle, true).await.map(drop)
    }
}
