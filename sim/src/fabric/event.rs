//! The event queue: events come out ordered by (time, insertion sequence), so events due at
//! the same picosecond run in the order they were scheduled and every run of a seed is
//! identical.
//!
//! It is a calendar queue (a timing wheel): almost every event the fabric schedules is due
//! within a few microseconds (a packet's serialisation, a link's propagation, a host's next
//! poll), so those go into buckets of [`BUCKET_PS`] on a wheel covering [`WHEEL_PS`], found
//! again through a bitmap of the non-empty buckets; only the bucket being drained is kept
//! sorted. Later events (timeouts, failures) wait in a binary heap and move onto the wheel as
//! it turns. A binary heap alone spent about a fifth of a ferroce run sifting.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Simulated time in picoseconds (100 Gb/s moves one byte in exactly 80 ps).
pub type Ps = u64;

/// Picoseconds per nanosecond.
pub const PS_PER_NS: u64 = 1_000;

/// log2 of a bucket's width in picoseconds.
const BUCKET_SHIFT: u32 = 14;
/// Width of a wheel bucket (16.4 ns; 4.1 ns buckets measured slower: too many cold ones).
pub const BUCKET_PS: Ps = 1 << BUCKET_SHIFT;
/// Buckets on the wheel (a power of two).
const BUCKETS: usize = 1 << 10;
/// Time the wheel covers ahead of the bucket being drained (16.8 µs).
pub const WHEEL_PS: Ps = BUCKET_PS * BUCKETS as Ps;

/// A key: the event itself waits in a slab, so sorting moves 24 bytes, not a packet.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    at: Ps,
    seq: u64,
    slot: u32,
}

impl Key {
    fn bucket(&self) -> u64 {
        self.at >> BUCKET_SHIFT
    }
}

/// An event waiting in the slab (`None`: a free slot).
#[repr(align(64))]
struct Slot<E>(Option<E>);

/// A deterministic discrete-event queue.
pub struct EventQueue<E> {
    /// The bucket being drained, sorted earliest first; `current[head..]` are still waiting.
    /// Earliest first, because events mostly arrive in a bucket in time order and events
    /// pushed into the bucket being drained are mostly its latest: the sort then has little to
    /// move and an insertion lands near the end (latest first moved nearly everything).
    current: Vec<Key>,
    /// Events of `current` before this index were taken.
    head: usize,
    /// Index (time / [`BUCKET_PS`]) of the bucket being drained.
    now_bucket: u64,
    /// Unsorted buckets for `now_bucket + 1 .. now_bucket + BUCKETS`, by index modulo
    /// `BUCKETS`. An empty bucket holds no buffer: it takes one from `spare` when its first
    /// event comes.
    wheel: Vec<Vec<Key>>,
    /// Empty buffers of drained buckets, the most recently drained last. Handed out last in,
    /// first out, the few buffers in use stay in the cache; a buffer of its own per bucket
    /// was touched once per turn of the wheel, and missed the cache on most pushes.
    spare: Vec<Vec<Key>>,
    /// One bit per wheel bucket: non-empty.
    occupied: Vec<u64>,
    /// Events beyond the wheel, earliest first.
    far: BinaryHeap<Reverse<Key>>,
    /// The events, each on a cache line of its own where it fits one (the fabric's does): an
    /// event is read back long after it was pushed, and one straddling two lines missed twice.
    slab: Vec<Slot<E>>,
    free: Vec<u32>,
    seq: u64,
    len: usize,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            current: Vec::new(),
            head: 0,
            now_bucket: 0,
            wheel: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: vec![0; BUCKETS / 64],
            spare: Vec::new(),
            far: BinaryHeap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
            len: 0,
            popped: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedules `ev` at `at`. Inlined: a call's register saves and restores cost about a
    /// fifth of a push, and the engine pushes once or twice per event.
    #[inline]
    pub fn push(&mut self, at: Ps, ev: E) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = Slot(Some(ev));
                s
            }
            None => {
                self.slab.push(Slot(Some(ev)));
                (self.slab.len() - 1) as u32
            }
        };
        self.len += 1;
        self.place(Key {
            at,
            seq: self.seq,
            slot,
        });
    }

    #[inline(always)]
    fn place(&mut self, k: Key) {
        let b = k.bucket();
        if b <= self.now_bucket {
            // Due in the bucket being drained (or, if scheduled in the past, before anything
            // else left): keep it sorted among the events still waiting.
            let pos = self.head + self.current[self.head..].partition_point(|x| *x < k);
            self.current.insert(pos, k);
        } else if b - self.now_bucket < BUCKETS as u64 {
            let i = (b as usize) & (BUCKETS - 1);
            let bucket = &mut self.wheel[i];
            if bucket.capacity() == 0
                && let Some(buf) = self.spare.pop()
            {
                *bucket = buf;
            }
            bucket.push(k);
            self.occupied[i / 64] |= 1 << (i % 64);
        } else {
            self.far.push(Reverse(k));
        }
    }

    /// Turns the wheel to the next non-empty bucket, if the current one is drained.
    fn refill(&mut self) {
        if self.head < self.current.len() || self.len == 0 {
            return;
        }
        self.current.clear();
        self.head = 0;
        // The drained buffer goes to the spares; the next bucket's own becomes `current`.
        if self.current.capacity() > 0 {
            self.spare.push(std::mem::take(&mut self.current));
        }
        let next = self.next_occupied().or_else(|| {
            // The wheel is empty: jump to the earliest far event.
            self.far.peek().map(|Reverse(k)| k.bucket())
        });
        let Some(b) = next else { return };
        self.now_bucket = b;
        let i = (b as usize) & (BUCKETS - 1);
        std::mem::swap(&mut self.current, &mut self.wheel[i]);
        self.occupied[i / 64] &= !(1 << (i % 64));
        // Far events now within the wheel's reach move onto it (or into this bucket).
        while let Some(&Reverse(k)) = self.far.peek() {
            if k.bucket() - self.now_bucket >= BUCKETS as u64 {
                break;
            }
            self.far.pop();
            self.place(k);
        }
        // Events mostly reach a bucket in time order: a pass that finds it sorted is cheaper
        // than the sort's own setup for the few events a bucket holds.
        if !self.current.is_sorted() {
            self.current.sort_unstable();
        }
    }

    /// Index of the first non-empty wheel bucket after the current one.
    fn next_occupied(&self) -> Option<u64> {
        let start = (self.now_bucket as usize + 1) & (BUCKETS - 1);
        let words = self.occupied.len();
        let (w0, bit0) = (start / 64, start % 64);
        // The first word from `start`, then whole words around the wheel, then the first
        // word's bits before `start` (the wheel's far end).
        let first = self.occupied[w0] & (!0u64 << bit0);
        let found = if first != 0 {
            Some(w0 * 64 + first.trailing_zeros() as usize)
        } else {
            (1..=words).find_map(|d| {
                let w = (w0 + d) % words;
                let bits = if d == words {
                    self.occupied[w] & !(!0u64 << bit0)
                } else {
                    self.occupied[w]
                };
                (bits != 0).then(|| w * 64 + bits.trailing_zeros() as usize)
            })
        }?;
        let ahead = (found + BUCKETS - start) & (BUCKETS - 1);
        Some(self.now_bucket + 1 + ahead as u64)
    }

    /// Time of the earliest event.
    pub fn peek_time(&mut self) -> Option<Ps> {
        self.refill();
        self.current.get(self.head).map(|k| k.at)
    }

    /// Takes the earliest event.
    pub fn pop(&mut self) -> Option<(Ps, E)> {
        self.pop_until(Ps::MAX)
    }

    /// Takes the earliest event if it is due no later than `until`: [`EventQueue::peek_time`]
    /// and [`EventQueue::pop`] in one, turning the wheel once per event instead of twice.
    /// Inlined into the engine's loop, so the event is not copied out through a return slot.
    #[inline(always)]
    pub fn pop_until(&mut self, until: Ps) -> Option<(Ps, E)> {
        // The bucket being drained has events left nearly every time; only when it is empty
        // does the wheel turn (a call, not inlined).
        if self.head >= self.current.len() {
            self.refill();
        }
        let k = *self.current.get(self.head)?;
        if k.at > until {
            return None;
        }
        self.head += 1;
        self.len -= 1;
        self.free.push(k.slot);
        let ev = self.slab[k.slot as usize].0.take()?;
        self.popped += 1;
        Some((k.at, ev))
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Events taken so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic random stream for the randomized tests.
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn earliest_first_ties_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(30, 'c');
        q.push(10, 'a');
        q.push(30, 'd');
        q.push(10, 'b');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'c', 'd']);
        assert_eq!(q.processed(), 4);
    }

    #[test]
    fn pop_until_takes_only_events_due_by_then() {
        let mut q = EventQueue::default();
        q.push(10, 'a');
        q.push(WHEEL_PS + 10, 'b');
        assert_eq!(q.pop_until(9), None);
        assert_eq!(q.pop_until(10), Some((10, 'a')));
        assert_eq!(q.pop_until(WHEEL_PS), None);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop_until(Ps::MAX), Some((WHEEL_PS + 10, 'b')));
        assert_eq!(q.pop_until(Ps::MAX), None);
    }

    #[test]
    fn only_non_empty_buckets_hold_a_buffer() {
        let mut q = EventQueue::default();
        let mut now = 0;
        for i in 0..20_000_u64 {
            // A packet's serialisation and propagation ahead, as the fabric schedules them.
            q.push(now + 330_000 + (i % 7) * 80, i);
            q.push(now + 1_000_000 + (i % 5) * 80, i);
            for _ in 0..2 {
                if let Some((t, _)) = q.pop() {
                    now = t;
                }
            }
            let holding = q.wheel.iter().filter(|b| b.capacity() > 0).count();
            let occupied: u32 = q.occupied.iter().map(|w| w.count_ones()).sum();
            assert!(
                holding <= occupied as usize,
                "{holding} buffers, {occupied} buckets"
            );
        }
        // Buffers go round: no more than the buckets ever occupied at once, plus the current.
        assert!(q.spare.len() + q.wheel.iter().filter(|b| b.capacity() > 0).count() <= 200);
    }

    /// Against a sorted reference over random interleavings of pushes (never before the
    /// current time, many ties) and pops, as the engine uses it.
    #[test]
    fn same_order_as_sorting_by_time_then_insertion() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..50 {
            let mut q = EventQueue::default();
            let mut reference: Vec<(Ps, u64)> = Vec::new();
            let (mut now, mut id) = (0, 0_u64);
            for _ in 0..2_000 {
                if next().is_multiple_of(3) {
                    let want = reference.first().copied();
                    assert_eq!(q.peek_time(), want.map(|w| w.0));
                    assert_eq!(q.pop().map(|(_, e)| e), want);
                    if !reference.is_empty() {
                        now = reference.remove(0).0;
                    }
                } else {
                    let at = now
                        + [
                            0,
                            1,
                            80,
                            BUCKET_PS - 1,
                            BUCKET_PS,
                            1_000_000,
                            WHEEL_PS - 1,
                            WHEEL_PS,
                            3 * WHEEL_PS + 5,
                            1 << 40,
                        ][(next() % 10) as usize];
                    id += 1;
                    q.push(at, (at, id));
                    let pos = reference.partition_point(|&(t, i)| (t, i) <= (at, id));
                    reference.insert(pos, (at, id));
                }
                assert_eq!(q.len(), reference.len());
            }
        }
    }

    /// As the engine uses `pop_until` (time moves to `until` when nothing is due by then),
    /// with some events scheduled in the past: the same order as a sorted reference.
    #[test]
    fn pop_until_and_past_events_keep_the_order() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let steps = [
            0,
            1,
            80,
            BUCKET_PS - 1,
            BUCKET_PS,
            50_000,
            WHEEL_PS,
            2 * WHEEL_PS + 3,
        ];
        let mut late = 0;
        for _ in 0..50 {
            let mut q = EventQueue::default();
            let mut reference: Vec<(Ps, u64)> = Vec::new();
            let (mut now, mut id) = (0, 0_u64);
            for _ in 0..2_000 {
                let r = next();
                if r.is_multiple_of(3) {
                    let until = now + steps[(next() % 8) as usize];
                    let want = reference.first().copied().filter(|w| w.0 <= until);
                    assert_eq!(q.pop_until(until).map(|(_, e)| e), want);
                    match want {
                        Some(w) => {
                            reference.remove(0);
                            now = now.max(w.0);
                        }
                        None => now = until,
                    }
                } else {
                    let at = if r % 11 == 1 {
                        late += 1;
                        now.saturating_sub(steps[(next() % 8) as usize])
                    } else {
                        now + steps[(next() % 8) as usize]
                    };
                    id += 1;
                    q.push(at, (at, id));
                    let pos = reference.partition_point(|&(t, i)| (t, i) <= (at, id));
                    reference.insert(pos, (at, id));
                }
                assert_eq!(q.peek_time(), reference.first().map(|w| w.0));
                assert_eq!(q.len(), reference.len());
            }
        }
        assert!(late > 1000, "{late}");
    }
}
