//! Output types observed: the shape of what a tool without an `outputSchema` answered, so
//! its signature can say more than `Promise<unknown>` once it has answered.
//!
//! Only keys and JSON types are kept, never a value. Answers are merged: a key missing from
//! one answer becomes optional, different types become a union, array items merge. An
//! object whose keys look like data (many of them, or not names: dates, ids, addresses) is
//! kept as a map of its values' type, so its keys are never kept either. Every part has a
//! bound (depth, keys, union members, values read per answer, answers merged, tools kept),
//! past which the shape says `unknown` or stops changing.
//!
//! The funnel keeps one [`Observed`] per session: a client of `serve` has its own, so one
//! client's data shape never reaches another's model.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::sources::tools::{ToolDefinition, ToolOutput};

/// Levels of nesting kept; deeper values are `unknown`.
pub const MAX_DEPTH: usize = 4;
/// Keys one object type keeps; an object with more is a map.
pub const MAX_KEYS: usize = 32;
/// The longest key kept as a name; an object with a longer key is a map.
pub const MAX_KEY_CHARS: usize = 40;
/// Types one union keeps; a union of more is `unknown`.
pub const MAX_UNION: usize = 4;
/// Items of one array, and values of one map, read per answer.
pub const MAX_ITEMS_READ: usize = 16;
/// Values read per answer in all; past them the rest is `unknown`.
pub const MAX_VALUES_READ: usize = 2_000;
/// Nodes one tool's shape may have; a merge that would make more is not taken.
pub const MAX_SHAPE_NODES: usize = 256;
/// Answers merged per tool; later ones leave the shape as it is.
pub const MAX_ANSWERS_MERGED: u32 = 64;
/// Tools observed per session; answers of others are not kept.
pub const MAX_TOOLS_OBSERVED: usize = 1_024;

/// What a session's tools without an output schema have answered, as shapes.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    tools: Mutex<HashMap<String, Seen>>,
}

#[derive(Debug)]
struct Seen {
    shape: Shape,
    answers: u32,
    /// The shape as JSON Schema, made at the first read after a change.
    schema: Option<Arc<Value>>,
}

impl Observed {
    /// Merges the shape of what `tool` answered (what a script receives: the structured
    /// value, else the text, else null) into what was seen of it; a tool that declares its
    /// output schema is never observed.
    pub fn record(&self, tool: &ToolDefinition, output: &ToolOutput) {
        if tool.output_schema.is_some() {
            return;
        }
        let tool = tool.name.as_str();
        {
            let tools = self.tools.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match tools.get(tool) {
                Some(seen) if seen.answers >= MAX_ANSWERS_MERGED => return,
                None if tools.len() >= MAX_TOOLS_OBSERVED => return,
                _ => {}
            }
        }
        // Read outside the lock: an answer may be large (the reading itself is bounded).
        let mut budget = MAX_VALUES_READ;
        let shape = match (&output.structured, &output.text) {
            (Some(value), _) => Shape::of(value, 0, &mut budget),
            (None, Some(_)) => Shape::String,
            (None, None) => Shape::Null,
        };
        let mut tools = self.tools.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(seen) = tools.get_mut(tool) {
            seen.answers += 1;
            let merged = seen.shape.clone().merge(shape);
            if merged != seen.shape && merged.nodes() <= MAX_SHAPE_NODES {
                seen.shape = merged;
                seen.schema = None;
            }
        } else if tools.len() < MAX_TOOLS_OBSERVED && shape.nodes() <= MAX_SHAPE_NODES {
            tools.insert(tool.to_string(), Seen { shape, answers: 1, schema: None });
        }
    }

    /// The JSON Schema of what `tool` was seen to answer: `None` before its first answer,
    /// and for a tool that declares its own.
    pub fn schema(&self, tool: &ToolDefinition) -> Option<Arc<Value>> {
        if tool.output_schema.is_some() {
            return None;
        }
        let mut tools = self.tools.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let seen = tools.get_mut(&tool.name)?;
        Some(seen.schema.get_or_insert_with(|| Arc::new(seen.shape.schema())).clone())
    }
}

/// The type of a JSON value, without the value.
#[derive(Clone, Debug, PartialEq)]
enum Shape {
    /// Past a bound, or types too many to name.
    Unknown,
    Null,
    Boolean,
    Number,
    String,
    /// Items' type; `None` while only empty arrays were seen.
    Array(Option<Box<Shape>>),
    /// Keys in the order first seen, each with its type and whether every answer had it.
    Object(Vec<(String, Shape, bool)>),
    /// An object whose keys are data: only its values' type.
    Map(Box<Shape>),
    /// Two to [`MAX_UNION`] types of different kinds.
    Union(Vec<Shape>),
}

impl Shape {
    /// The shape of `value` at `depth`, reading at most `budget` more values.
    fn of(value: &Value, depth: usize, budget: &mut usize) -> Shape {
        if *budget == 0 || depth > MAX_DEPTH {
            return Shape::Unknown;
        }
        *budget -= 1;
        match value {
            Value::Null => Shape::Null,
            Value::Bool(_) => Shape::Boolean,
            Value::Number(_) => Shape::Number,
            Value::String(_) => Shape::String,
            Value::Array(items) => Shape::Array(Shape::all(items.iter(), depth, budget).map(Box::new)),
            Value::Object(object) if object.len() > MAX_KEYS || !object.keys().all(|key| is_a_name(key)) => {
                Shape::Map(Box::new(Shape::all(object.values(), depth, budget).unwrap_or(Shape::Unknown)))
            }
            Value::Object(object) => Shape::Object(
                object.iter().map(|(key, value)| (key.clone(), Shape::of(value, depth + 1, budget), true)).collect(),
            ),
        }
    }

    /// The merged shape of the first [`MAX_ITEMS_READ`] of `values`, one level down; `None`
    /// for none.
    fn all<'a>(values: impl Iterator<Item = &'a Value>, depth: usize, budget: &mut usize) -> Option<Shape> {
        values.take(MAX_ITEMS_READ).map(|value| Shape::of(value, depth + 1, budget)).reduce(Shape::merge)
    }

    /// One shape for both.
    fn merge(self, other: Shape) -> Shape {
        match (self, other) {
            (Shape::Unknown, _) | (_, Shape::Unknown) => Shape::Unknown,
            (a, b) if a == b => a,
            (Shape::Array(a), Shape::Array(b)) => Shape::Array(match (a, b) {
                (Some(a), Some(b)) => Some(Box::new(a.merge(*b))),
                (a, b) => a.or(b),
            }),
            (Shape::Object(a), Shape::Object(b)) => merge_objects(a, b),
            (Shape::Map(a), Shape::Map(b)) => Shape::Map(Box::new(a.merge(*b))),
            (Shape::Map(a), Shape::Object(b)) | (Shape::Object(b), Shape::Map(a)) => {
                Shape::Map(Box::new(b.into_iter().map(|(_, shape, _)| shape).fold(*a, Shape::merge)))
            }
            (a, b) => {
                let mut members = Vec::new();
                for shape in a.members().into_iter().chain(b.members()) {
                    match members.iter().position(|member: &Shape| member.kind() == shape.kind()) {
                        Some(at) => {
                            let member = std::mem::replace(&mut members[at], Shape::Unknown);
                            members[at] = member.merge(shape);
                        }
                        None => members.push(shape),
                    }
                }
                match members.len() {
                    1 => members.pop().unwrap_or(Shape::Unknown),
                    n if n > MAX_UNION => Shape::Unknown,
                    _ => Shape::Union(members),
                }
            }
        }
    }

    fn members(self) -> Vec<Shape> {
        match self {
            Shape::Union(members) => members,
            shape => vec![shape],
        }
    }

    /// What a union keeps one member of: maps and objects are one kind.
    fn kind(&self) -> u8 {
        match self {
            Shape::Unknown => 0,
            Shape::Null => 1,
            Shape::Boolean => 2,
            Shape::Number => 3,
            Shape::String => 4,
            Shape::Array(_) => 5,
            Shape::Object(_) | Shape::Map(_) => 6,
            Shape::Union(_) => 7,
        }
    }

    fn nodes(&self) -> usize {
        1 + match self {
            Shape::Array(Some(items)) | Shape::Map(items) => items.nodes(),
            Shape::Object(keys) => keys.iter().map(|(_, shape, _)| shape.nodes()).sum(),
            Shape::Union(members) => members.iter().map(Shape::nodes).sum(),
            _ => 0,
        }
    }

    /// The shape as JSON Schema, as the signature renderer reads output schemas.
    fn schema(&self) -> Value {
        match self {
            Shape::Unknown => json!({}),
            Shape::Null => json!({"type": "null"}),
            Shape::Boolean => json!({"type": "boolean"}),
            Shape::Number => json!({"type": "number"}),
            Shape::String => json!({"type": "string"}),
            Shape::Array(None) => json!({"type": "array"}),
            Shape::Array(Some(items)) => json!({"type": "array", "items": items.schema()}),
            Shape::Object(keys) => {
                let properties: Map<String, Value> = keys.iter().map(|(key, shape, _)| (key.clone(), shape.schema())).collect();
                let required: Vec<&str> = keys.iter().filter(|(_, _, always)| *always).map(|(key, _, _)| key.as_str()).collect();
                json!({"type": "object", "properties": properties, "required": required})
            }
            Shape::Map(values) => json!({"type": "object", "additionalProperties": values.schema()}),
            Shape::Union(members) => json!({"anyOf": members.iter().map(Shape::schema).collect::<Vec<_>>()}),
        }
    }
}

/// Two object types as one: every key of either, optional unless both always had it; past
/// [`MAX_KEYS`] keys, a map.
fn merge_objects(a: Vec<(String, Shape, bool)>, b: Vec<(String, Shape, bool)>) -> Shape {
    let mut keys = a;
    let mut seen_in_b = vec![false; keys.len()];
    for (key, shape, always) in b {
        match keys.iter().position(|(known, _, _)| *known == key) {
            Some(at) => {
                let (_, known, known_always) = std::mem::replace(&mut keys[at], (String::new(), Shape::Unknown, false));
                keys[at] = (key, known.merge(shape), known_always && always);
                seen_in_b[at] = true;
            }
            None => keys.push((key, shape, false)),
        }
    }
    for (at, seen) in seen_in_b.into_iter().enumerate() {
        if !seen {
            keys[at].2 = false;
        }
    }
    if keys.len() > MAX_KEYS {
        let values = keys.into_iter().map(|(_, shape, _)| shape).reduce(Shape::merge).unwrap_or(Shape::Unknown);
        return Shape::Map(Box::new(values));
    }
    Shape::Object(keys)
}

/// Whether a key reads as a field's name rather than data: a letter, `_` or `$` first, then
/// letters, digits, `_`, `-`, `.` or `$`, at most [`MAX_KEY_CHARS`], and few digits (an id
/// such as `a1b2c3d4` is data).
fn is_a_name(key: &str) -> bool {
    let mut chars = key.chars();
    let first = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$');
    let digits = key.chars().filter(char::is_ascii_digit).count();
    first
        && key.chars().count() <= MAX_KEY_CHARS
        && digits <= 3
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '$'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolDefinition {
        ToolDefinition::new(name, "", json!({"type": "object"})).unwrap()
    }

    fn observed(answers: &[Value]) -> Value {
        let observed = Observed::default();
        for answer in answers {
            observed.record(&tool("t"), &ToolOutput::structured(answer.clone()));
        }
        observed.schema(&tool("t")).map(|schema| (*schema).clone()).unwrap()
    }

    fn observed_once(answer: Value) -> Value {
        observed(&[answer])
    }

    fn rendered(answers: &[Value]) -> String {
        crate::catalogue::signature::type_of(&observed(answers))
    }

    #[test]
    fn keys_and_types_are_kept_never_values() {
        let answer = json!({"id": 7, "name": "Ada Lovelace", "tags": ["secret-tag"], "ok": true, "none": null});
        assert_eq!(rendered(&[answer]), "{\n  id: number;\n  name: string;\n  tags: string[];\n  ok: boolean;\n  none: null;\n}");
        let text = observed(&[json!({"name": "Ada Lovelace", "tags": ["secret-tag"], "n": 12345})]).to_string();
        for value in ["Ada", "secret", "12345"] {
            assert!(!text.contains(value), "{value} in {text}");
        }
    }

    #[test]
    fn answers_merge_into_optional_keys_unions_and_array_items() {
        let shape = rendered(&[json!({"id": 1, "name": "a"}), json!({"id": "x"}), json!({"id": 2, "extra": [1, "b"]})]);
        assert_eq!(shape, "{\n  id: number | string;\n  name?: string;\n  extra?: (number | string)[];\n}");
        assert_eq!(rendered(&[json!([]), json!([{"a": 1}]), json!([{"a": 2, "b": null}])]), "{\n  a: number;\n  b?: null;\n}[]");
        assert_eq!(rendered(&[json!(1), json!("a"), json!(null), json!(true), json!([1])]), "unknown", "past four types");
    }

    #[test]
    fn objects_keyed_by_data_keep_only_their_values_type() {
        for answer in [
            json!({"2024-01-01": {"n": 1}, "2024-01-02": {"n": 2}}),
            json!({"ada@example.com": {"n": 1}}),
            json!({"a1b2c3d4e5": {"n": 1}}),
            json!({"user name": {"n": 1}}),
        ] {
            let text = observed(std::slice::from_ref(&answer)).to_string();
            assert!(text.contains("additionalProperties"), "{answer} is a map: {text}");
            for key in answer.as_object().unwrap().keys() {
                assert!(!text.contains(key.as_str()), "{key} kept: {text}");
            }
        }
        let wide: Map<String, Value> =
            (0..40).map(|i| (format!("field_{}", (b'a' + (i % 26) as u8) as char).repeat(1 + i / 26), json!(i))).collect();
        assert!(observed(&[Value::Object(wide)]).to_string().contains("additionalProperties"), "more than 32 keys");
    }

    #[test]
    fn depth_values_read_answers_and_tools_are_bounded() {
        let deep = json!({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}});
        assert!(rendered(&[deep]).contains("e: unknown"), "levels past {MAX_DEPTH}");
        let wide: Vec<Value> = (0..100_000).map(|i| json!({"k": i})).collect();
        let mut budget = MAX_VALUES_READ;
        Shape::of(&Value::Array(wide), 0, &mut budget);
        assert!(budget >= MAX_VALUES_READ - 1 - 2 * MAX_ITEMS_READ, "items past {MAX_ITEMS_READ} are not read");

        let observed = Observed::default();
        for _ in 0..MAX_ANSWERS_MERGED {
            observed.record(&tool("t"), &ToolOutput::structured(json!({"a": 1})));
        }
        observed.record(&tool("t"), &ToolOutput::structured(json!({"late": 1})));
        assert_eq!(
            *observed.schema(&tool("t")).unwrap(),
            observed_once(json!({"a": 1})),
            "answers past {MAX_ANSWERS_MERGED} change nothing"
        );
        for i in 0..(MAX_TOOLS_OBSERVED + 10) {
            observed.record(&tool(&format!("tool{i}")), &ToolOutput::text("x"));
        }
        assert!(
            observed.schema(&tool(&format!("tool{}", MAX_TOOLS_OBSERVED + 5))).is_none(),
            "at most {MAX_TOOLS_OBSERVED} tools"
        );
    }

    #[test]
    fn a_tool_that_declares_its_output_schema_is_never_observed() {
        let observed = Observed::default();
        let typed = tool("typed").with_output_schema(json!({"type": "object"}));
        observed.record(&typed, &ToolOutput::structured(json!({"a": 1})));
        assert!(observed.schema(&typed).is_none());
        assert!(observed.schema(&tool("typed")).is_none(), "nothing was kept of it");
    }

    #[test]
    fn a_text_answer_is_a_string_and_nothing_is_null() {
        let observed = Observed::default();
        observed.record(&tool("text"), &ToolOutput::text("hello"));
        observed.record(&tool("empty"), &ToolOutput::empty());
        assert_eq!(*observed.schema(&tool("text")).unwrap(), json!({"type": "string"}));
        assert_eq!(*observed.schema(&tool("empty")).unwrap(), json!({"type": "null"}));
        assert!(observed.schema(&tool("never")).is_none());
    }
}
