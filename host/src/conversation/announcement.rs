//! The announcement: the names of the pool's tools, told to the model in a message at the
//! tail of the conversation, never in `Exec`'s declaration (spec 004, stories 公告只列延迟工具
//! 的名字 and 公告作为尾部消息增量播报).
//!
//! The text holds the pool's names and nothing else that could change: no counts, budgets,
//! servers or descriptions, every name, in order. The same pool gives the same bytes. A
//! source too large to list (more than [`MAX_NAMES_PER_SOURCE`] tools: GitHub's API has
//! 1,223 operations) is one line instead, where its first tool would be: its names' pattern,
//! its count and what its tools are about (their tags), and that ToolSearch finds them.
//!
//! What was last broadcast is read from the history alone: each broadcast message carries a
//! marker in its metadata (its kind and the SHA-256 of its text), and `next` compares the
//! last marker with what the pool says now. No state is kept in the process, so a restart
//! changes nothing, and a compaction that dropped the marker simply broadcasts again in
//! full. There are no deltas: a changed pool is announced whole.
//!
//! ```text
//! now \ last marker       none / foreign   catalogue (same)   catalogue (other)   empty    withdrawn
//! Exec declared           catalogue        -                  catalogue           catalogue catalogue
//! pool empty              -                empty              empty               -         -
//! Exec off or denied      -                withdrawn          withdrawn           -         -
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::catalogue::pool::ExecStatus;
use crate::conversation::message::Message;
use crate::sources::tools::{ToolDefinition, ToolSource, names};

/// Metadata key of the marker a broadcast message carries.
pub const MARKER_KEY: &str = "exec-host/announcement";

/// A source (an MCP server, an API) with more pooled tools than this is announced by one
/// line, its name pattern, count and what its tools are about, instead of name by name: a
/// thousand names would cost more than the tools they spare.
pub const MAX_NAMES_PER_SOURCE: usize = 50;

/// The most topics (tags) a large source's line names; the rest are counted.
pub const MAX_TOPICS_NAMED: usize = 80;

/// The first line of a catalogue announcement; the names follow, one per line.
pub const CATALOGUE_HEADING: &str = "Tools an Exec script can call as tools.<name>(args) (names that are not identifiers take \
brackets: tools[\"name\"](args)). Ask tools.ToolSearch for a tool's parameters before you call it.";

/// What is said when the pool becomes empty after a broadcast. It does not name `Exec`,
/// which is not declared then.
pub const EMPTY_TEXT: &str = "No catalogue tools are available now; later updates may add some.";

/// What is said when `Exec` stops being declared after a broadcast (turned off, excluded or
/// denied): the catalogue's tools are declared one by one again.
pub const WITHDRAWN_TEXT: &str = "The tool catalogue announced earlier no longer applies: do not call the tools it listed \
from a script. Call the tools declared in this request directly.";

/// The kinds of broadcast.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Catalogue,
    Empty,
    Withdrawn,
}

/// What a broadcast message carries in its metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Marker {
    kind: Kind,
    sha256: String,
}

/// The catalogue announcement of one pool, with its hash; made once per pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Catalogue {
    text: String,
    sha256: String,
}

impl Catalogue {
    /// The announcement of `pool` (in the pool's order): each tool's name, but a large
    /// source's tools, which are one line where the first of them would be.
    pub fn of(pool: &[ToolDefinition]) -> Self {
        let mut sizes: HashMap<(&'static str, &str), usize> = HashMap::new();
        for tool in pool {
            if let Some(source) = source_of(tool) {
                *sizes.entry(source).or_default() += 1;
            }
        }
        let large = |source: &(&'static str, &str)| sizes.get(source).is_some_and(|n| *n > MAX_NAMES_PER_SOURCE);
        let mut text = String::from(CATALOGUE_HEADING);
        let mut summarised = HashSet::new();
        for tool in pool {
            let line = match source_of(tool).filter(large) {
                Some(source) if !summarised.insert(source) => continue,
                Some(source) => summary(source, pool),
                None => tool.name.clone(),
            };
            text.push('\n');
            text.push_str(&line);
        }
        let sha256 = sha256(&text);
        Catalogue { text, sha256 }
    }

    #[cfg(test)]
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// The name prefix and source of a tool that comes from a named source.
fn source_of(tool: &ToolDefinition) -> Option<(&'static str, &str)> {
    match &tool.source {
        ToolSource::Mcp { server } => Some((names::MCP_PREFIX, server)),
        ToolSource::Api { source } => Some((names::API_PREFIX, source)),
        _ => None,
    }
}

/// One line for a large source: `api__github__*: 1223 operations of the API github, about
/// actions, activity, ...; tools.ToolSearch finds them by what they do`.
fn summary((prefix, source): (&'static str, &str), pool: &[ToolDefinition]) -> String {
    let tools: Vec<&ToolDefinition> = pool.iter().filter(|tool| source_of(tool) == Some((prefix, source))).collect();
    let what = match prefix == names::API_PREFIX {
        true => format!("{} operations of the API {source}", tools.len()),
        false => format!("{} tools of the MCP server {source}", tools.len()),
    };
    let topics: BTreeSet<&str> = tools.iter().flat_map(|tool| tool.tags.iter().map(String::as_str)).collect();
    let about = match topics.len() {
        0 => String::new(),
        n if n > MAX_TOPICS_NAMED => {
            let named: Vec<&str> = topics.into_iter().take(MAX_TOPICS_NAMED).collect();
            format!(", about {} and {} more topics", named.join(", "), n - MAX_TOPICS_NAMED)
        }
        _ => format!(", about {}", topics.into_iter().collect::<Vec<_>>().join(", ")),
    };
    format!("{prefix}{source}__*: {what}{about}; tools.ToolSearch finds them by what they do")
}

/// The message to append for this request, if any: the history's last marker against what
/// the pool says now (`status`, and the catalogue of the pool when `Exec` is declared).
pub(crate) fn next(history: &[Message], status: ExecStatus, catalogue: &Catalogue) -> Option<Message> {
    let last = last_marker(history);
    let last_kind = last.as_ref().map(|marker| marker.kind);
    match status {
        ExecStatus::Declared => match &last {
            Some(Marker { kind: Kind::Catalogue, sha256 }) if *sha256 == catalogue.sha256 => None,
            _ => Some(broadcast(Kind::Catalogue, catalogue.text.clone())),
        },
        ExecStatus::EmptyPool => (last_kind == Some(Kind::Catalogue)).then(|| broadcast(Kind::Empty, EMPTY_TEXT.into())),
        // Exec turned off, excluded or denied: the channel closes.
        _ => (last_kind == Some(Kind::Catalogue)).then(|| broadcast(Kind::Withdrawn, WITHDRAWN_TEXT.into())),
    }
}

/// The marker of the last message that carries one; `None` when there is none, or when it
/// is not one this host wrote (foreign or corrupted): then nothing counts as broadcast.
fn last_marker(history: &[Message]) -> Option<Marker> {
    let value = history.iter().rev().find_map(|message| message.metadata.get(MARKER_KEY))?;
    let marker: Marker = serde_json::from_value(value.clone()).ok()?;
    // A marker whose hash cannot be one of ours is as good as none.
    (marker.sha256.len() == 64 && marker.sha256.bytes().all(|b| b.is_ascii_hexdigit())).then_some(marker)
}

fn broadcast(kind: Kind, text: String) -> Message {
    let marker = Marker { kind, sha256: sha256(&text) };
    let value = serde_json::to_value(marker).unwrap_or(Value::Null);
    Message::meta(text).with_metadata(MARKER_KEY, value)
}

fn sha256(text: &str) -> String {
    crate::support::hex::hex(&Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalogue(names: &[&str]) -> Catalogue {
        let pool: Vec<ToolDefinition> =
            names.iter().map(|name| ToolDefinition::new(*name, "", json!({ "type": "object" })).unwrap()).collect();
        Catalogue::of(&pool)
    }

    /// The history after appending what `next` says, as a caller would.
    fn step(history: &mut Vec<Message>, status: ExecStatus, names: &[&str]) -> Option<String> {
        let message = next(history, status, &catalogue(names))?;
        let text = message.text();
        history.push(message);
        Some(text)
    }

    #[test]
    fn the_text_is_names_only_and_stable() {
        let a = catalogue(&["edit_file", "mcp__srv__get-user.profile"]);
        assert_eq!(a.text(), format!("{CATALOGUE_HEADING}\nedit_file\nmcp__srv__get-user.profile"));
        assert_eq!(a, catalogue(&["edit_file", "mcp__srv__get-user.profile"]), "the same pool gives the same bytes");
        for word in ["Exec is", "server", "tools in", "2 ", "budget"] {
            assert!(!a.text().contains(word), "{word:?} in {}", a.text());
        }
        assert!(!EMPTY_TEXT.contains("Exec") && !WITHDRAWN_TEXT.contains("Exec"));
    }

    #[test]
    fn a_source_too_large_to_list_is_one_line_of_its_count_and_topics() {
        let operation = |n: usize| {
            ToolDefinition::new(format!("api__gh__op{n:04}"), "", json!({ "type": "object" }))
                .unwrap()
                .with_source(ToolSource::Api { source: "gh".into() })
                .with_tags(vec![["repos", "pulls", "issues"][n % 3].to_string()])
        };
        let small = |n: usize| {
            ToolDefinition::new(format!("mcp__fx__t{n}"), "", json!({ "type": "object" }))
                .unwrap()
                .with_source(ToolSource::Mcp { server: "fx".into() })
        };
        let mut pool: Vec<ToolDefinition> = (0..=MAX_NAMES_PER_SOURCE).map(operation).collect();
        pool.extend((0..3).map(small));
        pool.insert(0, ToolDefinition::new("alpha", "", json!({ "type": "object" })).unwrap());
        let text = Catalogue::of(&pool).text().to_string();
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "alpha",
                "api__gh__*: 51 operations of the API gh, about issues, pulls, repos; tools.ToolSearch finds them by what they do",
                "mcp__fx__t0",
                "mcp__fx__t1",
                "mcp__fx__t2",
            ]
        );
        pool.pop();
        pool.pop();
        assert_eq!(Catalogue::of(&pool), Catalogue::of(&pool), "the same pool gives the same bytes");
        pool.truncate(MAX_NAMES_PER_SOURCE + 1);
        assert!(Catalogue::of(&pool).text().lines().all(|line| !line.contains("__*")), "up to the bound, names");
    }

    #[test]
    fn the_broadcast_follows_the_last_marker_in_the_history() {
        let mut history = vec![Message::user("hello")];
        // A pool empty from the start: silence.
        assert_eq!(step(&mut history, ExecStatus::EmptyPool, &[]), None);
        assert_eq!(step(&mut history, ExecStatus::Disabled, &[]), None, "nothing to withdraw");
        // The first broadcast, in this very request; then nothing while the pool is the same.
        let first = step(&mut history, ExecStatus::Declared, &["a", "b"]).unwrap();
        assert_eq!(first, catalogue(&["a", "b"]).text());
        assert!(history.last().unwrap().is_meta());
        assert_eq!(step(&mut history, ExecStatus::Declared, &["a", "b"]), None);
        history.push(Message::assistant("ok"));
        assert_eq!(step(&mut history, ExecStatus::Declared, &["a", "b"]), None, "later messages do not hide the marker");
        // A changed pool: the whole list again.
        assert_eq!(step(&mut history, ExecStatus::Declared, &["a", "c"]).unwrap(), catalogue(&["a", "c"]).text());
        // Emptied after a broadcast: one sentence, once.
        assert_eq!(step(&mut history, ExecStatus::EmptyPool, &[]).unwrap(), EMPTY_TEXT);
        assert_eq!(step(&mut history, ExecStatus::EmptyPool, &[]), None);
        assert_eq!(step(&mut history, ExecStatus::Declared, &["a", "c"]).unwrap(), catalogue(&["a", "c"]).text());
        // Exec withdrawn: the announcement no longer applies; reopened with the same pool:
        // the whole list again.
        assert_eq!(step(&mut history, ExecStatus::Denied, &[]).unwrap(), WITHDRAWN_TEXT);
        assert_eq!(step(&mut history, ExecStatus::Disabled, &[]), None);
        assert_eq!(step(&mut history, ExecStatus::Declared, &["a", "c"]).unwrap(), catalogue(&["a", "c"]).text());
    }

    #[test]
    fn appending_never_touches_earlier_messages() {
        let mut history = vec![Message::user("hello")];
        step(&mut history, ExecStatus::Declared, &["a"]);
        let before = serde_json::to_vec(&history).unwrap();
        step(&mut history, ExecStatus::Declared, &["b"]);
        assert!(serde_json::to_vec(&history).unwrap().starts_with(&before[..before.len() - 1]));
        assert_eq!(history.len(), 3);
    }

    #[test]
    fn a_lost_foreign_or_corrupted_marker_counts_as_never_broadcast() {
        let mut history = vec![Message::user("hello")];
        step(&mut history, ExecStatus::Declared, &["a"]);
        // Compaction dropped the broadcast message: the whole list again.
        history.remove(1);
        assert!(step(&mut history, ExecStatus::Declared, &["a"]).is_some());
        for foreign in [
            json!("garbage"),
            json!({"kind": "catalogue"}),
            json!({"kind": "deltas", "sha256": "0".repeat(64)}),
            json!({"kind": "catalogue", "sha256": "not hex"}),
            json!({"kind": "catalogue", "sha256": "0".repeat(64), "extra": 1}),
        ] {
            let history = vec![Message::user("x").with_metadata(MARKER_KEY, foreign.clone())];
            assert!(next(&history, ExecStatus::Declared, &catalogue(&["a"])).is_some(), "{foreign}");
            assert!(next(&history, ExecStatus::EmptyPool, &catalogue(&[])).is_none(), "{foreign}: never broadcast");
        }
    }
}
