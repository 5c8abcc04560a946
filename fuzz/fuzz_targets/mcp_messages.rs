//! A stdio MCP server's output, any bytes: read message by message within the line bound,
//! unreadable answers recovered from their raw bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let messages = exec_host::fuzzing::read_messages(bytes);
    // At most one message per line, plus one for a last line without a newline.
    assert!(messages <= bytes.iter().filter(|&&b| b == b'\n').count() + 1);
});
