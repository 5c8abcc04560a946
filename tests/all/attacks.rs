//! The attack suite: every case in `tests/attacks/*.json` runs as an Exec through the real
//! guest and host. A case's script returns `true` only if its attack worked; the runner also
//! fails a case whose Exec panics, stops the engine, or does not finish in time. The suite
//! grows with every fix: a new way in is a new case.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use exec_host::ToolResult;
use exec_host_tests::Harness;
use serde_json::Value;

/// Longest a case may take; past it the case hung the host.
const CASE_DEADLINE: Duration = Duration::from_secs(30);

/// Text that only a broken host puts in a result.
const BROKEN: [&str; 4] = ["panicked", "RUST_BACKTRACE", "the engine stopped", "unreachable"];

/// The secret a path attack tries to read; it stands in `outside/secret.txt`.
const SECRET: &str = "TOP-SECRET-7f3a";

/// Put before every path case: `tries(promise)` is true when the promise's value or its
/// error shows the secret.
const PATH_PRELUDE: &str = "const tries = async (p) => { let v; try { v = await p; } catch (e) { v = String(e && e.message); } return JSON.stringify(v === undefined ? null : v).includes('TOP-SECRET'); };\n";

fn cases(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("attacks").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let suite: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    suite["attacks"].as_array().expect("an `attacks` array").clone()
}

fn text<'a>(case: &'a Value, key: &str) -> &'a str {
    case[key].as_str().unwrap_or_else(|| panic!("a case without `{key}`: {case}"))
}

/// Runs one case's script within the deadline; `Err` says how the host failed it.
async fn attempt(harness: &Harness, name: &str, code: &str) -> Result<(), String> {
    let outcome: ToolResult = tokio::time::timeout(CASE_DEADLINE, harness.run(code))
        .await
        .map_err(|_| format!("{name}: did not finish within {CASE_DEADLINE:?}"))?;
    let text = outcome.text();
    if outcome.value() == Some(&Value::Bool(true)) {
        return Err(format!("{name}: the attack worked"));
    }
    if let Some(sign) = BROKEN.iter().find(|sign| text.contains(*sign)) {
        return Err(format!("{name}: the result says `{sign}`:\n{}", text.chars().take(600).collect::<String>()));
    }
    Ok(())
}

fn report(failures: &[String], total: usize) {
    assert!(failures.is_empty(), "{} of {total} attacks failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_realm_attack_escapes_panics_or_hangs() {
    let cases = cases("realm.json");
    assert!(cases.len() >= 200, "the realm suite has {} cases", cases.len());
    let harness = Harness::new().await;
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(failure) = attempt(&harness, text(case, "name"), text(case, "code")).await {
            failures.push(failure);
        }
    }
    report(&failures, cases.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_path_attack_leaves_the_workspace_writes_a_control_file_or_blocks() {
    let cases = cases("path.json");
    assert!(cases.len() >= 60, "the path suite has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let name = text(case, "name");
        if let Err(failure) = path_case(case).await {
            failures.push(format!("{name}: {failure}"));
        }
    }
    report(&failures, cases.len());
}

/// One path case in a fresh `ws/` beside `outside/`.
async fn path_case(case: &Value) -> Result<(), String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (ws, outside) = (root.path().join("ws"), root.path().join("outside"));
    std::fs::create_dir_all(outside.join("sub")).map_err(|e| e.to_string())?;
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).map_err(|e| e.to_string())?;
    std::fs::create_dir(&ws).map_err(|e| e.to_string())?;
    let place = |s: &str| s.replace("$OUTSIDE", &outside.to_string_lossy());
    let mut sockets = Vec::new();
    for entry in case["setup"].as_array().into_iter().flatten() {
        make(&ws, entry, &place, &mut sockets)?;
    }
    let before = [snapshot(&outside), snapshot(&ws.join(".git")), snapshot(&ws.join(".exec-host"))];

    let session = Harness::builder(&ws, &Default::default()).await.build().await.map_err(|e| e.to_string())?;
    let harness = Harness { dir: tempfile::tempdir().map_err(|e| e.to_string())?, session, counter: Default::default() };
    let stop = Arc::new(AtomicBool::new(false));
    let racer = case.get("race").map(|race| {
        let at = ws.join(text(race, "path"));
        let states: Vec<String> =
            race["between"].as_array().expect("two states").iter().map(|s| place(s.as_str().unwrap())).collect();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for state in &states {
                    flip(&at, state);
                }
            }
        })
    });
    let code = format!("{PATH_PRELUDE}{}", place(text(case, "code")));
    let result = attempt(&harness, "the script", &code).await;
    stop.store(true, Ordering::Relaxed);
    if let Some(racer) = racer {
        racer.join().map_err(|_| "the race thread panicked".to_string())?;
    }
    result?;
    let after = [snapshot(&outside), snapshot(&ws.join(".git")), snapshot(&ws.join(".exec-host"))];
    for ((what, before), after) in ["outside/", "ws/.git", "ws/.exec-host"].iter().zip(&before).zip(&after) {
        if before != after {
            return Err(format!("{what} changed: before {before:?}, after {after:?}"));
        }
    }
    Ok(())
}

/// Makes one `setup` entry inside `ws`.
fn make(
    ws: &Path,
    entry: &Value,
    place: &dyn Fn(&str) -> String,
    sockets: &mut Vec<std::os::unix::net::UnixListener>,
) -> Result<(), String> {
    let part = |i: usize| entry[i].as_str().map(place).unwrap_or_default();
    let at = ws.join(part(1));
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    let made = match entry[0].as_str().unwrap_or_default() {
        "file" => std::fs::write(&at, part(2)),
        "dir" => std::fs::create_dir_all(&at),
        "link" => std::os::unix::fs::symlink(part(2), &at),
        "hardlink" => std::fs::hard_link(part(2), &at),
        "fifo" => node(&at, libc::S_IFIFO | 0o644, 0),
        "chardev" => {
            let (major, minor) = (entry[2].as_u64().unwrap_or(1) as u32, entry[3].as_u64().unwrap_or(3) as u32);
            node(&at, libc::S_IFCHR | 0o666, libc::makedev(major, minor))
        }
        "sparse" => std::fs::File::create(&at).and_then(|file| file.set_len(entry[2].as_u64().unwrap_or(1 << 30))),
        "socket" => std::os::unix::net::UnixListener::bind(&at).map(|socket| sockets.push(socket)),
        other => return Err(format!("unknown setup entry `{other}`")),
    };
    made.map_err(|e| format!("setting up {entry}: {e}"))
}

/// A FIFO or device node (device nodes need root, which the suite's machines have).
fn node(at: &Path, mode: libc::mode_t, device: libc::dev_t) -> std::io::Result<()> {
    let path = CString::new(at.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    if unsafe { libc::mknod(path.as_ptr(), mode, device) } == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Puts `at` in `state` ("dir", "fifo" or "link:TARGET"); links replace links atomically.
fn flip(at: &Path, state: &str) {
    let spare = at.with_extension("flip");
    let _ = std::fs::remove_file(&spare);
    match state.strip_prefix("link:") {
        Some(target) => {
            if std::os::unix::fs::symlink(target, &spare).is_ok() && std::fs::rename(&spare, at).is_err() {
                let _ = std::fs::remove_dir_all(at);
                let _ = std::fs::rename(&spare, at);
            }
        }
        None => {
            let _ = std::fs::remove_file(at);
            let _ = if state == "dir" { std::fs::create_dir(at) } else { node(at, libc::S_IFIFO | 0o644, 0) };
        }
    }
}

/// Every entry under `dir` (not following links) with its kind and, for small files, text.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut seen = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&next) else { continue };
        let what = if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&next) {
                pending.extend(entries.flatten().map(|e| e.path()));
            }
            "dir".to_string()
        } else if meta.is_symlink() {
            format!("link to {:?}", std::fs::read_link(&next).unwrap_or_default())
        } else if meta.is_file() && meta.len() < 1 << 20 {
            format!("file {:?}", String::from_utf8_lossy(&std::fs::read(&next).unwrap_or_default()))
        } else {
            format!("{:?} of {} bytes", meta.file_type(), meta.len())
        };
        seen.insert(next.strip_prefix(dir).unwrap_or(&next).to_path_buf(), what);
    }
    seen
}
