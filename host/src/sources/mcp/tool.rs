//! One MCP server tool as a [`Tool`]: its definition read from `tools/list`, its calls sent
//! as `tools/call`, and its answers turned into what a script receives.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock, ErrorCode, ResourceContents,
    ServerResult,
};
use rmcp::service::ServiceError;
use serde_json::{Map, Value};

use super::callers::Answers;
use super::link::{ServerLink, json_len};
use super::task;
use crate::sources::tools::input::{InputAnswer, InputHandler, InputRequest};
use crate::sources::tools::{CallContext, DefinitionError, Image, ProgressSink, Tool, ToolDefinition, ToolOutput, ToolSource};
use crate::support::vocabulary::ToolError;

/// `_meta` key a server sets on a tool that must never be deferred.
pub const ALWAYS_LOAD_META: &str = "anthropic/alwaysLoad";
/// `_meta` key carrying a tool's search hint.
pub const SEARCH_HINT_META: &str = "anthropic/searchHint";

/// Arguments up to this size are kept while a call is in flight, for a second attempt when
/// the server refuses a plain call of a tool that runs only as a task; a larger call so
/// refused fails once, and the tool is called as a task from then on.
const RETRY_COPY_BYTES: usize = 64 * 1024;

/// Longest message of a declined input request kept for a call's record, in characters.
const MAX_NOTED_MESSAGE_CHARS: usize = 120;

/// Most rounds of input requests (`InputRequiredResult`, 2026-07-28) one call answers.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// What a server answered a `tools/call`.
enum Answer {
    Complete(CallToolResult),
    /// It needs input first: answer its requests and send the call again.
    InputRequired(rmcp::model::InputRequiredResult),
}

/// A tool of a connected MCP server.
pub struct McpTool {
    definition: ToolDefinition,
    /// The tool's name on its server (without the `mcp__<server>__` prefix).
    remote_name: Arc<str>,
    link: ServerLink,
    /// Set once the server said the tool runs only as a task (see [`super::task`]).
    as_task: AtomicBool,
}

/// A tool a server listed that cannot be offered, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedTool {
    pub name: String,
    pub reason: String,
}

/// The tools of one `tools/list` answer, and the ones refused (invalid schema or name,
/// listed twice). `always_load` is the server's own flag from its configuration.
pub fn tools_of(link: &ServerLink, listed: Vec<rmcp::model::Tool>, always_load: bool) -> (Vec<Arc<dyn Tool>>, Vec<SkippedTool>) {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut skipped = Vec::new();
    let mut seen = HashSet::new();
    let server = &*link.server;
    for tool in listed {
        let remote_name = tool.name.to_string();
        if !seen.insert(remote_name.clone()) {
            skipped.push(SkippedTool { name: remote_name, reason: "the server lists it twice; the first is kept".into() });
            continue;
        }
        match definition_of(server, &tool, always_load) {
            Ok(definition) => tools.push(Arc::new(McpTool {
                definition,
                remote_name: remote_name.into(),
                link: link.clone(),
                as_task: AtomicBool::new(false),
            })),
            Err(error) => skipped.push(SkippedTool { name: remote_name, reason: error.reason() }),
        }
    }
    (tools, skipped)
}

/// The definition of a listed tool: `mcp__<server>__<tool>`, its description, schemas and
/// the `_meta` keys this host reads.
pub fn definition_of(
    server: &str,
    tool: &rmcp::model::Tool,
    server_always_load: bool,
) -> Result<ToolDefinition, DefinitionError> {
    let name = crate::sources::tools::names::mcp_name(server, &tool.name);
    let description = tool.description.as_deref().or(tool.title.as_deref()).unwrap_or_default();
    let input_schema = Value::Object((*tool.input_schema).clone());
    let meta = tool.meta.as_ref().map(|meta| &meta.0);
    let always_load = meta.and_then(|m| m.get(ALWAYS_LOAD_META)).and_then(Value::as_bool).unwrap_or(false);
    let search_hint = meta.and_then(|m| m.get(SEARCH_HINT_META)).and_then(Value::as_str).map(str::trim).filter(|h| !h.is_empty());
    let mut definition = ToolDefinition::new(name, description, input_schema)?
        .deferred(true)
        .always_load(server_always_load || always_load)
        .with_source(ToolSource::Mcp { server: server.to_string() });
    if let Some(schema) = &tool.output_schema {
        definition = definition.with_output_schema(Value::Object((**schema).clone()));
    }
    if let Some(hint) = search_hint {
        definition = definition.with_search_hint(hint);
    }
    Ok(definition)
}

impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            // What the server asks during this call goes to the client that made it; with
            // nobody to ask, it is declined and the call's record says so.
            let unanswered = match (&context.input, self.link.callers.can_answer()) {
                (None, false) => Some(Arc::new(Unanswered::default())),
                _ => None,
            };
            let handler = context.input.clone().or_else(|| unanswered.clone().map(|u| u as Arc<dyn InputHandler>));
            let _caller = handler.map(|handler| self.link.callers.enter(handler));
            let result = self.attempts(args, &context).await;
            let Some(note) = unanswered.and_then(|unanswered| unanswered.note()) else { return result };
            match result {
                Ok(mut output) => {
                    output.note = Some(note);
                    Ok(output)
                }
                Err(mut error) => {
                    error.message = format!("{} ({note})", error.message);
                    Err(error)
                }
            }
        })
    }
}

impl McpTool {
    /// The call sent until it has an answer: again after a sign-in, an input round, or a refusal
    /// that asks for a task.
    async fn attempts(&self, mut args: Map<String, Value>, context: &CallContext) -> Result<ToolOutput, ToolError> {
        let weight = json_len(&args);
        // A server of 2026-07-28 asks for input by answering `InputRequiredResult`; the
        // call is sent again with the answers, up to a bound.
        let mut answers = None;
        let mut rounds = 0;
        loop {
            let as_task = self.as_task.load(Ordering::Relaxed);
            // The arguments are kept for a second attempt only where one may come: after a
            // sign-in, an input round, or a plain call refused because the tool runs only
            // as a task.
            let may_resend = self.link.may_send_again() || (!as_task && weight <= RETRY_COPY_BYTES);
            let sent = if may_resend { args.clone() } else { std::mem::take(&mut args) };
            let progress = context.progress.as_ref();
            let answer = match as_task {
                true => task::call_as_task(&self.link, &self.remote_name, sent, progress).await,
                false => match self.send(sent, weight, progress, answers.take()).await {
                    Ok(Answer::InputRequired(asked)) => {
                        rounds += 1;
                        if rounds > MAX_INPUT_ROUNDS {
                            return Err(ToolError::execution(format!(
                                "MCP server `{}` asked for input more than {MAX_INPUT_ROUNDS} times in one call of `{}`",
                                self.link.server, self.remote_name
                            )));
                        }
                        answers = Some(self.link.callers.answer_all(asked).await.map_err(|why| {
                            ToolError::execution(format!(
                                "MCP server `{}`, calling `{}`: {why}",
                                self.link.server, self.remote_name
                            ))
                        })?);
                        continue;
                    }
                    Ok(Answer::Complete(result)) => Ok(result),
                    Err(error) => Err(error),
                },
            };
            if !as_task && task::wants_a_task(&answer) {
                self.as_task.store(true, Ordering::Relaxed);
                if may_resend {
                    continue;
                }
                return Err(ToolError::execution(format!(
                    "MCP server `{}` runs `{}` only as a task, which it said when refusing this call; \
                     it is called as one from now on, so calling it again works",
                    self.link.server, self.remote_name
                )));
            }
            match answer {
                Ok(result) => return output_of(&self.link.server, &self.remote_name, result),
                Err(error) => {
                    // Refused with an OAuth challenge: signed in again, the call is sent again.
                    if let Some(signed_in) = self.link.signed_in_again(&error).await {
                        signed_in.map_err(|error| ToolError::execution(crate::support::report::error_sentence(&error)))?;
                        continue;
                    }
                    if matches!(error, ServiceError::TransportClosed | ServiceError::TransportSend(_)) {
                        self.link.suspect.notify_one();
                    }
                    return Err(call_failed(&self.link.server, &self.remote_name, error));
                }
            }
        }
    }

    /// Sends one `tools/call`, with the answers to the server's last input requests when
    /// there are some; the progress the server reports for it goes to `progress`.
    async fn send(
        &self,
        args: Map<String, Value>,
        weight: usize,
        progress: Option<&ProgressSink>,
        answers: Option<Answers>,
    ) -> Result<Answer, ServiceError> {
        let mut params = CallToolRequestParams::new(self.remote_name.to_string()).with_arguments(args);
        if let Some(Answers { responses, state }) = answers {
            params.input_responses = Some(responses);
            params.request_state = state;
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        match self.link.send(request, weight, progress).await? {
            ServerResult::CallToolResult(result) => Ok(Answer::Complete(result)),
            ServerResult::InputRequiredResult(asked) => Ok(Answer::InputRequired(asked)),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }
}

/// What the script receives from a `tools/call` answer (spec: structured content, else the
/// text, else `null`; images go to the Exec's attachments; `isError` rejects with the text).
pub fn output_of(server: &str, tool: &str, result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(text) => texts.push(text.text),
            ContentBlock::Image(image) => images.push(Image { mime_type: image.mime_type, base64: image.data }),
            ContentBlock::Audio(audio) => {
                texts.push(format!("[audio ({}, {} bytes of base64) not shown]", audio.mime_type, audio.data.len()))
            }
            ContentBlock::Resource(embedded) => texts.push(match embedded.resource {
                ResourceContents::TextResourceContents { uri, mime_type, text, .. } => {
                    format!("[resource {uri}{}]\n{text}", mime_suffix(mime_type.as_deref()))
                }
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                    format!(
                        "[resource {uri}{}: {} bytes of base64 data not shown]",
                        mime_suffix(mime_type.as_deref()),
                        blob.len()
                    )
                }
                _ => "[a resource of a kind this host cannot show]".to_string(),
            }),
            ContentBlock::ResourceLink(link) => {
                let mut line = format!("[resource link {}: {}", link.uri, link.title.as_deref().unwrap_or(&link.name));
                if let Some(description) = link.description.filter(|d| !d.is_empty()) {
                    line.push_str(" - ");
                    line.push_str(&description);
                }
                line.push_str(&mime_suffix(link.mime_type.as_deref()));
                line.push(']');
                texts.push(line);
            }
            _ => texts.push("[content of a kind this host cannot show]".to_string()),
        }
    }
    let text = (!texts.is_empty()).then(|| texts.join("\n"));
    if result.is_error == Some(true) {
        let message = match text {
            Some(text) if !text.trim().is_empty() => text,
            _ => format!("`{tool}` of MCP server `{server}` reported an error without a message"),
        };
        return Err(ToolError::execution(message));
    }
    let mut output = ToolOutput::empty().with_images(images);
    output.structured = result.structured_content;
    output.text = text;
    Ok(output)
}

fn mime_suffix(mime_type: Option<&str>) -> String {
    mime_type.map(|m| format!(" ({m})")).unwrap_or_default()
}

/// A `tools/call` that got no result: the stage and a message naming the server.
fn call_failed(server: &str, tool: &str, error: ServiceError) -> ToolError {
    match error {
        ServiceError::McpError(error) if super::stdio::is_unreadable(&error) => ToolError::execution(format!(
            "MCP server `{server}` answered `{tool}` with a message this host cannot read: {}",
            error.message
        )),
        ServiceError::UnexpectedResponse => {
            ToolError::execution(format!("MCP server `{server}` answered `{tool}` with something that is not a tool result"))
        }
        ServiceError::McpError(error) if error.code == ErrorCode::INVALID_PARAMS => {
            ToolError::params(format!("MCP server `{server}` refused the arguments of `{tool}`: {}", error.message))
        }
        ServiceError::McpError(error) if error.code == ErrorCode::METHOD_NOT_FOUND => {
            ToolError::discovery(format!("MCP server `{server}` does not know `{tool}`: {}", error.message))
        }
        ServiceError::McpError(error) => {
            ToolError::execution(format!("MCP server `{server}` failed `{tool}`: {} (error {})", error.message, error.code.0))
        }
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            ToolError::execution(format!("MCP server `{server}` disconnected before answering `{tool}`"))
        }
        other => ToolError::execution(format!("MCP server `{server}` failed `{tool}`: {other}")),
    }
}

/// The input handler of a call nobody can answer for: each request is declined, and kept for
/// the call's record.
#[derive(Default)]
struct Unanswered(std::sync::Mutex<Vec<String>>);

impl Unanswered {
    /// What the call's record says of the requests declined, if there were any.
    fn note(&self) -> Option<String> {
        let asked = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let first = asked.first()?;
        let more = match asked.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        Some(format!("the server asked for input ({first:?}{more}), and nobody here could answer: declined"))
    }
}

impl InputHandler for Unanswered {
    fn answer(&self, request: InputRequest) -> BoxFuture<'static, InputAnswer> {
        tracing::warn!(server = %request.server, "the server asked for input, and nobody here can answer: declined");
        let message = crate::support::text::cut_chars(&request.message, MAX_NOTED_MESSAGE_CHARS);
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(message);
        Box::pin(std::future::ready(InputAnswer::Decline))
    }
}

#[cfg(test)]
mod tests;
