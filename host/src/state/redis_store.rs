//! The Redis store, for replicas that share their state: any replica reads what another
//! wrote. Entries live under `exec-host:<key>` with Redis's own expiry (`SET ... PX`), a
//! take is one `GETDEL` and a claim one `DEL` (each atomic in Redis), and every command is bounded by
//! [`REDIS_TIMEOUT`]: a server that went away fails the operation, it never hangs it. The
//! connection reconnects by itself on the next command.

use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::state::seal::MAX_SEALED_BYTES;
use crate::state::store::{StateStore, StoreError};

/// Longest one Redis command (or connecting) may take.
pub const REDIS_TIMEOUT: Duration = Duration::from_secs(5);

/// What every key of ours starts with, so a shared Redis can hold other data.
const NAMESPACE: &str = "exec-host:";

/// Keys read per `SCAN` step.
const SCAN_STEP: usize = 256;

/// A Redis server's store.
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    address: String,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").field("address", &self.address).finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `address` (`redis://HOST[:PORT][/DB]`, or `rediss://` for TLS when this
    /// build has it), within [`REDIS_TIMEOUT`].
    pub async fn connect(address: &str) -> Result<Self, StoreError> {
        let shown = without_password(address);
        let client =
            redis::Client::open(address).map_err(|e| StoreError::BadLocation { given: shown.clone(), why: e.to_string() })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_TIMEOUT))
            .set_response_timeout(Some(REDIS_TIMEOUT))
            .set_number_of_retries(1);
        let connecting = ConnectionManager::new_with_config(client, config);
        let connection = match tokio::time::timeout(REDIS_TIMEOUT, connecting).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(e)) => return Err(StoreError::Unreachable { store: shown, source: Box::new(e) }),
            Err(_) => return Err(StoreError::TimedOut { store: shown, after: REDIS_TIMEOUT }),
        };
        let store = RedisStore { connection, address: shown };
        // A server that accepts connections but cannot answer is found now, not mid-Exec.
        store.run::<String>(redis::cmd("PING")).await?;
        Ok(store)
    }

    /// Runs `command` within [`REDIS_TIMEOUT`].
    async fn run<T: redis::FromRedisValue>(&self, command: redis::Cmd) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        match tokio::time::timeout(REDIS_TIMEOUT, command.query_async::<T>(&mut connection)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout() => {
                Err(StoreError::Unreachable { store: self.address.clone(), source: Box::new(e) })
            }
            Ok(Err(e)) => Err(StoreError::Unusable { store: self.address.clone(), why: e.to_string() }),
            Err(_) => Err(StoreError::TimedOut { store: self.address.clone(), after: REDIS_TIMEOUT }),
        }
    }

    /// A payload as Redis gave it, refused past what an entry can be.
    fn bounded(&self, payload: Option<Vec<u8>>) -> Result<Option<Vec<u8>>, StoreError> {
        match payload {
            Some(bytes) if bytes.len() > MAX_SEALED_BYTES => Err(StoreError::Tampered),
            other => Ok(other),
        }
    }
}

impl StateStore for RedisStore {
    fn put<'a>(&'a self, key: &'a str, payload: &'a [u8], ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let milliseconds = ttl.as_millis().clamp(1, u128::from(u64::MAX)) as u64;
            let mut command = redis::cmd("SET");
            command.arg(format!("{NAMESPACE}{key}")).arg(payload).arg("PX").arg(milliseconds);
            self.run::<()>(command).await
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            let mut command = redis::cmd("GET");
            command.arg(format!("{NAMESPACE}{key}"));
            self.bounded(self.run(command).await?)
        })
    }

    fn take<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            let mut command = redis::cmd("GETDEL");
            command.arg(format!("{NAMESPACE}{key}"));
            self.bounded(self.run(command).await?)
        })
    }

    fn claim<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut command = redis::cmd("DEL");
            command.arg(format!("{NAMESPACE}{key}"));
            Ok(self.run::<u64>(command).await? == 1)
        })
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut command = redis::cmd("DEL");
            command.arg(format!("{NAMESPACE}{key}"));
            self.run::<()>(command).await
        })
    }

    fn keys<'a>(&'a self, prefix: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let pattern = format!("{}*", glob_escape(&format!("{NAMESPACE}{prefix}")));
            let mut keys = Vec::new();
            let mut cursor = 0u64;
            // Each step reads a bounded number of keys; the walk ends at the limit.
            loop {
                let mut command = redis::cmd("SCAN");
                command.arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(SCAN_STEP);
                let (next, found): (u64, Vec<String>) = self.run(command).await?;
                keys.extend(found.into_iter().filter_map(|key| key.strip_prefix(NAMESPACE).map(str::to_string)));
                if next == 0 || keys.len() >= limit {
                    break;
                }
                cursor = next;
            }
            keys.truncate(limit);
            Ok(keys)
        })
    }

    fn describe(&self) -> String {
        self.address.clone()
    }
}

/// `text` with Redis's glob characters escaped, to match as it is.
fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// An address as it may be shown: a password in it replaced.
fn without_password(address: &str) -> String {
    let Some((scheme, rest)) = address.split_once("://") else { return address.to_string() };
    match rest.split_once('@') {
        Some((credentials, host)) if credentials.contains(':') => {
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}")
        }
        _ => address.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_shown_and_globs_match_as_written() {
        assert_eq!(without_password("redis://:secret@h:6379/0"), "redis://:***@h:6379/0");
        assert_eq!(without_password("redis://user:secret@h"), "redis://user:***@h");
        assert_eq!(without_password("redis://h:6379"), "redis://h:6379");
        assert_eq!(glob_escape("exec-host:a*b?[c]\\"), "exec-host:a\\*b\\?\\[c\\]\\\\");
    }
}
