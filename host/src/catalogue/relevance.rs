//! How a keyword query ranks the tools of a pool: the spec's order on top (the exact name,
//! then the words of the name), and BM25 below it for everything else.
//!
//! A query is cut into words the way tool names and texts are (at punctuation and where
//! camelCase turns), English stop words are dropped and each word is stemmed, so `files`,
//! `file` and `filing` meet. Tools are then ordered by, in turn:
//!
//! 1. the query equal to the tool's name (ignoring case and a leading `tools.`), then to an
//!    MCP tool's own name without its server's prefix;
//! 2. how many of the query's words the tool has in its name, its search hint or the first
//!    sentence of its description (which says what the tool does; later ones add details
//!    and caveats): a tool with every word beats one with a single word however often it
//!    says it;
//! 3. how many of them are words of its name (or, for a word of three letters or more, part
//!    of the name: `dir` finds `create_directory`);
//! 4. how few words its name has besides the query's, so `read file` puts `read_file` before
//!    `mcp__fs__read_file` and `mcp__fs__read_multiple_files`;
//! 5. BM25 (the `bm25` crate's scorer, fitted to this pool) over the name, the search hint and
//!    the description, weighted [`NAME_WEIGHT`] : [`HINT_WEIGHT`] : [`DESCRIPTION_WEIGHT`];
//!    a short name or text that is about the word outranks a long one that mentions it;
//! 6. the name, so the order never depends on the pool's.
//!
//! A `+term` must be part of the name (as a substring: `+log` keeps `catalog`).

use std::cmp::{Ordering, Reverse};
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use bm25::{Embedder, EmbedderBuilder, Embedding, Scorer, Tokenizer};
use rust_stemmers::{Algorithm, Stemmer};

use crate::sources::tools::ToolDefinition;
use crate::sources::tools::names::split_mcp_name;

/// How much a query word found in a tool's name counts against one found in its search hint
/// and one found in its description, in the BM25 tier.
pub const NAME_WEIGHT: f32 = 3.0;
pub const HINT_WEIGHT: f32 = 2.0;
pub const DESCRIPTION_WEIGHT: f32 = 1.0;

/// The shortest query word that also matches as a part of a name (`dir` in `directory`);
/// shorter ones would match half the pool by accident.
const MIN_NAME_PART: usize = 3;

/// What ranking reads of each tool of one pool, tokenized and fitted once: an Exec searches
/// the same pool as often as it likes.
#[derive(Debug)]
pub(crate) struct Relevance {
    tools: Vec<Indexed>,
    fields: [Field; 3],
    /// The tools having each stem in some field: only they, and names with a query word in
    /// them, are ranked, so a query over a large pool reads only its candidates.
    having: HashMap<String, Vec<usize>>,
}

#[derive(Debug)]
struct Indexed {
    /// The name, lower case.
    name: String,
    /// An MCP tool's name without its server's prefix, lower case.
    own_name: Option<String>,
    /// The stems of the name's words.
    name_stems: HashSet<String>,
    /// The stems of the words of its name, search hint and first sentence.
    said_stems: HashSet<String>,
}

impl Indexed {
    /// 2 when the query is this tool's name, 1 when it is an MCP tool's own name, else 0.
    fn exactness(&self, query: &Query) -> u8 {
        if self.name == query.whole {
            2
        } else if self.own_name.as_deref() == Some(query.whole.as_str()) {
            1
        } else {
            0
        }
    }
}

/// One field of every tool (names, hints or descriptions), scored by BM25 over this pool.
struct Field {
    weight: f32,
    embedder: Embedder<u32, Stems>,
    scorer: Scorer<usize, u32>,
}

impl std::fmt::Debug for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Field").field("weight", &self.weight).field("avgdl", &self.embedder.avgdl()).finish_non_exhaustive()
    }
}

impl Field {
    /// The field whose text of the tool at `at` is `stems[at]`, already tokenized.
    fn new(weight: f32, stems: &[Vec<String>]) -> Self {
        let words: usize = stems.iter().map(Vec::len).sum();
        let avgdl = if stems.is_empty() { 1.0 } else { words as f32 / stems.len() as f32 };
        let embedder = EmbedderBuilder::<u32, Stems>::with_avgdl(avgdl).build();
        let mut scorer = Scorer::new();
        for (at, stems) in stems.iter().enumerate() {
            scorer.upsert(&at, embedder.embed(&stems.join(" ")));
        }
        Field { weight, embedder, scorer }
    }

    fn score(&self, at: usize, query: &Embedding<u32>) -> f32 {
        self.weight * self.scorer.score(&at, query).unwrap_or(0.0)
    }
}

/// One query word: as written (lower case), its stem, and the stems of the words tools say
/// for it (see [`said_for`]).
struct Term {
    written: String,
    stem: String,
    also: Vec<String>,
}

impl Term {
    /// Whether `stems` has this word, or a word tools say for it.
    fn in_stems(&self, stems: &HashSet<String>) -> bool {
        stems.contains(&self.stem) || self.also.iter().any(|stem| stems.contains(stem))
    }
}

/// Words that tool names and descriptions use for one action or thing: a query word of a
/// group also finds the group's other words, so `add numbers` finds `get-sum` ("Returns the
/// sum of two numbers") and `create folder` finds `create_directory`. Only words whose
/// meaning does not turn between tools.
const SYNONYMS: &[&[&str]] = &[
    &["add", "sum"],
    &["create", "make", "new"],
    &["remove", "delete"],
    &["list", "ls"],
    &["get", "read", "fetch"],
    &["folder", "directory"],
];

/// The verbs a person asks with and the one an API's operations name the action by (one
/// way only): `add a comment` finds `Create an issue comment`. Only the verbs of the
/// operations every API has (create, read, update, delete).
const SAID_FOR: &[(&str, &[&str])] =
    &[("add", &["create"]), ("retrieve", &["get"]), ("modify", &["update"]), ("change", &["update"]), ("edit", &["update"])];

/// The words tools say for query word `asked`: the other words of its groups in
/// [`SYNONYMS`], and what [`SAID_FOR`] gives it.
fn said_for(asked: &str) -> impl Iterator<Item = &'static str> + '_ {
    let synonyms = SYNONYMS.iter().filter(move |group| group.contains(&asked)).flat_map(|group| group.iter().copied());
    let verbs = SAID_FOR.iter().filter(move |(word, _)| *word == asked).flat_map(|(_, said)| said.iter().copied());
    synonyms.chain(verbs).filter(move |word| *word != asked)
}

/// A query, read once for the whole pool.
pub(crate) struct Query {
    whole: String,
    terms: Vec<Term>,
    required: Vec<String>,
    /// The distinct words, as each field's embedder embeds them.
    embedded: Vec<Embedding<u32>>,
}

impl Relevance {
    /// Indexes `pool`; [`rank`](Self::rank) answers by positions in it.
    pub fn new(pool: &[ToolDefinition]) -> Self {
        let names: Vec<Vec<String>> = pool.iter().map(|tool| Words.tokenize(&tool.name)).collect();
        let hints: Vec<Vec<String>> = pool.iter().map(|tool| Words.tokenize(tool.search_hint.as_deref().unwrap_or(""))).collect();
        let descriptions: Vec<Vec<String>> = pool.iter().map(|tool| Words.tokenize(&tool.description)).collect();
        let mut having: HashMap<String, Vec<usize>> = HashMap::new();
        let tools = pool
            .iter()
            .enumerate()
            .map(|(at, tool)| {
                let name_stems: HashSet<String> = names[at].iter().cloned().collect();
                let mut said_stems = name_stems.clone();
                said_stems.extend(hints[at].iter().cloned());
                said_stems.extend(Words.tokenize(first_sentence(&tool.description)));
                let mut all_stems: HashSet<&String> = said_stems.iter().collect();
                all_stems.extend(&descriptions[at]);
                for stem in all_stems {
                    having.entry(stem.clone()).or_default().push(at);
                }
                Indexed {
                    name: tool.name.to_lowercase(),
                    own_name: split_mcp_name(&tool.name).map(|(_, own)| own.to_lowercase()),
                    name_stems,
                    said_stems,
                }
            })
            .collect();
        let fields =
            [Field::new(NAME_WEIGHT, &names), Field::new(HINT_WEIGHT, &hints), Field::new(DESCRIPTION_WEIGHT, &descriptions)];
        Relevance { tools, fields, having }
    }

    /// Reads a keyword query (not `select:`, not empty).
    pub fn query(&self, query: &str) -> Query {
        let lower = query.trim().to_lowercase();
        let whole = lower.strip_prefix("tools.").unwrap_or(&lower).to_string();
        let mut terms: Vec<Term> = Vec::new();
        let mut required = Vec::new();
        // Split as written, so camelCase still turns: `readFile` is read, file.
        for word in query.split_whitespace() {
            let word = match word.strip_prefix('+') {
                Some("") => continue,
                Some(term) => {
                    required.push(term.to_lowercase());
                    term
                }
                None => word,
            };
            for written in words(word) {
                if let Some(stem) = Words::stem(&written)
                    && !terms.iter().any(|term| term.stem == stem)
                {
                    let mut also: Vec<String> = said_for(&written).filter_map(Words::stem).collect();
                    also.retain(|other| *other != stem);
                    also.dedup();
                    terms.push(Term { written, stem, also });
                }
            }
        }
        // Each distinct stem once, embedded as the fields' stems were.
        let stems = terms.iter().map(|term| term.stem.as_str()).collect::<Vec<_>>().join(" ");
        let embedded = self.fields.iter().map(|field| field.embedder.embed(&stems)).collect();
        Query { whole, terms, required, embedded }
    }

    /// The positions of the tools that match `query`, best first.
    pub fn rank(&self, query: &Query) -> Vec<usize> {
        let mut candidate = vec![false; self.tools.len()];
        for term in &query.terms {
            for &at in std::iter::once(&term.stem).chain(&term.also).filter_map(|stem| self.having.get(stem)).flatten() {
                candidate[at] = true;
            }
        }
        let mut ranked: Vec<(Rank, usize)> = (0..self.tools.len())
            .filter(|&at| candidate[at] || self.names_it(at, query))
            .filter_map(|at| self.rank_of(at, query).map(|rank| (rank, at)))
            .collect();
        ranked.sort_by(|(a, a_at), (b, b_at)| b.cmp(a).then_with(|| self.tools[*a_at].name.cmp(&self.tools[*b_at].name)));
        ranked.into_iter().map(|(_, at)| at).collect()
    }

    /// Whether the tool at `at` is named by the query, or has a query word in its name
    /// without having its stem (`dir` in `create_directory`).
    fn names_it(&self, at: usize, query: &Query) -> bool {
        let tool = &self.tools[at];
        tool.exactness(query) > 0 || query.terms.iter().any(|term| part_of_name(&tool.name, term))
    }

    /// Where the tool at `at` ranks for `query`, or `None` when it does not match.
    fn rank_of(&self, at: usize, query: &Query) -> Option<Rank> {
        let tool = &self.tools[at];
        if !query.required.iter().all(|term| tool.name.contains(term.as_str())) {
            return None;
        }
        let exact = tool.exactness(query);
        let in_name = |term: &Term| {
            term.in_stems(&tool.name_stems) || part_of_name(&tool.name, term) || abbreviated(&tool.name_stems, term)
        };
        let name_words = query.terms.iter().filter(|term| in_name(term)).count();
        let words = query.terms.iter().filter(|term| in_name(term) || term.in_stems(&tool.said_stems)).count();
        let bm25: f32 = self.fields.iter().zip(&query.embedded).map(|(field, embedded)| field.score(at, embedded)).sum();
        // A word said only further down the description still matches, below the rest.
        if exact == 0 && name_words == 0 && bm25 <= 0.0 {
            return None;
        }
        let other_name_words = tool
            .name_stems
            .iter()
            .filter(|stem| !query.terms.iter().any(|term| &term.stem == *stem || term.also.contains(stem)))
            .count();
        Some(Rank { exact, words, name_words, other_name_words: Reverse(other_name_words), bm25 })
    }
}

/// A tool's place for one query; greater is better, compared field by field.
#[derive(PartialEq)]
struct Rank {
    exact: u8,
    words: usize,
    name_words: usize,
    other_name_words: Reverse<usize>,
    bm25: f32,
}

impl Eq for Rank {}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.exact, self.words, self.name_words, self.other_name_words)
            .cmp(&(other.exact, other.words, other.name_words, other.other_name_words))
            .then_with(|| self.bm25.total_cmp(&other.bm25))
    }
}

/// Whether `term`, as written, is part of a (lower-case) name; only a term of
/// [`MIN_NAME_PART`] letters or more is looked for this way.
fn part_of_name(name: &str, term: &Term) -> bool {
    term.written.chars().count() >= MIN_NAME_PART && name.contains(term.written.as_str())
}

/// Whether a word of the name is the query word cut short (`repo` for `repository`, as
/// GitHub's `repos_get` says it), for names of at least [`MIN_ABBREVIATION`] letters.
fn abbreviated(name_stems: &HashSet<String>, term: &Term) -> bool {
    name_stems
        .iter()
        .any(|stem| stem.len() >= MIN_ABBREVIATION && stem.len() < term.written.len() && term.written.starts_with(stem.as_str()))
}

/// The shortest word of a name read as an abbreviation of a longer query word.
const MIN_ABBREVIATION: usize = 4;

/// The first sentence of a description: up to the first full stop followed by white space,
/// or the first line break.
fn first_sentence(description: &str) -> &str {
    let line = description.trim_start().lines().next().unwrap_or("");
    match line.find(". ") {
        Some(end) => &line[..end],
        None => line,
    }
}

/// The tokenizer of names, hints, descriptions and queries alike: [`words`], less English
/// stop words, stemmed.
#[derive(Debug)]
struct Words;

impl Words {
    /// The stem of one lower-case word, or `None` for a stop word.
    fn stem(word: &str) -> Option<String> {
        static STOP: OnceLock<HashSet<&'static str>> = OnceLock::new();
        static STEMMER: OnceLock<Stemmer> = OnceLock::new();
        let stop = STOP.get_or_init(|| stop_words::get(stop_words::LANGUAGE::English).iter().copied().collect());
        if stop.contains(word) {
            return None;
        }
        Some(STEMMER.get_or_init(|| Stemmer::create(Algorithm::English)).stem(word).into_owned())
    }
}

impl Tokenizer for Words {
    fn tokenize(&self, text: &str) -> Vec<String> {
        words(text).filter_map(|word| Words::stem(&word)).collect()
    }
}

/// The tokenizer of text that [`Words`] made already: its stems, separated by spaces.
#[derive(Clone, Copy, Debug, Default)]
struct Stems;

impl Tokenizer for Stems {
    fn tokenize(&self, text: &str) -> Vec<String> {
        text.split(' ').filter(|stem| !stem.is_empty()).map(String::from).collect()
    }
}

/// The words of a name or a text, lower case: split at every character that is not a letter
/// or a digit, and where camelCase turns (`getUserProfile` -> get, user, profile).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|part| !part.is_empty()).flat_map(|part| {
        let chars: Vec<char> = part.chars().collect();
        let mut words = Vec::new();
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
        words
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_at_punctuation_and_camel_case_then_drop_stop_words_and_stem() {
        let split: Vec<String> = words("getUserProfile read_text_file HTTPServer v2").collect();
        assert_eq!(split, ["get", "user", "profile", "read", "text", "file", "http", "server", "v2"]);
        assert_eq!(Words.tokenize("Search text in the files"), ["search", "text", "file"]);
        assert_eq!(Words.tokenize("listing directories"), Words.tokenize("list directory"));
        assert_eq!(first_sentence("  Reads a file. Only in the workspace.\nMore."), "Reads a file");
        assert_eq!(first_sentence("One line\nTwo. Three"), "One line");
        assert_eq!(first_sentence(""), "");
    }

    #[test]
    fn a_query_word_also_finds_the_words_tools_say_for_it() {
        let said = |word: &str| said_for(word).collect::<Vec<_>>();
        assert_eq!(said("add"), ["sum", "create"]);
        assert_eq!(said("sum"), ["add"]);
        assert_eq!(said("folder"), ["directory"]);
        assert_eq!(said("read"), ["get", "fetch"]);
        assert_eq!(said("edit"), ["update"]);
        assert!(said("file").is_empty());
        // Every word of the table is one that stems and is no stop word: it reaches the index.
        for word in SYNONYMS.iter().flat_map(|group| group.iter()).chain(SAID_FOR.iter().map(|(word, _)| word)) {
            assert!(Words::stem(word).is_some(), "{word}");
        }
    }
}
