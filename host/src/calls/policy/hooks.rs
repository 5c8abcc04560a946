//! Hooks as Claude Code runs them: each matching command runs with `sh -c` in the workspace,
//! gets the call as a JSON object on its standard input, and answers with its exit status
//! and output.
//!
//! - `PreToolUse`, exit 2: the call is blocked with `PreToolUse:<tool> hook error: <stderr>`.
//!   Exit 0 with a JSON object on stdout may decide
//!   (`hookSpecificOutput.permissionDecision`: `allow`, `deny`, `ask`, with
//!   `permissionDecisionReason`) and change the input (`hookSpecificOutput.updatedInput`).
//! - `PostToolUse`, exit 2 (or `"decision": "block"` with a `reason`): a message
//!   `PostToolUse:<tool> hook blocking error from command: "<command>": <stderr or reason>`
//!   is added to the conversation; the call's result stands.
//! - Any other failure (another exit status, a timeout, a command that cannot start) is
//!   logged and the call goes on: hooks fail open, as in Claude Code.
//!
//! The hooks of one call run concurrently; what a hook prints is read up to
//! [`HOOK_OUTPUT_BYTES`] per stream. Each runs in a process group and, where the system
//! allows it, a PID namespace of its own (see [`crate::sources::children::contain`]): when the hook
//! ends, is stopped or its call is dropped, everything it started ends too, daemons that
//! left the group with `setsid` included.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::calls::settings::{HookCommand, PermissionMode, Settings};
use crate::support::lock::Unpoisoned;

/// Bytes of a hook's stdout and of its stderr kept; the rest is read and dropped.
pub const HOOK_OUTPUT_BYTES: usize = 64 * 1024;

/// What hooks add to the conversation, collected while a call (or a whole Exec) runs: the
/// text of each note, which the session appends as a meta message.
pub(crate) type Notes = Arc<Mutex<Vec<String>>>;

/// What a hook needs of its session.
#[derive(Clone, Copy)]
pub(crate) struct Context<'a> {
    pub settings: &'a Settings,
    pub cwd: Option<&'a Path>,
    pub session_id: &'a str,
    /// The conversation's transcript, when the embedder keeps one.
    pub transcript_path: Option<&'a Path>,
    /// The call the hook is about: its `tool_use_id` pairs a `PreToolUse` with its
    /// `PostToolUse`.
    pub origin: &'a crate::support::vocabulary::Origin,
}

/// A `PreToolUse` hook's decision.
#[derive(Debug)]
pub(crate) enum Decision {
    Allow,
    Ask(String),
    Deny(String),
}

/// What the `PreToolUse` hooks of a call said.
pub(crate) enum PreOutcome {
    /// Go on with `input` (changed when a hook said so), and the hooks' decision if any.
    Continue { input: Value, decision: Option<Decision> },
    /// A hook blocked the call: this is the message the caller gets.
    Block(String),
}

/// Runs the `PreToolUse` hooks that match `tool`.
pub(crate) async fn pre_tool_use(context: Context<'_>, tool: &str, input: Value, mode: PermissionMode) -> PreOutcome {
    let commands = matching(&context.settings.pre_tool_use, tool);
    if commands.is_empty() {
        return PreOutcome::Continue { input, decision: None };
    }
    let stdin = event(context, "PreToolUse", tool, &input, None, mode);
    let runs = join_all(commands.iter().map(|command| run(command, context.cwd, &stdin))).await;
    let mut input = input;
    let mut decision = None;
    for (command, run) in commands.iter().zip(runs) {
        match run {
            Run::Exited { code: Some(2), stderr, .. } => {
                return PreOutcome::Block(format!("PreToolUse:{tool} hook error: {}", stderr.trim()));
            }
            Run::Exited { code: Some(0), stdout, .. } => {
                let answer = pre_answer(&stdout);
                if let Some(updated) = answer.updated_input {
                    input = updated;
                }
                let Some(this) = answer.decision else { continue };
                // deny over ask over allow, whichever hook said it.
                decision = Some(match (decision, this) {
                    (Some(Decision::Deny(first)), _) => Decision::Deny(first),
                    (_, Decision::Deny(reason)) => Decision::Deny(reason),
                    (Some(Decision::Ask(first)), _) => Decision::Ask(first),
                    (_, this) => this,
                });
            }
            other => other.warn("PreToolUse", tool, command),
        }
    }
    PreOutcome::Continue { input, decision }
}

/// Runs the `PostToolUse` hooks that match `tool`, after a call that succeeded with
/// `response` (the value a script receives); blocking reports go to `notes`.
pub(crate) async fn post_tool_use(
    context: Context<'_>,
    tool: &str,
    input: &Value,
    response: &Value,
    mode: PermissionMode,
    notes: &Notes,
) {
    let commands = matching(&context.settings.post_tool_use, tool);
    if commands.is_empty() {
        return;
    }
    let stdin = event(context, "PostToolUse", tool, input, Some(response), mode);
    let runs = join_all(commands.iter().map(|command| run(command, context.cwd, &stdin))).await;
    for (command, run) in commands.iter().zip(runs) {
        let report = match run {
            Run::Exited { code: Some(2), stderr, .. } => Some(stderr.trim().to_string()),
            Run::Exited { code: Some(0), stdout, .. } => post_block_reason(&stdout),
            other => {
                other.warn("PostToolUse", tool, command);
                None
            }
        };
        if let Some(report) = report {
            let text = format!("PostToolUse:{tool} hook blocking error from command: \"{}\": {report}", command.command);
            notes.locked().push(text);
        }
    }
}

/// The commands of every entry whose matcher matches `tool`, in order.
fn matching<'a>(
    entries: &'a [crate::calls::settings::Sourced<crate::calls::settings::HookMatcher>],
    tool: &str,
) -> Vec<&'a HookCommand> {
    entries.iter().filter(|entry| entry.value.matches(tool)).flat_map(|entry| entry.value.hooks.iter()).collect()
}

/// The JSON object a hook reads on its standard input.
fn event(context: Context<'_>, name: &str, tool: &str, input: &Value, response: Option<&Value>, mode: PermissionMode) -> Vec<u8> {
    let mut object = json!({
        "session_id": context.session_id,
        "cwd": context.cwd.map(|cwd| cwd.display().to_string()),
        "hook_event_name": name,
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": context.origin.tool_use_id(),
        "permission_mode": mode.name(),
    });
    if let Some(transcript) = context.transcript_path {
        object["transcript_path"] = transcript.display().to_string().into();
    }
    if let Some(response) = response {
        object["tool_response"] = response.clone();
    }
    let mut bytes = object.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// What one `PreToolUse` hook's stdout asks for.
#[derive(Debug, Default)]
pub(crate) struct PreAnswer {
    /// `hookSpecificOutput.updatedInput`, when it is an object.
    pub updated_input: Option<Value>,
    pub decision: Option<Decision>,
}

/// Reads a `PreToolUse` hook's stdout: a JSON object in Claude Code's shape (either
/// `hookSpecificOutput.permissionDecision` or the older `decision`), or plain output that
/// asks for nothing.
pub(crate) fn pre_answer(stdout: &str) -> PreAnswer {
    let Some(answer) = json_object(stdout) else { return PreAnswer::default() };
    let specific = answer.get("hookSpecificOutput").and_then(Value::as_object);
    let updated_input = specific.and_then(|s| s.get("updatedInput")).filter(|v| v.is_object()).cloned();
    let reason = specific
        .and_then(|s| s.get("permissionDecisionReason"))
        .or_else(|| answer.get("reason"))
        .and_then(Value::as_str)
        .unwrap_or("no reason given")
        .to_string();
    let said = specific.and_then(|s| s.get("permissionDecision")).or_else(|| answer.get("decision")).and_then(Value::as_str);
    let decision = match said {
        Some("deny" | "block") => Some(Decision::Deny(reason)),
        Some("ask") => Some(Decision::Ask(reason)),
        Some("allow" | "approve") => Some(Decision::Allow),
        _ => None,
    };
    PreAnswer { updated_input, decision }
}

/// Reads a `PostToolUse` hook's stdout: the reason, when it blocks (`"decision": "block"`).
pub(crate) fn post_block_reason(stdout: &str) -> Option<String> {
    json_object(stdout)
        .filter(|answer| answer.get("decision").and_then(Value::as_str) == Some("block"))
        .map(|answer| answer.get("reason").and_then(Value::as_str).unwrap_or("no reason given").to_string())
}

/// A hook's stdout as a JSON object, when it is one; anything else is plain output.
fn json_object(stdout: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(stdout.trim()) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    }
}

/// How a hook command ended.
enum Run {
    Exited { code: Option<i32>, stdout: String, stderr: String },
    TimedOut(Duration),
    Failed(String),
}

impl Run {
    /// Logs a hook that failed open.
    fn warn(&self, event: &str, tool: &str, command: &HookCommand) {
        let what = match self {
            Run::Exited { code, stderr, .. } => {
                format!("exited with {} ({})", code.map_or("a signal".to_string(), |c| format!("status {c}")), stderr.trim())
            }
            Run::TimedOut(limit) => format!("did not finish within {limit:?} and was stopped"),
            Run::Failed(why) => format!("could not run: {why}"),
        };
        tracing::warn!("{event} hook `{}` for `{tool}` {what}; the call goes on", command.command);
    }
}

/// Runs one hook command with `stdin`, within its timeout.
async fn run(command: &HookCommand, cwd: Option<&Path>, stdin: &[u8]) -> Run {
    let mut process = tokio::process::Command::new("sh");
    process.arg("-c").arg(&command.command).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Its own process group, so that stopping it stops what it started too; and, where the
    // system allows, its own PID namespace, which nothing it starts can leave.
    process.kill_on_drop(true).process_group(0).envs(crate::sources::children::IMPORT_PATH_ENV);
    if let Some(cwd) = cwd {
        process.current_dir(cwd);
    }
    crate::sources::children::contain(process.as_std_mut());
    crate::sources::children::no_inherited_descriptors(process.as_std_mut());
    let mut child = match process.spawn() {
        Ok(child) => child,
        Err(e) => return Run::Failed(e.to_string()),
    };
    let _group = child.id().map(Group);
    let (mut input, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let work = async {
        let feed = async {
            if let Some(input) = input.as_mut() {
                // A hook that does not read its input closes the pipe early: not an error.
                let _ = input.write_all(stdin).await;
            }
            drop(input);
        };
        let (_, out, err, status) = tokio::join!(feed, bounded(stdout), bounded(stderr), child.wait());
        (out, err, status)
    };
    match tokio::time::timeout(command.timeout, work).await {
        Ok((stdout, stderr, Ok(status))) => Run::Exited { code: status.code(), stdout, stderr },
        Ok((_, _, Err(e))) => Run::Failed(e.to_string()),
        Err(_) => Run::TimedOut(command.timeout),
    }
}

/// A hook's process group, killed when the hook is done with (it finished, timed out, or
/// the call it belongs to was dropped): nothing a hook starts outlives it.
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.0) {
            // SAFETY: killpg(2) with the id of a process group this host created for the
            // hook; if the group is gone already, it fails with ESRCH and nothing happens.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
    }
}

/// Reads a stream to its end, keeping its first [`HOOK_OUTPUT_BYTES`].
async fn bounded(stream: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut stream) = stream else { return String::new() };
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = HOOK_OUTPUT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
