//! The Landlock layer: the ruleset made in the host, and the rules the child adds for the
//! places that exist only once its mounts are made.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use super::confine::Confinement;
use super::error::CommandError;

/// Devices a command may read; `/dev/null` it may also write.
const DEVICES_READ: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// The Landlock ABI the kernel offers, or why there is none.
pub fn landlock_abi() -> Result<i64, CommandError> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only asks
    // the kernel for its ABI version.
    let abi = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    if abi >= 1 {
        return Ok(abi);
    }
    let error = std::io::Error::last_os_error();
    Err(match error.raw_os_error() {
        Some(libc::ENOSYS) => CommandError::NoLandlock,
        Some(libc::EOPNOTSUPP) => CommandError::LandlockOff,
        _ => CommandError::LandlockUnusable(error),
    })
}

/// The Landlock ruleset of `confinement`, filled with its rules.
pub(super) fn landlock_ruleset(confinement: &Confinement) -> Result<OwnedFd, CommandError> {
    use landlock::{ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules};
    let abi = ABI::V6;
    let fail = |e: landlock::RulesetError| CommandError::Ruleset(Box::new(e));
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
    Option::<OwnedFd>::from(ruleset).ok_or(CommandError::RulesetNotEnforced)
}

/// The kernel's `landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds to `ruleset` the rule that `access` is allowed beneath `place`.
pub(super) fn add_landlock_rule(ruleset: i32, place: &std::ffi::CStr, access: u64) -> std::io::Result<()> {
    const LANDLOCK_RULE_PATH_BENEATH: u32 = 1;
    let fd = unsafe { libc::open(place.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let attr = PathBeneathAttr { allowed_access: access, parent_fd: fd };
    let added = unsafe {
        libc::syscall(libc::SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr as *const PathBeneathAttr, 0u32)
    };
    unsafe { libc::close(fd) };
    if added != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
