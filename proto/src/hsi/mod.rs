//! The host–hardware interface: the one definition of every layout, table and register that
//! the RTL, the VFIO driver and the model share.
//!
//! - [`descriptor`]: the 64-byte TX descriptor, one per packet to send.
//! - [`event`]: the 64-byte events the NIC reports (completions, ACK/SACK, NAK, CM, TX errors).
//! - [`tables`]: what the host programs: memory regions, connections, flows, posted receive
//!   buffers, per-connection rate hints; and the 32-bit word encoding used to write them.
//! - [`regs`]: the AXI4-Lite register map, including the indirect table-access window and the
//!   descriptor and event rings.
//! - [`counters`]: the named counters, one per drop reason and per accepted packet kind.
//!
//! `docs/host-interface.md` is the same in prose.

pub mod counters;
pub mod descriptor;
pub mod event;
pub mod regs;
pub mod tables;

pub use counters::Counter;
pub use descriptor::TxDescriptor;
pub use event::{CompletionStatus, Event};
pub use tables::{ConnectionEntry, FlowInit, RateHint, RecvBuffer, RegionEntry, TableId};

/// Sizes of the NIC's tables, and its port count. The RTL takes them as parameters; the model
/// and the driver read them from the capability registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableSizes {
    /// Connection table entries (connection ids `0..connections`).
    pub connections: u32,
    /// Flow (SACK state) entries, shared by all connections through each connection's
    /// `flow_base`.
    pub flows: u32,
    /// Memory region entries (the region index is `rkey >> 8`).
    pub regions: u32,
    /// Tag contexts, shared by all connections through each connection's `tag_base`.
    pub tags: u32,
    /// In-progress message slots per Tag context (a sender keeps at most this many messages of
    /// one Tag incomplete). A power of two.
    pub msg_slots: u32,
    /// Posted receive buffers per Tag context. A power of two.
    pub recv_depth: u32,
    /// MAC ports, one per plane (1 to [`regs::MAX_PORTS`]).
    pub ports: u32,
}

impl Default for TableSizes {
    fn default() -> Self {
        TableSizes {
            connections: 256,
            flows: 1024,
            regions: 1024,
            tags: 256,
            msg_slots: 8,
            recv_depth: 16,
            ports: 1,
        }
    }
}

/// Largest payload of one packet the fast path builds or accepts (fits a 9000-byte jumbo frame).
pub const MAX_PAYLOAD_LEN: u32 = 8192;
/// Size of one TX descriptor in bytes.
pub const TX_DESCRIPTOR_LEN: usize = 64;
/// Size of one event in bytes.
pub const EVENT_LEN: usize = 64;

pub(crate) fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
pub(crate) fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
pub(crate) fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}
pub(crate) fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
