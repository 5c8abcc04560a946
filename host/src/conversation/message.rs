//! A provider-neutral conversation: messages with a role, content blocks (text, image, tool
//! use, tool result) and a metadata map the host writes its markers into.
//!
//! The session reads a history in this shape ([`Session::prepare`](crate::Session::prepare))
//! and gives back messages in it; [`crate::conversation::provider`] renders it for the Anthropic Messages
//! API and OpenAI's Responses and Chat Completions APIs. It serialises with serde, so an
//! agent can store its history as JSON and the host's markers survive a restart.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::sources::tools::Image;

/// Metadata key of a message the host wrote for the model (not the user's words): the
/// announcement, and later notes of hooks. The spec calls these `isMeta` messages.
pub const META_KEY: &str = "exec-host/meta";

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
    /// What the host (or the embedding) keeps beside the message; never sent to a model.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

/// Who a message is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    User,
    Assistant,
}

/// One block of a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    Text {
        text: String,
    },
    /// An image, base64-encoded.
    Image(Image),
    /// A tool call of the model's.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// The result of the tool call `tool_use_id`: text and images.
    ToolResult {
        tool_use_id: String,
        content: Vec<ContentBlock>,
        #[serde(default)]
        is_error: bool,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ContentBlock::ToolUse { id: id.into(), name: name.into(), input }
    }
}

impl Message {
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Message { role, content, metadata: Map::new() }
    }

    /// A user message of one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Message::new(Role::User, vec![ContentBlock::text(text)])
    }

    /// An assistant message of one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message::new(Role::Assistant, vec![ContentBlock::text(text)])
    }

    pub fn with_metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// A host-written user message (an `isMeta` message in the spec's words).
    pub(crate) fn meta(text: String) -> Self {
        Message::new(Role::User, vec![ContentBlock::Text { text }]).with_metadata(META_KEY, Value::Bool(true))
    }

    /// Whether the host wrote this message for the model.
    pub fn is_meta(&self) -> bool {
        self.metadata.get(META_KEY) == Some(&Value::Bool(true))
    }

    /// The text of every text block, joined by blank lines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n\n")
    }

    /// The tool calls of an assistant message, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_round_trip_through_json_with_their_metadata() {
        let message = Message::new(
            Role::User,
            vec![
                ContentBlock::ToolResult {
                    tool_use_id: "toolu_1".into(),
                    content: vec![
                        ContentBlock::text("done"),
                        ContentBlock::Image(Image { mime_type: "image/png".into(), base64: "AAAA".into() }),
                    ],
                    is_error: false,
                },
                ContentBlock::text("and a note"),
            ],
        )
        .with_metadata("exec-host/announcement", json!({"kind": "catalogue"}));
        let text = serde_json::to_value(&message).unwrap();
        assert_eq!(
            text,
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": false, "content": [
                    {"type": "text", "text": "done"}, {"type": "image", "mimeType": "image/png", "bytes": "AAAA"}]},
                {"type": "text", "text": "and a note"}],
             "metadata": {"exec-host/announcement": {"kind": "catalogue"}}})
        );
        assert_eq!(serde_json::from_value::<Message>(text).unwrap(), message);
        let plain: Message = serde_json::from_value(json!({"role": "assistant", "content": []})).unwrap();
        assert!(plain.metadata.is_empty() && !plain.is_meta());
    }
}
