//! The funnel: the one path every tool call takes, direct or nested, builtin or MCP.
//!
//! discovery (is the tool registered?) -> authorization (policy; permissions and hooks
//! attach here) -> execution (the tool runs; it reads its own arguments) -> projection.
//! Each failure carries its [`Stage`](crate::tools::Stage).

use std::sync::Arc;

use serde_json::{Map, Value};
use tracing::debug;

use crate::mcp;
use crate::settings::SettingsFiles;
use crate::tools::{CallContext, Registry, ToolError, ToolOutput};

/// A call as the funnel receives it.
#[derive(Clone, Debug)]
pub struct CallRequest {
    pub name: String,
    pub args: Map<String, Value>,
    pub context: CallContext,
}

/// Every tool call of a session passes through here.
#[derive(Clone)]
pub struct Funnel {
    registry: Arc<Registry>,
    settings: Option<Arc<SettingsFiles>>,
}

impl std::fmt::Debug for Funnel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Funnel")
            .field("registry", &self.registry.snapshot())
            .field("checks_settings", &self.settings.is_some())
            .finish()
    }
}

impl Funnel {
    pub fn new(registry: Arc<Registry>) -> Self {
        Funnel { registry, settings: None }
    }

    /// Checks every call against the deny rules of `settings` as they are when it is made
    /// (the same settings the pool is built from).
    pub fn with_settings(mut self, settings: Arc<SettingsFiles>) -> Self {
        self.settings = Some(settings);
        self
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Runs one call through every stage.
    pub async fn call(&self, request: CallRequest) -> Result<ToolOutput, ToolError> {
        let CallRequest { name, args, context } = request;
        let Some(tool) = self.registry.get(&name) else {
            return Err(ToolError::discovery(unknown_tool(&name)));
        };
        if let Some(settings) = &self.settings {
            let settings = settings.current_or_last_good().map_err(|error| {
                ToolError::authorization(format!("`{name}` was not run: the settings cannot be read ({error})"))
            })?;
            if let Some(rule) = settings.denying_rule(&name) {
                return Err(ToolError::authorization(format!("`{name}` is denied by the permissions.deny rule `{rule}`")));
            }
        }
        debug!(tool = %name, origin = ?context.origin, "tool call");
        if context.cancel.is_cancelled() {
            return Err(ToolError::execution(format!("`{name}` was not run: the caller gave up")));
        }
        // The tool is polled first: one that answers at once never registers with the
        // cancellation token (a lock and an allocation per call).
        let result = tokio::select! {
            biased;
            result = tool.call(args, context.clone()) => result,
            _ = context.cancel.cancelled() => Err(ToolError::execution(format!("`{name}` was cancelled"))),
        };
        match &result {
            Ok(_) => debug!(tool = %name, "tool call succeeded"),
            Err(error) => debug!(tool = %name, stage = %error.stage, "tool call failed: {}", error.message),
        }
        result
    }
}

fn unknown_tool(name: &str) -> String {
    match mcp::split_tool_name(name) {
        Some((server, tool)) => {
            format!("there is no tool named `{name}`: MCP server `{server}` is not connected or does not offer `{tool}` now")
        }
        None => format!("there is no tool named `{name}`"),
    }
}
