//! Congestion-driven repathing in the style of Google's PLB (Protective Load Balancing,
//! SIGCOMM 2022): a flow that keeps seeing ECN marks round after round moves to a new entropy,
//! hence a new ECMP route.
//!
//! A *round* is about one smoothed RTT of the flow. A round is *congested* when the fraction of
//! CE-marked packets among those the flow's ACKs reported in it reaches
//! [`RepathConfig::ecn_fraction`]. After [`RepathConfig::rounds`] congested rounds in a row the
//! flow is a candidate; the connection decides whether the congestion is the flow's own path's
//! (see `Connection::repath_candidate`) and moves it with the same entropy change a timeout
//! uses, so the SACK and FSN handling across entropy epochs is unchanged.

/// Parameters of congestion-driven repathing ([`TransportConfig::congestion_repath`]).
///
/// [`TransportConfig::congestion_repath`]: super::TransportConfig::congestion_repath
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepathConfig {
    /// A round is congested when at least this fraction of the packets acknowledged in it
    /// were CE-marked (PLB's default is one half).
    pub ecn_fraction: f64,
    /// Congested rounds in a row after which a flow moves.
    pub rounds: u32,
    /// At a shared receiver (rate hint below our line rate, where every path ends on the same
    /// congested last hop), a flow moves only when the mean marked fraction of its sibling
    /// flows is at most this share of its own: congestion the whole connection sees is not
    /// a path's.
    pub sibling_ratio: f64,
    /// Rounds (of the connection's slowest flow) without any move after one of its flows
    /// timed out or was found silent: loss recovery and the timeout's own entropy change
    /// settle first, as PLB pauses after an RTO.
    pub suspend_rounds: u32,
}

impl Default for RepathConfig {
    fn default() -> Self {
        RepathConfig {
            ecn_fraction: 0.5,
            rounds: 3,
            sibling_ratio: 0.5,
            suspend_rounds: 10,
        }
    }
}

/// Weight of the newest round in [`CongestionRounds::smoothed`].
const SMOOTHING: f64 = 0.5;

/// One flow's round accounting.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CongestionRounds {
    /// When the current round ends (0: no round started yet).
    round_end: u64,
    /// Packets acknowledged in the current round.
    acked: u32,
    /// CE-marked packets reported in the current round.
    marked: u32,
    /// The current round started right after a move: packets sent on the old route still
    /// come back in it, so its verdict is not the new route's.
    discard: bool,
    /// Congested rounds in a row.
    pub streak: u32,
    /// Marked fraction per round, smoothed over rounds.
    pub smoothed: f64,
}

impl CongestionRounds {
    /// Counts an ACK that acknowledged `acked` packets and reported `marked` CE marks, at
    /// `now`, with the flow's smoothed RTT `srtt` as the round length. When it ends a round,
    /// updates the streak against `threshold` and returns true.
    pub fn on_ack(&mut self, now: u64, acked: u32, marked: u32, srtt: u64, threshold: f64) -> bool {
        if self.round_end == 0 {
            self.round_end = now + srtt;
        }
        self.acked = self.acked.saturating_add(acked);
        self.marked = self.marked.saturating_add(marked);
        if now < self.round_end || self.acked == 0 {
            return false;
        }
        let frac = (self.marked as f64 / self.acked as f64).min(1.0);
        if !std::mem::take(&mut self.discard) {
            self.smoothed = (1.0 - SMOOTHING) * self.smoothed + SMOOTHING * frac;
            self.streak = if frac >= threshold {
                self.streak + 1
            } else {
                0
            };
        }
        self.start_round(now, srtt);
        true
    }

    /// The flow moved (or timed out): the streak restarts, and the round now starting is not
    /// counted.
    pub fn restart(&mut self, now: u64, srtt: u64) {
        self.streak = 0;
        self.discard = true;
        self.start_round(now, srtt);
    }

    fn start_round(&mut self, now: u64, srtt: u64) {
        self.round_end = now + srtt.max(1);
        self.acked = 0;
        self.marked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_count_congested_streaks_and_a_restart_discards_one_round() {
        let mut r = CongestionRounds::default();
        // Round 1: 3 of 4 marked; ends at the first ACK at or after 10.
        assert!(!r.on_ack(0, 2, 2, 10, 0.5));
        assert!(r.on_ack(10, 2, 1, 10, 0.5));
        assert_eq!(r.streak, 1);
        // Round 2: 1 of 4 marked, below the threshold: the streak ends.
        assert!(r.on_ack(20, 4, 1, 10, 0.5));
        assert_eq!(r.streak, 0);
        assert!(r.on_ack(30, 4, 4, 10, 0.5));
        assert_eq!(r.streak, 1);
        r.restart(31, 10);
        assert!(r.on_ack(41, 4, 4, 10, 0.5), "the discarded round ends");
        assert_eq!(r.streak, 0, "but is not counted");
        assert!(r.on_ack(51, 4, 4, 10, 0.5));
        assert_eq!(r.streak, 1);
    }
}
