//! Results as their consumers see them (spec 000): the text a model reads, with images as
//! attachments; what goes into the history under the call's id; and everything, for a
//! client. One set of rules renders a flat call and a nested one, so the same tool gives
//! the model the same text whichever way it was called.
//!
//! A text past [`COMPACT_OVER_TOKENS`] is compacted for the model and the history to a
//! head and a tail around a marker naming the call; the whole text is kept in a
//! [`ResultStore`](crate::conversation::results::ResultStore) and `view_tool_call` returns any part of it.

use std::time::Duration;

use serde_json::Value;

use crate::conversation::message::{ContentBlock, Message, Role};
use crate::sandbox::runtime::{ExecOutcome, Failure, Limits, NestedCall};
use crate::sources::tools::{Image, ToolOutput};
use crate::support::vocabulary::{Stage, ToolError};

mod compaction;
mod json_text;

pub use compaction::{CHARS_PER_TOKEN, COMPACT_OVER_TOKENS};
pub(crate) use compaction::{compact, needs_compaction};
use json_text::{cut_text, render_value};

/// The text of an `Exec` that parked: what it did so far (`text`), then what it waits for
/// and the handle it resumes under.
pub(crate) fn parked_text(text: &str, parked: &ParkedExec) -> String {
    let mut out = String::from(text);
    out.push_str(&format!("\nParked as {}. Waiting for:", parked.handle));
    for approval in &parked.approvals {
        let input = approval.input.to_string();
        let input = match input.char_indices().nth(PARKED_INPUT_CHARS) {
            Some((at, _)) => format!("{}…", &input[..at]),
            None => input,
        };
        out.push_str(&format!("\n  [{}] {} {input} ({})", approval.id, approval.tool, approval.why));
    }
    out
}

/// Characters of a waiting call's input shown in a parked Exec's text.
const PARKED_INPUT_CHARS: usize = 200;

/// Characters of a result kept whole (for `view_tool_call` and `exec-host view`) when the
/// result cap ([`Limits::max_result_chars`]) cut what the model reads; past it the kept text
/// is cut too, saying the total.
pub const MAX_KEPT_RESULT_CHARS: usize = 1_000_000;

/// The text `render` makes under the result cap `max_chars`, and the text it makes under
/// [`MAX_KEPT_RESULT_CHARS`] when the cap cut the first.
fn capped_and_uncut(max_chars: usize, render: impl Fn(usize) -> String) -> (String, Option<String>) {
    let whole = render(MAX_KEPT_RESULT_CHARS.max(max_chars));
    // Bytes bound characters: a text of no more bytes than the cap was not cut.
    if whole.len() <= max_chars {
        return (whole, None);
    }
    let text = render(max_chars);
    if text == whole { (whole, None) } else { (text, Some(whole)) }
}

/// One tool call's result, in every projection.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolResult {
    /// The id of the model's tool call.
    pub call_id: String,
    /// The tool that was called (`Exec` or a flat tool).
    pub name: String,
    /// What the model reads (compacted past the bound), with image attachments. The
    /// history holds the same, see [`ToolResult::persisted`].
    pub model: ModelProjection,
    /// Everything, for a UI or a log.
    pub client: ClientProjection,
    /// Set when the model projection was compacted.
    pub compacted: Option<Compaction>,
    /// Messages to append to the conversation after this turn's tool results: what the
    /// `PostToolUse` hooks of the call (and of an Exec's nested calls) reported.
    pub messages: Vec<crate::conversation::message::Message>,
    /// Set when the `Exec` parked: it waits for these approvals, and resumes with
    /// `Session::resume` once they are answered.
    pub parked: Option<ParkedExec>,
    /// Set when the `Exec` yielded (`CallOptions::yield_after`) and runs on: `Session::wait`
    /// gives its outcome.
    pub running: Option<RunningExec>,
    /// The text before the result cap cut it, when it did (cut at [`MAX_KEPT_RESULT_CHARS`]
    /// instead): what compaction keeps for `view_tool_call`, so the end of a long value is
    /// not lost.
    pub(crate) uncut: Option<String>,
}

/// An `Exec` that yielded and runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunningExec {
    /// What `Session::wait` and `Session::cancel` take: good only in the session that ran it.
    pub handle: String,
    /// Its console output so far (the first lines; its result has them all).
    pub logs: Vec<String>,
    /// Tool calls it has made so far.
    pub calls: usize,
}

/// The result of an `Exec` that is still running.
pub(crate) fn running_result(call_id: String, running: RunningExec) -> ToolResult {
    let mut text = format!(
        "The script is still running ({} tool call{} so far); wait for it with handle {}.",
        running.calls,
        if running.calls == 1 { "" } else { "s" },
        running.handle
    );
    if !running.logs.is_empty() {
        text.push_str("\nConsole output so far:\n");
        text.push_str(&running.logs.join("\n"));
    }
    let client = ClientProjection {
        ok: false,
        text: text.clone(),
        value: None,
        logs: running.logs.clone(),
        images: Vec::new(),
        calls: Vec::new(),
        calls_omitted: 0,
        failure: None,
        summary: None,
        duration: Duration::ZERO,
        script_time: None,
    };
    ToolResult {
        call_id,
        name: crate::sources::tools::names::EXEC.to_string(),
        model: ModelProjection { text, images: Vec::new(), is_error: false },
        client,
        compacted: None,
        messages: Vec::new(),
        parked: None,
        running: Some(running),
        uncut: None,
    }
}

/// An `Exec` that parked: every call still open waits for a person's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParkedExec {
    /// Names the parked Exec: unguessable, and good only in its own conversation.
    pub handle: String,
    pub approvals: Vec<PendingApproval>,
    /// The id of the model's `Exec` call it belongs to (its nested calls keep it when it
    /// resumes).
    pub exec_call_id: String,
}

/// A call of a parked `Exec` that waits for an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PendingApproval {
    /// What the answer is given under (the call's place among the script's calls).
    pub id: u32,
    /// The leaf tool.
    pub tool: String,
    pub input: Value,
    /// Why it asks: the rule and its file, or the mode.
    pub why: String,
}

/// What the model reads of a result.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelProjection {
    pub text: String,
    pub images: Vec<Image>,
    pub is_error: bool,
}

/// Everything about a result, for a client.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientProjection {
    pub ok: bool,
    /// The whole text a model would read, before compaction.
    pub text: String,
    /// `Exec`: the script's returned value. A flat call: the tool's output as a script
    /// would receive it (structured value, else text, else `null`). `None` on failure or
    /// when a script returned nothing.
    pub value: Option<Value>,
    /// `Exec`: console output, after its cap.
    pub logs: Vec<String>,
    /// Images attached to the result, after their cap.
    pub images: Vec<Image>,
    /// `Exec`: every nested call that reached the host, in order, refused ones included,
    /// with its arguments, duration and outcome. Past the call limit only the last two
    /// refused calls are listed; `calls_omitted` counts the others.
    pub calls: Vec<NestedCall>,
    pub calls_omitted: usize,
    pub failure: Option<CallFailure>,
    /// `Exec`: `N tool calls` and the last two names, or `failed`. Host-only.
    pub summary: Option<String>,
    /// From the call's arrival to its result.
    pub duration: Duration,
    /// `Exec`: the time the script itself ran.
    pub script_time: Option<Duration>,
}

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallFailure {
    pub stage: Stage,
    pub message: String,
    /// How the script failed, when the call was an `Exec` that ran.
    pub exec: Option<Failure>,
}

/// A compacted result: the whole text is this long and kept under the call's id (unless
/// keeping it failed, as `kept` says), at `location` when the store has one to show.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Compaction {
    pub total_chars: usize,
    pub kept: bool,
    pub location: Option<String>,
}

impl ToolResult {
    pub fn is_error(&self) -> bool {
        self.model.is_error
    }

    /// Whether the call succeeded.
    pub fn ok(&self) -> bool {
        self.client.ok
    }

    /// The value: an `Exec` script's return value, or a flat tool's output as a script
    /// would receive it.
    pub fn value(&self) -> Option<&Value> {
        self.client.value.as_ref()
    }

    /// The names of an `Exec`'s nested calls, in order.
    pub fn call_names(&self) -> Vec<&str> {
        self.client.calls.iter().map(|call| call.name.as_str()).collect()
    }

    /// An `Exec`'s summary (`N tool calls` and the last two names, or `failed`); empty
    /// for a flat call.
    pub fn summary(&self) -> &str {
        self.client.summary.as_deref().unwrap_or_default()
    }

    /// The time an `Exec`'s script itself ran; zero for a flat call.
    pub fn script_time(&self) -> Duration {
        self.client.script_time.unwrap_or_default()
    }

    /// How the script failed, when this was an `Exec` whose script ran and failed.
    pub fn exec_failure(&self) -> Option<&Failure> {
        self.client.failure.as_ref().and_then(|failure| failure.exec.as_ref())
    }

    /// The text the model reads.
    pub fn text(&self) -> &str {
        &self.model.text
    }

    pub fn failure(&self) -> Option<&CallFailure> {
        self.client.failure.as_ref()
    }

    /// The result as one JSON object, as `exec-host run --json` prints it and the Python and
    /// Node packages read it: `ok`, `text` (what the model reads), `value`, `logs`, `images`,
    /// `calls` (names in order), `call_details` (`name`, `ok`, `stage`, `ms`, and `note` when
    /// there is one), `messages` (their texts), `summary`, `error` (the message) and
    /// `error_stage`, and `paused` (`handle`, `approvals` with `id`, `tool`, `input`, `why`, and
    /// `exec_call_id`)
    /// when the Exec parked.
    pub fn report(&self) -> Value {
        let client = &self.client;
        let details: Vec<Value> = client
            .calls
            .iter()
            .map(|call| {
                let mut detail = serde_json::json!({
                    "name": call.name,
                    "ok": call.ok(),
                    "stage": call.stage(),
                    "ms": (call.duration.as_secs_f64() * 1e6).round() / 1e3,
                });
                if let Some(note) = &call.note {
                    detail["note"] = serde_json::json!(note);
                }
                detail
            })
            .collect();
        let mut report = serde_json::json!({
            "ok": self.ok(),
            "text": self.text(),
            "value": self.value().cloned().unwrap_or(Value::Null),
            "logs": client.logs,
            "images": client.images,
            "calls": self.call_names(),
            "call_details": details,
            "messages": self.messages.iter().map(Message::text).collect::<Vec<_>>(),
            "summary": self.summary(),
            "error": client.failure.as_ref().map(|failure| &failure.message),
            "error_stage": client.failure.as_ref().map(|failure| failure.stage),
        });
        if let Some(parked) = &self.parked {
            let approvals: Vec<Value> = parked
                .approvals
                .iter()
                .map(|approval| {
                    serde_json::json!({"id": approval.id, "tool": approval.tool, "input": approval.input, "why": approval.why})
                })
                .collect();
            report["paused"] =
                serde_json::json!({"handle": parked.handle, "approvals": approvals, "exec_call_id": parked.exec_call_id});
        }
        report
    }

    /// What goes into the history under the call's id: the model projection as a
    /// tool-result block.
    pub fn persisted(&self) -> ContentBlock {
        let mut content = vec![ContentBlock::text(self.model.text.clone())];
        content.extend(self.model.images.iter().cloned().map(ContentBlock::Image));
        ContentBlock::ToolResult { tool_use_id: self.call_id.clone(), content, is_error: self.model.is_error }
    }
}

/// The result of an `Exec` that ran (or was refused by the runtime).
pub(crate) fn exec_result(call_id: String, outcome: ExecOutcome, limits: &Limits, duration: Duration) -> ToolResult {
    let (text, uncut) = capped_and_uncut(limits.max_result_chars, |max_chars| exec_text(&outcome, limits, max_chars));
    let ok = outcome.result.is_ok();
    let failure = outcome.result.as_ref().err().map(|failure| CallFailure {
        stage: failure.stage(),
        message: failure.message(),
        exec: Some(failure.clone()),
    });
    let client = ClientProjection {
        ok,
        text: text.clone(),
        value: outcome.result.as_ref().ok().cloned().flatten(),
        logs: outcome.logs,
        images: outcome.images.clone(),
        summary: Some(calls_summary(&outcome.calls, outcome.calls_omitted, ok)),
        calls: outcome.calls,
        calls_omitted: outcome.calls_omitted,
        failure,
        duration,
        script_time: Some(outcome.guest_time),
    };
    let model = ModelProjection { text, images: outcome.images, is_error: !ok };
    ToolResult {
        call_id,
        name: crate::sources::tools::names::EXEC.to_string(),
        model,
        client,
        compacted: None,
        messages: Vec::new(),
        parked: None,
        running: None,
        uncut,
    }
}

/// The result of a flat call, rendered by the rules a nested call's value follows.
pub(crate) fn flat_result(
    call_id: String,
    name: String,
    outcome: Result<ToolOutput, ToolError>,
    limits: &Limits,
    duration: Duration,
) -> ToolResult {
    match outcome {
        Ok(mut output) => {
            let mut images = std::mem::take(&mut output.images);
            let dropped = images.len().saturating_sub(limits.max_images);
            images.truncate(limits.max_images);
            let value = output.into_value();
            let (text, uncut) = capped_and_uncut(limits.max_result_chars, |max_chars| {
                let mut text = render_value(&value, max_chars);
                if dropped > 0 {
                    text.push_str("\n\n");
                    text.push_str(&images_dropped_note(dropped, "a tool result", limits.max_images));
                }
                text
            });
            let client = ClientProjection {
                ok: true,
                text: text.clone(),
                value: Some(value),
                logs: Vec::new(),
                images: images.clone(),
                calls: Vec::new(),
                calls_omitted: 0,
                failure: None,
                summary: None,
                duration,
                script_time: None,
            };
            ToolResult {
                call_id,
                name,
                model: ModelProjection { text, images, is_error: false },
                client,
                compacted: None,
                messages: Vec::new(),
                parked: None,
                running: None,
                uncut,
            }
        }
        Err(error) => failure_result(call_id, name, error, limits.max_result_chars, duration),
    }
}

/// A call that failed before or while it ran, with no output; its message cut at
/// `max_chars` like a value (a tool's error text is as long as the tool likes).
pub(crate) fn failure_result(
    call_id: String,
    name: String,
    mut error: ToolError,
    max_chars: usize,
    duration: Duration,
) -> ToolResult {
    if error.message.trim().is_empty() {
        error.message = format!("`{name}` failed without saying why");
    }
    error.message = cut_text(std::mem::take(&mut error.message), max_chars);
    let client = ClientProjection {
        ok: false,
        text: error.message.clone(),
        value: None,
        logs: Vec::new(),
        images: Vec::new(),
        calls: Vec::new(),
        calls_omitted: 0,
        failure: Some(CallFailure { stage: error.stage, message: error.message.clone(), exec: None }),
        summary: (name == crate::sources::tools::names::EXEC).then(|| "failed".to_string()),
        duration,
        script_time: None,
    };
    let model = ModelProjection { text: error.message, images: Vec::new(), is_error: true };
    ToolResult { call_id, name, model, client, compacted: None, messages: Vec::new(), parked: None, running: None, uncut: None }
}

/// The text the model reads of an Exec: the value (or the failure), console output, and
/// notes on anything cut. Never empty.
/// Values and failures are cut at `max_chars`.
fn exec_text(outcome: &ExecOutcome, limits: &Limits, max_chars: usize) -> String {
    let mut sections = Vec::new();
    let logs = logs_section(outcome);
    match &outcome.result {
        Ok(value) => match (value, &logs) {
            (None, None) => {
                sections.push("The script finished without returning a value and without console output.".to_string())
            }
            (None, Some(logs)) => {
                sections.push(format!("Console output:\n{logs}"));
                sections.push("The script returned no value.".to_string());
            }
            (Some(value), None) => sections.push(render_value(value, max_chars)),
            (Some(value), Some(logs)) => {
                sections.push(format!("Console output:\n{logs}"));
                sections.push(format!("Return value:\n{}", render_value(value, max_chars)));
            }
        },
        Err(failure) => {
            // A thrown value is the script's to size: cut like a returned one.
            sections.push(cut_text(failure.message(), max_chars));
            if let Some(logs) = logs {
                sections.push(format!("Console output before the failure:\n{logs}"));
            }
        }
    }
    if outcome.images_dropped > 0 {
        sections.push(images_dropped_note(outcome.images_dropped, "an Exec result", limits.max_images));
    }
    sections.join("\n\n")
}

fn images_dropped_note(dropped: usize, carrier: &str, max: usize) -> String {
    format!("[{dropped} more image(s) were dropped: {carrier} carries at most {max}]")
}

fn logs_section(outcome: &ExecOutcome) -> Option<String> {
    if outcome.logs.is_empty() && outcome.logs_cut_chars == 0 {
        return None;
    }
    let mut text = outcome.logs.join("\n");
    if outcome.logs_cut_chars > 0 {
        text.push_str(&format!("\n[console output cut: {} more characters not shown]", outcome.logs_cut_chars));
    }
    Some(text)
}

/// The host-only summary of an Exec: `0 tool calls`, `1 tool call`, `N tool calls` (the
/// listed calls and `omitted` others), then the last two names one per line, with a leading
/// `... ` when earlier calls are not listed; `failed` for a failed script.
pub fn calls_summary(calls: &[NestedCall], omitted: usize, ok: bool) -> String {
    if !ok {
        return "failed".to_string();
    }
    let total = calls.len() + omitted;
    let count = match total {
        1 => "1 tool call".to_string(),
        n => format!("{n} tool calls"),
    };
    let shown = &calls[calls.len().saturating_sub(2)..];
    let mut text = if total > 2 { format!("... {count}") } else { count };
    for call in shown {
        text.push('\n');
        text.push_str(&call.name);
    }
    text
}

/// Tool result blocks for one user message answering a turn's calls.
pub fn tool_results_message(results: &[ToolResult]) -> Message {
    Message::new(Role::User, results.iter().map(ToolResult::persisted).collect::<Vec<ContentBlock>>())
}

/// Appends a turn's results to `history`: the tool-result message, then the messages the
/// calls' hooks added ([`ToolResult::messages`]).
pub fn append_results(history: &mut Vec<Message>, results: &[ToolResult]) {
    history.push(tool_results_message(results));
    history.extend(results.iter().flat_map(|result| result.messages.iter().cloned()));
}

#[cfg(test)]
mod tests;
