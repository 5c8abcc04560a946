//! The TypeScript-like signature a model is shown, rendered from a hostile tool's schemas:
//! any JSON as the input and output schema, any name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|text: &str| {
    let (name, schema) = text.split_once('\n').unwrap_or(("tool", text));
    let Ok(schema) = serde_json::from_str::<Value>(schema) else { return };
    let output = schema.get("output").cloned();
    let form = exec_host::fuzzing::signature::call_form(name, &schema, output.as_ref());
    assert!(!form.is_empty());
    let _ = exec_host::fuzzing::signature::type_of(&schema);
    let _ = exec_host::fuzzing::signature::member(name, &schema, output.as_ref(), 3);
    let _ = exec_host::fuzzing::signature::doc_comment(name, 2);
    let _ = exec_host::fuzzing::signature::property_key(name);
    let _ = exec_host::fuzzing::signature::access(name);
});
