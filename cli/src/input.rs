//! How `exec-host run` answers an MCP server that asks for input in the middle of a call:
//! on the terminal when there is one (the server's message, then each field with its
//! default, Enter taking the default), with the defaults when `--accept-input-defaults`
//! says so, and otherwise not at all (the servers are not told they may ask).

use std::io::{BufRead as _, Write as _};
use std::sync::Arc;

use exec_host::BoxFuture;
use exec_host::mcp::input::{AcceptDefaults, InputAnswer, InputHandler, InputRequest};
use exec_host::mcp::input::{FieldKind, InputField, InputKind, of_kind};
use serde_json::{Map, Value};

use crate::approve::{at_a_terminal, on_the_terminal};
use crate::terminal::neutralise;

/// Times a field is asked again after an answer that is not of its kind.
const ASKED_AGAIN: usize = 2;

/// Who answers input requests in this process: the defaults when `accept_defaults`, else the
/// terminal when there is one, else nobody.
pub(crate) fn for_this_process(accept_defaults: bool) -> Option<Arc<dyn InputHandler>> {
    if accept_defaults {
        Some(Arc::new(AcceptDefaults))
    } else if at_a_terminal() {
        Some(Arc::new(Terminal))
    } else {
        None
    }
}

struct Terminal;

impl InputHandler for Terminal {
    fn answer(&self, request: InputRequest) -> BoxFuture<'static, InputAnswer> {
        Box::pin(on_the_terminal(move || prompt(&request), InputAnswer::Cancel))
    }
}

fn read_line() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
    }
}

fn say(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{text}");
    let _ = stderr.flush();
}

fn prompt(request: &InputRequest) -> InputAnswer {
    say(&format!("\nMCP server `{}` asks: {}\n", neutralise(&request.server), neutralise(&request.message)));
    match &request.kind {
        InputKind::Url(url) => {
            say(&format!("  Open {}\n  then press Enter when done, or type [d] to decline, [c] to cancel: ", neutralise(url)));
            match read_line().as_deref().map(str::trim) {
                Some("") => InputAnswer::Accept(Map::new()),
                Some("c" | "C") | None => InputAnswer::Cancel,
                Some(_) => InputAnswer::Decline,
            }
        }
        InputKind::Form { fields, .. } => {
            say("Answer? [y] fill in the form, [n] decline, [c] cancel: ");
            match read_line().as_deref().map(str::trim) {
                Some("y" | "Y" | "yes") => {}
                Some("c" | "C") | None => return InputAnswer::Cancel,
                Some(_) => return InputAnswer::Decline,
            }
            let mut content = Map::new();
            for field in fields {
                match ask_field(field) {
                    Some(Some(value)) => {
                        content.insert(field.name.clone(), value);
                    }
                    Some(None) => {}
                    None => return InputAnswer::Cancel,
                }
            }
            InputAnswer::Accept(content)
        }
        _ => InputAnswer::Decline,
    }
}

/// One field's value: `Some(None)` left out (its default, if any, applies), `None` when
/// standard input ended.
fn ask_field(field: &InputField) -> Option<Option<Value>> {
    let label = field.title.as_deref().unwrap_or(&field.name);
    let about = field.description.as_deref().map(|d| format!(" ({})", neutralise(d))).unwrap_or_default();
    let choices = match field.choices.is_empty() {
        true => String::new(),
        false => format!(" one of {}", neutralise(&field.choices.join(", "))),
    };
    let kind = match field.kind {
        FieldKind::Text => "text",
        FieldKind::Integer => "a whole number",
        FieldKind::Number => "a number",
        FieldKind::Boolean => "y or n",
        _ => "a value",
    };
    let default = field.default.as_ref().map(|d| format!(" [{}]", neutralise(&d.to_string()))).unwrap_or_default();
    let required = if field.required && field.default.is_none() { ", required" } else { "" };
    for _ in 0..=ASKED_AGAIN {
        say(&format!("  {}{about}: {kind}{choices}{required}{default}: ", neutralise(label)));
        let line = read_line()?;
        let text = line.trim();
        if text.is_empty() {
            if field.required && field.default.is_none() {
                continue;
            }
            return Some(None);
        }
        let value = match field.kind {
            FieldKind::Text => Value::String(text.to_string()),
            FieldKind::Integer => text.parse::<i64>().map(Value::from).unwrap_or(Value::Null),
            FieldKind::Number => {
                text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number).unwrap_or(Value::Null)
            }
            FieldKind::Boolean => match text {
                "y" | "Y" | "yes" | "true" => Value::Bool(true),
                "n" | "N" | "no" | "false" => Value::Bool(false),
                _ => Value::Null,
            },
            _ => Value::Null,
        };
        let allowed = field.choices.is_empty() || value.as_str().is_some_and(|v| field.choices.iter().any(|c| c == v));
        if of_kind(&value, field.kind) && allowed {
            return Some(Some(value));
        }
        say(&format!("  That is not {kind}{choices}.\n"));
    }
    Some(None)
}
