//! The processes the host starts itself: hook commands and stdio MCP servers. They run
//! outside the sandbox, as the host's user, so nothing a script can write may become code
//! they run or import. What their commands name is kept read-only
//! (`calls::guards`); here is how they are started:
//!
//! - **Their import path stays off the working directory.** Each child gets
//!   [`IMPORT_PATH_ENV`]: Python then puts neither its working directory (`python3 -c`) nor
//!   the folder of the script it runs on `sys.path`, so a `json.py` planted in the workspace
//!   is never imported. A command that wants its folder there says so (`PYTHONPATH=hooks`),
//!   which names the folder and so guards it.
//! - **A hook ends with all it started** ([`contain`]).
//! - **Nothing the host holds passes to them**: a hook starts with its standard three
//!   descriptors alone ([`no_inherited_descriptors`]); a stdio server is started without a
//!   fork handler of its own (a fork of the large host per server costs milliseconds, ten
//!   thousand servers a minute), so what the host opened is closed on exec, and what it
//!   inherited open from its parent is closed on exec once a program embedding the host
//!   calls [`inherited_descriptors_stay_here`] at its start, as the command line does.

/// Set in the environment of every hook and stdio server (a server's own `env` entry may
/// set it otherwise).
pub const IMPORT_PATH_ENV: [(&str, &str); 1] = [("PYTHONSAFEPATH", "1")];

/// Makes `command` start with its standard input, output and error alone open.
pub fn no_inherited_descriptors(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and only makes system calls.
    unsafe {
        command.pre_exec(|| {
            close_on_exec_from(3);
            Ok(())
        });
    }
}

/// Marks every descriptor this process holds past its standard three, those its parent left
/// open included, to be closed when it or a child execs: a program embedding the host calls
/// it at its start, before it opens any descriptor it means its children to inherit.
pub fn inherited_descriptors_stay_here() {
    close_on_exec_from(3);
}

/// Marks every descriptor from `first` on to be closed when the process execs.
pub(crate) fn close_on_exec_from(first: u32) {
    // SAFETY (this function): system calls on this process's own descriptors, with no
    // allocation: it runs in a forked child too.
    if unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) } == 0 {
        return;
    }
    // Kernels before 5.11: one by one, as far as this process may open any.
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    let last = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => limit.rlim_cur.min(1 << 20) as i32,
        _ => 65_536,
    };
    for fd in first as i32..last {
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
}

/// Makes `command` start in a PID namespace of its own, where the system allows one (as
/// root, or through an unprivileged user namespace that maps only this user): its first
/// process is the namespace's init, and when it ends the kernel kills every process left
/// in the namespace, a daemon that left the process group with `setsid` or forked twice
/// included. Between the host and that process stays one small keeper process (the one
/// the host waits on), which exits with its status. Where the system allows no such
/// namespace (a container without the capability, user namespaces turned off), the
/// command runs without one, confined to its process group alone, and the host says so
/// once.
pub fn contain(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    if !namespaces_available() {
        return;
    }
    let maps = UserMaps::for_this_user();
    // SAFETY: the closure runs in the forked child before exec, and does only what is
    // async-signal-safe there: system calls on data prepared beforehand, no allocation,
    // no lock.
    unsafe {
        command.pre_exec(move || enter_pid_namespace(maps.as_ref(), false));
    }
}

/// Whether this system lets a child make a PID namespace, found once per process by a
/// child that tries.
fn namespaces_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        use std::os::unix::process::CommandExt;
        let maps = UserMaps::for_this_user();
        let mut probe = std::process::Command::new("/bin/sh");
        probe.arg("-c").arg("exit 0").stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
        probe.stderr(std::process::Stdio::null());
        // SAFETY: as in `contain`.
        unsafe {
            probe.pre_exec(move || enter_pid_namespace(maps.as_ref(), true));
        }
        let available = probe.status().is_ok_and(|status| status.success());
        if !available {
            tracing::warn!(
                "this system allows no PID namespace for hook commands: each runs in its own process group only, so a process it detaches with `setsid` can outlive it"
            );
        }
        available
    })
}

/// What a user namespace maps when the host is not root: this user's ids onto themselves.
struct UserMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl UserMaps {
    /// `None` as root, which needs no user namespace for a PID namespace.
    fn for_this_user() -> Option<UserMaps> {
        // SAFETY: getuid(2) and getgid(2) have no preconditions and cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        (uid != 0).then(|| UserMaps {
            uid_map: format!("{uid} {uid} 1\0").into_bytes(),
            gid_map: format!("{gid} {gid} 1\0").into_bytes(),
        })
    }
}

/// In a forked child: unshares a PID namespace (and a user namespace with `maps`), then
/// forks the namespace's init, which returns to be exec'd, while this process waits for
/// it and exits as it did. When the namespace cannot be made, the command runs in the
/// host's namespace, unless this is the `probe` that finds out whether it can.
fn enter_pid_namespace(maps: Option<&UserMaps>, probe: bool) -> std::io::Result<()> {
    let flags = if maps.is_some() { libc::CLONE_NEWUSER | libc::CLONE_NEWPID } else { libc::CLONE_NEWPID };
    // SAFETY (this block and the ones below): plain system calls on this process, with
    // buffers that outlive them.
    if unsafe { libc::unshare(flags) } != 0 {
        return if probe { Err(std::io::Error::last_os_error()) } else { Ok(()) };
    }
    if let Some(maps) = maps {
        for (file, text) in [
            (c"/proc/self/setgroups", &b"deny\0"[..]),
            (c"/proc/self/uid_map", &maps.uid_map),
            (c"/proc/self/gid_map", &maps.gid_map),
        ] {
            let fd = unsafe { libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
            let length = text.len() - 1;
            let written = fd >= 0 && unsafe { libc::write(fd, text.as_ptr().cast(), length) } == length as isize;
            if fd >= 0 {
                unsafe { libc::close(fd) };
            }
            if !written {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    let init = unsafe { libc::fork() };
    if init < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if init == 0 {
        return Ok(());
    }
    // The keeper: never returns, so it never runs the command itself. It holds no
    // descriptor: not the command's pipes (their ends must close with the command), nor
    // the one through which the host learns that the command started (the host's spawn
    // waits until every copy of it is closed).
    if unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) } != 0 {
        for fd in 0..65_536 {
            unsafe { libc::close(fd) };
        }
    }
    let mut status = 0;
    loop {
        let waited = unsafe { libc::waitpid(init, &mut status, 0) };
        if waited == init {
            break;
        }
        if waited < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            unsafe { libc::_exit(127) };
        }
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
        }
        unsafe { libc::_exit(128 + signal) };
    }
    unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
}
