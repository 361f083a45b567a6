//! The NIC's named counters. Every rejected packet increments exactly one drop counter; every
//! accepted packet increments the counter of its kind. Counters are 64 bits wide and read
//! through the register window at [`super::regs::COUNTERS`].

use serde::Serialize;

macro_rules! counters {
    ($($(#[doc = $doc:literal])* $name:ident = $snake:literal,)*) => {
        /// A hardware counter; its discriminant is its index in the counter window.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        #[repr(u16)]
        pub enum Counter { $($(#[doc = $doc])* $name,)* }

        impl Counter {
            /// Every counter, in index order.
            pub const ALL: &'static [Counter] = &[$(Counter::$name,)*];
            /// Number of counters.
            pub const COUNT: usize = Self::ALL.len();
            /// The counter's snake_case name, as in reports.
            pub fn name(self) -> &'static str {
                match self { $(Counter::$name => $snake,)* }
            }
        }
    };
}

counters! {
    /// Frames handed to the receive path.
    RxFrames = "rx_frames",
    /// Receive path disabled in the control register.
    RxDisabled = "rx_disabled",
    /// Dropped: truncated frame or header.
    RxTruncated = "rx_truncated",
    /// Dropped: frame longer than `wire::MAX_FRAME_LEN`.
    RxTooLong = "rx_too_long",
    /// Dropped: EtherType not IPv4/IPv6.
    RxBadEtherType = "rx_bad_ethertype",
    /// Dropped: bad IP header (version, options, fragments, length).
    RxBadIpHeader = "rx_bad_ip_header",
    /// Dropped: IPv4 header checksum.
    RxBadIpChecksum = "rx_bad_ip_checksum",
    /// Dropped: not UDP.
    RxNotUdp = "rx_not_udp",
    /// Dropped: UDP destination port or length.
    RxBadUdp = "rx_bad_udp",
    /// Dropped: BTH version, pad count or partition key.
    RxBadBth = "rx_bad_bth",
    /// Dropped: opcode is not a ferroce opcode (or an unknown NAK reason / CM kind).
    RxBadOpcode = "rx_bad_opcode",
    /// Dropped: ICRC mismatch.
    RxBadIcrc = "rx_bad_icrc",
    /// Dropped: destination connection id not in the table.
    RxUnknownConnection = "rx_unknown_connection",
    /// Dropped: IP addresses do not match the connection.
    RxAddressMismatch = "rx_address_mismatch",
    /// Dropped: flow index beyond the connection's flow count.
    RxBadFlow = "rx_bad_flow",
    /// Not placed: FSN already received (acknowledged again).
    RxDuplicate = "rx_duplicate",
    /// Dropped and NAKed: FSN beyond the SACK window.
    RxOutOfWindow = "rx_out_of_window",
    /// Dropped and NAKed: Tag, offset, length or opcode contradict the message.
    RxInvalidRequest = "rx_invalid_request",
    /// Dropped and NAKed: Send with no posted receive buffer.
    RxNoRecvBuffer = "rx_no_recv_buffer",
    /// Dropped and NAKed: the message slot holds another incomplete message.
    RxMsgSlotBusy = "rx_msg_slot_busy",
    /// Consumed, not placed, NAKed: rkey names no valid region or a different key.
    RxBadRkey = "rx_bad_rkey",
    /// Consumed, not placed, NAKed: the region forbids remote writes.
    RxAccessDenied = "rx_access_denied",
    /// Consumed, not placed, NAKed: outside the region or the receive buffer.
    RxOutOfBounds = "rx_out_of_bounds",
    /// Consumed, not placed: a new packet of a message that already completed.
    RxStaleMessage = "rx_stale_message",
    /// Data packets placed in host memory.
    RxPlacedPackets = "rx_placed_packets",
    /// Payload bytes placed in host memory.
    RxPlacedBytes = "rx_placed_bytes",
    /// Data packets that arrived CE-marked.
    RxCeMarked = "rx_ce_marked",
    /// Messages completed (successfully or with an error status).
    RxCompletions = "rx_completions",
    /// ACKs received and reported.
    RxAcks = "rx_acks",
    /// NAKs received and reported.
    RxNaks = "rx_naks",
    /// CM packets received and reported.
    RxCm = "rx_cm",
    /// Events dropped because the event ring was full.
    EventOverflow = "event_overflow",
    /// Data and CM packets transmitted.
    TxPackets = "tx_packets",
    /// Payload bytes transmitted.
    TxBytes = "tx_bytes",
    /// ACKs transmitted.
    TxAcks = "tx_acks",
    /// NAKs transmitted.
    TxNaks = "tx_naks",
    /// Descriptors refused (reported with a TX error event).
    TxBadDescriptor = "tx_bad_descriptor",
}
