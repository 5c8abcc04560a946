//! The workspace: one directory handle every builtin file tool goes through.
//!
//! All access is relative to a `cap_std::fs::Dir` opened once on the workspace, so the
//! operating system, not string checks, keeps `..`, absolute paths and symbolic links from
//! leading outside it. The lexical checks here only make the refusal read well.

use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::tools::ToolError;

/// Entries a directory walk visits before it stops (glob, grep).
pub const MAX_WALK_ENTRIES: usize = 100_000;

/// The directory the builtin tools work in.
#[derive(Debug)]
pub struct Workspace {
    dir: Dir,
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
        Ok(Workspace { dir })
    }

    pub fn dir(&self) -> &Dir {
        &self.dir
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
    /// exists (the rest appended as written); `None` when it cannot be resolved inside.
    fn resolve(&self, relative: &Path) -> Option<String> {
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
/// without following symbolic links to directories and skipping `.git`. `visit` returns
/// `false` to stop. Stops after [`MAX_WALK_ENTRIES`]; returns whether it stopped early.
pub fn walk(
    workspace: &Workspace,
    base: &Path,
    cancelled: &dyn Fn() -> bool,
    visit: &mut dyn FnMut(&WalkEntry) -> bool,
) -> Result<bool, ToolError> {
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
