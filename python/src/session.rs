//! A session for Python: opened from the options `Session.open` takes, and every method the
//! Python `Session` wraps. Each goes through the library's front door ([`Session`]); results
//! come back as the library's own report ([`ToolResult::report`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use exec_host::mcp::McpConfig;
use exec_host::settings::{Layer, PermissionMode};
use exec_host::state::StorePlaces;
use exec_host::{
    Approval, CallOptions, Effect, Limits, Message, Provider, Sandbox, SandboxOptions, Session, SetupError, Tool, ToolCall,
    ToolDefinition, ToolResult, error_sentence,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::bridge;
use crate::callables::{EventLoops, PythonFunction};
use crate::callbacks::{PythonApprover, PythonInput, PythonTool, approval};
use crate::values;

create_exception!(_native, ExecHostError, PyException, "An error of exec-host (the base of the others).");
create_exception!(_native, SessionError, ExecHostError, "A session could not be opened, or was asked what it cannot do.");
create_exception!(_native, ResumeError, ExecHostError, "A parked Exec could not be resumed, listed or discarded.");

/// What `Session.open` was given, besides the callables.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Options {
    workspace: Option<PathBuf>,
    /// A configuration file in the `mcpServers` format, or its contents.
    mcp_servers: Option<McpServers>,
    /// A settings layer that outranks every settings file.
    settings: Option<Value>,
    #[serde(default)]
    settings_files: Vec<PathBuf>,
    permission_mode: Option<String>,
    limits: Option<GivenLimits>,
    /// A folder or `redis://…`: Execs may park there.
    state_store: Option<String>,
    state_key_file: Option<PathBuf>,
    conversation: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum McpServers {
    File(PathBuf),
    Config(Value),
}

/// The limits given, each in Python's units (seconds for times); the others stay the
/// library's defaults.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct GivenLimits {
    budget: Option<f64>,
    max_calls: Option<u32>,
    max_log_chars: Option<usize>,
    max_result_chars: Option<usize>,
    max_images: Option<usize>,
    max_memory_bytes: Option<u64>,
    max_nested_wait: Option<f64>,
    max_argument_bytes: Option<usize>,
}

impl GivenLimits {
    fn limits(self) -> Result<Limits, String> {
        let seconds = |what: &str, value: f64| match value.is_finite() && value > 0.0 {
            true => Ok(Duration::from_secs_f64(value)),
            false => Err(format!("limits.{what} must be a positive number of seconds, not {value}")),
        };
        let mut limits = Limits::default();
        if let Some(budget) = self.budget {
            limits = limits.with_budget(seconds("budget", budget)?);
        }
        if let Some(wait) = self.max_nested_wait {
            limits = limits.with_max_nested_wait(Some(seconds("max_nested_wait", wait)?));
        }
        let defaults = Limits::default();
        limits = limits
            .with_max_calls(self.max_calls.unwrap_or(defaults.max_calls))
            .with_max_log_chars(self.max_log_chars.unwrap_or(defaults.max_log_chars))
            .with_max_result_chars(self.max_result_chars.unwrap_or(defaults.max_result_chars))
            .with_max_images(self.max_images.unwrap_or(defaults.max_images))
            .with_max_memory_bytes(self.max_memory_bytes.unwrap_or(defaults.max_memory_bytes))
            .with_max_argument_bytes(self.max_argument_bytes.unwrap_or(defaults.max_argument_bytes));
        limits.check().map_err(|e| format!("limits: {}", error_sentence(&e)))?;
        Ok(limits)
    }
}

/// A tool as the Python layer describes it: name, description, input schema, output schema
/// (or None), the function (called with the argument object), whether it is an `async def`,
/// whether it is read-only.
type ToolSpec<'py> = (String, String, Bound<'py, PyAny>, Option<Bound<'py, PyAny>>, Py<PyAny>, bool, bool);

/// A callable and whether it is an `async def`.
type CallableSpec = (Py<PyAny>, bool);

fn session_error(error: impl std::error::Error + 'static) -> PyErr {
    SessionError::new_err(error_sentence(&error))
}

/// Opens a session on the running event loop (awaitable): `options` as `Options` reads them,
/// `tools`, and the approver and input handler, each a callable or None.
#[pyfunction]
#[pyo3(signature = (options, tools, approver, input_handler))]
pub fn open_session<'py>(
    py: Python<'py>,
    options: Bound<'py, PyAny>,
    tools: Vec<ToolSpec<'py>>,
    approver: Option<CallableSpec>,
    input_handler: Option<CallableSpec>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = values::to_json(&options).map_err(|why| PyTypeError::new_err(format!("the options: {why}")))?;
    let options: Options = serde_json::from_value(options).map_err(|e| PyValueError::new_err(format!("the options: {e}")))?;
    let loops = Arc::new(EventLoops::default());
    // Until the first Exec, what the servers ask while they start is answered on this loop.
    let opening = loops.enter(py, None, py.import("asyncio")?.call_method0("get_running_loop")?.unbind());
    let function = |(function, is_async): CallableSpec| PythonFunction::new(function, is_async, loops.clone());
    let mut defined: Vec<Arc<dyn Tool>> = Vec::with_capacity(tools.len());
    for (name, description, schema, output_schema, function_given, is_async, read_only) in tools {
        let schema = values::to_json(&schema).map_err(|why| PyTypeError::new_err(format!("the schema of `{name}`: {why}")))?;
        // Behind `Exec`: a script reaches it, a model sees it through search.
        let mut definition = ToolDefinition::new(&name, description, schema)
            .map_err(|e| PyValueError::new_err(format!("`{name}` cannot be a tool: {}", error_sentence(&e))))?
            .deferred(true)
            .with_effect(if read_only { Effect::ReadOnly } else { Effect::Other });
        if let Some(output) = output_schema {
            let output =
                values::to_json(&output).map_err(|why| PyTypeError::new_err(format!("the output schema of `{name}`: {why}")))?;
            definition = definition.with_output_schema(output);
        }
        defined.push(Arc::new(PythonTool { definition, function: function((function_given, is_async)) }));
    }
    let settings = match options.settings {
        Some(layer) => {
            Some(Layer::from_value(layer).map_err(|e| PyValueError::new_err(format!("the settings: {}", error_sentence(&e))))?)
        }
        None => None,
    };
    let mode = match &options.permission_mode {
        Some(mode) => Some(PermissionMode::parse(mode).map_err(|e| PyValueError::new_err(error_sentence(&e)))?),
        None => None,
    };
    let limits = options.limits.map(GivenLimits::limits).transpose().map_err(PyValueError::new_err)?;
    let mcp = match options.mcp_servers {
        None => None,
        Some(McpServers::File(file)) => Some(McpConfig::load(&file).map_err(|e| PyValueError::new_err(error_sentence(&e)))?),
        Some(McpServers::Config(config)) => {
            let text = config.to_string();
            Some(McpConfig::parse(&text, Path::new("mcp_servers")).map_err(|e| PyValueError::new_err(error_sentence(&e)))?)
        }
    };
    let approver = approver.map(|spec| PythonApprover { function: function(spec) });
    let input = input_handler.map(|spec| PythonInput { function: function(spec) });
    let places = options.state_store.map(|location| StorePlaces::new(Some(location), options.state_key_file));
    let (workspace, settings_files, conversation) = (options.workspace, options.settings_files, options.conversation);
    bridge::awaitable(py, move |_| async move {
        let sandbox = shared_sandbox(workspace.as_deref()).await.map_err(session_error)?;
        let mut builder = Session::builder().sandbox(sandbox).tools(defined).settings_files(settings_files);
        if let Some(layer) = settings {
            builder = builder.managed_settings(layer);
        }
        if let Some(places) = &places {
            builder = builder.private_places(places.private_places());
            let store = places.open(workspace.as_deref()).await.map_err(session_error)?;
            builder = builder.state_store(store);
        }
        if let Some(folder) = workspace {
            builder = builder.workspace(folder);
        }
        if let Some(mode) = mode {
            builder = builder.permission_mode(mode);
        }
        if let Some(limits) = limits {
            builder = builder.limits(limits);
        }
        if let Some(mcp) = mcp {
            builder = builder.mcp_servers(mcp);
        }
        if let Some(approver) = approver {
            builder = builder.approver(Arc::new(approver));
        }
        if let Some(input) = input {
            builder = builder.mcp_input(Arc::new(input));
        }
        if let Some(conversation) = conversation {
            builder = builder.conversation(conversation);
        }
        let session = builder.build().await.map_err(session_error)?;
        drop(opening);
        Ok(NativeSession { session, loops })
    })
}

/// The sandbox of every session of this process that runs with the same options: its engine
/// and instance pool reserve much address space, so a process that opens many sessions (one
/// per agent run, say) shares one rather than making one each.
async fn shared_sandbox(workspace: Option<&Path>) -> Result<Sandbox, SetupError> {
    static SHARED: tokio::sync::Mutex<Vec<(Option<PathBuf>, Sandbox)>> = tokio::sync::Mutex::const_new(Vec::new());
    let options = SandboxOptions::default().for_workspace(workspace);
    let mut shared = SHARED.lock().await;
    if let Some((_, sandbox)) = shared.iter().find(|(cache, _)| *cache == options.cache_dir) {
        return Ok(sandbox.clone());
    }
    let cache = options.cache_dir.clone();
    let sandbox = Sandbox::with_options(options).await?;
    shared.push((cache, sandbox.clone()));
    Ok(sandbox)
}

/// An open session.
#[pyclass(frozen)]
pub struct NativeSession {
    session: Session,
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
            let call = ToolCall::new(id, exec_host::exec_tool::NAME, json!({ "code": code }));
            Ok(report(&session.call(call, abort).await))
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
        let call = ToolCall::new(id, exec_host::exec_tool::NAME, json!({ "code": code }));
        let session = self.session.clone();
        let mut running = Box::pin(bridge::runtime().spawn({
            let abort = abort.clone();
            async move { report(&session.call(call, abort).await) }
        }));
        loop {
            let polled =
                py.detach(|| bridge::runtime().block_on(async { tokio::time::timeout(SIGNAL_CHECKS, &mut running).await }));
            match polled {
                Ok(Ok(report)) => return Ok(report),
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
        let answers = values::to_json(&answers).map_err(|why| PyTypeError::new_err(format!("the answers: {why}")))?;
        let Value::Object(answers) = answers else { return Err(PyTypeError::new_err("the answers are a dict")) };
        let mut approvals: HashMap<u32, Approval> = HashMap::new();
        for (id, answer) in answers {
            let id = id.parse().map_err(|_| PyValueError::new_err(format!("an approval id is a number, not {id:?}")))?;
            approvals.insert(id, approval(answer));
        }
        let session = self.session.clone();
        bridge::awaitable(py, move |abort| async move {
            let _on_this_loop = on_this_loop;
            let resumed = session.resume(&handle, approvals, CallOptions::new(abort)).await;
            Ok(report(&resumed.map_err(|e| ResumeError::new_err(error_sentence(&e)))?))
        })
    }

    /// What the parked Exec `handle` waits for; awaitable.
    fn parked<'py>(&self, py: Python<'py>, handle: String) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        bridge::awaitable(py, move |_| async move {
            let parked = session.parked_exec(&handle).await.map_err(|e| ResumeError::new_err(error_sentence(&e)))?;
            Ok(Json(parked_json(&parked)))
        })
    }

    /// Every parked Exec of the conversation; awaitable.
    fn parked_list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        bridge::awaitable(py, move |_| async move {
            let parked = session.parked_execs().await.map_err(|e| ResumeError::new_err(error_sentence(&e)))?;
            Ok(Json(Value::Array(parked.iter().map(parked_json).collect())))
        })
    }

    /// Discards the parked Exec `handle`; its waiting calls never run. Awaitable.
    fn discard<'py>(&self, py: Python<'py>, handle: String) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        bridge::awaitable(py, move |_| async move {
            session.discard_parked(&handle).await.map_err(|e| ResumeError::new_err(error_sentence(&e)))?;
            Ok(())
        })
    }

    /// The `Exec` tool as a framework offers it to a model, with no messages of its own:
    /// `name`, `description` and `input_schema`, the description followed by the catalogue of
    /// the tools its scripts reach (what a `prepare` loop appends to the history instead).
    fn declaration(&self) -> PyResult<Json> {
        let prepared = self.session.prepare(&[]).map_err(session_error)?;
        let exec = prepared.declarations.iter().find(|declared| declared.name == exec_host::exec_tool::NAME);
        let exec = exec.ok_or_else(|| SessionError::new_err("the session offers no Exec (the settings deny it)"))?;
        let mut description = exec.description.clone();
        for announced in &prepared.append {
            description.push_str("\n\n");
            description.push_str(&announced.text());
        }
        Ok(Json(json!({ "name": exec.name, "description": description, "input_schema": *exec.input_schema })))
    }

    /// A TypeScript declaration file of what a script reaches now.
    fn declaration_file(&self) -> PyResult<String> {
        self.session.declaration_file().map_err(session_error)
    }

    /// The pool's tools that match `query`, as `ToolSearch` finds them.
    #[pyo3(signature = (query, limit=None))]
    fn search(&self, query: String, limit: Option<usize>) -> PyResult<Json> {
        let found = self.session.search(query, limit).map_err(session_error)?;
        let matches: Vec<Value> = found
            .matches
            .iter()
            .map(|found| json!({ "name": found.name, "description": found.description, "signature": found.signature }))
            .collect();
        Ok(Json(json!({ "matches": matches, "total": found.total, "note": found.note })))
    }

    /// What the next model request needs, from `history` (messages in the library's neutral
    /// format): the messages to append, the declarations, the guidance, and with `provider`
    /// the tools and the whole request body in that provider's format.
    #[pyo3(signature = (history, provider=None))]
    fn prepare(&self, history: Bound<'_, PyAny>, provider: Option<String>) -> PyResult<Json> {
        let history = messages(&history)?;
        let prepared = self.session.prepare(&history).map_err(session_error)?;
        let declared = |declarations: &[exec_host::Declaration]| -> Vec<Value> {
            declarations
                .iter()
                .map(|declared| {
                    json!({ "name": declared.name, "description": declared.description, "input_schema": *declared.input_schema })
                })
                .collect()
        };
        let mut out = json!({
            "append": prepared.append,
            "declarations": declared(&prepared.declarations),
            "deferred": declared(&prepared.deferred),
            "guidance": &*prepared.guidance,
        });
        if let Some(provider) = provider {
            let provider = parse_provider(&provider)?;
            let mut whole = history;
            whole.extend(prepared.append.iter().cloned());
            out["tools"] = provider.tools(&prepared.declarations);
            out["request"] = provider.request(&prepared.guidance, &prepared.declarations, &whole);
        }
        Ok(Json(out))
    }

    /// A provider's response body read as one neutral message, with its tool calls.
    fn reply(&self, body: Bound<'_, PyAny>, provider: String) -> PyResult<Json> {
        let body = values::to_json(&body).map_err(|why| PyTypeError::new_err(format!("the response: {why}")))?;
        let reply = parse_provider(&provider)?.reply(&body).map_err(|e| PyValueError::new_err(error_sentence(&e)))?;
        let calls: Vec<Value> = ToolCall::all_in(&reply.message)
            .into_iter()
            .map(|call| json!({ "type": "tool_use", "id": call.id, "name": call.name, "input": call.input }))
            .collect();
        let stop = match &reply.stop {
            exec_host::StopReason::EndTurn => "end_turn".to_string(),
            exec_host::StopReason::ToolUse => "tool_use".to_string(),
            exec_host::StopReason::MaxTokens => "max_tokens".to_string(),
            exec_host::StopReason::Refusal => "refusal".to_string(),
            exec_host::StopReason::Other(other) => other.clone(),
            _ => "other".to_string(),
        };
        Ok(Json(json!({ "message": reply.message, "tool_calls": calls, "stop": stop, "skipped": reply.skipped })))
    }

    /// Runs a turn's tool calls (`{"id", "name", "input"}` each) one after another;
    /// awaitable, to each call's report and the messages to append to the history.
    fn call_turn<'py>(&self, py: Python<'py>, calls: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let on_this_loop = self.follow_loop(py, None)?;
        let calls = values::to_json(&calls).map_err(|why| PyTypeError::new_err(format!("the tool calls: {why}")))?;
        let calls: Vec<GivenCall> =
            serde_json::from_value(calls).map_err(|e| PyValueError::new_err(format!("a tool call: {e}")))?;
        let session = self.session.clone();
        bridge::awaitable(py, move |abort| async move {
            let _on_this_loop = on_this_loop;
            let mut results: Vec<ToolResult> = Vec::with_capacity(calls.len());
            for call in calls {
                results.push(session.call(ToolCall::new(call.id, call.name, call.input), abort.clone()).await);
            }
            let mut appended = Vec::new();
            exec_host::append_results(&mut appended, &results);
            let reports: Vec<Value> = results.iter().map(|result| report(result).0).collect();
            Ok(Json(json!({ "results": reports, "messages": appended })))
        })
    }

    /// The conversation the session's parked Execs and stored values belong to.
    #[getter]
    fn conversation(&self) -> Option<String> {
        self.session.conversation().map(str::to_string)
    }

    /// The MCP servers that did not start, each as a sentence.
    #[getter]
    fn start_failures(&self) -> Vec<String> {
        self.session.start_failures().iter().map(|failure| error_sentence(failure)).collect()
    }

    /// The permission mode in force.
    fn permission_mode(&self) -> PyResult<String> {
        Ok(self.session.permission_mode().map_err(session_error)?.name().to_string())
    }

    /// Closes the session: its MCP servers and their children are stopped. Awaitable.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        bridge::awaitable(py, move |_| async move {
            session.shutdown().await;
            Ok(())
        })
    }
}

/// A tool call as Python gives it (an Anthropic `tool_use` block has this shape).
#[derive(Deserialize)]
struct GivenCall {
    id: String,
    name: String,
    #[serde(default)]
    input: Value,
}

/// The id of an Exec started from Python: `given`, or a new one, with how many Execs deep it
/// runs (0: not from a tool) after it, for [`call_about`] to read back.
fn call_id(given: Option<String>, depth: u32) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = given.unwrap_or_else(|| format!("exec-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    format!("{id}{DEPTH_MARK}{depth}")
}

/// How often a blocking Exec lets Python's signal handlers run (Ctrl-C aborts it).
const SIGNAL_CHECKS: std::time::Duration = std::time::Duration::from_millis(50);

/// What separates an Exec's id from its depth.
const DEPTH_MARK: &str = "~depth-";

/// What a Python callable is told of the call it serves: `exec_id` (the id of the Exec whose
/// script made it, as the caller gave it) and `call` (its place among the script's calls), or
/// `call_id` for a direct call; and `depth`, how many Execs deep that script runs, which the
/// Python layer bounds.
pub fn call_about(origin: &exec_host::Origin) -> Value {
    match origin {
        exec_host::Origin::Nested { exec_call_id, call } => {
            let depth = exec_call_id.rsplit_once(DEPTH_MARK).and_then(|(_, depth)| depth.parse::<u32>().ok());
            json!({ "exec_id": exec_id(exec_call_id), "call": call, "depth": depth.unwrap_or(0) })
        }
        other => json!({ "exec_id": null, "call": null, "call_id": other.tool_use_id(), "depth": 0 }),
    }
}

fn parked_json(parked: &exec_host::ParkedExec) -> Value {
    let approvals: Vec<Value> = parked
        .approvals
        .iter()
        .map(|approval| json!({ "id": approval.id, "tool": approval.tool, "input": approval.input, "why": approval.why }))
        .collect();
    json!({ "handle": parked.handle, "approvals": approvals, "exec_id": exec_id(&parked.exec_call_id) })
}

/// The id of an Exec as the Python caller gave it (without the depth [`call_id`] adds).
fn exec_id(exec_call_id: &str) -> &str {
    exec_call_id.rsplit_once(DEPTH_MARK).map_or(exec_call_id, |(id, _)| id)
}

/// A result's report, its parked Exec named by the id the Python caller gave.
fn report(result: &ToolResult) -> Json {
    let mut report = result.report();
    if let Some(parked) = &result.parked {
        report["paused"] = parked_json(parked);
    }
    Json(report)
}

fn messages(history: &Bound<'_, PyAny>) -> PyResult<Vec<Message>> {
    let history = values::to_json(history).map_err(|why| PyTypeError::new_err(format!("the history: {why}")))?;
    serde_json::from_value(history).map_err(|e| PyValueError::new_err(format!("the history: {e}")))
}

/// `"anthropic"`, `"openai-responses"` or `"openai-chat"`.
fn parse_provider(name: &str) -> PyResult<Provider> {
    match name {
        "anthropic" => Ok(Provider::Anthropic),
        "openai-responses" => Ok(Provider::OpenAiResponses),
        "openai-chat" => Ok(Provider::OpenAiChat),
        other => Err(PyValueError::new_err(format!(
            "the provider is \"anthropic\", \"openai-responses\" or \"openai-chat\", not {other:?}"
        ))),
    }
}

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
