//! What runs in the child between `fork` and `exec`: the namespaces, rlimits,
//! `no_new_privs`, the Landlock ruleset and the seccomp filters. Only async-signal-safe calls happen there;
//! everything (including the Landlock ruleset) is prepared in the parent.

use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;

use crate::namespaces::{IdMaps, NsSetup, Start, StartFailure};
use crate::program::{ChildStack, ExecImage};
use crate::seccomp::{self, Filters};
use crate::unavailable::{NetUnavailable, ProbeError};

/// How the network is cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetMode {
    /// `unshare(CLONE_NEWNET)` (needs `CAP_SYS_ADMIN`).
    NetOnly,
    /// `unshare(CLONE_NEWUSER | CLONE_NEWNET)` for unprivileged users.
    UserAndNet,
}

impl NetMode {
    pub(crate) fn profile(self) -> &'static str {
        match self {
            NetMode::NetOnly => "netns",
            NetMode::UserAndNet => "netns+userns",
        }
    }
}

/// Finds out once per process which kind of network namespace this process may create, by
/// trying both in a probe child. Errors name the OS refusal.
pub(crate) fn net_mode() -> Result<NetMode, NetUnavailable> {
    static MODE: OnceLock<Result<NetMode, NetUnavailable>> = OnceLock::new();
    MODE.get_or_init(|| {
        let net_err = match probe(libc::CLONE_NEWNET) {
            Ok(()) => return Ok(NetMode::NetOnly),
            Err(e) => e,
        };
        match probe(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) {
            Ok(()) => Ok(NetMode::UserAndNet),
            Err(user) => Err(NetUnavailable { net: net_err, user }),
        }
    })
    .clone()
}

/// Runs a probe child ([`crate::probe`]) that only calls `unshare(flags)` and exits with 0
/// on success or the errno.
fn probe(flags: libc::c_int) -> Result<(), ProbeError> {
    let mut stack = ChildStack::new().map_err(|e| ProbeError::Os(e.raw_os_error().unwrap_or(libc::ENOMEM)))?;
    // SAFETY: the child makes system calls only (unshare takes no pointers) and starts no
    // grandchild.
    let code = unsafe {
        crate::probe::run(&mut stack, &mut || {
            if libc::unshare(flags) == 0 { 0 } else { crate::namespaces::errno().clamp(1, 255) }
        })
    }?;
    if code == 0 { Ok(()) } else { Err(ProbeError::Os(code)) }
}

/// Everything the child does before `exec`, prepared in the parent.
pub(crate) struct ChildSetup {
    /// The network namespace to make on its own; `None` when `ns` makes it (or none is
    /// wanted).
    net: Option<NetMode>,
    /// Id maps for a user namespace made together with `net`.
    id_maps: IdMaps,
    /// Mount and PID namespaces (with the network namespace in their flags when wanted).
    ns: Option<NsSetup>,
    cpu_seconds: u64,
    memory_bytes: Option<u64>,
    /// A Landlock ruleset fd made in the parent (which keeps it open until the spawn
    /// returned); the child restricts itself with it.
    landlock_fd: Option<RawFd>,
    /// The seccomp filters, installed last.
    seccomp: Option<&'static Filters>,
    /// Set when the child's only way out is the egress proxy: the listening socket is made
    /// in the new network namespace and handed over before the program starts.
    egress: Option<crate::egress::ChildListen>,
    /// The program to execute itself (see `program.rs`), and with `ns` the stack its start
    /// runs on. Without `ns` it is used only when the image exits on a failed execution; else
    /// the spawn executes the program.
    start: Option<(ExecImage, Option<ChildStack>)>,
}

impl ChildSetup {
    /// The setup for a network namespace `net` (made with `ns` when both are wanted), the
    /// namespaces `ns`, the limits, Landlock and seccomp.
    pub(crate) fn new(
        net: Option<NetMode>,
        ns: Option<NsSetup>,
        cpu_seconds: u64,
        memory_bytes: Option<u64>,
        landlock_fd: Option<RawFd>,
        seccomp: Option<&'static Filters>,
    ) -> ChildSetup {
        let (net, id_maps) = match (&ns, net) {
            (Some(_), _) | (None, None) => (None, IdMaps::default()),
            (None, Some(mode)) => (Some(mode), IdMaps::new(mode == NetMode::UserAndNet)),
        };
        ChildSetup { net, id_maps, ns, cpu_seconds, memory_bytes, landlock_fd, seccomp, egress: None, start: None }
    }

    /// The program to execute (needed with namespaces, whose init executes it).
    /// Errors: the stack cannot be mapped.
    pub(crate) fn with_program(mut self, image: ExecImage) -> io::Result<ChildSetup> {
        let stack = if self.ns.is_some() { Some(ChildStack::new()?) } else { None };
        self.start = Some((image, stack));
        Ok(self)
    }

    /// Makes the child open the proxy port in its new network namespace (see
    /// [`crate::egress`]); only meaningful with a network namespace.
    pub(crate) fn with_egress(mut self, egress: Option<crate::egress::ChildListen>) -> ChildSetup {
        self.egress = egress;
        self
    }

    /// Runs in the child after `fork`, in this order: the namespaces (with `ns`: user,
    /// mount, PID and network namespaces, the mounts, the egress listener when wanted, and
    /// the fork of the program as PID 2, see `namespaces.rs`; else the network namespace
    /// alone, then the egress listener when wanted), then `RLIMIT_CORE = 0`, `RLIMIT_CPU`,
    /// `RLIMIT_DATA` (only when `memory_bytes` is set), `PR_SET_NO_NEW_PRIVS` (always:
    /// set-uid programs gain nothing), `landlock_restrict_self`, and the seccomp filters
    /// last. Any failure fails the spawn, so nothing runs half-confined.
    /// Async-signal-safe only.
    ///
    /// The egress listener ([`crate::egress::ChildListen::listen`]) is made inside the new
    /// network namespace and handed to Steward before `exec`, so before the program's
    /// seccomp filter (which may deny `AF_UNIX` sockets) and Landlock ruleset apply.
    pub(crate) fn apply(&self) -> io::Result<()> {
        if let Some(ns) = &self.ns {
            let Some((image, Some(stack))) = &self.start else {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            };
            let start = || match self.confine() {
                Ok(()) => StartFailure::Exec(image.exec().errno()),
                Err(e) => StartFailure::Confine(e.raw_os_error().unwrap_or(libc::EPERM)),
            };
            return Err(ns.enter(self.egress.as_ref(), &Start { start: &start, stack }));
        }
        if let Some(mode) = self.net {
            let flags = match mode {
                NetMode::NetOnly => libc::CLONE_NEWNET,
                NetMode::UserAndNet => libc::CLONE_NEWUSER | libc::CLONE_NEWNET,
            };
            // SAFETY: plain syscall; the child is single-threaded, as CLONE_NEWUSER needs.
            if unsafe { libc::unshare(flags) } != 0 {
                return Err(io::Error::last_os_error());
            }
            self.id_maps.write();
            if let Some(egress) = &self.egress {
                egress.listen()?;
            }
        }
        self.confine()?;
        // A program whose failed execution must end like bash's is executed here (this does
        // not return); any other is executed by the spawn.
        if let Some((image, None)) = &self.start
            && image.exits()
        {
            image.exec();
        }
        Ok(())
    }

    /// The rlimits, `no_new_privs`, Landlock and seccomp, in that order (async-signal-safe).
    fn confine(&self) -> io::Result<()> {
        set_limit(libc::RLIMIT_CORE, 0)?;
        set_limit(libc::RLIMIT_CPU, self.cpu_seconds)?;
        if let Some(bytes) = self.memory_bytes {
            set_limit(libc::RLIMIT_DATA, bytes)?;
        }
        // SAFETY: plain syscalls with integer arguments.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(fd) = self.landlock_fd
                && libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(filters) = self.seccomp {
            seccomp::install(&filters.clone3)?;
            seccomp::install(&filters.deny)?;
        }
        Ok(())
    }
}

/// Lowers a limit to `value` (soft and hard), never above the current hard limit.
fn set_limit(resource: libc::__rlimit_resource_t, value: u64) -> io::Result<()> {
    let mut current = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid pointer to a local struct.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let value = value.min(current.rlim_max);
    let new = libc::rlimit { rlim_cur: value, rlim_max: value };
    // SAFETY: valid pointer to a local struct.
    if unsafe { libc::setrlimit(resource, &new) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
