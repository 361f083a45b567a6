//! The host-wide transmit budget: every connection and flow of one NIC shares one line.
//!
//! Congestion windows are per flow, so a host with many connections may have
//! `connections × flows × window` bytes ready to go: 63 connections × 4 flows × 8 packets is
//! 8 MB, 660 µs at 100 Gb/s. Whatever the line cannot carry at once waits in the NIC's output
//! queue, where the retransmission timers run as if the packets were on the wire, so a 100 µs
//! RTO fires on packets that were never lost and their resends deepen the queue. Two limits,
//! applied by [`crate::Context`] to every packet of every connection before it becomes a TX
//! descriptor, stop that at the source:
//!
//! - **In-flight cap.** Bytes sent and not yet acknowledged (or declared lost), summed over all
//!   connections, stay within `bdp_multiple × line rate × base_rtt_ns`. The base RTT is
//!   configured, not measured: in a congested fabric every RTT sample carries queueing, and a
//!   cap that grew with them would feed the congestion it is there to bound (the 64-host
//!   all-to-all of `ferroce experiment alltoall` took 720 µs with the cap following the
//!   smallest measured RTT, 500 µs with it fixed). The cap
//!   always lets one packet go when nothing is in flight, so it cannot deadlock.
//! - **Host pacing.** While two or more connections are active (bytes in flight or something
//!   to send; [`HostBudgetConfig::pacing_min_active`]), their sum leaves at the line rate: the
//!   budget keeps a clock of when the line will have serialised everything handed to the NIC
//!   and hands out no packet while that clock is more than `burst_ns` ahead. The NIC queue the
//!   library builds is thus at most `burst_ns` (plus one packet) deep, and a packet's
//!   retransmission timer starts at its estimated departure (see [`TxGate::on_send`]), not
//!   when the core cut it: packets still queued locally cannot time out. A connection alone
//!   is not host-paced and its timers start when it sends: its own congestion control already
//!   paces it, and pacing it again cost goodput under loss (`ferroce experiment loss`, seed 1:
//!   92.9–81.7% of ideal for p = 0–0.1 instead of 94.4–86.6%), while nearly all of the
//!   all-to-all's gain is the cap's (515 µs with the cap alone, 505 µs with both).
//!
//! Sharing: the context offers turns round robin, one packet per connection per turn,
//! starting after the connection that sent last ([`round_robin`]); inside a connection the
//! flows share by weighted virtual time. So when the budget binds, every connection with
//! window room gets the same packet rate, and what one connection does not use goes to the
//! others. Congestion control is untouched: windows and pacing per path still come from the
//! connection's [`super::CongestionController`]; the budget only caps their sum.

use super::cc::mbps_to_bytes_per_ns;

/// Line bytes an Ethernet frame costs beyond what the core counts per packet (payload plus
/// its headers): preamble and start delimiter (8), FCS (4) and the inter-frame gap (12).
const LINE_EXTRA_BYTES: u64 = 24;

/// Settings of the host budget (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostBudgetConfig {
    /// In-flight cap over all connections, in bandwidth-delay products of the host's line
    /// rate and `base_rtt_ns`. 0 disables the cap.
    pub bdp_multiple: f64,
    /// Base RTT of the fabric for the cap (ns). Peers further away than `bdp_multiple` times
    /// this cannot get their full BDP while the cap binds: raise it for such fabrics.
    pub base_rtt_ns: u64,
    /// The sum of all connections is paced at line rate × this gain. 0 disables host pacing
    /// (the departure estimates of the retransmission timers still assume the line rate).
    pub pacing_gain: f64,
    /// How far the host pacer may run ahead of now (ns): the deepest NIC queue the library
    /// builds, and the longest burst at line rate.
    pub burst_ns: u64,
    /// Host pacing applies only while at least this many connections are active (have bytes
    /// in flight or something to send); 0 or 1: always. A connection alone is paced by its
    /// own congestion control and cannot bury its NIC in other connections' packets.
    pub pacing_min_active: u32,
}

impl Default for HostBudgetConfig {
    /// Three BDPs of a 10 µs base RTT (375 KB at 100 Gb/s): base RTTs of the fabrics this
    /// library targets are 5–12 µs, so one connection alone still keeps the line busy with
    /// two BDPs of queueing in the fabric (two BDPs were too few for one connection whose
    /// paths collide on a spine), while a host cannot bury the fabric in its own backlog.
    /// Pacing at exactly the line rate with a 2 µs burst (six 4 KB packets at 100 Gb/s), only
    /// while two or more connections are active: the NIC queue many connections build stays at
    /// a few packets, far below the 100 µs minimum RTO, and a connection alone is not paced
    /// twice (its own congestion control already is; host pacing on top of it cost it 0.5–5
    /// points of goodput under loss in `ferroce experiment loss`).
    fn default() -> Self {
        HostBudgetConfig {
            bdp_multiple: 3.0,
            base_rtt_ns: 10_000,
            pacing_gain: 1.0,
            burst_ns: 2_000,
            pacing_min_active: 2,
        }
    }
}

impl HostBudgetConfig {
    /// No cap and no host pacing: every connection limited by its own windows only.
    pub fn unlimited() -> Self {
        HostBudgetConfig {
            bdp_multiple: 0.0,
            pacing_gain: 0.0,
            ..HostBudgetConfig::default()
        }
    }
}

/// What a connection asks before each packet it turns into a TX descriptor: a host-level
/// admission that sees every connection of the NIC. Sizes are bytes as the core counts them
/// (payload plus headers).
pub trait TxGate {
    /// Whether a packet of `bytes` may be handed to the NIC at `now`.
    fn may_send(&mut self, now: u64, bytes: u64) -> bool;
    /// A packet of `bytes` was handed to the NIC at `now`. Returns when its retransmission
    /// timer starts (at least `now`): when it is expected to start leaving, if the gate
    /// knows, else `now`.
    fn on_send(&mut self, now: u64, bytes: u64) -> u64;
}

/// No host-level limit: a connection alone, as tests and benchmarks drive it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ungated;

impl TxGate for Ungated {
    fn may_send(&mut self, _now: u64, _bytes: u64) -> bool {
        true
    }
    fn on_send(&mut self, now: u64, _bytes: u64) -> u64 {
        now
    }
}

/// Why the budget last refused a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The in-flight cap was reached: an ACK (or a timeout) must free some first.
    Full,
    /// The host pacer is ahead: the packet may go at this time (ns).
    PacedUntil(u64),
}

/// Counters of the host budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostBudgetStats {
    /// Packets refused because the in-flight cap was reached.
    pub refused_full: u64,
    /// Packets refused because the host pacer was ahead.
    pub refused_paced: u64,
    /// Largest in-flight total admitted (bytes).
    pub peak_inflight: u64,
}

/// The host-wide in-flight cap and pacer; see the [module documentation](self).
#[derive(Debug, Clone)]
pub struct HostBudget {
    cfg: HostBudgetConfig,
    /// Line rate in bytes per ns.
    line: f64,
    /// Current cap (bytes; `u64::MAX` when disabled).
    cap: u64,
    /// Bytes in flight over all connections, as of the last [`HostBudget::begin`] plus what
    /// was admitted since.
    inflight: u64,
    /// When the line will have serialised everything admitted (ns, fractional).
    clock: f64,
    /// Connections active at the last [`HostBudget::begin`].
    active: usize,
    refusal: Option<Refusal>,
    stats: HostBudgetStats,
}

impl HostBudget {
    /// A budget for a host whose line carries `line_rate_mbps`.
    pub fn new(cfg: HostBudgetConfig, line_rate_mbps: u32) -> Self {
        let line = mbps_to_bytes_per_ns(line_rate_mbps.max(1));
        let m = cfg.bdp_multiple;
        let cap = if m > 0.0 && m.is_finite() {
            // At least one jumbo packet, so that the cap never stalls a connection outright.
            (m * line * cfg.base_rtt_ns.max(1) as f64).max(9000.0) as u64
        } else {
            u64::MAX
        };
        HostBudget {
            cfg,
            line,
            cap,
            inflight: 0,
            clock: 0.0,
            active: 0,
            refusal: None,
            stats: HostBudgetStats::default(),
        }
    }

    /// Starts a transmit round: `inflight` is the sum of every connection's bytes in flight
    /// now, `active` how many connections have bytes in flight or something to send (host
    /// pacing applies only from [`HostBudgetConfig::pacing_min_active`] of them). Forgets the
    /// last refusal.
    pub fn begin(&mut self, inflight: u64, active: usize) {
        self.inflight = inflight;
        self.active = active;
        self.refusal = None;
    }

    /// Whether the host pacer gates packets this round (it is enabled and enough connections
    /// are active).
    pub fn pacing_now(&self) -> bool {
        self.pacing().is_some() && self.active >= self.cfg.pacing_min_active as usize
    }

    /// The in-flight cap (bytes; `u64::MAX` when disabled).
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Bytes in flight as the budget counts them.
    pub fn inflight(&self) -> u64 {
        self.inflight
    }

    /// Why the last packet since [`HostBudget::begin`] was refused, if one was.
    pub fn refusal(&self) -> Option<Refusal> {
        self.refusal
    }

    /// Counters.
    pub fn stats(&self) -> HostBudgetStats {
        self.stats
    }

    fn pacing(&self) -> Option<f64> {
        let g = self.cfg.pacing_gain;
        (g > 0.0 && g.is_finite()).then_some(self.line * g)
    }

    /// When the pacer will let packets go again: once half the burst allowance is free, so
    /// that each wake-up sends a batch rather than one packet.
    fn open_at(&self) -> u64 {
        let half = self.cfg.burst_ns / 2;
        (self.clock.ceil() as u64).saturating_sub(self.cfg.burst_ns - half)
    }
}

impl TxGate for HostBudget {
    fn may_send(&mut self, now: u64, bytes: u64) -> bool {
        if self.inflight > 0 && self.inflight.saturating_add(bytes) > self.cap {
            self.stats.refused_full += 1;
            self.refusal = Some(Refusal::Full);
            return false;
        }
        if self.pacing_now() && self.clock > (now + self.cfg.burst_ns) as f64 {
            self.stats.refused_paced += 1;
            self.refusal = Some(Refusal::PacedUntil(self.open_at().max(now + 1)));
            return false;
        }
        true
    }

    fn on_send(&mut self, now: u64, bytes: u64) -> u64 {
        self.inflight = self.inflight.saturating_add(bytes);
        self.stats.peak_inflight = self.stats.peak_inflight.max(self.inflight);
        // The line clock runs whether or not it gates, so that the pacer knows the backlog
        // when it starts gating.
        let paced = self.pacing_now();
        let rate = self.pacing().filter(|_| paced).unwrap_or(self.line);
        let start = self.clock.max(now as f64);
        self.clock = start + (bytes + LINE_EXTRA_BYTES) as f64 / rate;
        // The pacer's schedule is the departure estimate only while it gates. Otherwise the
        // packets a connection cut together would get staggered timers, and one expiry would
        // resend only the first of a lost burst (`ferroce experiment loss`, bursty 5%:
        // 72.4% of ideal with timers from `now`, 53.4% with them from the estimates).
        if paced { start.ceil() as u64 } else { now }
    }
}

/// Offers transmit turns to `n` connections round robin, one packet per turn, starting at
/// `start`, until every connection declines, the budget refuses a packet, or `max` packets
/// went. `turn(i, budget)` lets connection `i` send at most one packet and returns how many
/// it sent. Returns how many packets went and the index after the last connection that sent
/// (where the next round should start, so that no connection is always first).
pub fn round_robin(
    n: usize,
    start: usize,
    max: usize,
    budget: &mut HostBudget,
    turn: impl FnMut(usize, &mut HostBudget) -> usize,
) -> (usize, usize) {
    let mut all: Vec<usize> = (0..n).collect();
    round_robin_among(n, start, &mut all, max, budget, turn)
}

/// [`round_robin`] with turns offered only to `candidates` (ascending indices below `n`, used
/// as scratch): every other connection is one whose turn would send nothing without asking
/// the budget (nothing due), so leaving it out gives the same packets, order and result,
/// while a round costs in proportion to the connections with something due. Where
/// [`round_robin`] would have stopped at such a connection (a refusal left by the turn
/// before it), this stops too.
pub fn round_robin_among(
    n: usize,
    start: usize,
    candidates: &mut Vec<usize>,
    max: usize,
    budget: &mut HostBudget,
    mut turn: impl FnMut(usize, &mut HostBudget) -> usize,
) -> (usize, usize) {
    if n == 0 {
        return (0, start);
    }
    // Rotation order from `start`: the candidates at or after it, then those before.
    let first = start % n;
    let split = candidates.partition_point(|&i| i < first);
    candidates.rotate_left(split);
    let hungry = candidates;
    let mut sent = 0;
    let mut next = start;
    // Where the first round's rotation would go next; a candidate elsewhere means skipped
    // connections in between, whose turns would have checked for a refusal.
    let mut expected = first;
    let mut first_round = true;
    while sent < max && (first_round || !hungry.is_empty()) {
        // One round in rotation order; those with nothing to send leave the rotation (kept
        // ones are compacted in place: removing one by one would move the rest every time).
        let mut kept = 0;
        for k in 0..hungry.len() {
            let i = hungry[k];
            if sent >= max {
                hungry[kept] = i;
                kept += 1;
                continue;
            }
            if first_round && i != expected && budget.refusal().is_some() {
                return (sent, next);
            }
            expected = (i + 1) % n;
            if turn(i, budget) > 0 {
                sent += 1;
                next = (i + 1) % n;
                hungry[kept] = i;
                kept += 1;
            } else if budget.refusal().is_some() {
                // The host is out of budget or ahead of its line: nobody else may send either.
                return (sent, next);
            }
            // Otherwise nothing to send now (windows, pacing, no data): out of the rotation.
        }
        // Skipped connections after the last candidate of the first round.
        let tail_skipped = expected != first || hungry.is_empty();
        if first_round && sent < max && tail_skipped && budget.refusal().is_some() {
            return (sent, next);
        }
        first_round = false;
        hungry.truncate(kept);
    }
    (sent, next)
}

#[cfg(test)]
mod tests {
    use super::super::connection::HEADER_BYTES;
    use super::*;

    const PKT: u64 = 4096 + HEADER_BYTES as u64;

    #[test]
    fn the_cap_is_a_few_bdps_of_the_line_rate() {
        // 3 × 12.5 B/ns × 10 µs.
        assert_eq!(
            HostBudget::new(HostBudgetConfig::default(), 100_000).cap(),
            375_000
        );
        assert_eq!(
            HostBudget::new(HostBudgetConfig::default(), 800_000).cap(),
            3_000_000
        );
        let mut off = HostBudget::new(HostBudgetConfig::unlimited(), 100_000);
        assert_eq!(off.cap(), u64::MAX);
        off.begin(0, 63);
        for i in 0..1000 {
            assert!(off.may_send(0, PKT), "packet {i}: nothing refused");
            // No pacer, no departure estimate: the timer starts now.
            assert_eq!(off.on_send(0, PKT), 0, "packet {i}");
        }
        // Nonsense settings disable the cap rather than panic.
        for m in [f64::NAN, f64::INFINITY, -1.0] {
            let cfg = HostBudgetConfig {
                bdp_multiple: m,
                pacing_gain: m,
                ..HostBudgetConfig::default()
            };
            assert_eq!(HostBudget::new(cfg, 0).cap(), u64::MAX);
        }
    }

    #[test]
    fn the_cap_refuses_beyond_the_budget_but_always_lets_one_packet_go() {
        let cfg = HostBudgetConfig {
            pacing_gain: 0.0,
            ..HostBudgetConfig::default()
        };
        let mut b = HostBudget::new(cfg, 100_000);
        let mut n = 0;
        while b.may_send(0, PKT) {
            b.on_send(0, PKT);
            n += 1;
        }
        assert_eq!(n, 375_000 / PKT);
        assert!(b.inflight() <= b.cap());
        assert_eq!(b.refusal(), Some(Refusal::Full));
        // ACKs freed everything: the round starts again.
        b.begin(0, 1);
        assert!(b.may_send(0, PKT));
        // A tiny cap still admits a packet when nothing is in flight.
        let tiny = HostBudgetConfig {
            bdp_multiple: 1e-9,
            ..cfg
        };
        let mut t = HostBudget::new(tiny, 100_000);
        assert!(t.may_send(0, 100_000));
    }

    /// The default pacer at 100 Gb/s, without the in-flight cap.
    fn pacer_only() -> HostBudget {
        HostBudget::new(
            HostBudgetConfig {
                bdp_multiple: 0.0,
                ..HostBudgetConfig::default()
            },
            100_000,
        )
    }

    #[test]
    fn the_pacer_holds_the_line_rate_and_the_burst() {
        let mut b = pacer_only();
        let line_ns = (PKT + LINE_EXTRA_BYTES) as f64 / 12.5;
        // Two connections active: the pacer gates.
        b.begin(0, 2);
        assert!(b.pacing_now());
        // At time 0: packets go while the clock is within 2 µs of now.
        let mut departures = Vec::new();
        while b.may_send(0, PKT) {
            departures.push(b.on_send(0, PKT));
        }
        assert_eq!(departures.len(), (2_000.0 / line_ns).floor() as usize + 1);
        for (k, d) in departures.iter().enumerate() {
            assert_eq!(*d, (k as f64 * line_ns).ceil() as u64, "departure {k}");
        }
        let Some(Refusal::PacedUntil(t)) = b.refusal() else {
            panic!("paced refusal expected, got {:?}", b.refusal());
        };
        // The wake-up comes when half the burst is free, not before a packet fits.
        assert!(t > 0 && t as f64 >= b.clock - 2_000.0, "{t}");
        // Over a long run the rate is the line rate.
        let mut now = t;
        let mut sent = 0u64;
        while now < 1_000_000 {
            b.begin(0, 2);
            while b.may_send(now, PKT) {
                b.on_send(now, PKT);
                sent += PKT + LINE_EXTRA_BYTES;
            }
            now = match b.refusal() {
                Some(Refusal::PacedUntil(t)) => t,
                r => panic!("{r:?}"),
            };
        }
        let rate = sent as f64 / now as f64;
        assert!((rate - 12.5).abs() < 0.1, "rate {rate} B/ns");
    }

    #[test]
    fn a_connection_alone_is_not_host_paced_and_its_timers_start_when_it_sends() {
        let mut b = pacer_only();
        let line_ns = (PKT + LINE_EXTRA_BYTES) as f64 / 12.5;
        // One active connection: 20 packets at once, far beyond the 2 µs burst.
        b.begin(0, 1);
        assert!(!b.pacing_now());
        for k in 0..20 {
            assert!(b.may_send(0, PKT), "packet {k}");
            // Packets cut together get timers from the same instant.
            assert_eq!(b.on_send(0, PKT), 0, "packet {k}");
        }
        assert_eq!(b.refusal(), None);
        // A second connection turns up: the backlog the first built is honoured (the clock
        // ran all along), nothing more goes until it is within the burst again, and the
        // pacer's schedule is the departure estimate again.
        b.begin(0, 2);
        assert!(b.pacing_now());
        assert!(!b.may_send(0, PKT));
        let Some(Refusal::PacedUntil(t)) = b.refusal() else {
            panic!("paced refusal expected, got {:?}", b.refusal());
        };
        assert!(t as f64 >= 20.0 * line_ns - 2_000.0, "{t}");
        b.begin(0, 2);
        assert!(b.may_send(t, PKT));
        let d = b.on_send(t, PKT);
        assert!(
            (d as f64 - 20.0 * line_ns).abs() <= 1.0,
            "{d}: behind the 20 packets before it"
        );
        // Setting 0 or 1 paces a connection alone too; gain 0 never paces.
        for (min, gain, paced) in [
            (0, 1.0, true),
            (1, 1.0, true),
            (2, 1.0, false),
            (1, 0.0, false),
        ] {
            let mut b = HostBudget::new(
                HostBudgetConfig {
                    pacing_min_active: min,
                    pacing_gain: gain,
                    ..HostBudgetConfig::default()
                },
                100_000,
            );
            b.begin(0, 1);
            assert_eq!(b.pacing_now(), paced, "min {min} gain {gain}");
            let n = (0..20)
                .take_while(|_| b.may_send(0, PKT) && b.on_send(0, PKT) < u64::MAX)
                .count();
            assert_eq!(n < 20, paced, "min {min} gain {gain}: {n} packets");
        }
    }

    #[test]
    fn round_robin_gives_each_connection_a_turn_and_rotates_the_start() {
        let mut gate = HostBudget::new(HostBudgetConfig::unlimited(), 100_000);
        let mut left = [3usize, 1, 0, 2];
        let mut order = Vec::new();
        let (sent, next) = round_robin(4, 1, usize::MAX, &mut gate, |i, _| {
            if left[i] == 0 {
                return 0;
            }
            left[i] -= 1;
            order.push(i);
            1
        });
        assert_eq!(sent, 6);
        assert_eq!(order, vec![1, 3, 0, 3, 0, 0]);
        assert_eq!(next, 1, "after connection 0, the last to send");
        // A limit stops it early, and the next round starts where this one stopped.
        let mut left = [5usize; 3];
        let (sent, next) = round_robin(3, 0, 4, &mut gate, |i, _| {
            left[i] -= 1;
            1
        });
        assert_eq!((sent, next), (4, 1));
        assert_eq!(left, [3, 4, 4]);
        assert_eq!(round_robin(0, 0, 10, &mut gate, |_, _| 1), (0, 0));
        // A refusal ends the round for everyone.
        let mut b = HostBudget::new(
            HostBudgetConfig {
                pacing_gain: 0.0,
                ..HostBudgetConfig::default()
            },
            100_000,
        );
        let mut asked = 0;
        let (sent, _) = round_robin(8, 0, usize::MAX, &mut b, |_, b| {
            asked += 1;
            if b.may_send(0, PKT) {
                b.on_send(0, PKT);
                1
            } else {
                0
            }
        });
        assert_eq!(sent as u64, 375_000 / PKT);
        assert_eq!(asked, sent + 1, "nobody is asked after the refusal");
    }

    /// One connection's part in a round: packets it has due, and whether its turns also ask
    /// the budget about a second packet after sending (leaving a refusal behind a send).
    #[derive(Clone, Copy)]
    struct Conn {
        due: usize,
        greedy: bool,
    }

    /// Runs a round over `conns` (only among the due ones with `among`); returns what it sent and
    /// where it stopped, who sent in which order, and the budget's refusal counters.
    fn round(
        conns: &[Conn],
        start: usize,
        max: usize,
        among: bool,
    ) -> ((usize, usize), Vec<usize>, HostBudgetStats) {
        let mut b = HostBudget::new(
            HostBudgetConfig {
                pacing_gain: 0.0,
                bdp_multiple: 1.0,
                base_rtt_ns: 1_000,
                ..HostBudgetConfig::default()
            },
            100_000,
        );
        b.begin(0, conns.len());
        let mut left: Vec<usize> = conns.iter().map(|c| c.due).collect();
        let mut order = Vec::new();
        let turn = |i: usize, b: &mut HostBudget| {
            if left[i] == 0 || !b.may_send(0, PKT) {
                return 0;
            }
            b.on_send(0, PKT);
            left[i] -= 1;
            order.push(i);
            if conns[i].greedy {
                b.may_send(0, PKT);
            }
            1
        };
        let r = if among {
            let mut due: Vec<usize> = (0..conns.len()).filter(|&i| conns[i].due > 0).collect();
            round_robin_among(conns.len(), start, &mut due, max, &mut b, turn)
        } else {
            round_robin(conns.len(), start, max, &mut b, turn)
        };
        (r, order, b.stats())
    }

    #[test]
    fn a_round_among_the_due_connections_is_the_round_over_all() {
        let mut x = 12345u64;
        let mut rand = |m: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((x >> 33) % m) as usize
        };
        for _ in 0..5000 {
            let n = rand(9);
            let conns: Vec<Conn> = (0..n)
                .map(|_| Conn {
                    due: if rand(3) == 0 { 0 } else { rand(6) },
                    greedy: rand(4) == 0,
                })
                .collect();
            let start = rand(n as u64 + 2);
            let max = if rand(3) == 0 { rand(8) } else { usize::MAX };
            assert_eq!(
                round(&conns, start, max, true),
                round(&conns, start, max, false),
                "n {n} start {start} max {max}"
            );
        }
    }
}
