//! Which addresses the proxy may connect to.
//!
//! A host *name* must resolve only to public unicast addresses: an answer holding any address
//! in the ranges below refuses the connection (a name pointing at the local network, the
//! machine itself or a cloud metadata service is the classic way out of a host list). Sources:
//! the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and its updates), RFC
//! 6598 (shared address space), RFC 4193 (unique local), and the metadata endpoints documented
//! by AWS (169.254.169.254, fd00:ec2::254), GCP and Azure (169.254.169.254) and Alibaba Cloud
//! (100.100.100.200).
//!
//! An IP *literal* the user listed is their explicit choice and may be private (a registry
//! mirror on the local network); only [`never_reachable`] addresses are refused for it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Cloud metadata services: never reachable, whatever the list says.
pub const METADATA_ADDRESSES: [IpAddr; 3] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)),
];

/// Why `ip` may never be connected to, even when listed literally: a cloud metadata service,
/// the unspecified address, multicast or broadcast (IPv4-mapped, NAT64 and 6to4 forms included).
pub fn never_reachable(ip: IpAddr) -> Option<&'static str> {
    let ip = embedded_v4(ip).map(IpAddr::V4).unwrap_or(ip);
    if METADATA_ADDRESSES.contains(&ip) {
        return Some("a cloud metadata address");
    }
    match ip {
        IpAddr::V4(v4) if v4.is_unspecified() || v4.octets()[0] == 0 => Some("an unspecified address"),
        IpAddr::V4(v4) if v4.is_multicast() => Some("a multicast address"),
        IpAddr::V4(v4) if v4.is_broadcast() => Some("the broadcast address"),
        IpAddr::V6(v6) if v6.is_unspecified() => Some("an unspecified address"),
        IpAddr::V6(v6) if v6.is_multicast() => Some("a multicast address"),
        _ => None,
    }
}

/// Why `ip` is not a public unicast address (what a resolved name may point to), or `None`
/// when it is public.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    if let Some(reason) = never_reachable(ip) {
        return Some(reason);
    }
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(ip) {
                return non_public_v4(v4);
            }
            non_public_v6(v6)
        }
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, ..) => "an unspecified address",
        (10, ..) | (192, 168, _) => "a private address",
        (172, 16..=31, _) => "a private address",
        (100, 64..=127, _) => "a shared (carrier-grade NAT) address",
        (127, ..) => "a loopback address",
        (169, 254, _) => "a link-local address",
        (192, 0, 0) => "an IETF protocol address",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18..=19, _) => "a benchmarking address",
        (192, 88, 99) => "a 6to4 relay address",
        (224..=239, ..) => "a multicast address",
        (240..=255, ..) => "a reserved address",
        _ => return None,
    })
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    Some(match s {
        [0, 0, 0, 0, 0, 0, 0, 1] => "a loopback address",
        // IPv4-compatible (deprecated) and other addresses in ::/96 not handled above.
        [0, 0, 0, 0, 0, 0, ..] => "a reserved address",
        [0x64, 0xff9b, 1, ..] => "a local-use NAT64 address",
        [0x100, 0, 0, 0, ..] => "a discard-only address",
        [0x2001, 0, ..] => "a Teredo address",
        [0x2001, 0x0db8, ..] => "a documentation address",
        [0x2001, 0x0002, 0, ..] => "a benchmarking address",
        [0x2001, 0x10..=0x2f, ..] => "an ORCHID address",
        [first, ..] if first & 0xfe00 == 0xfc00 => "a unique local address",
        [first, ..] if first & 0xffc0 == 0xfe80 => "a link-local address",
        [first, ..] if first & 0xffc0 == 0xfec0 => "a site-local address",
        [first, ..] if first & 0xff00 == 0xff00 => "a multicast address",
        [first, ..] if first & 0xe000 != 0x2000 => "an address outside global unicast (2000::/3)",
        _ => return None,
    })
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), NAT64 well-known-prefix
/// (`64:ff9b::a.b.c.d`) or 6to4 (`2002:AABB:CCDD::`) IPv6 address.
fn embedded_v4(ip: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else { return None };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let from = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(from(hi, lo)),
        [0x2002, hi, lo, ..] => Some(from(hi, lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn private_loopback_link_local_cgnat_unique_local_and_multicast_are_not_public() {
        for text in [
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "169.254.169.254",
            "169.254.1.1",
            "100.64.0.1",
            "100.100.100.200",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.0.192",
            "::1",
            "::",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::7f00:1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2001::1",
            "2001:db8::1",
            "::127.0.0.1",
        ] {
            assert!(non_public(ip(text)).is_some(), "{text} counted as public");
        }
        for text in ["93.184.216.34", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert_eq!(non_public(ip(text)), None, "{text}");
        }
    }

    #[test]
    fn metadata_multicast_and_unspecified_are_never_reachable_even_when_listed() {
        for text in [
            "169.254.169.254",
            "fd00:ec2::254",
            "100.100.100.200",
            "::ffff:169.254.169.254",
            "0.0.0.0",
            "::",
            "224.0.0.1",
        ] {
            assert!(never_reachable(ip(text)).is_some(), "{text}");
        }
        for text in ["10.0.0.5", "127.0.0.1", "::1", "192.168.1.1"] {
            assert_eq!(never_reachable(ip(text)), None, "{text}: a listed literal may be private");
        }
        assert_eq!(never_reachable(ip("169.254.169.254")), Some("a cloud metadata address"));
    }
}
