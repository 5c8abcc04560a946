//! The Node.js addon of exec-host: the native side of the `exec-host` package. It opens a
//! [`exec_host::Session`] (through `exec_host_embed`) with JavaScript functions as tools,
//! approver and input handler (`callables`), and runs all its work on this addon's tokio
//! runtime, off the JavaScript thread (`bridge`). Every operation that waits is started with an
//! id the package chose, and its outcome is delivered to the package's settler with that id;
//! the package (`index.js`) turns it into a promise. Values cross as JSON text both ways: the
//! package checks what a tool returns is plain data before it crosses.

pub mod bridge;
pub mod callables;
pub mod session;

use napi_derive::napi;

/// How many bytes a value from a JavaScript callable may take as JSON text.
#[napi]
pub const MAX_VALUE_BYTES: u32 = exec_host_embed::MAX_VALUE_BYTES as u32;
