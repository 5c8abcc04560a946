//! `Bash`: a shell command in the workspace, confined (see [`crate::sources::command`]).
//! Named and shaped like Claude Code's tool (`command`, `timeout` in milliseconds,
//! `description`), so its permission rules apply as written. Offered only where the
//! settings turn it on (`enableBash`).
//!
//! A command that exits, with any status, is a result: its output (head and tail within
//! 30,000 characters), its exit code and its time. One that could not start, ran out of
//! time or was aborted is a failure of the execution stage, which still carries what it
//! printed. Each line it prints is a step of the call's progress, and so is a heartbeat
//! every 30 seconds while it is silent.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Backend;
use crate::sources::command::{self, CommandEvent, CommandOutcome, Ended};
use crate::sources::tools::names::BASH;
use crate::sources::tools::params::read_params;
use crate::sources::tools::{CallContext, Effect, Tool, ToolDefinition, ToolOutput, ToolProgress};
use crate::support::vocabulary::ToolError;

const DESCRIPTION: &str = "Runs a shell command (bash) in the workspace and gives its output (standard output and error together, at most 30,000 characters: the start and the end), its exit code and its time. A non-zero exit code is a result, not a failure. The command runs confined: it may write only in the workspace (not in .git or .exec-host) and a private /tmp, read the system's folders, and has no network unless the settings open it; standard input is closed. `timeout` is in milliseconds (default 120000, at most 600000).";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashParams {
    /// The command, as bash reads it.
    command: String,
    /// Milliseconds it may run (default 120000, at most 600000); then it is stopped.
    #[serde(default)]
    timeout: Option<u64>,
    /// What the command does, in a few words (for the person watching).
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
}

/// What a command did.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashOutput {
    /// Its output: whole, or its start and end around a line saying how much was left out.
    output: String,
    /// Its exit code (none when a signal ended it).
    exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<i32>,
    duration_ms: u64,
    /// Bytes it printed in all.
    output_bytes: u64,
    /// Bytes of them left out of `output`.
    omitted_bytes: u64,
}

/// The `Bash` tool of one workspace, whose commands run where its backend runs them.
pub struct Bash {
    definition: ToolDefinition,
    backend: Arc<dyn Backend>,
}

impl Bash {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        let definition = ToolDefinition::from_types::<BashParams, BashOutput>(BASH, DESCRIPTION)
            .expect("the Bash tool's parameters are a Rust struct, whose schema is an object")
            .deferred(true)
            .with_effect(Effect::Other);
        Bash { definition, backend }
    }
}

impl Tool for Bash {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let params: BashParams = read_params(BASH, args)?;
            let timeout = match params.timeout {
                None => command::DEFAULT_TIMEOUT,
                Some(0) => return Err(ToolError::params("Bash: `timeout` must be at least 1 millisecond")),
                Some(ms) => Duration::from_millis(ms).min(command::MAX_TIMEOUT),
            };
            let progress = context.progress.clone();
            let steps = std::sync::atomic::AtomicU64::new(0);
            let watch = move |event: CommandEvent| {
                let Some(progress) = &progress else { return };
                let step = steps.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                let message = match event {
                    CommandEvent::Line(line) => line,
                    CommandEvent::Silent(quiet) => format!("still running, {} s without output", quiet.as_secs()),
                };
                if let Some(step) = ToolProgress::new(step as f64, None, Some(&message)) {
                    progress(step);
                }
            };
            let outcome = self
                .backend
                .command(&params.command, timeout, &context.cancel, &watch)
                .await
                .map_err(|error| ToolError::new(error.stage, format!("Bash: {}", error.message)))?;
            result(outcome, timeout)
        })
    }
}

/// A command's outcome as the tool's: a result when it ended by itself.
fn result(outcome: CommandOutcome, timeout: Duration) -> Result<ToolOutput, ToolError> {
    let stopped = match outcome.ended {
        Ended::Exited => None,
        Ended::TimedOut => Some(format!("it ran out of its time ({} ms) and was stopped", timeout.as_millis())),
        Ended::Aborted => Some("it was killed: the call was aborted".to_string()),
    };
    if let Some(stopped) = stopped {
        let printed = match outcome.output.is_empty() {
            true => "It printed nothing.".to_string(),
            false => format!("Its output:\n{}", outcome.output),
        };
        return Err(ToolError::execution(format!("Bash: the command did not finish: {stopped}. {printed}")));
    }
    let output = BashOutput {
        output: outcome.output,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        duration_ms: outcome.duration.as_millis() as u64,
        output_bytes: outcome.output_bytes,
        omitted_bytes: outcome.omitted_bytes,
    };
    let value =
        serde_json::to_value(output).map_err(|e| ToolError::projection(format!("Bash: the result could not be encoded: {e}")))?;
    Ok(ToolOutput::structured(value))
}
