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
//!   "enableBash": false,
//!   "workspaceBackend": "local",
//!   "bashNetwork": false,
//!   "webFetchPrivateHosts": ["localhost"],
//!   "nonDeferredTools": ["mcp__search__query"] }
//! ```
//!
//! A scalar comes from the highest layer that sets it; rule lists, hooks,
//! `nonDeferredTools` and `webFetchPrivateHosts` are the union of every layer (highest first). Keys this host does not
//! use are ignored, so a Claude Code settings file loads unchanged; a rule whose specifier
//! cannot apply to its tool is an error (an MCP tool or `Exec` takes none; the workspace
//! tools take a path pattern), and one for a tool this host does not have is reported once
//! as a warning. A session rereads a file when it changes on disk, without a restart;
//! [`standard_sources`] says where `exec-host` looks.
//!
//! The settings in force and how layers combine are here; `rules` reads permission rules
//! and modes and says when a rule applies, `file` reads one layer from JSON, `files` keeps
//! a session's files (where they live, rereading, the rule "allow always" writes).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;

pub mod commands;
mod file;
mod files;
mod rules;

pub use file::{Layer, SettingsError};
pub(crate) use files::SettingsFiles;
pub use files::{MANAGED_FILE, PROJECT_FILE, SettingsSource, standard_sources, user_file};
pub use rules::{PathPattern, PermissionMode, Rule, RuleError, Touched, UnknownMode};

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

/// A source by its role, as refusals name it to the model: a settings file by what it is
/// (the project's, the user's, the managed one) or by its name, never by where it lies on
/// the host, which is the operator's to know (see [`Source::path`]).
impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Code => f.write_str("the settings passed in code"),
            Source::CommandLine => f.write_str("the command line"),
            Source::File(path) if path == std::path::Path::new(MANAGED_FILE) => f.write_str("the managed settings file"),
            Source::File(path) if path.ends_with(PROJECT_FILE) => write!(f, "the project settings ({PROJECT_FILE})"),
            Source::File(path) if user_file().is_some_and(|user| &user == path) => f.write_str("the user settings"),
            Source::File(path) => {
                let name = path.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
                write!(f, "the settings file `{name}`")
            }
        }
    }
}

impl Source {
    /// The file this came from, for the operator's own output.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Source::File(path) => Some(path),
            Source::Code | Source::CommandLine => None,
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
    /// Whether the `Bash` tool is offered (default false; a managed `false` wins).
    pub enable_bash: bool,
    /// The kind of backend the workspace tools must use, when a layer names one.
    pub workspace_backend: Option<String>,
    /// Whether `Bash` commands may use the network (default false).
    pub bash_network: bool,
    /// The hosts whose private, loopback or link-local addresses a script's `fetch` may
    /// reach, lowercase (default none).
    pub web_fetch_private_hosts: Vec<String>,
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
            enable_bash: false,
            workspace_backend: None,
            bash_network: false,
            web_fetch_private_hosts: Vec::new(),
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

impl Settings {
    /// Combines layers, highest first (managed, command line, `--settings`, project, user):
    /// a scalar from the first layer that sets it, lists joined in that order without
    /// repeats.
    pub fn from_layers<'a>(layers: impl IntoIterator<Item = &'a Layer>) -> Settings {
        let mut settings = Settings::default();
        let mut enable_exec = None;
        let mut enable_bash = None;
        let mut bash_network = None;
        for layer in layers {
            enable_bash = enable_bash.or(layer.enable_bash);
            bash_network = bash_network.or(layer.bash_network);
            if settings.workspace_backend.is_none() {
                settings.workspace_backend = layer.workspace_backend.clone();
            }
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
            for host in &layer.web_fetch_private_hosts {
                if !settings.web_fetch_private_hosts.contains(host) {
                    settings.web_fetch_private_hosts.push(host.clone());
                }
            }
            join(&mut settings.deny, &layer.permissions.deny, &layer.source);
            join(&mut settings.allow, &layer.permissions.allow, &layer.source);
            join(&mut settings.ask, &layer.permissions.ask, &layer.source);
            join(&mut settings.pre_tool_use, &layer.hooks.pre_tool_use, &layer.source);
            join(&mut settings.post_tool_use, &layer.hooks.post_tool_use, &layer.source);
        }
        settings.enable_exec = enable_exec.unwrap_or(true);
        settings.enable_bash = enable_bash.unwrap_or(false);
        settings.bash_network = bash_network.unwrap_or(false);
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

    /// The deny rule that keeps resource tool `tool` from MCP server `server`'s resources
    /// (`mcp__server`, `tool(server)`), when one does.
    pub fn denying_resources(&self, tool: &str, server: &str) -> Option<&Sourced<Rule>> {
        self.deny.iter().find(|rule| rule.value.applies(tool, &Touched::server(server)))
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

#[cfg(test)]
mod tests;
