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
    pub fn parse(text: &str) -> Result<PermissionMode, String> {
        serde_json::from_value(Value::String(text.to_string()))
            .map_err(|_| format!("unknown permission mode {text:?}; use default, acceptEdits, dontAsk or bypassPermissions"))
    }
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
        let path = match &pattern {
            None => None,
            Some(_) if tool.starts_with(MCP_PREFIX) => {
                return Err(format!("rule {text:?}: an MCP tool's rule takes no specifier; write `{tool}`"));
            }
            Some(_) if tool == EXEC => return Err(format!("rule {text:?}: `Exec` takes no specifier; write `Exec`")),
            Some(pattern) if PATH_TOOLS.contains(&tool) => {
                Some(PathPattern::new(pattern).map_err(|why| format!("rule {text:?}: {why}"))?)
            }
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
    fn new(pattern: &str) -> Result<PathPattern, String> {
        let trimmed = pattern.trim();
        if trimmed.is_empty() {
            return Err("the path pattern is empty".into());
        }
        let anchored = trimmed.starts_with('/') || trimmed.starts_with("./");
        let body = trimmed.trim_start_matches("./").trim_start_matches('/').trim_end_matches('/');
        let body = if body.is_empty() { "**" } else { body };
        let full = if anchored || body.contains('/') { body.to_string() } else { format!("**/{body}") };
        let glob = GlobBuilder::new(&full)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("the path pattern {pattern:?} is not valid: {e}"))?;
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

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PermissionsFile {
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    default_mode: Option<PermissionMode>,
    disable_bypass_permissions_mode: Option<String>,
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
    matcher: String,
    hooks: Vec<HookFile>,
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

impl Layer {
    /// Reads one settings text; `file` names it in errors (with the key path and line).
    pub fn parse(text: &str, file: &Path) -> Result<Layer, SettingsError> {
        let source = Source::File(file.to_path_buf());
        if text.trim().is_empty() {
            return Ok(Layer { source, managed: false, ..Layer::default() });
        }
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let parsed = serde_path_to_error::deserialize(&mut deserializer);
        Self::from_parsed(parsed, source, false, file).map_err(|mut error| {
            error.reason = with_line(&error.reason, text);
            error
        })
    }

    /// Settings an embedding passes in code, written as a settings file would be
    /// (`{"enableExec": false, "permissions": {"deny": ["Exec"]}}`); they form the managed
    /// layer, above every file.
    pub fn from_value(value: Value) -> Result<Layer, SettingsError> {
        let parsed = serde_path_to_error::deserialize(value);
        Self::from_parsed(parsed, Source::Code, true, Path::new("<settings passed in code>"))
    }

    /// Values of the command line: these rules, in a layer above the settings files and
    /// below the managed ones.
    pub fn from_rules(allow: &[String], ask: &[String], deny: &[String]) -> Result<Layer, SettingsError> {
        let value = serde_json::json!({"permissions": {"allow": allow, "ask": ask, "deny": deny}});
        let parsed = serde_path_to_error::deserialize(value);
        Self::from_parsed(parsed, Source::CommandLine, false, Path::new("the command line"))
    }

    fn from_parsed<E: fmt::Display>(
        parsed: Result<LayerFile, serde_path_to_error::Error<E>>,
        source: Source,
        managed: bool,
        file: &Path,
    ) -> Result<Layer, SettingsError> {
        let fail = |reason: String| SettingsError { file: file.to_path_buf(), reason };
        let parsed = parsed.map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." { fail(inner.to_string()) } else { fail(format!("{path}: {inner}")) }
        })?;
        let rules = |list: Vec<String>, key: &str| -> Result<Vec<Rule>, SettingsError> {
            let rules: Vec<Rule> = list
                .iter()
                .enumerate()
                .map(|(i, text)| Rule::parse(text).map_err(|why| fail(format!("permissions.{key}[{i}]: {why}"))))
                .collect::<Result<_, _>>()?;
            for (i, rule) in rules.iter().enumerate().filter(|(_, rule)| rule.is_foreign()) {
                tracing::warn!(
                    "{}: permissions.{key}[{i}]: rule `{rule}` is for a tool this host does not have; it applies to no call",
                    file.display()
                );
            }
            Ok(rules)
        };
        let permissions = parsed.permissions;
        let disable_bypass = match permissions.disable_bypass_permissions_mode.as_deref() {
            None => false,
            Some("disable") => true,
            Some(other) => {
                return Err(fail(format!(
                    "permissions.disableBypassPermissionsMode: {other:?} is not a value; the one value is \"disable\""
                )));
            }
        };
        Ok(Layer {
            source,
            managed,
            enable_exec: parsed.enable_exec,
            non_deferred_tools: parsed.non_deferred_tools,
            permissions: Permissions {
                deny: rules(permissions.deny, "deny")?,
                allow: rules(permissions.allow, "allow")?,
                ask: rules(permissions.ask, "ask")?,
                default_mode: permissions.default_mode,
                disable_bypass,
            },
            hooks: Hooks {
                pre_tool_use: matchers(parsed.hooks.pre_tool_use, "PreToolUse").map_err(fail)?,
                post_tool_use: matchers(parsed.hooks.post_tool_use, "PostToolUse").map_err(fail)?,
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
            Err(e) => Err(SettingsError { file: file.to_path_buf(), reason: format!("the file {e}") }),
        }
    }
}

/// An error about a value of the file (`permissions.deny[1]: rule "x(": ...`) with the line
/// the value is written on, found by its text: serde reports lines for its own errors only.
fn with_line(reason: &str, text: &str) -> String {
    if reason.contains(" line ") {
        return reason.to_string();
    }
    let quoted = reason.split('"').nth(1).filter(|value| !value.is_empty());
    let found = quoted.and_then(|value| text.find(&serde_json::to_string(value).unwrap_or_default()));
    match found {
        Some(at) => format!("{reason} (line {})", text[..at].matches('\n').count() + 1),
        None => reason.to_string(),
    }
}

/// The hook entries of one event, checked: each matcher a regular expression, each hook a
/// command with a sensible timeout. Hooks of another type are skipped with a warning.
fn matchers(entries: Vec<MatcherFile>, event: &str) -> Result<Vec<HookMatcher>, String> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let key = format!("hooks.{event}[{i}]");
        let regex = match entry.matcher.trim() {
            "" | "*" => None,
            pattern => Some(
                Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| format!("{key}.matcher: {pattern:?} is not a regular expression: {e}"))?,
            ),
        };
        let mut hooks = Vec::new();
        for (j, hook) in entry.hooks.into_iter().enumerate() {
            let key = format!("{key}.hooks[{j}]");
            if hook.kind != "command" {
                tracing::warn!("{key}: hooks of type {:?} are not run by this host; only \"command\" hooks are", hook.kind);
                continue;
            }
            let command = hook
                .command
                .filter(|command| !command.trim().is_empty())
                .ok_or_else(|| format!("{key}.command: missing or empty"))?;
            let timeout = match hook.timeout {
                None => DEFAULT_HOOK_TIMEOUT,
                Some(seconds) if seconds > 0.0 && seconds <= MAX_HOOK_TIMEOUT.as_secs_f64() => Duration::from_secs_f64(seconds),
                Some(seconds) => return Err(format!("{key}.timeout: {seconds} is not a number of seconds between 0 and 3600")),
            };
            hooks.push(HookCommand { command, timeout });
        }
        out.push(HookMatcher { matcher: entry.matcher, regex, hooks });
    }
    Ok(out)
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
                    tracing::warn!("settings not reloaded, the previous ones stay in force: {error}");
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
        let fail = |reason: String| SettingsError { file: file.to_path_buf(), reason };
        let (folder, name) = rules_folder(within, file).map_err(&fail)?;
        let mut document =
            match crate::support::text_file::read_text_in(&folder, &name, crate::support::text_file::MAX_CONFIG_FILE_BYTES) {
                Ok(text) if !text.trim().is_empty() => serde_json::from_str::<Value>(&text).map_err(|e| fail(e.to_string()))?,
                Ok(_) | Err(crate::support::text_file::ReadError::Missing) => Value::Object(Default::default()),
                Err(e) => return Err(fail(format!("the file {e}"))),
            };
        let Value::Object(root) = &mut document else { return Err(fail("its top level is not an object".into())) };
        let permissions = root.entry("permissions").or_insert_with(|| Value::Object(Default::default()));
        let Value::Object(permissions) = permissions else { return Err(fail("`permissions` is not an object".into())) };
        let allow = permissions.entry("allow").or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(allow) = allow else { return Err(fail("`permissions.allow` is not a list".into())) };
        if !allow.iter().any(|known| known.as_str() == Some(rule)) {
            allow.push(Value::String(rule.to_string()));
        }
        let text = serde_json::to_string_pretty(&document).map_err(|e| fail(e.to_string()))? + "\n";
        replace_nofollow(&folder, &name, text.as_bytes()).map_err(|e| fail(format!("cannot write it: {e}")))?;
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
fn rules_folder(within: Option<&Dir>, file: &Path) -> Result<(Dir, String), String> {
    let name = file.file_name().and_then(|name| name.to_str()).ok_or("it has no file name")?.to_string();
    let parent = file.parent().unwrap_or(Path::new(""));
    let Some(within) = within else {
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create its folder: {e}"))?;
        let folder =
            Dir::open_ambient_dir(parent, cap_std::ambient_authority()).map_err(|e| format!("cannot open its folder: {e}"))?;
        return Ok((folder, name));
    };
    let mut folder = within.try_clone().map_err(|e| format!("cannot open its folder: {e}"))?;
    for part in parent.components() {
        let part = match part {
            std::path::Component::Normal(part) => part,
            std::path::Component::CurDir => continue,
            _ => return Err("its path leaves the folder it is relative to".into()),
        };
        let shown = part.to_string_lossy();
        folder = match open_dir_nofollow(&folder, part) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                folder.create_dir(part).map_err(|e| format!("cannot create its folder `{shown}`: {e}"))?;
                open_dir_nofollow(&folder, part)
            }
            opened => opened,
        }
        .map_err(|e| format!("its folder `{shown}` cannot be opened without following a link: {e}"))?;
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
            (r#"{"hooks": {"PostToolUse": [{"hooks": [{"type": "command"}]}]}}"#, "hooks.PostToolUse[0].hooks[0].command"),
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
        let err = Layer::parse("{\n  \"enableExec\": \"yes\"\n}", Path::new("project.json")).unwrap_err();
        assert!(err.to_string().starts_with("project.json: enableExec: invalid type: string \"yes\""), "{err}");
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = Layer::parse("{\"permissions\": {\"deny\": [\"ok\",\n \"Bash(rm\"]}}", Path::new("p.json")).unwrap_err();
        assert!(err.to_string().starts_with("p.json: permissions.deny[1]: rule \"Bash(rm\""), "{err}");
        assert!(err.to_string().ends_with("(line 2)"), "{err}");
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
