//! Workloads as lists of messages, each from one host to another, possibly waiting for other
//! messages to have arrived at its sender first (a ring all-reduce step waits for the previous
//! step's chunk). Both transports run the same workload through [`App`], the per-host
//! application logic: what is ready to send, what arrived, what it verified.
//!
//! Data: every host's send buffer holds a pattern derived from the seed and the host; message
//! `m` is sent from a window of it that depends on `m`, so two messages of one sender carry
//! different bytes and a misplaced packet shows up in the receiver's CRC-32.

use super::event::Ps;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

/// Window over which message source offsets vary.
pub const SRC_SPREAD: u64 = 64 << 10;

/// Width of the bins of [`App::placed`]: 1 µs.
pub const PLACED_BIN: Ps = 1_000_000;

/// One message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Sender.
    pub src: u32,
    /// Receiver.
    pub dst: u32,
    /// Bytes.
    pub bytes: u32,
    /// Messages (to `src`) that must have arrived before this one is posted.
    pub after: Vec<u32>,
    /// An earlier message of the same pair whose destination buffer this one reuses: it is
    /// posted only once the sender saw that one complete (so the receiver had verified it).
    pub reuse: Option<u32>,
}

/// A workload and the layout derived from it. The messages are not to change once laid out:
/// what is derived from them ([`Workload::pairs`], [`Workload::expected`]) is kept.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// Messages; the index is the message id.
    pub msgs: Vec<Message>,
    /// Per message: offset in the receiver's destination buffer.
    pub dst_off: Vec<u64>,
    /// Per host: bytes of its destination buffer.
    pub dst_len: Vec<u64>,
    /// Per host: bytes of its source buffer.
    pub src_len: Vec<u64>,
    /// Per host: ids of the messages it sends, in posting order.
    pub outgoing: Vec<Vec<u32>>,
    /// Per message: messages waiting for it to arrive.
    pub dependents: Vec<Vec<u32>>,
    /// Per message: messages waiting for its sender-side completion (buffer reuse).
    pub reusers: Vec<Vec<u32>>,
    /// Expected per-message values for one seed (see [`Workload::expected`]): every run of an
    /// experiment shares its workload and seed, and computing them again for each run cost
    /// as much as the verification itself.
    expected: OnceLock<(u64, Arc<Vec<u32>>)>,
    /// [`Workload::pairs`], once asked for.
    pairs: OnceLock<Vec<(u32, u32)>>,
}

impl Workload {
    /// Lays out a list of messages over `hosts` hosts.
    pub fn new(hosts: u32, msgs: Vec<Message>) -> Workload {
        let h = hosts as usize;
        let mut w = Workload {
            dst_off: Vec::with_capacity(msgs.len()),
            dst_len: vec![0; h],
            src_len: vec![0; h],
            outgoing: vec![Vec::new(); h],
            dependents: vec![Vec::new(); msgs.len()],
            reusers: vec![Vec::new(); msgs.len()],
            msgs: Vec::new(),
            expected: OnceLock::new(),
            pairs: OnceLock::new(),
        };
        for (i, m) in msgs.iter().enumerate() {
            match m.reuse.filter(|&r| (r as usize) < i) {
                Some(r) => {
                    let off = w.dst_off[r as usize];
                    w.dst_off.push(off);
                    w.reusers[r as usize].push(i as u32);
                }
                None => {
                    w.dst_off.push(w.dst_len[m.dst as usize]);
                    // Keep every message 64-byte aligned in the destination.
                    w.dst_len[m.dst as usize] += (m.bytes as u64).div_ceil(64) * 64;
                }
            }
            let s = &mut w.src_len[m.src as usize];
            *s = (*s).max(m.bytes as u64 + SRC_SPREAD);
            w.outgoing[m.src as usize].push(i as u32);
            for &a in &m.after {
                if let Some(d) = w.dependents.get_mut(a as usize) {
                    d.push(i as u32);
                }
            }
        }
        w.msgs = msgs;
        w
    }

    /// Per-message values derived from the messages and `seed` alone (the expected CRC-32s),
    /// computed by `compute` once and shared by every run that asks with the same seed. The
    /// messages must not change after the first call (workloads are shared read-only).
    pub fn expected(&self, seed: u64, compute: impl FnOnce() -> Vec<u32>) -> Arc<Vec<u32>> {
        if let Some((s, v)) = self.expected.get()
            && *s == seed
        {
            return v.clone();
        }
        let v = Arc::new(compute());
        // Another thread may have set it meanwhile: the same values, so either will do.
        let _ = self.expected.set((seed, v.clone()));
        v
    }

    /// Offset of message `m` in its sender's source buffer.
    pub fn src_off(&self, m: u32) -> u64 {
        (m as u64 * 4_160) % SRC_SPREAD
    }

    /// Total payload bytes.
    pub fn total_bytes(&self) -> u64 {
        self.msgs.iter().map(|m| m.bytes as u64).sum()
    }

    /// Distinct (sender, receiver) pairs, ascending: the connections (ferroce) or QPs
    /// (baseline) needed. Worked out once: every host of every run asks, and sorting every
    /// message's pair each time cost 1.4% of a 16-host `planes`.
    pub fn pairs(&self) -> &[(u32, u32)] {
        self.pairs.get_or_init(|| {
            let mut p: Vec<(u32, u32)> = self.msgs.iter().map(|m| (m.src, m.dst)).collect();
            p.sort_unstable();
            p.dedup();
            p
        })
    }

    /// `count` messages of `bytes` from each sender to its receiver; each pair cycles
    /// through `slots` destination buffers (message `k` reuses message `k − slots`'s).
    pub fn streams(
        hosts: u32,
        pairs: &[(u32, u32)],
        bytes: u32,
        count: u32,
        slots: u32,
    ) -> Workload {
        let mut msgs = Vec::new();
        let np = pairs.len() as u32;
        for k in 0..count {
            for (j, &(src, dst)) in pairs.iter().enumerate() {
                msgs.push(Message {
                    src,
                    dst,
                    bytes,
                    after: Vec::new(),
                    reuse: (k >= slots.max(1)).then(|| (k - slots.max(1)) * np + j as u32),
                });
            }
        }
        Workload::new(hosts, msgs)
    }

    /// Every host sends `bytes` to every other host; host `i` goes through its peers in the
    /// order `i+1, i+2, ...` so receivers are not all hit by the same sender order.
    pub fn all_to_all(hosts: u32, bytes: u32) -> Workload {
        Workload::all_to_all_rounds(hosts, bytes, 1)
    }

    /// [`Workload::all_to_all`] `rounds` times over, every message posted at once: each pair
    /// streams `rounds` messages of `bytes` in order, each into a buffer of its own, so
    /// messages keep arriving all through the run (a steady state to measure between the
    /// start-up and the tail).
    pub fn all_to_all_rounds(hosts: u32, bytes: u32, rounds: u32) -> Workload {
        let mut msgs = Vec::new();
        for _ in 0..rounds.max(1) {
            for k in 1..hosts {
                for i in 0..hosts {
                    msgs.push(Message {
                        src: i,
                        dst: (i + k) % hosts,
                        bytes,
                        after: Vec::new(),
                        reuse: None,
                    });
                }
            }
        }
        Workload::new(hosts, msgs)
    }

    /// Ring all-reduce of `bytes` per host: 2(N−1) steps (reduce-scatter, then all-gather),
    /// each host sending one chunk of `bytes / N` to its successor once it has received the
    /// previous step's chunk from its predecessor.
    pub fn ring_allreduce(hosts: u32, bytes: u64) -> Workload {
        let n = hosts.max(2);
        let chunk = (bytes / n as u64).max(1) as u32;
        let mut msgs = Vec::new();
        for step in 0..2 * (n - 1) {
            for i in 0..n {
                let after = if step == 0 {
                    Vec::new()
                } else {
                    vec![(step - 1) * n + (i + n - 1) % n]
                };
                msgs.push(Message {
                    src: i,
                    dst: (i + 1) % n,
                    bytes: chunk,
                    after,
                    reuse: None,
                });
            }
        }
        Workload::new(hosts, msgs)
    }
}

/// The source pattern of host `h` (xorshift64).
pub fn pattern(seed: u64, h: u32, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    PatternGen::new(seed, h).fill(&mut v);
    v
}

/// [`pattern`] produced piece by piece, so that a host can write it into its registered
/// memory without building the whole buffer first (a 16 MB source region cost a 16 MB
/// temporary per host and run).
#[derive(Debug, Clone)]
pub struct PatternGen {
    state: u64,
}

impl PatternGen {
    /// Bytes per generator step: pieces handed to [`PatternGen::fill`] must be multiples of
    /// this, except the last.
    pub const STEP: usize = 8;

    /// The generator of host `h`'s pattern, at its first byte.
    pub fn new(seed: u64, h: u32) -> Self {
        PatternGen {
            state: (seed ^ (h as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1,
        }
    }

    /// Writes the next `buf.len()` bytes of the pattern. A length that is not a multiple of
    /// [`PatternGen::STEP`] ends the pattern (its last step is cut short).
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut steps = buf.chunks_exact_mut(Self::STEP);
        for c in &mut steps {
            c.copy_from_slice(&self.step().to_le_bytes());
        }
        let tail = steps.into_remainder();
        if !tail.is_empty() {
            let x = self.step().to_le_bytes();
            tail.copy_from_slice(&x[..tail.len()]);
        }
    }

    fn step(&mut self) -> u64 {
        let x = &mut self.state;
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }
}

/// What one host's application did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppStats {
    /// Messages this host sent that completed successfully at the sender.
    pub sent_ok: u64,
    /// Messages received and verified.
    pub received: u64,
    /// Payload bytes received and verified.
    pub bytes_verified: u64,
    /// Messages whose data did not match.
    pub verify_failed: u64,
    /// Errors the application saw (failed completions, failed connections).
    pub app_errors: u64,
    /// Time of the last message arriving here.
    pub last_rx: Ps,
}

/// Per-host application state shared by both transports.
#[derive(Debug, Clone)]
pub struct App {
    /// This host.
    pub host: u32,
    waiting: Vec<u32>,
    next_out: usize,
    ready: VecDeque<u32>,
    started: bool,
    /// Per message received here: arrival time.
    pub arrivals: Vec<(u32, Ps)>,
    /// Payload bytes the transport placed here for the first time (duplicates and packets it
    /// discarded not counted), in bins of [`PLACED_BIN`] from time 0: the goodput arriving
    /// while messages are still incomplete.
    pub placed: Vec<u64>,
    /// Counters.
    pub stats: AppStats,
}

impl App {
    /// The application of host `host`.
    pub fn new(host: u32, wl: &Workload) -> App {
        App {
            host,
            waiting: wl.outgoing[host as usize]
                .iter()
                .map(|&m| {
                    let msg = &wl.msgs[m as usize];
                    msg.after.len() as u32 + msg.reuse.is_some() as u32
                })
                .collect(),
            next_out: 0,
            ready: VecDeque::new(),
            started: false,
            arrivals: Vec::new(),
            placed: Vec::new(),
            stats: AppStats::default(),
        }
    }

    /// The transport placed `bytes` of new payload here at `now` (see [`App::placed`]).
    pub fn placed(&mut self, now: Ps, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let bin = (now / PLACED_BIN) as usize;
        if self.placed.len() <= bin {
            self.placed.resize(bin + 1, 0);
        }
        self.placed[bin] += bytes;
    }

    /// Lets the workload begin.
    pub fn start(&mut self, wl: &Workload) {
        if !self.started {
            self.started = true;
            self.refill(wl);
        }
    }

    /// Whether [`App::start`] was called.
    pub fn started(&self) -> bool {
        self.started
    }

    fn refill(&mut self, wl: &Workload) {
        // Messages are posted in order: one waiting for data holds back those after it, as a
        // collective's steps do.
        let out = &wl.outgoing[self.host as usize];
        while self.next_out < out.len() && self.waiting[self.next_out] == 0 {
            self.ready.push_back(out[self.next_out]);
            self.next_out += 1;
        }
    }

    /// The next message to post, if any.
    pub fn next_ready(&mut self) -> Option<u32> {
        self.ready.pop_front()
    }

    /// Puts a message back at the front (the transport could not take it yet).
    pub fn unready(&mut self, m: u32) {
        self.ready.push_front(m);
    }

    /// Message `m` arrived here complete (verified or not, as `ok` says).
    pub fn delivered(&mut self, wl: &Workload, m: u32, ok: bool, now: Ps) {
        let bytes = wl.msgs[m as usize].bytes as u64;
        self.arrivals.push((m, now));
        self.stats.last_rx = now;
        if ok {
            self.stats.received += 1;
            self.stats.bytes_verified += bytes;
        } else {
            self.stats.verify_failed += 1;
        }
        let out = &wl.outgoing[self.host as usize];
        for &d in &wl.dependents[m as usize] {
            if let Some(pos) = out.iter().position(|&x| x == d) {
                self.waiting[pos] = self.waiting[pos].saturating_sub(1);
            }
        }
        if self.started {
            self.refill(wl);
        }
    }

    /// Message `m`, sent by this host, completed at the sender.
    pub fn sent_done(&mut self, wl: &Workload, m: u32) {
        self.stats.sent_ok += 1;
        let out = &wl.outgoing[self.host as usize];
        for &d in &wl.reusers[m as usize] {
            if let Some(pos) = out.iter().position(|&x| x == d) {
                self.waiting[pos] = self.waiting[pos].saturating_sub(1);
            }
        }
        if self.started {
            self.refill(wl);
        }
    }

    /// All of this host's messages have been posted.
    pub fn all_posted(&self, wl: &Workload) -> bool {
        self.next_out == wl.outgoing[self.host as usize].len() && self.ready.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_allreduce_dependencies() {
        let w = Workload::ring_allreduce(4, 4096);
        assert_eq!(w.msgs.len(), 6 * 4);
        let mut a1 = App::new(1, &w);
        a1.start(&w);
        // Step 0 of host 1 is ready; step 1 waits for host 0's step-0 chunk.
        assert_eq!(a1.next_ready(), Some(1));
        assert_eq!(a1.next_ready(), None);
        a1.delivered(&w, 0, true, 5);
        assert_eq!(a1.next_ready(), Some(5));
        assert_eq!(a1.stats.bytes_verified, 1024);
    }

    #[test]
    fn all_to_all_covers_every_pair() {
        let w = Workload::all_to_all(5, 100);
        assert_eq!(w.pairs().len(), 20);
        assert!(w.msgs.iter().all(|m| m.src != m.dst));
        assert_eq!(w.dst_len[0], 4 * 128);
        let r = Workload::all_to_all_rounds(5, 100, 3);
        assert_eq!(r.msgs.len(), 3 * 20);
        assert_eq!(r.pairs(), w.pairs());
        // Each round again in the same order, each message into a buffer of its own.
        assert_eq!(r.msgs[20..40], w.msgs[..]);
        assert_eq!(r.dst_len[0], 3 * 4 * 128);
    }
}
