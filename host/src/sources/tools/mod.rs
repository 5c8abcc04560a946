//! Tools: what a script can call. A [`Tool`] has a [`ToolDefinition`] (name, description,
//! input schema, deferral intent) and an async `call`. The registry holds every tool
//! of a session and checks itself when it is built; every call, from a script or from a
//! model directly, goes through the one funnel.

pub(crate) mod builtin;
pub mod input;
pub mod names;
pub(crate) mod params;
mod progress;
mod registry;

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::support::vocabulary::{Origin, ToolError};
pub use builtin::WorkspaceError;
pub use progress::{CallProgress, MAX_PROGRESS_MESSAGE_CHARS, ProgressSink, ProgressWatcher, ToolProgress};
pub use registry::RegistryError;
pub(crate) use registry::{Registry, ToolSet};

/// Longest tool name accepted.
pub const MAX_TOOL_NAME_LEN: usize = 256;

/// A tool that a script or a model can call.
pub trait Tool: Send + Sync + 'static {
    /// What the tool is; fixed for the tool's lifetime.
    fn definition(&self) -> &ToolDefinition;

    /// Runs one call. `args` is the caller's argument object, untouched: no renaming, no
    /// defaults, no schema validation on the way in. A tool that cannot read its arguments
    /// answers [`ToolError::params`].
    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;
}

/// Where a tool comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
#[non_exhaustive]
pub enum ToolSource {
    /// Part of exec-host (the workspace file tools) or registered by an embedding.
    Builtin,
    /// A tool of an MCP server.
    Mcp { server: String },
    /// An operation of an HTTP API described by OpenAPI.
    Api { source: String },
}

/// What a tool is: everything a registry, a pool, a search or a model needs to know.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON Schema of the argument object; its top level is always an object.
    pub input_schema: Arc<Value>,
    /// JSON Schema of the structured output, when the tool declares one. Used to render
    /// signatures, never to invent a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<Value>>,
    /// The tool's own deferral intent.
    pub defer: bool,
    /// The escape hatch: never deferred, whatever else says so.
    pub always_load: bool,
    /// A curated phrase for search, outside the description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search_hint: Option<String>,
    /// What the tool is about, as its source groups its tools (an OpenAPI operation's tags):
    /// a source too large to announce name by name is announced by these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// One line for the system prompt's section on using the tools, rendered whenever the
    /// tool is available (declared flat or pooled behind `Exec`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guidance: Option<String>,
    /// What a call may change, which the permission mode's default goes by.
    pub effect: Effect,
    pub source: ToolSource,
}

/// What a call of a tool may change. The permission mode decides by it when no rule does:
/// `default` runs read-only tools and asks before the others, `acceptEdits` also runs
/// workspace edits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Effect {
    /// Reads only.
    ReadOnly,
    /// Changes files in the workspace.
    WorkspaceEdit,
    /// Anything else, or not known (every MCP tool, and an embedding's tools unless they say).
    #[default]
    Other,
    /// Reaches a host on the network that the call names (`WebFetch`): no permission mode
    /// runs it alone, not even `bypassPermissions`; an allow rule naming the host, a hook's
    /// allow or a person's answer does.
    Network,
}

/// Why a definition was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DefinitionError {
    #[error(
        "tool `{name}`: the input schema must be a JSON Schema whose top level is an object (\"type\": \"object\"), got {found}"
    )]
    InputNotObject { name: String, found: String },
    #[error("tool name {name:?} is not valid: {why}")]
    InvalidName { name: String, why: &'static str },
}

impl DefinitionError {
    /// What is wrong, said of the tool without naming it (`its name is not valid: ...`), for
    /// a list that names the tool already.
    pub fn reason(&self) -> String {
        match self {
            DefinitionError::InputNotObject { found, .. } => {
                format!("its input schema must be a JSON Schema whose top level is an object (\"type\": \"object\"), got {found}")
            }
            DefinitionError::InvalidName { why, .. } => format!("its name is not valid: {why}"),
        }
    }
}

impl ToolDefinition {
    /// A builtin tool's definition. Refuses an input schema whose top level is not an object.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Result<Self, DefinitionError> {
        let name = name.into();
        check_name(&name)?;
        check_input_schema(&name, &input_schema)?;
        Ok(ToolDefinition {
            name,
            description: description.into(),
            input_schema: Arc::new(input_schema),
            output_schema: None,
            defer: false,
            always_load: false,
            search_hint: None,
            tags: Vec::new(),
            guidance: None,
            effect: Effect::Other,
            source: ToolSource::Builtin,
        })
    }

    /// A definition whose schemas come from Rust types (schemars).
    pub fn from_types<Params: schemars::JsonSchema, Output: schemars::JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Result<Self, DefinitionError> {
        let input = schema_value(schemars::schema_for!(Params));
        let output = schema_value(schemars::schema_for!(Output));
        Ok(Self::new(name, description, input)?.with_output_schema(output))
    }

    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(Arc::new(schema));
        self
    }

    pub fn deferred(mut self, defer: bool) -> Self {
        self.defer = defer;
        self
    }

    pub fn always_load(mut self, always_load: bool) -> Self {
        self.always_load = always_load;
        self
    }

    pub fn with_search_hint(mut self, hint: impl Into<String>) -> Self {
        self.search_hint = Some(hint.into());
        self
    }

    /// What the tool is about (see [`ToolDefinition::tags`]).
    pub fn with_tags(mut self, tags: Vec<String>) -> Self {
        self.tags = tags;
        self
    }

    /// What a call may change (see [`Effect`]).
    pub fn with_effect(mut self, effect: Effect) -> Self {
        self.effect = effect;
        self
    }

    /// One line of guidance for the system prompt (see [`ToolDefinition::guidance`]).
    pub fn with_guidance(mut self, line: impl Into<String>) -> Self {
        self.guidance = Some(line.into());
        self
    }

    pub fn with_source(mut self, source: ToolSource) -> Self {
        self.source = source;
        self
    }
}

/// A schemars schema as the JSON Schema value a definition holds.
pub(crate) fn schema_value(schema: schemars::Schema) -> Value {
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        // The dialect marker is noise in every signature and declaration.
        object.remove("$schema");
    }
    value
}

fn check_name(name: &str) -> Result<(), DefinitionError> {
    let invalid = |why| Err(DefinitionError::InvalidName { name: name.to_string(), why });
    if name.is_empty() {
        return invalid("it is empty");
    }
    if name.len() > MAX_TOOL_NAME_LEN {
        return invalid("it is longer than 256 bytes");
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return invalid("it contains whitespace or control characters");
    }
    // A permission rule reads `(` and `)` as its specifier and `__*` as a whole server: a
    // rule saved for such a name ("allow always") would mean something else.
    if name.contains(['(', ')', '*']) {
        return invalid("it contains `(`, `)` or `*`, which permission rules read as syntax");
    }
    // Rules about a server (`mcp__srv`) find its tools by this form: a name that starts
    // like an MCP tool's but does not split into a server and a tool could not be covered.
    if name.starts_with(names::MCP_PREFIX) && names::split_mcp_name(name).is_none() {
        return invalid("it starts with `mcp__` but is not `mcp__<server>__<tool>` with both parts non-empty");
    }
    if name.starts_with(names::API_PREFIX) && names::split_source_name(name).is_none() {
        return invalid("it starts with `api__` but is not `api__<source>__<operation>` with both parts non-empty");
    }
    Ok(())
}

fn check_input_schema(name: &str, schema: &Value) -> Result<(), DefinitionError> {
    let found = match schema {
        Value::Object(map) => match map.get("type") {
            Some(Value::String(t)) if t == "object" => return Ok(()),
            Some(other) => format!("\"type\": {other}"),
            None => "a schema without \"type\"".to_string(),
        },
        other => format!("{} instead of a schema object", json_kind(other)),
    };
    Err(DefinitionError::InputNotObject { name: name.to_string(), found })
}

/// How a JSON value is named in a sentence (`a string`, `an array`).
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What a call carries besides its arguments.
#[derive(Clone)]
#[non_exhaustive]
pub struct CallContext {
    pub origin: Origin,
    /// Fires when the caller gives up (the model's call was aborted, or the Exec around a
    /// nested call ended). Long tools stop.
    pub cancel: CancellationToken,
    /// Who answers when the tool's source asks for input during the call (the client of
    /// the session that made it), when that is not the session's own handler.
    pub input: Option<Arc<dyn input::InputHandler>>,
    /// Where the steps the tool reports while it runs go, when someone watches them.
    pub progress: Option<ProgressSink>,
    /// Whether the permission rules keep this call from an MCP server's resources (set by
    /// the funnel; a resource tool that lists every server skips those).
    pub resources_denied: Option<ServerCheck>,
}

/// Answers a question about an MCP server by its name.
pub type ServerCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("origin", &self.origin)
            .field("cancel", &self.cancel)
            .field("input", &self.input.as_ref().map(|_| "a handler"))
            .field("progress", &self.progress.as_ref().map(|_| "a watcher"))
            .field("resources_denied", &self.resources_denied.as_ref().map(|_| "a rule check"))
            .finish()
    }
}

impl CallContext {
    pub fn new(origin: Origin, cancel: CancellationToken) -> Self {
        CallContext { origin, cancel, input: None, progress: None, resources_denied: None }
    }
}

/// An image a tool returned. It reaches the model as an attachment of the result, never
/// the script.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Image {
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    /// The image, base64-encoded.
    #[serde(rename = "bytes")]
    pub base64: String,
}

/// What a tool gave back.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    pub structured: Option<Value>,
    pub text: Option<String>,
    pub images: Vec<Image>,
    /// What happened in the call besides its output, for the call record (never the
    /// script's value): an input request nobody could answer, declined.
    pub note: Option<String>,
}

impl ToolOutput {
    pub fn structured(value: Value) -> Self {
        ToolOutput { structured: Some(value), ..Default::default() }
    }

    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput { text: Some(text.into()), ..Default::default() }
    }

    pub fn empty() -> Self {
        ToolOutput::default()
    }

    /// Adds a text beside a structured value (a script then still gets the value).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    pub fn with_image(mut self, image: Image) -> Self {
        self.images.push(image);
        self
    }

    pub fn with_images(mut self, images: Vec<Image>) -> Self {
        self.images.extend(images);
        self
    }

    /// The value of the output, as a script's `await tools.x(...)` yields it and as a flat
    /// call's result renders it: the structured value when the tool gave one, else its
    /// text, else `null`. No envelope. Images are set aside by the caller first.
    pub fn into_value(self) -> Value {
        match (self.structured, self.text) {
            (Some(value), _) => value,
            (None, Some(text)) => Value::String(text),
            (None, None) => Value::Null,
        }
    }

    /// [`into_value`](Self::into_value) on its way into a script: a string travels as it
    /// is (a string needs no JSON round trip), anything else as JSON text.
    pub(crate) fn into_script_value(self) -> ScriptValue {
        match self.into_value() {
            Value::String(text) => ScriptValue::Text(text),
            other => ScriptValue::Json(other.to_string()),
        }
    }
}

/// A tool's output on its way into a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ScriptValue {
    Json(String),
    Text(String),
}

impl Image {
    /// An image of `mime_type`, given base64-encoded.
    pub fn new(mime_type: impl Into<String>, base64: impl Into<String>) -> Self {
        Image { mime_type: mime_type.into(), base64: base64.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_error_names_its_tool_once() {
        let named = |message: &str, tool: &str| ToolError::execution(message).naming(tool).message;
        assert_eq!(named("`a.txt` does not exist", "read_file"), "read_file: `a.txt` does not exist");
        assert_eq!(
            named("read_file: `path`: 5 is not of type \"string\"", "read_file"),
            "read_file: `path`: 5 is not of type \"string\""
        );
        assert_eq!(named("PreToolUse:write_file hook error: no", "write_file"), "PreToolUse:write_file hook error: no");
        assert_eq!(named("no such entry in tools", "ls"), "ls: no such entry in tools", "`ls` inside `tools` is not the tool");
        assert_eq!(named("mcp__fx__add_more failed", "mcp__fx__add"), "mcp__fx__add: mcp__fx__add_more failed");
    }

    #[test]
    fn progress_is_bounded_and_reads_as_a_step() {
        assert_eq!(ToolProgress::new(f64::NAN, None, None), None);
        let step = ToolProgress::new(3.0, Some(10.0), Some(" indexing ")).unwrap();
        assert_eq!(step.to_string(), "3/10: indexing");
        assert_eq!(ToolProgress::new(40.0, Some(100.0), None).unwrap().to_string(), "40%");
        assert_eq!(ToolProgress::new(2.5, Some(f64::INFINITY), Some("")).unwrap().to_string(), "2.5");
        let long = ToolProgress::new(1.0, None, Some(&"é".repeat(5000))).unwrap();
        assert_eq!(long.message.unwrap().chars().count(), MAX_PROGRESS_MESSAGE_CHARS + 1);
    }

    #[test]
    fn input_schema_must_be_an_object() {
        let err = ToolDefinition::new("t", "", json!({"type": "string"})).unwrap_err();
        assert!(err.to_string().contains("top level is an object"), "{err}");
        assert!(ToolDefinition::new("t", "", json!([1])).is_err());
        assert!(ToolDefinition::new("t", "", json!({"properties": {}})).is_err());
        assert!(ToolDefinition::new("t", "", json!({"type": "object"})).is_ok());
    }

    #[test]
    fn names_are_checked() {
        assert!(ToolDefinition::new("", "", json!({"type": "object"})).is_err());
        assert!(ToolDefinition::new("a b", "", json!({"type": "object"})).is_err());
        assert!(ToolDefinition::new("get-user.profile", "", json!({"type": "object"})).is_ok());
    }

    #[test]
    fn script_value_prefers_structured_then_text_then_null() {
        let both = ToolOutput::structured(json!({"a": 1})).with_text("t");
        assert_eq!(both.into_script_value(), ScriptValue::Json(json!({"a": 1}).to_string()));
        assert_eq!(ToolOutput::structured(json!("s")).into_script_value(), ScriptValue::Text("s".into()));
        assert_eq!(ToolOutput::text("t").into_script_value(), ScriptValue::Text("t".into()));
        assert_eq!(ToolOutput::empty().into_script_value(), ScriptValue::Json("null".into()));
    }
}
