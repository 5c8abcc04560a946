//! Signatures: JSON Schema rendered as a TypeScript-like call form,
//! `tools.name(args: {...}): Promise<T>`. One renderer serves search results, the Exec
//! description and declaration files. Field descriptions are kept verbatim; whatever the
//! renderer cannot express becomes `unknown`, never an error.

use serde_json::{Map, Value};

/// Nesting rendered before the rest becomes `unknown` (and where `$ref` cycles stop).
const MAX_DEPTH: usize = 24;

/// `tools.name(args: {...}): Promise<T>`; `T` from the output schema, else `unknown`.
pub fn call_form(name: &str, input: &Value, output: Option<&Value>) -> String {
    let args = Renderer::new(input).render(input, 0);
    let result = match output {
        Some(schema) => Renderer::new(schema).render(schema, 0),
        None => "unknown".to_string(),
    };
    format!("{}(args: {args}): Promise<{result}>", access(name))
}

/// The type a schema describes, as TypeScript.
pub fn type_of(schema: &Value) -> String {
    Renderer::new(schema).render(schema, 0)
}

/// `tools.name` for identifiers, `tools["name"]` otherwise.
pub fn access(name: &str) -> String {
    if is_identifier(name) { format!("tools.{name}") } else { format!("tools[{}]", Value::String(name.into())) }
}

pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c == '$' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c == '$' || c.is_ascii_alphanumeric())
}

struct Renderer<'a> {
    root: &'a Value,
}

impl<'a> Renderer<'a> {
    fn new(root: &'a Value) -> Self {
        Renderer { root }
    }

    fn render(&self, schema: &Value, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "unknown".into();
        }
        let object = match schema {
            Value::Bool(true) => return "unknown".into(),
            Value::Bool(false) => return "never".into(),
            Value::Object(object) => object,
            _ => return "unknown".into(),
        };
        if let Some(Value::String(reference)) = object.get("$ref") {
            return match self.resolve(reference) {
                Some(target) => self.render(target, depth + 1),
                None => "unknown".into(),
            };
        }
        if let Some(value) = object.get("const") {
            return literal(value);
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            return union(values.iter().map(literal).collect());
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = object.get(key) {
                return union(options.iter().map(|option| self.render(option, depth + 1)).collect());
            }
        }
        if let Some(Value::Array(parts)) = object.get("allOf") {
            if parts.len() == 1 {
                return self.render(&parts[0], depth + 1);
            }
            return parts.iter().map(|part| self.render(part, depth + 1)).collect::<Vec<_>>().join(" & ");
        }
        match object.get("type") {
            Some(Value::String(kind)) => self.render_kind(kind, object, depth),
            Some(Value::Array(kinds)) => {
                union(kinds.iter().filter_map(Value::as_str).map(|kind| self.render_kind(kind, object, depth)).collect())
            }
            _ if object.contains_key("properties") => self.render_object(object, depth),
            _ => "unknown".into(),
        }
    }

    fn render_kind(&self, kind: &str, object: &Map<String, Value>, depth: usize) -> String {
        match kind {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => match object.get("items") {
                Some(Value::Array(tuple)) => {
                    format!("[{}]", tuple.iter().map(|t| self.render(t, depth + 1)).collect::<Vec<_>>().join(", "))
                }
                Some(items) => {
                    let item = self.render(items, depth + 1);
                    if item.contains(' ') && !item.starts_with('{') { format!("({item})[]") } else { format!("{item}[]") }
                }
                None => "unknown[]".into(),
            },
            "object" => self.render_object(object, depth),
            _ => "unknown".into(),
        }
    }

    fn render_object(&self, object: &Map<String, Value>, depth: usize) -> String {
        let properties = object.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let extra = match object.get("additionalProperties") {
            Some(Value::Bool(false)) | None => None,
            Some(Value::Bool(true)) => Some("unknown".to_string()),
            Some(schema) => Some(self.render(schema, depth + 1)),
        };
        let indent = "  ".repeat(depth + 1);
        let mut lines = Vec::new();
        for (key, schema) in properties.into_iter().flatten() {
            let optional = if required.contains(&key.as_str()) { "" } else { "?" };
            let field = if is_identifier(key) { key.clone() } else { Value::String(key.clone()).to_string() };
            if let Some(description) = schema.get("description").and_then(Value::as_str) {
                lines.push(doc_comment(description, &indent));
            }
            lines.push(format!("{indent}{field}{optional}: {};", self.render(schema, depth + 1)));
        }
        if let Some(extra) = extra {
            lines.push(format!("{indent}[key: string]: {extra};"));
        }
        if lines.is_empty() {
            return "{}".into();
        }
        format!("{{\n{}\n{}}}", lines.join("\n"), "  ".repeat(depth))
    }

    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }
}

fn doc_comment(text: &str, indent: &str) -> String {
    let text = text.replace("*/", "*\\/");
    if !text.contains('\n') {
        return format!("{indent}/** {text} */");
    }
    let body: Vec<String> = text.lines().map(|line| format!("{indent} * {line}").trim_end().to_string()).collect();
    format!("{indent}/**\n{}\n{indent} */", body.join("\n"))
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        _ => "unknown".into(),
    }
}

fn union(mut parts: Vec<String>) -> String {
    parts.dedup();
    match parts.len() {
        0 => "never".into(),
        1 => parts.remove(0),
        _ => parts.join(" | "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_required_optional_and_descriptions() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where.\nSecond line."},
                "limit": {"type": ["integer", "null"]},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["path"]
        });
        let text = call_form("read", &schema, None);
        assert_eq!(
            text,
            "tools.read(args: {\n  /**\n   * Where.\n   * Second line.\n   */\n  path: string;\n  limit?: number | null;\n  mode?: \"a\" | \"b\";\n  tags?: string[];\n}): Promise<unknown>"
        );
    }

    #[test]
    fn names_that_are_not_identifiers_use_brackets() {
        let text = call_form("mcp__srv__get-user.profile", &json!({"type": "object"}), Some(&json!({"type": "object"})));
        assert_eq!(text, "tools[\"mcp__srv__get-user.profile\"](args: {}): Promise<{}>");
    }

    #[test]
    fn references_resolve_and_cycles_stop() {
        let schema = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}
        });
        let text = type_of(&schema);
        assert!(text.contains("next?:"), "{text}");
        assert!(text.contains("unknown"), "{text}");
    }
}
