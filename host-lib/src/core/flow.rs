//! One flow (path) of a connection on the send side: FSNs, the in-flight scoreboard, SACK
//! processing with the retransmit cursor, the RTT estimator and the retransmission timer, and
//! the flow's health.
//!
//! Sequence numbers are kept unwrapped (`u64`, 0 = the flow's first packet); the 24-bit FSN on
//! the wire is `initial_fsn + seq` modulo 2^24.
//!
//! **Retransmit cursor.** Every transmission gets a per-flow stamp, increasing in send order.
//! Paths are FIFO, so when a packet with stamp `s` has been delivered, every packet of the same
//! route sent before it (stamp < `s`) that is still missing was lost. The flow remembers the
//! highest delivered stamp; an ACK only declares holes when that stamp grows, and a resent hole
//! gets a new stamp above it. So a hole is resent once per observation: ACKs that repeat it add
//! nothing until a packet sent after the resend is delivered.

use super::repath::CongestionRounds;
use ferroce_proto::wire::{FSN_MASK, SACK_BITS, fsn_diff};
use std::collections::VecDeque;

/// State of one transmitted packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PktState {
    /// Sent, not acknowledged.
    InFlight,
    /// Declared lost (SACK or timeout): waiting in the flow's retransmit queue.
    Queued,
    /// Refused with "receiver not ready" / "out of window": resent after a delay.
    Parked,
    /// Acknowledged (or consumed with a terminal NAK).
    Acked,
}

/// One packet of the scoreboard.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pkt {
    /// Message (index into the connection's message slab).
    pub msg: u32,
    /// Byte offset in the message.
    pub offset: u32,
    /// Payload length.
    pub len: u32,
    /// Time of the last transmission.
    pub sent_at: u64,
    /// Stamp of the last transmission.
    pub stamp: u64,
    /// Entropy epoch of the last transmission.
    pub epoch: u32,
    /// Transmissions so far.
    pub sends: u32,
    /// Why it waits in the retransmit queue ([`CAUSE_LOSS`], [`CAUSE_NOT_READY`] or
    /// [`CAUSE_PROBE`]).
    pub cause: u8,
    /// The last transmission asked the receiver for an immediate ACK.
    pub ack_req: bool,
    /// State.
    pub state: PktState,
}

/// Queued because it was lost (SACK hole or timeout).
pub(crate) const CAUSE_LOSS: u8 = 1;
/// Queued because the receiver refused it for now ("not ready", "out of window").
pub(crate) const CAUSE_NOT_READY: u8 = 2;
/// Queued as a tail-loss probe ([`Flow::tail_probe`]): resent with its old stamp.
pub(crate) const CAUSE_PROBE: u8 = 3;

/// Outcome of an ACK on one flow.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AckOutcome {
    /// Packets newly acknowledged.
    pub acked_packets: u32,
    /// Payload bytes newly acknowledged.
    pub acked_payload: u64,
    /// Packets newly declared lost (queued for retransmission).
    pub lost_packets: u32,
    /// Payload bytes newly declared lost.
    pub lost_payload: u64,
    /// The highest delivered stamp grew (a packet sent later than any delivered before
    /// arrived): [`Flow::hi_sent_at`] is that packet's send time.
    pub hi_grew: bool,
    /// The packet that raised the highest delivered stamp was sent only once, so the time
    /// since [`Flow::hi_sent_at`] is its RTT.
    pub hi_grew_clean: bool,
}

/// Send side of one flow.
///
/// Laid out in declaration order: the fields read for every flow of a connection (by the
/// transmit round, the connection's summaries, and an ACK's look at the sibling flows) come
/// first, in 190 bytes, and the rest (what only an ACK or a timeout of this flow touches)
/// after them. With the compiler's order those fields were spread over all of the flow's
/// 328 bytes.
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct Flow {
    /// Lowest sequence not known to be acknowledged (our view of the receiver's cumulative FSN).
    pub base: u64,
    /// Next sequence to assign.
    pub next: u64,
    /// Wire bytes of packets in flight (not acknowledged).
    pub inflight_bytes: u64,
    /// Pacing clock: the flow may send while this is at most `burst_ns` ahead of now.
    pub next_send_at: u64,
    /// How far the pacing clock may run ahead of now (a burst after idling).
    pub burst_ns: u64,
    /// Weighted virtual time for the scheduler.
    pub vtime: u64,
    /// Smoothed RTT (ns).
    pub srtt: u64,
    /// Since when the flow has waited for progress: its last progress, or the departure of
    /// the packet that ended an idle spell (silent-path detection).
    pub quiet_since: u64,
    /// Retransmission timer deadline, when armed.
    pub rto_deadline: Option<u64>,
    /// Tail-loss deadline: when the ACK of the earliest in-flight packet that requested one is
    /// overdue (see [`Flow::tail_probe`]).
    pub tail_deadline: Option<u64>,
    /// Round-trip time of the most recently sent packet known delivered, measured when its
    /// ACK arrived: how long an ACK takes on this route now (tail-loss detection).
    pub recent_rtt: Option<u64>,
    /// Sequences waiting for retransmission.
    pub retx: VecDeque<u64>,
    /// Packets parked after a "not ready" NAK, with the time to resend them.
    pub parked: VecDeque<(u64, u64)>,
    /// Bumped at every entropy change.
    pub epoch: u32,
    /// Health weight in 1/1024 (1024 = healthy): share of new data this flow gets.
    pub weight: u32,
    /// Current entropy (UDP source port).
    pub entropy: u16,
    /// NIC port (plane) the flow sends on; it changes with the entropy.
    pub port: u8,
    /// Dead: no new data, only probes.
    pub dead: bool,
    /// A tail-loss probe is due as new data: the flow may send one new packet beyond its
    /// window.
    pub probe_new: bool,
    /// Whether an RTT sample arrived yet.
    pub has_rtt: bool,
    /// Packets `base .. next`.
    pub ring: VecDeque<Pkt>,
    next_stamp: u64,
    hi_stamp: u64,
    hi_sent_at: u64,
    /// Variance of the RTT (ns).
    pub rttvar: u64,
    /// Smallest RTT sample (ns): the path's RTT without queueing.
    pub min_rtt: u64,
    /// Time of the last ACK that acknowledged something new on this flow.
    pub last_progress_at: u64,
    /// ECN rounds for congestion-driven repathing.
    pub rounds: CongestionRounds,
    pub initial_fsn: u32,
    hi_epoch: u32,
    /// Consecutive timeouts without an ACK in between.
    pub consecutive_timeouts: u32,
    /// Timeouts on the current entropy.
    pub timeouts_on_entropy: u32,
    /// Exponent of the retransmission-timer backoff: grows per timeout, restarts on an ACK and
    /// on a new entropy (a new route deserves a prompt try).
    pub backoff: u32,
    /// Tail-loss probes since the flow last made progress.
    pub probes: u32,
    /// Terminal refusals of this flow the receiver is known to have made (wrapping, as the
    /// ACK's `refused` field): one per terminal NAK that consumed a packet, or the count of the
    /// last ACK that was ahead of it (its refusals' NAKs were lost).
    pub refused_known: u16,
}

/// Largest weight (a healthy flow).
pub(crate) const FULL_WEIGHT: u32 = 1024;
/// Smallest weight of a live flow.
pub(crate) const MIN_WEIGHT: u32 = 64;

impl Flow {
    pub fn new(initial_fsn: u32, entropy: u16, initial_rtt: u64) -> Self {
        Flow {
            initial_fsn: initial_fsn & FSN_MASK,
            base: 0,
            next: 0,
            // Grown as packets go in flight, not reserved for a full SACK window (10 KB a
            // flow): most flows keep a few packets in flight, and a ring used as a queue
            // walks its whole buffer (the full `planes` run: 1.25 GB resident, 726 MB so).
            ring: VecDeque::new(),
            retx: VecDeque::new(),
            entropy,
            port: 0,
            epoch: 0,
            next_stamp: 1,
            hi_stamp: 0,
            hi_epoch: 0,
            hi_sent_at: 0,
            srtt: initial_rtt,
            rttvar: initial_rtt / 2,
            has_rtt: false,
            min_rtt: initial_rtt,
            rto_deadline: None,
            consecutive_timeouts: 0,
            timeouts_on_entropy: 0,
            backoff: 0,
            dead: false,
            last_progress_at: 0,
            quiet_since: 0,
            weight: FULL_WEIGHT,
            vtime: 0,
            next_send_at: 0,
            burst_ns: 0,
            inflight_bytes: 0,
            parked: VecDeque::new(),
            refused_known: 0,
            recent_rtt: None,
            tail_deadline: None,
            probes: 0,
            probe_new: false,
            rounds: CongestionRounds::default(),
        }
    }

    /// Send time of the most recently sent packet known delivered.
    pub fn hi_sent_at(&self) -> u64 {
        self.hi_sent_at
    }

    /// When the tail-loss probe is next due, given how long an ACK takes (`rtt`) and the
    /// allowance for queueing growth (`slack`): the earliest in-flight packet that requested
    /// an immediate ACK, plus both, doubled for every probe since the flow last made progress.
    /// `None` if no such packet is in flight.
    pub fn tail_deadline_for(&self, rtt: u64, slack: u64) -> Option<u64> {
        let wait = (rtt + slack) << self.probes.min(6);
        self.ring
            .iter()
            .filter(|p| p.state == PktState::InFlight && p.ack_req)
            .map(|p| p.sent_at + wait)
            .min()
    }

    /// Whether a tail-loss probe is due: the ACK of a packet that requested one is overdue
    /// (sent more than `rtt + slack` ago, `rtt` being how long the most recent delivery's ACK
    /// took; backed off per probe since the last progress).
    ///
    /// The probe is a packet sent after the overdue ones on the same flow: new data when
    /// there is some (one packet beyond the window, [`Flow::probe_new`]), else the last packet
    /// in flight again ([`Flow::tail_probe`]). Paths are FIFO, so when the probe is delivered,
    /// every packet sent before it that is still missing is a hole of the next ACK
    /// ([`Flow::on_ack`]) and is resent; when they were only delayed, they arrive first and
    /// nothing else is resent. Without a probe, a flow whose last packets were dropped (an
    /// incast's first burst) and whose window they fill has no later delivery to expose them
    /// and waits for its retransmission timeout, many RTTs.
    pub fn tail_due(&self, now: u64, rtt: u64, slack: u64) -> bool {
        self.tail_deadline_for(rtt, slack).is_some_and(|d| d <= now)
    }

    /// Queues the flow's last packet in flight for resending as a tail-loss probe (see
    /// [`Flow::tail_due`]). It keeps its stamp: the ACK cannot tell the probe from the first
    /// copy, and the first copy's stamp is the evidence either copy's delivery gives. Returns
    /// its payload length, if there was a packet in flight.
    pub fn tail_probe(&mut self, pkt_overhead: u64) -> Option<u32> {
        let i = self
            .ring
            .iter()
            .rposition(|p| p.state == PktState::InFlight)?;
        let p = &mut self.ring[i];
        p.state = PktState::Queued;
        p.cause = CAUSE_PROBE;
        let len = p.len;
        self.inflight_bytes = self
            .inflight_bytes
            .saturating_sub(len as u64 + pkt_overhead);
        self.retx.push_front(self.base + i as u64);
        Some(len)
    }

    /// The wire FSN of a sequence.
    #[inline]
    pub fn fsn(&self, seq: u64) -> u32 {
        (self.initial_fsn as u64).wrapping_add(seq) as u32 & FSN_MASK
    }

    /// The sequence of a wire FSN, relative to `base` (may be below `base` for old FSNs).
    #[inline]
    pub fn seq_of(&self, fsn: u32) -> i64 {
        self.base as i64 + fsn_diff(fsn, self.fsn(self.base)) as i64
    }

    /// Whether pacing lets the flow send at `now`.
    #[inline]
    pub fn pace_ok(&self, now: u64) -> bool {
        self.next_send_at <= now + self.burst_ns
    }

    /// When pacing next lets the flow send.
    pub fn pace_at(&self) -> u64 {
        self.next_send_at.saturating_sub(self.burst_ns)
    }

    /// Whether the flow has a resend queued, or a tail-loss probe due as new data (with
    /// `new_data` to send): what may take a turn ahead of the other flows.
    #[inline]
    pub fn urgent(&self, new_data: bool) -> bool {
        !self.retx.is_empty() || (self.probe_new && new_data && !self.dead)
    }

    /// Packets the receiver's SACK window still has room for.
    #[inline]
    pub fn window_room(&self) -> u64 {
        (SACK_BITS as u64).saturating_sub(self.next - self.base)
    }

    #[inline]
    pub fn get_mut(&mut self, seq: u64) -> Option<&mut Pkt> {
        if seq < self.base {
            return None;
        }
        self.ring.get_mut((seq - self.base) as usize)
    }

    /// Stamps a (re)transmission of `seq`.
    pub fn stamp(&mut self) -> u64 {
        let s = self.next_stamp;
        self.next_stamp += 1;
        s
    }

    /// Retransmission timeout from the RTT estimator; `initial` until the first sample.
    pub fn rto(&self, min: u64, max: u64, initial: u64) -> u64 {
        let min = if self.has_rtt { min } else { min.max(initial) };
        (self.srtt + 4 * self.rttvar).clamp(min, max.max(min))
    }

    /// Feeds an RTT sample (RFC 6298 weights).
    pub fn rtt_sample(&mut self, rtt: u64) {
        self.min_rtt = if self.has_rtt {
            self.min_rtt.min(rtt)
        } else {
            rtt
        };
        if !self.has_rtt {
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            self.has_rtt = true;
        } else {
            let err = self.srtt.abs_diff(rtt);
            self.rttvar = (3 * self.rttvar + err) / 4;
            self.srtt = (7 * self.srtt + rtt) / 8;
        }
    }

    /// Processes an ACK: `cum_fsn` is the receiver's next expected FSN, `sack` bit `i` reports
    /// `cum + 1 + i`. `on_acked` sees each newly acknowledged packet; `on_lost` each packet
    /// newly declared lost (already queued for retransmission). `reorder_slack` is how much
    /// later than a packet a delivered packet of another entropy epoch must have been sent to
    /// prove the loss (routes differ across an entropy change, so FIFO order does not hold).
    pub fn on_ack(
        &mut self,
        cum_fsn: u32,
        sack: &[u8; SACK_BITS / 8],
        reorder_slack: u64,
        pkt_overhead: u64,
        mut on_acked: impl FnMut(&Pkt),
        mut on_lost: impl FnMut(&Pkt),
    ) -> AckOutcome {
        let mut out = AckOutcome::default();
        let cum = self.seq_of(cum_fsn);
        // An ACK for FSNs never sent is bogus: ignore it rather than acknowledge unsent data.
        if cum > self.next as i64 {
            return out;
        }
        let mut words = [0u64; 4];
        for (i, w) in words.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&sack[i * 8..i * 8 + 8]);
            *w = u64::from_le_bytes(b);
        }
        let mut hi_before = self.hi_stamp;
        let mut newly = |f: &mut Flow, seq: u64, out: &mut AckOutcome| {
            let idx = (seq - f.base) as usize;
            let Some(p) = f.ring.get_mut(idx) else { return };
            if p.state == PktState::Acked {
                return;
            }
            let was = p.state;
            p.state = PktState::Acked;
            let p = *p;
            if was == PktState::InFlight {
                f.inflight_bytes = f.inflight_bytes.saturating_sub(p.len as u64 + pkt_overhead);
            }
            if p.stamp > hi_before {
                hi_before = p.stamp;
                f.hi_epoch = p.epoch;
                f.hi_sent_at = p.sent_at;
                // Karn: a resent packet's ACK may be the first copy's; its timing is unknown.
                out.hi_grew_clean = p.sends == 1;
            }
            out.acked_packets += 1;
            out.acked_payload += p.len as u64;
            on_acked(&p);
        };
        // Cumulative part.
        if cum > self.base as i64 {
            for seq in self.base..cum as u64 {
                newly(self, seq, &mut out);
            }
        }
        // Selective part.
        let sack_base = cum + 1;
        let mut highest: Option<u64> = None;
        for (wi, &w) in words.iter().enumerate() {
            let mut bits = w;
            while bits != 0 {
                let tz = bits.trailing_zeros() as i64;
                bits &= bits - 1;
                let seq = sack_base + wi as i64 * 64 + tz;
                if seq >= self.next as i64 {
                    break;
                }
                if seq >= self.base as i64 {
                    newly(self, seq as u64, &mut out);
                }
                highest = Some(seq as u64);
            }
        }
        let grew = hi_before > self.hi_stamp;
        out.hi_grew = grew;
        self.hi_stamp = hi_before;
        // Holes: missing packets below the highest SACKed one, sent before a delivered packet.
        if let (true, Some(hi_seq)) = (grew, highest) {
            let lo = (cum.max(self.base as i64)) as u64;
            for seq in lo..hi_seq {
                let rel = seq as i64 - sack_base;
                if rel >= 0 {
                    let rel = rel as usize;
                    if words[rel / 64] >> (rel % 64) & 1 != 0 {
                        continue;
                    }
                }
                let (hi_stamp, hi_epoch, hi_sent_at) =
                    (self.hi_stamp, self.hi_epoch, self.hi_sent_at);
                let idx = (seq - self.base) as usize;
                let Some(p) = self.ring.get_mut(idx) else {
                    break;
                };
                if p.state != PktState::InFlight || p.stamp >= hi_stamp {
                    continue;
                }
                if p.epoch != hi_epoch && hi_sent_at < p.sent_at + reorder_slack {
                    continue;
                }
                p.state = PktState::Queued;
                p.cause = CAUSE_LOSS;
                self.inflight_bytes = self
                    .inflight_bytes
                    .saturating_sub(p.len as u64 + pkt_overhead);
                out.lost_packets += 1;
                out.lost_payload += p.len as u64;
                let p = *p;
                self.retx.push_back(seq);
                on_lost(&p);
            }
        }
        self.advance_base();
        out
    }

    /// Marks one packet consumed by the receiver (a terminal NAK): it counts as acknowledged.
    pub fn consume(&mut self, seq: u64, pkt_overhead: u64) -> Option<Pkt> {
        let p = self.get_mut(seq)?;
        if p.state == PktState::Acked {
            return None;
        }
        let was = p.state;
        p.state = PktState::Acked;
        let p = *p;
        if was == PktState::InFlight {
            self.inflight_bytes = self
                .inflight_bytes
                .saturating_sub(p.len as u64 + pkt_overhead);
        }
        self.advance_base();
        Some(p)
    }

    /// Drops acknowledged packets from the front of the scoreboard.
    fn advance_base(&mut self) {
        while let Some(p) = self.ring.front() {
            if p.state != PktState::Acked {
                break;
            }
            self.ring.pop_front();
            self.base += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow_with(n: u64) -> Flow {
        let mut f = Flow::new(0xff_fffe, 5000, 10_000);
        for s in 0..n {
            let stamp = f.stamp();
            f.ring.push_back(Pkt {
                msg: 0,
                offset: s as u32,
                len: 100,
                sent_at: s * 10,
                stamp,
                epoch: 0,
                sends: 1,
                cause: 0,
                ack_req: false,
                state: PktState::InFlight,
            });
            f.inflight_bytes += 200;
            f.next += 1;
        }
        f
    }

    fn sack(bits: &[usize]) -> [u8; 32] {
        let mut s = [0u8; 32];
        for &b in bits {
            s[b / 8] |= 1 << (b % 8);
        }
        s
    }

    #[test]
    fn cumulative_and_selective_acks_across_the_fsn_wrap() {
        let mut f = flow_with(10);
        // cum = seq 3 (fsn wraps at seq 2), SACK seq 5 and 6 (bits 1, 2).
        let cum = f.fsn(3);
        assert_eq!(cum, 1);
        let mut acked = vec![];
        let mut lost = vec![];
        let o = f.on_ack(
            cum,
            &sack(&[1, 2]),
            0,
            100,
            |p| acked.push(p.offset),
            |p| lost.push(p.offset),
        );
        assert_eq!(acked, vec![0, 1, 2, 5, 6]);
        assert_eq!(o.acked_packets, 5);
        // Seq 3 and 4 were sent before 6 and are missing: lost, once.
        assert_eq!(lost, vec![3, 4]);
        assert_eq!(f.retx, VecDeque::from(vec![3, 4]));
        assert_eq!(f.base, 3);
        assert_eq!(f.inflight_bytes, 3 * 200, "seq 7..9 remain in flight");
        // The same ACK again declares nothing.
        let o = f.on_ack(
            cum,
            &sack(&[1, 2]),
            0,
            100,
            |_| {},
            |_| panic!("resent twice"),
        );
        assert_eq!((o.acked_packets, o.lost_packets), (0, 0));
    }

    #[test]
    fn a_resent_hole_is_only_declared_again_after_later_evidence() {
        let mut f = flow_with(6);
        let cum = f.fsn(0);
        f.on_ack(cum, &sack(&[0]), 0, 100, |_| {}, |_| {}); // seq 1 delivered → seq 0 lost
        assert_eq!(f.retx.pop_front(), Some(0));
        // Resend seq 0 (new stamp), then the ACK for seq 2 (sent before the resend) arrives.
        let st = f.stamp();
        let p = f.get_mut(0).unwrap();
        p.stamp = st;
        p.state = PktState::InFlight;
        let o = f.on_ack(cum, &sack(&[0, 1]), 0, 100, |_| {}, |_| {});
        assert_eq!(
            o.lost_packets, 0,
            "evidence older than the resend proves nothing"
        );
        // A packet sent after the resend is delivered: now seq 0 is lost again.
        let st2 = f.stamp();
        f.get_mut(5).unwrap().stamp = st2;
        let o = f.on_ack(cum, &sack(&[0, 1, 4]), 0, 100, |_| {}, |_| {});
        assert_eq!(
            o.lost_packets, 3,
            "seq 0, 3 and 4 are all older than seq 5's send"
        );
    }

    #[test]
    fn bogus_acks_beyond_what_was_sent_are_ignored() {
        let mut f = flow_with(4);
        let o = f.on_ack(f.fsn(9), &[0xff; 32], 0, 100, |_| {}, |_| {});
        assert_eq!(o.acked_packets, 0);
        assert_eq!(f.base, 0);
        // SACK bits beyond `next` are ignored too.
        let o = f.on_ack(f.fsn(1), &[0xff; 32], 0, 100, |_| {}, |_| {});
        assert_eq!(o.acked_packets, 3, "seq 0, then 2 and 3 from the bitmap");
        assert_eq!(o.lost_packets, 1, "seq 1 is the hole");
        let o = f.on_ack(f.fsn(4), &[0; 32], 0, 100, |_| {}, |_| {});
        assert_eq!(o.acked_packets, 1);
        assert_eq!(f.base, 4);
        assert_eq!(f.inflight_bytes, 0);
    }

    #[test]
    fn a_tail_probe_is_due_an_rtt_after_the_last_ack_request_and_keeps_its_stamp() {
        let mut f = flow_with(4);
        f.ring[3].ack_req = true; // sent at 30
        let stamp3 = f.ring[3].stamp;
        // ACKs take 100 ns now, plus 20 of slack.
        assert!(!f.tail_due(149, 100, 20));
        assert!(f.tail_due(150, 100, 20));
        assert_eq!(f.tail_probe(100), Some(100));
        assert_eq!(f.retx, VecDeque::from(vec![3]));
        assert_eq!(f.ring[3].cause, CAUSE_PROBE);
        assert_eq!(f.inflight_bytes, 3 * 200);
        assert_eq!(f.ring[3].stamp, stamp3, "the stamp is the first copy's");
        // Nothing else requests an ACK: no further deadline.
        assert_eq!(f.tail_deadline_for(100, 20), None);
        // Either copy of seq 3 delivered proves seq 1 and 2 lost (sent before it).
        f.ring[3].state = PktState::InFlight;
        let o = f.on_ack(f.fsn(1), &sack(&[1]), 0, 100, |_| {}, |_| {});
        assert_eq!((o.acked_packets, o.lost_packets), (2, 2));
        // Backoff: after a probe without progress the wait doubles.
        let mut g = flow_with(2);
        g.ring[1].ack_req = true; // sent at 10
        g.probes = 1;
        assert_eq!(g.tail_deadline_for(100, 20), Some(10 + 240));
    }

    #[test]
    fn across_an_entropy_change_fifo_is_not_assumed() {
        let mut f = flow_with(4);
        f.epoch = 1;
        let st = f.stamp();
        let p = f.get_mut(3).unwrap();
        p.epoch = 1;
        p.stamp = st;
        p.sent_at = 35; // seq 0, 1, 2 were sent at 0, 10, 20; the slack is 20
        let o = f.on_ack(f.fsn(0), &sack(&[2]), 20, 100, |_| {}, |_| {});
        assert_eq!(
            o.lost_packets, 2,
            "seq 0 and 1 are old enough, seq 2 is not"
        );
        assert_eq!(f.retx, VecDeque::from(vec![0, 1]));
    }
}
