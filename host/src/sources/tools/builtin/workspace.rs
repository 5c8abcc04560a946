//! The workspace: one directory handle every builtin file tool goes through.
//!
//! All access is relative to a `cap_std::fs::Dir` opened once on the workspace, so the
//! operating system, not string checks, keeps `..`, absolute paths and symbolic links from
//! leading outside it. The lexical checks here only make the refusal read well.

use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::ignored::Ignored;
use crate::support::lock::UnpoisonedRw;
use crate::support::private::real_path;
use crate::support::vocabulary::ToolError;

/// Entries a directory walk visits before it stops (glob, grep).
pub const MAX_WALK_ENTRIES: usize = 100_000;

/// Links to missing places followed, one after another, when a path is resolved.
const MAX_DANGLING_LINKS: usize = 8;

/// Folders the workspace tools never write into, at any depth: the host's own settings (a
/// rule written there would widen the running session's rights) and git's (its hooks run
/// on the user's next `git` command). Compared ignoring ASCII case, as case-insensitive
/// file systems would.
pub const READ_ONLY_FOLDERS: &[&str] = &[".git", ".exec-host"];

/// A place inside the workspace that one of the host's children names, and who names it
/// (see `calls::guards`): the workspace tools never write at or below it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardedPlace {
    /// Relative to the workspace and `/`-separated, as `Workspace::rule_paths` gives places;
    /// everything at or below it is guarded.
    pub place: String,
    /// Who runs it, for the refusal: "the PreToolUse hook `sh hooks/audit.sh`".
    pub by: String,
}

/// The directory the builtin tools work in.
#[derive(Debug)]
pub struct Workspace {
    dir: Dir,
    /// The workspace's real path, to place an open file (see `real_place`).
    root: Option<PathBuf>,
    /// Files of the workspace the tools never write (the settings and server
    /// configurations the host reads), relative and `/`-separated as [`Workspace::rule_paths`]
    /// gives them.
    read_only_files: Vec<String>,
    /// What the host's own children (hooks, stdio MCP servers) name in the workspace, kept
    /// read-only with all below it (see `calls::guards`); replaced as the settings and
    /// servers change.
    guarded: std::sync::RwLock<Vec<GuardedPlace>>,
}

/// What a tool opens a file for. A file opened to change is never truncated before it
/// has been checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Read and write a file that exists.
    Edit,
    /// Write, creating the file when it is missing.
    Create,
}

/// Why a workspace cannot be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    #[error("the workspace {0} does not exist")]
    Missing(PathBuf),
    #[error("the workspace {0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("the workspace {path} cannot be opened")]
    Unreadable { path: PathBuf, source: io::Error },
}

impl Workspace {
    /// Opens `root`, which must be an existing directory.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let root = root.as_ref();
        let metadata = std::fs::metadata(root).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => WorkspaceError::Missing(root.to_path_buf()),
            _ => WorkspaceError::Unreadable { path: root.to_path_buf(), source },
        })?;
        if !metadata.is_dir() {
            return Err(WorkspaceError::NotADirectory(root.to_path_buf()));
        }
        let dir = Dir::open_ambient_dir(root, ambient_authority())
            .map_err(|source| WorkspaceError::Unreadable { path: root.to_path_buf(), source })?;
        Ok(Workspace { dir, root: std::fs::canonicalize(root).ok(), read_only_files: Vec::new(), guarded: Default::default() })
    }

    /// Keeps `files` (anywhere; those inside the workspace `root` matter) out of the tools'
    /// writes: the host's own control files.
    pub fn with_read_only_files(mut self, files: &[PathBuf]) -> Self {
        let Some(root) = self.root.clone() else { return self };
        for file in files {
            if let Ok(inside) = real_path(file).strip_prefix(&root) {
                self.read_only_files.push(slashed(inside));
            }
        }
        self
    }

    /// Refuses a write to `relative` when it, as written or where links lead, is one of
    /// the host's control files or lies in one of [`READ_ONLY_FOLDERS`].
    pub fn check_writable(&self, relative: &Path) -> Result<(), ToolError> {
        let shown = display_path(relative);
        self.rule_paths(Some(&slashed(relative))).iter().try_for_each(|place| self.check_place(place, &shown))
    }

    /// The one rule of what the tools may not write: `place` is relative to the workspace
    /// and `/`-separated.
    fn check_place(&self, place: &str, shown: &str) -> Result<(), ToolError> {
        if let Some(folder) = place.split('/').find(|part| READ_ONLY_FOLDERS.iter().any(|f| part.eq_ignore_ascii_case(f))) {
            return Err(ToolError::execution(format!(
                "`{shown}` is in a `{folder}` folder, which the workspace tools keep read-only"
            )));
        }
        if self.read_only_files.iter().any(|file| file.eq_ignore_ascii_case(place)) {
            return Err(ToolError::execution(format!(
                "`{shown}` is a settings or configuration file of this host, which the workspace tools keep read-only"
            )));
        }
        let guarded = self.guarded.read_locked();
        if let Some(guard) = guarded.iter().find(|guard| is_at_or_below(place, &guard.place)) {
            let what =
                if place.eq_ignore_ascii_case(&guard.place) { String::new() } else { format!(" is in `{}`, which", guard.place) };
            return Err(ToolError::execution(format!(
                "`{shown}`{what} is named by {}, which runs outside the sandbox: the workspace tools keep what the host's hooks and MCP servers run read-only",
                guard.by
            )));
        }
        Ok(())
    }

    /// Replaces the places the host's children name (see `calls::guards`).
    pub(crate) fn guard(&self, places: Vec<GuardedPlace>) {
        *self.guarded.write_locked() = places;
    }

    /// Where an open file or folder really is, relative to the workspace: what the kernel
    /// says of the descriptor, so a link swapped in after a check cannot hide it. `None`
    /// when the system cannot say (no `/proc`).
    fn real_place(&self, handle: &impl std::os::fd::AsRawFd) -> Option<String> {
        let root = self.root.as_ref()?;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", handle.as_raw_fd())).ok()?;
        real.strip_prefix(root).ok().map(slashed)
    }

    /// Opens a regular file of the workspace. Opening never blocks (a FIFO or a device is
    /// opened non-blocking, then refused: only regular files are read or written).
    ///
    /// A file opened to change is opened inside a folder held open and checked first
    /// ([`Workspace::writable_folder`]), by its bare name and without following a link
    /// there, so a link swapped in while the call runs cannot move the write (or the file
    /// it creates) into a control folder. It must be writable ([`Workspace::check_writable`])
    /// and have no other hard link (writing it would change what the other names show).
    pub fn open_file(&self, relative: &Path, access: Access) -> Result<cap_std::fs::File, ToolError> {
        use cap_std::fs::OpenOptionsExt;
        let shown = display_path(relative);
        let mut options = cap_std::fs::OpenOptions::new();
        let flags = libc::O_NONBLOCK | libc::O_NOCTTY;
        let opened = match access {
            Access::Read => self.dir.open_with(relative, options.read(true).custom_flags(flags)),
            Access::Edit | Access::Create => {
                self.check_writable(relative)?;
                // Where links lead, checked above; the folder is pinned and checked again.
                let place = self.resolve(relative).ok_or_else(|| match self.dir.metadata(relative) {
                    // A link loop, say: the system's own words.
                    Err(e) => self.io_error(&shown, e),
                    Ok(_) => outside(&shown),
                })?;
                let (folder, name) = place.rsplit_once('/').unwrap_or(("", &place));
                let folder = self.writable_folder(Path::new(folder), access == Access::Create, &shown)?;
                self.check_place(&self.real_place(&folder).map_or_else(|| place.clone(), |f| join(&f, name)), &shown)?;
                match access {
                    Access::Edit => options.read(true).write(true),
                    _ => options.write(true).create(true),
                };
                folder.open_with(name, options.custom_flags(flags | libc::O_NOFOLLOW))
            }
        };
        let file = opened.map_err(|e| match e.raw_os_error() {
            // A FIFO opened to write with nobody reading it.
            Some(libc::ENXIO) => not_regular(&shown),
            // A link put where the checked file was.
            Some(libc::ELOOP) => ToolError::execution(format!("`{shown}` changed into a link while it was opened; try again")),
            _ => self.io_error(&shown, e),
        })?;
        let metadata = file.metadata().map_err(|e| self.io_error(&shown, e))?;
        if metadata.is_dir() {
            return Err(ToolError::execution(format!("`{shown}` is a directory; use ls to list it")));
        }
        if !metadata.is_file() {
            return Err(not_regular(&shown));
        }
        if access != Access::Read {
            use cap_std::fs::MetadataExt;
            if metadata.nlink() > 1 {
                return Err(ToolError::execution(format!(
                    "`{shown}` has {} hard links; writing it would change the file under its other names too, so the workspace tools do not",
                    metadata.nlink()
                )));
            }
        }
        Ok(file)
    }

    /// Opens the folder `place` (relative, links already resolved) one level at a time,
    /// creating missing levels when `create`, and checks where each level really is before
    /// anything is made inside it: no folder or file is ever created in a control folder,
    /// whatever is swapped in meanwhile.
    fn writable_folder(&self, place: &Path, create: bool, shown: &str) -> Result<Dir, ToolError> {
        let mut folder = self.dir.try_clone().map_err(|e| self.io_error(".", e))?;
        let mut walked = PathBuf::new();
        for part in place.components() {
            walked.push(part);
            let level = display_path(&walked);
            if let Some(real) = self.real_place(&folder) {
                self.check_place(&join(&real, &part.as_os_str().to_string_lossy()), shown)?;
            }
            folder = match folder.open_dir(part) {
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    folder.create_dir(part).map_err(|e| self.io_error(&level, e))?;
                    folder.open_dir(part)
                }
                opened => opened,
            }
            .map_err(|e| self.io_error(&level, e))?;
        }
        if let Some(real) = self.real_place(&folder) {
            self.check_place(&real, shown)?;
        }
        Ok(folder)
    }

    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The workspace's real path, when the system could say.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The places of the workspace a command may not write, as real paths: its
    /// [`READ_ONLY_FOLDERS`] (at the top), the host's control files in it, and what the host's
    /// hooks and servers run from it. The same rule as the tools' writes, for a process that
    /// does not ask the workspace first.
    pub fn protected_places(&self) -> Vec<PathBuf> {
        let Some(root) = &self.root else { return Vec::new() };
        let mut places: Vec<PathBuf> = READ_ONLY_FOLDERS.iter().map(|folder| root.join(folder)).collect();
        places.extend(self.read_only_files.iter().map(|file| root.join(file)));
        places.extend(self.guarded.read_locked().iter().map(|guard| root.join(&guard.place)));
        places
    }

    /// Turns a tool's `path` argument into a path relative to the workspace, refusing
    /// absolute paths and `..` that climbs above the workspace with a clear message.
    /// `None`, `""` and `"."` are the workspace itself.
    pub fn relative(&self, path: Option<&str>) -> Result<PathBuf, ToolError> {
        let raw = path.unwrap_or("");
        if raw.contains('\0') {
            return Err(ToolError::params(format!("{raw:?} contains a NUL character")));
        }
        let given = Path::new(raw);
        let mut clean = PathBuf::new();
        let mut depth = 0usize;
        for component in given.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => {
                    return Err(ToolError::params(format!("`{raw}` is an absolute path; paths are relative to the workspace")));
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    if depth == 0 {
                        return Err(outside(raw));
                    }
                    depth -= 1;
                    clean.pop();
                }
                Component::Normal(part) => {
                    depth += 1;
                    clean.push(part);
                }
            }
        }
        if clean.as_os_str().is_empty() {
            clean.push(".");
        }
        Ok(clean)
    }

    /// The places a call with this `path` argument touches, as permission rules see them
    /// (relative, `/`-separated, `""` for the workspace itself): the path as written,
    /// normalised, and, when a symbolic link inside the workspace makes it another place,
    /// that place too. Empty when the path cannot be in the workspace (the tool refuses it).
    pub fn rule_paths(&self, path: Option<&str>) -> Vec<String> {
        let Ok(relative) = self.relative(path) else { return Vec::new() };
        let lexical = slashed(&relative);
        let mut paths = vec![lexical];
        if let Some(resolved) = self.resolve(&relative)
            && !paths.contains(&resolved)
        {
            paths.push(resolved);
        }
        paths
    }

    /// Where `relative` leads once symbolic links are followed, for the part of it that
    /// exists (the rest appended as written; a link to a place that does not exist yet is
    /// followed to it); `None` when it cannot be resolved inside.
    fn resolve(&self, relative: &Path) -> Option<String> {
        self.resolve_within(relative, MAX_DANGLING_LINKS)
    }

    fn resolve_within(&self, relative: &Path, links: usize) -> Option<String> {
        let mut existing = relative.to_path_buf();
        let mut rest = Vec::new();
        loop {
            match self.dir.canonicalize(&existing) {
                Ok(resolved) => {
                    let mut full = resolved;
                    full.extend(rest.iter().rev());
                    return Some(slashed(&full));
                }
                Err(_) => {
                    // A link whose target is missing: where it would create things. One
                    // cap-std will not read (its target is absolute) leads outside.
                    if self.dir.symlink_metadata(&existing).is_ok_and(|m| m.file_type().is_symlink()) {
                        let target = self.dir.read_link(&existing).ok().filter(|_| links > 0)?;
                        let mut next = existing.parent().map(Path::to_path_buf).unwrap_or_default().join(target);
                        next.extend(rest.iter().rev());
                        let next = self.relative(Some(&next.to_string_lossy())).ok()?;
                        return self.resolve_within(&next, links - 1);
                    }
                    let name = existing.file_name()?.to_os_string();
                    rest.push(name);
                    if !existing.pop() {
                        return None;
                    }
                    if existing.as_os_str().is_empty() {
                        existing.push(".");
                    }
                }
            }
        }
    }

    /// An execution error for an I/O failure on `shown`, in words a script can act on.
    pub fn io_error(&self, shown: &str, error: io::Error) -> ToolError {
        let shown = if shown.is_empty() { "." } else { shown };
        match error.kind() {
            io::ErrorKind::NotFound => ToolError::execution(format!("`{shown}` does not exist in the workspace")),
            // cap-std refuses every escape, symbolic links included, as PermissionDenied.
            io::ErrorKind::PermissionDenied if is_escape(&error) => outside(shown),
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                ToolError::execution(format!("`{shown}`: permission denied (the workspace may not be writable)"))
            }
            io::ErrorKind::NotADirectory => ToolError::execution(format!("`{shown}` is not a directory")),
            io::ErrorKind::IsADirectory => ToolError::execution(format!("`{shown}` is a directory, not a file")),
            io::ErrorKind::StorageFull => ToolError::execution(format!("`{shown}`: no space left on the device")),
            _ => ToolError::execution(format!("`{shown}`: {error}")),
        }
    }
}

/// Whether `place` is `folder` or lies below it (both relative and `/`-separated), ignoring
/// ASCII case as case-insensitive file systems would.
fn is_at_or_below(place: &str, folder: &str) -> bool {
    let (place, folder) = (place.as_bytes(), folder.as_bytes());
    place.len() >= folder.len()
        && place[..folder.len()].eq_ignore_ascii_case(folder)
        && (place.len() == folder.len() || place[folder.len()] == b'/')
}

/// `name` inside the `/`-separated relative folder `folder` (`""` is the workspace).
fn join(folder: &str, name: &str) -> String {
    if folder.is_empty() { name.to_string() } else { format!("{folder}/{name}") }
}

/// A relative path as permission rules read it: `/`-separated, `""` for the workspace.
fn slashed(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .filter_map(|component| match component {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    parts.join("/")
}

fn not_regular(shown: &str) -> ToolError {
    ToolError::execution(format!(
        "`{shown}` is not a regular file (a FIFO, device or socket); the workspace tools read and write regular files only"
    ))
}

fn outside(path: &str) -> ToolError {
    ToolError::params(format!("`{path}` leads outside the workspace; only paths inside it can be used"))
}

fn is_escape(error: &io::Error) -> bool {
    // cap-std's escape refusal; an ordinary EACCES carries an OS error code instead.
    error.raw_os_error().is_none()
}

/// One entry found by [`walk`].
pub struct WalkEntry {
    /// Relative to the workspace, with `/` separators.
    pub path: String,
    pub is_file: bool,
}

/// Visits the entries under `base` (relative to the workspace) depth first, in name order,
/// without following symbolic links to directories and skipping `.git`; unless `all`, hidden
/// entries and what `.gitignore` files exclude are left out too (see [`Ignored`]). `visit`
/// returns `false` to stop. Stops after [`MAX_WALK_ENTRIES`]; returns whether it stopped early.
pub fn walk(
    workspace: &Workspace,
    base: &Path,
    all: bool,
    cancelled: &dyn Fn() -> bool,
    visit: &mut dyn FnMut(&WalkEntry) -> bool,
) -> Result<bool, ToolError> {
    let mut ignored = Ignored::new(workspace, all);
    let shown = base.to_string_lossy().into_owned();
    let mut stack: Vec<PathBuf> = vec![base.to_path_buf()];
    let mut visited = 0usize;
    while let Some(directory) = stack.pop() {
        let entries = match workspace.dir().read_dir(&directory) {
            Ok(entries) => entries,
            // The base itself must be readable; deeper failures skip that directory.
            Err(error) if directory == base => return Err(workspace.io_error(&shown, error)),
            Err(_) => continue,
        };
        let mut children: Vec<(String, bool, bool)> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(file_type) = entry.file_type() else { continue };
            children.push((name, file_type.is_dir(), file_type.is_file()));
        }
        children.sort();
        let mut subdirectories = Vec::new();
        for (name, is_dir, is_file) in children {
            visited += 1;
            if visited > MAX_WALK_ENTRIES || cancelled() {
                return Ok(true);
            }
            let child = if directory == Path::new(".") { PathBuf::from(&name) } else { directory.join(&name) };
            if ignored.skips(&child, &name, is_dir) {
                continue;
            }
            let entry = WalkEntry { path: display_path(&child), is_file };
            if !visit(&entry) {
                return Ok(true);
            }
            if is_dir && name != ".git" {
                subdirectories.push(child);
            }
        }
        // Reverse so the stack pops them in name order.
        stack.extend(subdirectories.into_iter().rev());
    }
    Ok(false)
}

/// A workspace-relative path with `/` separators, as tools report paths.
pub fn display_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let text = text.strip_prefix("./").unwrap_or(&text);
    if std::path::MAIN_SEPARATOR == '/' { text.to_string() } else { text.replace(std::path::MAIN_SEPARATOR, "/") }
}

/// One line read by [`read_line_bounded`]: its length in bytes (its line end included) and
/// in characters without its line end (UTF-8 sequences; an invalid byte counts as one).
pub struct LineLength {
    pub bytes: u64,
    pub text_chars: u64,
}

/// Reads one line of `reader` into `kept`, keeping at most `keep` bytes of it and reading
/// the rest without keeping it: a file of one endless line costs `keep` bytes, not its size.
/// `None` at the end of the file. Checks `cancelled` every MiB (an `Interrupted` error).
pub fn read_line_bounded(
    reader: &mut impl io::BufRead,
    kept: &mut Vec<u8>,
    keep: usize,
    cancelled: &dyn Fn() -> bool,
) -> io::Result<Option<LineLength>> {
    kept.clear();
    let mut length = LineLength { bytes: 0, text_chars: 0 };
    let mut last = 0u8;
    let mut since_check = 0usize;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok((length.bytes > 0).then_some(length));
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        length.bytes += chunk.len() as u64;
        length.text_chars += chunk.iter().filter(|&&b| (b & 0xC0) != 0x80).count() as u64;
        if done {
            let before = if chunk.len() >= 2 { chunk[chunk.len() - 2] } else { last };
            length.text_chars -= if before == b'\r' { 2 } else { 1 };
        }
        last = chunk[chunk.len() - 1];
        let used = chunk.len();
        reader.consume(used);
        if done {
            return Ok(Some(length));
        }
        since_check += used;
        if since_check >= 1 << 20 {
            since_check = 0;
            if cancelled() {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
            }
        }
    }
}

/// Whether `bytes` (the start of a file) look binary: a NUL byte is the usual sign.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn relative_paths_are_cleaned() {
        let (_d, ws) = workspace();
        assert_eq!(ws.relative(None).unwrap(), PathBuf::from("."));
        assert_eq!(ws.relative(Some("a/./b/../c")).unwrap(), PathBuf::from("a/c"));
        assert_eq!(ws.relative(Some("a/..")).unwrap(), PathBuf::from("."));
    }

    #[test]
    fn escapes_are_refused_by_name() {
        let (_d, ws) = workspace();
        let err = ws.relative(Some("../x")).unwrap_err();
        assert!(err.message.contains("leads outside the workspace"), "{}", err.message);
        let err = ws.relative(Some("a/../../x")).unwrap_err();
        assert!(err.message.contains("leads outside the workspace"), "{}", err.message);
        let err = ws.relative(Some("/etc/passwd")).unwrap_err();
        assert!(err.message.contains("absolute path"), "{}", err.message);
    }
}
