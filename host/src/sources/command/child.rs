//! What the child the host clones does before `exec`: as the init of its namespaces, mount
//! its view and start the command, which takes the limits, Landlock and seccomp; system
//! calls only, on what the host prepared (no allocation, no lock).

use std::os::fd::{AsRawFd, OwnedFd};

use super::confine::{CommandLimits, Layers};
use super::landlock_rules::add_landlock_rule;
use super::protect::ProtectionView;

/// The pointers the child reads: the [`Prepared`] it came from outlives the spawn.
pub(super) struct ChildView {
    pub(super) layers: Layers,
    pub(super) limits: CommandLimits,
    pub(super) ruleset: Option<i32>,
    pub(super) filters: Vec<(usize, *const libc::sock_filter)>,
    pub(super) protection: Option<ProtectionView>,
    pub(super) proc_access: u64,
    pub(super) tmp_access: u64,
    pub(super) tmp_options: *const libc::c_char,
    pub(super) uid_map: (*const u8, usize),
    pub(super) gid_map: (*const u8, usize),
    /// The `cgroup.procs` of its pids cgroup.
    pub(super) pids: Option<*const libc::c_char>,
    pub(super) workspace: *const libc::c_char,
    pub(super) tmp_path: Vec<*const libc::c_char>,
    pub(super) host_text: HostText,
    /// What the command execs, when the init starts it (see [`ChildView::spawn_command`]).
    pub(super) exec: ExecView,
    /// The stack the command runs on until it execs: `(start, length)`.
    pub(super) command_stack: (*mut u8, usize),
    /// Where the init writes the command's wait status before it exits.
    pub(super) status_fd: libc::c_int,
}

/// The descriptors the host gives the child it clones, as they are in that child.
#[derive(Clone, Copy)]
pub(super) struct ChildFds {
    pub(super) stdin: libc::c_int,
    pub(super) output: libc::c_int,
    /// Written with the error number when the command could not start; closed by every
    /// process once it started.
    pub(super) report: libc::c_int,
}

/// The program, arguments and environment of the command as `execve` takes them (each list
/// ends with a null pointer).
#[derive(Clone, Copy)]
pub(super) struct ExecView {
    pub(super) program: *const libc::c_char,
    pub(super) argv: *const *const libc::c_char,
    pub(super) envp: *const *const libc::c_char,
}

// SAFETY: the pointers are into a `Prepared` that outlives the clone (the child reads its
// own copy of that memory), and only the cloned child reads through them.
unsafe impl Send for ChildView {}
unsafe impl Sync for ChildView {}

pub(super) fn os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

impl ChildView {
    /// In the child the host cloned, with the namespaces already its own when that layer is
    /// on: its standard input, output and error, then every layer in the order each needs
    /// (mounts before Landlock and seccomp forbid them), then the command. Never returns:
    /// it execs, or writes why it could not start to `report` (the error number, in the
    /// host's byte order) and exits.
    pub(super) fn start(&self, fds: ChildFds) -> ! {
        let Err(error) = self.set_up(fds);
        let code = error.raw_os_error().unwrap_or(libc::EINVAL).to_ne_bytes();
        // SAFETY: write(2) and _exit(2) with a buffer that outlives them.
        unsafe {
            libc::write(fds.report, code.as_ptr().cast(), code.len());
            libc::_exit(127)
        }
    }

    fn set_up(&self, fds: ChildFds) -> std::io::Result<std::convert::Infallible> {
        // SAFETY (this function and those it calls): system calls on this process with
        // buffers that outlive them.
        // No signal blocked and SIGPIPE at its default, whatever the host's thread had (Rust
        // programs ignore SIGPIPE): what a program expects to start with.
        unsafe {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
        for (from, to) in [(fds.stdin, 0), (fds.output, 1), (fds.output, 2)] {
            // dup2 onto itself would keep close-on-exec: clear it instead.
            let done = match from == to {
                true => unsafe { libc::fcntl(to, libc::F_SETFD, 0) },
                false => unsafe { libc::dup2(from, to) },
            };
            if done < 0 {
                return Err(os_error());
            }
        }
        if unsafe { libc::setsid() } < 0 {
            return Err(os_error());
        }
        // Killed with the host: a command never outlives the process that ran it.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        // Into its pids cgroup first, while it still may (writing 0 moves the writer).
        if let Some(procs) = self.pids {
            let fd = unsafe { libc::open(procs, libc::O_WRONLY | libc::O_CLOEXEC) };
            let moved = fd >= 0 && unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } == 1;
            if fd >= 0 {
                unsafe { libc::close(fd) };
            }
            if !moved {
                return Err(os_error());
            }
        }
        if self.layers.namespaces {
            return self.be_init();
        }
        if unsafe { libc::chdir(self.workspace) } != 0 {
            return Err(os_error());
        }
        self.restrict()?;
        self.exec()
    }

    /// Execs the command; returns only with the reason it could not.
    fn exec(&self) -> std::io::Result<std::convert::Infallible> {
        let exec = self.exec;
        unsafe { libc::execve(exec.program, exec.argv, exec.envp) };
        Err(os_error())
    }

    /// The layers a process takes on itself just before it execs the command: the limits,
    /// `no_new_privs`, Landlock and seccomp; and no descriptor of the host's passes on.
    fn restrict(&self) -> std::io::Result<()> {
        if self.layers.limits {
            self.set_limits()?;
        }
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(os_error());
        }
        if let Some(ruleset) = self.ruleset
            && unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) } != 0
        {
            return Err(os_error());
        }
        for &(len, filter) in &self.filters {
            let program = libc::sock_fprog { len: len as u16, filter: filter.cast_mut() };
            if unsafe { libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &program as *const libc::sock_fprog) } != 0 {
                return Err(os_error());
            }
        }
        // Nothing the host holds passes to the command: descriptors it inherited from its
        // own parent (Landlock checks paths, not open descriptors) and its own.
        crate::sources::children::close_on_exec_from(3);
        Ok(())
    }

    /// As the init of the namespaces it was cloned into (pid 1 of its PID namespace): maps
    /// its user, sets up the mounts, starts the command (restricted, then exec'd) and waits
    /// for it, then exits as it did. Returns only with the reason the command could not
    /// start.
    fn be_init(&self) -> std::io::Result<std::convert::Infallible> {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", unsafe { std::slice::from_raw_parts(self.uid_map.0, self.uid_map.1) })?;
        write_file(c"/proc/self/gid_map", unsafe { std::slice::from_raw_parts(self.gid_map.0, self.gid_map.1) })?;
        // The init dies with the host (its parent-death signal, set above), and every process
        // of the namespace with it.
        // It is a copy of the host, visible to the command as pid 1: it carries nothing of
        // the host's that the command could read (its command line and name; its memory and
        // environment, by refusing to be traced or read through /proc).
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
        self.host_text.wipe();
        unsafe { libc::prctl(libc::PR_SET_NAME, c"init".as_ptr(), 0, 0, 0) };
        self.mount_view()?;
        // The command starts in the workspace as its mounts show it (the host's view of it
        // may lie under what is now a private `/tmp`).
        if unsafe { libc::chdir(self.workspace) } != 0 {
            return Err(os_error());
        }
        if let Some(ruleset) = self.ruleset {
            // The rules for what exists only now: the command's own /proc and /tmp.
            add_landlock_rule(ruleset, c"/proc", self.proc_access)?;
            add_landlock_rule(ruleset, c"/tmp", self.tmp_access)?;
        }
        let command = self.spawn_command()?;
        init_forwards_signals(command);
        keep(command, self.status_fd);
    }

    /// Starts the command from the init, sharing the init's memory until it execs, as
    /// `posix_spawn` does: a fork would copy the page tables of the whole host (the init is
    /// a copy of it) only for exec to tear them down again, which cost more than the rest
    /// of a short command. The init is suspended meanwhile (`CLONE_VFORK`), so the command
    /// runs on a stack of its own in memory nothing else touches; it writes only its start's
    /// `error`, which the init reads once it resumes.
    fn spawn_command(&self) -> std::io::Result<libc::pid_t> {
        let start = CommandStart { view: self, error: std::sync::atomic::AtomicI32::new(0) };
        let (stack, length) = self.command_stack;
        // The stack grows down from its end, aligned to 16 bytes as the ABI asks.
        let top = (stack as usize + length) & !15;
        let command = unsafe {
            libc::clone(
                start_command,
                top as *mut libc::c_void,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                (&start as *const CommandStart).cast_mut().cast(),
            )
        };
        if command < 0 {
            return Err(os_error());
        }
        match start.error.load(std::sync::atomic::Ordering::Acquire) {
            0 => Ok(command),
            error => {
                let mut status = 0;
                unsafe { libc::waitpid(command, &mut status, 0) };
                Err(std::io::Error::from_raw_os_error(error))
            }
        }
    }

    /// The mount namespace's view: private, the protected places read-only, a private
    /// `/tmp`, and a `/proc` of the command's own PID namespace.
    fn mount_view(&self) -> std::io::Result<()> {
        let none = c"none".as_ptr();
        if unsafe { libc::mount(none, c"/".as_ptr(), std::ptr::null(), libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) } != 0 {
            return Err(os_error());
        }
        if let Some(protection) = &self.protection {
            protection.bind()?;
        }
        // A workspace under `/tmp` is held by a descriptor across the private `/tmp`'s mount,
        // then bound back at its path in it (with the protected places bound inside it).
        let workspace = match self.tmp_path.is_empty() {
            true => None,
            false => Some(open_path(self.workspace)?),
        };
        let tmpfs = c"tmpfs".as_ptr();
        let flags = libc::MS_NOSUID | libc::MS_NODEV;
        if unsafe { libc::mount(tmpfs, c"/tmp".as_ptr(), tmpfs, flags, self.tmp_options.cast()) } != 0 {
            return Err(os_error());
        }
        if let Some(workspace) = workspace {
            for &folder in &self.tmp_path {
                if unsafe { libc::mkdir(folder, 0o755) } != 0 && os_error().raw_os_error() != Some(libc::EEXIST) {
                    return Err(os_error());
                }
            }
            let mut path = [0u8; 32];
            let from = super::protect::fd_path(workspace.as_raw_fd(), &mut path).as_ptr();
            let bound =
                unsafe { libc::mount(from, self.workspace, std::ptr::null(), libc::MS_BIND | libc::MS_REC, std::ptr::null()) };
            if bound != 0 {
                return Err(os_error());
            }
        }
        let proc_flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        let proc_mounted =
            unsafe { libc::mount(c"proc".as_ptr(), c"/proc".as_ptr(), c"proc".as_ptr(), proc_flags, std::ptr::null()) } == 0;
        // Where a fresh /proc is refused (some containers), the host's is hidden instead:
        // it would show the host's processes, environments included.
        if !proc_mounted
            && unsafe { libc::mount(tmpfs, c"/proc".as_ptr(), tmpfs, proc_flags | libc::MS_RDONLY, c"size=4k".as_ptr().cast()) }
                != 0
        {
            return Err(os_error());
        }
        Ok(())
    }

    fn set_limits(&self) -> std::io::Result<()> {
        let limits = self.limits;
        for (resource, value) in [
            (libc::RLIMIT_CPU, limits.cpu_seconds),
            (libc::RLIMIT_AS, limits.address_space),
            (libc::RLIMIT_FSIZE, limits.file_size),
            (libc::RLIMIT_NOFILE, limits.open_files),
            (libc::RLIMIT_NPROC, limits.processes),
            (libc::RLIMIT_CORE, 0),
        ] {
            let limit = libc::rlimit { rlim_cur: value, rlim_max: value };
            if unsafe { libc::setrlimit(resource, &limit) } != 0 {
                return Err(os_error());
            }
        }
        Ok(())
    }
}

/// What the command's process is started with: the init's view, and where it writes why it
/// could not exec.
struct CommandStart<'a> {
    view: &'a ChildView,
    error: std::sync::atomic::AtomicI32,
}

/// The command's process until it execs: a process group of its own inside the namespace
/// (for SIGTERM), the last layers, then the command. On failure it leaves the reason in its
/// start and exits, and the init reports it to the host as a failed start.
extern "C" fn start_command(start: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` points at the init's `CommandStart`, which lives until this process
    // has exec'd or exited (the init is suspended until then); only system calls follow.
    let start = unsafe { &*(start as *const CommandStart) };
    unsafe { libc::setpgid(0, 0) };
    let failed = match start.view.restrict() {
        Ok(()) => {
            let exec = start.view.exec;
            unsafe { libc::execve(exec.program, exec.argv, exec.envp) };
            os_error()
        }
        Err(error) => error,
    };
    start.error.store(failed.raw_os_error().unwrap_or(libc::EINVAL), std::sync::atomic::Ordering::Release);
    unsafe { libc::_exit(127) }
}

/// Writes `text` to `file` (a /proc file of this process).
fn write_file(file: &std::ffi::CStr, text: &[u8]) -> std::io::Result<()> {
    let fd = unsafe { libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(os_error());
    }
    let written = unsafe { libc::write(fd, text.as_ptr().cast(), text.len()) };
    unsafe { libc::close(fd) };
    if written != text.len() as isize {
        return Err(os_error());
    }
    Ok(())
}

/// `place`, opened as a path only (to bind from, or to hold across a mount over it).
fn open_path(place: *const libc::c_char) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    let fd = unsafe { libc::open(place, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(os_error());
    }
    // SAFETY: the kernel just returned this descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The places in this process's memory of its command line and environment, read once
/// from `/proc/self/stat`; the init wipes them in its copy.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct HostText {
    command_line: (usize, usize),
    environment: (usize, usize),
}

impl HostText {
    pub(super) fn of_this_process() -> Self {
        static READ: std::sync::OnceLock<HostText> = std::sync::OnceLock::new();
        *READ.get_or_init(|| {
            let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
            // The fields after the command's name, which is in brackets and may hold anything.
            let fields: Vec<usize> = match stat.rfind(')') {
                Some(end) => stat[end + 1..].split_whitespace().map(|field| field.parse().unwrap_or(0)).collect(),
                None => Vec::new(),
            };
            // arg_start, arg_end, env_start and env_end are fields 48 to 51 (from 1); the
            // first field after the name is the third.
            let field = |number: usize| fields.get(number - 3).copied().unwrap_or(0);
            HostText { command_line: (field(48), field(49)), environment: (field(50), field(51)) }
        })
    }

    /// In the init, a copy of this process: zeroes both, so `/proc/1/cmdline` reads empty.
    fn wipe(&self) {
        for (start, end) in [self.command_line, self.environment] {
            if start != 0 && end > start && end - start <= 1 << 22 {
                // SAFETY: the range is this process's own command line or environment,
                // mapped and writable (the stack it started with), and nothing of the init
                // reads it again.
                unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
            }
        }
    }
}

/// Binds `place` over itself, which makes it a mount point: it cannot be renamed or
/// removed then.
pub(super) fn bind_over_itself(place: *const libc::c_char) -> std::io::Result<()> {
    if unsafe { libc::mount(place, place, std::ptr::null(), libc::MS_BIND | libc::MS_REC, std::ptr::null()) } != 0 {
        return Err(os_error());
    }
    Ok(())
}

/// Makes the bind mount at `place` read-only, keeping the flags the kernel locks in a user
/// namespace (nosuid, nodev, noexec of the mount it is on).
pub(super) fn remount_read_only(place: *const libc::c_char) -> std::io::Result<()> {
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(place, &mut stat) } != 0 {
        return Err(os_error());
    }
    let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
    for (kept, flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if stat.f_flag & kept != 0 {
            flags |= flag;
        }
    }
    if unsafe { libc::mount(std::ptr::null(), place, std::ptr::null(), flags, std::ptr::null()) } != 0 {
        return Err(os_error());
    }
    Ok(())
}

/// The command's process group, for the init's signal handler.
static COMMAND_GROUP: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn pass_on(signal: libc::c_int) {
    let group = COMMAND_GROUP.load(std::sync::atomic::Ordering::Relaxed);
    if group > 0 {
        // SAFETY: kill(2) is async-signal-safe.
        unsafe { libc::kill(-group, signal) };
    }
}

/// The init passes SIGTERM, SIGINT and SIGHUP on to the command's process group (as pid 1
/// it would otherwise ignore them).
fn init_forwards_signals(command: libc::pid_t) {
    COMMAND_GROUP.store(command, std::sync::atomic::Ordering::Relaxed);
    // The command may not have made its group yet: make it here too.
    unsafe { libc::setpgid(command, command) };
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        unsafe { libc::signal(signal, pass_on as *const () as libc::sighandler_t) };
    }
}

/// The init's last task: waits for the command, reaping every orphan of its namespace on
/// the way, writes the command's wait status to `status` (the host's only way to learn of
/// a death by signal: a namespace's init cannot die of a signal it sends itself) and exits
/// as the command did. It holds no other descriptor meanwhile: not the command's pipes
/// (their ends must close with the command), nor the one through which the host learns
/// that the command started (which ends when every copy of it is closed).
fn keep(child: libc::pid_t, status_fd: libc::c_int) -> ! {
    let status_fd = status_fd as u32;
    let closed = unsafe {
        (status_fd == 0 || libc::syscall(libc::SYS_close_range, 0u32, status_fd - 1, 0u32) == 0)
            && libc::syscall(libc::SYS_close_range, status_fd + 1, u32::MAX, 0u32) == 0
    };
    if !closed {
        for fd in (0..65_536).filter(|fd| *fd != status_fd as i32) {
            unsafe { libc::close(fd) };
        }
    }
    let mut status = 0;
    loop {
        let waited = unsafe { libc::waitpid(-1, &mut status, 0) };
        if waited == child {
            break;
        }
        if waited < 0 && os_error().raw_os_error() != Some(libc::EINTR) {
            unsafe { libc::_exit(127) };
        }
    }
    let raw = status.to_ne_bytes();
    unsafe { libc::write(status_fd as i32, raw.as_ptr().cast(), raw.len()) };
    match libc::WIFSIGNALED(status) {
        true => unsafe { libc::_exit(128 + libc::WTERMSIG(status)) },
        false => unsafe { libc::_exit(libc::WEXITSTATUS(status)) },
    }
}
