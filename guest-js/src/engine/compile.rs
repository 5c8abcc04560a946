//! Compiling in the compiler context and loading the bytecode into the sandbox.

use std::ffi::CStr;

use rquickjs::{Context, Ctx, Value, qjs};

use crate::ScriptError;

use super::failure::{bare, syntax_error};

pub(super) unsafe extern "C" fn refuse_import(
    ctx: *mut qjs::JSContext,
    _module_name: *const std::ffi::c_char,
    _opaque: *mut std::ffi::c_void,
) -> *mut qjs::JSModuleDef {
    // SAFETY: QuickJS calls this with a live context; `%s` reads the one constant C string given.
    unsafe { qjs::JS_ThrowTypeError(ctx, c"%s".as_ptr(), c"import() is not available in Exec scripts".as_ptr()) };
    std::ptr::null_mut()
}

/// Parses `source` in the compiler context and returns its bytecode.
/// `script` is the script's own text inside `source` (for the positions of a syntax error).
pub(super) fn compile(compiler: &Context, source: &str, name: &CStr, script: &str) -> Result<Vec<u8>, ScriptError> {
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
            return Err(ScriptError::Syntax(syntax_error(ctx.catch(), script)));
        }
        let mut size = 0;
        let bytes = qjs::JS_WriteObject(raw, &mut size, function, qjs::JS_WRITE_OBJ_BYTECODE as i32);
        qjs::JS_FreeValue(raw, function);
        if bytes.is_null() {
            ctx.catch();
            return Err(ScriptError::Thrown(bare("InternalError: out of memory while compiling the script".into())));
        }
        let copy = std::slice::from_raw_parts(bytes, size as usize).to_vec();
        qjs::js_free(raw, bytes.cast());
        Ok(copy)
    })
}

/// Reads bytecode into `ctx` (making `ctx` its realm) and evaluates it.
pub(super) fn load<'js, T: rquickjs::FromJs<'js>>(ctx: &Ctx<'js>, bytecode: &[u8]) -> rquickjs::Result<T> {
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
