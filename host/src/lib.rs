//! exec-host runs model-written JavaScript "Exec" scripts inside a WebAssembly sandbox and
//! lets them orchestrate tools: the builtin workspace file tools, the tools of MCP servers,
//! and any tool an embedding registers.
//!
//! A script sees `tools.<name>(args)` (a promise of the tool's output),
//! `tools.ToolSearch({query})` and `console`; it has no filesystem, no network and no way
//! to compile code. Its budget counts only its own running time, never the time it waits
//! on tool calls, and every call, nested or direct, goes through one funnel.
//!
//! The front door is the [`Session`]: it owns the tools, the settings, the pool behind
//! `Exec` and the sandbox, and serves an agent loop with two operations.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use exec_host::{CancellationToken, Message, Session, ToolCall, json};
//!
//! let session = Session::builder().workspace("/srv/project").build().await?;
//! let mut history = vec![Message::user("Summarise the notes.")];
//!
//! // Before each request: the declarations, and the messages to append (the announcement).
//! let prepared = session.prepare(&history)?;
//! history.extend(prepared.append);
//! // ... send `prepared.declarations` and `history` to the model; it answers with a call:
//! let call = ToolCall::new("toolu_1", "Exec", json!({ "code": "return (await tools.glob({ pattern: '*.md' })).matches" }));
//! let result = session.call(call, CancellationToken::new()).await;   // never panics
//! println!("{}", result.text());                                       // what the model reads
//! # Ok(()) }
//! ```
//!
//! The crate's layers, each a folder, from the top down (each uses only those
//! after it; `docs/architecture.md` has the map and where to change what):
//!
//! | layer | what it holds |
//! | --- | --- |
//! | [`gateway`] | what `exec-host serve` answers as an MCP gateway, apart from its transports: each request's plan, approval forms, request states, waiting calls, tasks |
//! | `session` | [`Session`] and its builder: one agent's tools, settings, pool and sandbox |
//! | `conversation` | [`Message`]s and their rendering for model APIs ([`Provider`]), the announcement, a result's projections ([`ToolResult`]), the [`results`] store |
//! | `catalogue` | the deferral decision and the pool ([`Pool`]), [`exec_tool`], `tools.ToolSearch`, the call forms and [`typings`] |
//! | `script` | a script's text read on the host: bounded parsing, TypeScript, callee naming |
//! | `calls` | the one funnel, the [`Approver`] and the rest of the policy, the [`settings`] |
//! | `sandbox` | the wasmtime runtime ([`Sandbox`], [`Limits`]), the [`guest`] contract, the [`conformance`] cases |
//! | `sources` | the [`Tool`] trait and the builtin tools, the [`mcp`] servers, the host's own children |
//! | [`state`] | what outlives a process: the store (a private folder, or Redis), every entry sealed |
//! | `support` | the words every layer says about a call ([`ToolError`], [`Stage`], [`Approval`], [`ParkRequest`]), bounded reading of a text file ([`text_file`]), an error with its causes as one sentence ([`error_sentence`]), the rule that a host-private place is outside the workspace ([`check_outside_workspace`]) |
//!
//! Beside the types at the root, a few namespaces hold a sub-API of their own: [`settings`],
//! [`mcp`], [`results`], [`exec_tool`], [`typings`], [`announcement`], [`limits`],
//! [`guest`], [`conformance`], [`state`] and [`text_file`].

#![warn(unnameable_types)]
mod calls;
mod catalogue;
mod conversation;
pub mod gateway;
mod sandbox;
mod script;
mod session;
mod sources;
pub mod state;
mod support;

/// Entry points of the fuzz targets in `fuzz/` into parsers the crate keeps private.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;

pub use calls::policy::{ApprovalRequest, Approver};
pub use catalogue::pool::{Declaration, DeferralTable, ExecStatus, Pool};
pub use catalogue::search::{SearchMatch, SearchResult};
pub use conversation::message::{ContentBlock, Message, Role};
pub use conversation::provider::{ANTHROPIC_TOOL_SEARCH, ANTHROPIC_TOOL_SEARCH_BETA, Provider};
pub use conversation::render::{
    CallFailure, ClientProjection, Compaction, MAX_KEPT_RESULT_CHARS, ModelProjection, ParkedExec, PendingApproval, RunningExec,
    ToolResult, append_results, calls_summary, tool_results_message,
};
pub use conversation::reply::{Reply, ReplyError, StopReason};
pub use sandbox::runtime::{
    CallOutcome, CallWatcher, ConsoleLevel, ConsoleWatcher, Failure, Frame, Limits, LimitsError, NestedCall, NotResumable,
    Position, Sandbox, SandboxOptions, SetupError, SyntaxError, Uncaught,
};
pub use session::{
    CallOptions, DEFAULT_PARKED_TTL, DEFAULT_RUNNING_LEASE, FINISHED_KEPT, MAX_PARKED_LISTED, MAX_RUNNING_EXECS, Prepared,
    ResumeError, Session, SessionBuilder, SessionError, ToolCall,
};
pub use sources::tools::builtin::{Backend, LocalBackend};
/// The name of the builtin tool that runs shell commands (offered when a settings layer says
/// `"enableBash": true`).
pub use sources::tools::names::BASH;
pub use sources::tools::{
    CallContext, CallProgress, DefinitionError, Effect, Image, ProgressSink, ProgressWatcher, RegistryError, Tool,
    ToolDefinition, ToolOutput, ToolProgress, ToolSource, WorkspaceError,
};
pub use state::values::ValueBounds;
pub use support::private::{InsideWorkspace, check_outside_workspace};
pub use support::report::error_sentence;
pub use support::vocabulary::{Approval, Origin, ParkRequest, Stage, ToolError};

pub use calls::settings;
pub use catalogue::{exec_tool, typings};
pub use conversation::announcement;
pub use conversation::results;
pub use sandbox::conformance;
/// Confined shell commands, the engine of the `Bash` tool.
pub use sources::children::inherited_descriptors_stay_here;
pub use sources::command;
pub use sources::mcp;
pub use sources::openapi;
pub use support::text_file;

/// The named bounds an embedder may want to know: the defaults of [`Limits`]
/// and the fixed caps of what the host keeps for a script, a hook or a guest.
pub mod limits {
    pub use crate::calls::policy::HOOK_OUTPUT_BYTES;
    pub use crate::conversation::render::{CHARS_PER_TOKEN, COMPACT_OVER_TOKENS, MAX_KEPT_RESULT_CHARS};
    pub use crate::sandbox::runtime::{
        DEFAULT_BUDGET, DEFAULT_MAX_ARGUMENT_BYTES, DEFAULT_MAX_CALLS, DEFAULT_MAX_IMAGES, DEFAULT_MAX_LOG_CHARS,
        DEFAULT_MAX_MEMORY_BYTES, DEFAULT_MAX_RESULT_CHARS, ENGINE_RESERVED_BYTES, ENGINE_STACK_BYTES, IN_FLIGHT_ARGUMENTS,
        MAX_ARGUMENT_DEPTH, MAX_GUEST_COMPONENT_BYTES, MAX_MEMORY_BYTES, MAX_PENDING_TIMERS, MAX_TRACE_BYTES, MAX_TRACE_EVENTS,
        MIN_MEMORY_BYTES, RECORDED_ARGS_CHARS, RECORDED_MESSAGE_CHARS,
    };
    pub use crate::sources::tools::MAX_PROGRESS_MESSAGE_CHARS;
    pub use crate::sources::tools::MAX_TOOL_NAME_LEN;
}

/// The guest component: the built-in one, where compiled guests are cached, another one
/// given instead, and the contract every guest meets (the interfaces it may import; see
/// `wit/README.md`).
pub mod guest {
    pub use crate::sandbox::guest::{SANDBOX_INTERFACES, WASI_INTERFACES};
    pub use crate::sandbox::runtime::{
        GUEST_COMPONENT, GUEST_SOURCES_SHA256, GuestCacheReport, GuestSource, default_cache_dir, preinitialise,
    };
}

/// What an embedding needs to name, so it depends on `exec-host` alone: the abort signal,
/// JSON values, and the future a [`Tool`] returns.
#[doc(no_inline)]
pub use futures::future::BoxFuture;
#[doc(no_inline)]
pub use serde_json::{self, Map, Value, json};
#[doc(no_inline)]
pub use tokio_util::sync::CancellationToken;

#[cfg(test)]
mod layering;
