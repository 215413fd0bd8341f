//! The one way out of a child that may reach the network only through an egress proxy
//! ([`crate::ExecRequest::egress_proxy`]).
//!
//! The child gets a fresh network namespace, as without network. Between `fork` and `exec`,
//! inside that namespace, it brings `lo` up, creates a TCP socket listening on
//! `127.0.0.1:`[`PROXY_PORT`] and hands it to Steward over a `SOCK_SEQPACKET` socket pair
//! (`SCM_RIGHTS`), then closes its own copy. Steward accepts on that socket (a socket stays
//! in the namespace it was made in, whoever holds it) and copies each connection to the
//! proxy's Unix socket. So:
//! - the namespace has no route anywhere: only `lo`, with the proxy port as the only thing
//!   listening; Landlock (ABI ≥ 4) additionally allows TCP connect to that port only;
//! - the forwarder is Steward itself, not a process in the sandbox: nothing the command can
//!   signal or trace, and outside any seccomp filter applied to the command (which may deny
//!   `AF_UNIX` sockets: the command never needs one);
//! - the steps in the child are plain syscalls (`socket`, `ioctl`, `bind`, `listen`,
//!   `sendmsg`, `close`) on data prepared before the fork: async-signal-safe, no allocation.

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use tokio::net::UnixStream;
use tokio::task::JoinHandle;

/// The port the proxy listens on inside the child's namespace (the conventional HTTP proxy
/// port; nothing else listens in a fresh namespace).
pub const PROXY_PORT: u16 = 3128;

/// The proxy URL given to the child.
pub const PROXY_URL: &str = "http://127.0.0.1:3128";

/// Environment variables pointing programs at the proxy (upper and lower case: curl reads
/// only `http_proxy` in lower case, many others only upper case), and `NO_PROXY` empty so
/// that nothing is meant to bypass it.
pub(crate) fn proxy_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> =
        ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]
            .into_iter()
            .map(|name| (name.to_string(), PROXY_URL.to_string()))
            .collect();
    env.push(("NO_PROXY".into(), String::new()));
    env.push(("no_proxy".into(), String::new()));
    env
}

/// The socket pair over which the child hands its listening socket to Steward.
#[derive(Debug)]
pub(crate) struct Handover {
    parent: OwnedFd,
    child: OwnedFd,
}

impl Handover {
    /// A close-on-exec `SOCK_SEQPACKET` pair (so neither end survives into any program).
    pub(crate) fn new() -> io::Result<Handover> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid array of two ints.
        if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) }
            != 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both fds were just created and are owned by nobody else.
        Ok(unsafe { Handover { parent: OwnedFd::from_raw_fd(fds[0]), child: OwnedFd::from_raw_fd(fds[1]) } })
    }

    /// What the child needs (valid while `self` lives).
    pub(crate) fn child_end(&self) -> ChildListen {
        ChildListen { fd: self.child.as_raw_fd() }
    }

    /// After the spawn returned (the child has run its setup and exec'd): the listening
    /// socket it sent. Errors when none arrived.
    pub(crate) fn receive(self) -> io::Result<TcpListener> {
        drop(self.child);
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = Control([0; 64]);
        // SAFETY: a zeroed msghdr is valid; the pointers set below outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = control.0.len();
        // SAFETY: `msg` points at live buffers of the stated sizes.
        let n =
            unsafe { libc::recvmsg(self.parent.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            return Err(io::Error::other(format!(
                "the child handed over no proxy listener: {}",
                io::Error::last_os_error()
            )));
        }
        // SAFETY: CMSG_FIRSTHDR reads the msghdr filled by recvmsg; the data pointer is
        // within `control` when the header says it carries one fd.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            if msg.msg_flags & libc::MSG_CTRUNC != 0
                || cmsg.is_null()
                || (*cmsg).cmsg_level != libc::SOL_SOCKET
                || (*cmsg).cmsg_type != libc::SCM_RIGHTS
                || (*cmsg).cmsg_len != libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as usize
            {
                return Err(io::Error::other("the child handed over no proxy listener"));
            }
            let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
            Ok(TcpListener::from(OwnedFd::from_raw_fd(fd)))
        }
    }
}

/// Control-message buffer, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct Control([u8; 64]);

/// The child's end of the handover, used between `fork` and `exec`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChildListen {
    fd: RawFd,
}

impl ChildListen {
    /// In the child, inside its new network namespace: `lo` up, listen on
    /// `127.0.0.1:PROXY_PORT`, send the socket to the parent, close both. Async-signal-safe.
    pub(crate) fn listen(&self) -> io::Result<()> {
        // SAFETY: plain syscalls on stack data; every fd made here is closed before return.
        unsafe {
            lo_up()?;
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let addr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: PROXY_PORT.to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes([127, 0, 0, 1]) },
                sin_zero: [0; 8],
            };
            let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let result = if libc::bind(fd, (&raw const addr).cast(), len) != 0 || libc::listen(fd, 128) != 0 {
                Err(io::Error::last_os_error())
            } else {
                send_fd(self.fd, fd)
            };
            libc::close(fd);
            libc::close(self.fd);
            result
        }
    }
}

/// Sets `IFF_UP` on `lo` (needs `CAP_NET_ADMIN` in the namespace, which the child has right
/// after `unshare`).
unsafe fn lo_up() -> io::Result<()> {
    // SAFETY: ioctl on a fresh datagram socket with a zeroed `ifreq` naming `lo`.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (dst, src) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let mut result = Ok(());
        if libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut ifr) != 0 {
            result = Err(io::Error::last_os_error());
        } else {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(sock, libc::SIOCSIFFLAGS, &ifr) != 0 {
                result = Err(io::Error::last_os_error());
            }
        }
        libc::close(sock);
        result
    }
}

/// Sends `fd` over `sock` with `SCM_RIGHTS`. Async-signal-safe.
unsafe fn send_fd(sock: RawFd, fd: RawFd) -> io::Result<()> {
    // SAFETY: the message points at stack buffers that outlive `sendmsg`.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = Control([0; 64]);
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) as usize;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
        if libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Copies each connection accepted in the child's namespace to the proxy's Unix socket.
/// Dropping it stops accepting and cuts every open connection.
pub(crate) struct Forwarder {
    task: JoinHandle<()>,
}

impl Forwarder {
    /// Starts forwarding connections accepted on `listener` to `proxy`.
    pub(crate) fn start(listener: TcpListener, proxy: PathBuf) -> io::Result<Forwarder> {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let task = tokio::spawn(async move {
            let mut open = tokio::task::JoinSet::new();
            loop {
                let mut inside = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "egress forwarder stopped accepting");
                        break;
                    }
                };
                let proxy = proxy.clone();
                open.spawn(async move {
                    match UnixStream::connect(&proxy).await {
                        Ok(mut outside) => {
                            let _ = tokio::io::copy_bidirectional(&mut inside, &mut outside).await;
                        }
                        Err(e) => tracing::warn!(error = %e, "egress proxy unreachable"),
                    }
                });
                while open.try_join_next().is_some() {}
            }
        });
        Ok(Forwarder { task })
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio_util::sync::CancellationToken;

    use crate::exec::run_with_parent_env;
    use crate::limits::{NetMode, net_mode};
    use crate::plan::Host;
    use crate::unavailable::{NetUnavailable, ProbeError};
    use crate::{ExecRequest, PROXY_PORT};

    /// The child's proxy port reaches the Unix socket (here a stand-in that answers one line),
    /// with and without a user namespace (the unprivileged path).
    #[tokio::test]
    async fn the_proxy_port_inside_the_namespace_reaches_the_unix_socket_in_both_namespace_modes() {
        let Ok(available) = net_mode() else { panic!("this machine cannot make a network namespace") };
        let modes =
            if available == NetMode::NetOnly { vec![NetMode::NetOnly, NetMode::UserAndNet] } else { vec![available] };
        for mode in modes {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("proxy.sock");
            let listener = tokio::net::UnixListener::bind(&socket).unwrap();
            let stand_in = tokio::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                let (read, mut write) = stream.into_split();
                let mut line = String::new();
                BufReader::new(read).read_line(&mut line).await.unwrap();
                write.write_all(format!("proxy got {line}").as_bytes()).await.unwrap();
                line
            });
            let script = format!(
                "exec 3<>/dev/tcp/127.0.0.1/{PROXY_PORT} && echo ping >&3 && read -r answer <&3 && echo \"$answer\""
            );
            let req = ExecRequest {
                egress_proxy: Some(socket.clone()),
                ..ExecRequest::new(vec!["bash".into(), "-c".into(), script], PathBuf::from("/"))
            };
            let host = Host { net: Ok(mode), ..Host::detect() };
            let out =
                run_with_parent_env(req, CancellationToken::new(), std::env::vars_os().collect(), &host).await.unwrap();
            assert_eq!(out.exit_code, Some(0), "{mode:?}: {}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(String::from_utf8_lossy(&out.stdout), "proxy got ping\n", "{mode:?}");
            assert_eq!(stand_in.await.unwrap(), "ping\n");
            assert!(out.profile.contains(&format!("{}+egress-proxy", mode.profile())), "{}", out.profile);
        }
    }

    /// The listener is made by the PID namespace's init and handed over before the program
    /// starts: neither the program nor its children hold a socket (only pipes; the init is
    /// outside the program's Landlock domain, so its descriptors cannot be read), the proxy
    /// port still answers, and the program runs under the seccomp filter that refuses Unix
    /// sockets.
    #[tokio::test]
    async fn the_proxy_listener_is_handed_over_and_held_by_no_process_of_the_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("proxy.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let stand_in = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (read, mut write) = stream.into_split();
            let mut line = String::new();
            BufReader::new(read).read_line(&mut line).await.unwrap();
            write.write_all(b"pong\n").await.unwrap();
        });
        let script = format!(
            "for fd in /proc/[0-9]*/fd/*; do l=$(readlink \"$fd\") && echo \"$fd $l\"; done | grep socket: ; \
             exec 3<>/dev/tcp/127.0.0.1/{PROXY_PORT} && echo ping >&3 && read -r answer <&3 && echo \"answer=$answer\""
        );
        let req = ExecRequest {
            egress_proxy: Some(socket.clone()),
            ..ExecRequest::new(vec!["bash".into(), "-c".into(), script], PathBuf::from("/"))
        };
        let out = run_with_parent_env(req, CancellationToken::new(), std::env::vars_os().collect(), &Host::detect())
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout, "answer=pong\n", "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.profile.contains("pidns"), "{}", out.profile);
        assert!(out.profile.contains("seccomp(unix=denied)"), "{}", out.profile);
        stand_in.await.unwrap();
    }

    /// Only a call run to its end forwards the proxy port: a long-running child prepared with
    /// [`crate::command`] and an egress proxy is refused rather than left without its route.
    #[test]
    fn a_long_running_child_with_an_egress_proxy_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let req = ExecRequest {
            egress_proxy: Some(dir.path().join("proxy.sock")),
            ..ExecRequest::new(vec!["true".into()], PathBuf::from("/"))
        };
        let err = crate::command(req).unwrap_err();
        assert!(matches!(err, crate::SandboxError::InvalidRequest(_)), "{err}");
        assert!(err.to_string().contains("egress proxy"), "{err}");
    }

    /// Without a namespace there is nothing to confine a proxied child to: refused, even when
    /// the request accepts running without `network_deny`.
    #[tokio::test]
    async fn a_proxied_child_is_refused_without_a_network_namespace_even_when_weaker_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let req = ExecRequest {
            egress_proxy: Some(dir.path().join("proxy.sock")),
            accept_weaker: vec![crate::Protection::NetworkDeny],
            ..ExecRequest::new(vec!["touch".into(), marker.display().to_string()], PathBuf::from("/"))
        };
        let host = Host {
            net: Err(NetUnavailable { net: ProbeError::Os(libc::EPERM), user: ProbeError::Os(libc::EPERM) }),
            ..Host::detect()
        };
        let err =
            run_with_parent_env(req, CancellationToken::new(), std::env::vars_os().collect(), &host).await.unwrap_err();
        assert!(err.to_string().contains("egress proxy needs a namespace"), "{err}");
        assert!(!marker.exists());
    }
}
