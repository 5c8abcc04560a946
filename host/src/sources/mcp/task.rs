//! Calling a tool that runs only as a task (MCP 2025-11-25 tasks, a tool whose
//! `execution.taskSupport` is `"required"`): `tools/call` with a `task` parameter creates it,
//! `tasks/get` is polled while it works (its status message reported as progress),
//! `tasks/result` gives its result (and carries the input requests it makes meanwhile),
//! and a caller that stops waiting cancels it with `tasks/cancel`.
//!
//! rmcp's model of a listed tool keeps no `execution` field, so a tool's need for a task is
//! learned from the server's refusal of a plain call (`-32601` naming task augmentation);
//! the tool is called as a task from then on.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ClientRequest, CustomRequest, ErrorCode, ServerResult};
use rmcp::service::ServiceError;
use serde_json::{Map, Value, json};

use super::link::{ServerLink, json_len};
use crate::sources::tools::{ProgressSink, ToolProgress};

/// How long the task is asked to be kept after it is created, in milliseconds.
pub const TASK_TTL_MS: u64 = 10 * 60 * 1000;
/// Longest task id accepted from a server.
pub const MAX_TASK_ID_BYTES: usize = 256;
/// The bounds put on the polling interval a server suggests, and the interval without one.
const MIN_POLL: Duration = Duration::from_millis(100);
const MAX_POLL: Duration = Duration::from_secs(5);
const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// Whether `answer` is the server refusing a plain call of a tool that runs only as a task:
/// a `-32601` error that names tasks, or the same error as an `isError` result (as the
/// TypeScript SDK's servers send it).
pub(crate) fn wants_a_task(answer: &Result<CallToolResult, ServiceError>) -> bool {
    let names_tasks = |message: &str| message.to_ascii_lowercase().contains("task");
    match answer {
        Err(ServiceError::McpError(ErrorData { code: ErrorCode::METHOD_NOT_FOUND, message, .. })) => names_tasks(message),
        Ok(result) if result.is_error == Some(true) => match result.content.as_slice() {
            [only] => only.as_text().is_some_and(|text| text.text.contains("-32601") && names_tasks(&text.text)),
            _ => false,
        },
        _ => false,
    }
}

/// Calls tool `name` with `args` as a task and waits for its result; its status messages go
/// to `progress`. Dropped before the end, the task is cancelled.
pub(crate) async fn call_as_task(
    link: &ServerLink,
    name: &str,
    args: Map<String, Value>,
    progress: Option<&ProgressSink>,
) -> Result<CallToolResult, ServiceError> {
    let params = json!({"name": name, "arguments": args, "task": {"ttl": TASK_TTL_MS}});
    let weight = json_len(&params);
    let created = match link.send(custom("tools/call", params), weight, None).await? {
        // A server may answer at once, without a task.
        ServerResult::CallToolResult(result) => return Ok(result),
        other => as_value(other),
    };
    let task = &created["task"];
    let id = match task["taskId"].as_str() {
        Some(id) if !id.is_empty() && id.len() <= MAX_TASK_ID_BYTES => id.to_string(),
        _ => return Err(ServiceError::UnexpectedResponse),
    };
    let poll = task["pollInterval"].as_u64().map_or(DEFAULT_POLL, Duration::from_millis).clamp(MIN_POLL, MAX_POLL);
    let mut running = Running { link: link.clone(), id: Some(id.clone()) };
    let mut last_message = None::<String>;
    let mut steps = 0u32;
    loop {
        let state = as_value(link.send(custom("tasks/get", json!({"taskId": id})), 0, None).await?);
        // The task's state, flat (`tasks/get`'s result) or under `task`.
        let state = if state.get("status").is_some() { &state } else { &state["task"] };
        let message = state["statusMessage"].as_str().map(str::to_string);
        if let (Some(sink), Some(text)) = (progress, &message)
            && last_message.as_ref() != Some(text)
        {
            steps += 1;
            if let Some(step) = ToolProgress::new(f64::from(steps), None, Some(text)) {
                sink(step);
            }
        }
        last_message = message;
        match state["status"].as_str() {
            Some("working") => tokio::time::sleep(poll).await,
            // Waiting for input, or done: `tasks/result` carries the requests and the end.
            Some(_) => break,
            None => return Err(ServiceError::UnexpectedResponse),
        }
    }
    let result = link.send(custom("tasks/result", json!({"taskId": id})), 0, None).await;
    running.id = None;
    match result? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

fn custom(method: &str, params: Value) -> ClientRequest {
    ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)))
}

/// A result of a request rmcp has no type for, as the JSON the server sent.
fn as_value(result: ServerResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

/// A task still running: cancelled when its caller stops waiting.
struct Running {
    link: ServerLink,
    id: Option<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let link = self.link.clone();
        runtime.spawn(async move {
            if let Err(error) = link.send(custom("tasks/cancel", json!({"taskId": id})), 0, None).await {
                tracing::debug!(server = %link.server, "the task {id} could not be cancelled: {error}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_that_names_task_augmentation_asks_for_a_task() {
        let refused = |code, message: &str| Err(ServiceError::McpError(ErrorData::new(code, message.to_string(), None)));
        let needs = "Tool simulate-research-query requires task augmentation (taskSupport: 'required')";
        assert!(wants_a_task(&refused(ErrorCode::METHOD_NOT_FOUND, needs)));
        assert!(!wants_a_task(&refused(ErrorCode::METHOD_NOT_FOUND, "Tool not found")));
        assert!(!wants_a_task(&refused(ErrorCode::INVALID_PARAMS, "task is missing")));
        let result = |text: &str, error| {
            let content = vec![rmcp::model::ContentBlock::text(text)];
            Ok(if error { CallToolResult::error(content) } else { CallToolResult::success(content) })
        };
        assert!(wants_a_task(&result(&format!("MCP error -32601: {needs}"), true)), "as the TypeScript SDK answers");
        assert!(!wants_a_task(&result(&format!("MCP error -32601: {needs}"), false)), "a result that is no error");
        assert!(!wants_a_task(&result("the task list is empty", true)), "an error of the tool's own");
    }
}
