//! `tools.ToolSearch({query, max_results?})`: finds tools in the set a script may reach,
//! on the host, without any model round trip. Its argument shape is the [`SearchParams`]
//! type: the same schema validates the arguments and renders the call form.

use std::collections::HashSet;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalogue::signature;
use crate::sources::tools::names::TOOL_SEARCH;
use crate::sources::tools::{ToolDefinition, ToolError, ToolSource};
/// Results of a keyword search when the script does not say.
pub const DEFAULT_MAX_RESULTS: usize = 5;
/// Results of a keyword search at most, whatever the script asks.
pub const MAX_RESULTS_LIMIT: usize = 50;

/// The arguments of `tools.ToolSearch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Keywords, best first; `+term` needs term in the name; `select:a,b` gives exactly those; empty lists all.
    pub query: String,
    /// Matches for keywords: 5 unless given, at most 50.
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// What `tools.ToolSearch` resolves to.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
#[non_exhaustive]
pub struct SearchResult {
    pub matches: Vec<SearchMatch>,
    /// Matches before the cut to `max_results`.
    pub total: usize,
}

#[derive(Debug, Serialize, JsonSchema, PartialEq)]
#[non_exhaustive]
pub struct SearchMatch {
    pub name: String,
    pub description: String,
    /// `tools.name(args: {...}): Promise<T>`
    pub signature: String,
}

/// What `tools.ToolSearch` does, in one sentence.
pub const SEARCH_DESCRIPTION: &str =
    "Finds the tools a script can reach, by keyword or by name, with the exact call form of each.";

/// The call form of `tools.ToolSearch`, rendered from its own schemas.
pub fn search_signature() -> String {
    let (input, output) = schemas();
    signature::call_form(TOOL_SEARCH, &input, Some(&output))
}

/// `ToolSearch` as a member of `tools` in a declaration file, indented by `depth` levels.
pub fn search_member(depth: usize) -> String {
    let (input, output) = schemas();
    signature::member(TOOL_SEARCH, &input, Some(&output), depth)
}

/// The schemas of `ToolSearch`'s arguments and result: the ones its arguments are read with.
fn schemas() -> (Value, Value) {
    (schemars::schema_for!(SearchParams).to_value(), schemars::schema_for!(SearchResult).to_value())
}

/// The shape `tools.ToolSearch` expects, rendered from its schema (for error messages).
fn expected_shape() -> String {
    signature::type_of(&schemas().0)
}

/// Reads the arguments of one search; a wrong shape is refused with the expected one.
pub(crate) fn parse_params(args: Map<String, Value>) -> Result<SearchParams, ToolError> {
    crate::sources::tools::params::read_params(TOOL_SEARCH, args)
        .map_err(|e| ToolError::params(format!("{}. It takes one object of this shape: {}", e.message, expected_shape())))
}

/// Answers `params` from `pool`, indexing it first (see [`Reachable`] to search one pool often).
#[cfg(test)]
fn search(pool: &[ToolDefinition], params: &SearchParams) -> SearchResult {
    Index::new(pool).search(pool, params)
}

/// The tools one Exec reaches: what its `tools` object has, what `tools.ToolSearch`
/// searches, indexed at the first search and kept for every later one (and every later
/// Exec of the same pool).
#[derive(Debug)]
pub(crate) struct Reachable {
    definitions: Vec<ToolDefinition>,
    names: Vec<String>,
    set: HashSet<String>,
    index: OnceLock<Index>,
}

impl Reachable {
    /// `definitions` in the order they are listed.
    pub fn new(definitions: Vec<ToolDefinition>) -> Self {
        let names: Vec<String> = definitions.iter().map(|tool| tool.name.clone()).collect();
        let set = names.iter().cloned().collect();
        Reachable { definitions, names, set, index: OnceLock::new() }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn contains(&self, name: &str) -> bool {
        self.set.contains(name)
    }

    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// Runs one search over these tools.
    pub fn search(&self, params: &SearchParams) -> SearchResult {
        self.index.get_or_init(|| Index::new(&self.definitions)).search(&self.definitions, params)
    }
}

/// What keyword ranking reads of each tool of a pool, lower-cased and split into words
/// once: an Exec searches the same pool as often as it likes.
#[derive(Debug)]
pub(crate) struct Index {
    entries: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    name: String,
    name_words: Vec<String>,
    hint: String,
    hint_words: Vec<String>,
    description: String,
    description_words: Vec<String>,
    mcp: bool,
    /// Rendered the first time the tool is a match.
    signature: OnceLock<String>,
}

impl Index {
    /// Indexes `pool`; [`search`](Self::search) must be given the same pool.
    pub fn new(pool: &[ToolDefinition]) -> Self {
        let entries = pool
            .iter()
            .map(|tool| {
                let hint = tool.search_hint.as_deref().map(str::to_lowercase).unwrap_or_default();
                let description = tool.description.to_lowercase();
                Entry {
                    name: tool.name.to_lowercase(),
                    name_words: name_words(&tool.name),
                    hint_words: text_words(&hint),
                    hint,
                    description_words: text_words(&description),
                    description,
                    mcp: matches!(tool.source, ToolSource::Mcp { .. }),
                    signature: OnceLock::new(),
                }
            })
            .collect();
        Index { entries }
    }

    /// Answers `params` from `pool`: `select:` picks named tools in the order given, an
    /// empty query lists the whole pool, keywords rank (see [`Ranking`]).
    pub fn search(&self, pool: &[ToolDefinition], params: &SearchParams) -> SearchResult {
        debug_assert_eq!(pool.len(), self.entries.len(), "an index searches the pool it was made from");
        let query = params.query.trim();
        if let Some(list) = query.strip_prefix("select:") {
            let mut picked: Vec<usize> = Vec::new();
            for name in list.split(',').map(str::trim).filter(|name| !name.is_empty()) {
                if let Some(at) = pool.iter().position(|tool| tool.name == name)
                    && !picked.contains(&at)
                {
                    picked.push(at);
                }
            }
            return self.result(pool, picked.len(), picked);
        }
        if query.is_empty() {
            return self.result(pool, pool.len(), (0..pool.len()).collect());
        }
        let limit = params.max_results.unwrap_or(DEFAULT_MAX_RESULTS).clamp(1, MAX_RESULTS_LIMIT);
        let ranking = Ranking::new(query);
        let mut scored: Vec<(u32, usize)> =
            self.entries.iter().enumerate().filter_map(|(at, entry)| ranking.score(entry).map(|score| (score, at))).collect();
        scored.sort_by(|(a, a_at), (b, b_at)| {
            b.cmp(a)
                .then(self.entries[*b_at].mcp.cmp(&self.entries[*a_at].mcp))
                .then_with(|| pool[*a_at].name.cmp(&pool[*b_at].name))
        });
        let total = scored.len();
        self.result(pool, total, scored.into_iter().take(limit).map(|(_, at)| at).collect())
    }

    /// The result for the tools at positions `picked` of `pool`, each with its signature.
    fn result(&self, pool: &[ToolDefinition], total: usize, picked: Vec<usize>) -> SearchResult {
        let matches = picked
            .into_iter()
            .map(|at| {
                let tool = &pool[at];
                let signature = self.entries[at]
                    .signature
                    .get_or_init(|| signature::call_form(&tool.name, &tool.input_schema, tool.output_schema.as_deref()));
                SearchMatch { name: tool.name.clone(), description: tool.description.clone(), signature: signature.clone() }
            })
            .collect();
        SearchResult { matches, total }
    }
}

/// How a keyword query ranks tools. Each term scores in the strongest tier it reaches:
/// a whole word of the name > part of the name > a word of the search hint > a word of
/// the description; the query equal to the whole name (ignoring case) beats every sum.
/// Ties go to MCP tools (their names are the hardest to guess), then to name order. A
/// `+term` must be part of the name (as a substring: `+log` keeps `catalog`).
struct Ranking {
    whole: String,
    terms: Vec<String>,
    required: Vec<String>,
}

const EXACT_NAME: u32 = 10_000;
const NAME_WORD: u32 = 100;
const NAME_PART: u32 = 50;
const HINT_WORD: u32 = 20;
const DESCRIPTION_WORD: u32 = 5;

impl Ranking {
    fn new(query: &str) -> Self {
        let lower = query.to_lowercase();
        let whole = lower.strip_prefix("tools.").unwrap_or(&lower).to_string();
        let mut terms = Vec::new();
        let mut required = Vec::new();
        for word in lower.split_whitespace() {
            match word.strip_prefix('+') {
                Some(term) if !term.is_empty() => required.push(term.to_string()),
                Some(_) => {}
                None => terms.push(word.to_string()),
            }
        }
        Ranking { whole, terms, required }
    }

    /// The tool's score, or `None` when it does not match.
    fn score(&self, entry: &Entry) -> Option<u32> {
        if !self.required.iter().all(|term| entry.name.contains(term.as_str())) {
            return None;
        }
        if entry.name == self.whole {
            return Some(EXACT_NAME);
        }
        let score: u32 = self
            .terms
            .iter()
            .chain(&self.required)
            .map(|term| {
                if entry.name_words.iter().any(|word| word == term) {
                    NAME_WORD
                } else if entry.name.contains(term.as_str()) {
                    NAME_PART
                } else if mentions(&entry.hint, &entry.hint_words, term) {
                    HINT_WORD
                } else if mentions(&entry.description, &entry.description_words, term) {
                    DESCRIPTION_WORD
                } else {
                    0
                }
            })
            .sum();
        (score > 0).then_some(score)
    }
}

/// The words of a tool name, lower case: split at every character that is not a letter or
/// a digit, and where camelCase turns (`getUserProfile` -> get, user, profile).
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split(|c: char| !c.is_alphanumeric()).filter(|part| !part.is_empty()) {
        let chars: Vec<char> = part.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let turn = chars[i].is_uppercase()
                && (chars[i - 1].is_lowercase()
                    || chars.get(i + 1).is_some_and(|next| next.is_lowercase()) && chars[i - 1].is_uppercase());
            if turn {
                words.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        words.push(chars[start..].iter().collect::<String>().to_lowercase());
    }
    words
}

/// The words of a lower-cased text.
fn text_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|word| !word.is_empty()).map(String::from).collect()
}

/// Whether `term` starts a word of the text (`file` finds "files"); a term with
/// punctuation in it (`get-user`) is looked for anywhere in the text.
fn mentions(text: &str, words: &[String], term: &str) -> bool {
    if term.chars().all(|c| c.is_alphanumeric() || c == '_') {
        words.iter().any(|word| word.starts_with(term))
    } else {
        text.contains(term)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn builtin(name: &str, description: &str) -> ToolDefinition {
        ToolDefinition::new(name, description, json!({"type": "object"})).unwrap()
    }

    fn mcp(server: &str, tool: &str, description: &str) -> ToolDefinition {
        builtin(&crate::sources::tools::names::mcp_name(server, tool), description)
            .with_source(ToolSource::Mcp { server: server.into() })
    }

    /// Tools with similar names, as a real pool has them.
    fn pool() -> Vec<ToolDefinition> {
        let mut pool = vec![
            builtin("weather", "Current conditions for a city."),
            builtin("weather_lookup", "Looks up past weather by date."),
            builtin("weatherly", "Horoscopes, despite the name."),
            mcp("wx", "weather", "Conditions from the wx service."),
            mcp("wx", "get-weather.hourly", "Hourly forecast."),
            mcp("files", "readFile", "Reads one file from the store."),
            builtin("list_files", "Lists the files of a folder."),
            builtin("forecast", "Tomorrow's outlook.").with_search_hint("weather prediction for the coming days"),
        ];
        pool.sort_by(|a, b| a.name.cmp(&b.name));
        pool
    }

    fn names(query: &str, max_results: Option<usize>) -> (Vec<String>, usize) {
        let result = search(&pool(), &SearchParams { query: query.into(), max_results });
        (result.matches.into_iter().map(|m| m.name).collect(), result.total)
    }

    #[test]
    fn keywords_rank_exact_name_then_name_words_then_parts_then_hint_then_description() {
        let (found, total) = names("weather", Some(50));
        assert_eq!(
            found,
            [
                "weather",                     // the exact name
                "mcp__wx__get-weather.hourly", // a word of the name; MCP first within the tier
                "mcp__wx__weather",
                "weather_lookup",
                "weatherly", // part of a name
                "forecast",  // its search hint
            ]
        );
        assert_eq!(total, 6);
        // The exact name of an MCP tool, as the announcement gives it, comes first.
        assert_eq!(names("mcp__wx__weather", None).0[0], "mcp__wx__weather");
        assert_eq!(names("MCP__WX__WEATHER", None).0[0], "mcp__wx__weather", "case does not matter");
        assert_eq!(names("tools.weather_lookup", None).0[0], "weather_lookup");
        // camelCase names split into words; descriptions match by word prefix.
        assert_eq!(names("file", None).0, ["mcp__files__readFile", "list_files"], "readFile has the word, list_files a part");
        assert_eq!(names("read", None).0, ["mcp__files__readFile"]);
        assert_eq!(names("outlook", None).0, ["forecast"]);
        assert_eq!(names("hourly", None).0, ["mcp__wx__get-weather.hourly"]);
    }

    #[test]
    fn ranking_is_deterministic_and_several_terms_add_up() {
        // Both words in weather_lookup's name outweigh one in an MCP tool's.
        assert_eq!(names("weather lookup", None).0[..2], ["weather_lookup", "mcp__wx__get-weather.hourly"]);
        let first = names("weather hourly", None);
        assert_eq!(first.0[0], "mcp__wx__get-weather.hourly");
        for _ in 0..5 {
            assert_eq!(names("weather hourly", None), first);
        }
        let mut reversed = pool();
        reversed.reverse();
        let again = search(&reversed, &SearchParams { query: "weather hourly".into(), max_results: None });
        assert_eq!(again.matches.into_iter().map(|m| m.name).collect::<Vec<_>>(), first.0, "the pool's order does not matter");
    }

    #[test]
    fn a_plus_term_must_be_in_the_name() {
        assert_eq!(
            names("+weather hourly", None).0,
            ["mcp__wx__get-weather.hourly", "mcp__wx__weather", "weather", "weather_lookup", "weatherly"]
        );
        assert_eq!(names("+lookup weather", None).0, ["weather_lookup"]);
        assert_eq!(names("+prediction", None).0, Vec::<String>::new(), "a hint is not the name");
    }

    #[test]
    fn results_are_capped_and_total_counts_them_all() {
        let (found, total) = names("weather", None);
        assert_eq!((found.len(), total), (5, 6), "five by default; total before the cut");
        assert_eq!(names("weather", Some(2)).0.len(), 2);
        assert_eq!(names("weather", Some(0)).0.len(), 1, "at least one");
        let many: Vec<ToolDefinition> = (0..120).map(|i| builtin(&format!("tool_{i:03}"), "A tool.")).collect();
        let result = search(&many, &SearchParams { query: "tool".into(), max_results: Some(1_000_000) });
        assert_eq!((result.matches.len(), result.total), (MAX_RESULTS_LIMIT, 120), "the host's bound holds");
    }

    #[test]
    fn select_returns_exactly_the_named_tools_unbounded() {
        let (found, total) = names("select:weatherly, mcp__wx__get-weather.hourly,nope,weatherly", Some(1));
        assert_eq!(found, ["weatherly", "mcp__wx__get-weather.hourly"], "in the order asked, once each, unknown names absent");
        assert_eq!(total, 2);
        let many: Vec<ToolDefinition> = (0..60).map(|i| builtin(&format!("tool_{i:03}"), "A tool.")).collect();
        let all: Vec<String> = many.iter().map(|t| t.name.clone()).collect();
        let result = search(&many, &SearchParams { query: format!("select:{}", all.join(",")), max_results: None });
        assert_eq!(result.matches.len(), 60, "select: is not cut to max_results");
    }

    #[test]
    fn an_empty_query_lists_the_whole_pool() {
        let (found, total) = names("  ", None);
        assert_eq!(found.len(), pool().len());
        assert_eq!(total, pool().len());
    }

    #[test]
    fn the_documented_result_cap_is_the_one_applied() {
        let text = schemars::schema_for!(SearchParams).to_value().to_string();
        let documented = format!("{DEFAULT_MAX_RESULTS} unless given, at most {MAX_RESULTS_LIMIT}");
        assert!(text.contains(&documented), "the max_results documentation does not say {documented:?}");
    }

    #[test]
    fn a_wrong_shape_is_refused_with_the_expected_one() {
        let args = |value: Value| value.as_object().cloned().unwrap();
        for wrong in [json!({"q": "weather"}), json!({}), json!({"query": 3}), json!({"query": "x", "max_results": -1})] {
            let error = parse_params(args(wrong.clone())).unwrap_err();
            assert_eq!(error.stage, crate::sources::tools::Stage::Params, "{wrong}");
            assert!(error.message.starts_with("ToolSearch: "), "{}", error.message);
            assert!(error.message.contains(&expected_shape()), "{wrong}: {}", error.message);
            assert!(error.message.contains("query: string;"), "{}", error.message);
        }
        let params = parse_params(args(json!({"query": "weather", "max_results": null}))).unwrap();
        assert_eq!(search(&pool(), &params).total, 6);
    }

    #[test]
    fn each_match_carries_its_rendered_signature() {
        let tool = mcp("srv", "get-user.profile", "Reads a profile.\nSecond line.").with_output_schema(json!({"type": "object"}));
        let result = search(std::slice::from_ref(&tool), &SearchParams { query: "profile".into(), max_results: None });
        assert_eq!(
            result.matches,
            [SearchMatch {
                name: tool.name.clone(),
                description: "Reads a profile.\nSecond line.".into(),
                signature: "tools[\"mcp__srv__get-user.profile\"](args?: {}): Promise<{}>".into(),
            }]
        );
    }
}
