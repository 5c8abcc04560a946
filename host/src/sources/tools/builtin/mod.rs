//! The builtin workspace tools: `ls`, `read_file`, `write_file`, `edit_file`, `glob`,
//! `grep`, and the shell, `Bash` (see `bash`). Each reads typed parameters (serde + schemars), runs on a blocking thread so a
//! slow disk never stalls the sandbox's executor, and answers a structured value whose
//! schema is its output schema. Limits sit at the source: every tool bounds what it reads
//! and what it returns.
//!
//! Each declares the intent to be deferred: with no configuration they sit in the pool
//! behind `Exec`, where a script reaches them; `nonDeferredTools` (or an embedding's
//! exemption list) puts any of them back flat.

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

pub use workspace::{GuardedPlace, Workspace, WorkspaceError, real_path};

use super::params::read_params;
use super::{CallContext, Effect, Tool, ToolDefinition, ToolError, ToolOutput};

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

/// Adapts a [`FileTool`] to [`Tool`]: the one place that decodes parameters, moves the work
/// off the executor and encodes the output.
pub struct Builtin<T: FileTool> {
    definition: ToolDefinition,
    workspace: Arc<Workspace>,
    tool: PhantomData<fn() -> T>,
}

impl<T: FileTool> Builtin<T> {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let mut definition = ToolDefinition::from_types::<T::Params, T::Output>(T::NAME, T::DESCRIPTION)
            .expect("builtin tool parameters are Rust structs, whose schemas are objects")
            .deferred(true)
            .with_effect(T::EFFECT);
        if let Some(line) = T::GUIDANCE {
            definition = definition.with_guidance(line);
        }
        Builtin { definition, workspace, tool: PhantomData }
    }
}

impl<T: FileTool> Tool for Builtin<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        let workspace = self.workspace.clone();
        Box::pin(async move {
            let params: T::Params = read_params(T::NAME, args)?;
            let cancel = context.cancel.clone();
            let output = tokio::task::spawn_blocking(move || T::run(&workspace, params, &|| cancel.is_cancelled()))
                .await
                .map_err(|e| ToolError::execution(format!("{} stopped unexpectedly: {e}", T::NAME)))??;
            let value = serde_json::to_value(output)
                .map_err(|e| ToolError::projection(format!("{}: the result could not be encoded: {e}", T::NAME)))?;
            Ok(ToolOutput::structured(value))
        })
    }
}

/// All builtin tools, working in `workspace`.
pub fn all(workspace: Arc<Workspace>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(Builtin::<ls::Ls>::new(workspace.clone())),
        Arc::new(Builtin::<read_file::ReadFile>::new(workspace.clone())),
        Arc::new(Builtin::<write_file::WriteFile>::new(workspace.clone())),
        Arc::new(Builtin::<edit_file::EditFile>::new(workspace.clone())),
        Arc::new(Builtin::<glob::Glob>::new(workspace.clone())),
        Arc::new(Builtin::<grep::Grep>::new(workspace.clone())),
        // Offered only where the settings turn it on (see `catalogue::pool`).
        Arc::new(bash::Bash::new(workspace)),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_lists_every_builtin_tool() {
        let workspace = std::sync::Arc::new(super::Workspace::open(".").unwrap());
        let names: Vec<String> = super::all(workspace).iter().map(|tool| tool.definition().name.clone()).collect();
        assert_eq!(names, ["ls", "read_file", "write_file", "edit_file", "glob", "grep", "Bash"]);
    }
}
