//! `exec_host._native`: the Rust side of the Python package. It builds a [`Session`] with
//! Python callables as tools and runs Execs on this module's tokio runtime, each an asyncio
//! awaitable (`bridge`); the pure-Python package around it (`python/exec_host`) is the
//! public API.
//!
//! A Python tool runs where Python code should: an `async def` tool on the event loop of the
//! Exec that calls it (`asyncio.run_coroutine_threadsafe`, so a call the script abandons
//! cancels it), a plain function on a worker thread, never on the loop. What a tool returns
//! must be plain data (`values`). The GIL is held only to convert values and to call.

mod bridge;
mod values;

use std::sync::{Arc, Mutex};

use exec_host::{CallContext, Effect, Session, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput};
use futures::future::BoxFuture;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use bridge::InFlight;

/// The event loop a session's `async def` tools run on: the loop of its latest Exec.
type EventLoop = Arc<Mutex<Py<PyAny>>>;

/// A Python callable the host calls with one JSON argument: a tool, or the approver.
#[derive(Clone)]
struct PythonFunction {
    function: Arc<Py<PyAny>>,
    /// An `async def`: run on `event_loop`.
    is_async: bool,
    event_loop: EventLoop,
}

/// A Python callable as a tool of the session.
struct PythonTool {
    definition: ToolDefinition,
    function: PythonFunction,
}

impl Tool for PythonTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move { self.function.call(Value::Object(args), Some(&context.cancel)).await.map(ToolOutput::structured) })
    }
}

/// A Python callable as the session's approver: given the request (`tool`, `input`, `why`,
/// `rule`), it answers `"once"`, `"always"` or `"deny"`, or `{"deny": REASON}`. An exception,
/// or another answer, is a refusal that says so.
struct PythonApprover {
    function: PythonFunction,
}

impl exec_host::Approver for PythonApprover {
    fn approve(&self, request: exec_host::ApprovalRequest) -> BoxFuture<'static, exec_host::Approval> {
        use exec_host::Approval;
        let function = self.function.clone();
        Box::pin(async move {
            let asked = serde_json::json!({
                "tool": request.tool,
                "input": request.input,
                "why": request.why,
                "rule": request.rule,
            });
            match function.call(asked, None).await {
                Ok(Value::String(answer)) if answer == "once" => Approval::AllowOnce,
                Ok(Value::String(answer)) if answer == "always" => Approval::AllowAlways,
                Ok(Value::String(answer)) if answer == "deny" => Approval::Deny { reason: "the approver denied it".into() },
                Ok(Value::Object(answer)) if answer.len() == 1 && answer.get("deny").is_some_and(Value::is_string) => {
                    Approval::Deny { reason: answer["deny"].as_str().unwrap_or_default().to_string() }
                }
                Ok(other) => Approval::Deny {
                    reason: format!("the approver answered {other}, not \"once\", \"always\", \"deny\" or {{\"deny\": REASON}}"),
                },
                Err(error) => Approval::Deny { reason: format!("the approver failed: {}", error.message) },
            }
        })
    }
}

/// The interpreter is finalizing: no Python runs any more.
fn exiting() -> ToolError {
    ToolError::execution("the Python interpreter is exiting")
}

impl PythonFunction {
    /// Calls the function with `args`, on its loop or a worker thread; `cancel` ends the wait
    /// (and cancels a coroutine).
    async fn call(&self, args: Value, cancel: Option<&exec_host::CancellationToken>) -> Result<Value, ToolError> {
        match self.is_async {
            true => self.on_the_loop(args, cancel).await,
            false => self.on_a_worker(args).await,
        }
    }

    async fn on_the_loop(&self, args: Value, cancel: Option<&exec_host::CancellationToken>) -> Result<Value, ToolError> {
        let _counted = InFlight::enter().map_err(|_| exiting())?;
        let (answer, answered) = oneshot::channel();
        let scheduled = Python::try_attach(|py| -> Result<Py<PyAny>, ToolError> {
            let args = pythonize::pythonize(py, &args).map_err(|e| ToolError::params(e.to_string()))?;
            let coroutine = self.function.bind(py).call1((args,)).map_err(|e| failed(py, &e))?;
            let event_loop = self.event_loop.lock().unwrap_or_else(|e| e.into_inner()).clone_ref(py);
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
            answer = answered => answer.unwrap_or_else(|_| Err(ToolError::execution("the tool ended without an answer"))),
            () = async { match cancel { Some(cancel) => cancel.cancelled().await, None => std::future::pending().await } } => {
                Err(ToolError::execution("the call was cancelled"))
            }
        };
        if answer.is_ok() {
            pending.0 = None;
        }
        answer
    }

    async fn on_a_worker(&self, args: Value) -> Result<Value, ToolError> {
        let counted = InFlight::enter().map_err(|_| exiting())?;
        let function = self.function.clone();
        let called = tokio::task::spawn_blocking(move || {
            let _counted = counted;
            Python::try_attach(|py| {
                let args = pythonize::pythonize(py, &args).map_err(|e| ToolError::params(e.to_string()))?;
                let output = function.bind(py).call1((args,)).map_err(|e| failed(py, &e))?;
                plain(&output)
            })
            .ok_or_else(exiting)?
        });
        called.await.map_err(|e| ToolError::execution(format!("the tool's thread ended without an answer: {e}")))?
    }
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

/// A tool's exception as the script reads it: its type and message, never a traceback.
fn failed(py: Python<'_>, error: &PyErr) -> ToolError {
    let kind = error.get_type(py).name().map(|name| name.to_string()).unwrap_or_else(|_| "Exception".into());
    let message = error.value(py).str().map(|text| text.to_string()).unwrap_or_default();
    match message.is_empty() {
        true => ToolError::execution(kind),
        false => ToolError::execution(format!("{kind}: {message}")),
    }
}

/// A tool's return value as plain data, or the refusal of what is not.
fn plain(value: &Bound<'_, PyAny>) -> Result<Value, ToolError> {
    values::to_json(value).map_err(|why| ToolError::execution(format!("TypeError: the tool returned {why}")))
}

/// An open session.
#[pyclass(frozen)]
struct NativeSession {
    session: Session,
    event_loop: EventLoop,
}

#[pymethods]
impl NativeSession {
    /// Runs `code` as one Exec; awaitable, to a dict of what the result says. Cancelling the
    /// awaiting task aborts the Exec.
    fn exec<'py>(&self, py: Python<'py>, code: String) -> PyResult<Bound<'py, PyAny>> {
        // The `async def` tools of this Exec run on the loop awaiting it.
        let running = py.import("asyncio")?.call_method0("get_running_loop")?;
        *self.event_loop.lock().unwrap_or_else(|e| e.into_inner()) = running.unbind();
        let session = self.session.clone();
        bridge::awaitable(py, move |abort| async move {
            let call = ToolCall::new("python-exec", "Exec", serde_json::json!({ "code": code }));
            let result = session.call(call, abort).await;
            let client = &result.client;
            Ok(Json(serde_json::json!({
                "ok": client.ok,
                "value": client.value,
                "text": result.model.text,
                "logs": client.logs,
                "calls": result.call_names(),
                "error": client.failure.as_ref().map(|failure| serde_json::json!({
                    "stage": failure.stage.to_string(),
                    "message": failure.message,
                })),
            })))
        })
    }

    /// Closes the session: its MCP servers and their children are stopped.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        bridge::awaitable(py, move |_| async move {
            session.shutdown().await;
            Ok(())
        })
    }
}

/// A JSON value handed to Python as plain objects.
struct Json(Value);

impl<'py> IntoPyObject<'py> for Json {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        pythonize::pythonize(py, &self.0).map_err(|e| PyValueError::new_err(e.to_string()))
    }
}

/// A tool as the Python layer describes it: name, description, input schema, the function
/// (called with the argument object), whether it is an `async def`, whether it is read-only.
type ToolSpec<'py> = (String, String, Bound<'py, PyAny>, Py<PyAny>, bool, bool);

/// Opens a session on the running event loop: `workspace` (a folder, or None), `tools`, and
/// `settings`, a settings layer in the settings files' format that outranks every file (or
/// None).
#[pyfunction]
#[pyo3(signature = (workspace, tools, settings, approver))]
fn open_session<'py>(
    py: Python<'py>,
    workspace: Option<String>,
    tools: Vec<ToolSpec<'py>>,
    settings: Option<Bound<'py, PyAny>>,
    approver: Option<(Py<PyAny>, bool)>,
) -> PyResult<Bound<'py, PyAny>> {
    let event_loop: EventLoop = Arc::new(Mutex::new(py.import("asyncio")?.call_method0("get_running_loop")?.unbind()));
    let mut defined: Vec<Arc<dyn Tool>> = Vec::with_capacity(tools.len());
    for (name, description, schema, function, is_async, read_only) in tools {
        let schema = values::to_json(&schema).map_err(|why| PyTypeError::new_err(format!("the schema of `{name}`: {why}")))?;
        // Behind `Exec`: a script reaches it, a model sees it through search.
        let definition = ToolDefinition::new(&name, description, schema)
            .map_err(|e| PyValueError::new_err(format!("`{name}` cannot be a tool: {}", exec_host::error_sentence(&e))))?
            .deferred(true)
            .with_effect(if read_only { Effect::ReadOnly } else { Effect::Other });
        let function = PythonFunction { function: Arc::new(function), is_async, event_loop: event_loop.clone() };
        defined.push(Arc::new(PythonTool { definition, function }));
    }
    let settings = match settings {
        Some(layer) => {
            let layer = values::to_json(&layer).map_err(|why| PyTypeError::new_err(format!("the settings: {why}")))?;
            let layer = exec_host::settings::Layer::from_value(layer)
                .map_err(|e| PyValueError::new_err(format!("the settings: {}", exec_host::error_sentence(&e))))?;
            Some(layer)
        }
        None => None,
    };
    let approver = approver.map(|(function, is_async)| PythonApprover {
        function: PythonFunction { function: Arc::new(function), is_async, event_loop: event_loop.clone() },
    });
    bridge::awaitable(py, move |_| async move {
        let builder = Session::builder().tools(defined);
        let builder = match settings {
            Some(layer) => builder.managed_settings(layer),
            None => builder,
        };
        let builder = match workspace {
            Some(folder) => builder.workspace(folder),
            None => builder,
        };
        let builder = match approver {
            Some(approver) => builder.approver(Arc::new(approver)),
            None => builder,
        };
        let session =
            builder.build().await.map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(exec_host::error_sentence(&e)))?;
        Ok(NativeSession { session, event_loop })
    })
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(open_session, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::shutdown, module)?)?;
    module.add_class::<NativeSession>()?;
    Ok(())
}
