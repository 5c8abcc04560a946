//! A session for JavaScript: opened from the options the package's `Session.open` takes, and
//! every method its `Session` wraps. Methods that wait are operations (`bridge::start`): they
//! take the id their outcome is delivered with. The others answer at once, as an envelope.

use std::sync::{Arc, OnceLock};

use exec_host::mcp::input::InputHandler;
use exec_host::{Approver, Tool};
use exec_host_embed::{CallableApprover, CallableInput, CallableTool, Embedded, Fault, Opening, call_id, tool_definition};
use napi::bindgen_prelude::Function;
use napi::{Error, Result, Status};
use napi_derive::napi;
use serde_json::Value;

use crate::bridge::{self, failed, ok};
use crate::callables::{APPROVER, DispatchArgs, Dispatcher, INPUT, JsFunction};

/// A tool as the package describes it; the schemas are JSON text.
#[napi(object)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub schema: String,
    pub output_schema: Option<String>,
    pub read_only: bool,
}

/// JSON text the package produced, read back; text that is not JSON is the package's fault.
fn json(text: &str, what: &str) -> std::result::Result<Value, Fault> {
    serde_json::from_str(text).map_err(|e| Fault::Invalid(format!("{what}: {e}")))
}

/// An envelope of what a method that answers at once came to.
fn envelope(outcome: std::result::Result<Value, Fault>) -> String {
    outcome.map(ok).unwrap_or_else(|fault| failed(&fault))
}

/// What a session is opened with.
struct Unopened {
    opening: Opening,
    tools: Vec<Arc<dyn Tool>>,
    approver: Option<Arc<dyn Approver>>,
    input: Option<Arc<dyn InputHandler>>,
}

/// A session: made with its options and callables, opened by [`NativeSession::open`].
#[napi]
pub struct NativeSession {
    unopened: std::sync::Mutex<Option<Unopened>>,
    session: Arc<OnceLock<Embedded>>,
}

#[napi]
impl NativeSession {
    /// Reads `options` (JSON text, as `exec_host_embed::Opening` reads them) and the tools;
    /// `dispatch` calls the tools, and the approver and input handler when `approver` and
    /// `input` say the package has them. Throws when the options are not ones a session takes.
    #[napi(constructor)]
    pub fn new(
        options: String,
        tools: Vec<ToolSpec>,
        approver: bool,
        input: bool,
        dispatch: Function<'_, DispatchArgs, napi::bindgen_prelude::Unknown<'static>>,
    ) -> Result<Self> {
        let invalid = |fault: Fault| Error::new(Status::InvalidArg, fault.message().to_string());
        let opening = Opening::new(json(&options, "the options").map_err(invalid)?).map_err(invalid)?;
        let dispatcher: Arc<Dispatcher> =
            Arc::new(dispatch.build_threadsafe_function().weak::<true>().callee_handled::<false>().build()?);
        let mut defined: Vec<Arc<dyn Tool>> = Vec::with_capacity(tools.len());
        for (index, spec) in tools.into_iter().enumerate() {
            let schema = json(&spec.schema, &format!("the schema of `{}`", spec.name)).map_err(invalid)?;
            let output = spec
                .output_schema
                .as_deref()
                .map(|text| json(text, &format!("the output schema of `{}`", spec.name)))
                .transpose()
                .map_err(invalid)?;
            let definition = tool_definition(&spec.name, spec.description, schema, output, spec.read_only).map_err(invalid)?;
            let role = i32::try_from(index).map_err(|_| Error::new(Status::InvalidArg, "too many tools"))?;
            defined.push(Arc::new(CallableTool { definition, function: JsFunction::new(dispatcher.clone(), role) }));
        }
        let approver = approver
            .then(|| Arc::new(CallableApprover { function: JsFunction::new(dispatcher.clone(), APPROVER) }) as Arc<dyn Approver>);
        let input = input
            .then(|| Arc::new(CallableInput { function: JsFunction::new(dispatcher.clone(), INPUT) }) as Arc<dyn InputHandler>);
        Ok(NativeSession {
            unopened: std::sync::Mutex::new(Some(Unopened { opening, tools: defined, approver, input })),
            session: Arc::new(OnceLock::new()),
        })
    }

    fn open_session(&self) -> std::result::Result<Embedded, Fault> {
        self.session.get().cloned().ok_or_else(|| Fault::Session("the session is not open".into()))
    }

    /// Opens the session (operation `op`; once).
    #[napi]
    pub fn open(&self, op: u32) {
        let taken = self.unopened.lock().unwrap_or_else(|e| e.into_inner()).take();
        let session = self.session.clone();
        bridge::start(op, move |_| async move {
            let Unopened { opening, tools, approver, input } =
                taken.ok_or_else(|| Fault::Session("the session was opened already".into()))?;
            let opened = opening.open(tools, approver, input).await?;
            let _ = session.set(opened);
            Ok(Value::Null)
        });
    }

    /// Runs `code` as one Exec, `depth` Execs deep, under `id` (a new one by default), to its
    /// report (operation `op`; cancelling it aborts the Exec).
    #[napi]
    pub fn exec(&self, op: u32, code: String, depth: u32, id: Option<String>) {
        let session = self.open_session();
        bridge::start(op, move |abort| async move { Ok(session?.exec(call_id(id, depth), code, abort).await) });
    }

    /// Resumes the parked Exec `handle` with `answers` (JSON text: approval id to an
    /// approver's answer), to its report (operation `op`).
    #[napi]
    pub fn resume(&self, op: u32, handle: String, answers: String) {
        let session = self.open_session();
        bridge::start(op, move |abort| async move {
            let answers = exec_host_embed::answers(json(&answers, "the answers")?)?;
            session?.resume(&handle, answers, abort).await
        });
    }

    /// What the parked Exec `handle` waits for (operation `op`).
    #[napi]
    pub fn parked(&self, op: u32, handle: String) {
        let session = self.open_session();
        bridge::start(op, move |_| async move { session?.parked(&handle).await });
    }

    /// Every parked Exec of the conversation (operation `op`).
    #[napi]
    pub fn parked_list(&self, op: u32) {
        let session = self.open_session();
        bridge::start(op, move |_| async move { session?.parked_list().await });
    }

    /// Discards the parked Exec `handle`; its waiting calls never run (operation `op`).
    #[napi]
    pub fn discard(&self, op: u32, handle: String) {
        let session = self.open_session();
        bridge::start(op, move |_| async move { session?.discard(&handle).await.map(|()| Value::Null) });
    }

    /// Runs a turn's tool calls (JSON text, `{"id", "name", "input"}` each) one after another,
    /// to each call's report and the messages to append (operation `op`).
    #[napi]
    pub fn call_turn(&self, op: u32, calls: String) {
        let session = self.open_session();
        bridge::start(op, move |abort| async move {
            let calls = exec_host_embed::tool_calls(json(&calls, "the tool calls")?)?;
            Ok(session?.call_turn(calls, abort).await)
        });
    }

    /// Closes the session: its MCP servers and their children are stopped (operation `op`).
    #[napi]
    pub fn close(&self, op: u32) {
        let session = self.session.get().cloned();
        bridge::start(op, move |_| async move {
            if let Some(session) = session {
                session.close().await;
            }
            Ok(Value::Null)
        });
    }

    /// The `Exec` tool as a framework offers it to a model (an envelope).
    #[napi]
    pub fn declaration(&self) -> String {
        envelope(self.open_session().and_then(|session| session.declaration()))
    }

    /// A TypeScript declaration file of what a script reaches now (an envelope).
    #[napi]
    pub fn declaration_file(&self) -> String {
        envelope(self.open_session().and_then(|session| session.declaration_file().map(Value::String)))
    }

    /// The pool's tools that match `query`, as `ToolSearch` finds them (an envelope).
    #[napi]
    pub fn search(&self, query: String, limit: Option<u32>) -> String {
        envelope(self.open_session().and_then(|session| session.search(query, limit.map(|limit| limit as usize))))
    }

    /// What the next model request needs, from `history` (JSON text; an envelope).
    #[napi]
    pub fn prepare(&self, history: String, provider: Option<String>) -> String {
        envelope(self.open_session().and_then(|session| session.prepare(json(&history, "the history")?, provider.as_deref())))
    }

    /// A provider's response body (JSON text) read as one neutral message (an envelope).
    #[napi]
    pub fn reply(&self, body: String, provider: String) -> String {
        envelope(self.open_session().and_then(|session| session.reply(&json(&body, "the response")?, &provider)))
    }

    /// The conversation, the MCP servers that did not start, and the permission mode in force
    /// (an envelope).
    #[napi]
    pub fn about(&self) -> String {
        envelope(self.open_session().and_then(|session| {
            Ok(serde_json::json!({
                "conversation": session.conversation(),
                "start_failures": session.start_failures(),
                "permission_mode": session.permission_mode()?,
            }))
        }))
    }
}
