//! Why a kernel facility the sandbox relies on is unavailable on this machine. The probes
//! that find out run once per process and keep their answer, so these errors are `Clone`;
//! the plan turns them into the `reason` of [`crate::SandboxError::CannotEnforce`].
#![forbid(unsafe_code)]

use std::io;

/// Why a probe process (a fork that tries one kernel call and exits) did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProbeError {
    /// `fork`, `waitpid` or the probed call failed with this errno.
    #[error("{}", io::Error::from_raw_os_error(*.0))]
    Os(i32),
    /// The probe process died from a signal.
    #[error("the probe process was killed")]
    Killed,
    /// The probe's PID 1 (the grandchild that mounts `/proc`) died from a signal.
    #[error("the probe's PID 1 was killed")]
    Pid1Killed,
}

impl ProbeError {
    /// The errno of the last failed system call of this thread.
    pub(crate) fn last_os_error() -> ProbeError {
        ProbeError::Os(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM))
    }
}

/// Why no network namespace can be made: both ways were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unshare(CLONE_NEWNET) failed ({net}) and unshare(CLONE_NEWUSER|CLONE_NEWNET) failed ({user})")]
pub(crate) struct NetUnavailable {
    /// Why `unshare(CLONE_NEWNET)` failed.
    pub(crate) net: ProbeError,
    /// Why `unshare(CLONE_NEWUSER|CLONE_NEWNET)` failed.
    pub(crate) user: ProbeError,
}

/// Why no mount and PID namespaces are used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NsUnavailable {
    /// Both ways of making them were refused.
    #[error("unshare(CLONE_NEWNS|CLONE_NEWPID) failed ({plain}) and with CLONE_NEWUSER failed ({user})")]
    Refused {
        /// Why the namespaces could not be made without a user namespace.
        plain: ProbeError,
        /// Why they could not be made with one.
        user: ProbeError,
    },
    /// Left out on purpose: the control run of a `steward doctor` probe.
    #[error("left out for the control")]
    ForControl,
}

/// Why Landlock cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LandlockUnavailable {
    /// The kernel has no Landlock (`ENOSYS`).
    #[error("Landlock is not built into this kernel (ENOSYS)")]
    NotBuiltIn,
    /// Landlock is compiled in but not in the active LSM list (`EOPNOTSUPP`).
    #[error("Landlock is built in but not enabled (add it to the lsm= boot list)")]
    NotEnabled,
    /// The version query failed with another errno.
    #[error("Landlock version query failed: {}", io::Error::from_raw_os_error(*.0))]
    Query(i32),
    /// The kernel answered a version that is not an `i32`.
    #[error("Landlock reported ABI {0}")]
    Version(i64),
}

/// Why seccomp filters cannot be installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SeccompUnavailable {
    /// `prctl(PR_GET_SECCOMP)` failed with this errno.
    #[error("the kernel has no seccomp ({})", io::Error::from_raw_os_error(*.0))]
    NoSeccomp(i32),
    /// No filter is built for this CPU architecture.
    #[error("no seccomp filter is built for the {0} architecture")]
    Architecture(&'static str),
    /// The filter library refused a rule or the program (its message).
    #[error("seccomp filter: {0}")]
    Filter(String),
    /// Left out on purpose: the control run of a `steward doctor` probe.
    #[error("left out for the control")]
    ForControl,
}

/// A sandbox path the mount namespace cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MountPathError {
    /// A masked, read-only or kept path is relative.
    #[error("sandbox path {} is not absolute", .0.display())]
    NotAbsolute(std::path::PathBuf),
    /// A path holds a NUL byte, so no system call can name it.
    #[error("{} contains a NUL byte", .0.display())]
    Nul(std::path::PathBuf),
}
