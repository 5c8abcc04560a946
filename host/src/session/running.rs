//! Long scripts: an `Exec` called with [`CallOptions::yield_after`] that is still running then
//! returns to its caller with what it has printed so far and a handle, and keeps running;
//! [`Session::wait`] gives its progress or its outcome, [`Session::cancel`] ends it (the
//! pattern of a code-mode `exec` + `wait`). A handle is good only in the session (the
//! client) that started the Exec, and, once its host has stopped, in its conversation: with a
//! state store, a running Exec is checkpointed (see `checkpoint`) and taken up by another
//! host's `wait` or `cancel`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::conversation::render::{self, RunningExec, ToolResult};
use crate::sandbox::runtime::{ConsoleLevel, NestedCall};
use crate::support::lock::Unpoisoned;

use super::checkpoint::{Checkpointer, stopped_text};
use super::parking::{Kept, Stored, is_handle};
use super::{CallOptions, ResumeError, Session, ToolCall};

/// Execs that one process keeps running (or finished and not yet waited for) after they
/// yielded; past it, an Exec does not yield and its caller waits for it.
pub const MAX_RUNNING_EXECS: usize = 256;

/// How long a finished Exec's result waits for its `wait` before it is dropped.
pub const FINISHED_KEPT: Duration = Duration::from_secs(10 * 60);

/// Console lines of a running Exec kept for its progress (its result keeps them all).
const PROGRESS_LINES: usize = 200;

/// The Execs that yielded, by handle.
#[derive(Default)]
pub(super) struct Running(Mutex<HashMap<String, Arc<Entry>>>);

/// One Exec that yielded.
struct Entry {
    /// The session (`Session::id`) that started it: the only one that may wait or cancel.
    owner: String,
    call_id: String,
    abort: CancellationToken,
    progress: Arc<Mutex<Progress>>,
    /// Its result once it finished, and when.
    done: tokio::sync::watch::Receiver<Option<(ToolResult, Instant)>>,
}

/// What a running Exec has done so far.
#[derive(Default)]
struct Progress {
    logs: Vec<String>,
    calls: usize,
}

impl Running {
    /// Drops the results nobody waited for in time; whether another Exec may be kept.
    fn room(&self) -> bool {
        let mut map = self.0.locked();
        map.retain(|_, entry| !matches!(&*entry.done.borrow(), Some((_, at)) if at.elapsed() > FINISHED_KEPT));
        map.len() < MAX_RUNNING_EXECS
    }

    fn get(&self, handle: &str, owner: &str) -> Result<Arc<Entry>, ResumeError> {
        match self.0.locked().get(handle) {
            Some(entry) if entry.owner == owner => Ok(entry.clone()),
            _ => Err(ResumeError::Unknown { handle: handle.chars().take(64).collect() }),
        }
    }

    fn remove(&self, handle: &str) {
        self.0.locked().remove(handle);
    }
}

impl Session {
    /// Runs an `Exec` that may yield (see [`CallOptions::yield_after`]).
    pub(super) async fn exec_yielding(&self, call: ToolCall, options: CallOptions, after: Duration) -> ToolResult {
        let session = self.clone();
        let call_id = call.id.clone();
        self.yielding(call_id, options, after, Vec::new(), move |options| async move { session.call_now(call, options).await })
            .await
    }

    /// Runs `run` (an Exec, new or resumed, which printed `logs` before) as one that yields
    /// once it has run for `after`: then it keeps running, checkpointed when there is a
    /// store, and its caller gets its progress and a handle.
    pub(super) async fn yielding<F>(
        &self,
        call_id: String,
        mut options: CallOptions,
        after: Duration,
        logs: Vec<String>,
        run: impl FnOnce(CallOptions) -> F,
    ) -> ToolResult
    where
        F: Future<Output = ToolResult> + Send + 'static,
    {
        if !self.inner.running.room() {
            return run(options).await;
        }
        let handle = super::builder::random_id();
        // With a store, the Exec is checkpointed at its waits once it has yielded, so that
        // another host takes it up if this one stops.
        let checkpointer = self
            .inner
            .parking
            .clone()
            .map(|parking| Arc::new(Checkpointer::new(parking, &handle, &call_id, options.abort.clone())));
        if let Some(checkpointer) = &checkpointer {
            options.checkpoints = Some(checkpointer.clone());
        }
        let progress = watch_progress(&mut options, logs);
        let abort = options.abort.clone();
        let (entry, mut task) = self.spawn_running(call_id.clone(), abort, progress, checkpointer.clone(), run(options));
        tokio::select! {
            _ = &mut task => {
                let finished = entry.done.borrow().as_ref().map(|(result, _)| result.clone());
                finished.unwrap_or_else(|| lost(&call_id))
            }
            () = tokio::time::sleep(after) => {
                if let Some(checkpointer) = &checkpointer {
                    checkpointer.start_writing().await;
                }
                let result = still_running(&entry, &handle);
                self.inner.running.0.locked().insert(handle, entry);
                result
            }
        }
    }

    /// Runs `run` as a running Exec of this session: its result, once it has one, goes to
    /// whoever waits for it.
    fn spawn_running(
        &self,
        call_id: String,
        abort: CancellationToken,
        progress: Arc<Mutex<Progress>>,
        checkpointer: Option<Arc<Checkpointer>>,
        run: impl Future<Output = ToolResult> + Send + 'static,
    ) -> (Arc<Entry>, tokio::task::JoinHandle<()>) {
        let (finished, done) = tokio::sync::watch::channel(None);
        // The Exec's spans stay beneath the call that started it.
        let task = tokio::spawn(tracing::Instrument::in_current_span(async move {
            let mut result = run.await;
            if let Some(checkpointer) = checkpointer
                && let Some(why) = checkpointer.finish().await
            {
                result.model.text = format!("{}\n\n{}", result.model.text, stopped_text(&why));
                result.client.text = result.model.text.clone();
            }
            let _ = finished.send(Some((result, Instant::now())));
        }));
        let entry = Arc::new(Entry { owner: self.id().to_string(), call_id, abort, progress, done });
        (entry, task)
    }

    /// The running Exec `handle`: this session's own, or one of its conversation whose host
    /// stopped, taken up here from its last checkpoint.
    async fn running_exec(&self, handle: &str) -> Result<Arc<Entry>, ResumeError> {
        match self.inner.running.get(handle, self.id()) {
            Ok(entry) => Ok(entry),
            Err(unknown) if self.inner.parking.is_none() || !is_handle(handle) => Err(unknown),
            Err(_) => self.take_over(handle).await,
        }
    }

    /// Takes up the checkpointed Exec `handle` of this conversation, once the host that ran
    /// it has let its lease lapse: replayed to its last wait, it runs on here, and the
    /// calls it had running reject, saying they may have taken effect.
    async fn take_over(&self, handle: &str) -> Result<Arc<Entry>, ResumeError> {
        let started = Instant::now();
        let parking = self.parking()?;
        let unreadable = |source| ResumeError::Unreadable { handle: handle.to_string(), source };
        if parking.store.get(&parking.key(Kept::Lease, handle)).await.map_err(unreadable)?.is_some() {
            return Err(ResumeError::RunningElsewhere { handle: handle.to_string(), lease: parking.lease });
        }
        let view = self.view()?;
        // Looked at first: a host that cannot take it up exactly leaves it for one that can.
        let peek = parking.read(Kept::Running, handle, false).await?;
        if let Err(why) = self.inner.sandbox.resumable(&peek.suspended, view.reachable.names()) {
            return Err(ResumeError::NotHere { handle: handle.into(), why });
        }
        drop(peek);
        // Taken: of two hosts taking it up, one gets it.
        let Stored { exec_call_id, suspended, .. } = parking.read(Kept::Running, handle, true).await?;
        let abort = CancellationToken::new();
        let checkpointer = Arc::new(Checkpointer::new(parking.clone(), handle, &exec_call_id, abort.clone()));
        let mut options = CallOptions::new(abort.clone());
        options.checkpoints = Some(checkpointer.clone());
        let progress = watch_progress(&mut options, suspended.console.clone());
        checkpointer.start_writing().await;
        let session = self.clone();
        let call_id = exec_call_id.clone();
        let run = async move { session.run_resumed(&view, call_id, suspended, HashMap::new(), options, started).await };
        let (entry, _task) = self.spawn_running(exec_call_id, abort, progress, Some(checkpointer), run);
        self.inner.running.0.locked().insert(handle.to_string(), entry.clone());
        Ok(entry)
    }

    /// The outcome of the running Exec `handle` once it finishes, or, when `timeout` passes
    /// first, its progress so far (a result with `running` set). A finished Exec's result is
    /// given once. With a state store, an Exec of this conversation whose host stopped is
    /// taken up here (see [`SessionBuilder::running_lease`](super::SessionBuilder::running_lease)).
    pub async fn wait(&self, handle: &str, timeout: Duration) -> Result<ToolResult, ResumeError> {
        let entry = self.running_exec(handle).await?;
        let mut done = entry.done.clone();
        let finished = tokio::time::timeout(timeout, done.wait_for(Option::is_some)).await;
        match finished {
            Ok(Ok(finished)) => {
                let result = finished.as_ref().map(|(result, _)| result.clone()).unwrap_or_else(|| lost(&entry.call_id));
                drop(finished);
                self.inner.running.remove(handle);
                Ok(result)
            }
            Ok(Err(_)) => {
                self.inner.running.remove(handle);
                Ok(lost(&entry.call_id))
            }
            Err(_) => Ok(still_running(&entry, handle)),
        }
    }

    /// Ends the running Exec `handle` and gives its result (aborted, unless it had finished).
    pub async fn cancel(&self, handle: &str) -> Result<ToolResult, ResumeError> {
        let entry = self.running_exec(handle).await?;
        entry.abort.cancel();
        self.wait(handle, Duration::MAX).await
    }
}

/// Watches `options`' console lines and calls into a running Exec's progress (which starts
/// with `logs`, what it printed before), passing them on to the watchers already set.
fn watch_progress(options: &mut CallOptions, mut logs: Vec<String>) -> Arc<Mutex<Progress>> {
    logs.truncate(PROGRESS_LINES);
    let progress = Arc::new(Mutex::new(Progress { logs, calls: 0 }));
    let watched = progress.clone();
    let console = options.on_console.take();
    options.on_console = Some(Arc::new(move |level: ConsoleLevel, line: &str| {
        {
            let mut progress = watched.locked();
            if progress.logs.len() < PROGRESS_LINES {
                progress.logs.push(line.to_string());
            }
        }
        if let Some(console) = &console {
            console(level, line);
        }
    }));
    let counted = progress.clone();
    let calls = options.on_nested_call.take();
    options.on_nested_call = Some(Arc::new(move |record: &[NestedCall]| {
        counted.locked().calls = record.len();
        if let Some(calls) = &calls {
            calls(record);
        }
    }));
    progress
}

/// A running Exec's result for now: what it printed and how many calls it made so far.
fn still_running(entry: &Entry, handle: &str) -> ToolResult {
    let progress = entry.progress.locked();
    let running = RunningExec { handle: handle.to_string(), logs: progress.logs.clone(), calls: progress.calls };
    render::running_result(entry.call_id.clone(), running)
}

/// The result of an Exec whose task ended without one (it panicked: never expected).
fn lost(call_id: &str) -> ToolResult {
    let error = crate::support::vocabulary::ToolError::execution("the Exec's task ended without a result");
    render::failure_result(call_id.to_string(), crate::sources::tools::names::EXEC.to_string(), error, 1_000, Duration::ZERO)
}

impl CallOptions {
    /// An `Exec` still running after `after` (wall-clock) returns with what it has printed
    /// so far and a handle (`ToolResult::running`), and keeps running: [`Session::wait`]
    /// gives its outcome, [`Session::cancel`] ends it. Past [`MAX_RUNNING_EXECS`] an Exec
    /// does not yield.
    pub fn yield_after(mut self, after: Duration) -> Self {
        self.yield_after = Some(after);
        self
    }
}
