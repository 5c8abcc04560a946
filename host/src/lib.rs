//! exec-host runs model-written JavaScript "Exec" scripts inside a WebAssembly sandbox and
//! lets them orchestrate tools: the builtin workspace file tools and any tool registered
//! with the host.
//!
//! A script sees `tools.<name>(args)` (a promise of the tool's output),
//! `tools.ToolSearch({query})` and `console`; it has no filesystem, no network and no way
//! to compile code. Its budget counts only its own running time, never the time it waits
//! on tool calls, and every call goes through one [`Funnel`](funnel::Funnel).
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! use std::sync::Arc;
//! use exec_host::{DeferralTable, ExecRequest, Funnel, Pool, Registry, Sandbox, SettingsFiles, Workspace, builtin};
//!
//! let sandbox = Sandbox::new().await?;
//! let workspace = Arc::new(Workspace::open(".")?);
//! let registry = Arc::new(Registry::new(builtin::all(workspace))?);
//! let settings = Arc::new(SettingsFiles::new(None, vec![".exec-host/settings.json".into()]));
//! let funnel = Arc::new(Funnel::new(registry.clone()).with_settings(settings.clone()));
//!
//! // Per request: what the model is declared, and what an Exec of it may reach.
//! let now = settings.current()?;
//! let pool = Pool::build(registry.snapshot().definitions(), &now, &DeferralTable::default());
//! let declarations = pool.declarations();
//! let request = ExecRequest::new("return (await tools.ToolSearch({ query: '' })).total", pool.pooled().to_vec());
//! let outcome = sandbox.exec(request, funnel).await;
//! println!("{} declarations\n{}\n{}", declarations.len(), outcome.text(), outcome.summary());
//! # Ok(()) }
//! ```
//!
//! Modules: [`pool`] (the deferral table and the one builder of declarations and pool),
//! [`exec_tool`] (`Exec`'s name, parameters and constant description), [`search`]
//! (`tools.ToolSearch`), [`signature`] (JSON Schema to call forms), [`settings`], [`mcp`],
//! [`funnel`], [`runtime`], [`script`], [`tools`].

pub mod cli;
pub mod dts;
pub mod exec_tool;
pub mod funnel;
mod guest;
pub mod mcp;
pub mod pool;
pub mod runtime;
pub mod script;
pub mod search;
pub mod settings;
pub mod signature;
pub mod summary;
pub mod tools;

pub use funnel::{CallRequest, Funnel};
pub use pool::{Declaration, DeferralTable, ExecStatus, Pool};
pub use runtime::{Limits, Sandbox, SandboxOptions, SetupError};
pub use script::{ExecOutcome, ExecRequest, Failure};
pub use settings::{Settings, SettingsFiles};
pub use tools::builtin::{self, Workspace, WorkspaceError};
pub use tools::{CallContext, Image, Origin, Registry, Stage, Tool, ToolDefinition, ToolError, ToolOutput, ToolSource};

/// The interfaces the guest is allowed to import; see [`guest`] for why each is there.
pub mod contract {
    pub use crate::guest::{SANDBOX_INTERFACES, WASI_INTERFACES};
}
