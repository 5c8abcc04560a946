//! What outlives a process: a [`StateStore`] keeps entries under string keys, each sealed
//! (see [`StateKey`]) and expiring. Two stores: a private folder, the default for one
//! machine ([`DirectoryStore`]), and Redis, for replicas that share their state
//! ([`RedisStore`]). [`open_store`] turns what a user wrote (`DIR` or `redis://HOST:PORT/DB`)
//! into one, and [`SealedStore`] is how the host reads and writes it. The values scripts
//! keep with `store()` and `load()` are a conversation's [`ConversationValues`].
//!
//! The store is untrusted for integrity: whatever it gives back is opened under the state
//! key, so an entry changed, moved under another key, kept past its expiry or written by a
//! host with another key is refused, never used. Every entry and every store is bounded.

mod directory;
mod redis_store;
mod seal;
mod sealed;
mod store;
mod values;

pub use directory::{DirectoryStore, MAX_STORE_BYTES, MAX_STORE_ENTRIES};
pub use redis_store::{REDIS_TIMEOUT, RedisStore};
pub use seal::{STATE_KEY_BYTES, StateKey};
pub use sealed::{SealedStore, default_locations, open_store};
pub use store::{DEFAULT_ENTRY_TTL, MAX_ENTRY_BYTES, MAX_KEY_BYTES, StateStore, StoreError};
pub use values::{
    ConversationValues, DEFAULT_MAX_CONVERSATION_VALUE_BYTES, DEFAULT_MAX_VALUE_BYTES, DEFAULT_MAX_VALUE_KEYS, ExecValues,
    MAX_CONVERSATION_VALUE_BYTES, MAX_VALUE_KEY_BYTES, ValueBounds, ValueError, Values,
};
