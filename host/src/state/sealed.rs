//! The host's one way into a state store ([`SealedStore`]: every entry sealed on the way in
//! and checked on the way out), and the store a user's location names ([`open_store`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::state::directory::DirectoryStore;
use crate::state::redis_store::RedisStore;
use crate::state::seal::StateKey;
use crate::state::store::{StateStore, StoreError, check_key, check_payload};

/// A store and the key that seals what goes in it: the one way the host writes and reads
/// state, so no entry reaches a caller without its seal checked.
#[derive(Clone)]
pub struct SealedStore {
    store: Arc<dyn StateStore>,
    key: StateKey,
}

impl std::fmt::Debug for SealedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedStore").field("store", &self.store.describe()).finish_non_exhaustive()
    }
}

impl SealedStore {
    pub fn new(store: Arc<dyn StateStore>, key: StateKey) -> Self {
        SealedStore { store, key }
    }

    /// Where the store is, for messages.
    pub fn describe(&self) -> String {
        self.store.describe()
    }

    /// Seals `payload` for `key` and keeps it for `ttl`.
    pub async fn put(&self, key: &str, payload: &[u8], ttl: Duration) -> Result<(), StoreError> {
        check_key(key)?;
        check_payload(payload)?;
        self.store.put(key, &self.key.seal(key, payload, ttl), ttl).await
    }

    /// The payload under `key`, its seal checked; `None` when there is none or it expired
    /// (whether the store or its seal says so).
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        self.opened(key, self.store.get(key).await)
    }

    /// The payload under `key`, removed in the same step, its seal checked: of two callers,
    /// exactly one gets it.
    pub async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        self.opened(key, self.store.take(key).await)
    }

    /// Removes `key`, saying whether it was there: of two callers, exactly one gets `true`.
    /// An entry read with [`Self::get`] and never rewritten is then taken without reading
    /// it again.
    pub async fn claim(&self, key: &str) -> Result<bool, StoreError> {
        check_key(key)?;
        self.store.claim(key).await
    }

    /// What a store gave for `key`, its seal checked; an expired entry is no entry.
    fn opened(&self, key: &str, read: Result<Option<Vec<u8>>, StoreError>) -> Result<Option<Vec<u8>>, StoreError> {
        match read.and_then(|sealed| sealed.map(|sealed| self.key.open(key, &sealed)).transpose()) {
            Err(StoreError::Expired) => Ok(None),
            opened => opened,
        }
    }

    pub async fn remove(&self, key: &str) -> Result<(), StoreError> {
        check_key(key)?;
        self.store.remove(key).await
    }

    /// `payload` sealed for someone else to keep and give back (a client's opaque request
    /// state), bound to `binding` and expiring `ttl` from now. Sealed apart from every entry
    /// of the store: neither can be passed off as the other.
    pub fn seal_token(&self, binding: &str, payload: &[u8], ttl: Duration) -> Vec<u8> {
        self.key.seal(&format!("token:{binding}"), payload, ttl)
    }

    /// The payload of a token [`SealedStore::seal_token`] made with `binding`: refused when
    /// it was changed, made for another binding or by a host with another key, or expired.
    pub fn open_token(&self, binding: &str, token: &[u8]) -> Result<Vec<u8>, StoreError> {
        self.key.open(&format!("token:{binding}"), token)
    }

    /// The keys that start with `prefix`, at most `limit`.
    pub async fn keys(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        check_key(prefix)?;
        self.store.keys(prefix, limit).await
    }
}

/// The store `location` names: `redis://HOST[:PORT][/DB]` (or `rediss://`), else a folder.
pub async fn open_store(location: &str) -> Result<Arc<dyn StateStore>, StoreError> {
    if location.starts_with("redis://") || location.starts_with("rediss://") {
        return Ok(Arc::new(RedisStore::connect(location).await?));
    }
    if location.contains("://") {
        let why = "only redis:// and rediss:// addresses are stores; anything else is read as a folder".into();
        return Err(StoreError::BadLocation { given: location.into(), why });
    }
    Ok(Arc::new(DirectoryStore::open(Path::new(location))?))
}

/// The default folder store, `$XDG_STATE_HOME/exec-host/store`, and its key file beside it.
pub fn default_locations() -> Option<(PathBuf, PathBuf)> {
    let base = crate::support::dirs::BaseDir::State.exec_host()?;
    Some((base.join("store"), base.join("state.key")))
}
