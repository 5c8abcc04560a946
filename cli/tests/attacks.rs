//! The command-line attack suites, run against the real binary: `tests/attacks/cli.json`
//! (hostile command-line inputs: special and huge files as the script, the settings or the
//! MCP configuration, absurd numbers), `tests/attacks/exhaustion.json` (scripts and
//! servers that try to exhaust memory, time, stack, output or descriptors) and
//! `tests/attacks/command.json` (shell commands through the `Bash` tool that try to escape
//! its confinement or exhaust the host).
//!
//! Each case runs `exec-host` in a fresh workspace. It fails when the process panics, does
//! not exit within [`CASE_DEADLINE`], exits with another status than the case expects,
//! leaves out the text the case expects, or when its peak resident memory passes the
//! sandbox's memory limit plus [`HOST_ALLOWANCE_MIB`].

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use exec_host_tests::attack::{BROKEN, cases, field, make, text};
use serde_json::Value;

mod common;
use common::{exec_host, fixture_mcp_server, shared_cache, test_crate_binary};

/// Longest a case may take; past it the host hung.
const CASE_DEADLINE: Duration = Duration::from_secs(30);

/// The sandbox's memory limit when a case does not set `--max-memory-mib` (the CLI's default).
const DEFAULT_SANDBOX_MIB: u64 = 256;

/// Resident memory the host may use besides its sandbox's memory limit: the engine, the
/// compiled guest, buffers for results and logs.
const HOST_ALLOWANCE_MIB: u64 = 160;

/// What one run of the binary gave.
struct Ran {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    peak_rss_mib: u64,
    took: Duration,
    /// Whether what `Stdin::open_until` waits for came before the input was closed.
    answered_before_eof: bool,
}

/// A case's standard input: written whole, then closed, or, with `open_until`, kept open
/// until that text shows on stdout (or the deadline).
struct Stdin<'a> {
    text: String,
    open_until: Option<&'a str>,
}

/// Longest a case's input is kept open waiting for an answer.
const OPEN_INPUT_DEADLINE: Duration = Duration::from_secs(10);

/// The processes (pid and command line) whose command line mentions `text`, after a
/// moment for the dying to go.
fn survivors_mentioning(text: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for _ in 0..20 {
        found = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| *pid != std::process::id())
            .filter_map(|pid| {
                let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let line = String::from_utf8_lossy(&line).replace('\0', " ");
                let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let zombie = state.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
                (line.contains(text) && !zombie).then_some((pid, line))
            })
            .collect();
        if found.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    found
}

#[test]
fn no_command_line_attack_panics_hangs_or_passes_its_memory_bound() {
    run_suite("cli.json", 20);
}

#[test]
fn no_command_attack_through_the_bash_tool_escapes_hangs_or_passes_its_memory_bound() {
    run_suite("command.json", 18);
}

#[test]
fn no_exhaustion_attack_panics_hangs_or_passes_its_memory_bound() {
    run_suite("exhaustion.json", 40);
}

fn run_suite(file: &str, at_least: usize) {
    let cases = cases(file);
    assert!(cases.len() >= at_least, "{file} has {} cases", cases.len());
    let failures: Vec<String> =
        cases.iter().filter_map(|case| run_case(case).err().map(|e| format!("{}: {e}", field(case, "name")))).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

fn run_case(case: &Value) -> Result<(), String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (ws, outside) = (root.path().join("ws"), root.path().join("outside"));
    std::fs::create_dir_all(&ws).and_then(|()| std::fs::create_dir_all(&outside)).map_err(|e| e.to_string())?;
    let ws = ws.as_path();
    let fixture = fixture_mcp_server();
    let place = |text: &str| {
        text.replace("$WS", &ws.to_string_lossy())
            .replace("$OUTSIDE", &outside.to_string_lossy())
            .replace("$FIXTURE", &fixture.to_string_lossy())
    };
    let mut sockets = Vec::new();
    for entry in case["setup"].as_array().into_iter().flatten() {
        make(ws, entry, &place, &mut sockets)?;
    }
    if !case["script"].is_null() {
        std::fs::write(ws.join("script.js"), text(&case["script"], &place)?).map_err(|e| e.to_string())?;
    }
    let args: Vec<String> =
        case["args"].as_array().ok_or("a case without `args`")?.iter().map(|arg| text(arg, &place)).collect::<Result<_, _>>()?;
    let mut command = exec_host(ws, &shared_cache());
    command.args(&args);
    for (key, value) in case["env"].as_object().into_iter().flatten() {
        command.env(key, place(value.as_str().unwrap_or_default()));
    }
    let stdin = match &case["stdin"] {
        Value::Null => None,
        given => Some(Stdin { text: text(given, &place)?, open_until: case["expect"]["stdout_before_eof"].as_str() }),
    };
    let ran = run(&command, stdin)?;

    let output = format!("exit {:?}\nstdout: {}\nstderr: {}", ran.status, cut(&ran.stdout), cut(&ran.stderr));
    if let Some(sign) = BROKEN.iter().find(|sign| ran.stdout.contains(*sign) || ran.stderr.contains(*sign)) {
        return Err(format!("it says `{sign}`\n{output}"));
    }
    let expect = &case["expect"];
    if let Some(status) = expect["exit"].as_i64()
        && ran.status != Some(status as i32)
    {
        return Err(format!("expected exit {status}\n{output}"));
    }
    for stream in ["stdout", "stderr"] {
        let text = if stream == "stdout" { &ran.stdout } else { &ran.stderr };
        if let Some(needle) = expect[stream].as_str()
            && !text.contains(needle)
        {
            return Err(format!("expected {stream} to contain {needle:?}\n{output}"));
        }
    }
    if let Some(needle) = expect["stdout_before_eof"].as_str()
        && !ran.answered_before_eof
    {
        return Err(format!("expected stdout to contain {needle:?} while its input was still open\n{output}"));
    }
    if let Some(seconds) = expect["within_seconds"].as_f64()
        && ran.took.as_secs_f64() > seconds
    {
        return Err(format!("took {:?}, more than the {seconds} s it may\n{output}", ran.took));
    }
    for path in expect["absent"].as_array().into_iter().flatten() {
        let path = place(path.as_str().unwrap_or_default());
        let path = if path.starts_with('/') { std::path::PathBuf::from(path) } else { ws.join(path) };
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(format!("{} exists after the run\n{output}", path.display()));
        }
    }
    for folder in expect["empty"].as_array().into_iter().flatten() {
        let folder = place(folder.as_str().unwrap_or_default());
        let entries: Vec<_> =
            std::fs::read_dir(&folder).map_err(|e| format!("{folder}: {e}"))?.flatten().map(|e| e.file_name()).collect();
        if !entries.is_empty() {
            return Err(format!("{folder} holds {entries:?} after the run\n{output}"));
        }
    }
    if expect["no_survivors"].as_bool() == Some(true) {
        let survivors = survivors_mentioning(&ws.to_string_lossy());
        if !survivors.is_empty() {
            return Err(format!("processes outlived the run: {survivors:?}\n{output}"));
        }
    }
    let sandbox_mib = args
        .iter()
        .position(|a| a == "--max-memory-mib")
        .and_then(|i| args.get(i + 1))
        .and_then(|m| m.parse().ok())
        .unwrap_or(DEFAULT_SANDBOX_MIB);
    let bound = sandbox_mib + HOST_ALLOWANCE_MIB;
    if ran.peak_rss_mib > bound {
        return Err(format!("peak resident memory {} MiB, past its bound of {bound} MiB\n{output}", ran.peak_rss_mib));
    }
    if std::env::var_os("ATTACKS_VERBOSE").is_some() {
        let head = |text: &str| text.chars().take(240).collect::<String>().replace('\n', " | ");
        eprintln!("{}: {} MiB peak, {:?}, exit {:?}", field(case, "name"), ran.peak_rss_mib, ran.took, ran.status);
        eprintln!("    stdout: {}\n    stderr: {}", head(&ran.stdout), head(&ran.stderr));
    }
    Ok(())
}

/// Runs `command` through `peak-rss` to its end (its process group killed past the
/// deadline), reading its output as it comes.
fn run(command: &std::process::Command, stdin: Option<Stdin<'_>>) -> Result<Ran, String> {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let report = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut measured = std::process::Command::new(test_crate_binary("peak-rss"));
    measured.arg(report.path()).arg(command.get_program()).args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        measured.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => measured.env(key, value),
            None => measured.env_remove(key),
        };
    }
    let mut child = measured
        .process_group(0)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let (text, open_until) = (input.text, input.open_until.map(str::to_string));
        let (seen, answered) = (seen.clone(), answered.clone());
        std::thread::spawn(move || {
            let _ = pipe.write_all(text.as_bytes());
            let Some(wanted) = open_until else { return };
            let opened = Instant::now();
            while opened.elapsed() < OPEN_INPUT_DEADLINE {
                if String::from_utf8_lossy(&seen.lock().unwrap()).contains(&wanted) {
                    answered.store(true, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            drop(pipe);
        });
    }
    let reader = |pipe: Option<Box<dyn Read + Send>>, seen: Option<std::sync::Arc<std::sync::Mutex<Vec<u8>>>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                // The host's own output is bounded; this bound only keeps a broken host from
                // filling the test's memory.
                let mut buffer = [0u8; 8192];
                while bytes.len() < 64 << 20 {
                    match pipe.read(&mut buffer) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            bytes.extend_from_slice(&buffer[..n]);
                            if let Some(seen) = &seen {
                                seen.lock().unwrap().extend_from_slice(&buffer[..n]);
                            }
                        }
                    }
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = reader(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>), Some(seen.clone()));
    let stderr = reader(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>), None);
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > CASE_DEADLINE && !killed {
            let group = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
            // SAFETY: kill(2) of the process group this test started (and has not reaped).
            unsafe { libc::kill(-group, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = started.elapsed();
    let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
    if killed {
        return Err(format!("did not exit within {CASE_DEADLINE:?}\nstderr: {}", cut(&stderr)));
    }
    let peak_kib: u64 = std::fs::read_to_string(report.path())
        .map_err(|e| format!("no peak-rss report: {e}\nstderr: {}", cut(&stderr)))?
        .trim()
        .parse()
        .map_err(|e| format!("peak-rss report: {e}"))?;
    let answered_before_eof = answered.load(std::sync::atomic::Ordering::Relaxed);
    Ok(Ran { status: status.code(), stdout, stderr, peak_rss_mib: peak_kib / 1024, took, answered_before_eof })
}

/// At most 1,500 characters of `text`, for a failure message.
fn cut(text: &str) -> String {
    let mut cut: String = text.chars().take(1500).collect();
    if cut.len() < text.len() {
        cut.push_str(" [...]");
    }
    cut
}
