//! A session's result as an MCP tool result: what every plan answers once a call has its
//! result, and what a completed task keeps.

use rmcp::model::{CallToolResult, ContentBlock};

use crate::conversation::render::ToolResult;

/// `result` as an MCP tool result: the announcements first (each a text block of its own),
/// the model's text (and images) as content, the script's value as `structuredContent` when it
/// is an object, `isError` on failure.
pub fn call_tool_result(result: &ToolResult, announcements: Vec<String>) -> CallToolResult {
    let mut content: Vec<ContentBlock> = announcements.into_iter().map(ContentBlock::text).collect();
    content.push(ContentBlock::text(result.model.text.clone()));
    content.extend(result.model.images.iter().map(|image| ContentBlock::image(image.base64.clone(), image.mime_type.clone())));
    let mut answer = if result.is_error() { CallToolResult::error(content) } else { CallToolResult::success(content) };
    if !result.is_error() {
        answer.structured_content = result.value().filter(|value| value.is_object()).cloned();
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::render::{RunningExec, running_result};

    #[test]
    fn announcements_come_first_and_only_a_success_carries_its_object_as_structured_content() {
        let mut result = running_result("c".into(), RunningExec { handle: "h".into(), logs: Vec::new(), calls: 0 });
        result.running = None;
        result.client.ok = true;
        result.client.value = Some(serde_json::json!({"n": 1}));
        result.model.text = "done".into();
        let answer = call_tool_result(&result, vec!["news".into()]);
        let texts: Vec<_> = answer.content.iter().filter_map(|block| block.as_text().map(|text| text.text.clone())).collect();
        assert_eq!(texts, ["news", "done"]);
        assert_eq!(answer.structured_content, Some(serde_json::json!({"n": 1})));
        assert_ne!(answer.is_error, Some(true));
        // A value that is not an object is no structured content.
        result.client.value = Some(serde_json::json!([1]));
        assert_eq!(call_tool_result(&result, Vec::new()).structured_content, None);
        // A failure is an error, and carries no value.
        result.model.is_error = true;
        result.client.ok = false;
        result.client.value = Some(serde_json::json!({"n": 1}));
        let failed = call_tool_result(&result, Vec::new());
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(failed.structured_content, None);
    }
}
