//! The tables the host programs, and their encoding as 32-bit words for the indirect
//! table-access window of the register map ([`super::regs::TABLE_DATA`]).
//!
//! To write entry `i` of table `t`: write the entry's words to `TABLE_DATA[0..]`, `i` to
//! `TABLE_INDEX`, then `t | TABLE_OP_WRITE` to `TABLE_CMD`. To read: `t | TABLE_OP_READ`, then
//! read `TABLE_DATA`. `TABLE_STATUS` reports a bad table id or index.

use crate::wire::EthernetAddress;
use serde::{Deserialize, Serialize};

/// Number of words in the table-access window.
pub const TABLE_WORDS: usize = 16;

/// Words of a flow-table read that carry the entry: the cumulative FSN in word 0 and the
/// 256-bit SACK bitmap in words 1–8, least significant first (the rest read as zero). A
/// driver that reads only these saves the window's other register reads.
pub const FLOW_READ_WORDS: usize = 1 + crate::wire::SACK_BITS / 32;

/// Identifies a table in `TABLE_CMD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum TableId {
    /// Memory regions, indexed by `rkey >> 8`.
    Region = 1,
    /// Connections, indexed by connection id.
    Connection = 2,
    /// Flow SACK state, indexed by `flow_base + flow`. Writing (re)initialises the flow at a
    /// cumulative FSN; reading returns the cumulative FSN and the 256-bit bitmap.
    Flow = 3,
    /// Posted receive buffers, indexed by `(tag_base + tag) * recv_depth + ssn % recv_depth`.
    RecvBuffer = 4,
    /// The per-connection rate hint alone (one word), indexed by connection id.
    RateHint = 5,
    /// Writing resets every message slot and receive buffer of a Tag context (index
    /// `tag_base + tag`); no data words.
    TagReset = 6,
}

impl TableId {
    /// Decodes a table id.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Region,
            2 => Self::Connection,
            3 => Self::Flow,
            4 => Self::RecvBuffer,
            5 => Self::RateHint,
            6 => Self::TagReset,
            _ => return None,
        })
    }
}

/// Access right: remote peers may write (RDMA Write).
pub const ACCESS_REMOTE_WRITE: u8 = 0x01;
/// Access right: remote peers may read (reserved for RDMA Read).
pub const ACCESS_REMOTE_READ: u8 = 0x02;
/// Access right: the local NIC may write (receive buffers).
pub const ACCESS_LOCAL_WRITE: u8 = 0x04;

/// A registered memory region. Remote addresses are IO virtual addresses: the host maps DMA
/// memory with IOVA = its virtual address (as ixy does through VFIO), so the address a remote
/// peer writes to is the DMA address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RegionEntry {
    /// Entry in use.
    pub valid: bool,
    /// The low 8 bits of every rkey for this region (the high bits are the index): changing it
    /// invalidates old rkeys that named the same slot.
    pub key: u8,
    /// `ACCESS_*` bits.
    pub access: u8,
    /// First byte of the region.
    pub base: u64,
    /// Length in bytes.
    pub length: u64,
}

impl RegionEntry {
    /// The rkey naming this region at table index `index`.
    pub fn rkey(&self, index: u32) -> u32 {
        (index << 8) | self.key as u32
    }

    /// Whether `[addr, addr + len)` lies inside the region (without overflow).
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        let (a, l, b, n) = (
            addr as u128,
            len as u128,
            self.base as u128,
            self.length as u128,
        );
        a >= b && a + l <= b + n
    }

    /// Encodes the entry as table words.
    pub fn to_words(&self) -> Vec<u32> {
        vec![
            self.valid as u32 | (self.key as u32) << 8 | (self.access as u32) << 16,
            self.base as u32,
            (self.base >> 32) as u32,
            self.length as u32,
            (self.length >> 32) as u32,
        ]
    }

    /// Decodes table words (missing words read as zero).
    pub fn from_words(w: &[u32]) -> Self {
        let g = |i: usize| w.get(i).copied().unwrap_or(0);
        RegionEntry {
            valid: g(0) & 1 != 0,
            key: (g(0) >> 8) as u8,
            access: (g(0) >> 16) as u8,
            base: g(1) as u64 | (g(2) as u64) << 32,
            length: g(3) as u64 | (g(4) as u64) << 32,
        }
    }
}

/// One connection: where its flows and Tags live in the shared tables, and how to address the
/// peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConnectionEntry {
    /// Entry in use.
    pub valid: bool,
    /// Peer reached over IPv6 (else IPv4, with IPv4-mapped addresses below).
    pub ipv6: bool,
    /// 802.1Q TCI to send with, if any.
    pub vlan_tci: Option<u16>,
    /// DSCP for transmitted packets.
    pub dscp: u8,
    /// The peer's connection id: BTH destination of everything we send on this connection.
    pub peer_conn: u32,
    /// Index of flow 0 in the flow table.
    pub flow_base: u16,
    /// Number of flows (paths).
    pub flow_count: u16,
    /// Index of Tag 0 in the Tag contexts.
    pub tag_base: u16,
    /// Number of Tags.
    pub tag_count: u16,
    /// Peer MAC (next hop).
    pub peer_mac: EthernetAddress,
    /// Our IP on this connection (IPv4-mapped for IPv4).
    pub local_ip: [u8; 16],
    /// The peer's IP (IPv4-mapped for IPv4).
    pub peer_ip: [u8; 16],
    /// Fair-share rate hint stamped on every ACK we send on this connection (Mb/s).
    pub rate_hint_mbps: u32,
}

fn ip_words(ip: &[u8; 16]) -> [u32; 4] {
    core::array::from_fn(|i| {
        u32::from_be_bytes([ip[4 * i], ip[4 * i + 1], ip[4 * i + 2], ip[4 * i + 3]])
    })
}

fn words_ip(w: &[u32]) -> [u8; 16] {
    let mut ip = [0u8; 16];
    for (i, chunk) in ip.chunks_exact_mut(4).enumerate() {
        chunk.copy_from_slice(&w.get(i).copied().unwrap_or(0).to_be_bytes());
    }
    ip
}

impl ConnectionEntry {
    /// Encodes the entry as table words.
    pub fn to_words(&self) -> Vec<u32> {
        let mac = self.peer_mac.to_u64();
        let mut w = vec![
            self.valid as u32
                | (self.ipv6 as u32) << 1
                | (self.vlan_tci.is_some() as u32) << 2
                | (self.dscp as u32 & 0x3f) << 8
                | (self.vlan_tci.unwrap_or(0) as u32) << 16,
            self.peer_conn,
            self.flow_base as u32 | (self.flow_count as u32) << 16,
            self.tag_base as u32 | (self.tag_count as u32) << 16,
            mac as u32,
            (mac >> 32) as u32,
        ];
        w.extend_from_slice(&ip_words(&self.local_ip));
        w.extend_from_slice(&ip_words(&self.peer_ip));
        w.push(self.rate_hint_mbps);
        w
    }

    /// Decodes table words (missing words read as zero).
    pub fn from_words(w: &[u32]) -> Self {
        let g = |i: usize| w.get(i).copied().unwrap_or(0);
        ConnectionEntry {
            valid: g(0) & 1 != 0,
            ipv6: g(0) & 2 != 0,
            vlan_tci: (g(0) & 4 != 0).then_some((g(0) >> 16) as u16),
            dscp: ((g(0) >> 8) & 0x3f) as u8,
            peer_conn: g(1) & 0x00ff_ffff,
            flow_base: g(2) as u16,
            flow_count: (g(2) >> 16) as u16,
            tag_base: g(3) as u16,
            tag_count: (g(3) >> 16) as u16,
            peer_mac: EthernetAddress::from_u64(g(4) as u64 | (g(5) as u64) << 32),
            local_ip: words_ip(w.get(6..10).unwrap_or(&[])),
            peer_ip: words_ip(w.get(10..14).unwrap_or(&[])),
            rate_hint_mbps: g(14),
        }
    }
}

/// (Re)initialises a flow's receive state: cumulative FSN, empty bitmap, no pending ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FlowInit {
    /// The first FSN the flow expects.
    pub cum_fsn: u32,
}

impl FlowInit {
    /// Encodes the entry as table words.
    pub fn to_words(&self) -> Vec<u32> {
        vec![self.cum_fsn & crate::wire::FSN_MASK]
    }
    /// Decodes table words.
    pub fn from_words(w: &[u32]) -> Self {
        FlowInit {
            cum_fsn: w.first().copied().unwrap_or(0) & crate::wire::FSN_MASK,
        }
    }
}

/// A posted receive buffer for the Send with a given SSN on a Tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RecvBuffer {
    /// Entry in use (cleared by the NIC when the Send completes).
    pub valid: bool,
    /// The SSN this buffer is for.
    pub ssn: u32,
    /// DMA address of the buffer.
    pub addr: u64,
    /// Length of the buffer.
    pub len: u32,
}

impl RecvBuffer {
    /// Encodes the entry as table words.
    pub fn to_words(&self) -> Vec<u32> {
        vec![
            self.valid as u32,
            self.ssn,
            self.addr as u32,
            (self.addr >> 32) as u32,
            self.len,
        ]
    }
    /// Decodes table words (missing words read as zero).
    pub fn from_words(w: &[u32]) -> Self {
        let g = |i: usize| w.get(i).copied().unwrap_or(0);
        RecvBuffer {
            valid: g(0) & 1 != 0,
            ssn: g(1),
            addr: g(2) as u64 | (g(3) as u64) << 32,
            len: g(4),
        }
    }
}

/// The rate hint of one connection, updated alone because the host changes it often.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RateHint {
    /// Mb/s; 0 = no hint.
    pub mbps: u32,
}

impl RateHint {
    /// Encodes the entry as table words.
    pub fn to_words(&self) -> Vec<u32> {
        vec![self.mbps]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_words() {
        let r = RegionEntry {
            valid: true,
            key: 0xa5,
            access: 5,
            base: 0x1_0000_2000,
            length: 1 << 33,
        };
        assert_eq!(RegionEntry::from_words(&r.to_words()), r);
        assert_eq!(r.rkey(3), 0x3a5);
        let mut local_ip = [0u8; 16];
        local_ip[15] = 1;
        let c = ConnectionEntry {
            valid: true,
            ipv6: true,
            vlan_tci: Some(0x0123),
            dscp: 26,
            peer_conn: 77,
            flow_base: 16,
            flow_count: 8,
            tag_base: 4,
            tag_count: 2,
            peer_mac: EthernetAddress([2, 3, 4, 5, 6, 7]),
            local_ip,
            peer_ip: [0xfd; 16],
            rate_hint_mbps: 40_000,
        };
        assert!(c.to_words().len() <= TABLE_WORDS);
        assert_eq!(ConnectionEntry::from_words(&c.to_words()), c);
        let b = RecvBuffer {
            valid: true,
            ssn: 9,
            addr: 0xdead_0000_1000,
            len: 65536,
        };
        assert_eq!(RecvBuffer::from_words(&b.to_words()), b);
    }

    #[test]
    fn region_bounds_do_not_overflow() {
        let r = RegionEntry {
            valid: true,
            key: 0,
            access: 1,
            base: u64::MAX - 10,
            length: 10,
        };
        assert!(r.contains(u64::MAX - 10, 10));
        assert!(!r.contains(u64::MAX - 10, 11));
        assert!(!r.contains(u64::MAX, u64::MAX));
        assert!(!r.contains(0, 1));
    }
}
