//! A script read as TypeScript, from any text: its types erased, the positions of a failure
//! mapped back, a failed callee named; a result or an error, never a panic or a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = exec_host::fuzzing::typescript(text);
});
