//! What a client's message is, before the MCP server reads it: every message that is not a
//! well-formed request, notification or response gets JSON-RPC's own error (parse error,
//! invalid request, invalid params) rather than silence or a transport's status alone. One
//! function decides it for both transports.

use rmcp::model::{CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, InitializeRequestParams, PaginatedRequestParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// JSON-RPC's error codes.
pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const INVALID_PARAMS: i32 = -32602;
pub const METHOD_NOT_FOUND: i32 = -32601;

/// What to do with one message.
pub enum Screened {
    /// A message the server reads.
    Pass(Box<ClientJsonRpcMessage>),
    /// Not one: this error answers it (JSON-RPC's error response).
    Answer { code: i32, response: Value },
    /// A malformed notification: JSON-RPC answers no notification, even a bad one.
    Ignore,
}

/// Screens the bytes of one message.
pub fn screen(bytes: &[u8]) -> Screened {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(error) => return answer(Value::Null, PARSE_ERROR, format!("parse error: the message is not JSON ({error})")),
    };
    let id = value.get("id").filter(|id| id.is_string() || id.is_i64() || id.is_u64()).cloned().unwrap_or(Value::Null);
    let is_notification = value.get("method").is_some() && value.get("id").is_none();
    match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(ClientJsonRpcMessage::Request(request)) => {
            // A request of a method this server serves whose params do not fit that method is
            // taken for a custom request; it is a request with invalid params.
            if let ClientRequest::CustomRequest(custom) = &request.request
                && let Some(why) = params_error(&custom.method, value.get("params"))
            {
                return answer(id, INVALID_PARAMS, format!("invalid params of `{}`: {why}", custom.method));
            }
            Screened::Pass(Box::new(ClientJsonRpcMessage::Request(request)))
        }
        Ok(message) => Screened::Pass(Box::new(message)),
        Err(_) if is_notification => Screened::Ignore,
        Err(error) => answer(
            id,
            INVALID_REQUEST,
            format!("invalid request: not a JSON-RPC 2.0 request, notification or response ({error})"),
        ),
    }
}

/// Why `params` do not fit `method`, for the methods whose params this server reads.
fn params_error(method: &str, params: Option<&Value>) -> Option<String> {
    let params = params.cloned().unwrap_or(Value::Null);
    match method {
        "tools/call" => shape_error::<CallToolRequestParams>(params),
        "initialize" => shape_error::<InitializeRequestParams>(params),
        "tools/list" if !params.is_null() => shape_error::<PaginatedRequestParams>(params),
        _ => None,
    }
}

fn shape_error<T: DeserializeOwned>(params: Value) -> Option<String> {
    let error = serde_path_to_error::deserialize::<_, T>(params).err()?;
    let path = error.path().to_string();
    let inner = error.into_inner();
    Some(if path == "." { inner.to_string() } else { format!("{path}: {inner}") })
}

/// JSON-RPC's error response to the request `id` (`null` when it could not be read).
pub fn error_response(id: Value, code: i32, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// The answer to a message that could not be read: a parse error.
pub fn unreadable(message: &str) -> Screened {
    answer(Value::Null, PARSE_ERROR, message.to_string())
}

fn answer(id: Value, code: i32, message: String) -> Screened {
    Screened::Answer { code, response: error_response(id, code, &message) }
}
