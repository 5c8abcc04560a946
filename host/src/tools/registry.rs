//! The registry: every tool of a session by name, checked once when it is built.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{RESERVED_NAMES, Tool, ToolDefinition};

/// Why a set of tools cannot form a registry.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    #[error("two tools are named `{0}`; every tool name must be unique")]
    Duplicate(String),
    #[error("no tool may be named `{0}`: the sandbox reserves that name")]
    Reserved(String),
}

/// Every tool of a session, by name, in name order.
#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl Registry {
    /// Builds a registry; refuses duplicate and reserved names.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Result<Self, RegistryError> {
        let mut map = BTreeMap::new();
        for tool in tools {
            let name = tool.definition().name.clone();
            if RESERVED_NAMES.contains(&name.as_str()) {
                return Err(RegistryError::Reserved(name));
            }
            if map.insert(name.clone(), tool).is_some() {
                return Err(RegistryError::Duplicate(name));
            }
        }
        Ok(Registry { tools: map })
    }

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
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{CallContext, ToolError, ToolOutput};
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

    #[test]
    fn duplicates_are_refused_at_start_up() {
        let err = Registry::new([tool("a"), tool("b"), tool("a")]).unwrap_err();
        assert_eq!(err, RegistryError::Duplicate("a".into()));
        assert_eq!(err.to_string(), "two tools are named `a`; every tool name must be unique");
    }

    #[test]
    fn reserved_names_are_refused() {
        for name in RESERVED_NAMES {
            assert_eq!(Registry::new([tool(name)]).unwrap_err(), RegistryError::Reserved(name.to_string()));
        }
    }

    #[test]
    fn names_come_out_in_order() {
        let registry = Registry::new([tool("c"), tool("a"), tool("b")]).unwrap();
        assert_eq!(registry.names().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(registry.contains("b") && !registry.contains("d"));
    }
}
