//! Receive engine: everything the fast path decides about a parsed frame, in the order of
//! [`ferroce_proto::model::FastPath::receive`], plus the ACK timers and the table window.
//!
//! It owns the tables (connections, rate hints, regions, receive buffers, message slots, the
//! per-flow SACK state of [`FlowTable`] and per-flow metadata: refusal count, last entropy and
//! timestamp, ACK timer) and processes one frame at a time as a sequential machine:
//!
//! 1. connection and address checks; ACK, NAK and CM frames become events;
//! 2. data: SACK classify (duplicate → ACK, out of window → NAK), then the Tag, receive-buffer,
//!    message-slot and region checks (retry-later refusals are NAKed and not consumed; terminal
//!    refusals are NAKed, counted on the flow and consumed);
//! 3. placement: a DMA write request for the payload and one command to the payload extractor
//!    (every frame gets exactly one command, place or discard, in frame order);
//! 4. message progress in the slot; the last byte completes the message (one completion event);
//! 5. accept into the SACK window and the ACK policy (AckReq, CE, new gap, coalescing) or the
//!    ACK timer.
//!
//! The frame's parse result stays at the head of the result FIFO (`pr_*`) until the engine pops
//! it, so the engine keeps no copy of the headers.
//!
//! ACK timers: a flow whose first unacknowledged packet was consumed without an ACK is armed
//! with a deadline. When the earliest deadline has passed, the engine sweeps the flow metadata
//! between frames and sends the ACK of every expired flow that still belongs to the connection
//! that armed it. Timer ACKs therefore leave in flow order; the model sends them in deadline
//! order (same frames, possibly another order within one sweep).
//!
//! Table window: the register block offers one table command at a time (`tc_*`); the engine
//! serves it between frames and answers with `tc_done`, the status and the read words.
//!
//! Cycle cost: 11 cycles for a placed data frame, 12 with an ACK (the step table is in
//! `docs/rtl.md`, "Receive timing"): the Tag, buffer, slot and region decisions are taken while
//! the flow table classifies, the SACK accept starts in the cycle the class is known, and an
//! ACK is built from the accept's result. The payload extractor gets each frame's lengths from
//! its own queue and the engine's place/discard decisions through another, so the engine never
//! waits for it except for a long payload's write.

use crate::constants;
use crate::flow_table::{self, FlowTable};
use crate::ram::{BlockRam, LutRam};
use ferroce_proto::hsi::{Counter, TableId, TableSizes, event, regs};
use ferroce_proto::model::parse_counter;
use ferroce_proto::wire::{NakReason, Opcode, ParseError, transport};
use rust_hdl::prelude::*;

/// A table size in address bits, from a build-time environment variable (decimal) when it is
/// set, else `default`. The sizes are fixed per build, as a Verilog parameter would be: the
/// generated Verilog, the co-simulation and the capability registers all follow them.
const fn size_bits(var: Option<&str>, default: usize) -> usize {
    let Some(v) = var else {
        return default;
    };
    let b = v.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        assert!(
            b[i].is_ascii_digit(),
            "table size bits must be a decimal number"
        );
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    n
}

/// Connection table: 2^8 entries.
pub const CONN_BITS: usize = 8;
/// Flow table: 2^10 flows by default; `FERROCE_FLOW_BITS` (1..=12) at build time sets it.
pub const FLOW_BITS: usize = size_bits(option_env!("FERROCE_FLOW_BITS"), 10);
/// Region table: 2^10 regions.
pub const REGION_BITS: usize = 10;
/// Tag contexts: 2^8 by default; `FERROCE_TAG_BITS` (1..=8) at build time sets it.
pub const TAG_BITS: usize = size_bits(option_env!("FERROCE_TAG_BITS"), 8);

const _: () = {
    assert!(
        FLOW_BITS >= 1 && FLOW_BITS <= 12,
        "FERROCE_FLOW_BITS: 1..=12"
    );
    assert!(TAG_BITS >= 1 && TAG_BITS <= 8, "FERROCE_TAG_BITS: 1..=8");
};
/// Message slots per Tag context: 2^3.
pub const SLOT_BITS: usize = 3;
/// Receive buffers per Tag context: 2^4.
pub const RECV_BITS: usize = 4;
/// Width of a port number on the MAC streams (`tid` in, `tdest` out) and inside the core.
pub const PORT_BITS: usize = regs::PORT_BITS as usize;
/// MAC ports (planes): [`regs::MAX_PORTS`] by default; `FERROCE_PORTS` (1..=8) at build time
/// sets it. The count only bounds the descriptors' ports (a port at or beyond it is refused)
/// and is reported in `CAP_PORTS`; every path carries [`PORT_BITS`] whatever the count.
pub const PORTS: usize = size_bits(option_env!("FERROCE_PORTS"), regs::MAX_PORTS as usize);

const _: () = assert!(
    PORTS >= 1 && PORTS <= regs::MAX_PORTS as usize && regs::MAX_PORTS == 1 << regs::PORT_BITS,
    "FERROCE_PORTS: 1..=8"
);

/// The table sizes of this engine, as the capability registers report them.
pub fn table_sizes() -> TableSizes {
    TableSizes {
        connections: 1 << CONN_BITS,
        flows: 1 << FLOW_BITS,
        regions: 1 << REGION_BITS,
        tags: 1 << TAG_BITS,
        msg_slots: 1 << SLOT_BITS,
        recv_depth: 1 << RECV_BITS,
        ports: PORTS as u32,
    }
}

const RECV_INDEX_BITS: usize = TAG_BITS + RECV_BITS;
/// Width of a packed receive-buffer entry in block RAM: valid bit, SSN, address, length.
const RECV_RAM_BITS: usize = 1 + 32 + 64 + 32;
const SLOT_INDEX_BITS: usize = TAG_BITS + SLOT_BITS;

/// Byte `b` of the transport header as a shift from the bottom of the 384-bit vector (the
/// parser delivers it first byte in the top bits): the field ending at byte `end`.
const fn th_shift(end: usize) -> u64 {
    (384 - 8 * end) as u64
}

/// Where a transport-header field of `bytes` bytes ending at byte `end` sits within 64-bit
/// word `word` of the 384-bit header (word 5: bits 320..384). Compilation fails if the field
/// leaves that word, so a layout change cannot silently break a header built word by word.
const fn th_word_shift(end: usize, bytes: usize, word: u64) -> u64 {
    let sh = th_shift(end);
    assert!(sh >= 64 * word && sh + 8 * bytes as u64 <= 64 * (word + 1));
    sh - 64 * word
}

/// A `Constant` of this module whose value is part of its type, so that the engine can
/// still derive `Default`. Unlike the outputs of a [`constants!`] block, which the
/// simulator reads as signals, it is a parameter of the engine's Verilog: Verilator folds
/// the shifts and slices that use it (a 384-bit shift by a signal is a loop over words in
/// every cycle). Synthesis folds both alike.
struct Const<const W: usize, const V: u64>(Constant<Bits<W>>);

impl<const W: usize, const V: u64> Default for Const<W, V> {
    fn default() -> Self {
        Const(Constant::new(V.to_bits()))
    }
}

impl<const W: usize, const V: u64> Const<W, V> {
    fn val(&self) -> Bits<W> {
        self.0.val()
    }
}

impl<const W: usize, const V: u64> Logic for Const<W, V> {
    fn update(&mut self) {}
}

impl<const W: usize, const V: u64> Block for Const<W, V> {
    fn connect_all(&mut self) {}
    fn update_all(&mut self) {}
    fn has_changed(&self) -> bool {
        false
    }
    fn accept(&self, name: &str, probe: &mut dyn Probe) {
        self.0.accept(name, probe);
    }
}

constants!(
    /// Specification constants of the receive engine.
    RxConsts {
        op_send / k_op_send: 8 = Opcode::Send,
        op_send_imm / k_op_send_imm: 8 = Opcode::SendImm,
        op_write / k_op_write: 8 = Opcode::Write,
        op_write_imm / k_op_write_imm: 8 = Opcode::WriteImm,
        op_ack / k_op_ack: 8 = Opcode::Ack,
        op_nak / k_op_nak: 8 = Opcode::Nak,
        op_cm / k_op_cm: 8 = Opcode::Cm,
        c_rx_frames / k_c_rx_frames: 6 = Counter::RxFrames,
        c_rx_disabled / k_c_rx_disabled: 6 = Counter::RxDisabled,
        c_unknown_conn / k_c_unknown_conn: 6 = Counter::RxUnknownConnection,
        c_addr_mismatch / k_c_addr_mismatch: 6 = Counter::RxAddressMismatch,
        c_bad_flow / k_c_bad_flow: 6 = Counter::RxBadFlow,
        c_duplicate / k_c_duplicate: 6 = Counter::RxDuplicate,
        c_oow / k_c_oow: 6 = Counter::RxOutOfWindow,
        c_invalid / k_c_invalid: 6 = Counter::RxInvalidRequest,
        c_no_recv / k_c_no_recv: 6 = Counter::RxNoRecvBuffer,
        c_slot_busy / k_c_slot_busy: 6 = Counter::RxMsgSlotBusy,
        c_bad_rkey / k_c_bad_rkey: 6 = Counter::RxBadRkey,
        c_denied / k_c_denied: 6 = Counter::RxAccessDenied,
        c_oob / k_c_oob: 6 = Counter::RxOutOfBounds,
        c_stale / k_c_stale: 6 = Counter::RxStaleMessage,
        c_placed / k_c_placed: 6 = Counter::RxPlacedPackets,
        c_placed_bytes / k_c_placed_bytes: 6 = Counter::RxPlacedBytes,
        c_ce / k_c_ce: 6 = Counter::RxCeMarked,
        c_completions / k_c_completions: 6 = Counter::RxCompletions,
        c_acks / k_c_acks: 6 = Counter::RxAcks,
        c_naks / k_c_naks: 6 = Counter::RxNaks,
        c_cm / k_c_cm: 6 = Counter::RxCm,
        c_tx_acks / k_c_tx_acks: 6 = Counter::TxAcks,
        c_tx_naks / k_c_tx_naks: 6 = Counter::TxNaks,
        e_truncated / k_e_truncated: 6 = parse_counter(ParseError::Truncated),
        e_ethertype / k_e_ethertype: 6 = parse_counter(ParseError::BadEtherType),
        e_ip_header / k_e_ip_header: 6 = parse_counter(ParseError::BadIpHeader),
        e_ip_checksum / k_e_ip_checksum: 6 = parse_counter(ParseError::BadIpChecksum),
        e_not_udp / k_e_not_udp: 6 = parse_counter(ParseError::NotUdp),
        e_bad_udp / k_e_bad_udp: 6 = parse_counter(ParseError::BadUdp),
        e_bad_bth / k_e_bad_bth: 6 = parse_counter(ParseError::BadBth),
        e_bad_opcode / k_e_bad_opcode: 6 = parse_counter(ParseError::BadOpcode),
        e_bad_icrc / k_e_bad_icrc: 6 = parse_counter(ParseError::BadIcrc),
        e_too_long / k_e_too_long: 6 = parse_counter(ParseError::TooLong),
        pe_truncated / k_pe_truncated: 4 = ParseError::Truncated.code(),
        pe_ethertype / k_pe_ethertype: 4 = ParseError::BadEtherType.code(),
        pe_ip_header / k_pe_ip_header: 4 = ParseError::BadIpHeader.code(),
        pe_ip_checksum / k_pe_ip_checksum: 4 = ParseError::BadIpChecksum.code(),
        pe_not_udp / k_pe_not_udp: 4 = ParseError::NotUdp.code(),
        pe_bad_udp / k_pe_bad_udp: 4 = ParseError::BadUdp.code(),
        pe_bad_bth / k_pe_bad_bth: 4 = ParseError::BadBth.code(),
        pe_bad_opcode / k_pe_bad_opcode: 4 = ParseError::BadOpcode.code(),
        pe_too_long / k_pe_too_long: 4 = ParseError::TooLong.code(),
        nak_rnr / k_nak_rnr: 8 = NakReason::ReceiverNotReady,
        nak_invalid / k_nak_invalid: 8 = NakReason::InvalidRequest,
        nak_access / k_nak_access: 8 = NakReason::RemoteAccess,
        nak_oow / k_nak_oow: 8 = NakReason::OutOfWindow,
        st_access / k_st_access: 2 = event::CompletionStatus::RemoteAccessError,
        st_length / k_st_length: 2 = event::CompletionStatus::LengthError,
        ev_completion / k_ev_completion: 8 = event::kind::COMPLETION,
        ev_ack / k_ev_ack: 8 = event::kind::ACK,
        ev_nak / k_ev_nak: 8 = event::kind::NAK,
        ev_cm / k_ev_cm: 8 = event::kind::CM,
        ack_flag_ece / k_ack_flag_ece: 8 = transport::ack::FLAG_ECE,
        ack_len / k_ack_len: 6 = transport::ACK_LEN,
        nak_len / k_nak_len: 6 = transport::NAK_LEN,
        ecn_ce / k_ecn_ce: 2 = ferroce_proto::wire::ip::ECN_CE,
        access_rw / k_access_rw: 8 = ferroce_proto::hsi::tables::ACCESS_REMOTE_WRITE,
        fsn_mask / k_fsn_mask: 32 = ferroce_proto::wire::FSN_MASK,
        t_region / k_t_region: 8 = TableId::Region,
        t_conn / k_t_conn: 8 = TableId::Connection,
        t_flow / k_t_flow: 8 = TableId::Flow,
        t_recv / k_t_recv: 8 = TableId::RecvBuffer,
        t_rate / k_t_rate: 8 = TableId::RateHint,
        t_tag_reset / k_t_tag_reset: 8 = TableId::TagReset,
        ts_ok / k_ts_ok: 4 = regs::TABLE_STATUS_OK,
        ts_bad_table / k_ts_bad_table: 4 = regs::TABLE_STATUS_BAD_TABLE,
        ts_bad_index / k_ts_bad_index: 4 = regs::TABLE_STATUS_BAD_INDEX,
        ts_not_readable / k_ts_not_readable: 4 = regs::TABLE_STATUS_NOT_READABLE,
        conn_bits / k_conn_bits: 6 = CONN_BITS,
        flow_bits / k_flow_bits: 6 = FLOW_BITS,
        region_bits / k_region_bits: 6 = REGION_BITS,
        tag_bits / k_tag_bits: 6 = TAG_BITS,
        recv_index_bits / k_recv_index_bits: 6 = RECV_INDEX_BITS,
        slot_bits / k_slot_bits: 6 = SLOT_BITS,
        recv_bits / k_recv_bits: 6 = RECV_BITS,
        slots_last / k_slots_last: 5 = (1 << SLOT_BITS) - 1,
        recv_last / k_recv_last: 5 = (1 << RECV_BITS) - 1,
        flows_last / k_flows_last: 13 = (1 << FLOW_BITS) - 1,
        ft_init / k_ft_init: 3 = flow_table::OP_INIT,
        ft_classify / k_ft_classify: 3 = flow_table::OP_CLASSIFY,
        ft_accept / k_ft_accept: 3 = flow_table::OP_ACCEPT,
        ft_ack / k_ft_ack: 3 = flow_table::OP_ACK,
        ft_read / k_ft_read: 3 = flow_table::OP_READ,
        cls_dup / k_cls_dup: 2 = flow_table::CLASS_DUPLICATE,
        cls_new / k_cls_new: 2 = flow_table::CLASS_NEW,
    }
);

/// Engine states.
#[derive(LogicState, Debug, Copy, Clone, PartialEq)]
enum St {
    Idle,
    ConnChk,
    CtlChk,
    RxEvent,
    Classify,
    ClsWait,
    Decide1,
    Decide2,
    Nak,
    Place,
    WrWait,
    Account,
    CplEvent,
    Accept,
    AckCmd,
    AckWait,
    AckSend,
    MetaWb,
    Finish,
    ScanRead,
    ScanCheck,
    ScanCmp,
    ScanDecide,
    ScanOwn,
    ScanAct,
    ScanConn,
    ScanWb,
    ScanNext,
    TblStart,
    TblRead,
    TblFlowMeta,
    TblFlowWait,
    TblReset,
    TblDone,
    TblGap,
}

// Slot word layout (block RAM, one word per message slot).
// [1:0] state (0 free, 1 active, 2 done), [15:8] opcode, [16] status valid, [18:17] status,
// [19] imm valid, [63:32] MSN, [95:64] SSN, [127:96] message length, [160:128] bytes done,
// [223:192] imm.
// Flow metadata layout: [15:0] refused, [31:16] last entropy, [63:32] last timestamp,
// [127:64] ACK deadline, [128] armed, [131:129] last port (the MAC port of the flow's last data
// packet), [143:136] connection that armed it, [159:144] its flow.

/// The receive engine.
#[derive(LogicBlock, Default)]
pub struct RxEngine {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset of the control state (tables keep their contents).
    pub reset: Signal<In, Bit>,
    /// `CONTROL_RX_ENABLE`.
    pub rx_enable: Signal<In, Bit>,
    /// `ACK_COALESCE` (at least 1).
    pub ack_coalesce: Signal<In, Bits<32>>,
    /// `ACK_DELAY_NS` (0 disables the ACK timer).
    pub ack_delay: Signal<In, Bits<32>>,
    /// Current time (nanoseconds).
    pub now_ns: Signal<In, Bits<64>>,

    /// A parse result is at the head of the result FIFO.
    pub pr_valid: Signal<In, Bit>,
    /// Pops the head parse result (the frame is finished).
    pub pr_pop: Signal<Out, Bit>,
    /// Parse verdict: 0 accepted, else the parse error code.
    pub pr_error: Signal<In, Bits<4>>,
    /// 802.1Q tagged.
    pub pr_vlan: Signal<In, Bit>,
    /// VLAN TCI.
    pub pr_vlan_tci: Signal<In, Bits<16>>,
    /// Source MAC.
    pub pr_src_mac: Signal<In, Bits<48>>,
    /// IPv6.
    pub pr_ipv6: Signal<In, Bit>,
    /// Source IP (IPv4-mapped for IPv4), big-endian.
    pub pr_src_ip: Signal<In, Bits<128>>,
    /// Destination IP, big-endian.
    pub pr_dst_ip: Signal<In, Bits<128>>,
    /// ECN codepoint.
    pub pr_ecn: Signal<In, Bits<2>>,
    /// UDP source port.
    pub pr_src_port: Signal<In, Bits<16>>,
    /// BTH opcode.
    pub pr_opcode: Signal<In, Bits<8>>,
    /// BTH AckReq.
    pub pr_ack_req: Signal<In, Bit>,
    /// BTH destination connection.
    pub pr_dest_conn: Signal<In, Bits<24>>,
    /// BTH PSN (FSN).
    pub pr_psn: Signal<In, Bits<24>>,
    /// Transport header bytes, first byte in the top bits.
    pub pr_th: Signal<In, Bits<384>>,
    /// Payload offset in the frame.
    pub pr_payload_offset: Signal<In, Bits<16>>,
    /// Payload length.
    pub pr_payload_len: Signal<In, Bits<16>>,
    /// The MAC port the frame came in on (`tid`).
    pub pr_port: Signal<In, Bits<PORT_BITS>>,

    /// The payload extractor's decision for the frame is offered (the extractor has the
    /// frame's header and payload lengths from its own queue and skips the headers meanwhile).
    pub pd_valid: Signal<Out, Bit>,
    /// The extractor takes the decision.
    pub pd_ready: Signal<In, Bit>,
    /// Deliver (else discard the frame).
    pub pd_place: Signal<Out, Bit>,

    /// DMA write request for a payload.
    pub wr_valid: Signal<Out, Bit>,
    /// The DMA engine takes the request.
    pub wr_ready: Signal<In, Bit>,
    /// Host address.
    pub wr_addr: Signal<Out, Bits<64>>,
    /// Length in bytes (the data follows from the payload extractor).
    pub wr_len: Signal<Out, Bits<16>>,
    /// The write finished (one pulse per request, in order).
    pub wr_done: Signal<In, Bit>,
    /// The write faulted (with `wr_done`).
    pub wr_error: Signal<In, Bit>,

    /// ACK/NAK frame request offered (the connection fields below, plus these).
    pub a_valid: Signal<Out, Bit>,
    /// The frame builder takes it.
    pub a_ready: Signal<In, Bit>,
    /// Peer MAC.
    pub a_dst_mac: Signal<Out, Bits<48>>,
    /// 802.1Q tagged.
    pub a_vlan: Signal<Out, Bit>,
    /// VLAN TCI.
    pub a_vlan_tci: Signal<Out, Bits<16>>,
    /// IPv6.
    pub a_ipv6: Signal<Out, Bit>,
    /// Local IP.
    pub a_src_ip: Signal<Out, Bits<128>>,
    /// Peer IP.
    pub a_dst_ip: Signal<Out, Bits<128>>,
    /// DSCP.
    pub a_dscp: Signal<Out, Bits<6>>,
    /// UDP source port (entropy).
    pub a_src_port: Signal<Out, Bits<16>>,
    /// ACK or NAK opcode.
    pub a_opcode: Signal<Out, Bits<8>>,
    /// Peer connection id.
    pub a_dest_conn: Signal<Out, Bits<24>>,
    /// PSN: the cumulative FSN (ACK) or the refused FSN (NAK).
    pub a_psn: Signal<Out, Bits<24>>,
    /// Transport header, first byte in the top bits.
    pub a_th: Signal<Out, Bits<384>>,
    /// Transport header length.
    pub a_th_len: Signal<Out, Bits<6>>,
    /// The MAC port the ACK or NAK leaves on (`tdest`): the one its data came in on, or for a
    /// timer ACK the one the flow's last data packet came in on.
    pub a_port: Signal<Out, Bits<PORT_BITS>>,

    /// Event offered (64 bytes, byte i in bits 8i+7..8i).
    pub ev_valid: Signal<Out, Bit>,
    /// The event writer takes it.
    pub ev_ready: Signal<In, Bit>,
    /// The event.
    pub ev_data: Signal<Out, Bits<512>>,

    /// Counter increment this cycle.
    pub cnt_valid: Signal<Out, Bit>,
    /// Counter index.
    pub cnt_index: Signal<Out, Bits<6>>,
    /// Amount.
    pub cnt_amount: Signal<Out, Bits<16>>,

    /// A table command is offered (held until `tc_done`).
    pub tc_valid: Signal<In, Bit>,
    /// Table id (low byte of `TABLE_CMD`).
    pub tc_table: Signal<In, Bits<8>>,
    /// Write.
    pub tc_write: Signal<In, Bit>,
    /// Read.
    pub tc_read: Signal<In, Bit>,
    /// Entry index.
    pub tc_index: Signal<In, Bits<32>>,
    /// The 16 data words, word i in bits 32i+31..32i.
    pub tc_data: Signal<In, Bits<512>>,
    /// The command finished (one pulse).
    pub tc_done: Signal<Out, Bit>,
    /// `TABLE_STATUS_*`.
    pub tc_status: Signal<Out, Bits<4>>,
    /// Words read (valid from `tc_done` until the next command).
    pub tc_rdata: Signal<Out, Bits<512>>,

    /// The engine has work in hand (a frame, a table command or a due ACK timer).
    pub busy: Signal<Out, Bit>,
    /// Some flow's ACK timer is armed.
    pub timer_armed: Signal<Out, Bit>,
    /// While `timer_armed`: when the next timer sweep is due (ns; a lower bound of every armed
    /// deadline, exact after a sweep), so that the host can be woken for it.
    pub timer_due: Signal<Out, Bits<64>>,

    k: RxConsts,
    // The transport-header field positions: constants of this module (Verilog parameters),
    // so that the simulator folds the shifts and slices that use them.
    sh_flow: Const<9, { th_shift(transport::fdh::FLOW.end) }>,
    sh_tag: Const<9, { th_shift(transport::fdh::TAG.end) }>,
    sh_msn: Const<9, { th_shift(transport::fdh::MSN.end) }>,
    sh_ssn: Const<9, { th_shift(transport::fdh::SSN.end) }>,
    sh_offset: Const<9, { th_shift(transport::fdh::OFFSET.end) }>,
    sh_msg_len: Const<9, { th_shift(transport::fdh::MSG_LEN.end) }>,
    sh_ts: Const<9, { th_shift(transport::fdh::TIMESTAMP.end) }>,
    sh_va: Const<9, { th_shift(transport::FDH_LEN + transport::reth::VA.end) }>,
    sh_rkey: Const<9, { th_shift(transport::FDH_LEN + transport::reth::RKEY.end) }>,
    sh_imm_send: Const<9, { th_shift(transport::FDH_LEN + transport::IMM_LEN) }>,
    sh_imm_write:
        Const<9, { th_shift(transport::FDH_LEN + transport::RETH_LEN + transport::IMM_LEN) }>,
    sh_a_flags: Const<9, { th_shift(transport::ack::FLAGS + 1) }>,
    sh_a_ce: Const<9, { th_shift(transport::ack::CE_COUNT.end) }>,
    sh_a_refused: Const<9, { th_shift(transport::ack::REFUSED.end) }>,
    sh_a_rate: Const<9, { th_shift(transport::ack::RATE_HINT.end) }>,
    sh_a_ts: Const<9, { th_shift(transport::ack::TS_ECHO.end) }>,
    sh_a_sack: Const<9, { th_shift(transport::ack::SACK.end) }>,
    // The ACK fields within the header's top two 64-bit words (see `ack_w5`).
    sw_a_flow: Const<6, { th_word_shift(transport::ack::FLOW.end, 2, 5) }>,
    sw_a_flags: Const<6, { th_word_shift(transport::ack::FLAGS + 1, 1, 5) }>,
    sw_a_ce: Const<6, { th_word_shift(transport::ack::CE_COUNT.end, 2, 5) }>,
    sw_a_refused: Const<6, { th_word_shift(transport::ack::REFUSED.end, 2, 5) }>,
    sw_a_rate: Const<6, { th_word_shift(transport::ack::RATE_HINT.end, 4, 4) }>,
    sw_a_ts: Const<6, { th_word_shift(transport::ack::TS_ECHO.end, 4, 4) }>,
    sh_n_flow: Const<9, { th_shift(transport::nak::FLOW.end) }>,
    sh_n_reason: Const<9, { th_shift(transport::nak::REASON + 1) }>,
    sh_n_tag: Const<9, { th_shift(transport::nak::TAG.end) }>,
    sh_n_msn: Const<9, { th_shift(transport::nak::MSN.end) }>,
    sh_n_offset: Const<9, { th_shift(transport::nak::OFFSET.end) }>,
    sh_cm: Const<9, { th_shift(transport::CM_LEN) }>,
    port_mask: Const<PORT_BITS, { (1 << PORT_BITS) - 1 }>,
    ft: FlowTable<FLOW_BITS>,
    conn_ram: BlockRam<448, CONN_BITS>,
    /// The low `TAG_BITS` of each connection's Tag base (a copy of the connection table's,
    /// written with it), read in Idle so that the Tag context's receive-buffer and slot reads
    /// start a cycle before the connection entry arrives.
    tag_ram: LutRam<TAG_BITS, CONN_BITS>,
    /// The low `FLOW_BITS` of each connection's first flow, copied the same way: the flow
    /// index is formed in ConnChk from this copy (read in Idle, registered in `fbase_q`), not
    /// from the connection entry arriving in that cycle.
    fbase_ram: LutRam<FLOW_BITS, CONN_BITS>,
    fbase_q: DFF<Bits<FLOW_BITS>>,
    rate_ram: BlockRam<32, CONN_BITS>,
    region_ram: BlockRam<160, REGION_BITS>,
    /// Posted receive buffers, packed: the valid bit, then the SSN, address and length words
    /// (129 bits, not the table's five words: 30 block RAMs at 4096 entries instead of 36).
    recv_ram: BlockRam<RECV_RAM_BITS, RECV_INDEX_BITS>,
    slot_ram: BlockRam<224, SLOT_INDEX_BITS>,
    meta_ram: BlockRam<160, FLOW_BITS>,

    state: DFF<St>,
    hold: DFF<Bits<2>>,
    conn_addr: DFF<Bits<CONN_BITS>>,
    region_addr: DFF<Bits<REGION_BITS>>,
    // The region entry (read from Idle on, it arrives in Classify), registered in every
    // cycle: Decide1 tests the bounds from it and Decide2 the key and access; the access's
    // end, registered from the frame's fields, for the bounds flags below.
    rg_q: DFF<Bits<160>>,
    va_end_q: DFF<Bits<65>>,
    // The receive-buffer and message-slot checks, registered the same way from the words
    // registered below (`rb_rd_q`, `rs_rd_q`, in place from Decide1 on): Decide2 decides from
    // these flags instead of through 32-bit compares and a 33-bit adder.
    rb_refused_q: DFF<Bit>,
    /// The receive-buffer and message-slot words as read, registered in every cycle: the
    /// reads are issued from Idle (the Tag context's index from `tag_ram`), so the words are
    /// in these flip-flops from Decide1 on and the checks start at a flip-flop, not at the
    /// block RAM's output across the die.
    rb_rd_q: DFF<Bits<160>>,
    rs_rd_q: DFF<Bits<224>>,
    // The receive buffer is shorter than the packet's end, as three registered flags (high
    // half above, high halves equal, low half above) so that no 33-bit carry chain follows
    // the RAM's output; `rb_short` joins them in Decide2.
    rb_short_q: DFF<Bits<3>>,
    rb_short: Signal<Local, Bit>,
    /// Decide1's terminal checks (Tag beyond the connection's count or the table, data
    /// beyond the message's length), registered in every cycle: Decide1 follows at least one
    /// cycle with the frame's fields and its latched connection entry in place, so it selects
    /// a flag instead of running two adds and three compares into its enables.
    tag_len_bad_q: DFF<Bit>,
    rb_place_q: DFF<Bits<64>>,
    rs_active_q: DFF<Bit>,
    cs_a: Signal<Local, Bits<67>>,
    cs_b: Signal<Local, Bits<67>>,
    cs_c: Signal<Local, Bits<67>>,
    cs_s: Signal<Local, Bits<67>>,
    cs_maj: Signal<Local, Bits<67>>,
    cs_lo: Signal<Local, Bits<34>>,
    cs_hi: Signal<Local, Bits<34>>,
    cs_hi1: Signal<Local, Bits<34>>,
    rg_below: Signal<Local, Bit>,
    rg_over: Signal<Local, Bit>,
    rs_done_q: DFF<Bit>,
    rs_same_msg_q: DFF<Bit>,
    /// The slot's message disagrees with the packet, one bit per test: length, opcode, SSN
    /// (Sends), bytes done plus this payload past the length.
    rs_conflict_q: DFF<Bits<4>>,
    rs_conflict_w: Signal<Local, Bits<4>>,
    /// The packet's payload is longer than its message (`rs_conflict_q`'s length test).
    len_over_q: DFF<Bit>,
    /// The message length less the packet's payload: the most the slot may have done.
    room_q: DFF<Bits<33>>,
    // The message's progress with this packet and whether it completes the message,
    // registered from the slot (loaded in Decide2): Account comes at least two cycles later
    // (through Place, or through Nak), so it reads flip-flops instead of a 33-bit adder and
    // compare in front of its decisions.
    new_done_q: DFF<Bits<33>>,
    completes_q: DFF<Bit>,
    // The region bounds checks, from the region read as it arrives (Decide1), each as three
    // flags of half-width carry chains: below the base (high words below, high words equal,
    // low word below), and past the end by a carry-save form of `va + len > base + length`
    // (the low half's carry, the high half's sign without and with that carry).
    rg_below_q: DFF<Bits<3>>,
    rg_over_q: DFF<Bits<3>>,
    // The region's key and access checks, registered from the same operands (so Decide2's
    // verdict reads flip-flops, not the rkey's compare off the parse-result FIFO): the rkey
    // names no valid region of its key, and the region grants no remote access.
    rg_key_bad_q: DFF<Bit>,
    rg_denied_q: DFF<Bit>,
    recv_idx: DFF<Bits<RECV_INDEX_BITS>>,
    slot_idx: DFF<Bits<SLOT_INDEX_BITS>>,
    flow_idx: DFF<Bits<FLOW_BITS>>,
    conn: DFF<Bits<448>>,
    rate: DFF<Bits<32>>,
    // The flow's metadata, in two registers because they load under different conditions: the
    // refusal count (bits 0..16 of the stored entry) follows every refusal decision; the rest
    // (entropy, timestamp, ACK deadline and armed bit, port, connection, flow) loads once per
    // frame and when the ACK timer changes. `meta_hi` holds its bits where the entry has them
    // (16..160), its low 16 bits always zero: the entry is then an OR of the two, not a 160-bit
    // shift by half a word in every simulated cycle. Synthesis keeps those 16 flip-flops (they
    // hold an undefined value until the first load); forcing them to zero in every cycle
    // instead cost 226 LUT4 (session 34), so they stay.
    meta_lo: DFF<Bits<16>>,
    meta_hi: DFF<Bits<160>>,
    // The two together, as stored.
    meta: Signal<Local, Bits<160>>,
    meta_old_armed: DFF<Bit>,
    rb: DFF<Bits<160>>,
    slot: DFF<Bits<224>>,
    sack_class: DFF<Bits<2>>,
    distance: DFF<Bits<9>>,
    opens_gap: DFF<Bit>,
    verdict: DFF<Bits<6>>,
    /// The connection checks, registered in every cycle from the latched connection entry
    /// (`conn`, loaded in ConnChk): the cycle after ConnChk computes them, and the one after
    /// that decides from them (Decide1 for data, RxEvent after CtlChk for ACK and NAK), so
    /// neither the block RAM's output nor the decision waits on a compare. They hold while the
    /// frame is processed (the entry and the parse result hold). Unknown connection:
    cc_unknown_q: DFF<Bit>,
    /// What differs from the entry: bit 0 the address family, bits 1..=8 the eight 32-bit
    /// address words (peer IP, then local IP). `cc_addr` is their OR.
    addr_ne_q: DFF<Bits<9>>,
    /// The flow number is not below the connection's flow count.
    cc_flow_q: DFF<Bit>,
    /// The connection's first flow plus the flow number is past the flow table (data only).
    cc_over_q: DFF<Bit>,
    /// ConnChk was passed: RxEvent reports an ACK or NAK (else a CM frame, unchecked).
    cc_checked: DFF<Bit>,
    f_nak: DFF<Bit>,
    nak_reason: DFF<Bits<8>>,
    f_place: DFF<Bit>,
    f_account: DFF<Bit>,
    f_accept: DFF<Bit>,
    f_ack: DFF<Bit>,
    st_some: DFF<Bit>,
    st_code: DFF<Bits<2>>,
    place_addr: DFF<Bits<64>>,
    wr_sent: DFF<Bit>,
    pd_sent: DFF<Bit>,
    // A classify is under way / its result has been taken (into `sack_class` etc.).
    cls_wait: DFF<Bit>,
    cls_done: DFF<Bit>,
    // A long payload is still streaming: SACK accept and ACK first, then the write's outcome.
    late_write: DFF<Bit>,
    // The payload write finished before the engine came to wait for it (and how).
    wr_done_q: DFF<Bit>,
    wr_error_q: DFF<Bit>,
    ack_entropy: DFF<Bits<16>>,
    ack_port: DFF<Bits<PORT_BITS>>,
    ack_ts: DFF<Bits<32>>,
    ack_flow: DFF<Bits<16>>,
    ev: DFF<Bits<512>>,
    scanning: DFF<Bit>,
    scan_idx: DFF<Bits<13>>,
    min_due: DFF<Bits<64>>,
    min_next: DFF<Bits<64>>,
    armed_count: DFF<Bits<13>>,
    reset_i: DFF<Bits<5>>,
    ctx_q: DFF<Bits<TAG_BITS>>,
    tc_status_q: DFF<Bits<4>>,
    /// The offered table command's checks and table decode, registered every cycle from the
    /// held command (it is stable from `tc_valid` to `tc_done`), so that TblStart and the
    /// states after it decide from flip-flops instead of from the register block's outputs.
    tc_ok_q: DFF<Bit>,
    tc_idx_ok_q: DFF<Bit>,
    tc_region_q: DFF<Bit>,
    tc_conn_q: DFF<Bit>,
    tc_rate_q: DFF<Bit>,
    tc_recv_q: DFF<Bit>,
    tc_flow_q: DFF<Bit>,
    tc_tag_reset_q: DFF<Bit>,
    /// A table write decided in TblStart and done in the next cycle (TblDone), so that the
    /// tables' write enables and data come from flip-flops and the held command instead of
    /// from the decision.
    tw_region_q: DFF<Bit>,
    tw_conn_q: DFF<Bit>,
    tw_rate_q: DFF<Bit>,
    tw_recv_q: DFF<Bit>,
    tc_rdata_q: DFF<Bits<512>>,
    a_psn_q: DFF<Bits<24>>,
    a_opcode_q: DFF<Bits<8>>,
    a_th_len_q: DFF<Bits<6>>,
    a_src_port_q: DFF<Bits<16>>,
    a_port_q: DFF<Bits<PORT_BITS>>,
    /// `a_valid`, from a flip-flop: set with every move into AckSend, cleared when the frame
    /// builder takes the request. In the whole core the builder's arbitration and the transmit
    /// engine's buffer read address hang on it; decoded from the state it was the core's
    /// critical path (the state register across the die into the transmit engine).
    a_valid_q: DFF<Bit>,
    acc_pending: DFF<Bit>,
    acc_wait: DFF<Bit>,
    acc_done: DFF<Bit>,
    // The accept result's ACK-policy flags (`FlowTable::res_ack_due`, `res_unacked_one`).
    acc_due: DFF<Bit>,
    acc_one: DFF<Bit>,
    // Whether a due flow still belongs to the connection that armed it, decided in ScanOwn from
    // the latched entry and acted on in ScanAct, so the compare's carry chain ends at this flag
    // rather than at the wide metadata and ACK registers' enables.
    scan_own_q: DFF<Bit>,
    // The ACK timer's start, decided in Accept and applied in the cycle after from registers
    // only: the deadline (`now + ack_delay`, registered in every cycle) and whether it comes
    // before the earliest armed one (registered in every cycle from those).
    due_q: DFF<Bits<64>>,
    due_first_q: DFF<Bit>,
    timer_start: DFF<Bit>,

    // Fields of the frame at the head of the FIFO.
    d_flow: Signal<Local, Bits<16>>,
    d_tag: Signal<Local, Bits<16>>,
    d_msn: Signal<Local, Bits<32>>,
    d_ssn: Signal<Local, Bits<32>>,
    d_offset: Signal<Local, Bits<32>>,
    d_msg_len: Signal<Local, Bits<32>>,
    d_ts: Signal<Local, Bits<32>>,
    d_va: Signal<Local, Bits<64>>,
    d_rkey: Signal<Local, Bits<32>>,
    d_imm: Signal<Local, Bits<32>>,
    d_has_imm: Signal<Local, Bit>,
    d_slot_ssn: Signal<Local, Bits<32>>,
    d_is_write: Signal<Local, Bit>,
    d_ce: Signal<Local, Bit>,
    d_len: Signal<Local, Bits<33>>,
    d_end: Signal<Local, Bits<33>>,
    // Fields of the latched connection entry.
    c_ipv6: Signal<Local, Bit>,
    c_tag_base: Signal<Local, Bits<16>>,
    c_tag_count: Signal<Local, Bits<16>>,
    c_local_ip: Signal<Local, Bits<128>>,
    c_peer_ip: Signal<Local, Bits<128>>,
    rc: Signal<Local, Bits<448>>,
    addr_ne: Signal<Local, Bits<9>>,
    /// Address family or an address differs from the entry.
    cc_addr: Signal<Local, Bit>,
    flow_sum: Signal<Local, Bits<17>>,
    // The connection checks refuse the frame (ACK and NAK: all but `cc_over_q`).
    cc_refused: Signal<Local, Bit>,
    cc_refused_ctl: Signal<Local, Bit>,
    // Why, as a `verdict`.
    cc_verdict: Signal<Local, Bits<6>>,
    tag_sum: Signal<Local, Bits<17>>,
    /// The head frame's Tag context, from the Tag base's copy (Idle).
    idle_ctx: Signal<Local, Bits<TAG_BITS>>,
    // Slot fields (from the slot register).
    s_state: Signal<Local, Bits<2>>,
    s_msn: Signal<Local, Bits<32>>,
    s_ssn: Signal<Local, Bits<32>>,
    s_opcode: Signal<Local, Bits<8>>,
    s_msg_len: Signal<Local, Bits<32>>,
    s_done: Signal<Local, Bits<33>>,
    new_slot: Signal<Local, Bits<224>>,
    new_done: Signal<Local, Bits<33>>,
    rs: Signal<Local, Bits<224>>,
    rb_w: Signal<Local, Bits<160>>,
    rg: Signal<Local, Bits<160>>,
    // A table read's data: the selected table's entry, an AND-OR over the one-hot table flags
    // rather than a priority chain.
    tbl_rd_w: Signal<Local, Bits<512>>,
    va_end: Signal<Local, Bits<65>>,
    m_rd: Signal<Local, Bits<160>>,
    ev_w: Signal<Local, Bits<512>>,
    // An event's first two 64-bit words, packed before they are widened: the same wires, but
    // the simulator then shifts fields within a machine word instead of 512-bit vectors by
    // amounts that are not whole words (each such shift loops over all sixteen words).
    ev_lo: Signal<Local, Bits<64>>,
    ev_hi: Signal<Local, Bits<64>>,
    swap_in: Signal<Local, Bits<256>>,
    swap_out: Signal<Local, Bits<256>>,
    sw_word: Signal<Local, Bits<32>>,
    sw_swapped: Signal<Local, Bits<32>>,
    mac_sw: Signal<Local, Bits<48>>,
    ip_sw: Signal<Local, Bits<128>>,
    err_cnt: Signal<Local, Bits<6>>,
    tw: Signal<Local, Bits<512>>,
    tbl_ok: Signal<Local, Bit>,
    idx_ok: Signal<Local, Bit>,
    conn_w0: Signal<Local, Bits<32>>,
    meta_refused: Signal<Local, Bits<16>>,
    after_nak: Signal<Local, St>,
    cls_ready: Signal<Local, Bit>,
    ack_th: Signal<Local, Bits<384>>,
    // The ACK header's words 5 (bits 320..384) and 4 (256..320), packed before they are
    // widened: the same wires, but a simulator shifts within machine words instead of
    // 384-bit vectors by amounts that are not whole words, in every cycle.
    ack_w5: Signal<Local, Bits<64>>,
    ack_w4: Signal<Local, Bits<64>>,
    cls_distance: Signal<Local, Bits<9>>,
    after_ack: Signal<Local, St>,
    after_account: Signal<Local, St>,
    cls_class: Signal<Local, Bits<2>>,
    meta_fresh: Signal<Local, Bits<160>>,
    mf_w0: Signal<Local, Bits<64>>,
    mf_w4: Signal<Local, Bits<32>>,
    meta_fresh_refused: Signal<Local, Bits<16>>,
    take_frame: Signal<Local, Bit>,
    // An armed ACK timer is due (`now_ns >= min_due`), the 64-bit compare as a tree: the
    // halves compared side by side (two 32-bit carry chains) and combined, instead of one
    // 64-bit chain in front of Idle's decision (the whole core's deepest path, 8.1 levels).
    timer_hit: Signal<Local, Bit>,
    t_hi_gt: Signal<Local, Bit>,
    t_hi_eq: Signal<Local, Bit>,
    t_lo_ge: Signal<Local, Bit>,
    /// Timer scan, from the registered metadata: the flow's ACK deadline, whether it is armed
    /// and due, whether it is armed and earlier than the earliest seen, and that earliest.
    scan_deadline: Signal<Local, Bits<64>>,
    scan_due: Signal<Local, Bit>,
    scan_earlier: Signal<Local, Bit>,
    // The scan's two compares, registered in ScanCmp and decided on in ScanDecide: a 64-bit
    // compare, then a 64-bit select by its result into `min_next`, was the engine's longest
    // path, in a sweep that has no cycle budget to keep.
    scan_due_q: DFF<Bit>,
    scan_earlier_q: DFF<Bit>,
    // The scan's two 64-bit compares as trees of half compares, as `timer_hit` is.
    sd_hi_lt: Signal<Local, Bit>,
    sd_hi_eq: Signal<Local, Bit>,
    sd_lo_le: Signal<Local, Bit>,
    se_hi_lt: Signal<Local, Bit>,
    se_hi_eq: Signal<Local, Bit>,
    se_lo_lt: Signal<Local, Bit>,
    scan_min: Signal<Local, Bits<64>>,
    ack_ece: Signal<Local, Bit>,
}

impl Logic for RxEngine {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            hold,
            conn_addr,
            region_addr,
            rg_q,
            va_end_q,
            rb_refused_q,
            rb_rd_q,
            rs_rd_q,
            rb_short_q,
            tag_len_bad_q,
            fbase_q,
            rb_place_q,
            rs_active_q,
            rs_done_q,
            rs_same_msg_q,
            rs_conflict_q,
            len_over_q,
            room_q,
            new_done_q,
            completes_q,
            rg_below_q,
            rg_over_q,
            rg_key_bad_q,
            rg_denied_q,
            recv_idx,
            slot_idx,
            flow_idx,
            conn,
            rate,
            meta_lo,
            meta_hi,
            meta_old_armed,
            rb,
            slot,
            sack_class,
            distance,
            opens_gap,
            verdict,
            cc_unknown_q,
            addr_ne_q,
            cc_flow_q,
            cc_over_q,
            cc_checked,
            f_nak,
            nak_reason,
            f_place,
            f_account,
            f_accept,
            f_ack,
            st_some,
            st_code,
            place_addr,
            wr_sent,
            pd_sent,
            cls_wait,
            cls_done,
            late_write,
            wr_done_q,
            wr_error_q,
            ack_entropy,
            ack_port,
            ack_ts,
            ack_flow,
            ev,
            scanning,
            scan_idx,
            min_due,
            min_next,
            scan_due_q,
            scan_earlier_q,
            armed_count,
            reset_i,
            ctx_q,
            tc_status_q,
            tc_ok_q,
            tc_idx_ok_q,
            tc_region_q,
            tc_conn_q,
            tc_rate_q,
            tc_recv_q,
            tc_flow_q,
            tc_tag_reset_q,
            tw_region_q,
            tw_conn_q,
            tw_rate_q,
            tw_recv_q,
            tc_rdata_q,
            a_psn_q,
            a_opcode_q,
            a_th_len_q,
            a_src_port_q,
            a_port_q,
            a_valid_q,
            acc_pending,
            acc_wait,
            acc_done,
            acc_due,
            acc_one,
            scan_own_q,
            due_q,
            due_first_q,
            timer_start
        );
        clock!(self, clock, ft);
        self.k.reset.next = self.reset.val();
        self.ft.reset.next = self.reset.val();
        self.ft.coalesce.next = self.ack_coalesce.val();
        self.conn_ram.read_clock.next = self.clock.val();
        self.conn_ram.write_clock.next = self.clock.val();
        self.rate_ram.read_clock.next = self.clock.val();
        self.rate_ram.write_clock.next = self.clock.val();
        self.region_ram.read_clock.next = self.clock.val();
        self.region_ram.write_clock.next = self.clock.val();
        self.recv_ram.read_clock.next = self.clock.val();
        self.recv_ram.write_clock.next = self.clock.val();
        self.slot_ram.read_clock.next = self.clock.val();
        self.slot_ram.write_clock.next = self.clock.val();
        self.meta_ram.read_clock.next = self.clock.val();
        self.meta_ram.write_clock.next = self.clock.val();
        self.conn_ram.read_address.next = self.conn_addr.q.val();
        self.rate_ram.read_address.next = self.conn_addr.q.val();
        if self.state.q.val() == St::Idle {
            // The head frame's connection entry arrives in the cycle after Idle (ConnChk).
            self.conn_ram.read_address.next = self.pr_dest_conn.val().get_bits::<CONN_BITS>(0);
            self.rate_ram.read_address.next = self.pr_dest_conn.val().get_bits::<CONN_BITS>(0);
        }
        self.tag_ram.write_clock.next = self.clock.val();
        self.tag_ram.read_address.next = self.pr_dest_conn.val().get_bits::<CONN_BITS>(0);
        self.fbase_ram.write_clock.next = self.clock.val();
        self.fbase_ram.read_address.next = self.pr_dest_conn.val().get_bits::<CONN_BITS>(0);
        self.fbase_q.d.next = self.fbase_ram.read_data.val();
        self.region_ram.read_address.next = self.region_addr.q.val();
        self.recv_ram.read_address.next = self.recv_idx.q.val();
        self.slot_ram.read_address.next = self.slot_idx.q.val();
        self.meta_ram.read_address.next = self.flow_idx.q.val();
        // The region, connection and rate tables are written only by table commands, one cycle
        // after TblStart decided the write (`tw_*_q`): address and data always come from the
        // held command, whatever the state.
        self.conn_ram.write_enable.next = self.tw_conn_q.q.val();
        self.tag_ram.write_enable.next = self.tw_conn_q.q.val();
        self.tag_ram.write_address.next = self.tc_index.val().get_bits::<CONN_BITS>(0);
        self.fbase_ram.write_enable.next = self.tw_conn_q.q.val();
        self.fbase_ram.write_address.next = self.tc_index.val().get_bits::<CONN_BITS>(0);
        self.conn_ram.write_address.next = self.tc_index.val().get_bits::<CONN_BITS>(0);
        self.rate_ram.write_enable.next = self.tw_rate_q.q.val();
        self.rate_ram.write_address.next = self.tc_index.val().get_bits::<CONN_BITS>(0);
        self.region_ram.write_enable.next = self.tw_region_q.q.val();
        self.region_ram.write_address.next = self.tc_index.val().get_bits::<REGION_BITS>(0);
        self.tw_region_q.d.next = false;
        self.tw_conn_q.d.next = false;
        self.tw_rate_q.d.next = false;
        self.tw_recv_q.d.next = false;
        self.recv_ram.write_enable.next = false;
        self.recv_ram.write_address.next = self.recv_idx.q.val();
        self.recv_ram.write_data.next = 0.into();
        self.slot_ram.write_enable.next = false;
        self.slot_ram.write_address.next = self.slot_idx.q.val();
        self.slot_ram.write_data.next = 0.into();
        self.meta_ram.write_enable.next = false;
        self.meta_ram.write_address.next = self.flow_idx.q.val();

        // Outputs default.
        self.pr_pop.next = false;
        self.pd_valid.next = false;
        self.pd_place.next = false;
        self.wr_valid.next = false;
        self.wr_addr.next = self.place_addr.q.val();
        self.wr_len.next = self.pr_payload_len.val();
        self.a_valid.next = self.a_valid_q.q.val();
        self.ev_valid.next = false;
        self.ev_data.next = self.ev.q.val();
        self.cnt_valid.next = false;
        self.cnt_index.next = 0.into();
        self.cnt_amount.next = 1.into();
        self.tc_done.next = false;
        self.tc_status.next = self.tc_status_q.q.val();
        self.tc_rdata.next = self.tc_rdata_q.q.val();
        self.ft.cmd_valid.next = false;
        self.ft.cmd_op.next = 0.into();
        self.ft.cmd_index.next = self.flow_idx.q.val();
        self.ft.cmd_fsn.next = self.pr_psn.val();
        self.ft.cmd_distance.next = self.distance.q.val();

        // ---- Fields of the frame at the head of the FIFO.
        self.d_flow.next = self.pr_th.val().get_bits::<16>(self.sh_flow.val().index());
        self.d_tag.next = self.pr_th.val().get_bits::<16>(self.sh_tag.val().index());
        self.d_msn.next = self.pr_th.val().get_bits::<32>(self.sh_msn.val().index());
        self.d_ssn.next = self.pr_th.val().get_bits::<32>(self.sh_ssn.val().index());
        self.d_offset.next = self
            .pr_th
            .val()
            .get_bits::<32>(self.sh_offset.val().index());
        self.d_msg_len.next = self
            .pr_th
            .val()
            .get_bits::<32>(self.sh_msg_len.val().index());
        self.d_ts.next = self.pr_th.val().get_bits::<32>(self.sh_ts.val().index());
        self.d_va.next = self.pr_th.val().get_bits::<64>(self.sh_va.val().index());
        self.d_rkey.next = self.pr_th.val().get_bits::<32>(self.sh_rkey.val().index());
        self.d_is_write.next = (self.pr_opcode.val() == self.k.op_write.val())
            | (self.pr_opcode.val() == self.k.op_write_imm.val());
        self.d_has_imm.next = (self.pr_opcode.val() == self.k.op_send_imm.val())
            | (self.pr_opcode.val() == self.k.op_write_imm.val());
        // A message slot records the SSN of Sends only (Writes consume no receive buffer).
        self.d_slot_ssn.next = self.d_ssn.val();
        if self.d_is_write.val() {
            self.d_slot_ssn.next = 0.into();
        }
        self.d_imm.next = 0.into();
        if self.pr_opcode.val() == self.k.op_send_imm.val() {
            self.d_imm.next = self
                .pr_th
                .val()
                .get_bits::<32>(self.sh_imm_send.val().index());
        }
        if self.pr_opcode.val() == self.k.op_write_imm.val() {
            self.d_imm.next = self
                .pr_th
                .val()
                .get_bits::<32>(self.sh_imm_write.val().index());
        }
        self.d_ce.next = self.pr_ecn.val() == self.k.ecn_ce.val();
        self.d_len.next = bit_cast::<33, 16>(self.pr_payload_len.val());
        self.d_end.next = bit_cast::<33, 32>(self.d_offset.val()) + self.d_len.val();

        // ---- Fields of the latched connection entry (words: see ConnectionEntry::to_words).
        self.c_ipv6.next = self.conn.q.val().get_bit(1);
        self.c_tag_base.next = self.conn.q.val().get_bits::<16>(96);
        self.c_tag_count.next = self.conn.q.val().get_bits::<16>(112);
        self.c_local_ip.next = (bit_cast::<128, 32>(self.conn.q.val().get_bits::<32>(192))
            << 96_u64)
            | (bit_cast::<128, 32>(self.conn.q.val().get_bits::<32>(224)) << 64_u64)
            | (bit_cast::<128, 32>(self.conn.q.val().get_bits::<32>(256)) << 32_u64)
            | bit_cast::<128, 32>(self.conn.q.val().get_bits::<32>(288));
        self.c_peer_ip.next = (bit_cast::<128, 32>(self.conn.q.val().get_bits::<32>(320))
            << 96_u64)
            | (bit_cast::<128, 32>(self.conn.q.val().get_bits::<32>(352)) << 64_u64)
            | (bit_cast::<128, 32>(self.conn.q.val().get_bits::<32>(384)) << 32_u64)
            | bit_cast::<128, 32>(self.conn.q.val().get_bits::<32>(416));
        self.rc.next = self.conn_ram.read_data.val();
        self.flow_sum.next = bit_cast::<17, 16>(self.conn.q.val().get_bits::<16>(64))
            + bit_cast::<17, 16>(self.d_flow.val());
        self.cc_unknown_q.d.next = ((self.pr_dest_conn.val() >> self.k.conn_bits.val()) != 0_u64)
            | !self.conn.q.val().get_bit(0);
        // The addresses word by word (the entry holds each one's first word lowest: local IP
        // from bit 192, peer IP from bit 320). The nine mismatches (family and words) are
        // registered from the latched entry (`conn`, loaded in ConnChk straight from the block
        // RAM), so no compare hangs off the RAM's output, and the next state ORs them
        // (`cc_addr`) with the other flags.
        self.addr_ne.next = 0.into();
        if self.pr_ipv6.val() != self.conn.q.val().get_bit(1) {
            self.addr_ne.next = 1.into();
        }
        for i in 0_usize..4 {
            if self.pr_src_ip.val().get_bits::<32>(96 - 32 * i)
                != self.conn.q.val().get_bits::<32>(320 + 32 * i)
            {
                self.addr_ne.next = self.addr_ne.val().replace_bit(1 + i, true);
            }
            if self.pr_dst_ip.val().get_bits::<32>(96 - 32 * i)
                != self.conn.q.val().get_bits::<32>(192 + 32 * i)
            {
                self.addr_ne.next = self.addr_ne.val().replace_bit(5 + i, true);
            }
        }
        self.addr_ne_q.d.next = self.addr_ne.val();
        self.cc_addr.next = self.addr_ne_q.q.val().any();
        // ACK and NAK carry their flow where data carries it.
        self.cc_flow_q.d.next = self.d_flow.val() >= self.conn.q.val().get_bits::<16>(80);
        self.cc_over_q.d.next = (self.flow_sum.val() >> self.k.flow_bits.val()) != 0_u64;
        self.cc_refused_ctl.next =
            self.cc_unknown_q.q.val() | self.cc_addr.val() | self.cc_flow_q.q.val();
        self.cc_refused.next = self.cc_refused_ctl.val() | self.cc_over_q.q.val();
        // Sampled the cycle after Classify's command is taken (Decide1), when the connection
        // checks are in: a refused packet's mark is not counted.
        self.ft.late_ce.next = self.d_ce.val() & !self.cc_refused.val();
        self.cc_verdict.next = self.k.c_bad_flow.val();
        if self.cc_unknown_q.q.val() {
            self.cc_verdict.next = self.k.c_unknown_conn.val();
        } else if self.cc_addr.val() {
            self.cc_verdict.next = self.k.c_addr_mismatch.val();
        }
        self.idle_ctx.next =
            self.tag_ram.read_data.val() + self.d_tag.val().get_bits::<TAG_BITS>(0);
        self.tag_sum.next =
            bit_cast::<17, 16>(self.c_tag_base.val()) + bit_cast::<17, 16>(self.d_tag.val());

        // The ACK/NAK request carries the latched connection's addressing.
        self.a_dst_mac.next = self.conn.q.val().get_bits::<48>(128);
        self.a_vlan.next = self.conn.q.val().get_bit(2);
        self.a_vlan_tci.next = self.conn.q.val().get_bits::<16>(16);
        self.a_ipv6.next = self.c_ipv6.val();
        self.a_src_ip.next = self.c_local_ip.val();
        self.a_dst_ip.next = self.c_peer_ip.val();
        self.a_dscp.next = self.conn.q.val().get_bits::<6>(8);
        self.a_dest_conn.next = self.conn.q.val().get_bits::<24>(32);
        self.a_src_port.next = self.a_src_port_q.q.val();
        self.a_opcode.next = self.a_opcode_q.q.val();
        self.a_psn.next = self.a_psn_q.q.val();
        self.a_th_len.next = self.a_th_len_q.q.val();
        self.a_port.next = self.a_port_q.q.val();

        // ---- Slot fields.
        self.s_state.next = self.slot.q.val().get_bits::<2>(0);
        self.s_opcode.next = self.slot.q.val().get_bits::<8>(8);
        self.s_msn.next = self.slot.q.val().get_bits::<32>(32);
        self.s_ssn.next = self.slot.q.val().get_bits::<32>(64);
        self.s_msg_len.next = self.slot.q.val().get_bits::<32>(96);
        self.s_done.next = self.slot.q.val().get_bits::<33>(128);
        self.rs.next = self.slot_ram.read_data.val();
        self.rb_w.next =
            bit_cast::<160, RECV_RAM_BITS>(
                self.recv_ram.read_data.val() & 1_u64.to_bits::<RECV_RAM_BITS>(),
            ) | (bit_cast::<160, 128>(self.recv_ram.read_data.val().get_bits::<128>(1)) << 32_u64);
        self.rs_rd_q.d.next = self.rs.val();
        self.rb_rd_q.d.next = self.rb_w.val();
        self.rg.next = self.region_ram.read_data.val();
        self.tbl_rd_w.next = 0.into();
        if self.tc_region_q.q.val() {
            self.tbl_rd_w.next = bit_cast::<512, 160>(self.rg.val());
        }
        if self.tc_conn_q.q.val() {
            self.tbl_rd_w.next = self.tbl_rd_w.val()
                | bit_cast::<512, 448>(self.rc.val())
                | (bit_cast::<512, 32>(self.rate_ram.read_data.val()) << 448_u64);
        }
        if self.tc_rate_q.q.val() {
            self.tbl_rd_w.next =
                self.tbl_rd_w.val() | bit_cast::<512, 32>(self.rate_ram.read_data.val());
        }
        if self.tc_recv_q.q.val() {
            self.tbl_rd_w.next = self.tbl_rd_w.val() | bit_cast::<512, 160>(self.rb_w.val());
        }
        if self.tc_flow_q.q.val() & self.tc_read.val() {
            self.tbl_rd_w.next = self.tbl_rd_w.val()
                | bit_cast::<512, 24>(self.ft.res_cum.val())
                | (bit_cast::<512, 256>(self.ft.res_bitmap.val()) << 32_u64);
        }
        self.m_rd.next = self.meta_ram.read_data.val();
        self.new_slot.next = self.slot.q.val();
        self.new_done.next = self.s_done.val() + self.d_len.val();
        self.new_done_q.d.next = self.new_done.val();
        self.completes_q.d.next = self.new_done.val() >= bit_cast::<33, 32>(self.s_msg_len.val());
        self.va_end.next =
            bit_cast::<65, 64>(self.d_va.val()) + bit_cast::<65, 33>(self.d_len.val());
        self.rg_q.d.next = self.rg.val();
        self.va_end_q.d.next = self.va_end.val();
        // The key and access checks, from the registered region entry and the frame's rkey.
        self.rg_key_bad_q.d.next = (((self.d_rkey.val() >> 8_u64) >> self.k.region_bits.val())
            != 0_u64)
            | !self.rg_q.q.val().get_bit(0)
            | (self.rg_q.q.val().get_bits::<8>(8) != self.d_rkey.val().get_bits::<8>(0));
        self.rg_denied_q.d.next =
            (self.rg_q.q.val().get_bits::<8>(16) & self.k.access_rw.val()) == 0_u64;
        // Both bounds tests, from the registered region entry (read from Idle on, so `rg_q`
        // holds it in Decide1), are split at the middle, each half a carry chain of its own,
        // and Decide2 joins the registered halves (`rg_below`, `rg_over`) with one gate.
        // Below the base: by the high words, or equal high words and by the low.
        self.rg_below_q.d.next = 0.into();
        if self.d_va.val().get_bits::<32>(32) < self.rg_q.q.val().get_bits::<32>(64) {
            self.rg_below_q.d.next = 1.into();
        }
        if self.d_va.val().get_bits::<32>(32) == self.rg_q.q.val().get_bits::<32>(64) {
            self.rg_below_q.d.next = self.rg_below_q.d.val() | 2_u64;
        }
        if self.d_va.val().get_bits::<32>(0) < self.rg_q.q.val().get_bits::<32>(32) {
            self.rg_below_q.d.next = self.rg_below_q.d.val() | 4_u64;
        }
        self.rg_below.next = self.rg_below_q.q.val().get_bit(0)
            | (self.rg_below_q.q.val().get_bit(1) & self.rg_below_q.q.val().get_bit(2));
        // x = end − base − length − 1 over 67 bits, from a 3:2 compressor (sum `cs_s`, carries
        // `cs_maj` one place up); the access runs past the region exactly when x ≥ 0. The low
        // 33 bits give the carry into the high 34, whose sign is registered for both carries.
        self.cs_a.next = bit_cast::<67, 65>(self.va_end_q.q.val());
        self.cs_b.next = !bit_cast::<67, 64>(self.rg_q.q.val().get_bits::<64>(32));
        self.cs_c.next = !bit_cast::<67, 64>(self.rg_q.q.val().get_bits::<64>(96));
        self.cs_s.next = self.cs_a.val() ^ self.cs_b.val() ^ self.cs_c.val();
        // The carries unshifted (`cs_maj`): the shift by one is taken in the two halves'
        // operands, the same wires without a 67-bit shift in every simulated cycle.
        self.cs_maj.next = (self.cs_a.val() & self.cs_b.val())
            | (self.cs_a.val() & self.cs_c.val())
            | (self.cs_b.val() & self.cs_c.val());
        self.cs_lo.next = bit_cast::<34, 33>(self.cs_s.val().get_bits::<33>(0))
            + (bit_cast::<34, 32>(self.cs_maj.val().get_bits::<32>(0)) << 1_u64)
            + 1_u64;
        self.cs_hi.next = self.cs_s.val().get_bits::<34>(33) + self.cs_maj.val().get_bits::<34>(32);
        self.cs_hi1.next = self.cs_hi.val() + 1_u64;
        self.rg_over_q.d.next = 0.into();
        if self.cs_lo.val().get_bit(33) {
            self.rg_over_q.d.next = 1.into();
        }
        if self.cs_hi.val().get_bit(33) {
            self.rg_over_q.d.next = self.rg_over_q.d.val() | 2_u64;
        }
        if self.cs_hi1.val().get_bit(33) {
            self.rg_over_q.d.next = self.rg_over_q.d.val() | 4_u64;
        }
        self.rg_over.next = !self.rg_over_q.q.val().get_bit(1);
        if self.rg_over_q.q.val().get_bit(0) {
            self.rg_over.next = !self.rg_over_q.q.val().get_bit(2);
        }
        self.rb_refused_q.d.next = !self.d_is_write.val()
            & (!self.rb_rd_q.q.val().get_bit(0)
                | (self.rb_rd_q.q.val().get_bits::<32>(32) != self.d_ssn.val()));
        self.tag_len_bad_q.d.next = (self.d_tag.val() >= self.c_tag_count.val())
            | ((self.tag_sum.val() >> self.k.tag_bits.val()) != 0_u64)
            | (self.d_end.val() > bit_cast::<33, 32>(self.d_msg_len.val()));
        self.rb_short_q.d.next = 0.into();
        if self.d_end.val().get_bits::<17>(16)
            > bit_cast::<17, 16>(self.rb_rd_q.q.val().get_bits::<16>(144))
        {
            self.rb_short_q.d.next = 1.into();
        }
        if self.d_end.val().get_bits::<17>(16)
            == bit_cast::<17, 16>(self.rb_rd_q.q.val().get_bits::<16>(144))
        {
            self.rb_short_q.d.next = self.rb_short_q.d.val() | 2_u64;
        }
        if self.d_end.val().get_bits::<16>(0) > self.rb_rd_q.q.val().get_bits::<16>(128) {
            self.rb_short_q.d.next = self.rb_short_q.d.val() | 4_u64;
        }
        self.rb_short.next = self.rb_short_q.q.val().get_bit(0)
            | (self.rb_short_q.q.val().get_bit(1) & self.rb_short_q.q.val().get_bit(2));
        self.rb_place_q.d.next =
            self.rb_rd_q.q.val().get_bits::<64>(64) + bit_cast::<64, 32>(self.d_offset.val());
        self.rs_active_q.d.next = self.rs_rd_q.q.val().get_bits::<2>(0) == 1_u64;
        self.rs_done_q.d.next = self.rs_rd_q.q.val().get_bits::<2>(0) == 2_u64;
        self.rs_same_msg_q.d.next = self.rs_rd_q.q.val().get_bits::<32>(32) == self.d_msn.val();
        // One flag per test, each from the registered slot word; Decide2 ORs them.
        self.rs_conflict_w.next = 0.into();
        if self.rs_rd_q.q.val().get_bits::<32>(96) != self.d_msg_len.val() {
            self.rs_conflict_w.next = self.rs_conflict_w.val() | 1_u64;
        }
        if self.rs_rd_q.q.val().get_bits::<8>(8) != self.pr_opcode.val() {
            self.rs_conflict_w.next = self.rs_conflict_w.val() | 2_u64;
        }
        if !self.d_is_write.val() & (self.rs_rd_q.q.val().get_bits::<32>(64) != self.d_ssn.val()) {
            self.rs_conflict_w.next = self.rs_conflict_w.val() | 4_u64;
        }
        if self.len_over_q.q.val()
            | (self.rs_rd_q.q.val().get_bits::<33>(128) > self.room_q.q.val())
        {
            self.rs_conflict_w.next = self.rs_conflict_w.val() | 8_u64;
        }
        self.rs_conflict_q.d.next = self.rs_conflict_w.val();
        // `done + len > msg_len` with no adder after the block RAM: the packet's side is
        // registered from the parse result, which holds from Idle on, long before the slot
        // word is registered (Decide1). The slot's done count never exceeds its message length, so
        // the sum cannot wrap. (`len_over_q` keeps the test whole; Decide1 has already refused
        // a packet whose offset plus length passes its message length.)
        self.len_over_q.d.next = self.d_len.val() > bit_cast::<33, 32>(self.d_msg_len.val());
        self.room_q.d.next = bit_cast::<33, 32>(self.d_msg_len.val()) - self.d_len.val();
        self.ack_ece.next = (self
            .pr_th
            .val()
            .get_bits::<8>(self.sh_a_flags.val().index())
            & self.k.ack_flag_ece.val())
            != 0_u64;
        // The flow's refusal count + 1, wrapping at 16 bits.
        self.meta_refused.next = self.meta_lo.q.val() + 1_u64;
        // The deadline a timer started now would get, and whether it would be the earliest.
        // `now_ns` and `ack_delay` hold while a frame is in the engine (the time is the
        // poll's, and the delay a register), and `min_due` and `armed_count` change only in
        // Accept, MetaWb and the scan, never in the cycle before an Accept: so these equal
        // what Accept would compute from the same inputs in its own cycle.
        self.due_q.d.next = self.now_ns.val() + bit_cast::<64, 32>(self.ack_delay.val());
        self.due_first_q.d.next =
            (self.armed_count.q.val() == 0_u64) | (self.due_q.q.val() < self.min_due.q.val());

        // ---- Byte swaps for the events and the ACK header, a 32-bit word at a time
        // (`sw_word` → `sw_swapped`): eight word steps instead of 32 byte steps over 256 bits
        // in the simulator; wires either way for synthesis. The CM event's MAC and IP swaps,
        // and the ACK's transport header, are computed only where they are read (below), so
        // the simulator skips them in every other cycle and synthesis sees the same logic.
        self.sw_word.next = 0.into();
        self.sw_swapped.next = 0.into();
        self.swap_in.next = self.ft.res_bitmap.val();
        if self.state.q.val() == St::Idle {
            self.swap_in.next = self.pr_th.val().get_bits::<256>(self.sh_cm.val().index());
        }
        if self.state.q.val() == St::ConnChk {
            self.swap_in.next = self
                .pr_th
                .val()
                .get_bits::<256>(self.sh_a_sack.val().index());
        }
        // Swapped only in the states that read the result (a CM frame's event from Idle, an
        // ACK's event from ConnChk, the ACK header in AckSend).
        self.swap_out.next = 0.into();
        if (self.pr_valid.val() & (self.state.q.val() == St::Idle))
            | (self.state.q.val() == St::ConnChk)
            | (self.state.q.val() == St::AckSend)
        {
            for i in 0_usize..8 {
                self.sw_word.next = self.swap_in.val().get_bits::<32>(32 * i);
                self.sw_swapped.next = (self.sw_word.val() << 24_u64)
                    | ((self.sw_word.val() & 0xFF00_u64) << 8_u64)
                    | ((self.sw_word.val() >> 8_u64) & 0xFF00_u64)
                    | (self.sw_word.val() >> 24_u64);
                self.swap_out.next = self.swap_out.val()
                    | (bit_cast::<256, 32>(self.sw_swapped.val()) << (224 - 32 * i).to_bits::<9>());
            }
        }
        self.mac_sw.next = 0.into();
        self.ip_sw.next = 0.into();
        self.ev_w.next = 0.into();
        self.ev_lo.next = 0.into();
        self.ev_hi.next = 0.into();
        // The ACK or NAK transport header, offered in AckSend, straight from registers: not a
        // 384-bit register loaded under the ACK decision (its enable was the engine's critical
        // path). Everything it is built from holds from the decision until the builder takes
        // the request: the flow table's result (an ACK command reports the state before
        // clearing, the same as the accept result on display before it), the flow's
        // registered ACK fields, and the frame's parse result for a NAK.
        self.ack_w5.next = (bit_cast::<64, 16>(self.ack_flow.q.val()) << self.sw_a_flow.val())
            | (bit_cast::<64, 16>(self.ft.res_ce.val()) << self.sw_a_ce.val())
            | (bit_cast::<64, 16>(self.meta_lo.q.val()) << self.sw_a_refused.val());
        if self.ft.res_ce.val() != 0_u64 {
            self.ack_w5.next = self.ack_w5.val()
                | (bit_cast::<64, 8>(self.k.ack_flag_ece.val()) << self.sw_a_flags.val());
        }
        self.ack_w4.next = (bit_cast::<64, 32>(self.rate.q.val()) << self.sw_a_rate.val())
            | (bit_cast::<64, 32>(self.ack_ts.q.val()) << self.sw_a_ts.val());
        self.ack_th.next = (bit_cast::<384, 64>(self.ack_w5.val()) << 320_u64)
            | (bit_cast::<384, 64>(self.ack_w4.val()) << 256_u64)
            | (bit_cast::<384, 256>(self.swap_out.val()) << self.sh_a_sack.val());
        self.a_th.next = self.ack_th.val();
        if self.a_opcode_q.q.val() == self.k.op_nak.val() {
            self.a_th.next = (bit_cast::<384, 16>(self.d_flow.val()) << self.sh_n_flow.val())
                | (bit_cast::<384, 8>(self.nak_reason.q.val()) << self.sh_n_reason.val())
                | (bit_cast::<384, 16>(self.d_tag.val()) << self.sh_n_tag.val())
                | (bit_cast::<384, 32>(self.d_msn.val()) << self.sh_n_msn.val())
                | (bit_cast::<384, 32>(self.d_offset.val()) << self.sh_n_offset.val());
        }

        // Parse error code → its drop counter.
        self.err_cnt.next = self.k.e_bad_icrc.val();
        if self.pr_error.val() == self.k.pe_truncated.val() {
            self.err_cnt.next = self.k.e_truncated.val();
        }
        if self.pr_error.val() == self.k.pe_ethertype.val() {
            self.err_cnt.next = self.k.e_ethertype.val();
        }
        if self.pr_error.val() == self.k.pe_ip_header.val() {
            self.err_cnt.next = self.k.e_ip_header.val();
        }
        if self.pr_error.val() == self.k.pe_ip_checksum.val() {
            self.err_cnt.next = self.k.e_ip_checksum.val();
        }
        if self.pr_error.val() == self.k.pe_not_udp.val() {
            self.err_cnt.next = self.k.e_not_udp.val();
        }
        if self.pr_error.val() == self.k.pe_bad_udp.val() {
            self.err_cnt.next = self.k.e_bad_udp.val();
        }
        if self.pr_error.val() == self.k.pe_bad_bth.val() {
            self.err_cnt.next = self.k.e_bad_bth.val();
        }
        if self.pr_error.val() == self.k.pe_bad_opcode.val() {
            self.err_cnt.next = self.k.e_bad_opcode.val();
        }
        if self.pr_error.val() == self.k.pe_too_long.val() {
            self.err_cnt.next = self.k.e_too_long.val();
        }

        // ---- Table command decoding.
        self.tw.next = self.tc_data.val();
        self.tbl_ok.next = (self.tc_write.val() != self.tc_read.val())
            & ((self.tc_table.val() == self.k.t_region.val())
                | (self.tc_table.val() == self.k.t_conn.val())
                | (self.tc_table.val() == self.k.t_flow.val())
                | (self.tc_table.val() == self.k.t_recv.val())
                | (self.tc_table.val() == self.k.t_rate.val())
                | (self.tc_table.val() == self.k.t_tag_reset.val()));
        self.idx_ok.next = false;
        if (self.tc_table.val() == self.k.t_region.val())
            & ((self.tc_index.val() >> self.k.region_bits.val()) == 0_u64)
        {
            self.idx_ok.next = true;
        }
        if ((self.tc_table.val() == self.k.t_conn.val())
            | (self.tc_table.val() == self.k.t_rate.val()))
            & ((self.tc_index.val() >> self.k.conn_bits.val()) == 0_u64)
        {
            self.idx_ok.next = true;
        }
        if (self.tc_table.val() == self.k.t_flow.val())
            & ((self.tc_index.val() >> self.k.flow_bits.val()) == 0_u64)
        {
            self.idx_ok.next = true;
        }
        if (self.tc_table.val() == self.k.t_recv.val())
            & ((self.tc_index.val() >> self.k.recv_index_bits.val()) == 0_u64)
        {
            self.idx_ok.next = true;
        }
        if (self.tc_table.val() == self.k.t_tag_reset.val())
            & ((self.tc_index.val() >> self.k.tag_bits.val()) == 0_u64)
        {
            self.idx_ok.next = true;
        }
        self.tc_ok_q.d.next = self.tbl_ok.val();
        self.tc_idx_ok_q.d.next = self.idx_ok.val();
        self.tc_region_q.d.next = self.tc_table.val() == self.k.t_region.val();
        self.tc_conn_q.d.next = self.tc_table.val() == self.k.t_conn.val();
        self.tc_rate_q.d.next = self.tc_table.val() == self.k.t_rate.val();
        self.tc_recv_q.d.next = self.tc_table.val() == self.k.t_recv.val();
        self.tc_flow_q.d.next = self.tc_table.val() == self.k.t_flow.val();
        self.tc_tag_reset_q.d.next = self.tc_table.val() == self.k.t_tag_reset.val();
        // ConnectionEntry word 0, normalised as from_words/to_words do (the TCI only when tagged).
        self.conn_w0.next = self.tw.val().get_bits::<32>(0) & 0x3F07_u64;
        if self.tw.val().get_bit(2) {
            self.conn_w0.next = self.tw.val().get_bits::<32>(0) & 0xFFFF_3F07_u64;
        }
        // The table writes' data (`tw_*_q` above).
        // The command's words in place, with word 0 normalised and the unused bits 56..64 and
        // 176..192 cleared by a constant mask: the same wires as the fields shifted into place
        // one by one, but a simulator ANDs words instead of shifting a 448-bit vector five
        // times in every cycle.
        self.conn_ram.write_data.next = bit_cast::<448, 512>(
            self.tw.val()
                & !(0xFFFF_FFFF_u64.to_bits::<512>()
                    | (0xFF_u64.to_bits::<512>() << 56_u64)
                    | (0xFFFF_u64.to_bits::<512>() << 176_u64)),
        ) | bit_cast::<448, 32>(self.conn_w0.val());
        // The Tag base, as the connection entry stores it (bits 96..112).
        self.tag_ram.write_data.next = self.tw.val().get_bits::<TAG_BITS>(96);
        // The first flow (bits 64..80).
        self.fbase_ram.write_data.next = self.tw.val().get_bits::<FLOW_BITS>(64);
        self.rate_ram.write_data.next = self.tw.val().get_bits::<32>(448);
        if self.tc_rate_q.q.val() {
            self.rate_ram.write_data.next = self.tw.val().get_bits::<32>(0);
        }
        // Word 0 keeps its valid bit (0) and key and access (8..24); the rest is in place.
        self.region_ram.write_data.next =
            bit_cast::<160, 512>(self.tw.val() & !0xFF00_00FE_u64.to_bits::<512>());
        if self.tw_recv_q.q.val() {
            // TblDone; TblStart loaded `recv_idx` with the command's index.
            self.recv_ram.write_enable.next = true;
            self.recv_ram.write_data.next =
                bit_cast::<RECV_RAM_BITS, 32>(self.tw.val().get_bits::<32>(0) & 1_u64)
                    | (bit_cast::<RECV_RAM_BITS, 128>(self.tw.val().get_bits::<128>(32)) << 1_u64);
        }

        self.t_hi_gt.next =
            self.now_ns.val().get_bits::<32>(32) > self.min_due.q.val().get_bits::<32>(32);
        self.t_hi_eq.next =
            self.now_ns.val().get_bits::<32>(32) == self.min_due.q.val().get_bits::<32>(32);
        self.t_lo_ge.next =
            self.now_ns.val().get_bits::<32>(0) >= self.min_due.q.val().get_bits::<32>(0);
        self.timer_hit.next = (self.armed_count.q.val() != 0_u64)
            & (self.t_hi_gt.val() | (self.t_hi_eq.val() & self.t_lo_ge.val()));
        self.timer_armed.next = self.armed_count.q.val() != 0_u64;
        self.timer_due.next = self.min_due.q.val();
        self.busy.next = (self.state.q.val() != St::Idle)
            | self.pr_valid.val()
            | self.tc_valid.val()
            | self.timer_hit.val();

        // The first step left after the NAK (skipping steps this packet does not take).
        self.after_nak.next = St::MetaWb;
        if self.f_ack.q.val() {
            self.after_nak.next = St::AckCmd;
        }
        if self.f_accept.q.val() {
            self.after_nak.next = St::Accept;
        }
        if self.f_account.q.val() {
            self.after_nak.next = St::Account;
        }
        if self.f_place.q.val() {
            self.after_nak.next = St::Place;
        }
        // A placed frame's payload write and its SACK accept run at the same time. A short
        // write is over before the accept: its outcome and the message accounting come first
        // (the completion event before the ACK). A long one is not: the accept and the ACK go
        // first and the engine waits for the write after them. Either way the ACK leaves
        // after the write was issued and the completion event after it finished; the two
        // orders differ only between the transmit stream and the event ring.
        self.after_ack.next = St::MetaWb;
        self.after_account.next = St::Accept;
        if self.late_write.q.val() {
            self.after_ack.next = St::WrWait;
            self.after_account.next = St::MetaWb;
        }
        // The classify result, in the cycle it arrives or latched if the decision was not
        // finished then.
        self.cls_ready.next =
            self.cls_done.q.val() | (self.cls_wait.q.val() & self.ft.res_valid.val());
        self.cls_class.next = self.sack_class.q.val();
        self.cls_distance.next = self.distance.q.val();
        if self.cls_wait.q.val() & self.ft.res_valid.val() {
            self.cls_distance.next = self.ft.res_distance.val();
            self.cls_wait.d.next = false;
            self.cls_done.d.next = true;
            self.cls_class.next = self.ft.res_class.val();
            self.sack_class.d.next = self.ft.res_class.val();
            self.distance.d.next = self.ft.res_distance.val();
            self.opens_gap.d.next = self.ft.res_opens_gap.val();
        }
        self.meta.next = self.meta_hi.q.val() | bit_cast::<160, 16>(self.meta_lo.q.val());
        // The cycle after an Accept that started the ACK timer: the flow's metadata shows the
        // armed timer before `meta_hi` holds it (MetaWb may write it back in this cycle).
        if self.timer_start.q.val() {
            self.meta.next = (self.meta.val()
                & !(0xFFFF_FFFF_FFFF_FFFF_u64.to_bits::<160>() << 64_u64)
                & !(0xFF_FFFF_u64.to_bits::<160>() << 136_u64))
                | (bit_cast::<160, 64>(self.due_q.q.val()) << 64_u64)
                | (1_u64.to_bits::<160>() << 128_u64)
                | (bit_cast::<160, 8>(self.pr_dest_conn.val().get_bits::<8>(0)) << 136_u64)
                | (bit_cast::<160, 16>(self.d_flow.val()) << 144_u64);
        }
        self.meta_ram.write_data.next = self.meta.val();
        // The flow's metadata with this packet's entropy, port and timestamp: a timer ACK leaves
        // on the entropy and port of the flow's last data packet and echoes its timestamp.
        // Built a 64-bit word (bits 0..64) and a 32-bit word (128..160) at a time: the same
        // wires, but no 160-bit shift by a part of a word in every simulated cycle.
        self.mf_w0.next = bit_cast::<64, 16>(self.m_rd.val().get_bits::<16>(0))
            | (bit_cast::<64, 16>(self.pr_src_port.val()) << 16_u64)
            | (bit_cast::<64, 32>(self.d_ts.val()) << 32_u64);
        self.mf_w4.next = (self.m_rd.val().get_bits::<32>(128)
            & !(bit_cast::<32, PORT_BITS>(self.port_mask.val()) << 1_u64))
            | (bit_cast::<32, PORT_BITS>(self.pr_port.val()) << 1_u64);
        self.meta_fresh.next = bit_cast::<160, 64>(self.mf_w0.val())
            | (bit_cast::<160, 64>(self.m_rd.val().get_bits::<64>(64)) << 64_u64)
            | (bit_cast::<160, 32>(self.mf_w4.val()) << 128_u64);
        self.meta_fresh_refused.next = self.meta_fresh.val().get_bits::<16>(0) + 1_u64;
        // Idle takes up the head frame when nothing else has priority.
        self.take_frame.next = self.pr_valid.val() & !self.tc_valid.val() & !self.timer_hit.val();
        if self.wr_done.val() {
            self.wr_done_q.d.next = true;
            self.wr_error_q.d.next = self.wr_error.val();
        }

        // ---- The SACK accept of a consumed packet runs beside placement: it is issued as soon
        // as the class is known (from ClsWait, below, or here if the table was busy) and its
        // result (the unacknowledged count for the ACK policy) is kept for the Accept state.
        // The states it may overlap never use the flow table.
        if self.acc_pending.q.val()
            & ((self.state.q.val() == St::Nak)
                | (self.state.q.val() == St::Place)
                | (self.state.q.val() == St::WrWait)
                | (self.state.q.val() == St::Account)
                | (self.state.q.val() == St::CplEvent)
                | (self.state.q.val() == St::AckSend)
                | (self.state.q.val() == St::Accept))
        {
            self.ft.cmd_valid.next = true;
            self.ft.cmd_op.next = self.k.ft_accept.val();
            if self.ft.cmd_ready.val() {
                self.acc_pending.d.next = false;
                self.acc_wait.d.next = true;
            }
        }
        if self.acc_wait.q.val() & self.ft.res_valid.val() {
            self.acc_wait.d.next = false;
            self.acc_done.d.next = true;
            self.acc_due.d.next = self.ft.res_ack_due.val();
            self.acc_one.d.next = self.ft.res_unacked_one.val();
        }

        // From `meta_hi` itself, not the overlaid `meta`: ScanCmp follows ScanCheck, never an
        // Accept, so the timer-start overlay is never on there, and its select stays off the
        // scan's compares.
        self.scan_deadline.next = self.meta_hi.q.val().get_bits::<64>(64);
        self.sd_hi_lt.next =
            self.scan_deadline.val().get_bits::<32>(32) < self.now_ns.val().get_bits::<32>(32);
        self.sd_hi_eq.next =
            self.scan_deadline.val().get_bits::<32>(32) == self.now_ns.val().get_bits::<32>(32);
        self.sd_lo_le.next =
            self.scan_deadline.val().get_bits::<32>(0) <= self.now_ns.val().get_bits::<32>(0);
        self.scan_due.next = self.meta_hi.q.val().get_bit(128)
            & (self.sd_hi_lt.val() | (self.sd_hi_eq.val() & self.sd_lo_le.val()));
        self.se_hi_lt.next =
            self.scan_deadline.val().get_bits::<32>(32) < self.min_next.q.val().get_bits::<32>(32);
        self.se_hi_eq.next =
            self.scan_deadline.val().get_bits::<32>(32) == self.min_next.q.val().get_bits::<32>(32);
        self.se_lo_lt.next =
            self.scan_deadline.val().get_bits::<32>(0) < self.min_next.q.val().get_bits::<32>(0);
        self.scan_earlier.next = self.meta_hi.q.val().get_bit(128)
            & (self.se_hi_lt.val() | (self.se_hi_eq.val() & self.se_lo_lt.val()));
        self.scan_due_q.d.next = self.scan_due.val();
        self.scan_earlier_q.d.next = self.scan_earlier.val();
        self.scan_min.next = self.min_next.q.val();
        if self.scan_earlier_q.q.val() {
            self.scan_min.next = self.scan_deadline.val();
        }

        // The table-read data are loaded in every cycle, with no enable and no reset: 512
        // flip-flops spread over the die, where an enable decoded from the state was a whole
        // path of its own. TblDone presents what the cycle before it loaded (TblRead, or the
        // TblFlowWait that saw the flow's entry), and the register block takes the data only
        // then, and only for a read that succeeded.
        self.tc_rdata_q.d.next = self.tbl_rd_w.val();

        // The ACK timer started in the cycle before (Accept goes on to MetaWb or WrWait,
        // neither of which writes `meta_hi` or `min_due`).
        if self.timer_start.q.val() {
            self.timer_start.d.next = false;
            self.meta_hi.d.next = self.meta.val() & !0xFFFF_u64.to_bits::<160>();
            if self.due_first_q.q.val() {
                self.min_due.d.next = self.due_q.q.val();
            }
        }

        // ---- The machine.
        if self.hold.q.val() != 0_u64 {
            // Waiting for a block-RAM read issued through an address register.
            self.hold.d.next = self.hold.q.val() - 1_u64;
        } else {
            match self.state.q.val() {
                St::Idle => {
                    // The event register is loaded with a CM event in every Idle cycle, whatever
                    // the frame or the decision below (it is offered only for a CM frame that
                    // is taken and passes), so its enable follows the state alone.
                    for i in 0_usize..6 {
                        self.mac_sw.next = self.mac_sw.val()
                            | (((self.pr_src_mac.val() >> (8 * i).to_bits::<6>()) & 0xFF_u64)
                                << (40 - 8 * i).to_bits::<6>());
                    }
                    for i in 0_usize..4 {
                        self.sw_word.next = self.pr_src_ip.val().get_bits::<32>(32 * i);
                        self.sw_swapped.next = (self.sw_word.val() << 24_u64)
                            | ((self.sw_word.val() & 0xFF00_u64) << 8_u64)
                            | ((self.sw_word.val() >> 8_u64) & 0xFF00_u64)
                            | (self.sw_word.val() >> 24_u64);
                        self.ip_sw.next = self.ip_sw.val()
                            | (bit_cast::<128, 32>(self.sw_swapped.val())
                                << (96 - 32 * i).to_bits::<7>());
                    }
                    self.ev_lo.next = bit_cast::<64, 8>(self.k.ev_cm.val())
                        | (bit_cast::<64, 1>(self.pr_ipv6.val().into()) << 8_u64)
                        | (bit_cast::<64, 1>(self.pr_vlan.val().into()) << 9_u64)
                        | (bit_cast::<64, PORT_BITS>(self.pr_port.val()) << 12_u64)
                        | (bit_cast::<64, 16>(self.pr_src_port.val()) << 16_u64)
                        | (bit_cast::<64, 24>(self.pr_dest_conn.val()) << 32_u64);
                    self.ev_hi.next = bit_cast::<64, 48>(self.mac_sw.val());
                    if self.pr_vlan.val() {
                        self.ev_hi.next = self.ev_hi.val()
                            | (bit_cast::<64, 16>(self.pr_vlan_tci.val()) << 48_u64);
                    }
                    self.ev_w.next = bit_cast::<512, 64>(self.ev_lo.val())
                        | (bit_cast::<512, 64>(self.ev_hi.val()) << 64_u64)
                        | (bit_cast::<512, 128>(self.ip_sw.val()) << 128_u64)
                        | (bit_cast::<512, 256>(self.swap_out.val()) << 256_u64);
                    self.ev.d.next = self.ev_w.val();
                    self.cc_checked.d.next = false;
                    self.f_nak.d.next = false;
                    self.f_place.d.next = false;
                    self.f_account.d.next = false;
                    self.f_accept.d.next = false;
                    self.f_ack.d.next = false;
                    self.st_some.d.next = false;
                    self.wr_sent.d.next = false;
                    self.pd_sent.d.next = false;
                    self.wr_done_q.d.next = false;
                    self.cls_wait.d.next = false;
                    self.cls_done.d.next = false;
                    self.late_write.d.next = false;
                    self.scanning.d.next = false;
                    self.acc_pending.d.next = false;
                    self.acc_wait.d.next = false;
                    self.acc_done.d.next = false;
                    // Loaded in every Idle cycle, whatever is decided below: only the scan
                    // reads these two and only a frame this address (table commands and scans
                    // load it again), so their enables do not wait for the timer compare.
                    self.scan_idx.d.next = 0.into();
                    self.min_next.d.next = 0xFFFF_FFFF_FFFF_FFFF_u64.into();
                    self.conn_addr.d.next = self.pr_dest_conn.val().get_bits::<CONN_BITS>(0);
                    // The region entry is read from here on (a table command loads the
                    // address again), so it arrives in Classify and the bounds are tested in
                    // Decide1 from its registered copy, not from the block RAM's output.
                    self.region_addr.d.next = self.d_rkey.val().get_bits::<REGION_BITS>(8);
                    // The Tag context's receive-buffer and slot reads likewise (from the
                    // Tag base's copy in `tag_ram`): they arrive in Classify and are
                    // registered (`rb_rd_q`, `rs_rd_q`) for Decide1's checks.
                    self.recv_idx.d.next =
                        (bit_cast::<RECV_INDEX_BITS, TAG_BITS>(self.idle_ctx.val())
                            << self.k.recv_bits.val())
                            | bit_cast::<RECV_INDEX_BITS, RECV_BITS>(
                                self.d_ssn.val().get_bits::<RECV_BITS>(0),
                            );
                    self.slot_idx.d.next =
                        (bit_cast::<SLOT_INDEX_BITS, TAG_BITS>(self.idle_ctx.val())
                            << self.k.slot_bits.val())
                            | bit_cast::<SLOT_INDEX_BITS, SLOT_BITS>(
                                self.d_msn.val().get_bits::<SLOT_BITS>(0),
                            );
                    if self.tc_valid.val() {
                        self.state.d.next = St::TblStart;
                    } else if self.timer_hit.val() {
                        self.scanning.d.next = true;
                        self.state.d.next = St::ScanRead;
                    } else if self.take_frame.val() {
                        self.cnt_valid.next = true;
                        self.cnt_index.next = self.k.c_rx_frames.val();
                        // The frame's own checks; its connection entry arrives in ConnChk.
                        if !self.rx_enable.val() {
                            self.verdict.d.next = self.k.c_rx_disabled.val();
                            self.state.d.next = St::Finish;
                        } else if self.pr_error.val() != 0_u64 {
                            self.verdict.d.next = self.err_cnt.val();
                            self.state.d.next = St::Finish;
                        } else if self.pr_opcode.val() == self.k.op_cm.val() {
                            // Connection management reaches the host before any connection exists.
                            self.verdict.d.next = self.k.c_cm.val();
                            self.state.d.next = St::RxEvent;
                        } else {
                            self.state.d.next = St::ConnChk;
                        }
                    }
                }
                St::ConnChk => {
                    // The event register is loaded with an ACK event, or a NAK event for a NAK,
                    // in every ConnChk cycle, whatever the checks below decide (it is offered
                    // only for an ACK or NAK that passes), so its enable follows the state
                    // alone, not the opcode or the address compares.
                    self.ev_lo.next = bit_cast::<64, 8>(self.k.ev_ack.val())
                        | (bit_cast::<64, 1>(self.ack_ece.val().into()) << 8_u64)
                        | (bit_cast::<64, 16>(self.d_flow.val()) << 16_u64)
                        | (bit_cast::<64, 24>(self.pr_dest_conn.val()) << 32_u64);
                    self.ev_hi.next = bit_cast::<64, 24>(self.pr_psn.val())
                        | (bit_cast::<64, 16>(
                            self.pr_th.val().get_bits::<16>(self.sh_a_ce.val().index()),
                        ) << 32_u64)
                        | (bit_cast::<64, 16>(
                            self.pr_th
                                .val()
                                .get_bits::<16>(self.sh_a_refused.val().index()),
                        ) << 48_u64);
                    self.ev_w.next = bit_cast::<512, 64>(self.ev_lo.val())
                        | (bit_cast::<512, 64>(self.ev_hi.val()) << 64_u64)
                        | (bit_cast::<512, 32>(
                            self.pr_th
                                .val()
                                .get_bits::<32>(self.sh_a_rate.val().index()),
                        ) << 128_u64)
                        | (bit_cast::<512, 32>(
                            self.pr_th.val().get_bits::<32>(self.sh_a_ts.val().index()),
                        ) << 160_u64)
                        | (bit_cast::<512, 256>(self.swap_out.val()) << 256_u64);
                    if self.pr_opcode.val() == self.k.op_nak.val() {
                        self.ev_lo.next = bit_cast::<64, 8>(self.k.ev_nak.val())
                            | (bit_cast::<64, 8>(
                                self.pr_th
                                    .val()
                                    .get_bits::<8>(self.sh_n_reason.val().index()),
                            ) << 8_u64)
                            | (bit_cast::<64, 16>(self.d_flow.val()) << 16_u64)
                            | (bit_cast::<64, 24>(self.pr_dest_conn.val()) << 32_u64);
                        self.ev_hi.next = bit_cast::<64, 24>(self.pr_psn.val())
                            | (bit_cast::<64, 16>(
                                self.pr_th.val().get_bits::<16>(self.sh_n_tag.val().index()),
                            ) << 32_u64);
                        self.ev_w.next = bit_cast::<512, 64>(self.ev_lo.val())
                            | (bit_cast::<512, 64>(self.ev_hi.val()) << 64_u64)
                            | (bit_cast::<512, 32>(
                                self.pr_th.val().get_bits::<32>(self.sh_n_msn.val().index()),
                            ) << 128_u64)
                            | (bit_cast::<512, 32>(
                                self.pr_th
                                    .val()
                                    .get_bits::<32>(self.sh_n_offset.val().index()),
                            ) << 160_u64);
                    }
                    self.ev.d.next = self.ev_w.val();
                    self.conn.d.next = self.rc.val();
                    self.rate.d.next = self.rate_ram.read_data.val();
                    // From the first flow's copy (read in Idle), not from the entry arriving now.
                    self.flow_idx.d.next =
                        self.fbase_q.q.val() + self.d_flow.val().get_bits::<FLOW_BITS>(0);
                    self.state.d.next = St::Classify;
                    if (self.pr_opcode.val() == self.k.op_ack.val())
                        | (self.pr_opcode.val() == self.k.op_nak.val())
                    {
                        self.state.d.next = St::CtlChk;
                    }
                    self.cc_checked.d.next = true;
                }
                St::CtlChk => {
                    // The connection checks are registered from the latched entry now.
                    self.state.d.next = St::RxEvent;
                }
                St::RxEvent => {
                    // An ACK or NAK is counted as one, or as what refused it (a CM frame's
                    // verdict was set in Idle).
                    if self.cc_checked.q.val() {
                        if self.pr_opcode.val() == self.k.op_ack.val() {
                            self.verdict.d.next = self.k.c_acks.val();
                        } else {
                            self.verdict.d.next = self.k.c_naks.val();
                        }
                    }
                    if self.cc_checked.q.val() & self.cc_refused_ctl.val() {
                        self.verdict.d.next = self.cc_verdict.val();
                        self.state.d.next = St::Finish;
                    } else {
                        self.ev_valid.next = true;
                        if self.ev_ready.val() {
                            self.state.d.next = St::Finish;
                        }
                    }
                }
                St::Classify => {
                    // Issued before the connection checks are in: a classify changes nothing
                    // in the flow table but the CE count, and the mark reaches the table a
                    // cycle later (`late_ce`), withheld if the checks refuse the packet.
                    self.ft.cmd_valid.next = true;
                    self.ft.cmd_op.next = self.k.ft_classify.val();
                    if self.ft.cmd_ready.val() {
                        // Decide while the flow table classifies; ClsWait applies the class.
                        self.cls_wait.d.next = true;
                        self.state.d.next = St::Decide1;
                    }
                }
                St::ClsWait => {
                    // The class decides whether the decision taken meanwhile stands: a
                    // duplicate or an out-of-window packet overrides it (nothing else was
                    // changed outside registers).
                    if self.cls_ready.val() {
                        self.cls_done.d.next = false;
                        if self.cls_class.val() == self.k.cls_dup.val() {
                            // The sender may have lost our ACK: tell it again at once.
                            self.verdict.d.next = self.k.c_duplicate.val();
                            // Only the count: the rest was loaded from the same read in Decide1.
                            self.meta_lo.d.next = self.meta_fresh.val().get_bits::<16>(0);
                            self.f_nak.d.next = false;
                            self.f_place.d.next = false;
                            self.f_account.d.next = false;
                            self.f_accept.d.next = false;
                            self.st_some.d.next = false;
                            self.f_ack.d.next = true;
                            self.state.d.next = St::AckCmd;
                        } else if self.cls_class.val() == self.k.cls_new.val() {
                            // A consumed packet's SACK accept starts at once.
                            if self.f_accept.q.val() {
                                self.ft.cmd_valid.next = true;
                                self.ft.cmd_op.next = self.k.ft_accept.val();
                                self.ft.cmd_distance.next = self.cls_distance.val();
                                if self.ft.cmd_ready.val() {
                                    self.acc_wait.d.next = true;
                                } else {
                                    self.acc_pending.d.next = true;
                                }
                            }
                            self.state.d.next = self.after_nak.val();
                            if self.f_nak.q.val() {
                                self.state.d.next = St::Nak;
                            }
                        } else {
                            self.verdict.d.next = self.k.c_oow.val();
                            self.meta_lo.d.next = self.meta_fresh.val().get_bits::<16>(0);
                            self.f_place.d.next = false;
                            self.f_account.d.next = false;
                            self.f_accept.d.next = false;
                            self.st_some.d.next = false;
                            self.f_nak.d.next = true;
                            self.nak_reason.d.next = self.k.nak_oow.val();
                            self.state.d.next = St::Nak;
                        }
                    }
                }
                St::Decide1 => {
                    // The flow's metadata read (started in ConnChk) has arrived.
                    self.meta_lo.d.next = self.meta_fresh.val().get_bits::<16>(0);
                    self.meta_hi.d.next = self.meta_fresh.val() & !0xFFFF_u64.to_bits::<160>();
                    self.meta_old_armed.d.next = self.m_rd.val().get_bit(128);
                    self.ack_entropy.d.next = self.pr_src_port.val();
                    self.ack_port.d.next = self.pr_port.val();
                    self.ack_ts.d.next = self.d_ts.val();
                    self.ack_flow.d.next = self.d_flow.val();
                    if self.d_ce.val() & !self.cc_refused.val() {
                        self.cnt_valid.next = true;
                        self.cnt_index.next = self.k.c_ce.val();
                    }
                    if self.tag_len_bad_q.q.val() {
                        // Terminal, nothing to account: consumed and NAKed. Loaded whatever
                        // the connection checks say, so that their verdict (the wires from the
                        // connection entry's compares) reaches only the state and the verdict:
                        // a refused frame goes to Finish, which uses none of these, and the
                        // next frame clears or loads them again.
                        self.f_nak.d.next = true;
                        self.nak_reason.d.next = self.k.nak_invalid.val();
                        self.meta_lo.d.next = self.meta_fresh_refused.val();
                        self.f_accept.d.next = true;
                    }
                    if self.cc_refused.val() {
                        // The class is not waited for: the table takes no command before it
                        // has presented it, and Idle drops it (`cls_wait`). The registers
                        // loaded above are loaded again by the next frame before any use.
                        self.verdict.d.next = self.cc_verdict.val();
                        self.cls_wait.d.next = false;
                        self.state.d.next = St::Finish;
                    } else if self.tag_len_bad_q.q.val() {
                        self.verdict.d.next = self.k.c_invalid.val();
                        self.state.d.next = St::ClsWait;
                    } else {
                        // The slot and buffer words (read from Idle on) are registered.
                        self.state.d.next = St::Decide2;
                    }
                }
                St::Decide2 => {
                    // The reads arrived in Classify and are held in `rb_rd_q` and `rs_rd_q`
                    // (their addresses hold); the checks on them were registered in Decide1.
                    self.rb.d.next = self.rb_rd_q.q.val();
                    self.slot.d.next = self.rs_rd_q.q.val();
                    self.state.d.next = St::ClsWait;
                    if self.rb_refused_q.q.val() {
                        self.verdict.d.next = self.k.c_no_recv.val();
                        self.f_nak.d.next = true;
                        self.nak_reason.d.next = self.k.nak_rnr.val();
                    } else if self.rs_active_q.q.val()
                        & self.rs_same_msg_q.q.val()
                        & self.rs_conflict_q.q.val().any()
                    {
                        self.verdict.d.next = self.k.c_invalid.val();
                        self.f_nak.d.next = true;
                        self.nak_reason.d.next = self.k.nak_invalid.val();
                        self.meta_lo.d.next = self.meta_refused.val();
                        self.f_accept.d.next = true;
                    } else if self.rs_active_q.q.val() & !self.rs_same_msg_q.q.val() {
                        self.verdict.d.next = self.k.c_slot_busy.val();
                        self.f_nak.d.next = true;
                        self.nak_reason.d.next = self.k.nak_rnr.val();
                    } else if self.rs_done_q.q.val() & self.rs_same_msg_q.q.val() {
                        self.verdict.d.next = self.k.c_stale.val();
                        self.f_accept.d.next = true;
                    } else {
                        if !self.rs_active_q.q.val() {
                            // Claim the slot for this message.
                            self.slot.d.next = 1_u64.to_bits::<224>()
                                | (bit_cast::<224, 8>(self.pr_opcode.val()) << 8_u64)
                                | (bit_cast::<224, 1>(self.d_has_imm.val().into()) << 19_u64)
                                | (bit_cast::<224, 32>(self.d_msn.val()) << 32_u64)
                                | (bit_cast::<224, 32>(self.d_slot_ssn.val()) << 64_u64)
                                | (bit_cast::<224, 32>(self.d_msg_len.val()) << 96_u64)
                                | (bit_cast::<224, 32>(self.d_imm.val()) << 192_u64);
                        }
                        self.f_account.d.next = true;
                        self.f_accept.d.next = true;
                        if self.d_is_write.val() {
                            // The region checks, registered in Decide1 (entry read from Idle).
                            self.place_addr.d.next = self.d_va.val();
                            if self.rg_key_bad_q.q.val() {
                                self.verdict.d.next = self.k.c_bad_rkey.val();
                            } else if self.rg_denied_q.q.val() {
                                self.verdict.d.next = self.k.c_denied.val();
                            } else if self.rg_below.val() | self.rg_over.val() {
                                self.verdict.d.next = self.k.c_oob.val();
                            } else {
                                self.f_place.d.next = true;
                            }
                            if !self.f_place.d.val() {
                                self.f_nak.d.next = true;
                                self.nak_reason.d.next = self.k.nak_access.val();
                                self.meta_lo.d.next = self.meta_refused.val();
                                self.st_some.d.next = true;
                                self.st_code.d.next = self.k.st_access.val();
                            }
                        } else if self.rb_short.val() {
                            self.verdict.d.next = self.k.c_oob.val();
                            self.f_nak.d.next = true;
                            self.nak_reason.d.next = self.k.nak_invalid.val();
                            self.meta_lo.d.next = self.meta_refused.val();
                            self.st_some.d.next = true;
                            self.st_code.d.next = self.k.st_length.val();
                        } else {
                            self.f_place.d.next = true;
                            self.place_addr.d.next = self.rb_place_q.q.val();
                        }
                    }
                }
                St::Nak => {
                    if self.f_nak.q.val() {
                        self.a_opcode_q.d.next = self.k.op_nak.val();
                        self.a_psn_q.d.next = self.pr_psn.val();
                        self.a_src_port_q.d.next = self.pr_src_port.val();
                        self.a_port_q.d.next = self.pr_port.val();
                        self.a_th_len_q.d.next = self.k.nak_len.val();
                        self.f_nak.d.next = false;
                        self.hold.d.next = 0.into();
                        self.state.d.next = St::AckSend;
                        self.a_valid_q.d.next = true;
                    } else {
                        self.state.d.next = self.after_nak.val();
                    }
                }
                St::Place => {
                    // The write request and the "place" decision (the extractor has skipped
                    // the headers meanwhile); the data streams while the engine goes on.
                    self.wr_valid.next = !self.wr_sent.q.val();
                    self.pd_valid.next = !self.pd_sent.q.val();
                    self.pd_place.next = self.pr_payload_len.val() != 0_u64;
                    if self.wr_ready.val() {
                        self.wr_sent.d.next = true;
                    }
                    if self.pd_valid.val() & self.pd_ready.val() {
                        self.pd_sent.d.next = true;
                    }
                    if (self.wr_sent.q.val() | self.wr_ready.val())
                        & (self.pd_sent.q.val() | (self.pd_valid.val() & self.pd_ready.val()))
                    {
                        self.state.d.next = St::WrWait;
                        if self.pr_payload_len.val() > 32_u64 {
                            self.late_write.d.next = true;
                            self.state.d.next = St::Accept;
                        }
                    }
                }
                St::WrWait => {
                    if self.wr_done.val() | self.wr_done_q.q.val() {
                        if (self.wr_done.val() & self.wr_error.val())
                            | (!self.wr_done.val() & self.wr_error_q.q.val())
                        {
                            // The region said yes but the IOMMU said no: account the bytes so
                            // the message still ends, with an error.
                            self.verdict.d.next = self.k.c_oob.val();
                            self.st_some.d.next = true;
                            self.st_code.d.next = self.k.st_access.val();
                        } else {
                            self.verdict.d.next = self.k.c_placed.val();
                            self.cnt_valid.next = true;
                            self.cnt_index.next = self.k.c_placed_bytes.val();
                            self.cnt_amount.next = self.pr_payload_len.val();
                        }
                        self.state.d.next = St::Account;
                    }
                }
                St::Account => {
                    self.state.d.next = self.after_account.val();
                    if self.f_account.q.val() {
                        self.new_slot.next = (self.slot.q.val()
                            & !(0x1_FFFF_FFFF_u64.to_bits::<224>() << 128_u64))
                            | (bit_cast::<224, 33>(self.new_done_q.q.val()) << 128_u64);
                        if !self.slot.q.val().get_bit(16) & self.st_some.q.val() {
                            self.new_slot.next = self.new_slot.val()
                                | (1_u64.to_bits::<224>() << 16_u64)
                                | (bit_cast::<224, 2>(self.st_code.q.val()) << 17_u64);
                        }
                        if self.completes_q.q.val() {
                            self.new_slot.next = (self.new_slot.val() & !3_u64.to_bits::<224>())
                                | 2_u64.to_bits::<224>();
                            if (self.s_opcode.val() != self.k.op_write.val())
                                & (self.s_opcode.val() != self.k.op_write_imm.val())
                            {
                                // The Send consumed its receive buffer.
                                self.recv_ram.write_enable.next = true;
                                self.recv_ram.write_data.next = bit_cast::<RECV_RAM_BITS, 128>(
                                    self.rb.q.val().get_bits::<128>(32),
                                ) << 1_u64;
                            }
                            self.cnt_valid.next = true;
                            self.cnt_index.next = self.k.c_completions.val();
                            self.ev_lo.next = bit_cast::<64, 8>(self.k.ev_completion.val())
                                | (bit_cast::<64, 8>(self.s_opcode.val()) << 16_u64)
                                | (bit_cast::<64, 1>(self.slot.q.val().get_bit(19).into())
                                    << 24_u64)
                                | (bit_cast::<64, 24>(self.pr_dest_conn.val()) << 32_u64);
                            if self.new_slot.val().get_bit(16) {
                                self.ev_lo.next = self.ev_lo.val()
                                    | (bit_cast::<64, 2>(self.new_slot.val().get_bits::<2>(17))
                                        << 8_u64);
                            }
                            self.ev_hi.next = bit_cast::<64, 16>(self.d_tag.val())
                                | (bit_cast::<64, 32>(self.s_msn.val()) << 32_u64);
                            self.ev_w.next = bit_cast::<512, 64>(self.ev_lo.val())
                                | (bit_cast::<512, 64>(self.ev_hi.val()) << 64_u64)
                                | (bit_cast::<512, 32>(self.s_ssn.val()) << 128_u64)
                                | (bit_cast::<512, 32>(self.s_msg_len.val()) << 160_u64)
                                | (bit_cast::<512, 32>(self.slot.q.val().get_bits::<32>(192))
                                    << 192_u64);
                            // Offered at once; held in `ev` for CplEvent if not taken.
                            self.ev.d.next = self.ev_w.val();
                            self.ev_valid.next = true;
                            self.ev_data.next = self.ev_w.val();
                            if !self.ev_ready.val() {
                                self.state.d.next = St::CplEvent;
                            }
                        }
                        self.slot_ram.write_enable.next = true;
                        self.slot_ram.write_data.next = self.new_slot.val();
                    }
                }
                St::CplEvent => {
                    self.ev_valid.next = true;
                    if self.ev_ready.val() {
                        self.state.d.next = self.after_account.val();
                    }
                }
                St::Accept => {
                    if !self.f_accept.q.val() {
                        self.state.d.next = self.after_ack.val();
                        if self.f_ack.q.val() {
                            self.state.d.next = St::AckCmd;
                        }
                    } else if self.acc_done.q.val() {
                        // The accept issued at the decision has finished (see above). Accept
                        // acts on the latched result only, never on one arriving in this
                        // cycle, so the ACK decision and the timer's start come from
                        // flip-flops. The result is almost always in before Accept (`cargo
                        // xtask bench-rtl`: one cycle more over 4,000 packets of 64 bytes).
                        self.acc_done.d.next = false;
                        self.state.d.next = self.after_ack.val();
                        if self.pr_ack_req.val()
                            | self.d_ce.val()
                            | self.opens_gap.q.val()
                            | self.acc_due.q.val()
                        {
                            // The accept's result is what the ACK reports: build the ACK from it
                            // and clear the flow's pending counters beside (the table is free).
                            self.f_ack.d.next = true;
                            self.state.d.next = St::AckCmd;
                            self.ft.cmd_valid.next = true;
                            self.ft.cmd_op.next = self.k.ft_ack.val();
                            if self.ft.cmd_ready.val() {
                                self.f_ack.d.next = false;
                                self.a_opcode_q.d.next = self.k.op_ack.val();
                                self.a_psn_q.d.next = self.ft.res_cum.val();
                                self.a_src_port_q.d.next = self.ack_entropy.q.val();
                                self.a_port_q.d.next = self.ack_port.q.val();
                                self.a_th_len_q.d.next = self.k.ack_len.val();
                                // The ACK covers everything: the timer has nothing left to do.
                                self.meta_hi.d.next =
                                    self.meta_hi.q.val() & !(1_u64.to_bits::<160>() << 128_u64);
                                self.state.d.next = St::AckSend;
                                self.a_valid_q.d.next = true;
                            }
                        } else if self.acc_one.q.val() & (self.ack_delay.val() != 0_u64) {
                            // The oldest packet the next ACK will cover: start the ACK timer
                            // (in the next cycle, see `timer_start`).
                            self.timer_start.d.next = true;
                        }
                    }
                }
                St::AckCmd => {
                    if self.f_ack.q.val() {
                        self.ft.cmd_valid.next = true;
                        self.ft.cmd_op.next = self.k.ft_ack.val();
                        if self.ft.cmd_ready.val() {
                            self.state.d.next = St::AckWait;
                        }
                    } else {
                        self.state.d.next = self.after_ack.val();
                    }
                }
                St::AckWait => {
                    if self.ft.res_valid.val() {
                        self.f_ack.d.next = false;
                        self.a_opcode_q.d.next = self.k.op_ack.val();
                        self.a_psn_q.d.next = self.ft.res_cum.val();
                        self.a_src_port_q.d.next = self.ack_entropy.q.val();
                        self.a_port_q.d.next = self.ack_port.q.val();
                        self.a_th_len_q.d.next = self.k.ack_len.val();
                        // The ACK covers everything: the timer has nothing left to do.
                        self.meta_hi.d.next =
                            self.meta_hi.q.val() & !(1_u64.to_bits::<160>() << 128_u64);
                        self.state.d.next = St::AckSend;
                        self.a_valid_q.d.next = true;
                    }
                }
                St::AckSend => {
                    if self.a_ready.val() {
                        self.a_valid_q.d.next = false;
                        self.cnt_valid.next = true;
                        if self.a_opcode_q.q.val() == self.k.op_ack.val() {
                            self.cnt_index.next = self.k.c_tx_acks.val();
                            if self.scanning.q.val() {
                                self.state.d.next = St::ScanWb;
                            } else {
                                self.state.d.next = self.after_ack.val();
                            }
                        } else {
                            self.cnt_index.next = self.k.c_tx_naks.val();
                            self.state.d.next = self.after_nak.val();
                        }
                    }
                }
                St::MetaWb => {
                    self.meta_ram.write_enable.next = true;
                    if self.meta.val().get_bit(128) & !self.meta_old_armed.q.val() {
                        self.armed_count.d.next = self.armed_count.q.val() + 1_u64;
                    }
                    if !self.meta.val().get_bit(128) & self.meta_old_armed.q.val() {
                        self.armed_count.d.next = self.armed_count.q.val() - 1_u64;
                    }
                    // Then finish the frame, in this cycle if the extractor allows.
                    self.pd_valid.next = !self.pd_sent.q.val();
                    if self.pd_valid.val() & self.pd_ready.val() {
                        self.pd_sent.d.next = true;
                    }
                    self.state.d.next = St::Finish;
                    if self.pd_sent.q.val() | (self.pd_valid.val() & self.pd_ready.val()) {
                        self.cnt_valid.next = true;
                        self.cnt_index.next = self.verdict.q.val();
                        self.pr_pop.next = true;
                        self.state.d.next = St::Idle;
                    }
                }
                St::Finish => {
                    // Every frame gets exactly one payload decision: discard unless placed.
                    self.pd_valid.next = !self.pd_sent.q.val();
                    if self.pd_valid.val() & self.pd_ready.val() {
                        self.pd_sent.d.next = true;
                    }
                    if self.pd_sent.q.val() | (self.pd_valid.val() & self.pd_ready.val()) {
                        self.cnt_valid.next = true;
                        self.cnt_index.next = self.verdict.q.val();
                        self.pr_pop.next = true;
                        self.state.d.next = St::Idle;
                    }
                }
                St::ScanRead => {
                    self.flow_idx.d.next = self.scan_idx.q.val().get_bits::<FLOW_BITS>(0);
                    self.hold.d.next = 1.into();
                    self.state.d.next = St::ScanCheck;
                }
                St::ScanCheck => {
                    // The metadata is registered here and decided on in ScanDecide, so that no
                    // compare hangs off the block RAM's output.
                    self.meta_lo.d.next = self.m_rd.val().get_bits::<16>(0);
                    self.meta_hi.d.next = self.m_rd.val() & !0xFFFF_u64.to_bits::<160>();
                    self.meta_old_armed.d.next = self.m_rd.val().get_bit(128);
                    self.conn_addr.d.next = self.m_rd.val().get_bits::<CONN_BITS>(136);
                    self.ack_entropy.d.next = self.m_rd.val().get_bits::<16>(16);
                    self.ack_port.d.next = self.m_rd.val().get_bits::<PORT_BITS>(129);
                    self.ack_ts.d.next = self.m_rd.val().get_bits::<32>(32);
                    self.ack_flow.d.next = self.m_rd.val().get_bits::<16>(144);
                    self.state.d.next = St::ScanCmp;
                }
                St::ScanCmp => {
                    // The compares of the registered metadata with the clock and the earliest
                    // deadline so far run here; their results are registered.
                    self.state.d.next = St::ScanDecide;
                }
                St::ScanDecide => {
                    // The connection entry read (address loaded in ScanCheck) stays on the
                    // RAM's output, and ScanConn registers it. A flow not due goes on as
                    // ScanNext would, with the earliest deadline including its own.
                    if self.scan_due_q.q.val() {
                        self.state.d.next = St::ScanConn;
                    } else {
                        self.min_next.d.next = self.scan_min.val();
                        if self.scan_idx.q.val() == self.k.flows_last.val() {
                            self.min_due.d.next = self.scan_min.val();
                            self.state.d.next = St::Idle;
                        } else {
                            self.scan_idx.d.next = self.scan_idx.q.val() + 1_u64;
                            self.state.d.next = St::ScanRead;
                        }
                    }
                }
                St::ScanConn => {
                    // Registered here, decided on in ScanOwn (no compare off the block RAM).
                    self.conn.d.next = self.rc.val();
                    self.rate.d.next = self.rate_ram.read_data.val();
                    self.state.d.next = St::ScanOwn;
                }
                St::ScanOwn => {
                    // Only while the flow still belongs to the connection that armed it.
                    self.scan_own_q.d.next = self.conn.q.val().get_bit(0)
                        & (self.ack_flow.q.val() < self.conn.q.val().get_bits::<16>(80))
                        & ((bit_cast::<17, 16>(self.conn.q.val().get_bits::<16>(64))
                            + bit_cast::<17, 16>(self.ack_flow.q.val()))
                            == bit_cast::<17, 13>(self.scan_idx.q.val()));
                    self.state.d.next = St::ScanAct;
                }
                St::ScanAct => {
                    if self.scan_own_q.q.val() {
                        self.f_ack.d.next = true;
                        self.state.d.next = St::AckCmd;
                    } else {
                        self.meta_hi.d.next =
                            self.meta_hi.q.val() & !(1_u64.to_bits::<160>() << 128_u64);
                        self.state.d.next = St::ScanWb;
                    }
                }
                St::ScanWb => {
                    self.meta_ram.write_enable.next = true;
                    if !self.meta.val().get_bit(128) & self.meta_old_armed.q.val() {
                        self.armed_count.d.next = self.armed_count.q.val() - 1_u64;
                    }
                    self.state.d.next = St::ScanNext;
                }
                St::ScanNext => {
                    if self.scan_idx.q.val() == self.k.flows_last.val() {
                        self.min_due.d.next = self.min_next.q.val();
                        self.state.d.next = St::Idle;
                    } else {
                        self.scan_idx.d.next = self.scan_idx.q.val() + 1_u64;
                        self.state.d.next = St::ScanRead;
                    }
                }
                St::TblStart => {
                    self.tc_status_q.d.next = self.k.ts_ok.val();
                    self.state.d.next = St::TblDone;
                    self.conn_addr.d.next = self.tc_index.val().get_bits::<CONN_BITS>(0);
                    self.region_addr.d.next = self.tc_index.val().get_bits::<REGION_BITS>(0);
                    self.recv_idx.d.next = self.tc_index.val().get_bits::<RECV_INDEX_BITS>(0);
                    self.flow_idx.d.next = self.tc_index.val().get_bits::<FLOW_BITS>(0);
                    self.ctx_q.d.next = self.tc_index.val().get_bits::<TAG_BITS>(0);
                    self.reset_i.d.next = 0.into();
                    if !self.tc_ok_q.q.val() {
                        self.tc_status_q.d.next = self.k.ts_bad_table.val();
                    } else if !self.tc_idx_ok_q.q.val() {
                        self.tc_status_q.d.next = self.k.ts_bad_index.val();
                    } else if self.tc_write.val() {
                        self.tw_region_q.d.next = self.tc_region_q.q.val();
                        self.tw_conn_q.d.next = self.tc_conn_q.q.val();
                        self.tw_rate_q.d.next = self.tc_conn_q.q.val() | self.tc_rate_q.q.val();
                        self.tw_recv_q.d.next = self.tc_recv_q.q.val();
                        if self.tc_flow_q.q.val() {
                            self.hold.d.next = 1.into();
                            self.state.d.next = St::TblFlowMeta;
                        }
                        if self.tc_tag_reset_q.q.val() {
                            self.state.d.next = St::TblReset;
                        }
                    } else if self.tc_tag_reset_q.q.val() {
                        self.tc_status_q.d.next = self.k.ts_not_readable.val();
                    } else {
                        self.hold.d.next = 1.into();
                        self.state.d.next = St::TblRead;
                    }
                }
                St::TblRead => {
                    self.state.d.next = St::TblDone;
                    if self.tc_flow_q.q.val() {
                        self.ft.cmd_valid.next = true;
                        self.ft.cmd_op.next = self.k.ft_read.val();
                        self.state.d.next = St::TblRead;
                        if self.ft.cmd_ready.val() {
                            self.state.d.next = St::TblFlowWait;
                        }
                    }
                }
                St::TblFlowMeta => {
                    // A re-initialised flow forgets its refusals and its timer.
                    self.meta_ram.write_enable.next = true;
                    self.meta_ram.write_data.next = 0.into();
                    if self.m_rd.val().get_bit(128) {
                        self.armed_count.d.next = self.armed_count.q.val() - 1_u64;
                    }
                    self.ft.cmd_valid.next = true;
                    self.ft.cmd_op.next = self.k.ft_init.val();
                    self.ft.cmd_fsn.next = self.tw.val().get_bits::<24>(0);
                    self.state.d.next = St::TblFlowWait;
                    if !self.ft.cmd_ready.val() {
                        // Retry next cycle (the meta write repeats harmlessly).
                        self.meta_ram.write_enable.next = false;
                        self.armed_count.d.next = self.armed_count.q.val();
                        self.state.d.next = St::TblFlowMeta;
                    }
                }
                St::TblFlowWait => {
                    if self.ft.res_valid.val() {
                        self.state.d.next = St::TblDone;
                    }
                }
                St::TblReset => {
                    // Clears every message slot and receive buffer of one Tag context.
                    if self.reset_i.q.val() <= self.k.slots_last.val() {
                        self.slot_ram.write_enable.next = true;
                        self.slot_ram.write_address.next =
                            (bit_cast::<SLOT_INDEX_BITS, TAG_BITS>(self.ctx_q.q.val())
                                << self.k.slot_bits.val())
                                | bit_cast::<SLOT_INDEX_BITS, 5>(self.reset_i.q.val());
                    }
                    if self.reset_i.q.val() <= self.k.recv_last.val() {
                        self.recv_ram.write_enable.next = true;
                        self.recv_ram.write_address.next =
                            (bit_cast::<RECV_INDEX_BITS, TAG_BITS>(self.ctx_q.q.val())
                                << self.k.recv_bits.val())
                                | bit_cast::<RECV_INDEX_BITS, 5>(self.reset_i.q.val());
                    }
                    self.reset_i.d.next = self.reset_i.q.val() + 1_u64;
                    if (self.reset_i.q.val() >= self.k.slots_last.val())
                        & (self.reset_i.q.val() >= self.k.recv_last.val())
                    {
                        self.state.d.next = St::TblDone;
                    }
                }
                St::TblDone => {
                    self.tc_done.next = true;
                    self.state.d.next = St::TblGap;
                }
                St::TblGap => {
                    self.state.d.next = St::Idle;
                }
                _ => {
                    self.state.d.next = St::Idle;
                }
            }
        }
        if self.reset.val() {
            self.state.d.next = St::Idle;
            self.hold.d.next = 0.into();
            self.armed_count.d.next = 0.into();
            self.scanning.d.next = false;
            self.timer_start.d.next = false;
            self.a_valid_q.d.next = false;
        }
    }
}
