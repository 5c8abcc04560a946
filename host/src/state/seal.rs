//! Sealed entries: what a host writes to a state store carries a MAC under the host's state
//! key, bound to the entry's key and its expiry, so a store (a shared Redis, a folder) can
//! be read by others without any of them changing an entry, moving it under another key,
//! or making it live longer. Only this module reads or writes the sealed form.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::state::store::{MAX_ENTRY_BYTES, StoreError};
use crate::support::private::{self, Kind, Others};

/// Bytes of a state key. A key file holds exactly this many bytes, as 64 hex digits.
pub const STATE_KEY_BYTES: usize = 32;

/// What starts a sealed entry, naming its format.
const MAGIC: &[u8; 4] = b"EXS1";
/// Domain of the MAC, so the key signs nothing else of ours by accident.
const DOMAIN: &[u8] = b"exec-host state entry v1";
const MAC_BYTES: usize = 32;
/// Magic, expiry (seconds since the epoch), MAC.
const HEADER_BYTES: usize = MAGIC.len() + 8 + MAC_BYTES;
/// Bytes of a sealed entry that say when it expires: all [`expiry`] reads.
pub(crate) const HEAD_BYTES: usize = HEADER_BYTES;
/// Bytes a store keeps for one sealed entry at most.
pub(crate) const MAX_SEALED_BYTES: usize = MAX_ENTRY_BYTES + HEADER_BYTES;

/// The secret that seals a host's entries. Hosts that share a store and must resume each
/// other's Execs share this key.
#[derive(Clone)]
pub struct StateKey([u8; STATE_KEY_BYTES]);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// A key from its bytes.
    pub fn from_bytes(bytes: [u8; STATE_KEY_BYTES]) -> Self {
        StateKey(bytes)
    }

    /// A new random key.
    pub fn generate() -> Result<Self, StoreError> {
        let mut bytes = [0; STATE_KEY_BYTES];
        crate::support::hex::fill_random(&mut bytes).map_err(StoreError::Random)?;
        Ok(StateKey(bytes))
    }

    /// Reads the key in `path`: 64 hex digits, surrounding white space allowed. The file
    /// must be this user's and unreadable by others.
    pub fn read(path: &Path) -> Result<Self, StoreError> {
        let bad = |why: String| StoreError::BadKeyFile { path: path.to_path_buf(), why };
        private::owned_privately(path, Kind::File, Others::Nothing).map_err(|why| bad(format!("the file {why}")))?;
        let text = crate::support::text_file::read_text(path, 4 * STATE_KEY_BYTES as u64)
            .map_err(|e| bad(crate::support::report::error_sentence(&e)))?;
        let digits = text.trim();
        let mut bytes = [0; STATE_KEY_BYTES];
        if digits.len() != 2 * STATE_KEY_BYTES || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(format!("it does not hold {} hex digits", 2 * STATE_KEY_BYTES)));
        }
        for (at, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&digits[2 * at..2 * at + 2], 16).map_err(|e| bad(e.to_string()))?;
        }
        Ok(StateKey(bytes))
    }

    /// Reads the key in `path`, or, when there is no file there, makes one (0600, created
    /// new, never through a link) and returns it.
    pub fn read_or_create(path: &Path) -> Result<Self, StoreError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        if std::fs::symlink_metadata(path).is_ok() {
            return Self::read(path);
        }
        let key = Self::generate()?;
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .and_then(|mut file| file.write_all(format!("{}\n", key.hex()).as_bytes()));
        match created {
            Ok(()) => Ok(key),
            // Another process made it first: its key is the one.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Self::read(path),
            Err(source) => {
                Err(StoreError::Io { what: format!("the state key file {} could not be written", path.display()), source })
            }
        }
    }

    fn hex(&self) -> String {
        crate::support::hex::hex(&self.0)
    }

    fn mac(&self, key: &str, expires: u64, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(DOMAIN);
        mac.update(&(key.len() as u64).to_be_bytes());
        mac.update(key.as_bytes());
        mac.update(&expires.to_be_bytes());
        mac.update(payload);
        mac
    }

    /// `payload` sealed for `key`, expiring `ttl` from now.
    pub(crate) fn seal(&self, key: &str, payload: &[u8], ttl: Duration) -> Vec<u8> {
        let expires = seconds(SystemTime::now() + ttl);
        let tag = self.mac(key, expires, payload).finalize().into_bytes();
        let mut sealed = Vec::with_capacity(HEADER_BYTES + payload.len());
        sealed.extend_from_slice(MAGIC);
        sealed.extend_from_slice(&expires.to_be_bytes());
        sealed.extend_from_slice(&tag);
        sealed.extend_from_slice(payload);
        sealed
    }

    /// The payload of `sealed`, read under `key`: refused when it was changed, sealed under
    /// another key or by another state key, or has expired.
    pub(crate) fn open(&self, key: &str, sealed: &[u8]) -> Result<Vec<u8>, StoreError> {
        let expires = expiry(sealed).ok_or(StoreError::Tampered)?;
        let (tag, payload) = sealed[MAGIC.len() + 8..].split_at(MAC_BYTES);
        self.mac(key, expires, payload).verify_slice(tag).map_err(|_| StoreError::Tampered)?;
        if expires <= seconds(SystemTime::now()) {
            return Err(StoreError::Expired);
        }
        Ok(payload.to_vec())
    }
}

/// When a sealed entry expires (seconds since the epoch), read without the key: for pruning.
/// `None` for what is not a sealed entry.
pub(crate) fn expiry(sealed: &[u8]) -> Option<u64> {
    if sealed.len() < HEADER_BYTES || &sealed[..MAGIC.len()] != MAGIC {
        return None;
    }
    Some(u64::from_be_bytes(sealed[MAGIC.len()..MAGIC.len() + 8].try_into().ok()?))
}

/// Seconds since the epoch (0 before it).
pub(crate) fn seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_entry_opens_under_its_key_only() {
        let key = StateKey::generate().unwrap();
        let sealed = key.seal("exec/a", b"payload", Duration::from_secs(60));
        assert_eq!(key.open("exec/a", &sealed).unwrap(), b"payload");
        assert!(matches!(key.open("exec/b", &sealed), Err(StoreError::Tampered)), "moved under another key");
        let other = StateKey::generate().unwrap();
        assert!(matches!(other.open("exec/a", &sealed), Err(StoreError::Tampered)), "another host's key");
        for at in [0, 5, HEADER_BYTES - 1, sealed.len() - 1] {
            let mut changed = sealed.clone();
            changed[at] ^= 1;
            assert!(matches!(key.open("exec/a", &changed), Err(StoreError::Tampered)), "byte {at} changed");
        }
        assert!(matches!(key.open("exec/a", &sealed[..HEADER_BYTES - 1]), Err(StoreError::Tampered)));
    }

    #[test]
    fn an_expired_entry_is_refused_even_where_the_store_keeps_it() {
        let key = StateKey::generate().unwrap();
        let sealed = key.seal("k", b"x", Duration::ZERO);
        assert!(matches!(key.open("k", &sealed), Err(StoreError::Expired)));
        let mut longer = sealed.clone();
        longer[MAGIC.len() + 7] = longer[MAGIC.len() + 7].wrapping_add(100);
        assert!(matches!(key.open("k", &longer), Err(StoreError::Tampered)), "an expiry pushed back");
    }

    #[test]
    fn a_key_file_is_made_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.key");
        let made = StateKey::read_or_create(&path).unwrap();
        let read = StateKey::read(&path).unwrap();
        assert_eq!(made.0, read.0);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = StateKey::read(&path).unwrap_err().to_string();
        assert!(refused.contains("readable or writable by other users"), "{refused}");
        std::fs::write(dir.path().join("short.key"), "abcd").unwrap();
        std::fs::set_permissions(dir.path().join("short.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        let short = StateKey::read(&dir.path().join("short.key")).unwrap_err().to_string();
        assert!(short.contains("64 hex digits"), "{short}");
    }
}
