//! Where settings live and how a session keeps them: the standard files, reread when one
//! changes, and the rule "allow always" writes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use cap_std::fs::Dir;
use serde_json::Value;

use crate::support::dirs::BaseDir;
use crate::support::lock::Unpoisoned;

use super::{Layer, Settings, SettingsError};

/// The managed file: an administrator's settings, above every other file.
pub const MANAGED_FILE: &str = "/etc/exec-host/managed-settings.json";
/// The project file, relative to the workspace.
pub const PROJECT_FILE: &str = ".exec-host/settings.json";

/// The user file: `$XDG_CONFIG_HOME/exec-host/settings.json`, else
/// `~/.config/exec-host/settings.json`.
pub fn user_file() -> Option<PathBuf> {
    Some(BaseDir::Config.exec_host()?.join("settings.json"))
}

/// Where one layer of settings comes from.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SettingsSource {
    /// Values in code (a managed layer when the layer says so).
    Values(Box<Layer>),
    /// A file, read again when it changes; a missing file is an empty layer.
    File(PathBuf),
    /// The managed file: like a file, and able to disable `bypassPermissions`.
    ManagedFile(PathBuf),
}

/// The sources `exec-host` reads, highest layer first: the managed file, the command line's
/// rules, `extra` (the last given highest), the project file of `workspace`, the user file.
pub fn standard_sources(workspace: &Path, extra: &[PathBuf], command_line: Option<Layer>) -> Vec<SettingsSource> {
    let mut sources = vec![SettingsSource::ManagedFile(PathBuf::from(MANAGED_FILE))];
    sources.extend(command_line.map(|layer| SettingsSource::Values(Box::new(layer))));
    sources.extend(extra.iter().rev().cloned().map(SettingsSource::File));
    sources.push(SettingsSource::File(workspace.join(PROJECT_FILE)));
    sources.extend(user_file().map(SettingsSource::File));
    sources
}

/// The settings of a session, highest layer first, reread when a file changes.
pub(crate) struct SettingsFiles {
    sources: Vec<SettingsSource>,
    state: Mutex<State>,
}

/// The files' modification times (`None`: absent), in order.
type Stamps = Vec<Option<SystemTime>>;

#[derive(Default)]
struct State {
    /// What the files said at their last modification times.
    read: Option<(Stamps, Result<Arc<Settings>, SettingsError>)>,
    /// The last settings read without error.
    last_good: Option<Arc<Settings>>,
}

impl SettingsFiles {
    /// Layers from the highest to the lowest.
    pub fn new(sources: Vec<SettingsSource>) -> Self {
        SettingsFiles { sources, state: Mutex::new(State::default()) }
    }

    /// The files, highest layer first.
    pub fn files(&self) -> Vec<&Path> {
        self.sources
            .iter()
            .filter_map(|source| match source {
                SettingsSource::File(path) | SettingsSource::ManagedFile(path) => Some(path.as_path()),
                SettingsSource::Values(_) => None,
            })
            .collect()
    }

    /// The settings now: files are read again when their modification time or presence
    /// changed since the last call. A file that became invalid is an error until it
    /// changes again (see [`current_or_last_good`](Self::current_or_last_good)).
    pub fn current(&self) -> Result<Arc<Settings>, SettingsError> {
        self.read().0
    }

    /// The settings now, or, while a file is invalid, the last settings that were valid: a
    /// session keeps running on a typo (the error is logged once per change of the files).
    /// An error only when no valid settings were ever read: the defaults deny nothing, so
    /// falling back to them would fail open.
    pub fn current_or_last_good(&self) -> Result<Arc<Settings>, SettingsError> {
        let (outcome, fresh) = self.read();
        match outcome {
            Ok(settings) => Ok(settings),
            Err(error) => {
                let state = self.state.locked();
                let last_good = state.last_good.clone().ok_or_else(|| error.clone())?;
                if fresh {
                    tracing::warn!(
                        "settings not reloaded, the previous ones stay in force: {}",
                        crate::support::report::error_sentence(&error)
                    );
                }
                Ok(last_good)
            }
        }
    }

    /// Adds `rule` to `permissions.allow` of settings file `file` (written atomically, its
    /// other keys kept; created when missing), and makes the next read see it.
    ///
    /// No link is followed on the way: `within` is the directory `file` is relative to
    /// (the workspace's handle, for a file inside it), and every folder below it, the file
    /// and the temporary file beside it are opened without following a link, so a link
    /// planted at any of them (a `.exec-host` that leads outside, a link at the temporary
    /// name) makes the save fail instead of writing elsewhere. Without `within`, `file` is
    /// taken from its own folder, opened as the path says.
    pub fn add_allow_rule(&self, within: Option<&Dir>, file: &Path, rule: &str) -> Result<(), SettingsError> {
        let fail = |reason: &str| SettingsError::new(file, reason);
        let (folder, name) = rules_folder(within, file)?;
        let text = match crate::support::text_file::read_text_in(&folder, &name, crate::support::text_file::MAX_CONFIG_FILE_BYTES)
        {
            Ok(text) => text,
            Err(crate::support::text_file::ReadError::Missing) => String::new(),
            Err(e) => return Err(SettingsError::new(file, format!("the file {e}")).caused_by(e)),
        };
        // Read as the settings are read (strict JSON) before it is changed.
        if !text.trim().is_empty() {
            serde_json::from_str::<Value>(&text).map_err(|e| SettingsError::from_reader(file, e))?;
        }
        let text = with_allow_rule(&text, rule).map_err(fail)?;
        replace_nofollow(&folder, &name, text.as_bytes()).map_err(|e| fail("cannot write it").caused_by(e))?;
        // The same modification time to the second could hide the change: forget what was read.
        self.state.locked().read = None;
        Ok(())
    }

    /// The settings (or the error) for the files as they are now, and whether they were
    /// read just now.
    fn read(&self) -> (Result<Arc<Settings>, SettingsError>, bool) {
        let stamps: Stamps = self.files().iter().map(|file| std::fs::metadata(file).and_then(|m| m.modified()).ok()).collect();
        let mut state = self.state.locked();
        if let Some((seen, outcome)) = &state.read
            && *seen == stamps
        {
            return (outcome.clone(), false);
        }
        let outcome = self.load().map(Arc::new);
        if let Ok(settings) = &outcome {
            state.last_good = Some(settings.clone());
        }
        state.read = Some((stamps, outcome.clone()));
        (outcome, true)
    }

    fn load(&self) -> Result<Settings, SettingsError> {
        let mut layers = Vec::with_capacity(self.sources.len());
        for source in &self.sources {
            layers.push(match source {
                SettingsSource::Values(layer) => (**layer).clone(),
                SettingsSource::File(file) => Layer::load(file)?,
                SettingsSource::ManagedFile(file) => Layer { managed: true, ..Layer::load(file)? },
            });
        }
        Ok(Settings::from_layers(&layers))
    }
}

/// `text` (a settings file, or nothing) with `rule` in `permissions.allow`, and nothing else
/// changed: its layout, its order and every other byte stay as the author wrote them.
fn with_allow_rule(text: &str, rule: &str) -> Result<String, &'static str> {
    use jsonc_parser::cst::{CstInputValue, CstRootNode};
    // Whitespace JSON does not allow (a form feed) would be kept and make the file unreadable.
    let text = if super::file::holds_nothing(text) { "" } else { text };
    let root = CstRootNode::parse(text, &jsonc_parser::ParseOptions::default()).map_err(|_| "it is not JSON")?;
    let top = root.object_value_or_create().ok_or("its top level is not an object")?;
    let permissions = top.object_value_or_create("permissions").ok_or("`permissions` is not an object")?;
    let allow = match permissions.get("allow") {
        Some(entry) => entry.value().and_then(|value| value.as_array()).ok_or("`permissions.allow` is not a list")?,
        None => permissions.array_value_or_set("allow"),
    };
    let known = allow
        .elements()
        .iter()
        .any(|element| element.as_string_lit().and_then(|text| text.decoded_value().ok()).as_deref() == Some(rule));
    if !known {
        allow.append(CstInputValue::String(rule.to_string()));
    }
    let mut written = root.to_string();
    if !written.ends_with('\n') {
        written.push('\n');
    }
    Ok(written)
}

/// The folder a rules file is written in, opened level by level below `within` without
/// following a link (missing levels are created), and the file's name. Without `within`,
/// the file's own folder as its path says (created when missing).
fn rules_folder(within: Option<&Dir>, file: &Path) -> Result<(Dir, String), SettingsError> {
    let fail = |reason: &str| SettingsError::new(file, reason);
    let name = file.file_name().and_then(|name| name.to_str()).ok_or_else(|| fail("it has no file name"))?.to_string();
    let parent = file.parent().unwrap_or(Path::new(""));
    let Some(within) = within else {
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        std::fs::create_dir_all(parent).map_err(|e| fail("cannot create its folder").caused_by(e))?;
        let folder = Dir::open_ambient_dir(parent, cap_std::ambient_authority())
            .map_err(|e| fail("cannot open its folder").caused_by(e))?;
        return Ok((folder, name));
    };
    let mut folder = within.try_clone().map_err(|e| fail("cannot open its folder").caused_by(e))?;
    for part in parent.components() {
        let part = match part {
            std::path::Component::Normal(part) => part,
            std::path::Component::CurDir => continue,
            _ => return Err(fail("its path leaves the folder it is relative to")),
        };
        let shown = part.to_string_lossy();
        folder = match open_dir_nofollow(&folder, part) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                folder.create_dir(part).map_err(|e| fail(&format!("cannot create its folder `{shown}`")).caused_by(e))?;
                open_dir_nofollow(&folder, part)
            }
            opened => opened,
        }
        .map_err(|e| fail(&format!("its folder `{shown}` cannot be opened without following a link")).caused_by(e))?;
    }
    Ok((folder, name))
}

/// The folder `name` of `folder`, opened without following a link there.
fn open_dir_nofollow(folder: &Dir, name: &std::ffi::OsStr) -> std::io::Result<Dir> {
    use cap_std::fs::OpenOptionsExt;
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW);
    Ok(Dir::from_std_file(folder.open_with(name, &options)?.into_std()))
}

/// Replaces file `name` in `folder` with `bytes` atomically: written to a temporary file
/// created new (never through a link) beside it, then renamed over it.
fn replace_nofollow(folder: &Dir, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use cap_std::fs::OpenOptionsExt;
    use std::io::Write;
    let temporary = format!(".{name}.{}.tmp", std::process::id());
    let mut options = cap_std::fs::OpenOptions::new();
    options.write(true).create_new(true).custom_flags(libc::O_NOFOLLOW);
    let mut file = folder.open_with(&temporary, &options)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all()).and_then(|()| folder.rename(&temporary, folder, name));
    if written.is_err() {
        let _ = folder.remove_file(&temporary);
    }
    written
}
