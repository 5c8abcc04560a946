//! The roles a Python callable plays for a session: a tool, the approver, and the input
//! handler that answers an MCP server's question. Each turns the host's request into plain
//! data, calls the function (`callables`), and reads its answer strictly: an answer that is
//! not one of the documented ones is a refusal that says what came back.

use exec_host::mcp::input::{InputAnswer, InputHandler, InputKind, InputRequest};
use exec_host::{Approval, ApprovalRequest, Approver, BoxFuture, CallContext, Tool, ToolDefinition, ToolError, ToolOutput};
use serde_json::{Map, Value, json};

use crate::callables::PythonFunction;

/// A Python callable as a tool of the session.
pub struct PythonTool {
    pub definition: ToolDefinition,
    pub function: PythonFunction,
}

impl Tool for PythonTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        let about = crate::session::call_about(&context.origin);
        Box::pin(async move {
            let exec = exec_of(&context.origin);
            self.function.call(Value::Object(args), Some(about), exec, Some(&context.cancel)).await.map(ToolOutput::structured)
        })
    }
}

/// The id of the Exec whose script made a call, as the host knows it.
fn exec_of(origin: &exec_host::Origin) -> Option<&str> {
    match origin {
        exec_host::Origin::Nested { exec_call_id, .. } => Some(exec_call_id),
        _ => None,
    }
}

/// A Python callable as the session's approver: given the request (`tool`, `input`, `why`,
/// `rule`, and for a script's call `exec_id` and `call`), it answers `"once"`, `"always"`, `"park"` or `"deny"`, or `{"deny": REASON}`.
/// An exception, or another answer, is a refusal that says so.
pub struct PythonApprover {
    pub function: PythonFunction,
}

impl Approver for PythonApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        let function = self.function.clone();
        Box::pin(async move {
            let about = crate::session::call_about(&request.origin);
            let asked = json!({
                "tool": request.tool,
                "input": request.input,
                "why": request.why,
                "rule": request.rule,
                "exec_id": about["exec_id"],
                "call": about["call"],
            });
            match function.call(asked, None, exec_of(&request.origin), None).await {
                Ok(answer) => approval(answer),
                Err(error) => Approval::Deny { reason: format!("the approver failed: {}", error.message) },
            }
        })
    }
}

/// An approver's answer as an [`Approval`].
pub fn approval(answer: Value) -> Approval {
    match answer {
        Value::String(answer) if answer == "once" => Approval::AllowOnce,
        Value::String(answer) if answer == "always" => Approval::AllowAlways,
        Value::String(answer) if answer == "park" => Approval::Park,
        Value::String(answer) if answer == "deny" => Approval::Deny { reason: "the approver denied it".into() },
        Value::Object(answer) if answer.len() == 1 && answer.get("deny").is_some_and(Value::is_string) => {
            Approval::Deny { reason: answer["deny"].as_str().unwrap_or_default().to_string() }
        }
        other => Approval::Deny {
            reason: format!(
                "the approver answered {other}, not \"once\", \"always\", \"park\", \"deny\" or {{\"deny\": REASON}}"
            ),
        },
    }
}

/// A Python callable that answers an MCP server's question during a call: given `server`,
/// `message`, `kind` (`"form"` with its `schema`, or `"url"` with the `url` to open), it
/// answers `{"accept": VALUES}`, `"decline"` or `"cancel"`. An exception, or another answer,
/// declines.
pub struct PythonInput {
    pub function: PythonFunction,
}

impl InputHandler for PythonInput {
    fn answer(&self, request: InputRequest) -> BoxFuture<'static, InputAnswer> {
        let function = self.function.clone();
        Box::pin(async move {
            let mut asked = json!({ "server": request.server, "message": request.message });
            match &request.kind {
                InputKind::Form { schema, .. } => {
                    asked["kind"] = json!("form");
                    asked["schema"] = schema.clone();
                }
                InputKind::Url(url) => {
                    asked["kind"] = json!("url");
                    asked["url"] = json!(url);
                }
                _ => asked["kind"] = json!("other"),
            }
            match function.call(asked, None, None, None).await {
                Ok(Value::String(answer)) if answer == "cancel" => InputAnswer::Cancel,
                Ok(Value::Object(mut answer)) if answer.len() == 1 && answer.get("accept").is_some_and(Value::is_object) => {
                    match answer.remove("accept") {
                        Some(Value::Object(values)) => InputAnswer::Accept(values),
                        _ => InputAnswer::Decline,
                    }
                }
                _ => InputAnswer::Decline,
            }
        })
    }
}
