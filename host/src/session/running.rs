//! Long scripts: an `Exec` called with [`CallOptions::yield_after`] that is still running then
//! returns to its caller with what it has printed so far and a handle, and keeps running;
//! [`Session::wait`] gives its progress or its outcome, [`Session::cancel`] ends it (the
//! pattern of a code-mode `exec` + `wait`). A handle is good only in the session (the
//! client) that started the Exec.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::conversation::render::{self, RunningExec, ToolResult};
use crate::sandbox::runtime::{ConsoleLevel, NestedCall};
use crate::support::lock::Unpoisoned;

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
    pub(super) async fn exec_yielding(&self, call: ToolCall, mut options: CallOptions, after: Duration) -> ToolResult {
        if !self.inner.running.room() {
            return self.call_now(call, options).await;
        }
        let progress = Arc::new(Mutex::new(Progress::default()));
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
        let abort = options.abort.clone();
        let call_id = call.id.clone();
        let (finished, done) = tokio::sync::watch::channel(None);
        let session = self.clone();
        let mut task = tokio::spawn(async move {
            let result = session.call_now(call, options).await;
            let _ = finished.send(Some((result, Instant::now())));
        });
        tokio::select! {
            _ = &mut task => {
                let finished = done.borrow().as_ref().map(|(result, _)| result.clone());
                finished.unwrap_or_else(|| lost(&call_id))
            }
            () = tokio::time::sleep(after) => {
                let handle = super::builder::random_id();
                let entry = Arc::new(Entry { owner: self.id().to_string(), call_id, abort, progress, done });
                let result = still_running(&entry, &handle);
                self.inner.running.0.locked().insert(handle, entry);
                result
            }
        }
    }

    /// The outcome of the running Exec `handle` once it finishes, or, when `timeout` passes
    /// first, its progress so far (a result with `running` set). A finished Exec's result is
    /// given once.
    pub async fn wait(&self, handle: &str, timeout: Duration) -> Result<ToolResult, ResumeError> {
        let entry = self.inner.running.get(handle, self.id())?;
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
        let entry = self.inner.running.get(handle, self.id())?;
        entry.abort.cancel();
        self.wait(handle, Duration::MAX).await
    }
}

/// A running Exec's result for now: what it printed and how many calls it made so far.
fn still_running(entry: &Entry, handle: &str) -> ToolResult {
    let progress = entry.progress.locked();
    let running = RunningExec { handle: handle.to_string(), logs: progress.logs.clone(), calls: progress.calls };
    render::running_result(entry.call_id.clone(), running)
}

/// The result of an Exec whose task ended without one (it panicked: never expected).
fn lost(call_id: &str) -> ToolResult {
    let error = crate::sources::tools::ToolError::execution("the Exec's task ended without a result");
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
