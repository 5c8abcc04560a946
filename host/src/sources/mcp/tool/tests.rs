use super::*;
use rmcp::model::{MetaObject, Resource};
use serde_json::json;

fn listed(value: Value) -> rmcp::model::Tool {
    serde_json::from_value(value).unwrap()
}

#[test]
fn definitions_keep_names_schemas_and_meta() {
    let tool = listed(json!({
        "name": "get-user.profile", "description": "Profile of a user",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
        "outputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        "_meta": {"anthropic/alwaysLoad": true, "anthropic/searchHint": "account person"}
    }));
    let definition = definition_of("crm", &tool, false).unwrap();
    assert_eq!(definition.name, "mcp__crm__get-user.profile");
    assert_eq!(definition.description, "Profile of a user");
    assert!(definition.always_load && definition.defer);
    assert_eq!(definition.search_hint.as_deref(), Some("account person"));
    assert_eq!(definition.source, ToolSource::Mcp { server: "crm".into() });
    assert!(definition.output_schema.is_some());

    let plain = listed(json!({"name": "t", "inputSchema": {"type": "object"}}));
    assert!(!definition_of("crm", &plain, false).unwrap().always_load);
    assert!(definition_of("crm", &plain, true).unwrap().always_load, "the server's flag covers every tool");
}

#[test]
fn invalid_tools_are_skipped_with_a_reason() {
    let bad = listed(json!({"name": "bad", "inputSchema": {"type": "string"}}));
    let err = definition_of("s", &bad, false).unwrap_err().reason();
    assert!(err.starts_with("its input schema must be") && err.contains("top level is an object"), "{err}");
    let spaced = listed(json!({"name": "two words", "inputSchema": {"type": "object"}}));
    let err = definition_of("s", &spaced, false).unwrap_err();
    assert!(matches!(&err, DefinitionError::InvalidName { name, .. } if name == "mcp__s__two words"), "{err:?}");
    assert!(err.reason().starts_with("its name is not valid") && err.reason().contains("whitespace"), "{err}");
    // A name a server rule could not cover is refused at registration.
    let empty = listed(json!({"name": "", "inputSchema": {"type": "object"}}));
    assert!(definition_of("s", &empty, false).unwrap_err().reason().contains("mcp__<server>__<tool>"));
    let odd = listed(json!({"name": "__", "inputSchema": {"type": "object"}}));
    assert_eq!(definition_of("s", &odd, false).unwrap().name, "mcp__s____", "odd, but its server's");
}

fn result(content: Vec<ContentBlock>, structured: Option<Value>, is_error: bool) -> CallToolResult {
    let mut result = if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    result.structured_content = structured;
    result
}

#[test]
fn structured_content_wins_then_text_then_null() {
    let out = output_of("s", "t", result(vec![ContentBlock::text("{\"a\":1}")], Some(json!({"a": 1})), false)).unwrap();
    assert_eq!(out.structured, Some(json!({"a": 1})));
    let out = output_of("s", "t", result(vec![ContentBlock::text("one"), ContentBlock::text("two")], None, false)).unwrap();
    assert_eq!((out.structured, out.text.as_deref()), (None, Some("one\ntwo")));
    let out = output_of("s", "t", result(vec![], None, false)).unwrap();
    assert_eq!(out, ToolOutput::empty());
}

#[test]
fn images_become_attachments_and_errors_reject_with_the_text() {
    let out = output_of("s", "t", result(vec![ContentBlock::image("AAAA", "image/png")], None, false)).unwrap();
    assert_eq!((out.text, out.images.len()), (None, 1));
    let err = output_of("s", "t", result(vec![ContentBlock::text("no such city")], None, true)).unwrap_err();
    assert_eq!((err.stage, err.message.as_str()), (crate::Stage::Execution, "no such city"));
    let err = output_of("s", "t", result(vec![], None, true)).unwrap_err();
    assert!(err.message.contains("reported an error without a message"), "{}", err.message);
}

#[test]
fn resources_are_rendered_as_text() {
    let embedded = ContentBlock::Resource(rmcp::model::EmbeddedResource::new(ResourceContents::TextResourceContents {
        uri: "file:///notes.md".into(),
        mime_type: Some("text/markdown".into()),
        text: "# Notes".into(),
        meta: None::<MetaObject>,
    }));
    let mut link = Resource::new("https://example.com/r/1", "report");
    link.description = Some("the weekly report".into());
    let out = output_of("s", "t", result(vec![embedded, ContentBlock::ResourceLink(link)], None, false)).unwrap();
    assert_eq!(
        out.text.as_deref(),
        Some(
            "[resource file:///notes.md (text/markdown)]\n# Notes\n[resource link https://example.com/r/1: report - the weekly report]"
        )
    );
}
