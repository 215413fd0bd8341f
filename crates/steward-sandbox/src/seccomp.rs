//! The seccomp filter: system calls a sandboxed program never needs and that would let it
//! undo or get around the rest of the sandbox. Compiled once per process in the parent (with
//! `seccompiler`); the child only hands the ready BPF program to the kernel, after
//! `no_new_privs` and Landlock, right before `exec`.
//!
//! Source of the mechanism: the kernel's seccomp filter documentation
//! (<https://docs.kernel.org/userspace-api/seccomp_filter.html>).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::unavailable::SeccompUnavailable;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// The system calls the filter refuses with `EPERM`, and why. `socket` is refused only for
/// the `AF_UNIX` domain and only unless the request allows Unix sockets; `clone` only with a
/// namespace flag; `clone3` (whose flags sit behind a pointer a filter cannot read) fails with
/// `ENOSYS` instead, so the C library falls back to `clone`.
pub const SECCOMP_DENIED: &[(&str, &str)] = &[
    (
        "socket(AF_UNIX)",
        "reaching a Unix socket by path (a Docker or SSH agent socket, a database) gets around the network denial",
    ),
    (
        "io_uring_setup, io_uring_enter, io_uring_register",
        "io_uring performs file and socket operations that the seccomp filter never sees",
    ),
    ("ptrace, process_vm_readv, process_vm_writev", "reading or steering another process's memory"),
    ("bpf", "loading kernel programs"),
    ("perf_event_open", "kernel and hardware observation, a long list of past privilege escalations"),
    ("keyctl, add_key, request_key", "the kernel keyring holds credentials of the user's other sessions"),
    (
        "mount, umount2, pivot_root, fsopen, fsconfig, fsmount, fspick, move_mount, open_tree, mount_setattr",
        "unmounting a mask would reveal the secret file beneath it",
    ),
    (
        "unshare, setns, clone with a namespace flag, clone3",
        "a new user namespace gives back the capabilities needed to change mounts",
    ),
    ("name_to_handle_at, open_by_handle_at", "opening a file by handle bypasses the paths the masks cover"),
    ("userfaultfd", "stalls kernel memory accesses, a building block of kernel exploits"),
    (
        "init_module, finit_module, delete_module, kexec_load, kexec_file_load, reboot, swapon, swapoff, acct",
        "changing the running kernel (possible when Steward runs as root)",
    ),
];

/// Names of the system calls refused unconditionally.
const ALWAYS_DENIED: &[&str] = &[
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "mount",
    "umount2",
    "pivot_root",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "unshare",
    "setns",
    "name_to_handle_at",
    "open_by_handle_at",
    "userfaultfd",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
];

/// Namespace flags refused in `clone`'s flags (its first argument).
const CLONE_NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWCGROUP,
];

/// The compiled filters for one request kind: refusals with `EPERM`, then `clone3` with
/// `ENOSYS`. Both are installed.
#[derive(Debug)]
pub(crate) struct Filters {
    pub(crate) deny: BpfProgram,
    pub(crate) clone3: BpfProgram,
}

/// The filters for `unix_sockets` (whether `socket(AF_UNIX, …)` is allowed), compiled once
/// per process. Errors: the architecture is not supported or the kernel has no seccomp.
pub(crate) fn filters(unix_sockets: bool) -> Result<&'static Filters, SeccompUnavailable> {
    static WITH_UNIX: OnceLock<Result<Filters, SeccompUnavailable>> = OnceLock::new();
    static WITHOUT_UNIX: OnceLock<Result<Filters, SeccompUnavailable>> = OnceLock::new();
    let cell = if unix_sockets { &WITH_UNIX } else { &WITHOUT_UNIX };
    cell.get_or_init(|| {
        available()?;
        compile(unix_sockets)
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Whether the kernel has seccomp filters (`prctl(PR_GET_SECCOMP)` answers).
fn available() -> Result<(), SeccompUnavailable> {
    // SAFETY: plain prctl query without pointers.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if mode < 0 {
        return Err(SeccompUnavailable::NoSeccomp(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL),
        ));
    }
    Ok(())
}

fn target_arch() -> Result<TargetArch, SeccompUnavailable> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(TargetArch::x86_64),
        "aarch64" => Ok(TargetArch::aarch64),
        other => Err(SeccompUnavailable::Architecture(other)),
    }
}

fn compile(unix_sockets: bool) -> Result<Filters, SeccompUnavailable> {
    let arch = target_arch()?;
    let err = |e: &dyn std::fmt::Display| SeccompUnavailable::Filter(e.to_string());
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for name in ALWAYS_DENIED {
        if let Some(nr) = syscall_number(name) {
            rules.insert(nr, Vec::new());
        }
    }
    let flag_rule = |flag: libc::c_int| -> Result<SeccompRule, SeccompUnavailable> {
        let flag = u64::from(flag.unsigned_abs());
        let condition = SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(flag), flag)
            .map_err(|e| err(&e))?;
        SeccompRule::new(vec![condition]).map_err(|e| err(&e))
    };
    let clone_rules = CLONE_NAMESPACE_FLAGS.iter().map(|&f| flag_rule(f)).collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    if !unix_sockets {
        let af_unix = u64::from(libc::AF_UNIX.unsigned_abs());
        let condition =
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, af_unix).map_err(|e| err(&e))?;
        rules.insert(libc::SYS_socket, vec![SeccompRule::new(vec![condition]).map_err(|e| err(&e))?]);
    }
    let eperm = SeccompAction::Errno(libc::EPERM.unsigned_abs());
    let deny = SeccompFilter::new(rules, SeccompAction::Allow, eperm, arch).map_err(|e| err(&e))?;
    let mut clone3_rules = BTreeMap::new();
    clone3_rules.insert(libc::SYS_clone3, Vec::new());
    let enosys = SeccompAction::Errno(libc::ENOSYS.unsigned_abs());
    let clone3 = SeccompFilter::new(clone3_rules, SeccompAction::Allow, enosys, arch).map_err(|e| err(&e))?;
    Ok(Filters {
        deny: BpfProgram::try_from(deny).map_err(|e| err(&e))?,
        clone3: BpfProgram::try_from(clone3).map_err(|e| err(&e))?,
    })
}

/// The number of a system call of [`ALWAYS_DENIED`] on this architecture; `None` for a name
/// not in that list.
fn syscall_number(name: &str) -> Option<i64> {
    let nr = match name {
        "io_uring_setup" => libc::SYS_io_uring_setup,
        "io_uring_enter" => libc::SYS_io_uring_enter,
        "io_uring_register" => libc::SYS_io_uring_register,
        "ptrace" => libc::SYS_ptrace,
        "process_vm_readv" => libc::SYS_process_vm_readv,
        "process_vm_writev" => libc::SYS_process_vm_writev,
        "bpf" => libc::SYS_bpf,
        "perf_event_open" => libc::SYS_perf_event_open,
        "keyctl" => libc::SYS_keyctl,
        "add_key" => libc::SYS_add_key,
        "request_key" => libc::SYS_request_key,
        "mount" => libc::SYS_mount,
        "umount2" => libc::SYS_umount2,
        "pivot_root" => libc::SYS_pivot_root,
        "fsopen" => libc::SYS_fsopen,
        "fsconfig" => libc::SYS_fsconfig,
        "fsmount" => libc::SYS_fsmount,
        "fspick" => libc::SYS_fspick,
        "move_mount" => libc::SYS_move_mount,
        "open_tree" => libc::SYS_open_tree,
        "mount_setattr" => libc::SYS_mount_setattr,
        "unshare" => libc::SYS_unshare,
        "setns" => libc::SYS_setns,
        "name_to_handle_at" => libc::SYS_name_to_handle_at,
        "open_by_handle_at" => libc::SYS_open_by_handle_at,
        "userfaultfd" => libc::SYS_userfaultfd,
        "init_module" => libc::SYS_init_module,
        "finit_module" => libc::SYS_finit_module,
        "delete_module" => libc::SYS_delete_module,
        "kexec_load" => libc::SYS_kexec_load,
        "kexec_file_load" => libc::SYS_kexec_file_load,
        "reboot" => libc::SYS_reboot,
        "swapon" => libc::SYS_swapon,
        "swapoff" => libc::SYS_swapoff,
        "acct" => libc::SYS_acct,
        _ => return None,
    };
    Some(nr)
}

/// Installs `program` on the calling thread (async-signal-safe: one system call on memory
/// prepared before the fork). Needs `no_new_privs` or `CAP_SYS_ADMIN`.
pub(crate) fn install(program: &BpfProgram) -> std::io::Result<()> {
    let len = u16::try_from(program.len()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let prog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut().cast::<libc::sock_filter>() };
    // SAFETY: `prog` points at `program`, which outlives the call; the kernel copies it.
    let rc = unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, std::ptr::from_ref(&prog)) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
