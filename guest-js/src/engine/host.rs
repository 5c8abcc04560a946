//! The host object: the native hooks the prelude and the web globals close over, which
//! nothing a script can name reaches.

use rquickjs::function::{Func, Opt};
use rquickjs::{Ctx, Function, Object, Persistent, Promise, Value};

use crate::encode::{self};
use crate::exec_host::sandbox::{console, state, tool_search, tools};

use super::errors::{error, plain, range_error, type_error};
use super::failure::{frame_text, frames_of};
use super::tools_object::{start_call_with_id, tool_function};
use super::{BOUNDS, LOG_LINE_CHARS, PENDING, TIMERS, UNCAUGHT};

/// The native hooks the prelude closes over. Nothing else can reach them.
pub(super) fn host_object<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
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
    // The web globals' calls of host tools (`fetch` is `WebFetch`): the promise, and the id
    // of a call still pending (-1 when it was answered at once), which `cancelCall` stops.
    host.set(
        "startCall",
        Func::from(|ctx: Ctx<'js>, name: String, args: Value<'js>| -> rquickjs::Result<rquickjs::Array<'js>> {
            let (promise, id) = start_call_with_id(&ctx, &name, args)?;
            let pair = rquickjs::Array::new(ctx.clone())?;
            pair.set(0, promise)?;
            pair.set(1, id.map_or(-1.0, f64::from))?;
            Ok(pair)
        }),
    )?;
    host.set(
        "cancelCall",
        Func::from(|id: u32| {
            // Only a call still pending: its completion still comes, and settles nothing new.
            if PENDING.with(|pending| pending.borrow().contains_key(&id)) {
                tools::cancel_call(id);
            }
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
    // `store(key, value)` and `load(key)`: synchronous, so a script keeps and reads its
    // conversation's values without awaiting; the host answers each at once.
    host.set(
        "store",
        Func::from(|ctx: Ctx<'js>, key: Value<'js>, value: Opt<Value<'js>>| -> rquickjs::Result<()> {
            let key = key_of(&ctx, "store", &key)?;
            let value = value.0.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
            let json = encode::kept_value(&ctx, plain(), BOUNDS.get(), value)
                .map_err(|message| ctx.throw(type_error(&ctx, &format!("store({}): {message}", quoted(&key)))))?;
            state::store(&key, json.as_deref()).map_err(|message| ctx.throw(error(&ctx, &message)))
        }),
    )?;
    host.set(
        "load",
        Func::from(|ctx: Ctx<'js>, key: Value<'js>| -> rquickjs::Result<Value<'js>> {
            let key = key_of(&ctx, "load", &key)?;
            match state::load(&key).map_err(|message| ctx.throw(error(&ctx, &message)))? {
                Some(json) => ctx.json_parse(json),
                None => Ok(Value::new_undefined(ctx.clone())),
            }
        }),
    )?;
    host.set("logLineChars", Func::from(|| LOG_LINE_CHARS.get()))?;
    host.set(
        "scriptFrames",
        Func::from(|stack: String| frames_of(&stack).iter().map(frame_text).collect::<Vec<_>>().join("\n")),
    )?;
    Ok(host)
}

/// The key `store()` or `load()` was given: a string, or a `TypeError` thrown.
fn key_of<'js>(ctx: &Ctx<'js>, function: &str, key: &Value<'js>) -> rquickjs::Result<String> {
    match key.as_string() {
        Some(key) => key.to_string(),
        None => Err(ctx.throw(type_error(ctx, &format!("{function}() takes a string key first, got {}", encode::describe(key))))),
    }
}

/// `key` as a script would write it, cut to a readable length.
fn quoted(key: &str) -> String {
    const SHOWN: usize = 40;
    let mut out = String::new();
    match key.char_indices().nth(SHOWN) {
        Some((cut, _)) => encode::quote(&format!("{}…", &key[..cut]), &mut out),
        None => encode::quote(key, &mut out),
    }
    out
}
