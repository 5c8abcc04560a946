//! Where a path really is, and whether a folder others write can reach it: the one rule by
//! which the host keeps what it holds secret or runs (the state store and its key, the
//! OAuth credentials, the compiled-guest cache) out of the workspace.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// `path` made absolute, with its longest existing part resolved (links followed) and the
/// rest as written, `.` and `..` applied: where a file is, or would be once created (a
/// missing folder is made as a real one, so `..` after it is its parent).
pub fn real_path(path: &Path) -> PathBuf {
    walk(path, |_| false).0
}

/// Whether `place` (which may not exist yet) is in `folder` or passes through it on its
/// way: read as [`real_path`] reads both, and at every step, so neither `..` after a missing
/// folder nor a link (into the folder, or one inside it that its writers could swap) hides it.
pub fn reaches_into(place: &Path, folder: &Path) -> bool {
    let folder = real_path(folder);
    walk(place, |step| step.starts_with(&folder)).1
}

/// Resolves `path` one component at a time; stops early, `true`, at the first step (a
/// resolved prefix, or the whole) that `stop` accepts.
fn walk(path: &Path, mut stop: impl FnMut(&Path) -> bool) -> (PathBuf, bool) {
    let absolute = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut real = PathBuf::new();
    // Names below the last existing folder: nothing there can be a link yet.
    let mut missing: Vec<OsString> = Vec::new();
    for component in absolute.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => real.push(component),
            Component::CurDir => continue,
            Component::ParentDir => {
                if missing.pop().is_none() {
                    // `real` holds no link, so its parent is what `..` reaches.
                    real.pop();
                }
            }
            Component::Normal(name) if missing.is_empty() => match std::fs::canonicalize(real.join(name)) {
                Ok(resolved) => real = resolved,
                // Missing, or a link to nowhere: the name itself is where a file would be.
                Err(_) => missing.push(name.to_os_string()),
            },
            Component::Normal(name) => missing.push(name.to_os_string()),
        }
        if missing.is_empty() && stop(&real) {
            return (real, true);
        }
    }
    real.extend(&missing);
    let stopped = stop(&real);
    (real, stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_reaches_into_a_folder_however_it_is_spelled_or_linked() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let workspace = root.join("ws");
        std::fs::create_dir(&workspace).unwrap();
        std::fs::create_dir(root.join("out")).unwrap();
        assert!(reaches_into(&workspace.join("creds"), &workspace));
        assert!(reaches_into(&workspace, &workspace));
        assert!(!reaches_into(&root.join("out/creds"), &workspace));
        assert!(!reaches_into(&root.join("wsx/creds"), &workspace), "a sibling whose name starts the same");
        // `..` after folders that do not exist yet: they are made as real ones.
        assert!(reaches_into(&root.join(".rt/nx/../../ws/creds"), &workspace));
        assert_eq!(real_path(&root.join(".rt/nx/../../ws/creds")), workspace.join("creds"));
        assert!(reaches_into(&root.join("ws/sub/../../out/creds"), &workspace), "spelled through the workspace");
        // Through a link into the workspace, or a link inside it that points out.
        std::os::unix::fs::symlink(&workspace, root.join("into")).unwrap();
        assert!(reaches_into(&root.join("into/creds"), &workspace));
        std::os::unix::fs::symlink(root.join("out"), workspace.join("away")).unwrap();
        assert!(reaches_into(&workspace.join("away/creds"), &workspace), "a script could swap the link");
        // A link to nowhere is where it stands.
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("out/dangling")).unwrap();
        assert!(!reaches_into(&root.join("out/dangling"), &workspace));
        assert_eq!(real_path(&root.join("out/./dangling")), root.join("out/dangling"));
    }
}
