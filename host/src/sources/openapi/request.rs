//! A call's argument object as an HTTP request of its operation: each parameter put where
//! the description places it, escaped so that no value can reach another part of the
//! request (a path value cannot add a segment or climb out of the API's base; a header value
//! cannot add a header), and the body encoded as the operation sends it.

use http::header::{HeaderName, HeaderValue};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};

use super::operations::{BODY_KEY, BodyKind, Location, Operation, Parameter};
use crate::support::vocabulary::ToolError;

/// Everything but RFC 3986's unreserved characters is escaped in a path segment, `/`
/// included: a value is always one segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// A request ready to send, before credentials are added.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    pub method: http::Method,
    /// The base URL with the operation's path and its query.
    pub url: String,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The content type and the bytes.
    pub body: Option<(String, Vec<u8>)>,
}

/// The request of `operation` for `args`, against `base` (the API's URL, without a trailing
/// `/`). `tool` names the tool in errors.
pub fn prepare(operation: &Operation, base: &str, args: &Map<String, Value>, tool: &str) -> Result<Prepared, ToolError> {
    let known = |key: &str| key == BODY_KEY && operation.body.is_some() || operation.parameters.iter().any(|p| p.key == key);
    if let Some(unknown) = args.keys().find(|key| !known(key)) {
        let mut takes: Vec<&str> = operation.parameters.iter().map(|p| p.key.as_str()).collect();
        if operation.body.is_some() {
            takes.push(BODY_KEY);
        }
        let takes = match takes.is_empty() {
            true => "nothing".to_string(),
            false => takes.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
        };
        return Err(ToolError::params(format!("`{tool}` has no parameter `{}`; it takes {takes}", printable(unknown))));
    }
    let mut path = operation.path.clone();
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    let mut headers = Vec::new();
    let mut cookies = Vec::new();
    for parameter in &operation.parameters {
        let value = match args.get(&parameter.key) {
            None | Some(Value::Null) if parameter.required => {
                return Err(ToolError::params(format!("`{tool}` needs `{}`", parameter.key)));
            }
            None | Some(Value::Null) => continue,
            Some(value) => value,
        };
        match parameter.location {
            Location::Path => {
                let text = scalar(value, parameter, tool)?;
                if text.is_empty() || text == "." || text == ".." {
                    return Err(ToolError::params(format!(
                        "`{}` may not be {text:?}: it is one segment of the path",
                        parameter.key
                    )));
                }
                let segment = utf8_percent_encode(&text, SEGMENT).to_string();
                path = path.replace(&format!("{{{}}}", parameter.name), &segment);
            }
            Location::Query => add_query(&mut query, parameter, value, tool)?,
            Location::Header => {
                let name = HeaderName::from_bytes(parameter.name.as_bytes())
                    .map_err(|_| ToolError::params(format!("`{}` is not a header name", printable(&parameter.name))))?;
                headers.push((name, header_value(&scalar(value, parameter, tool)?, parameter)?));
            }
            Location::Cookie => {
                let text = scalar(value, parameter, tool)?;
                if text.chars().any(|c| c.is_control() || c == ';' || c == ',' || c == '"' || c == '\\' || c == ' ') {
                    return Err(ToolError::params(format!(
                        "`{}` may not contain spaces, `;`, `,`, quotes, backslashes or control characters: it is a cookie",
                        parameter.key
                    )));
                }
                cookies.push(format!("{}={text}", parameter.name));
            }
        }
    }
    if let Some(accept) = &operation.accept
        && let Ok(value) = HeaderValue::from_str(accept)
    {
        headers.push((http::header::ACCEPT, value));
    }
    if !cookies.is_empty() {
        let joined = cookies.join("; ");
        let value =
            HeaderValue::from_str(&joined).map_err(|_| ToolError::params("a cookie parameter is not valid in a header"))?;
        headers.push((http::header::COOKIE, value));
    }
    let body = match (&operation.body, args.get(BODY_KEY)) {
        (Some(body), None | Some(Value::Null)) if body.required => {
            return Err(ToolError::params(format!("`{tool}` needs `body`")));
        }
        (Some(body), Some(value)) if !value.is_null() => Some((body.media_type.clone(), encode_body(body.kind, value)?)),
        _ => None,
    };
    let query = query.finish();
    let url = match query.is_empty() {
        true => format!("{base}{path}"),
        false => format!("{base}{path}?{query}"),
    };
    Ok(Prepared { method: operation.method.clone(), url, headers, body })
}

/// A parameter's value as text: a string as it is, a number or boolean as JSON writes it.
fn scalar(value: &Value, parameter: &Parameter, tool: &str) -> Result<String, ToolError> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(ToolError::params(format!(
            "`{}` of `{tool}` must be a string, number or boolean, not {}",
            parameter.key,
            crate::sources::tools::json_kind(other)
        ))),
    }
}

fn header_value(text: &str, parameter: &Parameter) -> Result<HeaderValue, ToolError> {
    // Checked before the header type does, to say why: CR and LF would start a new header.
    if text.chars().any(|c| c.is_control() && c != '\t') {
        return Err(ToolError::params(format!(
            "`{}` may not contain line breaks or other control characters: it is a header",
            parameter.key
        )));
    }
    HeaderValue::from_str(text).map_err(|_| ToolError::params(format!("`{}` is not valid in a header", parameter.key)))
}

/// A query parameter: a scalar once, an array once per item, an object as `name[key]` for
/// the `deepObject` style or as its own keys otherwise (OpenAPI's exploded form).
fn add_query(
    query: &mut url::form_urlencoded::Serializer<'_, String>,
    parameter: &Parameter,
    value: &Value,
    tool: &str,
) -> Result<(), ToolError> {
    match value {
        Value::Array(items) => {
            for item in items {
                query.append_pair(&parameter.name, &scalar(item, parameter, tool)?);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                let text = scalar(item, parameter, tool)?;
                match parameter.deep_object {
                    true => query.append_pair(&format!("{}[{key}]", parameter.name), &text),
                    false => query.append_pair(key, &text),
                };
            }
        }
        scalar_value => {
            query.append_pair(&parameter.name, &scalar(scalar_value, parameter, tool)?);
        }
    }
    Ok(())
}

fn encode_body(kind: BodyKind, value: &Value) -> Result<Vec<u8>, ToolError> {
    match kind {
        BodyKind::Json => serde_json::to_vec(value).map_err(|e| ToolError::params(e.to_string())),
        BodyKind::Text => match value {
            Value::String(text) => Ok(text.clone().into_bytes()),
            other => Ok(other.to_string().into_bytes()),
        },
        BodyKind::Form => {
            let Value::Object(fields) = value else {
                return Err(ToolError::params("`body` must be an object: the operation sends a form"));
            };
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            for (key, item) in fields {
                let text = match item {
                    Value::String(text) => text.clone(),
                    Value::Null => continue,
                    other => other.to_string(),
                };
                form.append_pair(key, &text);
            }
            Ok(form.finish().into_bytes())
        }
    }
}

fn printable(text: &str) -> String {
    crate::support::text::one_line(text, 80)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sources::openapi::document::Document;
    use crate::sources::openapi::operations::operations;

    fn operation(spec: Value) -> Operation {
        let root = json!({ "openapi": "3.1.0", "paths": spec });
        operations(&Document::parse(&root.to_string(), "t").unwrap()).unwrap().0.remove(0)
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn repo_contents() -> Operation {
        operation(json!({ "/repos/{owner}/{repo}/contents/{path}": { "get": {
            "operationId": "repos/get-content",
            "parameters": [
                { "name": "owner", "in": "path", "required": true, "schema": { "type": "string" } },
                { "name": "repo", "in": "path", "required": true, "schema": { "type": "string" } },
                { "name": "path", "in": "path", "required": true, "schema": { "type": "string" } },
                { "name": "ref", "in": "query", "schema": { "type": "string" } },
                { "name": "labels", "in": "query", "schema": { "type": "array" } },
                { "name": "filter", "in": "query", "style": "deepObject", "schema": { "type": "object" } },
                { "name": "X-Request-Id", "in": "header", "schema": { "type": "string" } },
                { "name": "session", "in": "cookie", "schema": { "type": "string" } }
            ],
            "responses": { "200": { "description": "ok" } }
        } } }))
    }

    #[test]
    fn parameters_go_where_the_description_places_them() {
        let prepared = prepare(
            &repo_contents(),
            "https://api.example.com/v3",
            &args(json!({ "owner": "octo cat", "repo": "héllo", "path": "src/main.rs", "ref": "a&b=c", "labels": ["x", 2],
                          "filter": { "state": "open" }, "X-Request-Id": "abc", "session": "s1" })),
            "api__gh__repos_get_content",
        )
        .unwrap();
        assert_eq!(prepared.method, http::Method::GET);
        assert_eq!(
            prepared.url,
            "https://api.example.com/v3/repos/octo%20cat/h%C3%A9llo/contents/src%2Fmain.rs?ref=a%26b%3Dc&labels=x&labels=2&filter%5Bstate%5D=open"
        );
        let headers: Vec<(String, String)> =
            prepared.headers.iter().map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string())).collect();
        assert_eq!(headers, [("x-request-id".to_string(), "abc".to_string()), ("cookie".to_string(), "session=s1".to_string())]);
        assert_eq!(prepared.body, None);
    }

    #[test]
    fn no_value_reaches_another_part_of_the_request() {
        let operation = repo_contents();
        let base = json!({ "owner": "o", "repo": "r", "path": "p" });
        let with = |key: &str, value: Value| {
            let mut args = args(base.clone());
            args.insert(key.into(), value);
            prepare(&operation, "https://api.example.com", &args, "t").map_err(|e| e.to_string())
        };
        for climb in ["..", ".", ""] {
            let error = with("owner", json!(climb)).unwrap_err();
            assert!(error.contains("one segment of the path"), "{climb:?}: {error}");
        }
        let encoded = with("owner", json!("../../admin?x=1#f")).unwrap();
        assert!(encoded.url.starts_with("https://api.example.com/repos/..%2F..%2Fadmin%3Fx%3D1%23f/r/"), "{}", encoded.url);
        for injected in ["a\r\nX-Admin: 1", "a\nb", "a\u{0}b"] {
            let error = with("X-Request-Id", json!(injected)).unwrap_err();
            assert!(error.contains("line breaks or other control characters"), "{error}");
        }
        let error = with("session", json!("a; admin=1")).unwrap_err();
        assert!(error.contains("it is a cookie"), "{error}");
        let error = with("owner", json!({ "a": 1 })).unwrap_err();
        assert!(error.contains("must be a string, number or boolean, not an object"), "{error}");
        let error = with("token", json!("x")).unwrap_err();
        assert!(error.contains("has no parameter `token`; it takes `owner`, `repo`, `path`, `ref`"), "{error}");
        let mut missing = args(base);
        missing.remove("repo");
        let error = prepare(&operation, "https://api.example.com", &missing, "t").unwrap_err().to_string();
        assert!(error.contains("`t` needs `repo`"), "{error}");
    }

    #[test]
    fn bodies_are_sent_as_the_operation_says() {
        let json_body = operation(json!({ "/pets": { "post": {
            "requestBody": { "required": true, "content": { "application/json; charset=utf-8": { "schema": { "type": "object" } } } },
            "responses": {} } } }));
        let prepared = prepare(&json_body, "http://h", &args(json!({ "body": { "name": "Rex" } })), "t").unwrap();
        assert_eq!(prepared.body, Some(("application/json; charset=utf-8".into(), br#"{"name":"Rex"}"#.to_vec())));
        assert!(prepare(&json_body, "http://h", &Map::new(), "t").unwrap_err().to_string().contains("needs `body`"));
        let form = operation(json!({ "/token": { "post": {
            "requestBody": { "content": { "application/x-www-form-urlencoded": { "schema": { "type": "object" } } } },
            "responses": {} } } }));
        let prepared = prepare(&form, "http://h", &args(json!({ "body": { "grant": "a b", "n": 2 } })), "t").unwrap();
        assert_eq!(prepared.body, Some(("application/x-www-form-urlencoded".into(), b"grant=a+b&n=2".to_vec())));
        assert!(prepare(&form, "http://h", &args(json!({ "body": "x" })), "t").is_err());
        let text =
            operation(json!({ "/note": { "put": { "requestBody": { "content": { "text/plain": {} } }, "responses": {} } } }));
        let prepared = prepare(&text, "http://h", &args(json!({ "body": "hi" })), "t").unwrap();
        assert_eq!(prepared.body, Some(("text/plain".into(), b"hi".to_vec())));
        assert_eq!(text.input_schema["properties"]["body"], json!({ "type": "string" }));
    }
}
