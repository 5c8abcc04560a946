//! An MCP configuration file (`{"mcpServers": ...}`) from any text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = exec_host::mcp::McpConfig::parse(text, std::path::Path::new("servers.json"));
});
