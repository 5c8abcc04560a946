//! The web-standard globals. The native half is here: the work that is byte-level or
//! table-driven, done in Rust. Each function here takes and returns plain values; the
//! script half ([`SCRIPT`]) checks arguments, raises the errors the standards name, and
//! builds the objects a script sees, all in the sandbox realm.
//!
//! The script half is one closure, run once after the prelude, kept as one file per
//! global in the order they are joined: `open.js` opens the closure and captures the
//! built-ins every global uses, then `dom_exception.js`, `timers.js`,
//! `structured_clone.js`, `base64.js` (`atob`, `btoa`), `text_encoding.js`
//! (`TextEncoder`, `TextDecoder`), `url.js` (`URL`, `URLSearchParams`), `fetch.js` (`fetch`,
//! `Headers`, `Request`, `Response`, `AbortController`, `AbortSignal`, `Event`,
//! `EventTarget`: each request a call of the host's `WebFetch`), which closes it. Each file alone is a fragment of that closure;
//! messages name the whole as `web.js`.
//!
//! Strings arrive well-formed: the script half replaces lone surrogates before it calls
//! in, as the standards' USVString conversion does, so every string here is valid UTF-8.

use std::cell::OnceCell;

use rquickjs::convert::List;
use rquickjs::function::{Constructor, Func, Opt};
use rquickjs::{BigInt, Ctx, Function, Object, TypedArray, Value, qjs};
use url::Url;

/// The script half, whole: the closure the engine runs with the host object.
pub const SCRIPT: &str = concat!(
    include_str!("open.js"),
    include_str!("dom_exception.js"),
    include_str!("timers.js"),
    include_str!("structured_clone.js"),
    include_str!("base64.js"),
    include_str!("text_encoding.js"),
    include_str!("url.js"),
    include_str!("fetch.js"),
);

/// QuickJS class ids of objects the public API has no test for, read from sample objects
/// when the engine starts (so no id is hard-coded).
#[derive(Clone, Copy)]
struct ClassIds {
    object: qjs::JSClassID,
    number: qjs::JSClassID,
    string: qjs::JSClassID,
    boolean: qjs::JSClassID,
    bigint: qjs::JSClassID,
    shared_buffer: qjs::JSClassID,
}

thread_local! {
    static CLASS_IDS: OnceCell<ClassIds> = const { OnceCell::new() };
}

/// Adds the native helpers to the prelude's `host` object.
pub fn natives<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let boxed: Function = globals.get("Object")?;
    let boxed = |value: Value<'js>| -> rquickjs::Result<qjs::JSClassID> { Ok(class_id(&boxed.call::<_, Value>((value,))?)) };
    let shared: Constructor = globals.get("SharedArrayBuffer")?;
    let ids = ClassIds {
        object: class_id(Object::new(ctx.clone())?.as_value()),
        number: boxed(Value::new_number(ctx.clone(), 0.0))?,
        string: boxed(rquickjs::String::from_str(ctx.clone(), "")?.into_value())?,
        boolean: boxed(Value::new_bool(ctx.clone(), false))?,
        bigint: boxed(BigInt::from_i64(ctx.clone(), 0)?.into_value())?,
        shared_buffer: class_id(&shared.construct::<_, Value>((0,))?),
    };
    CLASS_IDS.with(|cell| {
        let _ = cell.set(ids);
    });

    host.set("kindOf", Func::from(|value: Value<'js>| kind_of(&value)))?;
    // The byte-level natives read a script's string where the engine keeps it and build
    // their result with fallible allocations: however large the input, the answer is a
    // result or a catchable `RangeError`, never an abort of the engine.
    host.set(
        "base64Encode",
        Func::from(|ctx: Ctx<'js>, text: rquickjs::String<'js>| {
            let text = borrowed(&ctx, text, "btoa()")?;
            base64_encode(&text).map(|encoded| encoded.map_err(|needed| too_large(&ctx, "btoa()", needed))).transpose()
        }),
    )?;
    host.set(
        "base64Decode",
        Func::from(|ctx: Ctx<'js>, text: rquickjs::String<'js>| {
            let text = borrowed(&ctx, text, "atob()")?;
            base64_decode(&text).map(|decoded| decoded.map_err(|needed| too_large(&ctx, "atob()", needed))).transpose()
        }),
    )?;
    // A body's bytes as `fetch` hands them to the host and gets them back.
    host.set(
        "bytesToBase64",
        Func::from(|ctx: Ctx<'js>, bytes: TypedArray<'js, u8>| {
            // SAFETY: the view's bytes stay put while this native function runs: no JS runs
            // until it returns, and the slice does not outlive it.
            let slice = bytes.as_raw().map(|raw| unsafe { raw.as_ref() }).unwrap_or(&[]);
            encode_base64(slice.len(), slice.iter().copied()).map_err(|needed| too_large(&ctx, "fetch()", needed))
        }),
    )?;
    host.set(
        "base64ToBytes",
        Func::from(|ctx: Ctx<'js>, text: rquickjs::String<'js>| {
            let text = borrowed(&ctx, text, "fetch()")?;
            match base64_bytes(&text) {
                None => Err(rquickjs::Exception::throw_type(&ctx, "fetch(): the host sent a body that is not base64")),
                Some(Err(needed)) => Err(too_large(&ctx, "fetch()", needed)),
                Some(Ok(bytes)) => TypedArray::<u8>::new(ctx.clone(), bytes),
            }
        }),
    )?;
    host.set(
        "utf8Encode",
        Func::from(|ctx: Ctx<'js>, text: rquickjs::String<'js>| {
            let text = borrowed(&ctx, text, "TextEncoder.encode()")?;
            TypedArray::<u8>::new_copy(ctx, text.as_bytes())
        }),
    )?;
    host.set(
        "utf8EncodeInto",
        Func::from(|ctx: Ctx<'js>, text: rquickjs::String<'js>, dest: TypedArray<'js, u8>| {
            let text = borrowed(&ctx, text, "TextEncoder.encodeInto()")?;
            Ok::<_, rquickjs::Error>(utf8_encode_into(&text, &dest))
        }),
    )?;
    host.set(
        "utf8Decode",
        Func::from(|ctx: Ctx<'js>, bytes: TypedArray<'js, u8>, fatal: bool, strip_bom: bool, stream: bool| {
            // SAFETY: the view's bytes stay put while this native function runs: no JS runs
            // until it returns, and the slice does not outlive it.
            let slice = bytes.as_raw().map(|raw| unsafe { raw.as_ref() }).unwrap_or(&[]);
            match utf8_decode(slice, fatal, strip_bom, stream) {
                None => Ok(None),
                Some(Ok(decoded)) => Ok(Some(List(decoded))),
                Some(Err(needed)) => Err(too_large(&ctx, "TextDecoder.decode()", needed)),
            }
        }),
    )?;
    host.set("urlParse", Func::from(|input: String, base: Opt<String>| url_parse(&input, base.0.as_deref())))?;
    host.set("urlSet", Func::from(|href: String, part: u32, value: String| url_set(&href, part, &value)))?;
    host.set("formParse", Func::from(|text: String| form_parse(&text)))?;
    host.set("formSerialize", Func::from(|list: Vec<String>| form_serialize(&list)))?;
    Ok(())
}

fn class_id(value: &Value<'_>) -> qjs::JSClassID {
    // SAFETY: reads the class id of a live value; no reference is taken or released.
    unsafe { qjs::JS_GetClassID(value.as_raw()) }
}

/// What `structuredClone` must do with an object: its kind by the engine's own brand, so
/// neither a `Symbol.toStringTag` nor a changed prototype can disguise it.
fn kind_of(value: &Value<'_>) -> &'static str {
    if !value.is_object() {
        return "primitive";
    }
    let raw = value.as_raw();
    let Some(ids) = CLASS_IDS.with(|cell| cell.get().copied()) else { return "other" };
    // SAFETY: each test only reads the class of a live value.
    unsafe {
        if qjs::JS_IsProxy(raw) {
            "proxy"
        } else if qjs::JS_IsFunction(value.ctx().as_raw().as_ptr(), raw) {
            "function"
        } else if qjs::JS_IsArray(raw) {
            "array"
        } else if qjs::JS_IsError(raw) {
            "error"
        } else if qjs::JS_IsDate(raw) {
            "date"
        } else if qjs::JS_IsRegExp(raw) {
            "regexp"
        } else if qjs::JS_IsMap(raw) {
            "map"
        } else if qjs::JS_IsSet(raw) {
            "set"
        } else if qjs::JS_IsDataView(raw) {
            "dataview"
        } else if qjs::JS_GetTypedArrayType(raw) >= 0 {
            "typedarray"
        } else {
            let id = qjs::JS_GetClassID(raw);
            match id {
                _ if id == ids.shared_buffer => "other",
                _ if qjs::JS_IsArrayBuffer(raw) => "arraybuffer",
                _ if id == ids.object => "object",
                _ if id == ids.number => "number",
                _ if id == ids.string => "string",
                _ if id == ids.boolean => "boolean",
                _ if id == ids.bigint => "bigint",
                _ => "other",
            }
        }
    }
}

/// A script's string as the engine holds it, borrowed as UTF-8 (the engine makes that copy
/// in its own heap, where running out is an error, not an abort); a string the engine
/// cannot spare the memory for is a `RangeError` naming `what`.
fn borrowed<'js>(ctx: &Ctx<'js>, text: rquickjs::String<'js>, what: &str) -> rquickjs::Result<rquickjs::CString<'js>> {
    text.to_cstring().map_err(|_| {
        rquickjs::Exception::throw_range(ctx, &format!("{what}: the string is too large to be read in the memory left"))
    })
}

/// The `RangeError` of a result of `needed` bytes that does not fit in the memory left.
fn too_large(ctx: &Ctx<'_>, what: &str, needed: usize) -> rquickjs::Error {
    rquickjs::Exception::throw_range(ctx, &format!("{what}: a result of {needed} bytes does not fit in the memory left"))
}

/// An empty string with room for `bytes`, or `Err(bytes)` when the memory is not there.
fn string_for(bytes: usize) -> Result<String, usize> {
    let mut out = String::new();
    out.try_reserve_exact(bytes).map_err(|_| bytes)?;
    Ok(out)
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `btoa`: `None` when a character is past U+00FF; `Err` with the bytes the result needs
/// when they are not there.
fn base64_encode(text: &str) -> Option<Result<String, usize>> {
    if text.chars().any(|c| u32::from(c) > 0xFF) {
        return None;
    }
    Some(encode_base64(text.chars().count(), text.chars().map(|c| u32::from(c) as u8)))
}

/// The base64 of the `count` bytes of `bytes`; `Err` with the bytes the text needs when
/// they are not there.
fn encode_base64(count: usize, bytes: impl Iterator<Item = u8>) -> Result<String, usize> {
    let mut out = string_for(count.div_ceil(3) * 4)?;
    let mut bytes = bytes.peekable();
    while bytes.peek().is_some() {
        let mut chunk = [0u8; 3];
        let mut len = 0;
        for (slot, b) in chunk.iter_mut().zip(bytes.by_ref().take(3)) {
            *slot = b;
            len += 1;
        }
        let group = u32::from(chunk[0]) << 16 | u32::from(chunk[1]) << 8 | u32::from(chunk[2]);
        for i in 0..4 {
            out.push(if i <= len { char::from(BASE64[(group >> (18 - 6 * i) & 63) as usize]) } else { '=' });
        }
    }
    Ok(out)
}

/// The bytes of `text`, base64 as the host writes it for a body (padded, no white space);
/// `None` when it is not, `Err` with the bytes needed when they are not there.
fn base64_bytes(text: &str) -> Option<Result<Vec<u8>, usize>> {
    let digits = text.trim_end_matches('=');
    if text.len() - digits.len() > 2 || digits.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::new();
    if out.try_reserve_exact(digits.len() / 4 * 3 + 2).is_err() {
        return Some(Err(digits.len() / 4 * 3));
    }
    decode_base64(digits.bytes(), |byte| out.push(byte))?;
    Some(Ok(out))
}

/// Whether `b` is ASCII white space as the forgiving-base64 decode skips it.
fn is_base64_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// The value of a base64 digit.
fn base64_digit(b: u8) -> Option<u32> {
    let value = match b {
        b'A'..=b'Z' => b - b'A',
        b'a'..=b'z' => b - b'a' + 26,
        b'0'..=b'9' => b - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(value))
}

/// `atob`: the HTML standard's forgiving-base64 decode, as a byte string; `None` when
/// the text is not base64, `Err` with the bytes the result needs when they are not there.
/// The text is read where it is (white space skipped, up to two `=` dropped from the end
/// when the rest makes whole groups), once to check it and size the result, once to fill it.
fn base64_decode(text: &str) -> Option<Result<String, usize>> {
    let data = || text.bytes().filter(|&b| !is_base64_space(b));
    let mut length = data().count();
    if length.is_multiple_of(4) {
        let mut tail = data().skip(length.saturating_sub(2));
        length -= match (tail.next(), tail.next()) {
            (Some(b'='), Some(b'=')) => 2,
            (_, Some(b'=')) => 1,
            _ => 0,
        };
    }
    if length % 4 == 1 {
        return None;
    }
    // A byte past 0x7F takes two in UTF-8.
    let mut needed = 0;
    decode_base64(data().take(length), |byte| needed += if byte < 0x80 { 1 } else { 2 })?;
    let mut out = match string_for(needed) {
        Ok(out) => out,
        Err(needed) => return Some(Err(needed)),
    };
    decode_base64(data().take(length), |byte| out.push(char::from(byte)))?;
    Some(Ok(out))
}

/// Hands each byte `digits` (base64, padding removed) decode to; `None` at a character that
/// is no digit. Bits left over past the last whole byte are dropped, whatever they are.
fn decode_base64(digits: impl Iterator<Item = u8>, mut each: impl FnMut(u8)) -> Option<()> {
    let (mut bits, mut count) = (0u32, 0u32);
    for digit in digits {
        bits = bits << 6 | base64_digit(digit)?;
        count += 6;
        if count >= 8 {
            count -= 8;
            each((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    Some(())
}

/// `TextEncoder.encodeInto`: writes the whole characters of `text` that fit into `dest`;
/// returns `[read, written]`, `read` in UTF-16 units.
fn utf8_encode_into(text: &str, dest: &TypedArray<'_, u8>) -> Vec<f64> {
    let Some(raw) = dest.as_raw() else { return vec![0.0, 0.0] };
    // SAFETY: the view's bytes stay put while this native function runs (no JS runs until
    // it returns); nothing else holds a reference into them meanwhile.
    let out = unsafe { &mut *raw.as_ptr() };
    let (mut read, mut written) = (0usize, 0usize);
    for c in text.chars() {
        let size = c.len_utf8();
        if written + size > out.len() {
            break;
        }
        c.encode_utf8(&mut out[written..written + size]);
        written += size;
        read += c.len_utf16();
    }
    vec![read as f64, written as f64]
}

/// `TextDecoder.decode`: `[text, held]`, where `held` counts the bytes at the end kept back
/// for the next call of a stream (an incomplete character); `None` when `fatal` and the
/// bytes are not UTF-8. Ill-formed sequences become U+FFFD, one per maximal subpart, as
/// the Encoding standard says.
/// `Err` carries the bytes the text needs when they are not there.
fn utf8_decode(bytes: &[u8], fatal: bool, strip_bom: bool, stream: bool) -> Option<Result<(String, u32), usize>> {
    let held = if stream { incomplete_tail(bytes) } else { 0 };
    let mut bytes = &bytes[..bytes.len() - held];
    if strip_bom && bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes = &bytes[3..];
    }
    if fatal && std::str::from_utf8(bytes).is_err() {
        return None;
    }
    // Each ill-formed part becomes U+FFFD, three bytes.
    let needed: usize =
        bytes.utf8_chunks().map(|chunk| chunk.valid().len() + if chunk.invalid().is_empty() { 0 } else { 3 }).sum();
    let mut text = match string_for(needed) {
        Ok(text) => text,
        Err(needed) => return Some(Err(needed)),
    };
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            text.push(char::REPLACEMENT_CHARACTER);
        }
    }
    Some(Ok((text, held as u32)))
}

/// How many bytes at the end of `bytes` begin a character that is not complete yet.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for size in 1..=3.min(bytes.len()) {
        let tail = &bytes[bytes.len() - size..];
        if tail[0] & 0xC0 != 0x80 {
            // A lead byte: its character is incomplete when decoding it stops at the end.
            return match std::str::from_utf8(tail) {
                Err(e) if e.valid_up_to() == 0 && e.error_len().is_none() => size,
                _ => 0,
            };
        }
    }
    0
}

/// The parts of a URL, in the order `url.js` reads them.
fn url_parts(url: &Url) -> Vec<String> {
    use url::quirks;
    [
        quirks::href(url),
        &quirks::origin(url),
        quirks::protocol(url),
        quirks::username(url),
        quirks::password(url),
        quirks::host(url),
        quirks::hostname(url),
        quirks::port(url),
        quirks::pathname(url),
        quirks::search(url),
        quirks::hash(url),
    ]
    .into_iter()
    .map(str::to_string)
    .collect()
}

/// `new URL(input, base)`: the parts, or `None` when either does not parse.
fn url_parse(input: &str, base: Option<&str>) -> Option<Vec<String>> {
    let url = match base {
        None => Url::parse(input).ok()?,
        Some(base) => Url::options().base_url(Some(&Url::parse(base).ok()?)).parse(input).ok()?,
    };
    Some(url_parts(&url))
}

/// A URL setter: `part` indexes [`url_parts`]. `None` when the new `href` does not parse;
/// every other setter ignores a value it cannot take, as the standard says.
fn url_set(href: &str, part: u32, value: &str) -> Option<Vec<String>> {
    use url::quirks;
    let mut url = Url::parse(href).ok()?;
    match part {
        0 => quirks::set_href(&mut url, value).ok()?,
        2 => drop(quirks::set_protocol(&mut url, value)),
        3 => drop(quirks::set_username(&mut url, value)),
        4 => drop(quirks::set_password(&mut url, value)),
        5 => drop(quirks::set_host(&mut url, value)),
        6 => drop(quirks::set_hostname(&mut url, value)),
        7 => drop(quirks::set_port(&mut url, value)),
        8 => quirks::set_pathname(&mut url, value),
        9 => quirks::set_search(&mut url, value),
        10 => quirks::set_hash(&mut url, value),
        _ => {}
    }
    Some(url_parts(&url))
}

/// `application/x-www-form-urlencoded` text as a flat list `[name, value, name, value, …]`.
fn form_parse(text: &str) -> Vec<String> {
    form_urlencoded::parse(text.as_bytes()).flat_map(|(name, value)| [name.into_owned(), value.into_owned()]).collect()
}

/// A flat list `[name, value, …]` as `application/x-www-form-urlencoded` text.
fn form_serialize(list: &[String]) -> String {
    let mut serializer = form_urlencoded::Serializer::new(String::new());
    for pair in list.chunks_exact(2) {
        serializer.append_pair(&pair[0], &pair[1]);
    }
    serializer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgiving_base64() {
        assert_eq!(base64_decode(" YW Jj\n"), Some(Ok("abc".into())));
        assert_eq!(base64_decode("YQ"), Some(Ok("a".into())));
        assert_eq!(base64_decode("YR=="), Some(Ok("a".into())));
        assert_eq!(base64_decode("/w=="), Some(Ok("\u{ff}".into())));
        assert_eq!(base64_decode("Y"), None);
        assert_eq!(base64_decode("YQ="), None);
        assert_eq!(base64_decode("Y=Q="), None);
        assert_eq!(base64_encode("\u{ff}"), Some(Ok("/w==".into())));
        assert_eq!(base64_encode("abcd"), Some(Ok("YWJjZA==".into())));
        assert_eq!(base64_encode(""), Some(Ok(String::new())));
        assert_eq!(base64_encode("\u{100}"), None);
    }

    #[test]
    fn bodies_cross_as_base64_both_ways() {
        let bytes = [0u8, 255, 128, 7, 42];
        let encoded = encode_base64(bytes.len(), bytes.iter().copied()).unwrap();
        assert_eq!(encoded, "AP+AByo=");
        assert_eq!(base64_bytes(&encoded), Some(Ok(bytes.to_vec())));
        assert_eq!(base64_bytes(""), Some(Ok(Vec::new())));
        assert_eq!(base64_bytes("AP+A"), Some(Ok(vec![0, 255, 128])));
        for bad in ["A", "AP+A===", "AP A", "AP+$"] {
            assert_eq!(base64_bytes(bad), None, "{bad}");
        }
    }

    #[test]
    fn streams_hold_back_an_incomplete_character() {
        assert_eq!(incomplete_tail(b"a\xE2\x82"), 2);
        assert_eq!(incomplete_tail(b"a\xE2\x82\xAC"), 0);
        assert_eq!(incomplete_tail(b"a\xFF"), 0);
        assert_eq!(utf8_decode(b"\xEF\xBB\xBFa\xF0\x9F", false, true, true), Some(Ok(("a".into(), 2))));
        assert_eq!(utf8_decode(b"a\xF0\x9F", false, false, false), Some(Ok(("a\u{FFFD}".into(), 0))));
        assert_eq!(utf8_decode(b"\xC0\xC0a\xE2\x82", false, false, false), Some(Ok(("\u{FFFD}\u{FFFD}a\u{FFFD}".into(), 0))));
        assert_eq!(utf8_decode(b"\xC0", true, false, false), None);
    }
}
