//! The event writer under Verilator: two engines' event ports in, the event ring written by DMA.
//!
//! The harness offers events on both ports, plays the DMA engine (request, eight data beats,
//! a completion that may report a fault) and the host (which consumes events by moving the ring
//! head), and records what the writer did, for the test to hold against the rules of
//! [`ferroce_proto::model::FastPath::service_rings`].

use super::{Port, Rtl, RtlError};
use crate::rng::Rng;

/// One 64-byte event as the eight 64-bit beats it is written in, first beat first.
pub type Event = [u64; 8];

/// How the harness plays the engines, the DMA engine and the host.
#[derive(Debug, Clone, Copy)]
pub struct Knobs {
    /// log2 of the ring's size in events.
    pub log_size: u8,
    /// At most this many idle cycles (random) before an engine offers its next event.
    pub offer_gap: u64,
    /// Random DMA back-pressure on the request and the data beats, and completions 1 to 4
    /// cycles after the last beat instead of the next cycle.
    pub stall: bool,
    /// A write completes with a fault with probability 1 / `fault_one_in` (0: never).
    pub fault_one_in: u64,
    /// The host consumes one event per cycle with probability 1 / `consume_one_in` (1: at
    /// once, so the ring never fills; 0: never, so it does).
    pub consume_one_in: u64,
}

/// One write to the event ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingWrite {
    /// The address the write went to.
    pub addr: u64,
    /// Its beats.
    pub beats: Vec<u64>,
    /// The DMA engine reported a fault for it.
    pub faulted: bool,
}

/// What the writer did in one run.
#[derive(Debug, Clone, Default)]
pub struct EventRun {
    /// Events taken from the ports, in the order of their handshakes (port 0 first within a
    /// cycle): (port, event).
    pub taken: Vec<(u8, Event)>,
    /// Writes to the ring, in order.
    pub writes: Vec<RingWrite>,
    /// Dropped-event counts in cycles that completed a faulted write.
    pub fault_drops: u64,
    /// Dropped-event counts in other cycles: events refused because the ring was full.
    pub full_drops: u64,
    /// Full-ring drops at a moment the ring was not full (tail after this cycle's completion
    /// minus head below the size): each one a fault of the writer.
    pub wrong_full_drops: u64,
    /// Writes requested while the ring was full (its slot not yet consumed by the host).
    pub overwrites: u64,
    /// Cycles in which a port's ready changed when only the valids and data in front of the
    /// writer changed: each one a combinational path from an engine into a handshake.
    pub ready_from_valid: u64,
    /// Write requests with a length other than 64 bytes, or data not ending on the eighth beat.
    pub malformed_writes: u64,
    /// Counter pulses naming a counter other than the one given to [`RtlEventWriter::new`].
    pub wrong_counter: u64,
    /// Cycles the run took.
    pub cycles: u64,
    /// The ring tail at the end.
    pub tail: u32,
}

struct Ports {
    clock: Port,
    reset: Port,
    valid: [Port; 2],
    ready: [Port; 2],
    data: [Port; 2],
    base: Port,
    log_size: Port,
    head: Port,
    tail: Port,
    wr_valid: Port,
    wr_ready: Port,
    wr_addr: Port,
    wr_len: Port,
    wr_tdata: Port,
    wr_tvalid: Port,
    wr_tlast: Port,
    wr_tready: Port,
    wr_done: Port,
    wr_error: Port,
    cnt_valid: Port,
    cnt_index: Port,
    busy: Port,
}

/// The verilated event writer.
pub struct RtlEventWriter {
    rtl: Rtl,
    p: Ports,
    base: u64,
    overflow_counter: u64,
}

fn words(ev: &Event) -> Vec<u32> {
    ev.iter()
        .flat_map(|&b| [b as u32, (b >> 32) as u32])
        .collect()
}

/// The DMA engine's side of one write in progress.
enum Dma {
    /// No write: the next request may come.
    Idle,
    /// Request taken; data beats being collected.
    Data(RingWrite),
    /// All beats in; the completion comes after `wait` more cycles.
    Done(RingWrite, u64),
}

impl RtlEventWriter {
    /// A reset writer whose ring starts at `base`; `overflow_counter` is the counter index a
    /// dropped event must name.
    pub fn new(base: u64, overflow_counter: u64) -> Result<Self, RtlError> {
        let rtl = Rtl::new("event_writer")?;
        let i = |n: &str| rtl.port(n, true);
        let o = |n: &str| rtl.port(n, false);
        let p = Ports {
            clock: i("clock")?,
            reset: i("reset")?,
            valid: [i("ev0_valid")?, i("ev1_valid")?],
            ready: [o("ev0_ready")?, o("ev1_ready")?],
            data: [i("ev0_data")?, i("ev1_data")?],
            base: i("evq_base")?,
            log_size: i("evq_log_size")?,
            head: i("evq_head")?,
            tail: o("evq_tail")?,
            wr_valid: o("wr_valid")?,
            wr_ready: i("wr_ready")?,
            wr_addr: o("wr_addr")?,
            wr_len: o("wr_len")?,
            wr_tdata: o("wr_tdata")?,
            wr_tvalid: o("wr_tvalid")?,
            wr_tlast: o("wr_tlast")?,
            wr_tready: i("wr_tready")?,
            wr_done: i("wr_done")?,
            wr_error: i("wr_error")?,
            cnt_valid: o("cnt_valid")?,
            cnt_index: o("cnt_index")?,
            busy: o("busy")?,
        };
        let mut me = RtlEventWriter {
            rtl,
            p,
            base,
            overflow_counter,
        };
        me.rtl.set_u64(me.p.base, base);
        me.rtl.set_u64(me.p.reset, 1);
        // Settle with the clock low first: Verilator sees no edge on a model's first
        // evaluation, so a reset value other than the registers' initial zero would be lost.
        me.rtl.eval();
        me.edge();
        me.rtl.set_u64(me.p.reset, 0);
        Ok(me)
    }

    fn edge(&mut self) {
        self.rtl.set_u64(self.p.clock, 1);
        self.rtl.eval();
        self.rtl.set_u64(self.p.clock, 0);
        self.rtl.eval();
    }

    fn readies(&mut self) -> [u64; 2] {
        [
            self.rtl.get_u64(self.p.ready[0]),
            self.rtl.get_u64(self.p.ready[1]),
        ]
    }

    /// Offers `events[0]` on port 0 (the receive engine's) and `events[1]` on port 1 (the
    /// transmit engine's), each in order, and runs until every event is taken and the writer
    /// is idle. Panics if that takes more than 1,000 cycles per event.
    pub fn run(&mut self, events: [&[Event]; 2], knobs: Knobs, rng: &mut Rng) -> EventRun {
        let mut run = EventRun::default();
        let size = 1u64 << knobs.log_size;
        self.rtl.set_u64(self.p.log_size, knobs.log_size as u64);
        let mut head = self.rtl.get_u64(self.p.tail) as u32;
        let mut next = [0usize; 2];
        let mut idle = [0u64; 2];
        let mut dma = Dma::Idle;
        let total = events[0].len() + events[1].len();
        for _ in 0..1_000 * (total as u64 + 1) {
            let all_taken = next[0] == events[0].len() && next[1] == events[1].len();
            if all_taken && matches!(dma, Dma::Idle) && self.rtl.get_u64(self.p.busy) == 0 {
                run.tail = self.rtl.get_u64(self.p.tail) as u32;
                return run;
            }
            // The host consumes.
            let tail = self.rtl.get_u64(self.p.tail) as u32;
            if knobs.consume_one_in != 0 && head != tail && rng.below(knobs.consume_one_in) == 0 {
                head = head.wrapping_add(1);
            }
            self.rtl.set_u64(self.p.head, head as u64);
            // The engines offer.
            let mut offer = [false; 2];
            for port in 0..2 {
                offer[port] = next[port] < events[port].len() && idle[port] == 0;
                let ev = events[port].get(next[port]).copied().unwrap_or_default();
                self.rtl.set(self.p.data[port], &words(&ev));
                self.rtl.set_u64(self.p.valid[port], offer[port] as u64);
            }
            // The DMA engine.
            let busy_dma = knobs.stall && rng.below(3) == 0;
            let mut done_good = false;
            let mut done_fault = false;
            match &mut dma {
                Dma::Idle => {
                    self.rtl.set_u64(self.p.wr_ready, !busy_dma as u64);
                    self.rtl.set_u64(self.p.wr_tready, 0);
                }
                Dma::Data(_) => {
                    self.rtl.set_u64(self.p.wr_ready, 0);
                    self.rtl.set_u64(self.p.wr_tready, !busy_dma as u64);
                }
                Dma::Done(_, wait) => {
                    self.rtl.set_u64(self.p.wr_ready, 0);
                    self.rtl.set_u64(self.p.wr_tready, 0);
                    if *wait == 0 {
                        let fault = knobs.fault_one_in != 0 && rng.below(knobs.fault_one_in) == 0;
                        done_fault = fault;
                        done_good = !fault;
                    }
                }
            }
            self.rtl
                .set_u64(self.p.wr_done, (done_good || done_fault) as u64);
            self.rtl.set_u64(self.p.wr_error, done_fault as u64);
            self.rtl.eval();

            // A ready must not follow the valids or data in front of the writer.
            let ready = self.readies();
            for (port, &offered) in offer.iter().enumerate() {
                self.rtl.set_u64(self.p.valid[port], !offered as u64);
                self.rtl.set(self.p.data[port], &[rng.next_u32(); 16]);
            }
            self.rtl.eval();
            if self.readies() != ready {
                run.ready_from_valid += 1;
            }
            for port in 0..2 {
                let ev = events[port].get(next[port]).copied().unwrap_or_default();
                self.rtl.set(self.p.data[port], &words(&ev));
                self.rtl.set_u64(self.p.valid[port], offer[port] as u64);
            }
            self.rtl.eval();

            // What happens at this edge.
            for port in 0..2 {
                if offer[port] && ready[port] == 1 {
                    run.taken.push((port as u8, events[port][next[port]]));
                    next[port] += 1;
                    idle[port] = rng.upto(knobs.offer_gap);
                } else if !offer[port] {
                    idle[port] = idle[port].saturating_sub(1);
                }
            }
            if self.rtl.get_u64(self.p.cnt_valid) == 1 {
                if self.rtl.get_u64(self.p.cnt_index) != self.overflow_counter {
                    run.wrong_counter += 1;
                }
                if done_fault {
                    run.fault_drops += 1;
                } else {
                    run.full_drops += 1;
                    let tail_now = tail.wrapping_add(done_good as u32);
                    if (tail_now.wrapping_sub(head) as u64) < size {
                        run.wrong_full_drops += 1;
                    }
                }
            }
            dma = match dma {
                Dma::Idle if !busy_dma && self.rtl.get_u64(self.p.wr_valid) == 1 => {
                    if self.rtl.get_u64(self.p.wr_len) != 64 {
                        run.malformed_writes += 1;
                    }
                    if tail.wrapping_sub(head) as u64 >= size {
                        run.overwrites += 1;
                    }
                    Dma::Data(RingWrite {
                        addr: self.rtl.get_u64(self.p.wr_addr),
                        beats: Vec::new(),
                        faulted: false,
                    })
                }
                Dma::Data(mut w) if !busy_dma && self.rtl.get_u64(self.p.wr_tvalid) == 1 => {
                    w.beats.push(self.rtl.get_u64(self.p.wr_tdata));
                    let last = self.rtl.get_u64(self.p.wr_tlast) == 1;
                    if last != (w.beats.len() == 8) {
                        run.malformed_writes += 1;
                    }
                    if last || w.beats.len() == 8 {
                        let wait = if knobs.stall { rng.below(4) } else { 0 };
                        Dma::Done(w, wait)
                    } else {
                        Dma::Data(w)
                    }
                }
                Dma::Done(mut w, 0) => {
                    w.faulted = done_fault;
                    run.writes.push(w);
                    Dma::Idle
                }
                Dma::Done(w, wait) => Dma::Done(w, wait - 1),
                other => other,
            };
            self.edge();
            run.cycles += 1;
        }
        panic!(
            "event writer stuck: {} of {total} events taken, {} writes",
            run.taken.len(),
            run.writes.len()
        );
    }

    /// The address of ring slot `index` (counted without wrapping), for a ring of
    /// `1 << log_size` events.
    pub fn slot_addr(&self, index: u32, log_size: u8) -> u64 {
        self.base + 64 * (index as u64 & ((1u64 << log_size) - 1))
    }
}
