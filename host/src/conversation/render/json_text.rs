//! A script's value as the model reads it: a string as it is, anything else as compact
//! JSON with numbers written as JavaScript writes them, cut at the result cap.

use serde_json::Value;

/// Strings as they are (an empty one as `""`: a model API refuses empty text), anything
/// else as JSON; cut at `max_chars`, saying the total.
pub(super) fn render_value(value: &Value, max_chars: usize) -> String {
    let text = match value {
        Value::String(text) if text.is_empty() => "\"\"".to_string(),
        Value::String(text) => text.clone(),
        other => {
            let mut text = String::new();
            write_json(other, &mut text);
            text
        }
    };
    cut_text(text, max_chars)
}

/// `text` cut at `max_chars` characters, saying the total: the one result cap.
pub(super) fn cut_text(text: String, max_chars: usize) -> String {
    let Some((at, _)) = text.char_indices().nth(max_chars) else { return text };
    let total = text.chars().count();
    format!("{}\n[result cut: {total} characters in all, the first {max_chars} shown]", &text[..at])
}

/// `value` as compact JSON with numbers written as JavaScript writes them (`3`, not `3.0`;
/// `1e+21`, `1e-7`), so a value reads the same whether a script returned it (the guest's
/// `JSON.stringify`) or a flat call answered it (a server's JSON).
pub(super) fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Number(number) => match number.as_f64() {
            Some(float) if !number.is_i64() && !number.is_u64() => out.push_str(&js_number(float)),
            _ => out.push_str(&number.to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_json(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A finite number as ECMAScript's `Number.prototype.toString` writes it: the shortest
/// digits that round-trip, positional between 1e-7 and 1e21, exponential outside.
pub(super) fn js_number(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `d.ddde±x`.
    let formatted = format!("{:e}", x.abs());
    let (mantissa, exponent) = formatted.split_once('e').unwrap_or((&formatted, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let k = digits.len() as i64;
    let n = exponent.parse::<i64>().unwrap_or(0) + 1;
    let sign = if x < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let exponent = n - 1;
        let sign = if exponent < 0 { "-" } else { "+" };
        match digits.len() {
            1 => format!("{digits}e{sign}{}", exponent.abs()),
            _ => format!("{}.{}e{sign}{}", &digits[..1], &digits[1..], exponent.abs()),
        }
    };
    format!("{sign}{body}")
}
