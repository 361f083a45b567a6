//! The RX payload extractor under Verilator.

use super::{Port, Rtl, RtlError};
use crate::rng::Rng;

/// One frame and what to do with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadJob {
    /// The buffered frame.
    pub frame: Vec<u8>,
    /// Header bytes to skip.
    pub skip: u16,
    /// Payload bytes.
    pub len: u16,
    /// Stream the payload (else discard).
    pub place: bool,
}

/// The verilated extractor.
pub struct RtlPayload {
    rtl: Rtl,
    ports: [Port; 17],
    cycles: u64,
    misshapen_beats: u64,
}

const NAMES: [(&str, bool); 17] = [
    ("clock", true),
    ("reset", true),
    ("cmd_valid", true),
    ("cmd_ready", false),
    ("cmd_skip", true),
    ("cmd_len", true),
    ("dec_valid", true),
    ("dec_ready", false),
    ("dec_place", true),
    ("s_tdata", true),
    ("s_tvalid", true),
    ("s_tlast", true),
    ("s_tready", false),
    ("m_tdata", false),
    ("m_tkeep", false),
    ("m_tvalid", false),
    ("m_tready", true),
];

impl RtlPayload {
    /// A reset extractor.
    pub fn new() -> Result<Self, RtlError> {
        let rtl = Rtl::new("rx_payload")?;
        let mut ports = [rtl.port("clock", true)?; 17];
        for (i, (n, input)) in NAMES.iter().enumerate() {
            ports[i] = rtl.port(n, *input)?;
        }
        let mut me = RtlPayload {
            rtl,
            ports,
            cycles: 0,
            misshapen_beats: 0,
        };
        me.set("reset", 1);
        // Settle with the clock low first: Verilator sees no edge on a model's first
        // evaluation, so the reset would reach no register.
        me.rtl.eval();
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

    /// Output beats so far that broke the DMA stream's shape: a `tkeep` that is not a
    /// non-empty run from lane 0, or a partial beat without `tlast`.
    pub fn misshapen_beats(&self) -> u64 {
        self.misshapen_beats
    }

    /// Runs the jobs in order; returns the payload streamed for each placed job (each output
    /// burst is cut at `tlast`). Each job's command is offered as soon as the previous one was
    /// taken, its decision once its command was taken. `stall` randomly withholds input beats,
    /// output readiness and decisions (so decisions arrive before, during and after the
    /// header skip).
    pub fn run(&mut self, jobs: &[PayloadJob], mut stall: Option<&mut Rng>) -> Vec<Vec<u8>> {
        let mut outputs = Vec::new();
        let mut current = Vec::new();
        let mut cmd = 0;
        let mut dec = 0;
        let beats: Vec<(usize, u64, bool)> = jobs
            .iter()
            .enumerate()
            .flat_map(|(j, job)| {
                let n = job.frame.len().div_ceil(8);
                job.frame.chunks(8).enumerate().map(move |(b, c)| {
                    let mut l = [0u8; 8];
                    l[..c.len()].copy_from_slice(c);
                    (j, u64::from_le_bytes(l), b + 1 == n)
                })
            })
            .collect();
        let mut next = 0;
        let expected_outputs = jobs.iter().filter(|j| j.place && j.len > 0).count();
        for _ in 0..(beats.len() * 8 + 1000) {
            if next >= beats.len()
                && outputs.len() == expected_outputs
                && cmd == jobs.len()
                && dec == jobs.len()
            {
                break;
            }
            let hold = stall.as_deref_mut().is_some_and(|r| r.below(4) == 0);
            let block = stall.as_deref_mut().is_some_and(|r| r.below(4) == 0);
            let late = stall.as_deref_mut().is_some_and(|r| r.below(3) != 0);
            if let Some(job) = jobs.get(cmd) {
                self.set("cmd_valid", 1);
                self.set("cmd_skip", job.skip as u64);
                self.set("cmd_len", job.len as u64);
            } else {
                self.set("cmd_valid", 0);
            }
            let offer_dec = dec < cmd && !late;
            self.set("dec_valid", offer_dec as u64);
            self.set("dec_place", jobs.get(dec).is_some_and(|j| j.place) as u64);
            let beat = beats.get(next).copied();
            self.set("s_tvalid", (beat.is_some() && !hold) as u64);
            self.set("s_tdata", beat.map_or(0, |b| b.1));
            self.set("s_tlast", beat.is_some_and(|b| b.2) as u64);
            self.set("m_tready", !block as u64);
            self.rtl.eval();
            let took_cmd = cmd < jobs.len() && self.get("cmd_ready") == 1;
            let took_dec = offer_dec && self.get("dec_ready") == 1;
            let took_beat = beat.is_some() && !hold && self.get("s_tready") == 1;
            if self.get("m_tvalid") == 1 && !block {
                let data = self.get("m_tdata").to_le_bytes();
                let keep = self.get("m_tkeep") as u8;
                current.extend((0..8).filter(|i| keep >> i & 1 == 1).map(|i| data[i]));
                let last_port = self.rtl.port("m_tlast", false).expect("m_tlast");
                let last = self.rtl.get_u64(last_port) == 1;
                let prefix = keep != 0 && keep & keep.wrapping_add(1) == 0;
                if !prefix || (keep != 0xFF && !last) {
                    self.misshapen_beats += 1;
                }
                if last {
                    outputs.push(std::mem::take(&mut current));
                }
            }
            self.edge();
            if took_cmd {
                cmd += 1;
            }
            if took_dec {
                dec += 1;
            }
            if took_beat {
                next += 1;
            }
        }
        outputs
    }
}
