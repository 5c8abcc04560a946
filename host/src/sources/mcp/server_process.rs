//! A stdio server's process: started with a small environment of its own, its stderr sent
//! to the log (never into results) and its last lines kept to explain a failed start.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use tokio::sync::Notify;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tracing::info;

use super::stdio::ChildTransport;
use crate::support::lock::Unpoisoned;

/// The lines of a server's stderr kept to explain a failed start.
const STDERR_TAIL_LINES: usize = 12;
/// Longest stderr line kept in that tail, in bytes.
const STDERR_LINE_MAX: usize = 400;
/// Longest stderr line logged, in bytes; a longer one is dropped as it arrives.
const STDERR_LINE_LOGGED: usize = 8 * 1024;

/// The last lines a child wrote to stderr, shared with the task that logs them.
#[derive(Clone, Default)]
pub(super) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    done: Arc<Notify>,
}

/// The variables of this process a stdio server inherits; its entry's `env` adds to them.
pub const INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Why a stdio server's process could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    #[error("its `cwd` {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("command `{0}` was not found (is it installed and on PATH?)")]
    NotFound(String),
    #[error("command `{0}` is not executable")]
    NotExecutable(String),
    #[error("cannot start `{command}`")]
    Failed {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

pub(super) fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&PathBuf>,
) -> Result<(ChildTransport, StderrTail), SpawnError> {
    if let Some(dir) = cwd
        && !dir.is_dir()
    {
        return Err(SpawnError::NotADirectory(dir.clone()));
    }
    let mut process = tokio::process::Command::new(command);
    // A server gets a small default environment and what its entry sets, never every secret
    // of this process (as the official MCP SDKs start servers).
    process.env_clear();
    for name in INHERITED_ENV {
        if let Some(value) = std::env::var_os(name) {
            process.env(name, value);
        }
    }
    process.envs(crate::sources::children::IMPORT_PATH_ENV);
    process.args(args).envs(env).kill_on_drop(true).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(dir) = cwd {
        process.current_dir(dir);
    }
    let mut child = process.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => SpawnError::NotFound(command.to_string()),
        std::io::ErrorKind::PermissionDenied => SpawnError::NotExecutable(command.to_string()),
        _ => SpawnError::Failed { command: command.to_string(), source },
    })?;
    let tail = StderrTail::default();
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(log_stderr(server.into(), stderr, tail.clone()));
    }
    let transport = ChildTransport::new(child).map_err(|source| SpawnError::Failed { command: command.to_string(), source })?;
    Ok((transport, tail))
}

/// Sends a server's stderr to the log (never into results) and keeps its last lines.
async fn log_stderr(server: Arc<str>, stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let mut lines = FramedRead::new(stderr, LinesCodec::new_with_max_length(STDERR_LINE_LOGGED));
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => format!("[a line longer than {STDERR_LINE_LOGGED} bytes, dropped]"),
            Err(LinesCodecError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                "[a line that is not UTF-8, dropped]".into()
            }
            Err(LinesCodecError::Io(_)) => break,
        };
        info!(server = %server, "stderr: {line}");
        let mut kept = tail.lines.locked();
        if kept.len() == STDERR_TAIL_LINES {
            kept.pop_front();
        }
        kept.push_back(truncate(line, STDERR_LINE_MAX));
    }
    tail.done.notify_one();
}

fn truncate(mut line: String, max: usize) -> String {
    if line.len() > max {
        let cut = (0..=max).rev().find(|&i| line.is_char_boundary(i)).unwrap_or(0);
        line.truncate(cut);
        line.push('…');
    }
    line
}

/// `reason`, followed by how the server's stderr ended (waiting a moment for a child that
/// is exiting to finish writing).
pub(super) async fn with_stderr(reason: String, tail: &StderrTail) -> String {
    let _ = tokio::time::timeout(Duration::from_millis(200), tail.done.notified()).await;
    let lines = tail.lines.locked();
    let lines: Vec<&str> = lines.iter().map(String::as_str).filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() { reason } else { format!("{reason}; its stderr ended with:\n  {}", lines.join("\n  ")) }
}
