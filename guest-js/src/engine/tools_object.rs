//! A script's `tools`: one native function per reachable tool, and what calling one does
//! (the arguments checked and encoded, the call handed to the host, its promise).

use rquickjs::atom::PredefinedAtom;
use rquickjs::{Ctx, Function, Object, Persistent, Promise, Value, qjs};

use crate::encode::{self};
use crate::exec_host::sandbox::tools;

use super::errors::{plain, type_error};
use super::{BOUNDS, PENDING, TOOL_NAMES, settle_with};

/// `tools` for one run: a function per reachable name and `ToolSearch`, in that order, as
/// own properties of an object whose prototype is the prelude's fallback proxy. The own
/// properties go on first and the proxy last: with the proxy already behind it, every
/// assignment would consult the proxy.
pub(super) fn make_tools<'js>(ctx: &Ctx<'js>, hooks: &Object<'js>, names: &[String]) -> rquickjs::Result<Object<'js>> {
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
pub(super) fn tool_function<'js>(
    ctx: &Ctx<'js>,
    name: rquickjs::String<'js>,
    index: Option<usize>,
) -> rquickjs::Result<Function<'js>> {
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
    start_call_with_id(ctx, name, args).map(|(promise, _)| promise)
}

/// [`start_call`], with the id the host gave a call that is still pending (`None` when it
/// was answered or refused at once), by which the script may stop it.
pub(super) fn start_call_with_id<'js>(
    ctx: &Ctx<'js>,
    name: &str,
    args: Value<'js>,
) -> rquickjs::Result<(Promise<'js>, Option<u32>)> {
    let (promise, resolve, reject) = ctx.promise()?;
    let mut pending = None;
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
                pending = Some(id);
            }
            tools::Started::Done(outcome) => settle_with(ctx, resolve, reject, outcome),
        },
        Err(message) => {
            reject.call::<_, ()>((type_error(ctx, &message),))?;
        }
    }
    Ok((promise, pending))
}
