//! What outlives a process: a [`StateStore`] keeps entries under string keys, each sealed
//! (see [`StateKey`]) and expiring. Two stores: a private folder, the default for one
//! machine ([`DirectoryStore`]), and Redis, for replicas that share their state
//! ([`RedisStore`]). [`open_store`] turns what a user wrote (`DIR` or `redis://HOST:PORT/DB`)
//! into one, [`StorePlaces`] opens one with its key where a person named them (or this
//! machine's defaults), and [`SealedStore`] is how the host reads and writes it. The values scripts
//! keep with `store()` and `load()` are a conversation's `ConversationValues`, bounded by
//! [`crate::ValueBounds`].
//!
//! The store is untrusted for integrity: whatever it gives back is opened under the state
//! key, so an entry changed, moved under another key, kept past its expiry or written by a
//! host with another key is refused, never used. Every entry and every store is bounded.

mod directory;
mod places;
mod redis_store;
mod seal;
mod sealed;
mod store;
pub(crate) mod values;

pub use directory::{DirectoryStore, MAX_STORE_BYTES, MAX_STORE_ENTRIES};
pub use places::{OpenStoreError, StorePlaces};
pub use redis_store::{REDIS_TIMEOUT, RedisStore};
pub use seal::{STATE_KEY_BYTES, StateKey};
pub use sealed::{SealedStore, default_locations, open_store};
pub use store::{DEFAULT_ENTRY_TTL, MAX_ENTRY_BYTES, MAX_KEY_BYTES, StateStore, StoreError};
pub(crate) use values::{ConversationValues, ExecValues, ValueBounds, ValueError, Values};
/// The bounds of the values scripts keep with `store()` (see [`crate::ValueBounds`]).
pub use values::{
    DEFAULT_MAX_CONVERSATION_VALUE_BYTES, DEFAULT_MAX_VALUE_BYTES, DEFAULT_MAX_VALUE_KEYS, MAX_CONVERSATION_VALUE_BYTES,
    MAX_VALUE_KEY_BYTES,
};
