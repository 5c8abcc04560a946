//! What a search of the workspace (`glob`, `grep`) leaves out unless asked for everything:
//! hidden entries (a name starting with `.`) and what the workspace's `.gitignore` files
//! exclude, read as git reads them (a deeper file overrides a shallower one, `!` re-includes).
//! The `.gitignore` files are read through the workspace like any other file: a FIFO, a
//! device or a huge file in their place is passed over, never waited on.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::workspace::{Access, Workspace};

/// Bytes of one `.gitignore` file read; the rest of a larger one is not applied.
pub const MAX_IGNORE_FILE_BYTES: u64 = 256 * 1024;

/// The name of the files whose patterns are applied.
const IGNORE_FILE: &str = ".gitignore";

/// The rules of one walk: built as it goes, one `.gitignore` per folder, each read once.
pub(super) struct Ignored<'a> {
    workspace: &'a Workspace,
    /// `None` with `all: true`: nothing is left out.
    rules: Option<HashMap<PathBuf, Option<Gitignore>>>,
}

impl<'a> Ignored<'a> {
    /// The rules of a walk; `all` leaves nothing out.
    pub fn new(workspace: &'a Workspace, all: bool) -> Self {
        Ignored { workspace, rules: (!all).then(HashMap::new) }
    }

    /// Whether the entry `path` (relative to the workspace, its name `name`) is left out.
    pub fn skips(&mut self, path: &Path, name: &str, is_dir: bool) -> bool {
        if self.rules.is_none() {
            return false;
        }
        if name.starts_with('.') {
            return true;
        }
        // The deepest `.gitignore` with an opinion decides, as in git.
        let mut folder = path.parent();
        while let Some(dir) = folder {
            let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
            if let Some(rules) = self.rules_of(dir) {
                match rules.matched(path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            folder = if dir == Path::new(".") { None } else { dir.parent() };
        }
        false
    }

    /// The patterns of `dir`'s `.gitignore`, read at the first need.
    fn rules_of(&mut self, dir: &Path) -> Option<&Gitignore> {
        let workspace = self.workspace;
        let rules = self.rules.as_mut()?;
        rules.entry(dir.to_path_buf()).or_insert_with(|| read_rules(workspace, dir)).as_ref()
    }
}

/// `dir/.gitignore` compiled, or `None` when there is none (or it cannot be read as a
/// regular text file).
fn read_rules(workspace: &Workspace, dir: &Path) -> Option<Gitignore> {
    let file = workspace.open_file(&dir.join(IGNORE_FILE), Access::Read).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_IGNORE_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    let mut builder = GitignoreBuilder::new(dir);
    for line in String::from_utf8_lossy(&bytes).lines() {
        // A pattern git would reject is skipped, as git skips it.
        let _ = builder.add_line(None, line);
    }
    builder.build().ok().filter(|rules| !rules.is_empty())
}
