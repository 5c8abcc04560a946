//! The scope of one `Exec`: the tools its script reaches, through the funnel, and the
//! reason a name it calls reaches none.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::calls::funnel::{CallRequest, Funnel};
use crate::calls::policy::Notes;
use crate::catalogue::search::{self, Reachable};
use crate::sandbox::runtime::{Position, ScriptTools, ToolFuture};
use crate::sources::mcp::ServerState;
use crate::sources::tools::input::InputHandler;
use crate::sources::tools::names::{WEB_FETCH, answered_by_another_process, split_mcp_name};
use crate::sources::tools::{CallContext, CallProgress, ProgressWatcher};
use crate::state::ConversationValues;
use crate::support::vocabulary::{AskedBefore, Origin, ToolError};

use super::hints::did_you_mean;
use super::{Inner, View};

/// What one `Exec`'s script reaches: the pool of the moment it started, through the funnel.
pub(super) struct ExecScope {
    /// The session's servers and their start failures, for the reason a name is unreachable.
    pub(super) session: Arc<Inner>,
    pub(super) reachable: Arc<Reachable>,
    pub(super) funnel: Arc<Funnel>,
    pub(super) exec_call_id: Arc<str>,
    pub(super) view: Arc<View>,
    /// What the hooks of the script's calls add to the conversation.
    pub(super) notes: Notes,
    /// Who watches the steps the script's calls report.
    pub(super) progress: Option<ProgressWatcher>,
    /// Who answers the input the script's calls are asked for, when not the session's.
    pub(super) input: Option<Arc<dyn InputHandler>>,
}

impl ScriptTools for ExecScope {
    fn names(&self) -> &[String] {
        self.reachable.names()
    }

    fn call(
        &self,
        id: u32,
        name: String,
        args: Map<String, Value>,
        cancel: CancellationToken,
        asked_before: Option<AskedBefore>,
    ) -> ToolFuture {
        let unlisted = match name == WEB_FETCH {
            true => match &self.session.web_fetch {
                Ok(tool) => Some(tool.clone()),
                Err(why) => {
                    let error = ToolError::execution(format!("fetch() is not available in this session: {why}"));
                    return Box::pin(std::future::ready(Err(error.into())));
                }
            },
            false if !self.reachable.contains(&name) => {
                return Box::pin(std::future::ready(Err(self.unreachable(&name).into())));
            }
            false => None,
        };
        let funnel = self.funnel.clone();
        let mut context = CallContext::new(Origin::Nested { exec_call_id: self.exec_call_id.clone(), call: id }, cancel);
        context.progress = self.progress.as_ref().map(|watcher| CallProgress::sink(watcher, &name, &context.origin));
        context.input = self.input.clone();
        // The settings are read at the moment of the call: a rule added while the script
        // runs applies to it.
        let tool = name.clone();
        let request =
            CallRequest { name, input: Value::Object(args), context, settings: None, notes: self.notes.clone(), asked_before };
        Box::pin(async move {
            let result = match unlisted {
                Some(web_fetch) => funnel.call_unlisted(web_fetch, request).await,
                None => funnel.call(request).await,
            };
            result.map_err(|unfinished| unfinished.naming(&tool))
        })
    }

    fn search(&self, args: Map<String, Value>) -> Result<String, ToolError> {
        let params = search::parse_params(args)?;
        let result = self.reachable.search(&params, self.funnel.observed());
        serde_json::to_string(&result)
            .map_err(|e| ToolError::projection(format!("ToolSearch: the result could not be encoded: {e}")))
    }

    fn values(&self) -> Arc<ConversationValues> {
        self.session.values.clone()
    }

    fn answered_elsewhere(&self, name: &str) -> bool {
        answered_by_another_process(name)
    }

    fn explain_not_a_function(&self, code: &str, position: Position) -> Option<String> {
        super::hints::not_a_function(code, position, &self.reachable)
    }
}

impl ExecScope {
    /// The refusal of a name outside the pool, with the reason when there is one to give.
    fn unreachable(&self, name: &str) -> ToolError {
        let flat = self.view.pool.flat().iter().any(|tool| tool.name == name);
        let why = if flat {
            "it is declared to the model directly, outside the catalogue, so a script cannot call it".to_string()
        } else if let Some(rule) = self.view.settings.denying_rule(name) {
            format!("the permissions.deny rule `{}` in {} removes it", rule.value, rule.source)
        } else if let Some((server, tool)) = split_mcp_name(name) {
            self.server_reason(name, server, tool)
        } else {
            "only this session's catalogue tools are".to_string()
        };
        let close = did_you_mean(name, &self.reachable);
        ToolError::discovery(format!(
            "`{name}` is not reachable from this script: {why}.{close} \
             Use tools.ToolSearch({{ query: \"...\" }}) to find a tool's exact name and call shape."
        ))
    }

    /// Why MCP server `server` gives the script no `tool`: it has none, it left, it never
    /// started, there is no such server, or the tool came after the script started.
    fn server_reason(&self, name: &str, server: &str, tool: &str) -> String {
        if self.session.registry.snapshot().contains(name) {
            return format!("MCP server `{server}` offers `{tool}` only since the script started; the next Exec can call it");
        }
        let state = self.session.servers.states().into_iter().find(|(known, _)| known == server).map(|(_, state)| state);
        match state {
            Some(ServerState::Connected { .. }) => format!("MCP server `{server}` has no tool `{tool}`"),
            Some(ServerState::Disconnected { reason }) => {
                format!("MCP server `{server}` disconnected ({reason}), and its tools left the catalogue")
            }
            _ => match self.session.start_failures.iter().find(|failure| failure.server == server) {
                Some(failure) => format!("MCP server `{server}` failed to start: {}", failure.reason()),
                None => format!("no MCP server `{server}` is configured"),
            },
        }
    }
}
