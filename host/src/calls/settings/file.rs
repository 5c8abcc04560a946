//! The settings file format: one layer read from JSON, every value checked as it is read,
//! so an error carries the key path and the position where the reader met it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use super::{DEFAULT_HOOK_TIMEOUT, HookCommand, HookMatcher, Hooks, MAX_HOOK_TIMEOUT, PermissionMode, Permissions, Rule, Source};

/// Why a settings file cannot be used: the file, where in it the reader found the fault,
/// and what is wrong.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SettingsError {
    pub file: PathBuf,
    /// The key path of the value at fault (`permissions.deny[1]`); `None` when the fault is
    /// the file's as a whole (it cannot be read, it is not JSON).
    pub key: Option<String>,
    /// The line (from 1) at which the reader met the fault; `None` for settings that were
    /// not read from text (passed in code, given on the command line) and for faults of no
    /// place (a file that cannot be read).
    pub line: Option<usize>,
    /// The column (from 1) on that line.
    pub column: Option<usize>,
    /// What is wrong, in words.
    pub reason: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl SettingsError {
    pub(super) fn new(file: &Path, reason: impl Into<String>) -> SettingsError {
        SettingsError { file: file.to_path_buf(), key: None, line: None, column: None, reason: reason.into(), source: None }
    }

    pub(super) fn caused_by(mut self, source: impl std::error::Error + Send + Sync + 'static) -> SettingsError {
        self.source = Some(Arc::new(source));
        self
    }

    /// The reader's error, with the key path it tracked and the position serde_json gave.
    fn from_tracked(file: &Path, error: serde_path_to_error::Error<serde_json::Error>) -> SettingsError {
        let key = crate::support::report::json_key(error.path());
        SettingsError { key, ..SettingsError::from_reader(file, error.into_inner()) }
    }

    /// The reader's error, with the position serde_json gave.
    pub(super) fn from_reader(file: &Path, inner: serde_json::Error) -> SettingsError {
        let (line, column) = (inner.line() > 0).then(|| (inner.line(), inner.column())).unzip();
        let text = inner.to_string();
        // serde_json ends its message with the position it already gave as data.
        let position = format!(" at line {} column {}", inner.line(), inner.column());
        let reason = text.strip_suffix(&position).unwrap_or(&text).to_string();
        SettingsError { line, column, ..SettingsError::new(file, reason) }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file.display())?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.reason)?;
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, " (line {line}, column {column})"),
            (Some(line), None) => write!(f, " (line {line})"),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for SettingsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|source| source as &(dyn std::error::Error + 'static))
    }
}

/// What one layer sets; `None` where it says nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Layer {
    pub source: Source,
    /// Whether this is a managed layer (values passed in code, the managed file): only a
    /// managed layer can disable `bypassPermissions`.
    pub managed: bool,
    pub enable_exec: Option<bool>,
    /// `enableBash`: whether the `Bash` tool is offered (off unless a layer turns it on).
    pub enable_bash: Option<bool>,
    /// `workspaceBackend`: the kind of backend the workspace tools must use (`local`).
    pub workspace_backend: Option<String>,
    /// `bashNetwork`: whether `Bash` commands may use the network (closed unless a layer opens it).
    pub bash_network: Option<bool>,
    /// `webFetchPrivateHosts`: the hosts whose private, loopback or link-local addresses a
    /// script's `fetch` may reach (none unless a layer names them).
    pub web_fetch_private_hosts: Vec<String>,
    pub non_deferred_tools: Vec<String>,
    pub permissions: Permissions,
    pub hooks: Hooks,
}

impl Default for Layer {
    /// An empty managed layer of values passed in code.
    fn default() -> Self {
        Layer {
            source: Source::Code,
            managed: true,
            enable_exec: None,
            enable_bash: None,
            workspace_backend: None,
            bash_network: None,
            web_fetch_private_hosts: Vec::new(),
            non_deferred_tools: Vec::new(),
            permissions: Permissions::default(),
            hooks: Hooks::default(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct LayerFile {
    enable_exec: Option<bool>,
    enable_bash: Option<bool>,
    workspace_backend: Option<String>,
    bash_network: Option<bool>,
    #[serde(default)]
    web_fetch_private_hosts: Vec<String>,
    #[serde(default)]
    non_deferred_tools: Vec<String>,
    #[serde(default)]
    permissions: PermissionsFile,
    #[serde(default)]
    hooks: HooksFile,
}

// The file format. Every value is checked as it is read, so an error carries the key path
// and the position where the reader met it.

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PermissionsFile {
    #[serde(default)]
    deny: Vec<RuleEntry>,
    #[serde(default)]
    allow: Vec<RuleEntry>,
    #[serde(default)]
    ask: Vec<RuleEntry>,
    default_mode: Option<PermissionMode>,
    disable_bypass_permissions_mode: Option<DisableBypass>,
}

/// A rule, parsed where it is read.
#[derive(Deserialize)]
#[serde(try_from = "String")]
struct RuleEntry(Rule);

impl TryFrom<String> for RuleEntry {
    type Error = String;

    fn try_from(text: String) -> Result<RuleEntry, String> {
        Rule::parse(&text).map(RuleEntry).map_err(|why| crate::support::report::error_sentence(&why))
    }
}

/// `"disableBypassPermissionsMode": "disable"`, its one value.
#[derive(Deserialize)]
#[serde(try_from = "String")]
struct DisableBypass;

impl TryFrom<String> for DisableBypass {
    type Error = String;

    fn try_from(text: String) -> Result<DisableBypass, String> {
        match text.as_str() {
            "disable" => Ok(DisableBypass),
            other => Err(format!("{other:?} is not a value; the one value is \"disable\"")),
        }
    }
}

#[derive(Deserialize, Default)]
struct HooksFile {
    #[serde(default, rename = "PreToolUse")]
    pre_tool_use: Vec<MatcherFile>,
    #[serde(default, rename = "PostToolUse")]
    post_tool_use: Vec<MatcherFile>,
}

#[derive(Deserialize)]
struct MatcherFile {
    #[serde(default)]
    matcher: MatcherPattern,
    hooks: Vec<HookEntry>,
}

/// A hook matcher, compiled where it is read: a regular expression over the whole tool
/// name; `""` and `"*"` match every tool.
#[derive(Default, Deserialize)]
#[serde(try_from = "String")]
struct MatcherPattern {
    text: String,
    regex: Option<Regex>,
}

impl TryFrom<String> for MatcherPattern {
    type Error = String;

    fn try_from(text: String) -> Result<MatcherPattern, String> {
        let regex = match text.trim() {
            "" | "*" => None,
            pattern => Some(
                Regex::new(&format!("^(?:{pattern})$")).map_err(|e| format!("{pattern:?} is not a regular expression: {e}"))?,
            ),
        };
        Ok(MatcherPattern { text, regex })
    }
}

/// One hook as written: a command hook, checked where it is read, or a hook of another
/// type (kept to be reported, never run).
#[derive(Deserialize)]
#[serde(try_from = "HookFile")]
enum HookEntry {
    Command(HookCommand),
    Other { kind: String },
}

#[derive(Deserialize)]
struct HookFile {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    command: Option<String>,
    /// Seconds.
    #[serde(default)]
    timeout: Option<f64>,
}

impl TryFrom<HookFile> for HookEntry {
    type Error = String;

    fn try_from(hook: HookFile) -> Result<HookEntry, String> {
        if hook.kind != "command" {
            return Ok(HookEntry::Other { kind: hook.kind });
        }
        let command = hook.command.filter(|command| !command.trim().is_empty()).ok_or("`command` is missing or empty")?;
        let timeout = match hook.timeout {
            None => DEFAULT_HOOK_TIMEOUT,
            Some(seconds) if seconds > 0.0 && seconds <= MAX_HOOK_TIMEOUT.as_secs_f64() => Duration::from_secs_f64(seconds),
            Some(seconds) => return Err(format!("`timeout`: {seconds} is not a number of seconds between 0 and 3600")),
        };
        Ok(HookEntry::Command(HookCommand { command, timeout }))
    }
}

/// A settings text of only whitespace (any Unicode kind, a form feed too) is no settings.
pub(super) fn holds_nothing(text: &str) -> bool {
    text.trim().is_empty()
}

impl Layer {
    /// Reads one settings text; `file` names it in errors (with the key path and line).
    pub fn parse(text: &str, file: &Path) -> Result<Layer, SettingsError> {
        let source = Source::File(file.to_path_buf());
        if holds_nothing(text) {
            return Ok(Layer { source, managed: false, ..Layer::default() });
        }
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let parsed = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| SettingsError::from_tracked(file, e));
        // Text after the object is an error too, with its position.
        let parsed = parsed.and_then(|layer| deserializer.end().map(|()| layer).map_err(|e| SettingsError::from_reader(file, e)));
        Self::from_parsed(parsed, source, false, file)
    }

    /// Settings an embedding passes in code, written as a settings file would be
    /// (`{"enableExec": false, "permissions": {"deny": ["Exec"]}}`); they form the managed
    /// layer, above every file.
    pub fn from_value(value: Value) -> Result<Layer, SettingsError> {
        Self::from_json(value, Source::Code, true, Path::new("<settings passed in code>"))
    }

    /// Values of the command line: these rules, in a layer above the settings files and
    /// below the managed ones.
    pub fn from_rules(allow: &[String], ask: &[String], deny: &[String]) -> Result<Layer, SettingsError> {
        let value = serde_json::json!({"permissions": {"allow": allow, "ask": ask, "deny": deny}});
        Self::from_json(value, Source::CommandLine, false, Path::new("the command line"))
    }

    /// This layer, turning the `Bash` tool on (`--enable-bash`).
    pub fn enabling_bash(mut self) -> Self {
        self.enable_bash = Some(true);
        self
    }

    /// A layer from values not read from text (so its errors have no line); `file` names it.
    fn from_json(value: Value, source: Source, managed: bool, file: &Path) -> Result<Layer, SettingsError> {
        let parsed = serde_path_to_error::deserialize(value).map_err(|e| SettingsError::from_tracked(file, e));
        Self::from_parsed(parsed, source, managed, file)
    }

    fn from_parsed(
        parsed: Result<LayerFile, SettingsError>,
        source: Source,
        managed: bool,
        file: &Path,
    ) -> Result<Layer, SettingsError> {
        let parsed = parsed?;
        let rules = |list: Vec<RuleEntry>, key: &str| -> Vec<Rule> {
            let rules: Vec<Rule> = list.into_iter().map(|RuleEntry(rule)| rule).collect();
            for (i, rule) in rules.iter().enumerate() {
                if let Some(why) = rule.applies_to_nothing() {
                    tracing::warn!("{}: permissions.{key}[{i}]: rule `{rule}` applies to no call: {why}", file.display());
                }
            }
            rules
        };
        let permissions = parsed.permissions;
        Ok(Layer {
            source,
            managed,
            enable_exec: parsed.enable_exec,
            enable_bash: parsed.enable_bash,
            workspace_backend: parsed.workspace_backend,
            bash_network: parsed.bash_network,
            web_fetch_private_hosts: parsed.web_fetch_private_hosts.into_iter().map(|host| host.to_ascii_lowercase()).collect(),
            non_deferred_tools: parsed.non_deferred_tools,
            permissions: Permissions {
                deny: rules(permissions.deny, "deny"),
                allow: rules(permissions.allow, "allow"),
                ask: rules(permissions.ask, "ask"),
                default_mode: permissions.default_mode,
                disable_bypass: permissions.disable_bypass_permissions_mode.is_some(),
            },
            hooks: Hooks {
                pre_tool_use: matchers(parsed.hooks.pre_tool_use, "PreToolUse", file),
                post_tool_use: matchers(parsed.hooks.post_tool_use, "PostToolUse", file),
            },
        })
    }

    /// Reads one settings file; a file that does not exist is an empty layer.
    pub fn load(file: &Path) -> Result<Layer, SettingsError> {
        match crate::support::text_file::read_text(file, crate::support::text_file::MAX_CONFIG_FILE_BYTES) {
            Ok(text) => Self::parse(&text, file),
            Err(crate::support::text_file::ReadError::Missing) => {
                Ok(Layer { source: Source::File(file.to_path_buf()), managed: false, ..Layer::default() })
            }
            Err(e) => Err(SettingsError::new(file, format!("the file {e}")).caused_by(e)),
        }
    }
}

/// The hook entries of one event, read and checked; hooks of another type than `command`
/// are left out with a warning.
fn matchers(entries: Vec<MatcherFile>, event: &str, file: &Path) -> Vec<HookMatcher> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let mut hooks = Vec::with_capacity(entry.hooks.len());
        for (j, hook) in entry.hooks.into_iter().enumerate() {
            match hook {
                HookEntry::Command(command) => hooks.push(command),
                HookEntry::Other { kind } => tracing::warn!(
                    "{}: hooks.{event}[{i}].hooks[{j}]: hooks of type {kind:?} are not run by this host; only \"command\" hooks are",
                    file.display()
                ),
            }
        }
        out.push(HookMatcher { matcher: entry.matcher.text, regex: entry.matcher.regex, hooks });
    }
    out
}
