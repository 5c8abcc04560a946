//! The registry: every tool of a session by name.
//!
//! Tools given at construction (builtin and embedding tools) are fixed and checked once.
//! MCP servers come and go: each server's tools are replaced as a whole when it connects
//! or its list changes, and removed when it leaves. Readers take a [`ToolSet`] snapshot,
//! so an Exec that started keeps a consistent view while the registry moves on.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use super::names::{API_PREFIX, MCP_PREFIX, RESERVED};
use super::{Tool, ToolDefinition, ToolSource};
use crate::support::lock::UnpoisonedRw;

/// Why a set of tools cannot form a registry.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    #[error("two tools are named `{0}`; every tool name must be unique")]
    Duplicate(String),
    #[error("no tool may be named `{0}`: the sandbox reserves that name")]
    Reserved(String),
    #[error("tool `{0}` is not an MCP tool, so its name may not start with `mcp__` (that prefix names MCP server tools)")]
    McpPrefix(String),
    #[error("tool `{0}` is not an operation of an HTTP API, so its name may not start with `api__` (that prefix names them)")]
    ApiPrefix(String),
}

/// A consistent view of every tool at one moment, in name order.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolSet {
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Every definition, in name order.
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools.values().map(|tool| tool.definition())
    }

    /// Every name, in order.
    #[cfg(test)]
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

/// Every tool of a session: fixed tools plus the tools of the MCP servers connected now.
#[derive(Default)]
pub struct Registry {
    current: RwLock<Arc<ToolSet>>,
}

impl Registry {
    /// Builds a registry of fixed tools; refuses duplicate and reserved names, and
    /// `mcp__` names on tools that do not come from an MCP server.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Result<Self, RegistryError> {
        let mut map = BTreeMap::new();
        for tool in tools {
            let definition = tool.definition();
            let name = definition.name.clone();
            if RESERVED.contains(&name.as_str()) {
                return Err(RegistryError::Reserved(name));
            }
            if name.starts_with(MCP_PREFIX) && !matches!(definition.source, ToolSource::Mcp { .. }) {
                return Err(RegistryError::McpPrefix(name));
            }
            if name.starts_with(API_PREFIX) && !matches!(definition.source, ToolSource::Api { .. }) {
                return Err(RegistryError::ApiPrefix(name));
            }
            if map.insert(name.clone(), tool).is_some() {
                return Err(RegistryError::Duplicate(name));
            }
        }
        Ok(Registry { current: RwLock::new(Arc::new(ToolSet { tools: map })) })
    }

    /// The tools as they are now.
    pub fn snapshot(&self) -> Arc<ToolSet> {
        self.current.read_locked().clone()
    }

    /// One tool as it is now.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.current.read_locked().get(name).cloned()
    }

    /// Replaces every tool of MCP server `server` with `tools`. Each tool must come from
    /// that server and be named `mcp__<server>__...`; the server's names are unique (see
    /// `mcp::tool::tools_of`), and no fixed tool can carry them.
    pub fn replace_server_tools(&self, server: &str, tools: Vec<Arc<dyn Tool>>) {
        self.replace_source_tools(&ToolSource::Mcp { server: server.to_string() }, tools);
    }

    /// Replaces every tool of HTTP API `api` with `tools` (each named `api__<api>__...`, from
    /// that API): an API whose entry changed while the session runs.
    pub fn replace_api_tools(&self, api: &str, tools: Vec<Arc<dyn Tool>>) {
        self.replace_source_tools(&ToolSource::Api { source: api.to_string() }, tools);
    }

    fn replace_source_tools(&self, source: &ToolSource, tools: Vec<Arc<dyn Tool>>) {
        self.update(|map| {
            map.retain(|_, tool| tool.definition().source != *source);
            for tool in tools {
                debug_assert!(tool.definition().source == *source, "a tool of another source was given for {source:?}");
                map.insert(tool.definition().name.clone(), tool);
            }
        });
    }

    /// Puts `tools` in by their names when `present`, else takes those names out: tools
    /// that are there while some condition holds (the resource tools, while a connected
    /// server has resources). Their names are no MCP tool's and no fixed tool's.
    pub fn set_tools(&self, tools: &[Arc<dyn Tool>], present: bool) {
        self.update(|map| {
            for tool in tools {
                let name = &tool.definition().name;
                match present {
                    true => map.insert(name.clone(), tool.clone()),
                    false => map.remove(name),
                };
            }
        });
    }

    /// Removes every tool of MCP server `server`.
    pub fn remove_server_tools(&self, server: &str) {
        let source = ToolSource::Mcp { server: server.to_string() };
        self.update(|map| map.retain(|_, tool| tool.definition().source != source));
    }

    /// Removes every tool of HTTP API `api`; false when it had none.
    pub fn remove_api_tools(&self, api: &str) -> bool {
        let source = ToolSource::Api { source: api.to_string() };
        let mut removed = false;
        self.update(|map| {
            let before = map.len();
            map.retain(|_, tool| tool.definition().source != source);
            removed = map.len() < before;
        });
        removed
    }

    fn update(&self, change: impl FnOnce(&mut BTreeMap<String, Arc<dyn Tool>>)) {
        let mut current = self.current.write_locked();
        let mut tools = current.tools.clone();
        change(&mut tools);
        *current = Arc::new(ToolSet { tools });
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.snapshot().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::tools::{CallContext, ToolOutput};
    use crate::support::vocabulary::ToolError;
    use futures::future::BoxFuture;
    use serde_json::{Map, Value, json};

    struct Named(ToolDefinition);

    impl Tool for Named {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }
        fn call(&self, _: Map<String, Value>, _: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::empty()) })
        }
    }

    fn tool(name: &str) -> Arc<dyn Tool> {
        Arc::new(Named(ToolDefinition::new(name, "", json!({"type": "object"})).unwrap()))
    }

    fn mcp_tool(server: &str, name: &str) -> Arc<dyn Tool> {
        let definition = ToolDefinition::new(crate::sources::tools::names::mcp_name(server, name), "", json!({"type": "object"}))
            .unwrap()
            .with_source(ToolSource::Mcp { server: server.into() });
        Arc::new(Named(definition))
    }

    #[test]
    fn duplicates_are_refused_at_start_up() {
        let err = Registry::new([tool("a"), tool("b"), tool("a")]).unwrap_err();
        assert_eq!(err, RegistryError::Duplicate("a".into()));
        assert_eq!(err.to_string(), "two tools are named `a`; every tool name must be unique");
    }

    #[test]
    fn reserved_names_and_borrowed_prefixes_are_refused() {
        for name in RESERVED {
            assert_eq!(Registry::new([tool(name)]).unwrap_err(), RegistryError::Reserved(name.to_string()));
        }
        assert_eq!(Registry::new([tool("mcp__x__y")]).unwrap_err(), RegistryError::McpPrefix("mcp__x__y".into()));
    }

    #[test]
    fn names_come_out_in_order() {
        let registry = Registry::new([tool("c"), tool("a"), tool("b")]).unwrap();
        let snapshot = registry.snapshot();
        assert_eq!(snapshot.names().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(snapshot.contains("b") && !snapshot.contains("d"));
    }

    #[test]
    fn server_tools_come_and_go_without_touching_a_snapshot() {
        let registry = Registry::new([tool("read_file")]).unwrap();
        registry.replace_server_tools("s", vec![mcp_tool("s", "a"), mcp_tool("s", "b")]);
        registry.replace_server_tools("t", vec![mcp_tool("t", "a")]);
        let before = registry.snapshot();
        registry.replace_server_tools("s", vec![mcp_tool("s", "c")]);
        assert_eq!(registry.snapshot().names().collect::<Vec<_>>(), ["mcp__s__c", "mcp__t__a", "read_file"]);
        registry.remove_server_tools("t");
        assert_eq!(registry.snapshot().names().collect::<Vec<_>>(), ["mcp__s__c", "read_file"]);
        assert_eq!(before.names().collect::<Vec<_>>(), ["mcp__s__a", "mcp__s__b", "mcp__t__a", "read_file"]);
        assert!(registry.get("mcp__s__c").is_some() && registry.get("mcp__s__a").is_none());
    }
}
