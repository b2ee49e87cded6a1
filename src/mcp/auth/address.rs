//! Where an IP address leads, for the sign-in rule "a server may not send us somewhere more
//! local than itself": public, private (RFC 1918, link-local, unique-local, CGNAT, multicast,
//! reserved) or this machine (loopback, unspecified). IPv6 forms that carry an IPv4 address
//! (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are classified as the IPv4 address they carry.
//!
//! Owns: the classification and the rule. Must not resolve names or do I/O.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// How local an address is; ordered from the least to the most local.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    Public,
    /// Another machine on a private or local network.
    Private,
    /// This machine.
    Loopback,
}

/// What an address is, and why, in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    pub reach: Reach,
    /// The range it falls in ("loopback (127.0.0.0/8)", "a public address", …).
    pub why: &'static str,
    /// The IPv4 address an IPv6 address carries, when it was classified as that.
    pub carries: Option<Ipv4Addr>,
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.carries {
            Some(v4) => write!(f, "{} (it carries the IPv4 address {v4})", self.why),
            None => f.write_str(self.why),
        }
    }
}

/// Whether a server of reach `server` may send us to an address of reach `target`: never
/// to anything more local than the server itself. A loopback server may name anything, a
/// server on a private network private or public addresses, a public server public ones.
pub fn permits(server: Reach, target: Reach) -> bool {
    target <= server
}

/// Classify one address.
pub fn classify(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4, None),
        IpAddr::V6(v6) => match carried_v4(v6) {
            Some(v4) => classify_v4(v4, Some(v4)),
            None => classify_v6(v6),
        },
    }
}

fn class(reach: Reach, why: &'static str, carries: Option<Ipv4Addr>) -> Class {
    Class {
        reach,
        why,
        carries,
    }
}

fn classify_v4(ip: Ipv4Addr, carries: Option<Ipv4Addr>) -> Class {
    let [a, b, ..] = ip.octets();
    let (reach, why) = if ip.is_loopback() {
        (Reach::Loopback, "a loopback address (127.0.0.0/8)")
    } else if a == 0 {
        (Reach::Loopback, "a this-host address (0.0.0.0/8)")
    } else if ip.is_private() {
        (
            Reach::Private,
            "a private address (10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)",
        )
    } else if ip.is_link_local() {
        (Reach::Private, "a link-local address (169.254.0.0/16)")
    } else if a == 100 && (b & 0xc0) == 64 {
        (
            Reach::Private,
            "a shared (carrier-grade NAT) address (100.64.0.0/10)",
        )
    } else if ip.is_multicast() {
        (Reach::Private, "a multicast address (224.0.0.0/4)")
    } else if a >= 240 {
        (
            Reach::Private,
            "a reserved or broadcast address (240.0.0.0/4)",
        )
    } else {
        (Reach::Public, "a public address")
    };
    class(reach, why, carries)
}

fn classify_v6(ip: Ipv6Addr) -> Class {
    let first = ip.segments()[0];
    let (reach, why) = if ip.is_loopback() {
        (Reach::Loopback, "the IPv6 loopback address (::1)")
    } else if ip.is_unspecified() {
        (Reach::Loopback, "the unspecified address (::)")
    } else if (first & 0xffc0) == 0xfe80 {
        (Reach::Private, "an IPv6 link-local address (fe80::/10)")
    } else if (first & 0xfe00) == 0xfc00 {
        (Reach::Private, "an IPv6 unique-local address (fc00::/7)")
    } else if (first & 0xffc0) == 0xfec0 {
        (Reach::Private, "an IPv6 site-local address (fec0::/10)")
    } else if ip.is_multicast() {
        (Reach::Private, "an IPv6 multicast address (ff00::/8)")
    } else {
        (Reach::Public, "a public address")
    };
    class(reach, why, None)
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`, not `::` or `::1`), NAT64 (`64:ff9b::a.b.c.d`) and 6to4
/// (`2002:AABB:CCDD::`).
fn carried_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if ip.is_loopback() || ip.is_unspecified() {
        return None;
    }
    if let Some(v4) = ip.to_ipv4() {
        // `::ffff:a.b.c.d` and `::a.b.c.d`
        return Some(v4);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(low(s[1], s[2]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach(s: &str) -> Reach {
        classify(s.parse().unwrap()).reach
    }

    #[test]
    fn ipv4_ranges_are_classified() {
        for (ip, want) in [
            ("127.0.0.1", Reach::Loopback),
            ("127.255.255.254", Reach::Loopback),
            ("0.0.0.0", Reach::Loopback),
            ("0.1.2.3", Reach::Loopback),
            ("10.0.0.1", Reach::Private),
            ("172.16.0.1", Reach::Private),
            ("172.31.255.255", Reach::Private),
            ("192.168.1.1", Reach::Private),
            ("169.254.169.254", Reach::Private),
            ("100.64.0.1", Reach::Private),
            ("100.127.255.255", Reach::Private),
            ("224.0.0.1", Reach::Private),
            ("255.255.255.255", Reach::Private),
            ("172.32.0.1", Reach::Public),
            ("100.128.0.1", Reach::Public),
            ("8.8.8.8", Reach::Public),
            ("93.184.216.34", Reach::Public),
        ] {
            assert_eq!(reach(ip), want, "{ip}");
        }
    }

    #[test]
    fn ipv6_ranges_are_classified() {
        for (ip, want) in [
            ("::1", Reach::Loopback),
            ("::", Reach::Loopback),
            ("fe80::1", Reach::Private),
            ("febf::1", Reach::Private),
            ("fc00::1", Reach::Private),
            ("fd12:3456::1", Reach::Private),
            ("fec0::1", Reach::Private),
            ("ff02::1", Reach::Private),
            ("2001:4860:4860::8888", Reach::Public),
            ("fe7f::1", Reach::Public),
        ] {
            assert_eq!(reach(ip), want, "{ip}");
        }
    }

    #[test]
    fn ipv6_forms_of_ipv4_addresses_are_classified_as_the_ipv4_address() {
        for (ip, want, carried) in [
            ("::ffff:127.0.0.1", Reach::Loopback, "127.0.0.1"),
            ("::ffff:10.0.0.1", Reach::Private, "10.0.0.1"),
            ("::ffff:169.254.169.254", Reach::Private, "169.254.169.254"),
            ("::ffff:0.0.0.0", Reach::Loopback, "0.0.0.0"),
            ("::ffff:8.8.8.8", Reach::Public, "8.8.8.8"),
            ("::127.0.0.1", Reach::Loopback, "127.0.0.1"),
            ("::192.168.0.1", Reach::Private, "192.168.0.1"),
            ("64:ff9b::10.0.0.1", Reach::Private, "10.0.0.1"),
            ("2002:7f00:1::", Reach::Loopback, "127.0.0.1"),
        ] {
            let c = classify(ip.parse().unwrap());
            assert_eq!(c.reach, want, "{ip}");
            assert_eq!(c.carries, Some(carried.parse().unwrap()), "{ip}");
            if want != Reach::Public {
                assert!(c.to_string().contains(carried), "{ip}: {c}");
            }
        }
    }

    #[test]
    fn the_reason_names_the_range() {
        assert!(
            classify("169.254.169.254".parse().unwrap())
                .why
                .contains("link-local")
        );
        assert!(
            classify("fe80::1".parse().unwrap())
                .why
                .contains("fe80::/10")
        );
        assert!(classify("::1".parse().unwrap()).why.contains("loopback"));
    }

    #[test]
    fn nothing_may_be_more_local_than_the_server() {
        use Reach::*;
        assert!(permits(Public, Public));
        assert!(!permits(Public, Private));
        assert!(!permits(Public, Loopback));
        assert!(permits(Private, Private));
        assert!(permits(Private, Public));
        assert!(!permits(Private, Loopback));
        assert!(permits(Loopback, Loopback));
        assert!(permits(Loopback, Private));
    }
}
