//! Tool names with a meaning of their own: the names the sandbox reserves, and the
//! `mcp__<server>__<tool>` form every MCP tool is known by.

/// The tool that runs scripts.
pub const EXEC: &str = "Exec";

/// The shell command tool (Claude Code's name, so its rules apply as written).
pub const BASH: &str = "Bash";

/// The search entry on a script's `tools` object.
pub const TOOL_SEARCH: &str = "ToolSearch";

/// The tool a script's `fetch` calls, once per request (Claude Code's name, so its
/// `WebFetch(domain:...)` rules apply as written).
pub const WEB_FETCH: &str = "WebFetch";

/// Names the sandbox gives a meaning of its own (its search entry on `tools`, the tool that
/// runs scripts, the tool behind `fetch`); no tool may take them.
pub const RESERVED: &[&str] = &[TOOL_SEARCH, EXEC, WEB_FETCH];

/// Longest source name (an MCP server's, an API's) accepted.
pub const MAX_SOURCE_NAME_LEN: usize = 64;

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

/// The prefix every tool of an HTTP API starts with.
pub const API_PREFIX: &str = "api__";

/// `api__<source>__<operation>`; source names are checked as MCP server names are, so the
/// name splits back one way only.
pub fn api_name(source: &str, operation: &str) -> String {
    format!("{API_PREFIX}{source}__{operation}")
}

/// The prefixes of the tool names that belong to a named source, whose rules may name the
/// whole source (`mcp__<server>`, `api__<source>`).
pub const SOURCE_PREFIXES: &[&str] = &[MCP_PREFIX, API_PREFIX];

/// The prefix and source a `<prefix><source>__<tool>` name stands for, and its tool.
pub fn split_source_name(name: &str) -> Option<(&'static str, &str, &str)> {
    let prefix = SOURCE_PREFIXES.iter().find(|prefix| name.starts_with(**prefix))?;
    let (source, tool) = name[prefix.len()..].split_once("__")?;
    (!source.is_empty() && !tool.is_empty()).then_some((prefix, source, tool))
}

/// Whether a call of `name` is answered by another process (an MCP server, an HTTP API, a
/// page fetched, a confined command) rather than by code of this one: while such a call is
/// awaited, that process needs a core, so a waiting script does not keep one spinning.
pub fn answered_by_another_process(name: &str) -> bool {
    split_source_name(name).is_some() || name == BASH || name == WEB_FETCH
}

/// Source names (MCP servers, APIs) end up inside tool names (`mcp__<server>__<tool>`,
/// `api__<source>__<operation>`): they must be short, plain, and free of `__` so a tool
/// name splits one way only.
pub fn check_source_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("the name is empty");
    }
    if name.len() > MAX_SOURCE_NAME_LEN {
        return Err("the name is longer than 64 characters");
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err("the name may contain only letters, digits, `_` and `-`");
    }
    if name.contains("__") || name.starts_with('_') || name.ends_with('_') {
        return Err(
            "the name may not contain `__` or start or end with `_`: tool names would be ambiguous (mcp__<server>__<tool>)",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_of_servers_apis_fetch_and_commands_are_answered_by_another_process_and_the_rest_here() {
        for name in ["mcp__srv__add", "api__github__repos_get", BASH, WEB_FETCH] {
            assert!(answered_by_another_process(name), "{name}");
        }
        // A host function, a builtin tool, and names that only look like a source's.
        for name in ["add", "read_file", "mcp__srv", "api____op", "bash"] {
            assert!(!answered_by_another_process(name), "{name}");
        }
    }

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

    #[test]
    fn api_names_split_like_mcp_names() {
        assert_eq!(split_source_name(&api_name("github", "repos_get")), Some((API_PREFIX, "github", "repos_get")));
        assert_eq!(split_source_name(&mcp_name("srv", "x")), Some((MCP_PREFIX, "srv", "x")));
        assert_eq!(split_source_name("api__github"), None);
        assert_eq!(split_source_name("Read"), None);
    }
}
