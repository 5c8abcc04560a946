//! Input a tool's source asks for in the middle of a call (MCP elicitation: a form of a
//! few fields, or a URL to visit), and who answers it: the [`InputHandler`] of the client
//! whose call it is (`serve` passes it on to its MCP client), else the one the embedder gives
//! the session (the terminal in `exec-host run`). A session with neither does not declare
//! elicitation to its servers, and declines a server that asks anyway.
//!
//! What a server sends is bounded before anyone sees it ([`MAX_INPUT_FIELDS`],
//! [`MAX_INPUT_SCHEMA_BYTES`]), and an accepted form gets the schema's defaults for the
//! fields the answer leaves out (SEP-1034). The wait for the answer is part of the nested
//! call (the script's budget does not run while it waits; the nested-wait cap and an abort
//! end it), and the permission funnel has already decided the call itself.

use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// Fields of one form shown at most; a larger form is declined unseen.
pub const MAX_INPUT_FIELDS: usize = 64;
/// Bytes of one form's schema (as JSON) accepted; a larger one is declined unseen.
pub const MAX_INPUT_SCHEMA_BYTES: usize = 64 * 1024;

/// What a server asks for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct InputRequest {
    /// The server that asks.
    pub server: String,
    /// Its message to the person.
    pub message: String,
    pub kind: InputKind,
}

impl InputRequest {
    /// A form of `server`, its fields read from `schema` (bounded: see [`form_fields`]).
    pub fn form(server: &str, message: String, schema: Value) -> Result<Self, FormError> {
        let fields = form_fields(&schema)?;
        Ok(InputRequest { server: server.to_string(), message, kind: InputKind::Form { fields, schema } })
    }

    /// A page `server` sends the person to.
    pub fn url(server: &str, message: String, url: String) -> Self {
        InputRequest { server: server.to_string(), message, kind: InputKind::Url(url) }
    }

    /// The fields of a form (none for a URL).
    pub fn fields(&self) -> &[InputField] {
        match &self.kind {
            InputKind::Form { fields, .. } => fields,
            InputKind::Url(_) => &[],
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum InputKind {
    /// A form: its fields, in the schema's order, and the schema as the server sent it (for
    /// a handler that passes the request on, to another MCP client).
    Form { fields: Vec<InputField>, schema: Value },
    /// A page the person is sent to, and comes back from (the answer carries nothing).
    Url(String),
}

/// One field of a form.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct InputField {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub kind: FieldKind,
    pub required: bool,
    /// The schema's default, of the field's kind.
    pub default: Option<Value>,
    /// The values allowed, for a choice.
    pub choices: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldKind {
    Text,
    Integer,
    Number,
    Boolean,
}

/// The person's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum InputAnswer {
    /// The form's values (a URL request's is empty).
    Accept(Map<String, Value>),
    /// Not given; the server may go on without it.
    Decline,
    /// The operation should stop.
    Cancel,
}

/// Answers servers' input requests for a session.
pub trait InputHandler: Send + Sync {
    fn answer(&self, request: InputRequest) -> BoxFuture<'static, InputAnswer>;
}

/// Accepts every form whose required fields all have defaults, with its defaults, and
/// declines the rest (and every URL): for runs nobody watches (`run --accept-input-defaults`).
pub struct AcceptDefaults;

impl InputHandler for AcceptDefaults {
    fn answer(&self, request: InputRequest) -> BoxFuture<'static, InputAnswer> {
        let answer = match &request.kind {
            InputKind::Form { fields, .. } if fields.iter().all(|field| !field.required || field.default.is_some()) => {
                InputAnswer::Accept(Map::new())
            }
            _ => InputAnswer::Decline,
        };
        Box::pin(std::future::ready(answer))
    }
}

/// Why a server's form cannot be shown to a person.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormError {
    #[error("its form's schema is larger than {MAX_INPUT_SCHEMA_BYTES} bytes")]
    SchemaTooLarge,
    #[error("its form has no `properties`")]
    NoProperties,
    #[error("its form has more than {MAX_INPUT_FIELDS} fields")]
    TooManyFields,
    /// A field of another type than text, integer, number or boolean.
    #[error("its field `{field}` is of a type a form cannot hold ({kind:?})")]
    FieldType { field: String, kind: Option<String> },
}

/// The fields of a form schema (`{"type": "object", "properties": {...}, "required": [...]}`),
/// or why it cannot be shown.
pub fn form_fields(schema: &Value) -> Result<Vec<InputField>, FormError> {
    let size = serde_json::to_vec(schema).map(|bytes| bytes.len()).unwrap_or(usize::MAX);
    if size > MAX_INPUT_SCHEMA_BYTES {
        return Err(FormError::SchemaTooLarge);
    }
    let properties = schema.get("properties").and_then(Value::as_object).ok_or(FormError::NoProperties)?;
    if properties.len() > MAX_INPUT_FIELDS {
        return Err(FormError::TooManyFields);
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_string);
            let choices: Vec<String> = property
                .get("enum")
                .or_else(|| property.get("oneOf"))
                .and_then(Value::as_array)
                .map(|values| {
                    values
                        .iter()
                        .filter_map(|value| value.as_str().or_else(|| value.get("const").and_then(Value::as_str)))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let kind = match property.get("type").and_then(Value::as_str) {
                Some("string") => FieldKind::Text,
                Some("integer") => FieldKind::Integer,
                Some("number") => FieldKind::Number,
                Some("boolean") => FieldKind::Boolean,
                other => {
                    let kind = other.map(|kind| crate::support::text::one_line(kind, 40));
                    return Err(FormError::FieldType { field: crate::support::text::one_line(name, 80), kind });
                }
            };
            let default = property.get("default").filter(|value| of_kind(value, kind)).cloned();
            Ok(InputField {
                name: name.clone(),
                title: text("title"),
                description: text("description"),
                kind,
                required: required.contains(&name.as_str()),
                default,
                choices,
            })
        })
        .collect()
}

/// Whether `value` is a value of a field of `kind`.
pub fn of_kind(value: &Value, kind: FieldKind) -> bool {
    match kind {
        FieldKind::Text => value.is_string(),
        FieldKind::Integer => value.is_i64() || value.is_u64(),
        FieldKind::Number => value.is_number(),
        FieldKind::Boolean => value.is_boolean(),
    }
}

/// `content` with each field it leaves out that has a default set to it (SEP-1034).
pub fn with_defaults(fields: &[InputField], mut content: Map<String, Value>) -> Map<String, Value> {
    for field in fields {
        if let Some(default) = &field.default
            && !content.contains_key(&field.name)
        {
            content.insert(field.name.clone(), default.clone());
        }
    }
    content
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_is_read_within_its_bounds_and_an_answer_gets_its_defaults() {
        let schema = json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": "not a number"},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean"}}});
        let fields = form_fields(&schema).unwrap();
        assert_eq!(fields.len(), 5);
        let score = fields.iter().find(|field| field.name == "score").unwrap();
        assert_eq!(score.default, None, "a default of the wrong kind is not one");
        let status = fields.iter().find(|field| field.name == "status").unwrap();
        assert_eq!(status.choices, ["active", "inactive"]);
        let answer = with_defaults(&fields, Map::from_iter([("age".to_string(), json!(41))]));
        assert_eq!(Value::Object(answer), json!({"name": "John Doe", "age": 41, "status": "active"}));

        let many: Map<String, Value> = (0..=MAX_INPUT_FIELDS).map(|i| (format!("f{i}"), json!({"type": "string"}))).collect();
        assert!(
            form_fields(&json!({"type": "object", "properties": many})).unwrap_err().to_string().contains("more than 64 fields")
        );
        let huge =
            json!({"type": "object", "properties": {"a": {"type": "string", "description": "x".repeat(MAX_INPUT_SCHEMA_BYTES)}}});
        assert_eq!(form_fields(&huge).unwrap_err(), FormError::SchemaTooLarge);
        let nested = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}});
        assert!(form_fields(&nested).unwrap_err().to_string().contains("cannot hold"));
    }
}
