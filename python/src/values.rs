//! Python values as JSON, strictly: what a tool returns must be plain data. `None`, `bool`,
//! `int` (64 bits), finite `float`, `str`, `list` and `tuple`, and `dict` with `str` keys; any
//! other value (bytes, a date, a set, NaN, an object) is refused, naming where it is.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// How deep a value may nest (a cycle ends here too).
pub const MAX_DEPTH: usize = 128;

/// `value` as JSON, or why it is not plain data, with the path of the offending part
/// (`$.items[2].when`).
pub fn to_json(value: &Bound<'_, PyAny>) -> Result<Value, String> {
    walk(value, &mut String::from("$"), 0)
}

fn walk(value: &Bound<'_, PyAny>, path: &mut String, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("it nests deeper than {MAX_DEPTH} levels at {path}"));
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
        return Err(format!("an integer beyond 64 bits is not plain data, at {path}"));
    }
    if let Ok(float) = value.cast::<PyFloat>() {
        let number = float.value();
        return Number::from_f64(number).map(Value::Number).ok_or_else(|| format!("{number} is not a JSON number, at {path}"));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Value::String(text.to_str().map_err(|e| e.to_string())?.to_string()));
    }
    if let Ok(list) = value.cast::<PyList>() {
        return items(list.iter(), path, depth);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return items(tuple.iter(), path, depth);
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut object = Map::new();
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                let kind = key.get_type().name().map(|name| name.to_string()).unwrap_or_default();
                return Err(format!("a key of type {kind} is not plain data (keys are strings), at {path}"));
            };
            let key = key.to_str().map_err(|e| e.to_string())?.to_string();
            let length = path.len();
            path.push('.');
            path.push_str(&key);
            let item = walk(&item, path, depth + 1)?;
            path.truncate(length);
            object.insert(key, item);
        }
        return Ok(Value::Object(object));
    }
    let kind = value.get_type().name().map(|name| name.to_string()).unwrap_or_else(|_| "object".into());
    Err(format!("a value of type {kind} is not plain data, at {path}"))
}

fn items<'py>(values: impl Iterator<Item = Bound<'py, PyAny>>, path: &mut String, depth: usize) -> Result<Value, String> {
    let mut array = Vec::new();
    for (at, item) in values.enumerate() {
        let length = path.len();
        path.push_str(&format!("[{at}]"));
        array.push(walk(&item, path, depth + 1)?);
        path.truncate(length);
    }
    Ok(Value::Array(array))
}
