//! The sandbox interface: everything the workspace tools and the command tool do (list,
//! read, write, edit, search, run a command) goes through one [`Backend`], and every
//! operation takes the call's abort signal, so that any backend, a remote one included,
//! carries cancellation. The tools themselves only read their arguments and give the
//! backend's answer; [`LocalBackend`], the workspace on this machine (cap-std for files,
//! the confined `sources::command` for commands), is the one built in.
//!
//! The settings may name the backend a session must use (`"workspaceBackend": "local"`); a
//! kind that is not available is refused when the session starts, with a sentence, rather
//! than quietly replaced by another.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{FileTool, Workspace, edit_file, glob, grep, ls, read_file, write_file};
use crate::sources::command::{self, CommandEvent, CommandOutcome, Confinement, Layers};
use crate::sources::tools::params::read_params;
use crate::support::report::error_sentence;
use crate::support::vocabulary::ToolError;

/// The kind of the backend built in: the workspace on this machine.
pub const LOCAL: &str = "local";

/// Where the workspace tools and the command tool do their work.
pub trait Backend: Send + Sync {
    /// Its kind, as the settings' `workspaceBackend` names it.
    fn kind(&self) -> &str;

    /// Runs the workspace tool `tool` (`ls`, `read_file`, `write_file`, `edit_file`, `glob`,
    /// `grep`) with its arguments: its structured answer. `cancel` fires when the caller
    /// gives up; the operation then stops promptly.
    fn file(&self, tool: &str, args: Map<String, Value>, cancel: CancellationToken) -> BoxFuture<'_, Result<Value, ToolError>>;

    /// Runs a shell command for at most `timeout`, passing each event to `watch`; `cancel`
    /// kills it. Fails when the command could not start (or commands cannot run here).
    fn command<'a>(
        &'a self,
        command: &'a str,
        timeout: Duration,
        cancel: &'a CancellationToken,
        watch: &'a (dyn Fn(CommandEvent) + Send + Sync),
    ) -> BoxFuture<'a, Result<CommandOutcome, ToolError>>;
}

/// The workspace on this machine: files through its cap-std directory handle, commands
/// confined to it.
pub struct LocalBackend {
    workspace: Arc<Workspace>,
    /// Whether commands may use the network, asked at each command (the settings'
    /// `bashNetwork`, which may change while the session runs).
    network: Arc<dyn Fn() -> bool + Send + Sync>,
    /// Places of the host commands may never read, even beneath the system folders.
    private: Vec<PathBuf>,
}

impl LocalBackend {
    pub(crate) fn new(workspace: Arc<Workspace>) -> Self {
        LocalBackend { workspace, network: Arc::new(|| false), private: Vec::new() }
    }

    /// Commands may never read `places` (files or folders of the host: a state key, tokens),
    /// even beneath the system folders they read, such as `/etc`.
    pub fn keeping_private(mut self, places: impl IntoIterator<Item = PathBuf>) -> Self {
        self.private.extend(places);
        self
    }

    /// Commands may use the network whenever `allowed` says so (else it stays closed).
    pub fn allowing_network(mut self, allowed: Arc<dyn Fn() -> bool + Send + Sync>) -> Self {
        self.network = allowed;
        self
    }

    /// The workspace at `root`, for an embedding's backend that hands some operations on
    /// to it. It keeps `.git` and `.exec-host` read-only; the session's own local backend
    /// also keeps its settings files and what its hooks and servers run read-only.
    pub fn open(root: &std::path::Path) -> Result<Self, super::WorkspaceError> {
        Ok(LocalBackend::new(Arc::new(Workspace::open(root)?)))
    }

    /// What a command of this workspace is confined to, now: the places it may not write
    /// change as the hooks and servers do.
    fn confinement(&self) -> Result<Confinement, ToolError> {
        let root = self.workspace.root().ok_or_else(|| ToolError::execution("the workspace's real path is not known"))?;
        let mut confinement = Confinement::new(root, Layers::default());
        confinement.read_only = self.workspace.protected_places();
        confinement.network = (self.network)();
        confinement.private = self.private.clone();
        Ok(confinement)
    }
}

impl Backend for LocalBackend {
    fn kind(&self) -> &str {
        LOCAL
    }

    fn file(&self, tool: &str, args: Map<String, Value>, cancel: CancellationToken) -> BoxFuture<'_, Result<Value, ToolError>> {
        let workspace = self.workspace.clone();
        match tool {
            ls::Ls::NAME => Box::pin(run_file::<ls::Ls>(workspace, args, cancel)),
            read_file::ReadFile::NAME => Box::pin(run_file::<read_file::ReadFile>(workspace, args, cancel)),
            write_file::WriteFile::NAME => Box::pin(run_file::<write_file::WriteFile>(workspace, args, cancel)),
            edit_file::EditFile::NAME => Box::pin(run_file::<edit_file::EditFile>(workspace, args, cancel)),
            glob::Glob::NAME => Box::pin(run_file::<glob::Glob>(workspace, args, cancel)),
            grep::Grep::NAME => Box::pin(run_file::<grep::Grep>(workspace, args, cancel)),
            other => {
                let error = ToolError::discovery(format!("`{other}` is not a workspace operation of the {LOCAL} backend"));
                Box::pin(std::future::ready(Err(error)))
            }
        }
    }

    fn command<'a>(
        &'a self,
        command: &'a str,
        timeout: Duration,
        cancel: &'a CancellationToken,
        watch: &'a (dyn Fn(CommandEvent) + Send + Sync),
    ) -> BoxFuture<'a, Result<CommandOutcome, ToolError>> {
        Box::pin(async move {
            if let Some(why) = command::unavailable() {
                return Err(ToolError::execution(format!(
                    "commands cannot run on this system: {} (`exec-host doctor` checks each layer of the confinement)",
                    error_sentence(why)
                )));
            }
            let confinement = self.confinement()?;
            command::run(command, &confinement, timeout, cancel, watch)
                .await
                .map_err(|why| ToolError::execution(format!("the command did not start: {}", error_sentence(&why))))
        })
    }
}

/// Runs the file tool `T` on a blocking thread (a slow disk never stalls the executor) and
/// encodes its answer: the one place that does.
async fn run_file<T: FileTool>(
    workspace: Arc<Workspace>,
    args: Map<String, Value>,
    cancel: CancellationToken,
) -> Result<Value, ToolError> {
    let params: T::Params = read_params(T::NAME, args)?;
    let output = tokio::task::spawn_blocking(move || T::run(&workspace, params, &|| cancel.is_cancelled()))
        .await
        .map_err(|e| ToolError::execution(format!("{} stopped unexpectedly: {e}", T::NAME)))??;
    serde_json::to_value(output).map_err(|e| ToolError::projection(format!("{}: the result could not be encoded: {e}", T::NAME)))
}

/// Why no backend of kind `wanted` (the settings' `workspaceBackend`) can serve a session
/// whose backend is `have`, if none can.
pub fn refused_kind(wanted: &str, have: &str) -> Option<String> {
    (wanted != have).then(|| {
        format!(
            "the settings ask for the workspace backend `{wanted}`, which is not available here: this session's is `{have}` (the one built in is `{LOCAL}`; an embedding may give its own with SessionBuilder::workspace_backend)"
        )
    })
}
