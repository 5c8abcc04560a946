//! One QuickJS runtime with two contexts, and the loop that runs a script.
//!
//! * The **compiler** context has the Eval intrinsic and is only ever used to parse a
//!   script into bytecode; no script code runs in it.
//! * The **sandbox** context has no Eval intrinsic, so the engine itself cannot compile a
//!   string there: `eval`, `Function` and friends are unusable at the engine level, and the
//!   prelude only turns that into the `EvalError` scripts expect. Bytecode read into this
//!   context runs with this context as its realm.
//!
//! A script is the body of an async function. The loop drains the job queue, then looks at
//! the script's promise; while it is pending and calls are in flight or timers pending it
//! blocks in the host's `wait-next`, hands each finished call to the promise the script
//! holds, and runs each due timer's callback as a task of its own (after the jobs queued
//! before it). An error thrown by a timer's or a `queueMicrotask` callback is uncaught:
//! the run fails with it, as a throw from the script's body would.
//!
//! Here are the engine, its per-run state and the run loop; `compile` parses and loads
//! bytecode, `host` builds the host object the prelude closes over, `tools_object` a run's
//! `tools`, `errors` the realm's errors made natively.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::ffi::CStr;

use rquickjs::context::intrinsic;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Object, Persistent, Promise, Runtime, Value, qjs};

use crate::builtins;
use crate::encode::{Bounds, PlainPrototypes};
use crate::exec_host::sandbox::tools;
use crate::web;
use crate::{RunOptions, ScriptError};

mod compile;
mod errors;
mod failure;
mod host;
mod stack;
mod tools_object;

use compile::{compile, load, refuse_import};
use errors::error;
use failure::{internal, thrown, thrown_value, unserializable};
use host::host_object;
use tools_object::make_tools;

/// The script becomes the body of this function. The prefix has no line break, so line
/// numbers in messages are the script's own; columns on line 1 are corrected for it.
const SCRIPT_PREFIX: &str = "(async function () {";
const SCRIPT_SUFFIX: &str = "\n})";
const SCRIPT_NAME: &CStr = c"script.js";
/// [`SCRIPT_NAME`] as the engine writes it in a stack.
const SCRIPT_NAME_TEXT: &str = "script.js";
const PRELUDE: &str = include_str!("../prelude.js");
const PRELUDE_NAME: &CStr = c"prelude.js";
const WEB: &str = web::SCRIPT;
const WEB_NAME: &CStr = c"web.js";
const ATOMICS_NAME: &CStr = c"atomics.js";
const INTL_NAME: &CStr = c"intl.js";

type CompilerIntrinsics = (intrinsic::Eval, intrinsic::RegExpCompiler, intrinsic::RegExp);
type SandboxIntrinsics = (
    intrinsic::Date,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::WeakRef,
);

struct Engine {
    runtime: Runtime,
    compiler: Context,
    sandbox: Context,
    /// `{fallback, ToolSearch, errorParts, encodeResult}` from the prelude.
    hooks: Persistent<Object<'static>>,
}

/// The functions that settle the promise of one started call.
type Settlers = (Persistent<Function<'static>>, Persistent<Function<'static>>);

thread_local! {
    static ENGINE: OnceCell<Engine> = const { OnceCell::new() };
    /// `Object.prototype` and `Array.prototype` of the sandbox realm, as the engine built them.
    static PLAIN: OnceCell<PlainPrototypes> = const { OnceCell::new() };
    /// Calls started and not yet delivered, by id; empty with a pending script promise
    /// means that promise can never settle.
    static PENDING: RefCell<HashMap<u32, Settlers>> = RefCell::new(HashMap::new());
    /// The callback of each pending timer, by id; cleared timers are removed at once, so
    /// empty (with no call pending) means nothing can wake the script.
    static TIMERS: RefCell<HashMap<u32, Persistent<Function<'static>>>> = RefCell::new(HashMap::new());
    /// The first error a callback the engine runs for the script threw (a `queueMicrotask`
    /// callback): the run fails with it once the job that threw it returns.
    static UNCAUGHT: RefCell<Option<Persistent<Value<'static>>>> = const { RefCell::new(None) };
    /// The reachable tools' names of this run; each one's function keeps its place here.
    static TOOL_NAMES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    /// What one call's arguments may take, set for each run.
    static BOUNDS: Cell<Bounds> = const { Cell::new(Bounds { bytes: 0, depth: 0 }) };
    /// UTF-16 units of one console line passed to the host, set for each run.
    static LOG_LINE_CHARS: Cell<u32> = const { Cell::new(0) };
    /// State of `Math.random` (xorshift64*), seeded by the host for every run.
    static RANDOM_STATE: Cell<u64> = const { Cell::new(0x9E37_79B9_7F4A_7C15) };
}

pub fn init() {
    with_engine(|_| ());
}

fn with_engine<R>(f: impl FnOnce(&Engine) -> R) -> R {
    ENGINE.with(|cell| f(cell.get_or_init(|| Engine::new().expect("the sandbox engine failed to start"))))
}

impl Engine {
    fn new() -> Result<Engine, String> {
        let runtime = Runtime::new().map_err(|e| e.to_string())?;
        let compiler = Context::custom::<CompilerIntrinsics>(&runtime).map_err(|e| e.to_string())?;
        let sandbox = Context::custom::<SandboxIntrinsics>(&runtime).map_err(|e| e.to_string())?;
        // SAFETY: the runtime outlives the engine that holds it; `refuse_import` matches the
        // loader signature and never reads its opaque pointer.
        unsafe { qjs::JS_SetModuleLoaderFunc(compiler.get_runtime_ptr(), None, Some(refuse_import), std::ptr::null_mut()) };
        let prelude =
            compile(&compiler, PRELUDE, PRELUDE_NAME, PRELUDE).map_err(|e| format!("the prelude does not compile: {e:?}"))?;
        let web = compile(&compiler, WEB, WEB_NAME, WEB).map_err(|e| format!("the web globals do not compile: {e:?}"))?;
        let atomics = compile(&compiler, builtins::ATOMICS, ATOMICS_NAME, builtins::ATOMICS)
            .map_err(|e| format!("Atomics does not compile: {e:?}"))?;
        let intl = compile(&compiler, builtins::intl::SCRIPT, INTL_NAME, builtins::intl::SCRIPT)
            .map_err(|e| format!("Intl does not compile: {e:?}"))?;
        install_shared_memory(&sandbox);
        let hooks = sandbox.with(|ctx| -> rquickjs::Result<_> {
            let object: Object = ctx.globals().get::<_, Object>("Object")?.get("prototype")?;
            let array: Object = ctx.globals().get::<_, Object>("Array")?.get("prototype")?;
            let _ = PLAIN.with(|plain| plain.set(PlainPrototypes::of(&object, &array)));
            let host = host_object(&ctx)?;
            web::natives(&ctx, &host)?;
            let factory: Function = load(&ctx, &prelude)?;
            let hooks: Object = factory.call((host.clone(),))?;
            let install_web: Function = load(&ctx, &web)?;
            install_web.call::<_, ()>((host,))?;
            let install_atomics: Function = load(&ctx, &atomics)?;
            install_atomics.call::<_, ()>(())?;
            let intl_natives = Object::new(ctx.clone())?;
            builtins::intl::natives(&ctx, &intl_natives)?;
            let install_intl: Function = load(&ctx, &intl)?;
            install_intl.call::<_, ()>((intl_natives,))?;
            install_random(&ctx)?;
            stack::install(&ctx)?;
            Ok(Persistent::save(&ctx, hooks))
        });
        let hooks = hooks.map_err(|e| format!("the prelude failed: {e}"))?;
        Ok(Engine { runtime, compiler, sandbox, hooks })
    }
}

/// Growable `SharedArrayBuffer`s: QuickJS makes them only through allocator hooks (it
/// allocates their maximum size at once). The hooks allocate from the engine's own heap, so
/// a shared buffer counts against the script's heap limit like any other, and a refused
/// allocation is the script's catchable out-of-memory error.
fn install_shared_memory(sandbox: &Context) {
    unsafe extern "C" fn allocate(opaque: *mut std::ffi::c_void, size: qjs::size_t) -> *mut std::ffi::c_void {
        // SAFETY: `opaque` is the sandbox context, which lives as long as the runtime;
        // `js_malloc` throws the engine's out-of-memory error itself when it returns null.
        unsafe { qjs::js_malloc(opaque.cast(), size) }
    }
    unsafe extern "C" fn free(opaque: *mut std::ffi::c_void, data: *mut std::ffi::c_void) {
        // SAFETY: `data` came from `allocate` with the same context.
        unsafe { qjs::js_free(opaque.cast(), data) }
    }
    let hooks = qjs::JSSharedArrayBufferFunctions {
        sab_alloc: Some(allocate),
        sab_free: Some(free),
        sab_dup: None,
        sab_opaque: sandbox.with(|ctx| ctx.as_raw().as_ptr().cast()),
    };
    // SAFETY: QuickJS copies the hooks; the context they are given outlives every buffer,
    // since the engine (runtime and contexts) lives as long as the instance.
    unsafe { qjs::JS_SetSharedArrayBufferFunctions(sandbox.get_runtime_ptr(), &hooks) };
}

/// `Math.random` from a per-run seed: a snapshot would otherwise replay one sequence forever.
fn install_random(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    let math: Object = ctx.globals().get("Math")?;
    let random = Function::new(ctx.clone(), || -> f64 {
        RANDOM_STATE.with(|state| {
            let mut x = state.get();
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            state.set(x);
            // 53 random bits scaled into [0, 1)
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        })
    })?
    .with_name("random")?;
    math.set("random", random)
}

/// Runs one script; see the module documentation.
pub fn run(script: &str, tool_names: Vec<String>, options: &RunOptions) -> Result<Option<String>, ScriptError> {
    with_engine(|engine| {
        engine.runtime.set_memory_limit(usize::try_from(options.heap_bytes).unwrap_or(usize::MAX));
        engine.runtime.set_max_stack_size(options.stack_bytes as usize);
        // xorshift must not start at zero
        RANDOM_STATE.with(|s| s.set(options.random_seed | 1));
        BOUNDS.set(Bounds {
            bytes: usize::try_from(options.argument_bytes).unwrap_or(usize::MAX),
            depth: options.argument_depth as usize,
        });
        LOG_LINE_CHARS.set(options.log_line_chars);
        builtins::intl::set_default_time_zone(&options.time_zone);
        let source = format!("{SCRIPT_PREFIX}{script}{SCRIPT_SUFFIX}");
        let bytecode = compile(&engine.compiler, &source, SCRIPT_NAME, script)?;
        engine.sandbox.with(|ctx| run_in(&ctx, engine, &bytecode, tool_names))
    })
}

fn run_in(ctx: &Ctx<'_>, engine: &Engine, bytecode: &[u8], tool_names: Vec<String>) -> Result<Option<String>, ScriptError> {
    let hooks = engine.hooks.clone().restore(ctx).map_err(|e| internal(ctx, e))?;
    let tools = make_tools(ctx, &hooks, &tool_names).map_err(|e| internal(ctx, e))?;
    TOOL_NAMES.set(tool_names);
    ctx.globals().set("tools", tools).map_err(|e| internal(ctx, e))?;

    let main: Function = load(ctx, bytecode).map_err(|e| thrown(ctx, &hooks, e))?;
    // The script's `this` is the global object, as a classic script's is, in strict code too.
    let this = rquickjs::function::This(ctx.globals());
    let promise: Promise = main.call((this,)).map_err(|e| thrown(ctx, &hooks, e))?;
    loop {
        drain_jobs(ctx, &hooks)?;
        match promise.state() {
            PromiseState::Resolved => {
                let value: Value = match promise.result() {
                    Some(Ok(value)) => value,
                    Some(Err(e)) => return Err(thrown(ctx, &hooks, e)),
                    None => unreachable!("a resolved promise has a result"),
                };
                return encode_result(ctx, &hooks, value);
            }
            PromiseState::Rejected => {
                let e = match promise.result::<Value>() {
                    Some(Err(e)) => e,
                    _ => rquickjs::Error::Exception,
                };
                return Err(thrown(ctx, &hooks, e));
            }
            PromiseState::Pending => {}
        }
        if PENDING.with(|pending| pending.borrow().is_empty()) && TIMERS.with(|timers| timers.borrow().is_empty()) {
            return Err(ScriptError::NeverSettles);
        }
        let events = tools::wait_next();
        if events.is_empty() {
            return Err(ScriptError::NeverSettles);
        }
        for event in events {
            match event {
                tools::Event::Call(done) => settle(ctx, done),
                tools::Event::Timer(id) => {
                    // A timer's callback is a task: the jobs queued before it run first, and
                    // once the script's promise has settled no further timer runs.
                    drain_jobs(ctx, &hooks)?;
                    if !matches!(promise.state(), PromiseState::Pending) {
                        break;
                    }
                    fire_timer(ctx, &hooks, id)?;
                }
            }
        }
    }
}

/// Runs the job queue dry; fails with the first error a callback reported as uncaught.
fn drain_jobs<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>) -> Result<(), ScriptError> {
    while ctx.execute_pending_job() {
        if UNCAUGHT.with(|uncaught| uncaught.borrow().is_some()) {
            break;
        }
    }
    match UNCAUGHT.with(|uncaught| uncaught.borrow_mut().take()) {
        None => Ok(()),
        Some(error) => match error.restore(ctx) {
            Ok(reason) => Err(thrown_value(ctx, hooks, reason)),
            Err(e) => Err(thrown(ctx, hooks, e)),
        },
    }
}

/// Runs the callback of a due timer, unless it was cleared meanwhile.
fn fire_timer<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, id: u32) -> Result<(), ScriptError> {
    let Some(callback) = TIMERS.with(|timers| timers.borrow_mut().remove(&id)) else {
        return Ok(());
    };
    let callback = callback.restore(ctx).map_err(|e| internal(ctx, e))?;
    callback.call::<_, ()>(()).map_err(|e| thrown(ctx, hooks, e))
}

/// Hands a finished call to the promise the script holds.
fn settle(ctx: &Ctx<'_>, done: tools::Completion) {
    let Some((resolve, reject)) = PENDING.with(|pending| pending.borrow_mut().remove(&done.id)) else {
        return;
    };
    match (resolve.restore(ctx), reject.restore(ctx)) {
        (Ok(resolve), Ok(reject)) => settle_with(ctx, resolve, reject, done.outcome),
        _ => {
            ctx.catch();
        }
    }
}

/// Resolves or rejects one call's promise with its outcome.
fn settle_with<'js>(ctx: &Ctx<'js>, resolve: Function<'js>, reject: Function<'js>, outcome: Result<tools::ToolValue, String>) {
    let settled = match outcome {
        Ok(tools::ToolValue::Text(text)) => {
            rquickjs::String::from_str(ctx.clone(), &text).and_then(|text| resolve.call::<_, ()>((text,)))
        }
        Ok(tools::ToolValue::Json(json)) => match ctx.json_parse(json) {
            Ok(value) => resolve.call::<_, ()>((value,)),
            Err(_) => {
                let reason = ctx.catch();
                reject.call::<_, ()>((reason,))
            }
        },
        Err(message) => reject.call::<_, ()>((error(ctx, &message),)),
    };
    // Only an engine failure (out of memory) gets here; the script's promise says the rest.
    if let Err(rquickjs::Error::Exception) = settled {
        ctx.catch();
    }
}

fn encode_result<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, value: Value<'js>) -> Result<Option<String>, ScriptError> {
    let encode: Function = hooks.get("encodeResult").map_err(|e| internal(ctx, e))?;
    match encode.call::<_, Option<String>>((value,)) {
        Ok(text) => Ok(text),
        Err(e) => Err(unserializable(ctx, hooks, e)),
    }
}
