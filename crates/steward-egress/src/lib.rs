//! The egress proxy of sandboxed commands whose tool says `network = ["crates.io", …]`.
//!
//! Steward starts one [`EgressProxy`] per such call, listening on a Unix socket in a private
//! directory; the sandbox (`steward-sandbox`, `ExecRequest::egress_proxy`) gives the command a
//! network namespace whose only way out is a port on its loopback forwarded to that socket,
//! and points `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` at it. The proxy:
//! - speaks HTTP/1.1: `CONNECT host:port` (a byte tunnel, so TLS stays end to end) and
//!   absolute-form plain HTTP requests; anything else is answered `400`;
//! - allows only the hosts and ports of the tool's [`HostList`] (`403` otherwise);
//! - resolves a name itself, once, refuses it when any answer is not a public unicast address
//!   ([`address::non_public`]: private, loopback, link-local, CGNAT, unique-local, multicast,
//!   metadata services …), and connects to exactly an address it checked (no re-resolution,
//!   so DNS rebinding cannot redirect it);
//! - records every request or tunnel ([`EgressRecord`]: method, host, port, address, verdict,
//!   reason, bytes each way) for the run's audit log.
//!
//! This crate does not depend on the sandbox, nor the sandbox on it: the only thing they
//! share is the socket path.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod address;
mod hosts;
mod proxy;
mod record;
mod resolve;

pub use hosts::{DEFAULT_PORTS, Host, HostError, HostList, HostRule};
pub use proxy::{EgressError, EgressProxy, MAX_RECORDS, ProxyConfig};
pub use record::{EgressRecord, Verdict};
pub use resolve::{Connect, DirectConnector, Resolve, SystemResolver, TestHosts};
