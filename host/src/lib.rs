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
//! Modules, from the front door down: [`session`], [`policy`] (permission rules, modes,
//! approvals, hooks), [`announce`] (the names-only
//! announcement and its broadcast state), [`pool`] (the deferral table and the one builder
//! of declarations and pool), [`render`] (a result's model, history and client
//! projections), [`results`] (compacted results and `view_tool_call`), [`message`] and
//! [`provider`] (the conversation, and its rendering for model APIs), [`exec_tool`],
//! [`search`], [`settings`], [`mcp`], [`runtime`] (the sandbox and its limits), [`tools`];
//! beside them [`conformance`], the WIT-level cases run against a guest.

pub mod announce;
mod callee;
mod children;
pub mod conformance;
mod dts;
pub mod exec_tool;
mod funnel;
mod guest;
pub mod mcp;
pub mod message;
mod parse;
pub mod policy;
pub mod pool;
pub mod provider;
pub mod render;
pub mod results;
pub mod runtime;
pub mod search;
pub mod session;
pub mod settings;
pub mod signature;
pub mod text_file;
pub mod tools;
mod typescript;

/// Entry points of the fuzz targets in `fuzz/` into parsers the crate keeps private; built
/// only with `--cfg fuzzing`, which `scripts/fuzz` sets.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::mcp::stdio::read_messages;

    /// Answers a `tools.ToolSearch` query from `pool`.
    pub fn search(pool: &[crate::ToolDefinition], params: &crate::search::SearchParams) -> crate::search::SearchResult {
        crate::search::Index::new(pool).search(pool, params)
    }

    /// Reads a hook's stdout, as a `PreToolUse` and as a `PostToolUse` hook's; whether it
    /// asked for anything.
    pub fn hook_answer(stdout: &str) -> bool {
        let answer = crate::policy::hooks::pre_answer(stdout);
        let blocks = crate::policy::hooks::post_block_reason(stdout).is_some();
        answer.updated_input.is_some() || answer.decision.is_some() || blocks
    }

    /// Reads `source` as TypeScript as the host does when the engine finds it does not
    /// parse: erased, positions in a failure mapped back, a failed callee named. Whether it
    /// was erased.
    pub fn typescript(source: &str) -> bool {
        let failure = "TypeError: not a function\n    at <anonymous> (script.js:1:3)\n    at f (script.js:4294967295:9)";
        let _ = crate::callee::name_callee(source, failure);
        match crate::typescript::erase(source) {
            Ok(Ok(erased)) => {
                let _ = erased.remap(failure);
                let _ = erased.remap("SyntaxError: x (line 1, column 1) (line 99999999999, column 2)");
                true
            }
            _ => false,
        }
    }

    /// Saves the "allow always" rule for tool `tool` into the settings file
    /// `.exec-host/settings.json` of the workspace `dir`, which holds `existing`; what the file
    /// says afterwards.
    pub fn save_rule(dir: &std::path::Path, existing: &str, tool: &str) -> Result<String, String> {
        let file = std::path::Path::new(".exec-host/settings.json");
        std::fs::create_dir_all(dir.join(".exec-host")).map_err(|e| e.to_string())?;
        std::fs::write(dir.join(file), existing).map_err(|e| e.to_string())?;
        let rule = crate::settings::Rule::exactly(tool).ok_or("no rule means exactly this tool")?;
        let workspace = cap_std::fs::Dir::open_ambient_dir(dir, cap_std::ambient_authority()).map_err(|e| e.to_string())?;
        let files = crate::settings::SettingsFiles::new(vec![crate::settings::SettingsSource::File(dir.join(file))]);
        files.add_allow_rule(Some(&workspace), file, &rule).map_err(|e| e.to_string())?;
        std::fs::read_to_string(dir.join(file)).map_err(|e| e.to_string())
    }
}

pub use dts::checkable_script;
pub use message::{ContentBlock, Message, Role};
pub use policy::{Approval, ApprovalRequest, Approver};
pub use pool::{Declaration, DeferralTable, ExecStatus, Pool};
pub use provider::Provider;
pub use render::{CallFailure, ClientProjection, Compaction, ModelProjection, ToolResult};
pub use runtime::{
    CallOutcome, ConsoleLevel, DEFAULT_WAIT_SPIN, Failure, Limits, NestedCall, Sandbox, SandboxOptions, SetupError,
};
pub use session::{CallOptions, Prepared, Session, SessionBuilder, SessionError, ToolCall};
pub use settings::{Layer, PermissionMode, Settings};
pub use tools::{CallContext, Effect, Image, Origin, Stage, Tool, ToolDefinition, ToolError, ToolOutput, ToolSource};

/// What an embedding needs to name, so it depends on `exec-host` alone: the abort signal,
/// JSON values, and the future a [`Tool`] returns.
pub use futures::future::BoxFuture;
pub use serde_json::{self, Map, Value, json};
pub use tokio_util::sync::CancellationToken;

/// The interfaces the guest is allowed to import; see the guest boundary's documentation.
pub mod contract {
    pub use crate::guest::{SANDBOX_INTERFACES, WASI_INTERFACES};
}
