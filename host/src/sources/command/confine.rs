//! How a command is confined, layer by layer; each layer stops some attack on its own:
//!
//! - **Namespaces** (user, mount, PID, and network unless allowed): the command sees the
//!   host's files through a mount namespace where `.git`, `.exec-host` and the host's
//!   control files inside the workspace are bound read-only, missing ones included (Landlock
//!   cannot take a folder out of a writable tree; see `command::protect`), `/tmp` is a private size-bounded tmpfs and `/proc` shows only
//!   its own processes. It is the init's child in a PID namespace of its own, so when it
//!   ends, or is killed, every process it started ends too (daemons, double forks and
//!   `setsid` included); with no network namespace it has no network at all.
//! - **Landlock**: writes only in the workspace, `/tmp` and `/dev/null`; reads only the
//!   system's read-only folders, the workspace and its own `/proc`; no TCP bind or connect
//!   (ABI 4) unless the network is allowed; no signals to processes outside (ABI 6).
//!   `no_new_privs` comes with it.
//! - **seccomp**: no `ptrace`, no mount, no new namespaces, no `bpf`, `perf_event_open`,
//!   `io_uring`, keyrings, kernel modules or `process_vm_*`; no sockets but Unix ones unless
//!   the network is allowed; x32 and foreign-architecture system calls refused.
//! - **Resource limits**: CPU time, address space, file size, open files, no core files,
//!   and processes: `RLIMIT_NPROC`, which the kernel does not apply to root, and a pids
//!   cgroup of the command's own (`pids.max`) wherever this host may make one (root, or a
//!   delegated cgroup), which binds root too.
//!
//! Everything is prepared in the host (the Landlock ruleset, the BPF programs, the paths as
//! C strings); the forked child only makes system calls on it: no allocation, no lock.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::protect::{Protection, ProtectionView};

/// Which layers confine a command. All are on for every command the host runs; turning one
/// off exists so that each layer's tests can show what it stops on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Layers {
    pub namespaces: bool,
    pub landlock: bool,
    pub seccomp: bool,
    pub limits: bool,
}

impl Default for Layers {
    fn default() -> Self {
        Layers { namespaces: true, landlock: true, seccomp: true, limits: true }
    }
}

impl Layers {
    /// Only `layer` ("namespaces", "landlock", "seccomp", "limits"), for tests of one layer.
    pub fn only(layer: &str) -> Self {
        Layers {
            namespaces: layer == "namespaces",
            landlock: layer == "landlock",
            seccomp: layer == "seccomp",
            limits: layer == "limits",
        }
    }
}

/// The resource limits of one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandLimits {
    /// Seconds of CPU time (the kernel sends SIGXCPU, then SIGKILL a second later).
    pub cpu_seconds: u64,
    /// Bytes of address space.
    pub address_space: u64,
    /// Bytes one file may grow to.
    pub file_size: u64,
    pub open_files: u64,
    /// Processes (and threads) at once, in the command's user namespace.
    pub processes: u64,
    /// Bytes of its private `/tmp`.
    pub tmp_bytes: u64,
}

/// The limits every command gets unless the settings say otherwise.
pub const DEFAULT_LIMITS: CommandLimits = CommandLimits {
    cpu_seconds: 600,
    address_space: 8 << 30,
    file_size: 1 << 30,
    open_files: 1024,
    processes: 512,
    tmp_bytes: 256 << 20,
};

/// What one command is confined to.
#[derive(Clone, Debug)]
pub struct Confinement {
    /// The folder it may write, and starts in.
    pub workspace: PathBuf,
    /// Places inside the workspace it may not write, bound read-only (a missing one is made
    /// for the while the command runs).
    pub read_only: Vec<PathBuf>,
    /// Places of the host it may never read, even beneath the system folders it reads
    /// (`/etc`, `/opt`): a state key, a token file, a store folder kept there.
    pub private: Vec<PathBuf>,
    /// Whether it may use the network.
    pub network: bool,
    pub limits: CommandLimits,
    pub layers: Layers,
}

impl Confinement {
    /// A command confined to `workspace` by `layers`, with the default limits, no network,
    /// and nothing inside the workspace kept read-only yet.
    pub fn new(workspace: &Path, layers: Layers) -> Self {
        Confinement {
            workspace: workspace.to_path_buf(),
            read_only: Vec::new(),
            private: Vec::new(),
            network: false,
            limits: DEFAULT_LIMITS,
            layers,
        }
    }
}

/// Devices a command may read; `/dev/null` it may also write.
const DEVICES_READ: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// The Landlock ABI the kernel offers, or why there is none.
pub fn landlock_abi() -> Result<i64, String> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only asks
    // the kernel for its ABI version.
    let abi = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    if abi >= 1 {
        return Ok(abi);
    }
    let error = std::io::Error::last_os_error();
    Err(match error.raw_os_error() {
        Some(libc::ENOSYS) => "this kernel has no Landlock (Linux 5.13 or newer, built with CONFIG_SECURITY_LANDLOCK)".into(),
        Some(libc::EOPNOTSUPP) => "Landlock is turned off on this system (add `landlock` to the kernel's `lsm=` list)".into(),
        _ => format!("Landlock cannot be used here ({error})"),
    })
}

/// Why commands cannot be confined on this system, if they cannot: checked once per
/// process, by a child that takes every layer.
pub fn unavailable() -> Option<String> {
    static CHECKED: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| {
            if let Err(why) = landlock_abi() {
                return Some(why);
            }
            let confinement = Confinement::new(&std::env::temp_dir(), Layers::default());
            let prepared = match Prepared::new(&confinement) {
                Ok(prepared) => prepared,
                Err(why) => return Some(why),
            };
            let mut probe = std::process::Command::new("/bin/sh");
            probe.args(["-c", "exit 0"]).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
            probe.stderr(std::process::Stdio::null()).current_dir(&confinement.workspace);
            prepared.apply(&mut probe);
            match probe.status() {
                Ok(status) if status.success() => None,
                Ok(status) => Some(format!(
                    "a confined command could not start here ({status}): the system refuses user, mount or PID namespaces to this user (unprivileged user namespaces turned off, or a container without them)"
                )),
                Err(e) => Some(format!("a confined command could not start here: {e}")),
            }
        })
        .clone()
}

/// A confinement made ready in the host, for the forked child to apply.
pub struct Prepared {
    layers: Layers,
    network: bool,
    limits: CommandLimits,
    /// The Landlock ruleset, made and filled in the host.
    ruleset: Option<OwnedFd>,
    /// The seccomp programs, applied in order (the first answers `clone3` with ENOSYS, so
    /// that C libraries fall back to `clone`, whose flags the second can read).
    filters: Vec<seccompiler::BpfProgram>,
    /// The places inside the workspace bound read-only (with the namespaces).
    protection: Option<Protection>,
    /// What the ruleset lets the command do beneath its own `/proc` and `/tmp`, mounted in
    /// the child: their rules are added there, where they exist.
    proc_access: u64,
    tmp_access: u64,
    tmp_options: CString,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// The command's own pids cgroup, where the system lets this host make one.
    pids: Option<PidsCgroup>,
    /// The workspace, where the command starts once its mounts are made.
    workspace: CString,
    /// When the workspace lies under `/tmp`: the folders from `/tmp` down to it, made in the
    /// private `/tmp` so that the workspace can be bound back where it was.
    tmp_path: Vec<CString>,
    /// Where this process keeps its command line and environment, which the init (a copy
    /// of it, readable as `/proc/1/cmdline`) wipes.
    host_text: HostText,
}

/// A pids cgroup of one command: its `pids.max` bounds the processes of the command as
/// the kernel counts them, also for root, whom `RLIMIT_NPROC` does not bind. Removed when
/// dropped (the command's processes are gone by then).
struct PidsCgroup {
    dir: PathBuf,
    procs: CString,
}

impl PidsCgroup {
    /// A new cgroup under this process's own in the pids hierarchy (cgroup v1, or v2 where
    /// the pids controller is enabled for children), allowing `max` processes; `None`
    /// where none can be made.
    fn new(max: u64) -> Option<Self> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let mut bases = Vec::new();
        for line in own.lines() {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            let path = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "pids") {
                bases.push(Path::new("/sys/fs/cgroup/pids").join(path));
            } else if controllers.is_empty() {
                bases.push(Path::new("/sys/fs/cgroup").join(path));
            }
        }
        let name = format!("exec-host-{}-{:x}", std::process::id(), rand::random::<u64>());
        bases.into_iter().find_map(|base| {
            let dir = base.join(&name);
            std::fs::create_dir(&dir).ok()?;
            let made = PidsCgroup { procs: CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).ok()?, dir };
            std::fs::write(made.dir.join("pids.max"), max.to_string()).ok()?;
            Some(made)
        })
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        for _ in 0..500 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        tracing::debug!("the command's cgroup {} could not be removed", self.dir.display());
    }
}

impl Prepared {
    pub fn new(confinement: &Confinement) -> Result<Self, String> {
        let layers = confinement.layers;
        // Where the workspace really is: a link to it could lead under what becomes the
        // command's private `/tmp`.
        let workspace = std::fs::canonicalize(&confinement.workspace)
            .map_err(|e| format!("the workspace {} cannot be found ({e})", confinement.workspace.display()))?;
        let ruleset = match layers.landlock {
            true => Some(landlock_ruleset(confinement)?),
            false => None,
        };
        let (proc_access, tmp_access) = {
            use landlock::{ABI, Access, AccessFs};
            (AccessFs::from_read(ABI::V6).bits(), AccessFs::from_all(ABI::V6).bits())
        };
        let filters = match layers.seccomp {
            true => seccomp_filters(confinement.network)?,
            false => Vec::new(),
        };
        let protection = match layers.namespaces {
            true => Some(Protection::new(&confinement.workspace, &confinement.read_only)?),
            false => None,
        };
        // SAFETY: getuid(2) and getgid(2) have no preconditions and cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let pids = layers.limits.then(|| PidsCgroup::new(confinement.limits.processes)).flatten();
        if layers.limits {
            processes_bounded(uid, pids.is_some())?;
        }
        Ok(Prepared {
            layers,
            network: confinement.network,
            limits: confinement.limits,
            ruleset,
            filters,
            protection,
            proc_access,
            tmp_access,
            tmp_options: CString::new(format!("size={},mode=1777", confinement.limits.tmp_bytes)).unwrap_or_default(),
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            pids,
            workspace: path_c_string(&workspace)?,
            tmp_path: match layers.namespaces {
                true => folders_under_tmp(&workspace)?,
                false => Vec::new(),
            },
            host_text: HostText::of_this_process(),
        })
    }

    /// Makes `command` start confined: in its own session, and with every layer. With the
    /// namespaces, the process the host waits on is a small keeper outside the PID
    /// namespace (it ignores SIGTERM, so that the command's init gets it and passes it on),
    /// whose exit is the command's.
    pub fn apply(&self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let this = self.child_view();
        // SAFETY: the closure runs in the forked child before exec and only makes system
        // calls on data prepared beforehand: no allocation, no lock.
        unsafe {
            command.pre_exec(move || this.enter());
        }
    }

    fn child_view(&self) -> ChildView {
        ChildView {
            layers: self.layers,
            network: self.network,
            limits: self.limits,
            ruleset: self.ruleset.as_ref().map(|fd| fd.as_raw_fd()),
            // seccompiler's `sock_filter` is the kernel's, field for field.
            filters: self.filters.iter().map(|filter| (filter.len(), filter.as_ptr().cast::<libc::sock_filter>())).collect(),
            protection: self.protection.as_ref().map(Protection::child_view),
            proc_access: self.proc_access,
            tmp_access: self.tmp_access,
            tmp_options: self.tmp_options.as_ptr(),
            uid_map: (self.uid_map.as_ptr(), self.uid_map.len()),
            gid_map: (self.gid_map.as_ptr(), self.gid_map.len()),
            pids: self.pids.as_ref().map(|pids| pids.procs.as_ptr()),
            workspace: self.workspace.as_ptr(),
            tmp_path: self.tmp_path.iter().map(|folder| folder.as_ptr()).collect(),
            host_text: self.host_text,
        }
    }
}

/// Whether a command's processes are bounded: by its pids cgroup, or else by
/// `RLIMIT_NPROC`, which the kernel does not apply to root (uid 0 stays root in the
/// command's user namespace). Root without a cgroup runs no command.
fn processes_bounded(uid: libc::uid_t, pids_cgroup: bool) -> Result<(), String> {
    match uid == 0 && !pids_cgroup {
        true => Err("the host runs as root and could not make a pids cgroup for the command, so nothing would bound the processes it starts (the kernel does not apply RLIMIT_NPROC to root): run the host as another user, or give it a cgroup with the pids controller".into()),
        false => Ok(()),
    }
}

/// The pointers the child reads: the [`Prepared`] it came from outlives the spawn.
struct ChildView {
    layers: Layers,
    network: bool,
    limits: CommandLimits,
    ruleset: Option<i32>,
    filters: Vec<(usize, *const libc::sock_filter)>,
    protection: Option<ProtectionView>,
    proc_access: u64,
    tmp_access: u64,
    tmp_options: *const libc::c_char,
    uid_map: (*const u8, usize),
    gid_map: (*const u8, usize),
    /// The `cgroup.procs` of its pids cgroup.
    pids: Option<*const libc::c_char>,
    workspace: *const libc::c_char,
    tmp_path: Vec<*const libc::c_char>,
    host_text: HostText,
}

// SAFETY: the pointers are into a `Prepared` that the spawning thread keeps alive until the
// child has exec'd; the closure only runs in the child.
unsafe impl Send for ChildView {}
unsafe impl Sync for ChildView {}

fn os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

impl ChildView {
    /// In the forked child: every layer, in the order each needs (mounts before Landlock
    /// and seccomp forbid them).
    fn enter(&self) -> std::io::Result<()> {
        // SAFETY (this function and those it calls): system calls on this process with
        // buffers that outlive them.
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
            self.enter_namespaces()?;
        }
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
        // own parent (Landlock checks paths, not open descriptors) and its own. Last, after
        // every fork here: a fork handler of the engine's gives each child a descriptor of
        // its own open across exec (its `/proc/self/pagemap`, put in the old one's place).
        crate::sources::children::close_on_exec_from(3);
        Ok(())
    }

    /// Unshares the namespaces, forks the keeper off, and makes the PID namespace's init,
    /// which forks the process that returns to be exec'd, sets up the mounts in it, and
    /// waits for it.
    fn enter_namespaces(&self) -> std::io::Result<()> {
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
        if !self.network {
            flags |= libc::CLONE_NEWNET;
        }
        if unsafe { libc::unshare(flags) } != 0 {
            return Err(os_error());
        }
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", unsafe { std::slice::from_raw_parts(self.uid_map.0, self.uid_map.1) })?;
        write_file(c"/proc/self/gid_map", unsafe { std::slice::from_raw_parts(self.gid_map.0, self.gid_map.1) })?;
        let init = unsafe { libc::fork() };
        if init < 0 {
            return Err(os_error());
        }
        if init > 0 {
            // The keeper: SIGTERM is for the command (its init passes it on), not for it.
            unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            keep(init, false);
        }
        // The init (pid 1): it dies with the keeper, and every process of the namespace with it.
        let keeper = unsafe { libc::getppid() };
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        if unsafe { libc::getppid() } != keeper {
            unsafe { libc::_exit(137) };
        }
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
        let command = unsafe { libc::fork() };
        if command < 0 {
            return Err(os_error());
        }
        if command > 0 {
            init_forwards_signals(command);
            keep(command, true);
        }
        // The command: a process group of its own inside the namespace, for SIGTERM.
        unsafe { libc::setpgid(0, 0) };
        Ok(())
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

/// The kernel's `landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds to `ruleset` the rule that `access` is allowed beneath `place`.
fn add_landlock_rule(ruleset: i32, place: &std::ffi::CStr, access: u64) -> std::io::Result<()> {
    const LANDLOCK_RULE_PATH_BENEATH: u32 = 1;
    let fd = unsafe { libc::open(place.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY) };
    if fd < 0 {
        return Err(os_error());
    }
    let attr = PathBeneathAttr { allowed_access: access, parent_fd: fd };
    let added = unsafe {
        libc::syscall(libc::SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr as *const PathBeneathAttr, 0u32)
    };
    unsafe { libc::close(fd) };
    if added != 0 {
        return Err(os_error());
    }
    Ok(())
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
struct HostText {
    command_line: (usize, usize),
    environment: (usize, usize),
}

impl HostText {
    fn of_this_process() -> Self {
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

/// `path` as a C string.
fn path_c_string(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("{} holds a NUL byte", path.display()))
}

/// The folders from `/tmp` down to `workspace` (itself last), when it lies under `/tmp`.
fn folders_under_tmp(workspace: &Path) -> Result<Vec<CString>, String> {
    let Ok(below) = workspace.strip_prefix("/tmp") else { return Ok(Vec::new()) };
    let mut folder = PathBuf::from("/tmp");
    let mut folders = Vec::new();
    for part in below.components() {
        folder.push(part);
        folders.push(path_c_string(&folder)?);
    }
    Ok(folders)
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

/// Waits for `child` and exits as it did; never returns. The keeper and the init hold no
/// descriptor: not the command's pipes (their ends must close with the command), nor the
/// one through which the host learns that the command started (the host's spawn waits
/// until every copy of it is closed). The init (`reap_all`) reaps every orphan of its
/// namespace on the way.
fn keep(child: libc::pid_t, reap_all: bool) -> ! {
    if unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) } != 0 {
        for fd in 0..65_536 {
            unsafe { libc::close(fd) };
        }
    }
    let mut status = 0;
    loop {
        let waited = unsafe { libc::waitpid(if reap_all { -1 } else { child }, &mut status, 0) };
        if waited == child {
            break;
        }
        if waited < 0 && os_error().raw_os_error() != Some(libc::EINTR) {
            unsafe { libc::_exit(127) };
        }
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            let mut unblocked: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut unblocked);
            libc::sigaddset(&mut unblocked, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &unblocked, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
        }
        unsafe { libc::_exit(128 + signal) };
    }
    unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
}

/// The Landlock ruleset of `confinement`, filled with its rules.
fn landlock_ruleset(confinement: &Confinement) -> Result<OwnedFd, String> {
    use landlock::{ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules};
    let abi = ABI::V6;
    let fail = |e: landlock::RulesetError| format!("the Landlock ruleset could not be made: {e}");
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(abi)).map_err(fail)?;
    if !confinement.network {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(fail)?;
    }
    let ruleset = ruleset.scope(Scope::from_all(abi)).map_err(fail)?.create().map_err(fail)?;
    let read = AccessFs::from_read(abi);
    let existing = |paths: &[&str]| -> Vec<PathBuf> { paths.iter().map(PathBuf::from).filter(|path| path.exists()).collect() };
    let ruleset = ruleset
        .add_rules(path_beneath_rules(super::readable::system_folders(&confinement.private), read))
        .map_err(fail)?
        .add_rules(path_beneath_rules(existing(DEVICES_READ), AccessFs::from_file(abi) & read))
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_file(abi)))
        .map_err(fail)?
        // The real `/tmp` is never granted: a workspace under it would reach its neighbours
        // through `..`. The command's private `/tmp` gets its rule in the child, once mounted.
        .add_rules(path_beneath_rules([confinement.workspace.as_path()], AccessFs::from_all(abi)))
        .map_err(fail)?;
    Option::<OwnedFd>::from(ruleset).ok_or_else(|| "this kernel enforces no Landlock ruleset".to_string())
}

/// System calls a command may not make.
const DENIED_SYSCALLS: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_userfaultfd,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_personality,
];

/// Namespace flags `clone` may not carry.
const NEW_NAMESPACES: &[i32] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// The seccomp programs: `clone3` answered ENOSYS (its flags sit in memory a filter cannot
/// read; C libraries then use `clone`), then the denied calls answered EPERM.
fn seccomp_filters(network: bool) -> Result<Vec<seccompiler::BpfProgram>, String> {
    use seccompiler::{SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch};
    use std::collections::BTreeMap;
    let fail = |e: seccompiler::BackendError| format!("the seccomp filter could not be made: {e}");
    let arch = TargetArch::x86_64;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(fail)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED_SYSCALLS.iter().map(|&call| (call, Vec::new())).collect();
    let flag_rule = |flag: i32| -> Result<SeccompRule, seccompiler::BackendError> {
        let flag = flag as u64;
        SeccompRule::new(vec![SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(flag), flag)?])
    };
    let clone_rules = NEW_NAMESPACES.iter().map(|&flag| flag_rule(flag)).collect::<Result<Vec<_>, _>>().map_err(fail)?;
    rules.insert(libc::SYS_clone, clone_rules);
    if !network {
        let not_unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64).map_err(fail)?;
        rules.insert(libc::SYS_socket, vec![SeccompRule::new(vec![not_unix]).map_err(fail)?]);
    }
    let denied = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch).map_err(fail)?;
    let mut programs = Vec::new();
    for filter in [clone3, denied] {
        let program: seccompiler::BpfProgram = filter.try_into().map_err(fail)?;
        programs.push(program);
    }
    // Before them, a guard: x32 system calls (numbers from 0x40000000, under the same
    // architecture) would otherwise pass a filter written for x86_64 numbers.
    programs.insert(0, x32_guard());
    Ok(programs)
}

/// A program that kills a process making an x32 system call, or one of another
/// architecture.
fn x32_guard() -> seccompiler::BpfProgram {
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let statement = |code: u32, k: u32| seccompiler::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| seccompiler::sock_filter { code: code as u16, jt, jf, k };
    let (ld_w_abs, jeq_k, jge_k, ret_k) = (
        libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
        libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
        libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
        libc::BPF_RET | libc::BPF_K,
    );
    vec![
        // seccomp_data: nr at 0, arch at 4.
        statement(ld_w_abs, 4),
        jump(jeq_k, AUDIT_ARCH_X86_64, 1, 0),
        statement(ret_k, libc::SECCOMP_RET_KILL_PROCESS),
        statement(ld_w_abs, 0),
        jump(jge_k, X32_SYSCALL_BIT, 0, 1),
        statement(ret_k, libc::SECCOMP_RET_KILL_PROCESS),
        statement(ret_k, libc::SECCOMP_RET_ALLOW),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_runs_a_command_only_where_a_cgroup_bounds_its_processes() {
        assert!(processes_bounded(0, false).unwrap_err().contains("runs as root"));
        assert!(processes_bounded(0, true).is_ok());
        assert!(processes_bounded(1000, false).is_ok(), "RLIMIT_NPROC binds other users");
    }
}
