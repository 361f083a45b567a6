//! Transmit engine: the TX descriptor ring in host memory becomes frame requests for the
//! [`TxFrameBuilder`], exactly as [`ferroce_proto::model::FastPath::service_rings`] (TX half)
//! and `FastPath::transmit` do it.
//!
//! One descriptor at a time, as a sequential machine, while a prefetcher reads the next ones:
//! 1. the prefetcher reads the 64-byte descriptor at `txq_base + 64 * (fetch mod size)` for
//!    every slot below the tail, up to two ahead of the one being worked on (one collecting its
//!    beats, one waiting); a faulted read is marked, and the machine then counts
//!    `TxBadDescriptor` and advances head, with no event. A ring reset drops the prefetched
//!    descriptors and drains a read still in flight;
//! 2. decode it and read the connection from the engine's own copy of the connection table
//!    (block RAM, written through `tbl_*` alongside the register block's copy);
//! 3. check in the model's order: opcode, connection, then for CM the length, the 32-byte DMA
//!    read of the message and its kind; for data the flow and the lengths;
//! 4. read the payload by DMA into a store-and-forward buffer, so that a faulted read
//!    (`DmaError`) never lets part of a frame out;
//! 5. hand the request to the builder; the payload streams from the buffer behind the one
//!    before it.
//!
//! A refused descriptor produces a TxError event (the 64 bytes of `Event::TxError::to_bytes`)
//! and a `TxBadDescriptor` increment; a sent one `TxPackets` and `TxBytes` increments.
//!
//! The read channel carries the prefetcher's and the machine's reads, at most one of each
//! outstanding; data returns in request order, and the machine's reads go first when both
//! want the channel. The payload buffer has two halves of `MAX_PAYLOAD_LEN` bytes: while one
//! frame's payload streams from one half, the next descriptor's payload is read into the
//! other, once no stream still needs it. With the overlapping frame builder, back-to-back
//! descriptors leave at the line rate: a 94-byte frame every 12 cycles, a 158-byte one every
//! 20 (`cargo xtask bench-rtl`, with the harness's one-cycle DMA latency). A real DMA engine's
//! latency of hundreds of cycles needs more reads outstanding (a deeper prefetch): the
//! channel already carries tagged-by-order reads from two sources, so that is a depth change.
//! The engine alone reached about 168 MHz on an ECP5-85 (speed grade 8) before the prefetcher.

//! The descriptor, event and table layouts have no offset constants in `ferroce-proto`: each
//! field's position is found by probing the specification's own encoders (`to_bytes`,
//! `to_words`) in the constructor, which also asserts that every field is a contiguous
//! little-endian slice, so a layout change there moves the hardware with it or fails loudly.

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

/// Address bits of the payload buffer in 64-bit beats: two halves of `MAX_PAYLOAD_LEN` bytes.
const BUF_BITS: usize = 11;

// The widths below are fixed by the specification's sizes.
const _: () = {
    assert!(
        MAX_PAYLOAD_LEN as usize * 2 <= 8 << BUF_BITS,
        "payload buffer too small"
    );
    assert!(Counter::COUNT <= 64, "counter index is 6 bits");
    assert!(TX_DESCRIPTOR_LEN.is_power_of_two() && TX_DESCRIPTOR_LEN * 8 == 512);
};

#[derive(LogicState, Debug, Copy, Clone, PartialEq)]
enum State {
    Idle,
    Decode,
    Conn,
    Check,
    CmReq,
    CmData,
    CmCheck,
    PayReq,
    PayData,
    Build,
    Handoff,
    Refuse,
    BadDesc,
}

/// The transmit engine with `2^C` connection table entries.
#[derive(LogicBlock)]
pub struct TxEngine<const C: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset: head := 0, engine idle (table contents are kept).
    pub reset: Signal<In, Bit>,
    /// `CONTROL_TX_ENABLE`.
    pub enable: Signal<In, Bit>,
    /// `TXQ_BASE`.
    pub txq_base: Signal<In, Bits<64>>,
    /// `TXQ_LOG_SIZE` (0: no ring).
    pub txq_log_size: Signal<In, Bits<5>>,
    /// `TXQ_TAIL`.
    pub txq_tail: Signal<In, Bits<32>>,
    /// Pulse: head := 0 (a write of `TXQ_LOG_SIZE`).
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
    k_desc_len: Constant<Bits<16>>,
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
    k_c_bad_desc: Constant<Bits<6>>,
    k_c_packets: Constant<Bits<6>>,
    k_c_bytes: Constant<Bits<6>>,

    // Connection table copy (internal entry layout: see `update`) and payload buffer.
    ctab: RAM<Bits<369>, C>,
    pbuf: RAM<Bits<64>, BUF_BITS>,

    // Descriptor machine.
    state: DFF<State>,
    head: DFF<Bits<32>>,
    stale: DFF<Bit>,
    desc: DFF<Bits<512>>,
    // Descriptor prefetch (see `update`): `fetch` is the next slot to read, `pf` collects the
    // beats of the one read in flight and `hold` keeps a finished descriptor for `Idle`.
    fetch: DFF<Bits<32>>,
    pf_addr: DFF<Bits<64>>,
    pf_arm: DFF<Bit>,
    pf_busy: DFF<Bit>,
    pf_stale: DFF<Bit>,
    pf_first: DFF<Bit>,
    pf: DFF<Bits<512>>,
    pf_done: DFF<Bit>,
    pf_err: DFF<Bit>,
    hold: DFF<Bits<512>>,
    hold_valid: DFF<Bit>,
    hold_err: DFF<Bit>,
    req_addr: DFF<Bits<64>>,
    req_len: DFF<Bits<16>>,
    op_ok: DFF<Bit>,
    is_cm: DFF<Bit>,
    is_write: DFF<Bit>,
    has_imm: DFF<Bit>,
    thlen: DFF<Bits<6>>,
    imm_at: DFF<Bits<9>>,
    conn_ok: DFF<Bit>,
    len_bad: DFF<Bit>,
    conn_q: DFF<Bits<369>>,
    cm: DFF<Bits<256>>,
    reason: DFF<Bits<8>>,
    wh: DFF<Bits<1>>,
    wcnt: DFF<Bits<10>>,
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
    j_beats: DFF<Bits<11>>,
    j_half: DFF<Bits<1>>,
    streaming: DFF<Bit>,
    left: DFF<Bits<11>>,
    rptr: DFF<Bits<BUF_BITS>>,
    cur_half: DFF<Bits<1>>,
    pend: DFF<Bit>,
    pend_half: DFF<Bits<1>>,
    pend_beats: DFF<Bits<11>>,
    cb_pend: DFF<Bit>,
    cb_amount: DFF<Bits<16>>,

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
    d_laddr: Signal<Local, Bits<64>>,
    d_va: Signal<Local, Bits<64>>,
    d_rkey: Signal<Local, Bits<32>>,
    e_valid: Signal<Local, Bit>,
    e_ipv6: Signal<Local, Bit>,
    e_vlan: Signal<Local, Bit>,
    e_tci: Signal<Local, Bits<16>>,
    e_dscp: Signal<Local, Bits<6>>,
    e_peer: Signal<Local, Bits<24>>,
    e_fcount: Signal<Local, Bits<16>>,
    e_mac: Signal<Local, Bits<48>>,
    e_lip: Signal<Local, Bits<128>>,
    e_pip: Signal<Local, Bits<128>>,
    t_word: Signal<Local, Bits<32>>,
    t_lip: Signal<Local, Bits<128>>,
    t_pip: Signal<Local, Bits<128>>,
    t_entry: Signal<Local, Bits<369>>,
    mask: Signal<Local, Bits<32>>,
    desc_addr: Signal<Local, Bits<64>>,
    end33: Signal<Local, Bits<33>>,
    th_data: Signal<Local, Bits<384>>,
    th_cm: Signal<Local, Bits<384>>,
    cm_byte: Signal<Local, Bits<8>>,
    cm_kind: Signal<Local, Bits<8>>,
    ssn_out: Signal<Local, Bits<32>>,
    ev: Signal<Local, Bits<512>>,
    want: Signal<Local, Bit>,
    pf_want: Signal<Local, Bit>,
    pf_grant: Signal<Local, Bit>,
    m_req: Signal<Local, Bit>,
    m_out: Signal<Local, Bit>,
    to_pf: Signal<Local, Bit>,
    inc: Signal<Local, Bit>,
    b_take: Signal<Local, Bit>,
    b_idle: Signal<Local, Bit>,
    s_end: Signal<Local, Bit>,
    h_ok: Signal<Local, Bit>,
    wh_free: Signal<Local, Bit>,
    rptr_next: Signal<Local, Bits<BUF_BITS>>,
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

const TX_ERROR_REASONS: [TxErrorReason; 5] = [
    TxErrorReason::BadOpcode,
    TxErrorReason::UnknownConnection,
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
            k_desc_len: k(TX_DESCRIPTOR_LEN as u64),
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
            k_c_bad_desc: k(Counter::TxBadDescriptor as u64),
            k_c_packets: k(Counter::TxPackets as u64),
            k_c_bytes: k(Counter::TxBytes as u64),

            ctab: Default::default(),
            pbuf: Default::default(),
            state: Default::default(),
            head: Default::default(),
            stale: Default::default(),
            desc: Default::default(),
            fetch: Default::default(),
            pf_addr: Default::default(),
            pf_arm: Default::default(),
            pf_busy: Default::default(),
            pf_stale: Default::default(),
            pf_first: Default::default(),
            pf: Default::default(),
            pf_done: Default::default(),
            pf_err: Default::default(),
            hold: Default::default(),
            hold_valid: Default::default(),
            hold_err: Default::default(),
            req_addr: Default::default(),
            req_len: Default::default(),
            op_ok: Default::default(),
            is_cm: Default::default(),
            is_write: Default::default(),
            has_imm: Default::default(),
            thlen: Default::default(),
            imm_at: Default::default(),
            conn_ok: Default::default(),
            len_bad: Default::default(),
            conn_q: Default::default(),
            cm: Default::default(),
            reason: Default::default(),
            wh: Default::default(),
            wcnt: Default::default(),
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
            j_beats: Default::default(),
            j_half: Default::default(),
            streaming: Default::default(),
            left: Default::default(),
            rptr: Default::default(),
            cur_half: Default::default(),
            pend: Default::default(),
            pend_half: Default::default(),
            pend_beats: Default::default(),
            cb_pend: Default::default(),
            cb_amount: Default::default(),
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
            d_laddr: Default::default(),
            d_va: Default::default(),
            d_rkey: Default::default(),
            e_valid: Default::default(),
            e_ipv6: Default::default(),
            e_vlan: Default::default(),
            e_tci: Default::default(),
            e_dscp: Default::default(),
            e_peer: Default::default(),
            e_fcount: Default::default(),
            e_mac: Default::default(),
            e_lip: Default::default(),
            e_pip: Default::default(),
            t_word: Default::default(),
            t_lip: Default::default(),
            t_pip: Default::default(),
            t_entry: Default::default(),
            mask: Default::default(),
            desc_addr: Default::default(),
            end33: Default::default(),
            th_data: Default::default(),
            th_cm: Default::default(),
            cm_byte: Default::default(),
            cm_kind: Default::default(),
            ssn_out: Default::default(),
            ev: Default::default(),
            want: Default::default(),
            pf_want: Default::default(),
            pf_grant: Default::default(),
            m_req: Default::default(),
            m_out: Default::default(),
            to_pf: Default::default(),
            inc: Default::default(),
            b_take: Default::default(),
            b_idle: Default::default(),
            s_end: Default::default(),
            h_ok: Default::default(),
            wh_free: Default::default(),
            rptr_next: Default::default(),
        }
    }
}

impl<const C: usize> Logic for TxEngine<C> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, head, stale, desc, fetch, pf_addr, pf_arm, pf_busy, pf_stale,
            pf_first, pf, pf_done, pf_err, hold, hold_valid, hold_err, req_addr, req_len, op_ok,
            is_cm, is_write, has_imm, thlen, imm_at, conn_ok, len_bad, conn_q, cm, reason, wh,
            wcnt, th, j_valid, j_dst_mac, j_src_mac, j_vlan, j_tci, j_ipv6, j_sip, j_dip, j_dscp,
            j_sport, j_dport, j_opcode, j_se, j_dest, j_ack, j_psn, j_th, j_thlen, j_plen, j_beats,
            j_half, streaming, left, rptr, cur_half, pend, pend_half, pend_beats, cb_pend,
            cb_amount
        );
        self.ctab.read_clock.next = self.clock.val();
        self.ctab.write_clock.next = self.clock.val();
        self.pbuf.read_clock.next = self.clock.val();
        self.pbuf.write_clock.next = self.clock.val();

        // ---- Output defaults.
        self.rd_req_valid.next = false;
        self.rd_req_addr.next = self.req_addr.q.val();
        self.rd_req_len.next = self.req_len.q.val();
        self.rd_tready.next = false;
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
        self.p_tvalid.next = self.streaming.q.val();
        self.p_tdata.next = self.pbuf.read_data.val();
        self.pbuf.write_enable.next = false;
        self.pbuf.write_address.next = (bit_cast::<BUF_BITS, 1>(self.wh.q.val()) << 10_u64)
            | bit_cast::<BUF_BITS, 10>(self.wcnt.q.val());
        self.pbuf.write_data.next = self.rd_tdata.val();
        self.inc.next = false;
        self.cb_pend.d.next = false;

        // ---- Descriptor fields (positions probed from `TxDescriptor::to_bytes`).
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
        self.d_laddr.next = self
            .desc
            .q
            .val()
            .get_bits::<64>(self.k_d_laddr.val().index());
        self.d_va.next = self.desc.q.val().get_bits::<64>(self.k_d_va.val().index());
        self.d_rkey.next = self
            .desc
            .q
            .val()
            .get_bits::<32>(self.k_d_rkey.val().index());

        // ---- Connection table: table words in, the internal entry layout stored:
        // 0 valid | 1 ipv6 | 2 vlan | 3..19 TCI | 19..25 DSCP | 25..49 peer connection |
        // 49..65 flow count | 65..113 peer MAC | 113..241 local IP | 241..369 peer IP.
        self.t_lip.next = 0.into();
        self.t_pip.next = 0.into();
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
        self.ctab.write_enable.next = self.tbl_write.val();
        self.ctab.write_address.next = self.tbl_index.val();
        self.ctab.write_data.next = self.t_entry.val();
        // The descriptor register holds still from `Decode` on, so the entry of its
        // connection is on the RAM output from `Conn` on.
        self.ctab.read_address.next = bit_cast::<C, 32>(self.d_conn.val());
        self.e_valid.next = self.conn_q.q.val().get_bit(0);
        self.e_ipv6.next = self.conn_q.q.val().get_bit(1);
        self.e_vlan.next = self.conn_q.q.val().get_bit(2);
        self.e_tci.next = self.conn_q.q.val().get_bits::<16>(3);
        self.e_dscp.next = self.conn_q.q.val().get_bits::<6>(19);
        self.e_peer.next = self.conn_q.q.val().get_bits::<24>(25);
        self.e_fcount.next = self.conn_q.q.val().get_bits::<16>(49);
        self.e_mac.next = self.conn_q.q.val().get_bits::<48>(65);
        self.e_lip.next = self.conn_q.q.val().get_bits::<128>(113);
        self.e_pip.next = self.conn_q.q.val().get_bits::<128>(241);

        // ---- Ring: the slot address of the next descriptor to fetch (registered: `pf_arm`
        // keeps the prefetcher still for the cycle after a ring reset, while it settles).
        self.want.next = self.enable.val()
            & (self.txq_log_size.val() != 0_u64)
            & (self.head.q.val() != self.txq_tail.val());
        self.mask.next = !(self.k_ones.val() << self.txq_log_size.val());
        self.desc_addr.next = self.txq_base.val()
            + (bit_cast::<64, 32>(self.fetch.q.val() & self.mask.val()) << self.k_desc_shift.val());
        self.pf_addr.d.next = self.desc_addr.val();
        self.pf_arm.d.next = !self.txq_reset.val() & !self.reset.val();

        // ---- Checks and headers.
        self.end33.next =
            bit_cast::<33, 32>(self.d_offset.val()) + bit_cast::<33, 32>(self.d_plen.val());
        self.cm_kind.next = self
            .cm
            .q
            .val()
            .get_bits::<8>(self.k_cm_kind_at.val().index());
        self.ssn_out.next = self.d_ssn.val();
        if self.is_write.q.val() {
            self.ssn_out.next = 0.into();
        }
        self.th_data.next = (bit_cast::<384, 16>(self.d_flow.val()) << self.k_th_flow.val())
            | (bit_cast::<384, 16>(self.d_tag.val()) << self.k_th_tag.val())
            | (bit_cast::<384, 32>(self.d_msn.val()) << self.k_th_msn.val())
            | (bit_cast::<384, 32>(self.ssn_out.val()) << self.k_th_ssn.val())
            | (bit_cast::<384, 32>(self.d_offset.val()) << self.k_th_offset.val())
            | (bit_cast::<384, 32>(self.d_msg_len.val()) << self.k_th_msg_len.val())
            | (bit_cast::<384, 32>(self.now_ns.val().get_bits::<32>(0)) << self.k_th_ts.val());
        if self.is_write.q.val() {
            self.th_data.next = self.th_data.val()
                | (bit_cast::<384, 64>(self.d_va.val()) << self.k_th_va.val())
                | (bit_cast::<384, 32>(self.d_rkey.val()) << self.k_th_rkey.val());
        }
        if self.has_imm.q.val() {
            self.th_data.next =
                self.th_data.val() | (bit_cast::<384, 32>(self.d_imm.val()) << self.imm_at.q.val());
        }
        // The CM message goes out as read (its bytes are the header, first byte on top).
        self.th_cm.next = 0.into();
        for i in 0_usize..32 {
            self.cm_byte.next = self.cm.q.val().get_bits::<8>(8 * i);
            self.th_cm.next = self.th_cm.val()
                | (bit_cast::<384, 8>(self.cm_byte.val()) << (376 - 8 * i).to_bits::<9>());
        }
        self.ev.next = self.k_ev_base.val()
            | (bit_cast::<512, 8>(self.reason.q.val()) << self.k_e_reason.val())
            | (bit_cast::<512, 16>(self.d_flow.val()) << self.k_e_flow.val())
            | (bit_cast::<512, 32>(self.d_conn.val()) << self.k_e_conn.val())
            | (bit_cast::<512, 32>(self.d_fsn.val()) << self.k_e_fsn.val())
            | (bit_cast::<512, 8>(self.d_opcode.val()) << self.k_e_opcode.val());
        self.ev_data.next = self.ev.val();

        // ---- Payload streamer: the buffer's read address runs one cycle ahead, so that its
        // registered output is the beat at `rptr` (first-word fall-through).
        // A request goes to the builder while the payload before it is still streaming (the
        // builder overlaps frames); its payload then waits in `pend` and streams right after.
        self.b_idle.next = !self.j_valid.q.val() & !self.streaming.q.val() & !self.pend.q.val();
        self.h_ok.next = !self.j_valid.q.val() & !self.pend.q.val();
        self.b_take.next = self.streaming.q.val() & self.p_tready.val();
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
            self.cur_half.d.next = self.pend_half.q.val();
            self.rptr_next.next = bit_cast::<BUF_BITS, 1>(self.pend_half.q.val()) << 10_u64;
        }
        if self.j_valid.q.val() & self.f_ready.val() {
            self.j_valid.d.next = false;
            if self.j_beats.q.val() != 0_u64 {
                if self.streaming.q.val() & !self.s_end.val() {
                    self.pend.d.next = true;
                    self.pend_half.d.next = self.j_half.q.val();
                    self.pend_beats.d.next = self.j_beats.q.val();
                } else {
                    self.streaming.d.next = true;
                    self.left.d.next = self.j_beats.q.val();
                    self.cur_half.d.next = self.j_half.q.val();
                    self.rptr_next.next = bit_cast::<BUF_BITS, 1>(self.j_half.q.val()) << 10_u64;
                }
            }
        }
        // The payload read goes into half `wh` only once no stream is still to read it.
        self.wh_free.next = !(self.streaming.q.val() & (self.cur_half.q.val() == self.wh.q.val()))
            & !(self.pend.q.val() & (self.pend_half.q.val() == self.wh.q.val()))
            & !(self.j_valid.q.val()
                & (self.j_half.q.val() == self.wh.q.val())
                & (self.j_beats.q.val() != 0_u64));
        self.rptr.d.next = self.rptr_next.val();
        self.pbuf.read_address.next = self.rptr_next.val();

        // ---- The descriptor machine.
        match self.state.q.val() {
            State::Idle => {
                if self.hold_valid.q.val() & self.enable.val() & !self.txq_reset.val() {
                    self.desc.d.next = self.hold.q.val();
                    self.hold_valid.d.next = false;
                    if self.hold_err.q.val() {
                        self.state.d.next = State::BadDesc;
                    } else {
                        self.state.d.next = State::Decode;
                    }
                }
            }
            State::Decode => {
                self.op_ok.d.next = self.k_opcode_ok.val().get_bit(self.d_opcode.val().index());
                self.is_cm.d.next = self.d_opcode.val() == self.k_op_cm.val();
                self.thlen.d.next = self.k_cm_thlen.val();
                self.is_write.d.next = false;
                self.has_imm.d.next = false;
                self.imm_at.d.next = 0.into();
                for j in 0_usize..4 {
                    if self.d_opcode.val() == self.k_data_op[j].val() {
                        self.thlen.d.next = self.k_data_thlen[j].val();
                        self.is_write.d.next = self.k_data_write[j].val();
                        self.has_imm.d.next = self.k_data_imm[j].val();
                        self.imm_at.d.next = self.k_data_imm_at[j].val();
                    }
                }
                self.conn_ok.d.next =
                    bit_cast::<33, 32>(self.d_conn.val()) < self.k_conn_limit.val();
                self.len_bad.d.next = (self.d_plen.val() > self.k_max_plen.val())
                    | (self.end33.val() > bit_cast::<33, 32>(self.d_msg_len.val()));
                self.state.d.next = State::Conn;
            }
            State::Conn => {
                self.conn_q.d.next = self.ctab.read_data.val();
                self.state.d.next = State::Check;
            }
            State::Check => {
                // A data frame's transport header (a CM frame's is built after its read).
                self.th.d.next = self.th_data.val();
                self.req_addr.d.next = self.d_laddr.val();
                self.wcnt.d.next = 0.into();
                if !self.op_ok.q.val() {
                    self.reason.d.next = self.k_r_bad_opcode.val();
                    self.state.d.next = State::Refuse;
                } else if !self.conn_ok.q.val() | !self.e_valid.val() {
                    self.reason.d.next = self.k_r_unknown.val();
                    self.state.d.next = State::Refuse;
                } else if self.is_cm.q.val() {
                    if self.d_plen.val() != self.k_cm_len.val() {
                        self.reason.d.next = self.k_r_bad_length.val();
                        self.state.d.next = State::Refuse;
                    } else {
                        self.req_len.d.next = bit_cast::<16, 32>(self.k_cm_len.val());
                        self.state.d.next = State::CmReq;
                    }
                } else if self.d_flow.val() >= self.e_fcount.val() {
                    self.reason.d.next = self.k_r_bad_flow.val();
                    self.state.d.next = State::Refuse;
                } else if self.len_bad.q.val() {
                    self.reason.d.next = self.k_r_bad_length.val();
                    self.state.d.next = State::Refuse;
                } else if self.d_plen.val() == 0_u64 {
                    // Nothing to read: a zero-length DMA read has no beat to carry `tlast`.
                    self.state.d.next = State::Handoff;
                } else {
                    self.req_len.d.next = bit_cast::<16, 32>(self.d_plen.val());
                    self.state.d.next = State::PayReq;
                }
            }
            State::CmReq => {
                self.rd_req_valid.next = true;
                if self.rd_req_ready.val() {
                    self.state.d.next = State::CmData;
                }
            }
            State::CmData => {
                self.rd_tready.next = true;
                if self.rd_tvalid.val() & !self.to_pf.val() {
                    self.cm.d.next = (self.cm.q.val() >> 64_u64)
                        | (bit_cast::<256, 64>(self.rd_tdata.val()) << 192_u64);
                    if self.rd_tlast.val() {
                        if self.rd_terror.val() {
                            self.reason.d.next = self.k_r_dma.val();
                            self.state.d.next = State::Refuse;
                        } else {
                            self.state.d.next = State::CmCheck;
                        }
                    }
                }
            }
            State::CmCheck => {
                if self.k_cm_kind_ok.val().get_bit(self.cm_kind.val().index()) {
                    self.state.d.next = State::Build;
                } else {
                    self.reason.d.next = self.k_r_bad_length.val();
                    self.state.d.next = State::Refuse;
                }
            }
            State::PayReq => {
                self.rd_req_valid.next = self.wh_free.val();
                if self.wh_free.val() & self.rd_req_ready.val() {
                    self.state.d.next = State::PayData;
                }
            }
            State::PayData => {
                // Into the buffer half the streamer is not reading.
                self.rd_tready.next = true;
                if self.rd_tvalid.val() & !self.to_pf.val() {
                    self.pbuf.write_enable.next = true;
                    self.wcnt.d.next = self.wcnt.q.val() + 1_u64;
                    if self.rd_tlast.val() {
                        if self.rd_terror.val() {
                            self.reason.d.next = self.k_r_dma.val();
                            self.state.d.next = State::Refuse;
                        } else {
                            self.state.d.next = State::Handoff;
                        }
                    }
                }
            }
            State::Build => {
                self.th.d.next = self.th_cm.val();
                self.state.d.next = State::Handoff;
            }
            State::Handoff => {
                if self.h_ok.val() {
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
                    self.j_thlen.d.next = self.thlen.q.val();
                    if self.is_cm.q.val() {
                        self.j_plen.d.next = 0.into();
                        self.j_beats.d.next = 0.into();
                    } else {
                        self.j_plen.d.next = bit_cast::<14, 32>(self.d_plen.val());
                        self.j_beats.d.next =
                            bit_cast::<11, 32>((self.d_plen.val() + 7_u64) >> 3_u64);
                    }
                    self.j_half.d.next = self.wh.q.val();
                    self.wh.d.next = !self.wh.q.val();
                    self.cnt_valid.next = true;
                    self.cnt_index.next = self.k_c_packets.val();
                    self.cnt_amount.next = 1.into();
                    // The byte count follows in the next cycle, beside `Idle`.
                    self.cb_pend.d.next = true;
                    self.cb_amount.d.next = 0.into();
                    if !self.is_cm.q.val() {
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

        // ---- Descriptor prefetch. While the machine above works on one descriptor, the next
        // is read into `pf` and then waits in `hold`, so that back-to-back descriptors do not
        // pay for their own fetch. The read channel is shared: the machine's CM and payload
        // reads go first, and at most one read of each is outstanding. Data comes back in
        // request order, so `pf_first` (the prefetch read is the older one) says whose beats
        // arrive. A prefetch read starts only when `pf` is empty, so its beats always have a
        // place and never block a payload read behind them.
        self.m_req.next = (self.state.q.val() == State::CmReq)
            | ((self.state.q.val() == State::PayReq) & self.wh_free.val());
        self.m_out.next =
            (self.state.q.val() == State::CmData) | (self.state.q.val() == State::PayData);
        self.to_pf.next = self.pf_busy.q.val() & (self.pf_first.q.val() | !self.m_out.val());
        self.pf_want.next = self.enable.val()
            & (self.txq_log_size.val() != 0_u64)
            & (self.fetch.q.val() != self.txq_tail.val())
            & !self.pf_busy.q.val()
            & !self.pf_done.q.val()
            & self.pf_arm.q.val()
            & !self.txq_reset.val();
        self.pf_grant.next = self.pf_want.val() & !self.m_req.val() & self.rd_req_ready.val();
        if self.pf_want.val() & !self.m_req.val() {
            self.rd_req_valid.next = true;
            self.rd_req_addr.next = self.pf_addr.q.val();
            self.rd_req_len.next = self.k_desc_len.val();
        }
        if self.pf_grant.val() {
            self.pf_busy.d.next = true;
            self.pf_first.d.next = !self.m_out.val();
            self.fetch.d.next = self.fetch.q.val() + 1_u64;
        }
        if self.m_req.val() & self.rd_req_ready.val() {
            self.pf_first.d.next = true;
        }
        if self.to_pf.val() {
            self.rd_tready.next = true;
            if self.rd_tvalid.val() {
                self.pf.d.next = (self.pf.q.val() >> 64_u64)
                    | (bit_cast::<512, 64>(self.rd_tdata.val()) << 448_u64);
                if self.rd_tlast.val() {
                    self.pf_busy.d.next = false;
                    self.pf_stale.d.next = false;
                    if !self.pf_stale.q.val() {
                        self.pf_done.d.next = true;
                        self.pf_err.d.next = self.rd_terror.val();
                    }
                }
            }
        }
        if self.pf_done.q.val() & !self.hold_valid.q.val() {
            self.hold.d.next = self.pf.q.val();
            self.hold_err.d.next = self.pf_err.q.val();
            self.hold_valid.d.next = true;
            self.pf_done.d.next = false;
        }

        // ---- Head: advanced when a descriptor is done, unless a ring reset came meanwhile
        // (the descriptor in flight then belongs to the old ring).
        if self.inc.val() {
            if !self.stale.q.val() {
                self.head.d.next = self.head.q.val() + 1_u64;
            }
            self.stale.d.next = false;
        }
        if self.txq_reset.val() | self.reset.val() {
            // Prefetched descriptors belong to the old ring; a read still in flight is
            // drained and dropped.
            self.fetch.d.next = 0.into();
            self.pf_done.d.next = false;
            self.hold_valid.d.next = false;
            self.pf_stale.d.next = self.pf_busy.q.val()
                & !(self.to_pf.val() & self.rd_tvalid.val() & self.rd_tlast.val());
        }
        if self.txq_reset.val() {
            self.head.d.next = 0.into();
            self.stale.d.next = (self.state.q.val() != State::Idle) & !self.inc.val();
        }
        if self.reset.val() {
            self.state.d.next = State::Idle;
            self.head.d.next = 0.into();
            self.stale.d.next = false;
            self.j_valid.d.next = false;
            self.streaming.d.next = false;
            self.pend.d.next = false;
            self.wh.d.next = 0.into();
        }
        self.busy.next = (self.state.q.val() != State::Idle)
            | !self.b_idle.val()
            | self.want.val()
            | self.pf_busy.q.val()
            | self.cb_pend.q.val();
    }
}

/// Test and integration wrapper: a [`TxEngine`] with [`TX_PATH_CONN_BITS`] feeding a
/// [`TxFrameBuilder`]. Exposes the engine's register, table, DMA, event and counter ports and
/// the builder's frame output; `busy` also covers a frame still leaving the builder.
#[derive(LogicBlock, Default)]
pub struct TxPath {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset.
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
        self.builder.s_pay_tdata.next = self.engine.p_tdata.val();
        self.builder.s_pay_tvalid.next = self.engine.p_tvalid.val();
        self.engine.p_tready.next = self.builder.s_pay_tready.val();

        self.m_tdata.next = self.builder.m_tdata.val();
        self.m_tkeep.next = self.builder.m_tkeep.val();
        self.m_tvalid.next = self.builder.m_tvalid.val();
        self.m_tlast.next = self.builder.m_tlast.val();
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
