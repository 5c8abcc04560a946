//! Compaction: a result past [`COMPACT_OVER_TOKENS`] reaches the model and the history as
//! its head and tail around a marker naming the call and how to read the rest.

/// A result longer than this many (estimated) tokens is compacted for the model.
pub const COMPACT_OVER_TOKENS: usize = 2_500;
/// How tokens are estimated: characters divided by this. A deliberately rough,
/// model-independent ratio; it decides only when a result is compacted.
pub const CHARS_PER_TOKEN: usize = 4;
/// Characters of a compacted text kept from its start.
pub const COMPACT_HEAD_CHARS: usize = 6_000;
/// Characters of a compacted text kept from its end.
pub const COMPACT_TAIL_CHARS: usize = 2_000;

/// Whether a text is long enough to be compacted.
pub(crate) fn needs_compaction(text: &str) -> bool {
    text.chars().count().div_ceil(CHARS_PER_TOKEN) > COMPACT_OVER_TOKENS
}

/// `text` compacted to its head and tail around a marker that names call `call_id` and,
/// when the whole text was `kept`, how to read the rest: `tools.view_tool_call` in a script
/// when it sits behind Exec (`from_scripts`), else the declared tool.
pub(crate) fn compact(text: &str, call_id: &str, kept: bool, from_scripts: bool) -> String {
    let total = text.chars().count();
    let head_end = text.char_indices().nth(COMPACT_HEAD_CHARS).map_or(text.len(), |(at, _)| at);
    let tail_start = text.char_indices().nth(total.saturating_sub(COMPACT_TAIL_CHARS)).map_or(text.len(), |(at, _)| at);
    let omitted = total.saturating_sub(COMPACT_HEAD_CHARS + COMPACT_TAIL_CHARS);
    let id = serde_json::to_string(call_id).unwrap_or_default();
    let how = if kept && from_scripts {
        format!(
            "in an Exec script, tools.view_tool_call({{ id: {id}, offset: {COMPACT_HEAD_CHARS} }}) returns the rest of the result of call {id}, part by part"
        )
    } else if kept {
        format!(
            "view_tool_call({{ \"id\": {id}, \"offset\": {COMPACT_HEAD_CHARS} }}) returns the rest of the result of call {id}, part by part"
        )
    } else {
        format!("the whole result of call {id} could not be kept")
    };
    format!("{}\n[... {omitted} of {total} characters not shown: {how}.]\n{}", &text[..head_end], &text[tail_start..])
}
