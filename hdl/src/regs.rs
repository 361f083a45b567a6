//! Register block: the register map of [`ferroce_proto::hsi::regs`] behind AXI4-Lite, the
//! indirect table window (commands handed to the receive engine, which owns the tables) and the
//! 64-bit counters.
//!
//! AXI4-Lite: 16-bit byte addresses, 32-bit data, one transaction at a time per direction;
//! `wstrb` is not used (every write is a full word, as the driver issues them). Writes to
//! read-only or unmapped offsets are accepted and ignored; reads of unmapped offsets return 0.
//!
//! Table commands: a write of `TABLE_CMD` starts a command; until the engine reports it done,
//! the block takes no further read or write, so a read of `TABLE_STATUS` right after the
//! command returns its final status (as in the model, where commands complete at once).
//!
//! Counters live in a block RAM (36 × 64 bits) updated by a two-stage read-modify-write
//! pipeline that takes one operation (increment, clear or read) per cycle: the word read in the
//! first stage is replaced by the one written in the cycle before when both name the same
//! counter. Three increment ports (receive engine, transmit engine, event writer) each feed a
//! 16-deep FIFO; a port may offer one increment per cycle.

use crate::constants;
use crate::rx_engine::table_sizes;
use ferroce_proto::hsi::{Counter, regs};
use ferroce_proto::wire::ROCEV2_UDP_PORT;
use rust_hdl::prelude::*;

constants!(
    /// The register map.
    RegConsts {
        a_id / k_a_id: 16 = regs::ID,
        a_version / k_a_version: 16 = regs::VERSION,
        a_control / k_a_control: 16 = regs::CONTROL,
        a_ack_delay / k_a_ack_delay: 16 = regs::ACK_DELAY_NS,
        a_udp_port / k_a_udp_port: 16 = regs::UDP_PORT,
        a_ack_coalesce / k_a_ack_coalesce: 16 = regs::ACK_COALESCE,
        a_mac_lo / k_a_mac_lo: 16 = regs::MAC_LO,
        a_mac_hi / k_a_mac_hi: 16 = regs::MAC_HI,
        a_ts_lo / k_a_ts_lo: 16 = regs::TIMESTAMP_LO,
        a_ts_hi / k_a_ts_hi: 16 = regs::TIMESTAMP_HI,
        a_cap_conns / k_a_cap_conns: 16 = regs::CAP_CONNECTIONS,
        a_cap_flows / k_a_cap_flows: 16 = regs::CAP_FLOWS,
        a_cap_regions / k_a_cap_regions: 16 = regs::CAP_REGIONS,
        a_cap_tags / k_a_cap_tags: 16 = regs::CAP_TAGS,
        a_cap_slots / k_a_cap_slots: 16 = regs::CAP_MSG_SLOTS,
        a_cap_recv / k_a_cap_recv: 16 = regs::CAP_RECV_DEPTH,
        a_cap_ports / k_a_cap_ports: 16 = regs::CAP_PORTS,
        a_port_link / k_a_port_link: 16 = regs::PORT_LINK,
        a_txq_base_lo / k_a_txq_base_lo: 16 = regs::TXQ_BASE_LO,
        a_txq_base_hi / k_a_txq_base_hi: 16 = regs::TXQ_BASE_HI,
        a_txq_log / k_a_txq_log: 16 = regs::TXQ_LOG_SIZE,
        a_txq_head / k_a_txq_head: 16 = regs::TXQ_HEAD,
        a_txq_tail / k_a_txq_tail: 16 = regs::TXQ_TAIL,
        a_evq_base_lo / k_a_evq_base_lo: 16 = regs::EVQ_BASE_LO,
        a_evq_base_hi / k_a_evq_base_hi: 16 = regs::EVQ_BASE_HI,
        a_evq_log / k_a_evq_log: 16 = regs::EVQ_LOG_SIZE,
        a_evq_head / k_a_evq_head: 16 = regs::EVQ_HEAD,
        a_evq_tail / k_a_evq_tail: 16 = regs::EVQ_TAIL,
        a_table_index / k_a_table_index: 16 = regs::TABLE_INDEX,
        a_table_cmd / k_a_table_cmd: 16 = regs::TABLE_CMD,
        a_table_status / k_a_table_status: 16 = regs::TABLE_STATUS,
        a_table_data / k_a_table_data: 16 = regs::TABLE_DATA,
        a_counters / k_a_counters: 16 = regs::COUNTERS,
        a_counters_end / k_a_counters_end: 16 = regs::COUNTERS + 8 * Counter::COUNT as u32,
        v_id / k_v_id: 32 = regs::ID_VALUE,
        v_version / k_v_version: 32 = regs::VERSION_VALUE,
        v_control / k_v_control: 32 = regs::CONTROL_RX_ENABLE | regs::CONTROL_TX_ENABLE,
        v_udp_port / k_v_udp_port: 16 = ROCEV2_UDP_PORT,
        v_ack_coalesce / k_v_ack_coalesce: 32 = ferroce_proto::model::DEFAULT_ACK_COALESCE,
        v_ack_delay / k_v_ack_delay: 32 = regs::DEFAULT_ACK_DELAY_NS,
        v_cap_conns / k_v_cap_conns: 32 = table_sizes().connections,
        v_cap_flows / k_v_cap_flows: 32 = table_sizes().flows,
        v_cap_regions / k_v_cap_regions: 32 = table_sizes().regions,
        v_cap_tags / k_v_cap_tags: 32 = table_sizes().tags,
        v_cap_slots / k_v_cap_slots: 32 = table_sizes().msg_slots,
        v_cap_recv / k_v_cap_recv: 32 = table_sizes().recv_depth,
        v_cap_ports / k_v_cap_ports: 32 = table_sizes().ports,
        v_port_mask / k_v_port_mask: 8 = (1u32 << table_sizes().ports) - 1,
        op_write / k_op_write: 32 = regs::TABLE_OP_WRITE,
        op_read / k_op_read: 32 = regs::TABLE_OP_READ,
        ctl_rx / k_ctl_rx: 32 = regs::CONTROL_RX_ENABLE,
        ctl_tx / k_ctl_tx: 32 = regs::CONTROL_TX_ENABLE,
    }
);

/// The register block.
#[derive(LogicBlock, Default)]
pub struct RegisterBlock {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset: every register to its reset value (counters are not cleared).
    pub reset: Signal<In, Bit>,
    /// AXI4-Lite write address.
    pub s_awaddr: Signal<In, Bits<16>>,
    /// Write address valid.
    pub s_awvalid: Signal<In, Bit>,
    /// Write address ready.
    pub s_awready: Signal<Out, Bit>,
    /// Write data.
    pub s_wdata: Signal<In, Bits<32>>,
    /// Write data valid.
    pub s_wvalid: Signal<In, Bit>,
    /// Write data ready.
    pub s_wready: Signal<Out, Bit>,
    /// Write response (always OKAY).
    pub s_bresp: Signal<Out, Bits<2>>,
    /// Write response valid.
    pub s_bvalid: Signal<Out, Bit>,
    /// Write response ready.
    pub s_bready: Signal<In, Bit>,
    /// Read address.
    pub s_araddr: Signal<In, Bits<16>>,
    /// Read address valid.
    pub s_arvalid: Signal<In, Bit>,
    /// Read address ready.
    pub s_arready: Signal<Out, Bit>,
    /// Read data.
    pub s_rdata: Signal<Out, Bits<32>>,
    /// Read response (always OKAY).
    pub s_rresp: Signal<Out, Bits<2>>,
    /// Read data valid.
    pub s_rvalid: Signal<Out, Bit>,
    /// Read data ready.
    pub s_rready: Signal<In, Bit>,

    /// Current time (nanoseconds).
    pub now_ns: Signal<In, Bits<64>>,
    /// The MAC ports' link state from their PHYs, one bit per port (`PORT_LINK`).
    pub link_up: Signal<In, Bits<8>>,
    /// `CONTROL_RX_ENABLE`.
    pub rx_enable: Signal<Out, Bit>,
    /// `CONTROL_TX_ENABLE`.
    pub tx_enable: Signal<Out, Bit>,
    /// `UDP_PORT`.
    pub udp_port: Signal<Out, Bits<16>>,
    /// `ACK_COALESCE`.
    pub ack_coalesce: Signal<Out, Bits<32>>,
    /// `ACK_DELAY_NS`.
    pub ack_delay: Signal<Out, Bits<32>>,
    /// Our MAC.
    pub mac: Signal<Out, Bits<48>>,
    /// TX ring base.
    pub txq_base: Signal<Out, Bits<64>>,
    /// TX ring log2 size.
    pub txq_log_size: Signal<Out, Bits<5>>,
    /// TX doorbell.
    pub txq_tail: Signal<Out, Bits<32>>,
    /// Pulse: the TX ring was resized (head := 0).
    pub txq_reset: Signal<Out, Bit>,
    /// TX head (from the transmit engine).
    pub txq_head: Signal<In, Bits<32>>,
    /// Event ring base.
    pub evq_base: Signal<Out, Bits<64>>,
    /// Event ring log2 size.
    pub evq_log_size: Signal<Out, Bits<5>>,
    /// Event ring head (host).
    pub evq_head: Signal<Out, Bits<32>>,
    /// Pulse: the event ring was resized (tail := 0).
    pub evq_reset: Signal<Out, Bit>,
    /// Event ring tail (from the event writer).
    pub evq_tail: Signal<In, Bits<32>>,

    /// Table command pending (held until `tc_done`).
    pub tc_valid: Signal<Out, Bit>,
    /// Table id.
    pub tc_table: Signal<Out, Bits<8>>,
    /// Write.
    pub tc_write: Signal<Out, Bit>,
    /// Read.
    pub tc_read: Signal<Out, Bit>,
    /// Entry index.
    pub tc_index: Signal<Out, Bits<32>>,
    /// The 16 data words.
    pub tc_data: Signal<Out, Bits<512>>,
    /// The command finished.
    pub tc_done: Signal<In, Bit>,
    /// Its status.
    pub tc_status: Signal<In, Bits<4>>,
    /// Words read.
    pub tc_rdata: Signal<In, Bits<512>>,

    /// Counter increment, port 0.
    pub inc0_valid: Signal<In, Bit>,
    /// Counter index, port 0.
    pub inc0_index: Signal<In, Bits<6>>,
    /// Amount, port 0.
    pub inc0_amount: Signal<In, Bits<16>>,
    /// Counter increment, port 1.
    pub inc1_valid: Signal<In, Bit>,
    /// Counter index, port 1.
    pub inc1_index: Signal<In, Bits<6>>,
    /// Amount, port 1.
    pub inc1_amount: Signal<In, Bits<16>>,
    /// Counter increment, port 2.
    pub inc2_valid: Signal<In, Bit>,
    /// Counter index, port 2.
    pub inc2_index: Signal<In, Bits<6>>,
    /// Amount, port 2.
    pub inc2_amount: Signal<In, Bits<16>>,
    /// Increments are waiting (for quiescence detection).
    pub cnt_busy: Signal<Out, Bit>,

    k: RegConsts,
    q0: SynchronousFIFO<Bits<22>, 4, 5, 1>,
    q1: SynchronousFIFO<Bits<22>, 4, 5, 1>,
    q2: SynchronousFIFO<Bits<22>, 4, 5, 1>,
    // rust-hdl's RAM, not `ram::BlockRam`: the pipeline below reads a counter in the cycle
    // after writing it and forwards only the word written one cycle before, so it needs the
    // write to land at once and the old word on a collision (yosys emulates that for it).
    counters: RAM<Bits<64>, 6>,

    control: DFF<Bits<32>>,
    udp: DFF<Bits<16>>,
    coalesce: DFF<Bits<32>>,
    delay: DFF<Bits<32>>,
    mac_q: DFF<Bits<48>>,
    txq_base_q: DFF<Bits<64>>,
    txq_log_q: DFF<Bits<5>>,
    txq_tail_q: DFF<Bits<32>>,
    evq_base_q: DFF<Bits<64>>,
    evq_log_q: DFF<Bits<5>>,
    evq_head_q: DFF<Bits<32>>,
    table_index: DFF<Bits<32>>,
    table_status: DFF<Bits<4>>,
    table_data: DFF<Bits<512>>,
    tc_pending: DFF<Bit>,
    tc_table_q: DFF<Bits<8>>,
    tc_write_q: DFF<Bit>,
    tc_read_q: DFF<Bit>,
    bvalid: DFF<Bit>,
    rvalid: DFF<Bit>,
    rdata: DFF<Bits<32>>,
    rd_wait: DFF<Bit>,
    rd_high: DFF<Bit>,
    // An AXI4-Lite read is taken in one cycle (its address waits here), decoded in the next
    // into four registered groups (`rd_pend`), and answered in the one after (`rd_pend2`):
    // the read-data select runs from flip-flops, not from the bus's address through the
    // address compares (8 to 9 levels of logic in the whole core before).
    ra_q: DFF<Bits<16>>,
    rd_pend: DFF<Bit>,
    // The read data's four group selects, and that they hold an answer.
    rdg0: DFF<Bits<32>>,
    rdg1: DFF<Bits<32>>,
    rdg2: DFF<Bits<32>>,
    rdg3: DFF<Bits<32>>,
    rd_pend2: DFF<Bit>,
    clear_pending: DFF<Bit>,
    clear_index: DFF<Bits<6>>,
    // Counter pipeline: the operation whose RAM word arrives this cycle...
    p_valid: DFF<Bit>,
    p_read: DFF<Bit>,
    p_clear: DFF<Bit>,
    p_index: DFF<Bits<6>>,
    p_amount: DFF<Bits<16>>,
    // ...and the word written in the cycle before (the RAM returns the old one for it).
    fw_valid: DFF<Bit>,
    fw_index: DFF<Bits<6>>,
    fw_value: DFF<Bits<64>>,
    // The counter a pending AXI read asks for.
    c_index: DFF<Bits<6>>,
    tx_reset_q: DFF<Bit>,
    ev_reset_q: DFF<Bit>,

    do_write: Signal<Local, Bit>,
    do_read: Signal<Local, Bit>,
    rd_g0: Signal<Local, Bits<32>>,
    rd_g1: Signal<Local, Bits<32>>,
    rd_g2: Signal<Local, Bits<32>>,
    rd_g3: Signal<Local, Bits<32>>,
    rd_counter: Signal<Local, Bit>,
    c_base: Signal<Local, Bits<64>>,
    c_new: Signal<Local, Bits<64>>,
    // The counter's add as a carry-select: the low half with its carry, and the high half
    // both as it is and plus one, so the two carry chains run side by side.
    c_lo: Signal<Local, Bits<33>>,
    c_hi: Signal<Local, Bits<32>>,
    c_hi1: Signal<Local, Bits<32>>,
    c_hsel: Signal<Local, Bits<32>>,
    wa: Signal<Local, Bits<16>>,
    wd: Signal<Local, Bits<32>>,
    ra: Signal<Local, Bits<16>>,
    log_clamped: Signal<Local, Bits<5>>,
    wa_rel: Signal<Local, Bits<16>>,
    ra_rel: Signal<Local, Bits<16>>,
}

impl Logic for RegisterBlock {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            control,
            udp,
            coalesce,
            delay,
            mac_q,
            txq_base_q,
            txq_log_q,
            txq_tail_q,
            evq_base_q,
            evq_log_q,
            evq_head_q,
            table_index,
            table_status,
            table_data,
            tc_pending,
            tc_table_q,
            tc_write_q,
            tc_read_q,
            bvalid,
            rvalid,
            rdata,
            rd_wait,
            rd_high,
            ra_q,
            rd_pend,
            rdg0,
            rdg1,
            rdg2,
            rdg3,
            rd_pend2,
            clear_pending,
            clear_index,
            p_valid,
            p_read,
            p_clear,
            p_index,
            p_amount,
            fw_valid,
            fw_index,
            fw_value,
            c_index,
            tx_reset_q,
            ev_reset_q
        );
        clock!(self, clock, q0, q1, q2);
        self.k.reset.next = self.reset.val();
        self.counters.read_clock.next = self.clock.val();
        self.counters.write_clock.next = self.clock.val();

        self.rx_enable.next = (self.control.q.val() & self.k.ctl_rx.val()) != 0_u64;
        self.tx_enable.next = (self.control.q.val() & self.k.ctl_tx.val()) != 0_u64;
        self.udp_port.next = self.udp.q.val();
        self.ack_coalesce.next = self.coalesce.q.val();
        self.ack_delay.next = self.delay.q.val();
        self.mac.next = self.mac_q.q.val();
        self.txq_base.next = self.txq_base_q.q.val();
        self.txq_log_size.next = self.txq_log_q.q.val();
        self.txq_tail.next = self.txq_tail_q.q.val();
        self.txq_reset.next = self.tx_reset_q.q.val();
        self.evq_base.next = self.evq_base_q.q.val();
        self.evq_log_size.next = self.evq_log_q.q.val();
        self.evq_head.next = self.evq_head_q.q.val();
        self.evq_reset.next = self.ev_reset_q.q.val();
        self.tc_valid.next = self.tc_pending.q.val();
        self.tc_table.next = self.tc_table_q.q.val();
        self.tc_write.next = self.tc_write_q.q.val();
        self.tc_read.next = self.tc_read_q.q.val();
        self.tc_index.next = self.table_index.q.val();
        self.tc_data.next = self.table_data.q.val();
        self.tx_reset_q.d.next = false;
        self.ev_reset_q.d.next = false;

        // ---- Counter increments: one FIFO per port.
        self.q0.write.next = self.inc0_valid.val();
        self.q0.data_in.next = bit_cast::<22, 6>(self.inc0_index.val())
            | (bit_cast::<22, 16>(self.inc0_amount.val()) << 6_u64);
        self.q1.write.next = self.inc1_valid.val();
        self.q1.data_in.next = bit_cast::<22, 6>(self.inc1_index.val())
            | (bit_cast::<22, 16>(self.inc1_amount.val()) << 6_u64);
        self.q2.write.next = self.inc2_valid.val();
        self.q2.data_in.next = bit_cast::<22, 6>(self.inc2_index.val())
            | (bit_cast::<22, 16>(self.inc2_amount.val()) << 6_u64);
        self.q0.read.next = false;
        self.q1.read.next = false;
        self.q2.read.next = false;
        self.cnt_busy.next = !self.q0.empty.val()
            | !self.q1.empty.val()
            | !self.q2.empty.val()
            | self.clear_pending.q.val()
            | self.p_valid.q.val();

        // ---- AXI4-Lite.
        self.s_awready.next = false;
        self.s_wready.next = false;
        self.s_bresp.next = 0.into();
        self.s_bvalid.next = self.bvalid.q.val();
        self.s_arready.next = false;
        self.s_rresp.next = 0.into();
        self.s_rvalid.next = self.rvalid.q.val();
        self.s_rdata.next = self.rdata.q.val();
        if self.s_bready.val() & self.bvalid.q.val() {
            self.bvalid.d.next = false;
        }
        if self.s_rready.val() & self.rvalid.q.val() {
            self.rvalid.d.next = false;
        }
        if self.tc_done.val() & self.tc_pending.q.val() {
            self.tc_pending.d.next = false;
            self.table_status.d.next = self.tc_status.val();
            if self.tc_read_q.q.val() & (self.tc_status.val() == 0_u64) {
                self.table_data.d.next = self.tc_rdata.val();
            }
        }
        self.do_write.next = self.s_awvalid.val()
            & self.s_wvalid.val()
            & !self.bvalid.q.val()
            & !self.tc_pending.q.val()
            & !self.clear_pending.q.val();
        self.wa.next = self.s_awaddr.val();
        self.wd.next = self.s_wdata.val();
        self.wa_rel.next = self.wa.val() - self.k.a_counters.val();
        self.log_clamped.next = self.wd.val().get_bits::<5>(0);
        if self.wd.val() > 16_u64 {
            self.log_clamped.next = 16.into();
        }
        if self.do_write.val() {
            self.s_awready.next = true;
            self.s_wready.next = true;
            self.bvalid.d.next = true;
            if self.wa.val() == self.k.a_control.val() {
                self.control.d.next = self.wd.val();
            }
            if self.wa.val() == self.k.a_udp_port.val() {
                self.udp.d.next = self.wd.val().get_bits::<16>(0);
            }
            if self.wa.val() == self.k.a_ack_coalesce.val() {
                self.coalesce.d.next = self.wd.val();
                if self.wd.val() == 0_u64 {
                    self.coalesce.d.next = 1.into();
                }
            }
            if self.wa.val() == self.k.a_ack_delay.val() {
                self.delay.d.next = self.wd.val();
            }
            if self.wa.val() == self.k.a_mac_lo.val() {
                self.mac_q.d.next =
                    (self.mac_q.q.val() & 0xFFFF_0000_0000_u64) | bit_cast::<48, 32>(self.wd.val());
            }
            if self.wa.val() == self.k.a_mac_hi.val() {
                self.mac_q.d.next = (self.mac_q.q.val() & 0xFFFF_FFFF_u64)
                    | (bit_cast::<48, 16>(self.wd.val().get_bits::<16>(0)) << 32_u64);
            }
            if self.wa.val() == self.k.a_txq_base_lo.val() {
                self.txq_base_q.d.next = (self.txq_base_q.q.val() & 0xFFFF_FFFF_0000_0000_u64)
                    | bit_cast::<64, 32>(self.wd.val());
            }
            if self.wa.val() == self.k.a_txq_base_hi.val() {
                self.txq_base_q.d.next = (self.txq_base_q.q.val() & 0xFFFF_FFFF_u64)
                    | (bit_cast::<64, 32>(self.wd.val()) << 32_u64);
            }
            if self.wa.val() == self.k.a_txq_log.val() {
                self.txq_log_q.d.next = self.log_clamped.val();
                self.txq_tail_q.d.next = 0.into();
                self.tx_reset_q.d.next = true;
            }
            if self.wa.val() == self.k.a_txq_tail.val() {
                self.txq_tail_q.d.next = self.wd.val();
            }
            if self.wa.val() == self.k.a_evq_base_lo.val() {
                self.evq_base_q.d.next = (self.evq_base_q.q.val() & 0xFFFF_FFFF_0000_0000_u64)
                    | bit_cast::<64, 32>(self.wd.val());
            }
            if self.wa.val() == self.k.a_evq_base_hi.val() {
                self.evq_base_q.d.next = (self.evq_base_q.q.val() & 0xFFFF_FFFF_u64)
                    | (bit_cast::<64, 32>(self.wd.val()) << 32_u64);
            }
            if self.wa.val() == self.k.a_evq_log.val() {
                self.evq_log_q.d.next = self.log_clamped.val();
                self.evq_head_q.d.next = 0.into();
                self.ev_reset_q.d.next = true;
            }
            if self.wa.val() == self.k.a_evq_head.val() {
                self.evq_head_q.d.next = self.wd.val();
            }
            if self.wa.val() == self.k.a_table_index.val() {
                self.table_index.d.next = self.wd.val();
            }
            if self.wa.val() == self.k.a_table_cmd.val() {
                self.tc_pending.d.next = true;
                self.tc_table_q.d.next = self.wd.val().get_bits::<8>(0);
                self.tc_write_q.d.next = (self.wd.val() & self.k.op_write.val()) != 0_u64;
                self.tc_read_q.d.next = (self.wd.val() & self.k.op_read.val()) != 0_u64;
            }
            for i in 0_usize..16 {
                if self.wa.val() == self.k.a_table_data.val() + (4 * i).to_bits::<16>() {
                    self.table_data.d.next = (self.table_data.q.val()
                        & !(0xFFFF_FFFF_u64.to_bits::<512>() << (32 * i).to_bits::<10>()))
                        | (bit_cast::<512, 32>(self.wd.val()) << (32 * i).to_bits::<10>());
                }
            }
            if (self.wa.val() >= self.k.a_counters.val())
                & (self.wa.val() < self.k.a_counters_end.val())
                & (self.wa.val().get_bits::<3>(0) == 0_u64)
            {
                self.clear_pending.d.next = true;
                self.clear_index.d.next = self.wa_rel.val().get_bits::<6>(3);
            }
        }

        self.ra.next = self.ra_q.q.val();
        self.ra_rel.next = self.ra.val() - self.k.a_counters.val();
        // Take a read (its address into `ra_q`); `do_read` answers it in the next cycle.
        self.rd_pend.d.next = false;
        if self.s_arvalid.val()
            & !self.rvalid.q.val()
            & !self.rd_wait.q.val()
            & !self.tc_pending.q.val()
            & !self.rd_pend.q.val()
            & !self.rd_pend2.q.val()
        {
            self.s_arready.next = true;
            self.ra_q.d.next = self.s_araddr.val();
            self.rd_pend.d.next = true;
        }
        self.do_read.next = self.rd_pend.q.val();
        self.rd_counter.next = (self.ra.val() >= self.k.a_counters.val())
            & (self.ra.val() < self.k.a_counters_end.val());
        self.rd_g0.next = 0.into();
        self.rd_g1.next = 0.into();
        self.rd_g2.next = 0.into();
        self.rd_g3.next = 0.into();
        // The read data's decode only in a cycle that answers a read: the same registers load,
        // but a simulator no longer compares the address with every register in every cycle.
        // The addresses differ, so at most one hit: the words are ORed, not selected in a
        // priority chain (one select over every register was 8 levels of logic deep even from
        // `ra_q`), in four groups registered and ORed in the next cycle.
        if self.do_read.val() {
            if self.ra.val() == self.k.a_id.val() {
                self.rd_g0.next = self.rd_g0.val() | self.k.v_id.val();
            }
            if self.ra.val() == self.k.a_version.val() {
                self.rd_g0.next = self.rd_g0.val() | self.k.v_version.val();
            }
            if self.ra.val() == self.k.a_control.val() {
                self.rd_g0.next = self.rd_g0.val() | self.control.q.val();
            }
            if self.ra.val() == self.k.a_udp_port.val() {
                self.rd_g0.next = self.rd_g0.val() | bit_cast::<32, 16>(self.udp.q.val());
            }
            if self.ra.val() == self.k.a_ack_coalesce.val() {
                self.rd_g0.next = self.rd_g0.val() | self.coalesce.q.val();
            }
            if self.ra.val() == self.k.a_ack_delay.val() {
                self.rd_g0.next = self.rd_g0.val() | self.delay.q.val();
            }
            if self.ra.val() == self.k.a_mac_lo.val() {
                self.rd_g0.next = self.rd_g0.val() | self.mac_q.q.val().get_bits::<32>(0);
            }
            if self.ra.val() == self.k.a_mac_hi.val() {
                self.rd_g0.next =
                    self.rd_g0.val() | bit_cast::<32, 16>(self.mac_q.q.val().get_bits::<16>(32));
            }
            if self.ra.val() == self.k.a_ts_lo.val() {
                self.rd_g0.next = self.rd_g0.val() | self.now_ns.val().get_bits::<32>(0);
            }
            if self.ra.val() == self.k.a_ts_hi.val() {
                self.rd_g0.next = self.rd_g0.val() | self.now_ns.val().get_bits::<32>(32);
            }
            if self.ra.val() == self.k.a_cap_conns.val() {
                self.rd_g1.next = self.rd_g1.val() | self.k.v_cap_conns.val();
            }
            if self.ra.val() == self.k.a_cap_flows.val() {
                self.rd_g1.next = self.rd_g1.val() | self.k.v_cap_flows.val();
            }
            if self.ra.val() == self.k.a_cap_regions.val() {
                self.rd_g1.next = self.rd_g1.val() | self.k.v_cap_regions.val();
            }
            if self.ra.val() == self.k.a_cap_tags.val() {
                self.rd_g1.next = self.rd_g1.val() | self.k.v_cap_tags.val();
            }
            if self.ra.val() == self.k.a_cap_slots.val() {
                self.rd_g1.next = self.rd_g1.val() | self.k.v_cap_slots.val();
            }
            if self.ra.val() == self.k.a_cap_recv.val() {
                self.rd_g1.next = self.rd_g1.val() | self.k.v_cap_recv.val();
            }
            if self.ra.val() == self.k.a_cap_ports.val() {
                self.rd_g1.next = self.rd_g1.val() | self.k.v_cap_ports.val();
            }
            if self.ra.val() == self.k.a_port_link.val() {
                self.rd_g1.next = self.rd_g1.val()
                    | bit_cast::<32, 8>(self.link_up.val() & self.k.v_port_mask.val());
            }
            if self.ra.val() == self.k.a_txq_base_lo.val() {
                self.rd_g1.next = self.rd_g1.val() | self.txq_base_q.q.val().get_bits::<32>(0);
            }
            if self.ra.val() == self.k.a_txq_base_hi.val() {
                self.rd_g1.next = self.rd_g1.val() | self.txq_base_q.q.val().get_bits::<32>(32);
            }
            if self.ra.val() == self.k.a_txq_log.val() {
                self.rd_g2.next = self.rd_g2.val() | bit_cast::<32, 5>(self.txq_log_q.q.val());
            }
            if self.ra.val() == self.k.a_txq_head.val() {
                self.rd_g2.next = self.rd_g2.val() | self.txq_head.val();
            }
            if self.ra.val() == self.k.a_txq_tail.val() {
                self.rd_g2.next = self.rd_g2.val() | self.txq_tail_q.q.val();
            }
            if self.ra.val() == self.k.a_evq_base_lo.val() {
                self.rd_g2.next = self.rd_g2.val() | self.evq_base_q.q.val().get_bits::<32>(0);
            }
            if self.ra.val() == self.k.a_evq_base_hi.val() {
                self.rd_g2.next = self.rd_g2.val() | self.evq_base_q.q.val().get_bits::<32>(32);
            }
            if self.ra.val() == self.k.a_evq_log.val() {
                self.rd_g2.next = self.rd_g2.val() | bit_cast::<32, 5>(self.evq_log_q.q.val());
            }
            if self.ra.val() == self.k.a_evq_head.val() {
                self.rd_g2.next = self.rd_g2.val() | self.evq_head_q.q.val();
            }
            if self.ra.val() == self.k.a_evq_tail.val() {
                self.rd_g2.next = self.rd_g2.val() | self.evq_tail.val();
            }
            if self.ra.val() == self.k.a_table_index.val() {
                self.rd_g2.next = self.rd_g2.val() | self.table_index.q.val();
            }
            if self.ra.val() == self.k.a_table_status.val() {
                self.rd_g2.next = self.rd_g2.val() | bit_cast::<32, 4>(self.table_status.q.val());
            }
            for i in 0_usize..16 {
                if self.ra.val() == self.k.a_table_data.val() + (4 * i).to_bits::<16>() {
                    self.rd_g3.next =
                        self.rd_g3.val() | self.table_data.q.val().get_bits::<32>(32 * i);
                }
            }
        }
        if self.do_read.val() {
            if self.rd_counter.val() {
                // The counter RAM answers in the counter unit below.
                self.rd_wait.d.next = true;
                self.rd_high.d.next = self.ra.val().get_bit(2);
                self.c_index.d.next = self.ra_rel.val().get_bits::<6>(3);
            } else {
                self.rdg0.d.next = self.rd_g0.val();
                self.rdg1.d.next = self.rd_g1.val();
                self.rdg2.d.next = self.rd_g2.val();
                self.rdg3.d.next = self.rd_g3.val();
                self.rd_pend2.d.next = true;
            }
        }
        if self.rd_pend2.q.val() {
            self.rd_pend2.d.next = false;
            self.rdata.d.next =
                self.rdg0.q.val() | self.rdg1.q.val() | self.rdg2.q.val() | self.rdg3.q.val();
            self.rvalid.d.next = true;
        }

        // ---- Counter pipeline. Second stage: the word of the operation issued last cycle.
        self.counters.write_address.next = self.p_index.q.val();
        self.counters.write_enable.next = false;
        self.c_base.next = self.counters.read_data.val();
        if self.fw_valid.q.val() & (self.fw_index.q.val() == self.p_index.q.val()) {
            self.c_base.next = self.fw_value.q.val();
        }
        self.c_lo.next = bit_cast::<33, 32>(self.c_base.val().get_bits::<32>(0))
            + bit_cast::<33, 16>(self.p_amount.q.val());
        self.c_hi.next = self.c_base.val().get_bits::<32>(32);
        self.c_hi1.next = self.c_hi.val() + 1_u64;
        self.c_hsel.next = self.c_hi.val();
        if self.c_lo.val().get_bit(32) {
            self.c_hsel.next = self.c_hi1.val();
        }
        self.c_new.next = bit_cast::<64, 32>(self.c_lo.val().get_bits::<32>(0))
            | (bit_cast::<64, 32>(self.c_hsel.val()) << 32_u64);
        if self.p_clear.q.val() {
            self.c_new.next = 0.into();
        }
        self.counters.write_data.next = self.c_new.val();
        self.fw_valid.d.next = false;
        self.fw_index.d.next = self.p_index.q.val();
        self.fw_value.d.next = self.c_new.val();
        if self.p_valid.q.val() {
            if self.p_read.q.val() {
                self.rd_wait.d.next = false;
                self.rvalid.d.next = true;
                self.rdata.d.next = self.c_base.val().get_bits::<32>(0);
                if self.rd_high.q.val() {
                    self.rdata.d.next = self.c_base.val().get_bits::<32>(32);
                }
            } else {
                self.counters.write_enable.next = true;
                self.fw_valid.d.next = true;
            }
        }
        // First stage: issue the next operation (the RAM reads its counter at the clock edge).
        self.p_valid.d.next = false;
        self.p_read.d.next = false;
        self.p_clear.d.next = false;
        self.p_amount.d.next = 0.into();
        self.counters.read_address.next = self.c_index.q.val();
        if self.clear_pending.q.val() {
            self.clear_pending.d.next = false;
            self.p_valid.d.next = true;
            self.p_clear.d.next = true;
            self.p_index.d.next = self.clear_index.q.val();
            self.counters.read_address.next = self.clear_index.q.val();
        } else if self.rd_wait.q.val() & !(self.p_valid.q.val() & self.p_read.q.val()) {
            self.p_valid.d.next = true;
            self.p_read.d.next = true;
            self.p_index.d.next = self.c_index.q.val();
        } else if !self.q0.empty.val() {
            self.q0.read.next = true;
            self.p_valid.d.next = true;
            self.p_index.d.next = self.q0.data_out.val().get_bits::<6>(0);
            self.p_amount.d.next = self.q0.data_out.val().get_bits::<16>(6);
            self.counters.read_address.next = self.q0.data_out.val().get_bits::<6>(0);
        } else if !self.q1.empty.val() {
            self.q1.read.next = true;
            self.p_valid.d.next = true;
            self.p_index.d.next = self.q1.data_out.val().get_bits::<6>(0);
            self.p_amount.d.next = self.q1.data_out.val().get_bits::<16>(6);
            self.counters.read_address.next = self.q1.data_out.val().get_bits::<6>(0);
        } else if !self.q2.empty.val() {
            self.q2.read.next = true;
            self.p_valid.d.next = true;
            self.p_index.d.next = self.q2.data_out.val().get_bits::<6>(0);
            self.p_amount.d.next = self.q2.data_out.val().get_bits::<16>(6);
            self.counters.read_address.next = self.q2.data_out.val().get_bits::<6>(0);
        }

        if self.reset.val() {
            self.rd_pend.d.next = false;
            self.rd_pend2.d.next = false;
            self.control.d.next = self.k.v_control.val();
            self.udp.d.next = self.k.v_udp_port.val();
            self.coalesce.d.next = self.k.v_ack_coalesce.val();
            self.delay.d.next = self.k.v_ack_delay.val();
            self.mac_q.d.next = 0.into();
            self.txq_base_q.d.next = 0.into();
            self.txq_log_q.d.next = 0.into();
            self.txq_tail_q.d.next = 0.into();
            self.evq_base_q.d.next = 0.into();
            self.evq_log_q.d.next = 0.into();
            self.evq_head_q.d.next = 0.into();
            self.table_index.d.next = 0.into();
            self.table_status.d.next = 0.into();
            self.table_data.d.next = 0.into();
            self.tc_pending.d.next = false;
            self.bvalid.d.next = false;
            self.rvalid.d.next = false;
            self.rd_wait.d.next = false;
            self.clear_pending.d.next = false;
            self.p_valid.d.next = false;
            self.tx_reset_q.d.next = true;
            self.ev_reset_q.d.next = true;
        }
    }
}
