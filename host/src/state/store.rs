//! What every state store is: the [`StateStore`] operations, their errors, and the bounds
//! that hold in any store.

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;

/// Bytes of one entry's payload, in any store.
pub const MAX_ENTRY_BYTES: usize = 16 * 1024 * 1024;

/// Bytes of a key, in any store.
pub const MAX_KEY_BYTES: usize = 512;

/// How long an entry is kept unless its writer says otherwise.
pub const DEFAULT_ENTRY_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Where entries are kept. Every method is bounded in time: a store that cannot answer says
/// so with an error, it never hangs its caller.
pub trait StateStore: Send + Sync + 'static {
    /// Keeps `payload` under `key` for `ttl`, replacing what was there.
    fn put<'a>(&'a self, key: &'a str, payload: &'a [u8], ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The payload under `key`; `None` when there is none (or it expired).
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>>;

    /// The payload under `key`, removed in the same step: of two callers taking one key at
    /// once, exactly one gets it.
    fn take<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>>;

    /// Removes `key`, saying whether it was there: of two callers claiming one key at once,
    /// exactly one gets `true`. For an entry written once and read before, this is `take`
    /// without reading it again.
    fn claim<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { Ok(self.take(key).await?.is_some()) })
    }

    /// Removes `key`; removing what is not there is not an error.
    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The keys that start with `prefix`, at most `limit` of them, in no order.
    fn keys<'a>(&'a self, prefix: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;

    /// Where the store is, for messages (`redis://10.0.0.5:6379/0`, a folder).
    fn describe(&self) -> String;
}

impl std::fmt::Debug for dyn StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StateStore({})", self.describe())
    }
}

/// Why a store could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("the state store {store} could not be reached")]
    Unreachable {
        store: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("the state store {store} did not answer within {} s", .after.as_secs())]
    TimedOut { store: String, after: Duration },
    #[error("the state store {store} cannot be used: {why}")]
    Unusable { store: String, why: String },
    #[error("the state store {store} is full: {why}")]
    Full { store: String, why: String },
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("an entry of {bytes} bytes is more than a state store keeps ({} bytes)", MAX_ENTRY_BYTES)]
    TooLarge { bytes: usize },
    #[error("a key of {bytes} bytes is longer than a state store takes ({} bytes)", MAX_KEY_BYTES)]
    KeyTooLong { bytes: usize },
    #[error("the entry was changed, or sealed by a host with another state key")]
    Tampered,
    #[error("the entry has expired")]
    Expired,
    #[error("the state key file {path} cannot be used: {why}")]
    BadKeyFile { path: PathBuf, why: String },
    /// The operating system gave no random bytes (for a key or an entry's name).
    #[error("the operating system gave no random bytes")]
    Random(#[source] std::io::Error),
    #[error("{given:?} is neither a folder nor a redis://HOST:PORT[/DB] address: {why}")]
    BadLocation { given: String, why: String },
}

/// Refuses a key no store takes.
pub(crate) fn check_key(key: &str) -> Result<(), StoreError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(StoreError::KeyTooLong { bytes: key.len() });
    }
    Ok(())
}

/// Refuses a payload no store keeps.
pub(crate) fn check_payload(payload: &[u8]) -> Result<(), StoreError> {
    if payload.len() > MAX_ENTRY_BYTES {
        return Err(StoreError::TooLarge { bytes: payload.len() });
    }
    Ok(())
}
