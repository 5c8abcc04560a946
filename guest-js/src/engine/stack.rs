//! `Error.prepareStackTrace`, natively: the engine's own stack text, line for line, and its
//! bare `not a function` said as the host says it (`tools.raed_file is not a function
//! (... Did you mean ...)`), so that a script that catches the error reads what an uncaught
//! one would report. The engine calls it as it makes every error, with the error and one
//! call site per frame.

use std::fmt::Write;

use rquickjs::function::This;
use rquickjs::{Ctx, Function, Object, Value};

use crate::exec_host::sandbox::tool_search;

use super::SCRIPT_NAME_TEXT;
use super::failure::in_script;

/// The engine's message for a call of something that is not a function.
const NOT_A_FUNCTION: &str = "not a function";

/// Makes [`prepare_stack_trace`] the realm's `Error.prepareStackTrace`.
pub(super) fn install(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    let error: Object = ctx.globals().get("Error")?;
    let prepare = Function::new(ctx.clone(), prepare_stack_trace)?.with_name("prepareStackTrace")?;
    error.set("prepareStackTrace", prepare)
}

/// The stack text of `error` from its call sites, as the engine writes it without a
/// `prepareStackTrace`; the message of a bare `not a function` thrown in the script is
/// replaced by the host's sentence on the way.
fn prepare_stack_trace<'js>(error: Value<'js>, sites: Value<'js>) -> String {
    let mut stack = String::new();
    let mut thrown_at = None;
    for site in sites.as_array().into_iter().flat_map(|sites| sites.iter::<Object>()).flatten() {
        let ask = |method: &str| -> Option<Value<'js>> { site.get::<_, Function>(method).ok()?.call((This(site.clone()),)).ok() };
        let text = |method: &str| ask(method).and_then(|value| value.as_string()?.to_string().ok());
        let number = |method: &str| ask(method).and_then(|value| value.as_number()).map_or(-1, |n| n as i64);
        let function = text("getFunctionName").filter(|name| !name.is_empty()).unwrap_or_else(|| "<anonymous>".into());
        if ask("isNative").and_then(|value| value.as_bool()) == Some(true) {
            let _ = writeln!(stack, "    at {function} (native)");
            continue;
        }
        let file = text("getFileName").unwrap_or_else(|| "<null>".into());
        let (line, column) = (number("getLineNumber"), number("getColumnNumber"));
        let place = if line == -1 { file.clone() } else { format!("{file}:{line}:{column}") };
        // A site with no function is where the engine was given the text itself (a syntax
        // error): written without a function name.
        match ask("getFunction").is_some_and(|value| value.is_null()) {
            true => _ = writeln!(stack, "    at {place}"),
            false => _ = writeln!(stack, "    at {function} ({place})"),
        }
        if thrown_at.is_none() && file == SCRIPT_NAME_TEXT && line > 0 && column > 0 {
            thrown_at = Some(in_script(line as u32, column as u32));
        }
    }
    if let (Some(error), Some(at)) = (error.as_object(), thrown_at)
        && error.get::<_, String>("name").is_ok_and(|name| name == "TypeError")
        && error.get::<_, String>("message").is_ok_and(|message| message == NOT_A_FUNCTION)
        && let Some(message) = tool_search::explain_not_a_function(at.line, at.column)
    {
        let _ = error.set("message", message);
    }
    stack
}
