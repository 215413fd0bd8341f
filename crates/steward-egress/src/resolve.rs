//! Name resolution and connecting, each behind a trait so that tests can answer with
//! addresses of their choosing and see which address the proxy connects to.
//!
//! [`TestHosts`] is the one way to make a name reach a non-public address (needed to test the
//! proxy against servers on loopback): it pins names under the reserved `.test` top-level
//! domain (RFC 6761, never delegated in public DNS) to given addresses. Such a name still has
//! to be on the tool's host list, and a pinned address may still not be a metadata,
//! unspecified or multicast address.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use async_trait::async_trait;
use tokio::net::TcpStream;

use crate::hosts::{Host, HostError};

/// Resolves a host name to addresses.
#[async_trait]
pub trait Resolve: Send + Sync {
    /// Every address of `name` (already normalised: lowercase, no trailing dot). An empty
    /// answer is treated like an error by the proxy.
    async fn resolve(&self, name: &str) -> io::Result<Vec<IpAddr>>;
}

/// The system resolver (`getaddrinfo`, on a blocking thread via tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl Resolve for SystemResolver {
    async fn resolve(&self, name: &str) -> io::Result<Vec<IpAddr>> {
        Ok(tokio::net::lookup_host((name, 0)).await?.map(|a| a.ip()).collect())
    }
}

/// Opens the TCP connection to an address the proxy has checked.
#[async_trait]
pub trait Connect: Send + Sync {
    /// Connects to exactly `addr`.
    async fn connect(&self, addr: SocketAddr) -> io::Result<TcpStream>;
}

/// Plain `TcpStream::connect` with a time limit.
#[derive(Debug, Clone, Copy)]
pub struct DirectConnector {
    /// Time allowed per address.
    pub timeout: Duration,
}

impl Default for DirectConnector {
    fn default() -> Self {
        DirectConnector { timeout: Duration::from_secs(10) }
    }
}

#[async_trait]
impl Connect for DirectConnector {
    async fn connect(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        match tokio::time::timeout(self.timeout, TcpStream::connect(addr)).await {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, format!("no answer within {:?}", self.timeout))),
        }
    }
}

/// Names under `.test` pinned to addresses, exempt from the public-address rule (see the
/// module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestHosts {
    pinned: BTreeMap<String, Vec<IpAddr>>,
}

impl TestHosts {
    /// Parses `name=addr[,addr…][;name=addr…]` (for example `allowed.test=127.0.0.1`).
    /// Errors: a name outside `.test`, a missing or unparseable address.
    pub fn parse(text: &str) -> Result<TestHosts, HostError> {
        let mut hosts = TestHosts::default();
        for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let err = |reason: &str| HostError { entry: entry.to_string(), reason: reason.to_string() };
            let (name, addrs) = entry.split_once('=').ok_or_else(|| err("expected name=address"))?;
            let addrs = addrs
                .split(',')
                .map(|a| a.trim().parse::<IpAddr>().map_err(|_| err("not an IP address")))
                .collect::<Result<Vec<_>, _>>()?;
            hosts.pin(name.trim(), addrs)?;
        }
        Ok(hosts)
    }

    /// Pins `name` (which must end in `.test`) to `addrs` (at least one).
    pub fn pin(&mut self, name: &str, addrs: Vec<IpAddr>) -> Result<(), HostError> {
        let err = |reason: &str| HostError { entry: name.to_string(), reason: reason.to_string() };
        let Host::Name(name) = Host::parse(name)? else { return Err(err("only names can be pinned")) };
        if !name.ends_with(".test") {
            return Err(err("only names under the reserved `.test` domain can be pinned"));
        }
        if addrs.is_empty() {
            return Err(err("a pinned name needs an address"));
        }
        self.pinned.insert(name, addrs);
        Ok(())
    }

    /// The pinned addresses of `name`, if it is pinned.
    pub fn get(&self, name: &str) -> Option<&[IpAddr]> {
        self.pinned.get(name).map(Vec::as_slice)
    }

    /// True when nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.pinned.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_under_dot_test_can_be_pinned() {
        let hosts = TestHosts::parse("allowed.test=127.0.0.1; Other.Test.=::1,127.0.0.2").unwrap();
        assert_eq!(hosts.get("allowed.test"), Some(&["127.0.0.1".parse().unwrap()][..]));
        assert_eq!(hosts.get("other.test").map(<[_]>::len), Some(2));
        for bad in
            ["crates.io=127.0.0.1", "test=127.0.0.1", "a.test", "a.test=", "a.test=localhost", "127.0.0.1=127.0.0.1"]
        {
            assert!(TestHosts::parse(bad).is_err(), "{bad}");
        }
    }
}
