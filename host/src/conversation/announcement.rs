//! The announcement: the names of the pool's tools, told to the model in a message at the
//! tail of the conversation, never in `Exec`'s declaration (spec 004, stories 公告只列延迟工具
//! 的名字 and 公告作为尾部消息增量播报).
//!
//! The text holds the pool's names and nothing else that could change: no counts, budgets,
//! servers or descriptions, every name, in order. The same pool gives the same bytes.
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

use crate::catalogue::pool::ExecStatus;
use crate::conversation::message::Message;

/// Metadata key of the marker a broadcast message carries.
pub const MARKER_KEY: &str = "exec-host/announcement";

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
    /// The announcement of a pool whose names are `names` (in the pool's order).
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut text = String::from(CATALOGUE_HEADING);
        for name in names {
            text.push('\n');
            text.push_str(name);
        }
        let sha256 = sha256(&text);
        Catalogue { text, sha256 }
    }

    #[cfg(test)]
    pub fn text(&self) -> &str {
        &self.text
    }
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
        Catalogue::of(names.iter().copied())
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
