//! The transmit path (`ferroce_hdl::tx_engine::TxPath`: the TX engine feeding the frame
//! builder) under Verilator. The harness plays the rest of the NIC: it drives the registers and
//! the connection-table copy, serves the engine's DMA reads from a [`HostMemory`] (in order,
//! with random latency and random gaps between beats; a refused read returns garbage and
//! `rd_terror` on its last beat), stalls the MAC side and the event side at random, and
//! collects frames with their port (`m_tdest`, which must not change within a frame), events
//! and counter increments.

use super::{Port, Rtl, RtlError};
use crate::rng::Rng;
use ferroce_proto::model::{HostMemory, PortFrame};
use std::collections::VecDeque;

/// Number of counter indices the engine can name (`cnt_index` is 6 bits).
pub const COUNTER_SLOTS: usize = 64;

/// What the path produced during one [`RtlTxPath::run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxPathOutput {
    /// Complete frames with their ports, in order.
    pub frames: Vec<PortFrame>,
    /// Events, in order.
    pub events: Vec<[u8; 64]>,
    /// Counter increments summed per counter index.
    pub counters: [u64; COUNTER_SLOTS],
}

impl Default for TxPathOutput {
    fn default() -> Self {
        TxPathOutput {
            frames: Vec::new(),
            events: Vec::new(),
            counters: [0; COUNTER_SLOTS],
        }
    }
}

impl TxPathOutput {
    /// Adds what a later run produced (`later`) after this one's output.
    pub fn append(&mut self, later: TxPathOutput) {
        self.frames.extend(later.frames);
        self.events.extend(later.events);
        for (total, add) in self.counters.iter_mut().zip(later.counters) {
            *total += add;
        }
    }
}

/// Random timing of the harness: each a probability per cycle, or a bound in cycles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Shortest delay between a read request being taken and its first beat, beyond one cycle.
    pub min_latency: u64,
    /// Longest delay between a read request being taken and its first beat (at least
    /// `min_latency`).
    pub max_latency: u64,
    /// Chance that a due read beat is withheld this cycle.
    pub beat_gap: f64,
    /// Chance that `rd_req_ready`, `m_tready` and `ev_ready` (each) are low this cycle.
    pub stall: f64,
    /// Further chance that `m_tready` is low: a MAC slower than the DMA, so that payload read
    /// ahead piles up behind the frame leaving.
    pub mac_stall: f64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            min_latency: 0,
            max_latency: 40,
            beat_gap: 0.2,
            stall: 0.2,
            mac_stall: 0.0,
        }
    }
}

struct Read {
    due: u64,
    beats: Vec<u64>,
    error: bool,
    next: usize,
}

const NAMES: [(&str, bool); 36] = [
    ("clock", true),
    ("reset", true),
    ("enable", true),
    ("txq_base", true),
    ("txq_log_size", true),
    ("txq_tail", true),
    ("txq_reset", true),
    ("now_ns", true),
    ("src_mac", true),
    ("udp_port", true),
    ("txq_head", false),
    ("tbl_write", true),
    ("tbl_index", true),
    ("tbl_data", true),
    ("rd_req_valid", false),
    ("rd_req_ready", true),
    ("rd_req_addr", false),
    ("rd_req_len", false),
    ("rd_tdata", true),
    ("rd_tvalid", true),
    ("rd_tlast", true),
    ("rd_terror", true),
    ("rd_tready", false),
    ("ev_valid", false),
    ("ev_data", false),
    ("ev_ready", true),
    ("cnt_valid", false),
    ("cnt_index", false),
    ("cnt_amount", false),
    ("busy", false),
    ("m_tdata", false),
    ("m_tkeep", false),
    ("m_tvalid", false),
    ("m_tlast", false),
    ("m_tdest", false),
    ("m_tready", true),
];

/// The verilated transmit path.
pub struct RtlTxPath {
    rtl: Rtl,
    ports: Vec<Port>,
    cycles: u64,
    rng: Rng,
    timing: Timing,
    reads: VecDeque<Read>,
    max_reads: usize,
    frame: Vec<u8>,
    /// The port of the frame leaving (`m_tdest` of its first beat).
    frame_port: Option<u8>,
    /// Counter increments made during an edge outside a run (a counter has no ready: a
    /// ring reset while busy can land on one); reported with the next run's.
    counted: [u64; COUNTER_SLOTS],
    /// Output idle cycles since the first beat after the last `take_output_gaps`: counted
    /// into `gaps` when another beat follows them.
    out_started: bool,
    out_idle: u64,
    gaps: u64,
}

impl RtlTxPath {
    /// A reset path (registers zero, transmit disabled); `seed` drives the random timing.
    pub fn new(seed: u64, timing: Timing) -> Result<Self, RtlError> {
        let rtl = Rtl::new("tx_path")?;
        let ports = NAMES
            .iter()
            .map(|(n, input)| rtl.port(n, *input))
            .collect::<Result<Vec<_>, _>>()?;
        let mut me = RtlTxPath {
            rtl,
            ports,
            cycles: 0,
            rng: Rng::new(seed),
            timing,
            reads: VecDeque::new(),
            max_reads: 0,
            out_started: false,
            out_idle: 0,
            gaps: 0,
            frame: Vec::new(),
            frame_port: None,
            counted: [0; COUNTER_SLOTS],
        };
        // Two edges: the engine registers its reset.
        me.set("reset", 1);
        me.edge();
        me.edge();
        me.set("reset", 0);
        Ok(me)
    }

    fn port(&self, name: &str) -> Port {
        self.ports[NAMES.iter().position(|(n, _)| *n == name).expect("port")]
    }

    fn set(&mut self, name: &str, v: u64) {
        let p = self.port(name);
        self.rtl.set_u64(p, v);
    }

    fn get(&mut self, name: &str) -> u64 {
        let p = self.port(name);
        self.rtl.get_u64(p)
    }

    /// One clock edge outside [`Self::run`], with every handshake input low so that nothing
    /// is taken or offered behind the harness's back.
    fn quiet_edge(&mut self) {
        for name in [
            "rd_req_ready",
            "rd_tvalid",
            "rd_tlast",
            "rd_terror",
            "m_tready",
            "ev_ready",
        ] {
            self.set(name, 0);
        }
        self.rtl.eval();
        if self.get("cnt_valid") == 1 {
            let index = self.get("cnt_index") as usize;
            self.counted[index] += self.get("cnt_amount");
        }
        self.edge();
    }

    fn edge(&mut self) {
        self.set("clock", 1);
        self.rtl.eval();
        self.cycles += 1;
        self.set("clock", 0);
        self.rtl.eval();
    }

    /// Cycles simulated so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// MAC ports of the path: a descriptor's port at or beyond it is refused.
    pub fn ports() -> u32 {
        super::PORTS as u32
    }

    /// DMA reads requested and not yet wholly delivered, now.
    pub fn reads_outstanding(&self) -> usize {
        self.reads.len()
    }

    /// The most DMA reads that were outstanding at once (requested, not all beats taken).
    pub fn max_reads_outstanding(&self) -> usize {
        self.max_reads
    }

    /// Changes the random timing from the next cycle on.
    pub fn set_timing(&mut self, timing: Timing) {
        self.timing = timing;
    }

    /// `CONTROL_TX_ENABLE`.
    pub fn set_enable(&mut self, on: bool) {
        self.set("enable", on as u64);
    }

    /// `TXQ_BASE`.
    pub fn set_txq_base(&mut self, base: u64) {
        self.set("txq_base", base);
    }

    /// `TXQ_LOG_SIZE`, as the register block does it: the size and a head reset in one cycle.
    /// Unlike the other clocked setters it may come while the path is busy (after
    /// [`RtlTxPath::run_for`]): no read beat is delivered and nothing is taken in that cycle.
    pub fn set_txq_log_size(&mut self, log_size: u32) {
        self.set("txq_log_size", log_size as u64);
        self.set("txq_reset", 1);
        self.quiet_edge();
        self.set("txq_reset", 0);
    }

    /// `TXQ_TAIL`.
    pub fn set_txq_tail(&mut self, tail: u32) {
        self.set("txq_tail", tail as u64);
    }

    /// The NIC clock seen by the engine.
    pub fn set_now_ns(&mut self, now: u64) {
        self.set("now_ns", now);
    }

    /// Our MAC (`EthernetAddress::to_u64`).
    pub fn set_src_mac(&mut self, mac: u64) {
        self.set("src_mac", mac);
    }

    /// `UDP_PORT`.
    pub fn set_udp_port(&mut self, port: u16) {
        self.set("udp_port", port as u64);
    }

    /// Writes connection entry `index` (its table words, `ConnectionEntry::to_words`) into the
    /// engine's copy of the table (one clock cycle).
    pub fn write_conn(&mut self, index: u32, words: &[u32]) {
        let mut w = [0u32; 16];
        let n = words.len().min(16);
        w[..n].copy_from_slice(&words[..n]);
        let p = self.port("tbl_data");
        self.rtl.set(p, &w);
        self.set("tbl_index", index as u64);
        self.set("tbl_write", 1);
        self.quiet_edge();
        self.set("tbl_write", 0);
    }

    /// `TXQ_HEAD`.
    pub fn txq_head(&mut self) -> u32 {
        self.rtl.eval();
        self.get("txq_head") as u32
    }

    /// Cycles without an output beat between two beats since the last call (or since the
    /// path was made), and starts counting afresh. A MAC that is always ready and reads that
    /// keep up should see none between back-to-back frames.
    pub fn take_output_gaps(&mut self) -> u64 {
        self.out_started = false;
        self.out_idle = 0;
        core::mem::take(&mut self.gaps)
    }

    /// Runs until the path is idle (nothing to fetch, every frame out, every read served),
    /// serving DMA reads from `mem`. Panics after `limit` cycles.
    pub fn run(&mut self, mem: &mut dyn HostMemory, limit: u64) -> TxPathOutput {
        self.run_inner(mem, limit, None)
    }

    /// Runs `cycles` cycles, or until the path is idle if that comes first, and returns what
    /// came out so far. Reads still in flight and a frame partly out stay with the harness and
    /// continue with the next run, so a ring reset can land while the path is busy.
    pub fn run_for(&mut self, mem: &mut dyn HostMemory, cycles: u64) -> TxPathOutput {
        self.run_inner(mem, u64::MAX, Some(self.cycles + cycles))
    }

    fn run_inner(
        &mut self,
        mem: &mut dyn HostMemory,
        limit: u64,
        stop_at: Option<u64>,
    ) -> TxPathOutput {
        let mut out = TxPathOutput {
            counters: core::mem::replace(&mut self.counted, [0; COUNTER_SLOTS]),
            ..TxPathOutput::default()
        };
        let start = self.cycles;
        let mut quiet = 0;
        loop {
            assert!(
                self.cycles - start < limit,
                "transmit path still busy after {limit} cycles"
            );
            if stop_at.is_some_and(|t| self.cycles >= t) {
                return out;
            }
            let t = self.timing;
            let req_ready = !self.rng.chance(t.stall);
            // Drawn only when set, so that the other timings keep their random streams.
            let m_stalled =
                self.rng.chance(t.stall) || (t.mac_stall > 0.0 && self.rng.chance(t.mac_stall));
            let m_ready = !m_stalled;
            let ev_ready = !self.rng.chance(t.stall);
            let gap = self.rng.chance(t.beat_gap);
            self.set("rd_req_ready", req_ready as u64);
            self.set("m_tready", m_ready as u64);
            self.set("ev_ready", ev_ready as u64);
            let beat = self
                .reads
                .front()
                .filter(|r| r.due <= self.cycles && !gap)
                .map(|r| {
                    let last = r.next + 1 == r.beats.len();
                    (r.beats[r.next], last, last && r.error)
                });
            let (data, last, error) = beat.unwrap_or((0, false, false));
            self.set("rd_tdata", data);
            self.set("rd_tvalid", beat.is_some() as u64);
            self.set("rd_tlast", last as u64);
            self.set("rd_terror", error as u64);
            self.rtl.eval();

            if self.get("rd_req_valid") == 1 && req_ready {
                let addr = self.get("rd_req_addr");
                let len = self.get("rd_req_len") as usize;
                assert!(len > 0, "zero-length DMA read requested");
                let mut buf = vec![0u8; len];
                let error = mem.dma_read(addr, &mut buf).is_err();
                if error {
                    buf = self.rng.bytes(len);
                }
                let beats = buf
                    .chunks(8)
                    .map(|c| {
                        let mut l = [0u8; 8];
                        l[..c.len()].copy_from_slice(c);
                        u64::from_le_bytes(l)
                    })
                    .collect();
                let spread = t.max_latency.saturating_sub(t.min_latency);
                let due = self.cycles + 1 + t.min_latency + self.rng.upto(spread);
                self.reads.push_back(Read {
                    due,
                    beats,
                    error,
                    next: 0,
                });
                self.max_reads = self.max_reads.max(self.reads.len());
            }
            if beat.is_some() && self.get("rd_tready") == 1 {
                let r = self.reads.front_mut().expect("read");
                r.next += 1;
                if r.next == r.beats.len() {
                    self.reads.pop_front();
                }
            }
            if self.get("ev_valid") == 1 && ev_ready {
                let p = self.port("ev_data");
                let words = self.rtl.get(p).to_vec();
                out.events.push(core::array::from_fn(|i| {
                    (words[i / 4] >> (8 * (i % 4))) as u8
                }));
            }
            if self.get("cnt_valid") == 1 {
                let index = self.get("cnt_index") as usize;
                out.counters[index] += self.get("cnt_amount");
            }
            let beat_out = self.get("m_tvalid") == 1 && m_ready;
            if beat_out {
                self.gaps += self.out_idle;
                self.out_idle = 0;
                self.out_started = true;
            } else if self.out_started {
                self.out_idle += 1;
            }
            if beat_out {
                let data = self.get("m_tdata").to_le_bytes();
                let keep = self.get("m_tkeep") as u8;
                let port = self.get("m_tdest") as u8;
                let first = *self.frame_port.get_or_insert(port);
                assert_eq!(
                    port, first,
                    "m_tdest changed from {first} to {port} within a frame"
                );
                self.frame
                    .extend((0..8).filter(|i| keep >> i & 1 == 1).map(|i| data[i]));
                if self.get("m_tlast") == 1 {
                    out.frames.push(PortFrame {
                        port,
                        bytes: core::mem::take(&mut self.frame),
                    });
                    self.frame_port = None;
                }
            }
            let idle = self.get("busy") == 0 && self.reads.is_empty() && self.frame.is_empty();
            self.edge();
            // Idle for a few cycles in a row: nothing is left in flight.
            quiet = if idle { quiet + 1 } else { 0 };
            if quiet >= 4 {
                return out;
            }
        }
    }
}
