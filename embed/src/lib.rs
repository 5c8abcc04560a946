//! The session as a language package wraps it (the Python package, the Node package): what
//! is opened from options given as JSON, each method taking and giving JSON, and the callbacks
//! of the host language as tools, approver and input handler. Each rule both packages need
//! (the options and their units, a call's ids and depth, the approver's answers, the shape of a
//! report) is written once here; a package adds only its language's values, callables and
//! futures. Everything goes through the library's front door ([`Session`]).

mod callbacks;
mod calls;
mod options;
mod private;
pub mod work;

pub use callbacks::{Callable, CallableApprover, CallableInput, CallableTool, approval, input_answer};
pub use calls::{call_about, call_id};
pub use options::{Opening, tool_definition};
pub use private::{private_store, remove_private_store};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use exec_host::{
    Approval, CallOptions, CancellationToken, Message, Provider, Sandbox, SandboxOptions, Session, SetupError, ToolCall,
    ToolResult, error_sentence,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// How large a value from a package's callable may be (as the package counts it: the bytes
/// of its JSON text, or of its strings and 8 for every other part): a tool that returns more
/// is refused before the copy is made.
pub const MAX_VALUE_BYTES: usize = 32 * 1024 * 1024;

/// Why a method of a package failed, as the package raises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The session could not be opened, or was asked what it cannot do.
    Session(String),
    /// A parked Exec could not be resumed, listed or discarded.
    Resume(String),
    /// A value given is not one the method takes (Python's `ValueError`, JavaScript's
    /// `TypeError`).
    Invalid(String),
}

impl Fault {
    /// What went wrong, as a sentence.
    pub fn message(&self) -> &str {
        match self {
            Fault::Session(message) | Fault::Resume(message) | Fault::Invalid(message) => message,
        }
    }

    fn session(error: impl std::error::Error + 'static) -> Fault {
        Fault::Session(error_sentence(&error))
    }

    fn resume(error: impl std::error::Error + 'static) -> Fault {
        Fault::Resume(error_sentence(&error))
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// An open session, every method as a package offers it.
#[derive(Clone)]
pub struct Embedded {
    session: Session,
}

impl Embedded {
    /// The session itself, for what a package runs its own way (a blocking Exec).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Runs `code` as one Exec under `id` (made by [`call_id`]), to its report. Cancelling
    /// `abort` aborts it. An Exec not started by a tool first waits for its turn
    /// ([`admitted`]), so any number may be started at once.
    pub async fn exec(&self, id: String, code: String, abort: CancellationToken) -> Value {
        let _turn = match calls::depth_of(&id) {
            0 => admitted(&abort).await,
            _ => None,
        };
        let call = ToolCall::new(id, exec_host::exec_tool::NAME, json!({ "code": code }));
        report(&self.session.call(call, abort).await)
    }

    /// Resumes the parked Exec `handle` with `answers` (read by [`answers`]), to its report.
    pub async fn resume(&self, handle: &str, answers: HashMap<u32, Approval>, abort: CancellationToken) -> Result<Value, Fault> {
        let _turn = admitted(&abort).await;
        let resumed = self.session.resume(handle, answers, CallOptions::new(abort)).await.map_err(Fault::resume)?;
        Ok(report(&resumed))
    }

    /// What the parked Exec `handle` waits for.
    pub async fn parked(&self, handle: &str) -> Result<Value, Fault> {
        let parked = self.session.parked_exec(handle).await.map_err(Fault::resume)?;
        Ok(parked_json(&parked))
    }

    /// Every parked Exec of the conversation.
    pub async fn parked_list(&self) -> Result<Value, Fault> {
        let parked = self.session.parked_execs().await.map_err(Fault::resume)?;
        Ok(Value::Array(parked.iter().map(parked_json).collect()))
    }

    /// Discards the parked Exec `handle`: its waiting calls never run.
    pub async fn discard(&self, handle: &str) -> Result<(), Fault> {
        self.session.discard_parked(handle).await.map_err(Fault::resume)
    }

    /// The `Exec` tool as a framework offers it to a model, with no messages of its own:
    /// `name`, `description` and `input_schema`, the description followed by the catalogue of
    /// the tools its scripts reach (what a `prepare` loop appends to the history instead).
    pub fn declaration(&self) -> Result<Value, Fault> {
        let prepared = self.session.prepare(&[]).map_err(Fault::session)?;
        let exec = prepared.declarations.iter().find(|declared| declared.name == exec_host::exec_tool::NAME);
        let exec = exec.ok_or_else(|| Fault::Session("the session offers no Exec (the settings deny it)".into()))?;
        let mut description = exec.description.clone();
        for announced in &prepared.append {
            description.push_str("\n\n");
            description.push_str(&announced.text());
        }
        Ok(json!({ "name": exec.name, "description": description, "input_schema": *exec.input_schema }))
    }

    /// A TypeScript declaration file of what a script reaches now.
    pub fn declaration_file(&self) -> Result<String, Fault> {
        self.session.declaration_file().map_err(Fault::session)
    }

    /// The pool's tools that match `query`, as `ToolSearch` finds them.
    pub fn search(&self, query: String, limit: Option<usize>) -> Result<Value, Fault> {
        let found = self.session.search(query, limit).map_err(Fault::session)?;
        let matches: Vec<Value> = found
            .matches
            .iter()
            .map(|found| json!({ "name": found.name, "description": found.description, "signature": found.signature }))
            .collect();
        Ok(json!({ "matches": matches, "total": found.total, "note": found.note }))
    }

    /// What the next model request needs, from `history` (messages in the library's neutral
    /// format): the messages to append, the declarations, the guidance, and with `provider`
    /// the tools and the whole request body in that provider's format.
    pub fn prepare(&self, history: Value, provider: Option<&str>) -> Result<Value, Fault> {
        let history: Vec<Message> = serde_json::from_value(history).map_err(|e| Fault::Invalid(format!("the history: {e}")))?;
        let provider = provider.map(parse_provider).transpose()?;
        let prepared = self.session.prepare(&history).map_err(Fault::session)?;
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
            let mut whole = history;
            whole.extend(prepared.append.iter().cloned());
            out["tools"] = provider.tools(&prepared.declarations);
            out["request"] = provider.request(&prepared.guidance, &prepared.declarations, &whole);
        }
        Ok(out)
    }

    /// A provider's response body read as one neutral message, with its tool calls (each
    /// `{"type": "tool_use", "id", "name", "input"}`) and why the model stopped.
    pub fn reply(&self, body: &Value, provider: &str) -> Result<Value, Fault> {
        let reply = parse_provider(provider)?.reply(body).map_err(|e| Fault::Invalid(error_sentence(&e)))?;
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
        Ok(json!({ "message": reply.message, "tool_calls": calls, "stop": stop, "skipped": reply.skipped }))
    }

    /// Runs a turn's tool calls (read by [`tool_calls`]) one after another, to each call's
    /// report and the messages to append to the history.
    pub async fn call_turn(&self, calls: Vec<ToolCall>, abort: CancellationToken) -> Value {
        let mut results: Vec<ToolResult> = Vec::with_capacity(calls.len());
        for call in calls {
            results.push(self.session.call(call, abort.clone()).await);
        }
        let mut appended = Vec::new();
        exec_host::append_results(&mut appended, &results);
        let reports: Vec<Value> = results.iter().map(report).collect();
        json!({ "results": reports, "messages": appended })
    }

    /// The conversation the session's parked Execs and stored values belong to.
    pub fn conversation(&self) -> Option<String> {
        self.session.conversation().map(str::to_string)
    }

    /// The MCP servers that did not start, each as a sentence.
    pub fn start_failures(&self) -> Vec<String> {
        self.session.start_failures().iter().map(|failure| error_sentence(failure)).collect()
    }

    /// The name of the permission mode in force.
    pub fn permission_mode(&self) -> Result<String, Fault> {
        Ok(self.session.permission_mode().map_err(Fault::session)?.name().to_string())
    }

    /// Closes the session: its MCP servers and their children are stopped.
    pub async fn close(&self) {
        self.session.shutdown().await;
    }
}

/// The answers to a parked Exec's approvals as a package is given them: an object from
/// approval id to an approver's answer (read by [`approval`]).
pub fn answers(given: Value) -> Result<HashMap<u32, Approval>, Fault> {
    let Value::Object(given) = given else { return Err(Fault::Invalid("the answers are an object".into())) };
    let mut approvals = HashMap::new();
    for (id, answer) in given {
        let id = id.parse().map_err(|_| Fault::Invalid(format!("an approval id is a number, not {id:?}")))?;
        approvals.insert(id, approval(answer));
    }
    Ok(approvals)
}

/// A tool call as a package is given it (an Anthropic `tool_use` block has this shape).
#[derive(Deserialize)]
struct GivenCall {
    id: String,
    name: String,
    #[serde(default)]
    input: Value,
}

/// A turn's tool calls, each `{"id", "name", "input"}`.
pub fn tool_calls(given: Value) -> Result<Vec<ToolCall>, Fault> {
    let calls: Vec<GivenCall> = serde_json::from_value(given).map_err(|e| Fault::Invalid(format!("a tool call: {e}")))?;
    Ok(calls.into_iter().map(|call| ToolCall::new(call.id, call.name, call.input)).collect())
}

/// Slots of the shared sandboxes' instance pool kept for Execs that tools start: the Execs
/// that wait for a turn may take all the others.
const NESTED_RESERVE: u32 = 64;

/// Waits until fewer Execs run than the instance pool has slots for (less those kept for
/// Execs that tools start), or until `abort`; the turn lasts while the permit is kept. The
/// pool refuses an Exec past its size, which a caller that starts many at once (ten
/// thousand promises, a batch of agent runs) should not see; an Exec a tool starts does not
/// wait, since the Exec that waits on that tool holds a slot: it may be refused instead.
async fn admitted(abort: &CancellationToken) -> Option<tokio::sync::SemaphorePermit<'static>> {
    static TURNS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    let turns = TURNS.get_or_init(|| {
        let slots = SandboxOptions::default().max_concurrent_execs;
        tokio::sync::Semaphore::new(slots.saturating_sub(NESTED_RESERVE).max(1) as usize)
    });
    tokio::select! {
        permit = turns.acquire() => permit.ok(),
        () = abort.cancelled() => None,
    }
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

fn parked_json(parked: &exec_host::ParkedExec) -> Value {
    let approvals: Vec<Value> = parked
        .approvals
        .iter()
        .map(|approval| json!({ "id": approval.id, "tool": approval.tool, "input": approval.input, "why": approval.why }))
        .collect();
    json!({ "handle": parked.handle, "approvals": approvals, "exec_id": calls::exec_id(&parked.exec_call_id) })
}

/// A result's report ([`ToolResult::report`]), its parked Exec named by the id the caller gave.
fn report(result: &ToolResult) -> Value {
    let mut report = result.report();
    if let Some(parked) = &result.parked {
        report["paused"] = parked_json(parked);
    }
    report
}

/// `"anthropic"`, `"openai-responses"` or `"openai-chat"`.
fn parse_provider(name: &str) -> Result<Provider, Fault> {
    match name {
        "anthropic" => Ok(Provider::Anthropic),
        "openai-responses" => Ok(Provider::OpenAiResponses),
        "openai-chat" => Ok(Provider::OpenAiChat),
        other => {
            Err(Fault::Invalid(format!("the provider is \"anthropic\", \"openai-responses\" or \"openai-chat\", not {other:?}")))
        }
    }
}
