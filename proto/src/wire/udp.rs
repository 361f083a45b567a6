//! UDP header. ferroce sends a zero checksum (the ICRC protects the packet, as in RoCEv2) and
//! ignores the checksum on receive.

use super::{ParseError, read_u16, write_u16};

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// The UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    /// Source port: the path entropy that ECMP hashes on.
    pub src_port: u16,
    /// Destination port (4791 unless reconfigured).
    pub dst_port: u16,
    /// Length of the UDP payload (BTH and everything after it).
    pub payload_len: usize,
}

impl UdpRepr {
    /// Parses the header at the start of `b`, which is the whole IP payload. The UDP length
    /// must equal the IP payload length and the destination port must be `expected_port`.
    pub fn parse(b: &[u8], expected_port: u16) -> Result<Self, ParseError> {
        if b.len() < HEADER_LEN {
            return Err(ParseError::Truncated);
        }
        let len = read_u16(b, 4) as usize;
        let dst_port = read_u16(b, 2);
        if len != b.len() || dst_port != expected_port {
            return Err(ParseError::BadUdp);
        }
        Ok(UdpRepr {
            src_port: read_u16(b, 0),
            dst_port,
            payload_len: len - HEADER_LEN,
        })
    }

    /// Writes the header (checksum 0) into the first 8 bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        write_u16(b, 0, self.src_port);
        write_u16(b, 2, self.dst_port);
        write_u16(b, 4, (HEADER_LEN + self.payload_len) as u16);
        write_u16(b, 6, 0);
    }
}
