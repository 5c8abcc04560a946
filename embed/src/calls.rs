//! The ids of what a package starts, and what a callback is told of the call it serves. An
//! Exec started from a package carries how many Execs deep it runs in its id (a tool of the
//! package may start an Exec of its own), so that a callback reached from its script can say
//! so and the package can bound the depth.

use std::sync::atomic::{AtomicU64, Ordering};

use exec_host::Origin;
use serde_json::{Value, json};

/// What separates an Exec's id from its depth.
const DEPTH_MARK: &str = "~depth-";

/// The id of an Exec started from a package: `given`, or a new one, with how many Execs deep
/// it runs (0: not from a tool) after it, for [`call_about`] to read back.
pub fn call_id(given: Option<String>, depth: u32) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = given.unwrap_or_else(|| format!("exec-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    format!("{id}{DEPTH_MARK}{depth}")
}

/// What a callback is told of the call it serves: `exec_id` (the id of the Exec whose script
/// made it, as the caller gave it) and `call` (its place among the script's calls), or
/// `call_id` for a direct call; and `depth`, how many Execs deep that script runs, which the
/// package bounds.
pub fn call_about(origin: &Origin) -> Value {
    match origin {
        Origin::Nested { exec_call_id, call } => {
            json!({ "exec_id": exec_id(exec_call_id), "call": call, "depth": depth_of(exec_call_id) })
        }
        other => json!({ "exec_id": null, "call": null, "call_id": other.tool_use_id(), "depth": 0 }),
    }
}

/// How many Execs deep the Exec of `id` (made by [`call_id`]) runs.
pub(crate) fn depth_of(id: &str) -> u32 {
    id.rsplit_once(DEPTH_MARK).and_then(|(_, depth)| depth.parse().ok()).unwrap_or(0)
}

/// The id of an Exec as its caller gave it (without the depth [`call_id`] adds).
pub(crate) fn exec_id(exec_call_id: &str) -> &str {
    exec_call_id.rsplit_once(DEPTH_MARK).map_or(exec_call_id, |(id, _)| id)
}

/// The id of the Exec whose script made a call, as the host knows it.
pub(crate) fn exec_of(origin: &Origin) -> Option<&str> {
    match origin {
        Origin::Nested { exec_call_id, .. } => Some(exec_call_id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_depth_is_carried_and_read_back() {
        let id = call_id(Some("run-7".into()), 2);
        let about = call_about(&Origin::Nested { exec_call_id: id.as_str().into(), call: 3 });
        assert_eq!(about, json!({ "exec_id": "run-7", "call": 3, "depth": 2 }));
        assert_eq!(exec_id(&id), "run-7");
        assert_eq!(depth_of(&id), 2);
        // An id the caller gave with the mark inside keeps all of it.
        assert_eq!(exec_id(&call_id(Some("a~depth-x".into()), 0)), "a~depth-x");
    }

    #[test]
    fn new_ids_differ() {
        assert_ne!(call_id(None, 0), call_id(None, 0));
    }
}
