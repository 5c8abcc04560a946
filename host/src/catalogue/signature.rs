//! Signatures: JSON Schema rendered as a TypeScript-like call form,
//! `tools.name(args: {...}): Promise<T>`. One renderer serves search results, the Exec
//! description and declaration files, for inputs and outputs alike.
//!
//! It reads JSON Schema 2020-12 (and the older `definitions`): `$ref` into the same
//! document, `anyOf`/`oneOf`/`allOf`, `enum`/`const`, arrays and tuples (`items`,
//! `prefixItems`), nested objects with required and optional fields,
//! `additionalProperties`/`patternProperties` as index signatures, `type` lists and
//! OpenAPI's `nullable`. Field descriptions are kept verbatim, on as many lines as they
//! have. Whatever it cannot express becomes `unknown`, never an error.

use std::cell::{Cell, RefCell};

use serde_json::{Map, Value};

/// Nesting rendered before the rest becomes `unknown` (a schema nested deeper than anyone
/// writes by hand must not exhaust the stack).
const MAX_NESTING: usize = 32;

/// Text (descriptions, names, literals) one rendering writes at most, far above any real
/// tool's schema. Past it, the rest renders as `unknown` and an object's remaining fields
/// are left out, with a comment saying so.
const MAX_TEXT_BYTES: usize = 128 * 1024;

/// Schema nodes one rendering visits at most. A schema is data from a server: `$ref`s that
/// fan out (a definition used twice by a definition used twice, ...) would otherwise
/// expand exponentially. Past this, the rest renders as `unknown`.
const MAX_NODES: usize = 20_000;

/// What a call form says a tool resolves to.
#[derive(Clone, Copy, Debug)]
pub enum Returns<'a> {
    /// The tool's output schema.
    Declared(&'a Value),
    /// A schema of what the tool was seen to answer: rendered `T /* observed */`.
    Observed(&'a Value),
    /// `unknown`.
    Unknown,
}

impl<'a> Returns<'a> {
    /// The declared schema when there is one, else the observed one, else `unknown`.
    pub fn of(declared: Option<&'a Value>, observed: Option<&'a Value>) -> Self {
        match (declared, observed) {
            (Some(schema), _) => Returns::Declared(schema),
            (None, Some(schema)) => Returns::Observed(schema),
            (None, None) => Returns::Unknown,
        }
    }
}

/// `tools.name(args: {...}): Promise<T>`; `T` from the output schema, else `unknown`.
pub fn call_form(name: &str, input: &Value, output: Option<&Value>) -> String {
    call_form_returning(name, input, Returns::of(output, None))
}

/// [`call_form`] with the result type said by `returns`.
pub fn call_form_returning(name: &str, input: &Value, returns: Returns) -> String {
    format!("{}{}", access(name), parameters_and_result(input, returns, 0))
}

/// The same call form as a member of an object type (`name(args: ...): Promise<T>;`),
/// indented by `depth` levels: what a `.d.ts` file declares inside `tools`.
pub fn member(name: &str, input: &Value, output: Option<&Value>, depth: usize) -> String {
    member_returning(name, input, Returns::of(output, None), depth)
}

/// [`member`] with the result type said by `returns`.
pub fn member_returning(name: &str, input: &Value, returns: Returns, depth: usize) -> String {
    format!("{}{}{};", "  ".repeat(depth), property_key(name), parameters_and_result(input, returns, depth))
}

/// The type a schema describes, as TypeScript.
pub fn type_of(schema: &Value) -> String {
    Renderer::new(schema).render(schema, 0)
}

/// A documentation comment for `text`, verbatim, indented by `depth` levels.
pub fn doc_comment(text: &str, depth: usize) -> String {
    let indent = "  ".repeat(depth);
    let text = text.trim_end().replace("*/", "*\\/");
    if !text.contains('\n') {
        return format!("{indent}/** {text} */");
    }
    let body: Vec<String> = text.lines().map(|line| format!("{indent} * {line}").trim_end().to_string()).collect();
    format!("{indent}/**\n{}\n{indent} */", body.join("\n"))
}

/// `tools.name` for identifiers, `tools["name"]` otherwise (`-` or `.` would parse as
/// subtraction or a property chain).
pub fn access(name: &str) -> String {
    if is_identifier(name) { format!("tools.{name}") } else { format!("tools[{}]", Value::String(name.into())) }
}

/// A property name as TypeScript writes it: bare when it is an identifier, quoted otherwise.
pub fn property_key(name: &str) -> String {
    if is_identifier(name) { name.to_string() } else { Value::String(name.into()).to_string() }
}

pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c == '$' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c == '$' || c.is_ascii_alphanumeric())
}

fn parameters_and_result(input: &Value, returns: Returns, depth: usize) -> String {
    let args = Renderer::new(input).render(input, depth);
    let result = match returns {
        Returns::Declared(schema) => Renderer::new(schema).render(schema, depth),
        Returns::Observed(schema) => format!("{} /* observed */", Renderer::new(schema).render(schema, depth)),
        Returns::Unknown => "unknown".to_string(),
    };
    // A tool that requires no argument may be called with none: `tools.ls()`.
    let optional = input.get("required").and_then(Value::as_array).is_none_or(|required| required.is_empty());
    format!("(args{}: {args}): Promise<{result}>", if optional { "?" } else { "" })
}

struct Renderer<'a> {
    root: &'a Value,
    /// Nodes left to visit (see [`MAX_NODES`]).
    nodes_left: Cell<usize>,
    /// The `$ref`s being expanded on the current path: one seen again is a cycle.
    expanding: RefCell<Vec<&'a str>>,
    /// Schemas entered and not yet left on the current path.
    nesting: Cell<usize>,
    /// Text left to write (see [`MAX_TEXT_BYTES`]).
    bytes_left: Cell<usize>,
}

impl<'a> Renderer<'a> {
    fn new(root: &'a Value) -> Self {
        Renderer {
            root,
            nodes_left: Cell::new(MAX_NODES),
            expanding: RefCell::new(Vec::new()),
            nesting: Cell::new(0),
            bytes_left: Cell::new(MAX_TEXT_BYTES),
        }
    }

    /// `schema` as a type; `depth` is the indentation level the type starts at.
    fn render(&self, schema: &'a Value, depth: usize) -> String {
        let left = self.nodes_left.get();
        let nesting = self.nesting.get();
        if nesting >= MAX_NESTING || left == 0 || self.bytes_left.get() == 0 {
            return "unknown".into();
        }
        self.nodes_left.set(left - 1);
        let object = match schema {
            Value::Bool(true) => return "unknown".into(),
            Value::Bool(false) => return "never".into(),
            Value::Object(object) => object,
            _ => return "unknown".into(),
        };
        self.nesting.set(nesting + 1);
        let rendered = self.render_object_schema(object, depth);
        self.nesting.set(nesting);
        if object.get("nullable") == Some(&Value::Bool(true)) { union(vec![rendered, "null".into()]) } else { rendered }
    }

    fn render_object_schema(&self, object: &'a Map<String, Value>, depth: usize) -> String {
        if let Some(Value::String(reference)) = object.get("$ref") {
            return self.render_reference(reference, depth);
        }
        if let Some(value) = object.get("const") {
            return self.literal(value);
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            return union(values.iter().map(|value| self.literal(value)).collect());
        }
        // The schema's own type, then what `anyOf`/`oneOf`/`allOf` add to it. Beside a type
        // of its own, a variant that only constrains it (`{"required": ["a"]}`, the usual
        // "a or b" pattern) adds no type and is left out.
        let base = self.render_own_type(object, depth);
        let mut parts: Vec<String> = base.iter().cloned().collect();
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = object.get(key) {
                let variants: Vec<String> = options
                    .iter()
                    .filter(|option| base.is_none() || describes_a_type(option))
                    .map(|option| self.render(option, depth))
                    .collect();
                if !variants.is_empty() {
                    parts.push(union(variants));
                }
            }
        }
        if let Some(Value::Array(all)) = object.get("allOf") {
            parts.extend(all.iter().filter(|part| base.is_none() || describes_a_type(part)).map(|part| self.render(part, depth)));
        }
        match parts.len() {
            0 => "unknown".into(),
            1 => parts.remove(0),
            _ => parts.iter().map(|part| parenthesised(part)).collect::<Vec<_>>().join(" & "),
        }
    }

    /// The type `type`, `properties` or `items` give, if any.
    fn render_own_type(&self, object: &'a Map<String, Value>, depth: usize) -> Option<String> {
        Some(match object.get("type") {
            Some(Value::String(kind)) => self.render_kind(kind, object, depth),
            Some(Value::Array(kinds)) => {
                union(kinds.iter().filter_map(Value::as_str).map(|kind| self.render_kind(kind, object, depth)).collect())
            }
            _ if object.contains_key("properties") || object.contains_key("additionalProperties") => {
                self.render_properties(object, depth)
            }
            _ if object.contains_key("items") || object.contains_key("prefixItems") => self.render_array(object, depth),
            _ => return None,
        })
    }

    fn render_reference(&self, reference: &'a str, depth: usize) -> String {
        let Some(target) = self.resolve(reference) else { return "unknown".into() };
        if self.expanding.borrow().contains(&reference) {
            // A type that contains itself: TypeScript would need a named type; say what it is.
            return "unknown".into();
        }
        self.expanding.borrow_mut().push(reference);
        let rendered = self.render(target, depth);
        self.expanding.borrow_mut().pop();
        rendered
    }

    fn render_kind(&self, kind: &str, object: &'a Map<String, Value>, depth: usize) -> String {
        match kind {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => self.render_array(object, depth),
            "object" => self.render_properties(object, depth),
            _ => "unknown".into(),
        }
    }

    fn render_array(&self, object: &'a Map<String, Value>, depth: usize) -> String {
        // 2020-12 writes tuples as `prefixItems` (+ `items` for the rest); older drafts as
        // an `items` array (+ `additionalItems`).
        let (tuple, rest) = match (object.get("prefixItems"), object.get("items")) {
            (Some(Value::Array(prefix)), rest) => (Some(prefix), rest),
            (None, Some(Value::Array(tuple))) => (Some(tuple), object.get("additionalItems")),
            (_, items) => (None, items),
        };
        let Some(tuple) = tuple else {
            return match rest {
                Some(items) => format!("{}[]", parenthesised(&self.render(items, depth))),
                None => "unknown[]".into(),
            };
        };
        let mut elements: Vec<String> = tuple.iter().map(|item| self.render(item, depth)).collect();
        match rest {
            Some(Value::Bool(false)) => {}
            Some(items) => elements.push(format!("...{}[]", parenthesised(&self.render(items, depth)))),
            None => elements.push("...unknown[]".into()),
        }
        format!("[{}]", elements.join(", "))
    }

    fn render_properties(&self, object: &'a Map<String, Value>, depth: usize) -> String {
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let inner = depth + 1;
        let indent = "  ".repeat(inner);
        let mut lines = Vec::new();
        let properties = object.get("properties").and_then(Value::as_object);
        for (key, schema) in properties.into_iter().flatten() {
            if self.bytes_left.get() == 0 {
                lines.push(format!("{indent}/* more fields: this schema is larger than a signature shows */"));
                break;
            }
            let optional = if required.contains(&key.as_str()) { "" } else { "?" };
            self.spend(key.len());
            if let Some(description) = self.description_of(schema) {
                self.spend(description.len());
                lines.push(doc_comment(description, inner));
            }
            lines.push(format!("{indent}{}{optional}: {};", property_key(key), self.render(schema, inner)));
        }
        let patterns = object.get("patternProperties").and_then(Value::as_object).into_iter().flat_map(|p| p.values());
        let additional = object.get("additionalProperties").filter(|schema| **schema != Value::Bool(false));
        let index_schemas: Vec<&'a Value> = patterns.chain(additional).collect();
        if !index_schemas.is_empty() {
            // TypeScript requires every named field to fit the index signature; with named
            // fields beside it, only `unknown` always does.
            let named = properties.is_some_and(|properties| !properties.is_empty());
            let index = if named {
                "unknown".to_string()
            } else {
                union(index_schemas.into_iter().map(|schema| self.render(schema, inner)).collect())
            };
            lines.push(format!("{indent}[key: string]: {index};"));
        }
        if lines.is_empty() {
            return "{}".into();
        }
        format!("{{\n{}\n{}}}", lines.join("\n"), "  ".repeat(depth))
    }

    /// A field's description: its own, else that of the definition it refers to.
    fn description_of(&self, schema: &'a Value) -> Option<&'a str> {
        if let Some(text) = schema.get("description").and_then(Value::as_str) {
            return Some(text);
        }
        let reference = schema.get("$ref")?.as_str()?;
        self.resolve(reference)?.get("description")?.as_str()
    }

    /// A `const` or `enum` value as a literal type.
    fn literal(&self, value: &Value) -> String {
        match value {
            Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => {
                let text = value.to_string();
                self.spend(text.len());
                text
            }
            _ => "unknown".into(),
        }
    }

    /// Counts `bytes` of text against [`MAX_TEXT_BYTES`].
    fn spend(&self, bytes: usize) {
        self.bytes_left.set(self.bytes_left.get().saturating_sub(bytes));
    }

    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }
}

/// Whether a schema says what type a value has, rather than only constraining one.
fn describes_a_type(schema: &Value) -> bool {
    const TYPE_KEYWORDS: [&str; 11] = [
        "type",
        "properties",
        "additionalProperties",
        "items",
        "prefixItems",
        "$ref",
        "const",
        "enum",
        "anyOf",
        "oneOf",
        "allOf",
    ];
    match schema {
        Value::Object(object) => TYPE_KEYWORDS.iter().any(|key| object.contains_key(*key)),
        Value::Bool(false) => true,
        _ => false,
    }
}

/// `a | b`, each alternative once, in order.
fn union(parts: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::with_capacity(parts.len());
    for part in parts {
        if !unique.contains(&part) {
            unique.push(part);
        }
    }
    if unique.iter().any(|part| part == "unknown") {
        return "unknown".into();
    }
    match unique.len() {
        0 => "never".into(),
        1 => unique.remove(0),
        // `&` binds tighter than `|`, so no alternative needs parentheses.
        _ => unique.join(" | "),
    }
}

/// `type` in parentheses when it is a union or intersection at its top level, so that a
/// suffix (`[]`) or an operator applies to all of it.
fn parenthesised(type_text: &str) -> String {
    if has_top_level_operator(type_text) { format!("({type_text})") } else { type_text.to_string() }
}

fn has_top_level_operator(type_text: &str) -> bool {
    let mut depth = 0i32;
    let mut in_string = false;
    let mut escaped = false;
    let mut in_comment = false;
    let bytes = type_text.as_bytes();
    for (i, &byte) in bytes.iter().enumerate() {
        if in_comment {
            in_comment = !(byte == b'/' && i > 0 && bytes[i - 1] == b'*');
            continue;
        }
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'/' if bytes.get(i + 1) == Some(&b'*') => in_comment = true,
            b'{' | b'[' | b'(' | b'<' => depth += 1,
            b'}' | b']' | b')' | b'>' => depth -= 1,
            b'|' | b'&' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests;
