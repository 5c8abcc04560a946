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
//! C strings); the cloned child only makes system calls on it: no allocation, no lock.
//!
//! How a command starts (`spawn`): the host clones one process straight into the new
//! namespaces (it becomes their init), which mounts the command's view and starts the
//! command sharing its memory until exec (`CLONE_VM | CLONE_VFORK`), so the host's address
//! space is copied once, by the first clone. The init moves itself into the pids cgroup
//! through `tasks` in cgroup v1 (see `cgroup`). Without the namespaces the clone is the
//! command.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::cgroup::{PidsCgroup, processes_bounded};
use super::child::{ChildFds, ChildView, ExecView, HostText};
use super::error::CommandError;
use super::landlock_rules::{landlock_abi, landlock_ruleset};
use super::protect::Protection;
use super::seccomp::seccomp_filters;
use super::spawn::{self, Started};

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

/// Why commands cannot be confined on this system, if they cannot: checked once per
/// process, by a child that takes every layer.
pub fn unavailable() -> Option<&'static CommandError> {
    static CHECKED: std::sync::OnceLock<Option<CommandError>> = std::sync::OnceLock::new();
    CHECKED.get_or_init(|| landlock_abi().err().or_else(|| probe(Layers::default()).err())).as_ref()
}

/// What this system offers each layer of the confinement, each checked on its own by a
/// probe command (as [`unavailable`] checks them together): what `exec-host doctor` reports.
#[derive(Debug)]
#[non_exhaustive]
pub struct LayerReport {
    /// The Landlock ABI the kernel offers (4 and up bound TCP, 6 and up signals).
    pub landlock: Result<i64, CommandError>,
    /// A command in its own user, mount and PID namespaces.
    pub namespaces: Result<(), CommandError>,
    /// A command under the seccomp filters.
    pub seccomp: Result<(), CommandError>,
    /// Whether this host can make a command a pids cgroup of its own (without one, only
    /// `RLIMIT_NPROC` bounds its processes, which binds no root).
    pub pids_cgroup: bool,
    /// Every layer together, as each command takes them: `Ok` when `Bash` can run here.
    pub all: Result<(), &'static CommandError>,
}

/// Checks each layer on this system (a few probe commands, milliseconds each).
pub fn layer_report() -> LayerReport {
    LayerReport {
        landlock: landlock_abi(),
        namespaces: probe(Layers::only("namespaces")),
        seccomp: probe(Layers::only("seccomp")),
        pids_cgroup: super::cgroup::PidsCgroup::new(1).is_some(),
        all: unavailable().map_or(Ok(()), Err),
    }
}

/// Runs `sh -c 'exit 0'` confined by `layers` in the temporary folder: `Ok` when it ran and
/// succeeded.
fn probe(layers: Layers) -> Result<(), CommandError> {
    let confinement = Confinement::new(&std::env::temp_dir(), layers);
    let mut prepared = Prepared::new(&confinement)?;
    let probe = ExecLine::new("/bin/sh", ["-c", "exit 0"].map(OsStr::new), []).map_err(CommandError::Spawn)?;
    let output = std::fs::OpenOptions::new().write(true).open("/dev/null").map_err(CommandError::Spawn)?;
    let status = prepared.spawn(probe, OwnedFd::from(output))?.blocking_wait().map_err(CommandError::Spawn)?;
    match status.success() {
        true => Ok(()),
        false => Err(CommandError::NamespacesRefused(status)),
    }
}

/// A confinement made ready in the host, for the cloned child to apply.
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
    /// The stack the command runs on between its start and its exec.
    command_stack: Vec<u8>,
}

/// Bytes of the stack the command runs on between its start from the init and its exec:
/// a few system calls deep, with room to spare.
const COMMAND_STACK_BYTES: usize = 256 * 1024;

/// A command's program, arguments and environment as C strings, with the null-ended lists
/// of pointers `execve` takes.
pub(super) struct ExecLine {
    program: CString,
    _strings: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the pointers are into the strings this value owns, which never change.
unsafe impl Send for ExecLine {}
unsafe impl Sync for ExecLine {}

impl ExecLine {
    /// `program` (a path) with `args` after it, and exactly `env` as its environment; an
    /// error (as the standard library's spawn gives it) when one of them holds a NUL byte,
    /// which no C string can carry.
    pub(super) fn new<'a>(
        program: &str,
        args: impl IntoIterator<Item = &'a OsStr>,
        env: impl IntoIterator<Item = (&'a OsStr, &'a OsStr)>,
    ) -> std::io::Result<Self> {
        let c_string = |bytes: &[u8]| {
            CString::new(bytes).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the command holds a NUL byte"))
        };
        let program = c_string(program.as_bytes())?;
        let mut strings = vec![program.clone()];
        for arg in args {
            strings.push(c_string(arg.as_bytes())?);
        }
        let arguments = strings.len();
        for (name, value) in env {
            strings.push(c_string(&[name.as_bytes(), b"=", value.as_bytes()].concat())?);
        }
        let pointers = |list: &[CString]| list.iter().map(|s| s.as_ptr()).chain([std::ptr::null()]).collect::<Vec<_>>();
        let (argv, envp) = (pointers(&strings[..arguments]), pointers(&strings[arguments..]));
        Ok(ExecLine { program, _strings: strings, argv, envp })
    }
}

impl Prepared {
    pub fn new(confinement: &Confinement) -> Result<Self, CommandError> {
        let layers = confinement.layers;
        // Where the workspace really is: a link to it could lead under what becomes the
        // command's private `/tmp`.
        let workspace = std::fs::canonicalize(&confinement.workspace)
            .map_err(|e| CommandError::WorkspaceMissing(confinement.workspace.clone(), e))?;
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
            command_stack: match layers.namespaces {
                true => vec![0; COMMAND_STACK_BYTES],
                false => Vec::new(),
            },
        })
    }

    /// Starts `line` confined: the host clones a process straight into the command's
    /// namespaces (with that layer on), which becomes their init and starts the command;
    /// without them, the clone is the command. Either way it is a session of its own, whose
    /// leader the host waits on. Returns once the command has exec'd, or with the reason it
    /// could not, as the child reported it.
    pub(super) fn spawn(&mut self, line: ExecLine, output: OwnedFd) -> Result<Started, CommandError> {
        let stdin = std::fs::File::open("/dev/null").map_err(CommandError::Spawn)?;
        let (mut report, report_end) = std::io::pipe().map_err(CommandError::Pipe)?;
        let status = match self.layers.namespaces {
            true => Some(std::io::pipe().map_err(CommandError::Pipe)?),
            false => None,
        };
        let view = self.child_view(&line, status.as_ref().map_or(-1, |(_, end)| end.as_raw_fd()));
        let fds = ChildFds { stdin: stdin.as_raw_fd(), output: output.as_raw_fd(), report: report_end.as_raw_fd() };
        let mut flags = 0;
        if self.layers.namespaces {
            flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
            if !self.network {
                flags |= libc::CLONE_NEWNET;
            }
        }
        let (pid, pidfd) = match spawn::clone_process(flags as u64) {
            Ok(spawn::Cloned::Child) => view.start(fds),
            Ok(spawn::Cloned::Parent(pid, pidfd)) => (pid, pidfd),
            Err(e) => return Err(CommandError::Spawn(e)),
        };
        // The child's copies are the only ones left: the report ends when it has exec'd.
        drop((stdin, output, report_end));
        let status = status.map(|(reader, end)| {
            drop(end);
            OwnedFd::from(reader)
        });
        let mut started = Started::new(pid, pidfd, status);
        let mut code = [0u8; 4];
        let mut read = 0;
        while read < code.len() {
            match std::io::Read::read(&mut report, &mut code[read..]) {
                Ok(0) => break,
                Ok(n) => read += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(CommandError::Spawn(e)),
            }
        }
        match read {
            0 => Ok(started),
            _ => {
                started.blocking_wait().map_err(CommandError::Spawn)?;
                Err(CommandError::Spawn(std::io::Error::from_raw_os_error(i32::from_ne_bytes(code))))
            }
        }
    }

    /// What the child reads: pointers into this value and into `exec`, both of which
    /// outlive the clone.
    fn child_view(&mut self, exec: &ExecLine, status_fd: libc::c_int) -> ChildView {
        ChildView {
            layers: self.layers,
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
            exec: ExecView { program: exec.program.as_ptr(), argv: exec.argv.as_ptr(), envp: exec.envp.as_ptr() },
            command_stack: (self.command_stack.as_mut_ptr(), self.command_stack.len()),
            status_fd,
        }
    }
}

/// `path` as a C string.
pub(super) fn path_c_string(path: &Path) -> Result<CString, CommandError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| CommandError::NulInPath(path.to_path_buf()))
}

/// The folders from `/tmp` down to `workspace` (itself last), when it lies under `/tmp`.
fn folders_under_tmp(workspace: &Path) -> Result<Vec<CString>, CommandError> {
    let Ok(below) = workspace.strip_prefix("/tmp") else { return Ok(Vec::new()) };
    let mut folder = PathBuf::from("/tmp");
    let mut folders = Vec::new();
    for part in below.components() {
        folder.push(part);
        folders.push(path_c_string(&folder)?);
    }
    Ok(folders)
}
