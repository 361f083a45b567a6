//! The TX descriptor: one packet for the NIC to build and send. The host library decides every
//! packet's flow, FSN and entropy (that is where retransmission and spraying live); the NIC
//! builds the headers, reads the payload by DMA, stamps the time and appends the ICRC.
//!
//! Layout (64 bytes, little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0 | opcode (a data opcode or `Cm`) |
//! | 1 | flags: bit 0 AckReq, bit 1 solicited |
//! | 2–3 | flow |
//! | 4–7 | local connection id |
//! | 8–11 | FSN (24 bits) |
//! | 12–13 | entropy (UDP source port) |
//! | 14–15 | Tag |
//! | 16–19 | MSN |
//! | 20–23 | SSN |
//! | 24–27 | byte offset in the message |
//! | 28–31 | message length |
//! | 32–35 | payload length of this packet |
//! | 36–39 | immediate data |
//! | 40–47 | payload DMA address |
//! | 48–55 | remote VA of this packet's first byte (Writes) |
//! | 56–59 | rkey (Writes) |
//! | 60 | NIC port (plane) the frame leaves on: MAC stream `tdest` |
//! | 61–63 | reserved, zero |

use super::{TX_DESCRIPTOR_LEN, get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use crate::wire::Opcode;
use serde::{Deserialize, Serialize};

/// Descriptor flag: set AckReq in the BTH.
pub const FLAG_ACK_REQ: u8 = 0x01;
/// Descriptor flag: set the solicited-event bit in the BTH.
pub const FLAG_SOLICITED: u8 = 0x02;

/// One packet to transmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TxDescriptor {
    /// Raw opcode byte (see [`Opcode`]); anything but a data opcode or `Cm` is refused.
    pub opcode: u8,
    /// `FLAG_*` bits.
    pub flags: u8,
    /// Flow (path) index within the connection.
    pub flow: u16,
    /// Local connection id (index in the connection table).
    pub conn: u32,
    /// Flow sequence number (24 bits).
    pub fsn: u32,
    /// UDP source port: the path entropy.
    pub entropy: u16,
    /// Tag.
    pub tag: u16,
    /// Message sequence number within the Tag.
    pub msn: u32,
    /// Send sequence number within the Tag (Sends only).
    pub ssn: u32,
    /// Byte offset of this packet in the message.
    pub offset: u32,
    /// Message length.
    pub msg_len: u32,
    /// Payload length of this packet.
    pub payload_len: u32,
    /// Immediate data (immediate opcodes only).
    pub imm: u32,
    /// DMA address of the payload in host memory.
    pub local_addr: u64,
    /// Remote VA of this packet's first byte (Writes only).
    pub remote_va: u64,
    /// Remote key (Writes only).
    pub rkey: u32,
    /// NIC port (plane) to send on; at or beyond the NIC's port count the descriptor is
    /// refused ([`super::event::TxErrorReason::BadPort`]).
    pub port: u8,
}

impl TxDescriptor {
    /// The descriptor's 64 bytes.
    pub fn to_bytes(&self) -> [u8; TX_DESCRIPTOR_LEN] {
        let mut b = [0u8; TX_DESCRIPTOR_LEN];
        b[0] = self.opcode;
        b[1] = self.flags;
        put_u16(&mut b, 2, self.flow);
        put_u32(&mut b, 4, self.conn);
        put_u32(&mut b, 8, self.fsn);
        put_u16(&mut b, 12, self.entropy);
        put_u16(&mut b, 14, self.tag);
        put_u32(&mut b, 16, self.msn);
        put_u32(&mut b, 20, self.ssn);
        put_u32(&mut b, 24, self.offset);
        put_u32(&mut b, 28, self.msg_len);
        put_u32(&mut b, 32, self.payload_len);
        put_u32(&mut b, 36, self.imm);
        put_u64(&mut b, 40, self.local_addr);
        put_u64(&mut b, 48, self.remote_va);
        put_u32(&mut b, 56, self.rkey);
        b[60] = self.port;
        b
    }

    /// Decodes 64 bytes (reserved bytes are ignored).
    pub fn from_bytes(b: &[u8; TX_DESCRIPTOR_LEN]) -> Self {
        TxDescriptor {
            opcode: b[0],
            flags: b[1],
            flow: get_u16(b, 2),
            conn: get_u32(b, 4),
            fsn: get_u32(b, 8),
            entropy: get_u16(b, 12),
            tag: get_u16(b, 14),
            msn: get_u32(b, 16),
            ssn: get_u32(b, 20),
            offset: get_u32(b, 24),
            msg_len: get_u32(b, 28),
            payload_len: get_u32(b, 32),
            imm: get_u32(b, 36),
            local_addr: get_u64(b, 40),
            remote_va: get_u64(b, 48),
            rkey: get_u32(b, 56),
            port: b[60],
        }
    }

    /// The decoded opcode, if valid.
    pub fn opcode(&self) -> Option<Opcode> {
        Opcode::from_u8(self.opcode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let d = TxDescriptor {
            opcode: Opcode::WriteImm as u8,
            flags: FLAG_ACK_REQ,
            flow: 3,
            conn: 17,
            fsn: 0xabcdef,
            entropy: 49152,
            tag: 2,
            msn: 9,
            ssn: 0,
            offset: 4096,
            msg_len: 10000,
            payload_len: 4096,
            imm: 0xdeadbeef,
            local_addr: 0x1000_2000,
            remote_va: 0x7f00_0000_1000,
            rkey: 0x0305,
            port: 2,
        };
        let b = d.to_bytes();
        assert_eq!(b[0], 0xC3);
        assert_eq!(&b[8..12], &[0xef, 0xcd, 0xab, 0]);
        assert_eq!(b[60], 2);
        assert_eq!(TxDescriptor::from_bytes(&b), d);
    }
}
