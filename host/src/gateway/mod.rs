//! What `exec-host serve` answers as an MCP code-mode gateway, apart from its transports:
//! the approval forms a client is asked, the sealed request state of a multi-round-trip
//! retry, and the task records of the Tasks extension. The server binary owns the process
//! wiring (listeners, the client connection, the running tasks); the protocol's decisions are
//! made here, beside the session they drive.

pub mod approval_forms;
pub mod request_state;
pub mod task_record;

/// Random bytes of an [`unguessable_id`].
const UNGUESSABLE_ID_BYTES: usize = 16;

/// A name a client must not guess (a task id, a waiting call's handle, a replica's name, an
/// elicitation's id): 16 random bytes from the operating system, in hex. Why not, when the
/// system has no randomness: nothing is named by a guessable stand-in.
pub fn unguessable_id() -> std::io::Result<String> {
    crate::support::hex::random_hex(UNGUESSABLE_ID_BYTES)
}
