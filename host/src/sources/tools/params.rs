//! Reading a tool's typed arguments, and saying in JSON Schema's words what is wrong with
//! arguments that do not fit.
//!
//! Arguments are decoded with serde; only when that fails is the tool's input schema (the
//! one its declaration carries, from the same type) compiled and checked, so a call that
//! decodes pays nothing for the better message. The script and the model see the schema's
//! terms (`-1 is less than the minimum of 0`), never the decoder's (`expected usize`).

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::support::vocabulary::ToolError;

/// Schema violations named in one message; the rest are counted.
const MAX_VIOLATIONS: usize = 3;

/// Characters of one violation's text kept: it quotes the offending value, which may be huge.
const MAX_VIOLATION_CHARS: usize = 300;

/// Reads `tool`'s arguments as `P`; a mismatch is a params error naming each field at fault
/// and what its schema asks for.
pub(crate) fn read_params<P: DeserializeOwned + JsonSchema>(tool: &str, args: Map<String, Value>) -> Result<P, ToolError> {
    let args = Value::Object(args);
    match P::deserialize(&args) {
        Ok(params) => Ok(params),
        Err(_) => {
            let why = schema_violations::<P>(&args).unwrap_or_else(|| decoder_message::<P>(args));
            Err(ToolError::params(format!("{tool}: {why}")))
        }
    }
}

/// What the schema of `P` says is wrong with `args`; `None` when the schema accepts them
/// (the decoder refused something the schema cannot express).
fn schema_violations<P: JsonSchema>(args: &Value) -> Option<String> {
    let schema = schemars::schema_for!(P).to_value();
    let validator = jsonschema::validator_for(&schema).ok()?;
    let mut violations = validator.iter_errors(args).peekable();
    violations.peek()?;
    let mut texts = Vec::new();
    let mut more = 0;
    for violation in violations {
        if texts.len() == MAX_VIOLATIONS {
            more += 1;
            continue;
        }
        let text = cut(&violation.to_string());
        let field = field_of(violation.instance_path().as_str());
        texts.push(if field.is_empty() { text } else { format!("`{field}`: {text}") });
    }
    let mut message = texts.join("; ");
    if more > 0 {
        message += &format!("; and {more} more");
    }
    Some(message)
}

/// The decoder's own message, for what the schema does not catch, with the field it is about.
fn decoder_message<P: DeserializeOwned>(args: Value) -> String {
    match serde_path_to_error::deserialize::<_, P>(args) {
        Ok(_) => "the arguments do not decode".to_string(),
        Err(error) => {
            let field = error.path().to_string();
            match field.as_str() {
                "." => error.into_inner().to_string(),
                _ => format!("`{field}`: {}", error.into_inner()),
            }
        }
    }
}

/// A JSON Pointer into the arguments as a field path: `/items/0/name` is `items[0].name`.
fn field_of(pointer: &str) -> String {
    let mut field = String::new();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            field += &format!("[{part}]");
        } else {
            if !field.is_empty() {
                field.push('.');
            }
            field += &part;
        }
    }
    field
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_VIOLATION_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
