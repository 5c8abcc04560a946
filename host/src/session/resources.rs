//! The downstream servers' resources for a session's client (what `serve` answers to
//! `resources/list` and `resources/read`): the resource tools called through the funnel, so
//! the client sees what its rules and hooks let a script see.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::calls::funnel::CallRequest;
use crate::calls::policy::Notes;
use crate::sources::mcp::{LIST_RESOURCES, READ_RESOURCE};
use crate::sources::tools::{CallContext, ToolOutput};
use crate::support::vocabulary::Unfinished;
use crate::support::vocabulary::{Origin, ToolError};

impl Session {
    /// Whether a connected server offers resources now.
    pub fn offers_resources(&self) -> bool {
        self.inner.registry.get(LIST_RESOURCES).is_some()
    }

    /// Every resource the servers offer that this session's rules let it see, as
    /// `ListMcpResourcesTool` lists them (`{resources: [{server, uri, name, ...}], notes?}`).
    pub async fn list_resources(&self, abort: CancellationToken) -> Result<Value, ToolError> {
        let output = self.resource_call(LIST_RESOURCES, json!({}), abort).await?;
        Ok(output.into_value())
    }

    /// Reads resource `uri` of server `server`, or, with no server named, of the first server
    /// (in name order) that lists it.
    pub async fn read_resource(
        &self,
        server: Option<&str>,
        uri: &str,
        abort: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let server = match server {
            Some(server) => server.to_string(),
            None => {
                let listed = self.list_resources(abort.clone()).await?;
                let resources = listed["resources"].as_array().cloned().unwrap_or_default();
                let owner = resources.iter().find(|resource| resource["uri"] == uri).and_then(|r| r["server"].as_str());
                owner
                    .map(str::to_string)
                    .ok_or_else(|| ToolError::discovery(format!("no connected MCP server lists the resource {uri}")))?
            }
        };
        self.resource_call(READ_RESOURCE, json!({"server": server, "uri": uri}), abort).await
    }

    /// One call of a resource tool through the funnel, as the session's client's own.
    async fn resource_call(&self, tool: &str, input: Value, abort: CancellationToken) -> Result<ToolOutput, ToolError> {
        if !self.offers_resources() {
            return match tool {
                LIST_RESOURCES => Ok(ToolOutput::structured(json!({"resources": []}))),
                _ => Err(ToolError::discovery("no connected MCP server offers resources")),
            };
        }
        let context = CallContext::new(Origin::Direct { call_id: format!("resources:{tool}").into() }, abort);
        let request =
            CallRequest { name: tool.to_string(), input, context, settings: None, notes: Notes::default(), asked_before: None };
        self.funnel.call(request).await.map_err(Unfinished::or_refused)
    }
}
