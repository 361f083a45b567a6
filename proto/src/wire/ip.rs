//! IPv4 (no options, no fragments) and IPv6 (no extension headers) headers.

use super::{ParseError, read_u16, write_u16};
use core::net::{Ipv4Addr, Ipv6Addr};

/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// Length of the IPv4 header ferroce uses (IHL = 5).
pub const IPV4_HEADER_LEN: usize = 20;
/// Length of the IPv6 fixed header.
pub const IPV6_HEADER_LEN: usize = 40;

/// ECN codepoint "ECN-capable transport (0)", set by ferroce senders on data packets.
pub const ECN_ECT0: u8 = 0b10;
/// ECN codepoint "congestion experienced", set by switches.
pub const ECN_CE: u8 = 0b11;

/// The Internet checksum (RFC 1071) of `data`.
pub fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The fields of an IPv4 header that ferroce reads or sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// DSCP (upper six bits of the TOS byte).
    pub dscp: u8,
    /// ECN codepoint (lower two bits of the TOS byte).
    pub ecn: u8,
    /// Time to live.
    pub ttl: u8,
    /// Identification field.
    pub ident: u16,
    /// Length of the IP payload (UDP header and everything after it).
    pub payload_len: usize,
}

/// The fields of an IPv6 header that ferroce reads or sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// DSCP (upper six bits of the traffic class).
    pub dscp: u8,
    /// ECN codepoint (lower two bits of the traffic class).
    pub ecn: u8,
    /// 20-bit flow label.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Length of the IP payload (UDP header and everything after it).
    pub payload_len: usize,
}

/// An IPv4 or IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpRepr {
    /// IPv4.
    V4(Ipv4Repr),
    /// IPv6.
    V6(Ipv6Repr),
}

impl Ipv4Repr {
    /// Parses and validates an IPv4 header at the start of `b` (version, IHL = 5, no fragments,
    /// total length within the buffer, header checksum, protocol UDP).
    pub fn parse(b: &[u8]) -> Result<Self, ParseError> {
        if b.len() < IPV4_HEADER_LEN {
            return Err(ParseError::Truncated);
        }
        if b[0] != 0x45 {
            return Err(ParseError::BadIpHeader);
        }
        let total_len = read_u16(b, 2) as usize;
        if total_len < IPV4_HEADER_LEN {
            return Err(ParseError::BadIpHeader);
        }
        if total_len > b.len() {
            return Err(ParseError::Truncated);
        }
        // More-fragments set or a fragment offset: ferroce never fragments.
        if read_u16(b, 6) & 0x3fff != 0 {
            return Err(ParseError::BadIpHeader);
        }
        if internet_checksum(&b[..IPV4_HEADER_LEN]) != 0 {
            return Err(ParseError::BadIpChecksum);
        }
        if b[9] != PROTO_UDP {
            return Err(ParseError::NotUdp);
        }
        Ok(Ipv4Repr {
            src: Ipv4Addr::from(<[u8; 4]>::try_from(&b[12..16]).unwrap_or_default()),
            dst: Ipv4Addr::from(<[u8; 4]>::try_from(&b[16..20]).unwrap_or_default()),
            dscp: b[1] >> 2,
            ecn: b[1] & 3,
            ttl: b[8],
            ident: read_u16(b, 4),
            payload_len: total_len - IPV4_HEADER_LEN,
        })
    }

    /// Writes the header (checksum included) into the first 20 bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = 0x45;
        b[1] = (self.dscp << 2) | (self.ecn & 3);
        write_u16(b, 2, (IPV4_HEADER_LEN + self.payload_len) as u16);
        write_u16(b, 4, self.ident);
        write_u16(b, 6, 0x4000); // don't fragment
        b[8] = self.ttl;
        b[9] = PROTO_UDP;
        write_u16(b, 10, 0);
        b[12..16].copy_from_slice(&self.src.octets());
        b[16..20].copy_from_slice(&self.dst.octets());
        let sum = internet_checksum(&b[..IPV4_HEADER_LEN]);
        write_u16(b, 10, sum);
    }
}

impl Ipv6Repr {
    /// Parses an IPv6 fixed header at the start of `b` (version 6, payload length within the
    /// buffer, next header UDP).
    pub fn parse(b: &[u8]) -> Result<Self, ParseError> {
        if b.len() < IPV6_HEADER_LEN {
            return Err(ParseError::Truncated);
        }
        if b[0] >> 4 != 6 {
            return Err(ParseError::BadIpHeader);
        }
        let payload_len = read_u16(b, 4) as usize;
        if IPV6_HEADER_LEN + payload_len > b.len() {
            return Err(ParseError::Truncated);
        }
        if b[6] != PROTO_UDP {
            return Err(ParseError::NotUdp);
        }
        let tc = (b[0] << 4) | (b[1] >> 4);
        Ok(Ipv6Repr {
            src: Ipv6Addr::from(<[u8; 16]>::try_from(&b[8..24]).unwrap_or_default()),
            dst: Ipv6Addr::from(<[u8; 16]>::try_from(&b[24..40]).unwrap_or_default()),
            dscp: tc >> 2,
            ecn: tc & 3,
            flow_label: u32::from_be_bytes([0, b[1] & 0x0f, b[2], b[3]]),
            hop_limit: b[7],
            payload_len,
        })
    }

    /// Writes the header into the first 40 bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        let tc = (self.dscp << 2) | (self.ecn & 3);
        let fl = self.flow_label & 0xf_ffff;
        b[0] = 0x60 | (tc >> 4);
        b[1] = (tc << 4) | (fl >> 16) as u8;
        b[2] = (fl >> 8) as u8;
        b[3] = fl as u8;
        write_u16(b, 4, self.payload_len as u16);
        b[6] = PROTO_UDP;
        b[7] = self.hop_limit;
        b[8..24].copy_from_slice(&self.src.octets());
        b[24..40].copy_from_slice(&self.dst.octets());
    }
}

impl IpRepr {
    /// Length of the IP header.
    pub fn header_len(&self) -> usize {
        match self {
            IpRepr::V4(_) => IPV4_HEADER_LEN,
            IpRepr::V6(_) => IPV6_HEADER_LEN,
        }
    }

    /// The ECN codepoint.
    pub fn ecn(&self) -> u8 {
        match self {
            IpRepr::V4(r) => r.ecn,
            IpRepr::V6(r) => r.ecn,
        }
    }

    /// Length of the IP payload.
    pub fn payload_len(&self) -> usize {
        match self {
            IpRepr::V4(r) => r.payload_len,
            IpRepr::V6(r) => r.payload_len,
        }
    }

    /// Sets the length of the IP payload.
    pub fn set_payload_len(&mut self, len: usize) {
        match self {
            IpRepr::V4(r) => r.payload_len = len,
            IpRepr::V6(r) => r.payload_len = len,
        }
    }

    /// Source address as 16 bytes (IPv4 as an IPv4-mapped IPv6 address), the form the tables use.
    pub fn src_bytes(&self) -> [u8; 16] {
        match self {
            IpRepr::V4(r) => r.src.to_ipv6_mapped().octets(),
            IpRepr::V6(r) => r.src.octets(),
        }
    }

    /// Destination address as 16 bytes (IPv4 as an IPv4-mapped IPv6 address).
    pub fn dst_bytes(&self) -> [u8; 16] {
        match self {
            IpRepr::V4(r) => r.dst.to_ipv6_mapped().octets(),
            IpRepr::V6(r) => r.dst.octets(),
        }
    }

    /// Writes the header into the start of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        match self {
            IpRepr::V4(r) => r.emit(b),
            IpRepr::V6(r) => r.emit(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_matches_rfc1071_example() {
        // The classic example header from RFC 1071 / Wikipedia.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(internet_checksum(&hdr), 0);
        let mut zeroed = hdr;
        zeroed[10] = 0;
        zeroed[11] = 0;
        assert_eq!(internet_checksum(&zeroed), 0xb861);
    }

    #[test]
    fn ipv4_round_trip_and_checksum_failure() {
        let repr = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            dscp: 26,
            ecn: ECN_CE,
            ttl: 64,
            ident: 7,
            payload_len: 8,
        };
        let mut b = [0u8; 28];
        repr.emit(&mut b);
        assert_eq!(Ipv4Repr::parse(&b), Ok(repr));
        b[8] = 63;
        assert_eq!(Ipv4Repr::parse(&b), Err(ParseError::BadIpChecksum));
    }

    #[test]
    fn ipv6_round_trip() {
        let repr = Ipv6Repr {
            src: "fd00::1".parse().unwrap(),
            dst: "fd00::2".parse().unwrap(),
            dscp: 10,
            ecn: ECN_ECT0,
            flow_label: 0xabcde,
            hop_limit: 64,
            payload_len: 0,
        };
        let mut b = [0u8; 40];
        repr.emit(&mut b);
        assert_eq!(Ipv6Repr::parse(&b), Ok(repr));
    }
}
