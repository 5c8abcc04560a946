//! Schemas with their local `$ref`s put in place, so that each operation's tool carries a
//! whole schema that ToolSearch and the `.d.ts` can show. A reference that comes back to
//! one being expanded (a tree, a linked list) becomes an unknown value (`{}`) there: the
//! schema is shown once, and no cycle can hang the host. A remote reference is refused.
//!
//! A shared schema expanded at every use can grow without end in a large description;
//! every expansion is bounded in depth and in nodes, and what passes a bound is unknown.

use serde_json::{Map, Value};

use super::document::Revision;

/// Deepest nesting of an expanded schema; deeper parts are unknown values.
pub const MAX_SCHEMA_DEPTH: usize = 32;
/// Most nodes (objects, arrays, values) of one expanded schema; past it, references
/// expand to unknown values.
pub const MAX_SCHEMA_NODES: usize = 20_000;

/// Keys of OpenAPI's schema objects that say nothing a caller can use.
const NOISE: &[&str] = &["xml", "externalDocs", "discriminator", "example", "examples", "x-github"];

/// Why a reference cannot be followed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    #[error("it refers to `{0}`, outside the description; exec-host follows only references within it (`#/...`)")]
    Remote(String),
    #[error("it refers to `{0}`, which the description does not have")]
    Missing(String),
}

/// Expands schemas of one description.
pub struct Resolver<'a> {
    root: &'a Value,
    revision: Revision,
}

impl<'a> Resolver<'a> {
    pub fn new(root: &'a Value, revision: Revision) -> Self {
        Resolver { root, revision }
    }

    /// The object a `$ref` names, when `value` is one (followed until it is not, cycles
    /// refused); else `value` itself. For parameters, request bodies and responses.
    pub fn follow(&self, value: &'a Value) -> Result<&'a Value, RefError> {
        let mut current = value;
        for _ in 0..MAX_SCHEMA_DEPTH {
            match current.get("$ref").and_then(Value::as_str) {
                Some(reference) => current = self.target(reference)?,
                None => return Ok(current),
            }
        }
        Err(RefError::Missing("a chain of references that does not end".into()))
    }

    /// `schema` with every local reference expanded (within the bounds).
    pub fn schema(&self, schema: &Value) -> Result<Value, RefError> {
        let mut expansion = Expansion { stack: Vec::new(), nodes: 0 };
        self.expand(schema, &mut expansion, 0)
    }

    fn target(&self, reference: &str) -> Result<&'a Value, RefError> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(RefError::Remote(reference.to_string()));
        };
        // A fragment is a JSON pointer, percent-encoded as part of a URI.
        let decoded = percent_encoding::percent_decode_str(pointer).decode_utf8_lossy();
        self.root.pointer(&decoded).ok_or_else(|| RefError::Missing(reference.to_string()))
    }

    fn expand(&self, value: &Value, expansion: &mut Expansion, depth: usize) -> Result<Value, RefError> {
        expansion.nodes += 1;
        if depth >= MAX_SCHEMA_DEPTH || expansion.nodes > MAX_SCHEMA_NODES {
            return Ok(unknown());
        }
        match value {
            Value::Object(object) => {
                if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
                    return self.expand_reference(reference, object, expansion, depth);
                }
                let mut out = Map::new();
                for (key, item) in object {
                    let expanded = match key.as_str() {
                        noise if NOISE.contains(&noise) => continue,
                        // Values, not schemas: kept as written (a property may be named `$ref`).
                        "enum" | "const" | "default" | "required" => item.clone(),
                        // Maps of names to schemas: the names are data.
                        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => match item {
                            Value::Object(named) => {
                                let mut schemas = Map::new();
                                for (name, schema) in named {
                                    schemas.insert(name.clone(), self.expand(schema, expansion, depth + 1)?);
                                }
                                Value::Object(schemas)
                            }
                            other => other.clone(),
                        },
                        _ => self.expand(item, expansion, depth + 1)?,
                    };
                    out.insert(key.clone(), expanded);
                }
                if self.revision == Revision::V3_0 {
                    nullable_as_json_schema(&mut out);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => {
                items.iter().map(|item| self.expand(item, expansion, depth + 1)).collect::<Result<_, _>>().map(Value::Array)
            }
            scalar => Ok(scalar.clone()),
        }
    }

    fn expand_reference(
        &self,
        reference: &str,
        object: &Map<String, Value>,
        expansion: &mut Expansion,
        depth: usize,
    ) -> Result<Value, RefError> {
        if expansion.stack.iter().any(|open| open == reference) {
            return Ok(unknown());
        }
        let target = self.target(reference)?;
        expansion.stack.push(reference.to_string());
        let expanded = self.expand(target, expansion, depth + 1);
        expansion.stack.pop();
        let mut expanded = expanded?;
        // OpenAPI 3.1 lets a reference carry its own description or title beside it.
        if let Value::Object(out) = &mut expanded {
            for (key, item) in object {
                if key != "$ref" && !NOISE.contains(&key.as_str()) {
                    out.insert(key.clone(), item.clone());
                }
            }
        }
        Ok(expanded)
    }
}

struct Expansion {
    /// The references being expanded, outermost first.
    stack: Vec<String>,
    nodes: usize,
}

/// A value of any type.
fn unknown() -> Value {
    Value::Object(Map::new())
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema says it: `null` among the types.
fn nullable_as_json_schema(schema: &mut Map<String, Value>) {
    if schema.remove("nullable") != Some(Value::Bool(true)) {
        return;
    }
    match schema.get_mut("type") {
        Some(Value::String(kind)) => {
            let kind = std::mem::take(kind);
            schema.insert("type".into(), Value::Array(vec![Value::String(kind), "null".into()]));
        }
        _ => {
            let alternatives = ["anyOf", "oneOf"].into_iter().find(|key| schema.contains_key(*key));
            if let Some(Value::Array(items)) = alternatives.and_then(|key| schema.get_mut(key)) {
                items.push(serde_json::json!({ "type": "null" }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn local_references_are_expanded_and_cycles_end_in_an_unknown_value() {
        let root = json!({ "components": { "schemas": {
            "Node": { "type": "object", "properties": { "name": { "type": "string" }, "next": { "$ref": "#/components/schemas/Node" } } },
            "Pet": { "allOf": [ { "$ref": "#/components/schemas/Named" }, { "type": "object", "properties": { "tag": { "type": "string", "nullable": true } } } ] },
            "Named": { "type": "object", "required": ["name"], "properties": { "name": { "type": "string" }, "example": { "type": "boolean" } }, "example": { "name": "x" } },
            "a~b/c": { "type": "integer" }
        } } });
        let resolver = Resolver::new(&root, Revision::V3_0);
        let node = resolver.schema(&json!({ "$ref": "#/components/schemas/Node" })).unwrap();
        assert_eq!(node["properties"]["name"], json!({ "type": "string" }));
        assert_eq!(node["properties"]["next"], json!({}), "where the schema comes back to itself it is unknown");
        let pet = resolver.schema(&json!({ "$ref": "#/components/schemas/Pet" })).unwrap();
        assert_eq!(pet["allOf"][0]["required"], json!(["name"]));
        assert!(pet["allOf"][0].get("example").is_none(), "examples are noise in a signature");
        assert_eq!(pet["allOf"][0]["properties"]["example"], json!({ "type": "boolean" }), "a property may be named so");
        assert_eq!(pet["allOf"][1]["properties"]["tag"]["type"], json!(["string", "null"]));
        let escaped = resolver.schema(&json!({ "$ref": "#/components/schemas/a~0b~1c" })).unwrap();
        assert_eq!(escaped, json!({ "type": "integer" }));
    }

    #[test]
    fn remote_and_missing_references_are_refused_by_name() {
        let root = json!({});
        let resolver = Resolver::new(&root, Revision::V3_1);
        let remote = resolver.schema(&json!({ "$ref": "https://example.com/s.json#/X" })).unwrap_err();
        assert_eq!(remote, RefError::Remote("https://example.com/s.json#/X".into()));
        assert!(remote.to_string().contains("outside the description"));
        let missing = resolver.schema(&json!({ "items": { "$ref": "#/components/schemas/Gone" } })).unwrap_err();
        assert_eq!(missing, RefError::Missing("#/components/schemas/Gone".into()));
    }

    #[test]
    fn a_reference_that_fans_out_is_bounded_in_nodes_and_depth() {
        // Each level refers to the next twice: expanded in full it would have 2^40 nodes.
        let mut schemas = Map::new();
        for level in 0..40 {
            let next = format!("#/components/schemas/L{}", level + 1);
            schemas.insert(
                format!("L{level}"),
                json!({ "type": "object", "properties": { "a": { "$ref": next }, "b": { "$ref": next } } }),
            );
        }
        schemas.insert("L40".into(), json!({ "type": "string" }));
        let root = json!({ "components": { "schemas": schemas } });
        let resolver = Resolver::new(&root, Revision::V3_1);
        let expanded = resolver.schema(&json!({ "$ref": "#/components/schemas/L0" })).unwrap();
        let nodes = serde_json::to_string(&expanded).unwrap().matches('{').count();
        assert!(nodes <= MAX_SCHEMA_NODES, "{nodes} objects");
        let reference = json!({ "$ref": "#/components/schemas/L40" });
        let chain = resolver.follow(&reference).unwrap();
        assert_eq!(chain, &json!({ "type": "string" }));
    }

    #[test]
    fn a_reference_chain_that_loops_is_refused() {
        let root = json!({ "components": { "parameters": { "A": { "$ref": "#/components/parameters/B" }, "B": { "$ref": "#/components/parameters/A" } } } });
        let resolver = Resolver::new(&root, Revision::V3_1);
        assert!(resolver.follow(&json!({ "$ref": "#/components/parameters/A" })).is_err());
    }
}
