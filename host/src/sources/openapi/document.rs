//! An OpenAPI description as a JSON value: read with a bound, JSON or YAML, and checked to be
//! OpenAPI 3.0 or 3.1 before anything else reads it.

use std::path::Path;

use serde_json::{Map, Value};

use crate::support::text_file::{ReadError, read_text};

/// Largest description read, in bytes (GitHub's whole description is about 12 MB as JSON).
pub const MAX_SPEC_BYTES: u64 = 48 * 1024 * 1024;

/// Why a description cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    #[error("{file}: {source}")]
    Unreadable { file: String, source: ReadError },
    #[error("{file}: not valid {format}: {reason}")]
    Syntax { file: String, format: &'static str, reason: String },
    #[error("{file}: {reason}")]
    NotOpenApi { file: String, reason: String },
    #[error("{file}: {count} operations, more than the {limit} one source may have")]
    TooManyOperations { file: String, count: usize, limit: usize },
}

/// Which revision of OpenAPI a description follows: 3.0 spells a nullable value
/// `nullable: true`, 3.1 is JSON Schema's own dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revision {
    V3_0,
    V3_1,
}

/// A description that is OpenAPI 3.0 or 3.1.
#[derive(Debug)]
pub struct Document {
    pub root: Value,
    pub revision: Revision,
    /// How errors name it (the file or URL it came from).
    pub origin: String,
}

impl Document {
    /// Reads `file` (at most [`MAX_SPEC_BYTES`]) and checks it.
    pub fn load(file: &Path) -> Result<Self, SpecError> {
        let origin = file.display().to_string();
        let text = read_text(file, MAX_SPEC_BYTES).map_err(|source| SpecError::Unreadable { file: origin.clone(), source })?;
        Self::parse(&text, &origin)
    }

    /// Checks the text of a description, JSON when it starts with `{`, else YAML.
    pub fn parse(text: &str, origin: &str) -> Result<Self, SpecError> {
        let syntax = |format, reason: String| SpecError::Syntax { file: origin.to_string(), format, reason };
        let root = match text.trim_start().starts_with('{') {
            true => serde_json::from_str(text).map_err(|e| syntax("JSON", e.to_string()))?,
            false => {
                let yaml: yaml_serde::Value = yaml_serde::from_str(text).map_err(|e| syntax("YAML", e.to_string()))?;
                json_of_yaml(yaml)
            }
        };
        let not_openapi = |reason: String| SpecError::NotOpenApi { file: origin.to_string(), reason };
        let Value::Object(object) = &root else {
            return Err(not_openapi("an OpenAPI description is an object at its top level".into()));
        };
        let revision = match object.get("openapi").and_then(Value::as_str) {
            Some(version) if version.starts_with("3.0") => Revision::V3_0,
            Some(version) if version.starts_with("3.1") => Revision::V3_1,
            Some(version) => return Err(not_openapi(format!("OpenAPI {version} is not supported (3.0 and 3.1 are)"))),
            None if object.contains_key("swagger") => {
                return Err(not_openapi(
                    "this is a Swagger 2.0 description; exec-host reads OpenAPI 3.0 and 3.1 (convert it, e.g. with swagger2openapi)"
                        .into(),
                ));
            }
            None => return Err(not_openapi("it has no `openapi` version field: it is not an OpenAPI description".into())),
        };
        if !object.get("paths").is_none_or(Value::is_object) {
            return Err(not_openapi("`paths` must be an object".into()));
        }
        Ok(Document { root, revision, origin: origin.to_string() })
    }

    /// The `paths` object (empty when there is none).
    pub fn paths(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.root.get("paths").and_then(Value::as_object).into_iter().flatten()
    }

    /// The first server's URL, when the description names one.
    pub fn server_url(&self) -> Option<&str> {
        self.root.pointer("/servers/0/url").and_then(Value::as_str)
    }
}

/// A YAML value as JSON: keys that YAML reads as numbers or booleans (response codes written
/// `200:`) become their text, tags are dropped.
fn json_of_yaml(value: yaml_serde::Value) -> Value {
    use yaml_serde::Value as Yaml;
    match value {
        Yaml::Null => Value::Null,
        Yaml::Bool(b) => Value::Bool(b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number)
            }
        }
        Yaml::String(s) => Value::String(s),
        Yaml::Sequence(items) => Value::Array(items.into_iter().map(json_of_yaml).collect()),
        Yaml::Mapping(mapping) => {
            let mut object = Map::new();
            for (key, value) in mapping {
                let key = match key {
                    Yaml::String(s) => s,
                    Yaml::Bool(b) => b.to_string(),
                    Yaml::Number(n) => n.to_string(),
                    Yaml::Null => "null".to_string(),
                    // A sequence or mapping as a key means nothing in OpenAPI.
                    _ => continue,
                };
                object.insert(key, json_of_yaml(value));
            }
            Value::Object(object)
        }
        Yaml::Tagged(tagged) => json_of_yaml(tagged.value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_yaml_read_alike_with_numeric_keys_as_text() {
        let json =
            Document::parse(r#"{"openapi": "3.1.0", "paths": {"/a": {"get": {"responses": {"200": {}}}}}}"#, "a.json").unwrap();
        let yaml =
            Document::parse("openapi: 3.0.3\npaths:\n  /a:\n    get:\n      responses:\n        200: {}\n", "a.yaml").unwrap();
        assert_eq!(json.revision, Revision::V3_1);
        assert_eq!(yaml.revision, Revision::V3_0);
        assert_eq!(json.root["paths"], yaml.root["paths"]);
    }

    #[test]
    fn what_is_not_openapi_three_is_refused_with_a_sentence() {
        let cases = [
            ("swagger: '2.0'\npaths: {}\n", "Swagger 2.0"),
            ("openapi: 4.0.0\n", "OpenAPI 4.0.0 is not supported"),
            ("[1, 2]", "object at its top level"),
            ("info: {}\n", "no `openapi` version"),
            (r#"{"openapi": "3.1.0", "paths": []}"#, "`paths` must be an object"),
            ("openapi: 3.1.0\npaths: {a: [\n", "not valid YAML"),
            (r#"{"openapi": "3.1.0","#, "not valid JSON"),
        ];
        for (text, expected) in cases {
            let error = Document::parse(text, "spec").unwrap_err().to_string();
            assert!(error.starts_with("spec: ") && error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn a_huge_description_is_refused_as_what_it_is_past_the_bound_unread_and_so_is_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.json");
        // 50 MB of NUL bytes (a sparse file): read, and refused as what it is.
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(50 * 1000 * 1000).unwrap();
        let error = Document::load(&big).unwrap_err().to_string();
        assert!(error.contains("not valid YAML"), "{error}");
        // Past the bound: refused unread.
        file.set_len(MAX_SPEC_BYTES + 1).unwrap();
        let error = Document::load(&big).unwrap_err().to_string();
        assert!(error.ends_with(&format!("is larger than {MAX_SPEC_BYTES} bytes")), "{error}");
        let fifo = dir.path().join("fifo.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let error = Document::load(&fifo).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
    }

    #[test]
    fn yaml_alias_bombs_are_refused_not_expanded() {
        let mut text = String::from("openapi: 3.1.0\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..12 {
            let previous = level - 1;
            text.push_str(&format!(
                "a{level}: &a{level} [*a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}]\n"
            ));
        }
        let error = Document::parse(&text, "bomb.yaml").unwrap_err().to_string();
        assert!(error.contains("not valid YAML"), "{error}");
    }
}
