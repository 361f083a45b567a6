//! The ferroce wire format.
//!
//! A ferroce frame is RoCEv2-shaped so that ordinary tools and switches see a familiar packet:
//!
//! ```text
//! Ethernet [802.1Q] / IPv4 | IPv6 / UDP (dst 4791, src = path entropy) / BTH (12 B)
//!     / ferroce transport header(s) / payload / ICRC (4 B)
//! ```
//!
//! Every header has a zero-copy view (`XxxPacket<T: AsRef<[u8]>>`) whose `new_checked` verifies
//! the length once, after which no accessor panics, and a `XxxRepr` with `parse`, `emit` and a
//! length. [`frame`] puts them together: [`frame::parse_frame`] is the one validation order that
//! the model and the RTL share, and [`frame::FrameRepr::emit`] builds complete frames, ICRC
//! included. `docs/wire-format.md` describes the same layout in prose.

pub mod bth;
pub mod ethernet;
pub mod frame;
pub mod icrc;
pub mod ip;
pub mod split;
pub mod transport;
pub mod udp;

pub use bth::{BthPacket, BthRepr, Opcode};
pub use ethernet::{EthernetAddress, EthernetRepr};
pub use frame::{Frame, FrameRepr, IcrcCheck, MAX_FRAME_LEN, parse_frame, parse_frame_checking};
pub use ip::{IpRepr, Ipv4Repr, Ipv6Repr};
pub use split::{FrameBuf, SharedBuf, SharedBytes, SplitFrame};
pub use transport::{
    AckRepr, CmKind, CmRepr, DataRepr, NakReason, NakRepr, RethRepr, TagPageError, TransportRepr,
};
pub use udp::UdpRepr;

/// The UDP destination port of RoCEv2, which ferroce keeps.
pub const ROCEV2_UDP_PORT: u16 = 4791;

/// FSNs (flow sequence numbers) are 24 bits wide: they live in the BTH PSN field.
pub const FSN_BITS: u32 = 24;
/// Mask of the valid FSN bits.
pub const FSN_MASK: u32 = (1 << FSN_BITS) - 1;
/// Width of the per-flow SACK bitmap, in FSNs above the cumulative FSN.
pub const SACK_BITS: usize = 256;

/// A byte range inside a header.
pub type Field = core::ops::Range<usize>;

/// Why a frame was not accepted by the parser. Each variant maps to one hardware counter
/// (see [`crate::hsi::Counter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// Shorter than a header it announces or needs; also an ACK, NAK or CM packet with bytes
    /// between its header and the ICRC (its length does not match its type).
    Truncated,
    /// EtherType is neither IPv4, IPv6 nor an 802.1Q tag carrying one of them.
    BadEtherType,
    /// IPv4 with options, fragments, a bad version or total length, or an IPv6 packet with a
    /// bad payload length.
    BadIpHeader,
    /// IPv4 header checksum does not verify.
    BadIpChecksum,
    /// The IP protocol / next header is not UDP (IPv6 extension headers are not supported).
    NotUdp,
    /// UDP destination port is not the configured RoCEv2 port, or the UDP length is wrong.
    BadUdp,
    /// BTH transport version, pad count or partition key is not what ferroce sends.
    BadBth,
    /// The BTH opcode is not a ferroce opcode, or a NAK reason or CM kind is unknown.
    BadOpcode,
    /// The invariant CRC does not match.
    BadIcrc,
    /// Longer than [`frame::MAX_FRAME_LEN`]: checked before anything else.
    TooLong,
}

impl ParseError {
    /// Every error, in the order of their codes (1, 2, ...).
    pub const ALL: [ParseError; 10] = [
        ParseError::Truncated,
        ParseError::BadEtherType,
        ParseError::BadIpHeader,
        ParseError::BadIpChecksum,
        ParseError::NotUdp,
        ParseError::BadUdp,
        ParseError::BadBth,
        ParseError::BadOpcode,
        ParseError::BadIcrc,
        ParseError::TooLong,
    ];

    /// The 4-bit code the RTL parser reports for this error (0 means "accepted").
    pub fn code(self) -> u8 {
        Self::ALL
            .iter()
            .position(|&e| e == self)
            .map_or(0, |i| i as u8 + 1)
    }

    /// The error with this code; `None` for 0 and for unknown codes.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get((code as usize).checked_sub(1)?).copied()
    }
}

#[inline]
pub(crate) fn read_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
pub(crate) fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline]
pub(crate) fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

#[inline]
pub(crate) fn write_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

#[inline]
pub(crate) fn write_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

#[inline]
pub(crate) fn write_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

/// Serial-number difference `a - b` over 24-bit FSNs, as a signed distance in
/// `-(2^23) ..= 2^23 - 1`. The model and the RTL both compare FSNs this way.
pub fn fsn_diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & FSN_MASK;
    if d & (1 << (FSN_BITS - 1)) != 0 {
        d as i32 - (1 << FSN_BITS)
    } else {
        d as i32
    }
}

/// `fsn + n` modulo 2^24.
pub fn fsn_add(fsn: u32, n: u32) -> u32 {
    fsn.wrapping_add(n) & FSN_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_error_codes_round_trip() {
        for e in ParseError::ALL {
            assert_eq!(ParseError::from_code(e.code()), Some(e));
            assert!((1..16).contains(&e.code()));
        }
        assert_eq!(ParseError::from_code(0), None);
    }

    #[test]
    fn fsn_serial_arithmetic_wraps() {
        assert_eq!(fsn_diff(5, 3), 2);
        assert_eq!(fsn_diff(3, 5), -2);
        assert_eq!(fsn_diff(1, FSN_MASK), 2);
        assert_eq!(fsn_diff(FSN_MASK, 1), -2);
        assert_eq!(fsn_add(FSN_MASK, 3), 2);
    }
}
