//! Settings, in layers: values an embedding passes in code and the managed file (an
//! administrator's), then values given on the command line, then settings files (the
//! `--settings` files, the project file, the user file), then built-in defaults. Keys follow
//! Claude Code where it has them:
//!
//! ```json
//! { "permissions": { "deny": ["mcp__tickets", "read_file(secrets/**)"], "ask": ["write_file"],
//!                    "allow": ["mcp__search"], "defaultMode": "acceptEdits" },
//!   "hooks": { "PreToolUse": [{ "matcher": "write_file|mcp__.*", "hooks": [{ "type": "command", "command": "./check.sh" }] }] },
//!   "enableExec": true,
//!   "nonDeferredTools": ["mcp__search__query"] }
//! ```
//!
//! A scalar comes from the highest layer that sets it; rule lists, hooks and
//! `nonDeferredTools` are the union of every layer (highest first). Keys this host does not
//! use are ignored, so a Claude Code settings file loads unchanged; a rule whose specifier
//! cannot apply to its tool is an error (an MCP tool or `Exec` takes none; the workspace
//! tools take a path pattern), and one for a tool this host does not have is reported once
//! as a warning. A session rereads a file when it changes on disk, without a restart;
//! [`standard_sources`] says where `exec-host` looks.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cap_std::fs::Dir;
use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sources::tools::builtin::PATH_TOOLS;
use crate::sources::tools::names::{EXEC, MCP_PREFIX};
use crate::support::dirs::BaseDir;
use crate::support::lock::Unpoisoned;

/// Where a setting comes from, so a refusal can say which rule of which file made it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// Values the embedding passed in code (the managed layer).
    Code,
    /// Values given on the command line (`--allow`, `--deny`, `--ask`).
    CommandLine,
    /// A settings file.
    File(PathBuf),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Code => f.write_str("the settings passed in code"),
            Source::CommandLine => f.write_str("the command line"),
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

/// How a call that no rule decides is treated (`permissions.defaultMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum PermissionMode {
    /// The read-only tools run; workspace writes and MCP tools ask. Claude Code's `plan`
    /// reads as this mode.
    #[serde(alias = "plan")]
    Default,
    /// Workspace writes run too; MCP tools ask.
    AcceptEdits,
    /// What would ask is refused.
    DontAsk,
    /// Everything not denied runs (explicit `ask` rules still ask).
    BypassPermissions,
}

impl PermissionMode {
    /// The mode's name as settings files write it.
    pub fn name(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }

    /// Reads a mode as settings files and the command line write it.
    pub fn parse(text: &str) -> Result<PermissionMode, UnknownMode> {
        serde_json::from_value(Value::String(text.to_string())).map_err(|_| UnknownMode { name: text.to_string() })
    }
}

/// A permission mode's name that names none.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode {name:?}; use default, acceptEdits, dontAsk or bypassPermissions")]
#[non_exhaustive]
pub struct UnknownMode {
    pub name: String,
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
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
    /// `permissions.defaultMode`, when a layer sets it.
    pub default_mode: Option<Sourced<PermissionMode>>,
    /// A managed layer set `permissions.disableBypassPermissionsMode`: `bypassPermissions`
    /// may not be used.
    pub bypass_disabled: bool,
    /// `hooks.PreToolUse` and `hooks.PostToolUse` of every layer, highest layer first.
    pub pre_tool_use: Vec<Sourced<HookMatcher>>,
    pub post_tool_use: Vec<Sourced<HookMatcher>>,
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
            default_mode: None,
            bypass_disabled: false,
            pre_tool_use: Vec::new(),
            post_tool_use: Vec::new(),
        }
    }
}

/// Permission rules and the mode of one layer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Permissions {
    pub deny: Vec<Rule>,
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub default_mode: Option<PermissionMode>,
    /// `"disableBypassPermissionsMode": "disable"`; honoured from a managed layer only.
    pub disable_bypass: bool,
}

/// One permission rule: `Tool`, `mcp__server`, `mcp__server__*`, `mcp__server__tool`, or
/// a workspace tool with a path pattern: `read_file(secrets/**)`.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The tool (or `mcp__server`) the rule names.
    pub tool: String,
    /// What inside the call the rule is about, as written; `None` covers the whole tool.
    pub pattern: Option<String>,
    /// The pattern as a path pattern, for the workspace tools.
    path: Option<PathPattern>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.tool == other.tool && self.pattern == other.pattern
    }
}

impl Eq for Rule {}

impl Rule {
    /// Reads a rule as written in a settings file. A specifier must apply to its tool: a
    /// workspace tool's is a path pattern (gitignore-style, relative to the workspace); an
    /// MCP tool and `Exec` take none. A specifier for a tool this host does not have (a
    /// Claude Code tool such as `Bash(rm:*)`) is kept and never matches.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let rule = || text.to_string();
        let (tool, pattern) = match text.find('(') {
            Some(open) => {
                let inner = text[open + 1..].strip_suffix(')').ok_or_else(|| RuleError::Unclosed { rule: rule() })?;
                (&text[..open], Some(inner.to_string()))
            }
            None => (text, None),
        };
        if tool.is_empty() {
            return Err(RuleError::NoTool { rule: rule() });
        }
        if tool.chars().any(|c| c.is_whitespace() || c.is_control() || c == ')') {
            return Err(RuleError::BadToolName { rule: rule() });
        }
        let path = match &pattern {
            None => None,
            Some(_) if tool.starts_with(MCP_PREFIX) => {
                return Err(RuleError::McpSpecifier { rule: rule(), tool: tool.to_string() });
            }
            Some(_) if tool == EXEC => return Err(RuleError::ExecSpecifier { rule: rule() }),
            Some(pattern) if PATH_TOOLS.contains(&tool) => Some(PathPattern::new(text, pattern)?),
            Some(_) => None,
        };
        Ok(Rule { tool: tool.to_string(), pattern, path })
    }

    /// The rule that allows exactly tool `name` and nothing else, as "allow always" saves
    /// it; `None` when no rule can (a name that would read back as a rule with a
    /// specifier, or as a whole server's rule such as `mcp__srv__*`).
    pub fn exactly(name: &str) -> Option<String> {
        let rule = Rule::parse(name).ok()?;
        let only_this = rule.tool == name && rule.pattern.is_none() && !name.ends_with("__*") && !name.contains(['(', ')']);
        // A bare server name (`mcp__srv`) covers every tool of that server.
        let server_rule = name.strip_prefix(MCP_PREFIX).is_some_and(|rest| !rest.contains("__"));
        (only_this && !server_rule).then(|| name.to_string())
    }

    /// Whether the rule is about tool `name` at all: it names the tool, its MCP server
    /// (`mcp__server`), or all of that server's tools (`mcp__server__*`).
    fn names_tool(&self, name: &str) -> bool {
        if self.tool == name {
            return true;
        }
        // By prefix, not by splitting the name: the rule covers every name that starts with
        // its server's `mcp__<server>__`, however degenerate the rest.
        let whole_server = self.tool.strip_suffix("__*").unwrap_or(&self.tool);
        let Some(server) = whole_server.strip_prefix(MCP_PREFIX).filter(|s| !s.is_empty() && !s.contains("__")) else {
            return false;
        };
        name.strip_prefix(MCP_PREFIX).and_then(|rest| rest.strip_prefix(server)).is_some_and(|rest| rest.starts_with("__"))
    }

    /// Whether the rule covers every call of tool `name` (it has no specifier).
    pub fn covers_tool(&self, name: &str) -> bool {
        self.pattern.is_none() && self.names_tool(name)
    }

    /// Whether the rule applies to a call of tool `name` that touches the workspace paths
    /// `paths` (normalised, relative to the workspace; see [`PathPattern`]).
    pub fn applies(&self, name: &str, paths: &[String]) -> bool {
        if !self.names_tool(name) {
            return false;
        }
        match (&self.pattern, &self.path) {
            (None, _) => true,
            (Some(_), Some(pattern)) => paths.iter().any(|path| pattern.matches(path)),
            // A specifier for a tool this host does not have matches nothing.
            (Some(_), None) => false,
        }
    }

    /// Whether the rule covers every tool MCP server `server` could offer (`mcp__server` or
    /// `mcp__server__*`, with no specifier).
    pub fn covers_server(&self, server: &str) -> bool {
        let whole_server = self.tool.strip_suffix("__*").unwrap_or(&self.tool);
        self.pattern.is_none() && whole_server.strip_prefix(MCP_PREFIX) == Some(server)
    }

    /// Whether the rule has a specifier this host cannot apply (a tool it does not have).
    pub fn is_foreign(&self) -> bool {
        self.pattern.is_some() && self.path.is_none()
    }
}

impl TryFrom<String> for Rule {
    type Error = RuleError;

    fn try_from(text: String) -> Result<Rule, RuleError> {
        Rule::parse(&text)
    }
}

/// Why a rule's text is not a rule.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    #[error("rule {rule:?} opens `(` without closing it at the end")]
    Unclosed { rule: String },
    #[error("rule {rule:?} names no tool")]
    NoTool { rule: String },
    #[error("rule {rule:?}: the tool name may not contain whitespace or `)`")]
    BadToolName { rule: String },
    #[error("rule {rule:?}: an MCP tool's rule takes no specifier; write `{tool}`")]
    McpSpecifier { rule: String, tool: String },
    #[error("rule {rule:?}: `Exec` takes no specifier; write `Exec`")]
    ExecSpecifier { rule: String },
    #[error("rule {rule:?}: the path pattern is empty")]
    EmptyPattern { rule: String },
    #[error("rule {rule:?}: the path pattern {pattern:?} is not valid")]
    BadPattern {
        rule: String,
        pattern: String,
        #[source]
        source: globset::Error,
    },
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Some(pattern) => write!(f, "{}({pattern})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

/// A path pattern of a workspace tool's rule, as gitignore writes them: relative to the
/// workspace; `*` stays within a folder and `**` crosses folders; a pattern without a `/`
/// (but a trailing one) matches at any depth; a leading `/` or `./` anchors it at the
/// workspace. A path matches when it, or a folder it is in, matches.
#[derive(Clone, Debug)]
pub struct PathPattern {
    glob: GlobMatcher,
}

impl PathPattern {
    /// The pattern `pattern` of rule `rule`.
    fn new(rule: &str, pattern: &str) -> Result<PathPattern, RuleError> {
        let trimmed = pattern.trim();
        if trimmed.is_empty() {
            return Err(RuleError::EmptyPattern { rule: rule.to_string() });
        }
        let anchored = trimmed.starts_with('/') || trimmed.starts_with("./");
        let body = trimmed.trim_start_matches("./").trim_start_matches('/').trim_end_matches('/');
        let body = if body.is_empty() { "**" } else { body };
        let full = if anchored || body.contains('/') { body.to_string() } else { format!("**/{body}") };
        let glob = GlobBuilder::new(&full).literal_separator(true).build().map_err(|source| RuleError::BadPattern {
            rule: rule.to_string(),
            pattern: pattern.to_string(),
            source,
        })?;
        Ok(PathPattern { glob: glob.compile_matcher() })
    }

    /// Whether `path` (relative to the workspace, `/`-separated, no `.` or `..`), or a
    /// folder it is in, matches.
    pub fn matches(&self, path: &str) -> bool {
        let mut prefix = path;
        loop {
            if !prefix.is_empty() && self.glob.is_match(prefix) {
                return true;
            }
            match prefix.rfind('/') {
                Some(at) => prefix = &prefix[..at],
                None => return false,
            }
        }
    }
}

/// A `hooks.PreToolUse` or `hooks.PostToolUse` entry: which tools, and what runs.
#[derive(Clone, Debug)]
pub struct HookMatcher {
    /// The matcher as written (`""` and `"*"` match every tool).
    pub matcher: String,
    regex: Option<Regex>,
    pub hooks: Vec<HookCommand>,
}

impl PartialEq for HookMatcher {
    fn eq(&self, other: &Self) -> bool {
        self.matcher == other.matcher && self.hooks == other.hooks
    }
}

impl Eq for HookMatcher {}

impl HookMatcher {
    /// Whether the matcher, a regular expression over the whole tool name, matches `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        match &self.regex {
            None => true,
            Some(regex) => regex.is_match(tool),
        }
    }
}

/// One command of a hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookCommand {
    /// Run with `sh -c`, in the workspace.
    pub command: String,
    /// Past it the command is killed and the call goes on (default 60 s).
    pub timeout: Duration,
}

/// How long a hook command may run unless it says otherwise.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest timeout a hook may ask for.
pub const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(3600);

/// The hooks of one layer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hooks {
    pub pre_tool_use: Vec<HookMatcher>,
    pub post_tool_use: Vec<HookMatcher>,
}

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
    fn new(file: &Path, reason: impl Into<String>) -> SettingsError {
        SettingsError { file: file.to_path_buf(), key: None, line: None, column: None, reason: reason.into(), source: None }
    }

    fn caused_by(mut self, source: impl std::error::Error + Send + Sync + 'static) -> SettingsError {
        self.source = Some(Arc::new(source));
        self
    }

    /// The reader's error, with the key path it tracked and the position serde_json gave.
    fn from_tracked(file: &Path, error: serde_path_to_error::Error<serde_json::Error>) -> SettingsError {
        // The tracker writes `?` for a place it could not name (a key that is not a
        // string); the key is what it could name before that.
        let path = error.path().to_string();
        let known = path.split(".?").next().unwrap_or_default();
        let key = Some(known.to_string()).filter(|key| !matches!(key.as_str(), "" | "." | "?"));
        SettingsError { key, ..SettingsError::from_reader(file, error.into_inner()) }
    }

    /// The reader's error, with the position serde_json gave.
    fn from_reader(file: &Path, inner: serde_json::Error) -> SettingsError {
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

impl Layer {
    /// Reads one settings text; `file` names it in errors (with the key path and line).
    pub fn parse(text: &str, file: &Path) -> Result<Layer, SettingsError> {
        let source = Source::File(file.to_path_buf());
        if text.trim().is_empty() {
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
        let file = Path::new("<settings passed in code>");
        let parsed = serde_path_to_error::deserialize(value).map_err(|e| SettingsError::from_tracked(file, e));
        Self::from_parsed(parsed, Source::Code, true, file)
    }

    /// Values of the command line: these rules, in a layer above the settings files and
    /// below the managed ones.
    pub fn from_rules(allow: &[String], ask: &[String], deny: &[String]) -> Result<Layer, SettingsError> {
        let value = serde_json::json!({"permissions": {"allow": allow, "ask": ask, "deny": deny}});
        let file = Path::new("the command line");
        let parsed = serde_path_to_error::deserialize(value).map_err(|e| SettingsError::from_tracked(file, e));
        Self::from_parsed(parsed, Source::CommandLine, false, file)
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
            for (i, rule) in rules.iter().enumerate().filter(|(_, rule)| rule.is_foreign()) {
                tracing::warn!(
                    "{}: permissions.{key}[{i}]: rule `{rule}` is for a tool this host does not have; it applies to no call",
                    file.display()
                );
            }
            rules
        };
        let permissions = parsed.permissions;
        Ok(Layer {
            source,
            managed,
            enable_exec: parsed.enable_exec,
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

impl Settings {
    /// Combines layers, highest first (managed, command line, `--settings`, project, user):
    /// a scalar from the first layer that sets it, lists joined in that order without
    /// repeats.
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
            if settings.default_mode.is_none()
                && let Some(mode) = layer.permissions.default_mode
            {
                settings.default_mode = Some(Sourced { value: mode, source: layer.source.clone() });
            }
            settings.bypass_disabled |= layer.managed && layer.permissions.disable_bypass;
            for name in &layer.non_deferred_tools {
                if !settings.non_deferred_tools.contains(name) {
                    settings.non_deferred_tools.push(name.clone());
                }
            }
            join(&mut settings.deny, &layer.permissions.deny, &layer.source);
            join(&mut settings.allow, &layer.permissions.allow, &layer.source);
            join(&mut settings.ask, &layer.permissions.ask, &layer.source);
            join(&mut settings.pre_tool_use, &layer.hooks.pre_tool_use, &layer.source);
            join(&mut settings.post_tool_use, &layer.hooks.post_tool_use, &layer.source);
        }
        settings.enable_exec = enable_exec.unwrap_or(true);
        settings
    }

    /// Whether a `deny` rule removes tool `name` altogether.
    pub fn denies(&self, name: &str) -> bool {
        self.denying_rule(name).is_some()
    }

    /// The first `deny` rule that removes every tool of MCP server `server`, with its source:
    /// such a server is not started at all.
    pub fn denying_server_rule(&self, server: &str) -> Option<&Sourced<Rule>> {
        self.deny.iter().find(|rule| rule.value.covers_server(server))
    }

    /// The first `deny` rule that removes tool `name` altogether, with its source.
    pub fn denying_rule(&self, name: &str) -> Option<&Sourced<Rule>> {
        self.deny.iter().find(|rule| rule.value.covers_tool(name))
    }
}

/// Adds `items` of a layer from `source`; one already there from a higher layer stays with
/// the source it had.
fn join<T: Clone + PartialEq>(into: &mut Vec<Sourced<T>>, items: &[T], source: &Source) {
    for item in items {
        if !into.iter().any(|known| known.value == *item) {
            into.push(Sourced { value: item.clone(), source: source.clone() });
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
    Some(BaseDir::Config.exec_host()?.join("settings.json"))
}

/// Where one layer of settings comes from.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SettingsSource {
    /// Values in code (a managed layer when the layer says so).
    Values(Layer),
    /// A file, read again when it changes; a missing file is an empty layer.
    File(PathBuf),
    /// The managed file: like a file, and able to disable `bypassPermissions`.
    ManagedFile(PathBuf),
}

/// The sources `exec-host` reads, highest layer first: the managed file, the command line's
/// rules, `extra` (the last given highest), the project file of `workspace`, the user file.
pub fn standard_sources(workspace: &Path, extra: &[PathBuf], command_line: Option<Layer>) -> Vec<SettingsSource> {
    let mut sources = vec![SettingsSource::ManagedFile(PathBuf::from(MANAGED_FILE))];
    sources.extend(command_line.map(SettingsSource::Values));
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
        let mut document =
            match crate::support::text_file::read_text_in(&folder, &name, crate::support::text_file::MAX_CONFIG_FILE_BYTES) {
                Ok(text) if !text.trim().is_empty() => {
                    serde_json::from_str::<Value>(&text).map_err(|e| SettingsError::from_reader(file, e))?
                }
                Ok(_) | Err(crate::support::text_file::ReadError::Missing) => Value::Object(Default::default()),
                Err(e) => return Err(SettingsError::new(file, format!("the file {e}")).caused_by(e)),
            };
        let Value::Object(root) = &mut document else { return Err(fail("its top level is not an object")) };
        let permissions = root.entry("permissions").or_insert_with(|| Value::Object(Default::default()));
        let Value::Object(permissions) = permissions else { return Err(fail("`permissions` is not an object")) };
        let allow = permissions.entry("allow").or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(allow) = allow else { return Err(fail("`permissions.allow` is not a list")) };
        if !allow.iter().any(|known| known.as_str() == Some(rule)) {
            allow.push(Value::String(rule.to_string()));
        }
        let text = serde_json::to_string_pretty(&document).map_err(|e| fail("it cannot be written as JSON").caused_by(e))? + "\n";
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
                SettingsSource::Values(layer) => layer.clone(),
                SettingsSource::File(file) => Layer::load(file)?,
                SettingsSource::ManagedFile(file) => Layer { managed: true, ..Layer::load(file)? },
            });
        }
        Ok(Settings::from_layers(&layers))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(text: &str) -> Layer {
        Layer::parse(text, Path::new("settings.json")).unwrap()
    }

    #[test]
    fn rules_parse_as_claude_code_writes_them() {
        let rule = Rule::parse("write_file").unwrap();
        assert_eq!((rule.tool.as_str(), rule.pattern.as_deref()), ("write_file", None));
        let foreign = Rule::parse("Bash(rm:*)").unwrap();
        assert_eq!((foreign.tool.as_str(), foreign.pattern.as_deref()), ("Bash", Some("rm:*")));
        assert!(foreign.is_foreign() && !foreign.applies("Bash", &[]), "a tool this host does not have: never applies");
        assert_eq!(Rule::parse("Read(./secrets/(x))").unwrap().pattern.as_deref(), Some("./secrets/(x)"));
        assert_eq!(Rule::parse("Bash(rm:*)").unwrap().to_string(), "Bash(rm:*)");
        for bad in ["", "(x)", "Bash(rm", "two words", "mcp__srv__tool(x)", "Exec(x)", "read_file()", "read_file([)"] {
            assert!(Rule::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn allow_always_saves_a_rule_only_when_it_means_that_one_tool() {
        assert_eq!(Rule::exactly("write_file").as_deref(), Some("write_file"));
        assert_eq!(Rule::exactly("mcp__srv__add").as_deref(), Some("mcp__srv__add"));
        for name in ["mcp__srv__*", "mcp__srv", "read_file(x)", "a(b)", "mcp__srv__a)", "two words", ""] {
            assert_eq!(Rule::exactly(name), None, "{name:?}");
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
        // Whatever the tool's own name, a server's rule covers it.
        for name in ["mcp__tickets__", "mcp__tickets____", "mcp__tickets__a__b", "mcp__tickets__ "] {
            assert!(covers("mcp__tickets", name) && covers("mcp__tickets__*", name), "{name}");
        }
        assert!(!covers("mcp__tickets", "mcp__ticketsx__a") && !covers("mcp__", "mcp____a"));
        assert!(!covers("write_file(/etc/*)", "write_file"), "a rule with a pattern is about some calls only");

        let whole = |rule: &str, server: &str| Rule::parse(rule).unwrap().covers_server(server);
        assert!(whole("mcp__tickets", "tickets") && whole("mcp__tickets__*", "tickets"));
        assert!(!whole("mcp__tickets__create", "tickets"), "one tool of a server is not the server");
        assert!(!whole("mcp__tickets", "tick") && !whole("mcp__tick", "tickets") && !whole("tickets", "tickets"));
    }

    #[test]
    fn path_patterns_read_as_gitignore_writes_them() {
        let matches = |pattern: &str, path: &str| {
            Rule::parse(&format!("read_file({pattern})")).unwrap().applies("read_file", &[path.to_string()])
        };
        assert!(matches("secrets/**", "secrets/a.txt") && matches("secrets/**", "secrets/deep/b"));
        assert!(!matches("secrets/**", "public/secrets/a"), "a pattern with a slash is anchored");
        assert!(matches("secrets", "public/secrets/a"), "a bare name matches at any depth, and what is inside");
        assert!(matches("*.env", ".env") && matches("*.env", "app/prod.env") && !matches("*.env", "env.txt"));
        assert!(matches("/out/*.md", "out/r.md") && !matches("/out/*.md", "out/deep/r.md"), "* stays within a folder");
        assert!(matches("./out/**/*.md", "out/deep/r.md"));
        assert!(matches("docs/", "docs/guide.md") && !matches("docs/", "notes/docs.md"));
        assert!(!Rule::parse("read_file(secrets/**)").unwrap().applies("write_file", &["secrets/a".into()]));
    }

    #[test]
    fn layers_combine_highest_first() {
        let managed =
            Layer::parse(r#"{"enableExec": false, "permissions": {"deny": ["mcp__tickets"]}}"#, Path::new("managed.json"))
                .unwrap();
        let project = layer(
            r#"{"enableExec": true, "nonDeferredTools": ["grep"], "permissions": {"deny": ["write_file", "mcp__tickets"], "defaultMode": "acceptEdits", "disableBypassPermissionsMode": "disable"}}"#,
        );
        let user = layer(
            r#"{"nonDeferredTools": ["grep", "ls"], "model": "ignored", "hooks": {"Stop": []}, "permissions": {"defaultMode": "plan"}}"#,
        );
        let settings = Settings::from_layers([&managed, &project, &user]);
        assert!(!settings.enable_exec, "the managed layer wins");
        assert_eq!(settings.non_deferred_tools, ["grep", "ls"]);
        let deny: Vec<String> = settings.deny.iter().map(|rule| rule.value.to_string()).collect();
        assert_eq!(deny, ["mcp__tickets", "write_file"]);
        assert_eq!(settings.denying_rule("mcp__tickets__x").unwrap().source, managed.source, "the highest layer's rule is kept");
        assert_eq!(settings.enable_exec_source, Some(managed.source.clone()));
        assert!(settings.denies("mcp__tickets__create") && settings.denies("write_file") && !settings.denies("read_file"));
        assert_eq!(settings.default_mode.as_ref().map(|mode| mode.value), Some(PermissionMode::AcceptEdits));
        assert!(!settings.bypass_disabled, "only a managed layer disables bypassPermissions");
        assert_eq!(Settings::from_layers([&user]).default_mode.map(|mode| mode.value), Some(PermissionMode::Default));
        assert!(Settings::from_layers([&user]).enable_exec, "enableExec defaults to true");
        assert_eq!(Settings::from_layers([]), Settings::default());
        let managed_disable =
            Layer::from_value(serde_json::json!({"permissions": {"disableBypassPermissionsMode": "disable"}})).unwrap();
        assert!(Settings::from_layers([&managed_disable]).bypass_disabled);
    }

    #[test]
    fn hooks_are_read_and_checked() {
        let layer = layer(
            r#"{"hooks": {"PreToolUse": [{"matcher": "write_file|mcp__fx__.*", "hooks": [{"type": "command", "command": "exit 2", "timeout": 5}]},
                                        {"matcher": "", "hooks": [{"type": "prompt", "prompt": "x"}, {"type": "command", "command": "true"}]}],
                          "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "log"}]}]}}"#,
        );
        let [first, second] = &layer.hooks.pre_tool_use[..] else { panic!("two matchers") };
        assert!(first.matches("write_file") && first.matches("mcp__fx__add") && !first.matches("read_file"));
        assert!(!first.matches("xwrite_file"), "the matcher covers the whole name");
        assert_eq!(first.hooks[0].timeout, Duration::from_secs(5));
        assert_eq!(second.hooks.len(), 1, "a hook of another type is skipped");
        assert!(second.matches("anything") && layer.hooks.post_tool_use[0].matches("anything"));
        assert_eq!(second.hooks[0].timeout, DEFAULT_HOOK_TIMEOUT);
        for (bad, needle) in [
            (r#"{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}"#, "hooks.PreToolUse[0].matcher"),
            (
                r#"{"hooks": {"PostToolUse": [{"hooks": [{"type": "command"}]}]}}"#,
                "hooks.PostToolUse[0].hooks[0]: `command` is missing",
            ),
            (r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}"#, "timeout"),
            (r#"{"hooks": {"PreToolUse": {"matcher": "x"}}}"#, "hooks.PreToolUse: invalid type"),
            (r#"{"permissions": {"defaultMode": "yolo"}}"#, "permissions.defaultMode: unknown variant"),
            (
                r#"{"permissions": {"deny": ["mcp__fx__add(x)"]}}"#,
                "permissions.deny[0]: rule \"mcp__fx__add(x)\": an MCP tool's rule takes no specifier",
            ),
        ] {
            let err = Layer::parse(bad, Path::new("h.json")).unwrap_err().to_string();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn errors_name_the_file_the_key_and_the_line() {
        let place = |err: &SettingsError| (err.key.clone(), err.line, err.column);
        let err = Layer::parse("{\n  \"enableExec\": \"yes\"\n}", Path::new("project.json")).unwrap_err();
        assert!(err.to_string().starts_with("project.json: enableExec: invalid type: string \"yes\""), "{err}");
        assert_eq!(place(&err), (Some("enableExec".into()), Some(2), Some(21)), "{err}");
        assert!(err.to_string().ends_with("(line 2, column 21)"), "{err}");
        let err = Layer::parse("{\"permissions\": {\"deny\": [\"ok\",\n \"Bash(rm\"]}}", Path::new("p.json")).unwrap_err();
        assert!(err.to_string().starts_with("p.json: permissions.deny[1]: rule \"Bash(rm\""), "{err}");
        assert_eq!(place(&err), (Some("permissions.deny[1]".into()), Some(2), Some(11)), "{err}");
        // The same text earlier in the file does not mislead: the place is where the reader was.
        let twice = "{\"nonDeferredTools\": [\"x(\"],\n \"permissions\": {\"allow\": [\n\n  \"x(\"]}}";
        let err = Layer::parse(twice, Path::new("p.json")).unwrap_err();
        assert_eq!(place(&err), (Some("permissions.allow[0]".into()), Some(4), Some(7)), "{err}");
        let hooks =
            "{\"hooks\": {\"PreToolUse\": [\n{\"matcher\": \"x\", \"hooks\": []},\n{\"matcher\": \"(\", \"hooks\": []}]}}";
        let err = Layer::parse(hooks, Path::new("h.json")).unwrap_err();
        assert_eq!(place(&err).0.as_deref(), Some("hooks.PreToolUse[1].matcher"), "{err}");
        assert_eq!(err.line, Some(3), "{err}");
        let err = Layer::parse("{ not json", Path::new("p.json")).unwrap_err();
        assert!(err.to_string().starts_with("p.json: ") && err.line == Some(1) && err.key.is_none(), "{err}");
        let err = Layer::parse("{}\n{}", Path::new("p.json")).unwrap_err();
        assert!(err.reason.contains("trailing characters") && err.line == Some(2), "{err}");
        assert_eq!(Layer::parse("  ", Path::new("p.json")).unwrap().permissions, Permissions::default());
        let err = Layer::from_value(serde_json::json!({"enableExec": 1})).unwrap_err();
        assert!(err.to_string().contains("enableExec: invalid type"), "{err}");
        assert_eq!(place(&err), (Some("enableExec".into()), None, None), "values passed in code have no lines");
    }

    #[test]
    fn an_unreadable_file_keeps_its_cause() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.json");
        std::fs::write(&file, "{}").unwrap();
        // A path through a file fails to open with ENOTDIR, whoever runs the test.
        let err = Layer::load(&file.join("inner.json")).unwrap_err();
        let cause = std::error::Error::source(&err).expect("the read error is kept");
        assert!(std::error::Error::source(cause).is_some(), "and the I/O error beneath it");
        let sentence = crate::support::report::error_sentence(&err);
        assert!(sentence.ends_with("the file cannot be read: Not a directory (os error 20)"), "{sentence}");
    }

    #[test]
    fn files_are_reread_when_they_change() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project.json");
        let user = dir.path().join("user.json");
        std::fs::write(&user, r#"{"permissions": {"deny": ["grep"]}}"#).unwrap();
        let managed = layer(r#"{"nonDeferredTools": ["ls"]}"#);
        let sources =
            vec![SettingsSource::Values(managed), SettingsSource::File(project.clone()), SettingsSource::File(user.clone())];
        let files = SettingsFiles::new(sources);
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
        let never_valid = SettingsFiles::new(vec![SettingsSource::File(project.clone())]);
        assert_eq!(never_valid.current_or_last_good().unwrap_err().file, project, "never valid: an error, not the defaults");
        std::fs::remove_file(&project).unwrap();
        assert!(files.current().unwrap().enable_exec, "a file that disappears no longer counts");
    }

    #[test]
    fn an_allow_rule_is_added_to_a_file_keeping_its_other_keys() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".exec-host/settings.json");
        let files = SettingsFiles::new(vec![SettingsSource::File(file.clone())]);
        files.add_allow_rule(None, &file, "write_file").unwrap();
        assert!(files.current().unwrap().allow.iter().any(|rule| rule.value.covers_tool("write_file")));
        std::fs::write(&file, r#"{"model": "kept", "permissions": {"allow": ["ls"], "deny": ["grep"]}}"#).unwrap();
        files.add_allow_rule(None, &file, "mcp__fx__add").unwrap();
        files.add_allow_rule(None, &file, "mcp__fx__add").unwrap();
        let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            written,
            serde_json::json!({"model": "kept", "permissions": {"allow": ["ls", "mcp__fx__add"], "deny": ["grep"]}})
        );
        assert!(files.current().unwrap().allow.iter().any(|rule| rule.value.covers_tool("mcp__fx__add")), "seen at once");
        std::fs::write(&file, "[]").unwrap();
        assert!(files.add_allow_rule(None, &file, "x").is_err());
    }

    /// Saved relative to a folder's handle, a rule never goes through a link: not a folder
    /// that leads outside, not a link at the file's place, not one at the temporary name.
    #[test]
    fn an_allow_rule_is_never_saved_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let (ws, outside) = (root.path().join("ws"), root.path().join("outside"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let dir = Dir::open_ambient_dir(&ws, cap_std::ambient_authority()).unwrap();
        let relative = Path::new(".exec-host/settings.json");
        let files = SettingsFiles::new(vec![SettingsSource::File(ws.join(relative))]);
        let listed = |dir: &Path| std::fs::read_dir(dir).unwrap().count();

        std::os::unix::fs::symlink(&outside, ws.join(".exec-host")).unwrap();
        let refused = files.add_allow_rule(Some(&dir), relative, "write_file").unwrap_err();
        assert!(refused.reason.contains("without following a link"), "{refused}");
        assert_eq!(listed(&outside), 0);

        std::fs::remove_file(ws.join(".exec-host")).unwrap();
        std::fs::create_dir(ws.join(".exec-host")).unwrap();
        std::os::unix::fs::symlink(outside.join("settings.json"), ws.join(relative)).unwrap();
        let refused = files.add_allow_rule(Some(&dir), relative, "write_file").unwrap_err();
        assert!(refused.reason.contains("is a link"), "{refused}");
        std::fs::remove_file(ws.join(relative)).unwrap();

        let temporary = ws.join(format!(".exec-host/.settings.json.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(outside.join("planted"), &temporary).unwrap();
        assert!(files.add_allow_rule(Some(&dir), relative, "write_file").is_err());
        assert_eq!(listed(&outside), 0, "nothing was written outside");
        std::fs::remove_file(&temporary).unwrap();

        files.add_allow_rule(Some(&dir), relative, "write_file").unwrap();
        assert!(files.current().unwrap().allow.iter().any(|rule| rule.value.covers_tool("write_file")));
    }
}
