//! The projections, the summary, the value text and compaction.

use super::compaction::*;
use super::json_text::{js_number, write_json};
use super::*;
use crate::sandbox::runtime::CallOutcome;

fn calls(names: &[&str]) -> Vec<NestedCall> {
    names
        .iter()
        .map(|name| NestedCall {
            name: name.to_string(),
            args: "{}".into(),
            outcome: CallOutcome::Succeeded,
            duration: Duration::ZERO,
            note: None,
        })
        .collect()
}

#[test]
fn the_summary_counts_and_lists_the_last_two() {
    assert_eq!(calls_summary(&[], 0, true), "0 tool calls");
    assert_eq!(calls_summary(&calls(&["a"]), 0, true), "1 tool call\na");
    assert_eq!(calls_summary(&calls(&["a", "b"]), 0, true), "2 tool calls\na\nb");
    assert_eq!(calls_summary(&calls(&["a", "b", "c"]), 0, true), "... 3 tool calls\nb\nc");
    assert_eq!(calls_summary(&calls(&["a", "a", "a"]), 0, true), "... 3 tool calls\na\na");
    assert_eq!(calls_summary(&calls(&["a", "b"]), 5, true), "... 7 tool calls\na\nb");
    assert_eq!(calls_summary(&calls(&["a"]), 0, false), "failed");
}

#[test]
fn a_flat_output_renders_like_a_value_a_script_returns() {
    let limits = Limits::default();
    let text = |output: ToolOutput| flat_result("c".into(), "t".into(), Ok(output), &limits, Duration::ZERO).model.text;
    assert_eq!(text(ToolOutput::structured(serde_json::json!({"a": [1, "x"]}))), r#"{"a":[1,"x"]}"#);
    assert_eq!(text(ToolOutput::structured(serde_json::json!({"a": 1})).with_text("ignored")), r#"{"a":1}"#);
    assert_eq!(text(ToolOutput::text("plain\ntext")), "plain\ntext");
    assert_eq!(text(ToolOutput::empty()), "null");
    let long = flat_result(
        "c".into(),
        "t".into(),
        Ok(ToolOutput::text("y".repeat(40))),
        &Limits::default().with_max_result_chars(10),
        Duration::ZERO,
    );
    assert_eq!(long.model.text, format!("{}\n[result cut: 40 characters in all, the first 10 shown]", "y".repeat(10)));
}

#[test]
fn numbers_read_as_javascript_writes_them() {
    for (x, js) in [
        (3.0, "3"),
        (-0.0, "0"),
        (0.5, "0.5"),
        (-2.25, "-2.25"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e22, "1.5e+22"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1.2345e-7, "1.2345e-7"),
        (123.456, "123.456"),
        (0.1 + 0.2, "0.30000000000000004"),
        (f64::MAX, "1.7976931348623157e+308"),
    ] {
        assert_eq!(js_number(x), js, "{x:e}");
    }
    let mut text = String::new();
    write_json(&serde_json::json!({"sum": 3.0, "n": [1, 2.5, -7], "s": "a\"b"}), &mut text);
    assert_eq!(text, r#"{"sum":3,"n":[1,2.5,-7],"s":"a\"b"}"#);
}

#[test]
fn compaction_keeps_head_and_tail_and_names_the_call() {
    let short = "x".repeat(COMPACT_OVER_TOKENS * CHARS_PER_TOKEN);
    assert!(!needs_compaction(&short), "exactly at the bound is not compacted");
    let text: String = (0..30_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    assert!(needs_compaction(&text));
    let compacted = compact(&text, "toolu_\"1", true, false);
    assert!(compacted.starts_with(&text[..COMPACT_HEAD_CHARS]));
    assert!(compacted.ends_with(&text[text.len() - COMPACT_TAIL_CHARS..]));
    assert!(
        compacted
            .contains("[... 22000 of 30000 characters not shown: view_tool_call({ \"id\": \"toolu_\\\"1\", \"offset\": 6000 })"),
        "{}",
        &compacted[6000..6300]
    );
    assert!(!needs_compaction(&compacted), "a compacted text is under the bound");
    let from_scripts = compact(&text, "c", true, true);
    assert!(from_scripts.contains("in an Exec script, tools.view_tool_call({ id: \"c\", offset: 6000 }) returns the rest"));
    assert!(compact(&text, "c", false, true).contains("the whole result of call \"c\" could not be kept"));
}
