//! The roles a package's callable plays for a session: a tool, the approver, and the input
//! handler that answers an MCP server's question. Each turns the host's request into plain
//! data, calls the function, and reads its answer strictly: an answer that is not one of the
//! documented ones is a refusal that says what came back.

use std::future::Future;

use exec_host::mcp::input::{InputAnswer, InputHandler, InputKind, InputRequest};
use exec_host::{
    Approval, ApprovalRequest, Approver, BoxFuture, CallContext, CancellationToken, Tool, ToolDefinition, ToolError, ToolOutput,
};
use serde_json::{Map, Value, json};

use crate::calls::{call_about, exec_of};

/// A function of the host language, called with one JSON argument.
pub trait Callable: Clone + Send + Sync + 'static {
    /// Calls it with `args` (and `about`, when given, as a second argument), for the Exec
    /// `exec` (the id the host knows) when a script's call; `cancel` ends the wait.
    fn call(
        &self,
        args: Value,
        about: Option<Value>,
        exec: Option<&str>,
        cancel: Option<&CancellationToken>,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send;
}

/// A callable as a tool of the session: called with the arguments and what [`call_about`]
/// tells of the call; what it returns is the call's structured result.
pub struct CallableTool<F> {
    pub definition: ToolDefinition,
    pub function: F,
}

impl<F: Callable> Tool for CallableTool<F> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let about = call_about(&context.origin);
            let exec = exec_of(&context.origin);
            self.function.call(Value::Object(args), Some(about), exec, Some(&context.cancel)).await.map(ToolOutput::structured)
        })
    }
}

/// A callable as the session's approver: given the request (`tool`, `input`, `why`, `rule`,
/// and for a script's call `exec_id` and `call`), it answers as [`approval`] reads. A failure
/// is a refusal that says so.
pub struct CallableApprover<F> {
    pub function: F,
}

impl<F: Callable> Approver for CallableApprover<F> {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        let function = self.function.clone();
        Box::pin(async move {
            let about = call_about(&request.origin);
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

/// An approver's answer as an [`Approval`]: `"once"`, `"always"`, `"park"`, `"deny"` or
/// `{"deny": REASON}`; anything else denies, saying what came back.
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

/// A callable that answers an MCP server's question during a call: given `server`,
/// `message`, `kind` (`"form"` with its `schema`, or `"url"` with the `url` to open), it
/// answers as [`input_answer`] reads. A failure declines.
pub struct CallableInput<F> {
    pub function: F,
}

impl<F: Callable> InputHandler for CallableInput<F> {
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
                Ok(answer) => input_answer(answer),
                Err(_) => InputAnswer::Decline,
            }
        })
    }
}

/// An input handler's answer: `{"accept": VALUES}`, `"decline"` or `"cancel"`; anything else
/// declines.
pub fn input_answer(answer: Value) -> InputAnswer {
    match answer {
        Value::String(answer) if answer == "cancel" => InputAnswer::Cancel,
        Value::Object(mut answer) if answer.len() == 1 && answer.get("accept").is_some_and(Value::is_object) => {
            match answer.remove("accept") {
                Some(Value::Object(values)) => InputAnswer::Accept(values),
                _ => InputAnswer::Decline,
            }
        }
        _ => InputAnswer::Decline,
    }
}
