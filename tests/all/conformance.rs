//! Runs every case in `tests/cases` (see `exec_host_tests::cases` for the format).

use exec_host_tests::cases::{case_scripts, run_case};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_holds() {
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let scripts = case_scripts();
    assert!(!scripts.is_empty(), "no cases found");
    let mut failures = Vec::new();
    for script in &scripts {
        if let Err(difference) = run_case(script, bless).await {
            let name = script.file_name().unwrap_or_default().to_string_lossy().into_owned();
            failures.push(format!("{name}:\n{difference}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n\n{}", failures.len(), scripts.len(), failures.join("\n\n"));
}

/// The format is documented by a case that is itself a test: this one must exist, run,
/// and pin every outcome field.
#[tokio::test]
async fn the_documented_format_is_a_case() {
    let script = exec_host_tests::cases::cases_dir().join("format_example.js");
    let spec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(script.with_extension("json")).unwrap()).unwrap();
    let expect = spec["expect"].as_object().expect("format_example.json has expect");
    for field in ["ok", "value", "text", "logs", "calls", "summary", "images", "error"] {
        assert!(expect.contains_key(field), "format_example.json does not pin `{field}`");
    }
    run_case(&script, false).await.unwrap();
}
