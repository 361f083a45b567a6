//! The connection table of a [`Context`](super::Context): its slots, and what the driver loop
//! asks about all of them at once (due timers, who may transmit, the host's bytes in flight,
//! the earliest wake-up) kept up to date as connections change, so that a call to
//! [`Context::progress`](super::Context::progress) costs in proportion to the connections
//! that had something happen rather than to every connection of the host.
//!
//! Reading goes through [`Deref`] to the slots; every change goes through a method that
//! marks the slot, so no change can escape the bookkeeping. A marked slot's summary is
//! recomputed before the next question about the table, and the slot is visited by the next
//! [`ConnTable::sweep`].

use super::{CmState, ConnSlot, RxProgress};
use std::ops::Deref;

/// What the table's questions need from one slot, as of its last change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Summary {
    /// The core's earliest timer.
    timer: Option<u64>,
    /// When the core may next transmit.
    transmit_at: Option<u64>,
    /// The core's bytes in flight.
    inflight: u64,
    /// The CM exchange is done and the connection is up.
    established: bool,
    /// When a CM wait (reply, RTU, disconnect reply) times out.
    cm_next: Option<u64>,
    /// The connection's flow-table entries: first, count.
    flows: (u32, u32),
}

impl Summary {
    fn of(slot: Option<&ConnSlot>) -> Summary {
        let Some(s) = slot else {
            return Summary::default();
        };
        let cm_next = match s.cm {
            CmState::AwaitReply { next, .. }
            | CmState::AwaitRtu { next, .. }
            | CmState::AwaitDisconnect { next, .. } => Some(next),
            _ => None,
        };
        Summary {
            timer: s.core.poll_timer(),
            transmit_at: s.core.transmit_at(),
            inflight: s.core.inflight_bytes(),
            established: s.cm == CmState::Established,
            cm_next,
            flows: (s.entry.flow_base as u32, s.entry.flow_count as u32),
        }
    }

    /// Counts toward the host budget's active connections: bytes in flight or something to
    /// send.
    fn active(&self) -> bool {
        self.inflight > 0 || self.transmit_at.is_some()
    }
}

/// A list of slot indices, each at most once.
#[derive(Debug, Default)]
struct Marks {
    list: Vec<u32>,
    marked: Vec<bool>,
}

impl Marks {
    fn new(n: usize) -> Self {
        Marks {
            list: Vec::new(),
            marked: vec![false; n],
        }
    }

    fn mark(&mut self, i: usize) {
        if !self.marked[i] {
            self.marked[i] = true;
            self.list.push(i as u32);
        }
    }

    /// Whether no index is marked.
    fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Moves the marked indices into `out`, ascending, and clears the marks.
    fn take_sorted(&mut self, out: &mut Vec<u32>) {
        out.clear();
        out.append(&mut self.list);
        out.sort_unstable();
        for &i in out.iter() {
            self.marked[i as usize] = false;
        }
    }
}

/// The connection slots with their incremental summaries (see the module documentation).
#[derive(Debug)]
pub(super) struct ConnTable {
    slots: Vec<Option<ConnSlot>>,
    summaries: Vec<Summary>,
    /// Slots changed since their summary was taken.
    stale: Marks,
    /// Slots changed since the last [`ConnTable::sweep`].
    touched: Marks,
    /// The timer of every slot.
    timers: SlotTimes,
    /// When every slot may transmit.
    transmits: SlotTimes,
    /// When every slot's CM wait times out.
    cm_waits: SlotTimes,
    /// Sum of the summaries' bytes in flight.
    inflight: u64,
    /// Slots whose summary is active.
    active: usize,
    /// Slots whose summary is established.
    established: usize,
    /// One bit per slot: its summary is established.
    up: Vec<u64>,
    /// Per slot, its flow-table entries (first, count) as its summary has them. The rate
    /// hints visit the established slots' entries every interval: with these and `up` that
    /// is a few cache lines a host, where a pass over the summaries was one line a slot.
    flow_ranges: Vec<(u32, u32)>,
    /// Scratch for the indices a refresh or a sweep visits.
    scratch: Vec<u32>,
}

impl Deref for ConnTable {
    type Target = [Option<ConnSlot>];

    fn deref(&self) -> &Self::Target {
        &self.slots
    }
}

impl ConnTable {
    /// `n` empty slots.
    pub(super) fn new(n: usize) -> Self {
        let mut slots = Vec::new();
        slots.resize_with(n, || None);
        ConnTable {
            slots,
            summaries: vec![Summary::default(); n],
            stale: Marks::new(n),
            touched: Marks::new(n),
            timers: SlotTimes::new(n),
            transmits: SlotTimes::new(n),
            cm_waits: SlotTimes::new(n),
            inflight: 0,
            active: 0,
            established: 0,
            up: vec![0; n.div_ceil(64)],
            flow_ranges: vec![(0, 0); n],
            scratch: Vec::new(),
        }
    }

    fn mark(&mut self, i: usize) {
        self.stale.mark(i);
        self.touched.mark(i);
    }

    /// The connection in slot `i`, to change.
    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut ConnSlot> {
        if self.slots.get(i)?.is_none() {
            return None;
        }
        self.mark(i);
        self.slots[i].as_mut()
    }

    /// Every slot, to change (marks every occupied slot: for the rare passes over all
    /// connections, such as the CM timers).
    pub(super) fn iter_mut(&mut self) -> std::slice::IterMut<'_, Option<ConnSlot>> {
        for i in 0..self.slots.len() {
            if self.slots[i].is_some() {
                self.mark(i);
            }
        }
        self.slots.iter_mut()
    }

    /// Puts `slot` into slot `i` (a new connection).
    pub(super) fn set(&mut self, i: usize, slot: ConnSlot) {
        self.mark(i);
        self.slots[i] = Some(slot);
    }

    /// Empties slot `i`, returning what it held.
    pub(super) fn take(&mut self, i: usize) -> Option<ConnSlot> {
        let s = self.slots.get_mut(i)?.take();
        if s.is_some() {
            self.mark(i);
        }
        s
    }

    /// The receive-progress bookkeeping of slot `i`, to change: the summaries do not depend
    /// on it, so the slot stays unmarked.
    pub(super) fn rx_progress_mut(&mut self, i: usize) -> Option<&mut RxProgress> {
        self.slots.get_mut(i)?.as_mut().map(|s| &mut s.rx)
    }

    /// Records the rate hint programmed for slot `i`'s connection (the summaries do not
    /// depend on it). Returns whether the slot is occupied.
    pub(super) fn set_rate_hint(&mut self, i: usize, mbps: u32) -> bool {
        match self.slots.get_mut(i) {
            Some(Some(s)) => {
                s.entry.rate_hint_mbps = mbps;
                true
            }
            _ => false,
        }
    }

    /// Brings the summaries of the changed slots and the totals up to date.
    fn refresh(&mut self) {
        // Every question about the table refreshes it first, several times per driver loop,
        // and mostly nothing changed in between.
        if self.stale.is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut self.scratch);
        self.stale.take_sorted(&mut list);
        for &i in &list {
            let new = Summary::of(self.slots[i as usize].as_ref());
            let old = std::mem::replace(&mut self.summaries[i as usize], new);
            if old != new {
                self.account(i, &old, &new);
            }
        }
        self.scratch = list;
    }

    /// Replaces `old`'s contribution of slot `i` to the totals by `new`'s.
    fn account(&mut self, i: u32, old: &Summary, new: &Summary) {
        self.inflight = self.inflight - old.inflight + new.inflight;
        self.active = self.active - usize::from(old.active()) + usize::from(new.active());
        self.established =
            self.established - usize::from(old.established) + usize::from(new.established);
        let (word, bit) = (i as usize / 64, 1u64 << (i % 64));
        if new.established {
            self.up[word] |= bit;
        } else {
            self.up[word] &= !bit;
        }
        self.flow_ranges[i as usize] = new.flows;
        self.timers.set(i as usize, new.timer);
        self.transmits.set(i as usize, new.transmit_at);
        self.cm_waits.set(i as usize, new.cm_next);
    }

    /// The slots whose timer is due at `now`, ascending, into `out`.
    pub(super) fn due_timers(&mut self, now: u64, out: &mut Vec<usize>) {
        self.refresh();
        self.timers.due(now, out);
    }

    /// The slots that may transmit at `now` by their own pacing, ascending, into `out`.
    pub(super) fn due_transmits(&mut self, now: u64, out: &mut Vec<usize>) {
        self.refresh();
        self.transmits.due(now, out);
    }

    /// Bytes in flight over every connection, and how many connections have bytes in flight
    /// or something to send.
    pub(super) fn totals(&mut self) -> (u64, usize) {
        self.refresh();
        (self.inflight, self.active)
    }

    /// The earliest core timer of any connection.
    pub(super) fn next_timer(&mut self) -> Option<u64> {
        self.refresh();
        self.timers.first()
    }

    /// The earliest time any connection may transmit by its own pacing.
    pub(super) fn next_transmit(&mut self) -> Option<u64> {
        self.refresh();
        self.transmits.first()
    }

    /// The earliest CM wait to time out.
    pub(super) fn next_cm_wait(&mut self) -> Option<u64> {
        self.refresh();
        self.cm_waits.first()
    }

    /// The established connections, ascending, with their flow-table entries (slot, first,
    /// count), into `out`: from the bitmap of established slots and the flow ranges, not the
    /// slots or their summaries.
    pub(super) fn established_flows(&mut self, out: &mut Vec<(usize, u32, u32)>) {
        self.refresh();
        out.clear();
        if self.established == 0 {
            return;
        }
        for (w, &word) in self.up.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (first, count) = self.flow_ranges[i];
                out.push((i, first, count));
            }
        }
        // Tests and debug builds hold the bitmap and the ranges to the summaries.
        debug_assert!(
            out.iter().copied().eq(self
                .summaries
                .iter()
                .enumerate()
                .filter(|(_, s)| s.established)
                .map(|(i, s)| (i, s.flows.0, s.flows.1)))
        );
    }

    /// Whether any connection is established.
    pub(super) fn any_established(&mut self) -> bool {
        self.refresh();
        self.established > 0
    }

    /// Calls `f` on every occupied slot changed since the last sweep, in slot order (the order
    /// a pass over all slots would visit them in). Slots no change reached have nothing new
    /// to report (completions, failures), so they are left out. `f` may change the slots;
    /// those changes are summarised but need no further sweep.
    pub(super) fn sweep(&mut self, mut f: impl FnMut(usize, &mut ConnSlot)) {
        let mut list = std::mem::take(&mut self.scratch);
        self.touched.take_sorted(&mut list);
        for &i in &list {
            if let Some(s) = self.slots[i as usize].as_mut() {
                self.stale.mark(i as usize);
                f(i as usize, s);
            }
        }
        self.scratch = list;
    }
}

/// A time (or none) per slot, with the earliest of every group of [`GROUP`] slots kept: what
/// the table asks of its timers, transmit times and CM waits. A host has tens to a few
/// hundred connections and asks these questions several times per driver loop; a change is
/// a store and at worst a pass over its group, and a question passes over the group minima
/// and then only over the groups that hold a due slot. (A flat array rescanned whole after
/// the earliest slot moved, and for every list of due slots, cost a pass over all slots on
/// most driver loops; a sorted set before it took a removal and an insertion per change.)
#[derive(Debug)]
struct SlotTimes {
    /// Per slot, its time; [`NONE`] for none.
    at: Vec<u64>,
    /// Per group of [`GROUP`] slots, the earliest of their times ([`NONE`] if none has one).
    group_min: Vec<u64>,
}

/// Slots per group of [`SlotTimes`]: a group's pass is one or two cache lines.
const GROUP: usize = 16;

/// No time, so that every question is a plain compare. A time of `u64::MAX` itself (the end
/// of time in nanoseconds since the context started) is taken as none: it is never due, and a
/// wake-up then is no wake-up.
const NONE: u64 = u64::MAX;

impl SlotTimes {
    fn new(n: usize) -> Self {
        SlotTimes {
            at: vec![NONE; n],
            group_min: vec![NONE; n.div_ceil(GROUP)],
        }
    }

    /// Sets slot `i`'s time.
    fn set(&mut self, i: usize, t: Option<u64>) {
        let t = t.unwrap_or(NONE);
        let old = std::mem::replace(&mut self.at[i], t);
        let g = i / GROUP;
        if t <= self.group_min[g] {
            self.group_min[g] = t;
        } else if old == self.group_min[g] {
            // The group's earliest moved later or went: another slot may hold it.
            self.group_min[g] = self.group(g).iter().copied().min().unwrap_or(NONE);
        }
    }

    /// The times of group `g`'s slots (the last group may be short).
    fn group(&self, g: usize) -> &[u64] {
        let start = g * GROUP;
        &self.at[start..(start + GROUP).min(self.at.len())]
    }

    /// The earliest time of any slot.
    fn first(&self) -> Option<u64> {
        let e = self.group_min.iter().copied().min().unwrap_or(NONE);
        (e != NONE).then_some(e)
    }

    /// The slots due at `now` (time at or before it), ascending, into `out`.
    fn due(&self, now: u64, out: &mut Vec<usize>) {
        out.clear();
        // A slot without a time is never due.
        let now = now.min(NONE - 1);
        for (g, &m) in self.group_min.iter().enumerate() {
            if m > now {
                continue;
            }
            let due = self.group(g).iter().enumerate();
            out.extend(due.filter(|&(_, &t)| t <= now).map(|(i, _)| g * GROUP + i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{GROUP, SlotTimes};
    use std::collections::BTreeSet;

    #[test]
    fn slot_times_answer_as_a_sorted_set_does() {
        // Within one group; and over several groups, the last one partial.
        for n in [12, 2 * GROUP + 5] {
            answers_as_a_sorted_set_does(n);
        }
    }

    fn answers_as_a_sorted_set_does(n: usize) {
        // The sorted set of (time, slot) it replaced, as the reference.
        let mut times = SlotTimes::new(n);
        let mut set: BTreeSet<(u64, usize)> = BTreeSet::new();
        let mut at = vec![None; n];
        let mut s = 0x2545_f491_4f6c_dd1d_u64;
        let (mut due_lists, mut earliest_gone) = (0, 0);
        for _ in 0..50_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let i = (s % n as u64) as usize;
            // Few distinct times, so that slots share the earliest often.
            let t = (s >> 8) % 24;
            let new = if (s >> 20).is_multiple_of(4) {
                None
            } else {
                Some(t)
            };
            let before = set.first().map(|&(t, _)| t);
            if let Some(old) = at[i] {
                set.remove(&(old, i));
            }
            if let Some(t) = new {
                set.insert((t, i));
            }
            at[i] = new;
            times.set(i, new);
            if (s >> 30).is_multiple_of(3) {
                assert_eq!(times.first(), set.first().map(|&(t, _)| t));
            }
            if (s >> 32).is_multiple_of(5) {
                let now = (s >> 40) % 24;
                let mut want: Vec<usize> =
                    set.range(..=(now, usize::MAX)).map(|&(_, i)| i).collect();
                want.sort_unstable();
                let mut got = Vec::new();
                times.due(now, &mut got);
                assert_eq!(got, want, "due at {now}");
                due_lists += usize::from(!want.is_empty());
            }
            earliest_gone += usize::from(before != set.first().map(|&(t, _)| t));
        }
        assert!(due_lists > 1_000, "{due_lists} non-empty due lists");
        assert!(
            earliest_gone > 1_000,
            "the earliest changed {earliest_gone} times"
        );
    }
}
