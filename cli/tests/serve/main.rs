//! `exec-host serve` as its clients and operators meet it, one module per way in: the
//! set-ups of the MCP clients people use (`clients`), an rmcp client and raw lines over
//! stdio (`stdio`), the official TypeScript SDK client and the MCP
//! Inspector over stdio and HTTP with the HTTP service's guards (`sdk`), clients of MCP
//! 2026-07-28 through the official Python SDK: multi-round-trip approvals, tasks and
//! replicas sharing Redis, behind nginx too (`mrtr`), OpenTelemetry traces as a collector receives them
//! (`traces`), and the deployment files in `deploy/` (`deploy`). The soak (`serve_soak.rs`)
//! keeps a binary of its own, so that its load never slows these suites' timed steps.

mod clients;
#[path = "../common/mod.rs"]
mod common;
mod deploy;
mod mrtr;
mod sdk;
mod stdio;
mod traces;
