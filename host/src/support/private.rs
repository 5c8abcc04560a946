//! The host's private places (the compiled-guest cache it maps as code, the state store and
//! its key): whether a file or folder is this user's own, never through a link
//! ([`owned_privately`]), and the one rule that such a place is never inside the workspace,
//! however its path is spelled ([`check_outside_workspace`]). [`real_path`] is where a path
//! leads, for every check that compares places.

use std::ffi::OsString;
use std::fs::Metadata;
use std::path::{Component, Path, PathBuf};

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

/// Why a place is not this user's own: the end of a sentence that begins with the place
/// (`is not a plain file`).
#[derive(Debug, thiserror::Error)]
pub enum NotPrivate {
    #[error("cannot be inspected: {0}")]
    Uninspectable(#[source] std::io::Error),
    #[error("is not a plain {0}")]
    NotA(&'static str),
    #[error("has {0} names (hard links), so it can be read or changed through another one; give a file of its own")]
    HardLinks(u64),
    #[error("belongs to another user (uid {0})")]
    OtherOwner(u32),
    #[error("is writable by other users (mode {0:o})")]
    WritableByOthers(u32),
    #[error("is readable or writable by other users (mode {0:o})")]
    OpenToOthers(u32),
}

/// `place`'s metadata when it is a `kind` (not a link), owned by this user, and open to
/// others no more than `others` allows; else why not.
pub fn owned_privately(place: &Path, kind: Kind, others: Others) -> Result<Metadata, NotPrivate> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let metadata = std::fs::symlink_metadata(place).map_err(NotPrivate::Uninspectable)?;
    let (kind_ok, noun) = match kind {
        Kind::File => (metadata.is_file(), "file"),
        Kind::Folder => (metadata.is_dir(), "folder"),
    };
    if !kind_ok {
        return Err(NotPrivate::NotA(noun));
    }
    // Another name of the file (a hard link, say in the workspace) would read and write it
    // past every check made here.
    if kind == Kind::File && metadata.nlink() != 1 {
        return Err(NotPrivate::HardLinks(metadata.nlink()));
    }
    if metadata.uid() != me {
        return Err(NotPrivate::OtherOwner(metadata.uid()));
    }
    let mode = metadata.mode() & 0o7777;
    match others {
        Others::MayRead if mode & 0o022 != 0 => Err(NotPrivate::WritableByOthers(mode)),
        Others::Nothing if mode & 0o077 != 0 => Err(NotPrivate::OpenToOthers(mode)),
        _ => Ok(metadata),
    }
}

/// Links a path may pass through before the rest is read as written (the kernel's own
/// bound, past which it refuses the path).
const MAX_LINKS: usize = 40;

/// `path` made absolute, where it leads now or would lead once made: from the working
/// folder's real place, each link followed (a dangling one too), each `..` taken from the
/// real folder before it, and what does not exist yet as written. `passing` is told every
/// place the path goes through on the way (the start of a relative path, then each name as
/// resolved so far, links included), the last being the result.
fn resolve(path: &Path, mut passing: impl FnMut(&Path)) -> PathBuf {
    enum Step {
        Root,
        Up,
        Name(OsString),
    }
    let steps_of = |path: &Path| -> Vec<Step> {
        let mut steps: Vec<Step> = path
            .components()
            .filter_map(|part| match part {
                Component::RootDir | Component::Prefix(_) => Some(Step::Root),
                Component::CurDir => None,
                Component::ParentDir => Some(Step::Up),
                Component::Normal(name) => Some(Step::Name(name.to_os_string())),
            })
            .collect();
        // Taken from the end.
        steps.reverse();
        steps
    };
    let mut real = PathBuf::from("/");
    if path.is_relative() {
        let cwd = std::env::current_dir().unwrap_or_default();
        real = std::fs::canonicalize(&cwd).unwrap_or(cwd);
        passing(&real);
    }
    let mut steps = steps_of(path);
    let mut links = 0;
    while let Some(step) = steps.pop() {
        match step {
            Step::Root => real = PathBuf::from("/"),
            // `real` holds no link, so its parent is where `..` leads.
            Step::Up => {
                real.pop();
            }
            Step::Name(name) => {
                real.push(name);
                passing(&real);
                if links < MAX_LINKS
                    && let Ok(target) = std::fs::read_link(&real)
                {
                    links += 1;
                    real.pop();
                    steps.extend(steps_of(&target));
                }
            }
        }
    }
    real
}

/// Where `path` leads: absolute, links followed, `..` taken from the real folder before it,
/// and what does not exist yet as written (see [`resolve`]).
pub fn real_path(path: &Path) -> PathBuf {
    resolve(path, |_| {})
}

/// Why a host-private place may not be where it was given.
#[derive(Debug, thiserror::Error)]
pub enum InsideWorkspace {
    #[error("{} is inside the workspace, where scripts read and write files", .place.display())]
    Inside { place: PathBuf },
    #[error(
        "{} leads through {}, inside the workspace, where a script could change where it leads",
        .place.display(),
        .through.display()
    )]
    Through { place: PathBuf, through: PathBuf },
}

/// Refuses `place`, a file or folder the host keeps from scripts (a state store, its key, a
/// cache of code, credentials), when it is or could come to be inside `workspace`: when it
/// leads there (as `real_path` resolves it), or passes on its way through a folder or link inside it,
/// which a script could replace. The workspace itself on the way is no danger: no script
/// can move it.
pub fn check_outside_workspace(place: &Path, workspace: &Path) -> Result<(), InsideWorkspace> {
    let workspace = real_path(workspace);
    let mut through = None;
    let real = resolve(place, |step| {
        if through.is_none() && step != workspace && step.starts_with(&workspace) {
            through = Some(step.to_path_buf());
        }
    });
    if real.starts_with(&workspace) {
        return Err(InsideWorkspace::Inside { place: place.to_path_buf() });
    }
    match through {
        Some(through) => Err(InsideWorkspace::Through { place: place.to_path_buf(), through }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    /// A workspace `ws` beside a folder `out`, both real (the temporary folder may be a link).
    fn places() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(root.path()).unwrap();
        let (ws, out) = (real.join("ws"), real.join("out"));
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        (root, ws, out)
    }

    #[test]
    fn no_spelling_puts_a_private_place_inside_the_workspace() {
        let (_root, ws, out) = places();
        symlink(&ws, out.join("door")).unwrap();
        symlink(ws.join("missing"), out.join("dangling")).unwrap();
        symlink(ws.join("a/b"), ws.join("deep")).unwrap();
        for spelling in [
            ws.join("st"),
            out.join("nx/../../ws/st"),
            out.join("nx/nx2/../../../ws/st"),
            out.join("door/st"),
            out.join("door/../out/../ws/st"),
            out.join("dangling"),
            out.join("dangling/st"),
            ws.clone(),
            ws.join("."),
        ] {
            let refused = check_outside_workspace(&spelling, &ws);
            assert!(matches!(refused, Err(InsideWorkspace::Inside { .. })), "{}: {refused:?}", spelling.display());
        }
        // Outside now, but through places a script could replace (`deep/..` is `ws/a` as
        // long as `deep` stays the link it is).
        for spelling in [ws.join("a/../../out/st"), ws.join("deep/../../../out/st"), ws.join("nx/../../out/st")] {
            let refused = check_outside_workspace(&spelling, &ws);
            assert!(matches!(refused, Err(InsideWorkspace::Through { .. })), "{}: {refused:?}", spelling.display());
        }
        for spelling in [out.join("st"), out.join("nx/../st"), ws.join("../out/st"), out.join("door/../out/st")] {
            assert!(check_outside_workspace(&spelling, &ws).is_ok(), "{}", spelling.display());
        }
    }

    #[test]
    fn a_real_path_takes_each_parent_from_the_real_folder_before_it() {
        let (_root, ws, out) = places();
        symlink(ws.join("a/b"), out.join("deep")).unwrap();
        assert_eq!(real_path(&out.join("nx/../../ws/st")), ws.join("st"));
        assert_eq!(real_path(&out.join("deep/../c")), ws.join("a/c"));
        symlink("loop", out.join("loop")).unwrap();
        assert_eq!(real_path(&out.join("loop/x")).parent(), Some(out.join("loop").as_path()), "a loop ends");
    }

    #[test]
    fn a_private_file_with_another_name_is_refused() {
        let (_root, ws, out) = places();
        let key = out.join("state.key");
        std::fs::write(&key, "k").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(owned_privately(&key, Kind::File, Others::Nothing).is_ok());
        std::fs::hard_link(&key, ws.join("copy.txt")).unwrap();
        let why = owned_privately(&key, Kind::File, Others::Nothing).unwrap_err();
        assert!(matches!(why, NotPrivate::HardLinks(2)), "{why}");
    }
}
