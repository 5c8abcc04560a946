//! The tool sources: the `Tool` trait and its vocabulary, the live registry and the builtin
//! workspace tools (`tools`), the tools of MCP servers (`mcp`), and how the host starts its
//! own children, hooks and stdio servers (`children`), the confined shell commands of the
//! `Bash` tool (`command`), HTTP APIs described by OpenAPI (`openapi`), and the web requests of
//! a script's `fetch` (`web_fetch`). The bottom layer: it uses nothing above it.

pub mod children;
pub mod command;
pub mod mcp;
pub(crate) mod oauth;
pub mod openapi;
pub mod tools;
pub mod web_fetch;
