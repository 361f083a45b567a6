//! The whole fast path: one NIC core with the interfaces a NIC shell offers.
//!
//! ```text
//!  MAC RX ──┬─> RxParser ──> parse results (FIFO) ──> RxEngine ──> ACK/NAK ──┐
//!  (AXIS)   │        └──> header/payload lengths (FIFO) ─┐   │ decisions   │
//!           └─> packet buffer (FIFO) ──> RxPayload <─────┘<──┘ (FIFO)      │
//!                                           └──> DMA write 0 (payload)     ├─> TxFrameBuilder ──> MAC TX
//!  DMA read ──> TxEngine (descriptors, payload) ──> data/CM frame requests ───┘
//!  RxEngine, TxEngine ──> events ──> EventWriter ──> DMA write 1 (event ring)
//!  AXI4-Lite ──> RegisterBlock (registers, table window → RxEngine, counters)
//! ```
//!
//! Receive is store-and-forward: a frame's beats wait in the packet buffer until the engine has
//! decided about it. `s_tready` falls when the packet buffer, the parse-result FIFO or the
//! extractor's length FIFO is nearly full; a MAC that cannot be held needs a FIFO in front (every frame is accounted, none is
//! dropped silently inside the core). Two DMA write channels (payload placement and events) and
//! one read channel (descriptors and transmit payload) leave the core; a shell muxes them onto
//! its DMA engine (Corundum's DMA interface has separate read and write paths). The MAC streams
//! carry AXI4-Stream routing fields for a multi-port shell: `s_tid` says which port (plane) a
//! received frame came in on, `m_tdest` which port a sent frame leaves on. `tuser` (MAC
//! errors) is not carried yet: the model has no such input.

use crate::constants;
use crate::event_writer::EventWriter;
use crate::front_fifo::FrontFifo;
use crate::regs::RegisterBlock;
use crate::rx_engine::{CONN_BITS, PORT_BITS, RxEngine};
use crate::rx_parse::RxParser;
use crate::rx_payload::RxPayload;
use crate::tx_engine::TxEngine;
use crate::tx_frame::TxFrameBuilder;
use ferroce_proto::hsi::TableId;
use ferroce_proto::wire::MAX_FRAME_LEN;
use rust_hdl::prelude::*;

/// The packet buffer holds 2^`BUF_LOG` beats.
const BUF_LOG: usize = 11;
const BUF_LOG_1: usize = BUF_LOG + 1;
/// `s_tready` falls this many beats short of a full packet buffer (see the FIFOs' comment).
const BUF_MARGIN: u32 = 2;

// The packet buffer holds the beats kept of the longest frame (those of a `MAX_FRAME_LEN`
// frame and its last beat) short of where `s_tready` falls: one frame alone can never fill it
// before its verdict.
const _: () = assert!(
    MAX_FRAME_LEN.div_ceil(8) < (1 << BUF_LOG) - BUF_MARGIN as usize,
    "buffer too small"
);

constants!(
    /// Constants of the core's wiring.
    NicConsts {
        t_conn / k_t_conn: 8 = TableId::Connection,
        max_beats / k_max_beats: 12 = MAX_FRAME_LEN.div_ceil(8),
    }
);

/// Width of one parse result in the result FIFO.
const RES_BITS: usize = 817 + PORT_BITS;

/// The NIC core.
#[derive(LogicBlock, Default)]
pub struct NicCore {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset (hold for a few cycles; tables are not cleared).
    pub reset: Signal<In, Bit>,
    /// Free-running nanosecond time (the board drives it from a counter).
    pub now_ns: Signal<In, Bits<64>>,
    /// Link state of the MAC ports from their PHYs, one bit per port (read in `PORT_LINK`).
    pub link_up: Signal<In, Bits<8>>,

    /// MAC RX data, first byte in bits 7:0.
    pub s_tdata: Signal<In, Bits<64>>,
    /// MAC RX byte enables (only the last beat partial).
    pub s_tkeep: Signal<In, Bits<8>>,
    /// MAC RX valid.
    pub s_tvalid: Signal<In, Bit>,
    /// MAC RX last beat.
    pub s_tlast: Signal<In, Bit>,
    /// MAC RX `tid`: the port (plane) the frame comes in on, held for the whole frame (the
    /// core samples it with the last beat).
    pub s_tid: Signal<In, Bits<PORT_BITS>>,
    /// MAC RX ready.
    pub s_tready: Signal<Out, Bit>,
    /// MAC TX data.
    pub m_tdata: Signal<Out, Bits<64>>,
    /// MAC TX byte enables.
    pub m_tkeep: Signal<Out, Bits<8>>,
    /// MAC TX valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// MAC TX last beat.
    pub m_tlast: Signal<Out, Bit>,
    /// MAC TX `tdest`: the port (plane) the frame leaves on, the same on all its beats.
    pub m_tdest: Signal<Out, Bits<PORT_BITS>>,
    /// MAC TX ready.
    pub m_tready: Signal<In, Bit>,

    /// AXI4-Lite write address.
    pub axil_awaddr: Signal<In, Bits<16>>,
    /// Write address valid.
    pub axil_awvalid: Signal<In, Bit>,
    /// Write address ready.
    pub axil_awready: Signal<Out, Bit>,
    /// Write data.
    pub axil_wdata: Signal<In, Bits<32>>,
    /// Write data valid.
    pub axil_wvalid: Signal<In, Bit>,
    /// Write data ready.
    pub axil_wready: Signal<Out, Bit>,
    /// Write response.
    pub axil_bresp: Signal<Out, Bits<2>>,
    /// Write response valid.
    pub axil_bvalid: Signal<Out, Bit>,
    /// Write response ready.
    pub axil_bready: Signal<In, Bit>,
    /// Read address.
    pub axil_araddr: Signal<In, Bits<16>>,
    /// Read address valid.
    pub axil_arvalid: Signal<In, Bit>,
    /// Read address ready.
    pub axil_arready: Signal<Out, Bit>,
    /// Read data.
    pub axil_rdata: Signal<Out, Bits<32>>,
    /// Read response.
    pub axil_rresp: Signal<Out, Bits<2>>,
    /// Read data valid.
    pub axil_rvalid: Signal<Out, Bit>,
    /// Read data ready.
    pub axil_rready: Signal<In, Bit>,

    /// DMA write 0 (payload placement): request valid.
    pub dw0_req_valid: Signal<Out, Bit>,
    /// Request taken.
    pub dw0_req_ready: Signal<In, Bit>,
    /// Host address.
    pub dw0_req_addr: Signal<Out, Bits<64>>,
    /// Length in bytes (0 allowed: no data beats).
    pub dw0_req_len: Signal<Out, Bits<16>>,
    /// Data beat, packed from lane 0.
    pub dw0_tdata: Signal<Out, Bits<64>>,
    /// Byte enables.
    pub dw0_tkeep: Signal<Out, Bits<8>>,
    /// Beat valid.
    pub dw0_tvalid: Signal<Out, Bit>,
    /// Last beat of the write.
    pub dw0_tlast: Signal<Out, Bit>,
    /// Beat taken.
    pub dw0_tready: Signal<In, Bit>,
    /// A write finished (in request order).
    pub dw0_done: Signal<In, Bit>,
    /// It faulted.
    pub dw0_error: Signal<In, Bit>,
    /// DMA write 1 (events): request valid.
    pub dw1_req_valid: Signal<Out, Bit>,
    /// Request taken.
    pub dw1_req_ready: Signal<In, Bit>,
    /// Host address.
    pub dw1_req_addr: Signal<Out, Bits<64>>,
    /// Length in bytes.
    pub dw1_req_len: Signal<Out, Bits<16>>,
    /// Data beat.
    pub dw1_tdata: Signal<Out, Bits<64>>,
    /// Beat valid.
    pub dw1_tvalid: Signal<Out, Bit>,
    /// Last beat.
    pub dw1_tlast: Signal<Out, Bit>,
    /// Beat taken.
    pub dw1_tready: Signal<In, Bit>,
    /// A write finished.
    pub dw1_done: Signal<In, Bit>,
    /// It faulted.
    pub dw1_error: Signal<In, Bit>,
    /// DMA read: request valid.
    pub dr_req_valid: Signal<Out, Bit>,
    /// Request taken.
    pub dr_req_ready: Signal<In, Bit>,
    /// Host address.
    pub dr_req_addr: Signal<Out, Bits<64>>,
    /// Length in bytes.
    pub dr_req_len: Signal<Out, Bits<16>>,
    /// Response beat (ceil(len / 8) beats per request, in order).
    pub dr_tdata: Signal<In, Bits<64>>,
    /// Response beat valid.
    pub dr_tvalid: Signal<In, Bit>,
    /// Last beat of a response.
    pub dr_tlast: Signal<In, Bit>,
    /// With the last beat: the read faulted.
    pub dr_terror: Signal<In, Bit>,
    /// Response beat taken.
    pub dr_tready: Signal<Out, Bit>,

    /// Work in hand anywhere in the core (for simulation: run until it falls).
    pub busy: Signal<Out, Bit>,
    /// Some flow's ACK timer is armed (see `ack_timer_due`).
    pub ack_timer_armed: Signal<Out, Bit>,
    /// While `ack_timer_armed`: when the ACK timers next need the clock (ns), so that a driver
    /// can wake the host for a delayed ACK instead of waiting for the next packet.
    pub ack_timer_due: Signal<Out, Bits<64>>,

    k: NicConsts,
    parser: RxParser,
    // The queues behind the MAC RX stream hold it back (`s_tready`) early enough that every
    // beat and frame already on its way still finds room. `s_tready` is a flip-flop loaded
    // from the fill levels, and a fill level counts a write two cycles after it: when a beat
    // is taken, the fill that let it in may miss the writes of the two cycles before it, and
    // its own. So the packet buffer stops taking beats 2 short of full (`BUF_MARGIN`, its
    // `BLOCK_SIZE`). The parser writes a frame's result into `results` and `cuts` 4 cycles after
    // the frame's last beat, so with one-beat frames back to back 4 more results are on their
    // way: those queues stop 6 short of full (16 deep behind a front register, so 11 results
    // may wait for the engine). Their front entries wait in registers (`FrontFifo`), so that
    // the consumer's pop is only a load enable, not the address of a RAM read. Less room
    // loses a result, and the payload extractor then waits forever for its frame
    // (`a_flood_of_short_frames_loses_none` in `tests/tests/rtl_nic.rs`).
    buffer: SynchronousFIFO<Bits<65>, BUF_LOG, BUF_LOG_1, BUF_MARGIN>,
    results: FrontFifo<RES_BITS, 4, 5, 6>,
    // Each frame's header length and payload length, written with its parse result: the
    // payload extractor's own copy, so it moves on to the next frame without waiting for the
    // engine to take it up (the engine only decides place or discard).
    cuts: FrontFifo<32, 4, 5, 6>,
    // The engine's place/discard decisions, in frame order, until the extractor reaches the
    // frame: the engine does not wait for the extractor to finish the frames before. A
    // `FrontFifo` too: its `empty` (the extractor's `dec_valid`) is then a flip-flop, and a
    // decision made while none waits reaches the extractor in the next cycle.
    decisions: FrontFifo<2, 3, 4, 1>,
    engine: RxEngine,
    payload: RxPayload,
    tx: TxEngine<CONN_BITS>,
    builder: TxFrameBuilder,
    events: EventWriter,
    regs: RegisterBlock,
    in_frame: DFF<Bit>,
    // `s_tready`, registered so that the FIFOs' fill compares do not stand in front of the
    // parser's capture enables (the whole core's critical path when it was combinational).
    rx_ready: DFF<Bit>,
    // Beats of the frame coming in so far, up to the beats of a `MAX_FRAME_LEN` frame.
    rx_beats: DFF<Bits<12>>,
    rx_take: Signal<Local, Bit>,
    res: Signal<Local, Bits<RES_BITS>>,
    ack_sel: Signal<Local, Bit>,
}

impl Logic for NicCore {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, in_frame, rx_ready, rx_beats);
        clock!(
            self, clock, parser, buffer, results, cuts, decisions, engine, payload, tx, builder,
            events, regs
        );
        self.parser.reset.next = self.reset.val();
        self.k.reset.next = self.reset.val();
        self.engine.reset.next = self.reset.val();
        self.payload.reset.next = self.reset.val();
        self.tx.reset.next = self.reset.val();
        self.builder.reset.next = self.reset.val();
        self.events.reset.next = self.reset.val();
        self.regs.reset.next = self.reset.val();

        // ---- Receive: parser and packet buffer see the same accepted beats.
        self.rx_ready.d.next = !self.buffer.almost_full.val()
            & !self.results.almost_full.val()
            & !self.cuts.almost_full.val()
            & !self.reset.val();
        self.rx_take.next = self.s_tvalid.val() & self.rx_ready.q.val();
        self.s_tready.next = self.rx_ready.q.val();
        self.parser.s_tdata.next = self.s_tdata.val();
        self.parser.s_tkeep.next = self.s_tkeep.val();
        self.parser.s_tvalid.next = self.rx_take.val();
        self.parser.s_tlast.next = self.s_tlast.val();
        self.parser.s_tid.next = self.s_tid.val();
        self.parser.udp_port.next = self.regs.udp_port.val();
        // A frame longer than `MAX_FRAME_LEN` is dropped (the parser says `TooLong`), but only
        // once it has ended: the buffer keeps the beats of a `MAX_FRAME_LEN` frame and its last (the
        // `tlast` the payload extractor discards up to). Keeping it all would let one frame
        // longer than the buffer fill it before its verdict, and the core would wait forever.
        self.buffer.write.next = self.rx_take.val()
            & ((self.rx_beats.q.val() != self.k.max_beats.val()) | self.s_tlast.val());
        if self.rx_take.val() {
            if self.s_tlast.val() {
                self.rx_beats.d.next = 0.into();
            } else if self.rx_beats.q.val() != self.k.max_beats.val() {
                self.rx_beats.d.next = self.rx_beats.q.val() + 1_u64;
            }
        }
        if self.reset.val() {
            self.rx_beats.d.next = 0.into();
        }
        self.buffer.data_in.next = bit_cast::<65, 64>(self.s_tdata.val())
            | (bit_cast::<65, 1>(self.s_tlast.val().into()) << 64_u64);
        if self.rx_take.val() {
            self.in_frame.d.next = !self.s_tlast.val();
        }

        // Parse results, packed (offsets: see the unpacking below).
        self.results.write.next = self.parser.out_valid.val();
        self.results.data_in.next = bit_cast::<RES_BITS, 4>(self.parser.out_error.val())
            | (bit_cast::<RES_BITS, 1>(self.parser.out_vlan.val().into()) << 4_u64)
            | (bit_cast::<RES_BITS, 16>(self.parser.out_vlan_tci.val()) << 5_u64)
            | (bit_cast::<RES_BITS, 48>(self.parser.out_src_mac.val()) << 21_u64)
            | (bit_cast::<RES_BITS, 1>(self.parser.out_ipv6.val().into()) << 69_u64)
            | (bit_cast::<RES_BITS, 128>(self.parser.out_src_ip.val()) << 70_u64)
            | (bit_cast::<RES_BITS, 128>(self.parser.out_dst_ip.val()) << 198_u64)
            | (bit_cast::<RES_BITS, 2>(self.parser.out_ecn.val()) << 326_u64)
            | (bit_cast::<RES_BITS, 16>(self.parser.out_src_port.val()) << 328_u64)
            | (bit_cast::<RES_BITS, 8>(self.parser.out_opcode.val()) << 344_u64)
            | (bit_cast::<RES_BITS, 1>(self.parser.out_ack_req.val().into()) << 352_u64)
            | (bit_cast::<RES_BITS, 24>(self.parser.out_dest_conn.val()) << 353_u64)
            | (bit_cast::<RES_BITS, 24>(self.parser.out_psn.val()) << 377_u64)
            | (bit_cast::<RES_BITS, 384>(self.parser.out_th.val()) << 401_u64)
            | (bit_cast::<RES_BITS, 16>(self.parser.out_payload_offset.val()) << 785_u64)
            | (bit_cast::<RES_BITS, 16>(self.parser.out_payload_len.val()) << 801_u64)
            | (bit_cast::<RES_BITS, PORT_BITS>(self.parser.out_port.val()) << 817_u64);
        self.cuts.write.next = self.parser.out_valid.val();
        self.cuts.data_in.next = bit_cast::<32, 16>(self.parser.out_payload_offset.val())
            | (bit_cast::<32, 16>(self.parser.out_payload_len.val()) << 16_u64);
        self.res.next = self.results.data_out.val();
        self.engine.pr_valid.next = !self.results.empty.val();
        self.results.read.next = self.engine.pr_pop.val();
        self.engine.pr_error.next = self.res.val().get_bits::<4>(0);
        self.engine.pr_vlan.next = self.res.val().get_bit(4);
        self.engine.pr_vlan_tci.next = self.res.val().get_bits::<16>(5);
        self.engine.pr_src_mac.next = self.res.val().get_bits::<48>(21);
        self.engine.pr_ipv6.next = self.res.val().get_bit(69);
        self.engine.pr_src_ip.next = self.res.val().get_bits::<128>(70);
        self.engine.pr_dst_ip.next = self.res.val().get_bits::<128>(198);
        self.engine.pr_ecn.next = self.res.val().get_bits::<2>(326);
        self.engine.pr_src_port.next = self.res.val().get_bits::<16>(328);
        self.engine.pr_opcode.next = self.res.val().get_bits::<8>(344);
        self.engine.pr_ack_req.next = self.res.val().get_bit(352);
        self.engine.pr_dest_conn.next = self.res.val().get_bits::<24>(353);
        self.engine.pr_psn.next = self.res.val().get_bits::<24>(377);
        self.engine.pr_th.next = self.res.val().get_bits::<384>(401);
        self.engine.pr_payload_offset.next = self.res.val().get_bits::<16>(785);
        self.engine.pr_payload_len.next = self.res.val().get_bits::<16>(801);
        self.engine.pr_port.next = self.res.val().get_bits::<PORT_BITS>(817);
        self.engine.rx_enable.next = self.regs.rx_enable.val();
        self.engine.ack_coalesce.next = self.regs.ack_coalesce.val();
        self.engine.ack_delay.next = self.regs.ack_delay.val();
        self.engine.now_ns.next = self.now_ns.val();

        // Payload extractor between the packet buffer and DMA write 0.
        self.payload.cmd_valid.next = !self.cuts.empty.val();
        self.cuts.read.next = self.payload.cmd_ready.val() & !self.cuts.empty.val();
        self.payload.cmd_skip.next = self.cuts.data_out.val().get_bits::<16>(0);
        self.payload.cmd_len.next = self.cuts.data_out.val().get_bits::<16>(16);
        self.decisions.write.next = self.engine.pd_valid.val() & !self.decisions.full.val();
        self.decisions.data_in.next = bit_cast::<2, 1>(self.engine.pd_place.val().into());
        self.engine.pd_ready.next = !self.decisions.full.val();
        self.payload.dec_valid.next = !self.decisions.empty.val();
        self.payload.dec_place.next = self.decisions.data_out.val().get_bit(0);
        self.decisions.read.next = self.payload.dec_ready.val() & !self.decisions.empty.val();
        self.payload.s_tdata.next = self.buffer.data_out.val().get_bits::<64>(0);
        self.payload.s_tlast.next = self.buffer.data_out.val().get_bit(64);
        self.payload.s_tvalid.next = !self.buffer.empty.val();
        self.buffer.read.next = self.payload.s_tready.val() & !self.buffer.empty.val();
        self.dw0_tdata.next = self.payload.m_tdata.val();
        self.dw0_tkeep.next = self.payload.m_tkeep.val();
        self.dw0_tvalid.next = self.payload.m_tvalid.val();
        self.dw0_tlast.next = self.payload.m_tlast.val();
        self.payload.m_tready.next = self.dw0_tready.val();
        self.dw0_req_valid.next = self.engine.wr_valid.val();
        self.engine.wr_ready.next = self.dw0_req_ready.val();
        self.dw0_req_addr.next = self.engine.wr_addr.val();
        self.dw0_req_len.next = self.engine.wr_len.val();
        self.engine.wr_done.next = self.dw0_done.val();
        self.engine.wr_error.next = self.dw0_error.val();

        // ---- Transmit engine.
        self.tx.enable.next = self.regs.tx_enable.val();
        self.tx.txq_base.next = self.regs.txq_base.val();
        self.tx.txq_log_size.next = self.regs.txq_log_size.val();
        self.tx.txq_tail.next = self.regs.txq_tail.val();
        self.tx.txq_reset.next = self.regs.txq_reset.val();
        self.tx.now_ns.next = self.now_ns.val();
        self.tx.src_mac.next = self.regs.mac.val();
        self.tx.udp_port.next = self.regs.udp_port.val();
        self.regs.txq_head.next = self.tx.txq_head.val();
        // The transmit engine keeps a copy of the connection table: it snoops every successful
        // connection write the receive engine performs.
        self.tx.tbl_write.next = self.engine.tc_done.val()
            & self.regs.tc_write.val()
            & (self.regs.tc_table.val() == self.k.t_conn.val())
            & (self.engine.tc_status.val() == 0_u64);
        self.tx.tbl_index.next = self.regs.tc_index.val().get_bits::<CONN_BITS>(0);
        self.tx.tbl_data.next = self.regs.tc_data.val();
        self.dr_req_valid.next = self.tx.rd_req_valid.val();
        self.tx.rd_req_ready.next = self.dr_req_ready.val();
        self.dr_req_addr.next = self.tx.rd_req_addr.val();
        self.dr_req_len.next = self.tx.rd_req_len.val();
        self.tx.rd_tdata.next = self.dr_tdata.val();
        self.tx.rd_tvalid.next = self.dr_tvalid.val();
        self.tx.rd_tlast.next = self.dr_tlast.val();
        self.tx.rd_terror.next = self.dr_terror.val();
        self.dr_tready.next = self.tx.rd_tready.val();

        // ---- Frame builder: ACKs and NAKs first, then data and CM frames.
        self.ack_sel.next = self.engine.a_valid.val();
        self.builder.req_valid.next = self.engine.a_valid.val() | self.tx.f_valid.val();
        self.engine.a_ready.next = self.builder.req_ready.val() & self.ack_sel.val();
        self.tx.f_ready.next = self.builder.req_ready.val() & !self.ack_sel.val();
        self.builder.req_src_mac.next = self.regs.mac.val();
        self.builder.req_dst_port.next = self.regs.udp_port.val();
        self.builder.req_ecn.next = self.tx.f_ecn.val();
        if self.ack_sel.val() {
            self.builder.req_dst_mac.next = self.engine.a_dst_mac.val();
            self.builder.req_vlan.next = self.engine.a_vlan.val();
            self.builder.req_vlan_tci.next = self.engine.a_vlan_tci.val();
            self.builder.req_ipv6.next = self.engine.a_ipv6.val();
            self.builder.req_src_ip.next = self.engine.a_src_ip.val();
            self.builder.req_dst_ip.next = self.engine.a_dst_ip.val();
            self.builder.req_dscp.next = self.engine.a_dscp.val();
            self.builder.req_src_port.next = self.engine.a_src_port.val();
            self.builder.req_opcode.next = self.engine.a_opcode.val();
            self.builder.req_solicited.next = false;
            self.builder.req_dest_conn.next = self.engine.a_dest_conn.val();
            self.builder.req_ack_req.next = false;
            self.builder.req_psn.next = self.engine.a_psn.val();
            self.builder.req_th.next = self.engine.a_th.val();
            self.builder.req_th_len.next = self.engine.a_th_len.val();
            self.builder.req_payload_len.next = 0.into();
            // Where its data came in (a timer ACK: where the flow's last data came in).
            self.builder.req_port.next = self.engine.a_port.val();
        } else {
            self.builder.req_dst_mac.next = self.tx.f_dst_mac.val();
            self.builder.req_vlan.next = self.tx.f_vlan.val();
            self.builder.req_vlan_tci.next = self.tx.f_vlan_tci.val();
            self.builder.req_ipv6.next = self.tx.f_ipv6.val();
            self.builder.req_src_ip.next = self.tx.f_src_ip.val();
            self.builder.req_dst_ip.next = self.tx.f_dst_ip.val();
            self.builder.req_dscp.next = self.tx.f_dscp.val();
            self.builder.req_src_port.next = self.tx.f_src_port.val();
            self.builder.req_opcode.next = self.tx.f_opcode.val();
            self.builder.req_solicited.next = self.tx.f_solicited.val();
            self.builder.req_dest_conn.next = self.tx.f_dest_conn.val();
            self.builder.req_ack_req.next = self.tx.f_ack_req.val();
            self.builder.req_psn.next = self.tx.f_psn.val();
            self.builder.req_th.next = self.tx.f_th.val();
            self.builder.req_th_len.next = self.tx.f_th_len.val();
            self.builder.req_payload_len.next = self.tx.f_payload_len.val();
            // Where the descriptor says.
            self.builder.req_port.next = self.tx.f_port.val();
        }
        self.builder.s_pay_tdata.next = self.tx.p_tdata.val();
        self.builder.s_pay_tvalid.next = self.tx.p_tvalid.val();
        self.tx.p_tready.next = self.builder.s_pay_tready.val();
        self.m_tdata.next = self.builder.m_tdata.val();
        self.m_tkeep.next = self.builder.m_tkeep.val();
        self.m_tvalid.next = self.builder.m_tvalid.val();
        self.m_tlast.next = self.builder.m_tlast.val();
        self.m_tdest.next = self.builder.m_tdest.val();
        self.builder.m_tready.next = self.m_tready.val();

        // ---- Events.
        self.events.ev0_valid.next = self.engine.ev_valid.val();
        self.events.ev0_data.next = self.engine.ev_data.val();
        self.engine.ev_ready.next = self.events.ev0_ready.val();
        self.events.ev1_valid.next = self.tx.ev_valid.val();
        self.events.ev1_data.next = self.tx.ev_data.val();
        self.tx.ev_ready.next = self.events.ev1_ready.val();
        self.events.evq_base.next = self.regs.evq_base.val();
        self.events.evq_log_size.next = self.regs.evq_log_size.val();
        self.events.evq_head.next = self.regs.evq_head.val();
        self.events.evq_reset.next = self.regs.evq_reset.val();
        self.regs.evq_tail.next = self.events.evq_tail.val();
        self.dw1_req_valid.next = self.events.wr_valid.val();
        self.events.wr_ready.next = self.dw1_req_ready.val();
        self.dw1_req_addr.next = self.events.wr_addr.val();
        self.dw1_req_len.next = self.events.wr_len.val();
        self.dw1_tdata.next = self.events.wr_tdata.val();
        self.dw1_tvalid.next = self.events.wr_tvalid.val();
        self.dw1_tlast.next = self.events.wr_tlast.val();
        self.events.wr_tready.next = self.dw1_tready.val();
        self.events.wr_done.next = self.dw1_done.val();
        self.events.wr_error.next = self.dw1_error.val();

        // ---- Registers, table window, counters.
        self.regs.s_awaddr.next = self.axil_awaddr.val();
        self.regs.s_awvalid.next = self.axil_awvalid.val();
        self.axil_awready.next = self.regs.s_awready.val();
        self.regs.s_wdata.next = self.axil_wdata.val();
        self.regs.s_wvalid.next = self.axil_wvalid.val();
        self.axil_wready.next = self.regs.s_wready.val();
        self.axil_bresp.next = self.regs.s_bresp.val();
        self.axil_bvalid.next = self.regs.s_bvalid.val();
        self.regs.s_bready.next = self.axil_bready.val();
        self.regs.s_araddr.next = self.axil_araddr.val();
        self.regs.s_arvalid.next = self.axil_arvalid.val();
        self.axil_arready.next = self.regs.s_arready.val();
        self.axil_rdata.next = self.regs.s_rdata.val();
        self.axil_rresp.next = self.regs.s_rresp.val();
        self.axil_rvalid.next = self.regs.s_rvalid.val();
        self.regs.s_rready.next = self.axil_rready.val();
        self.regs.now_ns.next = self.now_ns.val();
        self.regs.link_up.next = self.link_up.val();
        self.engine.tc_valid.next = self.regs.tc_valid.val();
        self.engine.tc_table.next = self.regs.tc_table.val();
        self.engine.tc_write.next = self.regs.tc_write.val();
        self.engine.tc_read.next = self.regs.tc_read.val();
        self.engine.tc_index.next = self.regs.tc_index.val();
        self.engine.tc_data.next = self.regs.tc_data.val();
        self.regs.tc_done.next = self.engine.tc_done.val();
        self.regs.tc_status.next = self.engine.tc_status.val();
        self.regs.tc_rdata.next = self.engine.tc_rdata.val();
        self.regs.inc0_valid.next = self.engine.cnt_valid.val();
        self.regs.inc0_index.next = self.engine.cnt_index.val();
        self.regs.inc0_amount.next = self.engine.cnt_amount.val();
        self.regs.inc1_valid.next = self.tx.cnt_valid.val();
        self.regs.inc1_index.next = self.tx.cnt_index.val();
        self.regs.inc1_amount.next = self.tx.cnt_amount.val();
        self.regs.inc2_valid.next = self.events.cnt_valid.val();
        self.regs.inc2_index.next = self.events.cnt_index.val();
        self.regs.inc2_amount.next = 1.into();

        self.ack_timer_armed.next = self.engine.timer_armed.val();
        self.ack_timer_due.next = self.engine.timer_due.val();
        self.busy.next = self.in_frame.q.val()
            | !self.buffer.empty.val()
            | !self.results.empty.val()
            | self.engine.busy.val()
            | self.tx.busy.val()
            | self.builder.busy.val()
            | self.events.busy.val()
            | self.regs.cnt_busy.val()
            | self.regs.tc_valid.val();
    }
}
