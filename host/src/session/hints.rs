//! The hints a refusal gives: the names close to one that reaches no tool, and what a
//! script called when the engine says only `not a function`.

use crate::catalogue::search::Reachable;
use crate::sandbox::runtime::{Position, Uncaught};
use crate::script::callee;
use crate::sources::tools::MAX_TOOL_NAME_LEN;
use crate::sources::tools::names::{TOOL_SEARCH, split_mcp_name};

use super::View;

/// Why a direct call names no tool, with the names close to it (declared, or pooled and
/// called from a script).
pub(super) fn unknown_tool(name: &str, view: &View) -> String {
    if name == TOOL_SEARCH {
        return "`ToolSearch` is not a tool of its own: call tools.ToolSearch({ query }) inside an Exec script".to_string();
    }
    let mut message = crate::calls::funnel::unknown_tool(name);
    let declared = view.declarations.iter().map(|declaration| (declaration.name.as_str(), ""));
    let pooled = view.pool.names().map(|pooled| (pooled, " (from an Exec script)"));
    if let Some(close) = close_names(name, declared.chain(pooled)) {
        message.push_str(&format!("; did you mean {close}?"));
    }
    message
}

/// Up to three of `candidates` (a name, and how it is reached) close to `name`, best first,
/// as `` `a` or `b` ``; `None` when none is close. Two MCP tool names are compared by their
/// tool parts alone: the shared `mcp__` and server would make every tool of a server look
/// alike, and the same tool on another server is a good guess for a wrong server name.
/// A name too long to be a tool's is not compared (the model chose it; comparing costs its
/// length).
fn close_names<'a>(name: &str, candidates: impl Iterator<Item = (&'a str, &'a str)>) -> Option<String> {
    if name.len() > MAX_TOOL_NAME_LEN {
        return None;
    }
    let similarity = |candidate: &str| match (split_mcp_name(name), split_mcp_name(candidate)) {
        (Some((_, tool)), Some((_, other_tool))) => strsim::normalized_damerau_levenshtein(tool, other_tool),
        _ => strsim::normalized_damerau_levenshtein(name, candidate),
    };
    let mut close: Vec<(f64, &str, &str)> = candidates
        .map(|(candidate, how)| (similarity(candidate), candidate, how))
        .filter(|(similarity, _, _)| *similarity >= 0.6)
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let shown: Vec<String> = close.iter().take(3).map(|(_, candidate, how)| format!("`{candidate}`{how}")).collect();
    (!shown.is_empty()).then(|| shown.join(" or "))
}

/// The engine's bare `TypeError: not a function` in an uncaught `error`, said as
/// [`not_a_function`] says it.
pub(super) fn explain_not_a_function(code: &str, error: &mut Uncaught, reachable: &Reachable) {
    // One parse: `not_a_function` reads the call at the innermost frame.
    if !callee::is_bare_not_a_function(error) {
        return;
    }
    let Some(position) = error.frames.first().map(|frame| frame.position) else { return };
    if let Some(message) = not_a_function(code, position, reachable) {
        error.error = format!("TypeError: {message}");
    }
}

/// The message of the engine's `not a function` thrown at `position` of `code`: what was
/// called (`tools.raed_file is not a function`), and for a `tools.<name>` this script
/// cannot reach, that it is none, with the closest names. `None` when no call is found
/// there. A script that catches the error reads this too (the guest asks for it).
pub(super) fn not_a_function(code: &str, position: Position, reachable: &Reachable) -> Option<String> {
    let callee = callee::callee_at(code, position)?;
    let mut message = format!("{callee} is not a function");
    if let Some(name) = callee.strip_prefix("tools.").filter(|name| !reachable.contains(name)) {
        let close = did_you_mean(name, reachable);
        message.push_str(&format!(
            " (`{name}` is not a tool this script can reach; tools.ToolSearch finds tools by keyword.{close})"
        ));
    }
    Some(message)
}

/// The hint a script's refusal of `name` ends with: ` Did you mean `a` or `b`?` naming the
/// reachable tools close to it, or nothing.
pub(super) fn did_you_mean(name: &str, reachable: &Reachable) -> String {
    let close = close_names(name, reachable.names().iter().map(|pooled| (pooled.as_str(), "")));
    close.map(|close| format!(" Did you mean {close}?")).unwrap_or_default()
}
