//! Permission rules and modes: what a rule names, how it is read and when it applies.

use std::fmt;

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sources::mcp::RESOURCE_TOOLS;
use crate::sources::tools::builtin::PATH_TOOLS;
use crate::sources::tools::names::{BASH, EXEC, MCP_PREFIX, SOURCE_PREFIXES, WEB_FETCH};

use super::commands::{self, CommandPattern, Part};

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

/// Claude Code's names for what the workspace tools do, and the tools each name's rules
/// apply to here. As Claude Code says of its own: `Read` rules apply to every tool that
/// reads files, `Edit` rules to every tool that edits them.
const CLAUDE_CODE_TOOLS: [(&str, &[&str]); 7] = [
    ("Read", &["read_file", "ls", "glob", "grep"]),
    ("Edit", &["edit_file", "write_file"]),
    ("MultiEdit", &["edit_file"]),
    ("Write", &["write_file"]),
    ("Glob", &["glob"]),
    ("Grep", &["grep"]),
    ("LS", &["ls"]),
];

/// Claude Code's tools that have no counterpart here: a rule for one applies to no call.
const CLAUDE_CODE_ONLY: [&str; 10] = [
    "BashOutput",
    "KillShell",
    "WebSearch",
    "Task",
    "TodoWrite",
    "NotebookEdit",
    "NotebookRead",
    "SlashCommand",
    "ExitPlanMode",
    "Agent",
];

/// One permission rule: `Tool`, `mcp__server`, `mcp__server__*`, `mcp__server__tool`, a
/// workspace tool with a path pattern: `read_file(secrets/**)`, or a resource tool with a
/// server: `ReadMcpResourceTool(docs)`, `WebFetch` with a host: `WebFetch(domain:api.example.com)`
/// (`domain:*.example.com`: its subdomains); Claude Code's names of the workspace tools
/// (`Read(./src/**)`, `Edit`, `Write`, `Glob`, `Grep`, `LS`) apply to ours. A whole server's
/// rule (`mcp__docs`) also applies to the resource tools' calls on that server.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The tool (or `mcp__server`) the rule names, as written.
    pub tool: String,
    /// The tools of this host a Claude Code name stands for (empty for our own names).
    stands_for: &'static [&'static str],
    /// What inside the call the rule is about, as written; `None` covers the whole tool.
    pub pattern: Option<String>,
    /// The pattern as a path pattern, for the workspace tools.
    path: Option<PathPattern>,
    /// The pattern as a server's name, for the resource tools.
    server: Option<String>,
    /// The pattern as a command pattern, for `Bash`.
    command: Option<CommandPattern>,
    /// The pattern as a host pattern, for `WebFetch`.
    domain: Option<DomainPattern>,
}

/// What a call touches that a rule's specifier may be about: the workspace places of a
/// file tool's call (normalised, relative to the workspace; see [`PathPattern`]), the MCP
/// server of a resource tool's call.
#[derive(Clone, Debug, Default)]
pub struct Touched {
    pub paths: Vec<String>,
    pub server: Option<String>,
    /// The parts of a `Bash` call's command (see [`commands::parts`]).
    pub commands: Vec<Part>,
    /// The host a `WebFetch` call asks for, lowercase.
    pub host: Option<String>,
}

impl Touched {
    /// A call that touches the workspace places `paths`.
    pub fn paths(paths: Vec<String>) -> Self {
        Touched { paths, ..Touched::default() }
    }

    /// A call on the resources of MCP server `server`.
    pub fn server(server: &str) -> Self {
        Touched { server: Some(server.to_string()), ..Touched::default() }
    }

    /// A `Bash` call of `command`.
    pub fn command(command: &str) -> Self {
        Touched { commands: commands::parts(command), ..Touched::default() }
    }

    /// A `WebFetch` call of a URL on `host` (`None`: a URL without one, which no host
    /// rule matches).
    pub fn host(host: Option<String>) -> Self {
        Touched { host, ..Touched::default() }
    }
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
        let server = match &pattern {
            Some(server) if RESOURCE_TOOLS.contains(&tool) => match server.trim() {
                "" => return Err(RuleError::EmptyPattern { rule: rule() }),
                server => Some(server.to_string()),
            },
            _ => None,
        };
        let path = match &pattern {
            None => None,
            Some(_) if server.is_some() => None,
            Some(_) if SOURCE_PREFIXES.iter().any(|prefix| tool.starts_with(prefix)) => {
                return Err(RuleError::McpSpecifier { rule: rule(), tool: tool.to_string() });
            }
            Some(_) if tool == EXEC => return Err(RuleError::ExecSpecifier { rule: rule() }),
            Some(pattern) if PATH_TOOLS.contains(&tool) || claude_code_tools(tool).is_some() => {
                Some(PathPattern::new(text, pattern)?)
            }
            Some(_) => None,
        };
        let command = match &pattern {
            Some(specifier) if tool == BASH => Some(CommandPattern::new(specifier)),
            _ => None,
        };
        let domain = match &pattern {
            Some(specifier) if tool == WEB_FETCH => Some(DomainPattern::new(text, specifier)?),
            _ => None,
        };
        let stands_for = claude_code_tools(tool).unwrap_or(&[]);
        Ok(Rule { tool: tool.to_string(), stands_for, pattern, path, server, command, domain })
    }

    /// Why the rule applies to no call here, when that is so: a tool of Claude Code's this
    /// host does not have, or a specifier it cannot apply.
    pub fn applies_to_nothing(&self) -> Option<String> {
        if CLAUDE_CODE_ONLY.contains(&self.tool.as_str()) {
            return Some(format!("`{}` is a tool of Claude Code's that exec-host does not have", self.tool));
        }
        (self.pattern.is_some()
            && self.path.is_none()
            && self.server.is_none()
            && self.command.is_none()
            && self.domain.is_none())
        .then(|| format!("`{}` takes no specifier here, or is a tool this host does not have", self.tool))
    }

    /// The rule that allows exactly tool `name` and nothing else, as "allow always" saves
    /// it; `None` when no rule can (a name that would read back as a rule with a
    /// specifier, or as a whole server's rule such as `mcp__srv__*`).
    pub fn exactly(name: &str) -> Option<String> {
        let rule = Rule::parse(name).ok()?;
        // An exact command (`Bash(npm test)`), not a prefix or a wildcard; one host.
        if matches!(rule.command, Some(CommandPattern::Exact(_))) || rule.domain.as_ref().is_some_and(|domain| !domain.subdomains)
        {
            return Some(name.to_string());
        }
        let only_this = rule.tool == name && rule.pattern.is_none() && !name.ends_with('*') && !name.contains(['(', ')']);
        // A bare source name (`mcp__srv`, `api__github`) covers every tool of that source.
        let server_rule = SOURCE_PREFIXES.iter().any(|prefix| name.strip_prefix(prefix).is_some_and(|rest| !rest.contains("__")));
        (only_this && !server_rule).then(|| name.to_string())
    }

    /// Whether the rule is about tool `name` at all: it names the tool, its source (an MCP
    /// server `mcp__server`, an API `api__source`), all of that source's tools
    /// (`mcp__server__*`), or those whose names start alike (`api__github__repos_*`).
    fn names_tool(&self, name: &str) -> bool {
        if self.tool == name || self.stands_for.contains(&name) {
            return true;
        }
        let Some(prefix) = SOURCE_PREFIXES.iter().find(|prefix| self.tool.starts_with(**prefix)) else {
            return false;
        };
        // By prefix, not by splitting the name: the rule covers every name that starts with
        // its source's `<prefix><source>__`, however degenerate the rest.
        let rest = &self.tool[prefix.len()..];
        let whole_source = rest.strip_suffix("__*").unwrap_or(rest);
        if !whole_source.is_empty() && !whole_source.contains("__") {
            return name
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix(whole_source))
                .is_some_and(|rest| rest.starts_with("__"));
        }
        // `<prefix><source>__<start>*`: within one source, the tools whose names start so.
        match rest.strip_suffix('*').and_then(|start| start.split_once("__")) {
            Some((source, _)) if !source.is_empty() => name.starts_with(&self.tool[..self.tool.len() - 1]),
            _ => false,
        }
    }

    /// Whether the rule covers every call of tool `name` (it has no specifier).
    pub fn covers_tool(&self, name: &str) -> bool {
        self.pattern.is_none() && self.names_tool(name)
    }

    /// Whether the rule applies to a call of tool `name` that touches `touched`.
    pub fn applies(&self, name: &str, touched: &Touched) -> bool {
        if !self.names_tool(name) {
            // A whole server's rule is about its resources too.
            return touched.server.as_deref().is_some_and(|server| self.covers_server(server));
        }
        if let Some(pattern) = &self.command {
            // Any part it names: a deny or ask rule then holds for the whole command (an
            // allow rule must hold for every part: see `Rule::allows_part`).
            return touched.commands.iter().any(|part| pattern.names(part));
        }
        if let Some(domain) = &self.domain {
            return touched.host.as_deref().is_some_and(|host| domain.matches(host));
        }
        match (&self.pattern, &self.path, &self.server) {
            (None, _, _) => true,
            (Some(_), Some(pattern), _) => touched.paths.iter().any(|path| pattern.matches(path)),
            (Some(_), None, Some(server)) => touched.server.as_deref() == Some(server.as_str()),
            // A specifier for a tool this host does not have matches nothing.
            (Some(_), None, None) => false,
        }
    }

    /// Whether the rule, as an allow rule, lets `part` of a call of tool `name` run: it covers
    /// the whole tool, or its specifier allows the part as written (see
    /// [`CommandPattern::allows`]).
    pub fn allows_part(&self, name: &str, part: &Part) -> bool {
        if !self.names_tool(name) {
            return false;
        }
        match (&self.pattern, &self.command) {
            (None, _) => true,
            (Some(_), Some(pattern)) => pattern.allows(part),
            (Some(_), None) => false,
        }
    }

    /// Whether the rule covers every tool MCP server `server` could offer (`mcp__server` or
    /// `mcp__server__*`, with no specifier).
    pub fn covers_server(&self, server: &str) -> bool {
        let whole_server = self.tool.strip_suffix("__*").unwrap_or(&self.tool);
        self.pattern.is_none() && whole_server.strip_prefix(MCP_PREFIX) == Some(server)
    }

    /// Whether the rule applies to no call here (see [`Rule::applies_to_nothing`]).
    pub fn is_foreign(&self) -> bool {
        self.applies_to_nothing().is_some()
    }
}

/// The tools of this host a Claude Code tool name stands for.
fn claude_code_tools(name: &str) -> Option<&'static [&'static str]> {
    CLAUDE_CODE_TOOLS.iter().find(|(claude, _)| *claude == name).map(|(_, ours)| *ours)
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
    #[error("rule {rule:?}: a rule about a tool of an MCP server or an API takes no specifier; write `{tool}`")]
    McpSpecifier { rule: String, tool: String },
    #[error("rule {rule:?}: `Exec` takes no specifier; write `Exec`")]
    ExecSpecifier { rule: String },
    #[error(
        "rule {rule:?}: a `WebFetch` rule names a host as `WebFetch(domain:example.com)` (or `domain:*.example.com` for its subdomains)"
    )]
    DomainSpecifier { rule: String },
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

/// The host of a `WebFetch` rule: `domain:api.example.com` is that host alone,
/// `domain:*.example.com` every host below `example.com` (not `example.com` itself).
/// Hosts compare in lowercase, as URLs write them (an IPv6 address in brackets).
#[derive(Clone, Debug)]
pub struct DomainPattern {
    host: String,
    subdomains: bool,
}

impl DomainPattern {
    fn new(rule: &str, specifier: &str) -> Result<DomainPattern, RuleError> {
        let refused = || RuleError::DomainSpecifier { rule: rule.to_string() };
        let host = specifier.trim().strip_prefix("domain:").ok_or_else(refused)?.trim().to_ascii_lowercase();
        let (host, subdomains) = match host.strip_prefix("*.") {
            Some(parent) => (parent.to_string(), true),
            None => (host, false),
        };
        if host.is_empty() || host.contains(['*', '/', ':', '@', ' ']) && !host.starts_with('[') {
            return Err(refused());
        }
        Ok(DomainPattern { host, subdomains })
    }

    /// Whether `host` (lowercase, as a URL writes it) is this pattern's.
    pub fn matches(&self, host: &str) -> bool {
        match self.subdomains {
            false => host == self.host,
            true => host.strip_suffix(&self.host).is_some_and(|below| below.len() > 1 && below.ends_with('.')),
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
