//! What the proxy remembers of each connection, for the audit log.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

/// How a connection attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// On the list, resolved to allowed addresses, connected.
    Allowed,
    /// Refused by the proxy (not listed, an address it may not reach, a malformed request);
    /// the client got `403` or `400`.
    Refused,
    /// Allowed, but resolving or connecting failed; the client got `502`.
    Failed,
}

impl Verdict {
    /// `allowed`, `refused` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::Refused => "refused",
            Verdict::Failed => "failed",
        }
    }
}

/// One proxied connection (a `CONNECT` tunnel or one plain HTTP request). Paths and query
/// strings are never recorded (they can carry tokens); only the method, host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRecord {
    /// `CONNECT`, or the method of a plain HTTP request.
    pub method: String,
    /// The host as the client named it (normalised when it was valid; as sent otherwise,
    /// cut to 255 characters).
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// The address connected to (only for [`Verdict::Allowed`]).
    pub address: Option<SocketAddr>,
    /// The outcome.
    pub verdict: Verdict,
    /// Why: the list entry that allowed it, or the reason for the refusal or failure.
    pub reason: String,
    /// Bytes written to the remote host (request line, headers and bodies, or tunnel data).
    pub bytes_sent: u64,
    /// Bytes read from the remote host.
    pub bytes_received: u64,
}

/// A record under construction: fixed fields, and byte counters updated while data flows.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) record: EgressRecord,
    pub(crate) sent: AtomicU64,
    pub(crate) received: AtomicU64,
}

impl Entry {
    pub(crate) fn new(record: EgressRecord) -> Entry {
        Entry { record, sent: AtomicU64::new(0), received: AtomicU64::new(0) }
    }

    /// The record with the bytes counted so far.
    pub(crate) fn snapshot(&self) -> EgressRecord {
        EgressRecord {
            bytes_sent: self.sent.load(Ordering::Relaxed),
            bytes_received: self.received.load(Ordering::Relaxed),
            ..self.record.clone()
        }
    }
}
