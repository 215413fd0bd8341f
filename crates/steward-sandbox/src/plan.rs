//! Deciding, before anything runs, which protections a call gets; refusing when a required
//! one cannot be enforced and the request did not accept losing it.
#![forbid(unsafe_code)]

use crate::fs_rules::{self, BuildError, Confinement, Tcp, kernel_abi};
use crate::limits::{NetMode, net_mode};
use crate::namespaces::{IdMaps, MountPlan, MountRequest, NsCaps, NsSetup, ns_caps};
use crate::seccomp::{self, Filters};
use crate::unavailable::{LandlockUnavailable, NetUnavailable, NsUnavailable, SeccompUnavailable};
use crate::{ExecRequest, Protection, SandboxError};

/// What this machine can do, as found by the probes (tests substitute a weaker machine).
#[derive(Debug, Clone)]
pub(crate) struct Host {
    /// The kernel's Landlock ABI, or why Landlock is unavailable.
    pub(crate) landlock_abi: Result<i32, LandlockUnavailable>,
    /// The network namespace this process may create, or why none.
    pub(crate) net: Result<NetMode, NetUnavailable>,
    /// The mount and PID namespaces this process may create, or why none.
    pub(crate) ns: Result<NsCaps, NsUnavailable>,
    /// Whether seccomp filters can be installed, or why not.
    pub(crate) seccomp: Result<(), SeccompUnavailable>,
}

impl Host {
    /// Asks the running kernel (each answer is cached per process).
    pub(crate) fn detect() -> Host {
        Host {
            landlock_abi: kernel_abi(),
            net: net_mode(),
            ns: ns_caps(),
            seccomp: seccomp::filters(false).map(|_| ()),
        }
    }
}

/// One kernel mechanism the sandbox builds on, as this process found it ([`host_support`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mechanism {
    /// `landlock`, `netns`, `mntns+pidns` or `seccomp`.
    pub name: &'static str,
    /// `Ok` with what is used (`yes`, `ABI 6`, `in a user namespace`), or `Err` with why it is unavailable.
    pub state: Result<String, String>,
}

/// The kernel mechanisms sandboxed calls of this process will find, from the same cached probes
/// those calls use ([`crate::warm_up`] starts them): no child process of its own after the
/// first call, so a front end can show it at start. What a call then enforces also depends on
/// `accept_weaker`; `steward doctor` checks each protection end to end instead.
pub fn host_support() -> Vec<Mechanism> {
    let host = Host::detect();
    let text = |e: &dyn std::fmt::Display| e.to_string();
    vec![
        Mechanism { name: "landlock", state: host.landlock_abi.map(|abi| format!("ABI {abi}")).map_err(|e| text(&e)) },
        Mechanism {
            name: "netns",
            state: host
                .net
                .map(|m| if m == NetMode::UserAndNet { "in a user namespace" } else { "yes" }.to_string())
                .map_err(|e| text(&e)),
        },
        Mechanism { name: "mntns+pidns", state: host.ns.map(|_| "yes".to_string()).map_err(|e| text(&e)) },
        Mechanism { name: "seccomp", state: host.seccomp.map(|()| "yes".to_string()).map_err(|e| text(&e)) },
    ]
}

/// The protections a call will get.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The namespace to create, `None` when the network is allowed or its denial was
    /// accepted as unenforceable.
    pub(crate) net: Option<NetMode>,
    /// The Landlock ruleset, `None` only when its absence was accepted.
    pub(crate) confinement: Option<Confinement>,
    /// The `net` part of the profile (`netns+userns+landlock-tcp`, `net=allowed`, …).
    pub(crate) net_profile: String,
    /// The `fs=` part of the profile.
    pub(crate) fs_profile: String,
    /// Mount and PID namespaces, `None` only when their absence was accepted.
    pub(crate) ns: Option<NsSetup>,
    /// The `mntns…,pidns…` part of the profile.
    pub(crate) ns_profile: String,
    /// The seccomp filters, `None` only when their absence was accepted.
    pub(crate) seccomp: Option<&'static Filters>,
    /// The `seccomp…` part of the profile.
    pub(crate) seccomp_profile: String,
}

/// Plans `req` for a parent whose `$HOME` is `home`. Errors: [`SandboxError::CannotEnforce`]
/// for a required, unenforceable protection (`network_deny`, `fs_confine`, `fs_mask`,
/// `pid_namespace`, `seccomp`; environment scrub, rlimits and the timeout are applied by this
/// process and the child setup, which fails the spawn if it cannot);
/// [`SandboxError::InvalidRequest`] for unusable sandbox paths.
pub(crate) fn plan(req: &ExecRequest, host: &Host, home: Option<&std::path::Path>) -> Result<Plan, SandboxError> {
    let accepts = |p: Protection| req.accept_weaker.contains(&p);
    let refuse = |p: Protection, reason: String| SandboxError::CannotEnforce { what: p.as_str(), reason };

    let net = if req.network {
        Ok(None)
    } else {
        match host.net.clone() {
            Ok(mode) => Ok(Some(mode)),
            // Without a namespace there is nothing to confine the proxied child to: refused
            // even when losing `network_deny` is accepted.
            Err(reason) if req.egress_proxy.is_some() => {
                return Err(refuse(Protection::NetworkDeny, format!("{reason} (an egress proxy needs a namespace)")));
            }
            Err(reason) if accepts(Protection::NetworkDeny) => {
                tracing::warn!(%reason, "network isolation unavailable; running without it (accepted)");
                Err(reason)
            }
            Err(reason) => return Err(refuse(Protection::NetworkDeny, reason.to_string())),
        }
    };

    let (confinement, fs_profile) =
        match fs_rules::build(host.landlock_abi.clone(), &req.writable, req.readable.as_deref(), tcp_rule(req)) {
            Ok(c) if c.complete => {
                let profile = format!("fs=landlock-v{}", c.abi);
                (Some(c), profile)
            }
            Ok(c) if accepts(Protection::FsConfine) => {
                tracing::warn!(abi = c.abi, "Landlock confines writes only partly; running anyway (accepted)");
                let profile = format!("fs=landlock-v{}(partial,accepted)", c.abi);
                (Some(c), profile)
            }
            Ok(c) => {
                let reason = format!(
                    "Landlock ABI {} cannot deny truncating files outside the writable paths (needs ABI 3, Linux 6.2)",
                    c.abi
                );
                return Err(refuse(Protection::FsConfine, reason));
            }
            Err(BuildError::Invalid(message)) => return Err(SandboxError::InvalidRequest(message)),
            Err(BuildError::Unsupported(reason)) if accepts(Protection::FsConfine) => {
                tracing::warn!(%reason, "filesystem confinement unavailable; running without it (accepted)");
                (None, "fs=unenforced(accepted)".to_string())
            }
            Err(BuildError::Unsupported(reason)) => return Err(refuse(Protection::FsConfine, reason)),
        };

    let tcp = confinement.as_ref().is_some_and(|c| c.tcp_denied);
    let proxied = if req.egress_proxy.is_some() { "+egress-proxy" } else { "" };
    let net_profile = match &net {
        Ok(None) => "net=allowed".to_string(),
        Ok(Some(mode)) if tcp => format!("{}{proxied}+landlock-tcp", mode.profile()),
        Ok(Some(mode)) => format!("{}{proxied}", mode.profile()),
        Err(_) if tcp => "net=landlock-tcp-only(accepted)".to_string(),
        Err(_) => "net=unenforced(accepted)".to_string(),
    };
    let net = net.unwrap_or(None);

    let (ns, ns_profile) = match host.ns.clone() {
        Ok(caps) => {
            let request = MountRequest {
                home: if req.hide_home { home } else { None },
                cwd: &req.cwd,
                writable: &req.writable,
                home_keep: &req.home_keep,
                mask: &req.mask,
                read_only: &req.read_only,
            };
            let mounts =
                MountPlan::new(&request, caps.fresh_proc).map_err(|e| SandboxError::InvalidRequest(e.to_string()))?;
            let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
            if caps.user {
                flags |= libc::CLONE_NEWUSER;
            }
            if net.is_some() {
                flags |= libc::CLONE_NEWNET;
            }
            let home = if mounts.home_hidden { "empty" } else { "visible" };
            let proc = if caps.fresh_proc { "" } else { "(host-proc)" };
            let dev = if mounts.dev_minimal { "minimal" } else { "host" };
            let profile = format!("mntns(mask={},home={home},dev={dev}),pidns{proc}", mounts.mask_count);
            (Some(NsSetup { flags, maps: IdMaps::new(caps.user), mounts }), profile)
        }
        Err(reason) => {
            for p in [Protection::FsMask, Protection::PidNamespace] {
                if !accepts(p) {
                    return Err(refuse(p, reason.to_string()));
                }
            }
            tracing::warn!(%reason, "mount and PID namespaces unavailable; running without them (accepted)");
            (None, "mntns=unenforced(accepted),pidns=unenforced(accepted)".to_string())
        }
    };

    let (seccomp, seccomp_profile) = match host.seccomp.clone().and_then(|()| seccomp::filters(req.unix_sockets)) {
        Ok(filters) => {
            let unix = if req.unix_sockets { "allowed" } else { "denied" };
            (Some(filters), format!("seccomp(unix={unix})"))
        }
        Err(reason) if accepts(Protection::Seccomp) => {
            tracing::warn!(%reason, "seccomp unavailable; running without it (accepted)");
            (None, "seccomp=unenforced(accepted)".to_string())
        }
        Err(reason) => return Err(refuse(Protection::Seccomp, reason.to_string())),
    };
    Ok(Plan { net, confinement, net_profile, fs_profile, ns, ns_profile, seccomp, seccomp_profile })
}

/// TCP under Landlock: allowed with the network, only the egress proxy's port with a proxy,
/// else denied.
fn tcp_rule(req: &ExecRequest) -> Tcp {
    match (&req.egress_proxy, req.network) {
        (_, true) => Tcp::Allowed,
        (Some(_), false) => Tcp::ConnectOnly(crate::egress::PROXY_PORT),
        (None, false) => Tcp::Denied,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unavailable::ProbeError;
    use std::path::PathBuf;
    use steward_peers::Need;
    use steward_peers::needs::{available, unavailable};

    fn request(accept: &[Protection]) -> ExecRequest {
        ExecRequest { accept_weaker: accept.to_vec(), ..ExecRequest::new(vec!["true".into()], PathBuf::from("/")) }
    }

    fn host(landlock_abi: Result<i32, LandlockUnavailable>, net: Result<NetMode, NetUnavailable>) -> Host {
        Host { landlock_abi, net, ns: Ok(NsCaps { user: false, fresh_proc: true }), seccomp: Ok(()) }
    }

    fn refused(result: Result<Plan, SandboxError>) -> (&'static str, String) {
        match result {
            Err(SandboxError::CannotEnforce { what, reason }) => (what, reason),
            other => panic!("expected CannotEnforce, got {other:?}"),
        }
    }

    #[test]
    fn fs_confinement_without_kernel_support_is_refused_unless_accepted() {
        let weak = host(Err(LandlockUnavailable::NotBuiltIn), Ok(NetMode::UserAndNet));
        let (what, reason) = refused(plan(&request(&[]), &weak, None));
        assert_eq!(what, "fs_confine");
        assert!(reason.contains("ENOSYS"), "{reason}");

        let accepted = plan(&request(&[Protection::FsConfine]), &weak, None).unwrap();
        assert!(accepted.confinement.is_none());
        assert_eq!(accepted.fs_profile, "fs=unenforced(accepted)");
        assert_eq!(accepted.net_profile, "netns+userns");
        // Accepting a different protection does not accept this one.
        assert_eq!(refused(plan(&request(&[Protection::NetworkDeny]), &weak, None)).0, "fs_confine");
    }

    #[test]
    fn partial_landlock_is_refused_unless_accepted() {
        let real = available(Need::Landlock, kernel_abi());
        if real < 2 {
            unavailable(Need::Landlock, format!("the kernel has Landlock ABI {real}; this test needs ABI 2 or later"));
        }
        // A kernel with ABI 2 (Linux 5.19): writes confined except truncation.
        let old = host(Ok(2), Ok(NetMode::NetOnly));
        let (what, reason) = refused(plan(&request(&[]), &old, None));
        assert_eq!(what, "fs_confine");
        assert!(reason.contains("ABI 2"), "{reason}");
        let accepted = plan(&request(&[Protection::FsConfine]), &old, None).unwrap();
        assert!(accepted.confinement.is_some());
        assert_eq!(accepted.fs_profile, "fs=landlock-v2(partial,accepted)");
        assert_eq!(accepted.net_profile, "netns", "no Landlock TCP rights before ABI 4");
    }

    #[test]
    fn missing_network_namespace_is_refused_unless_accepted_on_landlock() {
        let reason = "unshare(CLONE_NEWNET) failed (Operation not permitted (os error 1)) and \
                      unshare(CLONE_NEWUSER|CLONE_NEWNET) failed (Operation not permitted (os error 1))";
        let abi = available(Need::Landlock, kernel_abi());
        let eperm = ProbeError::Os(libc::EPERM);
        let weak = host(Ok(abi), Err(NetUnavailable { net: eperm.clone(), user: eperm }));
        let (what, why) = refused(plan(&request(&[]), &weak, None));
        assert_eq!((what, why.as_str()), ("network_deny", reason));

        let accepted = plan(&request(&[Protection::NetworkDeny]), &weak, None).unwrap();
        assert!(accepted.net.is_none());
        let expected = if abi >= 4 { "net=landlock-tcp-only(accepted)" } else { "net=unenforced(accepted)" };
        assert_eq!(accepted.net_profile, expected);

        // A call that may use the network needs no namespace at all.
        let networked = ExecRequest { network: true, ..request(&[]) };
        assert_eq!(plan(&networked, &weak, None).unwrap().net_profile, "net=allowed");
    }

    #[test]
    fn bad_sandbox_paths_are_invalid_requests() {
        let host = host(Ok(1), Ok(NetMode::NetOnly));
        for writable in [PathBuf::from("relative/dir"), PathBuf::from("/nonexistent/steward/dir")] {
            let req = ExecRequest { writable: vec![writable.clone()], ..request(&[Protection::FsConfine]) };
            assert!(matches!(plan(&req, &host, None), Err(SandboxError::InvalidRequest(_))), "{}", writable.display());
        }
    }

    #[test]
    fn missing_namespaces_or_seccomp_are_refused_unless_accepted() {
        let Ok(abi) = kernel_abi() else { return };
        let no_ns = Host {
            ns: Err(NsUnavailable::Refused { plain: ProbeError::Os(libc::EPERM), user: ProbeError::Os(libc::EPERM) }),
            ..host(Ok(abi), Ok(NetMode::NetOnly))
        };
        assert_eq!(refused(plan(&request(&[]), &no_ns, None)).0, "fs_mask");
        assert_eq!(refused(plan(&request(&[Protection::FsMask]), &no_ns, None)).0, "pid_namespace");
        let accepted = plan(&request(&[Protection::FsMask, Protection::PidNamespace]), &no_ns, None).unwrap();
        assert!(accepted.ns.is_none());
        assert_eq!(accepted.ns_profile, "mntns=unenforced(accepted),pidns=unenforced(accepted)");

        let no_seccomp =
            Host { seccomp: Err(SeccompUnavailable::NoSeccomp(libc::EINVAL)), ..host(Ok(abi), Ok(NetMode::NetOnly)) };
        assert_eq!(refused(plan(&request(&[]), &no_seccomp, None)).0, "seccomp");
        let accepted = plan(&request(&[Protection::Seccomp]), &no_seccomp, None).unwrap();
        assert!(accepted.seccomp.is_none());
        assert_eq!(accepted.seccomp_profile, "seccomp=unenforced(accepted)");
    }
}
