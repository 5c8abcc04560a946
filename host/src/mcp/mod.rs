//! MCP servers as tool sources: their configuration ([`config`]), the connection to each
//! ([`connection`]), the servers of a session and their lifecycle ([`servers`]), and one
//! server tool as a [`Tool`](crate::Tool) ([`tool`]). Every MCP tool is named
//! `mcp__<server>__<tool>`.

pub mod config;
mod connection;
pub mod servers;
pub mod tool;

pub use config::{ConfigError, McpConfig, ServerConfig, Transport};
pub use servers::{Connected, DEFAULT_CONNECT_TIMEOUT, McpServers, ServerState, StartError};

/// The prefix every MCP tool name starts with.
pub const TOOL_PREFIX: &str = "mcp__";

/// `mcp__<server>__<tool>`. The tool's own name is kept as it is, also when it is not a
/// JavaScript identifier (scripts then write `tools["mcp__srv__get-user.profile"](...)`).
/// Server names cannot contain `__` (see [`config::check_name`]), so the name splits back
/// one way only.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{TOOL_PREFIX}{server}__{tool}")
}

/// The server and tool a `mcp__<server>__<tool>` name stands for.
pub fn split_tool_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(TOOL_PREFIX)?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_whatever_the_tool_is_called() {
        for (server, tool) in [("srv", "fetch"), ("srv", "get-user.profile"), ("my-server", "a__b"), ("s3_bucket", "list")] {
            let name = tool_name(server, tool);
            assert!(name.starts_with("mcp__"));
            assert_eq!(split_tool_name(&name), Some((server, tool)), "{name}");
        }
        assert_eq!(split_tool_name("read_file"), None);
        assert_eq!(split_tool_name("mcp__srv"), None);
        assert_eq!(split_tool_name("mcp____tool"), None);
    }
}
