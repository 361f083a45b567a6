//! The receiver's side of congestion control: each active sender's fair share of our inbound
//! capacity, which the NIC stamps as the rate hint on every ACK of that sender's connection.
//!
//! Max-min fairness (water filling): senders whose demand (their line rate, from the CM
//! exchange) is below an equal share get their demand; the rest is split equally among the
//! others. A sender is active while its flows have made progress within the activity timeout.
//! An inactive sender's hint is its share if every sender we expect started now (capacity
//! divided by the number of peers that connected to us or have sent to us, and at least one
//! more than the active ones; at most its demand): senders that start together into an incast
//! all carry the incast's share on their very first ACK, before the receiver has seen any of
//! them (the receiver recomputes periodically, and the first ACKs leave before that). Once a
//! sender is active its hint is its max-min share among the active senders. Because every ACK
//! carries the hint, senders reach their shares one RTT after the receiver recomputes.

#[derive(Debug, Clone, Copy)]
struct Sender {
    demand_mbps: u32,
    progress: u64,
    last_progress_at: Option<u64>,
    hint: u32,
    /// Counts toward a newcomer's share: the peer opened the connection to us (to send,
    /// presumably), or it has sent on it.
    expected: bool,
    /// When the first [`FairShare::compute`] saw it.
    seen_at: Option<u64>,
}

/// Fair-share rate hints for the senders of one receiver.
#[derive(Debug, Clone)]
pub struct FairShare {
    capacity_mbps: u32,
    activity_timeout_ns: u64,
    reserve_unseen: bool,
    /// Share of the capacity handed out while two or more senders share it.
    shared_utilization: f64,
    /// The senders with our connection ids, ascending by id: one dense array to pass over
    /// and to search, where a tree took a walk over cold nodes, and a computation's shares
    /// are an array by position rather than another tree. Any id is fine (memory grows with
    /// the senders, not with the ids).
    senders: Vec<(u32, Sender)>,
}

impl FairShare {
    /// A receiver with `capacity_mbps` of inbound capacity; senders without progress for
    /// `activity_timeout_ns` count as inactive.
    pub fn new(capacity_mbps: u32, activity_timeout_ns: u64) -> Self {
        FairShare {
            capacity_mbps,
            activity_timeout_ns,
            reserve_unseen: false,
            shared_utilization: 1.0,
            senders: Vec::new(),
        }
    }

    /// Whether expected senders that have not sent yet keep a share in the water filling
    /// (for one activity timeout after they were added): when senders start together, the
    /// first to arrive then get C / (senders expected) rather than C / (senders seen so far),
    /// which would hand out several times the capacity until the others are seen.
    pub fn set_reserve_unseen(&mut self, on: bool) {
        self.reserve_unseen = on;
    }

    /// The fraction of the capacity (in (0, 1]) the hints split while two or more senders
    /// share it; a lone sender still gets all of it. Shares that add up to exactly the
    /// capacity leave nothing to drain a queue that a start-up burst, a resend or a late
    /// sender built, so it stays (and drops) until ECN cuts some windows below their shares.
    pub fn set_shared_utilization(&mut self, u: f64) {
        self.shared_utilization = if u > 0.0 { u.min(1.0) } else { 1.0 };
    }

    /// The capacity the hints split among `senders` (Mb/s).
    fn split_capacity(&self, senders: usize) -> u32 {
        if senders >= 2 {
            (self.capacity_mbps as f64 * self.shared_utilization) as u32
        } else {
            self.capacity_mbps
        }
    }

    /// Sets the inbound capacity (Mb/s): NIC ports whose link went down or came back. The
    /// hints follow at the next [`FairShare::compute`].
    pub fn set_capacity(&mut self, mbps: u32) {
        self.capacity_mbps = mbps;
    }

    /// Inbound capacity (Mb/s).
    pub fn capacity(&self) -> u32 {
        self.capacity_mbps
    }

    /// Adds (or updates) a sender, identified by our connection id, with its line rate: a
    /// peer that opened the connection to us, and so counts toward a newcomer's share from the
    /// start (see the module documentation).
    pub fn add_sender(&mut self, conn: u32, demand_mbps: u32) {
        self.insert(conn, demand_mbps, true);
    }

    /// Adds (or updates) the peer of a connection we opened: it may send on it too, but counts
    /// toward a newcomer's share only once it has.
    pub fn add_own_connection(&mut self, conn: u32, demand_mbps: u32) {
        self.insert(conn, demand_mbps, false);
    }

    fn insert(&mut self, conn: u32, demand_mbps: u32, expected: bool) {
        let demand_mbps = if demand_mbps == 0 {
            self.capacity_mbps
        } else {
            demand_mbps
        };
        let at = match self.find(conn) {
            Ok(at) => at,
            Err(at) => {
                let new = Sender {
                    demand_mbps,
                    progress: 0,
                    last_progress_at: None,
                    hint: 0,
                    expected,
                    seen_at: None,
                };
                self.senders.insert(at, (conn, new));
                at
            }
        };
        let e = &mut self.senders[at].1;
        e.demand_mbps = demand_mbps;
        e.expected |= expected;
    }

    /// Forgets a sender.
    pub fn remove_sender(&mut self, conn: u32) {
        if let Ok(at) = self.find(conn) {
            self.senders.remove(at);
        }
    }

    /// Reports a sender's progress counter (any measure that grows while its data arrives,
    /// e.g. the sum of its flows' cumulative FSN advances).
    pub fn observe(&mut self, conn: u32, now: u64, progress: u64) {
        if let Ok(at) = self.find(conn)
            && let s = &mut self.senders[at].1
            && progress != s.progress
        {
            s.progress = progress;
            s.last_progress_at = Some(now);
            s.expected = true;
        }
    }

    fn active(&self, s: &Sender, now: u64) -> bool {
        s.last_progress_at
            .is_some_and(|t| now.saturating_sub(t) <= self.activity_timeout_ns)
    }

    /// Number of senders active at `now`.
    pub fn active_count(&self, now: u64) -> usize {
        self.senders
            .iter()
            .filter(|(_, s)| self.active(s, now))
            .count()
    }

    /// What a sender that has not sent yet is given at `now` (Mb/s): the capacity split over
    /// every known sender, or over the active ones and itself if they are more (the share
    /// [`FairShare::compute`] hands such senders, capped by nothing but the capacity).
    pub fn newcomer_mbps(&self, now: u64) -> u32 {
        self.newcomer_with_pending_mbps(now, 0)
    }

    /// [`FairShare::newcomer_mbps`] with `pending` more senders expected: peers whose
    /// connection requests have arrived and are not accepted yet. The CM Reply's hint counts
    /// them, so that senders whose requests arrive together (a synchronised incast) start at
    /// the same share instead of at C / k for the k-th accepted.
    pub fn newcomer_with_pending_mbps(&self, now: u64, pending: usize) -> u32 {
        let expected = self.senders.iter().filter(|(_, s)| s.expected).count();
        let all = (expected + pending).max(self.active_count(now) + 1);
        (self.split_capacity(all) / all as u32).max(1)
    }

    /// The current hint of a sender (Mb/s).
    pub fn hint(&self, conn: u32) -> Option<u32> {
        self.find(conn).ok().map(|at| self.senders[at].1.hint)
    }

    /// Where sender `conn` is in `senders`, or where it would go.
    fn find(&self, conn: u32) -> Result<usize, usize> {
        self.senders.binary_search_by_key(&conn, |&(c, _)| c)
    }

    /// Recomputes every hint at `now`; calls `changed(conn, mbps)` for each hint that changed.
    pub fn compute(&mut self, now: u64, mut changed: impl FnMut(u32, u32)) {
        for (_, s) in &mut self.senders {
            s.seen_at.get_or_insert(now);
        }
        // With `reserve_unseen`, expected senders that have never sent (and were added
        // within the activity timeout) take part in the water filling as if active.
        let timeout = self.activity_timeout_ns;
        let reserve = |s: &Sender| {
            s.expected
                && s.last_progress_at.is_none()
                && s.seen_at.is_some_and(|t| now.saturating_sub(t) <= timeout)
        };
        // (position in `senders`, demand), in id order before the sort by demand.
        let mut active: Vec<(usize, u32)> = self
            .senders
            .iter()
            .enumerate()
            .filter(|(_, (_, s))| self.active(s, now) || (self.reserve_unseen && reserve(s)))
            .map(|(at, (_, s))| (at, s.demand_mbps))
            .collect();
        active.sort_by_key(|&(_, d)| d);
        let mut remaining = self.split_capacity(active.len()) as u64;
        let mut left = active.len() as u64;
        let mut shares: Vec<Option<u32>> = vec![None; self.senders.len()];
        for &(at, demand) in &active {
            let share = remaining / left.max(1);
            let give = (demand as u64).min(share);
            shares[at] = Some(give as u32);
            remaining -= give;
            left -= 1;
        }
        // Every known sender counts for a newcomer: those that are not active yet may start
        // at the same instant as it does (a synchronised incast).
        let newcomer = self.newcomer_mbps(now);
        let reserve_unseen = self.reserve_unseen;
        for (&mut (conn, ref mut s), share) in self.senders.iter_mut().zip(shares) {
            // A reserved (unseen) sender gets the newcomer's share like any sender not active.
            let hint = match share {
                Some(h) if !(reserve_unseen && reserve(s)) => h.max(1),
                _ => newcomer.min(s.demand_mbps).max(1),
            };
            if hint != s.hint {
                s.hint = hint;
                changed(conn, hint);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn hints(f: &mut FairShare, now: u64) -> BTreeMap<u32, u32> {
        f.compute(now, |_, _| {});
        f.senders.iter().map(|&(c, s)| (c, s.hint)).collect()
    }

    #[test]
    fn any_connection_id_names_a_sender() {
        let mut f = FairShare::new(100_000, 10_000);
        for c in [u32::MAX, 7, 0] {
            f.add_sender(c, 100_000);
        }
        f.remove_sender(7);
        f.observe(u32::MAX, 1_000, 3);
        let h = hints(&mut f, 1_000);
        assert_eq!(h.keys().copied().collect::<Vec<_>>(), vec![0, u32::MAX]);
        assert_eq!(f.hint(u32::MAX), Some(100_000), "the one active sender");
        assert_eq!(f.hint(7), None);
    }

    #[test]
    fn active_senders_split_the_capacity_equally() {
        let mut f = FairShare::new(100_000, 10_000);
        for c in 1..=4 {
            f.add_sender(c, 100_000);
            f.observe(c, 1_000, 7);
        }
        let h = hints(&mut f, 2_000);
        assert!(h.values().all(|&v| v == 25_000), "{h:?}");
        // One goes quiet: the other three get a third each, the quiet one a newcomer's share.
        for c in 1..=3 {
            f.observe(c, 15_000, 9);
        }
        let h = hints(&mut f, 16_000);
        assert_eq!(h[&1], 33_333);
        assert_eq!(h[&4], 25_000, "a newcomer would be the fourth");
    }

    #[test]
    fn senders_that_start_together_get_the_incast_share_before_they_are_seen() {
        let mut f = FairShare::new(100_000, 10_000);
        for c in 0..8 {
            f.add_sender(c, 100_000);
        }
        // Nobody active yet: the first ACKs of a synchronised start already carry C / 8.
        let h = hints(&mut f, 0);
        assert!(h.values().all(|&v| v == 12_500), "{h:?}");
        // Two are active: they split the capacity; the others would be among all eight.
        f.observe(0, 1_000, 1);
        f.observe(1, 1_000, 1);
        let h = hints(&mut f, 1_000);
        assert_eq!((h[&0], h[&1], h[&5]), (50_000, 50_000, 12_500));
        // A lone sender of one known is not held back.
        let mut g = FairShare::new(100_000, 10_000);
        g.add_sender(3, 100_000);
        assert_eq!(hints(&mut g, 0)[&3], 100_000);
        // Requests not yet accepted count for the reply's hint when asked.
        assert_eq!(g.newcomer_with_pending_mbps(0, 3), 25_000);
        // Connections we opened do not count until their peer sends on them (a ring: one
        // peer sends to us, we send to the other).
        g.add_own_connection(4, 100_000);
        assert_eq!(hints(&mut g, 0)[&3], 100_000);
        g.observe(4, 10, 1);
        g.observe(4, 20, 2);
        let h = hints(&mut g, 30);
        assert_eq!(
            (h[&3], h[&4]),
            (50_000, 100_000),
            "4 is active; 3 would be the second"
        );
    }

    #[test]
    fn unseen_senders_keep_their_share_until_they_send_or_time_out() {
        let mut f = FairShare::new(100_000, 10_000);
        f.set_reserve_unseen(true);
        for c in 0..8 {
            f.add_sender(c, 100_000);
        }
        // Two of eight have sent: they get C / 8, not C / 2, while the others are unseen.
        f.observe(0, 1_000, 1);
        f.observe(1, 1_000, 1);
        let h = hints(&mut f, 1_000);
        assert_eq!((h[&0], h[&1], h[&5]), (12_500, 12_500, 12_500));
        // Later, the six that never sent no longer hold shares back.
        f.observe(0, 20_000, 2);
        f.observe(1, 20_000, 2);
        let h = hints(&mut f, 20_000);
        assert_eq!((h[&0], h[&1], h[&5]), (50_000, 50_000, 12_500));
    }

    #[test]
    fn shared_capacity_keeps_headroom_but_a_lone_sender_gets_all() {
        let mut f = FairShare::new(100_000, 10_000);
        f.set_shared_utilization(0.98);
        f.add_sender(1, 100_000);
        f.observe(1, 0, 1);
        assert_eq!(hints(&mut f, 1)[&1], 100_000, "alone: the whole capacity");
        f.add_sender(2, 100_000);
        f.observe(2, 2, 1);
        let h = hints(&mut f, 3);
        assert_eq!((h[&1], h[&2]), (49_000, 49_000));
        // A newcomer's share counts the headroom too.
        assert_eq!(f.newcomer_mbps(3), 32_666);
    }

    #[test]
    fn max_min_gives_slow_senders_their_demand_and_the_rest_to_the_others() {
        let mut f = FairShare::new(100_000, 10_000);
        f.add_sender(1, 10_000);
        f.add_sender(2, 100_000);
        f.add_sender(3, 100_000);
        for c in 1..=3 {
            f.observe(c, 0, 1);
        }
        let mut changes = vec![];
        f.compute(1, |c, h| changes.push((c, h)));
        changes.sort();
        assert_eq!(changes, vec![(1, 10_000), (2, 45_000), (3, 45_000)]);
        // Nothing changes: no callbacks.
        f.compute(2, |_, _| panic!("no change expected"));
    }

    #[test]
    fn a_lone_sender_gets_everything_up_to_its_demand() {
        let mut f = FairShare::new(100_000, 10_000);
        f.add_sender(9, 40_000);
        assert_eq!(hints(&mut f, 0)[&9], 40_000);
        f.add_sender(8, 0);
        f.observe(8, 0, 5);
        let h = hints(&mut f, 1);
        assert_eq!(
            h[&8], 100_000,
            "demand 0 means 'as fast as the receiver takes'"
        );
    }
}
