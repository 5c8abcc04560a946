//! The builtin workspace tools: `ls`, `read_file`, `write_file`, `edit_file`, `glob`,
//! `grep`. Each reads typed parameters (serde + schemars), runs on a blocking thread so a
//! slow disk never stalls the sandbox's executor, and answers a structured value whose
//! schema is its output schema. Limits sit at the source: every tool bounds what it reads
//! and what it returns.

mod edit_file;
mod glob;
mod grep;
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

pub use workspace::{Workspace, WorkspaceError};

use super::{CallContext, Tool, ToolDefinition, ToolError, ToolOutput};

/// A builtin tool: typed parameters in, a typed structured value out.
pub trait FileTool: Send + Sync + 'static {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
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
        let definition = ToolDefinition::from_types::<T::Params, T::Output>(T::NAME, T::DESCRIPTION)
            .expect("builtin tool parameters are Rust structs, whose schemas are objects");
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
            let params: T::Params =
                serde_json::from_value(Value::Object(args)).map_err(|e| ToolError::params(format!("{}: {e}", T::NAME)))?;
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
        Arc::new(Builtin::<grep::Grep>::new(workspace)),
    ]
}

/// The names of the builtin workspace tools, as [`all`] makes them.
pub const NAMES: [&str; 6] = [
    ls::Ls::NAME,
    read_file::ReadFile::NAME,
    write_file::WriteFile::NAME,
    edit_file::EditFile::NAME,
    glob::Glob::NAME,
    grep::Grep::NAME,
];

#[cfg(test)]
mod tests {
    #[test]
    fn names_lists_every_builtin_tool() {
        let workspace = std::sync::Arc::new(super::Workspace::open(".").unwrap());
        let names: Vec<String> = super::all(workspace).iter().map(|tool| tool.definition().name.clone()).collect();
        assert_eq!(names, super::NAMES);
    }
}
