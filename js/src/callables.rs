//! JavaScript functions the host calls: a session's tools, its approver and its input
//! handler. The package gives each session one dispatcher, `(call, role, input, about)`, that
//! calls the function of `role` (a tool's index, or [`APPROVER`], [`INPUT`]) and answers
//! through [`settle_call`]; [`CANCEL`] tells it a call was abandoned, so the function's
//! `AbortSignal` fires. The dispatcher runs on the JavaScript thread; the host waits for its
//! answer off it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use exec_host::{CancellationToken, ToolError};
use exec_host_embed::work::{self, InFlight};
use exec_host_embed::{Callable, MAX_VALUE_BYTES};
use napi::Status;
use napi::bindgen_prelude::{FnArgs, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::bridge;

/// The role of the session's approver.
pub const APPROVER: i32 = -1;
/// The role of the session's input handler.
pub const INPUT: i32 = -2;
/// Not a role: the call was abandoned.
pub const CANCEL: i32 = -3;

/// What the dispatcher is called with: the call's id, the role, the input as JSON text, and
/// for a tool what its call is (JSON text).
pub type DispatchArgs = FnArgs<(u32, i32, String, Option<String>)>;

/// A session's dispatcher. Weak: a call in progress belongs to an operation, which keeps the
/// process alive from the JavaScript side.
pub type Dispatcher = ThreadsafeFunction<DispatchArgs, Unknown<'static>, DispatchArgs, Status, false, true>;

/// Hands `args` to `dispatcher`, counted as sent to the JavaScript thread.
fn dispatch(dispatcher: &Dispatcher, args: DispatchArgs) -> Status {
    bridge::note_sent();
    dispatcher.call(args, ThreadsafeFunctionCallMode::NonBlocking)
}

/// An answer on its way back to the call that waits for it.
type Answer = oneshot::Sender<Result<Value, ToolError>>;

/// The calls into JavaScript that wait for an answer, by id.
fn waiting() -> &'static Mutex<HashMap<u32, Answer>> {
    static WAITING: OnceLock<Mutex<HashMap<u32, Answer>>> = OnceLock::new();
    WAITING.get_or_init(Mutex::default)
}

/// Answers the call `id`: with `text` as JSON when `ok`, else with `text` as the error
/// message the script reads. An answer for a call no longer waited for is dropped.
#[napi]
pub fn settle_call(id: u32, ok: bool, text: String) {
    let sent = bridge::sent();
    let Some(answer) = waiting().lock().unwrap_or_else(|e| e.into_inner()).remove(&id) else { return };
    let outcome = match ok {
        true if text.len() > MAX_VALUE_BYTES => {
            Err(ToolError::execution(format!("TypeError: the tool returned more than {} MiB of data", MAX_VALUE_BYTES >> 20)))
        }
        true => serde_json::from_str(&text).map_err(|e| ToolError::execution(format!("TypeError: the tool returned {e}"))),
        false => Err(ToolError::execution(text)),
    };
    if answer.send(outcome).is_ok() {
        bridge::linger(sent);
    }
}

/// One of a session's JavaScript functions.
#[derive(Clone)]
pub struct JsFunction {
    dispatcher: Arc<Dispatcher>,
    role: i32,
}

impl JsFunction {
    pub fn new(dispatcher: Arc<Dispatcher>, role: i32) -> Self {
        JsFunction { dispatcher, role }
    }
}

/// A call waiting for its answer; dropped unanswered, it is forgotten and JavaScript is told.
struct Waiting<'a> {
    id: u32,
    dispatcher: &'a Dispatcher,
    answered: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        if waiting().lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id).is_some() {
            let cancel = FnArgs { data: (self.id, CANCEL, String::new(), None) };
            let _ = dispatch(self.dispatcher, cancel);
        }
    }
}

fn gone() -> ToolError {
    ToolError::execution("the JavaScript environment is closing")
}

impl Callable for JsFunction {
    async fn call(
        &self,
        args: Value,
        about: Option<Value>,
        _exec: Option<&str>,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ToolError> {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        let _counted = InFlight::enter().map_err(|_| gone())?;
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        waiting().lock().unwrap_or_else(|e| e.into_inner()).insert(id, answer);
        let mut pending = Waiting { id, dispatcher: &self.dispatcher, answered: false };
        let called = FnArgs { data: (id, self.role, args.to_string(), about.map(|about| about.to_string())) };
        if dispatch(&self.dispatcher, called) != Status::Ok {
            pending.answered = true;
            waiting().lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            return Err(gone());
        }
        let answer = tokio::select! {
            answer = work::answer(answered) => answer.unwrap_or_else(|_| Err(ToolError::execution("the call ended without an answer"))),
            () = async { match cancel { Some(cancel) => cancel.cancelled().await, None => std::future::pending().await } } => {
                return Err(ToolError::execution("the call was cancelled"));
            }
        };
        pending.answered = true;
        answer
    }
}
