//! The funnel: the one path every tool call takes, direct or nested, builtin or MCP.
//!
//! discovery (is the tool registered?) -> authorization (the policy: `PreToolUse` hooks,
//! permission rules, the mode, an approval) -> params (the input is one object; the tool
//! reads its own arguments, so a mismatch there is a params failure too) -> execution ->
//! `PostToolUse` hooks. Each failure carries its [`Stage`](crate::support::vocabulary::Stage). `Exec`
//! itself is authorized and followed by the same two functions before and after its
//! sandbox runs.

use std::sync::Arc;

use serde_json::{Map, Value};
use tracing::{Instrument, debug};

use crate::calls::observed::Observed;
use crate::calls::policy::{Authorized, Notes, Policy};
use crate::calls::settings::{Settings, SettingsFiles};
use crate::sources::mcp::RESOURCE_TOOLS;
use crate::sources::tools::names::split_mcp_name;
use crate::sources::tools::{CallContext, Effect, Registry, Tool, ToolOutput};
use crate::support::vocabulary::Unfinished;
use crate::support::vocabulary::{AskedBefore, ToolError};

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
    /// Where `PostToolUse` hooks put the messages they add to the conversation.
    pub notes: Notes,
    /// The call parked before and is taken up again, with a person's answer or none.
    pub asked_before: Option<AskedBefore>,
}

/// Every tool call of a session passes through here.
pub(crate) struct Funnel {
    registry: Arc<Registry>,
    settings: Arc<SettingsFiles>,
    policy: Policy,
    /// What this session's tools without an output schema answered: its own, as its
    /// approvals are (another client's funnel has another).
    observed: Arc<Observed>,
}

impl Funnel {
    pub fn new(registry: Arc<Registry>, settings: Arc<SettingsFiles>, policy: Policy) -> Self {
        Funnel { registry, settings, policy, observed: Arc::default() }
    }

    /// The same funnel with another policy (another client's approvals), observing afresh:
    /// one client's answers never shape what another is told.
    pub fn with_policy(&self, policy: Policy) -> Funnel {
        Funnel { registry: self.registry.clone(), settings: self.settings.clone(), policy, observed: Arc::default() }
    }

    /// The output types this funnel's calls have observed.
    pub fn observed(&self) -> &Observed {
        &self.observed
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The settings in force now (the last valid ones while a file is broken). An
    /// authorization failure when no valid settings were ever read: the defaults deny
    /// nothing, so falling back to them would fail open.
    pub fn settings(&self, name: &str) -> Result<Arc<Settings>, ToolError> {
        self.settings.current_or_last_good().map_err(|error| {
            let why = crate::support::report::error_sentence(&error);
            ToolError::authorization(format!("`{name}` was not run: the settings cannot be read ({why})"))
        })
    }

    /// Authorizes one call (see [`Policy::authorize`]): the input to run with, or the refusal.
    pub async fn authorize(
        &self,
        name: &str,
        effect: Effect,
        input: Value,
        context: &CallContext,
        settings: &Settings,
        asked_before: Option<AskedBefore>,
    ) -> Result<Authorized, Unfinished> {
        self.policy.authorize(name, effect, input, &context.origin, settings, asked_before).await
    }

    /// What follows a call that succeeded (see [`Policy::after`]): its `PostToolUse` hooks.
    pub async fn after(
        &self,
        name: &str,
        origin: &crate::support::vocabulary::Origin,
        post_hook_input: Option<Value>,
        response: impl FnOnce() -> Value,
        settings: &Settings,
        notes: &Notes,
    ) {
        self.policy.after(name, origin, post_hook_input, response, settings, notes).await;
    }

    /// Runs one call through every stage, in a `tool_call` span (beneath its Exec's, for a
    /// nested call) that says how it ended.
    pub async fn call(&self, request: CallRequest) -> Result<ToolOutput, Unfinished> {
        self.traced(None, request).await
    }

    /// Runs one call of a tool the session holds outside its registry (`WebFetch`, which a
    /// script reaches only through `fetch`) through every stage after discovery.
    pub async fn call_unlisted(&self, tool: Arc<dyn Tool>, request: CallRequest) -> Result<ToolOutput, Unfinished> {
        self.traced(Some(tool), request).await
    }

    async fn traced(&self, tool: Option<Arc<dyn Tool>>, request: CallRequest) -> Result<ToolOutput, Unfinished> {
        let span = tracing::info_span!(
            "tool_call",
            otel.name = %request.name,
            gen_ai.tool.name = %request.name,
            exec_host.nested = !matches!(request.context.origin, crate::support::vocabulary::Origin::Direct { .. }),
            exec_host.stage = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let result = match tool.or_else(|| self.registry.get(&request.name)) {
            Some(tool) => self.run(tool, request).instrument(span.clone()).await,
            None => Err(ToolError::discovery(unknown_tool(&request.name)).into()),
        };
        match &result {
            Ok(_) => {}
            Err(Unfinished::Failed(error)) => {
                span.record("exec_host.stage", tracing::field::display(&error.stage));
                span.record("otel.status_code", "ERROR");
            }
            // Waiting for a person is not a failure.
            Err(Unfinished::Parked(_)) => {
                span.record("exec_host.stage", "parked");
            }
        }
        result
    }

    async fn run(&self, tool: Arc<dyn Tool>, request: CallRequest) -> Result<ToolOutput, Unfinished> {
        let CallRequest { name, input, context, settings, notes, asked_before } = request;
        let settings = match settings {
            Some(settings) => settings,
            None => self.settings(&name)?,
        };
        // A caller that gives up while a hook runs or a person is asked stops the wait too.
        let authorized = tokio::select! {
            biased;
            authorized = self.authorize(&name, tool.definition().effect, input, &context, &settings, asked_before) => authorized,
            _ = context.cancel.cancelled() => Err(ToolError::execution(format!("`{name}` was cancelled")).into()),
        };
        let Authorized { input, post_hook_input } = authorized?;
        let args = object_input(&name, input)?;
        debug!(tool = %name, origin = ?context.origin, "tool call");
        if context.cancel.is_cancelled() {
            return Err(ToolError::execution(format!("`{name}` was not run: the caller gave up")).into());
        }
        // The tool is polled first: one that answers at once never registers with the
        // cancellation token (a lock and an allocation per call). The tool takes the
        // context; the funnel keeps only the token.
        let cancel = context.cancel.clone();
        let origin = context.origin.clone();
        let mut context = context;
        if context.input.is_none() {
            context.input = self.policy().input();
        }
        if RESOURCE_TOOLS.contains(&name.as_str()) {
            let (settings, tool) = (settings.clone(), name.clone());
            context.resources_denied = Some(Arc::new(move |server| settings.denying_resources(&tool, server).is_some()));
        }
        let result = tokio::select! {
            biased;
            result = tool.call(args, context) => result,
            _ = cancel.cancelled() => Err(ToolError::execution(format!("`{name}` was cancelled"))),
        };
        match &result {
            Ok(_) => debug!(tool = %name, "tool call succeeded"),
            Err(error) => debug!(tool = %name, stage = %error.stage, "tool call failed: {}", error.message),
        }
        if let Ok(output) = &result {
            self.observed.record(tool.definition(), output);
            self.after(&name, &origin, post_hook_input, || output.clone().into_value(), &settings, &notes).await;
        }
        Ok(result?)
    }
}

/// The arguments of a call of `name` as the one JSON object a tool takes, or a params failure.
pub(crate) fn object_input(name: &str, input: Value) -> Result<Map<String, Value>, ToolError> {
    match input {
        Value::Object(map) => Ok(map),
        other => Err(ToolError::params(format!(
            "the input of `{name}` must be a JSON object, not {}",
            crate::sources::tools::json_kind(&other)
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
