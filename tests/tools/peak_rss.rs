//! `peak-rss REPORT COMMAND [ARGS...]`: runs COMMAND with this process's standard streams,
//! writes the peak resident memory of COMMAND alone (in KiB) to the file REPORT, and exits
//! as COMMAND did (128 + the signal when a signal ended it).
//!
//! The attack suites need this small go-between: a process's peak resident memory, as the
//! kernel counts it, includes the memory of the process that spawned it at the moment it
//! started the new program, so a big test process cannot measure its own children.

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(report), Some(program)) = (args.next(), args.next()) else {
        eprintln!("usage: peak-rss REPORT COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let child = match Command::new(&program).args(args).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("peak-rss: cannot run {}: {e}", program.to_string_lossy());
            return ExitCode::from(127);
        }
    };
    let Ok(pid) = libc::pid_t::try_from(child.id()) else { return ExitCode::from(126) };
    let mut status = 0;
    // SAFETY: rusage is plain integers, for which all-zero bytes are valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on this process's own child, with pointers to live locals.
    while unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } < 0 {
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return ExitCode::from(126);
        }
    }
    // ru_maxrss is in KiB on Linux.
    if let Err(e) = std::fs::write(&report, usage.ru_maxrss.to_string()) {
        eprintln!("peak-rss: cannot write {}: {e}", report.to_string_lossy());
        return ExitCode::from(126);
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
    ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX))
}
