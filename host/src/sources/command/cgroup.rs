//! The pids cgroup of one command: the bound on its processes that also binds root.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::error::CommandError;

/// A pids cgroup of one command: its `pids.max` bounds the processes of the command as
/// the kernel counts them, also for root, whom `RLIMIT_NPROC` does not bind. Removed when
/// dropped (the command's processes are gone by then).
pub(super) struct PidsCgroup {
    dir: PathBuf,
    /// The file the command's first process writes `0` to, to enter the cgroup.
    pub(super) procs: CString,
}

impl PidsCgroup {
    /// A new cgroup under this process's own in the pids hierarchy (cgroup v1, or v2 where
    /// the pids controller is enabled for children), allowing `max` processes; `None`
    /// where none can be made.
    pub(super) fn new(max: u64) -> Option<Self> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        // With each hierarchy, the file through which a process enters: in cgroup v1, `tasks`,
        // which moves the writing thread alone (the command's first process has no other)
        // and so skips the lock on every process's thread group that `cgroup.procs` takes,
        // whose wait for an RCU grace period cost about 8 ms a command when commands were
        // not back to back (a kernel that elides it for a single thread: 6.x); in v2,
        // `cgroup.procs`, the only one a domain cgroup has.
        let mut bases = Vec::new();
        for line in own.lines() {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            let path = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "pids") {
                bases.push((Path::new("/sys/fs/cgroup/pids").join(path), "tasks"));
            } else if controllers.is_empty() {
                bases.push((Path::new("/sys/fs/cgroup").join(path), "cgroup.procs"));
            }
        }
        let name = format!("exec-host-{}-{:x}", std::process::id(), rand::random::<u64>());
        bases.into_iter().find_map(|(base, entry)| {
            let dir = base.join(&name);
            std::fs::create_dir(&dir).ok()?;
            let made = PidsCgroup { procs: CString::new(dir.join(entry).as_os_str().as_bytes()).ok()?, dir };
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

/// Whether a command's processes are bounded: by its pids cgroup, or else by
/// `RLIMIT_NPROC`, which the kernel does not apply to root (uid 0 stays root in the
/// command's user namespace). Root without a cgroup runs no command.
pub(super) fn processes_bounded(uid: libc::uid_t, pids_cgroup: bool) -> Result<(), CommandError> {
    match uid == 0 && !pids_cgroup {
        true => Err(CommandError::RootWithoutCgroup),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_runs_a_command_only_where_a_cgroup_bounds_its_processes() {
        assert!(matches!(processes_bounded(0, false), Err(CommandError::RootWithoutCgroup)));
        assert!(processes_bounded(0, true).is_ok());
        assert!(processes_bounded(1000, false).is_ok(), "RLIMIT_NPROC binds other users");
    }
}
