//! What servers send a sign-in: authorization server metadata, a `WWW-Authenticate`
//! challenge, a URL, from any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = exec_host::fuzzing::oauth_metadata(data);
});
