//! What `exec-host serve` answers as an MCP code-mode gateway, apart from its transports.
//! A request's plan (`plan`) is chosen once from the protocol revision it speaks; each plan
//! has its module: `elicitation` (2025-11-25: the client is asked by request), `waiting` and
//! `request_state` (2026-07-28: the forms and questions travel in the call's answer, the
//! retry carries the answers), `tasks` and `task_record` (2026-07-28 with the Tasks
//! extension). The server binary owns the process wiring (listeners, the client connection,
//! its figures); the protocol's decisions are made here, beside the session they drive.

pub mod approval_forms;
pub mod elicitation;
pub mod events;
pub mod plan;
pub mod request_state;
pub mod task_record;
pub mod tasks;
pub mod tool_result;
pub mod waiting;

/// Random bytes of an [`unguessable_id`].
const UNGUESSABLE_ID_BYTES: usize = 16;

/// A name a client must not guess (a task id, a waiting call's handle, a replica's name, an
/// elicitation's id): 16 random bytes from the operating system, in hex. Why not, when the
/// system has no randomness: nothing is named by a guessable stand-in.
pub fn unguessable_id() -> std::io::Result<String> {
    crate::support::hex::random_hex(UNGUESSABLE_ID_BYTES)
}
