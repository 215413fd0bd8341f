//! Filesystem confinement (and TCP denial) with Landlock, built in the parent.
//!
//! Source of the rules: the kernel's Landlock documentation
//! (<https://docs.kernel.org/userspace-api/landlock.html>). The ruleset is created and filled
//! in the parent (it allocates and opens files); the child only calls
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self` on the ready file descriptor
//! (see [`crate::limits::ChildSetup`]).
//!
//! What is handled (so denied unless a rule allows it):
//! - every "write" right the running kernel knows (`AccessFs::from_write`: write, truncate
//!   from ABI 3, create/remove/rename/link, device ioctls from ABI 5, connecting to path
//!   UNIX sockets from ABI 9) — allowed only beneath the writable paths and on
//!   [`WRITABLE_DEVICES`];
//! - when `readable` is given, also the "read" rights (read, list, execute), allowed beneath
//!   the readable and writable paths and on the devices;
//! - from ABI 4 and when the network is denied, TCP bind and connect (no port is allowed,
//!   except connecting to the egress proxy's port when the child has one);
//! - from ABI 6, signals to and abstract UNIX sockets of processes outside the sandbox.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use crate::unavailable::LandlockUnavailable;

/// Devices a normal program opens for writing (`>/dev/null`, terminals); they stay writable
/// (write, truncate, device ioctls) under any confinement. Missing ones are skipped.
pub const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"];

/// Devices that stay readable when `readable` restricts reads. Missing ones are skipped.
const READABLE_DEVICES: &[&str] = &["/dev/urandom", "/dev/random"];

/// System directories a dynamically linked program needs to start and run (binaries, shared
/// libraries, `/etc` configuration, `/proc`). Not added implicitly: a caller restricting
/// reads with `readable: Some(..)` adds these (or a narrower set) itself.
pub const SYSTEM_READ_PATHS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/proc", "/dev"];

/// Lowest Landlock ABI that confines writes completely: ABI 1 and 2 cannot deny
/// `truncate(2)`/`O_TRUNC` on files outside the writable paths.
const FULL_FS_ABI: i32 = 3;
/// Lowest ABI with TCP bind/connect rights.
const NET_ABI: i32 = 4;
/// Lowest ABI with signal and abstract-socket scoping.
const SCOPE_ABI: i32 = 6;

/// The Landlock ABI version of the running kernel, asked once per process with
/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`. Errors say why
/// Landlock is unavailable.
pub(crate) fn kernel_abi() -> Result<i32, LandlockUnavailable> {
    static ABI_VERSION: OnceLock<Result<i32, LandlockUnavailable>> = OnceLock::new();
    ABI_VERSION
        .get_or_init(|| {
            const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
            // SAFETY: with a NULL attribute and size 0 and the VERSION flag, the syscall only
            // returns a number; no memory is read or written.
            let version = unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    std::ptr::null::<libc::c_void>(),
                    0usize,
                    LANDLOCK_CREATE_RULESET_VERSION,
                )
            };
            if version >= 0 {
                return i32::try_from(version).map_err(|_| LandlockUnavailable::Version(version));
            }
            Err(match io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL) {
                libc::ENOSYS => LandlockUnavailable::NotBuiltIn,
                libc::EOPNOTSUPP => LandlockUnavailable::NotEnabled,
                errno => LandlockUnavailable::Query(errno),
            })
        })
        .clone()
}

/// What the ruleset does with TCP (Landlock ABI ≥ 4; on older kernels only the network
/// namespace confines it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tcp {
    /// Not handled: the call may use the network.
    Allowed,
    /// Bind and connect denied.
    Denied,
    /// Bind denied; connect allowed to this port only (the egress proxy's).
    ConnectOnly(u16),
}

/// A ruleset ready for `landlock_restrict_self`, and what it covers.
#[derive(Debug)]
pub(crate) struct Confinement {
    /// The ruleset file descriptor (close-on-exec); kept open until the child has started.
    pub(crate) fd: OwnedFd,
    /// Kernel ABI the rights were chosen for.
    pub(crate) abi: i32,
    /// True when writes are confined completely (ABI ≥ 3).
    pub(crate) complete: bool,
    /// True when TCP bind/connect are denied too.
    pub(crate) tcp_denied: bool,
}

/// Why a ruleset could not be built.
#[derive(Debug)]
pub(crate) enum BuildError {
    /// The caller's paths are unusable (relative, missing writable path).
    Invalid(String),
    /// The kernel cannot enforce it.
    Unsupported(String),
}

/// Builds the ruleset for the kernel's Landlock ABI `kernel` (from [`kernel_abi`]; an error
/// means Landlock is unavailable): writes allowed only beneath `writable` (absolute, existing) and on
/// [`WRITABLE_DEVICES`]; reads limited to `readable` + `writable` + devices when `readable` is
/// `Some` (missing readable paths are skipped: they grant nothing); TCP denied when
/// `tcp` says so and the kernel has ABI ≥ 4.
pub(crate) fn build(
    kernel: Result<i32, LandlockUnavailable>,
    writable: &[PathBuf],
    readable: Option<&[PathBuf]>,
    tcp: Tcp,
) -> Result<Confinement, BuildError> {
    for path in writable.iter().chain(readable.unwrap_or_default()) {
        if !path.is_absolute() {
            return Err(BuildError::Invalid(format!("sandbox path {} is not absolute", path.display())));
        }
    }
    if let Some(missing) = writable.iter().find(|p| !p.exists()) {
        return Err(BuildError::Invalid(format!("writable path {} does not exist", missing.display())));
    }
    let version = kernel.map_err(|e| BuildError::Unsupported(e.to_string()))?;
    if version < 1 {
        return Err(BuildError::Unsupported(format!("Landlock ABI {version} is unusable")));
    }
    let abi = ABI::from(version);
    let unsupported = |e: &dyn std::fmt::Display| BuildError::Unsupported(format!("Landlock: {e}"));

    let write = AccessFs::from_write(abi);
    let read = AccessFs::from_read(abi);
    let handled = if readable.is_some() { write | read } else { write };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(|e| unsupported(&e))?;
    let tcp_denied = tcp != Tcp::Allowed && version >= NET_ABI;
    if tcp_denied {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(|e| unsupported(&e))?;
    }
    if version >= SCOPE_ABI {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| unsupported(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| unsupported(&e))?;

    let device_rights = handled
        & (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev | AccessFs::ReadDir);
    for device in WRITABLE_DEVICES.iter().map(Path::new).filter(|p| p.exists()) {
        created = allow(created, device, device_rights, abi)?;
    }
    if let Some(readable) = readable {
        for device in READABLE_DEVICES.iter().map(Path::new).filter(|p| p.exists()) {
            created = allow(created, device, AccessFs::ReadFile.into(), abi)?;
        }
        for path in readable.iter().filter(|p| p.exists()) {
            created = allow(created, path, read, abi)?;
        }
    }
    for path in writable {
        created = allow(created, path, handled, abi)?;
    }
    if let (Tcp::ConnectOnly(port), true) = (tcp, tcp_denied) {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| BuildError::Unsupported(format!("Landlock rule for TCP port {port}: {e}")))?;
    }
    let fd: Option<OwnedFd> = created.into();
    let fd = fd.ok_or_else(|| BuildError::Unsupported("Landlock returned no ruleset".into()))?;
    Ok(Confinement { fd, abi: version, complete: version >= FULL_FS_ABI, tcp_denied })
}

/// Adds "`rights` beneath `path`", narrowed to file rights when `path` is not a directory.
fn allow(
    created: RulesetCreated,
    path: &Path,
    rights: BitFlags<AccessFs>,
    abi: ABI,
) -> Result<RulesetCreated, BuildError> {
    let rights = if path.is_dir() { rights } else { rights & AccessFs::from_file(abi) };
    if rights.is_empty() {
        return Ok(created);
    }
    let fd = PathFd::new(path)
        .map_err(|e| BuildError::Invalid(format!("cannot open sandbox path {}: {e}", path.display())))?;
    created
        .add_rule(PathBeneath::new(fd, rights))
        .map_err(|e| BuildError::Unsupported(format!("Landlock rule for {}: {e}", path.display())))
}
