//! The host object: the native hooks the prelude and the web globals close over, which
//! nothing a script can name reaches.

use rquickjs::function::{Func, Opt};
use rquickjs::{Ctx, Function, Object, Persistent, Promise, Value};

use crate::encode::{self};
use crate::exec_host::sandbox::{console, tool_search, tools};

use super::errors::{error, plain, range_error, type_error};
use super::failure::{frame_text, frames_of};
use super::tools_object::tool_function;
use super::{BOUNDS, LOG_LINE_CHARS, TIMERS, UNCAUGHT};

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
    host.set(
        "scriptFrames",
        Func::from(|stack: String| frames_of(&stack).iter().map(frame_text).collect::<Vec<_>>().join("\n")),
    )?;
    Ok(host)
}
