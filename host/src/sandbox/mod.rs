//! The sandbox: the WIT contract with the guest (`guest`: generated bindings, the imports a
//! guest may have, the checks before linking), the wasmtime runtime that runs one Exec per
//! store (`runtime`), and the conformance cases that pin the contract (`conformance`). It
//! reaches tools only through the `ScriptTools` trait the session implements, and names
//! only the tools' vocabulary (outputs, errors, stages) below it.

pub mod conformance;
pub mod guest;
pub mod runtime;
