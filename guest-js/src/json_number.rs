//! Reading the numbers of JSON text fast.
//!
//! QuickJS's JSON parser, which reads every tool result, hands each number it finds to the C
//! library's `strtod`. The guest's C library (wasi-libc) reads with arbitrary precision and
//! takes about 250 ns for a number with a fraction. The guest build renames QuickJS's calls
//! of `strtod` to [`exec_host_strtod`] (`scripts/guest-env.sh`), which reads JSON's number
//! syntax with Rust's parser (correctly rounded too, so the same value) and hands anything
//! else to `strtod`.

use std::ffi::c_char;

unsafe extern "C" {
    fn strtod(text: *const c_char, end: *mut *mut c_char) -> f64;
}

/// `strtod` for QuickJS: JSON's number syntax (an optional sign, digits, an optional
/// fraction and exponent) is read here, anything else by the C library's `strtod`.
///
/// # Safety
/// As for `strtod`: `text` points to a NUL-terminated string, and `end`, when not null, to
/// where the end of the number read is stored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn exec_host_strtod(text: *const c_char, end: *mut *mut c_char) -> f64 {
    // SAFETY: `text` is NUL-terminated, and `json_number_length` reads no further than the NUL.
    let length = unsafe { json_number_length(text.cast()) };
    if length > 0 {
        // SAFETY: the first `length` bytes were just read, and are ASCII.
        let number = unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(text.cast::<u8>(), length)) };
        if let Ok(value) = number.parse::<f64>() {
            if !end.is_null() {
                // SAFETY: the caller gave a writable `end`; the number ends inside `text`.
                unsafe { *end = text.add(length).cast_mut() };
            }
            return value;
        }
    }
    // SAFETY: the caller's guarantees are `strtod`'s.
    unsafe { strtod(text, end) }
}

/// Bytes of the JSON number at the start of `text` (a sign is allowed, as QuickJS's parser
/// allows one), or 0 when `text` does not start with one.
///
/// # Safety
/// `text` points to a NUL-terminated string; no byte past the NUL is read.
unsafe fn json_number_length(text: *const u8) -> usize {
    // SAFETY: every read below is at or before the first NUL: each stops at a byte that
    // does not match, and NUL matches nothing.
    let at = |i: usize| unsafe { *text.add(i) };
    let digits = |mut i: usize| {
        let start = i;
        while at(i).is_ascii_digit() {
            i += 1;
        }
        (i > start).then_some(i)
    };
    let mut i = usize::from(matches!(at(0), b'+' | b'-'));
    let Some(after) = digits(i) else { return 0 };
    i = after;
    // `0x...` is a hexadecimal number to `strtod`.
    if matches!(at(i), b'x' | b'X') {
        return 0;
    }
    if at(i) == b'.' {
        let Some(after) = digits(i + 1) else { return 0 };
        i = after;
    }
    if matches!(at(i), b'e' | b'E') {
        let sign = usize::from(matches!(at(i + 1), b'+' | b'-'));
        let Some(after) = digits(i + 1 + sign) else { return 0 };
        i = after;
    }
    i
}

/// Native tests against the build machine's own `strtod`: the same value and the same end
/// for JSON numbers, and everything else left to `strtod`.
#[cfg(test)]
mod tests {
    use std::ffi::CString;

    use super::*;

    fn both(text: &str) -> ((u64, usize), (u64, usize)) {
        let c = CString::new(text).unwrap();
        let read = |f: unsafe extern "C" fn(*const c_char, *mut *mut c_char) -> f64| {
            let mut end = std::ptr::null_mut();
            // SAFETY: a NUL-terminated string and a writable end.
            let value = unsafe { f(c.as_ptr(), &mut end) };
            (value.to_bits(), end as usize - c.as_ptr() as usize)
        };
        (read(exec_host_strtod), read(strtod))
    }

    #[test]
    fn json_numbers_read_as_strtod_reads_them() {
        for text in [
            "0",
            "-0",
            "7",
            "501",
            "-42",
            "+3",
            "2147483648",
            "9007199254740993",
            "1234.5678",
            "0.1",
            "-0.000001",
            "1e21",
            "1E-7",
            "2.5e+3",
            "5e-324",
            "2e-324",
            "1.7976931348623157e308",
            "1e309",
            "-1e400",
            "123456789012345678901234567890.123456789e-5",
            "0.30000000000000004",
            "12,",
            "3]",
            "1.5}",
            "7 ",
        ] {
            let (ours, libc) = both(text);
            assert_eq!(ours, libc, "{text}");
        }
    }

    #[test]
    fn anything_else_is_left_to_strtod() {
        for text in ["", "-", "1.", ".5", "1e", "1e+", " 12", "0x1p3", "-0X10", "inf", "nan", "abc"] {
            let (ours, libc) = both(text);
            assert_eq!(ours, libc, "{text}");
        }
        // SAFETY: a NUL-terminated string with nothing after it.
        assert_eq!(unsafe { json_number_length(c"1.".as_ptr().cast()) }, 0);
        // SAFETY: as above.
        assert_eq!(unsafe { json_number_length(c"-12.5e3x".as_ptr().cast()) }, 7);
    }
}
