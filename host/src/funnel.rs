//! The funnel: the one path every tool call takes, direct or nested, builtin or MCP.
//!
//! discovery (is the tool registered?) -> authorization ([`Funnel::authorize`], the one
//! function that applies policy; permissions and hooks attach here) -> execution (the tool
//! runs; it reads its own arguments, so a mismatch is a params failure) -> projection.
//! Each failure carries its [`Stage`](crate::tools::Stage). `Exec` itself is authorized by
//! the same function before its sandbox starts.

use std::sync::Arc;

use serde_json::{Map, Value};
use tracing::debug;

use crate::settings::{Settings, SettingsFiles};
use crate::tools::names::split_mcp_name;
use crate::tools::{CallContext, Registry, ToolError, ToolOutput};

/// A call as the funnel receives it.
#[derive(Clone, Debug)]
pub(crate) struct CallRequest {
    pub name: String,
    /// The arguments as the caller gave them; a tool takes one JSON object.
    pub input: Value,
    pub context: CallContext,
    /// The settings in force, when the caller has just read them for this call; `None`: the
    /// funnel reads them (one look at each settings file either way).
    pub settings: Option<Arc<Settings>>,
}

/// Every tool call of a session passes through here.
pub(crate) struct Funnel {
    registry: Arc<Registry>,
    settings: Arc<SettingsFiles>,
}

impl Funnel {
    pub fn new(registry: Arc<Registry>, settings: Arc<SettingsFiles>) -> Self {
        Funnel { registry, settings }
    }

    /// The settings in force now (the last valid ones while a file is broken). An
    /// authorization failure when no valid settings were ever read: the defaults deny
    /// nothing, so falling back to them would fail open.
    pub fn settings(&self, name: &str) -> Result<Arc<Settings>, ToolError> {
        self.settings
            .current_or_last_good()
            .map_err(|error| ToolError::authorization(format!("`{name}` was not run: the settings cannot be read ({error})")))
    }

    /// The policy decision for one call of `name` under `settings`: refused when a deny
    /// rule covers the tool (the refusal names the rule and where it was written).
    pub fn authorize(&self, name: &str, settings: &Settings) -> Result<(), ToolError> {
        match settings.denying_rule(name) {
            Some(rule) => Err(ToolError::authorization(format!(
                "`{name}` is denied by the permissions.deny rule `{}` in {}",
                rule.value, rule.source
            ))),
            None => Ok(()),
        }
    }

    /// Runs one call through every stage.
    pub async fn call(&self, request: CallRequest) -> Result<ToolOutput, ToolError> {
        let CallRequest { name, input, context, settings } = request;
        let Some(tool) = self.registry.get(&name) else {
            return Err(ToolError::discovery(unknown_tool(&name)));
        };
        let settings = match settings {
            Some(settings) => settings,
            None => self.settings(&name)?,
        };
        self.authorize(&name, &settings)?;
        let args = object_input(&name, input)?;
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

/// The arguments of a call of `name` as the one JSON object a tool takes, or a params failure.
pub(crate) fn object_input(name: &str, input: Value) -> Result<Map<String, Value>, ToolError> {
    match input {
        Value::Object(map) => Ok(map),
        other => Err(ToolError::params(format!(
            "the input of `{name}` must be a JSON object, not {}",
            crate::tools::json_kind(&other)
        ))),
    }
}

/// Why `name` is not a registered tool, in the words of its kind.
pub(crate) fn unknown_tool(name: &str) -> String {
    match split_mcp_name(name) {
        Some((server, tool)) => {
            format!("there is no tool named `{name}`: MCP server `{server}` is not connected or does not offer `{tool}` now")
        }
        None => format!("there is no tool named `{name}`"),
    }
}
