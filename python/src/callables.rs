//! Python callables the host calls: a tool, the approver, the input handler. Each is called
//! with one plain-data argument, where Python code should run: an `async def` on the event
//! loop of the Exec it serves (`asyncio.run_coroutine_threadsafe`, so a call the script
//! abandons cancels it), a plain function on a worker thread, never on the loop. What it
//! returns must be plain data (`values`). The GIL is held only to convert values and to call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use exec_host::{CancellationToken, ToolError};
use exec_host_embed::{Callable, work};
use pyo3::prelude::*;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::bridge::InFlight;
use crate::values;

/// The event loops a session's `async def` callables run on: each Exec's own, the loop that
/// awaits it (Execs of one session may be awaited from several loops and threads), and for a
/// call of no Exec known here, the loop of the session's latest call.
#[derive(Default)]
pub struct EventLoops {
    latest: Mutex<Option<Py<PyAny>>>,
    by_exec: Mutex<HashMap<String, Py<PyAny>>>,
}

impl EventLoops {
    /// `event_loop` runs what serves the Exec `exec` (any call, for `None`) until the guard
    /// is dropped.
    pub fn enter(self: &Arc<Self>, py: Python<'_>, exec: Option<String>, event_loop: Py<PyAny>) -> LoopGuard {
        *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(event_loop.clone_ref(py));
        if let Some(exec) = &exec {
            self.by_exec.lock().unwrap_or_else(|e| e.into_inner()).insert(exec.clone(), event_loop);
        }
        LoopGuard { loops: self.clone(), exec }
    }

    fn for_exec(&self, py: Python<'_>, exec: Option<&str>) -> Option<Py<PyAny>> {
        let own = exec.and_then(|exec| self.by_exec.lock().unwrap_or_else(|e| e.into_inner()).get(exec).map(|l| l.clone_ref(py)));
        own.or_else(|| self.latest.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|l| l.clone_ref(py)))
    }
}

/// Forgets an Exec's loop when its Exec ends.
pub struct LoopGuard {
    loops: Arc<EventLoops>,
    exec: Option<String>,
}

impl Drop for LoopGuard {
    fn drop(&mut self) {
        if let Some(exec) = &self.exec {
            // Dropped without the GIL (on a runtime thread): PyO3 releases it at its next hold.
            self.loops.by_exec.lock().unwrap_or_else(|e| e.into_inner()).remove(exec);
        }
    }
}

/// A Python callable the host calls with one JSON argument.
#[derive(Clone)]
pub struct PythonFunction {
    function: Arc<Py<PyAny>>,
    /// An `async def`: run on the loop of the Exec it serves.
    is_async: bool,
    loops: Arc<EventLoops>,
}

/// The interpreter is finalizing: no Python runs any more.
fn exiting() -> ToolError {
    ToolError::execution("the Python interpreter is exiting")
}

/// Called on the loop of the Exec `exec` (or the latest) or on a worker thread; `cancel` ends
/// the wait (and cancels a coroutine).
impl Callable for PythonFunction {
    async fn call(
        &self,
        args: Value,
        about: Option<Value>,
        exec: Option<&str>,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ToolError> {
        match self.is_async {
            true => self.on_the_loop(args, about, exec, cancel).await,
            false => self.on_a_worker(args, about).await,
        }
    }
}

impl PythonFunction {
    pub fn new(function: Py<PyAny>, is_async: bool, loops: Arc<EventLoops>) -> Self {
        PythonFunction { function: Arc::new(function), is_async, loops }
    }

    async fn on_the_loop(
        &self,
        args: Value,
        about: Option<Value>,
        exec: Option<&str>,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ToolError> {
        let _counted = InFlight::enter().map_err(|_| exiting())?;
        let (answer, answered) = oneshot::channel();
        // Scheduled here, on the runtime thread (it keeps a Python thread state): the guard
        // below must hold the scheduled call before this future can be dropped.
        let scheduled = Python::try_attach(|py| -> Result<Py<PyAny>, ToolError> {
            let coroutine = call(self.function.bind(py), &args, about.as_ref())?;
            let event_loop =
                self.loops.for_exec(py, exec).ok_or_else(|| ToolError::execution("no event loop runs this session"))?;
            let asyncio = py.import("asyncio").map_err(|e| failed(py, &e))?;
            let running =
                asyncio.call_method1("run_coroutine_threadsafe", (coroutine, event_loop)).map_err(|e| failed(py, &e))?;
            running
                .call_method1("add_done_callback", (Completer { answer: Mutex::new(Some(answer)) },))
                .map_err(|e| failed(py, &e))?;
            Ok(running.unbind())
        })
        .ok_or_else(exiting)??;
        // Dropped unanswered (the script abandoned the call, the Exec was aborted): the
        // coroutine is cancelled on its loop.
        let mut pending = CancelOnDrop(Some(scheduled));
        let answer = tokio::select! {
            answer = work::answer(answered) => answer.unwrap_or_else(|_| Err(ToolError::execution("the call ended without an answer"))),
            () = async { match cancel { Some(cancel) => cancel.cancelled().await, None => std::future::pending().await } } => {
                Err(ToolError::execution("the call was cancelled"))
            }
        };
        if answer.is_ok() {
            pending.0 = None;
        }
        answer
    }

    async fn on_a_worker(&self, args: Value, about: Option<Value>) -> Result<Value, ToolError> {
        let counted = InFlight::enter().map_err(|_| exiting())?;
        let function = self.function.clone();
        let (answer, answered) = oneshot::channel();
        let job = move |py: Python<'_>| {
            let _counted = counted;
            let output = call(function.bind(py), &args, about.as_ref()).and_then(|output| plain(&output));
            let _ = answer.send(output);
        };
        crate::threads::run(Box::new(job)).map_err(|_| exiting())?;
        work::answer(answered).await.unwrap_or_else(|_| Err(ToolError::execution("the call's thread ended without an answer")))
    }
}

/// `function(args)`, or `function(args, about)`.
fn call<'py>(function: &Bound<'py, PyAny>, args: &Value, about: Option<&Value>) -> Result<Bound<'py, PyAny>, ToolError> {
    let py = function.py();
    let python = |value: &Value| pythonize::pythonize(py, value).map_err(|e| ToolError::params(e.to_string()));
    let called = match about {
        Some(about) => function.call1((python(args)?, python(about)?)),
        None => function.call1((python(args)?,)),
    };
    called.map_err(|e| failed(py, &e))
}

/// Cancels a coroutine scheduled on a loop (its `concurrent.futures.Future`) when dropped
/// while it holds one.
struct CancelOnDrop(Option<Py<PyAny>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(scheduled) = self.0.take() {
            Python::try_attach(|py| {
                let _ = scheduled.bind(py).call_method0("cancel");
            });
        }
    }
}

/// Sends what a coroutine scheduled on a loop came to.
#[pyclass(frozen)]
struct Completer {
    answer: Mutex<Option<oneshot::Sender<Result<Value, ToolError>>>>,
}

#[pymethods]
impl Completer {
    fn __call__(&self, py: Python<'_>, done: &Bound<'_, PyAny>) {
        let Some(answer) = self.answer.lock().unwrap_or_else(|e| e.into_inner()).take() else { return };
        let outcome = match done.call_method0("cancelled").and_then(|c| c.is_truthy()) {
            Ok(true) => Err(ToolError::execution("the call was cancelled")),
            _ => match done.call_method0("result") {
                Ok(value) => plain(&value),
                Err(error) => Err(failed(py, &error)),
            },
        };
        let _ = answer.send(outcome);
    }
}

/// An exception as the script reads it: its type and message, never a traceback.
fn failed(py: Python<'_>, error: &PyErr) -> ToolError {
    let kind = error.get_type(py).name().map(|name| name.to_string()).unwrap_or_else(|_| "Exception".into());
    let message = error.value(py).str().map(|text| text.to_string()).unwrap_or_default();
    match message.is_empty() {
        true => ToolError::execution(kind),
        false => ToolError::execution(format!("{kind}: {message}")),
    }
}

/// A returned value as plain data, or the refusal of what is not.
fn plain(value: &Bound<'_, PyAny>) -> Result<Value, ToolError> {
    values::to_json(value).map_err(|why| ToolError::execution(format!("TypeError: the tool returned {why}")))
}
