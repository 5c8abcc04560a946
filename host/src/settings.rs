//! Settings, in layers: a managed file (or values an embedding passes in code) over a
//! project file over a user file over built-in defaults. Keys follow Claude Code where it
//! has them:
//!
//! ```json
//! { "permissions": { "deny": ["write_file", "mcp__tickets", "Bash(rm:*)"], "allow": [], "ask": [] },
//!   "enableExec": true,
//!   "nonDeferredTools": ["mcp__search__query"] }
//! ```
//!
//! A scalar comes from the highest layer that sets it; rule lists and `nonDeferredTools` are
//! the union of every layer (managed first). Keys this host does not use are ignored, so a
//! Claude Code settings file loads unchanged. A session rereads a file when it
//! changes on disk, without a restart; [`standard_files`] says where `exec-host` looks.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;

use crate::tools::names::{MCP_PREFIX, split_mcp_name};

/// Where a setting comes from, so a refusal can say which rule of which file made it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// Values the embedding passed in code (the managed layer).
    Code,
    /// A settings file.
    File(PathBuf),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Code => f.write_str("the settings passed in code"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A value and the [`Source`] it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// The settings in force.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// Whether the deferred tools collapse behind `Exec` (default true).
    pub enable_exec: bool,
    /// Where `enable_exec` was set; `None` when it is the default.
    pub enable_exec_source: Option<Source>,
    /// Names that must stay declared flat; unknown names are ignored.
    pub non_deferred_tools: Vec<String>,
    /// Permission rules of every layer, highest layer first, each with its source.
    pub deny: Vec<Sourced<Rule>>,
    pub allow: Vec<Sourced<Rule>>,
    pub ask: Vec<Sourced<Rule>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enable_exec: true,
            enable_exec_source: None,
            non_deferred_tools: Vec::new(),
            deny: Vec::new(),
            allow: Vec::new(),
            ask: Vec::new(),
        }
    }
}

/// Permission rules of one layer, by list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub deny: Vec<Rule>,
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
}

/// One permission rule: `ToolName`, `ToolName(pattern)`, `mcp__server`,
/// `mcp__server__*` or `mcp__server__tool`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The tool (or `mcp__server`) the rule names.
    pub tool: String,
    /// What inside the call the rule is about; `None` covers the whole tool.
    pub pattern: Option<String>,
}

impl Rule {
    /// Reads a rule as written in a settings file.
    pub fn parse(text: &str) -> Result<Rule, String> {
        let text = text.trim();
        let (tool, pattern) = match text.find('(') {
            Some(open) => {
                let inner = text[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| format!("rule {text:?} opens `(` without closing it at the end"))?;
                (&text[..open], Some(inner.to_string()))
            }
            None => (text, None),
        };
        if tool.is_empty() {
            return Err(format!("rule {text:?} names no tool"));
        }
        if tool.chars().any(|c| c.is_whitespace() || c.is_control() || c == ')') {
            return Err(format!("rule {text:?}: the tool name may not contain whitespace or `)`"));
        }
        Ok(Rule { tool: tool.to_string(), pattern })
    }

    /// Whether the rule covers every call of tool `name`: it has no pattern and names the
    /// tool, its MCP server (`mcp__server`), or all of that server's tools (`mcp__server__*`).
    pub fn covers_tool(&self, name: &str) -> bool {
        if self.pattern.is_some() {
            return false;
        }
        if self.tool == name {
            return true;
        }
        let Some((server, _)) = split_mcp_name(name) else { return false };
        let whole_server = self.tool.strip_suffix("__*").unwrap_or(&self.tool);
        whole_server.strip_prefix(MCP_PREFIX) == Some(server)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Some(pattern) => write!(f, "{}({pattern})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

/// Why a settings file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct SettingsError {
    pub file: PathBuf,
    pub reason: String,
}

/// What one layer sets; `None` where it says nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Layer {
    pub source: Source,
    pub enable_exec: Option<bool>,
    pub non_deferred_tools: Vec<String>,
    pub permissions: Permissions,
}

impl Default for Layer {
    /// An empty layer of values passed in code.
    fn default() -> Self {
        Layer { source: Source::Code, enable_exec: None, non_deferred_tools: Vec::new(), permissions: Permissions::default() }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct LayerFile {
    enable_exec: Option<bool>,
    #[serde(default)]
    non_deferred_tools: Vec<String>,
    #[serde(default)]
    permissions: PermissionsFile,
}

#[derive(Deserialize, Default)]
struct PermissionsFile {
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
}

impl Layer {
    /// Reads one settings text; `file` names it in errors (with the key path and line).
    pub fn parse(text: &str, file: &Path) -> Result<Layer, SettingsError> {
        let source = Source::File(file.to_path_buf());
        if text.trim().is_empty() {
            return Ok(Layer { source, ..Layer::default() });
        }
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let parsed = serde_path_to_error::deserialize(&mut deserializer);
        Self::from_parsed(parsed, source, file)
    }

    /// Settings an embedding passes in code, written as a settings file would be
    /// (`{"enableExec": false, "permissions": {"deny": ["Exec"]}}`); they form the managed
    /// layer, above every file.
    pub fn from_value(value: Value) -> Result<Layer, SettingsError> {
        let parsed = serde_path_to_error::deserialize(value);
        Self::from_parsed(parsed, Source::Code, Path::new("<settings passed in code>"))
    }

    fn from_parsed<E: fmt::Display>(
        parsed: Result<LayerFile, serde_path_to_error::Error<E>>,
        source: Source,
        file: &Path,
    ) -> Result<Layer, SettingsError> {
        let fail = |reason: String| SettingsError { file: file.to_path_buf(), reason };
        let parsed = parsed.map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." { fail(inner.to_string()) } else { fail(format!("{path}: {inner}")) }
        })?;
        let rules = |list: Vec<String>, key: &str| -> Result<Vec<Rule>, SettingsError> {
            list.iter()
                .enumerate()
                .map(|(i, text)| Rule::parse(text).map_err(|why| fail(format!("permissions.{key}[{i}]: {why}"))))
                .collect()
        };
        Ok(Layer {
            source,
            enable_exec: parsed.enable_exec,
            non_deferred_tools: parsed.non_deferred_tools,
            permissions: Permissions {
                deny: rules(parsed.permissions.deny, "deny")?,
                allow: rules(parsed.permissions.allow, "allow")?,
                ask: rules(parsed.permissions.ask, "ask")?,
            },
        })
    }

    /// Reads one settings file; a file that does not exist is an empty layer.
    pub fn load(file: &Path) -> Result<Layer, SettingsError> {
        match std::fs::read_to_string(file) {
            Ok(text) => Self::parse(&text, file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Ok(Layer { source: Source::File(file.to_path_buf()), ..Layer::default() })
            }
            Err(e) => Err(SettingsError { file: file.to_path_buf(), reason: format!("cannot read it: {e}") }),
        }
    }
}

impl Settings {
    /// Combines layers, highest first (managed, project, user): a scalar from the first
    /// layer that sets it, lists joined in that order without repeats.
    pub fn from_layers<'a>(layers: impl IntoIterator<Item = &'a Layer>) -> Settings {
        let mut settings = Settings::default();
        let mut enable_exec = None;
        for layer in layers {
            if enable_exec.is_none()
                && let Some(value) = layer.enable_exec
            {
                enable_exec = Some(value);
                settings.enable_exec_source = Some(layer.source.clone());
            }
            for name in &layer.non_deferred_tools {
                if !settings.non_deferred_tools.contains(name) {
                    settings.non_deferred_tools.push(name.clone());
                }
            }
            join_rules(&mut settings.deny, &layer.permissions.deny, &layer.source);
            join_rules(&mut settings.allow, &layer.permissions.allow, &layer.source);
            join_rules(&mut settings.ask, &layer.permissions.ask, &layer.source);
        }
        settings.enable_exec = enable_exec.unwrap_or(true);
        settings
    }

    /// Whether a `deny` rule removes tool `name` altogether.
    pub fn denies(&self, name: &str) -> bool {
        self.denying_rule(name).is_some()
    }

    /// The first `deny` rule that removes tool `name` altogether, with its source.
    pub fn denying_rule(&self, name: &str) -> Option<&Sourced<Rule>> {
        self.deny.iter().find(|rule| rule.value.covers_tool(name))
    }
}

/// Adds `rules` of a layer from `source`; a rule already there from a higher layer stays
/// with the source it had.
fn join_rules(into: &mut Vec<Sourced<Rule>>, rules: &[Rule], source: &Source) {
    for rule in rules {
        if !into.iter().any(|known| known.value == *rule) {
            into.push(Sourced { value: rule.clone(), source: source.clone() });
        }
    }
}

/// The managed file: an administrator's settings, above every other file.
pub const MANAGED_FILE: &str = "/etc/exec-host/managed-settings.json";
/// The project file, relative to the workspace.
pub const PROJECT_FILE: &str = ".exec-host/settings.json";

/// The user file: `$XDG_CONFIG_HOME/exec-host/settings.json`, else
/// `~/.config/exec-host/settings.json`.
pub fn user_file() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("exec-host").join("settings.json"))
}

/// The files `exec-host` reads, highest layer first: the managed file, then `extra` (the
/// last given highest), then the project file of `workspace`, then the user file.
pub fn standard_files(workspace: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from(MANAGED_FILE)];
    files.extend(extra.iter().rev().cloned());
    files.push(workspace.join(PROJECT_FILE));
    files.extend(user_file());
    files
}

/// The settings files of a session, highest layer first, reread when one changes.
pub(crate) struct SettingsFiles {
    /// Values an embedding passes in code; they sit above every file.
    managed_values: Option<Layer>,
    files: Vec<PathBuf>,
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
    /// `files` from the highest layer to the lowest (managed, project, user); missing files
    /// are empty layers.
    pub fn new(managed_values: Option<Layer>, files: Vec<PathBuf>) -> Self {
        SettingsFiles { managed_values, files, state: Mutex::new(State::default()) }
    }

    /// The files, highest layer first.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
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
                let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                let last_good = state.last_good.clone().ok_or_else(|| error.clone())?;
                if fresh {
                    tracing::warn!("settings not reloaded, the previous ones stay in force: {error}");
                }
                Ok(last_good)
            }
        }
    }

    /// The settings (or the error) for the files as they are now, and whether they were
    /// read just now.
    fn read(&self) -> (Result<Arc<Settings>, SettingsError>, bool) {
        let stamps: Stamps = self.files.iter().map(|file| std::fs::metadata(file).and_then(|m| m.modified()).ok()).collect();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
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
        let mut layers = Vec::with_capacity(self.files.len() + 1);
        layers.extend(self.managed_values.clone());
        for file in &self.files {
            layers.push(Layer::load(file)?);
        }
        Ok(Settings::from_layers(&layers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(text: &str) -> Layer {
        Layer::parse(text, Path::new("settings.json")).unwrap()
    }

    #[test]
    fn rules_parse_as_claude_code_writes_them() {
        assert_eq!(Rule::parse("write_file").unwrap(), Rule { tool: "write_file".into(), pattern: None });
        assert_eq!(Rule::parse("Bash(rm:*)").unwrap(), Rule { tool: "Bash".into(), pattern: Some("rm:*".into()) });
        assert_eq!(Rule::parse("Read(./secrets/(x))").unwrap().pattern.as_deref(), Some("./secrets/(x)"));
        assert_eq!(Rule::parse("Bash(rm:*)").unwrap().to_string(), "Bash(rm:*)");
        for bad in ["", "(x)", "Bash(rm", "two words"] {
            assert!(Rule::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_bare_rule_covers_its_tool_its_server_or_all_of_a_servers_tools() {
        let covers = |rule: &str, name: &str| Rule::parse(rule).unwrap().covers_tool(name);
        assert!(covers("write_file", "write_file"));
        assert!(!covers("write_file", "read_file"));
        assert!(covers("mcp__tickets", "mcp__tickets__create"));
        assert!(covers("mcp__tickets__*", "mcp__tickets__create"));
        assert!(covers("mcp__tickets__create", "mcp__tickets__create"));
        assert!(!covers("mcp__tickets__create", "mcp__tickets__list"));
        assert!(!covers("mcp__tick", "mcp__tickets__create"), "a prefix of a server name is another server");
        assert!(!covers("write_file(/etc/*)", "write_file"), "a rule with a pattern is about some calls only");
    }

    #[test]
    fn layers_combine_highest_first() {
        let managed =
            Layer::parse(r#"{"enableExec": false, "permissions": {"deny": ["mcp__tickets"]}}"#, Path::new("managed.json"))
                .unwrap();
        let project = layer(
            r#"{"enableExec": true, "nonDeferredTools": ["grep"], "permissions": {"deny": ["write_file", "mcp__tickets"]}}"#,
        );
        let user = layer(r#"{"nonDeferredTools": ["grep", "ls"], "model": "ignored", "hooks": {}}"#);
        let settings = Settings::from_layers([&managed, &project, &user]);
        assert!(!settings.enable_exec, "the managed layer wins");
        assert_eq!(settings.non_deferred_tools, ["grep", "ls"]);
        let deny: Vec<String> = settings.deny.iter().map(|rule| rule.value.to_string()).collect();
        assert_eq!(deny, ["mcp__tickets", "write_file"]);
        assert_eq!(settings.denying_rule("mcp__tickets__x").unwrap().source, managed.source, "the highest layer's rule is kept");
        assert_eq!(settings.enable_exec_source, Some(managed.source.clone()));
        assert!(settings.denies("mcp__tickets__create") && settings.denies("write_file") && !settings.denies("read_file"));
        assert!(Settings::from_layers([&user]).enable_exec, "enableExec defaults to true");
        assert_eq!(Settings::from_layers([]), Settings::default());
    }

    #[test]
    fn errors_name_the_file_the_key_and_the_line() {
        let err = Layer::parse("{\n  \"enableExec\": \"yes\"\n}", Path::new("project.json")).unwrap_err();
        assert!(err.to_string().starts_with("project.json: enableExec: invalid type: string \"yes\""), "{err}");
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = Layer::parse(r#"{"permissions": {"deny": ["ok", "Bash(rm"]}}"#, Path::new("p.json")).unwrap_err();
        assert!(err.to_string().starts_with("p.json: permissions.deny[1]: rule \"Bash(rm\""), "{err}");
        let err = Layer::parse("{ not json", Path::new("p.json")).unwrap_err();
        assert!(err.to_string().starts_with("p.json: ") && err.to_string().contains("line 1"), "{err}");
        assert_eq!(Layer::parse("  ", Path::new("p.json")).unwrap().permissions, Permissions::default());
        let err = Layer::from_value(serde_json::json!({"enableExec": 1})).unwrap_err();
        assert!(err.to_string().contains("enableExec: invalid type"), "{err}");
    }

    #[test]
    fn files_are_reread_when_they_change() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project.json");
        let user = dir.path().join("user.json");
        std::fs::write(&user, r#"{"permissions": {"deny": ["grep"]}}"#).unwrap();
        let managed = layer(r#"{"nonDeferredTools": ["ls"]}"#);
        let files = SettingsFiles::new(Some(managed), vec![project.clone(), user.clone()]);
        let first = files.current().unwrap();
        assert!(first.denies("grep") && first.enable_exec);
        assert_eq!(first.non_deferred_tools, ["ls"]);
        assert!(Arc::ptr_eq(&first, &files.current().unwrap()), "unchanged files are not read again");

        std::fs::write(&project, r#"{"enableExec": false}"#).unwrap();
        assert!(!files.current().unwrap().enable_exec, "a file that appears is read");
        std::fs::write(&project, "{ broken").unwrap();
        // Some filesystems keep modification times to the second: make the change visible.
        let later = SystemTime::now() + std::time::Duration::from_secs(2);
        std::fs::File::options().write(true).open(&project).unwrap().set_modified(later).unwrap();
        let err = files.current().unwrap_err();
        assert_eq!(err.file, project);
        assert!(!files.current_or_last_good().unwrap().enable_exec, "a broken file leaves the last valid settings in force");
        let never_valid = SettingsFiles::new(None, vec![project.clone()]);
        assert_eq!(never_valid.current_or_last_good().unwrap_err().file, project, "never valid: an error, not the defaults");
        std::fs::remove_file(&project).unwrap();
        assert!(files.current().unwrap().enable_exec, "a file that disappears no longer counts");
    }
}
