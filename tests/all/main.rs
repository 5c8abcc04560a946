//! The integration tests: one binary, one module per concern, every test through the real
//! guest component and the real host.

mod apis;
mod attacks;
mod bash;
mod budget;
mod build;
mod builtin_tools;
mod fetch;
mod hardening;
mod intl;
mod isolation;
mod mcp;
mod parking;
mod policy;
mod pool;
mod running;
mod runtime;
mod session;
mod standard;
mod state;
mod values;
