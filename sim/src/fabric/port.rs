//! Output ports and links. A port is a FIFO output queue with a finite byte buffer (tail drop)
//! and optional RED/ECN marking on enqueue; it serialises one packet at a time onto its link.
//! A link is one direction of a cable: rate, propagation delay, a loss process and an up/down
//! state.

use super::event::Ps;
use super::loss::LossState;
use super::packet::Packet;
use crate::rng::Rng;
use std::collections::VecDeque;

/// RED-style ECN marking by instantaneous queue depth, as DCQCN-era switches do: no marks
/// below `kmin`, probability rising linearly to `pmax` at `kmax`, every packet above `kmax`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Red {
    /// Queue bytes where marking starts.
    pub kmin: u64,
    /// Queue bytes where marking becomes certain.
    pub kmax: u64,
    /// Marking probability just below `kmax`.
    pub pmax: f64,
}

impl Red {
    /// Marking probability at queue depth `q` bytes.
    pub fn probability(&self, q: u64) -> f64 {
        if q <= self.kmin {
            0.0
        } else if q > self.kmax {
            1.0
        } else {
            self.pmax * (q - self.kmin) as f64 / (self.kmax - self.kmin).max(1) as f64
        }
    }
}

/// Counters of one port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Packets put on the link.
    pub tx_packets: u64,
    /// Bytes put on the link (wire bytes).
    pub tx_bytes: u64,
    /// Packets dropped because the buffer was full.
    pub drops: u64,
    /// Packets CE-marked.
    pub marks: u64,
    /// Largest queue seen (bytes).
    pub max_bytes: u64,
}

/// What enqueueing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// Queued, and the port was idle: start serialising.
    StartTx,
    /// Queued behind others.
    Queued,
    /// Tail-dropped.
    Dropped,
}

/// A queued packet on a cache line of its own: a packet (56 bytes) at any other offset
/// straddles two lines, and the engine reads each one back long after queueing it.
#[derive(Debug)]
#[repr(align(64))]
struct Queued(Packet);

/// An output port.
///
/// Laid out (`repr(C)`, line-aligned) so that what a finished serialisation reads (the queue,
/// its byte count, the link) is in the first cache line: the engine visits many ports, each
/// rarely, and the fields in Rust's own order spread over three lines.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Port {
    queue: VecDeque<Queued>,
    bytes: u64,
    /// The link this port transmits onto.
    pub link: usize,
    buffer: u64,
    busy: bool,
    /// Counters.
    pub stats: PortStats,
    rng: Rng,
    red: Option<Red>,
}

impl Port {
    /// A port on `link` with `buffer` bytes (`u64::MAX`: unbounded, as a NIC's host-side queue)
    /// and optional ECN marking; `seed` drives the marking decisions.
    pub fn new(link: usize, buffer: u64, red: Option<Red>, seed: u64) -> Self {
        Port {
            queue: VecDeque::new(),
            bytes: 0,
            buffer,
            red,
            rng: Rng::new(seed),
            busy: false,
            link,
            stats: PortStats::default(),
        }
    }

    /// Bytes queued, the packet being serialised included.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Tail drop when the buffer is full, else RED marking on the depth found, then queueing.
    pub fn enqueue(&mut self, mut pkt: Packet) -> Enqueued {
        let len = pkt.wire_len as u64;
        if self.bytes + len > self.buffer {
            self.stats.drops += 1;
            return Enqueued::Dropped;
        }
        if let Some(red) = self.red {
            let p = red.probability(self.bytes);
            if p > 0.0 && pkt.ecn_capable && (p >= 1.0 || self.rng.chance(p)) && pkt.mark_ce() {
                self.stats.marks += 1;
            }
        }
        self.bytes += len;
        self.stats.max_bytes = self.stats.max_bytes.max(self.bytes);
        self.queue.push_back(Queued(pkt));
        if self.busy {
            Enqueued::Queued
        } else {
            self.busy = true;
            Enqueued::StartTx
        }
    }

    /// Wire length of the packet at the head (the one being serialised).
    pub fn head_len(&self) -> Option<u32> {
        self.queue.front().map(|p| p.0.wire_len)
    }

    /// Serialisation of the head finished: takes it off. The port stays busy if more wait.
    pub fn finish_tx(&mut self) -> Option<Packet> {
        let Queued(p) = self.queue.pop_front()?;
        self.bytes -= p.wire_len as u64;
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += p.wire_len as u64;
        self.busy = !self.queue.is_empty();
        Some(p)
    }
}

/// Where a link sits, so experiments can pick links (last hops, fabric links, a plane).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkRole {
    /// Host NIC port → leaf.
    HostUp,
    /// Leaf → host NIC port (the last hop).
    HostDown,
    /// Leaf → spine.
    LeafUp,
    /// Spine → leaf.
    SpineDown,
}

/// Counters of one link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets lost to the loss process.
    pub lost: u64,
    /// Packets lost because the link was down.
    pub down_drops: u64,
}

/// One direction of a cable.
///
/// Laid out (`repr(C)`, line-aligned) so that what every packet reads (where it goes, the
/// delay, the rate, whether the link is up or loses anything) is in one cache line.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Link {
    /// Receiving node.
    pub to_node: u32,
    /// Receiving node's port index.
    pub to_port: u16,
    /// Carries traffic.
    pub up: bool,
    /// Plane.
    pub plane: u8,
    /// Rate in Mb/s (set by [`Link::new`], which derives the serialisation factor from it).
    rate_mbps: u64,
    /// Picoseconds per byte when that is a whole number (100 Gb/s: 80), else 0: then the
    /// serialisation time takes a division per packet, as it did for every rate before.
    ps_per_byte: u64,
    /// Propagation delay.
    pub delay_ps: Ps,
    /// Loss process.
    pub loss: LossState,
    /// Position in the topology.
    pub role: LinkRole,
    /// Counters.
    pub stats: LinkStats,
}

/// Picoseconds one byte takes at 1 Mb/s (eight bits of 1 µs each): bytes × this / (Mb/s) = ps.
const PS_BYTE_MBPS: u64 = 8_000_000;

impl Link {
    /// An up link, without loss, into port `to_port` of `to_node`, at `rate_mbps` (at least 1).
    pub fn new(
        to_node: u32,
        to_port: u16,
        rate_mbps: u64,
        delay_ps: Ps,
        role: LinkRole,
        plane: u8,
    ) -> Self {
        let rate_mbps = rate_mbps.max(1);
        Link {
            to_node,
            to_port,
            up: true,
            plane,
            rate_mbps,
            ps_per_byte: if PS_BYTE_MBPS.is_multiple_of(rate_mbps) {
                PS_BYTE_MBPS / rate_mbps
            } else {
                0
            },
            delay_ps,
            loss: LossState::new(Default::default(), Default::default(), 0),
            role,
            stats: LinkStats::default(),
        }
    }

    /// Time to serialise `bytes` at the link's rate: a multiplication where the rate divides
    /// evenly into picoseconds per byte (every standard Ethernet rate does), the same figure
    /// as the division it replaces, which took tens of cycles on every hop.
    pub fn tx_time(&self, bytes: u32) -> Ps {
        if self.ps_per_byte != 0 {
            bytes as u64 * self.ps_per_byte
        } else {
            // bits / (Mb/s) = microseconds; 1e6 ps per microsecond.
            bytes as u64 * PS_BYTE_MBPS / self.rate_mbps
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::packet::{Body, Packet};
    use crate::roce::RocePacket;

    fn pkt(len: u32, ecn: bool) -> Packet {
        Packet {
            src: 0,
            dst: 1,
            hash: 0,
            entropy: 0,
            wire_len: len,
            ecn_capable: ecn,
            ce: false,
            control: false,
            body: Body::Roce(RocePacket::default()),
        }
    }

    #[test]
    fn red_probability_shape() {
        let r = Red {
            kmin: 5_000,
            kmax: 100_000,
            pmax: 0.01,
        };
        assert_eq!(r.probability(0), 0.0);
        assert_eq!(r.probability(5_000), 0.0);
        assert!((r.probability(52_500) - 0.005).abs() < 1e-9);
        assert_eq!(r.probability(100_001), 1.0);
    }

    #[test]
    fn tail_drop_and_marking() {
        let red = Red {
            kmin: 1_000,
            kmax: 2_000,
            pmax: 0.5,
        };
        let mut p = Port::new(0, 5_000, Some(red), 1);
        assert_eq!(p.enqueue(pkt(1_000, true)), Enqueued::StartTx);
        assert_eq!(p.enqueue(pkt(1_000, true)), Enqueued::Queued);
        // Depth 2000 is inside [kmin, kmax]: marked with probability 0.5; above kmax always.
        p.enqueue(pkt(1_000, true));
        p.enqueue(pkt(1_000, true));
        p.enqueue(pkt(1_000, false));
        assert_eq!(p.enqueue(pkt(1, true)), Enqueued::Dropped);
        assert_eq!(p.stats.drops, 1);
        assert_eq!(p.bytes(), 5_000);
        // Packets 4 (depth 3000 > kmax) is certainly marked; the non-ECT one never is.
        let got: Vec<bool> = std::iter::from_fn(|| p.finish_tx()).map(|q| q.ce).collect();
        assert!(!got[0] && !got[1]);
        assert!(got[3]);
        assert!(!got[4]);
        assert_eq!(p.stats.marks, got.iter().filter(|c| **c).count() as u64);
        assert_eq!(p.bytes(), 0);
    }

    #[test]
    fn serialisation_time() {
        let l = Link::new(0, 0, 100_000, 0, LinkRole::HostUp, 0);
        // 100 Gb/s: 80 ps per byte.
        assert_eq!(l.tx_time(4_160), 332_800);
        // Multiplied or divided, the same as the division for every rate.
        for rate in [
            1, 3, 7, 1_000, 25_000, 40_000, 99_999, 100_000, 400_000, 800_000, 9_000_000,
        ] {
            let l = Link::new(0, 0, rate, 0, LinkRole::HostUp, 0);
            for bytes in [0, 1, 64, 1_500, 4_160, 9_000, u32::MAX] {
                assert_eq!(
                    l.tx_time(bytes),
                    bytes as u64 * 8_000_000 / rate,
                    "{rate} Mb/s"
                );
            }
        }
    }
}
