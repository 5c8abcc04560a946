//! The places inside the workspace a command may not write, held in its mount namespace.
//!
//! Landlock cannot take a folder out of a writable tree, so each protected place is bound
//! read-only over itself. Three ways around such a bind are closed here:
//!
//! - **A place that does not exist yet** (no `.git`, a hook's script or a `node_modules`
//!   folder not made yet) could be created by the command, and what the host's children
//!   run would be the command's. An empty folder is made there to bind read-only while the
//!   command runs, and removed when the last command using it has ended.
//! - **A folder above a place** could be renamed away and made again with other contents.
//!   Each folder between the workspace and a place is bound over itself (writable): a mount
//!   point cannot be renamed or removed.
//! - **A link on the way** could be swapped between the check and the bind. No place may lie
//!   behind a link (the command is refused with a sentence), and the child opens every
//!   place it binds with `openat2` beneath the workspace, following no link, and mounts on
//!   that descriptor.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::confine::path_c_string;
use super::error::CommandError;
use crate::support::lock::Unpoisoned;

/// Folders made to bind on, with how many running commands bind them: the last to end
/// removes them (a folder removed under a running command would stop binding in its
/// namespace).
static MADE: Mutex<Option<HashMap<PathBuf, usize>>> = Mutex::new(None);

/// What one command's mount namespace binds, made ready in the host.
pub(super) struct Protection {
    /// The workspace, opened by the child to resolve every place beneath it.
    workspace: CString,
    /// The binds in order (a folder before what is below it), relative to the workspace.
    binds: Vec<(CString, bool)>,
    /// Folders this command made or shares, deepest last.
    made: Vec<PathBuf>,
}

impl Protection {
    /// The binds that keep `places` (absolute; those outside `workspace` are left to
    /// Landlock) read-only, making the missing ones. Refused when a place lies behind a
    /// link or cannot be made.
    pub(super) fn new(workspace: &Path, places: &[PathBuf]) -> Result<Self, CommandError> {
        let mut relative: Vec<PathBuf> = places
            .iter()
            .filter_map(|place| place.strip_prefix(workspace).ok())
            .filter(|place| !place.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .collect();
        relative.sort();
        relative.dedup();
        let mut protection = Protection { workspace: path_c_string(workspace)?, binds: Vec::new(), made: Vec::new() };
        // On a refusal, `protection` is dropped (and what it made removed) after the lock.
        let walked = {
            let mut made = MADE.locked();
            protection.walk(workspace, relative, made.get_or_insert_with(HashMap::new))
        };
        walked.map(|()| protection)
    }

    /// Plans the binds of `relative` (sorted: a folder before what is below it).
    fn walk(&mut self, workspace: &Path, relative: Vec<PathBuf>, made: &mut HashMap<PathBuf, usize>) -> Result<(), CommandError> {
        let mut read_only: Vec<PathBuf> = Vec::new();
        let mut pinned: Vec<PathBuf> = Vec::new();
        for place in relative {
            // Below a place bound read-only, everything is read-only already.
            if read_only.iter().any(|above| place.starts_with(above)) {
                continue;
            }
            let parts: Vec<_> = place.components().collect();
            let mut walked = PathBuf::new();
            for (i, part) in parts.iter().enumerate() {
                walked.push(part);
                let last = i + 1 == parts.len();
                let kind = self.visit(workspace, &walked, made)?;
                if last || kind != Kind::Folder {
                    // A file on the way holds the place: nothing can be made below it while
                    // it is read-only.
                    self.binds.push((path_c_string(&walked)?, true));
                    read_only.push(walked);
                    break;
                }
                if !pinned.contains(&walked) {
                    self.binds.push((path_c_string(&walked)?, false));
                    pinned.push(walked.clone());
                }
            }
        }
        Ok(())
    }

    /// Looks at `walked` (relative to `workspace`), making it a folder when it is missing.
    fn visit(&mut self, workspace: &Path, walked: &Path, made: &mut HashMap<PathBuf, usize>) -> Result<Kind, CommandError> {
        let at = workspace.join(walked);
        let metadata = match at.symlink_metadata() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match std::fs::create_dir(&at) {
                    Ok(()) => {
                        made.insert(at.clone(), 0);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(CommandError::ProtectedNotMade(walked.to_path_buf(), e)),
                }
                at.symlink_metadata().map_err(|e| CommandError::ProtectedUnreadable(walked.to_path_buf(), e))?
            }
            Err(e) => return Err(CommandError::ProtectedUnreadable(walked.to_path_buf(), e)),
            Ok(metadata) => metadata,
        };
        if let Some(count) = made.get_mut(&at) {
            *count += 1;
            self.made.push(at);
        }
        Ok(match metadata.file_type() {
            kind if kind.is_symlink() => return Err(CommandError::ProtectedIsLink(walked.to_path_buf())),
            kind if kind.is_dir() => Kind::Folder,
            _ => Kind::Other,
        })
    }

    /// What the child reads.
    pub(super) fn child_view(&self) -> ProtectionView {
        ProtectionView {
            workspace: self.workspace.as_ptr(),
            binds: self.binds.iter().map(|(place, read_only)| (place.as_ptr(), *read_only)).collect(),
        }
    }
}

impl Drop for Protection {
    /// Removes the folders made for this command once no running command binds them.
    fn drop(&mut self) {
        let mut made = MADE.locked();
        let Some(made) = made.as_mut() else { return };
        for at in self.made.drain(..).rev() {
            let Some(count) = made.get_mut(&at) else { continue };
            *count -= 1;
            if *count == 0 {
                made.remove(&at);
                if let Err(e) = std::fs::remove_dir(&at) {
                    tracing::debug!("{} was made for a command and could not be removed: {e}", at.display());
                }
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Folder,
    Other,
}

/// The pointers the child reads: the [`Protection`] they come from outlives the spawn.
pub(super) struct ProtectionView {
    workspace: *const libc::c_char,
    binds: Vec<(*const libc::c_char, bool)>,
}

impl ProtectionView {
    /// In the child, in its own mount namespace: each bind, on a descriptor opened beneath
    /// the workspace without following any link (a place swapped for a link since the host
    /// looked fails the start).
    pub(super) fn bind(&self) -> std::io::Result<()> {
        // SAFETY (this function): system calls with buffers that outlive them.
        let workspace = unsafe { libc::open(self.workspace, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if workspace < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `workspace` was just opened and is owned here.
        let workspace = unsafe { OwnedFd::from_raw_fd(workspace) };
        for &(place, read_only) in &self.binds {
            let mut path = [0u8; 32];
            let under = open_beneath(&workspace, place)?;
            super::child::bind_over_itself(fd_path(under.as_raw_fd(), &mut path).as_ptr())?;
            if read_only {
                // The descriptor is of what lies under the new mount: the mount itself is
                // what a new look finds.
                let mount = open_beneath(&workspace, place)?;
                super::child::remount_read_only(fd_path(mount.as_raw_fd(), &mut path).as_ptr())?;
            }
        }
        Ok(())
    }
}

/// `place`, opened beneath `workspace` without following any link, never a link itself.
fn open_beneath(workspace: &OwnedFd, place: *const libc::c_char) -> std::io::Result<OwnedFd> {
    // SAFETY (this function): system calls with buffers that outlive them; `open_how` is
    // plain data, and zero is a valid value of every field.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    let fd = unsafe {
        libc::syscall(libc::SYS_openat2, workspace.as_raw_fd(), place, &how as *const libc::open_how, size_of::<libc::open_how>())
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if stat.st_mode & libc::S_IFMT == libc::S_IFLNK {
        return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
    }
    Ok(fd)
}

/// `/proc/self/fd/<fd>` in `buffer`, without allocating.
pub(super) fn fd_path(fd: i32, buffer: &mut [u8; 32]) -> &CStr {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    buffer[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 10];
    let (mut n, mut count) = (fd.unsigned_abs(), 0);
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..count {
        buffer[PREFIX.len() + i] = digits[count - 1 - i];
    }
    buffer[PREFIX.len() + count] = 0;
    // The buffer ends in the NUL just written, and holds no other.
    CStr::from_bytes_until_nul(&buffer[..]).unwrap_or(c"/proc/self/fd/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_descriptor_s_path_is_written_without_allocating() {
        let mut buffer = [0u8; 32];
        assert_eq!(fd_path(7, &mut buffer), c"/proc/self/fd/7");
        assert_eq!(fd_path(1_048_575, &mut buffer), c"/proc/self/fd/1048575");
    }

    #[test]
    fn missing_places_are_made_for_a_command_and_removed_after_the_last_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("kept")).unwrap();
        let places = [root.join(".git"), root.join("scripts/hooks/audit.sh"), root.join("kept/node_modules")];
        let first = Protection::new(&root, &places).unwrap();
        let second = Protection::new(&root, &places).unwrap();
        for made in [".git", "scripts/hooks/audit.sh", "kept/node_modules"] {
            assert!(root.join(made).is_dir(), "{made} is made to bind on");
        }
        let binds: Vec<_> = first.binds.iter().map(|(place, read_only)| (place.to_str().unwrap(), *read_only)).collect();
        assert_eq!(
            binds,
            [
                (".git", true),
                ("kept", false),
                ("kept/node_modules", true),
                ("scripts", false),
                ("scripts/hooks", false),
                ("scripts/hooks/audit.sh", true)
            ]
        );
        drop(first);
        assert!(root.join("scripts/hooks/audit.sh").is_dir(), "a running command still binds it");
        std::fs::write(root.join("scripts/notes.txt"), "the command's").unwrap();
        drop(second);
        assert!(!root.join(".git").exists() && !root.join("scripts/hooks").exists() && !root.join("kept/node_modules").exists());
        assert!(root.join("scripts/notes.txt").exists(), "a made folder that holds something else is left");
        assert!(root.join("kept").is_dir(), "what existed before stays");
    }

    #[test]
    fn a_place_behind_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink("real", root.join("hooks")).unwrap();
        let refused = Protection::new(&root, &[root.join("hooks/audit.sh")]).err().unwrap();
        assert!(matches!(&refused, CommandError::ProtectedIsLink(link) if link == Path::new("hooks")), "{refused}");
        assert!(!root.join("real/audit.sh").exists());
    }
}
