//! Why a command could not run. Nothing of it started: each variant says which step of
//! preparing or starting it failed, and keeps the system's own error as its cause.

use std::path::PathBuf;

/// Why a command did not start, or why commands cannot be confined on this system.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    #[error("this kernel has no Landlock (Linux 5.13 or newer, built with CONFIG_SECURITY_LANDLOCK)")]
    NoLandlock,
    #[error("Landlock is turned off on this system (add `landlock` to the kernel's `lsm=` list)")]
    LandlockOff,
    #[error("Landlock cannot be used here")]
    LandlockUnusable(#[source] std::io::Error),
    #[error("the Landlock ruleset could not be made")]
    Ruleset(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("this kernel enforces no Landlock ruleset")]
    RulesetNotEnforced,
    #[error("the seccomp filter could not be made")]
    Seccomp(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the workspace {} cannot be found", .0.display())]
    WorkspaceMissing(PathBuf, #[source] std::io::Error),
    #[error("{} holds a NUL byte", .0.display())]
    NulInPath(PathBuf),
    /// A place inside the workspace that commands may not write is missing and could not be
    /// made, to be bound read-only.
    #[error("`{}`, which commands may not write, is missing and could not be made read-only", .0.display())]
    ProtectedNotMade(PathBuf, #[source] std::io::Error),
    #[error("`{}`, which commands may not write, cannot be read", .0.display())]
    ProtectedUnreadable(PathBuf, #[source] std::io::Error),
    /// A command could swap the link between the check and the bind.
    #[error(
        "`{}` is a symbolic link, and what is behind it must stay read-only to commands: a command could swap the link, so Bash does not run in this workspace until it is a real file or folder",
        .0.display()
    )]
    ProtectedIsLink(PathBuf),
    /// `RLIMIT_NPROC` does not bind root, so only a pids cgroup bounds its processes.
    #[error(
        "the host runs as root and could not make a pids cgroup for the command, so nothing would bound the processes it starts (the kernel does not apply RLIMIT_NPROC to root): run the host as another user, or give it a cgroup with the pids controller"
    )]
    RootWithoutCgroup,
    /// The probe command, which takes every layer, did not start or did not succeed.
    #[error(
        "a confined command could not start here ({0}): the system refuses user, mount or PID namespaces to this user (unprivileged user namespaces turned off, or a container without them)"
    )]
    NamespacesRefused(std::process::ExitStatus),
    #[error("no pipe for its output")]
    Pipe(#[source] std::io::Error),
    #[error("it could not start")]
    Spawn(#[source] std::io::Error),
    #[error("its output could not be read")]
    Output(#[source] std::io::Error),
}
