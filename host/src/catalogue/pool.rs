//! The deferred pool and the declarations of a request, from one decision table and one
//! builder.
//!
//! [`DeferralTable::defers`] is the only place that decides whether a tool is deferred.
//! `Pool::build` is the only place that turns the registry's tools and the settings into
//! what a model is given: `Exec` plus the flat tools, or every tool flat. The pool's names
//! (for the announcement), the set an Exec script may reach, the set `ToolSearch` searches
//! and the declarations all come from one `Pool`, so they cannot disagree.
//!
//! ```text
//! every tool -> drop denied -> defers? -> deferred | flat
//! Exec declared  iff  deferred is non-empty, enableExec, Exec not denied
//!   yes: declarations = [Exec] + flat;        pool = deferred (reachable from Exec)
//!   no:  declarations = flat + deferred;      pool = empty (nothing is lost, only flattened)
//! ```
//!
//! Withdrawing a declaration is not unregistering: a pooled tool stays in the registry, and
//! every call of it, nested or direct, takes the same funnel.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tracing::error;

use crate::calls::settings::Settings;
use crate::catalogue::exec_tool;
use crate::sources::tools::names::{BASH, EXEC, RESERVED};
use crate::sources::tools::{ToolDefinition, ToolSource};

/// The deferral decision, in the spec's order of precedence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeferralTable {
    /// The engine's exemptions: tools this engine keeps flat whatever their own intent.
    /// Empty by default: the builtin workspace tools declare the intent to be deferred, so
    /// `Exec` is declared from the first request and a script reaches them.
    exempt: Vec<String>,
}

impl DeferralTable {
    /// A table with the engine exemption list `exempt` in place of the default one.
    pub fn with_exemptions(exempt: impl IntoIterator<Item = impl Into<String>>) -> Self {
        DeferralTable { exempt: exempt.into_iter().map(Into::into).collect() }
    }

    /// The engine exemption list.
    pub fn exemptions(&self) -> &[String] {
        &self.exempt
    }

    /// Whether `tool` is deferred (collapsed into the pool behind `Exec`). In order: the
    /// tool's own `alwaysLoad` escape; the engine's exemptions; the settings'
    /// `nonDeferredTools`; every MCP tool is deferred; otherwise the tool's own intent.
    pub fn defers(&self, tool: &ToolDefinition, settings: &Settings) -> bool {
        if tool.always_load {
            return false;
        }
        if self.exempt.contains(&tool.name) {
            return false;
        }
        if settings.non_deferred_tools.contains(&tool.name) {
            return false;
        }
        if matches!(tool.source, ToolSource::Mcp { .. }) {
            return true;
        }
        tool.defer
    }
}

/// One tool as a model's request declares it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Declaration {
    pub name: String,
    pub description: String,
    pub input_schema: Arc<Value>,
}

impl From<&ToolDefinition> for Declaration {
    fn from(tool: &ToolDefinition) -> Self {
        Declaration { name: tool.name.clone(), description: tool.description.clone(), input_schema: tool.input_schema.clone() }
    }
}

/// Whether `Exec` is declared, and if not, why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ExecStatus {
    /// Declared; the pool sits behind it.
    Declared,
    /// `enableExec` is false.
    Disabled,
    /// A deny rule (or an exclusion passed in code as one) covers `Exec`.
    Denied,
    /// No tool is deferred: there is nothing to collapse.
    EmptyPool,
}

impl std::fmt::Display for ExecStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ExecStatus::Declared => "Exec is declared",
            ExecStatus::Disabled => "Exec is not declared: enableExec is false",
            ExecStatus::Denied => "Exec is not declared: a permissions.deny rule covers it",
            ExecStatus::EmptyPool => "Exec is not declared: no tool is deferred",
        })
    }
}

/// What one request gives a model, and what an Exec of that request may reach.
#[derive(Clone, Debug)]
pub struct Pool {
    /// Declared one by one, in name order.
    flat: Vec<ToolDefinition>,
    /// Behind `Exec`, in name order; empty unless `Exec` is declared.
    pooled: Vec<ToolDefinition>,
    exec: ExecStatus,
}

impl Pool {
    /// The one builder: from every registered tool, the settings and the deferral table.
    /// Denied tools appear nowhere. A tool named `ToolSearch` can never be pooled (the
    /// sandbox's search entry sits on that key and would hide it); the registry refuses
    /// the name, and this refuses it again where the pool is made.
    pub(crate) fn build<'a>(
        tools: impl IntoIterator<Item = &'a ToolDefinition>,
        settings: &Settings,
        table: &DeferralTable,
    ) -> Pool {
        let mut flat = Vec::new();
        let mut deferred = Vec::new();
        for tool in tools {
            // The shell is offered only where the settings turn it on.
            if settings.denies(&tool.name) || (tool.name == BASH && !settings.enable_bash) {
                continue;
            }
            if RESERVED.contains(&tool.name.as_str()) {
                error!("a tool named `{}` was left out: the sandbox reserves that name", tool.name);
                continue;
            }
            if table.defers(tool, settings) { deferred.push(tool.clone()) } else { flat.push(tool.clone()) }
        }
        let exec = if !settings.enable_exec {
            ExecStatus::Disabled
        } else if settings.denies(EXEC) {
            ExecStatus::Denied
        } else if deferred.is_empty() {
            ExecStatus::EmptyPool
        } else {
            ExecStatus::Declared
        };
        let mut pooled = if exec == ExecStatus::Declared {
            deferred
        } else {
            // Turning Exec off flattens the pool; it never removes a capability.
            flat.extend(deferred);
            Vec::new()
        };
        flat.sort_by(|a, b| a.name.cmp(&b.name));
        pooled.sort_by(|a, b| a.name.cmp(&b.name));
        Pool { flat, pooled, exec }
    }

    /// Whether `Exec` is declared, or why not.
    pub fn exec_status(&self) -> ExecStatus {
        self.exec
    }

    pub fn exec_declared(&self) -> bool {
        self.exec == ExecStatus::Declared
    }

    /// What a model's request declares: `Exec` first (when declared), then the flat tools.
    pub fn declarations(&self) -> Vec<Declaration> {
        let exec = self.exec_declared().then(|| Declaration {
            name: EXEC.to_string(),
            description: exec_tool::description().to_string(),
            input_schema: exec_tool::input_schema(),
        });
        exec.into_iter().chain(self.flat.iter().map(Declaration::from)).collect()
    }

    /// What the declarations would be with `Exec` off: every available tool, flat, in
    /// name order (to compare the two modes' sizes).
    pub fn declarations_without_exec(&self) -> Vec<Declaration> {
        let mut all: Vec<&ToolDefinition> = self.available().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all.into_iter().map(Declaration::from).collect()
    }

    /// The tools declared flat.
    pub fn flat(&self) -> &[ToolDefinition] {
        &self.flat
    }

    /// The pool: the tools behind `Exec`, which an Exec script may reach and
    /// `tools.ToolSearch` searches. Empty when `Exec` is not declared.
    pub fn pooled(&self) -> &[ToolDefinition] {
        &self.pooled
    }

    /// The pool's names, in order: what the announcement lists.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.pooled.iter().map(|tool| tool.name.as_str())
    }

    /// Every tool this session may call, declared flat or pooled behind `Exec`. Anything
    /// that asks "is this tool available?" (a prompt section about a tool, a guard that
    /// counts its uses) asks here, not the declarations: a pooled tool is not declared, but
    /// it is available.
    pub fn available(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.flat.iter().chain(&self.pooled)
    }

    pub fn is_available(&self, name: &str) -> bool {
        self.available().any(|tool| tool.name == name)
    }

    /// The system prompt's section on using the tools: the guidance line of every available
    /// tool (flat or pooled: a pooled tool is not declared, but the session can call it), in
    /// name order, under one heading. Empty when no available tool has a line.
    pub fn guidance(&self) -> String {
        let mut tools: Vec<&ToolDefinition> = self.available().filter(|tool| tool.guidance.is_some()).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut lines: Vec<&str> = Vec::new();
        for line in tools.iter().filter_map(|tool| tool.guidance.as_deref()).map(str::trim) {
            if !line.is_empty() && !lines.contains(&line) {
                lines.push(line);
            }
        }
        if lines.is_empty() {
            return String::new();
        }
        let mut section = String::from(GUIDANCE_HEADING);
        for line in lines {
            section.push_str("\n- ");
            section.push_str(line);
        }
        section
    }
}

/// The heading of the guidance section.
pub const GUIDANCE_HEADING: &str = "# Using your tools";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::settings::Layer;
    use serde_json::json;

    fn builtin(name: &str) -> ToolDefinition {
        ToolDefinition::new(name, format!("The {name} tool."), json!({"type": "object"})).unwrap()
    }

    fn mcp(server: &str, tool: &str) -> ToolDefinition {
        builtin(&crate::sources::tools::names::mcp_name(server, tool)).with_source(ToolSource::Mcp { server: server.into() })
    }

    /// Builtin workspace tools (deferred, as they declare), a deferred builtin (`web_fetch`),
    /// a flat one (`todo`), and two MCP tools, one of which declares `alwaysLoad`.
    fn tools() -> Vec<ToolDefinition> {
        let mut tools: Vec<ToolDefinition> = WORKSPACE_TOOLS.iter().map(|name| builtin(name).deferred(true)).collect();
        tools.push(builtin("web_fetch").deferred(true));
        tools.push(builtin("todo"));
        tools.push(mcp("srv", "fetch"));
        tools.push(mcp("srv", "pinned").always_load(true));
        tools
    }

    const WORKSPACE_TOOLS: [&str; 6] = ["edit_file", "glob", "grep", "ls", "read_file", "write_file"];

    fn settings(text: &str) -> Settings {
        Settings::from_layers([&Layer::parse(text, std::path::Path::new("settings.json")).unwrap()])
    }

    fn build(tools: &[ToolDefinition], settings: &Settings) -> Pool {
        Pool::build(tools, settings, &DeferralTable::default())
    }

    fn declared(pool: &Pool) -> Vec<String> {
        pool.declarations().into_iter().map(|d| d.name).collect()
    }

    fn pooled(pool: &Pool) -> Vec<&str> {
        pool.names().collect()
    }

    #[test]
    fn the_decision_table_applies_its_rules_in_order() {
        let table = DeferralTable::default();
        let none = Settings::default();
        assert!(!table.defers(&mcp("s", "t").always_load(true), &none), "alwaysLoad escapes even an MCP tool");
        assert!(table.defers(&builtin("read_file").deferred(true), &none), "no engine exemption by default");
        let exempting = DeferralTable::with_exemptions(["read_file"]);
        assert!(!exempting.defers(&builtin("read_file").deferred(true), &none), "the engine's exemptions beat the tool's intent");
        let listed = settings(r#"{"nonDeferredTools": ["mcp__s__t", "web_fetch", "no_such_tool"]}"#);
        assert!(!table.defers(&mcp("s", "t"), &listed), "nonDeferredTools beats 'every MCP tool'");
        assert!(!table.defers(&builtin("web_fetch").deferred(true), &listed));
        assert!(table.defers(&mcp("s", "t"), &none), "every MCP tool is deferred, with no intent of its own");
        assert!(table.defers(&builtin("web_fetch").deferred(true), &none), "otherwise the tool's intent");
        assert!(!table.defers(&builtin("todo"), &none));
        let own = DeferralTable::with_exemptions(["web_fetch"]);
        assert!(!own.defers(&builtin("web_fetch").deferred(true), &none));
        assert!(own.defers(&builtin("read_file").deferred(true), &none), "an embedding replaces the exemption list");
    }

    #[test]
    fn a_non_empty_pool_collapses_behind_exec_with_no_pooled_tool_declared_flat() {
        let pool = build(&tools(), &Settings::default());
        assert_eq!(pool.exec_status(), ExecStatus::Declared);
        assert_eq!(pooled(&pool), ["edit_file", "glob", "grep", "ls", "mcp__srv__fetch", "read_file", "web_fetch", "write_file"]);
        assert_eq!(declared(&pool), ["Exec", "mcp__srv__pinned", "todo"]);
        assert_eq!(pool.pooled().iter().map(|t| &t.name).collect::<Vec<_>>(), pooled(&pool));
        assert!(pool.is_available("web_fetch") && pool.is_available("todo"), "pooled and flat tools are both available");
        assert_eq!(pool.available().count(), tools().len());
    }

    #[test]
    fn one_deferred_tool_is_enough_and_mcp_is_not_needed() {
        let mut only_builtin: Vec<ToolDefinition> = WORKSPACE_TOOLS.iter().map(|name| builtin(name)).collect();
        only_builtin.push(builtin("web_fetch").deferred(true));
        let pool = build(&only_builtin, &Settings::default());
        assert_eq!(pool.exec_status(), ExecStatus::Declared, "no threshold: a pool of one still collapses");
        assert_eq!(pooled(&pool), ["web_fetch"]);
    }

    #[test]
    fn an_empty_pool_declares_no_exec() {
        let every_tool_exempt = settings(
            r#"{"nonDeferredTools": ["web_fetch", "mcp__srv__fetch", "edit_file", "glob", "grep", "ls", "read_file", "write_file"]}"#,
        );
        let pool = build(&tools(), &every_tool_exempt);
        assert_eq!(pool.exec_status(), ExecStatus::EmptyPool);
        assert!(!declared(&pool).contains(&"Exec".to_string()));
        assert_eq!(declared(&pool).len(), tools().len());
        assert_eq!(pool.names().count(), 0);
    }

    #[test]
    fn exec_off_denied_or_excluded_flattens_the_pool_and_loses_nothing() {
        for (text, status) in
            [(r#"{"enableExec": false}"#, ExecStatus::Disabled), (r#"{"permissions": {"deny": ["Exec"]}}"#, ExecStatus::Denied)]
        {
            let pool = build(&tools(), &settings(text));
            assert_eq!(pool.exec_status(), status, "{text}");
            let mut expected: Vec<String> = tools().into_iter().map(|t| t.name).collect();
            expected.sort();
            assert_eq!(declared(&pool), expected, "{text}: every tool, MCP and deferred builtins too, is declared flat");
            assert_eq!(pool.names().count(), 0, "{text}: nothing is announced");
            assert!(pool.is_available("web_fetch") && pool.is_available("mcp__srv__fetch"));
        }
        // An exclusion passed in code is a deny rule in the managed layer.
        let managed = Layer::from_value(json!({"permissions": {"deny": ["Exec"]}})).unwrap();
        assert_eq!(build(&tools(), &Settings::from_layers([&managed])).exec_status(), ExecStatus::Denied);
    }

    #[test]
    fn a_denied_tool_appears_nowhere() {
        let pool = build(&tools(), &settings(r#"{"permissions": {"deny": ["mcp__srv__fetch", "todo"]}}"#));
        assert!(!pooled(&pool).contains(&"mcp__srv__fetch") && pooled(&pool).contains(&"web_fetch"));
        assert!(!declared(&pool).iter().any(|name| name == "mcp__srv__fetch" || name == "todo"));
        assert!(!pool.is_available("mcp__srv__fetch") && !pool.is_available("todo"));
        let whole_server = build(&tools(), &settings(r#"{"permissions": {"deny": ["mcp__srv"]}}"#));
        assert!(!whole_server.available().any(|t| t.name.starts_with("mcp__srv__")));
        let flat = build(&tools(), &settings(r#"{"enableExec": false, "permissions": {"deny": ["mcp__srv__fetch"]}}"#));
        assert!(!declared(&flat).contains(&"mcp__srv__fetch".to_string()), "the same filter in flat mode");
    }

    #[test]
    fn one_tool_can_be_taken_out_of_the_pool_without_turning_exec_off() {
        let pool = build(&tools(), &settings(r#"{"nonDeferredTools": ["web_fetch", "not_a_tool"]}"#));
        assert_eq!(pool.exec_status(), ExecStatus::Declared);
        assert!(!pooled(&pool).contains(&"web_fetch") && pooled(&pool).contains(&"mcp__srv__fetch"));
        assert!(declared(&pool).contains(&"web_fetch".to_string()));
    }

    #[test]
    fn guidance_comes_from_every_available_tool_pooled_ones_included() {
        let mut tools = tools();
        tools.push(builtin("task_create").deferred(true).with_guidance("Track multi-step work with task_create."));
        tools.push(builtin("notes").with_guidance("Keep notes with notes."));
        tools.push(builtin("denied").with_guidance("Never shown."));
        let settings = settings(r#"{"permissions": {"deny": ["denied"]}}"#);
        let pool = build(&tools, &settings);
        assert!(pooled(&pool).contains(&"task_create"), "the tool is pooled, not declared");
        let expected = "# Using your tools\n- Keep notes with notes.\n- Track multi-step work with task_create.";
        assert_eq!(pool.guidance(), expected, "a pooled tool keeps its line; a denied one has none");
        let flat = build(&tools, &Settings { enable_exec: false, ..settings.clone() });
        assert_eq!(flat.guidance(), expected, "the same section whether Exec is on or off");
        assert_eq!(build(&self::tools(), &Settings::default()).guidance(), "");
    }

    #[test]
    fn the_exec_declaration_does_not_depend_on_the_pool() {
        let small = build(&tools(), &Settings::default());
        let mut more = tools();
        more.extend((0..50).map(|i| mcp("big", &format!("tool_{i}"))));
        let large = build(&more, &Settings::default());
        let only_builtin = build(&[builtin("web_fetch").deferred(true)], &Settings::default());
        let exec = |pool: &Pool| serde_json::to_vec(&pool.declarations()[0]).unwrap();
        assert_eq!(exec(&small), exec(&large));
        assert_eq!(exec(&small), exec(&only_builtin));
        assert!(!exec_tool::description().contains("mcp__srv") && !exec_tool::description().contains("web_fetch"));
    }

    #[test]
    fn a_tool_named_like_the_search_entry_is_never_pooled() {
        let rogue = builtin("ToolSearch").deferred(true);
        let pool = build(&[rogue, builtin("web_fetch").deferred(true)], &Settings::default());
        assert_eq!(pooled(&pool), ["web_fetch"]);
        assert!(!pool.is_available("ToolSearch"));
    }
}
