//! test262, the official ECMAScript conformance suite, run through the real guest and host:
//! every test of `built-ins`, `language`, `annexB` and `intl402` of the pinned suite
//! (`conformance/test262/`), strict and sloppy as its flags allow, each an Exec of one
//! session (one engine, many Execs), compared with `conformance/test262/expectations.txt`,
//! which lists every test that fails and why. A change in either direction (a listed test
//! that passes, an unlisted one that fails) fails the area's trial until the file says so.
//!
//! `cargo test --release -p exec-host-tests --test test262 [AREA]` runs the areas whose name
//! contains AREA (`built-ins/Array`); `BLESS=1` writes the file from what came out, keeping
//! the reason of each test still failing and guessing one for a new failure (review them).
//! `EXEC_HOST_TEST262` names another archive or an unpacked suite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use exec_host::{CancellationToken, Failure, Limits, Session, ToolCall, ToolResult, json};
use libtest_mimic::{Arguments, Failed, Trial};

/// The folders of the suite that are run.
const AREAS: [&str; 4] = ["built-ins", "language", "annexB", "intl402"];

/// Execs of one area in flight at once.
const IN_FLIGHT: usize = 4;

/// The script's own time one test has (a test that loops is ended, and fails).
const BUDGET: Duration = Duration::from_secs(10);

fn main() {
    let arguments = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the tests crate is in the workspace").to_path_buf();
    let suite = suite(&root);
    let expectations_file = root.join("conformance/test262/expectations.txt");
    let expected = Arc::new(read_expectations(&expectations_file));
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a Tokio runtime starts"),
    );
    let workspace = tempfile::tempdir().expect("a temporary workspace");
    let session = Arc::new(runtime.block_on(session(workspace.path())));
    let blessing = std::env::var_os("BLESS").is_some_and(|value| value == "1");
    let blessed: Arc<Mutex<BTreeMap<(String, Mode), String>>> = Arc::default();
    let harness = Arc::new(Harness::read(&suite.join("harness")));
    let trials: Vec<Trial> = areas(&suite)
        .into_iter()
        .map(|(area, files)| {
            let (runtime, session, expected, blessed, harness, suite) =
                (runtime.clone(), session.clone(), expected.clone(), blessed.clone(), harness.clone(), suite.clone());
            Trial::test(area.clone(), move || {
                let outcomes = runtime.block_on(run_area(&session, &harness, &suite, &files));
                compare(&area, &outcomes, &expected, blessing.then_some(&blessed))
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&arguments, trials);
    if blessing {
        write_expectations(&expectations_file, &expected, &blessed.lock().unwrap(), arguments.filter.as_deref());
    }
    // `exit` runs no destructors: the temporary workspace goes first.
    drop(workspace);
    conclusion.exit();
}

/// The unpacked suite: `EXEC_HOST_TEST262` (an archive or a folder), else the pinned archive
/// unpacked once into the target folder.
fn suite(root: &Path) -> PathBuf {
    let given = std::env::var_os("EXEC_HOST_TEST262").map(PathBuf::from);
    let archive = given.clone().unwrap_or_else(|| root.join("conformance/test262/test262-5ef1e57.tar.zst"));
    if archive.is_dir() {
        return archive;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let name = archive.file_name().and_then(|n| n.to_str()).unwrap_or("test262").trim_end_matches(".tar.zst").to_string();
    let place = target.join(&name);
    let unpacked = place.join("test262");
    if place.join(".unpacked").exists() {
        return unpacked;
    }
    let file = std::fs::File::open(&archive).unwrap_or_else(|e| panic!("the test262 archive {}: {e}", archive.display()));
    let decoder = ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(file)).expect("a zstd archive");
    let _ = std::fs::remove_dir_all(&place);
    tar::Archive::new(decoder).unpack(&place).unwrap_or_else(|e| panic!("unpacking {}: {e}", archive.display()));
    std::fs::write(place.join(".unpacked"), "").unwrap();
    unpacked
}

/// A session over an empty workspace (its tools give `Exec` a pool; the tests call none).
async fn session(workspace: &Path) -> Session {
    let mut limits = Limits::default();
    limits.budget = BUDGET;
    Session::builder().workspace(workspace).limits(limits).build().await.expect("the session starts")
}

/// Each area (`built-ins/Array`, `language/expressions`) with its test files, by path
/// relative to `test/`.
fn areas(suite: &Path) -> BTreeMap<String, Vec<String>> {
    let mut areas: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for top in AREAS {
        let base = suite.join("test").join(top);
        for entry in walkdir::WalkDir::new(&base).sort_by_file_name() {
            let entry = entry.expect("the suite reads");
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if !entry.file_type().is_file() || !name.ends_with(".js") || name.contains("_FIXTURE") {
                continue;
            }
            let relative = path.strip_prefix(suite.join("test")).unwrap().to_string_lossy().replace('\\', "/");
            areas.entry(area_of(&relative)).or_default().push(relative);
        }
    }
    areas
}

/// The area of a file: its first two folders (`built-ins/Array`), or the first alone for a
/// file directly in it (`intl402`).
fn area_of(file: &str) -> String {
    let mut parts = file.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(top), Some(second), Some(_)) => format!("{top}/{second}"),
        (Some(top), _, _) => top.to_string(),
        _ => String::new(),
    }
}

/// Strict or sloppy: how one file was run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Mode {
    Strict,
    Sloppy,
}

impl Mode {
    fn word(self) -> &'static str {
        match self {
            Mode::Strict => "strict",
            Mode::Sloppy => "sloppy",
        }
    }
}

/// What one file's frontmatter says about running it.
#[derive(Default, serde::Deserialize)]
struct Meta {
    #[serde(default)]
    includes: Vec<String>,
    #[serde(default)]
    flags: Vec<String>,
    negative: Option<Negative>,
    #[serde(default)]
    features: Vec<String>,
}

#[derive(serde::Deserialize)]
struct Negative {
    phase: String,
    #[serde(rename = "type")]
    kind: String,
}

impl Meta {
    fn read(source: &str) -> Meta {
        let Some(start) = source.find("/*---") else { return Meta::default() };
        let Some(end) = source[start..].find("---*/") else { return Meta::default() };
        yaml_serde::from_str(&source[start + 5..start + end]).unwrap_or_default()
    }

    fn flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    fn modes(&self) -> Vec<Mode> {
        if self.flag("raw") || self.flag("noStrict") {
            vec![Mode::Sloppy]
        } else if self.flag("onlyStrict") {
            vec![Mode::Strict]
        } else {
            vec![Mode::Strict, Mode::Sloppy]
        }
    }
}

/// The harness files, by name.
struct Harness(BTreeMap<String, String>);

/// Harness code that compiles a string where the tests including it test something else,
/// each `(file, text, replacement)`: the replacement is what the string compiles to. (The
/// sandbox compiles no strings by design; the tests that do so themselves are listed as
/// such in the expectations.)
const HARNESS_ADAPTATIONS: [(&str, &str, &str); 2] = [
    ("fnGlobalObject.js", "Function(\"return this;\")()", "globalThis"),
    (
        "resizableArrayBufferUtils.js",
        "new Function('return class My' + type + ' extends ' + type + ' {}')()",
        "({ Uint8Array: class MyUint8Array extends Uint8Array {}, Float32Array: class MyFloat32Array extends Float32Array {}, \
         BigInt64Array: class MyBigInt64Array extends BigInt64Array {} })[type]",
    ),
];

impl Harness {
    fn read(folder: &Path) -> Harness {
        let mut files = BTreeMap::new();
        for entry in walkdir::WalkDir::new(folder) {
            let entry = entry.expect("the harness reads");
            if entry.file_type().is_file() && entry.path().extension().is_some_and(|e| e == "js") {
                let name = entry.path().strip_prefix(folder).unwrap().to_string_lossy().into_owned();
                files.insert(name, std::fs::read_to_string(entry.path()).expect("a harness file reads"));
            }
        }
        for (file, text, replacement) in HARNESS_ADAPTATIONS {
            let source = files.get_mut(file).unwrap_or_else(|| panic!("the harness has no {file}"));
            assert!(source.contains(text), "the harness's {file} changed: the adaptation of `{text}` no longer applies");
            *source = source.replace(text, replacement);
        }
        Harness(files)
    }

    fn file(&self, name: &str) -> &str {
        self.0.get(name).map(String::as_str).unwrap_or_default()
    }
}

/// What the host provides of test262's `$262` and `print`: the global object, detaching a
/// buffer (by transferring it; a detached one stays so) and nothing that would need another realm or agent.
const HOST_DEFINED: &str = "var $262 = { global: globalThis, detachArrayBuffer(buffer) { if (!buffer.detached) buffer.transfer(); } };\n\
                            function print(...values) { console.log(...values); }\n";

/// An async test settles through `$DONE`: the Exec waits for it, and fails with its error.
/// `$DONE` is a property of the global object, as the harness's `asyncTest` checks.
const ASYNC_PROLOGUE: &str = "let $262_settle; const $262_done = new Promise(resolve => { $262_settle = resolve; });\n\
                              globalThis.$DONE = function $DONE(error) { $262_settle(error ? { error } : null); };\n";
const ASYNC_EPILOGUE: &str = "\n;{ const settled = await $262_done; if (settled) throw settled.error; }\n";

/// The script of one file in one mode, as an Exec runs it (the body of an async function).
fn script(harness: &Harness, meta: &Meta, source: &str, mode: Mode) -> String {
    if meta.flag("raw") {
        return source.to_string();
    }
    let mut script = String::new();
    if mode == Mode::Strict {
        script.push_str("\"use strict\";\n");
    }
    script.push_str(HOST_DEFINED);
    script.push_str(harness.file("assert.js"));
    script.push('\n');
    script.push_str(harness.file("sta.js"));
    script.push('\n');
    let asynchronous = meta.flag("async");
    if asynchronous {
        script.push_str(ASYNC_PROLOGUE);
    }
    for include in &meta.includes {
        script.push_str(harness.file(include));
        script.push('\n');
    }
    script.push_str(source);
    if asynchronous {
        script.push_str(ASYNC_EPILOGUE);
    }
    script
}

/// One failure: what happened, and the reason `BLESS=1` gives it when none is written yet.
struct Failing {
    why: String,
    guessed: String,
}

/// Features of the suite that quickjs-ng, the engine, does not have (proposals, mostly).
const ENGINE_LACKS: [&str; 8] = [
    "Array.fromAsync",
    "ShadowRealm",
    "await-dictionary",
    "decorators",
    "explicit-resource-management",
    "legacy-regexp",
    "tail-call-optimization",
    "Atomics.waitAsync",
];

/// Features that load a module, which a script cannot (by design).
const MODULE_FEATURES: [&str; 3] = ["dynamic-import", "import-defer", "source-phase-imports"];

/// The reason a failure most likely has, from the test's frontmatter and text and what the
/// run said; `unreviewed` when nothing tells.
fn guess_reason(file: &str, meta: &Meta, source: &str, why: &str) -> String {
    let feature = |name: &str| meta.features.iter().any(|f| f == name || f.starts_with(&format!("{name}.")));
    if meta.flag("module") || MODULE_FEATURES.iter().any(|f| feature(f)) {
        "design: modules".into()
    } else if ["$262.createRealm", "$262.evalScript", "$262.agent", "$262.IsHTMLDDA", "$262.gc"]
        .iter()
        .any(|s| source.contains(s))
    {
        "design: another realm, an agent or a host hook".into()
    } else if meta.flag("CanBlockIsTrue") {
        "design: a script cannot suspend (Atomics.wait)".into()
    } else if feature("Temporal") {
        "missing: Temporal".into()
    } else if file.starts_with("intl402/") {
        intl_gap(file, why)
    } else if why.contains("EvalError") {
        "design: code from strings (eval, Function)".into()
    } else if let Some(lacking) = ENGINE_LACKS.iter().find(|f| feature(f)) {
        format!("engine: no {lacking}")
    } else {
        format!("unreviewed: {why}")
    }
}

/// Where the sandbox's `Intl` leaves out part of ECMA-402 on purpose or for want of data,
/// by a fragment of the test's path or of what the run said; the rest is `ours:`, a
/// difference of our `Intl` from the standard, with what the run said.
const INTL_GAPS: [(&str, &str); 11] = [
    ("formatRange", "missing: formatRange's interval patterns (the fields two dates share are not merged)"),
    ("expected [sr]", "data: Serbian, which the test asks for by name, is not a shipped language"),
    ("expected one of sr", "data: Serbian, which the test asks for by name, is not a shipped language"),
    ("/getWeekInfo/", "missing: Intl.Locale's week information"),
    ("firstDayOfWeek", "missing: Intl.Locale's week information"),
    ("/getTimeZones/", "missing: Intl.Locale's time zones"),
    ("legacy-constructed-symbol", "missing: the legacy constructors' fallback symbol"),
    ("FallbackSymbol", "missing: the legacy constructors' fallback symbol"),
    ("/toLocale", "missing: language-sensitive case mapping (Turkish, Azeri, Lithuanian)"),
    ("currencyDisplay \"name\"", "missing: NumberFormat's currency names (left out of the data)"),
    ("dayPeriod", "data: ICU4X has no flexible day periods (\"in the morning\") for English"),
];

/// Calendars whose data the artefact leaves out (Gregorian, Buddhist and Japanese ship).
const CALENDARS_LEFT_OUT: [&str; 9] = ["chinese", "dangi", "hebrew", "islamic", "persian", "indian", "coptic", "ethiop", "roc"];

fn intl_gap(file: &str, why: &str) -> String {
    if let Some((_, reason)) = INTL_GAPS.iter().find(|(fragment, _)| file.contains(fragment) || why.contains(fragment)) {
        return (*reason).into();
    }
    if CALENDARS_LEFT_OUT.iter().any(|calendar| file.contains(calendar) || why.contains(calendar)) {
        return "data: calendars other than Gregorian, Buddhist and Japanese".into();
    }
    let why = why.strip_prefix("The script failed with an uncaught error: ").unwrap_or(why);
    format!("ours: {why}")
}

/// Runs every file of an area in each of its modes; the failures.
async fn run_area(session: &Session, harness: &Harness, suite: &Path, files: &[String]) -> BTreeMap<(String, Mode), Failing> {
    use futures::StreamExt as _;
    let mut runs = Vec::new();
    for file in files {
        let source = std::fs::read_to_string(suite.join("test").join(file)).expect("a test file reads");
        let meta = Meta::read(&source);
        let guess = |why: &str| guess_reason(file, &meta, &source, why);
        if meta.flag("module") {
            // Modules never load in a sandbox that has no imports: failed by design, unrun.
            let why = "a module".to_string();
            runs.push((file.clone(), Mode::Sloppy, Err(Failing { guessed: guess(&why), why })));
            continue;
        }
        // One file's modes share its frontmatter and text.
        let (meta, source) = (Arc::new(meta), Arc::new(source));
        for mode in meta.modes() {
            runs.push((file.clone(), mode, Ok((script(harness, &meta, &source, mode), meta.clone(), source.clone()))));
        }
    }
    let failures = futures::stream::iter(runs)
        .map(|(file, mode, run)| async move {
            let (script, meta, source) = match run {
                Ok(run) => run,
                Err(failing) => return Some(((file, mode), failing)),
            };
            let call = ToolCall::new(format!("t262-{file}-{}", mode.word()), "Exec", json!({ "code": script }));
            let result = session.call(call, CancellationToken::new()).await;
            let why = verdict(&result, meta.negative.as_ref().map(expected_error).as_deref()).err()?;
            let guessed = guess_reason(&file, &meta, &source, &why);
            Some(((file, mode), Failing { why, guessed }))
        })
        .buffer_unordered(IN_FLIGHT)
        .filter_map(|failure| async move { failure })
        .collect::<Vec<_>>()
        .await;
    failures.into_iter().collect()
}

/// `phase:type`, as [`verdict`] matches it.
fn expected_error(negative: &Negative) -> String {
    format!("{}:{}", negative.phase, negative.kind)
}

/// Whether a run did what the test expects: ended normally, or (a negative test) failed in
/// the expected phase with the expected error.
fn verdict(result: &ToolResult, negative: Option<&str>) -> Result<(), String> {
    let failure = result.exec_failure();
    match (negative, failure) {
        (None, None) => Ok(()),
        (None, Some(failure)) => Err(one_line(&failure.message())),
        (Some(expected), None) => Err(format!("expected a {expected} error, and it ran to its end")),
        (Some(expected), Some(failure)) => {
            let (phase, kind) = expected.split_once(':').unwrap_or((expected, ""));
            let matched = match (phase, failure) {
                ("parse", Failure::Syntax(error)) => error.message.starts_with(kind),
                // A thrown object that is not an Error is reported as `Uncaught Class {...}`.
                ("runtime" | "resolution", Failure::Thrown(error)) => {
                    error.error.strip_prefix("Uncaught ").unwrap_or(&error.error).starts_with(kind)
                }
                _ => false,
            };
            if matched { Ok(()) } else { Err(format!("expected a {expected} error: {}", one_line(&failure.message()))) }
        }
    }
}

fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(200).collect()
}

/// The failures expected: `(file, mode)` to its reason.
type Expected = BTreeMap<(String, Mode), String>;

/// Lines of `FILE<TAB>MODE<TAB>REASON`; `#` starts a comment.
fn read_expectations(file: &Path) -> Expected {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut expected = Expected::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let mode = match fields.get(1) {
            Some(&"strict") => Mode::Strict,
            Some(&"sloppy") => Mode::Sloppy,
            _ => panic!("{}:{}: `FILE<TAB>strict|sloppy<TAB>REASON`", file.display(), number + 1),
        };
        expected.insert((fields[0].to_string(), mode), fields.get(2).unwrap_or(&"").to_string());
    }
    expected
}

/// The area's failures against the expected ones; when blessing, records them instead.
fn compare(
    area: &str,
    failures: &BTreeMap<(String, Mode), Failing>,
    expected: &Expected,
    blessed: Option<&Arc<Mutex<Expected>>>,
) -> Result<(), Failed> {
    let in_area = |file: &str| area_of(file) == area;
    if let Some(blessed) = blessed {
        let mut blessed = blessed.lock().unwrap();
        for (key, failing) in failures {
            let reason = expected.get(key).cloned().unwrap_or_else(|| failing.guessed.clone());
            blessed.insert(key.clone(), reason);
        }
        return Ok(());
    }
    let mut differences = Vec::new();
    for ((file, mode), failing) in failures {
        if !expected.contains_key(&(file.clone(), *mode)) {
            differences.push(format!("fails, and is not listed: {file} ({}): {}", mode.word(), failing.why));
        }
    }
    for (file, mode) in expected.keys().filter(|(file, _)| in_area(file)) {
        if !failures.contains_key(&(file.clone(), *mode)) {
            differences.push(format!("passes, and is listed as failing: {file} ({})", mode.word()));
        }
    }
    if differences.is_empty() { Ok(()) } else { Err(differences.join("\n").into()) }
}

/// Writes the expectations: the blessed failures of the areas run, the old lines of the
/// others.
fn write_expectations(file: &Path, old: &Expected, blessed: &Expected, filter: Option<&str>) {
    let ran = |path: &str| filter.is_none_or(|filter| area_of(path).contains(filter));
    let mut all: Expected = old.iter().filter(|((path, _), _)| !ran(path)).map(|(k, v)| (k.clone(), v.clone())).collect();
    all.extend(blessed.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut text = String::from(
        "# The test262 tests that fail in the sandbox, and why: FILE<TAB>strict|sloppy<TAB>REASON.\n\
         # Written by `BLESS=1 cargo test --release -p exec-host-tests --test test262`; review each reason.\n",
    );
    for ((path, mode), reason) in &all {
        text.push_str(&format!("{path}\t{}\t{reason}\n", mode.word()));
    }
    std::fs::write(file, text).expect("the expectations are written");
}
