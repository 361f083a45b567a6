//! The AXI4-Lite register map (32-bit registers, byte offsets). 64-bit values are two
//! registers, low word first.

/// Reads [`ID_VALUE`].
pub const ID: u32 = 0x0000;
/// `"FRCE"`.
pub const ID_VALUE: u32 = 0x4652_4345;
/// Interface version: major in bits 31–16, minor in 15–0.
pub const VERSION: u32 = 0x0004;
/// The version this crate describes.
pub const VERSION_VALUE: u32 = 0x0001_0001;
/// Control: [`CONTROL_RX_ENABLE`], [`CONTROL_TX_ENABLE`].
pub const CONTROL: u32 = 0x0008;
/// Control bit: accept received frames.
pub const CONTROL_RX_ENABLE: u32 = 1 << 0;
/// Control bit: process TX descriptors.
pub const CONTROL_TX_ENABLE: u32 = 1 << 1;
/// ACK timer in nanoseconds (default [`DEFAULT_ACK_DELAY_NS`]; 0 = no timer): a flow holding
/// consumed packets not yet acknowledged sends its ACK once the oldest of them arrived this long
/// ago, even if fewer than [`ACK_COALESCE`] packets arrived.
pub const ACK_DELAY_NS: u32 = 0x000C;
/// Reset value of [`ACK_DELAY_NS`].
pub const DEFAULT_ACK_DELAY_NS: u32 = 10_000;
/// UDP destination port of ferroce traffic (default 4791).
pub const UDP_PORT: u32 = 0x0010;
/// Data packets per flow between coalesced ACKs (default 4; 1 = ACK every packet).
pub const ACK_COALESCE: u32 = 0x0014;
/// Our MAC address, bits 31–0.
pub const MAC_LO: u32 = 0x0018;
/// Our MAC address, bits 47–32.
pub const MAC_HI: u32 = 0x001C;
/// Free-running nanosecond timestamp, low word (read-only).
pub const TIMESTAMP_LO: u32 = 0x0020;
/// Free-running nanosecond timestamp, high word (read-only).
pub const TIMESTAMP_HI: u32 = 0x0024;
/// Capability: connection table entries (read-only).
pub const CAP_CONNECTIONS: u32 = 0x0030;
/// Capability: flow table entries (read-only).
pub const CAP_FLOWS: u32 = 0x0034;
/// Capability: memory region entries (read-only).
pub const CAP_REGIONS: u32 = 0x0038;
/// Capability: Tag contexts (read-only).
pub const CAP_TAGS: u32 = 0x003C;
/// Capability: message slots per Tag context (read-only).
pub const CAP_MSG_SLOTS: u32 = 0x0040;
/// Capability: receive buffers per Tag context (read-only).
pub const CAP_RECV_DEPTH: u32 = 0x0044;
/// Capability: MAC ports, one per plane (read-only; 1 to [`MAX_PORTS`]).
pub const CAP_PORTS: u32 = 0x0048;
/// Link state of the MAC ports, one bit per port (bit `p` set: port `p`'s link is up), as the
/// PHYs report it; bits at and beyond [`CAP_PORTS`] read as zero (read-only). The host library
/// polls it to move traffic off a port whose link went down without waiting for a timeout.
pub const PORT_LINK: u32 = 0x004C;
/// Width of the port number on the MAC streams (`tid` in, `tdest` out).
pub const PORT_BITS: u32 = 3;
/// Most MAC ports a NIC can have.
pub const MAX_PORTS: u32 = 1 << PORT_BITS;

/// TX descriptor ring base DMA address, low word (64-byte aligned).
pub const TXQ_BASE_LO: u32 = 0x0100;
/// TX descriptor ring base, high word.
pub const TXQ_BASE_HI: u32 = 0x0104;
/// TX ring size as log2 of the entry count.
pub const TXQ_LOG_SIZE: u32 = 0x0108;
/// Index of the next descriptor the NIC will fetch (read-only).
pub const TXQ_HEAD: u32 = 0x010C;
/// Doorbell: index one past the last descriptor the host has written.
pub const TXQ_TAIL: u32 = 0x0110;
/// Event ring base DMA address, low word (64-byte aligned).
pub const EVQ_BASE_LO: u32 = 0x0120;
/// Event ring base, high word.
pub const EVQ_BASE_HI: u32 = 0x0124;
/// Event ring size as log2 of the entry count.
pub const EVQ_LOG_SIZE: u32 = 0x0128;
/// Index of the next event the host will consume (written by the host).
pub const EVQ_HEAD: u32 = 0x012C;
/// Index one past the last event the NIC has written (read-only).
pub const EVQ_TAIL: u32 = 0x0130;

/// Table access: entry index.
pub const TABLE_INDEX: u32 = 0x0200;
/// Table access: command (`table id | TABLE_OP_*`); runs the access.
pub const TABLE_CMD: u32 = 0x0204;
/// Table access: 0 = ok, 1 = bad table id, 2 = index out of range, 3 = table not readable.
pub const TABLE_STATUS: u32 = 0x0208;
/// Table access: first of 16 data words.
pub const TABLE_DATA: u32 = 0x0240;
/// `TABLE_CMD` operation bit: write the data words to the entry.
pub const TABLE_OP_WRITE: u32 = 1 << 8;
/// `TABLE_CMD` operation bit: read the entry into the data words.
pub const TABLE_OP_READ: u32 = 1 << 9;
/// `TABLE_STATUS`: the last access succeeded.
pub const TABLE_STATUS_OK: u32 = 0;
/// `TABLE_STATUS`: unknown table id or operation.
pub const TABLE_STATUS_BAD_TABLE: u32 = 1;
/// `TABLE_STATUS`: index beyond the table.
pub const TABLE_STATUS_BAD_INDEX: u32 = 2;
/// `TABLE_STATUS`: the table cannot be read back.
pub const TABLE_STATUS_NOT_READABLE: u32 = 3;

/// Counter window: counter `i` (see [`super::Counter`]) is 64 bits at `COUNTERS + 8 * i`
/// (read-only; writing any value to its low word clears it).
pub const COUNTERS: u32 = 0x1000;

/// Byte offset of a counter's low word.
pub fn counter_offset(c: super::Counter) -> u32 {
    COUNTERS + 8 * c as u32
}
