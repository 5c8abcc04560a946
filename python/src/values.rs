//! Python values as JSON, strictly: what a tool returns must be plain data. `None`, `bool`,
//! `int` (64 bits), finite `float`, `str`, `list` and `tuple`, and `dict` with `str` keys; any
//! other value (bytes, a date, a set, NaN, an object) is refused, naming where it is, and so is
//! a value past [`MAX_VALUE_BYTES`].

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// How deep a value may nest (a cycle ends here too).
pub const MAX_DEPTH: usize = 128;

pub use exec_host_embed::MAX_VALUE_BYTES;

/// A walk through one value: where it is, and the bytes counted so far.
struct Walk {
    path: String,
    bytes: usize,
}

impl Walk {
    fn count(&mut self, bytes: usize) -> Result<(), String> {
        self.bytes = self.bytes.saturating_add(bytes);
        match self.bytes > MAX_VALUE_BYTES {
            true => Err(format!("more than {} MiB of data, at {}", MAX_VALUE_BYTES >> 20, self.path)),
            false => Ok(()),
        }
    }
}

/// `value` as JSON, or why it is not plain data, with the path of the offending part
/// (`$.items[2].when`).
pub fn to_json(value: &Bound<'_, PyAny>) -> Result<Value, String> {
    walk(value, &mut Walk { path: String::from("$"), bytes: 0 }, 0)
}

fn walk(value: &Bound<'_, PyAny>, at: &mut Walk, depth: usize) -> Result<Value, String> {
    at.count(8)?;
    if depth > MAX_DEPTH {
        return Err(format!("it nests deeper than {MAX_DEPTH} levels at {}", at.path));
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    // A bool is an int to Python: asked first.
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if value.cast::<PyInt>().is_ok() {
        if let Ok(number) = value.extract::<i64>() {
            return Ok(Value::from(number));
        }
        if let Ok(number) = value.extract::<u64>() {
            return Ok(Value::from(number));
        }
        return Err(format!("an integer beyond 64 bits is not plain data, at {}", at.path));
    }
    if let Ok(float) = value.cast::<PyFloat>() {
        let number = float.value();
        return Number::from_f64(number)
            .map(Value::Number)
            .ok_or_else(|| format!("{number} is not a JSON number, at {}", at.path));
    }
    if let Ok(text) = value.cast::<PyString>() {
        let text = text.to_str().map_err(|e| format!("{e}, at {}", at.path))?;
        at.count(text.len())?;
        return Ok(Value::String(text.to_string()));
    }
    if let Ok(list) = value.cast::<PyList>() {
        return items(list.iter(), at, depth);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return items(tuple.iter(), at, depth);
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut object = Map::new();
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                let kind = key.get_type().name().map(|name| name.to_string()).unwrap_or_default();
                return Err(format!("a key of type {kind} is not plain data (keys are strings), at {}", at.path));
            };
            let key = key.to_str().map_err(|e| format!("{e}, at {}", at.path))?.to_string();
            at.count(key.len())?;
            let length = at.path.len();
            at.path.push('.');
            at.path.push_str(&key);
            let item = walk(&item, at, depth + 1)?;
            at.path.truncate(length);
            object.insert(key, item);
        }
        return Ok(Value::Object(object));
    }
    let kind = value.get_type().name().map(|name| name.to_string()).unwrap_or_else(|_| "object".into());
    Err(format!("a value of type {kind} is not plain data, at {}", at.path))
}

fn items<'py>(values: impl Iterator<Item = Bound<'py, PyAny>>, at: &mut Walk, depth: usize) -> Result<Value, String> {
    let mut array = Vec::new();
    for (index, item) in values.enumerate() {
        let length = at.path.len();
        at.path.push_str(&format!("[{index}]"));
        array.push(walk(&item, at, depth + 1)?);
        at.path.truncate(length);
    }
    Ok(Value::Array(array))
}
