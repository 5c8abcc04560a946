//! A session for Python: opened from the options `Session.open` takes, and every method the
//! Python `Session` wraps. Each goes through the library's front door ([`Session`]); results
//! come back as the library's own report ([`ToolResult::report`]).

use std::sync::Arc;

use exec_host::mcp::input::InputHandler;
use exec_host::{Approver, Tool};
use exec_host_embed::{CallableApprover, CallableInput, CallableTool, Embedded, Fault, Opening, call_id, tool_definition};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use serde_json::Value;

use crate::bridge;
use crate::callables::{EventLoops, PythonFunction};
use crate::values;

create_exception!(_native, ExecHostError, PyException, "An error of exec-host (the base of the others).");
create_exception!(_native, SessionError, ExecHostError, "A session could not be opened, or was asked what it cannot do.");
create_exception!(_native, ResumeError, ExecHostError, "A parked Exec could not be resumed, listed or discarded.");

/// A fault of the session as the Python exception it raises.
fn raised(fault: Fault) -> PyErr {
    match fault {
        Fault::Session(message) => SessionError::new_err(message),
        Fault::Resume(message) => ResumeError::new_err(message),
        Fault::Invalid(message) => PyValueError::new_err(message),
    }
}

/// `value` as JSON, or a `TypeError` that names `what` and the offending part.
fn plain(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    values::to_json(value).map_err(|why| PyTypeError::new_err(format!("{what}: {why}")))
}

/// A tool as the Python layer describes it: name, description, input schema, output schema
/// (or None), the function (called with the argument object), whether it is an `async def`,
/// whether it is read-only.
type ToolSpec<'py> = (String, String, Bound<'py, PyAny>, Option<Bound<'py, PyAny>>, Py<PyAny>, bool, bool);

/// A callable and whether it is an `async def`.
type CallableSpec = (Py<PyAny>, bool);

/// Opens a session on the running event loop (awaitable): `options` as
/// [`Opening`] reads them, `tools`, and the approver and input handler, each a callable or
/// None.
#[pyfunction]
#[pyo3(signature = (options, tools, approver, input_handler))]
pub fn open_session<'py>(
    py: Python<'py>,
    options: Bound<'py, PyAny>,
    tools: Vec<ToolSpec<'py>>,
    approver: Option<CallableSpec>,
    input_handler: Option<CallableSpec>,
) -> PyResult<Bound<'py, PyAny>> {
    let opening = Opening::new(plain(&options, "the options")?).map_err(raised)?;
    let loops = Arc::new(EventLoops::default());
    // Until the first Exec, what the servers ask while they start is answered on this loop.
    let on_this_loop = loops.enter(py, None, py.import("asyncio")?.call_method0("get_running_loop")?.unbind());
    let function = |(function, is_async): CallableSpec| PythonFunction::new(function, is_async, loops.clone());
    let mut defined: Vec<Arc<dyn Tool>> = Vec::with_capacity(tools.len());
    for (name, description, schema, output_schema, function_given, is_async, read_only) in tools {
        let schema = plain(&schema, &format!("the schema of `{name}`"))?;
        let output = output_schema.map(|output| plain(&output, &format!("the output schema of `{name}`"))).transpose()?;
        let definition = tool_definition(&name, description, schema, output, read_only).map_err(raised)?;
        defined.push(Arc::new(CallableTool { definition, function: function((function_given, is_async)) }));
    }
    let approver = approver.map(|spec| Arc::new(CallableApprover { function: function(spec) }) as Arc<dyn Approver>);
    let input = input_handler.map(|spec| Arc::new(CallableInput { function: function(spec) }) as Arc<dyn InputHandler>);
    bridge::awaitable(py, move |_| async move {
        let session = opening.open(defined, approver, input).await.map_err(raised)?;
        drop(on_this_loop);
        Ok(NativeSession { session, loops })
    })
}

/// An open session.
#[pyclass(frozen)]
pub struct NativeSession {
    session: Embedded,
    loops: Arc<EventLoops>,
}

impl NativeSession {
    /// The `async def` callables of what starts now (the Exec `exec`, or any call) run on the
    /// loop awaiting it, until the guard is dropped.
    fn follow_loop(&self, py: Python<'_>, exec: Option<&str>) -> PyResult<crate::callables::LoopGuard> {
        let running = py.import("asyncio")?.call_method0("get_running_loop")?;
        Ok(self.loops.enter(py, exec.map(str::to_string), running.unbind()))
    }
}

#[pymethods]
impl NativeSession {
    /// Runs `code` as one Exec, `depth` Execs deep, under `id` (a new one by default);
    /// awaitable, to its report. Cancelling the awaiting task aborts the Exec.
    #[pyo3(signature = (code, depth=0, id=None))]
    fn exec<'py>(&self, py: Python<'py>, code: String, depth: u32, id: Option<String>) -> PyResult<Bound<'py, PyAny>> {
        let id = call_id(id, depth);
        let on_this_loop = self.follow_loop(py, Some(&id))?;
        let session = self.session.clone();
        bridge::awaitable(py, move |abort| async move {
            let _on_this_loop = on_this_loop;
            Ok(Json(session.exec(id, code, abort).await))
        })
    }

    /// Runs `code` as one Exec and blocks until it ends (the GIL released): the sync API's
    /// path, with no event loop between the caller and the sandbox. The `async def` tools of
    /// this Exec run on `event_loop` (the sync session's own). A signal that raises (Ctrl-C)
    /// aborts the Exec and is raised here.
    #[pyo3(signature = (code, depth, id, event_loop))]
    fn exec_blocking(
        &self,
        py: Python<'_>,
        code: String,
        depth: u32,
        id: Option<String>,
        event_loop: Py<PyAny>,
    ) -> PyResult<Json> {
        let _counted = bridge::InFlight::enter()?;
        let id = call_id(id, depth);
        let _on_its_loop = self.loops.enter(py, Some(id.clone()), event_loop);
        let abort = bridge::work_token();
        let session = self.session.clone();
        let mut running = Box::pin(bridge::runtime().spawn({
            let abort = abort.clone();
            async move { session.exec(id, code, abort).await }
        }));
        loop {
            let polled =
                py.detach(|| bridge::runtime().block_on(async { tokio::time::timeout(SIGNAL_CHECKS, &mut running).await }));
            match polled {
                Ok(Ok(report)) => return Ok(Json(report)),
                Ok(Err(ended)) => return Err(SessionError::new_err(format!("the Exec ended without a result: {ended}"))),
                Err(_) => {
                    if let Err(raised) = py.check_signals() {
                        abort.cancel();
                        return Err(raised);
                    }
                }
            }
        }
    }

    /// Resumes the parked Exec `handle` with `answers` (approval id to an approver's answer);
    /// awaitable, to its report.
    fn resume<'py>(&self, py: Python<'py>, handle: String, answers: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let on_this_loop = self.follow_loop(py, None)?;
        let answers = exec_host_embed::answers(plain(&answers, "the answers")?).map_err(raised)?;
        let session = self.session.clone();
        bridge::awaitable(py, move |abort| async move {
            let _on_this_loop = on_this_loop;
            Ok(Json(session.resume(&handle, answers, abort).await.map_err(raised)?))
        })
    }

    /// What the parked Exec `handle` waits for; awaitable.
    fn parked<'py>(&self, py: Python<'py>, handle: String) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        bridge::awaitable(py, move |_| async move { Ok(Json(session.parked(&handle).await.map_err(raised)?)) })
    }

    /// Every parked Exec of the conversation; awaitable.
    fn parked_list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        bridge::awaitable(py, move |_| async move { Ok(Json(session.parked_list().await.map_err(raised)?)) })
    }

    /// Discards the parked Exec `handle`; its waiting calls never run. Awaitable.
    fn discard<'py>(&self, py: Python<'py>, handle: String) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        bridge::awaitable(py, move |_| async move { session.discard(&handle).await.map_err(raised) })
    }

    /// The `Exec` tool as a framework offers it to a model (see [`Embedded::declaration`]).
    fn declaration(&self) -> PyResult<Json> {
        self.session.declaration().map(Json).map_err(raised)
    }

    /// A TypeScript declaration file of what a script reaches now.
    fn declaration_file(&self) -> PyResult<String> {
        self.session.declaration_file().map_err(raised)
    }

    /// The pool's tools that match `query`, as `ToolSearch` finds them.
    #[pyo3(signature = (query, limit=None))]
    fn search(&self, query: String, limit: Option<usize>) -> PyResult<Json> {
        self.session.search(query, limit).map(Json).map_err(raised)
    }

    /// What the next model request needs, from `history` (see [`Embedded::prepare`]).
    #[pyo3(signature = (history, provider=None))]
    fn prepare(&self, history: Bound<'_, PyAny>, provider: Option<String>) -> PyResult<Json> {
        self.session.prepare(plain(&history, "the history")?, provider.as_deref()).map(Json).map_err(raised)
    }

    /// A provider's response body read as one neutral message, with its tool calls.
    fn reply(&self, body: Bound<'_, PyAny>, provider: String) -> PyResult<Json> {
        self.session.reply(&plain(&body, "the response")?, &provider).map(Json).map_err(raised)
    }

    /// Runs a turn's tool calls (`{"id", "name", "input"}` each) one after another;
    /// awaitable, to each call's report and the messages to append to the history.
    fn call_turn<'py>(&self, py: Python<'py>, calls: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let on_this_loop = self.follow_loop(py, None)?;
        let calls = exec_host_embed::tool_calls(plain(&calls, "the tool calls")?).map_err(raised)?;
        let session = self.session.clone();
        bridge::awaitable(py, move |abort| async move {
            let _on_this_loop = on_this_loop;
            Ok(Json(session.call_turn(calls, abort).await))
        })
    }

    /// The conversation the session's parked Execs and stored values belong to.
    #[getter]
    fn conversation(&self) -> Option<String> {
        self.session.conversation()
    }

    /// The MCP servers that did not start, each as a sentence.
    #[getter]
    fn start_failures(&self) -> Vec<String> {
        self.session.start_failures()
    }

    /// The permission mode in force.
    fn permission_mode(&self) -> PyResult<String> {
        self.session.permission_mode().map_err(raised)
    }

    /// Closes the session: its MCP servers and their children are stopped. Awaitable.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        bridge::awaitable(py, move |_| async move {
            session.close().await;
            Ok(())
        })
    }
}

/// How often a blocking Exec lets Python's signal handlers run (Ctrl-C aborts it).
const SIGNAL_CHECKS: std::time::Duration = std::time::Duration::from_millis(50);

/// A JSON value handed to Python as plain objects.
pub struct Json(pub Value);

impl<'py> IntoPyObject<'py> for Json {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        pythonize::pythonize(py, &self.0).map_err(|e| PyValueError::new_err(e.to_string()))
    }
}
