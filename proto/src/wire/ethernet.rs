//! Ethernet II header with an optional 802.1Q tag.

use super::{ParseError, read_u16, write_u16};
use core::fmt;
use serde::{Deserialize, Serialize};

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// EtherType (TPID) of an 802.1Q VLAN tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;

/// Length of an untagged Ethernet header.
pub const HEADER_LEN: usize = 14;
/// Length of an 802.1Q tag.
pub const VLAN_TAG_LEN: usize = 4;

/// A 48-bit MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct EthernetAddress(pub [u8; 6]);

impl fmt::Debug for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl core::str::FromStr for EthernetAddress {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in &mut out {
            let p = parts.next().ok_or("MAC address needs six bytes")?;
            *byte = u8::from_str_radix(p, 16).map_err(|_| "MAC address byte is not hex")?;
        }
        if parts.next().is_some() {
            return Err("MAC address has more than six bytes");
        }
        Ok(EthernetAddress(out))
    }
}

impl EthernetAddress {
    /// Packs the address into the low 48 bits of a `u64` (byte 0 most significant), the form the
    /// register map uses.
    pub fn to_u64(self) -> u64 {
        self.0.iter().fold(0, |acc, &b| (acc << 8) | b as u64)
    }

    /// The inverse of [`EthernetAddress::to_u64`].
    pub fn from_u64(v: u64) -> Self {
        let b = v.to_be_bytes();
        EthernetAddress([b[2], b[3], b[4], b[5], b[6], b[7]])
    }
}

/// The parsed Ethernet header: addresses, optional VLAN TCI and the inner EtherType.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    /// Destination MAC.
    pub dst: EthernetAddress,
    /// Source MAC.
    pub src: EthernetAddress,
    /// 802.1Q tag control information (PCP, DEI, VID) when the frame is tagged.
    pub vlan_tci: Option<u16>,
    /// EtherType of the payload (IPv4 or IPv6 for ferroce frames).
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Parses the header at the start of `frame`; only IPv4 and IPv6 payloads are accepted.
    pub fn parse(frame: &[u8]) -> Result<Self, ParseError> {
        if frame.len() < HEADER_LEN {
            return Err(ParseError::Truncated);
        }
        let dst = EthernetAddress(frame[0..6].try_into().unwrap_or_default());
        let src = EthernetAddress(frame[6..12].try_into().unwrap_or_default());
        let mut ethertype = read_u16(frame, 12);
        let mut vlan_tci = None;
        if ethertype == ETHERTYPE_VLAN {
            if frame.len() < HEADER_LEN + VLAN_TAG_LEN {
                return Err(ParseError::Truncated);
            }
            vlan_tci = Some(read_u16(frame, 14));
            ethertype = read_u16(frame, 16);
        }
        if ethertype != ETHERTYPE_IPV4 && ethertype != ETHERTYPE_IPV6 {
            return Err(ParseError::BadEtherType);
        }
        Ok(EthernetRepr {
            dst,
            src,
            vlan_tci,
            ethertype,
        })
    }

    /// Length of the header, VLAN tag included.
    pub fn header_len(&self) -> usize {
        HEADER_LEN
            + if self.vlan_tci.is_some() {
                VLAN_TAG_LEN
            } else {
                0
            }
    }

    /// Writes the header into the start of `buf`, which must hold [`Self::header_len`] bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[0..6].copy_from_slice(&self.dst.0);
        buf[6..12].copy_from_slice(&self.src.0);
        match self.vlan_tci {
            Some(tci) => {
                write_u16(buf, 12, ETHERTYPE_VLAN);
                write_u16(buf, 14, tci);
                write_u16(buf, 16, self.ethertype);
            }
            None => write_u16(buf, 12, self.ethertype),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tagged_header() {
        let bytes = [
            0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x81, 0x00, 0x20, 0x0a, 0x86, 0xdd,
        ];
        let repr = EthernetRepr::parse(&bytes).unwrap();
        assert_eq!(repr.vlan_tci, Some(0x200a));
        assert_eq!(repr.ethertype, ETHERTYPE_IPV6);
        assert_eq!(repr.header_len(), 18);
        let mut out = [0u8; 18];
        repr.emit(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn rejects_arp_and_short_frames() {
        let mut bytes = [0u8; 14];
        bytes[12] = 0x08;
        bytes[13] = 0x06;
        assert_eq!(EthernetRepr::parse(&bytes), Err(ParseError::BadEtherType));
        assert_eq!(
            EthernetRepr::parse(&bytes[..13]),
            Err(ParseError::Truncated)
        );
    }

    #[test]
    fn mac_round_trips_through_u64_and_text() {
        let mac: EthernetAddress = "02:1b:21:aa:bb:cc".parse().unwrap();
        assert_eq!(EthernetAddress::from_u64(mac.to_u64()), mac);
        assert_eq!(mac.to_string(), "02:1b:21:aa:bb:cc");
        assert!("02:1b:21".parse::<EthernetAddress>().is_err());
    }
}
