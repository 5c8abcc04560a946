//! Rust futures as asyncio awaitables, and the end of all of them when Python exits.
//!
//! Every piece of work started for Python runs on this module's own tokio runtime and is
//! counted while it runs (a future awaited by Python, a sync tool on a worker thread). An
//! asyncio future cancelled by its task cancels the work's token; at exit, [`shutdown`]
//! refuses new work, cancels what runs and waits, with the GIL released, until nothing is
//! counted, so no thread of ours takes the GIL while the interpreter finalizes. Threads of
//! ours reach Python only through `Python::try_attach`, which gives way during finalization.

use std::future::Future;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use exec_host::CancellationToken;
use exec_host_embed::work;
use pyo3::BoundObject;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

/// The runtime every session and Exec of this process runs on. Its threads keep a Python
/// thread state for their whole life, so settling an awaitable there takes the GIL without
/// making and freeing one each time (see [`keep_thread_state`]).
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| work::runtime(|builder| builder.on_thread_start(keep_thread_state).on_thread_stop(leave_thread_state)))
}

thread_local! {
    /// What `PyGILState_Ensure` gave this thread when it made its kept thread state, and that
    /// state while it is released.
    static KEPT: std::cell::Cell<Option<(pyo3::ffi::PyGILState_STATE, *mut pyo3::ffi::PyThreadState)>> =
        const { std::cell::Cell::new(None) };
}

/// Gives a new runtime thread a Python thread state it keeps, with the GIL released: later
/// holds of the GIL there reuse it. Not once Python exits, when nothing may touch it.
fn keep_thread_state() {
    if work::closing() {
        return;
    }
    // SAFETY: the interpreter is initialised (this module was imported) and not finalizing
    // (`work::closing` is set at exit, before finalization). This thread holds no GIL yet: Ensure takes
    // it with a new thread state, which SaveThread releases while keeping the state.
    let kept = unsafe {
        let state = pyo3::ffi::PyGILState_Ensure();
        (state, pyo3::ffi::PyEval_SaveThread())
    };
    KEPT.set(Some(kept));
}

/// A runtime thread ends: its kept thread state is freed, unless Python exits (then it is left,
/// as nothing may touch the interpreter).
fn leave_thread_state() {
    let Some((state, thread_state)) = KEPT.take() else { return };
    if work::closing() {
        return;
    }
    // SAFETY: `thread_state` is this thread's, made by Ensure and released by SaveThread in
    // `keep_thread_state`; RestoreThread takes the GIL back with it, and Release with the state
    // Ensure gave frees it (and the GIL).
    unsafe {
        pyo3::ffi::PyEval_RestoreThread(thread_state);
        pyo3::ffi::PyGILState_Release(state);
    }
}

pub use exec_host_embed::work::work_token;

/// One piece of work counted while it lives (see `exec_host_embed::work`).
pub struct InFlight(#[allow(dead_code, reason = "held for its drop")] work::InFlight);

impl InFlight {
    /// Counts a new piece of work, or refuses it once Python exits.
    pub fn enter() -> PyResult<InFlight> {
        work::InFlight::enter().map(InFlight).map_err(|fault| PyRuntimeError::new_err(fault.to_string()))
    }
}

/// Starts `make(token)` on the runtime and gives the asyncio future that settles with its
/// result on the running loop. Cancelling that future cancels `token`.
pub fn awaitable<'py, T, F>(py: Python<'py>, make: impl FnOnce(CancellationToken) -> F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let counted = InFlight::enter()?;
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let future = event_loop.call_method0("create_future")?;
    let token = work_token();
    future.call_method1("add_done_callback", (CancelOnDone { token: token.clone() },))?;
    let work = make(token.clone());
    let (event_loop, settled) = (event_loop.unbind(), future.clone().unbind());
    work::hand_off(runtime(), async move {
        let outcome = tokio::select! {
            outcome = work => Some(outcome),
            () = token.cancelled() => None,
        };
        // Settling takes the GIL here, on a runtime thread with a kept thread state: the
        // loop's thread waits in `select` with the GIL released, so it is free at once.
        let _counted = counted;
        let Some(outcome) = outcome else { return };
        Python::try_attach(|py| {
            let (ok, value) = match outcome.and_then(|value| Ok(value.into_pyobject(py).map_err(Into::into)?.into_any().unbind()))
            {
                Ok(value) => (true, value),
                Err(error) => (false, error.into_value(py).into_any()),
            };
            let settle = Settle { future: Mutex::new(Some(settled)), ok, value: Mutex::new(Some(value)) };
            // A loop that closed meanwhile has nobody waiting.
            let _ = event_loop.bind(py).call_method1("call_soon_threadsafe", (settle,));
        });
    });
    Ok(future)
}

/// Sets an asyncio future's result or exception on its loop, unless it is done already.
#[pyclass(frozen)]
struct Settle {
    future: Mutex<Option<Py<PyAny>>>,
    ok: bool,
    value: Mutex<Option<Py<PyAny>>>,
}

#[pymethods]
impl Settle {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let future = self.future.lock().unwrap_or_else(|e| e.into_inner()).take();
        let value = self.value.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (Some(future), Some(value)) = (future, value) else { return Ok(()) };
        let future = future.bind(py);
        if future.call_method0("done")?.is_truthy()? {
            return Ok(());
        }
        match self.ok {
            true => future.call_method1("set_result", (value,))?,
            false => future.call_method1("set_exception", (value,))?,
        };
        Ok(())
    }
}

/// Cancels a piece of work when the asyncio future awaiting it is cancelled.
#[pyclass(frozen)]
struct CancelOnDone {
    token: CancellationToken,
}

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.token.cancel();
        }
        Ok(())
    }
}

/// Python exits: no new work starts, what runs is cancelled, and this waits (the GIL
/// released) until nothing runs and the Python threads of ours have left, or `timeout`
/// seconds have passed.
#[pyfunction]
pub fn shutdown(py: Python<'_>, timeout: f64) {
    let until = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
    py.detach(|| work::shut_down(until));
    crate::threads::stop(py, until);
    exec_host_embed::remove_private_store();
}

/// The state store and key file a framework adapter parks in when given none (see
/// `exec_host_embed::private_store`).
#[pyfunction]
pub fn private_store() -> PyResult<(String, String)> {
    let (store, key) =
        exec_host_embed::private_store().map_err(|fault| crate::session::SessionError::new_err(fault.to_string()))?;
    Ok((store.display().to_string(), key.display().to_string()))
}
