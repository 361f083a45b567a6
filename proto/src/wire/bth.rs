//! The 12-byte Base Transport Header, laid out exactly as InfiniBand / RoCEv2 defines it so that
//! Wireshark's dissector and RoCE-aware switches read it. ferroce uses opcodes from the
//! manufacturer-specific range 0xC0–0xFF, the destination QP field for the receiver's
//! connection id and the PSN field for the 24-bit flow sequence number (FSN).

use super::{Field, ParseError, read_u16, read_u32, write_u16, write_u32};
use serde::{Deserialize, Serialize};

/// Length of the BTH.
pub const HEADER_LEN: usize = 12;
/// The partition key ferroce sends and expects (the default partition).
pub const DEFAULT_PKEY: u16 = 0xFFFF;

mod field {
    use super::Field;
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const PKEY: Field = 2..4;
    pub const ECN_FLAGS: usize = 4;
    pub const DEST_QP: Field = 4..8; // low 24 bits
    pub const PSN: Field = 8..12; // low 24 bits, bit 31 = AckReq
}

/// The ferroce packet types, as BTH opcodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum Opcode {
    /// Send: placed into the receive buffer posted for its Tag and MSN.
    Send = 0xC0,
    /// Send with 32-bit immediate data.
    SendImm = 0xC1,
    /// RDMA Write: placed at the remote address it carries, checked against the rkey's region.
    Write = 0xC2,
    /// RDMA Write with 32-bit immediate data.
    WriteImm = 0xC3,
    /// Selective acknowledgement of one flow.
    Ack = 0xC8,
    /// Negative acknowledgement with a reason.
    Nak = 0xC9,
    /// Connection management, handed to the host.
    Cm = 0xCA,
}

impl Opcode {
    /// Decodes a BTH opcode byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0xC0 => Opcode::Send,
            0xC1 => Opcode::SendImm,
            0xC2 => Opcode::Write,
            0xC3 => Opcode::WriteImm,
            0xC8 => Opcode::Ack,
            0xC9 => Opcode::Nak,
            0xCA => Opcode::Cm,
            _ => return None,
        })
    }

    /// True for the data opcodes (Send, Write and their immediate forms).
    pub fn is_data(self) -> bool {
        matches!(
            self,
            Opcode::Send | Opcode::SendImm | Opcode::Write | Opcode::WriteImm
        )
    }

    /// True for the Write opcodes, which carry a RETH.
    pub fn is_write(self) -> bool {
        matches!(self, Opcode::Write | Opcode::WriteImm)
    }

    /// True for the opcodes that carry 32-bit immediate data.
    pub fn has_imm(self) -> bool {
        matches!(self, Opcode::SendImm | Opcode::WriteImm)
    }

    /// Short lower-case name, as in reports and the Wireshark dissector.
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Send => "send",
            Opcode::SendImm => "send_imm",
            Opcode::Write => "write",
            Opcode::WriteImm => "write_imm",
            Opcode::Ack => "ack",
            Opcode::Nak => "nak",
            Opcode::Cm => "cm",
        }
    }
}

/// A zero-copy view of a BTH.
#[derive(Debug, Clone, Copy)]
pub struct BthPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> BthPacket<T> {
    /// Wraps `buffer` after checking that it holds a whole BTH.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(ParseError::Truncated);
        }
        Ok(BthPacket { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Raw opcode byte.
    pub fn opcode_raw(&self) -> u8 {
        self.b()[field::OPCODE]
    }
    /// Solicited event bit.
    pub fn solicited(&self) -> bool {
        self.b()[field::FLAGS] & 0x80 != 0
    }
    /// Pad count (ferroce requires 0).
    pub fn pad_count(&self) -> u8 {
        (self.b()[field::FLAGS] >> 4) & 3
    }
    /// Transport header version (ferroce requires 0).
    pub fn tver(&self) -> u8 {
        self.b()[field::FLAGS] & 0x0f
    }
    /// Partition key.
    pub fn pkey(&self) -> u16 {
        read_u16(self.b(), field::PKEY.start)
    }
    /// FECN/BECN/reserved byte (ignored; the ICRC masks it).
    pub fn ecn_flags(&self) -> u8 {
        self.b()[field::ECN_FLAGS]
    }
    /// Destination QP: the receiver's connection id.
    pub fn dest_qp(&self) -> u32 {
        read_u32(self.b(), field::DEST_QP.start) & 0x00ff_ffff
    }
    /// AckReq bit: ask the receiver to acknowledge this flow now.
    pub fn ack_req(&self) -> bool {
        self.b()[field::PSN.start] & 0x80 != 0
    }
    /// PSN: the FSN for data packets, the cumulative FSN for ACKs.
    pub fn psn(&self) -> u32 {
        read_u32(self.b(), field::PSN.start) & 0x00ff_ffff
    }
}

/// The BTH fields ferroce uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BthRepr {
    /// Packet type.
    pub opcode: Opcode,
    /// Solicited event bit.
    pub solicited: bool,
    /// Receiver's connection id (24 bits).
    pub dest_conn: u32,
    /// AckReq bit.
    pub ack_req: bool,
    /// 24-bit PSN field (FSN).
    pub psn: u32,
}

impl BthRepr {
    /// Parses a checked view, rejecting anything ferroce does not send.
    pub fn parse<T: AsRef<[u8]>>(p: &BthPacket<T>) -> Result<Self, ParseError> {
        if p.tver() != 0 || p.pad_count() != 0 || p.pkey() != DEFAULT_PKEY {
            return Err(ParseError::BadBth);
        }
        let opcode = Opcode::from_u8(p.opcode_raw()).ok_or(ParseError::BadOpcode)?;
        Ok(BthRepr {
            opcode,
            solicited: p.solicited(),
            dest_conn: p.dest_qp(),
            ack_req: p.ack_req(),
            psn: p.psn(),
        })
    }

    /// Writes the BTH into the first 12 bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        b[field::OPCODE] = self.opcode as u8;
        b[field::FLAGS] = if self.solicited { 0x80 } else { 0 };
        write_u16(b, field::PKEY.start, DEFAULT_PKEY);
        write_u32(b, field::DEST_QP.start, self.dest_conn & 0x00ff_ffff);
        write_u32(
            b,
            field::PSN.start,
            (self.psn & 0x00ff_ffff) | if self.ack_req { 0x8000_0000 } else { 0 },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_bth_decodes() {
        let bytes = [
            0xC2, 0x00, 0xff, 0xff, 0x00, 0x00, 0x12, 0x34, 0x80, 0xab, 0xcd, 0xef,
        ];
        let p = BthPacket::new_checked(&bytes[..]).unwrap();
        let r = BthRepr::parse(&p).unwrap();
        assert_eq!(r.opcode, Opcode::Write);
        assert_eq!(r.dest_conn, 0x1234);
        assert!(r.ack_req);
        assert_eq!(r.psn, 0xabcdef);
        let mut out = [0u8; 12];
        r.emit(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn rejects_foreign_bth() {
        let mut bytes = [0xC2, 0x00, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 1];
        bytes[0] = 0x04; // RC SEND ONLY
        let p = BthPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(BthRepr::parse(&p), Err(ParseError::BadOpcode));
        bytes[0] = 0xC0;
        bytes[1] = 0x30; // pad count 3
        let p = BthPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(BthRepr::parse(&p), Err(ParseError::BadBth));
        assert!(BthPacket::new_checked(&bytes[..11]).is_err());
    }
}
