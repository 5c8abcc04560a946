//! The JSON shapes three model APIs take, rendered from the session's declarations and the
//! provider-neutral [`Message`]s: the Anthropic Messages API, and OpenAI's Responses and
//! Chat Completions APIs with function tools. Shapes only: nothing here talks to a network.
//!
//! Where an API cannot carry something the neutral model has, the rendering says what it
//! does instead:
//! - Anthropic combines consecutive messages of one role into one turn; the rendering does
//!   the same, so the tool results a turn answers come first in the user turn after it.
//! - Chat Completions' `tool` messages carry text only: a tool result's images follow the
//!   tool messages in one user message that names the calls they came from.
//! - With Responses' own deferral, the deferred tools of each MCP server form a namespace
//!   (`mcp__<server>`, holding the tools by their own names), as OpenAI advises for tool
//!   search; the calls in the history are written with their namespace, as the model made
//!   them, and [`Provider::reply`] joins a call's namespace and name back into the tool's
//!   name. [`responses_namespace`] is the one rule for both directions.

use serde_json::{Map, Value, json};

use crate::catalogue::pool::Declaration;
use crate::conversation::message::{ContentBlock, Message, Role};
use crate::sources::tools::Image;
use crate::sources::tools::names::{MCP_PREFIX, split_mcp_name};

/// A model API whose request shape the host can render.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Provider {
    /// `POST /v1/messages`: `system`, `tools`, `messages`.
    Anthropic,
    /// OpenAI `POST /v1/responses`: `instructions`, `tools`, `input`.
    OpenAiResponses,
    /// OpenAI `POST /v1/chat/completions`: `tools`, `messages` (the system prompt first).
    OpenAiChat,
}

/// Anthropic's own search over deferred tools (natural-language queries, BM25), declared
/// beside the tools it reveals.
pub const ANTHROPIC_TOOL_SEARCH: &str = "tool_search_tool_bm25_20251119";

/// The `anthropic-beta` header value the Messages API needs for [`ANTHROPIC_TOOL_SEARCH`].
pub const ANTHROPIC_TOOL_SEARCH_BETA: &str = "advanced-tool-use-2025-11-20";

impl Provider {
    /// The `tools` array with the provider's own deferral, where the API has a search over
    /// deferred tools (the Messages API and Responses): `declared` as they are, the
    /// provider's tool search, and `deferred`, each marked `defer_loading` (for Responses,
    /// an MCP server's in a namespace of its own). `None` for an API without one (Chat
    /// Completions), which keeps the `Exec` path.
    pub fn tools_deferring(self, declared: &[Declaration], deferred: &[Declaration]) -> Option<Value> {
        let search = match self {
            Provider::Anthropic => json!({"type": ANTHROPIC_TOOL_SEARCH, "name": "tool_search_tool_bm25"}),
            Provider::OpenAiResponses => json!({"type": "tool_search"}),
            Provider::OpenAiChat => return None,
        };
        let mut tools: Vec<Value> = declared.iter().map(|declaration| self.tool(declaration)).collect();
        tools.push(search);
        let deferring = |mut tool: Value| {
            if let Some(object) = tool.as_object_mut() {
                object.insert("defer_loading".into(), json!(true));
            }
            tool
        };
        // Namespaces in the order their first tool comes, each with its tools in pool order.
        let mut namespaces: Vec<(String, Vec<Value>)> = Vec::new(); // (server, its tools)
        for declaration in deferred {
            let namespaced = match self {
                Provider::OpenAiResponses => responses_namespace(&declaration.name),
                _ => None,
            };
            match namespaced {
                Some((server, own)) => {
                    let tool = deferring(self.tool(&Declaration { name: own.to_string(), ..declaration.clone() }));
                    match namespaces.iter_mut().find(|(known, _)| known == server) {
                        Some((_, members)) => members.push(tool),
                        None => namespaces.push((server.to_string(), vec![tool])),
                    }
                }
                None => tools.push(deferring(self.tool(declaration))),
            }
        }
        for (server, members) in namespaces {
            tools.push(json!({
                "type": "namespace",
                "name": namespace_of(&server),
                "description": format!("The tools of the MCP server `{server}`."),
                "tools": members,
            }));
        }
        Some(Value::Array(tools))
    }

    /// The `tools` array of a request.
    pub fn tools(self, declarations: &[Declaration]) -> Value {
        Value::Array(declarations.iter().map(|declaration| self.tool(declaration)).collect())
    }

    fn tool(self, declaration: &Declaration) -> Value {
        let Declaration { name, description, input_schema } = declaration;
        match self {
            Provider::Anthropic => json!({"name": name, "description": description, "input_schema": input_schema}),
            Provider::OpenAiResponses => json!({
                "type": "function", "name": name, "description": description, "parameters": input_schema, "strict": false,
            }),
            Provider::OpenAiChat => json!({
                "type": "function", "function": {"name": name, "description": description, "parameters": input_schema},
            }),
        }
    }

    /// The conversation as the API's message list (`messages`, or `input` for Responses).
    /// The system prompt is not part of it, except for Chat Completions, where a non-empty
    /// `system` becomes the first message.
    pub fn messages(self, system: &str, history: &[Message]) -> Value {
        self.messages_naming(system, history, &|_| false)
    }

    /// [`messages`](Self::messages), where a call of a tool for which `namespaced` is true is
    /// written in its namespace (Responses, with its own deferral).
    fn messages_naming(self, system: &str, history: &[Message], namespaced: &dyn Fn(&str) -> bool) -> Value {
        match self {
            Provider::Anthropic => anthropic_messages(history),
            Provider::OpenAiResponses => responses_input(history, namespaced),
            Provider::OpenAiChat => chat_messages(system, history),
        }
    }

    /// A whole request body, without the model and sampling parameters the caller adds.
    pub fn request(self, system: &str, declarations: &[Declaration], history: &[Message]) -> Value {
        self.body(system, self.tools(declarations), self.messages(system, history))
    }

    /// A whole request body with the provider's own deferral (see
    /// [`tools_deferring`](Self::tools_deferring)); `None` for an API without it.
    pub fn request_deferring(
        self,
        system: &str,
        declared: &[Declaration],
        deferred: &[Declaration],
        history: &[Message],
    ) -> Option<Value> {
        let tools = self.tools_deferring(declared, deferred)?;
        let namespaced =
            |name: &str| responses_namespace(name).is_some() && deferred.iter().any(|declaration| declaration.name == name);
        Some(self.body(system, tools, self.messages_naming(system, history, &namespaced)))
    }

    fn body(self, system: &str, tools: Value, messages: Value) -> Value {
        let mut body = Map::new();
        match self {
            Provider::Anthropic => {
                if !system.is_empty() {
                    body.insert("system".into(), json!(system));
                }
                body.insert("tools".into(), tools);
                body.insert("messages".into(), messages);
            }
            Provider::OpenAiResponses => {
                if !system.is_empty() {
                    body.insert("instructions".into(), json!(system));
                }
                body.insert("tools".into(), tools);
                body.insert("input".into(), messages);
            }
            Provider::OpenAiChat => {
                body.insert("tools".into(), tools);
                body.insert("messages".into(), messages);
            }
        }
        Value::Object(body)
    }
}

/// Where a tool goes with Responses' own deferral: an MCP tool into its server's namespace
/// ([`namespace_of`]), under its own name (`read_file`); `None` for other tools. The
/// inverse is [`responses_tool_name`].
fn responses_namespace(name: &str) -> Option<(&str, &str)> {
    split_mcp_name(name)
}

/// The namespace of an MCP server's tools: `mcp__<server>`, so that the namespace, `__` and
/// a tool's own name spell the tool's name.
fn namespace_of(server: &str) -> String {
    format!("{MCP_PREFIX}{server}")
}

/// The tool a Responses call names, with the namespace it was made in, if any.
pub(crate) fn responses_tool_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) if !namespace.is_empty() => format!("{namespace}__{name}"),
        _ => name.to_string(),
    }
}

fn role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn data_url(image: &Image) -> String {
    format!("data:{};base64,{}", image.mime_type, image.base64)
}

fn anthropic_messages(history: &[Message]) -> Value {
    let mut turns: Vec<(Role, Vec<Value>)> = Vec::new();
    for message in history {
        let blocks = message.content.iter().map(anthropic_block);
        match turns.last_mut() {
            Some((last, content)) if *last == message.role => content.extend(blocks),
            _ => turns.push((message.role, blocks.collect())),
        }
    }
    Value::Array(turns.into_iter().map(|(who, content)| json!({"role": role(who), "content": content})).collect())
}

fn anthropic_block(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Image(image) => json!({
            "type": "image", "source": {"type": "base64", "media_type": image.mime_type, "data": image.base64},
        }),
        ContentBlock::ToolUse { id, name, input } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        ContentBlock::ToolResult { tool_use_id, content, is_error } => json!({
            "type": "tool_result", "tool_use_id": tool_use_id,
            "content": content.iter().map(anthropic_block).collect::<Vec<_>>(), "is_error": is_error,
        }),
    }
}

fn responses_input(history: &[Message], namespaced: &dyn Fn(&str) -> bool) -> Value {
    let mut items = Vec::new();
    for message in history {
        let mut parts = Vec::new();
        let flush = |parts: &mut Vec<Value>, items: &mut Vec<Value>| {
            if !parts.is_empty() {
                items.push(json!({"role": role(message.role), "content": std::mem::take(parts)}));
            }
        };
        for block in &message.content {
            match block {
                ContentBlock::Text { text } => parts.push(match message.role {
                    Role::User => json!({"type": "input_text", "text": text}),
                    Role::Assistant => json!({"type": "output_text", "text": text}),
                }),
                ContentBlock::Image(image) => {
                    parts.push(json!({"type": "input_image", "image_url": data_url(image), "detail": "auto"}))
                }
                ContentBlock::ToolUse { id, name, input } => {
                    flush(&mut parts, &mut items);
                    let mut call = json!({"type": "function_call", "call_id": id, "name": name, "arguments": input.to_string()});
                    if namespaced(name)
                        && let Some((server, own)) = responses_namespace(name)
                    {
                        call["namespace"] = json!(namespace_of(server));
                        call["name"] = json!(own);
                    }
                    items.push(call);
                }
                ContentBlock::ToolResult { tool_use_id, content, .. } => {
                    flush(&mut parts, &mut items);
                    let output = match content.as_slice() {
                        [ContentBlock::Text { text }] => json!(text),
                        _ => Value::Array(
                            content
                                .iter()
                                .filter_map(|part| match part {
                                    ContentBlock::Text { text } => Some(json!({"type": "input_text", "text": text})),
                                    ContentBlock::Image(image) => {
                                        Some(json!({"type": "input_image", "image_url": data_url(image), "detail": "auto"}))
                                    }
                                    _ => None,
                                })
                                .collect(),
                        ),
                    };
                    items.push(json!({"type": "function_call_output", "call_id": tool_use_id, "output": output}));
                }
            }
        }
        flush(&mut parts, &mut items);
    }
    Value::Array(items)
}

fn chat_messages(system: &str, history: &[Message]) -> Value {
    let mut messages = Vec::new();
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in history {
        match message.role {
            Role::Assistant => {
                let text = message.text();
                let calls: Vec<Value> = message
                    .tool_uses()
                    .map(|(id, name, input)| {
                        json!({"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}})
                    })
                    .collect();
                let mut rendered = Map::new();
                rendered.insert("role".into(), json!("assistant"));
                // `null` content is allowed only beside tool calls.
                let content = if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) };
                rendered.insert("content".into(), content);
                if !calls.is_empty() {
                    rendered.insert("tool_calls".into(), Value::Array(calls));
                }
                messages.push(Value::Object(rendered));
            }
            Role::User => {
                // Tool results first, as `tool` messages must follow the assistant's calls;
                // then everything else the user turn holds, images of tool results included.
                let mut parts = Vec::new();
                for block in &message.content {
                    match block {
                        ContentBlock::ToolResult { tool_use_id, content, .. } => {
                            let texts: Vec<&str> = content
                                .iter()
                                .filter_map(|part| match part {
                                    ContentBlock::Text { text } => Some(text.as_str()),
                                    _ => None,
                                })
                                .collect();
                            messages.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": texts.join("\n\n")}));
                            let images: Vec<&Image> = content
                                .iter()
                                .filter_map(|part| match part {
                                    ContentBlock::Image(image) => Some(image),
                                    _ => None,
                                })
                                .collect();
                            if !images.is_empty() {
                                parts.push(
                                    json!({"type": "text", "text": format!("Images returned by tool call {tool_use_id}:")}),
                                );
                                parts.extend(images.into_iter().map(chat_image));
                            }
                        }
                        ContentBlock::Text { text } => parts.push(json!({"type": "text", "text": text})),
                        ContentBlock::Image(image) => parts.push(chat_image(image)),
                        ContentBlock::ToolUse { .. } => {}
                    }
                }
                match parts.as_slice() {
                    [] => {}
                    [only] if only["type"] == "text" => messages.push(json!({"role": "user", "content": only["text"]})),
                    _ => messages.push(json!({"role": "user", "content": parts})),
                }
            }
        }
    }
    Value::Array(messages)
}

fn chat_image(image: &Image) -> Value {
    json!({"type": "image_url", "image_url": {"url": data_url(image)}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_deferral_puts_each_servers_tools_in_a_namespace_and_its_calls_come_back_whole() {
        let declaration = |name: &str| Declaration {
            name: name.into(),
            description: format!("{name} does it"),
            input_schema: std::sync::Arc::new(json!({"type": "object"})),
        };
        let declared = [declaration("mcp__fs__pinned")];
        let deferred = [
            declaration("read_file"),
            declaration("mcp__fs__read_file"),
            declaration("mcp__memory__read_graph"),
            declaration("mcp__fs__write_file"),
        ];
        let tools = Provider::OpenAiResponses.tools_deferring(&declared, &deferred).unwrap();
        let summary: Vec<String> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| match tool["type"].as_str().unwrap() {
                "namespace" => format!(
                    "{}[{}]",
                    tool["name"].as_str().unwrap(),
                    tool["tools"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|member| member["name"].as_str().unwrap())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                "function" if tool["defer_loading"] == true => format!("{}*", tool["name"].as_str().unwrap()),
                other => tool["name"].as_str().unwrap_or(other).to_string(),
            })
            .collect();
        assert_eq!(
            summary,
            ["mcp__fs__pinned", "tool_search", "read_file*", "mcp__fs[read_file,write_file]", "mcp__memory[read_graph]"]
        );
        let namespace = &tools[3];
        assert_eq!(namespace["description"], "The tools of the MCP server `fs`.");
        assert_eq!(namespace["tools"][0]["defer_loading"], true, "deferred inside the namespace, not the namespace itself");
        assert_eq!(namespace["tools"][0]["description"], "mcp__fs__read_file does it");
        let anthropic = Provider::Anthropic.tools_deferring(&declared, &deferred).unwrap();
        assert!(anthropic.as_array().unwrap().iter().all(|tool| tool.get("type") != Some(&json!("namespace"))), "flat there");

        // The model's call in a namespace reads as the tool, and is written back as it came;
        // a declared tool's call stays flat.
        let reply = Provider::OpenAiResponses
            .reply(&json!({"status": "completed", "output": [
                {"type": "function_call", "call_id": "c1", "namespace": "mcp__fs", "name": "read_file", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "mcp__fs__pinned", "arguments": "{}"},
            ]}))
            .unwrap();
        let names: Vec<&str> = reply
            .message
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolUse { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["mcp__fs__read_file", "mcp__fs__pinned"]);
        let body = Provider::OpenAiResponses.request_deferring("", &declared, &deferred, &[reply.message]).unwrap();
        assert_eq!(body["input"][0]["namespace"], "mcp__fs");
        assert_eq!(body["input"][0]["name"], "read_file");
        assert_eq!(body["input"][1].get("namespace"), None);
        assert_eq!(body["input"][1]["name"], "mcp__fs__pinned");
        let plain = Provider::OpenAiResponses.request(
            "",
            &declared,
            &[Message::new(Role::Assistant, vec![ContentBlock::tool_use("c", "mcp__fs__read_file", json!({}))])],
        );
        assert_eq!(plain["input"][0]["name"], "mcp__fs__read_file", "without deferral, no namespaces");
    }

    fn image() -> Image {
        Image { mime_type: "image/png".into(), base64: "AAAA".into() }
    }

    /// A turn with a tool call answered by text and an image, then the host's note.
    fn history() -> Vec<Message> {
        vec![
            Message::user("look"),
            Message::new(
                Role::Assistant,
                vec![ContentBlock::text("Looking."), ContentBlock::tool_use("call_1", "shot", json!({"x": 1}))],
            ),
            Message::new(
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: vec![ContentBlock::text("taken"), ContentBlock::Image(image())],
                    is_error: false,
                }],
            ),
            Message::user("note"),
        ]
    }

    #[test]
    fn anthropic_merges_a_role_s_consecutive_messages_tool_results_first() {
        let rendered = Provider::Anthropic.messages("", &history());
        assert_eq!(rendered.as_array().unwrap().len(), 3);
        assert_eq!(rendered[2]["content"][0]["type"], "tool_result");
        assert_eq!(rendered[2]["content"][0]["content"][1]["source"]["media_type"], "image/png");
        assert_eq!(rendered[2]["content"][1], json!({"type": "text", "text": "note"}));
    }

    #[test]
    fn responses_items_carry_calls_and_outputs_with_images() {
        let rendered = Provider::OpenAiResponses.messages("", &history());
        let types: Vec<&str> =
            rendered.as_array().unwrap().iter().map(|item| item["type"].as_str().unwrap_or("message")).collect();
        assert_eq!(types, ["message", "message", "function_call", "function_call_output", "message"]);
        assert_eq!(rendered[2]["arguments"], r#"{"x":1}"#);
        assert_eq!(rendered[3]["output"][1]["image_url"], "data:image/png;base64,AAAA");
    }

    #[test]
    fn chat_puts_tool_messages_first_and_images_after_them() {
        let rendered = Provider::OpenAiChat.messages("be brief", &history());
        let roles: Vec<&str> = rendered.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "user", "user"]);
        assert_eq!(rendered[2]["tool_calls"][0]["function"]["arguments"], r#"{"x":1}"#);
        assert_eq!(rendered[3]["content"], "taken");
        assert_eq!(rendered[4]["content"][0]["text"], "Images returned by tool call call_1:");
        assert_eq!(rendered[5]["content"], "note");
    }
}
