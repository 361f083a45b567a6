//! A lossy multipath link between two NICs, "A" and "B".
//!
//! Each frame takes path `hash(UDP source port) % paths` (ECMP on the entropy), so a sender that
//! changes a flow's entropy moves it to another path. Path `k` adds `k * path_skew_ns` to the
//! base delay (so packets sprayed over several paths arrive out of order) plus uniform jitter
//! that never reorders frames within one path: a path is a FIFO, as in a real fabric, so a gap
//! inside one flow means loss, not reordering.
//! Each frame is independently lost, duplicated or CE-marked (only ECN-capable frames are
//! marked, as a switch does; the ICRC does not cover the ECN bits). Time is injected.

use crate::rng::Rng;
use ferroce_proto::wire::{
    EthernetRepr,
    ip::{ECN_CE, IPV4_HEADER_LEN, IPV6_HEADER_LEN, internet_checksum},
};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Which end of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    /// Node A.
    A,
    /// Node B.
    B,
}

impl Side {
    /// The other end.
    pub fn peer(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// Link impairments.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Number of equal-cost paths.
    pub paths: u32,
    /// One-way delay of path 0.
    pub delay_ns: u64,
    /// Extra delay per path index.
    pub path_skew_ns: u64,
    /// Maximum uniform jitter added to each frame.
    pub jitter_ns: u64,
    /// Probability that a frame is lost.
    pub loss: f64,
    /// Probability that a frame is delivered twice.
    pub duplicate: f64,
    /// Probability that an ECN-capable frame is CE-marked, per path.
    pub ce_mark: Vec<f64>,
    /// Serialisation time per byte (0 = infinitely fast).
    pub ns_per_byte: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            paths: 4,
            delay_ns: 2_000,
            path_skew_ns: 700,
            jitter_ns: 1_500,
            loss: 0.0,
            duplicate: 0.0,
            ce_mark: vec![],
            ns_per_byte: 0.0,
            seed: 1,
        }
    }
}

/// What happened to one frame put on the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fate {
    /// Path taken.
    pub path: u32,
    /// Lost.
    pub lost: bool,
    /// CE-marked.
    pub marked: bool,
    /// Duplicated.
    pub duplicated: bool,
}

/// Link statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkStats {
    /// Frames put on the link.
    pub sent: u64,
    /// Frames lost.
    pub lost: u64,
    /// Extra copies delivered.
    pub duplicated: u64,
    /// Frames CE-marked.
    pub marked: u64,
    /// Frames per path.
    pub per_path: Vec<u64>,
}

/// A frame on its way: (arrival time, sequence for a stable order, receiving side, bytes).
type InFlight = (u64, u64, Side, Vec<u8>);

/// The link with the frames in flight.
#[derive(Debug)]
pub struct Link {
    cfg: LinkConfig,
    rng: Rng,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    busy_until: [u64; 2],
    /// Last delivery time per (receiving side, path): keeps each path in order.
    last_arrival: Vec<u64>,
    /// Paths that drop everything (a blackholed route), set with [`Link::set_path_down`].
    down: Vec<bool>,
    stats: LinkStats,
}

/// Offsets of the IP header within a frame, if it is IPv4 (without options) or IPv6.
fn ip_offset(frame: &[u8]) -> Option<(usize, bool)> {
    let eth = EthernetRepr::parse(frame).ok()?;
    let at = eth.header_len();
    let v6 = eth.ethertype == ferroce_proto::wire::ethernet::ETHERTYPE_IPV6;
    let need = at + if v6 { IPV6_HEADER_LEN } else { IPV4_HEADER_LEN } + 8;
    if frame.len() < need || (!v6 && frame[at] != 0x45) {
        return None;
    }
    Some((at, v6))
}

/// The UDP source port (entropy) of a frame, if it has one.
pub fn entropy(frame: &[u8]) -> Option<u16> {
    let (at, v6) = ip_offset(frame)?;
    let udp = at + if v6 { IPV6_HEADER_LEN } else { IPV4_HEADER_LEN };
    Some(u16::from_be_bytes([frame[udp], frame[udp + 1]]))
}

/// Sets CE on an ECN-capable frame, as a congested switch does. Returns whether it marked.
pub fn mark_ce(frame: &mut [u8]) -> bool {
    let Some((at, v6)) = ip_offset(frame) else {
        return false;
    };
    if v6 {
        let ecn = (frame[at + 1] >> 4) & 3;
        if ecn == 0 || ecn == ECN_CE {
            return false;
        }
        frame[at + 1] |= 0x30;
    } else {
        let ecn = frame[at + 1] & 3;
        if ecn == 0 || ecn == ECN_CE {
            return false;
        }
        frame[at + 1] |= 3;
        frame[at + 10] = 0;
        frame[at + 11] = 0;
        let sum = internet_checksum(&frame[at..at + IPV4_HEADER_LEN]);
        frame[at + 10..at + 12].copy_from_slice(&sum.to_be_bytes());
    }
    true
}

/// ECMP path choice: a fixed hash of the entropy (the murmur3 finaliser), scaled to `paths`.
/// Like a switch's hash, it spreads entropies evenly on average but not one per path: four
/// consecutive ports may share paths.
pub fn path_of(entropy: u16, paths: u32) -> u32 {
    let mut h = entropy as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    ((h as u64 * paths.max(1) as u64) >> 32) as u32
}

impl Link {
    /// An empty link.
    pub fn new(cfg: LinkConfig) -> Self {
        let rng = Rng::new(cfg.seed);
        let stats = LinkStats {
            per_path: vec![0; cfg.paths as usize],
            ..Default::default()
        };
        let last_arrival = vec![0; 2 * cfg.paths.max(1) as usize];
        let down = vec![false; cfg.paths.max(1) as usize];
        Link {
            cfg,
            rng,
            in_flight: BinaryHeap::new(),
            seq: 0,
            busy_until: [0; 2],
            last_arrival,
            down,
            stats,
        }
    }

    /// Blackholes path `path` (every frame taking it, either way, is lost and counted in
    /// `lost`) or brings it back.
    pub fn set_path_down(&mut self, path: u32, down: bool) {
        if let Some(d) = self.down.get_mut(path as usize) {
            *d = down;
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// Statistics so far.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Puts a frame sent by `from` at `now_ns` on the link.
    pub fn send(&mut self, now_ns: u64, from: Side, mut frame: Vec<u8>) -> Fate {
        let path = entropy(&frame).map_or(0, |e| path_of(e, self.cfg.paths));
        self.stats.sent += 1;
        self.stats.per_path[path as usize] += 1;
        // Serialisation on the sender's port.
        let port = from as usize;
        let start = self.busy_until[port].max(now_ns);
        let done = start + (frame.len() as f64 * self.cfg.ns_per_byte) as u64;
        self.busy_until[port] = done;
        let mut fate = Fate {
            path,
            lost: false,
            marked: false,
            duplicated: false,
        };
        if self.down.get(path as usize).copied().unwrap_or(false) {
            self.stats.lost += 1;
            fate.lost = true;
            return fate;
        }
        if self.rng.chance(self.cfg.loss) {
            self.stats.lost += 1;
            fate.lost = true;
            return fate;
        }
        let p_mark = self.cfg.ce_mark.get(path as usize).copied().unwrap_or(0.0);
        if self.rng.chance(p_mark) && mark_ce(&mut frame) {
            self.stats.marked += 1;
            fate.marked = true;
        }
        let copies = if self.rng.chance(self.cfg.duplicate) {
            self.stats.duplicated += 1;
            fate.duplicated = true;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let jitter = self.rng.below(self.cfg.jitter_ns + 1);
            let lane = from.peer() as usize * self.cfg.paths.max(1) as usize + path as usize;
            let at = (done + self.cfg.delay_ns + path as u64 * self.cfg.path_skew_ns + jitter)
                .max(self.last_arrival[lane]);
            self.last_arrival[lane] = at;
            self.seq += 1;
            self.in_flight
                .push(Reverse((at, self.seq, from.peer(), frame.clone())));
        }
        fate
    }

    /// Time of the next delivery, if any frame is in flight.
    pub fn next_delivery(&self) -> Option<u64> {
        self.in_flight.peek().map(|Reverse((t, ..))| *t)
    }

    /// Takes the next frame due at or before `now_ns`: (arrival time, receiving side, frame).
    pub fn deliver(&mut self, now_ns: u64) -> Option<(u64, Side, Vec<u8>)> {
        if self.next_delivery()? > now_ns {
            return None;
        }
        self.in_flight
            .pop()
            .map(|Reverse((t, _, side, f))| (t, side, f))
    }
}
