//! Errors of the sandbox realm made natively, with the whole of their message, and the
//! plain prototypes the argument encoder checks against.

use std::cell::Cell;

use rquickjs::{Ctx, Value, qjs};

use crate::encode::PlainPrototypes;

use super::PLAIN;

pub(super) fn plain() -> PlainPrototypes {
    PLAIN.with(|plain| *plain.get().expect("the prototypes are saved when the engine starts"))
}

/// A `TypeError` of the sandbox realm, as a value.
pub(super) fn type_error<'js>(ctx: &Ctx<'js>, message: &str) -> Value<'js> {
    // QuickJS formats a thrown message into 256 bytes; the whole one is set afterwards.
    // SAFETY: the context pointer is live for `'js`, and the format string is a constant
    // with no conversions, so no argument is read.
    unsafe { qjs::JS_ThrowTypeError(ctx.as_raw().as_ptr(), c"".as_ptr()) };
    caught_with_message(ctx, message)
}

/// A `RangeError` of the sandbox realm, as a value.
pub(super) fn range_error<'js>(ctx: &Ctx<'js>, message: &str) -> Value<'js> {
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
pub(super) fn error<'js>(ctx: &Ctx<'js>, message: &str) -> Value<'js> {
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
