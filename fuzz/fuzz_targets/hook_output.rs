//! A `PreToolUse` hook's stdout, any text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = exec_host::fuzzing::hook_answer(text);
});
