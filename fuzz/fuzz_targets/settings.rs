//! A settings file, and each permission rule, from any text: an error or a value, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = exec_host::settings::Layer::parse(text, std::path::Path::new("settings.json"));
    let _ = exec_host::settings::Rule::parse(text);
    let _ = exec_host::settings::PermissionMode::parse(text);
});
