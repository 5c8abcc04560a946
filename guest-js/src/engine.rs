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

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::ffi::CStr;

use rquickjs::atom::PredefinedAtom;
use rquickjs::context::intrinsic;
use rquickjs::function::{Func, Opt};
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Object, Persistent, Promise, Runtime, Value, qjs};

use crate::encode::{self, Bounds, PlainPrototypes};
use crate::exec_host::sandbox::{console, tool_search, tools};
use crate::web;
use crate::{RunOptions, ScriptError};

/// The script becomes the body of this function. The prefix has no line break, so line
/// numbers in messages are the script's own; columns on line 1 are corrected for it.
const SCRIPT_PREFIX: &str = "(async function () {";
const SCRIPT_SUFFIX: &str = "\n})";
const SCRIPT_NAME: &CStr = c"script.js";
const PRELUDE: &str = include_str!("prelude.js");
const PRELUDE_NAME: &CStr = c"prelude.js";
const WEB: &str = include_str!("web.js");
const WEB_NAME: &CStr = c"web.js";

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
    /// `{fallback, ToolSearch, describeError, encodeResult}` from the prelude.
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
        let prelude = compile(&compiler, PRELUDE, PRELUDE_NAME, PRELUDE.lines().count())
            .map_err(|e| format!("the prelude does not compile: {e:?}"))?;
        let web = compile(&compiler, WEB, WEB_NAME, WEB.lines().count())
            .map_err(|e| format!("the web globals do not compile: {e:?}"))?;
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
            install_random(&ctx)?;
            Ok(Persistent::save(&ctx, hooks))
        });
        let hooks = hooks.map_err(|e| format!("the prelude failed: {e}"))?;
        Ok(Engine { runtime, compiler, sandbox, hooks })
    }
}

/// The native hooks the prelude closes over. Nothing else can reach them.
fn host_object<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let host = Object::new(ctx.clone())?;
    host.set("toolFunction", Func::from(|ctx: Ctx<'js>, name: rquickjs::String<'js>| tool_function(&ctx, name, None)))?;
    host.set(
        "search",
        Func::from(|ctx: Ctx<'js>, args: Opt<Value<'js>>| -> rquickjs::Result<Promise<'js>> {
            let (promise, resolve, reject) = ctx.promise()?;
            let label = || "tools.ToolSearch()".to_string();
            let answer = encode::arguments(
                &ctx,
                plain(),
                BOUNDS.get(),
                label,
                args.0.unwrap_or_else(|| Value::new_undefined(ctx.clone())),
            )
            .map_err(|message| type_error(&ctx, &message))
            .and_then(|json| tool_search::search(&json).map_err(|message| error(&ctx, &message)))
            .and_then(|json| ctx.json_parse(json).map_err(|_| ctx.catch()));
            match answer {
                Ok(value) => resolve.call::<_, ()>((value,))?,
                Err(reason) => reject.call::<_, ()>((reason,))?,
            }
            Ok(promise)
        }),
    )?;
    host.set(
        "log",
        Func::from(|level: u32, message: String, cut_units: f64| {
            let level = match level {
                1 => console::Level::Info,
                2 => console::Level::Warn,
                3 => console::Level::Error,
                4 => console::Level::Debug,
                _ => console::Level::Log,
            };
            console::write(level, &message, cut_units.max(0.0) as u64);
        }),
    )?;
    host.set(
        "startTimer",
        Func::from(|ctx: Ctx<'js>, delay_ms: u32, callback: Function<'js>| -> rquickjs::Result<u32> {
            match tools::start_timer(delay_ms) {
                Ok(id) => {
                    TIMERS.with(|timers| timers.borrow_mut().insert(id, Persistent::save(&ctx, callback)));
                    Ok(id)
                }
                Err(message) => Err(ctx.throw(range_error(&ctx, &message))),
            }
        }),
    )?;
    host.set(
        "cancelTimer",
        Func::from(|id: u32| {
            if TIMERS.with(|timers| timers.borrow_mut().remove(&id)).is_some() {
                tools::cancel_timer(id);
            }
        }),
    )?;
    host.set(
        "reportError",
        Func::from(|ctx: Ctx<'js>, error: Value<'js>| {
            UNCAUGHT.with(|uncaught| {
                let mut uncaught = uncaught.borrow_mut();
                if uncaught.is_none() {
                    *uncaught = Some(Persistent::save(&ctx, error));
                }
            });
        }),
    )?;
    host.set("logLineChars", Func::from(|| LOG_LINE_CHARS.get()))?;
    host.set("prefixLength", SCRIPT_PREFIX.len() as u32)?;
    Ok(host)
}

/// `tools` for one run: a function per reachable name and `ToolSearch`, in that order, as
/// own properties of an object whose prototype is the prelude's fallback proxy. The own
/// properties go on first and the proxy last: with the proxy already behind it, every
/// assignment would consult the proxy.
fn make_tools<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, names: &[String]) -> rquickjs::Result<Object<'js>> {
    // SAFETY: a live context; the new object (or the exception marker) is owned and handed over once.
    let table = unsafe { Value::from_raw(ctx.clone(), qjs::JS_NewObjectProto(ctx.as_raw().as_ptr(), qjs::JS_NULL)) };
    if table.is_exception() {
        return Err(rquickjs::Error::Exception);
    }
    let table = Object::from_value(table)?;
    for (index, name) in names.iter().enumerate() {
        let name = rquickjs::String::from_str(ctx.clone(), name)?;
        let function = tool_function(ctx, name.clone(), Some(index))?;
        table.set(name, function)?;
    }
    table.set("ToolSearch", hooks.get::<_, Value>("ToolSearch")?)?;
    table.set_prototype(Some(&hooks.get::<_, Object>("fallback")?))?;
    Ok(table)
}

/// The function `tools.<name>` is: a native function named `name` that starts a call of
/// that tool. Native, not a closure of the prelude's, because a script's `tools` has one per
/// reachable tool and is built for every run: a closure and its name cost several times
/// more to make, and one more frame on every call. A reachable tool's function (`index`,
/// its place in [`TOOL_NAMES`]) keeps that place as its magic value, so a call reads its
/// name there rather than converting the JavaScript string every time; a fallback name's
/// function reads its data value.
fn tool_function<'js>(ctx: &Ctx<'js>, name: rquickjs::String<'js>, index: Option<usize>) -> rquickjs::Result<Function<'js>> {
    let raw_ctx = ctx.as_raw().as_ptr();
    let mut data = [name.as_raw()];
    // SAFETY: a live context; `call_tool` has the signature QuickJS calls it with and reads
    // one data value, the one given here, which QuickJS duplicates and keeps with the function.
    let raw = unsafe { qjs::JS_NewCFunctionData(raw_ctx, Some(call_tool), 1, magic_for(index), 1, data.as_mut_ptr()) };
    // SAFETY: the new function (or the exception marker) is owned and handed over once.
    let function = unsafe { Value::from_raw(ctx.clone(), raw) };
    if function.is_exception() {
        return Err(rquickjs::Error::Exception);
    }
    // SAFETY: a live context and function; the property takes the name's extra reference.
    let defined = unsafe {
        qjs::JS_DefinePropertyValue(
            raw_ctx,
            function.as_raw(),
            PredefinedAtom::Name as qjs::JSAtom,
            qjs::JS_DupValue(raw_ctx, name.as_raw()),
            (qjs::JS_PROP_CONFIGURABLE | qjs::JS_PROP_THROW) as _,
        )
    };
    if defined < 0 {
        return Err(rquickjs::Error::Exception);
    }
    Function::from_value(function)
}

/// The magic value of a tool function whose name is only in its data value.
const FALLBACK_NAME: u16 = u16::MAX;

/// The magic value of the tool function at `index` in [`TOOL_NAMES`] (`None`: a fallback
/// name). QuickJS keeps 16 bits of it, so a place past them is left to the data value.
fn magic_for(index: Option<usize>) -> std::ffi::c_int {
    let magic = index.and_then(|index| u16::try_from(index).ok()).filter(|&index| index != FALLBACK_NAME);
    magic.unwrap_or(FALLBACK_NAME).into()
}

/// The place in [`TOOL_NAMES`] a tool function's magic value gives, if it gives one.
fn place_of(magic: std::ffi::c_int) -> Option<usize> {
    u16::try_from(magic).ok().filter(|&magic| magic != FALLBACK_NAME).map(usize::from)
}

/// What calling `tools.<name>(args)` runs: its name is at its magic value in
/// [`TOOL_NAMES`], or for a fallback name the function's one data value.
///
/// # Safety
/// Called by QuickJS only, for a function made by [`tool_function`]: `ctx` is live, `data`
/// holds one value and `argv` at least `length` (1) values.
unsafe extern "C" fn call_tool(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    _argc: std::ffi::c_int,
    argv: *mut qjs::JSValue,
    magic: std::ffi::c_int,
    data: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: QuickJS passes the live context it runs in; `from_raw` takes a reference of its own.
    let ctx = unsafe { Ctx::from_raw(std::ptr::NonNull::new_unchecked(ctx)) };
    // SAFETY: the first argument is borrowed for this call (QuickJS pads the arguments to the
    // function's length with undefined); it gets a reference of its own.
    let args = unsafe { Value::from_raw(ctx.clone(), qjs::JS_DupValue(ctx.as_raw().as_ptr(), *argv)) };
    // Nothing replaces the names while a run is under way (a script cannot start a run), so
    // the borrow lasts through whatever script code the arguments' encoding runs.
    let started = TOOL_NAMES.with_borrow(|names| match place_of(magic).and_then(|index| names.get(index)) {
        Some(name) => start_call(&ctx, name, args),
        None => {
            // SAFETY: the data value is borrowed for this call; it gets a reference of its own.
            let name = unsafe { Value::from_raw(ctx.clone(), qjs::JS_DupValue(ctx.as_raw().as_ptr(), *data)) };
            name.get::<String>().and_then(|name| start_call(&ctx, &name, args))
        }
    });
    match started {
        Ok(promise) => {
            let raw = promise.as_raw();
            // SAFETY: the returned value must be owned by the caller: one reference more, and
            // `promise` drops its own.
            unsafe { qjs::JS_DupValue(ctx.as_raw().as_ptr(), raw) }
        }
        Err(rquickjs::Error::Exception) => qjs::JS_EXCEPTION,
        // The name could not be read (a lone surrogate in a fallback name).
        Err(error) => {
            let _ = ctx.throw(type_error(&ctx, &error.to_string()));
            qjs::JS_EXCEPTION
        }
    }
}

/// Starts a call of `name`: checks and encodes the arguments, hands them to the host and
/// returns the promise the script awaits; a call answered at once settles it here, the
/// run loop settles the others.
fn start_call<'js>(ctx: &Ctx<'js>, name: &str, args: Value<'js>) -> rquickjs::Result<Promise<'js>> {
    let (promise, resolve, reject) = ctx.promise()?;
    let label = || {
        let mut label = String::from("tools");
        encode::push_member(&mut label, name);
        label + "()"
    };
    match encode::arguments(ctx, plain(), BOUNDS.get(), label, args) {
        Ok(json) => match tools::call(name, &json) {
            tools::Started::Pending(id) => {
                let settlers = (Persistent::save(ctx, resolve), Persistent::save(ctx, reject));
                PENDING.with(|pending| pending.borrow_mut().insert(id, settlers));
            }
            tools::Started::Done(outcome) => settle_with(ctx, resolve, reject, outcome),
        },
        Err(message) => {
            reject.call::<_, ()>((type_error(ctx, &message),))?;
        }
    }
    Ok(promise)
}

fn plain() -> PlainPrototypes {
    PLAIN.with(|plain| *plain.get().expect("the prototypes are saved when the engine starts"))
}

/// A `TypeError` of the sandbox realm, as a value.
fn type_error<'js>(ctx: &Ctx<'js>, message: &str) -> Value<'js> {
    // QuickJS formats a thrown message into 256 bytes; the whole one is set afterwards.
    // SAFETY: the context pointer is live for `'js`, and the format string is a constant
    // with no conversions, so no argument is read.
    unsafe { qjs::JS_ThrowTypeError(ctx.as_raw().as_ptr(), c"".as_ptr()) };
    caught_with_message(ctx, message)
}

/// A `RangeError` of the sandbox realm, as a value.
fn range_error<'js>(ctx: &Ctx<'js>, message: &str) -> Value<'js> {
    // SAFETY: as in `type_error`.
    unsafe { qjs::JS_ThrowRangeError(ctx.as_raw().as_ptr(), c"".as_ptr()) };
    caught_with_message(ctx, message)
}

/// The error just thrown, taken back as a value, with the whole of `message`.
fn caught_with_message<'js>(ctx: &Ctx<'js>, message: &str) -> Value<'js> {
    let error = ctx.catch();
    if let Some(object) = error.as_object() {
        let _ = object.set("message", message);
    }
    error
}

/// An `Error` of the sandbox realm, as a value, whose stack is not taken yet. The engine
/// takes an error's stack where bytecode first throws it; for a failed call that is the
/// `await` in the script that receives it, so an uncaught failure names the script's line,
/// and no stack is paid for at the call or where the host settles it.
fn error<'js>(ctx: &Ctx<'js>, message: &str) -> Value<'js> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: the context is live for `'js`. The class id is the engine's own error class;
    // every value made here is owned once: the object by the returned `Value`, the message
    // string by the property it is defined as (JS_DefinePropertyValueStr takes it).
    unsafe {
        let object = qjs::JS_NewObjectClass(raw, error_class(raw));
        if qjs::JS_IsException(object) {
            return ctx.catch();
        }
        let text = qjs::JS_NewStringLen(raw, message.as_ptr().cast(), message.len() as _);
        let flags = (qjs::JS_PROP_WRITABLE | qjs::JS_PROP_CONFIGURABLE) as i32;
        qjs::JS_DefinePropertyValueStr(raw, object, c"message".as_ptr(), text, flags);
        Value::from_raw(ctx.clone(), object)
    }
}

/// The class id of the engine's `Error` objects, read once from an error it made.
///
/// # Safety
/// `ctx` must be a live context.
unsafe fn error_class(ctx: *mut qjs::JSContext) -> qjs::JSClassID {
    thread_local! { static CLASS: Cell<qjs::JSClassID> = const { Cell::new(0) }; }
    CLASS.with(|class| {
        if class.get() == 0 {
            // SAFETY: the caller's context is live; the sample error is freed once.
            unsafe {
                let sample = qjs::JS_NewError(ctx);
                class.set(qjs::JS_GetClassID(sample));
                qjs::JS_FreeValue(ctx, sample);
            }
        }
        class.get()
    })
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

unsafe extern "C" fn refuse_import(
    ctx: *mut qjs::JSContext,
    _module_name: *const std::ffi::c_char,
    _opaque: *mut std::ffi::c_void,
) -> *mut qjs::JSModuleDef {
    // SAFETY: QuickJS calls this with a live context; `%s` reads the one constant C string given.
    unsafe { qjs::JS_ThrowTypeError(ctx, c"%s".as_ptr(), c"import() is not available in Exec scripts".as_ptr()) };
    std::ptr::null_mut()
}

/// Parses `source` in the compiler context and returns its bytecode.
/// `script_lines` counts the lines of the script itself (for positions in errors).
fn compile(compiler: &Context, source: &str, name: &CStr, script_lines: usize) -> Result<Vec<u8>, ScriptError> {
    // QuickJS's parser wants a terminating NUL after the text it is given.
    let mut text = String::with_capacity(source.len() + 1);
    text.push_str(source);
    text.push('\0');
    // SAFETY: `text` is NUL-terminated and outlives JS_Eval; every value made is freed once;
    // the bytecode buffer holds `size` bytes until js_free, after it was copied.
    compiler.with(|ctx| unsafe {
        let raw = ctx.as_raw().as_ptr();
        let flags = (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32;
        let function = qjs::JS_Eval(raw, text.as_ptr().cast(), source.len() as _, name.as_ptr(), flags);
        if qjs::JS_IsException(function) {
            return Err(ScriptError::Syntax(describe_syntax_error(ctx.catch(), script_lines)));
        }
        let mut size = 0;
        let bytes = qjs::JS_WriteObject(raw, &mut size, function, qjs::JS_WRITE_OBJ_BYTECODE as i32);
        qjs::JS_FreeValue(raw, function);
        if bytes.is_null() {
            ctx.catch();
            return Err(ScriptError::Thrown("InternalError: out of memory while compiling the script".into()));
        }
        let copy = std::slice::from_raw_parts(bytes, size as usize).to_vec();
        qjs::js_free(raw, bytes.cast());
        Ok(copy)
    })
}

/// Reads bytecode into `ctx` (making `ctx` its realm) and evaluates it.
fn load<'js, T: rquickjs::FromJs<'js>>(ctx: &Ctx<'js>, bytecode: &[u8]) -> rquickjs::Result<T> {
    // SAFETY: the bytecode was written by `compile` with this engine's own QuickJS (never
    // bytes from outside); each returned value is owned and handed on exactly once.
    unsafe {
        let raw = ctx.as_raw().as_ptr();
        let function = qjs::JS_ReadObject(raw, bytecode.as_ptr(), bytecode.len() as _, qjs::JS_READ_OBJ_BYTECODE as i32);
        if qjs::JS_IsException(function) {
            return Err(rquickjs::Error::Exception);
        }
        let value = qjs::JS_EvalFunction(raw, function);
        if qjs::JS_IsException(value) {
            return Err(rquickjs::Error::Exception);
        }
        T::from_js(ctx, Value::from_raw(ctx.clone(), value))
    }
}

/// `SyntaxError: <message> (line L, column C)`, positions in the script's own numbering.
/// `script_lines` is how many lines the script has: a position past them is the end of
/// the script, where the wrapper closes it.
fn describe_syntax_error(error: Value<'_>, script_lines: usize) -> String {
    let Some(object) = error.as_object() else {
        return "SyntaxError: the script does not parse".into();
    };
    let name: String = object.get("name").unwrap_or_else(|_| "SyntaxError".into());
    let message: String = object.get("message").unwrap_or_default();
    let stack: String = object.get("stack").unwrap_or_default();
    let position = stack.split("script.js:").nth(1).and_then(|rest| {
        let mut parts = rest.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty());
        let line: usize = parts.next()?.parse().ok()?;
        let column: usize = parts.next()?.parse().ok()?;
        let column = if line == 1 { column.saturating_sub(SCRIPT_PREFIX.len()).max(1) } else { column };
        Some((line, column))
    });
    match position {
        Some((line, _)) if line > script_lines => {
            format!("{name}: {message} (at the end of the script, line {script_lines}: something is not closed)")
        }
        Some((line, column)) => format!("{name}: {message} (line {line}, column {column})"),
        None => format!("{name}: {message}"),
    }
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
        let source = format!("{SCRIPT_PREFIX}{script}{SCRIPT_SUFFIX}");
        let bytecode = compile(&engine.compiler, &source, SCRIPT_NAME, script.lines().count().max(1))?;
        engine.sandbox.with(|ctx| run_in(&ctx, engine, &bytecode, tool_names))
    })
}

fn run_in(ctx: &Ctx<'_>, engine: &Engine, bytecode: &[u8], tool_names: Vec<String>) -> Result<Option<String>, ScriptError> {
    let hooks = engine.hooks.clone().restore(ctx).map_err(|e| internal(ctx, e))?;
    let tools = make_tools(ctx, &hooks, &tool_names).map_err(|e| internal(ctx, e))?;
    TOOL_NAMES.set(tool_names);
    ctx.globals().set("tools", tools).map_err(|e| internal(ctx, e))?;

    let main: Function = load(ctx, bytecode).map_err(|e| thrown(ctx, &hooks, e))?;
    let promise: Promise = main.call(()).map_err(|e| thrown(ctx, &hooks, e))?;
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
        Err(e) => Err(match thrown(ctx, hooks, e) {
            ScriptError::Thrown(message) => ScriptError::Unserializable(message),
            other => other,
        }),
    }
}

/// The script's error as text, using the prelude's formatting when it still works.
fn thrown<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, error: rquickjs::Error) -> ScriptError {
    match error {
        rquickjs::Error::Exception => thrown_value(ctx, hooks, ctx.catch()),
        other => ScriptError::Thrown(format!("InternalError: {other}")),
    }
}

/// A thrown value as the script's error text.
fn thrown_value<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, reason: Value<'js>) -> ScriptError {
    let described = hooks.get::<_, Function>("describeError").and_then(|describe| describe.call::<_, String>((reason.clone(),)));
    match described {
        Ok(text) => ScriptError::Thrown(text),
        Err(_) => {
            ctx.catch();
            let text = encode::message_of(&reason)
                .unwrap_or_else(|| "the script failed with an error that could not be described".into());
            ScriptError::Thrown(text)
        }
    }
}

fn internal(ctx: &Ctx<'_>, error: rquickjs::Error) -> ScriptError {
    if matches!(error, rquickjs::Error::Exception) {
        let message = encode::message_of(&ctx.catch()).unwrap_or_default();
        return ScriptError::Thrown(format!("InternalError: the sandbox could not start the script: {message}"));
    }
    ScriptError::Thrown(format!("InternalError: the sandbox could not start the script: {error}"))
}
