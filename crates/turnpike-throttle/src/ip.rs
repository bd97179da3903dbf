//! IP conditions: one address, a CIDR block or a range, matched as a 128-bit interval
//! (IPv4 as IPv4-mapped IPv6) so a check is two integer compares.

use std::net::IpAddr;

/// An inclusive interval of addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    lo: u128,
    hi: u128,
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => u128::from(v4.to_ipv6_mapped()),
            None => u128::from(v6),
        },
    }
}

impl IpRange {
    /// Parses `10.1.2.3`, `10.0.0.0/8`, `2001:db8::/32` or `10.0.0.1-10.0.0.99`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Some((a, b)) = s.split_once('-') {
            let lo = parse_ip(a)?;
            let hi = parse_ip(b)?;
            if lo.is_ipv4() != hi.is_ipv4() {
                return Err(format!("range {s:?} mixes IPv4 and IPv6"));
            }
            let (lo, hi) = (to_u128(lo), to_u128(hi));
            if lo > hi {
                return Err(format!("range {s:?} ends before it starts"));
            }
            return Ok(IpRange { lo, hi });
        }
        if let Some((a, len)) = s.split_once('/') {
            let ip = parse_ip(a)?;
            let len: u32 = len
                .parse()
                .map_err(|_| format!("{len:?} is not a prefix length"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            if len > max {
                return Err(format!("prefix /{len} is longer than {max} bits"));
            }
            let host_bits = max - len;
            let mask: u128 = if host_bits == 128 {
                u128::MAX
            } else {
                (1u128 << host_bits) - 1
            };
            let base = to_u128(ip) & !mask;
            return Ok(IpRange {
                lo: base,
                hi: base | mask,
            });
        }
        let ip = to_u128(parse_ip(s)?);
        Ok(IpRange { lo: ip, hi: ip })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let v = to_u128(ip);
        self.lo <= v && v <= self.hi
    }
}

fn parse_ip(s: &str) -> Result<IpAddr, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("{:?} is not an IP address", s.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    #[test]
    fn parses_addresses_blocks_and_ranges() {
        let r = IpRange::parse("10.0.0.0/8").expect("cidr");
        assert!(r.contains(ip("10.255.1.2")));
        assert!(!r.contains(ip("11.0.0.0")));
        assert!(r.contains(ip("::ffff:10.1.1.1")));
        let r = IpRange::parse("192.168.1.10-192.168.1.20").expect("range");
        assert!(r.contains(ip("192.168.1.15")));
        assert!(!r.contains(ip("192.168.1.21")));
        let r = IpRange::parse("2001:db8::/32").expect("v6");
        assert!(r.contains(ip("2001:db8::1")));
        assert!(!r.contains(ip("2001:db9::1")));
        assert!(IpRange::parse("0.0.0.0/0")
            .expect("all")
            .contains(ip("8.8.8.8")));
        assert!(IpRange::parse("1.2.3.4")
            .expect("one")
            .contains(ip("1.2.3.4")));
        assert!(IpRange::parse("1.2.3.4/33").is_err());
        assert!(IpRange::parse("1.2.3.9-1.2.3.1").is_err());
        assert!(IpRange::parse("nope").is_err());
    }
}
