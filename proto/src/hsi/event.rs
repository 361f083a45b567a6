//! Events: what the NIC tells the host, 64 bytes each (little-endian), written to the event
//! ring. Byte 0 is the kind; the rest depends on it:
//!
//! | kind | bytes |
//! |---|---|
//! | 1 completion | 1 status, 2 opcode, 3 flags (bit 0 imm valid), 4–7 conn, 8–9 Tag, 12–15 MSN, 16–19 SSN, 20–23 message length, 24–27 imm |
//! | 2 ACK | 1 flags (bit 0 ECN-echo), 2–3 flow, 4–7 conn, 8–11 cumulative FSN, 12–13 CE count, 14–15 refused (terminal refusals on the flow, wrapping), 16–19 rate hint (Mb/s), 20–23 timestamp echo, 32–63 SACK bitmap |
//! | 3 NAK | 1 reason, 2–3 flow, 4–7 conn, 8–11 FSN, 12–13 Tag, 16–19 MSN, 20–23 offset |
//! | 4 CM | 1 flags (bit 0 IPv6, bit 1 VLAN-tagged, bits 4–6 ingress port), 2–3 UDP source port, 4–7 BTH destination connection, 8–13 source MAC, 14–15 VLAN TCI, 16–31 source IP (IPv4-mapped for IPv4), 32–63 the CM message |
//! | 5 TX error | 1 reason, 2–3 flow, 4–7 conn, 8–11 FSN, 12 opcode |

use super::{EVENT_LEN, get_u16, get_u32, put_u16, put_u32};
use crate::wire::{CmRepr, EthernetAddress, NakReason, Opcode, SACK_BITS, transport::CM_LEN};
use serde::{Deserialize, Serialize};

/// The bits of a port number in an event.
const PORT_MASK: u8 = (super::regs::MAX_PORTS - 1) as u8;

/// Outcome of a received message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum CompletionStatus {
    /// Every byte placed.
    Success = 0,
    /// At least one packet was refused for a bad rkey, missing rights or bounds (Writes); nothing
    /// of those packets was written.
    RemoteAccessError = 1,
    /// The Send does not fit the posted receive buffer; nothing beyond it was written.
    LengthError = 2,
}

impl CompletionStatus {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Success,
            1 => Self::RemoteAccessError,
            2 => Self::LengthError,
            _ => return None,
        })
    }
}

/// Why a TX descriptor was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum TxErrorReason {
    /// Opcode is not a data opcode or CM.
    BadOpcode = 1,
    /// Connection id not in the table.
    UnknownConnection = 2,
    /// Flow beyond the connection's flow count.
    BadFlow = 3,
    /// Payload too long, or offset + payload beyond the message length, or a CM payload that
    /// is not one CM message.
    BadLength = 4,
    /// The payload DMA read failed.
    DmaError = 5,
    /// The port is at or beyond the NIC's port count.
    BadPort = 6,
}

impl TxErrorReason {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::BadOpcode,
            2 => Self::UnknownConnection,
            3 => Self::BadFlow,
            4 => Self::BadLength,
            5 => Self::DmaError,
            6 => Self::BadPort,
            _ => return None,
        })
    }
}

/// A NIC event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// A received message is complete: its last byte was placed (or accounted as refused).
    Completion {
        /// Local connection id.
        conn: u32,
        /// Tag.
        tag: u16,
        /// MSN.
        msn: u32,
        /// SSN (Sends: which posted receive buffer was consumed).
        ssn: u32,
        /// Opcode of the message.
        opcode: Opcode,
        /// Outcome.
        status: CompletionStatus,
        /// Message length.
        len: u32,
        /// Immediate data, for the immediate opcodes.
        imm: Option<u32>,
    },
    /// An ACK arrived for one of our flows.
    Ack {
        /// Local connection id.
        conn: u32,
        /// Flow.
        flow: u16,
        /// Cumulative FSN: every FSN before it was received.
        cum_fsn: u32,
        /// ECN-echo.
        ecn_echo: bool,
        /// CE-marked packets covered by this ACK.
        ce_count: u16,
        /// Terminal refusals (`RemoteAccess` / `InvalidRequest` NAKs) the receiver made on this
        /// flow since it was initialised, wrapping (the ACK's `refused` field).
        refused: u16,
        /// Receiver's rate hint (Mb/s).
        rate_hint_mbps: u32,
        /// Echoed timestamp.
        ts_echo: u32,
        /// SACK bitmap (bit `i` = FSN `cum_fsn + 1 + i`).
        sack: [u8; SACK_BITS / 8],
    },
    /// A NAK arrived.
    Nak {
        /// Local connection id.
        conn: u32,
        /// Flow.
        flow: u16,
        /// FSN of the refused packet.
        fsn: u32,
        /// Reason.
        reason: NakReason,
        /// Tag of the refused packet.
        tag: u16,
        /// MSN of the refused packet.
        msn: u32,
        /// Offset of the refused packet.
        offset: u32,
    },
    /// A connection-management packet arrived.
    Cm {
        /// Connection id from the BTH (0 for a connect request).
        dest_conn: u32,
        /// Sender's IP (IPv4-mapped for IPv4).
        src_ip: [u8; 16],
        /// Whether it came over IPv6.
        ipv6: bool,
        /// Sender's MAC.
        src_mac: EthernetAddress,
        /// VLAN TCI, if tagged.
        vlan_tci: Option<u16>,
        /// Sender's UDP source port.
        src_port: u16,
        /// NIC port (plane) it came in on.
        port: u8,
        /// The CM message.
        msg: CmRepr,
    },
    /// A TX descriptor was refused; nothing was sent.
    TxError {
        /// Connection id of the descriptor.
        conn: u32,
        /// Flow of the descriptor.
        flow: u16,
        /// FSN of the descriptor.
        fsn: u32,
        /// Raw opcode of the descriptor.
        opcode: u8,
        /// Why.
        reason: TxErrorReason,
    },
}

/// Event kind byte values.
pub mod kind {
    /// [`super::Event::Completion`].
    pub const COMPLETION: u8 = 1;
    /// [`super::Event::Ack`].
    pub const ACK: u8 = 2;
    /// [`super::Event::Nak`].
    pub const NAK: u8 = 3;
    /// [`super::Event::Cm`].
    pub const CM: u8 = 4;
    /// [`super::Event::TxError`].
    pub const TX_ERROR: u8 = 5;
}

/// Why 64 bytes are not an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadEvent;

impl Event {
    /// The event's 64 bytes.
    pub fn to_bytes(&self) -> [u8; EVENT_LEN] {
        let mut b = [0u8; EVENT_LEN];
        match *self {
            Event::Completion {
                conn,
                tag,
                msn,
                ssn,
                opcode,
                status,
                len,
                imm,
            } => {
                b[0] = kind::COMPLETION;
                b[1] = status as u8;
                b[2] = opcode as u8;
                b[3] = imm.is_some() as u8;
                put_u32(&mut b, 4, conn);
                put_u16(&mut b, 8, tag);
                put_u32(&mut b, 12, msn);
                put_u32(&mut b, 16, ssn);
                put_u32(&mut b, 20, len);
                put_u32(&mut b, 24, imm.unwrap_or(0));
            }
            Event::Ack {
                conn,
                flow,
                cum_fsn,
                ecn_echo,
                ce_count,
                refused,
                rate_hint_mbps,
                ts_echo,
                sack,
            } => {
                b[0] = kind::ACK;
                b[1] = ecn_echo as u8;
                put_u16(&mut b, 2, flow);
                put_u32(&mut b, 4, conn);
                put_u32(&mut b, 8, cum_fsn);
                put_u16(&mut b, 12, ce_count);
                put_u16(&mut b, 14, refused);
                put_u32(&mut b, 16, rate_hint_mbps);
                put_u32(&mut b, 20, ts_echo);
                b[32..64].copy_from_slice(&sack);
            }
            Event::Nak {
                conn,
                flow,
                fsn,
                reason,
                tag,
                msn,
                offset,
            } => {
                b[0] = kind::NAK;
                b[1] = reason as u8;
                put_u16(&mut b, 2, flow);
                put_u32(&mut b, 4, conn);
                put_u32(&mut b, 8, fsn);
                put_u16(&mut b, 12, tag);
                put_u32(&mut b, 16, msn);
                put_u32(&mut b, 20, offset);
            }
            Event::Cm {
                dest_conn,
                src_ip,
                ipv6,
                src_mac,
                vlan_tci,
                src_port,
                port,
                msg,
            } => {
                b[0] = kind::CM;
                b[1] = ipv6 as u8 | (vlan_tci.is_some() as u8) << 1 | (port & PORT_MASK) << 4;
                put_u16(&mut b, 2, src_port);
                put_u32(&mut b, 4, dest_conn);
                b[8..14].copy_from_slice(&src_mac.0);
                put_u16(&mut b, 14, vlan_tci.unwrap_or(0));
                b[16..32].copy_from_slice(&src_ip);
                b[32..32 + CM_LEN].copy_from_slice(&msg.to_bytes());
            }
            Event::TxError {
                conn,
                flow,
                fsn,
                opcode,
                reason,
            } => {
                b[0] = kind::TX_ERROR;
                b[1] = reason as u8;
                put_u16(&mut b, 2, flow);
                put_u32(&mut b, 4, conn);
                put_u32(&mut b, 8, fsn);
                b[12] = opcode;
            }
        }
        b
    }

    /// Decodes 64 bytes.
    pub fn from_bytes(b: &[u8; EVENT_LEN]) -> Result<Self, BadEvent> {
        Ok(match b[0] {
            kind::COMPLETION => Event::Completion {
                status: CompletionStatus::from_u8(b[1]).ok_or(BadEvent)?,
                opcode: Opcode::from_u8(b[2]).ok_or(BadEvent)?,
                conn: get_u32(b, 4),
                tag: get_u16(b, 8),
                msn: get_u32(b, 12),
                ssn: get_u32(b, 16),
                len: get_u32(b, 20),
                imm: (b[3] & 1 != 0).then(|| get_u32(b, 24)),
            },
            kind::ACK => Event::Ack {
                ecn_echo: b[1] & 1 != 0,
                flow: get_u16(b, 2),
                conn: get_u32(b, 4),
                cum_fsn: get_u32(b, 8),
                ce_count: get_u16(b, 12),
                refused: get_u16(b, 14),
                rate_hint_mbps: get_u32(b, 16),
                ts_echo: get_u32(b, 20),
                sack: b[32..64].try_into().map_err(|_| BadEvent)?,
            },
            kind::NAK => Event::Nak {
                reason: NakReason::from_u8(b[1]).ok_or(BadEvent)?,
                flow: get_u16(b, 2),
                conn: get_u32(b, 4),
                fsn: get_u32(b, 8),
                tag: get_u16(b, 12),
                msn: get_u32(b, 16),
                offset: get_u32(b, 20),
            },
            kind::CM => Event::Cm {
                ipv6: b[1] & 1 != 0,
                vlan_tci: (b[1] & 2 != 0).then(|| get_u16(b, 14)),
                src_port: get_u16(b, 2),
                port: (b[1] >> 4) & PORT_MASK,
                dest_conn: get_u32(b, 4),
                src_mac: EthernetAddress(b[8..14].try_into().map_err(|_| BadEvent)?),
                src_ip: b[16..32].try_into().map_err(|_| BadEvent)?,
                msg: CmRepr::parse_bytes(&b[32..64]).map_err(|_| BadEvent)?,
            },
            kind::TX_ERROR => Event::TxError {
                reason: TxErrorReason::from_u8(b[1]).ok_or(BadEvent)?,
                flow: get_u16(b, 2),
                conn: get_u32(b, 4),
                fsn: get_u32(b, 8),
                opcode: b[12],
            },
            _ => return Err(BadEvent),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::CmKind;

    #[test]
    fn every_kind_round_trips() {
        let mut sack = [0u8; 32];
        sack[0] = 0b101;
        sack[31] = 0x80;
        let events = [
            Event::Completion {
                conn: 5,
                tag: 7,
                msn: 11,
                ssn: 3,
                opcode: Opcode::SendImm,
                status: CompletionStatus::LengthError,
                len: 9000,
                imm: Some(42),
            },
            Event::Ack {
                conn: 1,
                flow: 2,
                cum_fsn: 0xfffffe,
                ecn_echo: true,
                ce_count: 3,
                refused: 0xa55a,
                rate_hint_mbps: 25_000,
                ts_echo: 123_456,
                sack,
            },
            Event::Nak {
                conn: 1,
                flow: 0,
                fsn: 77,
                reason: NakReason::OutOfWindow,
                tag: 1,
                msn: 2,
                offset: 4096,
            },
            Event::Cm {
                dest_conn: 0,
                src_ip: [0xfd; 16],
                ipv6: true,
                src_mac: EthernetAddress([2, 0, 0, 0, 0, 9]),
                vlan_tci: Some(100),
                src_port: 50000,
                port: 5,
                msg: CmRepr {
                    kind: CmKind::Request,
                    flags: 0,
                    path_count: 8,
                    src_conn: 12,
                    dst_conn: 0,
                    mtu: 4096,
                    tag_count: 4,
                    initial_fsn: 100,
                    rate_mbps: 100_000,
                    tag_modes: 0b1010,
                },
            },
            Event::TxError {
                conn: 9,
                flow: 1,
                fsn: 5,
                opcode: 0x11,
                reason: TxErrorReason::BadOpcode,
            },
        ];
        for e in events {
            assert_eq!(Event::from_bytes(&e.to_bytes()), Ok(e));
        }
        // ACK: CE count in bytes 12–13, refusal count in 14–15 (little-endian like every event).
        let ack = events[1].to_bytes();
        assert_eq!(ack[12..16], [3, 0, 0x5a, 0xa5]);
        assert_eq!(Event::from_bytes(&[0u8; 64]), Err(BadEvent));
    }
}
