//! The host's side of a command's process: cloned with a pidfd (and straight into the
//! command's namespaces when that layer is on), then waited on through that pidfd without a
//! thread of its own, its wait status read from the init when there is one.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use tokio::io::unix::AsyncFd;

/// Which side of the clone this is.
pub(super) enum Cloned {
    /// The new process: it must end in exec or `_exit`, making only system calls.
    Child,
    /// The host, with the child's pid and a pidfd for it.
    Parent(libc::pid_t, OwnedFd),
}

/// `clone3(2)`'s arguments.
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Forks this process as `fork` does (the child on a copy of this thread's stack, SIGCHLD
/// to the parent when it ends), with `flags` added (the namespaces to make) and a pidfd.
/// Unlike `fork`, no fork handler runs: the child makes system calls only, then execs.
pub(super) fn clone_process(flags: u64) -> std::io::Result<Cloned> {
    let mut pidfd: libc::c_int = -1;
    let flags = flags | libc::CLONE_PIDFD as u64;
    let args = CloneArgs {
        flags,
        pidfd: &mut pidfd as *mut libc::c_int as u64,
        exit_signal: libc::SIGCHLD as u64,
        ..CloneArgs::default()
    };
    // SAFETY: clone3 with no new stack returns twice, as fork does; the child only makes
    // system calls on memory prepared before (the caller's contract), so no lock another
    // thread held and no allocator state matters to it.
    let mut pid = unsafe { libc::syscall(libc::SYS_clone3, &args as *const CloneArgs, std::mem::size_of::<CloneArgs>()) };
    if pid < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
        // Kernels before 5.3, or a filter refusing clone3: clone takes the same flags, and
        // the pidfd where the parent's thread id would go (third on every architecture).
        // SAFETY: as above.
        pid = unsafe {
            libc::syscall(libc::SYS_clone, flags | libc::SIGCHLD as u64, 0usize, &mut pidfd as *mut libc::c_int, 0usize, 0usize)
        };
    }
    match pid {
        0 => Ok(Cloned::Child),
        pid if pid < 0 => Err(std::io::Error::last_os_error()),
        // SAFETY: the kernel just returned this descriptor for the new process.
        pid => Ok(Cloned::Parent(pid as libc::pid_t, unsafe { OwnedFd::from_raw_fd(pidfd) })),
    }
}

/// A command's process, started: the leader of its session, which the host waits on.
/// Dropped before it was waited for, it is killed with its session and reaped off this
/// thread: nothing is left running that nobody waits for.
pub(super) struct Started {
    pub(super) pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    /// The pidfd, registered with the runtime once [`wait`](Self::wait) is first called.
    waiter: Option<AsyncFd<OwnedFd>>,
    /// From the init: the command's wait status, written before it exits.
    status: Option<OwnedFd>,
    reaped: bool,
}

impl Started {
    pub(super) fn new(pid: libc::pid_t, pidfd: OwnedFd, status: Option<OwnedFd>) -> Self {
        Started { pid, pidfd: Some(pidfd), waiter: None, status, reaped: false }
    }

    /// Waits until it has ended, and how the command ended. Cancel-safe.
    pub(super) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        if self.waiter.is_none()
            && let Some(pidfd) = self.pidfd.take()
        {
            // SAFETY: the pidfd is owned by the `AsyncFd` from here on, and nothing else
            // closes or replaces it.
            self.waiter = Some(unsafe { AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) }?);
        }
        let waiter = self.waiter.as_ref().ok_or_else(|| std::io::Error::other("the process was already waited for"))?;
        let ended = loop {
            let mut ready = waiter.readable().await?;
            if let Some(status) = reap(self.pid, self.status.as_ref(), libc::WNOHANG)? {
                break status;
            }
            ready.clear_ready();
        };
        self.reaped = true;
        Ok(ended)
    }

    /// Waits, blocking this thread, until it has ended; how the command ended.
    pub(super) fn blocking_wait(&mut self) -> std::io::Result<ExitStatus> {
        loop {
            if let Some(status) = reap(self.pid, self.status.as_ref(), 0)? {
                self.reaped = true;
                return Ok(status);
            }
        }
    }
}

/// Reaps `pid` if it has ended (waiting for that unless `WNOHANG`), and how the command
/// ended: as its init wrote it to `status` before exiting, else the process's own status
/// (a process killed by the host, an init included, wrote nothing).
fn reap(pid: libc::pid_t, status: Option<&OwnedFd>, options: libc::c_int) -> std::io::Result<Option<ExitStatus>> {
    let mut raw = 0;
    // SAFETY: waitpid(2) on this host's own child, which only its `Started` reaps.
    let waited = unsafe { libc::waitpid(pid, &mut raw, options) };
    if waited == pid {
        let reported = status.and_then(|pipe| {
            let mut bytes = [0u8; 4];
            // SAFETY: read(2) into a buffer of its length; the writer has exited, so this
            // returns at once.
            let read = unsafe { libc::read(pipe.as_raw_fd(), bytes.as_mut_ptr().cast(), bytes.len()) };
            (read == bytes.len() as isize).then(|| i32::from_ne_bytes(bytes))
        });
        return Ok(Some(ExitStatus::from_raw(reported.unwrap_or(raw))));
    }
    match waited {
        0 => Ok(None),
        _ => match std::io::Error::last_os_error() {
            e if e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
            e => Err(e),
        },
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        // SAFETY: kill(2) on the session this host started and has not reaped the leader of.
        unsafe { libc::kill(-self.pid, libc::SIGKILL) };
        let pid = self.pid;
        let reap = move || {
            let mut raw = 0;
            // SAFETY: waitpid(2) on this host's own child, which nothing else reaps.
            while unsafe { libc::waitpid(pid, &mut raw, 0) } < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {}
        };
        // Where no thread can be made, here: the process was just killed.
        if std::thread::Builder::new().name("command-reaper".into()).spawn(reap).is_err() {
            reap();
        }
    }
}
