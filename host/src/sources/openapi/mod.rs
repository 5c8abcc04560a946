//! HTTP APIs described by OpenAPI as tool sources: a description read with bounds
//! (`document`), its schemas with their local references expanded (`refs`), its operations
//! as what a tool takes and gives (`operations`), and a call's arguments as the request of
//! its operation (`request`).

pub mod document;
pub mod operations;
pub mod refs;
pub mod request;
