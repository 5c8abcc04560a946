//! `exec_host._native`: the Rust side of the Python package. It opens a [`exec_host::Session`]
//! with Python callables as tools, approver and input handler (`callables`, through `exec_host_embed`), and
//! runs its work on this module's tokio runtime, each call an asyncio awaitable (`bridge`);
//! the pure-Python package around it (`python/exec_host`) is the public API.

mod bridge;
mod callables;
mod session;
mod threads;
mod values;

use pyo3::prelude::*;

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add_function(wrap_pyfunction!(session::open_session, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::shutdown, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::private_store, module)?)?;
    module.add_class::<session::NativeSession>()?;
    module.add("ExecHostError", py.get_type::<session::ExecHostError>())?;
    module.add("SessionError", py.get_type::<session::SessionError>())?;
    module.add("ResumeError", py.get_type::<session::ResumeError>())?;
    module.add("MAX_VALUE_BYTES", values::MAX_VALUE_BYTES)?;
    Ok(())
}
