//! Tool names with a meaning of their own: the names the sandbox reserves, and the
//! `mcp__<server>__<tool>` form every MCP tool is known by.

/// The tool that runs scripts.
pub const EXEC: &str = "Exec";

/// The shell command tool (Claude Code's name, so its rules apply as written).
pub const BASH: &str = "Bash";

/// The search entry on a script's `tools` object.
pub const TOOL_SEARCH: &str = "ToolSearch";

/// Names the sandbox gives a meaning of its own (its search entry on `tools`, the tool that
/// runs scripts); no tool may take them.
pub const RESERVED: &[&str] = &[TOOL_SEARCH, EXEC];

/// The prefix every MCP tool name starts with.
pub const MCP_PREFIX: &str = "mcp__";

/// `mcp__<server>__<tool>`. The tool's own name is kept as it is, also when it is not a
/// JavaScript identifier (scripts then write `tools["mcp__srv__get-user.profile"](...)`).
/// Server names cannot contain `__` (see [`crate::sources::mcp::McpConfig`]), so the name splits
/// back one way only.
pub fn mcp_name(server: &str, tool: &str) -> String {
    format!("{MCP_PREFIX}{server}__{tool}")
}

/// The server and tool a `mcp__<server>__<tool>` name stands for.
pub fn split_mcp_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(MCP_PREFIX)?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_names_round_trip_whatever_the_tool_is_called() {
        for (server, tool) in [("srv", "fetch"), ("srv", "get-user.profile"), ("my-server", "a__b"), ("s3_bucket", "list")] {
            let name = mcp_name(server, tool);
            assert!(name.starts_with("mcp__"));
            assert_eq!(split_mcp_name(&name), Some((server, tool)), "{name}");
        }
        assert_eq!(split_mcp_name("read_file"), None);
        assert_eq!(split_mcp_name("mcp__srv"), None);
        assert_eq!(split_mcp_name("mcp____tool"), None);
    }
}
