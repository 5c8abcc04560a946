//! What a package opens a session from: options as JSON (the keys of the Python package's
//! `Session.open`, times in seconds), read strictly before anything starts, and its tools'
//! definitions.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use exec_host::mcp::McpConfig;
use exec_host::mcp::input::InputHandler;
use exec_host::settings::{Layer, PermissionMode};
use exec_host::state::StorePlaces;
use exec_host::{Approver, Effect, Limits, Session, Tool, ToolDefinition, error_sentence};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{Embedded, Fault, shared_sandbox};

/// The options a session is opened with, besides its callbacks.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Options {
    workspace: Option<PathBuf>,
    /// A configuration file in the `mcpServers` format, or its contents.
    mcp_servers: Option<McpServers>,
    /// HTTP APIs described by OpenAPI, by name, each entry as `apis` in a configuration file
    /// has it (docs/http-apis.md); beside any in `mcp_servers`.
    apis: Option<Map<String, Value>>,
    /// A settings layer that outranks every settings file; the rules and the Bash switch
    /// below are added to it.
    settings: Option<Value>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    /// Offers `Bash` (true) or keeps it off (false) whatever the settings files say.
    bash: Option<bool>,
    #[serde(default)]
    settings_files: Vec<PathBuf>,
    permission_mode: Option<String>,
    limits: Option<GivenLimits>,
    /// A folder or `redis://…`: Execs may park there.
    state_store: Option<String>,
    state_key_file: Option<PathBuf>,
    conversation: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum McpServers {
    File(PathBuf),
    Config(Value),
}

/// The limits given, times in seconds; the others stay the library's defaults.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct GivenLimits {
    budget: Option<f64>,
    max_calls: Option<u32>,
    max_log_chars: Option<usize>,
    max_result_chars: Option<usize>,
    max_images: Option<usize>,
    max_memory_bytes: Option<u64>,
    max_nested_wait: Option<f64>,
    max_argument_bytes: Option<usize>,
}

impl GivenLimits {
    fn limits(self) -> Result<Limits, String> {
        let seconds = |what: &str, value: f64| match value.is_finite() && value > 0.0 {
            true => Ok(Duration::from_secs_f64(value)),
            false => Err(format!("limits.{what} must be a positive number of seconds, not {value}")),
        };
        let mut limits = Limits::default();
        if let Some(budget) = self.budget {
            limits = limits.with_budget(seconds("budget", budget)?);
        }
        if let Some(wait) = self.max_nested_wait {
            limits = limits.with_max_nested_wait(Some(seconds("max_nested_wait", wait)?));
        }
        let defaults = Limits::default();
        limits = limits
            .with_max_calls(self.max_calls.unwrap_or(defaults.max_calls))
            .with_max_log_chars(self.max_log_chars.unwrap_or(defaults.max_log_chars))
            .with_max_result_chars(self.max_result_chars.unwrap_or(defaults.max_result_chars))
            .with_max_images(self.max_images.unwrap_or(defaults.max_images))
            .with_max_memory_bytes(self.max_memory_bytes.unwrap_or(defaults.max_memory_bytes))
            .with_max_argument_bytes(self.max_argument_bytes.unwrap_or(defaults.max_argument_bytes));
        limits.check().map_err(|e| format!("limits: {}", error_sentence(&e)))?;
        Ok(limits)
    }
}

/// The settings layer a session is given: `settings`, with the rules of `allow`, `deny` and
/// `ask` added to its own, and `enableBash` set when `bash` is given; None when all are empty.
fn settings_layer(
    settings: Option<Value>,
    allow: Vec<String>,
    deny: Vec<String>,
    ask: Vec<String>,
    bash: Option<bool>,
) -> Result<Option<Value>, String> {
    let mut layer = match settings {
        None => Map::new(),
        Some(Value::Object(layer)) => layer,
        Some(_) => return Err("a settings layer is an object".into()),
    };
    if let Some(bash) = bash {
        layer.insert("enableBash".into(), Value::Bool(bash));
    }
    let mut permissions = match layer.remove("permissions") {
        None => Map::new(),
        Some(Value::Object(permissions)) => permissions,
        Some(_) => return Err("`permissions` is an object".into()),
    };
    for (key, rules) in [("allow", allow), ("deny", deny), ("ask", ask)] {
        if rules.is_empty() {
            continue;
        }
        let listed = permissions.entry(key).or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(listed) = listed else { return Err(format!("`permissions.{key}` is a list")) };
        listed.extend(rules.into_iter().map(Value::String));
    }
    if !permissions.is_empty() {
        layer.insert("permissions".into(), Value::Object(permissions));
    }
    Ok((!layer.is_empty()).then_some(Value::Object(layer)))
}

/// A session's options, read and checked: [`Opening::open`] starts it.
pub struct Opening {
    workspace: Option<PathBuf>,
    settings: Option<Layer>,
    settings_files: Vec<PathBuf>,
    mode: Option<PermissionMode>,
    limits: Option<Limits>,
    mcp: Option<McpConfig>,
    places: Option<StorePlaces>,
    conversation: Option<String>,
}

impl Opening {
    /// Reads `options` (an object; unknown keys are refused), before anything starts.
    pub fn new(options: Value) -> Result<Opening, Fault> {
        let invalid = |what: &str, why: String| Fault::Invalid(format!("{what}: {why}"));
        let options: Options = serde_json::from_value(options).map_err(|e| invalid("the options", e.to_string()))?;
        let layer = settings_layer(options.settings, options.allow, options.deny, options.ask, options.bash)
            .map_err(|why| invalid("the settings", why))?;
        let settings = layer.map(Layer::from_value).transpose().map_err(|e| invalid("the settings", error_sentence(&e)))?;
        let mode = options
            .permission_mode
            .as_deref()
            .map(PermissionMode::parse)
            .transpose()
            .map_err(|e| Fault::Invalid(error_sentence(&e)))?;
        let limits = options.limits.map(GivenLimits::limits).transpose().map_err(Fault::Invalid)?;
        let invalid = |e: exec_host::mcp::ConfigError| Fault::Invalid(error_sentence(&e));
        let mut configs = Vec::new();
        match options.mcp_servers {
            None => {}
            Some(McpServers::File(file)) => configs.push((file.clone(), McpConfig::load(&file).map_err(invalid)?)),
            Some(McpServers::Config(config)) => {
                let place = PathBuf::from("mcp_servers");
                configs.push((place.clone(), McpConfig::parse(&config.to_string(), &place).map_err(invalid)?));
            }
        }
        if let Some(apis) = options.apis {
            let place = PathBuf::from("apis");
            let text = serde_json::json!({ "apis": apis }).to_string();
            configs.push((place.clone(), McpConfig::parse(&text, &place).map_err(invalid)?));
        }
        let mcp = match configs.is_empty() {
            true => None,
            false => Some(McpConfig::merge(configs).map_err(invalid)?),
        };
        let places = options.state_store.map(|location| StorePlaces::new(Some(location), options.state_key_file));
        Ok(Opening {
            workspace: options.workspace,
            settings,
            settings_files: options.settings_files,
            mode,
            limits,
            mcp,
            places,
            conversation: options.conversation,
        })
    }

    /// Opens the session with `tools`, the approver and the input handler, on the sandbox
    /// this process shares among sessions with the same workspace cache.
    pub async fn open(
        self,
        tools: Vec<Arc<dyn Tool>>,
        approver: Option<Arc<dyn Approver>>,
        input: Option<Arc<dyn InputHandler>>,
    ) -> Result<Embedded, Fault> {
        let sandbox = shared_sandbox(self.workspace.as_deref()).await.map_err(Fault::session)?;
        let mut builder = Session::builder().sandbox(sandbox).tools(tools).settings_files(self.settings_files);
        if let Some(layer) = self.settings {
            builder = builder.managed_settings(layer);
        }
        if let Some(places) = &self.places {
            builder = builder.private_places(places.private_places());
            builder = builder.state_store(places.open(self.workspace.as_deref()).await.map_err(Fault::session)?);
        }
        if let Some(folder) = self.workspace {
            builder = builder.workspace(folder);
        }
        if let Some(mode) = self.mode {
            builder = builder.permission_mode(mode);
        }
        if let Some(limits) = self.limits {
            builder = builder.limits(limits);
        }
        if let Some(mcp) = self.mcp {
            builder = builder.mcp_servers(mcp);
        }
        if let Some(approver) = approver {
            builder = builder.approver(approver);
        }
        if let Some(input) = input {
            builder = builder.mcp_input(input);
        }
        if let Some(conversation) = self.conversation {
            builder = builder.conversation(conversation);
        }
        Ok(Embedded { session: builder.build().await.map_err(Fault::session)? })
    }
}

/// The definition of a package's tool: behind `Exec` (a script reaches it, a model sees it
/// through search), read-only or not, with its output schema when it has one.
pub fn tool_definition(
    name: &str,
    description: String,
    schema: Value,
    output_schema: Option<Value>,
    read_only: bool,
) -> Result<ToolDefinition, Fault> {
    let definition = ToolDefinition::new(name, description, schema)
        .map_err(|e| Fault::Invalid(format!("`{name}` cannot be a tool: {}", error_sentence(&e))))?
        .deferred(true)
        .with_effect(if read_only { Effect::ReadOnly } else { Effect::Other });
    Ok(match output_schema {
        Some(output) => definition.with_output_schema(output),
        None => definition,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn rules_and_bash_join_the_settings_given() {
        let settings = json!({ "permissions": { "allow": ["read_file"] }, "model": "x" });
        let layer = settings_layer(Some(settings), vec!["add".into()], vec!["Bash(rm *)".into()], vec![], Some(false));
        assert_eq!(
            layer,
            Ok(Some(json!({
                "model": "x",
                "enableBash": false,
                "permissions": { "allow": ["read_file", "add"], "deny": ["Bash(rm *)"] },
            })))
        );
        assert_eq!(settings_layer(None, vec![], vec![], vec![], None), Ok(None));
        assert!(settings_layer(Some(json!([])), vec![], vec![], vec![], None).is_err());
        assert!(settings_layer(Some(json!({ "permissions": { "deny": "x" } })), vec![], vec!["y".into()], vec![], None).is_err());
    }

    #[test]
    fn unknown_options_and_bad_limits_are_refused_before_anything_starts() {
        let refused = |options: Value| match Opening::new(options) {
            Err(Fault::Invalid(message)) => message,
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("taken"),
        };
        assert!(refused(json!({ "workspce": "/x" })).contains("unknown field `workspce`"));
        assert!(refused(json!({ "limits": { "budget": -1.0 } })).contains("positive number of seconds"));
        assert!(refused(json!({ "permission_mode": "yolo" })).contains("yolo"));
    }
}
