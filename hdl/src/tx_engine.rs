//! Transmit engine: the TX descriptor ring in host memory becomes frame requests for the
//! [`TxFrameBuilder`], exactly as [`ferroce_proto::model::FastPath::service_rings`] (TX half)
//! and `FastPath::transmit` do it.
//!
//! Built for a DMA read latency of hundreds of cycles (a PCIe read takes about a microsecond):
//! many reads are outstanding on the one in-order read channel, and four parts each run ahead
//! of the next:
//! 1. the fetcher reads descriptors in batches, one read of up to [`MAX_BATCH`] consecutive
//!    64-byte slots (never across the ring's wrap), into a descriptor store of 64
//!    descriptors (store slot = ring index mod 64; a slot is reused once its descriptor is
//!    retired), at most [`LOOKAHEAD`] descriptors ahead of the front end. A batch whose read
//!    faults is read again one descriptor at a time, so that
//!    only a slot that really faults counts `TxBadDescriptor` (with no event, as in the
//!    model); descriptor reads issued after the faulted batch are dropped as they return;
//! 2. the front end takes the descriptors in ring order: decode, the connection's valid bit
//!    and flow count from its own copy of the table, the checks in the model's order (opcode,
//!    connection, port (byte 60 against the port count), then for CM the length, for data the
//!    flow and the lengths), and for a
//!    descriptor that passes with bytes to read, the read: a payload into the payload ring
//!    buffer once the buffer has room for all of it, a CM message's 32 bytes into the CM
//!    register (one CM message at a time: the front end waits while the one before is not
//!    retired). Its decision (fetch fault, refusal and reason, read issued, nothing to read)
//!    is written beside the descriptor for the back end;
//! 3. read data returns in request order; a FIFO of tags says what each read is (descriptor
//!    batch, CM message, payload) and a ring of fault bits keeps the outcome of each CM and
//!    payload read until the back end retires its descriptor;
//! 4. the back end retires the descriptors in ring order, one at a time, from its own copy of
//!    the descriptor store and of the connection table: it waits for the descriptor's read,
//!    then counts `TxBadDescriptor` for a fetch fault, or sends the TxError event (the 64
//!    bytes of `Event::TxError::to_bytes`: a refusal, `DmaError` for a faulted read,
//!    `BadLength` for a CM message of no known kind) and counts `TxBadDescriptor`, or hands
//!    the request to the builder and counts `TxPackets` and `TxBytes`; then head advances.
//!    Events, counters, frames and `TXQ_HEAD` thus follow the model's order exactly.
//!
//! The payload is store-and-forward per frame: a request goes to the builder only once its
//! whole payload is in the ring buffer, so a faulted read never lets part of a frame out. The
//! payload then streams from the buffer while the next request is handed over (the builder
//! overlaps frames). The buffer (16 KB) holds one maximum-size payload plus a read latency's
//! worth of the next ones; its free space, the descriptor store, the tag FIFO and the fault
//! ring bound what is outstanding, and each part waits for room rather than drop anything.
//!
//! A ring reset (`txq_reset`) drops every descriptor not yet retired and drains every read
//! still in flight (their data is dropped as it returns); a TxError event already offered is
//! finished without advancing the new head, and frames already handed to the builder go out.
//!
//! Throughput (`cargo xtask bench-rtl`, whole core, each figure over 500 descriptors posted
//! 256 at a time, 200 for 4 KB): with DMA reads answered after 250 cycles, a 94-byte frame
//! every 13.8 cycles and 4190-byte frames at 7.91 bytes per cycle (99 % of the line); after
//! 100 cycles, 12.9 cycles and 7.93; after one cycle, 12.5 cycles and 7.94. What is left above
//! the 12-cycle minimum is the start of each post: an empty pipeline waits for a whole batch
//! (64 beats plus the latency) and two descriptor loads before the first frame, and at a short
//! latency the first payload reads queue behind up to [`LOOKAHEAD`] descriptors' reads.
//!
//! The descriptor, event and table layouts have no offset constants in `ferroce-proto`: each
//! field's position is found by probing the specification's own encoders (`to_bytes`,
//! `to_words`) in the constructor, which also asserts that every field is a contiguous
//! little-endian slice, so a layout change there moves the hardware with it or fails loudly.

use crate::ram::BlockRam;
use crate::rx_engine::{PORT_BITS, table_sizes};
use crate::skid::SkidBuffer;
use crate::tx_frame::TxFrameBuilder;
use ferroce_proto::hsi::{
    ConnectionEntry, Counter, Event, MAX_PAYLOAD_LEN, TX_DESCRIPTOR_LEN, TxDescriptor,
    descriptor::{FLAG_ACK_REQ, FLAG_SOLICITED},
    event::TxErrorReason,
};
use ferroce_proto::wire::{
    CmKind, EthernetAddress, FSN_MASK, Opcode, TransportRepr,
    ip::ECN_ECT0,
    transport::{CM_LEN, FDH_LEN, IMM_LEN, RETH_LEN, cm, fdh, reth},
};
use rust_hdl::prelude::*;

/// Connection id bits of the engine inside [`TxPath`] (256 connections, the default table).
pub const TX_PATH_CONN_BITS: usize = 8;

/// Address bits of the payload ring buffer in 64-bit beats (16 KB: a maximum-size payload
/// streaming while the next ones are read).
const BUF_BITS: usize = 11;
/// Payload ring pointers: one bit more than the address, so a full ring is not an empty one.
const PTR_BITS: usize = 12;
/// Descriptors in the descriptor store (slot bits).
const SLOT_BITS: usize = 6;
/// Ring positions inside the engine are kept modulo `2^IDX_BITS` (twice the store).
const IDX_BITS: usize = 7;
/// Address bits of the descriptor store in beats (eight 64-bit beats per descriptor).
const STORE_BITS: usize = 9;
/// Most descriptors fetched by one DMA read (512 bytes).
pub const MAX_BATCH: u64 = 8;
/// Most descriptors fetched (or being fetched) ahead of the front end's loader: enough to cover a
/// 250-cycle read latency with minimum-size frames, few enough that at a short latency the
/// descriptor reads queued on the channel do not hold up the first payload reads for long.
pub const LOOKAHEAD: u64 = 32;
/// Entries of the read tag FIFO and of the read fault ring (bits of a 32-bit register) ...
const TAG_BITS: usize = 5;
/// ... and their pointers, one bit more.
const TAG_PTR_BITS: usize = 6;
/// Bits of a job record (the front end's decision for one descriptor; layout in `update`).
const JOB_BITS: usize = 20;

// The widths below are fixed by the specification's sizes.
const _: () = {
    assert!(
        MAX_PAYLOAD_LEN as usize * 2 <= 8 << BUF_BITS,
        "payload buffer too small"
    );
    assert!(PTR_BITS == BUF_BITS + 1 && IDX_BITS == SLOT_BITS + 1);
    assert!(STORE_BITS == SLOT_BITS + 3 && TAG_PTR_BITS == TAG_BITS + 1 && TAG_BITS == 5);
    assert!(MAX_BATCH >= 1 && MAX_BATCH <= 8 && MAX_BATCH <= LOOKAHEAD);
    assert!(LOOKAHEAD <= 1 << SLOT_BITS);
    assert!(Counter::COUNT <= 64, "counter index is 6 bits");
    assert!(TX_DESCRIPTOR_LEN.is_power_of_two() && TX_DESCRIPTOR_LEN * 8 == 512);
};

/// The back end: one descriptor retired at a time.
#[derive(LogicState, Debug, Copy, Clone, PartialEq)]
enum State {
    Idle,
    Addr,
    Conn,
    Wait,
    CmCheck,
    Build,
    Handoff,
    Refuse,
    BadDesc,
}

/// The front end: checks, then the read.
#[derive(LogicState, Debug, Copy, Clone, PartialEq)]
enum FState {
    Idle,
    Decode,
    Conn,
    Check,
    Issue,
}

/// The transmit engine with `2^C` connection table entries.
#[derive(LogicBlock)]
pub struct TxEngine<const C: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset: head := 0, engine idle (table contents are kept). Registered on
    /// the way in, so it acts one clock later: hold it for at least two cycles.
    pub reset: Signal<In, Bit>,
    /// `CONTROL_TX_ENABLE`.
    pub enable: Signal<In, Bit>,
    /// `TXQ_BASE`.
    pub txq_base: Signal<In, Bits<64>>,
    /// `TXQ_LOG_SIZE` (0: no ring).
    pub txq_log_size: Signal<In, Bits<5>>,
    /// `TXQ_TAIL`.
    pub txq_tail: Signal<In, Bits<32>>,
    /// Pulse: head := 0 (a write of `TXQ_LOG_SIZE`). Registered on the way in together with
    /// `enable`, `txq_base`, `txq_log_size` and `txq_tail`: all five act one clock later, in
    /// the same cycle as each other.
    pub txq_reset: Signal<In, Bit>,
    /// The NIC's nanosecond clock; the data header timestamp is its low 32 bits.
    pub now_ns: Signal<In, Bits<64>>,
    /// Our MAC (`MAC_LO` / `MAC_HI`).
    pub src_mac: Signal<In, Bits<48>>,
    /// `UDP_PORT`: destination port of every frame.
    pub udp_port: Signal<In, Bits<16>>,
    /// `TXQ_HEAD`.
    pub txq_head: Signal<Out, Bits<32>>,
    /// Pulse: write connection entry `tbl_index` from `tbl_data`.
    pub tbl_write: Signal<In, Bit>,
    /// Connection id being written.
    pub tbl_index: Signal<In, Bits<C>>,
    /// The 16 table words (`ConnectionEntry::to_words`), word i in bits 32i+31..32i.
    pub tbl_data: Signal<In, Bits<512>>,
    /// DMA read request valid.
    pub rd_req_valid: Signal<Out, Bit>,
    /// The DMA engine takes the request.
    pub rd_req_ready: Signal<In, Bit>,
    /// Host address of the read.
    pub rd_req_addr: Signal<Out, Bits<64>>,
    /// Bytes to read.
    pub rd_req_len: Signal<Out, Bits<16>>,
    /// Read data, the byte at the request address in bits 7:0.
    pub rd_tdata: Signal<In, Bits<64>>,
    /// Read data valid.
    pub rd_tvalid: Signal<In, Bit>,
    /// Last beat of a read.
    pub rd_tlast: Signal<In, Bit>,
    /// With the last beat: the read faulted (its data is garbage).
    pub rd_terror: Signal<In, Bit>,
    /// The engine takes the read beat.
    pub rd_tready: Signal<Out, Bit>,
    /// Frame request valid (to the builder's `req_valid`).
    pub f_valid: Signal<Out, Bit>,
    /// The builder takes the request.
    pub f_ready: Signal<In, Bit>,
    /// Destination MAC.
    pub f_dst_mac: Signal<Out, Bits<48>>,
    /// Source MAC.
    pub f_src_mac: Signal<Out, Bits<48>>,
    /// 802.1Q tagged.
    pub f_vlan: Signal<Out, Bit>,
    /// Its TCI.
    pub f_vlan_tci: Signal<Out, Bits<16>>,
    /// IPv6 (else IPv4).
    pub f_ipv6: Signal<Out, Bit>,
    /// Source IP (IPv4 in the low 32 bits).
    pub f_src_ip: Signal<Out, Bits<128>>,
    /// Destination IP (IPv4 in the low 32 bits).
    pub f_dst_ip: Signal<Out, Bits<128>>,
    /// DSCP.
    pub f_dscp: Signal<Out, Bits<6>>,
    /// ECN: always ECT(0).
    pub f_ecn: Signal<Out, Bits<2>>,
    /// UDP source port: the descriptor's entropy.
    pub f_src_port: Signal<Out, Bits<16>>,
    /// UDP destination port.
    pub f_dst_port: Signal<Out, Bits<16>>,
    /// BTH opcode.
    pub f_opcode: Signal<Out, Bits<8>>,
    /// BTH solicited bit.
    pub f_solicited: Signal<Out, Bit>,
    /// BTH destination connection: the peer's connection id.
    pub f_dest_conn: Signal<Out, Bits<24>>,
    /// BTH AckReq bit.
    pub f_ack_req: Signal<Out, Bit>,
    /// BTH PSN: the FSN.
    pub f_psn: Signal<Out, Bits<24>>,
    /// Transport header, first byte in the top bits.
    pub f_th: Signal<Out, Bits<384>>,
    /// Transport header length.
    pub f_th_len: Signal<Out, Bits<6>>,
    /// Payload length.
    pub f_payload_len: Signal<Out, Bits<14>>,
    /// The MAC port the frame leaves on: the descriptor's port.
    pub f_port: Signal<Out, Bits<PORT_BITS>>,
    /// Payload stream to the builder, packed from lane 0.
    pub p_tdata: Signal<Out, Bits<64>>,
    /// Payload beat valid.
    pub p_tvalid: Signal<Out, Bit>,
    /// The builder takes the payload beat.
    pub p_tready: Signal<In, Bit>,
    /// Event valid.
    pub ev_valid: Signal<Out, Bit>,
    /// The 64-byte event, byte i in bits 8i+7..8i.
    pub ev_data: Signal<Out, Bits<512>>,
    /// The event writer takes the event.
    pub ev_ready: Signal<In, Bit>,
    /// Counter increment valid (always accepted).
    pub cnt_valid: Signal<Out, Bit>,
    /// Which counter (`Counter` discriminant).
    pub cnt_index: Signal<Out, Bits<6>>,
    /// By how much.
    pub cnt_amount: Signal<Out, Bits<16>>,
    /// High unless idle with nothing to fetch.
    pub busy: Signal<Out, Bit>,

    // Specification constants (see `Default`).
    k_opcode_ok: Constant<Bits<256>>,
    k_op_cm: Constant<Bits<8>>,
    k_data_op: [Constant<Bits<8>>; 4],
    k_data_thlen: [Constant<Bits<6>>; 4],
    k_data_write: [Constant<Bit>; 4],
    k_data_imm: [Constant<Bit>; 4],
    k_data_imm_at: [Constant<Bits<9>>; 4],
    k_cm_thlen: Constant<Bits<6>>,
    k_cm_len: Constant<Bits<32>>,
    k_cm_kind_ok: Constant<Bits<256>>,
    k_cm_kind_at: Constant<Bits<9>>,
    k_max_plen: Constant<Bits<32>>,
    k_conn_limit: Constant<Bits<33>>,
    k_desc_shift: Constant<Bits<6>>,
    k_flag_se: Constant<Bits<8>>,
    k_flag_ack: Constant<Bits<8>>,
    k_fsn_mask: Constant<Bits<32>>,
    k_ones: Constant<Bits<32>>,
    k_ecn: Constant<Bits<2>>,
    k_d_opcode: Constant<Bits<10>>,
    k_d_flags: Constant<Bits<10>>,
    k_d_flow: Constant<Bits<10>>,
    k_d_conn: Constant<Bits<10>>,
    k_d_fsn: Constant<Bits<10>>,
    k_d_entropy: Constant<Bits<10>>,
    k_d_tag: Constant<Bits<10>>,
    k_d_msn: Constant<Bits<10>>,
    k_d_ssn: Constant<Bits<10>>,
    k_d_offset: Constant<Bits<10>>,
    k_d_msg_len: Constant<Bits<10>>,
    k_d_plen: Constant<Bits<10>>,
    k_d_imm: Constant<Bits<10>>,
    k_d_laddr: Constant<Bits<10>>,
    k_d_va: Constant<Bits<10>>,
    k_d_rkey: Constant<Bits<10>>,
    k_th_flow: Constant<Bits<9>>,
    k_th_tag: Constant<Bits<9>>,
    k_th_msn: Constant<Bits<9>>,
    k_th_ssn: Constant<Bits<9>>,
    k_th_offset: Constant<Bits<9>>,
    k_th_msg_len: Constant<Bits<9>>,
    k_th_ts: Constant<Bits<9>>,
    k_th_va: Constant<Bits<9>>,
    k_th_rkey: Constant<Bits<9>>,
    k_t_valid: Constant<Bits<9>>,
    k_t_ipv6: Constant<Bits<9>>,
    k_t_vlan: Constant<Bits<9>>,
    k_t_tci: Constant<Bits<9>>,
    k_t_dscp: Constant<Bits<9>>,
    k_t_peer: Constant<Bits<9>>,
    k_t_fcount: Constant<Bits<9>>,
    k_t_mac: Constant<Bits<9>>,
    k_t_lip: [Constant<Bits<9>>; 4],
    k_t_pip: [Constant<Bits<9>>; 4],
    k_ev_base: Constant<Bits<512>>,
    k_e_reason: Constant<Bits<9>>,
    k_e_flow: Constant<Bits<9>>,
    k_e_conn: Constant<Bits<9>>,
    k_e_fsn: Constant<Bits<9>>,
    k_e_opcode: Constant<Bits<9>>,
    k_r_bad_opcode: Constant<Bits<8>>,
    k_r_unknown: Constant<Bits<8>>,
    k_r_bad_flow: Constant<Bits<8>>,
    k_r_bad_length: Constant<Bits<8>>,
    k_r_dma: Constant<Bits<8>>,
    k_r_bad_port: Constant<Bits<8>>,
    k_ports: Constant<Bits<8>>,
    k_d_port: Constant<Bits<10>>,
    k_c_bad_desc: Constant<Bits<6>>,
    k_c_packets: Constant<Bits<6>>,
    k_c_bytes: Constant<Bits<6>>,

    k_buf_beats: Constant<Bits<PTR_BITS>>,
    k_slots: Constant<Bits<IDX_BITS>>,
    k_ahead: Constant<Bits<IDX_BITS>>,
    k_batch: Constant<Bits<4>>,
    k_tags: Constant<Bits<TAG_PTR_BITS>>,
    k_bit: Constant<Bits<32>>,
    k_fault: Constant<Bits<65>>,
    k_job_bit: Constant<Bits<JOB_BITS>>,

    // Connection table copies (internal entry layout: see `update`): the whole entry for the
    // back end, the valid bit and flow count for the front end's checks.
    ctab: BlockRam<369, C>,
    chk: BlockRam<17, C>,
    // The descriptor store, one copy per reader: beat b of slot s at 8s + b. The front end's
    // copy has the read's fault in bit 64 (meaningful on a descriptor's last beat).
    dstore_f: BlockRam<65, STORE_BITS>,
    dstore_b: BlockRam<64, STORE_BITS>,
    // The front end's decision per slot (layout: see `update`).
    jobs: BlockRam<JOB_BITS, SLOT_BITS>,
    // The payload ring buffer.
    pbuf: BlockRam<64, BUF_BITS>,
    // The payload stream leaves through a register slice, so that neither the buffer's output
    // nor the builder's ready crosses between the two blocks combinationally.
    pay_slice: SkidBuffer<Bits<64>>,

    // Fetcher: `fetch` is the next ring index to read, `fetched` the end of what is in the
    // store; `pf_n` and `pf_addr` are the next read's size and address (registered, so they
    // lag `fetch`: `pf_arm`, `pf_armed` and `pf_armed2` are low while they do).
    fetch: DFF<Bits<32>>,
    fetched: DFF<Bits<32>>,
    pf_addr: DFF<Bits<64>>,
    pf_n: DFF<Bits<4>>,
    // The reset, registered here: the input reaches every block of the core from one
    // flip-flop, and the read grant is gated by it, so it must start near that logic.
    rst: DFF<Bit>,
    // The ring's registers, registered here together with its reset pulse, so that they still
    // arrive in the same cycle: `txq_reset` gates the read grant, and came from across the die.
    ring_reset: DFF<Bit>,
    ring_enable: DFF<Bit>,
    ring_base: DFF<Bits<64>>,
    ring_log_size: DFF<Bits<5>>,
    ring_tail: DFF<Bits<32>>,
    pf_arm: DFF<Bit>,
    // `pf_arm` a cycle late, and the descriptors between `fetch` and the tail, registered: the
    // next batch's size then comes from flip-flops, and lags `fetch` by two cycles, during
    // which no batch read goes out.
    pf_armed: DFF<Bit>,
    // The batch size before the room checks, and the room in the store and in the lookahead,
    // registered: the size then takes two register stages after `fetch` (the ring mask, the
    // minimum and the room differences are carry chains), so `pf_armed` is followed by a
    // third arming cycle. Room computed a cycle early is never more than there is: the head
    // and the lookahead only move forward, and `fetch` moves only with a grant, which disarms.
    pf_armed2: DFF<Bit>,
    n_pre: DFF<Bits<4>>,
    s_rem_q: DFF<Bits<IDX_BITS>>,
    ahead_q: DFF<Bits<IDX_BITS>>,
    t_rem_q: DFF<Bits<32>>,
    single: DFF<Bits<4>>,
    desc_out: DFF<Bits<TAG_PTR_BITS>>,
    desc_drop: DFF<Bits<TAG_PTR_BITS>>,
    dbeat: DFF<Bits<6>>,
    // Read tags (bit i: entry i is a descriptor read / a CM read; else payload), the reads to
    // drop after a ring reset, and the fault bits of finished CM and payload reads.
    tq_desc: DFF<Bits<32>>,
    tq_cm: DFF<Bits<32>>,
    // The oldest tag's two bits, kept beside `tq_rd` from the values it and the tag bits take
    // next, so that the read-data routing starts at flip-flops, not at a 32-way select.
    old_desc: DFF<Bit>,
    old_cm: DFF<Bit>,
    tq_wr: DFF<Bits<TAG_PTR_BITS>>,
    tq_rd: DFF<Bits<TAG_PTR_BITS>>,
    drain: DFF<Bits<TAG_PTR_BITS>>,
    // `drain != 0` and `desc_drop != 0` as flip-flops, from the counts' next values: every
    // read beat's routing starts from them.
    draining: DFF<Bit>,
    dropping: DFF<Bit>,
    rerr: DFF<Bits<32>>,
    rc_iss: DFF<Bits<TAG_PTR_BITS>>,
    rc_done: DFF<Bits<TAG_PTR_BITS>>,
    rc_used: DFF<Bits<TAG_PTR_BITS>>,
    // The oldest unused read has finished, and its fault bit: both from the values of the
    // cycle before, so that Wait's decision starts at flip-flops, not at a pointer compare and
    // a 32-way select. A read seen a cycle late only waits a cycle; the pointer they read
    // moves only in Wait's last cycle or at a reset, and neither is followed by Wait.
    rc_avail: DFF<Bit>,
    rc_err: DFF<Bit>,
    // Every read tag in use, every fault bit in use: kept beside the pointers (see the end of
    // `update`), so that the read arbiter tests a flip-flop, not a subtraction and a compare.
    tq_full: DFF<Bit>,
    rc_full: DFF<Bit>,
    // The payload ring has room for the front end's payload (`fbeats`); see the end of
    // `update`. `free` is the room left, from the registers' values of the cycle before.
    room_ok: DFF<Bit>,
    free: DFF<Bits<PTR_BITS>>,
    // Payload ring, in beats: reserved up to `pres`, written up to `pwr`, handed to the
    // builder (or skipped) up to `hend`; `low_q` is the oldest beat still to stream.
    pres: DFF<Bits<PTR_BITS>>,
    pwr: DFF<Bits<PTR_BITS>>,
    hend: DFF<Bits<PTR_BITS>>,
    low_q: DFF<Bits<PTR_BITS>>,
    cm: DFF<Bits<256>>,
    cm_busy: DFF<Bit>,

    // Front end: a loader fills `nf` from the store while the machine checks `fdesc`; `f` is
    // the ring position of the next job record.
    lf: DFF<Bits<IDX_BITS>>,
    la_run: DFF<Bit>,
    la_cnt: DFF<Bits<4>>,
    nf: DFF<Bits<512>>,
    nf_bad: DFF<Bit>,
    nf_valid: DFF<Bit>,
    fstate: DFF<FState>,
    fdesc: DFF<Bits<512>>,
    f: DFF<Bits<IDX_BITS>>,
    op_ok: DFF<Bit>,
    is_cm: DFF<Bit>,
    is_write: DFF<Bit>,
    has_imm: DFF<Bit>,
    thlen: DFF<Bits<6>>,
    conn_ok: DFF<Bit>,
    len_bad: DFF<Bit>,
    // The payload's end in the message (offset + length) and the length's compare with the
    // largest payload, made while the descriptor is taken in Idle, so that Decode's length
    // check is one compare, not an add and a compare beside another compare.
    end33: DFF<Bits<33>>,
    plen_big: DFF<Bit>,
    port_bad: DFF<Bit>,
    // The payload length's compares, registered in Decode beside `len_bad` (Check's verdict
    // decides the job write and the slot counter: two 32-bit compares behind it put nine
    // levels of logic in front of them).
    plen_is_cm: DFF<Bit>,
    plen_zero: DFF<Bit>,
    chk_q: DFF<Bits<17>>,
    fbeats: DFF<Bits<PTR_BITS>>,
    req_addr: DFF<Bits<64>>,
    req_len: DFF<Bits<16>>,

    // Back end: a loader fills `nb` and `nj` (descriptor and job) while the machine retires
    // `desc`; `head` is `TXQ_HEAD`.
    lb: DFF<Bits<IDX_BITS>>,
    lb_run: DFF<Bit>,
    lb_cnt: DFF<Bits<4>>,
    nb: DFF<Bits<512>>,
    nj: DFF<Bits<JOB_BITS>>,
    nb_valid: DFF<Bit>,
    state: DFF<State>,
    head: DFF<Bits<32>>,
    stale: DFF<Bit>,
    desc: DFF<Bits<512>>,
    job: DFF<Bits<JOB_BITS>>,
    conn_q: DFF<Bits<369>>,
    reason: DFF<Bits<8>>,
    th: DFF<Bits<384>>,

    // The request held for the builder, and the payload streamer.
    j_valid: DFF<Bit>,
    j_dst_mac: DFF<Bits<48>>,
    j_src_mac: DFF<Bits<48>>,
    j_vlan: DFF<Bit>,
    j_tci: DFF<Bits<16>>,
    j_ipv6: DFF<Bit>,
    j_sip: DFF<Bits<128>>,
    j_dip: DFF<Bits<128>>,
    j_dscp: DFF<Bits<6>>,
    j_sport: DFF<Bits<16>>,
    j_dport: DFF<Bits<16>>,
    j_opcode: DFF<Bits<8>>,
    j_se: DFF<Bit>,
    j_dest: DFF<Bits<24>>,
    j_ack: DFF<Bit>,
    j_psn: DFF<Bits<24>>,
    j_th: DFF<Bits<384>>,
    j_thlen: DFF<Bits<6>>,
    j_plen: DFF<Bits<14>>,
    j_port: DFF<Bits<PORT_BITS>>,
    j_beats: DFF<Bits<PTR_BITS>>,
    j_start: DFF<Bits<PTR_BITS>>,
    streaming: DFF<Bit>,
    left: DFF<Bits<PTR_BITS>>,
    rptr: DFF<Bits<PTR_BITS>>,
    pend: DFF<Bit>,
    pend_start: DFF<Bits<PTR_BITS>>,
    pend_beats: DFF<Bits<PTR_BITS>>,
    cb_pend: DFF<Bit>,
    cb_amount: DFF<Bits<16>>,

    g_opcode: Signal<Local, Bits<8>>,
    g_flow: Signal<Local, Bits<16>>,
    g_conn: Signal<Local, Bits<32>>,
    g_msg_len: Signal<Local, Bits<32>>,
    g_plen: Signal<Local, Bits<32>>,
    g_laddr: Signal<Local, Bits<64>>,
    g_port: Signal<Local, Bits<8>>,
    c_valid: Signal<Local, Bit>,
    c_fcount: Signal<Local, Bits<16>>,
    d_opcode: Signal<Local, Bits<8>>,
    d_flags: Signal<Local, Bits<8>>,
    d_flow: Signal<Local, Bits<16>>,
    d_conn: Signal<Local, Bits<32>>,
    d_fsn: Signal<Local, Bits<32>>,
    d_entropy: Signal<Local, Bits<16>>,
    d_tag: Signal<Local, Bits<16>>,
    d_msn: Signal<Local, Bits<32>>,
    d_ssn: Signal<Local, Bits<32>>,
    d_offset: Signal<Local, Bits<32>>,
    d_msg_len: Signal<Local, Bits<32>>,
    d_plen: Signal<Local, Bits<32>>,
    d_imm: Signal<Local, Bits<32>>,
    d_va: Signal<Local, Bits<64>>,
    d_rkey: Signal<Local, Bits<32>>,
    d_port: Signal<Local, Bits<8>>,
    e_ipv6: Signal<Local, Bit>,
    e_vlan: Signal<Local, Bit>,
    e_tci: Signal<Local, Bits<16>>,
    e_dscp: Signal<Local, Bits<6>>,
    e_peer: Signal<Local, Bits<24>>,
    e_mac: Signal<Local, Bits<48>>,
    e_lip: Signal<Local, Bits<128>>,
    e_pip: Signal<Local, Bits<128>>,
    t_word: Signal<Local, Bits<32>>,
    t_lip: Signal<Local, Bits<128>>,
    t_pip: Signal<Local, Bits<128>>,
    t_entry: Signal<Local, Bits<369>>,
    n_bad: Signal<Local, Bit>,
    n_refuse: Signal<Local, Bit>,
    n_reason: Signal<Local, Bits<8>>,
    b_read: Signal<Local, Bit>,
    b_is_cm: Signal<Local, Bit>,
    b_is_write: Signal<Local, Bit>,
    b_has_imm: Signal<Local, Bit>,
    b_thlen: Signal<Local, Bits<6>>,
    b_beats: Signal<Local, Bits<PTR_BITS>>,
    mask: Signal<Local, Bits<32>>,
    desc_addr: Signal<Local, Bits<64>>,
    occ: Signal<Local, Bits<IDX_BITS>>,
    s_rem: Signal<Local, Bits<IDX_BITS>>,
    w_last: Signal<Local, Bits<32>>,
    c_t: Signal<Local, Bits<4>>,
    c_w: Signal<Local, Bits<4>>,
    ahead: Signal<Local, Bits<IDX_BITS>>,
    n_min: Signal<Local, Bits<4>>,
    th_data: Signal<Local, Bits<384>>,
    th_cm: Signal<Local, Bits<384>>,
    cm_byte: Signal<Local, Bits<8>>,
    cm_kind: Signal<Local, Bits<8>>,
    ssn_out: Signal<Local, Bits<32>>,
    ev: Signal<Local, Bits<512>>,
    want: Signal<Local, Bit>,
    tq_n: Signal<Local, Bits<TAG_PTR_BITS>>,
    used: Signal<Local, Bits<PTR_BITS>>,
    f_can: Signal<Local, Bit>,
    pf_go: Signal<Local, Bit>,
    m_grant: Signal<Local, Bit>,
    pf_grant: Signal<Local, Bit>,
    tq_w: Signal<Local, Bits<TAG_BITS>>,
    tq_idx: Signal<Local, Bits<TAG_BITS>>,
    k_is_desc: Signal<Local, Bit>,
    k_is_cm: Signal<Local, Bit>,
    tq_idx_next: Signal<Local, Bits<TAG_BITS>>,
    /// A grant this cycle goes to the tag that is the oldest next cycle.
    grant_old: Signal<Local, Bit>,
    r_end: Signal<Local, Bit>,
    r_drop: Signal<Local, Bit>,
    r_desc: Signal<Local, Bit>,
    r_pay: Signal<Local, Bit>,
    r_cm: Signal<Local, Bit>,
    rewind: Signal<Local, Bit>,
    rc_inc: Signal<Local, Bit>,
    n_got: Signal<Local, Bits<4>>,
    desc_out_next: Signal<Local, Bits<TAG_PTR_BITS>>,
    store_addr: Signal<Local, Bits<STORE_BITS>>,
    fault_w: Signal<Local, Bits<65>>,
    rc_w: Signal<Local, Bits<TAG_BITS>>,
    rc_r: Signal<Local, Bits<TAG_BITS>>,
    jw_en: Signal<Local, Bit>,
    jw_bad: Signal<Local, Bit>,
    jw_refuse: Signal<Local, Bit>,
    jw_read: Signal<Local, Bit>,
    jw_reason: Signal<Local, Bits<8>>,
    jw: Signal<Local, Bits<JOB_BITS>>,
    inc: Signal<Local, Bit>,
    b_take: Signal<Local, Bit>,
    b_idle: Signal<Local, Bit>,
    s_end: Signal<Local, Bit>,
    h_ok: Signal<Local, Bit>,
    rptr_next: Signal<Local, Bits<PTR_BITS>>,
}

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.to_bits())
}

fn bitmap<const N: usize>(set: impl Fn(usize) -> bool) -> Constant<Bits<N>> {
    let mut b = Bits::<N>::default();
    for i in (0..N).filter(|&i| set(i)) {
        b = b.replace_bit(i, true);
    }
    Constant::new(b)
}

/// Bit position of a `width`-bit field in an encoding (bit i = byte i / 8, bit i % 8), found
/// by encoding each single bit of the field; panics unless the field is one contiguous
/// little-endian slice.
fn probe(width: usize, encode: impl Fn(u64) -> Vec<u8>) -> u64 {
    let zero = encode(0);
    let mut base = None;
    for j in 0..width {
        let one = encode(1 << j);
        let diff: Vec<usize> = (0..zero.len() * 8)
            .filter(|&b| (zero[b / 8] ^ one[b / 8]) >> (b % 8) & 1 == 1)
            .collect();
        assert_eq!(diff.len(), 1, "field bit {j} is not encoded as one bit");
        let b0 = *base.get_or_insert(diff[0].wrapping_sub(j));
        assert_eq!(
            diff[0],
            b0.wrapping_add(j),
            "field is not a contiguous slice"
        );
    }
    base.expect("empty field") as u64
}

fn desc_field(width: usize, set: impl Fn(&mut TxDescriptor, u64)) -> Constant<Bits<10>> {
    k(probe(width, |v| {
        let mut d = TxDescriptor::default();
        set(&mut d, v);
        d.to_bytes().to_vec()
    }))
}

fn table_field(width: usize, set: impl Fn(&mut ConnectionEntry, u64)) -> Constant<Bits<9>> {
    k(probe(width, |v| {
        let mut e = ConnectionEntry::default();
        set(&mut e, v);
        e.to_words().iter().flat_map(|w| w.to_le_bytes()).collect()
    }))
}

fn tx_error(conn: u32, flow: u16, fsn: u32, opcode: u8, reason: TxErrorReason) -> Vec<u8> {
    Event::TxError {
        conn,
        flow,
        fsn,
        opcode,
        reason,
    }
    .to_bytes()
    .to_vec()
}

/// Bit position, inside a 384-bit transport header whose first byte is in the top bits, of the
/// least significant bit of the big-endian field at bytes `r`.
fn th_lsb(r: core::ops::Range<usize>) -> Constant<Bits<9>> {
    k((384 - 8 * r.end) as u64)
}

const TX_ERROR_REASONS: [TxErrorReason; 6] = [
    TxErrorReason::BadOpcode,
    TxErrorReason::UnknownConnection,
    TxErrorReason::BadPort,
    TxErrorReason::BadFlow,
    TxErrorReason::BadLength,
    TxErrorReason::DmaError,
];

impl<const C: usize> Default for TxEngine<C> {
    fn default() -> Self {
        assert!((1..=24).contains(&C), "connection id bits");
        let data_ops: Vec<Opcode> = (0..=255u8)
            .filter_map(Opcode::from_u8)
            .filter(|o| o.is_data())
            .collect();
        assert_eq!(data_ops.len(), 4, "four data opcodes");
        // The immediate's place is selected by the Write flag alone (see `th_data`).
        let imm_writes: Vec<bool> = data_ops
            .iter()
            .filter(|o| o.has_imm())
            .map(|o| o.is_write())
            .collect();
        assert!(
            imm_writes.len() == 2 && imm_writes[0] != imm_writes[1],
            "one data opcode with an immediate per Write flag"
        );
        let imm_byte = |o: Opcode| FDH_LEN + if o.is_write() { RETH_LEN } else { 0 };
        // The TxError event: the bytes that do not depend on any field (its kind), the reason
        // byte found where the encodings of different reasons differ.
        let events: Vec<Vec<u8>> = TX_ERROR_REASONS
            .iter()
            .map(|&r| tx_error(0, 0, 0, 0, r))
            .collect();
        let reason_byte = (0..events[0].len())
            .find(|&i| events.iter().any(|e| e[i] != events[0][i]))
            .expect("reason byte");
        for (e, r) in events.iter().zip(TX_ERROR_REASONS) {
            assert_eq!(e[reason_byte], r as u8, "reason is one byte");
            for i in (0..e.len()).filter(|&i| i != reason_byte) {
                assert_eq!(
                    e[i], events[0][i],
                    "only the reason byte depends on the reason"
                );
            }
        }
        let ev_base = |i: usize| i / 8 != reason_byte && events[0][i / 8] >> (i % 8) & 1 == 1;
        let ev = |width: usize, f: fn(u64) -> Vec<u8>| k(probe(width, f));
        let r = |x: TxErrorReason| k(x as u64);
        TxEngine {
            clock: Default::default(),
            reset: Default::default(),
            enable: Default::default(),
            txq_base: Default::default(),
            txq_log_size: Default::default(),
            txq_tail: Default::default(),
            txq_reset: Default::default(),
            now_ns: Default::default(),
            src_mac: Default::default(),
            udp_port: Default::default(),
            txq_head: Default::default(),
            tbl_write: Default::default(),
            tbl_index: Default::default(),
            tbl_data: Default::default(),
            rd_req_valid: Default::default(),
            rd_req_ready: Default::default(),
            rd_req_addr: Default::default(),
            rd_req_len: Default::default(),
            rd_tdata: Default::default(),
            rd_tvalid: Default::default(),
            rd_tlast: Default::default(),
            rd_terror: Default::default(),
            rd_tready: Default::default(),
            f_valid: Default::default(),
            f_ready: Default::default(),
            f_dst_mac: Default::default(),
            f_src_mac: Default::default(),
            f_vlan: Default::default(),
            f_vlan_tci: Default::default(),
            f_ipv6: Default::default(),
            f_src_ip: Default::default(),
            f_dst_ip: Default::default(),
            f_dscp: Default::default(),
            f_ecn: Default::default(),
            f_src_port: Default::default(),
            f_dst_port: Default::default(),
            f_opcode: Default::default(),
            f_solicited: Default::default(),
            f_dest_conn: Default::default(),
            f_ack_req: Default::default(),
            f_psn: Default::default(),
            f_th: Default::default(),
            f_th_len: Default::default(),
            f_payload_len: Default::default(),
            f_port: Default::default(),
            p_tdata: Default::default(),
            p_tvalid: Default::default(),
            p_tready: Default::default(),
            ev_valid: Default::default(),
            ev_data: Default::default(),
            ev_ready: Default::default(),
            cnt_valid: Default::default(),
            cnt_index: Default::default(),
            cnt_amount: Default::default(),
            busy: Default::default(),

            k_opcode_ok: bitmap(|v| {
                Opcode::from_u8(v as u8).is_some_and(|o| o.is_data() || o == Opcode::Cm)
            }),
            k_op_cm: k(Opcode::Cm as u64),
            k_data_op: core::array::from_fn(|j| k(data_ops[j] as u64)),
            k_data_thlen: core::array::from_fn(|j| {
                k(TransportRepr::header_len_for(data_ops[j]) as u64)
            }),
            k_data_write: core::array::from_fn(|j| Constant::new(data_ops[j].is_write())),
            k_data_imm: core::array::from_fn(|j| Constant::new(data_ops[j].has_imm())),
            k_data_imm_at: core::array::from_fn(|j| {
                let at = imm_byte(data_ops[j]);
                th_lsb(at..at + IMM_LEN)
            }),
            k_cm_thlen: k(TransportRepr::header_len_for(Opcode::Cm) as u64),
            k_cm_len: k(CM_LEN as u64),
            k_cm_kind_ok: bitmap(|v| CmKind::from_u8(v as u8).is_some()),
            k_cm_kind_at: k(8 * cm::KIND as u64),
            k_max_plen: k(MAX_PAYLOAD_LEN as u64),
            k_conn_limit: k(1 << C),
            k_desc_shift: k(TX_DESCRIPTOR_LEN.trailing_zeros() as u64),
            k_flag_se: k(FLAG_SOLICITED as u64),
            k_flag_ack: k(FLAG_ACK_REQ as u64),
            k_fsn_mask: k(FSN_MASK as u64),
            k_ones: k(u32::MAX as u64),
            k_ecn: k(ECN_ECT0 as u64),
            k_d_opcode: desc_field(8, |d, v| d.opcode = v as u8),
            k_d_flags: desc_field(8, |d, v| d.flags = v as u8),
            k_d_flow: desc_field(16, |d, v| d.flow = v as u16),
            k_d_conn: desc_field(32, |d, v| d.conn = v as u32),
            k_d_fsn: desc_field(32, |d, v| d.fsn = v as u32),
            k_d_entropy: desc_field(16, |d, v| d.entropy = v as u16),
            k_d_tag: desc_field(16, |d, v| d.tag = v as u16),
            k_d_msn: desc_field(32, |d, v| d.msn = v as u32),
            k_d_ssn: desc_field(32, |d, v| d.ssn = v as u32),
            k_d_offset: desc_field(32, |d, v| d.offset = v as u32),
            k_d_msg_len: desc_field(32, |d, v| d.msg_len = v as u32),
            k_d_plen: desc_field(32, |d, v| d.payload_len = v as u32),
            k_d_imm: desc_field(32, |d, v| d.imm = v as u32),
            k_d_laddr: desc_field(64, |d, v| d.local_addr = v),
            k_d_va: desc_field(64, |d, v| d.remote_va = v),
            k_d_rkey: desc_field(32, |d, v| d.rkey = v as u32),
            k_th_flow: th_lsb(fdh::FLOW),
            k_th_tag: th_lsb(fdh::TAG),
            k_th_msn: th_lsb(fdh::MSN),
            k_th_ssn: th_lsb(fdh::SSN),
            k_th_offset: th_lsb(fdh::OFFSET),
            k_th_msg_len: th_lsb(fdh::MSG_LEN),
            k_th_ts: th_lsb(fdh::TIMESTAMP),
            k_th_va: th_lsb(FDH_LEN + reth::VA.start..FDH_LEN + reth::VA.end),
            k_th_rkey: th_lsb(FDH_LEN + reth::RKEY.start..FDH_LEN + reth::RKEY.end),
            k_t_valid: table_field(1, |e, v| e.valid = v == 1),
            k_t_ipv6: table_field(1, |e, v| e.ipv6 = v == 1),
            k_t_vlan: table_field(1, |e, v| e.vlan_tci = (v == 1).then_some(0)),
            k_t_tci: table_field(16, |e, v| e.vlan_tci = Some(v as u16)),
            k_t_dscp: table_field(6, |e, v| e.dscp = v as u8),
            k_t_peer: table_field(24, |e, v| e.peer_conn = v as u32),
            k_t_fcount: table_field(16, |e, v| e.flow_count = v as u16),
            k_t_mac: table_field(48, |e, v| e.peer_mac = EthernetAddress::from_u64(v)),
            k_t_lip: core::array::from_fn(|w| {
                table_field(32, |e, v| {
                    e.local_ip[4 * w..4 * w + 4].copy_from_slice(&(v as u32).to_be_bytes())
                })
            }),
            k_t_pip: core::array::from_fn(|w| {
                table_field(32, |e, v| {
                    e.peer_ip[4 * w..4 * w + 4].copy_from_slice(&(v as u32).to_be_bytes())
                })
            }),
            k_ev_base: bitmap(ev_base),
            k_e_reason: k(8 * reason_byte as u64),
            k_e_flow: ev(16, |v| {
                tx_error(0, v as u16, 0, 0, TxErrorReason::BadOpcode)
            }),
            k_e_conn: ev(32, |v| {
                tx_error(v as u32, 0, 0, 0, TxErrorReason::BadOpcode)
            }),
            k_e_fsn: ev(32, |v| {
                tx_error(0, 0, v as u32, 0, TxErrorReason::BadOpcode)
            }),
            k_e_opcode: ev(8, |v| tx_error(0, 0, 0, v as u8, TxErrorReason::BadOpcode)),
            k_r_bad_opcode: r(TxErrorReason::BadOpcode),
            k_r_unknown: r(TxErrorReason::UnknownConnection),
            k_r_bad_flow: r(TxErrorReason::BadFlow),
            k_r_bad_length: r(TxErrorReason::BadLength),
            k_r_dma: r(TxErrorReason::DmaError),
            k_r_bad_port: r(TxErrorReason::BadPort),
            k_ports: k(table_sizes().ports as u64),
            k_d_port: desc_field(8, |d, v| d.port = v as u8),
            k_c_bad_desc: k(Counter::TxBadDescriptor as u64),
            k_c_packets: k(Counter::TxPackets as u64),
            k_c_bytes: k(Counter::TxBytes as u64),
            k_buf_beats: k(1 << BUF_BITS),
            k_slots: k(1 << SLOT_BITS),
            k_ahead: k(LOOKAHEAD),
            k_batch: k(MAX_BATCH),
            k_tags: k(1 << TAG_BITS),
            k_bit: k(1),
            k_fault: bitmap(|i| i == 64),
            k_job_bit: k(1),
            ctab: Default::default(),
            chk: Default::default(),
            dstore_f: Default::default(),
            dstore_b: Default::default(),
            jobs: Default::default(),
            pbuf: Default::default(),
            pay_slice: Default::default(),
            fetch: Default::default(),
            fetched: Default::default(),
            pf_addr: Default::default(),
            pf_n: Default::default(),
            rst: Default::default(),
            ring_reset: Default::default(),
            ring_enable: Default::default(),
            ring_base: Default::default(),
            ring_log_size: Default::default(),
            ring_tail: Default::default(),
            pf_arm: Default::default(),
            pf_armed: Default::default(),
            pf_armed2: Default::default(),
            n_pre: Default::default(),
            s_rem_q: Default::default(),
            ahead_q: Default::default(),
            t_rem_q: Default::default(),
            single: Default::default(),
            desc_out: Default::default(),
            desc_drop: Default::default(),
            dbeat: Default::default(),
            tq_desc: Default::default(),
            tq_cm: Default::default(),
            old_desc: Default::default(),
            old_cm: Default::default(),
            tq_wr: Default::default(),
            tq_rd: Default::default(),
            drain: Default::default(),
            draining: Default::default(),
            dropping: Default::default(),
            rerr: Default::default(),
            rc_iss: Default::default(),
            rc_done: Default::default(),
            rc_used: Default::default(),
            rc_avail: Default::default(),
            rc_err: Default::default(),
            tq_full: Default::default(),
            rc_full: Default::default(),
            room_ok: Default::default(),
            free: Default::default(),
            pres: Default::default(),
            pwr: Default::default(),
            hend: Default::default(),
            low_q: Default::default(),
            cm: Default::default(),
            cm_busy: Default::default(),
            lf: Default::default(),
            la_run: Default::default(),
            la_cnt: Default::default(),
            nf: Default::default(),
            nf_bad: Default::default(),
            nf_valid: Default::default(),
            fstate: Default::default(),
            fdesc: Default::default(),
            f: Default::default(),
            op_ok: Default::default(),
            is_cm: Default::default(),
            is_write: Default::default(),
            has_imm: Default::default(),
            thlen: Default::default(),
            conn_ok: Default::default(),
            len_bad: Default::default(),
            end33: Default::default(),
            plen_big: Default::default(),
            plen_is_cm: Default::default(),
            plen_zero: Default::default(),
            port_bad: Default::default(),
            chk_q: Default::default(),
            fbeats: Default::default(),
            req_addr: Default::default(),
            req_len: Default::default(),
            lb: Default::default(),
            lb_run: Default::default(),
            lb_cnt: Default::default(),
            nb: Default::default(),
            nj: Default::default(),
            nb_valid: Default::default(),
            state: Default::default(),
            head: Default::default(),
            stale: Default::default(),
            desc: Default::default(),
            job: Default::default(),
            conn_q: Default::default(),
            reason: Default::default(),
            th: Default::default(),
            j_valid: Default::default(),
            j_dst_mac: Default::default(),
            j_src_mac: Default::default(),
            j_vlan: Default::default(),
            j_tci: Default::default(),
            j_ipv6: Default::default(),
            j_sip: Default::default(),
            j_dip: Default::default(),
            j_dscp: Default::default(),
            j_sport: Default::default(),
            j_dport: Default::default(),
            j_opcode: Default::default(),
            j_se: Default::default(),
            j_dest: Default::default(),
            j_ack: Default::default(),
            j_psn: Default::default(),
            j_th: Default::default(),
            j_thlen: Default::default(),
            j_plen: Default::default(),
            j_port: Default::default(),
            j_beats: Default::default(),
            j_start: Default::default(),
            streaming: Default::default(),
            left: Default::default(),
            rptr: Default::default(),
            pend: Default::default(),
            pend_start: Default::default(),
            pend_beats: Default::default(),
            cb_pend: Default::default(),
            cb_amount: Default::default(),
            g_opcode: Default::default(),
            g_flow: Default::default(),
            g_conn: Default::default(),
            g_msg_len: Default::default(),
            g_plen: Default::default(),
            g_laddr: Default::default(),
            g_port: Default::default(),
            c_valid: Default::default(),
            c_fcount: Default::default(),
            d_opcode: Default::default(),
            d_flags: Default::default(),
            d_flow: Default::default(),
            d_conn: Default::default(),
            d_fsn: Default::default(),
            d_entropy: Default::default(),
            d_tag: Default::default(),
            d_msn: Default::default(),
            d_ssn: Default::default(),
            d_offset: Default::default(),
            d_msg_len: Default::default(),
            d_plen: Default::default(),
            d_imm: Default::default(),
            d_va: Default::default(),
            d_rkey: Default::default(),
            d_port: Default::default(),
            e_ipv6: Default::default(),
            e_vlan: Default::default(),
            e_tci: Default::default(),
            e_dscp: Default::default(),
            e_peer: Default::default(),
            e_mac: Default::default(),
            e_lip: Default::default(),
            e_pip: Default::default(),
            t_word: Default::default(),
            t_lip: Default::default(),
            t_pip: Default::default(),
            t_entry: Default::default(),
            n_bad: Default::default(),
            n_refuse: Default::default(),
            n_reason: Default::default(),
            b_read: Default::default(),
            b_is_cm: Default::default(),
            b_is_write: Default::default(),
            b_has_imm: Default::default(),
            b_thlen: Default::default(),
            b_beats: Default::default(),
            mask: Default::default(),
            desc_addr: Default::default(),
            occ: Default::default(),
            s_rem: Default::default(),
            w_last: Default::default(),
            c_t: Default::default(),
            c_w: Default::default(),
            ahead: Default::default(),
            n_min: Default::default(),
            th_data: Default::default(),
            th_cm: Default::default(),
            cm_byte: Default::default(),
            cm_kind: Default::default(),
            ssn_out: Default::default(),
            ev: Default::default(),
            want: Default::default(),
            tq_n: Default::default(),
            used: Default::default(),
            f_can: Default::default(),
            pf_go: Default::default(),
            m_grant: Default::default(),
            pf_grant: Default::default(),
            tq_w: Default::default(),
            tq_idx: Default::default(),
            k_is_desc: Default::default(),
            k_is_cm: Default::default(),
            tq_idx_next: Default::default(),
            grant_old: Default::default(),
            r_end: Default::default(),
            r_drop: Default::default(),
            r_desc: Default::default(),
            r_pay: Default::default(),
            r_cm: Default::default(),
            rewind: Default::default(),
            rc_inc: Default::default(),
            n_got: Default::default(),
            desc_out_next: Default::default(),
            store_addr: Default::default(),
            fault_w: Default::default(),
            rc_w: Default::default(),
            rc_r: Default::default(),
            jw_en: Default::default(),
            jw_bad: Default::default(),
            jw_refuse: Default::default(),
            jw_read: Default::default(),
            jw_reason: Default::default(),
            jw: Default::default(),
            inc: Default::default(),
            b_take: Default::default(),
            b_idle: Default::default(),
            s_end: Default::default(),
            h_ok: Default::default(),
            rptr_next: Default::default(),
        }
    }
}

impl<const C: usize> Logic for TxEngine<C> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            rst,
            ring_reset,
            ring_enable,
            ring_base,
            ring_log_size,
            ring_tail,
            fetch,
            fetched,
            pf_addr,
            pf_n,
            pf_arm,
            pf_armed,
            pf_armed2,
            n_pre,
            s_rem_q,
            ahead_q,
            t_rem_q,
            single,
            desc_out,
            desc_drop,
            dbeat,
            tq_desc,
            tq_cm,
            old_desc,
            old_cm,
            tq_wr,
            tq_rd,
            drain,
            draining,
            dropping,
            rerr,
            rc_iss,
            rc_done,
            rc_used,
            rc_avail,
            rc_err,
            tq_full,
            rc_full,
            room_ok,
            free,
            pres,
            pwr,
            hend,
            low_q,
            cm,
            cm_busy,
            lf,
            la_run,
            la_cnt,
            nf,
            nf_bad,
            nf_valid,
            fstate,
            fdesc,
            f,
            op_ok,
            is_cm,
            is_write,
            has_imm,
            thlen,
            conn_ok,
            len_bad,
            end33,
            plen_big,
            plen_is_cm,
            plen_zero,
            port_bad,
            chk_q,
            fbeats,
            req_addr,
            req_len,
            lb,
            lb_run,
            lb_cnt,
            nb,
            nj,
            nb_valid,
            state,
            head,
            stale,
            desc,
            job,
            conn_q,
            reason,
            th,
            j_valid,
            j_dst_mac,
            j_src_mac,
            j_vlan,
            j_tci,
            j_ipv6,
            j_sip,
            j_dip,
            j_dscp,
            j_sport,
            j_dport,
            j_opcode,
            j_se,
            j_dest,
            j_ack,
            j_psn,
            j_th,
            j_thlen,
            j_plen,
            j_port,
            j_beats,
            j_start,
            streaming,
            left,
            rptr,
            pend,
            pend_start,
            pend_beats,
            cb_pend,
            cb_amount
        );
        self.rst.d.next = self.reset.val();
        self.ring_reset.d.next = self.txq_reset.val();
        self.ring_enable.d.next = self.enable.val();
        self.ring_base.d.next = self.txq_base.val();
        self.ring_log_size.d.next = self.txq_log_size.val();
        self.ring_tail.d.next = self.txq_tail.val();
        self.ctab.read_clock.next = self.clock.val();
        self.ctab.write_clock.next = self.clock.val();
        self.chk.read_clock.next = self.clock.val();
        self.chk.write_clock.next = self.clock.val();
        self.dstore_f.read_clock.next = self.clock.val();
        self.dstore_f.write_clock.next = self.clock.val();
        self.dstore_b.read_clock.next = self.clock.val();
        self.dstore_b.write_clock.next = self.clock.val();
        self.jobs.read_clock.next = self.clock.val();
        self.jobs.write_clock.next = self.clock.val();
        self.pbuf.read_clock.next = self.clock.val();
        self.pbuf.write_clock.next = self.clock.val();

        // ---- Output defaults.
        self.rd_req_valid.next = false;
        self.rd_req_addr.next = self.pf_addr.q.val();
        self.rd_req_len.next = bit_cast::<16, 4>(self.pf_n.q.val()) << self.k_desc_shift.val();
        // Every read's data has a place reserved before the read is issued.
        self.rd_tready.next = true;
        self.ev_valid.next = false;
        self.cnt_valid.next = false;
        self.cnt_index.next = 0.into();
        self.cnt_amount.next = 0.into();
        self.txq_head.next = self.head.q.val();
        self.f_valid.next = self.j_valid.q.val();
        self.f_dst_mac.next = self.j_dst_mac.q.val();
        self.f_src_mac.next = self.j_src_mac.q.val();
        self.f_vlan.next = self.j_vlan.q.val();
        self.f_vlan_tci.next = self.j_tci.q.val();
        self.f_ipv6.next = self.j_ipv6.q.val();
        self.f_src_ip.next = self.j_sip.q.val();
        self.f_dst_ip.next = self.j_dip.q.val();
        self.f_dscp.next = self.j_dscp.q.val();
        self.f_ecn.next = self.k_ecn.val();
        self.f_src_port.next = self.j_sport.q.val();
        self.f_dst_port.next = self.j_dport.q.val();
        self.f_opcode.next = self.j_opcode.q.val();
        self.f_solicited.next = self.j_se.q.val();
        self.f_dest_conn.next = self.j_dest.q.val();
        self.f_ack_req.next = self.j_ack.q.val();
        self.f_psn.next = self.j_psn.q.val();
        self.f_th.next = self.j_th.q.val();
        self.f_th_len.next = self.j_thlen.q.val();
        self.f_payload_len.next = self.j_plen.q.val();
        self.f_port.next = self.j_port.q.val();
        self.pay_slice.clock.next = self.clock.val();
        self.pay_slice.reset.next = self.rst.q.val();
        self.pay_slice.in_valid.next = self.streaming.q.val();
        self.pay_slice.in_data.next = self.pbuf.read_data.val();
        self.pay_slice.out_ready.next = self.p_tready.val();
        self.p_tvalid.next = self.pay_slice.out_valid.val();
        self.p_tdata.next = self.pay_slice.out_data.val();
        self.pbuf.write_enable.next = false;
        self.pbuf.write_address.next = self.pwr.q.val().get_bits::<BUF_BITS>(0);
        self.pbuf.write_data.next = self.rd_tdata.val();
        self.inc.next = false;
        self.cb_pend.d.next = false;
        self.jw_en.next = false;
        self.jw_bad.next = false;
        self.jw_refuse.next = false;
        self.jw_read.next = false;
        self.jw_reason.next = 0.into();

        // ---- Descriptor fields (positions probed from `TxDescriptor::to_bytes`): those the
        // front end checks, from `fdesc`, and those the back end sends, from `desc`.
        self.g_opcode.next = self
            .fdesc
            .q
            .val()
            .get_bits::<8>(self.k_d_opcode.val().index());
        self.g_flow.next = self
            .fdesc
            .q
            .val()
            .get_bits::<16>(self.k_d_flow.val().index());
        self.g_conn.next = self
            .fdesc
            .q
            .val()
            .get_bits::<32>(self.k_d_conn.val().index());
        self.g_msg_len.next = self
            .fdesc
            .q
            .val()
            .get_bits::<32>(self.k_d_msg_len.val().index());
        self.g_plen.next = self
            .fdesc
            .q
            .val()
            .get_bits::<32>(self.k_d_plen.val().index());
        self.g_laddr.next = self
            .fdesc
            .q
            .val()
            .get_bits::<64>(self.k_d_laddr.val().index());
        self.g_port.next = self
            .fdesc
            .q
            .val()
            .get_bits::<8>(self.k_d_port.val().index());
        self.d_opcode.next = self
            .desc
            .q
            .val()
            .get_bits::<8>(self.k_d_opcode.val().index());
        self.d_flags.next = self
            .desc
            .q
            .val()
            .get_bits::<8>(self.k_d_flags.val().index());
        self.d_flow.next = self
            .desc
            .q
            .val()
            .get_bits::<16>(self.k_d_flow.val().index());
        self.d_conn.next = self
            .desc
            .q
            .val()
            .get_bits::<32>(self.k_d_conn.val().index());
        self.d_fsn.next = self.desc.q.val().get_bits::<32>(self.k_d_fsn.val().index());
        self.d_entropy.next = self
            .desc
            .q
            .val()
            .get_bits::<16>(self.k_d_entropy.val().index());
        self.d_tag.next = self.desc.q.val().get_bits::<16>(self.k_d_tag.val().index());
        self.d_msn.next = self.desc.q.val().get_bits::<32>(self.k_d_msn.val().index());
        self.d_ssn.next = self.desc.q.val().get_bits::<32>(self.k_d_ssn.val().index());
        self.d_offset.next = self
            .desc
            .q
            .val()
            .get_bits::<32>(self.k_d_offset.val().index());
        self.d_msg_len.next = self
            .desc
            .q
            .val()
            .get_bits::<32>(self.k_d_msg_len.val().index());
        self.d_plen.next = self
            .desc
            .q
            .val()
            .get_bits::<32>(self.k_d_plen.val().index());
        self.d_imm.next = self.desc.q.val().get_bits::<32>(self.k_d_imm.val().index());
        self.d_va.next = self.desc.q.val().get_bits::<64>(self.k_d_va.val().index());
        self.d_rkey.next = self
            .desc
            .q
            .val()
            .get_bits::<32>(self.k_d_rkey.val().index());
        self.d_port.next = self.desc.q.val().get_bits::<8>(self.k_d_port.val().index());

        // ---- Connection table: table words in, the internal entry layout stored:
        // 0 valid | 1 ipv6 | 2 vlan | 3..19 TCI | 19..25 DSCP | 25..49 peer connection |
        // 49..65 flow count | 65..113 peer MAC | 113..241 local IP | 241..369 peer IP.
        // The front end's copy: 0 valid | 1..17 flow count.
        // Packed only in a cycle that writes it (the RAMs ignore their data otherwise), so
        // that the simulator does not assemble a 369-bit entry in every cycle.
        self.t_lip.next = 0.into();
        self.t_pip.next = 0.into();
        self.t_word.next = 0.into();
        self.t_entry.next = 0.into();
        if self.tbl_write.val() {
            for w in 0_usize..4 {
                self.t_word.next = self
                    .tbl_data
                    .val()
                    .get_bits::<32>(self.k_t_lip[w].val().index());
                self.t_lip.next = self.t_lip.val()
                    | (bit_cast::<128, 32>(self.t_word.val()) << (96 - 32 * w).to_bits::<7>());
                self.t_word.next = self
                    .tbl_data
                    .val()
                    .get_bits::<32>(self.k_t_pip[w].val().index());
                self.t_pip.next = self.t_pip.val()
                    | (bit_cast::<128, 32>(self.t_word.val()) << (96 - 32 * w).to_bits::<7>());
            }
            self.t_entry.next = bit_cast::<369, 1>(
                self.tbl_data
                    .val()
                    .get_bits::<1>(self.k_t_valid.val().index()),
            ) | (bit_cast::<369, 1>(
                self.tbl_data
                    .val()
                    .get_bits::<1>(self.k_t_ipv6.val().index()),
            ) << 1_u64)
                | (bit_cast::<369, 1>(
                    self.tbl_data
                        .val()
                        .get_bits::<1>(self.k_t_vlan.val().index()),
                ) << 2_u64)
                | (bit_cast::<369, 16>(
                    self.tbl_data
                        .val()
                        .get_bits::<16>(self.k_t_tci.val().index()),
                ) << 3_u64)
                | (bit_cast::<369, 6>(
                    self.tbl_data
                        .val()
                        .get_bits::<6>(self.k_t_dscp.val().index()),
                ) << 19_u64)
                | (bit_cast::<369, 24>(
                    self.tbl_data
                        .val()
                        .get_bits::<24>(self.k_t_peer.val().index()),
                ) << 25_u64)
                | (bit_cast::<369, 16>(
                    self.tbl_data
                        .val()
                        .get_bits::<16>(self.k_t_fcount.val().index()),
                ) << 49_u64)
                | (bit_cast::<369, 48>(
                    self.tbl_data
                        .val()
                        .get_bits::<48>(self.k_t_mac.val().index()),
                ) << 65_u64)
                | (bit_cast::<369, 128>(self.t_lip.val()) << 113_u64)
                | (bit_cast::<369, 128>(self.t_pip.val()) << 241_u64);
        }
        self.ctab.write_enable.next = self.tbl_write.val();
        self.ctab.write_address.next = self.tbl_index.val();
        self.ctab.write_data.next = self.t_entry.val();
        self.chk.write_enable.next = self.tbl_write.val();
        self.chk.write_address.next = self.tbl_index.val();
        self.chk.write_data.next = bit_cast::<17, 1>(self.t_entry.val().get_bits::<1>(0))
            | (bit_cast::<17, 16>(self.t_entry.val().get_bits::<16>(49)) << 1_u64);
        // Each machine's descriptor register holds still from the cycle after it is loaded,
        // so its connection's entry is on the RAM output from the cycle after that on.
        self.chk.read_address.next = bit_cast::<C, 32>(self.g_conn.val());
        self.c_valid.next = self.chk_q.q.val().get_bit(0);
        self.c_fcount.next = self.chk_q.q.val().get_bits::<16>(1);
        self.ctab.read_address.next = bit_cast::<C, 32>(self.d_conn.val());
        self.e_ipv6.next = self.conn_q.q.val().get_bit(1);
        self.e_vlan.next = self.conn_q.q.val().get_bit(2);
        self.e_tci.next = self.conn_q.q.val().get_bits::<16>(3);
        self.e_dscp.next = self.conn_q.q.val().get_bits::<6>(19);
        self.e_peer.next = self.conn_q.q.val().get_bits::<24>(25);
        self.e_mac.next = self.conn_q.q.val().get_bits::<48>(65);
        self.e_lip.next = self.conn_q.q.val().get_bits::<128>(113);
        self.e_pip.next = self.conn_q.q.val().get_bits::<128>(241);

        // ---- Job records: 0 fetch fault | 1 refused | 2..10 reason | 10 read issued | 11 CM |
        // 12 Write | 13 immediate | 14..20 transport header length.
        self.n_bad.next = self.nj.q.val().get_bit(0);
        self.n_refuse.next = self.nj.q.val().get_bit(1);
        self.n_reason.next = self.nj.q.val().get_bits::<8>(2);
        self.b_read.next = self.job.q.val().get_bit(10);
        self.b_is_cm.next = self.job.q.val().get_bit(11);
        self.b_is_write.next = self.job.q.val().get_bit(12);
        self.b_has_imm.next = self.job.q.val().get_bit(13);
        self.b_thlen.next = self.job.q.val().get_bits::<6>(14);
        self.b_beats.next = bit_cast::<PTR_BITS, 32>((self.d_plen.val() + 7_u64) >> 3_u64);

        // ---- Fetcher: the next batch, from registers into registers (`pf_n`, `pf_addr`), so
        // that the 32-bit differences do not reach the read request in the same cycle. A
        // batch ends at the tail, at the ring's wrap, at the store's free slots and at
        // `MAX_BATCH`; after a faulted batch, one descriptor per read (`single`).
        self.want.next = self.ring_enable.q.val()
            & (self.ring_log_size.q.val() != 0_u64)
            & (self.head.q.val() != self.ring_tail.q.val());
        self.mask.next = !(self.k_ones.val() << self.ring_log_size.q.val());
        self.desc_addr.next = self.ring_base.q.val()
            + (bit_cast::<64, 32>(self.fetch.q.val() & self.mask.val()) << self.k_desc_shift.val());
        self.pf_addr.d.next = self.desc_addr.val();
        self.occ.next =
            self.fetch.q.val().get_bits::<IDX_BITS>(0) - self.head.q.val().get_bits::<IDX_BITS>(0);
        self.s_rem.next = self.k_slots.val() - self.occ.val();
        self.t_rem_q.d.next = self.ring_tail.q.val() - self.fetch.q.val();
        self.pf_armed.d.next = self.pf_arm.q.val();
        self.pf_armed2.d.next = self.pf_armed.q.val();
        // Slots after `fetch` before the ring wraps: the batch may take one more than that, so a
        // 3-bit increment (below 8 left) stands in for a 32-bit one.
        self.w_last.next = !self.fetch.q.val() & self.mask.val();
        self.c_t.next = self.k_batch.val();
        if (self.t_rem_q.q.val() >> 3_u64) == 0_u64 {
            self.c_t.next = self.t_rem_q.q.val().get_bits::<4>(0);
        }
        self.c_w.next = self.k_batch.val();
        if (self.w_last.val() >> 3_u64) == 0_u64 {
            self.c_w.next = bit_cast::<4, 3>(self.w_last.val().get_bits::<3>(0)) + 1_u64;
        }
        self.n_min.next = self.c_t.val();
        if self.c_w.val() < self.n_min.val() {
            self.n_min.next = self.c_w.val();
        }
        if (self.single.q.val() != 0_u64) & (self.n_min.val() != 0_u64) {
            self.n_min.next = 1.into();
        }
        // A whole batch waits for room in the store and in the lookahead: fewer, larger reads.
        self.ahead.next =
            self.k_ahead.val() - (self.fetch.q.val().get_bits::<IDX_BITS>(0) - self.lf.q.val());
        self.n_pre.d.next = self.n_min.val();
        self.s_rem_q.d.next = self.s_rem.val();
        self.ahead_q.d.next = self.ahead.val();
        self.pf_n.d.next = self.n_pre.q.val();
        if (self.s_rem_q.q.val() < bit_cast::<IDX_BITS, 4>(self.n_pre.q.val()))
            | (self.ahead_q.q.val() < bit_cast::<IDX_BITS, 4>(self.n_pre.q.val()))
            | (self.ring_log_size.q.val() == 0_u64)
        {
            self.pf_n.d.next = 0.into();
        }

        // ---- The read channel: the front end's read goes first; the fetcher's when the
        // front end has none. Every read needs a tag entry; a CM or payload read also a fault
        // bit, and a payload read room for all its beats in the ring buffer.
        self.tq_n.next = self.tq_wr.q.val() - self.tq_rd.q.val();
        self.f_can.next = (self.fstate.q.val() == FState::Issue)
            & !self.tq_full.q.val()
            & !self.rc_full.q.val()
            & !self.ring_reset.q.val()
            & !self.rst.q.val();
        if self.is_cm.q.val() {
            self.f_can.next = self.f_can.val() & !self.cm_busy.q.val();
        } else {
            self.f_can.next = self.f_can.val() & self.room_ok.q.val();
        }
        self.pf_go.next = self.pf_arm.q.val()
            & self.pf_armed.q.val()
            & self.pf_armed2.q.val()
            & (self.pf_n.q.val() != 0_u64)
            & self.ring_enable.q.val()
            & !self.tq_full.q.val()
            & !self.f_can.val()
            & !self.ring_reset.q.val()
            & !self.rst.q.val();
        if self.f_can.val() {
            self.rd_req_valid.next = true;
            self.rd_req_addr.next = self.req_addr.q.val();
            self.rd_req_len.next = self.req_len.q.val();
        }
        if self.pf_go.val() {
            self.rd_req_valid.next = true;
        }
        self.m_grant.next = self.f_can.val() & self.rd_req_ready.val();
        self.pf_grant.next = self.pf_go.val() & self.rd_req_ready.val();
        self.tq_w.next = self.tq_wr.q.val().get_bits::<TAG_BITS>(0);
        if self.m_grant.val() | self.pf_grant.val() {
            self.tq_wr.d.next = self.tq_wr.q.val() + 1_u64;
            self.tq_desc.d.next = self.tq_desc.q.val() & !(self.k_bit.val() << self.tq_w.val());
            if self.pf_grant.val() {
                self.tq_desc.d.next = self.tq_desc.q.val() | (self.k_bit.val() << self.tq_w.val());
            }
            self.tq_cm.d.next = self.tq_cm.q.val() & !(self.k_bit.val() << self.tq_w.val());
            if self.m_grant.val() & self.is_cm.q.val() {
                self.tq_cm.d.next = self.tq_cm.q.val() | (self.k_bit.val() << self.tq_w.val());
            }
        }
        self.pf_arm.d.next = !self.pf_grant.val() & !self.ring_reset.q.val() & !self.rst.q.val();
        if self.pf_grant.val() {
            self.fetch.d.next = self.fetch.q.val() + bit_cast::<32, 4>(self.pf_n.q.val());
            if self.single.q.val() != 0_u64 {
                self.single.d.next = self.single.q.val() - 1_u64;
            }
        }

        // ---- Read data, routed by the oldest tag. Dropped: everything while `drain` reads
        // of an old ring remain, and descriptor reads issued after a faulted batch.
        self.tq_idx.next = self.tq_rd.q.val().get_bits::<TAG_BITS>(0);
        self.k_is_desc.next = self.old_desc.q.val();
        self.k_is_cm.next = self.old_cm.q.val();
        self.r_end.next = self.rd_tvalid.val() & self.rd_tlast.val();
        self.r_drop.next = self.draining.q.val()
            | (self.k_is_desc.val() & self.dropping.q.val())
            | self.ring_reset.q.val()
            | self.rst.q.val();
        self.r_desc.next = self.rd_tvalid.val() & !self.r_drop.val() & self.k_is_desc.val();
        self.r_pay.next =
            self.rd_tvalid.val() & !self.r_drop.val() & !self.k_is_desc.val() & !self.k_is_cm.val();
        self.r_cm.next = self.rd_tvalid.val() & !self.r_drop.val() & self.k_is_cm.val();
        // Descriptor beats: the batch lands at the slots from `fetched` on.
        self.store_addr.next =
            (bit_cast::<STORE_BITS, SLOT_BITS>(self.fetched.q.val().get_bits::<SLOT_BITS>(0))
                << 3_u64)
                + bit_cast::<STORE_BITS, 6>(self.dbeat.q.val());
        self.fault_w.next = bit_cast::<65, 64>(self.rd_tdata.val());
        if self.rd_tlast.val() & self.rd_terror.val() {
            self.fault_w.next = self.fault_w.val() | self.k_fault.val();
        }
        self.dstore_f.write_address.next = self.store_addr.val();
        self.dstore_f.write_data.next = self.fault_w.val();
        self.dstore_f.write_enable.next = self.r_desc.val();
        self.dstore_b.write_address.next = self.store_addr.val();
        self.dstore_b.write_data.next = self.rd_tdata.val();
        self.dstore_b.write_enable.next = self.r_desc.val();
        self.n_got.next = bit_cast::<4, 3>(self.dbeat.q.val().get_bits::<3>(3)) + 1_u64;
        self.rewind.next = false;
        if self.r_desc.val() {
            self.dbeat.d.next = self.dbeat.q.val() + 1_u64;
            if self.rd_tlast.val() {
                self.dbeat.d.next = 0.into();
                if self.rd_terror.val() & (self.n_got.val() != 1_u64) {
                    // A batch faulted: which of its slots did is unknown, so each is read
                    // again alone (a single read's fault is the descriptor's).
                    self.rewind.next = true;
                } else {
                    self.fetched.d.next =
                        self.fetched.q.val() + bit_cast::<32, 4>(self.n_got.val());
                }
            }
        }
        self.desc_out_next.next = self.desc_out.q.val();
        if self.pf_grant.val() {
            self.desc_out_next.next = self.desc_out_next.val() + 1_u64;
        }
        if self.r_end.val() & self.k_is_desc.val() {
            self.desc_out_next.next = self.desc_out_next.val() - 1_u64;
        }
        self.desc_out.d.next = self.desc_out_next.val();
        // The oldest tag's bits next cycle: the next tag's when this read ends, else this
        // one's; in either case the bits a grant gives that tag now, if it is the one
        // granted (a tag is granted only when it is free, so only an empty queue's).
        self.tq_idx_next.next = self.tq_idx.val() + 1_u64;
        self.grant_old.next = (self.m_grant.val() | self.pf_grant.val())
            & ((self.r_end.val() & (self.tq_w.val() == self.tq_idx_next.val()))
                | (!self.r_end.val() & (self.tq_w.val() == self.tq_idx.val())));
        if self.r_end.val() {
            self.old_desc.d.next = self.tq_desc.q.val().get_bit(self.tq_idx_next.val().index());
            self.old_cm.d.next = self.tq_cm.q.val().get_bit(self.tq_idx_next.val().index());
        }
        if self.grant_old.val() {
            self.old_desc.d.next = self.pf_grant.val();
            self.old_cm.d.next = self.m_grant.val() & self.is_cm.q.val();
        }
        if self.r_end.val() {
            self.tq_rd.d.next = self.tq_rd.q.val() + 1_u64;
            if self.draining.q.val() {
                self.drain.d.next = self.drain.q.val() - 1_u64;
            } else if self.k_is_desc.val() & self.dropping.q.val() {
                self.desc_drop.d.next = self.desc_drop.q.val() - 1_u64;
            }
        }
        if self.rewind.val() {
            // Every descriptor read still outstanding was issued after the faulted one.
            self.fetch.d.next = self.fetched.q.val();
            self.single.d.next = self.n_got.val();
            self.desc_drop.d.next = self.desc_out_next.val();
            self.pf_arm.d.next = false;
        }
        if self.r_pay.val() {
            self.pbuf.write_enable.next = true;
            self.pwr.d.next = self.pwr.q.val() + 1_u64;
        }
        if self.r_cm.val() {
            self.cm.d.next =
                (self.cm.q.val() >> 64_u64) | (bit_cast::<256, 64>(self.rd_tdata.val()) << 192_u64);
        }
        self.rc_w.next = self.rc_done.q.val().get_bits::<TAG_BITS>(0);
        if (self.r_pay.val() | self.r_cm.val()) & self.rd_tlast.val() {
            self.rc_done.d.next = self.rc_done.q.val() + 1_u64;
            self.rerr.d.next = self.rerr.q.val() & !(self.k_bit.val() << self.rc_w.val());
            if self.rd_terror.val() {
                self.rerr.d.next = self.rerr.q.val() | (self.k_bit.val() << self.rc_w.val());
            }
        }

        // ---- Front end's loader: the eight beats of descriptor `lf` into `nf` (the store's
        // read is registered: the address runs one beat ahead of the data).
        self.dstore_f.read_address.next =
            (bit_cast::<STORE_BITS, SLOT_BITS>(self.lf.q.val().get_bits::<SLOT_BITS>(0)) << 3_u64)
                | bit_cast::<STORE_BITS, 3>(self.la_cnt.q.val().get_bits::<3>(0));
        if !self.la_run.q.val()
            & !self.nf_valid.q.val()
            & (self.lf.q.val() != self.fetched.q.val().get_bits::<IDX_BITS>(0))
        {
            self.la_run.d.next = true;
            self.la_cnt.d.next = 1.into();
        }
        if self.la_run.q.val() {
            self.nf.d.next = (self.nf.q.val() >> 64_u64)
                | (bit_cast::<512, 64>(self.dstore_f.read_data.val().get_bits::<64>(0)) << 448_u64);
            self.la_cnt.d.next = self.la_cnt.q.val() + 1_u64;
            if self.la_cnt.q.val() == 8_u64 {
                self.la_run.d.next = false;
                self.la_cnt.d.next = 0.into();
                self.nf_valid.d.next = true;
                self.nf_bad.d.next = self.dstore_f.read_data.val().get_bit(64);
                self.lf.d.next = self.lf.q.val() + 1_u64;
            }
        }

        // ---- Front end: checks in the model's order, then the read.
        self.rc_inc.next = false;
        match self.fstate.q.val() {
            FState::Idle => {
                if self.nf_valid.q.val() & self.ring_enable.q.val() & !self.ring_reset.q.val() {
                    self.fdesc.d.next = self.nf.q.val();
                    self.end33.d.next = bit_cast::<33, 32>(
                        self.nf
                            .q
                            .val()
                            .get_bits::<32>(self.k_d_offset.val().index()),
                    ) + bit_cast::<33, 32>(
                        self.nf.q.val().get_bits::<32>(self.k_d_plen.val().index()),
                    );
                    self.plen_big.d.next =
                        self.nf.q.val().get_bits::<32>(self.k_d_plen.val().index())
                            > self.k_max_plen.val();
                    self.nf_valid.d.next = false;
                    if self.nf_bad.q.val() {
                        self.jw_en.next = true;
                        self.jw_bad.next = true;
                    } else {
                        self.fstate.d.next = FState::Decode;
                    }
                }
            }
            FState::Decode => {
                self.op_ok.d.next = self.k_opcode_ok.val().get_bit(self.g_opcode.val().index());
                self.is_cm.d.next = self.g_opcode.val() == self.k_op_cm.val();
                self.thlen.d.next = self.k_cm_thlen.val();
                self.is_write.d.next = false;
                self.has_imm.d.next = false;
                for j in 0_usize..4 {
                    if self.g_opcode.val() == self.k_data_op[j].val() {
                        self.thlen.d.next = self.k_data_thlen[j].val();
                        self.is_write.d.next = self.k_data_write[j].val();
                        self.has_imm.d.next = self.k_data_imm[j].val();
                    }
                }
                self.conn_ok.d.next =
                    bit_cast::<33, 32>(self.g_conn.val()) < self.k_conn_limit.val();
                self.len_bad.d.next = self.plen_big.q.val()
                    | (self.end33.q.val() > bit_cast::<33, 32>(self.g_msg_len.val()));
                self.plen_is_cm.d.next = self.g_plen.val() == self.k_cm_len.val();
                self.plen_zero.d.next = self.g_plen.val() == 0_u64;
                // The whole byte counts: port 8 or 255 is as bad as any port past the count.
                self.port_bad.d.next = self.g_port.val() >= self.k_ports.val();
                self.fstate.d.next = FState::Conn;
            }
            FState::Conn => {
                self.chk_q.d.next = self.chk.read_data.val();
                self.fstate.d.next = FState::Check;
            }
            FState::Check => {
                self.req_addr.d.next = self.g_laddr.val();
                self.fbeats.d.next = bit_cast::<PTR_BITS, 32>((self.g_plen.val() + 7_u64) >> 3_u64);
                self.fstate.d.next = FState::Idle;
                if !self.op_ok.q.val() {
                    self.jw_en.next = true;
                    self.jw_refuse.next = true;
                    self.jw_reason.next = self.k_r_bad_opcode.val();
                } else if !self.conn_ok.q.val() | !self.c_valid.val() {
                    self.jw_en.next = true;
                    self.jw_refuse.next = true;
                    self.jw_reason.next = self.k_r_unknown.val();
                } else if self.port_bad.q.val() {
                    self.jw_en.next = true;
                    self.jw_refuse.next = true;
                    self.jw_reason.next = self.k_r_bad_port.val();
                } else if self.is_cm.q.val() {
                    if !self.plen_is_cm.q.val() {
                        self.jw_en.next = true;
                        self.jw_refuse.next = true;
                        self.jw_reason.next = self.k_r_bad_length.val();
                    } else {
                        self.req_len.d.next = bit_cast::<16, 32>(self.k_cm_len.val());
                        self.fstate.d.next = FState::Issue;
                    }
                } else if self.g_flow.val() >= self.c_fcount.val() {
                    self.jw_en.next = true;
                    self.jw_refuse.next = true;
                    self.jw_reason.next = self.k_r_bad_flow.val();
                } else if self.len_bad.q.val() {
                    self.jw_en.next = true;
                    self.jw_refuse.next = true;
                    self.jw_reason.next = self.k_r_bad_length.val();
                } else if self.plen_zero.q.val() {
                    // Nothing to read: a zero-length DMA read has no beat to carry `tlast`.
                    self.jw_en.next = true;
                } else {
                    self.req_len.d.next = bit_cast::<16, 32>(self.g_plen.val());
                    self.fstate.d.next = FState::Issue;
                }
            }
            FState::Issue => {
                if self.m_grant.val() {
                    self.jw_en.next = true;
                    self.jw_read.next = true;
                    self.rc_inc.next = true;
                    self.rc_iss.d.next = self.rc_iss.q.val() + 1_u64;
                    if self.is_cm.q.val() {
                        self.cm_busy.d.next = true;
                    } else {
                        self.pres.d.next = self.pres.q.val() + self.fbeats.q.val();
                    }
                    self.fstate.d.next = FState::Idle;
                }
            }
            _ => {
                self.fstate.d.next = FState::Idle;
            }
        }
        self.jw.next = (bit_cast::<JOB_BITS, 8>(self.jw_reason.val()) << 2_u64)
            | (bit_cast::<JOB_BITS, 6>(self.thlen.q.val()) << 14_u64);
        if self.jw_bad.val() {
            self.jw.next = self.jw.val() | self.k_job_bit.val();
        }
        if self.jw_refuse.val() {
            self.jw.next = self.jw.val() | (self.k_job_bit.val() << 1_u64);
        }
        if self.jw_read.val() {
            self.jw.next = self.jw.val() | (self.k_job_bit.val() << 10_u64);
        }
        if self.is_cm.q.val() {
            self.jw.next = self.jw.val() | (self.k_job_bit.val() << 11_u64);
        }
        if self.is_write.q.val() {
            self.jw.next = self.jw.val() | (self.k_job_bit.val() << 12_u64);
        }
        if self.has_imm.q.val() {
            self.jw.next = self.jw.val() | (self.k_job_bit.val() << 13_u64);
        }
        self.jobs.write_address.next = self.f.q.val().get_bits::<SLOT_BITS>(0);
        self.jobs.write_data.next = self.jw.val();
        self.jobs.write_enable.next = self.jw_en.val();
        if self.jw_en.val() {
            self.f.d.next = self.f.q.val() + 1_u64;
        }

        // ---- Back end's loader: descriptor `lb` into `nb` and its job record into `nj`.
        self.dstore_b.read_address.next =
            (bit_cast::<STORE_BITS, SLOT_BITS>(self.lb.q.val().get_bits::<SLOT_BITS>(0)) << 3_u64)
                | bit_cast::<STORE_BITS, 3>(self.lb_cnt.q.val().get_bits::<3>(0));
        self.jobs.read_address.next = self.lb.q.val().get_bits::<SLOT_BITS>(0);
        if !self.lb_run.q.val() & !self.nb_valid.q.val() & (self.lb.q.val() != self.f.q.val()) {
            self.lb_run.d.next = true;
            self.lb_cnt.d.next = 1.into();
        }
        if self.lb_run.q.val() {
            self.nb.d.next = (self.nb.q.val() >> 64_u64)
                | (bit_cast::<512, 64>(self.dstore_b.read_data.val()) << 448_u64);
            self.lb_cnt.d.next = self.lb_cnt.q.val() + 1_u64;
            if self.lb_cnt.q.val() == 8_u64 {
                self.lb_run.d.next = false;
                self.lb_cnt.d.next = 0.into();
                self.nb_valid.d.next = true;
                self.nj.d.next = self.jobs.read_data.val();
                self.lb.d.next = self.lb.q.val() + 1_u64;
            }
        }

        // ---- Checks and headers (back end).
        self.cm_kind.next = self
            .cm
            .q
            .val()
            .get_bits::<8>(self.k_cm_kind_at.val().index());
        self.ssn_out.next = self.d_ssn.val();
        if self.b_is_write.val() {
            self.ssn_out.next = 0.into();
        }
        // The headers and the event are built only in the state that loads them (each is
        // read there alone): for synthesis the zeros elsewhere are never selected, and the
        // simulator skips their wide shifts in every other cycle.
        self.th_data.next = 0.into();
        if self.state.q.val() == State::Conn {
            self.th_data.next = (bit_cast::<384, 16>(self.d_flow.val()) << self.k_th_flow.val())
                | (bit_cast::<384, 16>(self.d_tag.val()) << self.k_th_tag.val())
                | (bit_cast::<384, 32>(self.d_msn.val()) << self.k_th_msn.val())
                | (bit_cast::<384, 32>(self.ssn_out.val()) << self.k_th_ssn.val())
                | (bit_cast::<384, 32>(self.d_offset.val()) << self.k_th_offset.val())
                | (bit_cast::<384, 32>(self.d_msg_len.val()) << self.k_th_msg_len.val())
                | (bit_cast::<384, 32>(self.now_ns.val().get_bits::<32>(0)) << self.k_th_ts.val());
            if self.b_is_write.val() {
                self.th_data.next = self.th_data.val()
                    | (bit_cast::<384, 64>(self.d_va.val()) << self.k_th_va.val())
                    | (bit_cast::<384, 32>(self.d_rkey.val()) << self.k_th_rkey.val());
            }
            // The immediate's place is fixed by the opcode (Send or Write with immediate):
            // a constant shift for each, selected by the Write flag, instead of a shift by
            // a position from the job record.
            for j in 0_usize..4 {
                if self.b_has_imm.val()
                    & self.k_data_imm[j].val()
                    & (self.b_is_write.val() == self.k_data_write[j].val())
                {
                    self.th_data.next = self.th_data.val()
                        | (bit_cast::<384, 32>(self.d_imm.val()) << self.k_data_imm_at[j].val());
                }
            }
        }
        // The CM message goes out as read (its bytes are the header, first byte on top).
        self.th_cm.next = 0.into();
        self.cm_byte.next = 0.into();
        if self.state.q.val() == State::Build {
            for i in 0_usize..32 {
                self.cm_byte.next = self.cm.q.val().get_bits::<8>(8 * i);
                self.th_cm.next = self.th_cm.val()
                    | (bit_cast::<384, 8>(self.cm_byte.val()) << (376 - 8 * i).to_bits::<9>());
            }
        }
        self.ev.next = 0.into();
        if self.state.q.val() == State::Refuse {
            self.ev.next = self.k_ev_base.val()
                | (bit_cast::<512, 8>(self.reason.q.val()) << self.k_e_reason.val())
                | (bit_cast::<512, 16>(self.d_flow.val()) << self.k_e_flow.val())
                | (bit_cast::<512, 32>(self.d_conn.val()) << self.k_e_conn.val())
                | (bit_cast::<512, 32>(self.d_fsn.val()) << self.k_e_fsn.val())
                | (bit_cast::<512, 8>(self.d_opcode.val()) << self.k_e_opcode.val());
        }
        self.ev_data.next = self.ev.val();

        // ---- Payload streamer: the buffer's read address runs one cycle ahead, so that its
        // registered output is the beat at `rptr` (first-word fall-through).
        // A request goes to the builder while the payload before it is still streaming (the
        // builder overlaps frames); its payload then waits in `pend` and streams right after.
        self.b_idle.next = !self.j_valid.q.val() & !self.streaming.q.val() & !self.pend.q.val();
        self.h_ok.next = !self.j_valid.q.val() & !self.pend.q.val();
        self.b_take.next = self.streaming.q.val() & self.pay_slice.in_ready.val();
        self.s_end.next = self.b_take.val() & (self.left.q.val() == 1_u64);
        self.rptr_next.next = self.rptr.q.val();
        if self.b_take.val() {
            self.rptr_next.next = self.rptr.q.val() + 1_u64;
            self.left.d.next = self.left.q.val() - 1_u64;
            if self.s_end.val() {
                self.streaming.d.next = false;
            }
        }
        if self.s_end.val() & self.pend.q.val() {
            self.pend.d.next = false;
            self.streaming.d.next = true;
            self.left.d.next = self.pend_beats.q.val();
            self.rptr_next.next = self.pend_start.q.val();
        }
        if self.j_valid.q.val() & self.f_ready.val() {
            self.j_valid.d.next = false;
            if self.j_beats.q.val() != 0_u64 {
                if self.streaming.q.val() & !self.s_end.val() {
                    self.pend.d.next = true;
                    self.pend_start.d.next = self.j_start.q.val();
                    self.pend_beats.d.next = self.j_beats.q.val();
                } else {
                    self.streaming.d.next = true;
                    self.left.d.next = self.j_beats.q.val();
                    self.rptr_next.next = self.j_start.q.val();
                }
            }
        }
        self.rptr.d.next = self.rptr_next.val();
        self.pbuf.read_address.next = self.rptr_next.val().get_bits::<BUF_BITS>(0);
        // The oldest beat still to stream: the streaming frame's, else the handed-over
        // request's, else the end of what was handed over. It only moves forward, so its
        // registered (late) value leaves the front end less room, never too much.
        self.low_q.d.next = self.hend.q.val();
        if self.j_valid.q.val() {
            self.low_q.d.next = self.j_start.q.val();
        }
        if self.streaming.q.val() {
            self.low_q.d.next = self.rptr.q.val();
        }

        // ---- Back end: one descriptor at a time, in ring order.
        self.rc_r.next = self.rc_used.q.val().get_bits::<TAG_BITS>(0);
        self.rc_err.d.next = self.rerr.q.val().get_bit(self.rc_r.val().index());
        self.rc_avail.d.next = self.rc_done.q.val() != self.rc_used.q.val();
        match self.state.q.val() {
            State::Idle => {
                if self.nb_valid.q.val() & !self.ring_reset.q.val() {
                    self.desc.d.next = self.nb.q.val();
                    self.job.d.next = self.nj.q.val();
                    self.nb_valid.d.next = false;
                    if self.n_bad.val() {
                        self.state.d.next = State::BadDesc;
                    } else if self.n_refuse.val() {
                        self.reason.d.next = self.n_reason.val();
                        self.state.d.next = State::Refuse;
                    } else {
                        self.state.d.next = State::Addr;
                    }
                }
            }
            State::Addr => {
                self.state.d.next = State::Conn;
            }
            State::Conn => {
                // A data frame's transport header (a CM frame's is built after its read).
                self.conn_q.d.next = self.ctab.read_data.val();
                self.th.d.next = self.th_data.val();
                self.state.d.next = State::Wait;
            }
            State::Wait => {
                if !self.b_read.val() {
                    self.state.d.next = State::Handoff;
                } else if self.rc_avail.q.val() & !self.ring_reset.q.val() {
                    self.rc_used.d.next = self.rc_used.q.val() + 1_u64;
                    if self.rc_err.q.val() {
                        self.reason.d.next = self.k_r_dma.val();
                        self.state.d.next = State::Refuse;
                        if self.b_is_cm.val() {
                            self.cm_busy.d.next = false;
                        } else {
                            // The faulted payload's beats are skipped.
                            self.hend.d.next = self.hend.q.val() + self.b_beats.val();
                        }
                    } else if self.b_is_cm.val() {
                        self.state.d.next = State::CmCheck;
                    } else {
                        self.state.d.next = State::Handoff;
                    }
                }
            }
            State::CmCheck => {
                if self.k_cm_kind_ok.val().get_bit(self.cm_kind.val().index()) {
                    self.state.d.next = State::Build;
                } else {
                    self.reason.d.next = self.k_r_bad_length.val();
                    self.cm_busy.d.next = false;
                    self.state.d.next = State::Refuse;
                }
            }
            State::Build => {
                self.th.d.next = self.th_cm.val();
                self.cm_busy.d.next = false;
                self.state.d.next = State::Handoff;
            }
            State::Handoff => {
                if self.h_ok.val() & !self.ring_reset.q.val() {
                    self.j_valid.d.next = true;
                    self.j_dst_mac.d.next = self.e_mac.val();
                    self.j_src_mac.d.next = self.src_mac.val();
                    self.j_vlan.d.next = self.e_vlan.val();
                    self.j_tci.d.next = self.e_tci.val();
                    self.j_ipv6.d.next = self.e_ipv6.val();
                    self.j_sip.d.next = self.e_lip.val();
                    self.j_dip.d.next = self.e_pip.val();
                    self.j_dscp.d.next = self.e_dscp.val();
                    self.j_sport.d.next = self.d_entropy.val();
                    self.j_dport.d.next = self.udp_port.val();
                    self.j_opcode.d.next = self.d_opcode.val();
                    self.j_se.d.next = (self.d_flags.val() & self.k_flag_se.val()) != 0_u64;
                    self.j_dest.d.next = self.e_peer.val();
                    self.j_ack.d.next = (self.d_flags.val() & self.k_flag_ack.val()) != 0_u64;
                    self.j_psn.d.next =
                        bit_cast::<24, 32>(self.d_fsn.val() & self.k_fsn_mask.val());
                    self.j_th.d.next = self.th.q.val();
                    self.j_thlen.d.next = self.b_thlen.val();
                    self.j_port.d.next = self.d_port.val().get_bits::<PORT_BITS>(0);
                    self.j_start.d.next = self.hend.q.val();
                    if self.b_is_cm.val() {
                        self.j_plen.d.next = 0.into();
                        self.j_beats.d.next = 0.into();
                    } else {
                        self.j_plen.d.next = bit_cast::<14, 32>(self.d_plen.val());
                        self.j_beats.d.next = self.b_beats.val();
                        self.hend.d.next = self.hend.q.val() + self.b_beats.val();
                    }
                    self.cnt_valid.next = true;
                    self.cnt_index.next = self.k_c_packets.val();
                    self.cnt_amount.next = 1.into();
                    // The byte count follows in the next cycle, beside `Idle`.
                    self.cb_pend.d.next = true;
                    self.cb_amount.d.next = 0.into();
                    if !self.b_is_cm.val() {
                        self.cb_amount.d.next = bit_cast::<16, 32>(self.d_plen.val());
                    }
                    self.state.d.next = State::Idle;
                }
            }
            State::Refuse => {
                self.ev_valid.next = true;
                if self.ev_ready.val() {
                    self.cnt_valid.next = true;
                    self.cnt_index.next = self.k_c_bad_desc.val();
                    self.cnt_amount.next = 1.into();
                    self.inc.next = true;
                    self.state.d.next = State::Idle;
                }
            }
            State::BadDesc => {
                self.cnt_valid.next = true;
                self.cnt_index.next = self.k_c_bad_desc.val();
                self.cnt_amount.next = 1.into();
                self.inc.next = true;
                self.state.d.next = State::Idle;
            }
            _ => {
                self.state.d.next = State::Idle;
            }
        }

        // ---- A sent frame's byte count, one cycle after its packet count (the next state,
        // `Idle`, makes no counter operation); the descriptor is then done.
        if self.cb_pend.q.val() {
            self.cnt_valid.next = true;
            self.cnt_index.next = self.k_c_bytes.val();
            self.cnt_amount.next = self.cb_amount.q.val();
            self.inc.next = true;
        }

        // ---- Head: advanced when a descriptor is retired, unless a ring reset came meanwhile
        // (the descriptor then belonged to the old ring).
        if self.inc.val() {
            if !self.stale.q.val() {
                self.head.d.next = self.head.q.val() + 1_u64;
            }
            self.stale.d.next = false;
        }
        if self.ring_reset.q.val() | self.rst.q.val() {
            // Whatever is not retired belongs to the old ring: the reads in flight are
            // drained (all tags but one that ends now), the store, the jobs, the payload not
            // handed over and the CM register are given up.
            self.drain.d.next = self.tq_n.val();
            if self.r_end.val() {
                self.drain.d.next = self.tq_n.val() - 1_u64;
            }
            self.fetch.d.next = 0.into();
            self.fetched.d.next = 0.into();
            self.single.d.next = 0.into();
            self.desc_drop.d.next = 0.into();
            self.dbeat.d.next = 0.into();
            self.lf.d.next = 0.into();
            self.la_run.d.next = false;
            self.la_cnt.d.next = 0.into();
            self.nf_valid.d.next = false;
            self.fstate.d.next = FState::Idle;
            self.f.d.next = 0.into();
            self.cm_busy.d.next = false;
            self.lb.d.next = 0.into();
            self.lb_run.d.next = false;
            self.lb_cnt.d.next = 0.into();
            self.nb_valid.d.next = false;
            self.rc_iss.d.next = self.rc_done.q.val();
            self.rc_used.d.next = self.rc_done.q.val();
            self.pres.d.next = self.hend.q.val();
            self.pwr.d.next = self.hend.q.val();
            // An event being offered is finished (`stale`); the rest stops.
            if (self.state.q.val() != State::Refuse) & (self.state.q.val() != State::BadDesc) {
                self.state.d.next = State::Idle;
            }
        }
        if self.ring_reset.q.val() {
            self.head.d.next = 0.into();
            self.stale.d.next = (self.state.q.val() == State::Refuse) & !self.inc.val();
        }
        if self.rst.q.val() {
            self.state.d.next = State::Idle;
            self.head.d.next = 0.into();
            self.stale.d.next = false;
            self.j_valid.d.next = false;
            self.streaming.d.next = false;
            self.pend.d.next = false;
            self.rptr.d.next = 0.into();
            self.hend.d.next = 0.into();
            self.pres.d.next = 0.into();
            self.pwr.d.next = 0.into();
            self.low_q.d.next = 0.into();
        }
        self.busy.next = (self.state.q.val() != State::Idle)
            | (self.fstate.q.val() != FState::Idle)
            | self.la_run.q.val()
            | self.lb_run.q.val()
            | self.nb_valid.q.val()
            | (self.lb.q.val() != self.f.q.val())
            | !self.b_idle.val()
            | self.want.val()
            | (self.tq_n.val() != 0_u64)
            | self.pay_slice.holding.val()
            | self.cb_pend.q.val();
        // Full: the pointers (one bit wider than the 32 entries) differ in the top bit only.
        // Both compares are made for the writer's two possible next values, from flip-flops,
        // and the grant picks one; an entry freed now is seen a cycle late, which only delays
        // the next read by a cycle when every entry is in use. A ring reset leaves the read
        // tags to drain but makes the fault bits' pointers meet, so `rc_full` clears.
        if self.m_grant.val() | self.pf_grant.val() {
            self.tq_full.d.next =
                ((self.tq_wr.q.val() + 1_u64) ^ self.tq_rd.q.val()) == self.k_tags.val();
        } else {
            self.tq_full.d.next = (self.tq_wr.q.val() ^ self.tq_rd.q.val()) == self.k_tags.val();
        }
        if self.rc_inc.val() {
            self.rc_full.d.next =
                ((self.rc_iss.q.val() + 1_u64) ^ self.rc_used.q.val()) == self.k_tags.val();
        } else {
            self.rc_full.d.next = (self.rc_iss.q.val() ^ self.rc_used.q.val()) == self.k_tags.val();
        }
        if self.ring_reset.q.val() | self.rst.q.val() {
            self.rc_full.d.next = false;
        }
        // Room for `fbeats` more beats beside those reserved and not yet streamed. `pres` only
        // moves with a payload read's grant (or a reset), after which the front end passes
        // through Idle, Decode and Conn before Check loads `fbeats`, so `free`, a cycle late,
        // has seen it; `low_q` only moves forward, so a late value leaves less room, never
        // more. The reserved beats never exceed the ring, so `free` does not wrap.
        self.used.next = self.pres.q.val() - self.low_q.q.val();
        self.free.d.next = self.k_buf_beats.val() - self.used.val();
        self.room_ok.d.next = self.fbeats.d.val() <= self.free.q.val();
        self.draining.d.next = self.drain.d.val() != 0_u64;
        // `desc_drop != 0` case by case from flip-flops, as the count's next value is chosen
        // above (a decrement, a rewind, a reset), not from that value's compare.
        self.dropping.d.next = self.dropping.q.val();
        if self.r_end.val() & !self.draining.q.val() & self.k_is_desc.val() & self.dropping.q.val()
        {
            self.dropping.d.next = self.desc_drop.q.val() != 1_u64;
        }
        if self.rewind.val() {
            // A rewind ends a descriptor read, so `desc_out_next` is `desc_out` less one, plus
            // one if a descriptor read is granted now.
            if self.pf_grant.val() {
                self.dropping.d.next = self.desc_out.q.val() != 0_u64;
            } else {
                self.dropping.d.next = self.desc_out.q.val() != 1_u64;
            }
        }
        if self.ring_reset.q.val() | self.rst.q.val() {
            self.dropping.d.next = false;
        }
    }
}

/// Test and integration wrapper: a [`TxEngine`] with [`TX_PATH_CONN_BITS`] feeding a
/// [`TxFrameBuilder`]. Exposes the engine's register, table, DMA, event and counter ports and
/// the builder's frame output; `busy` also covers a frame still leaving the builder.
#[derive(LogicBlock, Default)]
pub struct TxPath {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset (hold for at least two cycles: the engine registers it).
    pub reset: Signal<In, Bit>,
    /// `CONTROL_TX_ENABLE`.
    pub enable: Signal<In, Bit>,
    /// `TXQ_BASE`.
    pub txq_base: Signal<In, Bits<64>>,
    /// `TXQ_LOG_SIZE`.
    pub txq_log_size: Signal<In, Bits<5>>,
    /// `TXQ_TAIL`.
    pub txq_tail: Signal<In, Bits<32>>,
    /// Pulse: head := 0.
    pub txq_reset: Signal<In, Bit>,
    /// Nanosecond clock.
    pub now_ns: Signal<In, Bits<64>>,
    /// Our MAC.
    pub src_mac: Signal<In, Bits<48>>,
    /// UDP destination port.
    pub udp_port: Signal<In, Bits<16>>,
    /// `TXQ_HEAD`.
    pub txq_head: Signal<Out, Bits<32>>,
    /// Pulse: write a connection entry.
    pub tbl_write: Signal<In, Bit>,
    /// Connection id.
    pub tbl_index: Signal<In, Bits<TX_PATH_CONN_BITS>>,
    /// Table words.
    pub tbl_data: Signal<In, Bits<512>>,
    /// DMA read request valid.
    pub rd_req_valid: Signal<Out, Bit>,
    /// DMA read request taken.
    pub rd_req_ready: Signal<In, Bit>,
    /// DMA read address.
    pub rd_req_addr: Signal<Out, Bits<64>>,
    /// DMA read length.
    pub rd_req_len: Signal<Out, Bits<16>>,
    /// DMA read data.
    pub rd_tdata: Signal<In, Bits<64>>,
    /// DMA read data valid.
    pub rd_tvalid: Signal<In, Bit>,
    /// DMA read last beat.
    pub rd_tlast: Signal<In, Bit>,
    /// DMA read fault (with the last beat).
    pub rd_terror: Signal<In, Bit>,
    /// DMA read data taken.
    pub rd_tready: Signal<Out, Bit>,
    /// Event valid.
    pub ev_valid: Signal<Out, Bit>,
    /// Event bytes.
    pub ev_data: Signal<Out, Bits<512>>,
    /// Event taken.
    pub ev_ready: Signal<In, Bit>,
    /// Counter increment valid.
    pub cnt_valid: Signal<Out, Bit>,
    /// Counter index.
    pub cnt_index: Signal<Out, Bits<6>>,
    /// Counter increment.
    pub cnt_amount: Signal<Out, Bits<16>>,
    /// The engine or the builder is working.
    pub busy: Signal<Out, Bit>,
    /// Frame out.
    pub m_tdata: Signal<Out, Bits<64>>,
    /// Byte enables.
    pub m_tkeep: Signal<Out, Bits<8>>,
    /// Beat valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Last beat.
    pub m_tlast: Signal<Out, Bit>,
    /// The frame's MAC port (the descriptor's), on every beat.
    pub m_tdest: Signal<Out, Bits<PORT_BITS>>,
    /// The MAC takes the beat.
    pub m_tready: Signal<In, Bit>,
    engine: TxEngine<TX_PATH_CONN_BITS>,
    builder: TxFrameBuilder,
}

impl Logic for TxPath {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, engine, builder);
        self.engine.reset.next = self.reset.val();
        self.builder.reset.next = self.reset.val();
        self.engine.enable.next = self.enable.val();
        self.engine.txq_base.next = self.txq_base.val();
        self.engine.txq_log_size.next = self.txq_log_size.val();
        self.engine.txq_tail.next = self.txq_tail.val();
        self.engine.txq_reset.next = self.txq_reset.val();
        self.engine.now_ns.next = self.now_ns.val();
        self.engine.src_mac.next = self.src_mac.val();
        self.engine.udp_port.next = self.udp_port.val();
        self.txq_head.next = self.engine.txq_head.val();
        self.engine.tbl_write.next = self.tbl_write.val();
        self.engine.tbl_index.next = self.tbl_index.val();
        self.engine.tbl_data.next = self.tbl_data.val();
        self.rd_req_valid.next = self.engine.rd_req_valid.val();
        self.engine.rd_req_ready.next = self.rd_req_ready.val();
        self.rd_req_addr.next = self.engine.rd_req_addr.val();
        self.rd_req_len.next = self.engine.rd_req_len.val();
        self.engine.rd_tdata.next = self.rd_tdata.val();
        self.engine.rd_tvalid.next = self.rd_tvalid.val();
        self.engine.rd_tlast.next = self.rd_tlast.val();
        self.engine.rd_terror.next = self.rd_terror.val();
        self.rd_tready.next = self.engine.rd_tready.val();
        self.ev_valid.next = self.engine.ev_valid.val();
        self.ev_data.next = self.engine.ev_data.val();
        self.engine.ev_ready.next = self.ev_ready.val();
        self.cnt_valid.next = self.engine.cnt_valid.val();
        self.cnt_index.next = self.engine.cnt_index.val();
        self.cnt_amount.next = self.engine.cnt_amount.val();

        self.builder.req_valid.next = self.engine.f_valid.val();
        self.engine.f_ready.next = self.builder.req_ready.val();
        self.builder.req_dst_mac.next = self.engine.f_dst_mac.val();
        self.builder.req_src_mac.next = self.engine.f_src_mac.val();
        self.builder.req_vlan.next = self.engine.f_vlan.val();
        self.builder.req_vlan_tci.next = self.engine.f_vlan_tci.val();
        self.builder.req_ipv6.next = self.engine.f_ipv6.val();
        self.builder.req_src_ip.next = self.engine.f_src_ip.val();
        self.builder.req_dst_ip.next = self.engine.f_dst_ip.val();
        self.builder.req_dscp.next = self.engine.f_dscp.val();
        self.builder.req_ecn.next = self.engine.f_ecn.val();
        self.builder.req_src_port.next = self.engine.f_src_port.val();
        self.builder.req_dst_port.next = self.engine.f_dst_port.val();
        self.builder.req_opcode.next = self.engine.f_opcode.val();
        self.builder.req_solicited.next = self.engine.f_solicited.val();
        self.builder.req_dest_conn.next = self.engine.f_dest_conn.val();
        self.builder.req_ack_req.next = self.engine.f_ack_req.val();
        self.builder.req_psn.next = self.engine.f_psn.val();
        self.builder.req_th.next = self.engine.f_th.val();
        self.builder.req_th_len.next = self.engine.f_th_len.val();
        self.builder.req_payload_len.next = self.engine.f_payload_len.val();
        self.builder.req_port.next = self.engine.f_port.val();
        self.builder.s_pay_tdata.next = self.engine.p_tdata.val();
        self.builder.s_pay_tvalid.next = self.engine.p_tvalid.val();
        self.engine.p_tready.next = self.builder.s_pay_tready.val();

        self.m_tdata.next = self.builder.m_tdata.val();
        self.m_tkeep.next = self.builder.m_tkeep.val();
        self.m_tvalid.next = self.builder.m_tvalid.val();
        self.m_tlast.next = self.builder.m_tlast.val();
        self.m_tdest.next = self.builder.m_tdest.val();
        self.builder.m_tready.next = self.m_tready.val();
        // The builder is ready for a request only when idle, i.e. once its last frame is out.
        self.busy.next = self.engine.busy.val() | self.builder.busy.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probed_layouts_match_the_documented_ones() {
        // The descriptor and event tables in `ferroce_proto::hsi` document these offsets.
        let e = TxEngine::<8>::default();
        assert_eq!(e.k_d_opcode.val(), bits::<10>(0));
        assert_eq!(e.k_d_conn.val(), bits::<10>(32));
        assert_eq!(e.k_d_laddr.val(), bits::<10>(320));
        assert_eq!(e.k_d_rkey.val(), bits::<10>(448));
        assert_eq!(e.k_e_reason.val(), bits::<9>(8));
        assert_eq!(e.k_e_fsn.val(), bits::<9>(64));
        assert_eq!(e.k_e_opcode.val(), bits::<9>(96));
        assert_eq!(e.k_t_fcount.val(), bits::<9>(80));
        assert_eq!(e.k_t_lip[0].val(), bits::<9>(192));
        assert_eq!(e.k_t_pip[3].val(), bits::<9>(416));
        for b in 0..8 {
            let kind = ferroce_proto::hsi::event::kind::TX_ERROR;
            assert_eq!(e.k_ev_base.val().get_bit(b), kind >> b & 1 == 1);
        }
    }

    #[test]
    fn generates_checked_verilog() {
        let v = crate::verilog::generate(TxPath::default());
        assert!(v.contains("module top"));
    }
}
