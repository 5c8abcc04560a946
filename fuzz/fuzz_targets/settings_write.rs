//! "Allow always" saving a rule into a settings file that holds any text, for any tool name:
//! an error or, from a valid file, a file that reads back with the rule; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&str, &str)| {
    let (existing, tool) = input;
    let valid_before = exec_host::settings::Layer::parse(existing, std::path::Path::new("settings.json")).is_ok();
    let dir = std::env::temp_dir().join(format!("exec-host-fuzz-settings-write-{}", std::process::id()));
    if let Ok(text) = exec_host::fuzzing::save_rule(&dir, existing, tool)
        && valid_before
    {
        let layer = exec_host::settings::Layer::parse(&text, std::path::Path::new("settings.json"));
        let layer = layer.unwrap_or_else(|e| panic!("a saved file does not read back: {e}\n{text}"));
        let settings = exec_host::settings::Settings::from_layers([&layer]);
        assert!(settings.allow.iter().any(|rule| rule.value.covers_tool(tool)), "{tool:?} is not allowed by\n{text}");
    }
});
