//! The folder store: one file per entry in a folder only this user can open, the default
//! for one machine. A file's name is the SHA-256 of its key; the file holds the key (for
//! listing) and the sealed entry. Writes go to a new private file renamed into place, so a
//! reader sees the old entry, the new one or none; `take` and `claim` rename the file to a
//! name of their own first, so of two takers exactly one gets it. Nothing is opened through a link, and
//! only regular files are read (a FIFO planted in the folder is never waited on).

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use crate::state::seal::{HEAD_BYTES, MAX_SEALED_BYTES, expiry, seconds};
use crate::state::store::{MAX_KEY_BYTES, StateStore, StoreError};
use crate::support::hex::{hex, random_hex};
use crate::support::private::{Kind, Others, owned_privately};

/// Entries one folder store keeps; past it, a write is refused (after expired ones are
/// removed).
pub const MAX_STORE_ENTRIES: usize = 10_000;

/// Bytes one folder store keeps in all.
pub const MAX_STORE_BYTES: u64 = 1024 * 1024 * 1024;

/// What an entry's file name ends with.
const ENTRY_SUFFIX: &str = ".entry";
/// What a file being written or taken starts with; one left by a process that died is
/// removed once it is an hour old.
const TEMPORARY_PREFIX: &str = ".part-";
const TEMPORARY_KEPT: Duration = Duration::from_secs(60 * 60);

/// A folder of entries.
#[derive(Clone, Debug)]
pub struct DirectoryStore {
    folder: PathBuf,
    /// [`MAX_STORE_ENTRIES`] and [`MAX_STORE_BYTES`], smaller in tests.
    max_entries: usize,
    max_bytes: u64,
}

impl DirectoryStore {
    /// Opens (and makes, 0700) the store in `folder`, which must be this user's alone.
    pub fn open(folder: &Path) -> Result<Self, StoreError> {
        let store = folder.display().to_string();
        if std::fs::symlink_metadata(folder).is_err() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(folder)
                .map_err(|source| StoreError::Io { what: format!("the state store folder {store} could not be made"), source })?;
        }
        owned_privately(folder, Kind::Folder, Others::Nothing)
            .map_err(|why| StoreError::Unusable { store: store.clone(), why: format!("the folder {why}") })?;
        Ok(DirectoryStore { folder: folder.to_path_buf(), max_entries: MAX_STORE_ENTRIES, max_bytes: MAX_STORE_BYTES })
    }

    fn path_of(&self, key: &str) -> PathBuf {
        let name = hex(&Sha256::digest(key.as_bytes()));
        self.folder.join(name + ENTRY_SUFFIX)
    }

    fn io(&self, what: &str, source: std::io::Error) -> StoreError {
        StoreError::Io { what: format!("the state store {}: {what}", self.folder.display()), source }
    }

    /// A new private file for writing, under a name no one else uses.
    fn temporary(&self) -> Result<(PathBuf, std::fs::File), StoreError> {
        let name = random_hex(12).map_err(StoreError::Random)?;
        let path = self.folder.join(format!("{TEMPORARY_PREFIX}{name}"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| self.io("a new entry could not be written", e))?;
        Ok((path, file))
    }

    fn put_now(&self, key: &str, sealed: &[u8]) -> Result<(), StoreError> {
        let bytes = record_bytes(key, sealed);
        // The entry this one replaces does not count against the bounds.
        let (count, used) = self.prune(Some(&self.path_of(key)))?;
        let store = self.folder.display().to_string();
        if count >= self.max_entries {
            return Err(StoreError::Full { store, why: format!("it keeps {} entries at most", self.max_entries) });
        }
        if used + bytes.len() as u64 > self.max_bytes {
            return Err(StoreError::Full { store, why: format!("it keeps {} bytes at most", self.max_bytes) });
        }
        let (temporary, mut file) = self.temporary()?;
        let written = file.write_all(&bytes).and_then(|()| file.sync_data());
        let placed = written.and_then(|()| std::fs::rename(&temporary, self.path_of(key)));
        if let Err(e) = placed {
            let _ = std::fs::remove_file(&temporary);
            return Err(self.io("an entry could not be written", e));
        }
        Ok(())
    }

    fn get_now(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match read_record(&self.path_of(key)) {
            Ok(Some((stored_key, sealed))) if stored_key == key => Ok(Some(sealed)),
            // Another key with the same digest cannot be made; a file that says otherwise
            // was not written by a store.
            Ok(Some(_)) => Err(StoreError::Tampered),
            Ok(None) => Ok(None),
            Err(e) => Err(self.io("an entry could not be read", e)),
        }
    }

    /// Moves the entry under `key` to a name of this caller's own, where no one else finds
    /// it: the rename is the claim, and of two claimers one finds the entry gone (`None`).
    fn claim_now(&self, key: &str) -> Result<Option<PathBuf>, StoreError> {
        let (claimed, file) = self.temporary()?;
        drop(file);
        match std::fs::rename(self.path_of(key), &claimed) {
            Ok(()) => Ok(Some(claimed)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = std::fs::remove_file(&claimed);
                Ok(None)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&claimed);
                Err(self.io("an entry could not be taken", e))
            }
        }
    }

    fn take_now(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(claimed) = self.claim_now(key)? else { return Ok(None) };
        let read = read_record(&claimed);
        remove_later(claimed);
        match read {
            Ok(Some((stored_key, sealed))) if stored_key == key => Ok(Some(sealed)),
            Ok(Some(_)) => Err(StoreError::Tampered),
            Ok(None) => Ok(None),
            Err(e) => Err(self.io("an entry could not be read", e)),
        }
    }

    fn remove_now(&self, key: &str) -> Result<(), StoreError> {
        match std::fs::remove_file(self.path_of(key)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io("an entry could not be removed", e)),
            _ => Ok(()),
        }
    }

    fn keys_now(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let mut keys = Vec::new();
        for path in self.entries()? {
            if keys.len() >= limit {
                break;
            }
            if let Ok(Some((key, expires, _))) = read_head(&path)
                && key.starts_with(prefix)
                && expires > seconds(SystemTime::now())
            {
                keys.push(key);
            }
        }
        Ok(keys)
    }

    /// The entry files, at most [`MAX_STORE_ENTRIES`] of them; temporary files older than
    /// [`TEMPORARY_KEPT`] are removed on the way.
    fn entries(&self) -> Result<Vec<PathBuf>, StoreError> {
        let listing = std::fs::read_dir(&self.folder).map_err(|e| self.io("the folder could not be listed", e))?;
        let mut entries = Vec::new();
        for item in listing.take(2 * MAX_STORE_ENTRIES + 64) {
            let Ok(item) = item else { continue };
            let name = item.file_name().to_string_lossy().into_owned();
            if name.ends_with(ENTRY_SUFFIX) {
                entries.push(item.path());
            } else if name.starts_with(TEMPORARY_PREFIX)
                && item
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .is_some_and(|at| SystemTime::now().duration_since(at).is_ok_and(|age| age > TEMPORARY_KEPT))
            {
                let _ = std::fs::remove_file(item.path());
            }
        }
        Ok(entries)
    }

    /// Removes expired entries (and what is not an entry under an entry's name); the count
    /// and bytes of those left but `except`. Only each entry's head is read.
    fn prune(&self, except: Option<&Path>) -> Result<(usize, u64), StoreError> {
        let now = seconds(SystemTime::now());
        let (mut count, mut used) = (0, 0);
        for path in self.entries()? {
            match read_head(&path) {
                Ok(Some(_)) if except == Some(path.as_path()) => {}
                Ok(Some((_, expires, bytes))) if expires > now => {
                    count += 1;
                    used += bytes;
                }
                Ok(None) => {}
                _ => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Ok((count, used))
    }
}

/// The key of the entry in `path`, when it expires and how many bytes its file takes, from
/// the file's head alone; `None` when there is none.
fn read_head(path: &Path) -> std::io::Result<Option<(String, u64, u64)>> {
    let file = match open_entry(path)? {
        Some(file) => file,
        None => return Ok(None),
    };
    let bytes = file.metadata()?.len();
    let mut head = Vec::with_capacity(4 + MAX_KEY_BYTES + HEAD_BYTES);
    file.take((4 + MAX_KEY_BYTES + HEAD_BYTES) as u64).read_to_end(&mut head)?;
    let length = head.get(..4).map_or(usize::MAX, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let key = head.get(4..4 + length.min(MAX_KEY_BYTES)).and_then(|key| String::from_utf8(key.to_vec()).ok());
    let expires = head.get(4 + length.min(MAX_KEY_BYTES)..).and_then(expiry);
    match (key, expires) {
        (Some(key), Some(expires)) if length <= MAX_KEY_BYTES => Ok(Some((key, expires, bytes))),
        _ => Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not an entry")),
    }
}

/// Opens an entry's file for reading: `None` when there is none. Only a regular file no
/// larger than an entry can be, never through a link, and never waited on.
fn open_entry(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path);
    let file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let metadata = file.metadata()?;
    let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    if !metadata.is_file() {
        return Err(invalid("it is not a regular file"));
    }
    if metadata.len() > (4 + MAX_KEY_BYTES + MAX_SEALED_BYTES) as u64 {
        return Err(invalid("it is larger than an entry can be"));
    }
    Ok(Some(file))
}

/// The file of one entry: the key's length (u32, big-endian), the key, the sealed entry.
fn record_bytes(key: &str, sealed: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(4 + key.len() + sealed.len());
    bytes.extend_from_slice(&(key.len() as u32).to_be_bytes());
    bytes.extend_from_slice(key.as_bytes());
    bytes.extend_from_slice(sealed);
    bytes
}

/// Reads an entry's file: `None` when there is none (see [`open_entry`]).
/// Removes a file taken out of the store off the taker's path: the entry left its name with
/// the rename, and the unlink (a journaled change of the folder) need not be waited for. One
/// left by a process that ends first is removed as any temporary file is.
fn remove_later(path: PathBuf) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(move || std::fs::remove_file(path))),
        Err(_) => drop(std::fs::remove_file(path)),
    }
}

fn read_record(path: &Path) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    let Some(file) = open_entry(path)? else { return Ok(None) };
    let most = (4 + MAX_KEY_BYTES + MAX_SEALED_BYTES) as u64;
    let mut bytes = Vec::with_capacity(file.metadata()?.len() as usize);
    file.take(most + 1).read_to_end(&mut bytes)?;
    let length =
        bytes.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize).ok_or_else(|| invalid("too short"))?;
    if length > MAX_KEY_BYTES || bytes.len() < 4 + length {
        return Err(invalid("its key is cut"));
    }
    let key = String::from_utf8(bytes[4..4 + length].to_vec()).map_err(|_| invalid("its key is not text"))?;
    Ok(Some((key, bytes[4 + length..].to_vec())))
}

/// Runs a blocking file operation off the async workers.
async fn blocking<T: Send + 'static>(job: impl FnOnce() -> Result<T, StoreError> + Send + 'static) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(job).await.unwrap_or_else(|e| {
        Err(StoreError::Io { what: "a state store operation failed".into(), source: std::io::Error::other(e.to_string()) })
    })
}

impl StateStore for DirectoryStore {
    fn put<'a>(&'a self, key: &'a str, payload: &'a [u8], _ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        let (store, key, payload) = (self.clone(), key.to_string(), payload.to_vec());
        Box::pin(blocking(move || store.put_now(&key, &payload)))
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        let (store, key) = (self.clone(), key.to_string());
        Box::pin(blocking(move || store.get_now(&key)))
    }

    fn claim<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let (store, key) = (self.clone(), key.to_string());
        Box::pin(blocking(move || Ok(store.claim_now(&key)?.map(remove_later).is_some())))
    }

    fn take<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        let (store, key) = (self.clone(), key.to_string());
        Box::pin(blocking(move || store.take_now(&key)))
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let (store, key) = (self.clone(), key.to_string());
        Box::pin(blocking(move || store.remove_now(&key)))
    }

    fn keys<'a>(&'a self, prefix: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        let (store, prefix) = (self.clone(), prefix.to_string());
        Box::pin(blocking(move || store.keys_now(&prefix, limit)))
    }

    fn describe(&self) -> String {
        self.folder.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::state::{SealedStore, StateKey};

    fn store(dir: &Path) -> SealedStore {
        SealedStore::new(Arc::new(DirectoryStore::open(&dir.join("store")).unwrap()), StateKey::generate().unwrap())
    }

    #[tokio::test]
    async fn entries_round_trip_and_a_take_takes_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let ttl = Duration::from_secs(60);
        store.put("exec/c1/a", b"one", ttl).await.unwrap();
        store.put("exec/c1/b", b"two", ttl).await.unwrap();
        store.put("exec/c2/a", b"three", ttl).await.unwrap();
        assert_eq!(store.get("exec/c1/a").await.unwrap().as_deref(), Some(&b"one"[..]));
        let mut keys = store.keys("exec/c1/", 10).await.unwrap();
        keys.sort();
        assert_eq!(keys, ["exec/c1/a", "exec/c1/b"]);
        let (first, second) = tokio::join!(store.take("exec/c1/a"), store.take("exec/c1/a"));
        let taken: Vec<_> = [first.unwrap(), second.unwrap()].into_iter().flatten().collect();
        assert_eq!(taken, [b"one".to_vec()], "exactly one taker gets it");
        assert_eq!(store.get("exec/c1/a").await.unwrap(), None);
        let (first, second) = tokio::join!(store.claim("exec/c2/a"), store.claim("exec/c2/a"));
        assert_eq!([first.unwrap(), second.unwrap()].into_iter().filter(|claimed| *claimed).count(), 1, "one claimer gets it");
        assert_eq!(store.get("exec/c2/a").await.unwrap(), None);
        assert!(!store.claim("exec/c2/a").await.unwrap(), "a claim of what is gone says so");
        store.remove("exec/c1/b").await.unwrap();
        store.remove("exec/c1/b").await.unwrap();
        assert_eq!(store.keys("exec/c1/", 10).await.unwrap(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn the_folder_and_its_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        store.put("k", b"v", Duration::from_secs(60)).await.unwrap();
        let folder = dir.path().join("store");
        assert_eq!(std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777, 0o700);
        for entry in std::fs::read_dir(&folder).unwrap() {
            assert_eq!(entry.unwrap().metadata().unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
        let refused = DirectoryStore::open(&folder).unwrap_err().to_string();
        assert!(refused.contains("readable or writable by other users"), "{refused}");
    }

    #[tokio::test]
    async fn a_fifo_or_a_link_in_an_entrys_place_is_never_waited_on_or_followed() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let raw = DirectoryStore::open(&dir.path().join("store")).unwrap();
        let fifo = raw.path_of("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path and a mode; mkfifo(3) has no other preconditions.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let error = store.get("fifo").await.unwrap_err().to_string();
        assert!(error.contains("could not be read"), "{error}");
        std::fs::write(dir.path().join("outside"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), raw.path_of("link")).unwrap();
        assert!(store.get("link").await.is_err(), "a link is not followed");
        let not_a_folder = dir.path().join("file");
        std::fs::write(&not_a_folder, b"x").unwrap();
        let refused = DirectoryStore::open(&not_a_folder).unwrap_err().to_string();
        assert!(refused.contains("is not a plain folder"), "{refused}");
    }

    #[tokio::test]
    async fn a_changed_entry_or_one_under_another_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        store.put("exec/mine", b"payload", Duration::from_secs(60)).await.unwrap();
        let raw = DirectoryStore::open(&dir.path().join("store")).unwrap();
        let mut bytes = std::fs::read(raw.path_of("exec/mine")).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(raw.path_of("exec/mine"), &bytes).unwrap();
        assert!(matches!(store.get("exec/mine").await, Err(StoreError::Tampered)));
        std::fs::copy(raw.path_of("exec/mine"), raw.path_of("exec/yours")).unwrap();
        assert!(matches!(store.get("exec/yours").await, Err(StoreError::Tampered)), "copied under another key");
    }

    #[tokio::test]
    async fn a_full_store_refuses_a_write_saying_so_until_an_entry_expires() {
        let dir = tempfile::tempdir().unwrap();
        let raw = DirectoryStore { max_entries: 2, max_bytes: 4096, ..DirectoryStore::open(&dir.path().join("store")).unwrap() };
        let store = SealedStore::new(Arc::new(raw), StateKey::generate().unwrap());
        store.put("a", b"x", Duration::from_secs(60)).await.unwrap();
        store.put("soon", b"x", Duration::from_secs(1)).await.unwrap();
        let full = store.put("c", b"x", Duration::from_secs(60)).await.unwrap_err();
        assert!(matches!(&full, StoreError::Full { why, .. } if why == "it keeps 2 entries at most"), "{full}");
        store.put("a", b"replaced", Duration::from_secs(60)).await.expect("a replacement takes no new room");
        let too_big = store.put("a", &[0u8; 4096], Duration::from_secs(60)).await.unwrap_err();
        assert!(too_big.to_string().contains("4096 bytes at most"), "{too_big}");
        tokio::time::sleep(Duration::from_millis(2100)).await;
        store.put("c", b"x", Duration::from_secs(60)).await.unwrap();
        assert_eq!(store.get("a").await.unwrap().as_deref(), Some(&b"replaced"[..]), "a refused write changes nothing");
    }

    #[tokio::test]
    async fn the_store_is_bounded_and_expired_entries_make_room() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let big = vec![7u8; crate::state::MAX_ENTRY_BYTES + 1];
        assert!(matches!(store.put("big", &big, Duration::from_secs(60)).await, Err(StoreError::TooLarge { .. })));
        let long_key = "k".repeat(crate::state::MAX_KEY_BYTES + 1);
        assert!(matches!(store.put(&long_key, b"x", Duration::from_secs(60)).await, Err(StoreError::KeyTooLong { .. })));
        store.put("gone", b"x", Duration::ZERO).await.unwrap();
        assert_eq!(store.keys("", 10).await.unwrap(), Vec::<String>::new(), "expired entries are not listed");
        assert_eq!(store.get("gone").await.unwrap(), None, "an expired entry reads as none");
        store.put("kept", b"x", Duration::from_secs(60)).await.unwrap();
        let files = std::fs::read_dir(dir.path().join("store")).unwrap().count();
        assert_eq!(files, 1, "the expired entry was pruned by the next write");
    }
}
