//! `Exec` as a model sees it: its name, its parameters and its description.
//!
//! The description is a constant. It names the sandbox's surface and shows
//! `tools.ToolSearch`'s own call form, rendered from the schema search validates against
//! (its result cap included: a knob of the search, not of the run), and nothing that
//! depends on the pool or the run: no tool name, no count, no budget, no execution limit. A
//! model's tool list (and the prompt cache behind it) stays byte-identical whatever
//! servers connect or leave; the pool's names reach the model separately.

use std::sync::{Arc, LazyLock};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::catalogue::search;
use crate::sources::tools::ToolError;
pub use crate::sources::tools::names::EXEC as NAME;

/// The arguments of one `Exec` call.
#[derive(Debug, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct ExecParams {
    /// The script: the body of an async JavaScript function. Use `await`, and `return` the
    /// value you want back.
    pub code: String,
}

impl ExecParams {
    /// Reads an `Exec` call's arguments; a missing or blank `code` is a params error, and
    /// no sandbox starts for it.
    pub fn from_args(args: Map<String, Value>) -> Result<ExecParams, ToolError> {
        let params: ExecParams = crate::sources::tools::params::read_params("Exec", args)
            .map_err(|e| ToolError::params(format!("{}; it takes {{ \"code\": \"<script>\" }}", e.message)))?;
        if params.code.trim().is_empty() {
            return Err(ToolError::params("Exec: `code` is empty; there is no script to run"));
        }
        Ok(params)
    }
}

/// `Exec`'s description: the same bytes for every pool.
pub fn description() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!("{INTRODUCTION}\n\n{SEARCH_INTRODUCTION}\n\n{signature}\n\n{CLOSING}", signature = search::search_signature())
    });
    &TEXT
}

/// `Exec`'s input schema: `{ code: string }`.
pub fn input_schema() -> Arc<Value> {
    static SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(|| {
        let mut schema = crate::sources::tools::schema_value(schemars::schema_for!(ExecParams));
        if let Some(object) = schema.as_object_mut() {
            // The Rust type's name says nothing to a model.
            object.remove("title");
        }
        Arc::new(schema)
    });
    SCHEMA.clone()
}

const INTRODUCTION: &str = "\
Runs a JavaScript script that calls tools, so that several steps take one call. The script \
is the body of an async function: `await` what you need and `return` the value you want back \
(you get it as JSON, with whatever the script printed).

In the script:
- `tools.<name>(args)` calls a tool of this session's catalogue and returns a promise of its \
output: its structured value if it has one, else its text, else null. `args` is one plain \
object. Names that are not identifiers take brackets: `tools[\"name-with.dots\"](args)`. Calls \
started together (`Promise.all`) run concurrently.
- A failed call rejects; catch it to go on. An uncaught error ends the script and reports what \
it printed so far.
- `console.log` (and `info`, `warn`, `error`, `debug`) prints.
- `store(key, value)` keeps plain data for this conversation's later scripts; `load(key)` \
reads it back.
- No filesystem, network, imports or `eval`: tools are the only way out. Timers, `URL`, \
`structuredClone`, `TextEncoder` and `atob` work; TypeScript syntax is accepted.";

const SEARCH_INTRODUCTION: &str = "\
The catalogue lists only names. For a tool's parameters, ask `tools.ToolSearch`, in the same \
script if you like:";

const CLOSING: &str = "\
For example: `const { matches } = await tools.ToolSearch({ query: \"select:name_a,name_b\" }); \
console.log(matches.map(m => m.signature).join(\"\\n\"));`";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_description_shows_tool_search_s_own_call_form_and_no_budget() {
        let text = description();
        assert!(text.contains(&search::search_signature()), "{text}");
        assert!(text.contains("tools.ToolSearch(args: {\n  /**"), "{text}");
        assert!(text.contains("query: string;") && text.contains("max_results?: number | null;"), "{text}");
        assert!(text.contains("Promise<{\n  matches: {\n    name: string;"), "{text}");
        let defaults = crate::sandbox::runtime::Limits::default();
        for word in [
            "budget",
            "millisecond",
            "timeout",
            "limit of",
            &defaults.max_calls.to_string(),
            &defaults.max_result_chars.to_string(),
        ] {
            assert!(!text.to_lowercase().contains(word), "the description mentions {word:?}");
        }
    }

    #[test]
    fn blank_code_is_refused_before_any_sandbox() {
        let args = |value: Value| value.as_object().cloned().unwrap();
        assert_eq!(ExecParams::from_args(args(json!({"code": "return 1"}))).unwrap().code, "return 1");
        let error = ExecParams::from_args(args(json!({"code": "  \n"}))).unwrap_err();
        assert!(error.message.contains("`code` is empty"), "{}", error.message);
        let error = ExecParams::from_args(args(json!({"script": "return 1"}))).unwrap_err();
        assert!(error.message.contains("\"code\" is a required property"), "{}", error.message);
        let error = ExecParams::from_args(args(json!({"code": 7}))).unwrap_err();
        assert!(error.message.starts_with("Exec: `code`: 7 is not of type \"string\""), "{}", error.message);
    }
}
