//! The disk cache of compiled guests: one file per guest and engine, written atomically,
//! mapped only when this user alone could have written it, and pruned of guests unused for
//! a month.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use tracing::{debug, warn};

use super::artefact::CACHE_FORMAT;
use crate::support::dirs::{self, BaseDir};
use crate::support::private::{self, Kind, Others};

/// The directory compiled guests are cached in: `$EXEC_HOST_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/exec-host`, else `~/.cache/exec-host`. `None` when none is known.
pub fn default_cache_dir() -> Option<PathBuf> {
    dirs::folder_from("EXEC_HOST_CACHE_DIR").or_else(|| BaseDir::Cache.exec_host())
}

/// Writes a compiled guest to the cache file `path`, if there is one. A failure is only
/// worth a warning: the next run loads the guest the same way again.
pub(super) fn cache(path: Option<&Path>, compiled: &[u8]) {
    let Some(path) = path else { return };
    match write_cache(path, compiled) {
        Ok(()) => prune_cache(path),
        Err(error) => warn!("could not cache the compiled guest at {}: {error}", path.display()),
    }
}

/// A cached guest that no process has mapped for this long is removed the next time another
/// guest is cached: each upgrade of exec-host (and each guest given as a file) caches 5 MB
/// of native code, and nothing else would ever remove the old ones.
pub(super) const CACHE_UNUSED_FOR: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// A cached guest's modification time says when it was last used, to within this: a
/// process that maps it refreshes the time only when it is older, so most runs write nothing.
pub(super) const CACHE_USE_RESOLUTION: Duration = Duration::from_secs(24 * 60 * 60);

/// Entries of the cache folder that one pruning looks at; a folder with more (the cache is
/// this user's own, but `EXEC_HOST_CACHE_DIR` may name any folder) is pruned in part.
const CACHE_PRUNE_SCAN: usize = 10_000;

/// Records that the cached guest at `path`, last modified at `modified`, was used now (see
/// [`CACHE_USE_RESOLUTION`]). A failure only makes the file look older.
pub(super) fn mark_used(path: &Path, modified: SystemTime) {
    let now = SystemTime::now();
    if now.duration_since(modified).is_ok_and(|age| age < CACHE_USE_RESOLUTION) {
        return;
    }
    let touched = std::fs::OpenOptions::new().append(true).open(path).and_then(|file| file.set_modified(now));
    if let Err(error) = touched {
        debug!("could not mark the cached guest {} as used: {error}", path.display());
    }
}

/// Removes from the folder of `kept` (a guest just cached) the cached guests unused for
/// [`CACHE_UNUSED_FOR`], and the temporary files of writes that died, older than
/// [`CACHE_USE_RESOLUTION`]. Only this user's own regular files with the cache's names are
/// removed, and only from a folder that is this user's alone.
fn prune_cache(kept: &Path) {
    let dir = kept.parent().unwrap_or(Path::new("."));
    if let Err(why) = owned_privately(dir, Kind::Folder) {
        debug!("not pruning the guest cache {}: its folder {why}", dir.display());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let now = SystemTime::now();
    for entry in entries.take(CACHE_PRUNE_SCAN).flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let unused_for = if is_cached_guest(name) {
            CACHE_UNUSED_FOR
        } else if is_temporary(name) {
            CACHE_USE_RESOLUTION
        } else {
            continue;
        };
        let path = entry.path();
        if path == kept {
            continue;
        }
        let Ok(modified) = owned_privately(&path, Kind::File) else { continue };
        if now.duration_since(modified).is_ok_and(|age| age > unused_for) {
            match std::fs::remove_file(&path) {
                Ok(()) => debug!("removed {}, unused for more than {} days", path.display(), unused_for.as_secs() / 86_400),
                Err(error) => debug!("could not remove {}: {error}", path.display()),
            }
        }
    }
}

/// The cache's file name for a guest whose SHA-256 is `digest`, compiled by an engine whose
/// digest is `engine`: `guest-<key>.cwasm`.
pub(super) fn cache_file_name(engine: &[u8; 32], digest: &[u8; 32]) -> String {
    let key = Sha256::new().chain_update(CACHE_FORMAT.as_bytes()).chain_update(digest).chain_update(engine).finalize();
    let key = crate::support::hex::hex(&key[..CACHE_KEY_BYTES.min(key.len())]);
    format!("{CACHED_GUEST_PREFIX}{key}{CACHED_GUEST_SUFFIX}")
}

const CACHED_GUEST_PREFIX: &str = "guest-";
const CACHED_GUEST_SUFFIX: &str = ".cwasm";
/// Bytes of the SHA-256 a cached guest's name keeps, in hexadecimal.
const CACHE_KEY_BYTES: usize = 16;

/// Whether `name` is one [`cache_file_name`] gives.
fn is_cached_guest(name: &str) -> bool {
    name.strip_prefix(CACHED_GUEST_PREFIX)
        .and_then(|rest| rest.strip_suffix(CACHED_GUEST_SUFFIX))
        .is_some_and(|key| key.len() == 2 * CACHE_KEY_BYTES && key.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The name [`write_cache`] writes the cached guest `name` under before it is whole:
/// hidden, and this process's own.
pub(super) fn temporary_name(name: &str) -> String {
    format!(".{name}.{}.tmp", std::process::id())
}

/// Whether `name` is one [`temporary_name`] gives, in any process.
fn is_temporary(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .and_then(|rest| rest.rsplit_once('.'))
        .is_some_and(|(cached, pid)| is_cached_guest(cached) && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Why a cached compiled guest is not used: what is wrong with its folder or with the file.
#[derive(Debug, thiserror::Error)]
pub(super) enum Untrusted {
    #[error("its folder {0}")]
    Folder(NotOwned),
    #[error("the file {0}")]
    File(NotOwned),
}

/// Why a place of the cache is not this user's alone.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotOwned {
    #[error("{0}")]
    NotPrivate(#[from] private::NotPrivate),
    #[error("has no modification time: {0}")]
    NoTime(std::io::Error),
}

/// Whether the cached file at `path` can only have been written by this user: a regular
/// file (not a link), in a folder (not a link either), both owned by this user and not
/// writable by the group or others. The file's modification time when it can; why not,
/// when it cannot.
pub(super) fn trusted(path: &Path) -> Result<SystemTime, Untrusted> {
    let dir = path.parent().unwrap_or(Path::new("."));
    owned_privately(dir, Kind::Folder).map_err(Untrusted::Folder)?;
    owned_privately(path, Kind::File).map_err(Untrusted::File)
}

/// [`private::owned_privately`] for the cache, whose files others may read: the time the
/// place was last modified when it passes.
fn owned_privately(place: &Path, kind: Kind) -> Result<SystemTime, NotOwned> {
    let metadata = private::owned_privately(place, kind, Others::MayRead)?;
    metadata.modified().map_err(NotOwned::NoTime)
}

/// Writes the cache file atomically: a reader sees the old file, the new one, or none. The
/// folder is made private to this user when it is created, and written only when it is this
/// user's alone (the check that guards mapping: anyone who can write the folder could plant
/// a link at the temporary name, and the write would follow it); the temporary file is
/// created new, never through a link, and is this user's alone.
fn write_cache(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    owned_privately(dir, Kind::Folder)
        .map_err(|why| std::io::Error::new(std::io::ErrorKind::PermissionDenied, format!("its folder {why}")))?;
    let temporary = dir.join(temporary_name(&path.file_name().unwrap_or_default().to_string_lossy()));
    // Left by a write of this process id that died: only this user could have put it here.
    let _ = std::fs::remove_file(&temporary);
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).mode(0o600).open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}
