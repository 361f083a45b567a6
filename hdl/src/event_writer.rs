//! Event writer: takes 64-byte events from the receive and transmit engines and writes them to
//! the event ring in host memory by DMA, as [`ferroce_proto::model::FastPath::service_rings`]
//! does: event `EVQ_TAIL` goes to `EVQ_BASE + 64 * (EVQ_TAIL % size)`, then the tail advances;
//! a full ring (`tail - head >= size`) or a faulted write drops the event and counts
//! `EventOverflow`. With no ring configured (`EVQ_LOG_SIZE = 0`) events wait in their engines.
//!
//! Each port has its own input register, and a port is ready exactly when its register is empty,
//! so `ev0_ready` and `ev1_ready` come straight from flip-flops: neither engine's handshake waits
//! on logic in the other (in the whole core that had been a path from the receive engine's state
//! through this arbiter into the transmit engine's ring head). Events are written in the order
//! they were taken, the receive engine's first when both arrive in one cycle. Each event is
//! eight 64-bit beats of one DMA write; a waiting event is taken up in the cycle the write before
//! it completes, so an event costs ten cycles (request, eight beats, completion) and a completion
//! per minimum-size packet keeps up with the line.
//!
//! The ring check and the slot address are computed a cycle ahead, into registers, for both
//! tails the decision can see (the tail as it is, and one further: after a write completing in
//! the decision's cycle or the cycle before), so the decision only picks one of two flip-flops
//! instead of running three 32-bit carry chains. They are stale when the host moved `EVQ_HEAD`,
//! `EVQ_BASE` or `EVQ_LOG_SIZE` in the cycle before, or the tail was reset: the writer then waits
//! a cycle (a compare against registered copies says so). The host moves the head at most once
//! per register write, so this costs no throughput.

use crate::constants;
use ferroce_proto::hsi::{Counter, EVENT_LEN};
use rust_hdl::prelude::*;

constants!(
    /// Constants of the event writer.
    EvConsts {
        c_overflow / k_c_overflow: 6 = Counter::EventOverflow,
        ev_len / k_ev_len: 16 = EVENT_LEN,
        beats_last / k_beats_last: 3 = EVENT_LEN / 8 - 1,
        ones / k_ones: 32 = u32::MAX,
    }
);

#[derive(LogicState, Debug, Copy, Clone, PartialEq)]
enum EvSt {
    Idle,
    Request,
    Data,
    Wait,
}

/// The event writer.
#[derive(LogicBlock, Default)]
pub struct EventWriter {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset.
    pub reset: Signal<In, Bit>,
    /// Event from the receive engine.
    pub ev0_valid: Signal<In, Bit>,
    /// Taken.
    pub ev0_ready: Signal<Out, Bit>,
    /// The event, byte i in bits 8i+7..8i.
    pub ev0_data: Signal<In, Bits<512>>,
    /// Event from the transmit engine.
    pub ev1_valid: Signal<In, Bit>,
    /// Taken.
    pub ev1_ready: Signal<Out, Bit>,
    /// The event.
    pub ev1_data: Signal<In, Bits<512>>,
    /// `EVQ_BASE`.
    pub evq_base: Signal<In, Bits<64>>,
    /// `EVQ_LOG_SIZE`.
    pub evq_log_size: Signal<In, Bits<5>>,
    /// `EVQ_HEAD`.
    pub evq_head: Signal<In, Bits<32>>,
    /// Pulse: tail := 0.
    pub evq_reset: Signal<In, Bit>,
    /// `EVQ_TAIL`.
    pub evq_tail: Signal<Out, Bits<32>>,
    /// DMA write request.
    pub wr_valid: Signal<Out, Bit>,
    /// Taken.
    pub wr_ready: Signal<In, Bit>,
    /// Address.
    pub wr_addr: Signal<Out, Bits<64>>,
    /// Length (64).
    pub wr_len: Signal<Out, Bits<16>>,
    /// Data beat.
    pub wr_tdata: Signal<Out, Bits<64>>,
    /// Beat valid.
    pub wr_tvalid: Signal<Out, Bit>,
    /// Last beat.
    pub wr_tlast: Signal<Out, Bit>,
    /// Beat taken.
    pub wr_tready: Signal<In, Bit>,
    /// The write finished.
    pub wr_done: Signal<In, Bit>,
    /// It faulted.
    pub wr_error: Signal<In, Bit>,
    /// Counter increment.
    pub cnt_valid: Signal<Out, Bit>,
    /// Counter index.
    pub cnt_index: Signal<Out, Bits<6>>,
    /// Busy with an event.
    pub busy: Signal<Out, Bit>,

    k: EvConsts,
    state: DFF<EvSt>,
    ev: DFF<Bits<512>>,
    // The input registers: an event taken from each port while `ev` is being written.
    pend0: DFF<Bit>,
    ev0_q: DFF<Bits<512>>,
    pend1: DFF<Bit>,
    ev1_q: DFF<Bits<512>>,
    // With both registers full, port 1's event is the older one.
    older1: DFF<Bit>,
    tail: DFF<Bits<32>>,
    // `tail + 1`, kept beside the tail so that its ring check needs no increment.
    tail_next: DFF<Bits<32>>,
    beat: DFF<Bits<3>>,
    addr: DFF<Bits<64>>,
    mask: Signal<Local, Bits<32>>,
    fill0: Signal<Local, Bits<32>>,
    fill1: Signal<Local, Bits<32>>,
    // Ring full and slot address for the tail of the cycle before (`..0`) and one further
    // (`..1`), with the head, base and size of that cycle.
    full0: DFF<Bit>,
    full1: DFF<Bit>,
    slot0: DFF<Bits<64>>,
    slot1: DFF<Bits<64>>,
    head_q: DFF<Bits<32>>,
    base_q: DFF<Bits<64>>,
    log_size_q: DFF<Bits<5>>,
    // The tail advanced at the last edge (a good write completed).
    advanced: DFF<Bit>,
    // The tail was reset at the last edge: the registered outcomes are not for it.
    tail_reset: DFF<Bit>,
    // The registered outcomes hold for this cycle's head, base, size and tail.
    fresh: Signal<Local, Bit>,
    // A good write completes this cycle.
    completes: Signal<Local, Bit>,
    // The decision's tail is one further than the tail of the cycle before.
    use1: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    // The port whose event is taken up when `take` is set.
    take1: Signal<Local, Bit>,
    load0: Signal<Local, Bit>,
    load1: Signal<Local, Bit>,
}

impl Logic for EventWriter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, ev, pend0, ev0_q, pend1, ev1_q, older1, tail, tail_next, beat,
            addr, full0, full1, slot0, slot1, head_q, base_q, log_size_q, advanced, tail_reset
        );
        self.k.reset.next = self.reset.val();
        self.ev0_ready.next = !self.pend0.q.val() & (self.evq_log_size.val() != 0_u64);
        self.ev1_ready.next = !self.pend1.q.val() & (self.evq_log_size.val() != 0_u64);
        self.evq_tail.next = self.tail.q.val();
        self.wr_valid.next = false;
        self.wr_addr.next = self.addr.q.val();
        self.wr_len.next = self.k.ev_len.val();
        self.wr_tdata.next = self.ev.q.val().get_bits::<64>(0);
        self.wr_tvalid.next = false;
        self.wr_tlast.next = self.beat.q.val() == self.k.beats_last.val();
        self.cnt_valid.next = false;
        self.cnt_index.next = self.k.c_overflow.val();
        self.busy.next =
            (self.state.q.val() != EvSt::Idle) | self.pend0.q.val() | self.pend1.q.val();

        // An input register takes its port's event whenever it is empty (its port is ready).
        self.load0.next = self.ev0_ready.val() & self.ev0_valid.val();
        self.load1.next = self.ev1_ready.val() & self.ev1_valid.val();
        if self.load0.val() {
            self.pend0.d.next = true;
            self.ev0_q.d.next = self.ev0_data.val();
        }
        if self.load1.val() {
            self.pend1.d.next = true;
            self.ev1_q.d.next = self.ev1_data.val();
        }

        // Both outcomes for the next cycle's decision, from this cycle's tail, head, base and
        // size. The size is a power of two, so `fill >= size` is a test of the bits above the
        // mask (no carry chain), and the mask is a decoded thermometer, not `size - 1`.
        self.mask.next = !(self.k.ones.val() << self.evq_log_size.val());
        // 32-bit wrapping differences, as the model computes them.
        self.fill0.next = self.tail.q.val() - self.evq_head.val();
        self.fill1.next = self.tail_next.q.val() - self.evq_head.val();
        self.full0.d.next = (self.fill0.val() & !self.mask.val()) != 0_u64;
        self.full1.d.next = (self.fill1.val() & !self.mask.val()) != 0_u64;
        self.slot0.d.next = self.evq_base.val()
            + (bit_cast::<64, 32>(self.tail.q.val() & self.mask.val()) << 6_u64);
        self.slot1.d.next = self.evq_base.val()
            + (bit_cast::<64, 32>(self.tail_next.q.val() & self.mask.val()) << 6_u64);
        self.head_q.d.next = self.evq_head.val();
        self.base_q.d.next = self.evq_base.val();
        self.log_size_q.d.next = self.evq_log_size.val();
        self.fresh.next = !self.tail_reset.q.val()
            & (self.evq_head.val() == self.head_q.q.val())
            & (self.evq_base.val() == self.base_q.q.val())
            & (self.evq_log_size.val() == self.log_size_q.q.val());

        // The waiting event is taken up when the writer is idle, or in the cycle the write
        // before it completes without a fault; its tail is then one further than the tail of
        // the cycle before (`use1`), as it is in the cycle after a completion.
        self.completes.next =
            (self.state.q.val() == EvSt::Wait) & self.wr_done.val() & !self.wr_error.val();
        self.use1.next = self.advanced.q.val() | self.completes.val();
        self.advanced.d.next = self.completes.val();
        self.tail_reset.d.next = self.evq_reset.val() | self.reset.val();
        self.take.next = false;
        if (self.state.q.val() == EvSt::Idle) | self.completes.val() {
            self.take.next = (self.pend0.q.val() | self.pend1.q.val()) & self.fresh.val();
        }
        self.take1.next = self.pend1.q.val() & (!self.pend0.q.val() | self.older1.q.val());
        // Which event is older matters only while both wait; a new event is younger than the
        // one left in the other register.
        if self.load0.val() | self.load1.val() {
            self.older1.d.next =
                self.load0.val() & self.pend1.q.val() & !(self.take.val() & self.take1.val());
        }

        match self.state.q.val() {
            EvSt::Request => {
                self.wr_valid.next = true;
                if self.wr_ready.val() {
                    self.state.d.next = EvSt::Data;
                }
            }
            EvSt::Data => {
                self.wr_tvalid.next = true;
                if self.wr_tready.val() {
                    self.ev.d.next = self.ev.q.val() >> 64_u64;
                    self.beat.d.next = self.beat.q.val() + 1_u64;
                    if self.beat.q.val() == self.k.beats_last.val() {
                        self.state.d.next = EvSt::Wait;
                    }
                }
            }
            EvSt::Wait => {
                // A faulted write drops its event (counted); a good one advances the tail.
                self.cnt_valid.next = self.wr_done.val() & self.wr_error.val();
                if self.wr_done.val() {
                    if !self.wr_error.val() {
                        self.tail.d.next = self.tail_next.q.val();
                        self.tail_next.d.next = self.tail_next.q.val() + 1_u64;
                    }
                    self.state.d.next = EvSt::Idle;
                }
            }
            _ => {}
        }
        // Idle or waiting, the event register and the slot address hold nothing still needed,
        // so they load the event that would be taken up in every such cycle: their wide
        // enables then come from the state alone, not from the ring check.
        if (self.state.q.val() == EvSt::Idle) | (self.state.q.val() == EvSt::Wait) {
            self.ev.d.next = self.ev0_q.q.val();
            if self.take1.val() {
                self.ev.d.next = self.ev1_q.q.val();
            }
            self.beat.d.next = 0.into();
            self.addr.d.next = self.slot0.q.val();
            if self.use1.val() {
                self.addr.d.next = self.slot1.q.val();
            }
        }
        if self.take.val() {
            // A full ring drops the event (counted); otherwise it goes to slot `tail`.
            if self.take1.val() {
                self.pend1.d.next = false;
            } else {
                self.pend0.d.next = false;
            }
            if (self.full0.q.val() & !self.use1.val()) | (self.full1.q.val() & self.use1.val()) {
                self.cnt_valid.next = true;
                self.state.d.next = EvSt::Idle;
            } else {
                self.state.d.next = EvSt::Request;
            }
        }
        if self.evq_reset.val() {
            self.tail.d.next = 0.into();
            self.tail_next.d.next = 1.into();
        }
        if self.reset.val() {
            self.state.d.next = EvSt::Idle;
            self.pend0.d.next = false;
            self.pend1.d.next = false;
            self.older1.d.next = false;
            self.tail.d.next = 0.into();
            self.tail_next.d.next = 1.into();
        }
    }
}
