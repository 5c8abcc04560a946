//! The host's own cases: what a session makes of a script's run (the text a model reads,
//! the summary, caps, images, the builtin tools), as data. The WIT-level behaviour of the
//! guest and runtime is in the conformance cases (`conformance/`); these pin the host's
//! renderings on top of it. Each case is a script `NAME.js` and, beside it, `NAME.json`:
//!
//! ```json
//! {
//!   "about": "what the case checks, and the spec scenario it comes from",
//!   "options": { "budget_ms": 100, "max_calls": 3, "files": { "notes/a.txt": "hello" } },
//!   "expect": { "ok": true, "value": 2, "text": "2", "logs": [], "calls": [],
//!               "summary": "0 tool calls", "images": 0, "error": null },
//!   "workspace": { "notes/a.txt": "hello" },
//!   "ignore": []
//! }
//! ```
//!
//! The script runs through the real sandbox with the builtin tools on a fresh temporary
//! workspace (seeded with `options.files`) and the fixture tools. Every field of `expect`
//! must equal the outcome (`images` is the number of images); `workspace` lists files
//! that must hold exactly this text afterwards; fields named in `ignore` are not compared.
//! `options` may also set `max_log_chars`, `max_result_chars`, `max_images`,
//! `max_memory_mib` and `max_nested_wait_ms`. `"shares": "OTHER"` runs the script of the
//! conformance case `OTHER` instead of a `NAME.js` of the case's own.
//!
//! `BLESS=1` rewrites each `expect` from the actual outcome (keeping everything else), for
//! a new case or a deliberate change; review the diff before committing it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use exec_host::{Limits, ToolResult};
use serde_json::{Map, Value, json};

use crate::Harness;

/// The folder holding the cases.
pub fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("host-cases")
}

/// Every case (each `NAME.json`, and any `NAME.js` without one), as the path of its data
/// file, in name order.
pub fn cases() -> Vec<PathBuf> {
    let names: std::collections::BTreeSet<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("tests/host-cases exists")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "js" || ext == "json"))
        .map(|path| path.with_extension("json"))
        .collect();
    names.into_iter().collect()
}

/// The script a case runs: its own `NAME.js`, or, when its data says `"shares": "OTHER"`,
/// the script of the conformance case `OTHER` (one script pinned at both levels: the WIT
/// boundary there, the host's rendering here), never both.
fn script_of(spec_path: &Path, spec: &Map<String, Value>) -> Result<String, String> {
    let own = spec_path.with_extension("js");
    let script = match spec.get("shares") {
        None => own,
        Some(Value::String(shared)) if !shared.is_empty() && !shared.contains(['/', '\\', '.']) => {
            if own.exists() {
                return Err(format!("{} and `shares` both give the script: keep one", own.display()));
            }
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/cases").join(format!("{shared}.js"))
        }
        Some(other) => return Err(format!("`shares` names a conformance case, not {other}")),
    };
    std::fs::read_to_string(&script).map_err(|e| format!("cannot read {}: {e}", script.display()))
}

/// The outcome fields a case compares, as JSON.
pub fn observed(outcome: &ToolResult) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("ok".into(), json!(outcome.ok()));
    map.insert("value".into(), outcome.value().cloned().unwrap_or(Value::Null));
    map.insert("text".into(), json!(outcome.text()));
    map.insert("logs".into(), json!(outcome.client.logs));
    map.insert("calls".into(), json!(outcome.call_names()));
    map.insert("summary".into(), json!(outcome.summary()));
    map.insert("images".into(), json!(outcome.client.images.len()));
    map.insert("error".into(), json!(outcome.failure().map(|f| &f.message)));
    map
}

fn limits_from(options: &Map<String, Value>) -> Result<Limits, String> {
    let mut limits = Limits::default();
    let get = |key: &str| options.get(key).and_then(Value::as_u64);
    if let Some(ms) = get("budget_ms") {
        limits = limits.with_budget(Duration::from_millis(ms));
    }
    if let Some(n) = get("max_calls") {
        limits = limits.with_max_calls(n as u32);
    }
    if let Some(n) = get("max_log_chars") {
        limits = limits.with_max_log_chars(n as usize);
    }
    if let Some(n) = get("max_result_chars") {
        limits = limits.with_max_result_chars(n as usize);
    }
    if let Some(n) = get("max_images") {
        limits = limits.with_max_images(n as usize);
    }
    if let Some(n) = get("max_memory_mib") {
        limits = limits.with_max_memory_bytes(n << 20);
    }
    if let Some(ms) = get("max_nested_wait_ms") {
        limits = limits.with_max_nested_wait(Some(Duration::from_millis(ms)));
    }
    for key in options.keys() {
        let known = [
            "budget_ms",
            "max_calls",
            "max_log_chars",
            "max_result_chars",
            "max_images",
            "max_memory_mib",
            "max_nested_wait_ms",
            "files",
        ];
        if !known.contains(&key.as_str()) {
            return Err(format!("unknown option `{key}`"));
        }
    }
    Ok(limits)
}

/// Runs the case whose data is `spec_path` (a case with a script and no data yet has none
/// to compare, which `bless` writes); `Err` describes every difference. With `bless`,
/// rewrites `expect`.
pub async fn run_case(spec_path: &Path, bless: bool) -> Result<(), String> {
    let spec_text = match std::fs::read_to_string(spec_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "{}".into(),
        Err(e) => return Err(format!("cannot read {}: {e}", spec_path.display())),
    };
    let mut spec: Map<String, Value> =
        serde_json::from_str(&spec_text).map_err(|e| format!("{} is not valid JSON: {e}", spec_path.display()))?;
    let code = script_of(spec_path, &spec)?;
    let options = spec.get("options").and_then(Value::as_object).cloned().unwrap_or_default();
    let limits = limits_from(&options)?;

    let harness = Harness::with_limits(limits).await;
    if let Some(files) = options.get("files").and_then(Value::as_object) {
        for (path, content) in files {
            let target = harness.dir.path().join(path);
            std::fs::create_dir_all(target.parent().expect("a file has a parent")).map_err(|e| e.to_string())?;
            std::fs::write(&target, content.as_str().unwrap_or_default()).map_err(|e| e.to_string())?;
        }
    }
    let outcome = harness.run(&code).await;
    let actual = observed(&outcome);

    if bless {
        spec.insert("expect".into(), Value::Object(actual));
        let text = serde_json::to_string_pretty(&Value::Object(spec)).expect("JSON");
        std::fs::write(spec_path, text + "\n").map_err(|e| e.to_string())?;
        return Ok(());
    }

    let ignore: Vec<&str> =
        spec.get("ignore").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let expect = spec
        .get("expect")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{} has no `expect`; run with BLESS=1", spec_path.display()))?;
    let mut differences = Vec::new();
    for (key, wanted) in expect {
        if ignore.contains(&key.as_str()) {
            continue;
        }
        match actual.get(key) {
            Some(got) if got == wanted => {}
            Some(got) => differences.push(format!("  {key}: expected {wanted}\n  {key}:      got {got}")),
            None => differences.push(format!("  {key}: not an outcome field")),
        }
    }
    if let Some(files) = spec.get("workspace").and_then(Value::as_object) {
        for (path, wanted) in files {
            let got = std::fs::read_to_string(harness.dir.path().join(path)).ok();
            if got.as_deref() != wanted.as_str() {
                differences.push(format!("  workspace file {path}: expected {wanted}, got {got:?}"));
            }
        }
    }
    if differences.is_empty() { Ok(()) } else { Err(differences.join("\n")) }
}

/// The format is documented by a case that is itself a test: it must pin every outcome field.
pub fn format_example_pins_every_field() -> Result<(), String> {
    let path = cases_dir().join("format_example.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let spec: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let expect = spec["expect"].as_object().ok_or("format_example.json has no expect")?;
    match ["ok", "value", "text", "logs", "calls", "summary", "images", "error"]
        .iter()
        .find(|field| !expect.contains_key(**field))
    {
        Some(field) => Err(format!("format_example.json does not pin `{field}`")),
        None => Ok(()),
    }
}
