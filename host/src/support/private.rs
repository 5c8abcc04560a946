//! Whether a file or folder is this user's own: the one check behind every place the host
//! trusts what it finds on disk (the compiled-guest cache it maps as code, the state store
//! and its key). Never through a link.

use std::fs::Metadata;
use std::path::Path;

/// What is expected at a place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Folder,
}

/// Who else may do what with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Others {
    /// Others may read it, never write it (code this user runs).
    MayRead,
    /// Others may neither read nor write it (a secret, or what a secret seals).
    Nothing,
}

/// `place`'s metadata when it is a `kind` (not a link), owned by this user, and open to
/// others no more than `others` allows; else why not, as the end of a sentence that begins
/// with the place (`is not a plain file`).
pub fn owned_privately(place: &Path, kind: Kind, others: Others) -> Result<Metadata, String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let metadata = std::fs::symlink_metadata(place).map_err(|e| format!("cannot be inspected: {e}"))?;
    let (kind_ok, noun) = match kind {
        Kind::File => (metadata.is_file(), "file"),
        Kind::Folder => (metadata.is_dir(), "folder"),
    };
    if !kind_ok {
        return Err(format!("is not a plain {noun}"));
    }
    if metadata.uid() != me {
        return Err(format!("belongs to another user (uid {})", metadata.uid()));
    }
    let mode = metadata.mode() & 0o7777;
    match others {
        Others::MayRead if mode & 0o022 != 0 => Err(format!("is writable by other users (mode {mode:o})")),
        Others::Nothing if mode & 0o077 != 0 => Err(format!("is readable or writable by other users (mode {mode:o})")),
        _ => Ok(metadata),
    }
}
