//! `tools.ToolSearch` queries (keywords, `+term`, `select:`) over a pool of tools, any text.
#![no_main]

use std::sync::OnceLock;

use exec_host::ToolDefinition;
use exec_host::fuzzing::SearchParams;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fn pool() -> &'static [ToolDefinition] {
    static POOL: OnceLock<Vec<ToolDefinition>> = OnceLock::new();
    POOL.get_or_init(|| {
        let tools = [
            ("read_file", "Read a text file"),
            ("mcp__github__create_issue", "Create an issue in a repository"),
            ("mcp__github__list_issues", "List the issues of a repository"),
            ("mcp__slack__post_message", "Post a message to a channel"),
            ("mcp__db__query", "Run a read-only SQL query"),
        ];
        tools
            .iter()
            .map(|(name, description)| {
                ToolDefinition::new(*name, *description, json!({"type": "object", "properties": {"q": {"type": "string"}}}))
                    .expect("a valid fixture definition")
                    .with_search_hint("issues tickets bugs")
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&max, query)) = data.split_first() else { return };
    let query = String::from_utf8_lossy(query).into_owned();
    let max_results = (max != 0).then_some(usize::from(max));
    let result = exec_host::fuzzing::search(pool(), &SearchParams { query, max_results });
    assert!(serde_json::to_value(&result).is_ok());
});
