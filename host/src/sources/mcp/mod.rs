//! MCP servers as tool sources: their configuration ([`McpConfig`], the `mcpServers` file
//! format), the connection to each (`connection`, with `stdio` reading a child's messages
//! defensively), the servers of a session and their
//! lifecycle (`servers`), and one server tool as a [`Tool`](crate::Tool) (`tool`). Every
//! MCP tool is named `mcp__<server>__<tool>`. An HTTP server behind OAuth is signed in to
//! by `oauth` (the loopback redirect, a person's bounded wait, step-up) with its tokens kept
//! in the `credentials` file; a server's input requests reach the handler of the client
//! whose call it is (`connection`'s callers, the types in `tools::input`). The servers'
//! resources reach scripts through two tools (`resources`); a tool that runs only as a task
//! is called as one (`task`).
//!
//! Only the configuration, the states a session reports, sign-in and input handling are
//! public: the rmcp client stays inside the crate.

mod callers;
mod config;
mod connection;
pub use crate::sources::tools::input;
pub(crate) mod link;
pub(crate) mod oauth;
pub(crate) mod resources;
mod server_process;
pub(crate) mod servers;
pub(crate) mod stdio;
pub(crate) mod task;
pub(crate) mod tool;

pub use crate::sources::tools::names::{MCP_PREFIX, mcp_name, split_mcp_name};
pub use config::{ConfigError, McpConfig, ServerConfig, Transport};
pub use connection::{ConnectError, LoggedIn, LoginError, log_in};
// The sign-in is shared with HTTP APIs; its names stay here, where the MCP client's users
// have always found them.
pub use crate::sources::oauth::{
    CredentialsError, CredentialsFile, DEFAULT_LOGIN_WAIT, Holder, Login, MAX_CREDENTIALS_FILE_BYTES, MAX_STEP_UPS, OAuthClient,
    SignIn, SignInError,
};
pub use resources::{
    LIST_RESOURCES, MAX_RESOURCE_DESCRIPTION_CHARS, MAX_RESOURCE_LABEL_CHARS, MAX_RESOURCE_PAGES, MAX_RESOURCE_URI_BYTES,
    MAX_RESOURCES_LISTED, READ_RESOURCE, RESOURCE_TOOLS,
};
pub use server_process::{INHERITED_ENV, SpawnError};
pub use servers::{
    Connected, DEFAULT_CONNECT_TIMEOUT, DEFAULT_QUEUED_BYTES, NotStarted, ServerLimits, ServerState, StartError, ToolsError,
};
pub use stdio::MAX_MESSAGE_BYTES;
pub use task::{MAX_TASK_ID_BYTES, TASK_TTL_MS};
pub use tool::SkippedTool;
