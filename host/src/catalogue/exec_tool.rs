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
pub use crate::sources::tools::names::EXEC as NAME;
use crate::support::vocabulary::ToolError;

/// The arguments of one `Exec` call.
#[derive(Debug, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct ExecParams {
    /// The script: the body of an async function.
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
            // The Rust type's name and doc comment say nothing to a model that the
            // description does not.
            object.remove("title");
            object.remove("description");
        }
        Arc::new(schema)
    });
    SCHEMA.clone()
}

const INTRODUCTION: &str = "\
Runs a JavaScript script that calls tools: several steps in one call. The script is an async \
function body: `await` what you need and `return` a value (you get it as JSON, with what was \
printed).

In the script:
- `tools.<name>(args)` calls a tool: a promise of its structured value, else its text, else \
null. `args` is one plain object; other names take brackets: `tools['a-b.c'](args)`. \
`Promise.all` runs calls concurrently.
- A failed call rejects (catch it to go on); an uncaught error ends the script, keeping what it \
printed.
- console.log/info/warn/error/debug print.
- `store(key, value)` keeps plain data for this conversation's later scripts; `load(key)` reads it.
- No filesystem, imports or eval; fetch reaches allowed hosts only. Timers, URL, \
structuredClone, TextEncoder, atob and TypeScript syntax work.";

const SEARCH_INTRODUCTION: &str = "The catalogue lists names only; for parameters, ask `tools.ToolSearch`:";

const CLOSING: &str = "Example: `(await tools.ToolSearch({ query: \"select:a,b\" })).matches.map(m => m.signature)`";

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
