//! The call path: the one funnel every tool call passes (`funnel`), the output types it
//! observes of tools that declare none (`observed`), what a call may do
//! (`policy`: rules, modes, approvals, hooks), the layered settings it reads (`settings`),
//! and what the host's children name kept out of the workspace tools' writes (`guards`).
//! Below it are the sandbox and the tool sources; above it the session, the only caller
//! of the funnel.

pub mod funnel;
pub mod guards;
pub mod observed;
pub mod policy;
pub mod settings;
