//! The ferroce transport headers that follow the BTH: data (FDH, RETH, immediate), ACK with
//! SACK, NAK and connection management (CM). All multi-byte fields are big-endian.

use super::{
    Field, ParseError, SACK_BITS, bth::Opcode, read_u16, read_u32, read_u64, write_u16, write_u32,
    write_u64,
};
use serde::{Deserialize, Serialize};

/// Length of the ferroce data header (FDH).
pub const FDH_LEN: usize = 24;
/// Length of the RDMA extended transport header carried by Writes.
pub const RETH_LEN: usize = 12;
/// Length of the immediate data field.
pub const IMM_LEN: usize = 4;
/// Length of the ACK header.
pub const ACK_LEN: usize = 48;
/// Length of the NAK header.
pub const NAK_LEN: usize = 16;
/// Length of the CM message.
pub const CM_LEN: usize = 32;

/// Byte ranges of the ferroce data header (FDH) fields, from the first byte after the BTH.
pub mod fdh {
    use super::Field;
    /// The `flow` field.
    pub const FLOW: Field = 0..2;
    /// The `tag` field.
    pub const TAG: Field = 2..4;
    /// The `msn` field.
    pub const MSN: Field = 4..8;
    /// The `ssn` field.
    pub const SSN: Field = 8..12;
    /// The `offset` field.
    pub const OFFSET: Field = 12..16;
    /// The `msg_len` field.
    pub const MSG_LEN: Field = 16..20;
    /// The `timestamp` field.
    pub const TIMESTAMP: Field = 20..24;
}

/// Byte ranges of the RETH fields, from the RETH's first byte (after the FDH).
pub mod reth {
    use super::Field;
    /// The `va` field.
    pub const VA: Field = 0..8;
    /// The `rkey` field.
    pub const RKEY: Field = 8..12;
}

/// Byte ranges of the ACK header fields, from the first byte after the BTH.
pub mod ack {
    use super::Field;
    /// The `flow` field.
    pub const FLOW: Field = 0..2;
    /// The `flags` field.
    pub const FLAGS: usize = 2;
    /// The `ce_count` field.
    pub const CE_COUNT: Field = 4..6;
    /// The `refused` field.
    pub const REFUSED: Field = 6..8;
    /// The `rate_hint` field.
    pub const RATE_HINT: Field = 8..12;
    /// The `ts_echo` field.
    pub const TS_ECHO: Field = 12..16;
    /// The `sack` field.
    pub const SACK: Field = 16..48;
    /// The `flag_ece` field.
    pub const FLAG_ECE: u8 = 0x01;
}

/// Byte ranges of the NAK header fields, from the first byte after the BTH.
pub mod nak {
    use super::Field;
    /// The `flow` field.
    pub const FLOW: Field = 0..2;
    /// The `reason` field.
    pub const REASON: usize = 2;
    /// The `tag` field.
    pub const TAG: Field = 4..6;
    /// The `msn` field.
    pub const MSN: Field = 8..12;
    /// The `offset` field.
    pub const OFFSET: Field = 12..16;
}

/// Byte ranges of the CM message fields, from the first byte after the BTH.
pub mod cm {
    use super::Field;
    /// The `kind` field.
    pub const KIND: usize = 0;
    /// The `flags` field.
    pub const FLAGS: usize = 1;
    /// The `path_count` field.
    pub const PATH_COUNT: Field = 2..4;
    /// The page index of a `TagModes` message: the same bytes as `path_count`, which a
    /// `TagModes` message does not carry.
    pub const PAGE: Field = PATH_COUNT;
    /// The `src_conn` field.
    pub const SRC_CONN: Field = 4..8;
    /// The `dst_conn` field.
    pub const DST_CONN: Field = 8..12;
    /// The `mtu` field.
    pub const MTU: Field = 12..14;
    /// The `tag_count` field.
    pub const TAG_COUNT: Field = 14..16;
    /// The `initial_fsn` field.
    pub const INITIAL_FSN: Field = 16..20;
    /// The `rate` field.
    pub const RATE: Field = 20..24;
    /// The `tag_modes` field.
    pub const TAG_MODES: Field = 24..32;
    /// Tags whose completion modes one `tag_modes` field carries (one page).
    pub const TAGS_PER_PAGE: usize = 64;
}

/// The RDMA extended transport header of a Write: where this packet's first byte goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RethRepr {
    /// Remote virtual address of this packet's first payload byte (not of the message).
    pub va: u64,
    /// Remote key of the memory region.
    pub rkey: u32,
}

/// A data packet's transport headers: enough to place the payload on its own, in any order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataRepr {
    /// Flow (path) index within the connection.
    pub flow: u16,
    /// Message stream the message belongs to.
    pub tag: u16,
    /// Message sequence number within the Tag: the completion order of all messages (Sends
    /// and Writes) of the Tag.
    pub msn: u32,
    /// Send sequence number within the Tag: which posted receive buffer a Send consumes (the
    /// n-th Send of a Tag takes the n-th receive posted on it). Zero for Writes.
    pub ssn: u32,
    /// Byte offset of this packet's payload within the message.
    pub offset: u32,
    /// Total message length in bytes.
    pub msg_len: u32,
    /// Sender's transmit timestamp (nanoseconds, wrapping), echoed in ACKs for RTT.
    pub timestamp: u32,
    /// Present exactly for Write opcodes.
    pub reth: Option<RethRepr>,
    /// Present exactly for the immediate opcodes.
    pub imm: Option<u32>,
}

/// A selective acknowledgement of one flow. The cumulative FSN travels in the BTH PSN: it is the
/// next FSN the receiver expects (every FSN before it was received, it itself was not), and bit
/// `i` of the SACK bitmap reports FSN `cum + 1 + i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckRepr {
    /// Flow being acknowledged.
    pub flow: u16,
    /// ECN-echo: at least one packet covered by this ACK arrived CE-marked.
    pub ecn_echo: bool,
    /// Number of CE-marked packets since the previous ACK of this flow (saturating).
    pub ce_count: u16,
    /// Terminal refusals on this flow since the receiver initialised it (wrapping): data
    /// packets consumed with a `RemoteAccess` or `InvalidRequest` NAK. A sender that learned
    /// fewer refusals from NAKs than this lost a NAK, and must not report success for the
    /// packets this ACK newly covers.
    pub refused: u16,
    /// The receiver's fair-share rate hint for this sender, in Mb/s (0 = no hint).
    pub rate_hint_mbps: u32,
    /// Timestamp of the packet that triggered this ACK, echoed.
    pub ts_echo: u32,
    /// Bit `i` (byte `i / 8`, bit `i % 8`, least significant first) reports FSN `cum + 1 + i`.
    pub sack: [u8; SACK_BITS / 8],
}

/// Why the receiver refused a data packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum NakReason {
    /// No receive buffer posted for this Send, or the message slot is busy: retry later.
    ReceiverNotReady = 0x20,
    /// The packet contradicts the message it belongs to (length, Tag, offset).
    InvalidRequest = 0x61,
    /// Bad rkey, out of the region's bounds, or the region forbids remote writes.
    RemoteAccess = 0x62,
    /// The FSN is beyond the receiver's 256-packet SACK window.
    OutOfWindow = 0x70,
}

impl NakReason {
    /// Decodes the reason byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0x20 => NakReason::ReceiverNotReady,
            0x61 => NakReason::InvalidRequest,
            0x62 => NakReason::RemoteAccess,
            0x70 => NakReason::OutOfWindow,
            _ => return None,
        })
    }
}

/// A negative acknowledgement of one data packet. The packet's FSN travels in the BTH PSN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NakRepr {
    /// Flow of the refused packet.
    pub flow: u16,
    /// Why it was refused.
    pub reason: NakReason,
    /// Tag of the refused packet.
    pub tag: u16,
    /// MSN of the refused packet.
    pub msn: u32,
    /// Message offset of the refused packet.
    pub offset: u32,
}

/// The connection-management message kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum CmKind {
    /// Connect request.
    Request = 1,
    /// Reply accepting a request.
    Reply = 2,
    /// Ready to use: the requester saw the reply.
    ReadyToUse = 3,
    /// Reject.
    Reject = 4,
    /// Disconnect request.
    DisconnectRequest = 5,
    /// Disconnect reply.
    DisconnectReply = 6,
    /// Completion modes of Tags `64·page .. 64·page + 63` of a connection request with more
    /// than 64 Tags (the request itself carries page 0). The page index travels in the
    /// `path_count` bytes ([`cm::PAGE`]); see [`CmRepr::tag_modes_page`].
    TagModes = 7,
}

impl CmKind {
    /// The lowest kind value: every valid kind byte is in `FIRST as u8 ..= LAST as u8` (the
    /// RTL's receive parser classifies CM kinds by this range).
    pub const FIRST: CmKind = CmKind::Request;
    /// The highest kind value.
    pub const LAST: CmKind = CmKind::TagModes;

    /// Decodes the kind byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => CmKind::Request,
            2 => CmKind::Reply,
            3 => CmKind::ReadyToUse,
            4 => CmKind::Reject,
            5 => CmKind::DisconnectRequest,
            6 => CmKind::DisconnectReply,
            7 => CmKind::TagModes,
            _ => return None,
        })
    }
}

/// A connection-management message. The hardware does not interpret it beyond its length: it is
/// handed to the host, which runs the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CmRepr {
    /// Message kind.
    pub kind: CmKind,
    /// Kind-specific flags (reject reason for `Reject`).
    pub flags: u8,
    /// Number of flows (paths) the sender wants or grants. In a `TagModes` message: the page
    /// index (see [`CmRepr::page`]).
    pub path_count: u16,
    /// Sender's connection id.
    pub src_conn: u32,
    /// Receiver's connection id (0 in a request).
    pub dst_conn: u32,
    /// Path MTU in bytes of payload.
    pub mtu: u16,
    /// Number of Tags (in a `TagModes` message: of the request the page belongs to).
    pub tag_count: u16,
    /// First FSN of every flow, sender to receiver.
    pub initial_fsn: u32,
    /// Sender's line rate in Mb/s (for the receiver's fair-share computation).
    pub rate_mbps: u32,
    /// Completion mode of Tags 0–63: bit set = ordered. In a `TagModes` message: of Tags
    /// `64·page .. 64·page + 63` (bit `i` is Tag `64·page + i`). In a `Reply` (the modes are
    /// the requester's own): the low 32 bits are the acceptor's first rate hint for the
    /// requester in Mb/s, 0 for none (see [`CmRepr::reply_hint_mbps`]).
    pub tag_modes: u64,
}

/// Why a `TagModes` message is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TagPageError {
    /// The message is not of kind `TagModes`.
    NotTagModes,
    /// Page 0: the connection request itself carries the modes of Tags 0–63.
    PageZero,
    /// The page starts at or beyond the Tag count: it names no Tag of the request.
    BeyondTagCount,
}

impl core::fmt::Display for TagPageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            TagPageError::NotTagModes => "not a TagModes message",
            TagPageError::PageZero => "TagModes page 0 (the request carries it)",
            TagPageError::BeyondTagCount => "TagModes page beyond the Tag count",
        })
    }
}

impl std::error::Error for TagPageError {}

/// The header(s) after the BTH, by packet type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportRepr {
    /// Send or Write (with or without immediate).
    Data(DataRepr),
    /// ACK with SACK.
    Ack(AckRepr),
    /// NAK.
    Nak(NakRepr),
    /// Connection management.
    Cm(CmRepr),
}

impl TransportRepr {
    /// Length of the transport headers for `opcode`.
    pub fn header_len_for(opcode: Opcode) -> usize {
        match opcode {
            Opcode::Send => FDH_LEN,
            Opcode::SendImm => FDH_LEN + IMM_LEN,
            Opcode::Write => FDH_LEN + RETH_LEN,
            Opcode::WriteImm => FDH_LEN + RETH_LEN + IMM_LEN,
            Opcode::Ack => ACK_LEN,
            Opcode::Nak => NAK_LEN,
            Opcode::Cm => CM_LEN,
        }
    }

    /// Parses the transport headers of a packet of type `opcode` at the start of `b`.
    /// Returns the headers and their length.
    pub fn parse(opcode: Opcode, b: &[u8]) -> Result<(Self, usize), ParseError> {
        let len = Self::header_len_for(opcode);
        if b.len() < len {
            return Err(ParseError::Truncated);
        }
        let repr = match opcode {
            Opcode::Ack => TransportRepr::Ack(AckRepr {
                flow: read_u16(b, ack::FLOW.start),
                ecn_echo: b[ack::FLAGS] & ack::FLAG_ECE != 0,
                ce_count: read_u16(b, ack::CE_COUNT.start),
                refused: read_u16(b, ack::REFUSED.start),
                rate_hint_mbps: read_u32(b, ack::RATE_HINT.start),
                ts_echo: read_u32(b, ack::TS_ECHO.start),
                sack: b[ack::SACK].try_into().unwrap_or([0; SACK_BITS / 8]),
            }),
            Opcode::Nak => TransportRepr::Nak(NakRepr {
                flow: read_u16(b, nak::FLOW.start),
                reason: NakReason::from_u8(b[nak::REASON]).ok_or(ParseError::BadOpcode)?,
                tag: read_u16(b, nak::TAG.start),
                msn: read_u32(b, nak::MSN.start),
                offset: read_u32(b, nak::OFFSET.start),
            }),
            Opcode::Cm => TransportRepr::Cm(CmRepr {
                kind: CmKind::from_u8(b[cm::KIND]).ok_or(ParseError::BadOpcode)?,
                flags: b[cm::FLAGS],
                path_count: read_u16(b, cm::PATH_COUNT.start),
                src_conn: read_u32(b, cm::SRC_CONN.start),
                dst_conn: read_u32(b, cm::DST_CONN.start),
                mtu: read_u16(b, cm::MTU.start),
                tag_count: read_u16(b, cm::TAG_COUNT.start),
                initial_fsn: read_u32(b, cm::INITIAL_FSN.start),
                rate_mbps: read_u32(b, cm::RATE.start),
                tag_modes: read_u64(b, cm::TAG_MODES.start),
            }),
            _ => {
                let mut at = FDH_LEN;
                let reth = if opcode.is_write() {
                    let r = RethRepr {
                        va: read_u64(b, at + reth::VA.start),
                        rkey: read_u32(b, at + reth::RKEY.start),
                    };
                    at += RETH_LEN;
                    Some(r)
                } else {
                    None
                };
                let imm = opcode.has_imm().then(|| read_u32(b, at));
                TransportRepr::Data(DataRepr {
                    flow: read_u16(b, fdh::FLOW.start),
                    tag: read_u16(b, fdh::TAG.start),
                    msn: read_u32(b, fdh::MSN.start),
                    ssn: read_u32(b, fdh::SSN.start),
                    offset: read_u32(b, fdh::OFFSET.start),
                    msg_len: read_u32(b, fdh::MSG_LEN.start),
                    timestamp: read_u32(b, fdh::TIMESTAMP.start),
                    reth,
                    imm,
                })
            }
        };
        Ok((repr, len))
    }

    /// The BTH opcode this header belongs with.
    pub fn opcode(&self) -> Opcode {
        match self {
            TransportRepr::Data(d) => match (d.reth.is_some(), d.imm.is_some()) {
                (false, false) => Opcode::Send,
                (false, true) => Opcode::SendImm,
                (true, false) => Opcode::Write,
                (true, true) => Opcode::WriteImm,
            },
            TransportRepr::Ack(_) => Opcode::Ack,
            TransportRepr::Nak(_) => Opcode::Nak,
            TransportRepr::Cm(_) => Opcode::Cm,
        }
    }

    /// Length of the emitted headers.
    pub fn header_len(&self) -> usize {
        Self::header_len_for(self.opcode())
    }

    /// Writes the headers into the start of `b` (which must hold [`Self::header_len`] bytes);
    /// reserved bytes are written as zero.
    pub fn emit(&self, b: &mut [u8]) {
        b[..self.header_len()].fill(0);
        match self {
            TransportRepr::Data(d) => {
                write_u16(b, fdh::FLOW.start, d.flow);
                write_u16(b, fdh::TAG.start, d.tag);
                write_u32(b, fdh::MSN.start, d.msn);
                write_u32(b, fdh::SSN.start, d.ssn);
                write_u32(b, fdh::OFFSET.start, d.offset);
                write_u32(b, fdh::MSG_LEN.start, d.msg_len);
                write_u32(b, fdh::TIMESTAMP.start, d.timestamp);
                let mut at = FDH_LEN;
                if let Some(r) = d.reth {
                    write_u64(b, at + reth::VA.start, r.va);
                    write_u32(b, at + reth::RKEY.start, r.rkey);
                    at += RETH_LEN;
                }
                if let Some(imm) = d.imm {
                    write_u32(b, at, imm);
                }
            }
            TransportRepr::Ack(a) => {
                write_u16(b, ack::FLOW.start, a.flow);
                b[ack::FLAGS] = if a.ecn_echo { ack::FLAG_ECE } else { 0 };
                write_u16(b, ack::CE_COUNT.start, a.ce_count);
                write_u16(b, ack::REFUSED.start, a.refused);
                write_u32(b, ack::RATE_HINT.start, a.rate_hint_mbps);
                write_u32(b, ack::TS_ECHO.start, a.ts_echo);
                b[ack::SACK].copy_from_slice(&a.sack);
            }
            TransportRepr::Nak(n) => {
                write_u16(b, nak::FLOW.start, n.flow);
                b[nak::REASON] = n.reason as u8;
                write_u16(b, nak::TAG.start, n.tag);
                write_u32(b, nak::MSN.start, n.msn);
                write_u32(b, nak::OFFSET.start, n.offset);
            }
            TransportRepr::Cm(c) => {
                b[cm::KIND] = c.kind as u8;
                b[cm::FLAGS] = c.flags;
                write_u16(b, cm::PATH_COUNT.start, c.path_count);
                write_u32(b, cm::SRC_CONN.start, c.src_conn);
                write_u32(b, cm::DST_CONN.start, c.dst_conn);
                write_u16(b, cm::MTU.start, c.mtu);
                write_u16(b, cm::TAG_COUNT.start, c.tag_count);
                write_u32(b, cm::INITIAL_FSN.start, c.initial_fsn);
                write_u32(b, cm::RATE.start, c.rate_mbps);
                write_u64(b, cm::TAG_MODES.start, c.tag_modes);
            }
        }
    }
}

impl AckRepr {
    /// Whether the SACK bitmap reports FSN `cum + 1 + i`.
    pub fn sacked(&self, i: usize) -> bool {
        i < SACK_BITS && self.sack[i / 8] & (1 << (i % 8)) != 0
    }
}

impl CmRepr {
    /// In a `Reply`: the rate the acceptor first grants the requester (its fair share of the
    /// acceptor's inbound capacity among the senders it knows), in Mb/s; `None` in any other
    /// kind or when the acceptor sent none. It lets an incast's senders start at their share
    /// instead of with a full window each, before any ACK carries the hint.
    pub fn reply_hint_mbps(&self) -> Option<u32> {
        let hint = self.tag_modes as u32;
        (self.kind == CmKind::Reply && hint > 0).then_some(hint)
    }

    /// Parses a CM message from its 32 bytes (as carried in a CM event).
    pub fn parse_bytes(b: &[u8]) -> Result<Self, ParseError> {
        match TransportRepr::parse(Opcode::Cm, b)? {
            (TransportRepr::Cm(c), _) => Ok(c),
            _ => Err(ParseError::BadOpcode),
        }
    }

    /// Pages a request with `tag_count` Tags needs in all, page 0 (carried by the request
    /// itself) included: `ceil(tag_count / 64)`, at least 1.
    pub fn tag_pages(tag_count: u16) -> u16 {
        (tag_count as usize).div_ceil(cm::TAGS_PER_PAGE).max(1) as u16
    }

    /// The `TagModes` message carrying page `page` (modes of Tags `64·page ..`) of `request`
    /// (a `Request` with more than 64 Tags); bit `i` of `modes` set = Tag `64·page + i`
    /// ordered, bits beyond the Tag count zero. It repeats the request's `src_conn`,
    /// `tag_count` and `initial_fsn`: the initial FSN is drawn afresh for every request, so
    /// it tells the pages of one request from those of an earlier one with the same
    /// connection id.
    pub fn tag_modes_page(request: &CmRepr, page: u16, modes: u64) -> CmRepr {
        CmRepr {
            kind: CmKind::TagModes,
            flags: 0,
            path_count: page,
            src_conn: request.src_conn,
            dst_conn: 0,
            mtu: 0,
            tag_count: request.tag_count,
            initial_fsn: request.initial_fsn,
            rate_mbps: 0,
            tag_modes: modes,
        }
    }

    /// The page index of a `TagModes` message, checked against its Tag count: pages
    /// `1 .. ceil(tag_count / 64)` are valid (a hostile index is an error, never a panic).
    pub fn page(&self) -> Result<u16, TagPageError> {
        if self.kind != CmKind::TagModes {
            return Err(TagPageError::NotTagModes);
        }
        let page = self.path_count;
        if page == 0 {
            return Err(TagPageError::PageZero);
        }
        if page >= Self::tag_pages(self.tag_count) {
            return Err(TagPageError::BeyondTagCount);
        }
        Ok(page)
    }

    /// The message as its 32 wire bytes.
    pub fn to_bytes(&self) -> [u8; CM_LEN] {
        let mut b = [0u8; CM_LEN];
        TransportRepr::Cm(*self).emit(&mut b);
        b
    }
}
