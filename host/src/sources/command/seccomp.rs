//! The seccomp layer: the system calls a command may not make, as BPF programs made in the
//! host.

use super::error::CommandError;

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
/// read; C libraries then use `clone`), then the denied calls answered EPERM. They depend
/// on `network` alone, so each of the two is built once per process.
pub(super) fn seccomp_filters(network: bool) -> Result<Vec<seccompiler::BpfProgram>, CommandError> {
    static BUILT: [std::sync::OnceLock<Vec<seccompiler::BpfProgram>>; 2] = [const { std::sync::OnceLock::new() }; 2];
    let slot = &BUILT[usize::from(network)];
    if let Some(programs) = slot.get() {
        return Ok(programs.clone());
    }
    let programs = build_filters(network)?;
    Ok(slot.get_or_init(|| programs).clone())
}

fn build_filters(network: bool) -> Result<Vec<seccompiler::BpfProgram>, CommandError> {
    use seccompiler::{SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch};
    use std::collections::BTreeMap;
    let fail = |e: seccompiler::BackendError| CommandError::Seccomp(Box::new(e));
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
