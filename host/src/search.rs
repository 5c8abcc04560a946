//! `tools.ToolSearch({query, max_results?})`: finds tools in the set a script may reach,
//! on the host, without any model round trip. Its argument shape is the [`SearchParams`]
//! type: the same schema validates the arguments and renders the call form.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::signature;
use crate::tools::{ToolDefinition, ToolError, ToolSource};

/// The name scripts call search by.
pub const SEARCH_TOOL_NAME: &str = "ToolSearch";
/// Results of a keyword search when the script does not say.
pub const DEFAULT_MAX_RESULTS: usize = 5;
/// Results of a keyword search at most, whatever the script asks.
pub const MAX_RESULTS_LIMIT: usize = 50;

/// The arguments of `tools.ToolSearch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Keywords matched against tool names, search hints and descriptions (`+word` requires
    /// the word in the name), or `select:name1,name2` for exactly those tools. An empty
    /// query lists every tool.
    pub query: String,
    /// How many matches to return for a keyword query (default 5, at most 50).
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// What `tools.ToolSearch` resolves to.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct SearchResult {
    pub matches: Vec<SearchMatch>,
    /// Matches before the cut to `max_results`.
    pub total: usize,
}

#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct SearchMatch {
    pub name: String,
    pub description: String,
    /// How to call it: `tools.name(args: {...}): Promise<T>`.
    pub signature: String,
}

/// The call form of `tools.ToolSearch`, rendered from its own schemas.
pub fn search_signature() -> String {
    let input = schemars::schema_for!(SearchParams).to_value();
    let output = schemars::schema_for!(SearchResult).to_value();
    signature::call_form(SEARCH_TOOL_NAME, &input, Some(&output))
}

/// Runs one search over `pool`.
pub fn run(pool: &[ToolDefinition], args: &Map<String, Value>) -> Result<SearchResult, ToolError> {
    let params: SearchParams = serde_json::from_value(Value::Object(args.clone())).map_err(|e| {
        ToolError::params(format!(
            "ToolSearch: {e}. Expected arguments of this shape: {}",
            signature::type_of(&schemars::schema_for!(SearchParams).to_value())
        ))
    })?;
    let query = params.query.trim();
    if let Some(list) = query.strip_prefix("select:") {
        let picked: Vec<&ToolDefinition> = list
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .filter_map(|name| pool.iter().find(|tool| tool.name == name))
            .collect();
        return Ok(result(picked.len(), picked));
    }
    if query.is_empty() {
        return Ok(result(pool.len(), pool.iter().collect()));
    }
    let limit = params.max_results.unwrap_or(DEFAULT_MAX_RESULTS).clamp(1, MAX_RESULTS_LIMIT);
    let query_lower = query.to_lowercase();
    let mut required = Vec::new();
    let mut terms = Vec::new();
    for word in query_lower.split_whitespace() {
        match word.strip_prefix('+') {
            Some(term) if !term.is_empty() => required.push(term.to_string()),
            _ => terms.push(word.to_string()),
        }
    }
    let mut scored: Vec<(u32, &ToolDefinition)> = pool
        .iter()
        .filter_map(|tool| {
            let name = tool.name.to_lowercase();
            if !required.iter().all(|term| name.contains(term.as_str())) {
                return None;
            }
            let score =
                if name == query_lower { 1000 } else { terms.iter().chain(&required).map(|t| term_score(tool, &name, t)).sum() };
            (score > 0).then_some((score, tool))
        })
        .collect();
    scored.sort_by(|(a, ta), (b, tb)| b.cmp(a).then_with(|| is_mcp(tb).cmp(&is_mcp(ta))).then_with(|| ta.name.cmp(&tb.name)));
    let total = scored.len();
    Ok(result(total, scored.into_iter().take(limit).map(|(_, tool)| tool).collect()))
}

/// How strongly one term matches a tool: a whole word of its name, part of its name, its
/// search hint, its description.
fn term_score(tool: &ToolDefinition, name: &str, term: &str) -> u32 {
    if name.split(|c: char| !c.is_alphanumeric()).any(|word| word == term) {
        return 100;
    }
    if name.contains(term) {
        return 50;
    }
    if tool.search_hint.as_deref().is_some_and(|hint| hint.to_lowercase().contains(term)) {
        return 20;
    }
    if tool.description.to_lowercase().contains(term) {
        return 5;
    }
    0
}

fn is_mcp(tool: &ToolDefinition) -> bool {
    matches!(tool.source, ToolSource::Mcp { .. })
}

fn result(total: usize, tools: Vec<&ToolDefinition>) -> SearchResult {
    let matches = tools
        .into_iter()
        .map(|tool| SearchMatch {
            name: tool.name.clone(),
            description: tool.description.clone(),
            signature: signature::call_form(&tool.name, &tool.input_schema, tool.output_schema.as_deref()),
        })
        .collect();
    SearchResult { matches, total }
}
