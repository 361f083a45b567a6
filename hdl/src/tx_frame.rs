//! TX frame builder: one request (every header field, the transport header bytes and a payload
//! length) plus a payload stream in, one complete frame out on AXI4-Stream, byte for byte what
//! [`ferroce_proto::wire::FrameRepr::emit`] builds: Ethernet (optional 802.1Q), IPv4 with its
//! checksum or IPv6, UDP (checksum 0), BTH, the transport header, the payload realigned behind
//! the headers, and the ICRC.
//!
//! A pipeline, one 64-bit beat per cycle, in which consecutive frames overlap so that
//! back-to-back frames leave with no idle cycle between them:
//! - request: the request is registered (`r_*`) whenever that register is free;
//! - assembly: the header vector (≤ 128 bytes, big-endian), the IPv4 checksum and the frame's
//!   lengths are built from it into the next-frame registers (`nx_*`); the header vector goes
//!   into one of two header registers, the one the frame being generated does not read;
//! - generation: beat k takes header bytes below `hlen`, payload bytes behind them (a carry
//!   register realigns the payload stream, which is packed from lane 0), zeros elsewhere. The
//!   next frame is loaded in the cycle that generates the last beat of the one before: its
//!   lengths and counters are copied in, and its header is read where it was assembled;
//! - ICRC: the generated beats, realigned as in the RX parser (shift by 6 bytes, or 2 behind a
//!   VLAN tag, variant fields forced to ones), are registered and then fed to the CRC step:
//!   whole beats through [`Crc32Full`], the only logic in the running CRC's loop, and the one
//!   partial beat of a frame through [`Crc32Tail`] beside it, straight into the frame's output
//!   context. A frame's last step (its final bytes, from a flush register) runs in the cycle
//!   after its last beat, while the next frame's first two beats (which carry no ICRC bytes) are
//!   generated, so the two frames never need the CRC step in the same cycle;
//! - output: a four-stage elastic buffer. Each beat carries its frame's parity; two output
//!   contexts (frame length, beat count, ICRC, MAC port) by parity let one frame drain while
//!   the next is generated. `m_tdest` is the port of the context of the beat on offer, so
//!   every beat of a frame carries the same one. The ICRC lanes are filled at the output from
//!   the context's CRC, which is final before any beat holding them can be offered (below).
//!   The finished beat (data, keep, last, port) then goes through a register slice
//!   ([`SkidBuffer`]) to the MAC, so that `m_tready` drives no logic but the slice's.
//!
//! Back-pressure: generation stops when the buffer is full or a needed payload beat is
//! missing; the output follows AXI4-Stream rules (a beat, once offered, stays until taken).
//! The payload stream is the concatenation of the frames' payloads in request order.

use crate::crc::{Crc32Full, Crc32Tail};
use crate::rx_engine::PORT_BITS;
use crate::rx_parse::{CRC_AFTER_LRH, stream_mask};
use crate::skid::SkidBuffer;
use ferroce_proto::model::TX_TTL;
use ferroce_proto::wire::{bth, ethernet, ip, udp};
use rust_hdl::prelude::*;

/// An output beat in the register slice: data, keep, last and the port.
const OUT_BEAT_BITS: usize = 64 + 8 + 1 + PORT_BITS;

/// The TX frame builder.
#[derive(LogicBlock)]
pub struct TxFrameBuilder {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset.
    pub reset: Signal<In, Bit>,
    /// A frame is requested (fields below valid).
    pub req_valid: Signal<In, Bit>,
    /// The builder takes the request this cycle.
    pub req_ready: Signal<Out, Bit>,
    /// Destination MAC.
    pub req_dst_mac: Signal<In, Bits<48>>,
    /// Source MAC.
    pub req_src_mac: Signal<In, Bits<48>>,
    /// Add an 802.1Q tag.
    pub req_vlan: Signal<In, Bit>,
    /// Its TCI.
    pub req_vlan_tci: Signal<In, Bits<16>>,
    /// IPv6 (else IPv4).
    pub req_ipv6: Signal<In, Bit>,
    /// Source IP (IPv4 in the low 32 bits when IPv4).
    pub req_src_ip: Signal<In, Bits<128>>,
    /// Destination IP (IPv4 in the low 32 bits when IPv4).
    pub req_dst_ip: Signal<In, Bits<128>>,
    /// DSCP.
    pub req_dscp: Signal<In, Bits<6>>,
    /// ECN codepoint.
    pub req_ecn: Signal<In, Bits<2>>,
    /// UDP source port.
    pub req_src_port: Signal<In, Bits<16>>,
    /// UDP destination port.
    pub req_dst_port: Signal<In, Bits<16>>,
    /// BTH opcode.
    pub req_opcode: Signal<In, Bits<8>>,
    /// BTH solicited bit.
    pub req_solicited: Signal<In, Bit>,
    /// BTH destination connection.
    pub req_dest_conn: Signal<In, Bits<24>>,
    /// BTH AckReq bit.
    pub req_ack_req: Signal<In, Bit>,
    /// BTH PSN.
    pub req_psn: Signal<In, Bits<24>>,
    /// Transport header bytes, first byte in the top bits; `req_th_len` of them are sent.
    pub req_th: Signal<In, Bits<384>>,
    /// Transport header length in bytes (≤ 48).
    pub req_th_len: Signal<In, Bits<6>>,
    /// Payload length in bytes.
    pub req_payload_len: Signal<In, Bits<14>>,
    /// The MAC port the frame leaves on (`m_tdest`).
    pub req_port: Signal<In, Bits<PORT_BITS>>,
    /// Payload stream, packed from lane 0 (only the valid bytes of the last beat count).
    pub s_pay_tdata: Signal<In, Bits<64>>,
    /// Payload beat valid.
    pub s_pay_tvalid: Signal<In, Bit>,
    /// The builder takes the payload beat.
    pub s_pay_tready: Signal<Out, Bit>,
    /// Frame out.
    pub m_tdata: Signal<Out, Bits<64>>,
    /// Byte enables (only the last beat is partial).
    pub m_tkeep: Signal<Out, Bits<8>>,
    /// Beat valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Last beat.
    pub m_tlast: Signal<Out, Bit>,
    /// AXI4-Stream `tdest`: the MAC port of the frame (the request's `req_port`), the same on
    /// every beat of a frame.
    pub m_tdest: Signal<Out, Bits<PORT_BITS>>,
    /// The receiver takes the beat.
    pub m_tready: Signal<In, Bit>,
    /// A request, a frame or a beat is still inside.
    pub busy: Signal<Out, Bit>,

    k_crc_lrh: Constant<Bits<32>>,
    k_vlan: Constant<Bits<16>>,
    k_ipv4: Constant<Bits<16>>,
    k_ipv6: Constant<Bits<16>>,
    k_udp: Constant<Bits<8>>,
    k_ttl: Constant<Bits<8>>,
    // The IPv4 header sum's fixed part: version and header length, flags, TTL and protocol,
    // and the 44 bytes the total length adds to the transport header and payload.
    k_ip_fixed: Constant<Bits<20>>,
    k_pkey: Constant<Bits<16>>,
    // Header bytes in front of the transport header, by IP version and VLAN tag.
    k_hdr_v4: Constant<Bits<16>>,
    k_hdr_v4_vlan: Constant<Bits<16>>,
    k_hdr_v6: Constant<Bits<16>>,
    k_hdr_v6_vlan: Constant<Bits<16>>,
    k_mask_v4: [Constant<Bits<64>>; 8],
    k_mask_v6: [Constant<Bits<64>>; 8],

    // The registered request.
    r_valid: DFF<Bit>,
    r_dst_mac: DFF<Bits<48>>,
    r_src_mac: DFF<Bits<48>>,
    r_vlan: DFF<Bit>,
    r_tci: DFF<Bits<16>>,
    r_v6: DFF<Bit>,
    r_sip: DFF<Bits<128>>,
    r_dip: DFF<Bits<128>>,
    r_tos: DFF<Bits<8>>,
    r_sport: DFF<Bits<16>>,
    r_dport: DFF<Bits<16>>,
    r_opcode: DFF<Bits<8>>,
    r_se: DFF<Bits<1>>,
    r_qp: DFF<Bits<24>>,
    r_ackreq: DFF<Bits<1>>,
    r_psn: DFF<Bits<24>>,
    r_th: DFF<Bits<384>>,
    r_thlen: DFF<Bits<16>>,
    r_plen: DFF<Bits<16>>,
    r_l4len: DFF<Bits<16>>,
    r_ck: DFF<Bits<20>>,
    // The header length, frame length and beat counts, computed like `r_l4len` (the header
    // length's constant picked by IP version and VLAN, then one add): assembly only copies
    // them, where it had run three carry chains in a row.
    r_hl: DFF<Bits<16>>,
    r_flen: DFF<Bits<16>>,
    r_nbeats: DFF<Bits<13>>,
    r_pbeats: DFF<Bits<13>>,
    r_port: DFF<Bits<PORT_BITS>>,
    // The request was registered in the last cycle: its lengths and IPv4 header sum
    // (`r_l4len`, `r_ck`) are computed from the registered fields in this one, so that no
    // adder follows the request's way in (in the core, a mux between two engines).
    r_fresh: DFF<Bit>,

    // The next frame, assembled (its header in `hdr0` or `hdr1`, see below).
    nx_valid: DFF<Bit>,
    nx_hlen: DFF<Bits<16>>,
    nx_hbeat: DFF<Bits<13>>,
    nx_rsh: DFF<Bits<3>>,
    nx_flen: DFF<Bits<16>>,
    nx_nbeats: DFF<Bits<13>>,
    nx_pay_beats: DFF<Bits<13>>,
    nx_vtotal: DFF<Bits<17>>,
    nx_vlan: DFF<Bit>,
    nx_v6: DFF<Bit>,
    // Header and payload bytes.
    nx_pleft: DFF<Bits<16>>,
    nx_port: DFF<Bits<PORT_BITS>>,

    // The frame being generated. Its parity `g_par` also says which header register it reads:
    // `hdr1` when set, else `hdr0`; the next frame is assembled into the other. A frame's
    // header thus stays where it was assembled, and loading the next frame copies no header:
    // a 1,024-bit copy under the load decision (which waits for the output buffer's
    // handshake) was the most heavily loaded net of the whole core (1,254 loads).
    g_valid: DFF<Bit>,
    g_par: DFF<Bit>,
    hdr0: DFF<Bits<1024>>,
    hdr1: DFF<Bits<1024>>,
    // The header's 64 bits for beat k, selected a beat ahead (so no 16:1 select of the header
    // waits for the beat counter in the cycle the beat is formed).
    hdr_beat: DFF<Bits<64>>,
    // Bytes of the header and of header and payload from beat k on (`len - 8k`, zero once
    // past): set at load, 8 less with every beat, so that the lane masks come from flip-flops
    // and flat logic, not from a subtraction and a compare behind the beat counter.
    h_left: DFF<Bits<16>>,
    p_left: DFF<Bits<16>>,
    // The lanes of beat k below `hlen` and below `hlen + plen` (a prefix each), registered
    // beside `h_left` and `p_left`: decided from their old values one step ahead, so that
    // the beat's masks leave flip-flops.
    h_lanes: DFF<Bits<8>>,
    p_lanes: DFF<Bits<8>>,
    hbeat: DFF<Bits<13>>,
    rsh: DFF<Bits<3>>,
    nbeats: DFF<Bits<13>>,
    pay_beats: DFF<Bits<13>>,
    vtotal: DFF<Bits<17>>,
    g_vlan: DFF<Bit>,
    g_v6: DFF<Bit>,
    k: DFF<Bits<13>>,
    // `k` one-hot while it is below 15 (zero after: beat k + 1 then holds no header): it
    // picks the next header word in one AND-OR level, where comparing the 13-bit count with
    // each index put the counter at the start of the transmit path's longest paths.
    k_hot: DFF<Bits<15>>,
    consumed: DFF<Bits<13>>,
    // Compares of the beat counters, registered beside them (set from the values being loaded,
    // or from compares of the old ones one step ahead), so that no carry chain on a counter
    // stands in front of the push and next-frame decisions: `k >= hbeat`,
    // `consumed < pay_beats`, `k + 1 == nbeats`.
    k_ge_hbeat: DFF<Bit>,
    pay_left: DFF<Bit>,
    at_last: DFF<Bit>,
    carry: DFF<Bits<64>>,
    prev: DFF<Bits<64>>,
    vj: DFF<Bits<13>>,

    // A finished frame's last ICRC step, waiting one cycle for the CRC step.
    fl_pend: DFF<Bit>,
    fl_raw: DFF<Bits<64>>,
    fl_j: DFF<Bits<13>>,
    fl_vtotal: DFF<Bits<17>>,
    fl_v6: DFF<Bit>,
    fl_par: DFF<Bit>,

    // The CRC step's input register and the running CRC.
    vp_go: DFF<Bit>,
    vp_final: DFF<Bit>,
    vp_par: DFF<Bit>,
    vp_data: DFF<Bits<64>>,
    vp_lanes: DFF<Bits<8>>,
    vp_full: DFF<Bit>,
    crc: DFF<Bits<32>>,

    // Output contexts by frame parity.
    o0_live: DFF<Bit>,
    o0_flen: DFF<Bits<16>>,
    o0_nbeats: DFF<Bits<13>>,
    o0_crc: DFF<Bits<32>>,
    o0_port: DFF<Bits<PORT_BITS>>,
    o1_live: DFF<Bit>,
    o1_flen: DFF<Bits<16>>,
    o1_nbeats: DFF<Bits<13>>,
    o1_crc: DFF<Bits<32>>,
    o1_port: DFF<Bits<PORT_BITS>>,

    // The output buffer.
    d1_valid: DFF<Bit>,
    d1_data: DFF<Bits<64>>,
    d1_k: DFF<Bits<13>>,
    d1_par: DFF<Bit>,
    d2_valid: DFF<Bit>,
    d2_data: DFF<Bits<64>>,
    d2_k: DFF<Bits<13>>,
    d2_par: DFF<Bit>,
    d3_valid: DFF<Bit>,
    d3_data: DFF<Bits<64>>,
    d3_k: DFF<Bits<13>>,
    d3_par: DFF<Bit>,
    d4_valid: DFF<Bit>,
    d4_data: DFF<Bits<64>>,
    // Where the last stage's beat sits in its frame, worked out as it moves in (its frame's
    // length and beat count are in the output context by then; only the ICRC may still be
    // coming): the lanes kept, the lanes holding ICRC bytes and which byte each holds, and
    // whether it is the frame's last beat. The output then only picks the ICRC's bytes.
    d4_keep: DFF<Bits<8>>,
    d4_ic_en: DFF<Bits<8>>,
    d4_ic_sel: DFF<Bits<16>>,
    d4_last: DFF<Bit>,
    d4_par: DFF<Bit>,
    // A CRC step's result on its way to the output context, registered so that the tail
    // step's XOR trees and select end at a flip-flop, not at both contexts' inputs.
    st_go: DFF<Bit>,
    st_par: DFF<Bit>,
    st_crc: DFF<Bits<32>>,
    // The whole-beat step's result beside the tail's (`st_crc`), picked after the register:
    // a multiplexer between them behind both matrices was the transmit path's longest path.
    st_crc_full: DFF<Bits<32>>,
    st_full: DFF<Bit>,
    crc_full: Crc32Full,
    crc_tail: Crc32Tail,
    // The output register slice: the last buffer stage moves on when the slice has room (a
    // flip-flop), so the MAC's `tready` reaches only the slice and not the buffer moves, the
    // generator's push and the next frame's 1,024-bit loads behind them.
    out_slice: SkidBuffer<Bits<OUT_BEAT_BITS>>,

    load: Signal<Local, Bit>,
    nx_free: Signal<Local, Bit>,
    last_push: Signal<Local, Bit>,
    o_free: Signal<Local, Bit>,
    cksum: Signal<Local, Bits<16>>,
    pay_ok: Signal<Local, Bit>,
    take4: Signal<Local, Bit>,
    free4: Signal<Local, Bit>,
    mv34: Signal<Local, Bit>,
    free3: Signal<Local, Bit>,
    mv23: Signal<Local, Bit>,
    free2: Signal<Local, Bit>,
    mv12: Signal<Local, Bit>,
    free1: Signal<Local, Bit>,
    push: Signal<Local, Bit>,
    running: Signal<Local, Bit>,
    aligned: Signal<Local, Bits<64>>,
    need_pay: Signal<Local, Bit>,
    beat_out: Signal<Local, Bits<64>>,
    hdr_next: Signal<Local, Bits<64>>,
    hdr_part: [Signal<Local, Bits<64>>; 15],
    pay_beat: Signal<Local, Bits<64>>,
    shift_r: Signal<Local, Bits<3>>,
    h_mask: Signal<Local, Bits<64>>,
    p_mask: Signal<Local, Bits<64>>,
    lane: Signal<Local, Bits<64>>,
    l4: Signal<Local, Bits<1024>>,
    l3: Signal<Local, Bits<1024>>,
    // The frame's header vector (Ethernet in front of `l3`), for whichever header register
    // assembly writes.
    hdr_asm: Signal<Local, Bits<1024>>,
    ip4: Signal<Local, Bits<160>>,
    ip6: Signal<Local, Bits<320>>,
    eth: Signal<Local, Bits<144>>,
    ip_len: Signal<Local, Bits<16>>,
    l4_len: Signal<Local, Bits<16>>,
    // Ethernet, VLAN and IP header bytes of the registered request.
    q_hconst: Signal<Local, Bits<16>>,
    // Its transport header and payload bytes.
    q_tp: Signal<Local, Bits<16>>,
    sum: Signal<Local, Bits<20>>,
    q_l4: Signal<Local, Bits<16>>,
    q_tos: Signal<Local, Bits<8>>,
    q_sa: Signal<Local, Bits<20>>,
    q_sb: Signal<Local, Bits<20>>,
    q_sc: Signal<Local, Bits<20>>,
    v_go: Signal<Local, Bit>,
    v_src: Signal<Local, Bits<64>>,
    v_data: Signal<Local, Bits<64>>,
    v_j: Signal<Local, Bits<13>>,
    v_v6: Signal<Local, Bit>,
    v_vt: Signal<Local, Bits<17>>,
    v_base: Signal<Local, Bits<16>>,
    v_lanes: Signal<Local, Bits<8>>,
    v_pos: Signal<Local, Bits<17>>,
    v_room: Signal<Local, Bits<17>>,
    v_n: Signal<Local, Bits<3>>,
    st_result: Signal<Local, Bits<32>>,
    fl_next: Signal<Local, Bits<64>>,
    o_crc: Signal<Local, Bits<32>>,
    o_port: Signal<Local, Bits<PORT_BITS>>,
    last4: Signal<Local, Bit>,
    icrc: Signal<Local, Bits<32>>,
    out_data: Signal<Local, Bits<64>>,
    out_keep: Signal<Local, Bits<8>>,
    // The beat's sideband (keep, last, port) packed into one word before it is widened: the
    // same wires, but no shift of the 76-bit beat by part of a word in every simulated cycle.
    out_side: Signal<Local, Bits<16>>,
    // The third stage's beat against its frame's output context (see `d4_keep`).
    f3_flen: Signal<Local, Bits<16>>,
    f3_nbeats: Signal<Local, Bits<13>>,
    f3_at: Signal<Local, Bits<16>>,
    bi3: Signal<Local, Bits<16>>,
    dif3: Signal<Local, Bits<16>>,
    lane_sel: Signal<Local, Bits<16>>,
    keep3: Signal<Local, Bits<8>>,
    ic_en3: Signal<Local, Bits<8>>,
    ic_sel3: Signal<Local, Bits<16>>,
}

/// Ethernet (with or without a VLAN tag), IP (`ip_header` bytes), UDP and BTH header bytes.
fn lower_headers(ip_header: usize, vlan: bool) -> u64 {
    let eth = ethernet::HEADER_LEN + if vlan { ethernet::VLAN_TAG_LEN } else { 0 };
    (eth + ip_header + udp::HEADER_LEN + bth::HEADER_LEN) as u64
}

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.to_bits())
}

impl Default for TxFrameBuilder {
    fn default() -> Self {
        TxFrameBuilder {
            clock: Default::default(),
            reset: Default::default(),
            req_valid: Default::default(),
            req_ready: Default::default(),
            req_dst_mac: Default::default(),
            req_src_mac: Default::default(),
            req_vlan: Default::default(),
            req_vlan_tci: Default::default(),
            req_ipv6: Default::default(),
            req_src_ip: Default::default(),
            req_dst_ip: Default::default(),
            req_dscp: Default::default(),
            req_ecn: Default::default(),
            req_src_port: Default::default(),
            req_dst_port: Default::default(),
            req_opcode: Default::default(),
            req_solicited: Default::default(),
            req_dest_conn: Default::default(),
            req_ack_req: Default::default(),
            req_psn: Default::default(),
            req_th: Default::default(),
            req_th_len: Default::default(),
            req_payload_len: Default::default(),
            req_port: Default::default(),
            s_pay_tdata: Default::default(),
            s_pay_tvalid: Default::default(),
            s_pay_tready: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tvalid: Default::default(),
            m_tlast: Default::default(),
            m_tdest: Default::default(),
            m_tready: Default::default(),
            busy: Default::default(),
            k_crc_lrh: k(CRC_AFTER_LRH as u64),
            k_vlan: k(ethernet::ETHERTYPE_VLAN as u64),
            k_ipv4: k(ethernet::ETHERTYPE_IPV4 as u64),
            k_ipv6: k(ethernet::ETHERTYPE_IPV6 as u64),
            k_udp: k(ip::PROTO_UDP as u64),
            k_ttl: k(TX_TTL as u64),
            k_ip_fixed: k(0x4500
                + 0x4000
                + 24
                + 20
                + ((TX_TTL as u64) << 8)
                + ip::PROTO_UDP as u64),
            k_pkey: k(bth::DEFAULT_PKEY as u64),
            k_hdr_v4: k(lower_headers(ip::IPV4_HEADER_LEN, false)),
            k_hdr_v4_vlan: k(lower_headers(ip::IPV4_HEADER_LEN, true)),
            k_hdr_v6: k(lower_headers(ip::IPV6_HEADER_LEN, false)),
            k_hdr_v6_vlan: k(lower_headers(ip::IPV6_HEADER_LEN, true)),
            k_mask_v4: core::array::from_fn(|j| k(stream_mask(false, j))),
            k_mask_v6: core::array::from_fn(|j| k(stream_mask(true, j))),
            r_valid: Default::default(),
            r_dst_mac: Default::default(),
            r_src_mac: Default::default(),
            r_vlan: Default::default(),
            r_tci: Default::default(),
            r_v6: Default::default(),
            r_sip: Default::default(),
            r_dip: Default::default(),
            r_tos: Default::default(),
            r_sport: Default::default(),
            r_dport: Default::default(),
            r_opcode: Default::default(),
            r_se: Default::default(),
            r_qp: Default::default(),
            r_ackreq: Default::default(),
            r_psn: Default::default(),
            r_th: Default::default(),
            r_thlen: Default::default(),
            r_plen: Default::default(),
            r_l4len: Default::default(),
            r_ck: Default::default(),
            r_hl: Default::default(),
            r_flen: Default::default(),
            r_nbeats: Default::default(),
            r_pbeats: Default::default(),
            q_hconst: Default::default(),
            q_tp: Default::default(),
            r_fresh: Default::default(),
            r_port: Default::default(),
            nx_valid: Default::default(),
            nx_hlen: Default::default(),
            nx_hbeat: Default::default(),
            nx_rsh: Default::default(),
            nx_flen: Default::default(),
            nx_nbeats: Default::default(),
            nx_pay_beats: Default::default(),
            nx_vtotal: Default::default(),
            nx_vlan: Default::default(),
            nx_v6: Default::default(),
            nx_pleft: Default::default(),
            nx_port: Default::default(),
            g_valid: Default::default(),
            g_par: Default::default(),
            hdr0: Default::default(),
            hdr1: Default::default(),
            hdr_beat: Default::default(),
            h_left: Default::default(),
            p_left: Default::default(),
            h_lanes: Default::default(),
            p_lanes: Default::default(),
            hbeat: Default::default(),
            rsh: Default::default(),
            nbeats: Default::default(),
            pay_beats: Default::default(),
            vtotal: Default::default(),
            g_vlan: Default::default(),
            g_v6: Default::default(),
            k: Default::default(),
            k_hot: Default::default(),
            consumed: Default::default(),
            k_ge_hbeat: Default::default(),
            pay_left: Default::default(),
            at_last: Default::default(),
            carry: Default::default(),
            prev: Default::default(),
            vj: Default::default(),
            fl_pend: Default::default(),
            fl_raw: Default::default(),
            fl_j: Default::default(),
            fl_vtotal: Default::default(),
            fl_v6: Default::default(),
            fl_par: Default::default(),
            vp_go: Default::default(),
            vp_final: Default::default(),
            vp_par: Default::default(),
            vp_data: Default::default(),
            vp_lanes: Default::default(),
            vp_full: Default::default(),
            crc: Default::default(),
            o0_live: Default::default(),
            o0_flen: Default::default(),
            o0_nbeats: Default::default(),
            o0_crc: Default::default(),
            o0_port: Default::default(),
            o1_live: Default::default(),
            o1_flen: Default::default(),
            o1_nbeats: Default::default(),
            o1_crc: Default::default(),
            o1_port: Default::default(),
            d1_valid: Default::default(),
            d1_data: Default::default(),
            d1_k: Default::default(),
            d1_par: Default::default(),
            d2_valid: Default::default(),
            d2_data: Default::default(),
            d2_k: Default::default(),
            d2_par: Default::default(),
            d3_valid: Default::default(),
            d3_data: Default::default(),
            d3_k: Default::default(),
            d3_par: Default::default(),
            d4_valid: Default::default(),
            d4_data: Default::default(),
            d4_keep: Default::default(),
            d4_ic_en: Default::default(),
            d4_ic_sel: Default::default(),
            d4_last: Default::default(),
            f3_flen: Default::default(),
            f3_nbeats: Default::default(),
            f3_at: Default::default(),
            bi3: Default::default(),
            dif3: Default::default(),
            lane_sel: Default::default(),
            keep3: Default::default(),
            ic_en3: Default::default(),
            ic_sel3: Default::default(),
            d4_par: Default::default(),
            st_go: Default::default(),
            st_par: Default::default(),
            st_crc: Default::default(),
            st_crc_full: Default::default(),
            st_full: Default::default(),
            crc_full: Default::default(),
            crc_tail: Default::default(),
            out_slice: Default::default(),
            load: Default::default(),
            nx_free: Default::default(),
            last_push: Default::default(),
            o_free: Default::default(),
            cksum: Default::default(),
            pay_ok: Default::default(),
            take4: Default::default(),
            free4: Default::default(),
            mv34: Default::default(),
            free3: Default::default(),
            mv23: Default::default(),
            free2: Default::default(),
            mv12: Default::default(),
            free1: Default::default(),
            push: Default::default(),
            running: Default::default(),
            aligned: Default::default(),
            need_pay: Default::default(),
            beat_out: Default::default(),
            hdr_next: Default::default(),
            hdr_part: Default::default(),
            pay_beat: Default::default(),
            shift_r: Default::default(),
            h_mask: Default::default(),
            p_mask: Default::default(),
            lane: Default::default(),
            l4: Default::default(),
            l3: Default::default(),
            hdr_asm: Default::default(),
            ip4: Default::default(),
            ip6: Default::default(),
            eth: Default::default(),
            ip_len: Default::default(),
            l4_len: Default::default(),
            sum: Default::default(),
            q_l4: Default::default(),
            q_tos: Default::default(),
            q_sa: Default::default(),
            q_sb: Default::default(),
            q_sc: Default::default(),
            v_go: Default::default(),
            v_src: Default::default(),
            v_data: Default::default(),
            v_j: Default::default(),
            v_v6: Default::default(),
            v_vt: Default::default(),
            v_base: Default::default(),
            v_lanes: Default::default(),
            v_pos: Default::default(),
            v_room: Default::default(),
            v_n: Default::default(),
            st_result: Default::default(),
            fl_next: Default::default(),
            o_crc: Default::default(),
            o_port: Default::default(),
            last4: Default::default(),
            icrc: Default::default(),
            out_data: Default::default(),
            out_keep: Default::default(),
            out_side: Default::default(),
        }
    }
}

impl Logic for TxFrameBuilder {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            r_valid,
            r_dst_mac,
            r_src_mac,
            r_vlan,
            r_tci,
            r_v6,
            r_sip,
            r_dip,
            r_tos,
            r_sport,
            r_dport,
            r_opcode,
            r_se,
            r_qp,
            r_ackreq,
            r_psn,
            r_th,
            r_thlen,
            r_plen,
            r_l4len,
            r_ck,
            r_hl,
            r_flen,
            r_nbeats,
            r_pbeats,
            r_port,
            r_fresh,
            nx_valid,
            nx_hlen,
            nx_hbeat,
            nx_rsh,
            nx_flen,
            nx_nbeats,
            nx_pay_beats,
            nx_vtotal,
            nx_vlan,
            nx_v6,
            nx_pleft,
            nx_port,
            g_valid,
            g_par,
            hdr0,
            hdr1,
            hdr_beat,
            h_left,
            p_left,
            h_lanes,
            p_lanes,
            hbeat,
            rsh,
            nbeats,
            pay_beats,
            vtotal,
            g_vlan,
            g_v6,
            k,
            k_hot,
            consumed,
            k_ge_hbeat,
            pay_left,
            at_last,
            carry,
            prev,
            vj,
            fl_pend,
            fl_raw,
            fl_j,
            fl_vtotal,
            fl_v6,
            fl_par,
            vp_go,
            vp_final,
            vp_par,
            vp_data,
            vp_lanes,
            vp_full,
            crc,
            o0_live,
            o0_flen,
            o0_nbeats,
            o0_crc,
            o0_port,
            o1_live,
            o1_flen,
            o1_nbeats,
            o1_crc,
            o1_port,
            d1_valid,
            d1_data,
            d1_k,
            d1_par,
            d2_valid,
            d2_data,
            d2_k,
            d2_par,
            d3_valid,
            d3_data,
            d3_k,
            d3_par,
            d4_valid,
            d4_data,
            d4_keep,
            d4_ic_en,
            d4_ic_sel,
            d4_last,
            d4_par,
            st_go,
            st_par,
            st_crc,
            st_crc_full,
            st_full
        );
        self.s_pay_tready.next = false;

        // ---- Request: registered whenever the register is free.
        self.req_ready.next = !self.r_valid.q.val();
        self.q_tos.next =
            (bit_cast::<8, 6>(self.req_dscp.val()) << 2_u64) | bit_cast::<8, 2>(self.req_ecn.val());
        // The lengths and the IPv4 header sum (every word but the checksum) in every cycle from
        // the registered request, as an adder tree, so that assembly only folds it. They are
        // valid from the cycle after the request was registered (`r_fresh`).
        self.q_l4.next = self.r_thlen.q.val() + self.r_plen.q.val() + 24_u64;
        // Every word but the checksum: the fixed part, the ToS byte and the total length
        // (transport header + payload + 44), as a tree of two-input adds.
        self.q_sa.next = (bit_cast::<20, 16>(self.r_thlen.q.val())
            + bit_cast::<20, 16>(self.r_plen.q.val()))
            + (bit_cast::<20, 8>(self.r_tos.q.val()) + self.k_ip_fixed.val());
        self.q_sb.next = bit_cast::<20, 16>(self.r_sip.q.val().get_bits::<16>(16))
            + bit_cast::<20, 16>(self.r_sip.q.val().get_bits::<16>(0));
        self.q_sc.next = bit_cast::<20, 16>(self.r_dip.q.val().get_bits::<16>(16))
            + bit_cast::<20, 16>(self.r_dip.q.val().get_bits::<16>(0));
        self.r_l4len.d.next = self.q_l4.val();
        self.q_hconst.next = self.k_hdr_v4.val();
        if self.r_v6.q.val() & self.r_vlan.q.val() {
            self.q_hconst.next = self.k_hdr_v6_vlan.val();
        }
        if self.r_v6.q.val() & !self.r_vlan.q.val() {
            self.q_hconst.next = self.k_hdr_v6.val();
        }
        if !self.r_v6.q.val() & self.r_vlan.q.val() {
            self.q_hconst.next = self.k_hdr_v4_vlan.val();
        }
        self.q_tp.next = self.r_thlen.q.val() + self.r_plen.q.val();
        self.r_hl.d.next = self.r_thlen.q.val() + self.q_hconst.val();
        self.r_flen.d.next = self.q_tp.val() + (self.q_hconst.val() + 4_u64);
        self.r_nbeats.d.next =
            bit_cast::<13, 16>((self.q_tp.val() + (self.q_hconst.val() + 11_u64)) >> 3_u64);
        self.r_pbeats.d.next = bit_cast::<13, 16>((self.r_plen.q.val() + 7_u64) >> 3_u64);
        self.r_ck.d.next = self.q_sa.val() + (self.q_sb.val() + self.q_sc.val());
        self.r_fresh.d.next = false;
        if self.req_valid.val() & !self.r_valid.q.val() {
            self.r_fresh.d.next = true;
            self.r_valid.d.next = true;
            self.r_dst_mac.d.next = self.req_dst_mac.val();
            self.r_src_mac.d.next = self.req_src_mac.val();
            self.r_vlan.d.next = self.req_vlan.val();
            self.r_tci.d.next = self.req_vlan_tci.val();
            self.r_v6.d.next = self.req_ipv6.val();
            self.r_sip.d.next = self.req_src_ip.val();
            self.r_dip.d.next = self.req_dst_ip.val();
            self.r_tos.d.next = self.q_tos.val();
            self.r_sport.d.next = self.req_src_port.val();
            self.r_dport.d.next = self.req_dst_port.val();
            self.r_opcode.d.next = self.req_opcode.val();
            self.r_se.d.next = self.req_solicited.val().into();
            self.r_qp.d.next = self.req_dest_conn.val();
            self.r_ackreq.d.next = self.req_ack_req.val().into();
            self.r_psn.d.next = self.req_psn.val();
            self.r_th.d.next = self.req_th.val();
            self.r_thlen.d.next = bit_cast::<16, 6>(self.req_th_len.val());
            self.r_plen.d.next = bit_cast::<16, 14>(self.req_payload_len.val());
            self.r_port.d.next = self.req_port.val();
        }

        // ---- Header assembly from the registered request. Only a registered request is ever
        // assembled, so the assembly runs under `r_valid` with zeros otherwise: for synthesis
        // the zeros are never selected (the assembled header is loaded only while `r_valid`),
        // and the simulator skips the wide shifts in every cycle without a request.
        if self.r_valid.q.val() {
            self.l4_len.next = self.r_l4len.q.val();
            self.eth.next = (bit_cast::<144, 48>(self.r_dst_mac.q.val()) << 96_u64)
                | (bit_cast::<144, 48>(self.r_src_mac.q.val()) << 48_u64);
            if self.r_vlan.q.val() {
                self.eth.next = self.eth.val()
                    | (bit_cast::<144, 16>(self.k_vlan.val()) << 32_u64)
                    | (bit_cast::<144, 16>(self.r_tci.q.val()) << 16_u64);
                if self.r_v6.q.val() {
                    self.eth.next = self.eth.val() | bit_cast::<144, 16>(self.k_ipv6.val());
                } else {
                    self.eth.next = self.eth.val() | bit_cast::<144, 16>(self.k_ipv4.val());
                }
            } else if self.r_v6.q.val() {
                self.eth.next = self.eth.val() | (bit_cast::<144, 16>(self.k_ipv6.val()) << 32_u64);
            } else {
                self.eth.next = self.eth.val() | (bit_cast::<144, 16>(self.k_ipv4.val()) << 32_u64);
            }
            self.ip_len.next = self.l4_len.val() + 20_u64;
            self.ip4.next = (bits::<160>(0x45) << 152_u64)
                | (bit_cast::<160, 8>(self.r_tos.q.val()) << 144_u64)
                | (bit_cast::<160, 16>(self.ip_len.val()) << 128_u64)
                | (bits::<160>(0x4000) << 96_u64)
                | (bit_cast::<160, 8>(self.k_ttl.val()) << 88_u64)
                | (bit_cast::<160, 8>(self.k_udp.val()) << 80_u64)
                | (bit_cast::<160, 32>(self.r_sip.q.val().get_bits::<32>(0)) << 32_u64)
                | bit_cast::<160, 32>(self.r_dip.q.val().get_bits::<32>(0));
            self.sum.next = self.r_ck.q.val();
            self.sum.next = (self.sum.val() & 0xFFFF_u64) + (self.sum.val() >> 16_u64);
            self.sum.next = (self.sum.val() & 0xFFFF_u64) + (self.sum.val() >> 16_u64);
            // Complement into a 16-bit signal first: in Verilog `~` takes the width of the
            // expression around it, so complementing inside the wider cast would set the top bits.
            self.cksum.next = !self.sum.val().get_bits::<16>(0);
            self.ip4.next = self.ip4.val() | (bit_cast::<160, 16>(self.cksum.val()) << 64_u64);
            self.ip6.next = (bits::<320>(6) << 316_u64)
                | (bit_cast::<320, 8>(self.r_tos.q.val()) << 308_u64)
                | (bit_cast::<320, 16>(self.l4_len.val()) << 272_u64)
                | (bit_cast::<320, 8>(self.k_udp.val()) << 264_u64)
                | (bit_cast::<320, 8>(self.k_ttl.val()) << 256_u64)
                | (bit_cast::<320, 128>(self.r_sip.q.val()) << 128_u64)
                | bit_cast::<320, 128>(self.r_dip.q.val());
            self.l4.next = (bit_cast::<1024, 16>(self.r_sport.q.val()) << 1008_u64)
                | (bit_cast::<1024, 16>(self.r_dport.q.val()) << 992_u64)
                | (bit_cast::<1024, 16>(self.l4_len.val()) << 976_u64)
                | (bit_cast::<1024, 8>(self.r_opcode.q.val()) << 952_u64)
                | (bit_cast::<1024, 1>(self.r_se.q.val()) << 951_u64)
                | (bit_cast::<1024, 16>(self.k_pkey.val()) << 928_u64)
                | (bit_cast::<1024, 24>(self.r_qp.q.val()) << 896_u64)
                | (bit_cast::<1024, 1>(self.r_ackreq.q.val()) << 895_u64)
                | (bit_cast::<1024, 24>(self.r_psn.q.val()) << 864_u64)
                | (bit_cast::<1024, 384>(self.r_th.q.val()) << 480_u64);
            if self.r_v6.q.val() {
                self.l3.next =
                    (bit_cast::<1024, 320>(self.ip6.val()) << 704_u64) | (self.l4.val() >> 320_u64);
            } else {
                self.l3.next =
                    (bit_cast::<1024, 160>(self.ip4.val()) << 864_u64) | (self.l4.val() >> 160_u64);
            }
            if self.r_vlan.q.val() {
                self.hdr_asm.next =
                    (bit_cast::<1024, 144>(self.eth.val()) << 880_u64) | (self.l3.val() >> 144_u64);
            } else {
                self.hdr_asm.next = (bit_cast::<1024, 144>(self.eth.val() >> 32_u64) << 912_u64)
                    | (self.l3.val() >> 112_u64);
            }
        } else {
            self.l4_len.next = 0.into();
            self.eth.next = 0.into();
            self.ip_len.next = 0.into();
            self.ip4.next = 0.into();
            self.sum.next = 0.into();
            self.cksum.next = 0.into();
            self.ip6.next = 0.into();
            self.l4.next = 0.into();
            self.l3.next = 0.into();
            self.hdr_asm.next = 0.into();
        }

        // ---- Generation of beat k of the current frame.
        // The header's bits for beat k + 1 (zero past the 16 beats a header can fill).
        // One term per index, each zero unless selected, then ORed (the indices exclude each
        // other): a chain of overriding `if`s would be a chain of multiplexers.
        for b in 1_usize..16 {
            self.hdr_part[b - 1].next = 0.into();
            if self.k_hot.q.val().get_bit(b - 1) {
                if self.g_par.q.val() {
                    self.hdr_part[b - 1].next = self.hdr1.q.val().get_bits::<64>(960 - 64 * b);
                } else {
                    self.hdr_part[b - 1].next = self.hdr0.q.val().get_bits::<64>(960 - 64 * b);
                }
            }
        }
        self.hdr_next.next = self.hdr_part[0].val()
            | self.hdr_part[1].val()
            | self.hdr_part[2].val()
            | self.hdr_part[3].val()
            | self.hdr_part[4].val()
            | self.hdr_part[5].val()
            | self.hdr_part[6].val()
            | self.hdr_part[7].val()
            | self.hdr_part[8].val()
            | self.hdr_part[9].val()
            | self.hdr_part[10].val()
            | self.hdr_part[11].val()
            | self.hdr_part[12].val()
            | self.hdr_part[13].val()
            | self.hdr_part[14].val();
        // Big-endian header bytes to little-endian lanes.
        self.lane.next = 0.into();
        for i in 0_usize..8 {
            self.lane.next = self.lane.val()
                | (((self.hdr_beat.q.val() >> (56 - 8 * i).to_bits::<6>()) & 0xFF_u64)
                    << (8 * i).to_bits::<6>());
        }
        self.running.next = self.g_valid.q.val();
        self.need_pay.next = self.running.val() & self.k_ge_hbeat.q.val() & self.pay_left.q.val();
        self.pay_beat.next = 0.into();
        if self.need_pay.val() {
            self.pay_beat.next = self.s_pay_tdata.val();
        }
        self.shift_r.next = self.rsh.q.val();
        // Payload behind the header: this payload beat moved up by r lanes, the previous one's
        // top r lanes below it.
        self.aligned.next = (self.pay_beat.val()
            << (bit_cast::<7, 3>(self.shift_r.val()) << 3_u64))
            | (self.carry.q.val()
                >> (bits::<7>(64) - (bit_cast::<7, 3>(self.shift_r.val()) << 3_u64)));
        // Lane i holds byte 8k + i: header below `hlen`, payload below `hlen + plen`. Each
        // range's lanes are a prefix of the beat: all eight while 8 or more bytes are left,
        // else the lanes below the count left (`h_lanes`, `p_lanes`, registered).
        self.h_mask.next = 0.into();
        self.p_mask.next = 0.into();
        for i in 0_usize..8 {
            if self.h_lanes.q.val().get_bit(i) {
                self.h_mask.next = self.h_mask.val() | (bits::<64>(0xFF) << (8 * i).to_bits::<6>());
            }
            if self.p_lanes.q.val().get_bit(i) {
                self.p_mask.next = self.p_mask.val() | (bits::<64>(0xFF) << (8 * i).to_bits::<6>());
            }
        }
        self.beat_out.next = (self.lane.val() & self.h_mask.val())
            | (self.aligned.val() & self.p_mask.val() & !self.h_mask.val());

        // ---- Output buffer: each stage moves on when the next one is free. A beat holding
        // ICRC lanes needs no hold for its frame's CRC, which is final in time:
        // - a step's result reaches the output context three cycles after the push of its
        //   beat (the flush: four; the result is registered on its way, `st_*`), and a beat
        //   pushed at cycle P reaches the ICRC fill (the last stage) at P + 4 at the
        //   earliest;
        // - the frame's last CRC byte lies in the beat before the ICRC's last byte or in the
        //   same beat, and the step covering it is that beat's, the next beat's, or (behind a
        //   VLAN tag, when the ICRC sits in the last beat alone) the flush;
        // - the ICRC's first bytes sit in the beat before the last only when the last needs no
        //   payload, and then that beat leaves the first stage in the cycle the last is pushed.
        // `back_to_back_frames_leave_without_a_gap` (a hold on the flush cost a cycle per frame
        // of 1 to 3 bytes modulo 8) and the byte-exact tests under back-pressure check this.
        if self.d4_par.q.val() {
            self.o_crc.next = self.o1_crc.q.val();
            self.o_port.next = self.o1_port.q.val();
        } else {
            self.o_crc.next = self.o0_crc.q.val();
            self.o_port.next = self.o0_port.q.val();
        }
        self.pay_ok.next = !self.need_pay.val() | self.s_pay_tvalid.val();
        self.take4.next = self.d4_valid.q.val() & self.out_slice.in_ready.val();
        self.free4.next = !self.d4_valid.q.val() | self.take4.val();
        self.mv34.next = self.d3_valid.q.val() & self.free4.val();
        self.free3.next = !self.d3_valid.q.val() | self.mv34.val();
        self.mv23.next = self.d2_valid.q.val() & self.free3.val();
        self.free2.next = !self.d2_valid.q.val() | self.mv23.val();
        self.mv12.next = self.d1_valid.q.val() & self.free2.val();
        self.free1.next = !self.d1_valid.q.val() | self.mv12.val();
        self.push.next = self.running.val() & self.free1.val() & self.pay_ok.val();
        self.last_push.next = self.push.val() & self.at_last.q.val();
        self.s_pay_tready.next = self.need_pay.val() & self.free1.val();
        self.last4.next = self.d4_last.q.val();
        self.f3_flen.next = self.o0_flen.q.val();
        self.f3_nbeats.next = self.o0_nbeats.q.val();
        if self.d3_par.q.val() {
            self.f3_flen.next = self.o1_flen.q.val();
            self.f3_nbeats.next = self.o1_nbeats.q.val();
        }
        self.f3_at.next = self.f3_flen.val() - 4_u64;
        self.keep3.next = 0.into();
        self.ic_en3.next = 0.into();
        self.ic_sel3.next = 0.into();
        for i in 0_usize..8 {
            self.bi3.next = (bit_cast::<16, 13>(self.d3_k.q.val()) << 3_u64) + i.to_bits::<16>();
            if self.bi3.val() < self.f3_flen.val() {
                self.keep3.next = self.keep3.val().replace_bit(i, true);
                if self.bi3.val() >= self.f3_at.val() {
                    self.ic_en3.next = self.ic_en3.val().replace_bit(i, true);
                }
            }
            self.dif3.next = self.bi3.val() - self.f3_at.val();
            self.ic_sel3.next = self.ic_sel3.val()
                | (bit_cast::<16, 2>(self.dif3.val().get_bits::<2>(0)) << (2 * i).to_bits::<4>());
        }

        // ---- The next frame: loaded when the generator is free (or finishing its last beat)
        // and the output context of its parity has drained; assembled when `nx` is free.
        if self.g_par.q.val() {
            self.o_free.next = !self.o0_live.q.val();
        } else {
            self.o_free.next = !self.o1_live.q.val();
        }
        self.load.next = self.nx_valid.q.val()
            & (!self.g_valid.q.val() | self.last_push.val())
            & self.o_free.val();
        // Assembled only into an empty register, not in the cycle it is loaded from: the
        // 1,024-bit header's enable then comes from flip-flops alone. Every frame has
        // at least 8 beats (58 bytes), so the cycle this costs is hidden behind the frame
        // being generated.
        self.nx_free.next = !self.nx_valid.q.val();
        if self.r_valid.q.val() & !self.r_fresh.q.val() & self.nx_free.val() {
            self.r_valid.d.next = false;
            self.nx_valid.d.next = true;
            // Into the header register the frame being generated (if any) does not read; it
            // stays there until that frame is loaded and has left.
            if self.g_par.q.val() {
                self.hdr0.d.next = self.hdr_asm.val();
            } else {
                self.hdr1.d.next = self.hdr_asm.val();
            }
            self.nx_hlen.d.next = self.r_hl.q.val();
            self.nx_hbeat.d.next = bit_cast::<13, 16>(self.r_hl.q.val() >> 3_u64);
            self.nx_rsh.d.next = bit_cast::<3, 16>(self.r_hl.q.val());
            self.nx_flen.d.next = self.r_flen.q.val();
            self.nx_nbeats.d.next = self.r_nbeats.q.val();
            self.nx_pay_beats.d.next = self.r_pbeats.q.val();
            if self.r_v6.q.val() {
                self.nx_vtotal.d.next = bit_cast::<17, 16>(self.l4_len.val()) + 44_u64;
            } else {
                self.nx_vtotal.d.next = bit_cast::<17, 16>(self.l4_len.val()) + 24_u64;
            }
            self.nx_vlan.d.next = self.r_vlan.q.val();
            self.nx_v6.d.next = self.r_v6.q.val();
            self.nx_pleft.d.next = self.r_hl.q.val() + self.r_plen.q.val();
            self.nx_port.d.next = self.r_port.q.val();
        } else if self.load.val() {
            self.nx_valid.d.next = false;
        }

        // ---- ICRC input: the realigned beat, or a finished frame's flush (its last beat's
        // remaining bytes), with the variant fields forced to ones.
        if self.g_vlan.q.val() {
            self.v_go.next = self.push.val() & (self.k.q.val() >= 3_u64);
            self.v_src.next = (self.prev.q.val() >> 16_u64) | (self.beat_out.val() << 48_u64);
            self.fl_next.next = self.beat_out.val() >> 16_u64;
        } else {
            self.v_go.next = self.push.val() & (self.k.q.val() >= 2_u64);
            self.v_src.next = (self.prev.q.val() >> 48_u64) | (self.beat_out.val() << 16_u64);
            self.fl_next.next = self.beat_out.val() >> 48_u64;
        }
        self.v_j.next = self.vj.q.val();
        self.v_v6.next = self.g_v6.q.val();
        self.v_vt.next = self.vtotal.q.val();
        if self.fl_pend.q.val() {
            // The frame after it is at its first two beats, which make no CRC step.
            self.v_src.next = self.fl_raw.q.val();
            self.v_j.next = self.fl_j.q.val();
            self.v_v6.next = self.fl_v6.q.val();
            self.v_vt.next = self.fl_vtotal.q.val();
        }
        self.v_data.next = self.v_src.val();
        for j in 0_usize..8 {
            if self.v_j.val() == j.to_bits::<13>() {
                if self.v_v6.val() {
                    self.v_data.next = self.v_data.val() | self.k_mask_v6[j].val();
                } else {
                    self.v_data.next = self.v_data.val() | self.k_mask_v4[j].val();
                }
            }
        }
        self.v_base.next = bit_cast::<16, 13>(self.v_j.val()) << 3_u64;
        // The lanes below the CRC range's end: a prefix, from one subtraction.
        self.v_pos.next = bit_cast::<17, 16>(self.v_base.val());
        self.v_room.next = self.v_vt.val() - self.v_pos.val();
        self.v_n.next = self.v_room.val().get_bits::<3>(0);
        self.v_lanes.next = 0xFF.into();
        if self.v_vt.val() <= self.v_pos.val() {
            self.v_lanes.next = 0.into();
        } else if self.v_room.val() < 8_u64 {
            self.v_lanes.next = (bits::<8>(1) << self.v_n.val()) - 1_u64;
        }
        // The realigned beat is registered; the CRC step runs on it in the next cycle, so the
        // header and payload selection above never sits in front of the CRC.
        self.vp_go.d.next = self.v_go.val() | self.fl_pend.q.val();
        self.vp_final.d.next = self.fl_pend.q.val();
        self.vp_par.d.next = self.g_par.q.val();
        if self.fl_pend.q.val() {
            self.vp_par.d.next = self.fl_par.q.val();
        }
        self.vp_data.d.next = self.v_data.val();
        // No lanes when there is no step; a whole beat's step flagged apart, so that the
        // running CRC's enable comes from one flip-flop.
        self.vp_lanes.d.next = 0.into();
        self.vp_full.d.next = false;
        if self.v_go.val() | self.fl_pend.q.val() {
            self.vp_lanes.d.next = self.v_lanes.val();
            self.vp_full.d.next = self.v_lanes.val().all();
        }
        self.fl_pend.d.next = false;

        // ---- CRC step. Only a whole beat's step is in the running CRC's loop; a partial
        // beat's (the tail: at most one per frame, and no step with lanes follows it) is
        // computed beside it. Every step with lanes also writes the state after it to the
        // output context of its frame's parity, so that context holds the frame's CRC after
        // its last step with lanes. A frame's final step (its flush) leaves the running CRC at
        // its start value for the next frame.
        self.crc_full.crc_in.next = self.crc.q.val();
        self.crc_full.data.next = self.vp_data.q.val();
        self.crc_full.enable.next = self.vp_full.q.val();
        self.crc_tail.crc_in.next = self.crc.q.val();
        self.crc_tail.data.next = self.vp_data.q.val();
        self.crc_tail.lanes.next = self.vp_lanes.q.val();
        self.crc.d.next = self.crc_full.crc_out.val();
        self.st_go.d.next = self.vp_lanes.q.val().get_bit(0);
        self.st_par.d.next = self.vp_par.q.val();
        self.st_full.d.next = self.vp_full.q.val();
        self.st_crc.d.next = self.crc_tail.crc_out.val();
        self.st_crc_full.d.next = self.crc_full.crc_out.val();
        self.st_result.next = self.st_crc.q.val();
        if self.st_full.q.val() {
            self.st_result.next = self.st_crc_full.q.val();
        }
        if self.st_go.q.val() {
            if self.st_par.q.val() {
                self.o1_crc.d.next = self.st_result.val();
            } else {
                self.o0_crc.d.next = self.st_result.val();
            }
        }
        if self.vp_go.q.val() & self.vp_final.q.val() {
            self.crc.d.next = self.k_crc_lrh.val();
        }

        // ---- Generator and buffer moves.
        if self.take4.val() {
            self.d4_valid.d.next = false;
            if self.last4.val() {
                if self.d4_par.q.val() {
                    self.o1_live.d.next = false;
                } else {
                    self.o0_live.d.next = false;
                }
            }
        }
        if self.mv34.val() {
            self.d4_valid.d.next = true;
            self.d4_data.d.next = self.d3_data.q.val();
            self.d4_par.d.next = self.d3_par.q.val();
            self.d4_keep.d.next = self.keep3.val();
            self.d4_ic_en.d.next = self.ic_en3.val();
            self.d4_ic_sel.d.next = self.ic_sel3.val();
            self.d4_last.d.next = self.d3_k.q.val() + 1_u64 == self.f3_nbeats.val();
            self.d3_valid.d.next = false;
        }
        if self.mv23.val() {
            self.d3_valid.d.next = true;
            self.d3_data.d.next = self.d2_data.q.val();
            self.d3_k.d.next = self.d2_k.q.val();
            self.d3_par.d.next = self.d2_par.q.val();
            self.d2_valid.d.next = false;
        }
        if self.mv12.val() {
            self.d2_valid.d.next = true;
            self.d2_data.d.next = self.d1_data.q.val();
            self.d2_k.d.next = self.d1_k.q.val();
            self.d2_par.d.next = self.d1_par.q.val();
            self.d1_valid.d.next = false;
        }
        if self.push.val() {
            self.d1_valid.d.next = true;
            self.d1_data.d.next = self.beat_out.val();
            self.d1_k.d.next = self.k.q.val();
            self.d1_par.d.next = self.g_par.q.val();
            if self.need_pay.val() {
                self.carry.d.next = self.s_pay_tdata.val();
                self.consumed.d.next = self.consumed.q.val() + 1_u64;
                self.pay_left.d.next = self.consumed.q.val() + 1_u64 < self.pay_beats.q.val();
            }
            self.prev.d.next = self.beat_out.val();
            if self.v_go.val() {
                self.vj.d.next = self.vj.q.val() + 1_u64;
            }
            self.k.d.next = self.k.q.val() + 1_u64;
            self.k_hot.d.next = self.k_hot.q.val() << 1_u64;
            self.hdr_beat.d.next = self.hdr_next.val();
            self.h_left.d.next = 0.into();
            if self.h_left.q.val().get_bits::<13>(3) != 0_u64 {
                self.h_left.d.next = self.h_left.q.val() - 8_u64;
            }
            self.p_left.d.next = 0.into();
            if self.p_left.q.val().get_bits::<13>(3) != 0_u64 {
                self.p_left.d.next = self.p_left.q.val() - 8_u64;
            }
            // The next beat's lanes: all while 16 or more bytes are left, the count's low
            // bits' prefix from 8 to 15, none below 8.
            self.h_lanes.d.next = 0.into();
            if self.h_left.q.val().get_bits::<12>(4) != 0_u64 {
                self.h_lanes.d.next = 0xFF.into();
            } else if self.h_left.q.val().get_bit(3) {
                self.h_lanes.d.next = !(bits::<8>(0xFF) << self.h_left.q.val().get_bits::<3>(0));
            }
            self.p_lanes.d.next = 0.into();
            if self.p_left.q.val().get_bits::<12>(4) != 0_u64 {
                self.p_lanes.d.next = 0xFF.into();
            } else if self.p_left.q.val().get_bit(3) {
                self.p_lanes.d.next = !(bits::<8>(0xFF) << self.p_left.q.val().get_bits::<3>(0));
            }
            self.k_ge_hbeat.d.next = self.k.q.val() + 1_u64 >= self.hbeat.q.val();
            self.at_last.d.next = self.k.q.val() + 2_u64 == self.nbeats.q.val();
        }
        if self.last_push.val() {
            self.g_valid.d.next = false;
            self.fl_pend.d.next = true;
            self.fl_raw.d.next = self.fl_next.val();
            self.fl_j.d.next = self.vj.q.val();
            if self.v_go.val() {
                self.fl_j.d.next = self.vj.q.val() + 1_u64;
            }
            self.fl_vtotal.d.next = self.vtotal.q.val();
            self.fl_v6.d.next = self.g_v6.q.val();
            self.fl_par.d.next = self.g_par.q.val();
        }
        if self.load.val() {
            self.g_valid.d.next = true;
            self.g_par.d.next = !self.g_par.q.val();
            // The loaded frame reads the header register the one before did not.
            if self.g_par.q.val() {
                self.hdr_beat.d.next = self.hdr0.q.val().get_bits::<64>(960);
            } else {
                self.hdr_beat.d.next = self.hdr1.q.val().get_bits::<64>(960);
            }
            self.h_left.d.next = self.nx_hlen.q.val();
            self.p_left.d.next = self.nx_pleft.q.val();
            // Beat 0 is header in every lane: a header has at least 54 bytes (Ethernet, IPv4,
            // UDP, BTH).
            self.h_lanes.d.next = 0xFF.into();
            self.p_lanes.d.next = 0xFF.into();
            self.hbeat.d.next = self.nx_hbeat.q.val();
            self.rsh.d.next = self.nx_rsh.q.val();
            self.nbeats.d.next = self.nx_nbeats.q.val();
            self.pay_beats.d.next = self.nx_pay_beats.q.val();
            self.vtotal.d.next = self.nx_vtotal.q.val();
            self.g_vlan.d.next = self.nx_vlan.q.val();
            self.g_v6.d.next = self.nx_v6.q.val();
            self.k.d.next = 0.into();
            self.k_hot.d.next = 1.into();
            self.consumed.d.next = 0.into();
            self.k_ge_hbeat.d.next = self.nx_hbeat.q.val() == 0_u64;
            self.pay_left.d.next = self.nx_pay_beats.q.val() != 0_u64;
            self.at_last.d.next = self.nx_nbeats.q.val() == 1_u64;
            self.carry.d.next = 0.into();
            self.prev.d.next = 0.into();
            self.vj.d.next = 1.into();
            if !self.g_valid.q.val() & !self.fl_pend.q.val() & !self.vp_go.q.val() {
                // No frame's CRC in flight: start from a clean value (also after power-up and
                // reset, which therefore need not touch the CRC).
                self.crc.d.next = self.k_crc_lrh.val();
            }
            if self.g_par.q.val() {
                self.o0_live.d.next = true;
                self.o0_flen.d.next = self.nx_flen.q.val();
                self.o0_nbeats.d.next = self.nx_nbeats.q.val();
                self.o0_port.d.next = self.nx_port.q.val();
            } else {
                self.o1_live.d.next = true;
                self.o1_flen.d.next = self.nx_flen.q.val();
                self.o1_nbeats.d.next = self.nx_nbeats.q.val();
                self.o1_port.d.next = self.nx_port.q.val();
            }
        }
        if self.reset.val() {
            self.r_valid.d.next = false;
            self.nx_valid.d.next = false;
            self.g_valid.d.next = false;
            self.fl_pend.d.next = false;
            self.vp_go.d.next = false;
            self.o0_live.d.next = false;
            self.o1_live.d.next = false;
            self.d1_valid.d.next = false;
            self.d2_valid.d.next = false;
            self.d3_valid.d.next = false;
            self.d4_valid.d.next = false;
            self.st_go.d.next = false;
        }

        // ---- Output: the oldest beat with its frame's ICRC written into its lanes.
        self.icrc.next = !self.o_crc.val();
        self.out_data.next = self.d4_data.q.val();
        self.out_keep.next = self.d4_keep.q.val();
        for i in 0_usize..8 {
            // The lane's ICRC byte index, then the byte.
            self.lane_sel.next = self.d4_ic_sel.q.val() >> (2 * i).to_bits::<4>();
            if self.d4_ic_en.q.val().get_bit(i) {
                self.out_data.next = (self.out_data.val()
                    & !(bits::<64>(0xFF) << (8 * i).to_bits::<6>()))
                    | (bit_cast::<64, 32>(
                        (self.icrc.val()
                            >> (bit_cast::<5, 2>(self.lane_sel.val().get_bits::<2>(0)) << 3_u64))
                            & 0xFF_u64,
                    ) << (8 * i).to_bits::<6>());
            }
        }
        self.out_slice.clock.next = self.clock.val();
        self.out_slice.reset.next = self.reset.val();
        self.out_slice.in_valid.next = self.d4_valid.q.val();
        self.out_side.next = bit_cast::<16, 8>(self.out_keep.val())
            | (bit_cast::<16, 1>(self.last4.val().into()) << 8_u64)
            | (bit_cast::<16, PORT_BITS>(self.o_port.val()) << 9_u64);
        self.out_slice.in_data.next = bit_cast::<OUT_BEAT_BITS, 64>(self.out_data.val())
            | (bit_cast::<OUT_BEAT_BITS, 16>(self.out_side.val()) << 64_u64);
        self.out_slice.out_ready.next = self.m_tready.val();
        self.m_tvalid.next = self.out_slice.out_valid.val();
        self.m_tdata.next = self.out_slice.out_data.val().get_bits::<64>(0);
        self.m_tkeep.next = self.out_slice.out_data.val().get_bits::<8>(64);
        self.m_tlast.next =
            self.out_slice.out_valid.val() & self.out_slice.out_data.val().get_bit(72);
        self.m_tdest.next = self.out_slice.out_data.val().get_bits::<PORT_BITS>(73);
        self.busy.next = self.r_valid.q.val()
            | self.nx_valid.q.val()
            | self.g_valid.q.val()
            | self.fl_pend.q.val()
            | self.vp_go.q.val()
            | self.o0_live.q.val()
            | self.o1_live.q.val()
            | self.out_slice.holding.val();
    }
}
