//! A model's reply as each API returns it, read into the provider-neutral [`Message`]: the
//! other half of [`Provider`]'s request rendering. An embedder posts
//! [`Provider::request`] and passes the response body to [`Provider::reply`]; the
//! assistant message goes into the history as it is, and its `ToolUse` blocks go to the
//! session as calls.
//!
//! What the neutral model cannot carry is named in [`Reply::skipped`] rather than lost
//! silently: Anthropic's `thinking` blocks and server tool blocks, OpenAI's `reasoning`
//! items. A tool call whose arguments are not JSON keeps them as a string, so the session
//! refuses the call with a sentence the model reads, instead of the reply failing.

use serde_json::{Map, Value};

use crate::conversation::message::{ContentBlock, Message, Role};
use crate::conversation::provider::Provider;

/// Why a model stopped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It asked for tool calls: run them and send their results.
    ToolUse,
    /// It ran out of output tokens.
    MaxTokens,
    /// It refused, or the provider filtered its output.
    Refusal,
    /// Another reason, as the provider names it.
    Other(String),
}

/// One reply of a model.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Reply {
    /// The assistant message: text and tool calls, in the order the model gave them.
    pub message: Message,
    pub stop: StopReason,
    /// The kinds of content the neutral message does not carry, as the provider names them,
    /// once each.
    pub skipped: Vec<String>,
}

/// Why a response body is not a reply.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// The provider answered with an error object.
    #[error("the provider answered with an error: {0}")]
    Provider(String),
    /// The body lacks what every reply of this API has.
    #[error("not a reply of the {api}: {why}")]
    Shape { api: &'static str, why: String },
}

impl Provider {
    /// Reads the response body of [`Provider::request`] into a [`Reply`].
    pub fn reply(self, body: &Value) -> Result<Reply, ReplyError> {
        if let Some(error) = body.get("error").filter(|error| !error.is_null()) {
            let message = error.get("message").and_then(Value::as_str).map_or_else(|| error.to_string(), str::to_string);
            return Err(ReplyError::Provider(message));
        }
        let mut read = Read::default();
        let stop = match self {
            Provider::Anthropic => anthropic(body, &mut read)?,
            Provider::OpenAiResponses => responses(body, &mut read)?,
            Provider::OpenAiChat => chat(body, &mut read)?,
        };
        Ok(Reply { message: Message::new(Role::Assistant, read.content), stop, skipped: read.skipped })
    }
}

#[derive(Default)]
struct Read {
    content: Vec<ContentBlock>,
    skipped: Vec<String>,
}

impl Read {
    fn text(&mut self, text: &str) {
        if !text.is_empty() {
            self.content.push(ContentBlock::text(text));
        }
    }

    /// A call whose arguments came as JSON text.
    fn call(&mut self, id: &str, name: &str, arguments: &str) {
        let input = match serde_json::from_str::<Value>(arguments) {
            Ok(input) => input,
            Err(_) if arguments.trim().is_empty() => Value::Object(Map::new()),
            Err(_) => Value::String(arguments.to_string()),
        };
        self.content.push(ContentBlock::tool_use(id, name, input));
    }

    fn skip(&mut self, kind: &str) {
        if !self.skipped.iter().any(|known| known == kind) {
            self.skipped.push(kind.to_string());
        }
    }
}

fn shape(api: &'static str, why: impl Into<String>) -> ReplyError {
    ReplyError::Shape { api, why: why.into() }
}

fn text_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Messages API: `content` blocks and `stop_reason`.
fn anthropic(body: &Value, read: &mut Read) -> Result<StopReason, ReplyError> {
    const API: &str = "Anthropic Messages API";
    let blocks = body.get("content").and_then(Value::as_array).ok_or_else(|| shape(API, "no `content` array"))?;
    for block in blocks {
        match text_of(block, "type") {
            "text" => read.text(text_of(block, "text")),
            "tool_use" => {
                let input = block.get("input").cloned().unwrap_or_else(|| Value::Object(Map::new()));
                read.content.push(ContentBlock::tool_use(text_of(block, "id"), text_of(block, "name"), input));
            }
            other => read.skip(other),
        }
    }
    Ok(match text_of(body, "stop_reason") {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_string()),
    })
}

/// Responses API: `output` items and `status` (with `incomplete_details`).
fn responses(body: &Value, read: &mut Read) -> Result<StopReason, ReplyError> {
    const API: &str = "OpenAI Responses API";
    let items = body.get("output").and_then(Value::as_array).ok_or_else(|| shape(API, "no `output` array"))?;
    let mut refused = false;
    for item in items {
        match text_of(item, "type") {
            "message" => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    match text_of(part, "type") {
                        "output_text" => read.text(text_of(part, "text")),
                        "refusal" => {
                            refused = true;
                            read.text(text_of(part, "refusal"));
                        }
                        other => read.skip(other),
                    }
                }
            }
            "function_call" => {
                let namespace = item.get("namespace").and_then(Value::as_str);
                let name = crate::conversation::provider::responses_tool_name(namespace, text_of(item, "name"));
                read.call(text_of(item, "call_id"), &name, text_of(item, "arguments"))
            }
            other => read.skip(other),
        }
    }
    let calls = read.content.iter().any(|block| matches!(block, ContentBlock::ToolUse { .. }));
    Ok(match text_of(body, "status") {
        "completed" if calls => StopReason::ToolUse,
        "completed" if refused => StopReason::Refusal,
        "completed" => StopReason::EndTurn,
        "incomplete" => match body.pointer("/incomplete_details/reason").and_then(Value::as_str).unwrap_or_default() {
            "max_output_tokens" => StopReason::MaxTokens,
            "content_filter" => StopReason::Refusal,
            other => StopReason::Other(format!("incomplete: {other}")),
        },
        other => StopReason::Other(other.to_string()),
    })
}

/// Chat Completions: the first choice's `message` and `finish_reason`.
fn chat(body: &Value, read: &mut Read) -> Result<StopReason, ReplyError> {
    const API: &str = "OpenAI Chat Completions API";
    let choice = body.pointer("/choices/0").ok_or_else(|| shape(API, "no `choices`"))?;
    let message = choice.get("message").ok_or_else(|| shape(API, "the first choice has no `message`"))?;
    read.text(text_of(message, "content"));
    let refusal = text_of(message, "refusal");
    read.text(refusal);
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        match text_of(call, "type") {
            "function" => {
                let function = call.get("function").unwrap_or(&Value::Null);
                read.call(text_of(call, "id"), text_of(function, "name"), text_of(function, "arguments"));
            }
            other => read.skip(other),
        }
    }
    Ok(match text_of(choice, "finish_reason") {
        "stop" if !refusal.is_empty() => StopReason::Refusal,
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stop(provider: Provider, body: Value) -> StopReason {
        provider.reply(&body).unwrap().stop
    }

    #[test]
    fn each_api_s_stop_reasons_are_read() {
        let anthropic = |reason: &str| stop(Provider::Anthropic, json!({"content": [], "stop_reason": reason}));
        assert_eq!(anthropic("end_turn"), StopReason::EndTurn);
        assert_eq!(anthropic("max_tokens"), StopReason::MaxTokens);
        assert_eq!(anthropic("refusal"), StopReason::Refusal);
        assert_eq!(anthropic("pause_turn"), StopReason::Other("pause_turn".into()));

        let responses = |body: Value| stop(Provider::OpenAiResponses, body);
        assert_eq!(responses(json!({"status": "completed", "output": []})), StopReason::EndTurn);
        let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []});
        assert_eq!(responses(cut), StopReason::MaxTokens);
        let refused =
            json!({"status": "completed", "output": [{"type": "message", "content": [{"type": "refusal", "refusal": "No."}]}]});
        assert_eq!(responses(refused.clone()), StopReason::Refusal);
        assert_eq!(Provider::OpenAiResponses.reply(&refused).unwrap().message.content, vec![ContentBlock::text("No.")]);

        let chat = |reason: &str| {
            stop(Provider::OpenAiChat, json!({"choices": [{"message": {"content": "x"}, "finish_reason": reason}]}))
        };
        assert_eq!(chat("stop"), StopReason::EndTurn);
        assert_eq!(chat("length"), StopReason::MaxTokens);
        assert_eq!(chat("content_filter"), StopReason::Refusal);
    }

    #[test]
    fn an_error_body_or_a_body_of_another_api_is_refused_with_a_sentence() {
        let error = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert_eq!(Provider::Anthropic.reply(&error).unwrap_err().to_string(), "the provider answered with an error: Overloaded");
        let chat_body = json!({"choices": []});
        let refused = Provider::OpenAiResponses.reply(&chat_body).unwrap_err().to_string();
        assert_eq!(refused, "not a reply of the OpenAI Responses API: no `output` array");
        assert!(Provider::OpenAiChat.reply(&chat_body).unwrap_err().to_string().contains("no `choices`"));
    }

    #[test]
    fn arguments_that_are_not_json_stay_a_string_and_empty_ones_an_empty_object() {
        let body = json!({"choices": [{"message": {"tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": ""}},
            {"id": "b", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": "}},
            {"id": "c", "type": "custom", "custom": {"name": "x", "input": "y"}}
        ]}, "finish_reason": "tool_calls"}]});
        let reply = Provider::OpenAiChat.reply(&body).unwrap();
        assert_eq!(
            reply.message.content,
            vec![ContentBlock::tool_use("a", "ls", json!({})), ContentBlock::tool_use("b", "ls", json!("{\"path\": "))]
        );
        assert_eq!(reply.skipped, ["custom"]);
    }
}
