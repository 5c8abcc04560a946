//! Tool arguments to JSON text, refusing anything JSON would drop or distort.
//!
//! One walk both checks and serialises: plain objects (prototype `Object.prototype` or
//! `null`), arrays (prototype `Array.prototype`), strings, finite numbers, booleans and
//! null pass; functions, class instances, accessors, symbols, BigInts, non-finite numbers,
//! cycles, nesting past [`Bounds::depth`] and text past [`Bounds::bytes`] are refused
//! with a message naming the value's path. Properties whose value is `undefined` are left out, as JSON does.

use std::fmt::Write;

use rquickjs::{Ctx, Object, Type, Value, qjs};

/// What one call's arguments may take, set by the host for each run.
#[derive(Clone, Copy)]
pub struct Bounds {
    /// Bytes of JSON text.
    pub bytes: usize,
    /// Nesting, the argument object being level 1; deeper values are refused, not walked.
    pub depth: usize,
}

/// The identities of the prototypes that make an object "plain", taken when the sandbox
/// starts (a script can rebind the `Object` and `Array` globals, not these). Only ever
/// compared, never dereferenced; the realm keeps both objects alive.
#[derive(Clone, Copy)]
pub struct PlainPrototypes {
    pub object: *mut std::ffi::c_void,
    pub array: *mut std::ffi::c_void,
}

impl PlainPrototypes {
    pub fn of(object: &Object<'_>, array: &Object<'_>) -> Self {
        PlainPrototypes { object: identity(object), array: identity(array) }
    }
}

/// The JSON text of one call's argument object; `label` names the call in messages
/// (`tools.add()`) and is only built when there is something to say.
pub fn arguments<'js>(
    ctx: &Ctx<'js>,
    plain: PlainPrototypes,
    bounds: Bounds,
    label: impl Fn() -> String,
    args: Value<'js>,
) -> Result<String, String> {
    match args.type_of() {
        Type::Undefined => return Ok("{}".into()),
        Type::Object | Type::Proxy => {}
        _ => return Err(format!("{} takes one plain object of arguments, got {}", label(), describe(&args))),
    }
    let mut walker = Walker::new(ctx, plain, bounds, Root::Arguments);
    walker.value(&args)?;
    walker.room(0)?;
    Ok(walker.out)
}

/// The JSON text of a value `store()` keeps: any plain value, checked as arguments are;
/// `None` for `undefined`, which removes the key.
pub fn kept_value<'js>(
    ctx: &Ctx<'js>,
    plain: PlainPrototypes,
    bounds: Bounds,
    value: Value<'js>,
) -> Result<Option<String>, String> {
    if value.type_of() == Type::Undefined {
        return Ok(None);
    }
    let mut walker = Walker::new(ctx, plain, bounds, Root::Value);
    walker.value(&value)?;
    walker.room(0)?;
    Ok(Some(walker.out))
}

/// What is being encoded, as messages name it.
#[derive(Clone, Copy)]
enum Root {
    /// A call's argument object: `args.a[1]`.
    Arguments,
    /// A value given to `store()`: `value.a[1]`.
    Value,
}

/// Bytes the text starts with: room for small argument objects, and at least [`SLACK`], so
/// most calls never grow it.
const OUT_CAPACITY: usize = 256;
/// Bytes kept free past the text, so a token that is not a string (a number, `null`,
/// punctuation) is appended without a fallible allocation.
const SLACK: usize = 64;

/// One step from the argument object to the value being walked.
enum Step {
    /// A property, by its key; the atom lives in the property table of the object that
    /// holds it, which outlives the step.
    Key(qjs::JSAtom),
    Index(u32),
}

struct Walker<'a, 'js> {
    ctx: &'a Ctx<'js>,
    plain: PlainPrototypes,
    bounds: Bounds,
    root: Root,
    out: String,
    /// Objects being walked, to find cycles.
    stack: Vec<*mut std::ffi::c_void>,
    /// Where the walk is, turned into text (`args.a[1]`) only for a message.
    path: Vec<Step>,
}

impl<'a, 'js> Walker<'a, 'js> {
    fn new(ctx: &'a Ctx<'js>, plain: PlainPrototypes, bounds: Bounds, root: Root) -> Self {
        Walker { ctx, plain, bounds, root, out: String::with_capacity(OUT_CAPACITY), stack: Vec::new(), path: Vec::new() }
    }

    /// Checks that the text so far is within the bound and that `extra` more bytes can be
    /// allocated (a failed allocation is an error here, never an abort of the engine).
    fn room(&mut self, extra: usize) -> Result<(), String> {
        if self.out.len().saturating_add(extra) > self.bounds.bytes {
            return Err(match self.root {
                Root::Arguments => format!("args take more than {} bytes as JSON, more than a call may pass", self.bounds.bytes),
                Root::Value => format!("the value takes more than {} bytes as JSON, more than store() passes", self.bounds.bytes),
            });
        }
        let wanted = extra.max(SLACK);
        if self.out.capacity() - self.out.len() < wanted {
            // Grow by doubling, as `push` would, but fallibly.
            let additional = wanted.max(self.out.len().min(self.bounds.bytes.saturating_sub(self.out.len())));
            self.out
                .try_reserve(additional)
                .map_err(|_| "the sandbox ran out of memory while encoding the arguments".to_string())?;
        }
        Ok(())
    }

    /// The text of a string or key. A kept value must read back as it was stored, so one
    /// holding an unpaired surrogate (half of a UTF-16 pair, which UTF-8 and so JSON text
    /// cannot carry) is refused; a tool's arguments carry it as U+FFFD.
    fn well_formed(&self, text: Text) -> Result<String, String> {
        match (text.replaced, self.root) {
            (true, Root::Value) => Err(format!(
                "{} holds an unpaired surrogate (half of a UTF-16 pair), which kept values cannot carry; store well-formed text (String.prototype.toWellFormed())",
                self.path()
            )),
            _ => Ok(text.text),
        }
    }

    /// What is being encoded, as a message's rule names it.
    fn what(&self) -> &'static str {
        match self.root {
            Root::Arguments => "tool arguments",
            Root::Value => "kept values",
        }
    }

    /// The path of the value being walked, as a script would write it: `args.a[1]`.
    fn path(&self) -> String {
        let mut path = String::from(match self.root {
            Root::Arguments => "args",
            Root::Value => "value",
        });
        for step in &self.path {
            match step {
                Step::Key(atom) => push_member(&mut path, &atom_text(self.ctx, *atom).map(|key| key.text).unwrap_or_default()),
                Step::Index(index) => {
                    let _ = write!(path, "[{index}]");
                }
            }
        }
        path
    }

    fn value(&mut self, value: &Value<'js>) -> Result<(), String> {
        self.room(0)?;
        match value.type_of() {
            Type::Null | Type::Undefined => self.out.push_str("null"),
            Type::Bool => self.out.push_str(if value.as_bool() == Some(true) { "true" } else { "false" }),
            Type::Int => push_int(&mut self.out, value.as_int().unwrap_or_default()),
            Type::Float => {
                let number = value.as_float().unwrap_or(f64::NAN);
                if !number.is_finite() {
                    return Err(format!("{} is {}, which JSON cannot carry", self.path(), js_number(number)));
                }
                push_number(&mut self.out, number);
            }
            Type::String => {
                // Measured before it is copied out of the engine: a string too long to pass
                // is never copied.
                let mut units: i64 = 0;
                // SAFETY: a live context and a value it owns (borrowed for the call); `units` outlives it.
                if unsafe { qjs::JS_GetLength(self.ctx.as_raw().as_ptr(), value.as_raw(), &mut units) } < 0 {
                    return Err(self.exception());
                }
                self.room(usize::try_from(units).unwrap_or(usize::MAX).saturating_add(2))?;
                let text = self.well_formed(text_of(self.ctx, value))?;
                self.room(text.len() + 2)?;
                quote(&text, &mut self.out);
            }
            Type::BigInt => return Err(format!("{} is a BigInt; pass it as a number or a string", self.path())),
            Type::Symbol => return Err(format!("{} is a symbol, which JSON cannot carry", self.path())),
            Type::Function | Type::Constructor => {
                return Err(format!("{} is a function; {} must be plain data", self.path(), self.what()));
            }
            // Proxies are walked through their traps: what comes out is still plain data.
            Type::Array | Type::Object | Type::Proxy | Type::Promise | Type::Exception => self.object(value)?,
            _ => {
                return Err(format!(
                    "{} is {}; {} must be plain objects, arrays and primitives",
                    self.path(),
                    describe(value),
                    self.what()
                ));
            }
        }
        Ok(())
    }

    fn object(&mut self, value: &Value<'js>) -> Result<(), String> {
        let object = value.as_object().expect("type_of said object");
        // SAFETY: reads the pointer bits of an object value; it is only compared, never dereferenced.
        let raw = unsafe { qjs::JS_VALUE_GET_PTR(value.as_raw()) };
        if self.stack.contains(&raw) {
            return Err(format!("{} refers back to an enclosing value (a cycle)", self.path()));
        }
        if self.stack.len() >= self.bounds.depth {
            return Err(format!("{} is nested more than {} levels deep", self.path(), self.bounds.depth));
        }
        // SAFETY: inspects a live value's tag and class, nothing else.
        let is_array = unsafe { qjs::JS_IsArray(value.as_raw()) };
        let prototype = object.get_prototype();
        let plain = match &prototype {
            None => !is_array,
            Some(proto) if is_array => identity(proto) == self.plain.array,
            Some(proto) => identity(proto) == self.plain.object,
        };
        if !plain {
            return Err(format!(
                "{} is {}; {} must be plain objects, arrays and primitives",
                self.path(),
                describe(value),
                self.what()
            ));
        }
        self.stack.push(raw);
        let result = if is_array { self.array(value) } else { self.fields(value) };
        self.stack.pop();
        result
    }

    fn array(&mut self, value: &Value<'js>) -> Result<(), String> {
        let ctx = self.ctx.as_raw().as_ptr();
        let mut length: i64 = 0;
        // SAFETY: a live context and a value it owns; `length` outlives the call.
        if unsafe { qjs::JS_GetLength(ctx, value.as_raw(), &mut length) } < 0 {
            return Err(self.exception());
        }
        self.out.push('[');
        for index in 0..length.max(0) as u32 {
            self.room(0)?;
            if index > 0 {
                self.out.push(',');
            }
            self.path.push(Step::Index(index));
            // SAFETY: a live context; the atom is freed below, after its one use.
            let atom = unsafe { qjs::JS_NewAtomUInt32(ctx, index) };
            let element = self.own_property(value, atom);
            // SAFETY: frees the atom made above exactly once, in the context that made it.
            unsafe { qjs::JS_FreeAtom(ctx, atom) };
            match element? {
                // A hole, like JSON.stringify
                None => self.out.push_str("null"),
                Some((element, _)) => self.value(&element)?,
            }
            self.path.pop();
        }
        self.out.push(']');
        Ok(())
    }

    fn fields(&mut self, value: &Value<'js>) -> Result<(), String> {
        let ctx = self.ctx.as_raw().as_ptr();
        let mut table: *mut qjs::JSPropertyEnum = std::ptr::null_mut();
        let mut count: u32 = 0;
        let flags = (qjs::JS_GPN_STRING_MASK | qjs::JS_GPN_SYMBOL_MASK) as i32;
        // SAFETY: a live context and value; on success QuickJS owns `table` (count entries) until
        // JS_FreePropertyEnum below.
        if unsafe { qjs::JS_GetOwnPropertyNames(ctx, &mut table, &mut count, value.as_raw(), flags) } < 0 {
            return Err(self.exception());
        }
        let entries: &[qjs::JSPropertyEnum] = if count == 0 {
            &[]
        } else {
            // SAFETY: QuickJS filled `count` entries at `table`, which stay valid until
            // JS_FreePropertyEnum below; `entries` is not used after that.
            unsafe { std::slice::from_raw_parts(table, count as usize) }
        };
        let result = self.write_fields(value, entries);
        // SAFETY: frees the table (and its atoms) once, with the count it was made with; the
        // steps that named its atoms were popped by `write_fields`, or end with this walk.
        unsafe { qjs::JS_FreePropertyEnum(ctx, table, count) };
        result
    }

    fn write_fields(&mut self, value: &Value<'js>, entries: &[qjs::JSPropertyEnum]) -> Result<(), String> {
        self.out.push('{');
        let mut first = true;
        for entry in entries {
            let Some(key) = atom_text(self.ctx, entry.atom) else {
                return Err(format!("{} has a symbol key, which JSON cannot carry", self.path()));
            };
            self.path.push(Step::Key(entry.atom));
            let key = self.well_formed(key)?;
            let field = self.own_property(value, entry.atom)?;
            if let Some((field, true)) = field.filter(|(field, _)| !field.is_undefined()) {
                if !first {
                    self.out.push(',');
                }
                first = false;
                self.room(key.len() + 2)?;
                quote(&key, &mut self.out);
                self.out.push(':');
                self.value(&field)?;
            }
            self.path.pop();
        }
        self.out.push('}');
        Ok(())
    }

    /// The value of an own data property and whether it is enumerable (what the
    /// descriptor says, which for a Proxy is what its trap says); refuses accessors.
    /// `None` when absent.
    fn own_property(&self, object: &Value<'js>, atom: qjs::JSAtom) -> Result<Option<(Value<'js>, bool)>, String> {
        let ctx = self.ctx.as_raw().as_ptr();
        let mut descriptor = qjs::JSPropertyDescriptor {
            flags: 0,
            value: qjs::JS_UNDEFINED,
            getter: qjs::JS_UNDEFINED,
            setter: qjs::JS_UNDEFINED,
        };
        // SAFETY: a live context, object and atom; `descriptor` is initialised, and on success its
        // three values are owned by this function (taken or freed just below).
        let found = unsafe { qjs::JS_GetOwnProperty(ctx, &mut descriptor, object.as_raw(), atom) };
        if found < 0 {
            return Err(self.exception());
        }
        if found == 0 {
            return Ok(None);
        }
        // Take ownership of the value; the getter and setter are only looked at.
        // SAFETY: `descriptor.value` is an owned reference from JS_GetOwnProperty, handed to `Value`
        // exactly once.
        let value = unsafe { Value::from_raw(self.ctx.clone(), descriptor.value) };
        // SAFETY: inspects the tags of two owned values.
        let accessor = unsafe { !qjs::JS_IsUndefined(descriptor.getter) || !qjs::JS_IsUndefined(descriptor.setter) };
        // SAFETY: the getter and setter are owned here and freed exactly once (undefined is a no-op).
        unsafe {
            qjs::JS_FreeValue(ctx, descriptor.getter);
            qjs::JS_FreeValue(ctx, descriptor.setter);
        }
        if accessor || descriptor.flags & qjs::JS_PROP_GETSET as i32 != 0 {
            return Err(format!("{} is an accessor (a getter or setter); {} must be plain data", self.path(), self.what()));
        }
        Ok(Some((value, descriptor.flags & qjs::JS_PROP_ENUMERABLE as i32 != 0)))
    }

    /// A pending exception (a Proxy trap threw, say) as a message.
    fn exception(&self) -> String {
        let message = message_of(&self.ctx.catch()).unwrap_or_default();
        format!("{} could not be read: {message}", self.path())
    }
}

/// Appends a finite number as JSON, with the shortest digits that read back the same and,
/// like JavaScript, an exponent outside [1e-6, 1e21) (so no number is hundreds of digits
/// long).
fn push_number(out: &mut String, number: f64) {
    let magnitude = number.abs();
    if number == 0.0 {
        out.push('0'); // JSON has no negative zero
    } else if (1e-6..1e21).contains(&magnitude) {
        let _ = write!(out, "{number}");
    } else {
        let _ = write!(out, "{number:e}");
    }
}

/// Appends a decimal integer without going through `core::fmt`.
fn push_int(out: &mut String, value: i32) {
    let mut digits = [0u8; 11];
    let mut at = digits.len();
    let mut rest = value.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        out.push('-');
    }
    out.push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
}

/// What makes two references the same object.
fn identity(object: &Object<'_>) -> *mut std::ffi::c_void {
    // SAFETY: reads the pointer bits of an object value; only compared, never dereferenced.
    unsafe { qjs::JS_VALUE_GET_PTR(object.as_raw()) }
}

fn atom_text(ctx: &Ctx<'_>, atom: qjs::JSAtom) -> Option<Text> {
    // SAFETY: a live context and atom; JS_AtomToValue returns an owned value, given to `Value` once.
    let value = unsafe { Value::from_raw(ctx.clone(), qjs::JS_AtomToValue(ctx.as_raw().as_ptr(), atom)) };
    if value.is_symbol() {
        return None;
    }
    match value.is_string() {
        true => Some(text_of(ctx, &value)),
        false => value.as_int().map(|i| Text { text: i.to_string(), replaced: false }),
    }
}

/// A JS string as UTF-8, and whether it held an unpaired surrogate.
struct Text {
    text: String,
    replaced: bool,
}

/// A JS string as UTF-8. QuickJS writes an unpaired surrogate as the three bytes of its
/// code point (WTF-8), which UTF-8 cannot hold: each becomes one U+FFFD, and the text says
/// it was replaced.
fn text_of(ctx: &Ctx<'_>, value: &Value<'_>) -> Text {
    let mut length = 0;
    // SAFETY: a live context and value; the returned buffer (or null) is freed below, once.
    let raw = unsafe { qjs::JS_ToCStringLen(ctx.as_raw().as_ptr(), &mut length, value.as_raw()) };
    if raw.is_null() {
        ctx.catch();
        return Text { text: String::new(), replaced: false };
    }
    // SAFETY: `raw` is non-null here and points to `length` bytes QuickJS keeps alive until
    // JS_FreeCString below; `bytes` is not used after that.
    let bytes = unsafe { std::slice::from_raw_parts(raw.cast::<u8>(), length) };
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => Text { text: text.to_owned(), replaced: false },
        Err(_) => {
            let mut cleaned = Vec::with_capacity(bytes.len());
            let mut at = 0;
            while at < bytes.len() {
                let surrogate = bytes[at] == 0xED
                    && bytes.get(at + 1).is_some_and(|b| (0xA0..=0xBF).contains(b))
                    && bytes.get(at + 2).is_some_and(|b| (0x80..=0xBF).contains(b));
                if surrogate {
                    cleaned.extend_from_slice("\u{FFFD}".as_bytes());
                    at += 3;
                } else {
                    cleaned.push(bytes[at]);
                    at += 1;
                }
            }
            Text { text: String::from_utf8_lossy(&cleaned).into_owned(), replaced: true }
        }
    };
    // SAFETY: frees the buffer from JS_ToCStringLen once, in its context.
    unsafe { qjs::JS_FreeCString(ctx.as_raw().as_ptr(), raw) };
    text
}

/// Appends `.key` for identifiers, `["key"]` otherwise, as a script would write it.
pub fn push_member(path: &mut String, key: &str) {
    let identifier = key.chars().next().is_some_and(|c| c == '_' || c == '$' || c.is_ascii_alphabetic())
        && key.chars().all(|c| c == '_' || c == '$' || c.is_ascii_alphanumeric());
    if identifier {
        path.push('.');
        path.push_str(key);
    } else {
        path.push('[');
        quote(key, path);
        path.push(']');
    }
}

fn js_number(number: f64) -> &'static str {
    if number.is_nan() {
        "NaN"
    } else if number > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

/// Appends `text` as a JSON string literal.
pub fn quote(text: &str, out: &mut String) {
    out.reserve(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The `message` of a thrown value, when it has one.
pub fn message_of(thrown: &Value<'_>) -> Option<String> {
    thrown.as_object().and_then(|o| o.get::<_, String>("message").ok())
}

/// `a plain object`, `an array`, `a function`, `an instance of Date`, `null`, `a string`...
pub fn describe(value: &Value<'_>) -> String {
    match value.type_of() {
        Type::Null => "null".into(),
        Type::Undefined => "undefined".into(),
        Type::Array => "an array".into(),
        Type::Function | Type::Constructor => "a function".into(),
        Type::Bool => "a boolean".into(),
        Type::Int | Type::Float => "a number".into(),
        Type::String => "a string".into(),
        Type::Symbol => "a symbol".into(),
        Type::BigInt => "a BigInt".into(),
        _ => {
            let Some(object) = value.as_object() else { return "a value".into() };
            let name = object
                .get_prototype()
                .and_then(|proto| proto.get::<_, Value>("constructor").ok())
                .and_then(|ctor| ctor.as_object().and_then(|c| c.get::<_, String>("name").ok()))
                .filter(|name| !name.is_empty());
            match (object.get_prototype(), name) {
                (None, _) => "a plain object".into(),
                (Some(_), Some(name)) => format!("an instance of {name}"),
                (Some(_), None) => "an instance of an unnamed class".into(),
            }
        }
    }
}

/// Native tests of the encoder on a QuickJS runtime of the build machine's own
/// (`cargo test` in guest-js): what passes, byte for byte, and what is refused, with which
/// path.
#[cfg(test)]
mod tests {
    use rquickjs::{Context, Object, Runtime};

    use super::*;

    const BOUNDS: Bounds = Bounds { bytes: 1 << 20, depth: 10 };

    /// Encodes the value of the JavaScript expression `source` as one call's arguments.
    fn encode_with(source: &str, bounds: Bounds) -> Result<String, String> {
        with_value(source, |ctx, plain, value| arguments(ctx, plain, bounds, || "tools.t()".into(), value))
    }

    /// Runs `encode` on the value of the JavaScript expression `source`.
    fn with_value<T>(
        source: &str,
        encode: impl for<'js> FnOnce(&Ctx<'js>, PlainPrototypes, Value<'js>) -> Result<T, String>,
    ) -> Result<T, String> {
        let runtime = Runtime::new().expect("a runtime");
        let context = Context::full(&runtime).expect("a context");
        context.with(|ctx| {
            let globals = ctx.globals();
            let prototype = |name: &str| -> Object<'_> {
                globals.get::<_, Object>(name).and_then(|c| c.get::<_, Object>("prototype")).expect("a prototype")
            };
            let plain = PlainPrototypes::of(&prototype("Object"), &prototype("Array"));
            let value: Value = ctx.eval(format!("({source})")).map_err(|e| format!("the test's source does not run: {e}"))?;
            encode(&ctx, plain, value)
        })
    }

    fn kept(source: &str) -> Result<Option<String>, String> {
        with_value(source, |ctx, plain, value| kept_value(ctx, plain, BOUNDS, value))
    }

    #[test]
    fn a_kept_value_is_any_plain_value_and_undefined_removes() {
        assert_eq!(kept("undefined").unwrap(), None);
        assert_eq!(kept("null").unwrap().as_deref(), Some("null"));
        assert_eq!(kept("'text'").unwrap().as_deref(), Some("\"text\""));
        assert_eq!(kept("[1, { a: 2 }]").unwrap().as_deref(), Some("[1,{\"a\":2}]"));
        assert_eq!(kept("{ f() {} }").unwrap_err(), "value.f is a function; kept values must be plain data");
        let lone = kept(r#"({ a: ["ok", "\ud800"] })"#).unwrap_err();
        assert!(lone.starts_with("value.a[1] holds an unpaired surrogate"), "{lone}");
        assert!(kept(r#"({ "\udc00": 1 })"#).unwrap_err().contains("holds an unpaired surrogate"));
        assert_eq!(kept(r#""\ud83d\ude00""#).unwrap().as_deref(), Some("\"😀\""), "a pair is one character");
        assert!(kept("new Map()").unwrap_err().starts_with("value is an instance of Map; kept values must be plain"));
        let tight =
            |source: &str| with_value(source, |ctx, plain, value| kept_value(ctx, plain, Bounds { bytes: 8, depth: 2 }, value));
        assert_eq!(tight("'123456789'").unwrap_err(), "the value takes more than 8 bytes as JSON, more than store() passes");
        assert!(tight("[[[1]]]").unwrap_err().contains("value[0][0] is nested more than 2 levels deep"));
    }

    fn encode(source: &str) -> Result<String, String> {
        encode_with(source, BOUNDS)
    }

    fn refused(source: &str) -> String {
        encode(source).expect_err(source)
    }

    #[test]
    fn plain_data_is_written_as_json_stringify_would() {
        assert_eq!(encode("undefined").unwrap(), "{}");
        assert_eq!(encode("{}").unwrap(), "{}");
        assert_eq!(
            encode("{ a: 1, b: 'x', c: [true, null], d: { e: -2.5 } }").unwrap(),
            r#"{"a":1,"b":"x","c":[true,null],"d":{"e":-2.5}}"#
        );
        assert_eq!(encode("{ skipped: undefined, kept: 0 }").unwrap(), r#"{"kept":0}"#);
        assert_eq!(encode("{ a: [1, , 3], b: [undefined] }").unwrap(), r#"{"a":[1,null,3],"b":[null]}"#);
        // The same numbers JSON.stringify writes (it spells the exponent `1e+21`; both are JSON).
        assert_eq!(
            encode("{ z: -0, big: 1e21, small: 5e-324, int: 2147483647 }").unwrap(),
            r#"{"z":0,"big":1e21,"small":5e-324,"int":2147483647}"#
        );
        assert_eq!(encode("Object.assign(Object.create(null), { n: 1 })").unwrap(), r#"{"n":1}"#);
    }

    #[test]
    fn strings_are_escaped_and_lone_surrogates_kept_as_escapes() {
        assert_eq!(encode(r#"{ s: "q\"b\\n\n\t\u0001\u2028é" }"#).unwrap(), "{\"s\":\"q\\\"b\\\\n\\n\\t\\u0001\u{2028}é\"}");
        let lone = encode(r#"{ s: "\ud800x" }"#).unwrap();
        assert!(serde_like_roundtrip(&lone), "{lone}");
    }

    /// A lone surrogate must come out as valid UTF-8 JSON text (escaped or replaced).
    fn serde_like_roundtrip(text: &str) -> bool {
        text.starts_with("{\"s\":\"") && text.ends_with("x\"}") && std::str::from_utf8(text.as_bytes()).is_ok()
    }

    #[test]
    fn what_json_would_distort_is_refused_with_its_path() {
        assert!(refused("5").contains("tools.t() takes one plain object of arguments, got a number"));
        assert!(refused("{ n: NaN }").contains("args.n is NaN, which JSON cannot carry"));
        assert!(refused("{ a: [0, Infinity] }").contains("args.a[1] is Infinity"));
        assert!(refused("{ f() {} }").contains("args.f is a function"));
        assert!(refused("{ b: 1n }").contains("args.b is a BigInt"));
        assert!(refused("{ s: Symbol('x') }").contains("args.s is a symbol"));
        assert!(refused("{ d: new Date(0) }").contains("args.d is an instance of Date"));
        assert!(refused("{ m: new Map() }").contains("args.m is an instance of Map"));
        assert!(refused("{ u: new Uint8Array(2) }").contains("args.u is an instance of Uint8Array"));
        assert!(refused("{ get g() { return 1 } }").contains("args.g"));
        assert!(
            refused("(() => { const o = { k: {} }; o.k.back = o; return o; })()")
                .contains("args.k.back refers back to an enclosing value")
        );
    }

    #[test]
    fn the_bounds_hold_at_their_edges() {
        let depth = Bounds { bytes: 1 << 20, depth: 3 };
        assert_eq!(encode_with("{ a: { b: 1 } }", depth).unwrap(), r#"{"a":{"b":1}}"#);
        assert_eq!(encode_with("{ a: { b: [1] } }", depth).unwrap(), r#"{"a":{"b":[1]}}"#);
        assert!(encode_with("{ a: { b: [[1]] } }", depth).unwrap_err().contains("args.a.b[0] is nested more than 3 levels deep"));
        // `{"s":"xxxxxxxxxx"}` is 18 bytes: it passes a bound of 18, not one of 17.
        let exact = |bytes| Bounds { bytes, depth: 10 };
        assert_eq!(encode_with("{ s: 'x'.repeat(10) }", exact(18)).unwrap().len(), 18);
        assert!(encode_with("{ s: 'x'.repeat(10) }", exact(17)).unwrap_err().contains("more than 17 bytes as JSON"));
        // A sparse array is refused while it is walked, not after a huge text was built.
        let small = Bounds { bytes: 1000, depth: 10 };
        assert!(encode_with("{ a: new Array(1e9) }", small).unwrap_err().contains("more than 1000 bytes"));
    }

    #[test]
    fn proxies_and_to_json_are_walked_as_the_data_they_show() {
        assert_eq!(encode("new Proxy({ a: 1 }, {})").unwrap(), r#"{"a":1}"#);
        // toJSON is an ordinary function-valued property, refused like any other.
        assert!(refused("{ v: { toJSON() { return 1 } } }").contains("args.v.toJSON is a function"));
    }
}
