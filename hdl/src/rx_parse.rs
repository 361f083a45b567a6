//! RX header parser: validates a frame from the MAC's AXI4-Stream and extracts the fields the
//! rest of the fast path needs, in the exact order and with the exact outcome of
//! [`ferroce_proto::wire::parse_frame`].
//!
//! Streaming, one 64-bit beat per cycle, never stalls (`s_tready` is always high):
//!
//! - the first 16 beats (128 bytes: every ferroce header, VLAN and IPv6 included) are kept,
//!   byte-swapped so that big-endian fields are contiguous bit ranges; two shifts then remove
//!   the VLAN tag and the IPv6/IPv4 difference, so every later field sits at a constant offset;
//! - the ICRC runs on the fly over a realigned stream: the 8 bytes of 0xFF that stand for the
//!   masked LRH (folded into the initial state [`CRC_AFTER_LRH`]), then the IP packet from its
//!   first byte, shifted by 6 bytes (untagged) or 2 bytes (tagged) so that every beat is full
//!   except the last; the variant fields are forced to ones at their fixed positions. The CRC
//!   runs over the four ICRC bytes too, so a good frame ends at a constant register value (the
//!   CRC residue) and the ICRC need not be picked out. Each realigned beat is registered before
//!   the CRC step, with the lanes beyond the range zeroed, so the CRC sees only registered
//!   lengths and every step is the full eight-byte one ([`Crc32Full`], the only logic in the
//!   CRC register's loop); one flush beat after `tlast` finishes it;
//! - at the end of the frame every check is evaluated at once and a priority encoder reports
//!   the first that fails, in `parse_frame`'s order.
//!
//! The verdict for a frame is valid (`out_valid` high for one cycle) four cycles after its
//! last beat: the headers are copied aside at the end of the frame, and beside the copy
//! whatever depends on the framing (tagged or not, IPv4 or IPv6) is computed from the capture
//! registers for all four framings at once (the header sum's partial sums, the opcode's
//! lengths and checks, the UDP length check); stage A selects those by framing, removes the
//! VLAN and IPv6 shifts for the fields, finishes the IPv4 header sum and evaluates every
//! length check as a flag; stage B picks the first failing check, from flags only, while the
//! ICRC's last beat goes through the CRC. Frames may follow each other back to back, down to
//! one beat each.
//!
//! Not yet handled: `tuser` (MAC-reported errors) is ignored; the model has no such input yet.

use crate::crc::{Crc32Full, RESIDUE, crc32_update};
use crate::rx_engine::PORT_BITS;
use ferroce_proto::wire::{
    MAX_FRAME_LEN, ParseError, bth, ethernet, icrc, ip,
    transport::{ACK_LEN, CM_LEN, FDH_LEN, IMM_LEN, NAK_LEN, RETH_LEN},
};
use rust_hdl::prelude::*;

/// The CRC register after the 8 bytes of 0xFF that stand for the masked LRH.
pub const CRC_AFTER_LRH: u32 = 0xDEBB_20E3;

/// Bytes of the frame the parser keeps: every header ferroce can carry.
pub const HEADER_BYTES: usize = 128;

/// Width in bits of the transport-header output (the 48 bytes after the BTH).
pub const TH_BITS: usize = 384;

/// The sixteen captured header beats side by side, as the snapshot holds them: beat 0 in the
/// high bits, beat 15 in the low bits, as one 1,024-bit vector. A struct of 64-bit fields so
/// that each beat is stored through a part-select: the same wires as the vector built by
/// shifts, but a simulator copies two words per beat instead of shifting and merging a
/// 1,024-bit temporary for each.
#[derive(Clone, Copy, Debug, Default, PartialEq, LogicStruct)]
struct HeaderBeats {
    b15: Bits<64>,
    b14: Bits<64>,
    b13: Bits<64>,
    b12: Bits<64>,
    b11: Bits<64>,
    b10: Bits<64>,
    b9: Bits<64>,
    b8: Bits<64>,
    b7: Bits<64>,
    b6: Bits<64>,
    b5: Bits<64>,
    b4: Bits<64>,
    b3: Bits<64>,
    b2: Bits<64>,
    b1: Bits<64>,
    b0: Bits<64>,
}

/// The RX parser.
#[derive(LogicBlock)]
pub struct RxParser {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset: drops any frame in progress.
    pub reset: Signal<In, Bit>,
    /// AXI4-Stream data, first byte in bits 7:0.
    pub s_tdata: Signal<In, Bits<64>>,
    /// Byte enables; only the last beat may be partial (lanes from 0).
    pub s_tkeep: Signal<In, Bits<8>>,
    /// Beat valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Last beat of the frame.
    pub s_tlast: Signal<In, Bit>,
    /// AXI4-Stream `tid`: the MAC port (plane) the frame came in on, sampled with its last
    /// beat (AXI4-Stream holds it for the whole packet).
    pub s_tid: Signal<In, Bits<PORT_BITS>>,
    /// Always high: the parser takes one beat per cycle.
    pub s_tready: Signal<Out, Bit>,
    /// The ferroce UDP destination port (register `UDP_PORT`).
    pub udp_port: Signal<In, Bits<16>>,

    /// A verdict is presented this cycle.
    pub out_valid: Signal<Out, Bit>,
    /// 0 = accepted, else [`ParseError::code`].
    pub out_error: Signal<Out, Bits<4>>,
    /// Frame length in bytes (saturating).
    pub out_frame_len: Signal<Out, Bits<16>>,
    /// Tagged with 802.1Q.
    pub out_vlan: Signal<Out, Bit>,
    /// The VLAN TCI.
    pub out_vlan_tci: Signal<Out, Bits<16>>,
    /// Source MAC.
    pub out_src_mac: Signal<Out, Bits<48>>,
    /// IPv6 (else IPv4).
    pub out_ipv6: Signal<Out, Bit>,
    /// Source IP, IPv4-mapped for IPv4.
    pub out_src_ip: Signal<Out, Bits<128>>,
    /// Destination IP, IPv4-mapped for IPv4.
    pub out_dst_ip: Signal<Out, Bits<128>>,
    /// ECN codepoint.
    pub out_ecn: Signal<Out, Bits<2>>,
    /// UDP source port (entropy).
    pub out_src_port: Signal<Out, Bits<16>>,
    /// BTH opcode.
    pub out_opcode: Signal<Out, Bits<8>>,
    /// BTH solicited bit.
    pub out_solicited: Signal<Out, Bit>,
    /// BTH AckReq bit.
    pub out_ack_req: Signal<Out, Bit>,
    /// BTH destination connection.
    pub out_dest_conn: Signal<Out, Bits<24>>,
    /// BTH PSN (the FSN).
    pub out_psn: Signal<Out, Bits<24>>,
    /// The 48 bytes after the BTH, first byte in the top bits (big-endian); bytes beyond the
    /// transport header are undefined.
    pub out_th: Signal<Out, Bits<384>>,
    /// Offset of the payload in the frame.
    pub out_payload_offset: Signal<Out, Bits<16>>,
    /// Payload length.
    pub out_payload_len: Signal<Out, Bits<16>>,
    /// The port the frame came in on (`s_tid`).
    pub out_port: Signal<Out, Bits<PORT_BITS>>,

    // Constants from the specification (one source: ferroce-proto).
    k_crc_lrh: Constant<Bits<32>>,
    /// What the CRC register holds after a good frame's last step over `n` lanes (at `n - 1`).
    k_crc_good: [Constant<Bits<32>>; 8],
    k_vlan: Constant<Bits<16>>,
    k_ipv4: Constant<Bits<16>>,
    k_ipv6: Constant<Bits<16>>,
    k_udp: Constant<Bits<8>>,
    k_pkey: Constant<Bits<16>>,
    k_e_truncated: Constant<Bits<4>>,
    k_e_ethertype: Constant<Bits<4>>,
    k_e_ip_header: Constant<Bits<4>>,
    k_e_ip_checksum: Constant<Bits<4>>,
    k_e_not_udp: Constant<Bits<4>>,
    k_e_udp: Constant<Bits<4>>,
    k_e_bth: Constant<Bits<4>>,
    k_e_opcode: Constant<Bits<4>>,
    k_e_icrc: Constant<Bits<4>>,
    k_e_too_long: Constant<Bits<4>>,
    k_max_frame: Constant<Bits<17>>,
    k_op_send: Constant<Bits<8>>,
    k_op_send_imm: Constant<Bits<8>>,
    k_op_write: Constant<Bits<8>>,
    k_op_write_imm: Constant<Bits<8>>,
    k_op_ack: Constant<Bits<8>>,
    k_op_nak: Constant<Bits<8>>,
    k_op_cm: Constant<Bits<8>>,
    k_len_send: Constant<Bits<17>>,
    k_len_send_imm: Constant<Bits<17>>,
    k_len_write: Constant<Bits<17>>,
    k_len_write_imm: Constant<Bits<17>>,
    k_len_ack: Constant<Bits<17>>,
    k_len_nak: Constant<Bits<17>>,
    k_len_cm: Constant<Bits<17>>,
    k_nak_rnr: Constant<Bits<8>>,
    k_nak_invalid: Constant<Bits<8>>,
    k_nak_access: Constant<Bits<8>>,
    k_nak_window: Constant<Bits<8>>,
    k_cm_first: Constant<Bits<8>>,
    k_cm_last: Constant<Bits<8>>,
    k_mask_v4: [Constant<Bits<64>>; 8],
    // Per framing (untagged IPv4, tagged IPv4, untagged IPv6, tagged IPv6): added to the
    // transport header's length for `c_hl_th`, `c_poff` and `c_hlx`.
    k_hl_th_add: [Constant<Bits<17>>; 4],
    k_poff_add: [Constant<Bits<17>>; 4],
    k_hlx_add: [Constant<Bits<17>>; 4],
    // Per framing: the IP length field's least values for a transport header of 20 and 8
    // bytes (the total's bound, less 40 for IPv6's payload length). Too short for the BTH
    // needs no check of its own: the bound is `k_hlx_add`, so `a_th_lt` covers it.
    k_min20: [Constant<Bits<17>>; 4],
    k_min8: [Constant<Bits<17>>; 4],
    k_mask_v6: [Constant<Bits<64>>; 8],

    // Frame capture.
    beat: DFF<Bits<5>>,
    bytes: DFF<Bits<16>>,
    h: [DFF<Bits<64>>; 16],
    // ICRC stream.
    prev: DFF<Bits<64>>,
    s_vlan: DFF<Bit>,
    s_v6: DFF<Bit>,
    // Room left in the CRC's range from the beat being formed (index `vj`): the range's end
    // minus `8 · vj`, signed. Kept by a subtraction of 8 per beat, so that no adder lies
    // between it and the lanes.
    room: DFF<Bits<18>>,
    // The lanes in range of the beat being formed (a prefix), decided a cycle ahead from
    // `room`.
    lanes: DFF<Bits<8>>,
    // The index `vj` of the beat being formed, one-hot while below 8 (the beats that hold
    // variant fields) and zero from 8 on.
    vj_hot: DFF<Bits<8>>,
    crc: DFF<Bits<32>>,
    crc_lanes: DFF<Bits<8>>,
    crc_unit: Crc32Full,
    // End-of-frame stages.
    end1: DFF<Bit>,
    flen1: DFF<Bits<16>>,
    port1: DFF<Bits<PORT_BITS>>,
    valid2: DFF<Bit>,
    err2: DFF<Bits<4>>,
    flen2: DFF<Bits<16>>,
    vlan2: DFF<Bit>,
    tci2: DFF<Bits<16>>,
    smac2: DFF<Bits<48>>,
    v6_2: DFF<Bit>,
    sip2: DFF<Bits<128>>,
    dip2: DFF<Bits<128>>,
    ecn2: DFF<Bits<2>>,
    sport2: DFF<Bits<16>>,
    op2: DFF<Bits<8>>,
    se2: DFF<Bit>,
    ackreq2: DFF<Bit>,
    qp2: DFF<Bits<24>>,
    psn2: DFF<Bits<24>>,
    th2: DFF<Bits<384>>,
    poff2: DFF<Bits<16>>,
    plen2: DFF<Bits<16>>,
    port2: DFF<Bits<PORT_BITS>>,
    // The snapshot and the registers of stage A and stage 2 load in every cycle, with no
    // enable: each is read only in the cycle after, and only when its stage's valid bit says
    // so. Loading them only with a frame made their strobes (`end1`, `snap_valid`, `a_valid`)
    // nets of about a thousand loads each, and the fields zeroed without a frame put
    // `snap_valid` and `a_valid` into the logic of every bit.
    snap: DFF<HeaderBeats>,
    snap_len: DFF<Bits<16>>,
    snap_valid: DFF<Bit>,
    snap_v4: DFF<Bit>,
    // The framing (tag in bit 0, IPv6 in bit 1) twice: copy 0 steers the wide field shifts
    // of stage A (about a thousand loads per bit), copy 1 its selections among the four
    // framings' results, which waited on that net when they shared it. `_dup` registers,
    // which `cargo xtask synth` keeps apart.
    framing_dup: [DFF<Bits<2>>; 2],
    snap_port: DFF<Bits<PORT_BITS>>,
    // Stage A of the checks (fields and sums after the framing shifts).
    a_valid: DFF<Bit>,
    a_flen: DFF<Bits<17>>,
    a_vlan: DFF<Bit>,
    a_v4: DFF<Bit>,
    a_v6: DFF<Bit>,
    a_ip_total: DFF<Bits<17>>,
    // Computed beside the snapshot from the capture registers, for each framing, so that
    // stage A only selects: the IPv4 header's words 0–3 and 5–8 summed (untagged, tagged);
    // and for the opcode at each framing's position (untagged IPv4, tagged IPv4, untagged
    // IPv6, tagged IPv6), the header lengths it implies and whether it is known and a data
    // opcode.
    p_u_lo: DFF<Bits<20>>,
    p_u_hi: DFF<Bits<20>>,
    p_t_lo: DFF<Bits<20>>,
    p_t_hi: DFF<Bits<20>>,
    // The two words left over (4 and 9), summed: untagged, tagged.
    p_u_x: DFF<Bits<20>>,
    p_t_x: DFF<Bits<20>>,
    c_hl_th: [DFF<Bits<17>>; 4],
    c_poff: [DFF<Bits<16>>; 4],
    c_known: [DFF<Bit>; 4],
    c_data: [DFF<Bit>; 4],
    c_nak_bad: [DFF<Bit>; 4],
    // The IP header and transport header lengths + 24, less the 40 an IPv6 length field
    // leaves out, so that stage A compares the length field itself; and the frame length
    // less the headers before the IP payload length (Ethernet, and IPv6's 40), so that
    // "IP packet longer than the frame" compares the field too.
    c_hlx: [DFF<Bits<17>>; 4],
    c_avail: [DFF<Bits<17>>; 4],
    // The UDP length against the IP length (IPv4's total less its 20-byte header, IPv6's
    // payload length).
    c_udp_ne: [DFF<Bit>; 4],
    c_cm_bad: [DFF<Bit>; 4],
    // The IPv4 header's ten words summed (at most 10 · 0xFFFF).
    a_sum: DFF<Bits<20>>,
    a_op_known: DFF<Bit>,
    a_op_data: DFF<Bit>,
    a_hl_th: DFF<Bits<17>>,
    a_poff: DFF<Bits<16>>,
    a_nak_bad: DFF<Bit>,
    a_cm_bad: DFF<Bit>,
    a_bth_bad: DFF<Bit>,
    // Stage A's verdicts on the lengths, each for the frame's framing (see stage B).
    a_short20: DFF<Bit>,
    a_short8: DFF<Bit>,
    a_short_ip: DFF<Bit>,
    a_th_ne: DFF<Bit>,
    a_th_lt: DFF<Bit>,
    a_over_frame: DFF<Bit>,
    a_frame_short: DFF<Bit>,
    a_udp_bad: DFF<Bit>,
    a_flen_short: DFF<Bit>,
    a_flen_long: DFF<Bit>,
    a_dport_bad: DFF<Bit>,
    a_v6_nh_bad: DFF<Bit>,
    a_v6_ver_bad: DFF<Bit>,
    a_v4_proto_bad: DFF<Bit>,
    a_v4_frag_bad: DFF<Bit>,
    a_v4_ver_bad: DFF<Bit>,
    a_tci: DFF<Bits<16>>,
    a_smac: DFF<Bits<48>>,
    a_sip: DFF<Bits<128>>,
    a_dip: DFF<Bits<128>>,
    a_ecn: DFF<Bits<2>>,
    a_sport: DFF<Bits<16>>,
    a_op: DFF<Bits<8>>,
    a_se: DFF<Bit>,
    a_ackreq: DFF<Bit>,
    a_qp: DFF<Bits<24>>,
    a_psn: DFF<Bits<24>>,
    a_th: DFF<Bits<384>>,
    a_port: DFF<Bits<PORT_BITS>>,
    icrc_bad2: DFF<Bit>,
    crc3: DFF<Bits<32>>,
    lanes3: DFF<Bits<8>>,
    vp_go: DFF<Bit>,
    vp_flush: DFF<Bit>,
    vp_data: DFF<Bits<64>>,
    vp_lanes: DFF<Bits<8>>,

    // Combinational scratch.
    keep_count: Signal<Local, Bits<16>>,
    swapped: Signal<Local, Bits<64>>,
    flat: Signal<Local, Bits<1024>>,
    f3: Signal<Local, Bits<1024>>,
    f4: Signal<Local, Bits<1024>>,
    vlan: Signal<Local, Bit>,
    is_v4: Signal<Local, Bit>,
    is_v6: Signal<Local, Bit>,
    ip_total: Signal<Local, Bits<17>>,
    // The framing's IP length field, and each length check for all four framings (bit: the
    // framing's index).
    len_f: Signal<Local, Bits<17>>,
    len_fields: Signal<Local, Bits<68>>,
    v_short20: Signal<Local, Bits<4>>,
    v_short8: Signal<Local, Bits<4>>,
    v_short_ip: Signal<Local, Bits<4>>,
    v_th_ne: Signal<Local, Bits<4>>,
    v_th_lt: Signal<Local, Bits<4>>,
    v_over: Signal<Local, Bits<4>>,
    th_len: Signal<Local, Bits<17>>,
    // One framing's opcode and what it implies (see `c_hl_th`).
    cand_op: Signal<Local, Bits<8>>,
    cand_ops: Signal<Local, Bits<32>>,
    cand_cms: Signal<Local, Bits<32>>,
    cand_naks: Signal<Local, Bits<32>>,
    cand_cm: Signal<Local, Bits<8>>,
    cand_nak: Signal<Local, Bits<8>>,
    cand_poff: Signal<Local, Bits<17>>,
    cand_known: Signal<Local, Bit>,
    cand_data: Signal<Local, Bit>,
    frame_sel: Signal<Local, Bits<2>>,
    ip_sum: Signal<Local, Bits<20>>,
    // The IPv4 header sum at the untagged and at the tagged offsets.
    sum_u: Signal<Local, Bits<20>>,
    sum_t: Signal<Local, Bits<20>>,
    ip_sum_ok: Signal<Local, Bit>,
    err: Signal<Local, Bits<4>>,
    // The IP total length is below the IP header plus 24 (UDP, BTH, ICRC), 20 or 8 bytes.
    n_vlan: Signal<Local, Bit>,
    n_v6: Signal<Local, Bit>,
    n_room: Signal<Local, Bits<18>>,
    v_data: Signal<Local, Bits<64>>,
    v_go: Signal<Local, Bit>,
    // The lanes of the next beat (`room - 8`), and whether `room`'s bits 16..4 are zero.
    next_lanes: Signal<Local, Bits<8>>,
    room_hi_zero: Signal<Local, Bit>,
    lane_mask: Signal<Local, Bits<64>>,
    crc_good: Signal<Local, Bits<32>>,
    flen: Signal<Local, Bits<17>>,
    opcode: Signal<Local, Bits<8>>,
    sw_et: Signal<Local, Bits<16>>,
    et_vlan: Signal<Local, Bit>,
    et_v6: Signal<Local, Bit>,
}

/// The CRC register at the end of a good frame whose last beat has `n` lanes in the CRC's
/// range (1 ≤ `n` ≤ 8): the residue, advanced over the `8 - n` zero bytes that pad that beat.
pub fn crc_good(n: usize) -> u32 {
    crc32_update(RESIDUE, &[0u8; 8][n..])
}

/// The variant-field mask of beat `j` of the realigned ICRC stream (8 bytes of 0xFF, then the
/// IP packet), lane 0 in bits 7:0, built from [`icrc::variant_fields`].
pub fn stream_mask(is_ipv6: bool, j: usize) -> u64 {
    let mut m = 0u64;
    for &(at, bits) in icrc::variant_fields(is_ipv6) {
        let v = 8 + at;
        if v / 8 == j {
            m |= (bits as u64) << (8 * (v % 8));
        }
    }
    m
}

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.to_bits())
}

impl Default for RxParser {
    fn default() -> Self {
        use ferroce_proto::wire::{CmKind, NakReason, Opcode};
        let th = |o: Opcode| k::<17>(ferroce_proto::wire::TransportRepr::header_len_for(o) as u64);
        // Every transport header fits the captured bytes, VLAN and IPv6 included.
        const {
            let longest = ACK_LEN + bth::HEADER_LEN + 8 + ip::IPV6_HEADER_LEN + 18;
            assert!(longest <= HEADER_BYTES && FDH_LEN + RETH_LEN + IMM_LEN <= ACK_LEN);
            assert!(NAK_LEN <= ACK_LEN && CM_LEN <= ACK_LEN && TH_BITS == 8 * ACK_LEN);
        }
        RxParser {
            clock: Default::default(),
            reset: Default::default(),
            s_tdata: Default::default(),
            s_tkeep: Default::default(),
            s_tvalid: Default::default(),
            s_tlast: Default::default(),
            s_tid: Default::default(),
            s_tready: Default::default(),
            udp_port: Default::default(),
            out_valid: Default::default(),
            out_error: Default::default(),
            out_frame_len: Default::default(),
            out_vlan: Default::default(),
            out_vlan_tci: Default::default(),
            out_src_mac: Default::default(),
            out_ipv6: Default::default(),
            out_src_ip: Default::default(),
            out_dst_ip: Default::default(),
            out_ecn: Default::default(),
            out_src_port: Default::default(),
            out_opcode: Default::default(),
            out_solicited: Default::default(),
            out_ack_req: Default::default(),
            out_dest_conn: Default::default(),
            out_psn: Default::default(),
            out_th: Default::default(),
            out_payload_offset: Default::default(),
            out_payload_len: Default::default(),
            out_port: Default::default(),
            k_crc_lrh: k(CRC_AFTER_LRH as u64),
            k_crc_good: core::array::from_fn(|m| k(crc_good(m + 1) as u64)),
            k_vlan: k(ethernet::ETHERTYPE_VLAN as u64),
            k_ipv4: k(ethernet::ETHERTYPE_IPV4 as u64),
            k_ipv6: k(ethernet::ETHERTYPE_IPV6 as u64),
            k_udp: k(ip::PROTO_UDP as u64),
            k_pkey: k(bth::DEFAULT_PKEY as u64),
            k_e_truncated: k(ParseError::Truncated.code() as u64),
            k_e_ethertype: k(ParseError::BadEtherType.code() as u64),
            k_e_ip_header: k(ParseError::BadIpHeader.code() as u64),
            k_e_ip_checksum: k(ParseError::BadIpChecksum.code() as u64),
            k_e_not_udp: k(ParseError::NotUdp.code() as u64),
            k_e_udp: k(ParseError::BadUdp.code() as u64),
            k_e_bth: k(ParseError::BadBth.code() as u64),
            k_e_opcode: k(ParseError::BadOpcode.code() as u64),
            k_e_icrc: k(ParseError::BadIcrc.code() as u64),
            k_e_too_long: k(ParseError::TooLong.code() as u64),
            k_max_frame: k(MAX_FRAME_LEN as u64),
            k_op_send: k(Opcode::Send as u64),
            k_op_send_imm: k(Opcode::SendImm as u64),
            k_op_write: k(Opcode::Write as u64),
            k_op_write_imm: k(Opcode::WriteImm as u64),
            k_op_ack: k(Opcode::Ack as u64),
            k_op_nak: k(Opcode::Nak as u64),
            k_op_cm: k(Opcode::Cm as u64),
            k_len_send: th(Opcode::Send),
            k_len_send_imm: th(Opcode::SendImm),
            k_len_write: th(Opcode::Write),
            k_len_write_imm: th(Opcode::WriteImm),
            k_len_ack: th(Opcode::Ack),
            k_len_nak: th(Opcode::Nak),
            k_len_cm: th(Opcode::Cm),
            k_nak_rnr: k(NakReason::ReceiverNotReady as u64),
            k_nak_invalid: k(NakReason::InvalidRequest as u64),
            k_nak_access: k(NakReason::RemoteAccess as u64),
            k_nak_window: k(NakReason::OutOfWindow as u64),
            k_cm_first: k(CmKind::FIRST as u64),
            k_cm_last: k(CmKind::LAST as u64),
            k_mask_v4: core::array::from_fn(|j| k(stream_mask(false, j))),
            k_hl_th_add: [44, 44, 64, 64].map(k),
            k_poff_add: [54, 58, 74, 78].map(k),
            k_hlx_add: [44, 44, 24, 24].map(k),
            k_min20: [40, 40, 20, 20].map(k),
            k_min8: [28, 28, 8, 8].map(k),
            k_mask_v6: core::array::from_fn(|j| k(stream_mask(true, j))),
            beat: Default::default(),
            bytes: Default::default(),
            h: Default::default(),
            prev: Default::default(),
            s_vlan: Default::default(),
            s_v6: Default::default(),
            room: Default::default(),
            lanes: Default::default(),
            vj_hot: Default::default(),
            crc: Default::default(),
            crc_lanes: Default::default(),
            crc_unit: Default::default(),
            end1: Default::default(),
            flen1: Default::default(),
            port1: Default::default(),
            valid2: Default::default(),
            err2: Default::default(),
            flen2: Default::default(),
            vlan2: Default::default(),
            tci2: Default::default(),
            smac2: Default::default(),
            v6_2: Default::default(),
            sip2: Default::default(),
            dip2: Default::default(),
            ecn2: Default::default(),
            sport2: Default::default(),
            op2: Default::default(),
            se2: Default::default(),
            ackreq2: Default::default(),
            qp2: Default::default(),
            psn2: Default::default(),
            th2: Default::default(),
            poff2: Default::default(),
            plen2: Default::default(),
            port2: Default::default(),
            snap: Default::default(),
            snap_len: Default::default(),
            snap_valid: Default::default(),
            snap_v4: Default::default(),
            framing_dup: Default::default(),
            snap_port: Default::default(),
            a_valid: Default::default(),
            a_flen: Default::default(),
            a_vlan: Default::default(),
            a_v4: Default::default(),
            a_v6: Default::default(),
            a_ip_total: Default::default(),
            p_u_lo: Default::default(),
            p_u_hi: Default::default(),
            p_t_lo: Default::default(),
            p_t_hi: Default::default(),
            p_u_x: Default::default(),
            p_t_x: Default::default(),
            c_hl_th: Default::default(),
            c_poff: Default::default(),
            c_known: Default::default(),
            c_data: Default::default(),
            c_nak_bad: Default::default(),
            c_hlx: Default::default(),
            c_avail: Default::default(),
            c_udp_ne: Default::default(),
            c_cm_bad: Default::default(),
            a_sum: Default::default(),
            a_op_known: Default::default(),
            a_op_data: Default::default(),
            a_hl_th: Default::default(),
            a_poff: Default::default(),
            a_nak_bad: Default::default(),
            a_cm_bad: Default::default(),
            a_bth_bad: Default::default(),
            a_short20: Default::default(),
            a_short8: Default::default(),
            a_short_ip: Default::default(),
            a_th_ne: Default::default(),
            a_th_lt: Default::default(),
            a_over_frame: Default::default(),
            a_frame_short: Default::default(),
            a_udp_bad: Default::default(),
            a_flen_short: Default::default(),
            a_flen_long: Default::default(),
            a_dport_bad: Default::default(),
            a_v6_nh_bad: Default::default(),
            a_v6_ver_bad: Default::default(),
            a_v4_proto_bad: Default::default(),
            a_v4_frag_bad: Default::default(),
            a_v4_ver_bad: Default::default(),
            a_tci: Default::default(),
            a_smac: Default::default(),
            a_sip: Default::default(),
            a_dip: Default::default(),
            a_ecn: Default::default(),
            a_sport: Default::default(),
            a_op: Default::default(),
            a_se: Default::default(),
            a_ackreq: Default::default(),
            a_qp: Default::default(),
            a_psn: Default::default(),
            a_th: Default::default(),
            a_port: Default::default(),
            icrc_bad2: Default::default(),
            crc3: Default::default(),
            lanes3: Default::default(),
            vp_go: Default::default(),
            vp_flush: Default::default(),
            vp_data: Default::default(),
            vp_lanes: Default::default(),
            keep_count: Default::default(),
            swapped: Default::default(),
            flat: Default::default(),
            f3: Default::default(),
            f4: Default::default(),
            vlan: Default::default(),
            is_v4: Default::default(),
            is_v6: Default::default(),
            ip_total: Default::default(),
            len_f: Default::default(),
            len_fields: Default::default(),
            v_short20: Default::default(),
            v_short8: Default::default(),
            v_short_ip: Default::default(),
            v_th_ne: Default::default(),
            v_th_lt: Default::default(),
            v_over: Default::default(),
            th_len: Default::default(),
            cand_op: Default::default(),
            cand_ops: Default::default(),
            cand_cms: Default::default(),
            cand_naks: Default::default(),
            cand_cm: Default::default(),
            cand_nak: Default::default(),
            cand_poff: Default::default(),
            cand_known: Default::default(),
            cand_data: Default::default(),
            frame_sel: Default::default(),
            ip_sum: Default::default(),
            sum_u: Default::default(),
            sum_t: Default::default(),
            ip_sum_ok: Default::default(),
            err: Default::default(),
            n_vlan: Default::default(),
            n_v6: Default::default(),
            n_room: Default::default(),
            v_data: Default::default(),
            v_go: Default::default(),
            next_lanes: Default::default(),
            room_hi_zero: Default::default(),
            lane_mask: Default::default(),
            crc_good: Default::default(),
            flen: Default::default(),
            opcode: Default::default(),
            sw_et: Default::default(),
            et_vlan: Default::default(),
            et_v6: Default::default(),
        }
    }
}

impl Logic for RxParser {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            beat,
            bytes,
            prev,
            s_vlan,
            s_v6,
            room,
            lanes,
            vj_hot,
            crc,
            crc_lanes,
            end1,
            flen1,
            port1,
            valid2,
            err2,
            flen2,
            vlan2,
            tci2,
            smac2,
            v6_2,
            sip2,
            dip2,
            ecn2,
            sport2,
            op2,
            se2,
            ackreq2,
            qp2,
            psn2,
            th2,
            poff2,
            plen2,
            port2,
            crc3,
            lanes3,
            vp_go,
            vp_flush,
            vp_data,
            vp_lanes,
            snap,
            snap_len,
            snap_valid,
            snap_v4,
            snap_port,
            a_valid,
            a_flen,
            a_vlan,
            a_v4,
            a_v6,
            a_ip_total,
            p_u_lo,
            p_u_hi,
            p_t_lo,
            p_t_hi,
            p_u_x,
            p_t_x,
            a_sum,
            a_op_known,
            a_op_data,
            a_hl_th,
            a_poff,
            a_nak_bad,
            a_cm_bad,
            a_bth_bad,
            a_short20,
            a_short8,
            a_short_ip,
            a_th_ne,
            a_th_lt,
            a_over_frame,
            a_frame_short,
            a_udp_bad,
            a_flen_short,
            a_flen_long,
            a_dport_bad,
            a_v6_nh_bad,
            a_v6_ver_bad,
            a_v4_proto_bad,
            a_v4_frag_bad,
            a_v4_ver_bad,
            a_tci,
            a_smac,
            a_sip,
            a_dip,
            a_ecn,
            a_sport,
            a_op,
            a_se,
            a_ackreq,
            a_qp,
            a_psn,
            a_th,
            a_port,
            icrc_bad2
        );
        for i in 0_usize..16 {
            self.h[i].clock.next = self.clock.val();
            self.h[i].d.next = self.h[i].q.val();
        }
        for i in 0_usize..2 {
            self.framing_dup[i].clock.next = self.clock.val();
            self.framing_dup[i].d.next = self.framing_dup[i].q.val();
        }
        for c in 0_usize..4 {
            self.c_hl_th[c].clock.next = self.clock.val();
            self.c_hl_th[c].d.next = self.c_hl_th[c].q.val();
            self.c_poff[c].clock.next = self.clock.val();
            self.c_poff[c].d.next = self.c_poff[c].q.val();
            self.c_known[c].clock.next = self.clock.val();
            self.c_known[c].d.next = self.c_known[c].q.val();
            self.c_data[c].clock.next = self.clock.val();
            self.c_data[c].d.next = self.c_data[c].q.val();
            self.c_nak_bad[c].clock.next = self.clock.val();
            self.c_nak_bad[c].d.next = self.c_nak_bad[c].q.val();
            self.c_hlx[c].clock.next = self.clock.val();
            self.c_hlx[c].d.next = self.c_hlx[c].q.val();
            self.c_avail[c].clock.next = self.clock.val();
            self.c_avail[c].d.next = self.c_avail[c].q.val();
            self.c_udp_ne[c].clock.next = self.clock.val();
            self.c_udp_ne[c].d.next = self.c_udp_ne[c].q.val();
            self.c_cm_bad[c].clock.next = self.clock.val();
            self.c_cm_bad[c].d.next = self.c_cm_bad[c].q.val();
        }
        self.s_tready.next = true;

        // ---- Beat bookkeeping and header capture (byte-swapped: big-endian bit ranges).
        // The bytes of the beat: a tree of 4-bit sums, not eight 16-bit additions in a row
        // (that chain, into the frame length, was the parser's critical path).
        self.keep_count.next = bit_cast::<16, 4>(
            ((bit_cast::<4, 1>(self.s_tkeep.val().get_bits::<1>(0))
                + bit_cast::<4, 1>(self.s_tkeep.val().get_bits::<1>(1)))
                + (bit_cast::<4, 1>(self.s_tkeep.val().get_bits::<1>(2))
                    + bit_cast::<4, 1>(self.s_tkeep.val().get_bits::<1>(3))))
                + ((bit_cast::<4, 1>(self.s_tkeep.val().get_bits::<1>(4))
                    + bit_cast::<4, 1>(self.s_tkeep.val().get_bits::<1>(5)))
                    + (bit_cast::<4, 1>(self.s_tkeep.val().get_bits::<1>(6))
                        + bit_cast::<4, 1>(self.s_tkeep.val().get_bits::<1>(7)))),
        );
        self.swapped.next = 0.into();
        for i in 0_usize..8 {
            self.swapped.next = self.swapped.val()
                | (((self.s_tdata.val() >> (8 * i).to_bits::<6>()) & 0xFF_u64)
                    << (56 - 8 * i).to_bits::<6>());
        }
        self.end1.d.next = false;
        if self.s_tvalid.val() {
            for i in 0_usize..16 {
                if self.beat.q.val() == i.to_bits::<5>() {
                    self.h[i].d.next = self.swapped.val();
                }
            }
            self.prev.d.next = self.s_tdata.val();
            if self.s_tlast.val() {
                self.beat.d.next = 0.into();
                self.bytes.d.next = 0.into();
                self.end1.d.next = true;
                self.flen1.d.next = self.bytes.q.val() + self.keep_count.val();
                self.port1.d.next = self.s_tid.val();
            } else {
                if self.beat.q.val() != 16_u64 {
                    self.beat.d.next = self.beat.q.val() + 1_u64;
                }
                if self.bytes.q.val() < 0xFFF0_u64 {
                    self.bytes.d.next = self.bytes.q.val() + self.keep_count.val();
                }
            }
        }

        // ---- ICRC stream: which framing this frame has, as soon as the bytes are in.
        self.n_vlan.next = self.s_vlan.q.val();
        self.n_v6.next = self.s_v6.q.val();
        self.sw_et.next = self.swapped.val().get_bits::<16>(16);
        if self.beat.q.val() == 1_u64 {
            self.n_vlan.next = self.sw_et.val() == self.k_vlan.val();
            self.n_v6.next = self.sw_et.val() == self.k_ipv6.val();
        }
        if (self.beat.q.val() == 2_u64) & self.s_vlan.q.val() {
            self.n_v6.next = self.swapped.val().get_bits::<16>(48) == self.k_ipv6.val();
        }
        // The end of the CRC's range in the stream, the ICRC included: 8 bytes of LRH, then the
        // IP packet (IPv4 total length, or IPv6 payload length + 40). `room` starts at beat 3
        // as that end less `8 · vj` after the beat, read from beat 2's capture register with
        // the framing registered: `vj` is 1 from the frame's first beat until the realigned
        // stream's first beat, formed at beat 2 untagged and at beat 3 tagged, so after beat 3
        // it is 3 untagged and 2 tagged, and the offsets fold into one constant per framing.
        if self.s_vlan.q.val() {
            if self.s_v6.q.val() {
                // (payload length + 48) − 16.
                self.n_room.next = bit_cast::<18, 16>(self.h[2].q.val().get_bits::<16>(0)) + 32_u64;
            } else {
                // (total length + 8) − 16.
                self.n_room.next = bit_cast::<18, 16>(self.h[2].q.val().get_bits::<16>(16)) - 8_u64;
            }
        } else if self.s_v6.q.val() {
            // (payload length + 48) − 24.
            self.n_room.next = bit_cast::<18, 16>(self.h[2].q.val().get_bits::<16>(32)) + 24_u64;
        } else {
            // (total length + 8) − 24.
            self.n_room.next = bit_cast::<18, 16>(self.h[2].q.val().get_bits::<16>(48)) - 16_u64;
        }

        // The next beat of the realigned stream: in-frame, or the flush after the last beat.
        self.v_go.next = false;
        self.v_data.next = 0.into();
        if self.end1.q.val() {
            self.v_go.next = true;
            if self.s_vlan.q.val() {
                self.v_data.next = self.prev.q.val() >> 16_u64;
            } else {
                self.v_data.next = self.prev.q.val() >> 48_u64;
            }
        } else if self.s_tvalid.val() {
            // The registered framing, not this beat's decision: the two differ only at beat 1
            // (and at a tagged frame's beat 2 for IPv6), where no beat is formed.
            if self.s_vlan.q.val() {
                self.v_go.next = self.beat.q.val() >= 3_u64;
                self.v_data.next = (self.prev.q.val() >> 16_u64) | (self.s_tdata.val() << 48_u64);
            } else {
                self.v_go.next = self.beat.q.val() >= 2_u64;
                self.v_data.next = (self.prev.q.val() >> 48_u64) | (self.s_tdata.val() << 16_u64);
            }
        }
        // Beat 0 of the stream is the LRH, folded into the CRC's initial state: no mask.
        for j in 1_usize..8 {
            if self.vj_hot.q.val().get_bit(j) {
                if self.s_v6.q.val() {
                    self.v_data.next = self.v_data.val() | self.k_mask_v6[j].val();
                } else {
                    self.v_data.next = self.v_data.val() | self.k_mask_v4[j].val();
                }
            }
        }
        // Register the formed beat; the CRC runs on it next cycle, against the registered T.
        self.vp_go.d.next = self.v_go.val();
        self.vp_flush.d.next = self.end1.q.val();
        if self.v_go.val() & !self.end1.q.val() {
            self.vj_hot.d.next = self.vj_hot.q.val() << 1_u64;
        }
        // The CRC runs over [8, T + 4): the CRC range and the four ICRC bytes behind it, so a
        // good frame leaves the register at a constant (the residue) and the ICRC bytes need
        // not be picked out. The lanes are registered with the beat (zero when there is no
        // beat), so the CRC step's enable comes from flip-flops; lanes beyond the range are
        // zeroed, so that the step is always the full eight-byte one: a last beat with `n`
        // lanes then leaves the register advanced over `8 - n` zero bytes past the residue
        // (`k_crc_good`).
        // The lanes in range are the first `room` (clamped to 0..=8), held in `lanes` and
        // decided a cycle ahead from `room` alone (the next beat's are `room - 8`, read off
        // its bits without an adder), so the data path sees one flip-flop per lane and no
        // carry chain. The beats formed up to beat 4 (`vj` at most 3) are taken whole: a
        // frame whose verdict depends on the ICRC has an IP packet of at least 44 bytes (the
        // IPv4 header, UDP, BTH and ICRC; the checks before the ICRC's refuse any shorter),
        // so its range ends at 52 or later and its first five beats are full.
        self.room_hi_zero.next = self.room.q.val().get_bits::<13>(4) == 0_u64;
        self.next_lanes.next = 0xFF.into();
        if self.room.q.val().get_bit(17) {
            self.next_lanes.next = 0.into();
        } else if self.room_hi_zero.val() {
            self.next_lanes.next = 0.into();
            if self.room.q.val().get_bit(3) {
                for n in 1_usize..8 {
                    if self.room.q.val().get_bits::<3>(0) == n.to_bits::<3>() {
                        self.next_lanes.next = ((1_usize << n) - 1).to_bits::<8>();
                    }
                }
            }
        }
        if self.v_go.val() & !self.end1.q.val() {
            self.room.d.next = self.room.q.val() - 8_u64;
            self.lanes.d.next = self.next_lanes.val();
        }
        if self.s_tvalid.val() & (self.beat.q.val() < 4_u64) {
            self.lanes.d.next = 0xFF.into();
        }
        if self.s_tvalid.val() & (self.beat.q.val() == 3_u64) {
            self.room.d.next = self.n_room.val();
        }
        self.lane_mask.next = 0.into();
        for k in 0_usize..8 {
            if self.lanes.q.val().get_bit(k) {
                self.lane_mask.next = self.lane_mask.val() | (0xFF_u64 << (8 * k)).to_bits::<64>();
            }
        }
        self.v_data.next = self.v_data.val() & self.lane_mask.val();
        self.vp_data.d.next = self.v_data.val();
        self.vp_lanes.d.next = 0.into();
        if self.v_go.val() {
            self.vp_lanes.d.next = self.lanes.q.val();
        }
        // Only the full step is in the loop; lane 0 is set whenever any lane is (a prefix).
        self.crc_unit.crc_in.next = self.crc.q.val();
        self.crc_unit.data.next = self.vp_data.q.val();
        self.crc_unit.enable.next = self.vp_lanes.q.val().get_bit(0);
        self.crc.d.next = self.crc_unit.crc_out.val();
        if self.vp_lanes.q.val().get_bit(0) {
            self.crc_lanes.d.next = self.vp_lanes.q.val();
        }
        if self.vp_go.q.val() & self.vp_flush.q.val() {
            self.crc3.d.next = self.crc_unit.crc_out.val();
            self.lanes3.d.next = self.crc_lanes.q.val();
            if self.vp_lanes.q.val().get_bit(0) {
                self.lanes3.d.next = self.vp_lanes.q.val();
            }
        }
        // A new frame starts the stream over: the index at its first beat, the CRC state at its
        // third (the previous frame's last beats are still in the CRC stage until then).
        if self.s_tvalid.val() & (self.beat.q.val() == 0_u64) {
            self.vj_hot.d.next = 2.into();
        }
        if self.s_tvalid.val() & (self.beat.q.val() == 2_u64) {
            self.crc.d.next = self.k_crc_lrh.val();
            self.crc_lanes.d.next = 0xFF.into();
        }
        if self.s_tvalid.val() & (self.beat.q.val() == 1_u64) {
            self.s_vlan.d.next = self.n_vlan.val();
            self.s_v6.d.next = self.n_v6.val();
        }
        if self.s_tvalid.val() & (self.beat.q.val() == 2_u64) {
            self.s_v6.d.next = self.n_v6.val();
        }

        // ---- End of frame: every check at once over the captured headers.
        // The capture registers are copied aside in every cycle; the copy made in the cycle
        // after a frame's last beat (`end1`) holds its headers, and the checks run on it in the
        // next cycle, while the next frame's beats overwrite the capture registers.
        self.snap.d.next.b0 = self.h[0].q.val();
        self.snap.d.next.b1 = self.h[1].q.val();
        self.snap.d.next.b2 = self.h[2].q.val();
        self.snap.d.next.b3 = self.h[3].q.val();
        self.snap.d.next.b4 = self.h[4].q.val();
        self.snap.d.next.b5 = self.h[5].q.val();
        self.snap.d.next.b6 = self.h[6].q.val();
        self.snap.d.next.b7 = self.h[7].q.val();
        self.snap.d.next.b8 = self.h[8].q.val();
        self.snap.d.next.b9 = self.h[9].q.val();
        self.snap.d.next.b10 = self.h[10].q.val();
        self.snap.d.next.b11 = self.h[11].q.val();
        self.snap.d.next.b12 = self.h[12].q.val();
        self.snap.d.next.b13 = self.h[13].q.val();
        self.snap.d.next.b14 = self.h[14].q.val();
        self.snap.d.next.b15 = self.h[15].q.val();
        // Like the snapshot, these load in every cycle: `flen1` and `port1` hold from a frame's
        // last beat to the next frame's.
        self.snap_len.d.next = self.flen1.q.val();
        self.snap_port.d.next = self.port1.q.val();
        // The framing, decided here from the capture registers so that the wide shifts
        // below are steered straight from flip-flops; the three ethertype compares side by
        // side rather than the second behind a select by the first.
        self.et_vlan.next = self.h[1].q.val().get_bits::<16>(16) == self.k_vlan.val();
        self.snap_v4.d.next = (!self.et_vlan.val()
            & (self.h[1].q.val().get_bits::<16>(16) == self.k_ipv4.val()))
            | (self.et_vlan.val() & (self.h[2].q.val().get_bits::<16>(48) == self.k_ipv4.val()));
        self.et_v6.next = (!self.et_vlan.val()
            & (self.h[1].q.val().get_bits::<16>(16) == self.k_ipv6.val()))
            | (self.et_vlan.val() & (self.h[2].q.val().get_bits::<16>(48) == self.k_ipv6.val()));
        for i in 0_usize..2 {
            self.framing_dup[i].d.next = bit_cast::<2, 1>(self.et_vlan.val().into())
                | (bit_cast::<2, 1>(self.et_v6.val().into()) << 1_u64);
        }
        self.snap_valid.d.next = self.end1.q.val() & !self.reset.val();

        // ---- Beside the snapshot, from the capture registers (valid in the same cycle as
        // the snapshot): the first four words of each half of the IPv4 header sum and the
        // opcode's lengths, for every framing, so that stage A selects finished values by
        // framing instead of running adders and the opcode decode behind the framing shifts.
        self.p_u_lo.d.next = (bit_cast::<20, 16>(self.h[1].q.val().get_bits::<16>(0))
            + bit_cast::<20, 16>(self.h[2].q.val().get_bits::<16>(48)))
            + (bit_cast::<20, 16>(self.h[2].q.val().get_bits::<16>(32))
                + bit_cast::<20, 16>(self.h[2].q.val().get_bits::<16>(16)));
        self.p_u_hi.d.next = (bit_cast::<20, 16>(self.h[3].q.val().get_bits::<16>(48))
            + bit_cast::<20, 16>(self.h[3].q.val().get_bits::<16>(32)))
            + (bit_cast::<20, 16>(self.h[3].q.val().get_bits::<16>(16))
                + bit_cast::<20, 16>(self.h[3].q.val().get_bits::<16>(0)));
        self.p_t_lo.d.next = (bit_cast::<20, 16>(self.h[2].q.val().get_bits::<16>(32))
            + bit_cast::<20, 16>(self.h[2].q.val().get_bits::<16>(16)))
            + (bit_cast::<20, 16>(self.h[2].q.val().get_bits::<16>(0))
                + bit_cast::<20, 16>(self.h[3].q.val().get_bits::<16>(48)));
        self.p_t_hi.d.next = (bit_cast::<20, 16>(self.h[3].q.val().get_bits::<16>(16))
            + bit_cast::<20, 16>(self.h[3].q.val().get_bits::<16>(0)))
            + (bit_cast::<20, 16>(self.h[4].q.val().get_bits::<16>(48))
                + bit_cast::<20, 16>(self.h[4].q.val().get_bits::<16>(32)));
        self.p_u_x.d.next = bit_cast::<20, 16>(self.h[2].q.val().get_bits::<16>(0))
            + bit_cast::<20, 16>(self.h[4].q.val().get_bits::<16>(48));
        self.p_t_x.d.next = bit_cast::<20, 16>(self.h[3].q.val().get_bits::<16>(32))
            + bit_cast::<20, 16>(self.h[4].q.val().get_bits::<16>(16));
        // The opcode, CM kind and NAK reason at each framing's offset (framing `c` in byte `c`:
        // the opcode at byte 42, 46, 62 or 66), then one decode per framing.
        self.cand_ops.next = (bit_cast::<32, 8>(self.h[5].q.val().get_bits::<8>(40)) << 0_u64)
            | (bit_cast::<32, 8>(self.h[5].q.val().get_bits::<8>(8)) << 8_u64)
            | (bit_cast::<32, 8>(self.h[7].q.val().get_bits::<8>(8)) << 16_u64)
            | (bit_cast::<32, 8>(self.h[8].q.val().get_bits::<8>(40)) << 24_u64);
        self.cand_cms.next = (bit_cast::<32, 8>(self.h[6].q.val().get_bits::<8>(8)) << 0_u64)
            | (bit_cast::<32, 8>(self.h[7].q.val().get_bits::<8>(40)) << 8_u64)
            | (bit_cast::<32, 8>(self.h[9].q.val().get_bits::<8>(40)) << 16_u64)
            | (bit_cast::<32, 8>(self.h[9].q.val().get_bits::<8>(8)) << 24_u64);
        self.cand_naks.next = (bit_cast::<32, 8>(self.h[7].q.val().get_bits::<8>(56)) << 0_u64)
            | (bit_cast::<32, 8>(self.h[7].q.val().get_bits::<8>(24)) << 8_u64)
            | (bit_cast::<32, 8>(self.h[9].q.val().get_bits::<8>(24)) << 16_u64)
            | (bit_cast::<32, 8>(self.h[10].q.val().get_bits::<8>(56)) << 24_u64);
        for c in 0_usize..4 {
            self.cand_op.next = self.cand_ops.val().get_bits::<8>(8 * c);
            self.th_len.next = 0.into();
            self.cand_known.next = true;
            self.cand_data.next = false;
            if self.cand_op.val() == self.k_op_send.val() {
                self.th_len.next = self.k_len_send.val();
                self.cand_data.next = true;
            } else if self.cand_op.val() == self.k_op_send_imm.val() {
                self.th_len.next = self.k_len_send_imm.val();
                self.cand_data.next = true;
            } else if self.cand_op.val() == self.k_op_write.val() {
                self.th_len.next = self.k_len_write.val();
                self.cand_data.next = true;
            } else if self.cand_op.val() == self.k_op_write_imm.val() {
                self.th_len.next = self.k_len_write_imm.val();
                self.cand_data.next = true;
            } else if self.cand_op.val() == self.k_op_ack.val() {
                self.th_len.next = self.k_len_ack.val();
            } else if self.cand_op.val() == self.k_op_nak.val() {
                self.th_len.next = self.k_len_nak.val();
            } else if self.cand_op.val() == self.k_op_cm.val() {
                self.th_len.next = self.k_len_cm.val();
            } else {
                self.cand_known.next = false;
            }
            // IP header + transport header + 24 (UDP, BTH, ICRC); Ethernet + IP + UDP + BTH +
            // transport header; the first less the 40 an IPv6 length field leaves out.
            self.c_hl_th[c].d.next = self.th_len.val() + self.k_hl_th_add[c].val();
            self.cand_poff.next = self.th_len.val() + self.k_poff_add[c].val();
            self.c_poff[c].d.next = self.cand_poff.val().get_bits::<16>(0);
            self.c_hlx[c].d.next = self.th_len.val() + self.k_hlx_add[c].val();
            self.c_known[c].d.next = self.cand_known.val();
            self.c_data[c].d.next = self.cand_data.val();
            self.cand_nak.next = self.cand_naks.val().get_bits::<8>(8 * c);
            self.c_nak_bad[c].d.next = (self.cand_op.val() == self.k_op_nak.val())
                & (self.cand_nak.val() != self.k_nak_rnr.val())
                & (self.cand_nak.val() != self.k_nak_invalid.val())
                & (self.cand_nak.val() != self.k_nak_access.val())
                & (self.cand_nak.val() != self.k_nak_window.val());
            self.cand_cm.next = self.cand_cms.val().get_bits::<8>(8 * c);
            self.c_cm_bad[c].d.next = (self.cand_op.val() == self.k_op_cm.val())
                & ((self.cand_cm.val() < self.k_cm_first.val())
                    | (self.cand_cm.val() > self.k_cm_last.val()));
        }
        // The frame length less the headers before the IP payload length (Ethernet, and
        // IPv6's 40), and the UDP length check, per framing.
        self.c_avail[0].d.next = bit_cast::<17, 16>(self.flen1.q.val()) - 14_u64;
        self.c_udp_ne[0].d.next = bit_cast::<17, 16>(self.h[4].q.val().get_bits::<16>(0)) + 20_u64
            != bit_cast::<17, 16>(self.h[2].q.val().get_bits::<16>(48));
        self.c_avail[1].d.next = bit_cast::<17, 16>(self.flen1.q.val()) - 18_u64;
        self.c_udp_ne[1].d.next = bit_cast::<17, 16>(self.h[5].q.val().get_bits::<16>(32)) + 20_u64
            != bit_cast::<17, 16>(self.h[2].q.val().get_bits::<16>(16));
        self.c_avail[2].d.next = bit_cast::<17, 16>(self.flen1.q.val()) - 54_u64;
        self.c_udp_ne[2].d.next = bit_cast::<17, 16>(self.h[7].q.val().get_bits::<16>(32))
            != bit_cast::<17, 16>(self.h[2].q.val().get_bits::<16>(32));
        self.c_avail[3].d.next = bit_cast::<17, 16>(self.flen1.q.val()) - 58_u64;
        self.c_udp_ne[3].d.next = bit_cast::<17, 16>(self.h[7].q.val().get_bits::<16>(0))
            != bit_cast::<17, 16>(self.h[2].q.val().get_bits::<16>(0));

        // ---- Stage A: the framing shifts, the fields, the opcode's header length, the sums.
        // Computed from the snapshot in every cycle; only a cycle after `snap_valid` is read.
        self.a_valid.d.next = self.snap_valid.q.val() & !self.reset.val();
        self.flat.next = self.snap.q.val().into();
        self.flen.next = bit_cast::<17, 16>(self.snap_len.q.val());
        self.vlan.next = self.framing_dup[0].q.val().get_bit(0);
        self.f3.next = self.flat.val();
        if self.vlan.val() {
            self.f3.next = self.flat.val() << 32_u64;
        }
        self.is_v4.next = self.snap_v4.q.val();
        self.is_v6.next = self.framing_dup[0].q.val().get_bit(1);
        // The framing as an index: 0 untagged IPv4 (or not IP), 1 tagged IPv4, 2 untagged
        // IPv6, 3 tagged IPv6.
        self.frame_sel.next = self.framing_dup[1].q.val();
        self.f4.next = self.f3.val();
        if self.is_v6.val() {
            self.f4.next = self.f3.val() << 160_u64;
        }
        // The IP total length, read at each framing's own offset rather than behind the
        // framing shifts: IPv4's total length, or IPv6's payload length + 40.
        self.ip_total.next = bit_cast::<17, 16>(self.flat.val().get_bits::<16>(1024 - 8 * 16 - 16));
        if self.frame_sel.val() == 1_u64 {
            self.ip_total.next =
                bit_cast::<17, 16>(self.flat.val().get_bits::<16>(1024 - 8 * 20 - 16));
        }
        if self.frame_sel.val() == 2_u64 {
            self.ip_total.next =
                bit_cast::<17, 16>(self.flat.val().get_bits::<16>(1024 - 8 * 18 - 16)) + 40_u64;
        }
        if self.frame_sel.val() == 3_u64 {
            self.ip_total.next =
                bit_cast::<17, 16>(self.flat.val().get_bits::<16>(1024 - 8 * 22 - 16)) + 40_u64;
        }
        self.opcode.next = self.f4.val().get_bits::<8>(1024 - 8 * 42 - 8);

        // The length checks, each for all four framings side by side from registers and the
        // framing's result kept: stage B then only picks the first failing check. `F` is the
        // framing's IP length field (IPv4 total length; IPv6 payload length, 40 less than the
        // total), so every bound below is the total's bound less 40 for IPv6.
        self.v_short20.next = 0.into();
        self.v_short8.next = 0.into();
        self.v_short_ip.next = 0.into();
        self.v_th_ne.next = 0.into();
        self.v_th_lt.next = 0.into();
        self.v_over.next = 0.into();
        // Framing `c`'s IP length field in bits 17c (after 16, 20, 18 or 22 bytes).
        self.len_fields.next =
            bit_cast::<68, 16>(self.flat.val().get_bits::<16>(1024 - 8 * 16 - 16))
                | (bit_cast::<68, 16>(self.flat.val().get_bits::<16>(1024 - 8 * 20 - 16))
                    << 17_u64)
                | (bit_cast::<68, 16>(self.flat.val().get_bits::<16>(1024 - 8 * 18 - 16))
                    << 34_u64)
                | (bit_cast::<68, 16>(self.flat.val().get_bits::<16>(1024 - 8 * 22 - 16))
                    << 51_u64);
        for c in 0_usize..4 {
            self.len_f.next = self.len_fields.val().get_bits::<17>(17 * c);
            if self.len_f.val() < self.k_min20[c].val() {
                self.v_short20.next = self.v_short20.val().replace_bit(c, true);
            }
            if self.len_f.val() < self.k_min8[c].val() {
                self.v_short8.next = self.v_short8.val().replace_bit(c, true);
            }
            if self.len_f.val() < 20_u64 {
                self.v_short_ip.next = self.v_short_ip.val().replace_bit(c, true);
            }
            if self.len_f.val() != self.c_hlx[c].q.val() {
                self.v_th_ne.next = self.v_th_ne.val().replace_bit(c, true);
            }
            if self.len_f.val() < self.c_hlx[c].q.val() {
                self.v_th_lt.next = self.v_th_lt.val().replace_bit(c, true);
            }
            if self.len_f.val() > self.c_avail[c].q.val() {
                self.v_over.next = self.v_over.val().replace_bit(c, true);
            }
        }
        self.a_short20.d.next = false;
        self.a_short8.d.next = false;
        self.a_short_ip.d.next = false;
        self.a_th_ne.d.next = false;
        self.a_th_lt.d.next = false;
        self.a_over_frame.d.next = false;
        self.a_udp_bad.d.next = false;
        for c in 0_usize..4 {
            if self.frame_sel.val() == c.to_bits::<2>() {
                self.a_short20.d.next = self.v_short20.val().get_bit(c);
                self.a_short8.d.next = self.v_short8.val().get_bit(c);
                self.a_short_ip.d.next = self.v_short_ip.val().get_bit(c);
                self.a_th_ne.d.next = self.v_th_ne.val().get_bit(c);
                self.a_th_lt.d.next = self.v_th_lt.val().get_bit(c);
                self.a_over_frame.d.next = self.v_over.val().get_bit(c);
                self.a_udp_bad.d.next = self.c_udp_ne[c].q.val();
            }
        }
        // The frame's own length: too short for the Ethernet (and tag) header, for the IP
        // header after it (IPv6 40, IPv4 20), too long.
        self.a_flen_short.d.next = self.snap_len.q.val() < 14_u64;
        if self.vlan.val() {
            self.a_flen_short.d.next = self.snap_len.q.val() < 18_u64;
        }
        self.a_frame_short.d.next = self.snap_len.q.val() < 34_u64;
        if self.frame_sel.val() == 1_u64 {
            self.a_frame_short.d.next = self.snap_len.q.val() < 38_u64;
        }
        if self.frame_sel.val() == 2_u64 {
            self.a_frame_short.d.next = self.snap_len.q.val() < 54_u64;
        }
        if self.frame_sel.val() == 3_u64 {
            self.a_frame_short.d.next = self.snap_len.q.val() < 58_u64;
        }
        self.a_flen_long.d.next = self.flen.val() > self.k_max_frame.val();
        self.a_flen.d.next = self.flen.val();
        self.a_vlan.d.next = self.vlan.val();
        self.a_v4.d.next = self.is_v4.val();
        self.a_v6.d.next = self.is_v6.val();
        self.a_ip_total.d.next = self.ip_total.val();
        // The IPv4 header sum: the snapshot stage's three partial sums added at once, a
        // carry-save step and one adder, for both framings side by side.
        self.sum_u.next = (self.p_u_lo.q.val() ^ self.p_u_hi.q.val() ^ self.p_u_x.q.val())
            + (((self.p_u_lo.q.val() & self.p_u_hi.q.val())
                | (self.p_u_lo.q.val() & self.p_u_x.q.val())
                | (self.p_u_hi.q.val() & self.p_u_x.q.val()))
                << 1_u64);
        self.sum_t.next = (self.p_t_lo.q.val() ^ self.p_t_hi.q.val() ^ self.p_t_x.q.val())
            + (((self.p_t_lo.q.val() & self.p_t_hi.q.val())
                | (self.p_t_lo.q.val() & self.p_t_x.q.val())
                | (self.p_t_hi.q.val() & self.p_t_x.q.val()))
                << 1_u64);
        self.a_sum.d.next = self.sum_u.val();
        if self.vlan.val() {
            self.a_sum.d.next = self.sum_t.val();
        }
        // The framing picks one of the opcode positions' lengths (see `c_hl_th`).
        self.a_op_known.d.next = false;
        self.a_op_data.d.next = false;
        self.a_nak_bad.d.next = false;
        self.a_cm_bad.d.next = false;
        self.a_hl_th.d.next = 0.into();
        self.a_poff.d.next = 0.into();
        for c in 0_usize..4 {
            if self.frame_sel.val() == c.to_bits::<2>() {
                self.a_op_known.d.next = self.c_known[c].q.val();
                self.a_op_data.d.next = self.c_data[c].q.val();
                self.a_nak_bad.d.next = self.c_nak_bad[c].q.val();
                self.a_cm_bad.d.next = self.c_cm_bad[c].q.val();
                self.a_hl_th.d.next = self.c_hl_th[c].q.val();
                self.a_poff.d.next = self.c_poff[c].q.val();
            }
        }
        // Every length below the IP header is compared with the IP total length against a sum of
        // small numbers (IP header, UDP, BTH, ICRC, transport header), so no subtraction chain
        // sits in front of the comparisons.
        self.a_bth_bad.d.next = (self.f4.val().get_bits::<4>(1024 - 8 * 43 - 8) != 0_u64)
            | (self.f4.val().get_bits::<2>(1024 - 8 * 43 - 4) != 0_u64)
            | (self.f4.val().get_bits::<16>(1024 - 8 * 44 - 16) != self.k_pkey.val());
        self.a_dport_bad.d.next =
            self.f4.val().get_bits::<16>(1024 - 8 * 36 - 16) != self.udp_port.val();
        self.a_v6_nh_bad.d.next =
            self.f3.val().get_bits::<8>(1024 - 8 * 20 - 8) != self.k_udp.val();
        self.a_v6_ver_bad.d.next = self.f3.val().get_bits::<4>(1024 - 8 * 14 - 4) != 6_u64;
        self.a_v4_proto_bad.d.next =
            self.f3.val().get_bits::<8>(1024 - 8 * 23 - 8) != self.k_udp.val();
        self.a_v4_frag_bad.d.next =
            (self.f3.val().get_bits::<16>(1024 - 8 * 20 - 16) & 0x3FFF_u64) != 0_u64;
        self.a_v4_ver_bad.d.next = self.f3.val().get_bits::<8>(1024 - 8 * 14 - 8) != 0x45_u64;
        self.a_tci.d.next = self.flat.val().get_bits::<16>(1024 - 8 * 14 - 16);
        self.a_smac.d.next = self.flat.val().get_bits::<48>(1024 - 8 * 6 - 48);
        if self.is_v6.val() {
            self.a_sip.d.next = self.f3.val().get_bits::<128>(1024 - 8 * 22 - 128);
            self.a_dip.d.next = self.f3.val().get_bits::<128>(1024 - 8 * 38 - 128);
            self.a_ecn.d.next = self.f3.val().get_bits::<2>(1024 - 8 * 14 - 4 - 8);
        } else {
            self.a_sip.d.next = bits::<128>(0xFFFF_0000_0000_u64)
                | bit_cast::<128, 32>(self.f3.val().get_bits::<32>(1024 - 8 * 26 - 32));
            self.a_dip.d.next = bits::<128>(0xFFFF_0000_0000_u64)
                | bit_cast::<128, 32>(self.f3.val().get_bits::<32>(1024 - 8 * 30 - 32));
            self.a_ecn.d.next = self.f3.val().get_bits::<2>(1024 - 8 * 15 - 8);
        }
        self.a_sport.d.next = self.f4.val().get_bits::<16>(1024 - 8 * 34 - 16);
        self.a_op.d.next = self.opcode.val();
        self.a_se.d.next = self.f4.val().get_bit(1024 - 8 * 43 - 1);
        self.a_ackreq.d.next = self.f4.val().get_bit(1024 - 8 * 50 - 1);
        self.a_qp.d.next = self.f4.val().get_bits::<24>(1024 - 8 * 47 - 24);
        self.a_psn.d.next = self.f4.val().get_bits::<24>(1024 - 8 * 51 - 24);
        self.a_th.d.next = self.f4.val().get_bits::<384>(1024 - 8 * 54 - 384);
        self.a_port.d.next = self.snap_port.q.val();

        self.valid2.d.next = self.a_valid.q.val() & !self.reset.val();
        // ---- Stage B: the length compares and the first failing check, from registers only.
        // Ten 16-bit words sum to at most 10 · 0xFFFF, and their one's-complement sum
        // (the sum folded twice) is 0xFFFF exactly when the sum is a non-zero multiple of
        // 0xFFFF: ten parallel compares instead of two folding adds after this one.
        self.ip_sum.next = self.a_sum.q.val();
        self.ip_sum_ok.next = (self.ip_sum.val() == 65535_u64)
            | (self.ip_sum.val() == 131070_u64)
            | (self.ip_sum.val() == 196605_u64)
            | (self.ip_sum.val() == 262140_u64)
            | (self.ip_sum.val() == 327675_u64)
            | (self.ip_sum.val() == 393210_u64)
            | (self.ip_sum.val() == 458745_u64)
            | (self.ip_sum.val() == 524280_u64)
            | (self.ip_sum.val() == 589815_u64)
            | (self.ip_sum.val() == 655350_u64);

        // Checks from the last to the first: the earliest failing one is written last. Every
        // check but the header sum's is a flag from stage A.
        self.err.next = 0.into();
        if !self.a_op_data.q.val() & self.a_th_ne.q.val() {
            self.err.next = self.k_e_truncated.val();
        }
        if self.a_nak_bad.q.val() | self.a_cm_bad.q.val() {
            self.err.next = self.k_e_opcode.val();
        }
        if self.a_th_lt.q.val() {
            self.err.next = self.k_e_truncated.val();
        }
        if !self.a_op_known.q.val() {
            self.err.next = self.k_e_opcode.val();
        }
        if self.a_bth_bad.q.val() {
            self.err.next = self.k_e_bth.val();
        }
        if self.a_short20.q.val() {
            self.err.next = self.k_e_truncated.val();
        }
        if self.a_udp_bad.q.val() | self.a_dport_bad.q.val() {
            self.err.next = self.k_e_udp.val();
        }
        if self.a_short8.q.val() {
            self.err.next = self.k_e_truncated.val();
        }
        if self.a_v6.q.val() {
            if self.a_v6_nh_bad.q.val() {
                self.err.next = self.k_e_not_udp.val();
            }
            if self.a_over_frame.q.val() {
                self.err.next = self.k_e_truncated.val();
            }
            if self.a_v6_ver_bad.q.val() {
                self.err.next = self.k_e_ip_header.val();
            }
        } else {
            if self.a_v4_proto_bad.q.val() {
                self.err.next = self.k_e_not_udp.val();
            }
            if !self.ip_sum_ok.val() {
                self.err.next = self.k_e_ip_checksum.val();
            }
            if self.a_v4_frag_bad.q.val() {
                self.err.next = self.k_e_ip_header.val();
            }
            if self.a_over_frame.q.val() {
                self.err.next = self.k_e_truncated.val();
            }
            if self.a_v4_ver_bad.q.val() | self.a_short_ip.q.val() {
                self.err.next = self.k_e_ip_header.val();
            }
        }
        if self.a_frame_short.q.val() {
            self.err.next = self.k_e_truncated.val();
        }
        if !self.a_v4.q.val() & !self.a_v6.q.val() {
            self.err.next = self.k_e_ethertype.val();
        }
        if self.a_flen_short.q.val() {
            self.err.next = self.k_e_truncated.val();
        }
        if self.a_flen_long.q.val() {
            self.err.next = self.k_e_too_long.val();
        }

        // ---- Stage 2: the verdict without the ICRC, the ICRC's own verdict, the fields.
        self.err2.d.next = self.err.val();
        // The ICRC of the frame in stage B finished in the cycle before (`crc3`, after a last
        // step over the lanes in `lanes3`, a prefix).
        self.crc_good.next = self.k_crc_good[7].val();
        for n in 1_usize..8 {
            if self.lanes3.q.val().get_bit(n - 1) & !self.lanes3.q.val().get_bit(n) {
                self.crc_good.next = self.k_crc_good[n - 1].val();
            }
        }
        self.icrc_bad2.d.next = self.crc3.q.val() != self.crc_good.val();
        self.flen2.d.next = bit_cast::<16, 17>(self.a_flen.q.val());
        self.vlan2.d.next = self.a_vlan.q.val();
        self.tci2.d.next = self.a_tci.q.val();
        self.smac2.d.next = self.a_smac.q.val();
        self.v6_2.d.next = self.a_v6.q.val();
        self.sip2.d.next = self.a_sip.q.val();
        self.dip2.d.next = self.a_dip.q.val();
        self.ecn2.d.next = self.a_ecn.q.val();
        self.sport2.d.next = self.a_sport.q.val();
        self.op2.d.next = self.a_op.q.val();
        self.se2.d.next = self.a_se.q.val();
        self.ackreq2.d.next = self.a_ackreq.q.val();
        self.qp2.d.next = self.a_qp.q.val();
        self.psn2.d.next = self.a_psn.q.val();
        self.th2.d.next = self.a_th.q.val();
        self.poff2.d.next = self.a_poff.q.val();
        self.plen2.d.next = bit_cast::<16, 17>(self.a_ip_total.q.val() - self.a_hl_th.q.val());
        self.port2.d.next = self.a_port.q.val();
        if self.reset.val() {
            self.beat.d.next = 0.into();
            self.bytes.d.next = 0.into();
            self.end1.d.next = false;
        }

        // ---- Outputs: stage 2 plus the finished ICRC (both registered at the same edge).
        self.out_valid.next = self.valid2.q.val();
        self.out_error.next = self.err2.q.val();
        if (self.err2.q.val() == 0_u64) & self.icrc_bad2.q.val() {
            self.out_error.next = self.k_e_icrc.val();
        }
        self.out_frame_len.next = self.flen2.q.val();
        self.out_vlan.next = self.vlan2.q.val();
        self.out_vlan_tci.next = self.tci2.q.val();
        self.out_src_mac.next = self.smac2.q.val();
        self.out_ipv6.next = self.v6_2.q.val();
        self.out_src_ip.next = self.sip2.q.val();
        self.out_dst_ip.next = self.dip2.q.val();
        self.out_ecn.next = self.ecn2.q.val();
        self.out_src_port.next = self.sport2.q.val();
        self.out_opcode.next = self.op2.q.val();
        self.out_solicited.next = self.se2.q.val();
        self.out_ack_req.next = self.ackreq2.q.val();
        self.out_dest_conn.next = self.qp2.q.val();
        self.out_psn.next = self.psn2.q.val();
        self.out_th.next = self.th2.q.val();
        self.out_payload_offset.next = self.poff2.q.val();
        self.out_payload_len.next = self.plen2.q.val();
        self.out_port.next = self.port2.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RTL masks variant fields only in beats 1 to 7 of the realigned stream (`vj_hot`):
    /// beat 0 is the LRH, folded into the CRC's initial state, and no variant field lies past
    /// beat 7.
    #[test]
    fn variant_fields_lie_in_beats_one_to_seven() {
        for v6 in [false, true] {
            assert_eq!(stream_mask(v6, 0), 0);
            assert!((1..8).any(|j| stream_mask(v6, j) != 0));
            assert!((8..32).all(|j| stream_mask(v6, j) == 0));
        }
    }
}
