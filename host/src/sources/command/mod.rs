//! Shell commands, run confined (see [`Confinement`] and [`Layers`]) and bounded in time and in what is kept of
//! their output: the engine of the `Bash` tool.
//!
//! A command runs as `bash -c` (or `sh -c` where there is no bash) in the workspace, with
//! standard input closed and a minimal environment. Its time: the timeout, then SIGTERM to
//! its processes, then SIGKILL after [`GRACE`]; an abort kills at once. Its output
//! (standard output and error in one stream, in the order written) is kept at the source:
//! [`KEPT_BYTES`] from its start and as many from its end, however much it prints; what
//! reaches the model is at most [`MAX_OUTPUT_CHARS`] of them, head and tail, with the count
//! of bytes left out. While it runs, each line goes to the watcher, and so does a heartbeat
//! every [`HEARTBEAT`] while it prints nothing.

mod cgroup;
mod child;
mod confine;
mod error;
mod landlock_rules;
mod protect;
mod readable;
mod seccomp;
mod spawn;

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

pub use confine::{CommandLimits, Confinement, DEFAULT_LIMITS, LayerReport, Layers, layer_report, unavailable};
pub use error::CommandError;

/// Time a command gets when the call names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest time a call may give a command.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);
/// A command silent this long is said to be still running.
pub const HEARTBEAT: Duration = Duration::from_secs(30);
/// Characters of output the model gets at most: half from the start, half from the end.
pub const MAX_OUTPUT_CHARS: usize = 30_000;
/// Bytes kept of the start of the output, and as many of its end: room for half of
/// [`MAX_OUTPUT_CHARS`] characters of four bytes each.
pub const KEPT_BYTES: usize = MAX_OUTPUT_CHARS * 2;
/// Characters of a line passed on live at most.
const LIVE_LINE_CHARS: usize = 200;
/// How long the output may still arrive after the command ended (a process that left it
/// open outside a PID namespace is not waited for).
const DRAIN: Duration = Duration::from_millis(200);

/// Environment variables a command gets from the host, when they are set (as stdio MCP
/// servers do); `HOME` and `TMPDIR` are its private `/tmp`.
pub const COMMAND_ENV: [&str; 5] = ["LANG", "LOGNAME", "PATH", "TERM", "USER"];

/// What happens while a command runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandEvent {
    /// A line it printed, cut to 200 characters.
    Line(String),
    /// It has printed nothing for this long.
    Silent(Duration),
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// By itself: its exit status is the result.
    Exited,
    /// Its time ran out and it was stopped.
    TimedOut,
    /// The caller gave up, and it was killed.
    Aborted,
}

/// What a command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutcome {
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    pub ended: Ended,
    /// Its output: whole, or its head and tail around a line saying what was left out.
    pub output: String,
    /// Bytes it printed in all.
    pub output_bytes: u64,
    /// Bytes of them not in `output`.
    pub omitted_bytes: u64,
    pub duration: Duration,
}

/// The command that runs every command: `bash -c`, or `sh -c` without bash.
fn shell() -> &'static str {
    if std::path::Path::new("/bin/bash").exists() { "/bin/bash" } else { "/bin/sh" }
}

/// Runs `command` confined by `confinement` for at most `timeout`; `cancel` kills it.
/// Fails only when it could not start.
pub async fn run(
    command: &str,
    confinement: &Confinement,
    timeout: Duration,
    cancel: &CancellationToken,
    watch: &(dyn Fn(CommandEvent) + Send + Sync),
) -> Result<CommandOutcome, CommandError> {
    let started = Instant::now();
    let mut prepared = confine::Prepared::new(confinement)?;
    let (reader, writer) = std::io::pipe().map_err(CommandError::Pipe)?;
    let mut env: Vec<(&OsStr, OsString)> =
        COMMAND_ENV.iter().filter_map(|name| std::env::var_os(name).map(|value| (OsStr::new(name), value))).collect();
    env.extend([(OsStr::new("HOME"), "/tmp".into()), (OsStr::new("TMPDIR"), "/tmp".into())]);
    let line = confine::ExecLine::new(
        shell(),
        [OsStr::new("-c"), OsStr::new(command)],
        env.iter().map(|(name, value)| (*name, value.as_os_str())),
    )
    .map_err(CommandError::Spawn)?;
    // The command's copy of the write end is the only one left once it started, so that
    // the output ends when the command's processes have all closed theirs.
    let mut child = prepared.spawn(line, OwnedFd::from(writer))?;
    let group = Some(child.pid);
    let mut output = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(CommandError::Output)?;

    let mut capture = Capture::default();
    let mut buffer = vec![0u8; 16 * 1024];
    let mut reading = true;
    let mut status = None;
    let mut ended = Ended::Exited;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut kill_at: Option<tokio::time::Instant> = None;
    let mut drained_by: Option<tokio::time::Instant> = None;
    let mut heard = tokio::time::Instant::now();
    let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
    loop {
        if status.is_some() && (!reading || drained_by.is_some_and(|by| tokio::time::Instant::now() >= by)) {
            break;
        }
        let drain = drained_by.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        let kill = kill_at.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            read = output.read(&mut buffer), if reading => match read {
                Ok(0) | Err(_) => reading = false,
                Ok(n) => {
                    heard = tokio::time::Instant::now();
                    for line in capture.push(&buffer[..n]) {
                        watch(CommandEvent::Line(line));
                    }
                }
            },
            exited = child.wait(), if status.is_none() => {
                status = Some(exited);
                drained_by = Some(tokio::time::Instant::now() + DRAIN);
            }
            () = &mut deadline, if ended == Ended::Exited && status.is_none() => {
                ended = Ended::TimedOut;
                signal_group(group, libc::SIGTERM);
                kill_at = Some(tokio::time::Instant::now() + GRACE);
            }
            () = tokio::time::sleep_until(kill), if kill_at.is_some() && status.is_none() => {
                signal_group(group, libc::SIGKILL);
                kill_at = None;
            }
            () = cancel.cancelled(), if ended != Ended::Aborted && status.is_none() => {
                ended = Ended::Aborted;
                signal_group(group, libc::SIGKILL);
            }
            _ = heartbeat.tick() => {
                if heard.elapsed() >= HEARTBEAT {
                    watch(CommandEvent::Silent(heard.elapsed()));
                }
            }
            () = tokio::time::sleep_until(drain), if drained_by.is_some() => {}
        }
    }
    let status = status.and_then(Result::ok);
    // Its cgroup goes with it, once the kernel has let its last processes go: off this
    // thread, which need not wait for that.
    tokio::task::spawn_blocking(move || drop(prepared));
    let (output, omitted_bytes) = capture.render();
    use std::os::unix::process::ExitStatusExt;
    Ok(CommandOutcome {
        exit_code: status.and_then(|status| status.code()),
        signal: status.and_then(|status| status.signal()),
        ended,
        output,
        output_bytes: capture.total,
        omitted_bytes,
        duration: started.elapsed(),
    })
}

/// Sends `signal` to the session the host started (the init of the command's PID
/// namespace, which passes SIGTERM on; SIGKILL there ends the whole namespace).
fn signal_group(group: Option<libc::pid_t>, signal: libc::c_int) {
    if let Some(group) = group.filter(|group| *group > 0) {
        // SAFETY: kill(2) on a process group this host started and has not reaped.
        unsafe { libc::kill(-group, signal) };
    }
}

/// What is kept of a command's output: its first [`KEPT_BYTES`], its last as many, and the
/// line being written, for the watcher.
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    line: Vec<u8>,
}

impl Capture {
    /// Keeps `bytes`; the lines they complete, for the watcher.
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.total += bytes.len() as u64;
        let to_head = bytes.len().min(KEPT_BYTES - self.head.len());
        self.head.extend_from_slice(&bytes[..to_head]);
        let rest = &bytes[to_head..];
        if rest.len() >= KEPT_BYTES {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - KEPT_BYTES..]);
        } else {
            let over = (self.tail.len() + rest.len()).saturating_sub(KEPT_BYTES);
            self.tail.drain(..over);
            self.tail.extend(rest);
        }
        let mut lines = Vec::new();
        for &byte in bytes {
            if byte == b'\n' {
                lines.push(self.take_line());
            } else if self.line.len() < LIVE_LINE_CHARS * 4 {
                self.line.push(byte);
            }
        }
        lines
    }

    fn take_line(&mut self) -> String {
        let line = String::from_utf8_lossy(&self.line).chars().take(LIVE_LINE_CHARS).collect();
        self.line.clear();
        line
    }

    /// The output for the model, and how many bytes of it are left out.
    fn render(&self) -> (String, u64) {
        let half = MAX_OUTPUT_CHARS / 2;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if self.total == (self.head.len() + tail.len()) as u64 {
            let mut whole = self.head.clone();
            whole.extend_from_slice(&tail);
            let text = String::from_utf8_lossy(&whole);
            if text.chars().count() <= MAX_OUTPUT_CHARS {
                return (text.into_owned(), 0);
            }
        }
        let head = String::from_utf8_lossy(&self.head);
        let head: String = head.chars().take(half).collect();
        let tail_text = String::from_utf8_lossy(&tail);
        let skip = tail_text.chars().count().saturating_sub(half);
        let tail_text: String = tail_text.chars().skip(skip).collect();
        let shown = (head.len() + tail_text.len()) as u64;
        let omitted = self.total.saturating_sub(shown);
        (format!("{head}\n[... {omitted} bytes of output left out ...]\n{tail_text}"), omitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_keeps_its_head_and_tail_and_counts_what_it_left_out() {
        let mut capture = Capture::default();
        let lines = capture.push(b"one\ntwo\nthr");
        assert_eq!(lines, ["one", "two"]);
        assert_eq!(capture.render(), ("one\ntwo\nthr".to_string(), 0));
        let mut big = Capture::default();
        for _ in 0..1000 {
            big.push(&[b'a'; 1000]);
        }
        big.push(b"THE END");
        let (text, omitted) = big.render();
        assert!(text.starts_with(&"a".repeat(15_000)));
        assert!(text.ends_with("THE END"));
        assert_eq!(omitted, 1_000_007 - 30_000);
        assert!(text.contains(&format!("[... {omitted} bytes of output left out ...]")));
        assert!(big.head.len() + big.tail.len() <= 2 * KEPT_BYTES, "bounded however much it prints");
    }
}
