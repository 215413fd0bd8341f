//! The host list of a tool (`network = ["crates.io", "*.example.com", "mirror.test:8080"]`)
//! and the host a request names, both normalised the same way before they are compared.
//!
//! Rules (decided here, documented in docs/tools.md):
//! - a name matches exactly, ASCII case-insensitively, one trailing dot ignored;
//! - `*.example.com` matches every name below `example.com` (one or more labels), never
//!   `example.com` itself; the part after `*.` needs at least two labels (`*.com` is refused);
//! - without `:port` an entry allows ports 80 and 443; with one, only that port;
//! - an IP literal (`192.0.2.7`, `[2001:db8::1]:8443`) allows exactly that address, and a
//!   request naming an IP literal is refused unless that literal is listed;
//! - names are ASCII (an internationalised name is written in its `xn--` form); a name whose
//!   last label is all digits (`127.1`, `0x7f.1`) is an address in a non-standard spelling and
//!   is refused, in the list and in requests.

use std::fmt;
use std::net::IpAddr;

/// Ports an entry without `:port` allows: HTTP and HTTPS.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// Why an entry or a request's host is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{entry}`: {reason}")]
pub struct HostError {
    /// The text as written.
    pub entry: String,
    /// What is wrong.
    pub reason: String,
}

/// A host as a request names it (or an entry lists it), normalised.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A DNS name: lowercase ASCII, no trailing dot.
    Name(String),
    /// An IP address literal.
    Ip(IpAddr),
}

impl Host {
    /// Normalises `text` (a name, an IPv4 literal, or an IPv6 literal with or without
    /// brackets). Errors: empty, not ASCII, a character a host name cannot hold, a label
    /// longer than 63 bytes or a name longer than 253, a label starting or ending with `-`,
    /// or a numeric last label (an address in a non-standard spelling).
    pub fn parse(text: &str) -> Result<Host, HostError> {
        let err = |reason: &str| HostError { entry: text.to_string(), reason: reason.to_string() };
        let bare = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or(text);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(Host::Ip(ip));
        }
        if bare.len() != text.len() {
            return Err(err("brackets hold only an IPv6 address"));
        }
        if !text.is_ascii() {
            return Err(err("write an internationalised name in its `xn--` form"));
        }
        let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        if name.is_empty() || name.len() > 253 {
            return Err(err("a host name has 1 to 253 characters"));
        }
        for label in name.split('.') {
            if label.is_empty() || label.len() > 63 {
                return Err(err("each label of a host name has 1 to 63 characters"));
            }
            if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return Err(err("a host name holds only letters, digits, `-`, `_` and dots"));
            }
            if label.starts_with('-') || label.ends_with('-') {
                return Err(err("a label of a host name does not start or end with `-`"));
            }
        }
        let last = name.rsplit('.').next().unwrap_or_default();
        if last.bytes().all(|b| b.is_ascii_digit())
            || (last.starts_with("0x") && name.contains(|c: char| c.is_ascii_digit()))
        {
            return Err(err("this looks like an IP address in a non-standard spelling; write it as a.b.c.d"));
        }
        Ok(Host::Name(name))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// What one entry matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// Exactly this host.
    Exact(Host),
    /// Any name ending in `.{suffix}`.
    Below(String),
}

/// One entry of a host list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    /// The entry as written.
    pub written: String,
    pattern: Pattern,
    /// `None`: [`DEFAULT_PORTS`].
    port: Option<u16>,
}

impl HostRule {
    /// Parses one entry: `name`, `*.suffix`, an IP literal, each with an optional `:port`
    /// (1–65535; an IPv6 literal with a port is written `[addr]:port`). Errors say what is
    /// wrong; a scheme, path, user name or `*` anywhere but as the whole first label is refused.
    pub fn parse(entry: &str) -> Result<HostRule, HostError> {
        let err = |reason: &str| HostError { entry: entry.to_string(), reason: reason.to_string() };
        let text = entry.trim();
        if text.contains("://") || text.contains(['/', '@', '?', '#']) || text.contains(char::is_whitespace) {
            return Err(err("write a host name (and `:port`), not a URL"));
        }
        let (host, port) = split_port(text).map_err(|reason| err(&reason.to_string()))?;
        let pattern = match host.strip_prefix("*.") {
            Some(suffix) => match Host::parse(suffix)? {
                Host::Name(name) if name.contains('.') => Pattern::Below(name),
                Host::Name(_) => return Err(err("`*.` needs at least two labels after it (`*.example.com`)")),
                Host::Ip(_) => return Err(err("`*.` applies to names, not addresses")),
            },
            None if host.contains('*') => return Err(err("`*` is allowed only as `*.` before a name")),
            None => Pattern::Exact(Host::parse(host)?),
        };
        Ok(HostRule { written: text.to_string(), pattern, port })
    }

    /// True when this entry allows `host` on `port`.
    pub fn permits(&self, host: &Host, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => DEFAULT_PORTS.contains(&port),
        };
        port_ok
            && match (&self.pattern, host) {
                (Pattern::Exact(listed), host) => listed == host,
                (Pattern::Below(suffix), Host::Name(name)) => {
                    name.len() > suffix.len() + 1
                        && name.ends_with(suffix.as_str())
                        && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
                }
                (Pattern::Below(_), Host::Ip(_)) => false,
            }
    }

    /// True when the entry is an IP literal (which allows exactly that address).
    pub fn is_address(&self) -> bool {
        matches!(self.pattern, Pattern::Exact(Host::Ip(_)))
    }
}

/// Why `host[:port]` could not be split (the `reason` of a [`HostError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum PortError {
    /// The text after `:` is not a number from 1 to 65535.
    #[error("`{0}` is not a port (1-65535)")]
    NotAPort(String),
    /// `[` opens an IPv6 literal that is never closed.
    #[error("`[` without `]`")]
    Unclosed,
    /// Something other than `:port` follows `]`.
    #[error("unexpected text after `]`")]
    AfterBracket,
}

/// `host[:port]` or `[v6][:port]`; a bare IPv6 literal has no port.
fn split_port(text: &str) -> Result<(&str, Option<u16>), PortError> {
    let parse_port = |p: &str| match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(PortError::NotAPort(p.to_string())),
        Ok(port) => Ok(Some(port)),
    };
    if text.starts_with('[') {
        let Some(close) = text.find(']') else { return Err(PortError::Unclosed) };
        let (host, rest) = text.split_at(close + 1);
        return match rest.strip_prefix(':') {
            Some(port) => Ok((host, parse_port(port)?)),
            None if rest.is_empty() => Ok((host, None)),
            None => Err(PortError::AfterBracket),
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let (host, port) = text.split_once(':').unwrap_or((text, ""));
            Ok((host, parse_port(port)?))
        }
        // A bare IPv6 literal.
        _ => Ok((text, None)),
    }
}

/// A tool's list of allowed hosts. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostList {
    rules: Vec<HostRule>,
}

impl HostList {
    /// Parses every entry; an empty list is an error (write `network = false` instead).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<HostList, HostError> {
        if entries.is_empty() {
            return Err(HostError {
                entry: "[]".into(),
                reason: "an empty host list allows nothing; write `network = false`".into(),
            });
        }
        let rules = entries.iter().map(|e| HostRule::parse(e.as_ref())).collect::<Result<_, _>>()?;
        Ok(HostList { rules })
    }

    /// The first entry allowing `host` on `port`.
    pub fn permits(&self, host: &Host, port: u16) -> Option<&HostRule> {
        self.rules.iter().find(|rule| rule.permits(host, port))
    }

    /// The entries as written.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|r| r.written.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> Host {
        Host::parse(text).unwrap()
    }

    #[test]
    fn names_match_exactly_case_insensitively_without_the_trailing_dot() {
        let list = HostList::parse(&["Crates.IO", "static.crates.io."]).unwrap();
        for host in ["crates.io", "CRATES.io.", "static.crates.io"] {
            assert!(list.permits(&name(host), 443).is_some(), "{host}");
        }
        for host in ["evil-crates.io", "crates.io.evil.com", "sub.crates.io", "io"] {
            assert!(list.permits(&name(host), 443).is_none(), "{host}");
        }
    }

    #[test]
    fn ports_default_to_http_and_https_and_a_listed_port_is_the_only_one() {
        let list = HostList::parse(&["a.example", "b.example:8080", "[2001:db8::1]:8443", "192.0.2.7"]).unwrap();
        assert!(list.permits(&name("a.example"), 80).is_some());
        assert!(list.permits(&name("a.example"), 443).is_some());
        assert!(list.permits(&name("a.example"), 22).is_none());
        assert!(list.permits(&name("b.example"), 8080).is_some());
        assert!(list.permits(&name("b.example"), 443).is_none());
        assert!(list.permits(&name("[2001:db8::1]"), 8443).is_some());
        assert!(list.permits(&name("2001:db8::1"), 443).is_none());
        assert!(list.permits(&name("192.0.2.7"), 443).is_some());
        // An address is only ever matched by the same literal, never by a name.
        assert!(list.permits(&name("192.0.2.8"), 443).is_none());
        assert!(list.permits(&name("::ffff:192.0.2.7"), 443).is_none());
    }

    #[test]
    fn wildcards_match_names_below_never_the_apex_nor_a_lookalike() {
        let list = HostList::parse(&["*.example.com"]).unwrap();
        assert!(list.permits(&name("a.example.com"), 443).is_some());
        assert!(list.permits(&name("a.b.EXAMPLE.com."), 443).is_some());
        for host in ["example.com", "badexample.com", "example.com.evil.net", "a.example.co"] {
            assert!(list.permits(&name(host), 443).is_none(), "{host}");
        }
        for bad in ["*.com", "*", "*.*.example.com", "a.*.example.com", "*example.com", "*.192.0.2.1"] {
            assert!(HostList::parse(&[bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn entries_that_are_not_plain_hosts_are_refused() {
        for bad in [
            "https://crates.io",
            "crates.io/path",
            "user@crates.io",
            "crates.io:0",
            "crates.io:99999",
            "crates.io:http",
            "",
            "a..b",
            "-a.example",
            "bücher.example",
            "127.1",
            "0x7f.0.0.1",
            "2130706433",
            "[crates.io]",
            "a b",
        ] {
            assert!(HostRule::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(HostList::parse::<&str>(&[]).is_err());
        assert_eq!(Host::parse("xn--bcher-kva.example").unwrap(), Host::Name("xn--bcher-kva.example".into()));
    }
}
