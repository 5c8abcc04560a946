//! HTTP APIs described by OpenAPI as tool sources. An API is configured beside the MCP
//! servers (`apis`, see [`ApiConfig`]); each of its operations becomes a deferred tool
//! `api__<source>__<operation>` whose calls pass the same funnel as every other tool.
//!
//! The parts: a description read with bounds (`document`), its schemas with their local
//! references expanded (`refs`), its operations as what a tool takes and gives
//! (`operations`), a call's arguments as the request of its operation (`request`), the
//! configuration (`config`), a loaded API (`source`), the client credentials grant (`token`), a
//! person's sign-in with the authorization code grant (`authorization`) and one operation as a
//! tool (`tool`).

mod authorization;
mod config;
mod document;
mod operations;
mod refs;
mod request;
mod source;
mod token;
mod tool;

pub(crate) use config::ApiEntry;
pub use config::{
    ApiAuth, ApiConfig, ApiLimits, DEFAULT_CONCURRENT_REQUESTS, DEFAULT_REDIRECTS, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_RESPONSE_BYTES, KeyPlace, MAX_RESPONSE_BYTES, SpecPlace,
};
pub use document::{MAX_SPEC_BYTES, SpecError};
pub use operations::{MAX_DESCRIPTION_CHARS, MAX_OPERATION_NAME_LEN, MAX_OPERATIONS, SkippedOperation};
pub use refs::{MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES};
pub(crate) use source::load;
pub use source::{ApiError, log_in, sign_in_state};
pub use token::MAX_TOKEN_RESPONSE_BYTES;
pub use tool::MAX_ERROR_EXCERPT_CHARS;
