//! `tools.ToolSearch({query, max_results?})`: finds tools in the set a script may reach,
//! on the host, without any model round trip. Its argument shape is the [`SearchParams`]
//! type: the same schema validates the arguments and renders the call form.

use std::collections::HashSet;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::calls::observed::Observed;
use crate::catalogue::relevance::Relevance;
use crate::catalogue::signature::{self, Returns};
use crate::sources::tools::names::TOOL_SEARCH;
use crate::sources::tools::{ToolDefinition, ToolSource};
use crate::support::vocabulary::ToolError;
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
    // Said when keywords found nothing. Left undocumented in the schema, and declared as a
    // plain optional string, because every word of this type is in Exec's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub note: Option<String>,
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
    Index::new(pool).search(pool, params, &Observed::default())
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

    /// Runs one search over these tools; a tool without an output schema that `observed`
    /// has seen answer shows the type of its answers.
    pub fn search(&self, params: &SearchParams, observed: &Observed) -> SearchResult {
        self.index.get_or_init(|| Index::new(&self.definitions)).search(&self.definitions, params, observed)
    }
}

/// What searching reads of each tool of a pool, prepared once: an Exec searches the same
/// pool as often as it likes.
#[derive(Debug)]
pub(crate) struct Index {
    relevance: Relevance,
    /// Each tool's call form, rendered the first time it is a match.
    signatures: Vec<OnceLock<String>>,
}

impl Index {
    /// Indexes `pool`; [`search`](Self::search) must be given the same pool.
    pub fn new(pool: &[ToolDefinition]) -> Self {
        Index { relevance: Relevance::new(pool), signatures: pool.iter().map(|_| OnceLock::new()).collect() }
    }

    /// Answers `params` from `pool`: `select:` picks named tools in the order given, an
    /// empty query lists the whole pool, keywords rank (see [`relevance`](super::relevance)).
    pub fn search(&self, pool: &[ToolDefinition], params: &SearchParams, observed: &Observed) -> SearchResult {
        debug_assert_eq!(pool.len(), self.signatures.len(), "an index searches the pool it was made from");
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
            return self.result(pool, picked.len(), picked, observed);
        }
        if query.is_empty() {
            return self.result(pool, pool.len(), (0..pool.len()).collect(), observed);
        }
        let limit = params.max_results.unwrap_or(DEFAULT_MAX_RESULTS).clamp(1, MAX_RESULTS_LIMIT);
        let ranked = self.relevance.rank(&self.relevance.query(query));
        let total = ranked.len();
        let mut result = self.result(pool, total, ranked.into_iter().take(limit).collect(), observed);
        if total == 0 {
            result.note = Some(nothing_found(pool, query));
        }
        result
    }

    /// The result for the tools at positions `picked` of `pool`, each with its signature:
    /// kept for the pool, but for the types observed, which are this caller's alone.
    fn result(&self, pool: &[ToolDefinition], total: usize, picked: Vec<usize>, observed: &Observed) -> SearchResult {
        let matches = picked
            .into_iter()
            .map(|at| {
                let tool = &pool[at];
                let signature = match observed.schema(tool) {
                    Some(seen) => signature::call_form_returning(&tool.name, &tool.input_schema, Returns::Observed(&seen)),
                    None => self.signatures[at]
                        .get_or_init(|| signature::call_form(&tool.name, &tool.input_schema, tool.output_schema.as_deref()))
                        .clone(),
                };
                SearchMatch { name: tool.name.clone(), description: tool.description.clone(), signature }
            })
            .collect();
        SearchResult { matches, total, note: None }
    }
}

/// The servers a note names at most; the rest are counted.
const MAX_SOURCES_NAMED: usize = 12;
/// The longest query a note repeats, in characters.
const MAX_QUERY_REPEATED: usize = 60;

/// What a keyword search that found nothing says instead of a bare `total: 0`: where the
/// reachable tools come from, so the script (and the model reading it) can ask with the
/// words those tools use, or learn that no such tool is there.
fn nothing_found(pool: &[ToolDefinition], query: &str) -> String {
    let mut builtins = 0;
    // Each source with its count, as it reads in the note (`the MCP server x`, `the API y`).
    let mut named: Vec<(String, usize)> = Vec::new();
    for tool in pool {
        let source = match &tool.source {
            ToolSource::Builtin => {
                builtins += 1;
                continue;
            }
            ToolSource::Mcp { server } => format!("the MCP server {server}"),
            ToolSource::Api { source } => format!("the API {source}"),
        };
        match named.iter_mut().find(|(name, _)| *name == source) {
            Some((_, count)) => *count += 1,
            None => named.push((source, 1)),
        }
    }
    let mut sources: Vec<String> = Vec::new();
    if builtins > 0 {
        sources.push(format!("{builtins} builtin"));
    }
    for (source, count) in named.iter().take(MAX_SOURCES_NAMED) {
        sources.push(format!("{count} of {source}"));
    }
    if named.len() > MAX_SOURCES_NAMED {
        sources.push(format!("those of {} more sources", named.len() - MAX_SOURCES_NAMED));
    }
    let query: String = query.chars().take(MAX_QUERY_REPEATED).collect();
    let within =
        if sources.is_empty() { "no tool is reachable".to_string() } else { format!("the tools are {}", sources.join(", ")) };
    format!("no reachable tool's name, search hint or description has a word of `{query}`; {within}. Query \"\" lists them all.")
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
    fn keywords_rank_the_exact_name_then_name_words_then_the_rest() {
        let (found, total) = names("weather", Some(50));
        assert_eq!(found[..2], ["weather", "mcp__wx__weather"], "the exact name, then an MCP tool's own name");
        assert_eq!(found.last().map(String::as_str), Some("forecast"), "a search hint is below every name: {found:?}");
        let at = |name: &str| found.iter().position(|found| found == name).unwrap();
        assert!(at("weather_lookup") < at("mcp__wx__get-weather.hourly"), "fewer other words in the name first: {found:?}");
        assert!(at("weatherly") < at("forecast"), "part of a name is a name word: {found:?}");
        assert_eq!(total, 6);
        assert_eq!(names("MCP__WX__WEATHER", None).0[0], "mcp__wx__weather", "case does not matter");
        assert_eq!(names("tools.weather_lookup", None).0[0], "weather_lookup");
        // camelCase splits into words, in names and queries alike; words are stemmed.
        assert_eq!(
            names("file", None).0,
            ["list_files", "mcp__files__readFile"],
            "both have the word; list_files has fewer others"
        );
        assert_eq!(names("readFile", None).0[0], "mcp__files__readFile");
        assert_eq!(names("reading", None).0, ["mcp__files__readFile"]);
        assert_eq!(names("outlooks", None).0, ["forecast"], "a description's word, stemmed");
        assert_eq!(names("hourly", None).0, ["mcp__wx__get-weather.hourly"]);
        assert_eq!(names("the of and", None).1, 0, "stop words find nothing");
    }

    #[test]
    fn a_tool_with_every_word_of_the_query_comes_before_one_with_some() {
        // weather_lookup says `date` in its description's first sentence: both words.
        assert_eq!(names("weather by date", None).0[0], "weather_lookup");
        // The first sentence says what a tool does; a word said only later ranks below.
        let pool = vec![
            builtin("make_dirs", "Creates a directory tree."),
            builtin("edit", "Makes edits to a text file. Only within allowed directories."),
        ];
        let result = search(&pool, &SearchParams { query: "make directory".into(), max_results: None });
        assert_eq!(result.matches.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["make_dirs", "edit"]);
    }

    #[test]
    fn ranking_is_deterministic_whatever_the_pools_order() {
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
        let (found, _) = names("+weather hourly", None);
        assert_eq!(found[0], "mcp__wx__get-weather.hourly");
        assert_eq!(found.len(), 5, "every name with weather, forecast's hint aside: {found:?}");
        assert!(!found.contains(&"forecast".to_string()));
        assert_eq!(names("+lookup weather", None).0, ["weather_lookup"]);
        assert_eq!(names("+prediction", None).0, Vec::<String>::new(), "a hint is not the name");
    }

    #[test]
    fn a_search_that_finds_nothing_says_where_the_tools_come_from() {
        let result = search(&pool(), &SearchParams { query: "todo".into(), max_results: None });
        assert_eq!(result.total, 0);
        let note = result.note.unwrap();
        assert!(note.contains("`todo`") && note.contains("5 builtin") && note.contains("2 of the MCP server wx"), "{note}");
        assert_eq!(search(&pool(), &SearchParams { query: "weather".into(), max_results: None }).note, None);
        let many: Vec<ToolDefinition> = (0..40).map(|i| mcp(&format!("s{i}"), "t", "A tool.")).collect();
        let note = search(&many, &SearchParams { query: "x".repeat(500), max_results: None }).note.unwrap();
        assert!(note.contains("those of 28 more sources") && note.len() < 1_000, "bounded: {note}");
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
            assert_eq!(error.stage, crate::support::vocabulary::Stage::Params, "{wrong}");
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
