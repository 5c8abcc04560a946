//! The catalogue: what a model and a script are given. The one deferral decision and the
//! one builder of declarations and pool (`pool`), `Exec` as a model sees it (`exec_tool`),
//! the declaration file of what a script sees (`typings`), `tools.ToolSearch` (`search`),
//! how it ranks (`relevance`) and the one renderer of JSON Schema as a call form
//! (`signature`), in that order: each uses only those after it.

pub mod exec_tool;
pub mod pool;
pub mod relevance;
pub mod search;
pub mod signature;
pub mod typings;
