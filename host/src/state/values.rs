//! The values a conversation's scripts keep between Execs with `store(key, value)` and
//! `load(key)`: [`ConversationValues`] holds them (in a state store under
//! `values/{conversation}`, or in memory for a session without one), [`ValueBounds`] bounds
//! them, and [`ExecValues`] is what one Exec sees.
//!
//! An Exec reads the conversation's values once, when its script first calls `load` or
//! `store`, and works on that copy with its own changes over it; its changes are kept,
//! key by key, when the Exec returns to its caller (finished, failed or parked). So a
//! script pays one read and one write for any number of calls, `load` always sees the
//! script's own `store`, and two Execs of one conversation that change different keys both
//! keep their changes; of two that change one key, the one that ends last wins.
//!
//! A resumed Exec replays its stores from before it parked ([`ExecValues::stored_before`]):
//! they were kept when it parked, so they are not kept again, but they still win over the
//! conversation's values for their keys, whatever another Exec stored meanwhile.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::state::sealed::SealedStore;
use crate::state::store::{DEFAULT_ENTRY_TTL, StoreError};
use crate::support::lock::Unpoisoned;

/// Bytes of one key given to `store`/`load`.
pub const MAX_VALUE_KEY_BYTES: usize = 256;

/// Default bytes of one kept value, as JSON text.
pub const DEFAULT_MAX_VALUE_BYTES: usize = 1024 * 1024;

/// Default number of keys one conversation keeps.
pub const DEFAULT_MAX_VALUE_KEYS: usize = 1_000;

/// Default bytes one conversation keeps, keys and values (as JSON text) together.
pub const DEFAULT_MAX_CONVERSATION_VALUE_BYTES: usize = 4 * 1024 * 1024;

/// What one conversation's kept values may take. Each bound has a command-line flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ValueBounds {
    /// Bytes of one value, as JSON text.
    pub value_bytes: usize,
    /// Keys one conversation keeps.
    pub keys: usize,
    /// Bytes of keys and values together (a store entry is at most 16 MiB, so this is
    /// capped below that).
    pub bytes: usize,
}

impl Default for ValueBounds {
    fn default() -> Self {
        ValueBounds {
            value_bytes: DEFAULT_MAX_VALUE_BYTES,
            keys: DEFAULT_MAX_VALUE_KEYS,
            bytes: DEFAULT_MAX_CONVERSATION_VALUE_BYTES,
        }
    }
}

impl ValueBounds {
    pub fn with_value_bytes(mut self, bytes: usize) -> Self {
        self.value_bytes = bytes;
        self
    }

    pub fn with_keys(mut self, keys: usize) -> Self {
        self.keys = keys;
        self
    }

    /// At most [`MAX_CONVERSATION_VALUE_BYTES`]: the conversation's values are one entry.
    pub fn with_bytes(mut self, bytes: usize) -> Self {
        self.bytes = bytes.min(MAX_CONVERSATION_VALUE_BYTES);
        self
    }
}

/// The most [`ValueBounds::bytes`] can be: the values and their framing fit one entry of
/// any store with room to spare.
pub const MAX_CONVERSATION_VALUE_BYTES: usize = 8 * 1024 * 1024;

/// Why `store` or `load` could not do what was asked, as the script's `Error` says it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    #[error("a key is a string of 1 to {MAX_VALUE_KEY_BYTES} bytes; this one has {bytes}")]
    BadKey { bytes: usize },
    #[error("the value of {key:?} takes {bytes} bytes as JSON, more than the {limit} a kept value may take")]
    ValueTooLarge { key: String, bytes: usize, limit: usize },
    #[error("this conversation keeps {limit} keys already; remove one (store(key, undefined)) before adding {key:?}")]
    TooManyKeys { key: String, limit: usize },
    #[error("this conversation's values would take {bytes} bytes, more than the {limit} it may keep")]
    TooManyBytes { bytes: usize, limit: usize },
    #[error("the conversation's values cannot be read")]
    Unreadable(#[source] StoreError),
    #[error("the conversation's kept values are not readable JSON")]
    Corrupt(#[source] serde_json::Error),
    #[error("the conversation's values cannot be written")]
    Unwritable(#[source] StoreError),
}

/// One conversation's values: key to the JSON text of a plain value.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Values(BTreeMap<String, String>);

/// Values from `(key, JSON text)` pairs.
impl FromIterator<(String, String)> for Values {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        Values(pairs.into_iter().collect())
    }
}

impl Values {
    /// Bytes the values take, keys and values together.
    fn bytes(&self) -> usize {
        self.0.iter().map(|(key, value)| key.len() + value.len()).sum()
    }

    /// The values with `changes` over them, checked against `bounds`.
    fn changed(mut self, changes: &Changes, bounds: &ValueBounds) -> Result<Values, ValueError> {
        for (key, value) in &changes.0 {
            match value {
                Some(value) => self.0.insert(key.clone(), value.clone()),
                None => self.0.remove(key),
            };
        }
        if self.0.len() > bounds.keys {
            let key = changes.0.keys().find(|key| self.0.contains_key(*key)).cloned().unwrap_or_default();
            return Err(ValueError::TooManyKeys { key, limit: bounds.keys });
        }
        let bytes = self.bytes();
        if bytes > bounds.bytes {
            return Err(ValueError::TooManyBytes { bytes, limit: bounds.bytes });
        }
        Ok(self)
    }
}

/// What one Exec changed: a key's new value, or `None` where it removed a key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes(BTreeMap<String, Option<String>>);

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Where a conversation's values are kept.
enum Keeping {
    /// In the session's memory: they last as long as it does.
    Memory(Mutex<Values>),
    /// In a state store, as one sealed entry that expires `ttl` after its last change.
    Store { store: SealedStore, entry: String, ttl: Duration },
}

/// The values one conversation's scripts keep, and their bounds.
pub struct ConversationValues {
    keeping: Keeping,
    bounds: ValueBounds,
    /// One commit at a time in this process: a commit reads, merges and writes.
    committing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for ConversationValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationValues").field("bounds", &self.bounds).finish_non_exhaustive()
    }
}

impl ConversationValues {
    /// Values kept in memory, starting from `values`.
    pub fn in_memory(values: Values, bounds: ValueBounds) -> Self {
        ConversationValues { keeping: Keeping::Memory(Mutex::new(values)), bounds, committing: Default::default() }
    }

    /// Values kept in `store` for `conversation`.
    pub fn in_store(store: SealedStore, conversation: &str, bounds: ValueBounds) -> Self {
        let keeping = Keeping::Store { store, entry: format!("values/{conversation}"), ttl: DEFAULT_ENTRY_TTL };
        ConversationValues { keeping, bounds, committing: Default::default() }
    }

    pub fn bounds(&self) -> &ValueBounds {
        &self.bounds
    }

    /// The values as they are now.
    pub async fn read(&self) -> Result<Values, ValueError> {
        match &self.keeping {
            Keeping::Memory(values) => Ok(values.locked().clone()),
            Keeping::Store { store, entry, .. } => match store.get(entry).await.map_err(ValueError::Unreadable)? {
                None => Ok(Values::default()),
                Some(bytes) => serde_json::from_slice(&bytes).map_err(ValueError::Corrupt),
            },
        }
    }

    /// Keeps `changes` over the values as they are now (not as the Exec first read them),
    /// within the bounds; nothing is kept when they do not fit.
    pub async fn commit(&self, changes: &Changes) -> Result<(), ValueError> {
        if changes.is_empty() {
            return Ok(());
        }
        let _one_at_a_time = self.committing.lock().await;
        let values = self.read().await?.changed(changes, &self.bounds)?;
        match &self.keeping {
            Keeping::Memory(kept) => *kept.locked() = values,
            Keeping::Store { store, entry, .. } if values.0.is_empty() => {
                store.remove(entry).await.map_err(ValueError::Unwritable)?
            }
            Keeping::Store { store, entry, ttl } => {
                let payload = serde_json::to_vec(&values).map_err(ValueError::Corrupt)?;
                store.put(entry, &payload, *ttl).await.map_err(ValueError::Unwritable)?
            }
        }
        Ok(())
    }
}

/// What one Exec's `store` and `load` see: the conversation's values as it first read
/// them, with its own changes over them.
#[derive(Debug, Default)]
pub struct ExecValues {
    /// Read when the script first calls `store` or `load`.
    read: Option<Values>,
    /// What it stored before it parked, kept then: seen, never kept again.
    kept: Changes,
    /// What it stored since it started or resumed: seen, and kept when it returns.
    changes: Changes,
    /// Keys and bytes of what the script sees, kept as it changes so a store costs no walk.
    keys: usize,
    bytes: usize,
}

impl ExecValues {
    /// `load(key)`: the JSON text kept under `key`.
    pub async fn load(&mut self, from: &ConversationValues, key: &str) -> Result<Option<String>, ValueError> {
        check_key(key)?;
        self.read(from).await?;
        Ok(self.current(key).cloned())
    }

    /// `store(key, value)`: keeps `value` (JSON text) under `key`, or removes `key` for
    /// `None`, once it is checked against the bounds. A store that makes nothing larger
    /// (a replacement no longer, a removal) is always taken.
    pub async fn store(&mut self, from: &ConversationValues, key: &str, value: Option<String>) -> Result<(), ValueError> {
        check_key(key)?;
        let bounds = *from.bounds();
        if let Some(value) = &value
            && value.len() > bounds.value_bytes
        {
            return Err(ValueError::ValueTooLarge { key: key.to_string(), bytes: value.len(), limit: bounds.value_bytes });
        }
        self.read(from).await?;
        let size = |value: Option<&String>| value.map_or(0, |value| key.len() + value.len());
        let current = self.current(key);
        let (had, old) = (current.is_some(), size(current));
        let keys = self.keys - usize::from(had) + usize::from(value.is_some());
        if keys > bounds.keys && keys > self.keys {
            return Err(ValueError::TooManyKeys { key: key.to_string(), limit: bounds.keys });
        }
        let bytes = self.bytes - old + size(value.as_ref());
        if bytes > bounds.bytes && bytes > self.bytes {
            return Err(ValueError::TooManyBytes { bytes, limit: bounds.bytes });
        }
        let in_base = self.read.as_ref().is_some_and(|read| read.0.contains_key(key));
        match value {
            Some(value) => self.changes.0.insert(key.to_string(), Some(value)),
            // Removing a key the conversation did not have needs no record.
            None if !in_base => self.changes.0.remove(key),
            None => self.changes.0.insert(key.to_string(), None),
        };
        (self.keys, self.bytes) = (keys, bytes);
        Ok(())
    }

    /// A `store(key, value)` the Exec made before it parked, as its replay makes it again:
    /// kept in the conversation when it parked, so only seen from here (see [`Self::current`]).
    /// Its bounds were checked then. Comes before any live `store` or `load`.
    pub fn stored_before(&mut self, key: &str, value: Option<String>) {
        debug_assert!(self.read.is_none() && self.changes.is_empty(), "a replay comes first");
        self.kept.0.insert(key.to_string(), value);
    }

    /// What the Exec changed, to commit when it returns.
    pub fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.changes)
    }

    /// The value the script sees under `key`: an Exec reads its own writes, those since it
    /// last started first, then those from before it parked, then the conversation's.
    fn current(&self, key: &str) -> Option<&String> {
        match self.changes.0.get(key).or_else(|| self.kept.0.get(key)) {
            Some(change) => change.as_ref(),
            None => self.read.as_ref().and_then(|read| read.0.get(key)),
        }
    }

    async fn read(&mut self, from: &ConversationValues) -> Result<(), ValueError> {
        if self.read.is_none() {
            let read = from.read().await?;
            let (mut keys, mut bytes) = (read.0.len(), read.bytes());
            // What the script sees is the conversation's values with its own over them.
            for (key, value) in &self.kept.0 {
                if let Some(there) = read.0.get(key) {
                    (keys, bytes) = (keys - 1, bytes - key.len() - there.len());
                }
                if let Some(value) = value {
                    (keys, bytes) = (keys + 1, bytes + key.len() + value.len());
                }
            }
            (self.keys, self.bytes) = (keys, bytes);
            self.read = Some(read);
        }
        Ok(())
    }
}

fn check_key(key: &str) -> Result<(), ValueError> {
    if key.is_empty() || key.len() > MAX_VALUE_KEY_BYTES {
        return Err(ValueError::BadKey { bytes: key.len() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds() -> ValueBounds {
        ValueBounds::default().with_value_bytes(10).with_keys(2).with_bytes(15)
    }

    #[tokio::test]
    async fn an_exec_sees_its_own_changes_and_keeps_them_key_by_key() {
        let kept = ConversationValues::in_memory(Values::default(), bounds());
        let (mut first, mut second) = (ExecValues::default(), ExecValues::default());
        first.store(&kept, "a", Some("1".into())).await.unwrap();
        assert_eq!(first.load(&kept, "a").await.unwrap().as_deref(), Some("1"));
        // The second Exec read before the first committed, and changes another key.
        assert_eq!(second.load(&kept, "a").await.unwrap(), None);
        second.store(&kept, "b", Some("2".into())).await.unwrap();
        kept.commit(&first.take_changes()).await.unwrap();
        kept.commit(&second.take_changes()).await.unwrap();
        let now = kept.read().await.unwrap();
        assert_eq!(now.0.get("a").map(String::as_str), Some("1"));
        assert_eq!(now.0.get("b").map(String::as_str), Some("2"));
    }

    #[tokio::test]
    async fn a_resumed_exec_sees_what_it_stored_before_it_parked_and_keeps_it_only_once() {
        let kept = ConversationValues::in_memory(Values::default(), ValueBounds::default());
        let mut before = ExecValues::default();
        before.store(&kept, "a", Some("1".into())).await.unwrap();
        before.store(&kept, "gone", Some("1".into())).await.unwrap();
        before.store(&kept, "gone", None).await.unwrap();
        kept.commit(&before.take_changes()).await.unwrap();
        // Another Exec changes both keys while the first is parked.
        let mut other = ExecValues::default();
        other.store(&kept, "a", Some("2".into())).await.unwrap();
        other.store(&kept, "gone", Some("2".into())).await.unwrap();
        kept.commit(&other.take_changes()).await.unwrap();

        let mut resumed = ExecValues::default();
        resumed.stored_before("a", Some("1".into()));
        resumed.stored_before("gone", Some("1".into()));
        resumed.stored_before("gone", None);
        assert_eq!(resumed.load(&kept, "a").await.unwrap().as_deref(), Some("1"));
        assert_eq!(resumed.load(&kept, "gone").await.unwrap(), None);
        assert_eq!((resumed.keys, resumed.bytes), (1, 2), "what it sees is counted");
        assert!(resumed.take_changes().is_empty(), "nothing is kept twice");
        assert_eq!(kept.read().await.unwrap().0.get("a").map(String::as_str), Some("2"));
    }

    #[tokio::test]
    async fn every_bound_refuses_the_store_that_passes_it_and_keeps_nothing_of_it() {
        let kept = ConversationValues::in_memory(Values::default(), bounds());
        let mut exec = ExecValues::default();
        assert!(matches!(exec.store(&kept, "", Some("1".into())).await, Err(ValueError::BadKey { bytes: 0 })));
        let long = "k".repeat(MAX_VALUE_KEY_BYTES + 1);
        assert!(matches!(exec.store(&kept, &long, Some("1".into())).await, Err(ValueError::BadKey { .. })));
        assert!(matches!(exec.store(&kept, "a", Some("x".repeat(11))).await, Err(ValueError::ValueTooLarge { .. })));
        exec.store(&kept, "a", Some("1".into())).await.unwrap();
        exec.store(&kept, "b", Some("2".into())).await.unwrap();
        assert!(matches!(exec.store(&kept, "c", Some("3".into())).await, Err(ValueError::TooManyKeys { limit: 2, .. })));
        // Replacing and removing are always possible.
        exec.store(&kept, "b", None).await.unwrap();
        exec.store(&kept, "c", Some("3".repeat(10))).await.unwrap();
        assert!(matches!(
            exec.store(&kept, "a", Some("9".repeat(10))).await,
            Err(ValueError::TooManyBytes { bytes: 22, limit: 15 })
        ));
        assert_eq!(exec.load(&kept, "a").await.unwrap().as_deref(), Some("1"));
        assert_eq!(exec.load(&kept, "b").await.unwrap(), None);
        kept.commit(&exec.take_changes()).await.unwrap();
        assert_eq!(kept.read().await.unwrap().0.len(), 2);
    }

    #[tokio::test]
    async fn a_commit_that_no_longer_fits_keeps_nothing() {
        let kept = ConversationValues::in_memory(Values::default(), bounds());
        let (mut first, mut second) = (ExecValues::default(), ExecValues::default());
        first.store(&kept, "a", Some("1".into())).await.unwrap();
        first.store(&kept, "b", Some("2".into())).await.unwrap();
        second.store(&kept, "c", Some("3".into())).await.unwrap();
        kept.commit(&first.take_changes()).await.unwrap();
        assert!(matches!(kept.commit(&second.take_changes()).await, Err(ValueError::TooManyKeys { .. })));
        assert!(!kept.read().await.unwrap().0.contains_key("c"));
    }
}
