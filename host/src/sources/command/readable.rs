//! What of the system's folders a command may read: the read-only folders programs come
//! from, less the places the host keeps private beneath them.

use std::path::{Path, PathBuf};

/// Folders of the system a command may read (and run programs from), when they exist. Not
/// `/var` (services keep their state there, this host too: its store, key and tokens), nor
/// `/run` or `/home`.
const SYSTEM_READ: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store"];

/// Entries of system folders read to leave the host's private places out of what a command
/// reads; past it, the rest of those folders is not granted (less is read, never more).
const MAX_ENTRIES_AROUND_PRIVATE: usize = 4096;

/// What a command may read of `roots` (the system folders that exist) when `private` places
/// of the host lie beneath some of them. Landlock only grants, so a folder that holds a
/// private place is granted entry by entry, all but the way down to that place, which is
/// followed. Symbolic links on the way are not granted: what they lead to is readable where
/// it lies, or not at all.
fn readable_around(roots: &[PathBuf], private: &[PathBuf]) -> Vec<PathBuf> {
    let private: Vec<PathBuf> = private.iter().filter_map(|place| real_path(place)).collect();
    let mut granted = Vec::new();
    let mut budget = MAX_ENTRIES_AROUND_PRIVATE;
    for root in roots {
        match real_path(root) {
            Some(real) if private.iter().any(|place| place.starts_with(&real) || real.starts_with(place)) => {
                grant_around(&real, &private, &mut granted, &mut budget);
            }
            Some(_) => granted.push(root.clone()),
            None => {}
        }
    }
    granted
}

/// Grants the entries of `folder` (a real path above a private place) but the private ones,
/// going down into those that hold one.
fn grant_around(folder: &Path, private: &[PathBuf], granted: &mut Vec<PathBuf>, budget: &mut usize) {
    if private.iter().any(|place| folder.starts_with(place)) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    for entry in entries.flatten() {
        let Some(left) = budget.checked_sub(1) else { return };
        *budget = left;
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_symlink() || private.iter().any(|place| path.starts_with(place)) {
            continue;
        }
        match kind.is_dir() && private.iter().any(|place| place.starts_with(&path)) {
            true => grant_around(&path, private, granted, budget),
            false => granted.push(path),
        }
    }
}

/// `path` with every link resolved; for a place not made yet, its folder's real path and its
/// name.
fn real_path(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok().or_else(|| Some(path.parent()?.canonicalize().ok()?.join(path.file_name()?)))
}

/// What a command may read of the system folders that exist, less the `private` places of
/// the host beneath them.
pub(super) fn system_folders(private: &[PathBuf]) -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).filter(|path| path.exists()).collect();
    readable_around(&roots, private)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_holding_a_private_place_is_granted_around_it() {
        let system = tempfile::tempdir().unwrap();
        let root = system.path().canonicalize().unwrap();
        let etc = root.join("etc");
        for folder in ["etc/exec-host/keys", "etc/ssl", "opt/tool"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        for file in ["etc/hosts", "etc/exec-host/keys/state.key", "etc/exec-host/keys/other", "etc/exec-host/config"] {
            std::fs::write(root.join(file), "x").unwrap();
        }
        std::os::unix::fs::symlink(root.join("elsewhere"), etc.join("link")).unwrap();
        let roots = [etc.clone(), root.join("opt")];
        let private = [etc.join("exec-host/keys/state.key"), etc.join("exec-host/not-made-yet.token")];
        let mut granted = readable_around(&roots, &private);
        granted.sort();
        let want: Vec<PathBuf> = ["etc/exec-host/config", "etc/exec-host/keys/other", "etc/hosts", "etc/ssl", "opt"]
            .iter()
            .map(|path| root.join(path))
            .collect();
        assert_eq!(granted, want, "the key, the token's place and the link are not granted; /opt is whole");
        assert_eq!(readable_around(&roots, &[]), roots, "with nothing private, each folder is one grant");
        assert_eq!(readable_around(&roots, std::slice::from_ref(&etc)), [root.join("opt")], "a private folder is left out whole");
    }
}
