//! The operations of a description, each what one tool needs: a name that is safe in a tool
//! name and unique in its source, what the call takes (path, query, header and cookie
//! parameters by name, and `body`) as one object schema, what a 2xx answer holds, and what
//! the method says it may change.

use std::collections::HashSet;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::document::{Document, SpecError};
use super::refs::{RefError, Resolver};
use crate::sources::tools::Effect;

/// Most operations one source may have.
pub const MAX_OPERATIONS: usize = 10_000;
/// Longest operation name kept in a tool name, in bytes; a longer one is cut and ends in a
/// hash of the whole, so that it stays unique.
pub const MAX_OPERATION_NAME_LEN: usize = 64;
/// Longest description kept for an operation's tool, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1_000;

/// The methods OpenAPI names in a path item, in the order they are read.
const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Where a parameter goes in the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

impl Location {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "path" => Some(Location::Path),
            "query" => Some(Location::Query),
            "header" => Some(Location::Header),
            "cookie" => Some(Location::Cookie),
            _ => None,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

/// One parameter of an operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    /// Its name in the request.
    pub name: String,
    /// Its key in the call's argument object: the name, or `<location>_<name>` when another
    /// parameter of the call already has that key.
    pub key: String,
    pub location: Location,
    pub required: bool,
    /// For a query parameter of `deepObject` style, an object is sent as `name[key]=value`.
    pub deep_object: bool,
}

/// How a request body is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    Json,
    Form,
    Text,
}

/// An operation's request body.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    pub media_type: String,
    pub kind: BodyKind,
    pub required: bool,
}

/// The argument key of the request body.
pub const BODY_KEY: &str = "body";

/// One operation, as its tool calls it.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    /// Unique in its source, safe in a tool name.
    pub name: String,
    pub method: http::Method,
    /// The path template (`/repos/{owner}/{repo}`).
    pub path: String,
    pub description: String,
    pub tags: Vec<String>,
    pub parameters: Vec<Parameter>,
    pub body: Option<Body>,
    /// The call's argument object.
    pub input_schema: Value,
    /// What a 2xx answer's JSON holds, when the description says.
    pub output_schema: Option<Value>,
    /// The media type that answer comes in, asked for with `Accept` (an API may answer in
    /// another first, such as GitHub's `application/vnd.github.object`).
    pub accept: Option<String>,
    pub effect: Effect,
}

/// An operation that cannot be offered, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedOperation {
    /// `GET /path` and its operationId, if any.
    pub operation: String,
    pub reason: String,
}

/// Every operation of `document`, in the order it lists them, and those it cannot offer.
/// More than [`MAX_OPERATIONS`] is an error for the whole source.
pub fn operations(document: &Document) -> Result<(Vec<Operation>, Vec<SkippedOperation>), SpecError> {
    let resolver = Resolver::new(&document.root, document.revision);
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    let mut names = HashSet::new();
    let mut count = 0;
    for (path, item) in document.paths() {
        let item = match resolver.follow(item) {
            Ok(item) => item,
            Err(error) => {
                skipped.push(SkippedOperation { operation: path.clone(), reason: error.to_string() });
                continue;
            }
        };
        let shared = item.get("parameters").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for method in METHODS {
            let Some(operation) = item.get(*method).filter(|o| o.is_object()) else { continue };
            count += 1;
            if count > MAX_OPERATIONS {
                let total = document.paths().map(|(_, item)| METHODS.iter().filter(|m| item.get(**m).is_some()).count()).sum();
                return Err(SpecError::TooManyOperations { file: document.origin.clone(), count: total, limit: MAX_OPERATIONS });
            }
            let id = operation.get("operationId").and_then(Value::as_str);
            let label = match id {
                Some(id) => format!("{} {path} ({})", method.to_uppercase(), printable(id)),
                None => format!("{} {path}", method.to_uppercase()),
            };
            match read_operation(&resolver, method, path, operation, shared) {
                Ok(mut read) => {
                    read.name = unique(base_name(id, method, path), &mut names);
                    found.push(read);
                }
                Err(reason) => skipped.push(SkippedOperation { operation: label, reason }),
            }
        }
    }
    Ok((found, skipped))
}

fn read_operation(
    resolver: &Resolver<'_>,
    method: &str,
    path: &str,
    operation: &Value,
    shared: &[Value],
) -> Result<Operation, String> {
    let refused = |error: RefError| error.to_string();
    // The operation's own parameters override the path item's of the same name and place.
    let mut declared: Vec<&Value> = Vec::new();
    let own = operation.get("parameters").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for parameter in own.iter().chain(shared) {
        let parameter = resolver.follow(parameter).map_err(refused)?;
        let same = |other: &&Value| other.get("name") == parameter.get("name") && other.get("in") == parameter.get("in");
        if !declared.iter().any(same) {
            declared.push(parameter);
        }
    }
    // Path parameters first: they keep their names when another place has the same one.
    declared.sort_by_key(|parameter| parameter.get("in").and_then(Value::as_str) != Some("path"));
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut parameters = Vec::new();
    for parameter in declared {
        let name = parameter.get("name").and_then(Value::as_str).ok_or("a parameter has no name")?;
        let location = parameter.get("in").and_then(Value::as_str).and_then(Location::parse).ok_or_else(|| {
            format!("parameter `{}` is in no place OpenAPI names (path, query, header, cookie)", printable(name))
        })?;
        // The client sets these itself.
        if location == Location::Header
            && ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str())
        {
            continue;
        }
        let key = match properties.contains_key(name) || name == BODY_KEY {
            true => format!("{}_{name}", location.word()),
            false => name.to_string(),
        };
        let is_required = location == Location::Path || parameter.get("required").and_then(Value::as_bool).unwrap_or(false);
        let mut schema = match parameter.get("schema") {
            Some(schema) => resolver.schema(schema).map_err(refused)?,
            None => json!({}),
        };
        if let (Some(described), Value::Object(schema)) = (parameter.get("description").and_then(Value::as_str), &mut schema) {
            schema.entry("description").or_insert_with(|| Value::String(shortened(described)));
        }
        if is_required {
            required.push(Value::String(key.clone()));
        }
        properties.insert(key.clone(), schema);
        let deep_object = parameter.get("style").and_then(Value::as_str) == Some("deepObject");
        parameters.push(Parameter { name: name.to_string(), key, location, required: is_required, deep_object });
    }
    for placeholder in placeholders(path) {
        if !parameters.iter().any(|p| p.location == Location::Path && p.name == placeholder) {
            return Err(format!("its path names `{{{}}}`, which no path parameter describes", printable(placeholder)));
        }
    }
    let body = match operation.get("requestBody") {
        Some(body) => {
            let body = resolver.follow(body).map_err(refused)?;
            let (media_type, kind, schema) = request_content(resolver, body)?;
            let is_required = body.get("required").and_then(Value::as_bool).unwrap_or(false);
            if is_required {
                required.push(BODY_KEY.into());
            }
            properties.insert(BODY_KEY.into(), schema);
            Some(Body { media_type, kind, required: is_required })
        }
        None => None,
    };
    let mut input_schema = json!({ "type": "object", "properties": properties, "additionalProperties": false });
    if !required.is_empty() {
        input_schema["required"] = Value::Array(required);
    }
    let summary = operation.get("summary").and_then(Value::as_str).unwrap_or_default().trim();
    let details = operation.get("description").and_then(Value::as_str).unwrap_or_default().trim();
    let summary = summary.trim_end_matches('.');
    let tags =
        operation.get("tags").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string);
    let method_upper = method.to_uppercase();
    let (accept, output_schema) = match response_schema(resolver, operation).map_err(refused)? {
        Some((media, schema)) => (Some(media), Some(schema)),
        None => (None, None),
    };
    let effect = match method {
        "get" | "head" | "options" => Effect::ReadOnly,
        _ => Effect::Other,
    };
    Ok(Operation {
        name: String::new(),
        method: http::Method::from_bytes(method_upper.as_bytes()).map_err(|e| e.to_string())?,
        path: path.to_string(),
        // What the operation does first (search reads a description's first sentence as
        // what a tool is for), then its method and path, then the details.
        description: shortened(
            &[summary, &format!("{method_upper} {path}"), details]
                .into_iter()
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join(". "),
        ),
        tags: tags.collect(),
        parameters,
        body,
        input_schema,
        output_schema,
        accept,
        effect,
    })
}

/// The body's media type, how it is sent, and its schema: JSON first, then a form, then
/// text.
fn request_content(resolver: &Resolver<'_>, body: &Value) -> Result<(String, BodyKind, Value), String> {
    let content = body.get("content").and_then(Value::as_object).ok_or("its request body has no `content`")?;
    let kind_of = |media: &str| {
        let media = media.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        if media == "application/json" || media.ends_with("+json") || media == "*/*" {
            Some(BodyKind::Json)
        } else if media == "application/x-www-form-urlencoded" {
            Some(BodyKind::Form)
        } else if media.starts_with("text/") || media == "application/octet-stream" {
            // Bytes a script can give are a string's.
            Some(BodyKind::Text)
        } else {
            None
        }
    };
    let chosen = [BodyKind::Json, BodyKind::Form, BodyKind::Text]
        .into_iter()
        .find_map(|wanted| content.iter().find(|(media, _)| kind_of(media) == Some(wanted)));
    let Some((media_type, media)) = chosen else {
        let offered: Vec<&str> = content.keys().map(String::as_str).collect();
        return Err(format!(
            "its request body is sent only as {}, which exec-host does not send (it sends JSON, forms, text and octet streams)",
            offered.join(", ")
        ));
    };
    let kind = kind_of(media_type).unwrap_or(BodyKind::Json);
    let schema = match media.get("schema") {
        Some(schema) => resolver.schema(schema).map_err(|e| e.to_string())?,
        None if kind == BodyKind::Text => json!({ "type": "string" }),
        None => json!({}),
    };
    let media_type = match media_type.as_str() {
        "*/*" => "application/json".to_string(),
        other => other.to_string(),
    };
    Ok((media_type, kind, schema))
}

/// The media type and schema of the first 2xx answer that is JSON.
fn response_schema(resolver: &Resolver<'_>, operation: &Value) -> Result<Option<(String, Value)>, RefError> {
    let Some(responses) = operation.get("responses").and_then(Value::as_object) else { return Ok(None) };
    let mut codes: Vec<&String> = responses.keys().filter(|code| code.starts_with('2')).collect();
    codes.sort();
    for code in codes {
        let response = resolver.follow(&responses[code])?;
        let Some(content) = response.get("content").and_then(Value::as_object) else { continue };
        let json = content.iter().find(|(media, _)| {
            let media = media.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
            media == "application/json" || media.ends_with("+json")
        });
        if let Some((media, schema)) = json.and_then(|(media, content)| Some((media, content.get("schema")?))) {
            return Ok(Some((media.clone(), resolver.schema(schema)?)));
        }
    }
    Ok(None)
}

/// The `{name}` placeholders of a path template.
pub fn placeholders(path: &str) -> impl Iterator<Item = &str> {
    path.split('{').skip(1).filter_map(|part| part.split_once('}').map(|(name, _)| name))
}

/// An operation's name before it is made unique: its operationId made safe, or its method
/// and path.
fn base_name(id: Option<&str>, method: &str, path: &str) -> String {
    let safe = |text: &str| {
        let mut out = String::new();
        for c in text.chars() {
            match c.is_ascii_alphanumeric() {
                true => out.push(c),
                false if !out.ends_with('_') => out.push('_'),
                false => {}
            }
        }
        out.trim_matches('_').to_string()
    };
    let name = match id.map(safe).filter(|name| !name.is_empty()) {
        Some(name) => name,
        None => safe(&format!("{method} {path}")),
    };
    if name.len() <= MAX_OPERATION_NAME_LEN {
        return name;
    }
    let digest = Sha256::digest(name.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{}_{hash}", &name[..MAX_OPERATION_NAME_LEN - 9])
}

/// `name`, or `name_2`, `name_3`, ... when an earlier operation of the description took it.
fn unique(name: String, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while !taken.insert(candidate.clone()) {
        candidate = format!("{name}_{n}");
        n += 1;
    }
    candidate
}

/// Text from a description shown in a sentence: one line, control characters (terminal
/// escapes) made visible, bounded.
fn printable(text: &str) -> String {
    crate::support::text::one_line(text, 120)
}

/// A description bounded to [`MAX_DESCRIPTION_CHARS`].
fn shortened(text: &str) -> String {
    crate::support::text::cut_chars(text, MAX_DESCRIPTION_CHARS)
}

#[cfg(test)]
mod tests;
