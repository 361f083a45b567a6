//! Congestion control behind a trait, quinn-proto style.
//!
//! A connection owns one [`CongestionController`] that sees every path (flow). It is told about
//! sent packets, ACKs (with ECN-echo, CE counts and RTT samples), losses, timeouts and the
//! receiver's rate hint, and answers two questions per path: how many bytes may be in flight
//! ([`CongestionController::window`]) and how fast to send them
//! ([`CongestionController::pacing_rate`]).
//!
//! [`EcnAimd`] is the default: per-path window AIMD driven by ECN echo (DCTCP-style: the cut
//! scales with the fraction of CE-marked packets, at most once per RTT), additive increase of
//! one MTU per RTT, pacing at `window / srtt`, and the sum of the paths' rates capped by the
//! receiver's fair-share rate hint. A new hint also lets the windows jump to the hinted rate
//! instead of probing toward it. The hint also caps the windows: at a shared receiver each
//! path at twice its equal share of the hinted BDP; at an unshared one (hint at our line rate)
//! over one plane the paths together at twice the BDP, so that paths on free links take over
//! from paths on congested ones. Random loss does not shrink the window (on an ECN fabric a
//! drop is not a congestion signal; the connection's path health handles lossy paths); a
//! timeout halves it.

use std::fmt::Debug;

/// What one ACK event told the controller about one path.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AckSample {
    /// Bytes (payload plus headers) newly acknowledged.
    pub acked_bytes: u64,
    /// Packets newly acknowledged.
    pub acked_packets: u32,
    /// CE-marked packets the receiver saw since its previous ACK of this flow.
    pub ce_packets: u32,
    /// The receiver set ECN-echo.
    pub ecn_echo: bool,
    /// RTT measured from the echoed timestamp (ns), if plausible.
    pub rtt_ns: Option<u64>,
    /// The path's smoothed RTT after this sample (ns).
    pub srtt_ns: u64,
}

/// A congestion controller for all paths of one connection.
pub trait CongestionController: Debug + Send {
    /// A packet of `bytes` left on `path`.
    fn on_sent(&mut self, now: u64, path: usize, bytes: u32);
    /// An ACK arrived on `path`.
    fn on_ack(&mut self, now: u64, path: usize, sample: &AckSample);
    /// SACK showed `bytes` lost on `path` (selective loss, not a timeout).
    fn on_loss(&mut self, now: u64, path: usize, bytes: u32);
    /// `path`'s retransmission timer fired.
    fn on_timeout(&mut self, now: u64, path: usize);
    /// `path` left a NIC port whose link went down for a port that another path already
    /// fills. By default handled like a timeout.
    fn on_port_lost(&mut self, now: u64, path: usize) {
        self.on_timeout(now, path);
    }
    /// The receiver's rate hint changed (Mb/s; 0 = no hint).
    fn on_rate_hint(&mut self, now: u64, mbps: u32);
    /// Bytes `path` may have in flight.
    fn window(&self, path: usize) -> u64;
    /// Pacing rate of `path` in bytes per nanosecond.
    fn pacing_rate(&self, path: usize) -> f64;
    /// The connection spreads its paths over `planes` NIC ports (1 unless told).
    fn set_planes(&mut self, _planes: u8) {}
    /// The connection's line rate changed (Mb/s): NIC ports whose link went down no longer
    /// count. A controller that does not use the line rate ignores it.
    fn set_line_rate(&mut self, _now: u64, _mbps: u32) {}
}

/// Builds a controller per connection.
pub trait ControllerFactory: Debug + Send + Sync {
    /// A controller for `paths` paths with the given MTU (payload bytes), line rate (Mb/s) and
    /// initial RTT estimate.
    fn build(
        &self,
        paths: usize,
        mtu: u32,
        line_rate_mbps: u32,
        initial_rtt_ns: u64,
    ) -> Box<dyn CongestionController>;
}

/// Parameters of [`EcnAimd`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EcnAimdConfig {
    /// Initial window per path, in packets.
    pub initial_window_packets: u32,
    /// Smallest window per path, in packets.
    pub min_window_packets: u32,
    /// Additive increase per RTT, in packets.
    pub additive_increase_packets: f64,
    /// DCTCP gain `g` of the marked-fraction average.
    pub gain: f64,
    /// Pacing rate = `pacing_gain · window / srtt`.
    pub pacing_gain: f64,
    /// After a rate hint, windows are capped at `hint_headroom ·` the hinted BDP (hinted
    /// rate · base RTT): each path at its equal share of it, except at an unshared receiver
    /// over one plane, where it caps the paths' sum.
    pub hint_headroom: f64,
}

impl Default for EcnAimdConfig {
    fn default() -> Self {
        EcnAimdConfig {
            initial_window_packets: 8,
            min_window_packets: 2,
            additive_increase_packets: 1.0,
            gain: 1.0 / 16.0,
            pacing_gain: 1.25,
            hint_headroom: 2.0,
        }
    }
}

impl ControllerFactory for EcnAimdConfig {
    fn build(
        &self,
        paths: usize,
        mtu: u32,
        line_rate_mbps: u32,
        initial_rtt_ns: u64,
    ) -> Box<dyn CongestionController> {
        Box::new(EcnAimd::new(
            *self,
            paths,
            mtu,
            line_rate_mbps,
            initial_rtt_ns,
        ))
    }
}

/// Bytes per nanosecond of a rate in Mb/s.
pub fn mbps_to_bytes_per_ns(mbps: u32) -> f64 {
    mbps as f64 / 8000.0
}

/// A path's state apart from its window and rate (those are [`EcnAimd::cwnd`] and
/// [`EcnAimd::rate`]).
#[derive(Debug, Clone, Copy)]
struct PathCc {
    srtt: f64,
    /// Smallest RTT seen: the base RTT without queueing, for the hinted BDP.
    min_rtt: f64,
    alpha: f64,
    /// Packets acknowledged / CE-marked in the current observation window (about one RTT).
    win_acked: u32,
    win_marked: u32,
    win_end: u64,
    last_cut: u64,
}

/// ECN-echo AIMD per path, capped by the receiver's rate hint; see the module documentation.
#[derive(Debug, Clone)]
pub struct EcnAimd {
    cfg: EcnAimdConfig,
    pkt: f64,
    line: f64,
    hint: f64,
    /// NIC ports the connection's paths are spread over.
    planes: u8,
    paths: Vec<PathCc>,
    /// Per path, its window in bytes. Kept apart from [`PathCc`], as is the rate: the
    /// connection asks every path's window and rate for each packet it sends, and for eight
    /// paths these two arrays are two cache lines, where the paths' whole states were nine.
    cwnd: Vec<f64>,
    /// Per path, `pacing_gain · cwnd / srtt`, before the cap.
    rate: Vec<f64>,
    /// Sum of the paths' uncapped rates.
    rate_sum: f64,
    /// What every uncapped rate is multiplied by so that the sum stays within the cap.
    rate_scale: f64,
}

impl EcnAimd {
    /// A controller for `paths` paths.
    pub fn new(
        cfg: EcnAimdConfig,
        paths: usize,
        mtu: u32,
        line_rate_mbps: u32,
        initial_rtt_ns: u64,
    ) -> Self {
        let pkt = mtu as f64 + crate::core::connection::HEADER_BYTES as f64;
        let p = PathCc {
            srtt: initial_rtt_ns.max(1) as f64,
            min_rtt: initial_rtt_ns.max(1) as f64,
            alpha: 0.0,
            win_acked: 0,
            win_marked: 0,
            win_end: 0,
            last_cut: 0,
        };
        let paths = paths.max(1);
        let mut cc = EcnAimd {
            cfg,
            pkt,
            line: mbps_to_bytes_per_ns(line_rate_mbps.max(1)),
            hint: 0.0,
            planes: 1,
            paths: vec![p; paths],
            cwnd: vec![cfg.initial_window_packets.max(1) as f64 * pkt; paths],
            rate: vec![0.0; paths],
            rate_sum: 0.0,
            rate_scale: 1.0,
        };
        cc.recompute_rates();
        cc
    }

    fn min_cwnd(&self) -> f64 {
        self.cfg.min_window_packets.max(1) as f64 * self.pkt
    }

    /// The aggregate rate ceiling: the line rate, or the receiver's hint when lower.
    pub fn rate_cap(&self) -> f64 {
        if self.hint > 0.0 {
            self.hint.min(self.line)
        } else {
            self.line
        }
    }

    /// Divides `path`'s window by `by` (never below the minimum) and notes the cut.
    fn cut_window(&mut self, now: u64, path: usize, by: f64) {
        let min = self.min_cwnd();
        if let (Some(p), Some(cwnd)) = (self.paths.get_mut(path), self.cwnd.get_mut(path)) {
            *cwnd = (*cwnd / by).max(min);
            p.last_cut = now;
        }
        self.recompute_rates();
    }

    fn recompute_rates(&mut self) {
        let gain = self.cfg.pacing_gain;
        let mut sum = 0.0;
        for ((p, cwnd), rate) in self.paths.iter().zip(&self.cwnd).zip(&mut self.rate) {
            *rate = gain * cwnd / p.srtt.max(1.0);
            sum += *rate;
        }
        self.rate_sum = sum;
        self.rescale();
    }

    /// One path's window or RTT changed: its rate, and the sum kept up to date without a pass
    /// over every path (an ACK touches one path; this runs once per ACK).
    fn recompute_rate(&mut self, path: usize) {
        let gain = self.cfg.pacing_gain;
        let rate = gain * self.cwnd[path] / self.paths[path].srtt.max(1.0);
        self.rate_sum += rate - self.rate[path];
        self.rate[path] = rate;
        self.rescale();
    }

    fn rescale(&mut self) {
        let cap = self.rate_cap();
        self.rate_scale = if self.rate_sum > cap {
            cap / self.rate_sum
        } else {
            1.0
        };
    }

    /// The hinted BDP share of one path at a shared receiver: `hint · base RTT / paths`. The
    /// base RTT, not the smoothed one: queueing must not raise the cap that is meant to drain
    /// the queue. `None` without a hint or when the paths share one cap
    /// ([`EcnAimd::cap_by_siblings`]).
    fn hint_window(&self, p: &PathCc) -> Option<f64> {
        (self.hint > 0.0 && !self.paths_share_cap())
            .then(|| self.hint.min(self.line) * p.min_rtt / self.paths.len() as f64)
    }

    /// Whether the paths share one window cap ([`EcnAimd::cap_by_siblings`]): the receiver
    /// hints at least our line rate (it is not shared, so its last hop is not a bottleneck the
    /// paths split evenly), and the connection uses one plane. Over several, port pacing
    /// already splits the connection's rate evenly over the ports, so a path on a free link
    /// cannot take over a sibling's share on another port, and a window concentrated on one
    /// path would all be lost, and resent at one port's rate, when its plane fails.
    fn paths_share_cap(&self) -> bool {
        self.hint >= self.line && self.planes <= 1
    }

    /// At an unshared receiver over one plane the paths' windows share one cap,
    /// `hint_headroom ·` the hinted BDP (base RTT of `path`), instead of each having an equal
    /// share of it: `path` grows
    /// only while the sum of the windows is below the cap (it is not cut by it: marks do
    /// that). Random ECMP hashing puts some paths on congested links; their windows shrink and
    /// the paths on free links take over their share, up to all of it, instead of stopping at
    /// twice an equal share while the connection falls short of its line rate.
    fn cap_by_siblings(&mut self, path: usize, before: f64) {
        let min = self.min_cwnd();
        let others: f64 = self
            .cwnd
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != path)
            .map(|(_, w)| w)
            .sum();
        let (headroom, cap) = (self.cfg.hint_headroom, self.rate_cap());
        let room = (cap * self.paths[path].min_rtt * headroom - others).max(min);
        let cwnd = &mut self.cwnd[path];
        if *cwnd > room {
            *cwnd = room.max(before.min(*cwnd));
        }
    }
}

impl CongestionController for EcnAimd {
    fn on_sent(&mut self, _now: u64, _path: usize, _bytes: u32) {}

    fn on_ack(&mut self, now: u64, path: usize, s: &AckSample) {
        let min = self.min_cwnd();
        let (pkt, cfg) = (self.pkt, self.cfg);
        let hint_cap = self
            .paths
            .get(path)
            .and_then(|p| self.hint_window(p))
            .map(|w| (w * cfg.hint_headroom).max(min));
        let (Some(p), Some(cwnd)) = (self.paths.get_mut(path), self.cwnd.get_mut(path)) else {
            return;
        };
        let before = *cwnd;
        p.srtt = s.srtt_ns.max(1) as f64;
        if let Some(r) = s.rtt_ns {
            p.min_rtt = p.min_rtt.min(r.max(1) as f64);
        }
        p.win_acked += s.acked_packets;
        p.win_marked += s.ce_packets.min(s.acked_packets.max(s.ce_packets));
        if s.ecn_echo || s.ce_packets > 0 {
            // Congestion: cut at most once per RTT, by alpha/2 (alpha tracks the marked share).
            if now >= p.last_cut + p.srtt as u64 {
                let frac = if p.win_acked > 0 {
                    (p.win_marked as f64 / p.win_acked as f64).min(1.0)
                } else {
                    1.0
                };
                p.alpha = (1.0 - cfg.gain) * p.alpha + cfg.gain * frac;
                // A first mark with no history still cuts noticeably.
                let cut = (p.alpha / 2.0).max(0.125);
                *cwnd = (*cwnd * (1.0 - cut)).max(min);
                p.last_cut = now;
                p.win_acked = 0;
                p.win_marked = 0;
                p.win_end = now + p.srtt as u64;
            }
        } else if s.acked_bytes > 0 {
            *cwnd += cfg.additive_increase_packets * pkt * s.acked_bytes as f64 / *cwnd;
        }
        if now >= p.win_end {
            if p.win_marked == 0 {
                p.alpha *= 1.0 - cfg.gain;
            }
            p.win_acked = 0;
            p.win_marked = 0;
            p.win_end = now + p.srtt as u64;
        }
        if let Some(cap) = hint_cap {
            *cwnd = cwnd.min(cap);
        }
        // Never more than the SACK window can cover.
        *cwnd = cwnd.min(256.0 * pkt);
        if self.paths_share_cap() {
            self.cap_by_siblings(path, before);
        }
        self.recompute_rate(path);
    }

    fn on_loss(&mut self, _now: u64, _path: usize, _bytes: u32) {
        // Random loss is not congestion on an ECN fabric; path health reacts to it instead.
    }

    fn on_timeout(&mut self, now: u64, path: usize) {
        self.cut_window(now, path, 2.0);
    }

    /// A quarter of the window: the path joins a port a sibling's window already fills, and
    /// what the dead port had in flight is resent at once on top of it. Halving (as for a
    /// timeout) still overflowed the surviving planes' queues in `ferroce experiment
    /// failure` (see `docs/fabric.md`, "Link state").
    fn on_port_lost(&mut self, now: u64, path: usize) {
        self.cut_window(now, path, 4.0);
    }

    fn on_rate_hint(&mut self, now: u64, mbps: u32) {
        self.hint = mbps_to_bytes_per_ns(mbps);
        if self.hint > 0.0 {
            let n = self.paths.len() as f64;
            let (min, headroom, pkt) = (self.min_cwnd(), self.cfg.hint_headroom, self.pkt);
            let hint = self.hint.min(self.line);
            let shared_cap = self.paths_share_cap();
            for (p, cwnd) in self.paths.iter().zip(&mut self.cwnd) {
                let target = (hint * p.min_rtt / n).max(min);
                // Jump to the hinted rate instead of probing toward it, unless the path was
                // marked within the last RTT.
                if now >= p.last_cut + p.srtt as u64 {
                    *cwnd = cwnd.max(target * 1.25);
                }
                if !shared_cap {
                    *cwnd = cwnd.min(target * headroom);
                }
                *cwnd = cwnd.max(min).min(256.0 * pkt);
            }
        }
        self.recompute_rates();
    }

    fn window(&self, path: usize) -> u64 {
        self.cwnd.get(path).map_or(0, |&w| w as u64)
    }

    fn set_planes(&mut self, planes: u8) {
        self.planes = planes.max(1);
    }

    fn set_line_rate(&mut self, _now: u64, mbps: u32) {
        self.line = mbps_to_bytes_per_ns(mbps.max(1));
        self.recompute_rates();
    }

    fn pacing_rate(&self, path: usize) -> f64 {
        self.rate.get(path).map_or(0.0, |r| r * self.rate_scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc() -> EcnAimd {
        EcnAimd::new(EcnAimdConfig::default(), 4, 1000, 100_000, 10_000)
    }

    fn ack(bytes: u64, ce: u32, srtt: u64) -> AckSample {
        AckSample {
            acked_bytes: bytes,
            acked_packets: (bytes / 1100) as u32,
            ce_packets: ce,
            ecn_echo: ce > 0,
            rtt_ns: Some(srtt),
            srtt_ns: srtt,
        }
    }

    #[test]
    fn ecn_cuts_the_marked_path_only_and_at_most_once_per_rtt() {
        let mut c = cc();
        let w0 = c.window(0);
        c.on_ack(100_000, 1, &ack(4400, 4, 10_000));
        let w1 = c.window(1);
        assert!(w1 < w0, "marked path must shrink: {w1} vs {w0}");
        assert_eq!(c.window(0), w0, "other paths untouched");
        // A second mark within the same RTT does not cut again.
        c.on_ack(105_000, 1, &ack(4400, 4, 10_000));
        assert_eq!(c.window(1), w1);
        // One RTT later it does.
        c.on_ack(111_000, 1, &ack(4400, 4, 10_000));
        assert!(c.window(1) < w1);
    }

    #[test]
    fn unmarked_acks_grow_the_window_by_about_one_packet_per_window() {
        let mut c = cc();
        let w0 = c.window(2) as f64;
        // Acknowledge one full window of bytes.
        c.on_ack(1_000, 2, &ack(w0 as u64, 0, 10_000));
        let grown = c.window(2) as f64 - w0;
        assert!((grown - 1100.0).abs() < 50.0, "grew {grown}");
    }

    #[test]
    fn the_rate_hint_caps_the_sum_of_the_path_rates() {
        let mut c = cc();
        for _ in 0..50 {
            for p in 0..4 {
                c.on_ack(0, p, &ack(200_000, 0, 10_000));
            }
        }
        let sum = |c: &EcnAimd| (0..4).map(|p| c.pacing_rate(p)).sum::<f64>();
        assert!(sum(&c) <= mbps_to_bytes_per_ns(100_000) + 1e-9);
        c.on_rate_hint(1_000_000, 10_000);
        let s = sum(&c);
        assert!(
            (s - mbps_to_bytes_per_ns(10_000)).abs() < 1e-6,
            "sum {s} must equal the 10 Gb/s hint"
        );
        // A higher hint lets the windows jump instead of probing.
        let mut c = cc();
        let before = c.window(0);
        c.on_rate_hint(1_000_000, 100_000);
        assert!(c.window(0) > before, "windows jump to the hinted BDP");
    }

    /// 400 RTTs of 10 µs with the rate hint `hint` (Mb/s) over `planes` NIC ports: path 0's
    /// ACKs report every packet CE-marked, the other paths' none.
    fn path_0_marked(hint: u32, planes: u8) -> EcnAimd {
        let mut c = cc();
        c.set_planes(planes);
        c.on_rate_hint(0, hint);
        for k in 0..400u64 {
            let now = k * 10_000;
            c.on_ack(now, 0, &ack(4400, 4, 10_000));
            for p in 1..4 {
                c.on_ack(now, p, &ack(11_000, 0, 10_000));
            }
        }
        c
    }

    #[test]
    fn at_an_unshared_receiver_free_paths_take_over_from_marked_ones_within_one_cap() {
        // Base RTT 10 µs: the hinted BDP at 100 Gb/s is 125 kB, twice that the cap.
        let bdp = mbps_to_bytes_per_ns(100_000) * 10_000.0;
        let c = path_0_marked(100_000, 1);
        let sum: u64 = (0..4).map(|p| c.window(p)).sum();
        assert!(sum as f64 <= 2.0 * bdp + 1.0, "sum {sum}");
        assert!(
            c.window(1) as f64 > 2.0 * bdp / 4.0,
            "a free path grows past twice an equal share: {}",
            c.window(1)
        );
        assert!(c.window(0) < c.window(1), "the marked path shrank");
        // At a shared receiver each path keeps to twice its equal share of the hinted BDP.
        let c = path_0_marked(50_000, 1);
        for p in 0..4 {
            assert!(c.window(p) as f64 <= 2.0 * bdp / 2.0 / 4.0 + 1.0);
        }
    }

    #[test]
    fn over_several_planes_each_path_keeps_to_its_own_cap() {
        let bdp = mbps_to_bytes_per_ns(100_000) * 10_000.0;
        // On one plane the free paths take over the marked path's share; over four planes
        // each keeps to twice its equal share.
        let c = path_0_marked(100_000, 1);
        assert!(
            c.window(1) as f64 > 2.0 * bdp / 4.0 + 1.0,
            "{}",
            c.window(1)
        );
        let c = path_0_marked(100_000, 4);
        for p in 0..4 {
            assert!(
                c.window(p) as f64 <= 2.0 * bdp / 4.0 + 1.0,
                "{}",
                c.window(p)
            );
        }
    }

    #[test]
    fn timeouts_halve_and_never_go_below_the_minimum() {
        let mut c = cc();
        for _ in 0..20 {
            c.on_timeout(0, 3);
        }
        assert_eq!(c.window(3), 2 * 1100);
        assert!(c.pacing_rate(3) > 0.0);
    }

    #[test]
    fn a_path_that_lost_its_port_keeps_a_quarter_of_its_window_and_the_line_rate_follows() {
        let mut c = cc();
        let (w, other) = (c.window(1), c.window(2));
        c.on_port_lost(0, 1);
        assert_eq!(c.window(1), (w / 4).max(2 * 1100));
        assert_eq!(c.window(2), other, "only the moved path");
        for _ in 0..10 {
            c.on_port_lost(0, 1);
        }
        assert_eq!(c.window(1), 2 * 1100);
        // A lower line rate lowers the cap the path rates are scaled to.
        let before: f64 = (0..4).map(|p| c.pacing_rate(p)).sum();
        c.set_line_rate(0, 1);
        let after: f64 = (0..4).map(|p| c.pacing_rate(p)).sum();
        assert!(
            after < before && after <= mbps_to_bytes_per_ns(1) * 1.000_001,
            "{before} → {after}"
        );
    }
}
