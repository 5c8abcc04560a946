//! The builtin workspace tools: `ls`, `read_file`, `write_file`, `edit_file`, `glob`,
//! `grep`, and the shell, `Bash` (see `bash`). Each is declared with typed parameters
//! (serde + schemars) and its output schema; its calls go to the session's [`Backend`]
//! (`backend`), which for the workspace on this machine runs it on a blocking thread so a
//! slow disk never stalls the sandbox's executor. Limits sit at the source: every tool bounds what it reads
//! and what it returns.
//!
//! Each declares the intent to be deferred: with no configuration they sit in the pool
//! behind `Exec`, where a script reaches them; `nonDeferredTools` (or an embedding's
//! exemption list) puts any of them back flat.

mod backend;
mod bash;
mod edit_file;
mod glob;
mod grep;
mod ignored;
mod ls;
mod read_file;
mod workspace;
mod write_file;

use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub use backend::{Backend, LocalBackend, refused_kind};
pub use workspace::{GuardedPlace, Workspace, WorkspaceError};

use super::{CallContext, Effect, Tool, ToolDefinition, ToolOutput};
use crate::support::vocabulary::ToolError;

/// The builtin tools whose argument `path` names a place in the workspace; a permission rule
/// for one of them may carry a path pattern (`read_file(secrets/**)`).
pub const PATH_TOOLS: [&str; 6] = ["ls", "read_file", "write_file", "edit_file", "glob", "grep"];

/// A builtin tool: typed parameters in, a typed structured value out.
pub trait FileTool: Send + Sync + 'static {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    /// A line for the system prompt's section on using the tools, if the tool has one.
    const GUIDANCE: Option<&'static str> = None;
    /// What a call may change.
    const EFFECT: Effect;
    type Params: DeserializeOwned + JsonSchema + Send;
    type Output: Serialize + JsonSchema + Send;

    /// Runs on a blocking thread. `cancelled` turns true when the caller gave up; long
    /// loops check it.
    fn run(workspace: &Workspace, params: Self::Params, cancelled: &dyn Fn() -> bool) -> Result<Self::Output, ToolError>;
}

/// Adapts a [`FileTool`] to [`Tool`]: its declaration, and its calls given to the
/// session's [`Backend`] with their abort signal.
pub struct Builtin<T: FileTool> {
    definition: ToolDefinition,
    backend: Arc<dyn Backend>,
    tool: PhantomData<fn() -> T>,
}

impl<T: FileTool> Builtin<T> {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        let mut definition = ToolDefinition::from_types::<T::Params, T::Output>(T::NAME, T::DESCRIPTION)
            .expect("builtin tool parameters are Rust structs, whose schemas are objects")
            .deferred(true)
            .with_effect(T::EFFECT);
        if let Some(line) = T::GUIDANCE {
            definition = definition.with_guidance(line);
        }
        Builtin { definition, backend, tool: PhantomData }
    }
}

impl<T: FileTool> Tool for Builtin<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move { self.backend.file(T::NAME, args, context.cancel).await.map(ToolOutput::structured) })
    }
}

/// All builtin tools, working through `backend`.
pub fn all(backend: Arc<dyn Backend>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(Builtin::<ls::Ls>::new(backend.clone())),
        Arc::new(Builtin::<read_file::ReadFile>::new(backend.clone())),
        Arc::new(Builtin::<write_file::WriteFile>::new(backend.clone())),
        Arc::new(Builtin::<edit_file::EditFile>::new(backend.clone())),
        Arc::new(Builtin::<glob::Glob>::new(backend.clone())),
        Arc::new(Builtin::<grep::Grep>::new(backend.clone())),
        // Offered only where the settings turn it on (see `catalogue::pool`).
        Arc::new(bash::Bash::new(backend)),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_lists_every_builtin_tool() {
        let workspace = std::sync::Arc::new(super::Workspace::open(".").unwrap());
        let names: Vec<String> = super::all(std::sync::Arc::new(super::LocalBackend::new(workspace)))
            .iter()
            .map(|tool| tool.definition().name.clone())
            .collect();
        assert_eq!(names, ["ls", "read_file", "write_file", "edit_file", "glob", "grep", "Bash"]);
    }
}
