//! Two nodes, each a `ferroce::Context` over the model NIC, joined by the simulated lossy
//! multipath link, stepped on simulated time (quinn's `Pair` pattern). A sends to B; B accepts
//! the connection and posts receives as the harness asks.
//!
//! Every run checks: every byte intact (CRC-32 of source and destination), one completion per
//! message with the expected status, per-Tag completion order (MSN order on ordered Tags, on
//! both sides), no spurious errors, and retransmissions close to the data packets the link
//! actually lost (see [`check_retransmissions`] for the tolerance).
//!
//! `FERROCE_LONG=1` runs bigger workloads over more seeds.

use ferroce::{
    Access, ConnId, ConnState, ConnectOptions, ConnectionShape, DeviceConfig, FailReason,
    MemoryRegion, PathOptions, RecvRequest, SendRequest, TagMode, WcOpcode, WcStatus,
    WorkCompletion, WriteRequest,
};
use ferroce_proto::hsi::TableSizes;
use ferroce_proto::wire::{CmKind, CmRepr, FrameRepr, ROCEV2_UDP_PORT, TransportRepr, parse_frame};
use ferroce_sim::backend::AnyNic;
use ferroce_sim::link::{Link, LinkConfig, Side, path_of};
use ferroce_sim::pair::{self, AcceptLimits, Node};
use std::collections::{BTreeMap, HashMap, VecDeque};

thread_local! {
    /// Set by [`on_rtl`]: every node this test thread opens runs the RTL core.
    static RTL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs a test body with both nodes on the RTL backend (the fast path's Verilog under
/// Verilator) instead of the model.
fn on_rtl(body: impl FnOnce()) {
    if !ferroce_sim::rtl::Rtl::available() {
        assert!(
            ferroce_tests::missing_tools_allowed(),
            "the RTL backend is not built (Verilator missing)"
        );
        println!("SKIPPED: no RTL backend");
        return;
    }
    RTL.with(|r| r.set(true));
    body();
}

fn long() -> bool {
    std::env::var("FERROCE_LONG").is_ok_and(|v| v == "1")
}

/// Deterministic bytes.
fn fill(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Node `last` on the backend of this test (the model, or the RTL under [`on_rtl`]).
fn node(last: u8, cfg: impl FnOnce(&mut DeviceConfig)) -> Node {
    let (mac, ip) = Node::address(last);
    let mut dc = DeviceConfig::new(mac, ip);
    dc.fsn_seed = 0xabc0 + last as u32;
    cfg(&mut dc);
    let nic = if RTL.with(|r| r.get()) {
        AnyNic::rtl().expect("RTL backend")
    } else {
        AnyNic::model(TableSizes::default())
    };
    Node::new(last, nic, dc).unwrap()
}

/// What the link did to data and control frames, by direction.
#[derive(Debug, Default, Clone, Copy)]
struct Wire {
    data_sent: u64,
    data_lost: u64,
    ctrl_sent: u64,
    ctrl_lost: u64,
}

/// One data frame A put on the link.
#[derive(Debug, Clone, Copy)]
struct DataFrame {
    time: u64,
    tag: u16,
    path: u32,
    flow: u16,
    payload_len: usize,
}

/// Rewrites (`Some`) or drops (`None`) a frame a side puts on the link, before the link sees
/// it.
type Tamper = Box<dyn FnMut(Side, Vec<u8>) -> Option<Vec<u8>>>;

struct Pair {
    a: Node,
    b: Node,
    link: Link,
    now: u64,
    wire: Wire,
    a_frames: Vec<DataFrame>,
    steps: u64,
    /// Next MSN per Tag on A's connection (workloads continue where the last one stopped).
    next_msn: HashMap<u16, u32>,
    tamper: Option<Tamper>,
}

struct PairConfig {
    link: LinkConfig,
    tags: Vec<TagMode>,
    paths: u16,
    mtu: u32,
    transport: Box<dyn Fn(&mut DeviceConfig)>,
    /// B's accept limits.
    accept_limits: AcceptLimits,
    tamper: Option<Tamper>,
}

impl Default for PairConfig {
    fn default() -> Self {
        PairConfig {
            link: LinkConfig::default(),
            tags: vec![TagMode::Ordered],
            paths: 4,
            mtu: 1024,
            transport: Box::new(|_| {}),
            accept_limits: AcceptLimits::default(),
            tamper: None,
        }
    }
}

impl Pair {
    /// Two nodes, connected (A requests, B accepts).
    fn connect(cfg: PairConfig) -> Pair {
        let mut p = Pair::start(cfg);
        let established = p.run_until(5_000_000, |p| {
            p.b.conn.is_some()
                && p.a.ctx.conn_state(p.a.conn.unwrap()).unwrap() == ConnState::Ready
                && p.b.ctx.conn_state(p.b.conn.unwrap()).unwrap() == ConnState::Ready
        });
        assert!(established, "connection not established");
        p
    }

    /// Two nodes, A's connect issued (nothing has run yet).
    fn start(mut cfg: PairConfig) -> Pair {
        let a = node(1, &cfg.transport);
        let mut b = node(2, &cfg.transport);
        b.accept = cfg.accept_limits;
        let mut p = Pair {
            a,
            b,
            link: Link::new(cfg.link.clone()),
            now: 0,
            wire: Wire::default(),
            a_frames: vec![],
            steps: 0,
            next_msn: HashMap::new(),
            tamper: cfg.tamper.take(),
        };
        p.b.ctx.listen(true);
        let mut opts = ConnectOptions::new(p.a.pd, p.a.scq, p.a.rcq, p.b.mac, p.b.ip);
        opts.tags = cfg.tags.clone();
        opts.mtu = cfg.mtu;
        opts.paths = PathOptions {
            count: cfg.paths,
            ..PathOptions::default()
        };
        p.a.conn = Some(p.a.ctx.connect(&opts).unwrap());
        p
    }

    fn ca(&self) -> ConnId {
        self.a.conn.unwrap()
    }

    fn cb(&self) -> ConnId {
        self.b.conn.unwrap()
    }

    /// One step: both contexts make progress, frames go on the link, due frames are delivered,
    /// CQs are drained; then time advances to the next thing that happens.
    fn step(&mut self) {
        self.steps += 1;
        let now = self.now;
        let (tamper, wire, a_frames) = (&mut self.tamper, &mut self.wire, &mut self.a_frames);
        let mut send = |link: &mut Link, now: u64, side: Side, frame: Vec<u8>| {
            let frame = match tamper.as_mut() {
                Some(t) => match t(side, frame) {
                    Some(f) => f,
                    None => return,
                },
                None => frame,
            };
            let info = parse_frame(&frame, ROCEV2_UDP_PORT).ok().map(|f| {
                let d = match f.transport {
                    TransportRepr::Data(d) => Some((d.tag, d.flow, f.payload.len())),
                    _ => None,
                };
                (d, f.udp.src_port)
            });
            let fate = link.send(now, side, frame);
            match info {
                Some((Some((tag, flow, payload_len)), sport)) => {
                    if side == Side::A {
                        wire.data_sent += 1;
                        wire.data_lost += fate.lost as u64;
                        a_frames.push(DataFrame {
                            time: now,
                            tag,
                            path: path_of(sport, link.config().paths),
                            flow,
                            payload_len,
                        });
                    }
                }
                _ => {
                    wire.ctrl_sent += 1;
                    wire.ctrl_lost += fate.lost as u64;
                }
            }
        };
        let step = pair::step(&mut self.a, &mut self.b, &mut self.link, now, &mut send).unwrap();
        for n in [&self.a, &self.b] {
            assert!(
                n.established.last().is_none_or(|&c| n.conn == Some(c)),
                "established a connection that is not the node's"
            );
        }
        if !step.delivered {
            self.now = step.wake;
        }
    }

    /// Steps until `done` or `limit_ns` of simulated time; returns whether `done` held.
    fn run_until(&mut self, limit_ns: u64, mut done: impl FnMut(&Pair) -> bool) -> bool {
        let end = self.now + limit_ns;
        while self.now < end {
            self.step();
            if done(self) {
                return true;
            }
        }
        false
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Write,
    WriteImm,
    Send,
    SendImm,
    /// A Write with a wrong rkey: must fail with a remote access error and write nothing.
    BadWrite,
}

#[derive(Debug, Clone)]
struct Planned {
    kind: Kind,
    tag: u16,
    len: u32,
    src_off: u64,
    /// Offset in B's write region (Writes) or receive region (Sends).
    dst_off: u64,
    data: Vec<u8>,
    msn: u32,
    recv_wr: u64,
}

/// A's source region, B's write target and receive regions, and the plan.
struct Workload {
    src: MemoryRegion,
    dst: MemoryRegion,
    rbuf: MemoryRegion,
    msgs: Vec<Planned>,
    /// Receives B still has to post, per Tag, in SSN order: (wr_id, offset, len).
    recv_queue: BTreeMap<u16, VecDeque<(u64, u64, u32)>>,
}

fn sizes_for(i: usize, mtu: u32) -> u32 {
    match i % 9 {
        0 => 0,
        1 => 1,
        2 => mtu,
        3 => mtu + 1,
        4 => 3 * mtu + 17,
        5 => 700,
        6 => 8 * mtu,
        7 => 2 * mtu - 5,
        _ => 20 * mtu + 333,
    }
}

impl Workload {
    /// `n` messages over the connection's Tags, cycling Write, Send, WriteImm, SendImm, with a
    /// spread of sizes (0, 1, MTU±1, many packets).
    fn plan(p: &mut Pair, n: usize, tags: u16, seed: u64, kinds: &[Kind]) -> Workload {
        Self::plan_on(p, n, &(0..tags).collect::<Vec<u16>>(), seed, kinds)
    }

    /// [`Workload::plan`] over the given Tags only (message `i` on `tags[i % tags.len()]`).
    fn plan_on(p: &mut Pair, n: usize, tags: &[u16], seed: u64, kinds: &[Kind]) -> Workload {
        let mtu = 1024;
        let mut msgs = Vec::new();
        let (mut src_off, mut dst_off, mut r_off) = (0u64, 0u64, 0u64);
        let mut msn: BTreeMap<u16, u32> = tags
            .iter()
            .map(|&t| (t, p.next_msn.get(&t).copied().unwrap_or(0)))
            .collect();
        let mut recv_queue: BTreeMap<u16, VecDeque<(u64, u64, u32)>> = BTreeMap::new();
        for i in 0..n {
            let kind = kinds[i % kinds.len()];
            let tag = tags[i % tags.len()];
            let len = sizes_for(i / kinds.len() + i, mtu);
            let data = fill(seed ^ (i as u64) << 20, len as usize);
            let (dst, recv_wr) = match kind {
                Kind::Send | Kind::SendImm => {
                    let off = r_off;
                    r_off += len as u64 + 64;
                    let wr = 1_000_000 + i as u64;
                    recv_queue.entry(tag).or_default().push_back((wr, off, len));
                    (off, wr)
                }
                _ => {
                    let off = dst_off;
                    dst_off += len as u64 + 64;
                    (off, 0)
                }
            };
            msgs.push(Planned {
                kind,
                tag,
                len,
                src_off,
                dst_off: dst,
                data,
                msn: msn[&tag],
                recv_wr,
            });
            *msn.entry(tag).or_default() += 1;
            src_off += len as u64 + 64;
        }
        for (&t, &m) in &msn {
            p.next_msn.insert(t, m);
        }
        let src =
            p.a.ctx
                .reg_mr(p.a.pd, src_off.max(64), Access::NONE)
                .unwrap();
        let dst =
            p.b.ctx
                .reg_mr(p.b.pd, dst_off.max(64), Access::REMOTE_WRITE)
                .unwrap();
        let rbuf =
            p.b.ctx
                .reg_mr(p.b.pd, r_off.max(64), Access::LOCAL_WRITE)
                .unwrap();
        for m in &msgs {
            p.a.ctx.write_mr(&src, m.src_off, &m.data).unwrap();
        }
        Workload {
            src,
            dst,
            rbuf,
            msgs,
            recv_queue,
        }
    }

    /// B posts as many planned receives as its Tags take (the rest when completions free
    /// room).
    fn post_recvs(&mut self, p: &mut Pair) {
        let cb = p.cb();
        for (&tag, q) in self.recv_queue.iter_mut() {
            while let Some(&(wr_id, off, len)) = q.front() {
                let r = p.b.ctx.post_recv(
                    cb,
                    &RecvRequest {
                        wr_id,
                        tag,
                        sge: self.rbuf.sge(off, len),
                    },
                );
                match r {
                    Ok(()) => {
                        q.pop_front();
                    }
                    Err(ferroce::Error::RecvQueueFull) => break,
                    Err(e) => panic!("post_recv: {e}"),
                }
            }
        }
    }

    fn post_all(&self, p: &mut Pair) {
        let ca = p.ca();
        for (i, m) in self.msgs.iter().enumerate() {
            let sge = self.src.sge(m.src_off, m.len);
            let imm = 0x5000_0000 + i as u32;
            let r = match m.kind {
                Kind::Write | Kind::WriteImm | Kind::BadWrite => p.a.ctx.post_write(
                    ca,
                    &WriteRequest {
                        wr_id: i as u64,
                        tag: m.tag,
                        sge,
                        remote_addr: self.dst.addr() + m.dst_off,
                        rkey: if m.kind == Kind::BadWrite {
                            self.dst.rkey() ^ 0x80
                        } else {
                            self.dst.rkey()
                        },
                        imm: (m.kind == Kind::WriteImm).then_some(imm),
                        signaled: true,
                    },
                ),
                Kind::Send | Kind::SendImm => p.a.ctx.post_send(
                    ca,
                    &SendRequest {
                        wr_id: i as u64,
                        tag: m.tag,
                        sge,
                        imm: (m.kind == Kind::SendImm).then_some(imm),
                        signaled: true,
                        solicited: false,
                    },
                ),
            };
            r.unwrap();
        }
    }

    fn expected_recv_completions(&self) -> usize {
        self.msgs
            .iter()
            .filter(|m| matches!(m.kind, Kind::Send | Kind::SendImm | Kind::WriteImm))
            .count()
    }

    /// Posts everything and runs until every completion arrived; returns whether it did.
    fn run(&mut self, p: &mut Pair, limit_ns: u64) -> bool {
        self.post_recvs(p);
        self.post_all(p);
        let want_send = self.msgs.len();
        let want_recv = self.expected_recv_completions();
        let end = p.now + limit_ns;
        while p.now < end {
            p.step();
            self.post_recvs(p);
            if p.a.send_wcs.len() >= want_send && p.b.recv_wcs.len() >= want_recv {
                // Let trailing ACKs settle so the counters are final.
                return true;
            }
        }
        false
    }

    /// Data, statuses, counts and per-Tag order on both sides.
    fn verify(&self, p: &mut Pair, modes: &[TagMode]) {
        // Data.
        for (i, m) in self.msgs.iter().enumerate() {
            let mut got = vec![0u8; m.len as usize];
            match m.kind {
                Kind::Send | Kind::SendImm => {
                    p.b.ctx.read_mr(&self.rbuf, m.dst_off, &mut got).unwrap()
                }
                _ => p.b.ctx.read_mr(&self.dst, m.dst_off, &mut got).unwrap(),
            }
            if m.kind == Kind::BadWrite {
                assert!(got.iter().all(|&b| b == 0), "refused Write {i} wrote data");
            } else {
                assert_eq!(
                    crc32fast::hash(&got),
                    crc32fast::hash(&m.data),
                    "message {i} ({:?}, {} bytes, Tag {}) corrupted",
                    m.kind,
                    m.len,
                    m.tag
                );
            }
        }
        // Sender completions: one per message, right status.
        let mut seen = HashMap::new();
        for wc in &p.a.send_wcs {
            *seen.entry(wc.wr_id).or_insert(0) += 1;
            let m = &self.msgs[wc.wr_id as usize];
            let want = if m.kind == Kind::BadWrite {
                WcStatus::RemoteAccessError
            } else {
                WcStatus::Success
            };
            assert_eq!(wc.status, want, "send completion {wc:?}");
            assert_eq!((wc.tag, wc.msn, wc.byte_len), (m.tag, m.msn, m.len));
        }
        assert_eq!(
            seen.len(),
            self.msgs.len(),
            "one send completion per message"
        );
        assert!(seen.values().all(|&n| n == 1), "duplicate send completions");
        // Receiver completions.
        let mut rseen = HashMap::new();
        for wc in &p.b.recv_wcs {
            assert_eq!(wc.status, WcStatus::Success, "recv completion {wc:?}");
            let m = self
                .msgs
                .iter()
                .find(|m| m.tag == wc.tag && m.msn == wc.msn)
                .expect("completion for a message never sent");
            match m.kind {
                Kind::Send | Kind::SendImm => {
                    assert_eq!(wc.opcode, WcOpcode::Recv);
                    assert_eq!(wc.wr_id, m.recv_wr);
                }
                Kind::WriteImm => assert_eq!(wc.opcode, WcOpcode::RecvWriteImm),
                k => panic!("{k:?} must not surface at the receiver"),
            }
            assert_eq!(wc.byte_len, m.len);
            assert_eq!(
                wc.imm.is_some(),
                matches!(m.kind, Kind::SendImm | Kind::WriteImm)
            );
            *rseen.entry((wc.tag, wc.msn)).or_insert(0) += 1;
        }
        assert_eq!(rseen.len(), self.expected_recv_completions());
        assert!(
            rseen.values().all(|&n| n == 1),
            "duplicate recv completions"
        );
        // Order per Tag: ordered Tags surface in MSN order on both sides.
        for (t, mode) in modes.iter().enumerate() {
            if *mode != TagMode::Ordered {
                continue;
            }
            for wcs in [&p.a.send_wcs, &p.b.recv_wcs] {
                let msns: Vec<u32> = wcs
                    .iter()
                    .filter(|w| w.tag == t as u16)
                    .map(|w| w.msn)
                    .collect();
                assert!(
                    msns.windows(2).all(|w| w[0] < w[1]),
                    "ordered Tag {t} completed out of order: {msns:?}"
                );
            }
        }
    }
}

/// Count of completions on unordered Tags that came before a lower MSN of the same Tag.
fn out_of_order(wcs: &[WorkCompletion]) -> usize {
    let mut hi: HashMap<u16, u32> = HashMap::new();
    let mut n = 0;
    for w in wcs {
        let h = hi.entry(w.tag).or_insert(0);
        if w.msn < *h {
            n += 1;
        }
        *h = (*h).max(w.msn);
    }
    n
}

/// Retransmissions against the data packets the link lost. Every lost data packet must be
/// resent at least once, so `retx >= lost`. Spurious resends come from two things only: a lost
/// ACK at the end of a flow's burst (nothing later on that flow carries the information, so the
/// retransmission timer resends packets that did arrive), and a resend that is itself lost or
/// raced. We allow `lost + lost_acks / 2 + 4` (ACKs are coalesced four to one, and most lost
/// ACKs are repaired by the next ACK of the same flow), which still fails a sender that resends
/// a hole on every ACK that repeats it (that alone gives several resends per loss).
fn check_retransmissions(p: &Pair, label: &str) {
    let s = p.a.ctx.conn_stats(p.ca()).unwrap();
    let retx = s.retransmissions();
    let lost = p.wire.data_lost;
    let bound = lost + p.wire.ctrl_lost / 2 + 4;
    println!(
        "{label}: data sent {} lost {} | ctrl sent {} lost {} | retx {} (sack {}, timeout {}) \
         not-ready resends {} | timeouts {} entropy changes {} | sim {} us, {} steps",
        p.wire.data_sent,
        lost,
        p.wire.ctrl_sent,
        p.wire.ctrl_lost,
        retx,
        s.retx_sack,
        s.retx_timeout,
        s.resent_not_ready,
        s.timeouts,
        s.entropy_changes,
        p.now / 1000,
        p.steps
    );
    assert!(
        retx >= lost,
        "{label}: {lost} data packets lost but only {retx} resent"
    );
    assert!(
        retx <= bound,
        "{label}: {retx} retransmissions for {lost} lost data packets (bound {bound})"
    );
}

const ALL_KINDS: [Kind; 4] = [Kind::Write, Kind::Send, Kind::WriteImm, Kind::SendImm];

#[test]
fn connect_then_one_write_and_one_send() {
    let mut p = Pair::connect(PairConfig::default());
    let mut w = Workload::plan(&mut p, 2, 1, 1, &[Kind::Write, Kind::Send]);
    assert!(w.run(&mut p, 10_000_000), "did not complete");
    w.verify(&mut p, &[TagMode::Ordered]);
    check_retransmissions(&p, "minimal");
    assert_eq!(p.a.ctx.conn_stats(p.ca()).unwrap().retransmissions(), 0);
}

const MIXED_TAGS: [TagMode; 4] = [
    TagMode::Ordered,
    TagMode::Unordered,
    TagMode::Ordered,
    TagMode::Unordered,
];

/// The main workload over a link with the given impairments: 4 Tags (2 ordered, 2 unordered),
/// Writes, WriteImms, Sends and SendImms of 0 bytes to 20 packets.
fn mixed_run(label: &str, link: LinkConfig, n: usize, seed: u64) -> Pair {
    let mut p = Pair::connect(PairConfig {
        link,
        tags: MIXED_TAGS.to_vec(),
        ..PairConfig::default()
    });
    let mut w = Workload::plan(&mut p, n, 4, seed, &ALL_KINDS);
    assert!(w.run(&mut p, 200_000_000), "{label}: did not complete");
    w.verify(&mut p, &MIXED_TAGS);
    check_retransmissions(&p, label);
    p
}

fn lossy_link(loss: f64, seed: u64) -> LinkConfig {
    LinkConfig {
        loss,
        seed,
        ..LinkConfig::default()
    }
}

fn loss_sweep(loss: f64) {
    let (n, seeds) = if long() { (4000, 1..17) } else { (200, 1..3) };
    for seed in seeds {
        let label = format!("loss {:.0}% seed {seed}", loss * 100.0);
        let p = mixed_run(&label, lossy_link(loss, seed), n, seed);
        if loss > 0.0 {
            assert!(p.wire.data_lost > 0, "{label}: the link lost nothing");
        }
    }
}

#[test]
fn no_loss() {
    loss_sweep(0.0);
}

#[test]
fn one_percent_loss() {
    loss_sweep(0.01);
}

#[test]
fn five_percent_loss() {
    loss_sweep(0.05);
}

#[test]
fn ten_percent_loss() {
    loss_sweep(0.10);
}

#[test]
fn duplication_and_reordering() {
    let link = LinkConfig {
        loss: 0.02,
        duplicate: 0.05,
        jitter_ns: 6_000,
        path_skew_ns: 2_000,
        seed: 11,
        ..LinkConfig::default()
    };
    let n = if long() { 1500 } else { 200 };
    let p = mixed_run("dup 5% + reorder", link, n, 3);
    assert!(p.link.stats().duplicated > 0);
    // Duplicates are absorbed by the receiver's SACK state: no duplicate completion (checked
    // in verify) and no resend for them (checked by the retransmission bound).
}

#[test]
fn ecn_marks_on_one_path_shrink_that_path_only() {
    let link = LinkConfig {
        ce_mark: vec![0.0, 0.0, 0.3, 0.0],
        seed: 5,
        ..LinkConfig::default()
    };
    let n = if long() { 1500 } else { 300 };
    let p = mixed_run("ECN on path 2", link, n, 4);
    let s = p.a.ctx.conn_stats(p.ca()).unwrap();
    assert!(s.ecn_echoes > 0, "no ECN-echo reached the sender");
    assert_eq!(s.retransmissions(), 0, "ECN marks are not losses");
    let paths = p.a.ctx.paths(p.ca()).unwrap();
    let npaths = p.link.config().paths;
    let (marked, clean): (Vec<&ferroce::PathStats>, Vec<&ferroce::PathStats>) = paths
        .iter()
        .partition(|ps| path_of(ps.entropy, npaths) == 2);
    assert!(!marked.is_empty() && !clean.is_empty(), "{paths:?}");
    for m in &marked {
        assert!(m.ecn_echoes > 0);
        for c in &clean {
            assert!(
                m.window < c.window,
                "marked flow {} window {} not below clean flow {} window {}",
                m.flow,
                m.window,
                c.flow,
                c.window
            );
        }
    }
}

#[test]
fn one_path_blackholed_traffic_moves_off_it() {
    let mut p = Pair::connect(PairConfig {
        tags: MIXED_TAGS.to_vec(),
        link: lossy_link(0.01, 21),
        ..PairConfig::default()
    });
    let npaths = p.link.config().paths;
    let before = p.a.ctx.paths(p.ca()).unwrap();
    let dead = path_of(before[0].entropy, npaths);
    p.link.set_path_down(dead, true);
    let n = if long() { 1500 } else { 200 };
    let mut w = Workload::plan(&mut p, n, 4, 9, &ALL_KINDS);
    assert!(
        w.run(&mut p, 200_000_000),
        "did not complete with a blackholed path"
    );
    w.verify(&mut p, &MIXED_TAGS);
    check_retransmissions(&p, "blackhole");
    let s = p.a.ctx.conn_stats(p.ca()).unwrap();
    assert!(s.entropy_changes >= 1, "no flow changed entropy");
    let after = p.a.ctx.paths(p.ca()).unwrap();
    for ps in &after {
        if ps.packets > 0 {
            assert_ne!(
                path_of(ps.entropy, npaths),
                dead,
                "flow {} still on the blackholed path: {ps:?}",
                ps.flow
            );
        }
    }
    // Once moved, the late data avoided the dead path.
    let late = &p.a_frames[p.a_frames.len() * 3 / 4..];
    let on_dead = late.iter().filter(|f| f.path == dead).count();
    assert_eq!(
        on_dead, 0,
        "{on_dead} of the last data frames still took the dead path"
    );
}

#[test]
fn ordered_tags_hold_back_unordered_tags_do_not() {
    // Loss makes later messages finish first; verify() checks MSN order on the ordered Tags,
    // and here we check the unordered Tags really did complete out of order, on both sides.
    let n = if long() { 1500 } else { 300 };
    let p = mixed_run("order modes", lossy_link(0.05, 8), n, 6);
    let unordered = |w: &[WorkCompletion]| -> Vec<WorkCompletion> {
        w.iter().filter(|c| c.tag % 2 == 1).copied().collect()
    };
    let ooo_send = out_of_order(&unordered(&p.a.send_wcs));
    let ooo_recv = out_of_order(&unordered(&p.b.recv_wcs));
    println!("unordered Tags out of order: send side {ooo_send}, receive side {ooo_recv}");
    assert!(ooo_send > 0 && ooo_recv > 0);
}

/// Posts a 64 KiB Write on Tag 0, optionally a fence, then a small Write on Tag 1; returns
/// the time A sent the second Write's first packet and the time the first Write completed.
fn fence_run(fenced: bool) -> (u64, u64) {
    let mut p = Pair::connect(PairConfig {
        tags: vec![TagMode::Ordered, TagMode::Ordered],
        ..PairConfig::default()
    });
    let big = fill(77, 65536);
    let small = fill(78, 1000);
    let src = p.a.ctx.reg_mr(p.a.pd, 128 * 1024, Access::NONE).unwrap();
    let dst =
        p.b.ctx
            .reg_mr(p.b.pd, 128 * 1024, Access::REMOTE_WRITE)
            .unwrap();
    p.a.ctx.write_mr(&src, 0, &big).unwrap();
    p.a.ctx.write_mr(&src, 65536, &small).unwrap();
    let ca = p.ca();
    let write = |wr_id, tag, off, len| WriteRequest {
        wr_id,
        tag,
        sge: src.sge(off, len),
        remote_addr: dst.addr() + off,
        rkey: dst.rkey(),
        imm: None,
        signaled: true,
    };
    p.a.ctx.post_write(ca, &write(0, 0, 0, 65536)).unwrap();
    if fenced {
        p.a.ctx.fence(ca).unwrap();
    }
    p.a.ctx.post_write(ca, &write(1, 1, 65536, 1000)).unwrap();
    let mut first_done = None;
    let end = p.now + 50_000_000;
    while p.now < end && p.a.send_wcs.len() < 2 {
        // The completion surfaces during the step at `t` (step() then advances the clock).
        let t = p.now;
        p.step();
        if first_done.is_none() && p.a.send_wcs.iter().any(|c| c.wr_id == 0) {
            first_done = Some(t);
        }
    }
    assert_eq!(p.a.send_wcs.len(), 2);
    assert!(p.a.send_wcs.iter().all(|c| c.status == WcStatus::Success));
    let second_start = p.a_frames.iter().find(|f| f.tag == 1).unwrap().time;
    let mut got = vec![0u8; 65536 + 1000];
    p.b.ctx.read_mr(&dst, 0, &mut got).unwrap();
    assert_eq!(crc32fast::hash(&got[..65536]), crc32fast::hash(&big));
    assert_eq!(crc32fast::hash(&got[65536..]), crc32fast::hash(&small));
    (second_start, first_done.unwrap())
}

#[test]
fn fences_hold_later_operations_until_earlier_ones_complete() {
    let (second_start, first_done) = fence_run(true);
    assert!(
        second_start >= first_done,
        "fenced Write started at {second_start}, before the earlier Write completed at \
         {first_done}"
    );
    // Without the fence the second Write (another Tag) starts at once: the check above can
    // fail.
    let (second_start, first_done) = fence_run(false);
    assert!(second_start < first_done, "{second_start} vs {first_done}");
}

#[test]
fn bad_rkey_write_fails_and_the_connection_stays_usable() {
    let mut p = Pair::connect(PairConfig {
        tags: MIXED_TAGS.to_vec(),
        ..PairConfig::default()
    });
    let kinds = [
        Kind::Write,
        Kind::BadWrite,
        Kind::Send,
        Kind::WriteImm,
        Kind::SendImm,
    ];
    let mut w = Workload::plan(&mut p, 40, 4, 12, &kinds);
    assert!(w.run(&mut p, 50_000_000));
    w.verify(&mut p, &MIXED_TAGS);
    let errors =
        p.a.send_wcs
            .iter()
            .filter(|c| c.status == WcStatus::RemoteAccessError)
            .count();
    assert_eq!(errors, 8, "every bad Write, and only those, failed");
    assert_eq!(p.a.ctx.conn_state(p.ca()).unwrap(), ConnState::Ready);
    // A later batch on the same connection goes through.
    let mut w2 = Workload::plan(&mut p, 20, 4, 13, &ALL_KINDS);
    p.a.send_wcs.clear();
    p.b.recv_wcs.clear();
    assert!(w2.run(&mut p, 50_000_000));
    w2.verify(&mut p, &MIXED_TAGS);
}

#[test]
fn all_paths_dead_fails_the_connection_after_the_timeout() {
    let timeout = 2_000_000;
    let mut p = Pair::connect(PairConfig {
        transport: Box::new(move |c| c.transport.connection_timeout_ns = timeout),
        ..PairConfig::default()
    });
    for path in 0..p.link.config().paths {
        p.link.set_path_down(path, true);
    }
    let mut w = Workload::plan(&mut p, 6, 1, 2, &[Kind::Write, Kind::Send]);
    w.post_recvs(&mut p);
    w.post_all(&mut p);
    let start = p.now;
    let failed = p.run_until(4 * timeout, |p| !p.a.failed.is_empty());
    assert!(
        failed,
        "connection still hanging after {} us",
        4 * timeout / 1000
    );
    let elapsed = p.now - start;
    assert!(
        (timeout..2 * timeout).contains(&elapsed),
        "failed after {elapsed} ns, timeout {timeout}"
    );
    assert_eq!(p.a.failed, vec![(p.ca(), FailReason::AllPathsDead)]);
    assert_eq!(
        p.a.ctx.conn_state(p.ca()).unwrap(),
        ConnState::Failed(FailReason::AllPathsDead)
    );
    // Every request completed, with a flush error (none of them was acknowledged).
    p.step();
    assert_eq!(p.a.send_wcs.len(), 6, "{:?}", p.a.send_wcs);
    assert!(p.a.send_wcs.iter().all(|c| c.status == WcStatus::Flushed));
    let s = p.a.ctx.conn_stats(p.ca()).unwrap();
    // Every path went quiet at once: that is not blamed on any one path (no flow is declared
    // dead, which would stop it carrying new data); the connection timeout decided.
    assert!(s.timeouts > 0 && s.paths_died == 0, "{s:?}");
    // Posting now is a typed error.
    let src = p.a.ctx.reg_mr(p.a.pd, 64, Access::NONE).unwrap();
    let r = p.a.ctx.post_send(
        p.ca(),
        &SendRequest {
            wr_id: 9,
            tag: 0,
            sge: src.sge(0, 8),
            imm: None,
            signaled: true,
            solicited: false,
        },
    );
    assert_eq!(
        r,
        Err(ferroce::Error::NotConnected(Some(FailReason::AllPathsDead)))
    );
}

#[test]
fn sends_before_the_receive_is_posted_back_off_and_complete() {
    let mut p = Pair::connect(PairConfig::default());
    let mut w = Workload::plan(&mut p, 4, 1, 3, &[Kind::Send]);
    w.post_all(&mut p);
    // B posts nothing for 300 us: the Sends are refused as "receiver not ready".
    p.run_until(300_000, |_| false);
    assert!(p.a.send_wcs.is_empty());
    let s = p.a.ctx.conn_stats(p.ca()).unwrap();
    assert!(s.rnr_naks > 0);
    w.post_recvs(&mut p);
    let end = p.now + 20_000_000;
    while p.now < end && p.b.recv_wcs.len() < 4 {
        p.step();
    }
    let done = p.run_until(1_000_000, |p| p.a.send_wcs.len() == 4);
    assert!(done, "Sends did not complete once receives were posted");
    w.verify(&mut p, &[TagMode::Ordered]);
    let s = p.a.ctx.conn_stats(p.ca()).unwrap();
    assert!(s.resent_not_ready > 0);
    assert_eq!(
        s.retransmissions(),
        0,
        "not-ready resends are not losses: {s:?}"
    );
    // The backoff kept the refusals few: 300 us with a 20 us first delay doubling to 1 ms.
    assert!(s.rnr_naks < 40, "{s:?}");
}

#[test]
fn the_receivers_rate_hint_caps_the_sender() {
    // B offers 10 Gb/s of inbound capacity: A must pace to it.
    let mut p = Pair::connect(PairConfig {
        transport: Box::new(|c| c.inbound_capacity_mbps = 10_000),
        ..PairConfig::default()
    });
    let mut w = Workload::plan(&mut p, 1, 1, 4, &[Kind::Write]);
    let len = 1 << 20;
    w.msgs[0].len = len;
    w.msgs[0].data = fill(5, len as usize);
    let src = p.a.ctx.reg_mr(p.a.pd, len as u64, Access::NONE).unwrap();
    let dst =
        p.b.ctx
            .reg_mr(p.b.pd, len as u64, Access::REMOTE_WRITE)
            .unwrap();
    p.a.ctx.write_mr(&src, 0, &w.msgs[0].data).unwrap();
    let start = p.now;
    p.a.ctx
        .post_write(
            p.ca(),
            &WriteRequest {
                wr_id: 0,
                tag: 0,
                sge: src.sge(0, len),
                remote_addr: dst.addr(),
                rkey: dst.rkey(),
                imm: None,
                signaled: true,
            },
        )
        .unwrap();
    assert!(p.run_until(100_000_000, |p| !p.a.send_wcs.is_empty()));
    let elapsed = (p.now - start) as f64;
    let s = p.a.ctx.conn_stats(p.ca()).unwrap();
    assert_eq!(s.rate_hint_mbps, 10_000);
    // Wire bytes over 10 Gb/s (1.25 bytes/ns).
    let wire = (len as f64 / 1024.0).ceil() * 1124.0;
    let ideal = wire / 1.25;
    println!("1 MiB at a 10 Gb/s hint: {elapsed:.0} ns, ideal {ideal:.0} ns");
    assert!(
        elapsed > 0.9 * ideal && elapsed < 1.5 * ideal,
        "took {elapsed} ns, ideal {ideal} ns"
    );
    let mut got = vec![0u8; len as usize];
    p.b.ctx.read_mr(&dst, 0, &mut got).unwrap();
    assert_eq!(crc32fast::hash(&got), crc32fast::hash(&w.msgs[0].data));
}

#[test]
fn both_directions_at_once_over_a_lossy_link() {
    let mut p = Pair::connect(PairConfig {
        tags: MIXED_TAGS.to_vec(),
        link: lossy_link(0.03, 31),
        ..PairConfig::default()
    });
    let n = if long() { 1000 } else { 120 };
    let mut w = Workload::plan(&mut p, n, 4, 17, &ALL_KINDS);
    // B writes back to A at the same time: 40 Writes of 5 KB on its Tag 2 (ordered), and 40
    // Sends on Tag 3 into receives A posts.
    let b_src = p.b.ctx.reg_mr(p.b.pd, 400 * 1024, Access::NONE).unwrap();
    let a_dst =
        p.a.ctx
            .reg_mr(
                p.a.pd,
                400 * 1024,
                Access::REMOTE_WRITE | Access::LOCAL_WRITE,
            )
            .unwrap();
    let back: Vec<Vec<u8>> = (0..80).map(|i| fill(900 + i, 5000)).collect();
    for (i, d) in back.iter().enumerate() {
        p.b.ctx.write_mr(&b_src, i as u64 * 5000, d).unwrap();
    }
    let (ca, cb) = (p.ca(), p.cb());
    for i in 0..40u64 {
        p.b.ctx
            .post_write(
                cb,
                &WriteRequest {
                    wr_id: 10_000 + i,
                    tag: 2,
                    sge: b_src.sge(i * 5000, 5000),
                    remote_addr: a_dst.addr() + i * 5000,
                    rkey: a_dst.rkey(),
                    imm: None,
                    signaled: true,
                },
            )
            .unwrap();
    }
    let mut a_recv_posted = 0u64;
    let mut b_sends_posted = 0u64;
    w.post_recvs(&mut p);
    w.post_all(&mut p);
    let end = p.now + 200_000_000;
    let want = (w.msgs.len(), w.expected_recv_completions());
    while p.now < end {
        // A keeps receives posted for B's Sends (16 per Tag at most), B posts its Sends.
        while a_recv_posted < 40 {
            let r = p.a.ctx.post_recv(
                ca,
                &RecvRequest {
                    wr_id: 20_000 + a_recv_posted,
                    tag: 3,
                    sge: a_dst.sge(200_000 + a_recv_posted * 5000, 5000),
                },
            );
            if r == Err(ferroce::Error::RecvQueueFull) {
                break;
            }
            r.unwrap();
            a_recv_posted += 1;
        }
        while b_sends_posted < 40 {
            let i = 40 + b_sends_posted;
            p.b.ctx
                .post_send(
                    cb,
                    &SendRequest {
                        wr_id: 10_000 + i,
                        tag: 3,
                        sge: b_src.sge(i * 5000, 5000),
                        imm: None,
                        signaled: true,
                        solicited: false,
                    },
                )
                .unwrap();
            b_sends_posted += 1;
        }
        p.step();
        w.post_recvs(&mut p);
        let a_side = p.a.send_wcs.len() >= want.0 && p.b.recv_wcs.len() >= want.1;
        let b_side = p.b.send_wcs.len() >= 80 && p.a.recv_wcs.len() >= 40;
        if a_side && b_side {
            break;
        }
    }
    w.verify(&mut p, &MIXED_TAGS);
    assert_eq!(p.b.send_wcs.len(), 80);
    assert!(p.b.send_wcs.iter().all(|c| c.status == WcStatus::Success));
    let msns: Vec<u32> =
        p.b.send_wcs
            .iter()
            .filter(|c| c.tag == 2)
            .map(|c| c.msn)
            .collect();
    assert_eq!(msns, (0..40).collect::<Vec<_>>(), "B's ordered Tag 2");
    assert_eq!(p.a.recv_wcs.len(), 40);
    // Tag 3 is unordered: every receive completes once, in any order.
    let mut got: Vec<(u64, u32, u16)> =
        p.a.recv_wcs
            .iter()
            .map(|wc| (wc.wr_id, wc.byte_len, wc.tag))
            .collect();
    got.sort();
    let want: Vec<(u64, u32, u16)> = (0..40).map(|k| (20_000 + k, 5000, 3)).collect();
    assert_eq!(got, want);
    for i in 0..40usize {
        let mut got = vec![0u8; 5000];
        p.a.ctx.read_mr(&a_dst, i as u64 * 5000, &mut got).unwrap();
        assert_eq!(
            crc32fast::hash(&got),
            crc32fast::hash(&back[i]),
            "B's Write {i}"
        );
        p.a.ctx
            .read_mr(&a_dst, 200_000 + i as u64 * 5000, &mut got)
            .unwrap();
        assert_eq!(
            crc32fast::hash(&got),
            crc32fast::hash(&back[40 + i]),
            "B's Send {i}"
        );
    }
    let sb = p.b.ctx.conn_stats(cb).unwrap();
    println!(
        "B->A: retx {} (sack {}, timeout {})",
        sb.retransmissions(),
        sb.retx_sack,
        sb.retx_timeout
    );
}

/// A terminal NAK can be lost, so it cannot be the only carrier of "your packet was consumed
/// but refused": every ACK also carries the flow's count of terminal refusals, and a sender
/// that learned fewer from NAKs fails every request the ACK newly covers. This runs 200
/// bad-rkey Writes among 200 good ones over a 10 % lossy link (NAKs and ACKs are lost too) and
/// checks that no refused Write is ever reported successful, and that the price (good Writes
/// failed because they shared an ACK with a refusal whose NAK was lost) stays small.
#[test]
fn lost_terminal_naks_hide_remote_access_errors() {
    let mut p = Pair::connect(PairConfig {
        tags: MIXED_TAGS.to_vec(),
        link: lossy_link(0.10, 3),
        ..PairConfig::default()
    });
    let mut w = Workload::plan(&mut p, 400, 4, 12, &[Kind::Write, Kind::BadWrite]);
    assert!(w.run(&mut p, 200_000_000));
    let msgs = &w.msgs;
    let wcs = &p.a.send_wcs;
    let of = |kind: Kind| {
        wcs.iter()
            .filter(move |c| msgs[c.wr_id as usize].kind == kind)
    };
    assert_eq!(of(Kind::BadWrite).count(), 200);
    assert_eq!(of(Kind::Write).count(), 200);
    let hidden = of(Kind::BadWrite)
        .filter(|c| c.status == WcStatus::Success)
        .count();
    let unknown = of(Kind::BadWrite)
        .filter(|c| c.status == WcStatus::RemoteErrorUnknown)
        .count();
    let good_failed: Vec<WcStatus> = of(Kind::Write)
        .filter(|c| c.status != WcStatus::Success)
        .map(|c| c.status)
        .collect();
    let s = p.a.ctx.conn_stats(p.ca()).unwrap();
    println!(
        "refused Writes reported as successful: {hidden} of 200; reported with an unknown \
         reason (NAK lost): {unknown}; good Writes failed conservatively: {} of 200 \
         (refusals learned from ACKs: {}, terminal NAKs: {}, ctrl frames lost: {})",
        good_failed.len(),
        s.lost_terminal_naks,
        s.terminal_naks,
        p.wire.ctrl_lost
    );
    assert_eq!(
        hidden, 0,
        "{hidden} refused Writes were reported as successful"
    );
    assert!(
        of(Kind::BadWrite).all(|c| matches!(
            c.status,
            WcStatus::RemoteAccessError | WcStatus::RemoteErrorUnknown
        )),
        "a refused Write completed with an unrelated status"
    );
    assert!(
        s.lost_terminal_naks > 0 && unknown > 0,
        "the link lost no terminal NAK: the test proves nothing"
    );
    // Good Writes fail only with the unknown-reason status, and only a few: at most 10 % of
    // them (each lost NAK costs the requests its covering ACK newly acknowledges).
    assert!(
        good_failed
            .iter()
            .all(|&st| st == WcStatus::RemoteErrorUnknown),
        "good Writes failed with {good_failed:?}"
    );
    assert!(
        good_failed.len() <= 20,
        "{} of 200 good Writes failed",
        good_failed.len()
    );
    // Nothing refused was written, everything good arrived intact.
    for (i, m) in w.msgs.iter().enumerate() {
        let mut got = vec![0u8; m.len as usize];
        p.b.ctx.read_mr(&w.dst, m.dst_off, &mut got).unwrap();
        if m.kind == Kind::BadWrite {
            assert!(got.iter().all(|&b| b == 0), "refused Write {i} wrote data");
        } else {
            assert_eq!(got, m.data, "Write {i} corrupted");
        }
    }
}

/// A graceful disconnect over a lossy link: both sides report it (the request or the reply
/// may be lost and is resent), neither reports a failure, the connection takes no more work,
/// and both ends can then be freed.
#[test]
fn disconnect_closes_both_sides() {
    let mut p = Pair::connect(PairConfig {
        link: lossy_link(0.3, 5),
        ..PairConfig::default()
    });
    let mut w = Workload::plan(&mut p, 4, 1, 2, &[Kind::Write, Kind::Send]);
    assert!(w.run(&mut p, 100_000_000), "did not complete");
    w.verify(&mut p, &[TagMode::Ordered]);
    let (ca, cb) = (p.ca(), p.cb());
    p.a.ctx.disconnect(ca).unwrap();
    assert!(
        p.run_until(100_000_000, |p| p.a.disconnected.contains(&ca)
            && p.b.disconnected.contains(&cb)),
        "the disconnect did not finish on both sides"
    );
    assert!(p.a.failed.is_empty() && p.b.failed.is_empty());
    assert!(matches!(
        p.a.ctx.disconnect(ca),
        Err(ferroce::Error::NotConnected(_))
    ));
    assert!(matches!(
        p.a.ctx.conn_state(ca),
        Ok(ConnState::Failed(FailReason::Disconnected))
    ));
    p.a.ctx.destroy_connection(ca).unwrap();
    p.b.ctx.destroy_connection(cb).unwrap();
    assert!(p.a.ctx.conn_state(ca).is_err());
}

/// Rebuilds a frame with its CM message changed by `f` (headers, lengths and ICRC
/// recomputed); other frames pass unchanged.
fn rewrite_cm(frame: Vec<u8>, f: impl FnOnce(&mut CmRepr)) -> Vec<u8> {
    let Ok(parsed) = parse_frame(&frame, ROCEV2_UDP_PORT) else {
        return frame;
    };
    let TransportRepr::Cm(mut cm) = parsed.transport else {
        return frame;
    };
    f(&mut cm);
    FrameRepr {
        transport: TransportRepr::Cm(cm),
        ..parsed.repr()
    }
    .emit()
}

/// The CM message of a frame, if it carries one.
fn cm_of(frame: &[u8]) -> Option<CmRepr> {
    match parse_frame(frame, ROCEV2_UDP_PORT).ok()?.transport {
        TransportRepr::Cm(c) => Some(c),
        _ => None,
    }
}

/// `n` Tags, ordered and unordered in a pattern.
fn pattern_modes(n: usize) -> Vec<TagMode> {
    // Exactly one of each pair (2k, 2k+1) is ordered; which one changes every 8 Tags.
    (0..n)
        .map(|t| {
            if (t ^ (t >> 3)) & 1 == 0 {
                TagMode::Ordered
            } else {
                TagMode::Unordered
            }
        })
        .collect()
}

/// The acceptor grants 2 of 8 paths, an MTU of 1024 of 4096 and 4 of 16 Tags: the requester
/// adopts that shape before it is ready (a Write it posted on a Tag that negotiation removed is
/// flushed, and posting there is a typed error), and several MiB then arrive intact over a
/// lossy link on 2 flows in packets of at most 1024 bytes.
#[test]
fn the_acceptor_grants_fewer_paths_a_smaller_mtu_and_fewer_tags() {
    let modes = pattern_modes(16);
    let mut p = Pair::start(PairConfig {
        link: lossy_link(0.02, 41),
        tags: modes.clone(),
        paths: 8,
        mtu: 4096,
        accept_limits: AcceptLimits {
            max_paths: Some(2),
            max_mtu: Some(1024),
            max_tags: Some(4),
        },
        ..PairConfig::default()
    });
    let ca = p.ca();
    let offered = p.a.ctx.connection_shape(ca).unwrap();
    assert_eq!(
        offered,
        ConnectionShape {
            paths: 8,
            mtu: 4096,
            tags: modes.clone()
        }
    );
    // Posted while connecting, on Tag 10: negotiation removes that Tag.
    let early = p.a.ctx.reg_mr(p.a.pd, 8192, Access::NONE).unwrap();
    let rbuf = p.a.ctx.reg_mr(p.a.pd, 8192, Access::LOCAL_WRITE).unwrap();
    let write_on = |tag, wr_id| WriteRequest {
        wr_id,
        tag,
        sge: early.sge(0, 8192),
        remote_addr: 0x1000,
        rkey: 0x105,
        imm: None,
        signaled: true,
    };
    p.a.ctx.post_write(ca, &write_on(10, 77)).unwrap();
    p.a.ctx
        .post_recv(
            ca,
            &RecvRequest {
                wr_id: 78,
                tag: 12,
                sge: rbuf.sge(0, 64),
            },
        )
        .unwrap();
    let established = p.run_until(5_000_000, |p| {
        p.b.conn.is_some()
            && p.a.ctx.conn_state(p.a.conn.unwrap()).unwrap() == ConnState::Ready
            && p.b.ctx.conn_state(p.b.conn.unwrap()).unwrap() == ConnState::Ready
    });
    assert!(established, "connection not established");
    let granted = ConnectionShape {
        paths: 2,
        mtu: 1024,
        tags: modes[..4].to_vec(),
    };
    assert_eq!(p.a.ctx.connection_shape(ca).unwrap(), granted);
    assert_eq!(p.b.ctx.connection_shape(p.cb()).unwrap(), granted);
    assert_eq!(p.b.requests.len(), 1);
    assert_eq!(
        (p.b.requests[0].paths, p.b.requests[0].mtu),
        (8, 4096),
        "the request shows the offer"
    );
    assert_eq!(p.b.requests[0].tags, modes);
    assert_eq!(p.a.ctx.paths(ca).unwrap().len(), 2);
    // What was posted on the removed Tags was flushed.
    let mut flushed: Vec<(u64, WcStatus)> =
        p.a.send_wcs
            .iter()
            .chain(&p.a.recv_wcs)
            .map(|w| (w.wr_id, w.status))
            .collect();
    flushed.sort_by_key(|f| f.0);
    assert_eq!(
        flushed,
        vec![(77, WcStatus::Flushed), (78, WcStatus::Flushed)]
    );
    p.a.send_wcs.clear();
    p.a.recv_wcs.clear();
    assert_eq!(
        p.a.ctx.post_write(ca, &write_on(10, 79)),
        Err(ferroce::Error::InvalidTag(10))
    );
    assert_eq!(
        p.a.ctx.post_write(ca, &write_on(4, 79)),
        Err(ferroce::Error::InvalidTag(4))
    );
    // Several MiB over the granted shape.
    let n = if long() { 3000 } else { 1000 };
    let mut w = Workload::plan(&mut p, n, 4, 42, &ALL_KINDS);
    let bytes: u64 = w.msgs.iter().map(|m| m.len as u64).sum();
    assert!(bytes > 3 << 20, "only {bytes} bytes");
    assert!(w.run(&mut p, 500_000_000), "did not complete");
    w.verify(&mut p, &modes[..4]);
    check_retransmissions(&p, "negotiated 2 paths, MTU 1024, 4 Tags");
    assert!(p.wire.data_lost > 0, "the link lost nothing");
    assert!(
        p.a_frames
            .iter()
            .all(|f| f.flow < 2 && f.payload_len <= 1024)
    );
    assert!(p.a_frames.iter().any(|f| f.payload_len == 1024));
    assert!(p.a_frames.iter().any(|f| f.flow == 1));
    println!("{bytes} bytes in {n} messages");
}

/// A Reply that grants more than was offered, zero paths or Tags, or an MTU below the
/// minimum is a protocol error: the requester fails the connection with
/// `FailReason::InvalidReply` (never established, posting is a typed error) and tells the
/// acceptor with a Reject, which fails its side too.
#[test]
fn a_reply_breaking_the_negotiation_fails_the_connection() {
    type Edit = fn(&mut CmRepr);
    let cases: [(&str, Edit); 7] = [
        ("more paths", |c| c.path_count = 9),
        ("zero paths", |c| c.path_count = 0),
        ("more Tags", |c| c.tag_count = 17),
        ("zero Tags", |c| c.tag_count = 0),
        ("larger MTU", |c| c.mtu = 8192),
        ("MTU below the minimum", |c| {
            c.mtu = ferroce::MIN_MTU as u16 - 1
        }),
        ("zero MTU", |c| c.mtu = 0),
    ];
    for (label, edit) in cases {
        let tamper: Tamper = Box::new(move |side, frame| {
            if side == Side::B && cm_of(&frame).is_some_and(|c| c.kind == CmKind::Reply) {
                Some(rewrite_cm(frame, edit))
            } else {
                Some(frame)
            }
        });
        let mut p = Pair::start(PairConfig {
            tags: pattern_modes(16),
            paths: 8,
            mtu: 4096,
            tamper: Some(tamper),
            ..PairConfig::default()
        });
        let ca = p.ca();
        assert!(
            p.run_until(20_000_000, |p| !p.a.failed.is_empty()
                && !p.b.failed.is_empty()),
            "{label}: no failure on both sides"
        );
        assert_eq!(p.a.failed, vec![(ca, FailReason::InvalidReply)], "{label}");
        assert_eq!(
            p.a.ctx.conn_state(ca).unwrap(),
            ConnState::Failed(FailReason::InvalidReply),
            "{label}"
        );
        assert!(p.a.established.is_empty(), "{label}: established anyway");
        assert_eq!(p.b.failed, vec![(p.cb(), FailReason::Rejected)], "{label}");
        assert!(p.a.ctx.stats().cm_invalid_replies >= 1);
        let src = p.a.ctx.reg_mr(p.a.pd, 64, Access::NONE).unwrap();
        assert_eq!(
            p.a.ctx.post_send(
                ca,
                &SendRequest {
                    wr_id: 1,
                    tag: 0,
                    sge: src.sge(0, 8),
                    imm: None,
                    signaled: true,
                    solicited: false,
                },
            ),
            Err(ferroce::Error::NotConnected(Some(FailReason::InvalidReply))),
            "{label}"
        );
        // More Replies (the acceptor resends) change nothing.
        p.run_until(1_000_000, |_| false);
        assert_eq!(p.a.failed.len(), 1, "{label}");
    }
}

/// 200 Tags, half ordered and half unordered in a pattern, over a lossy link that also loses
/// CM packets (and, on purpose, the first copy of every TagModes page): the
/// acceptor sees all 200 modes exactly, and ordered Tags complete in MSN order while unordered
/// ones overtake, on Tags above 64 too.
#[test]
fn two_hundred_tags_over_a_lossy_link() {
    let modes = pattern_modes(200);
    assert_eq!(
        modes.iter().filter(|m| **m == TagMode::Ordered).count(),
        100
    );
    // Drop the first copy of each page; the request's first copy goes through without its
    // pages, so the acceptor must wait for the resend.
    let mut seen_pages = std::collections::HashSet::new();
    let tamper: Tamper = Box::new(move |side, frame| {
        match cm_of(&frame) {
            Some(c) if side == Side::A && c.kind == CmKind::TagModes => {
                assert_eq!(c.tag_count, 200);
                if seen_pages.insert(c.path_count) {
                    return None;
                }
            }
            _ => {}
        }
        Some(frame)
    });
    let n = if long() { 4000 } else { 1400 };
    let mut p = Pair::start(PairConfig {
        link: lossy_link(0.05, 77),
        tags: modes.clone(),
        tamper: Some(tamper),
        ..PairConfig::default()
    });
    let established = p.run_until(20_000_000, |p| {
        p.b.conn.is_some()
            && p.a.ctx.conn_state(p.a.conn.unwrap()).unwrap() == ConnState::Ready
            && p.b.ctx.conn_state(p.b.conn.unwrap()).unwrap() == ConnState::Ready
    });
    assert!(established, "connection not established");
    let cm_stats = p.b.ctx.stats();
    println!(
        "acceptor: {} requests set aside for missing pages, {} pages dropped; ctrl lost {}",
        cm_stats.cm_requests_incomplete, cm_stats.cm_tag_pages_dropped, p.wire.ctrl_lost
    );
    assert!(cm_stats.cm_requests_incomplete >= 1);
    assert_eq!(cm_stats.cm_tag_pages_dropped, 0);
    assert_eq!(p.b.requests.len(), 1);
    assert_eq!(p.b.requests[0].tag_count, 200);
    assert_eq!(
        p.b.requests[0].tags, modes,
        "the acceptor's view of the modes"
    );
    let shape = ConnectionShape {
        paths: 4,
        mtu: 1024,
        tags: modes.clone(),
    };
    assert_eq!(p.b.ctx.connection_shape(p.cb()).unwrap(), shape);
    assert_eq!(p.a.ctx.connection_shape(p.ca()).unwrap(), shape);
    let mut w = Workload::plan(&mut p, n, 200, 19, &ALL_KINDS);
    assert!(w.run(&mut p, 500_000_000), "did not complete");
    // Data, statuses, and MSN order on every ordered Tag (Tags above 64 included).
    w.verify(&mut p, &modes);
    check_retransmissions(&p, "200 Tags");
    assert!(p.wire.ctrl_lost > 0, "the link lost no control packet");
    assert!(
        p.a.send_wcs.iter().any(|c| c.tag >= 192),
        "the last page's Tags carried traffic"
    );
    // Then many messages per Tag on the last 16 Tags (pages 2 and 3, 8 ordered, 8
    // unordered), so that loss makes later messages of a Tag finish first: the unordered
    // ones must overtake, the ordered ones must not (verify).
    p.a.send_wcs.clear();
    p.b.recv_wcs.clear();
    let high: Vec<u16> = (184..200).collect();
    let mut w2 = Workload::plan_on(
        &mut p,
        if long() { 1500 } else { 400 },
        &high,
        23,
        &ALL_KINDS,
    );
    assert!(w2.run(&mut p, 500_000_000), "high Tags did not complete");
    w2.verify(&mut p, &modes);
    let unordered = |wcs: &[WorkCompletion]| -> Vec<WorkCompletion> {
        wcs.iter()
            .filter(|c| modes[c.tag as usize] == TagMode::Unordered)
            .copied()
            .collect()
    };
    let ooo_send = out_of_order(&unordered(&p.a.send_wcs));
    let ooo_recv = out_of_order(&unordered(&p.b.recv_wcs));
    println!("unordered Tags 184-199 out of order: send side {ooo_send}, receive side {ooo_recv}");
    assert!(ooo_send > 0 && ooo_recv > 0);
}

// ---- The same tests with both nodes on the RTL backend. ----

#[test]
fn rtl_connect_then_one_write_and_one_send() {
    on_rtl(connect_then_one_write_and_one_send);
}

#[test]
fn rtl_five_percent_loss() {
    on_rtl(five_percent_loss);
}

#[test]
fn rtl_ten_percent_loss() {
    on_rtl(ten_percent_loss);
}

#[test]
fn rtl_duplication_and_reordering() {
    on_rtl(duplication_and_reordering);
}

#[test]
fn rtl_one_path_blackholed_traffic_moves_off_it() {
    on_rtl(one_path_blackholed_traffic_moves_off_it);
}

#[test]
fn rtl_ordered_tags_hold_back_unordered_tags_do_not() {
    on_rtl(ordered_tags_hold_back_unordered_tags_do_not);
}

#[test]
fn rtl_bad_rkey_write_fails_and_the_connection_stays_usable() {
    on_rtl(bad_rkey_write_fails_and_the_connection_stays_usable);
}

#[test]
fn rtl_sends_before_the_receive_is_posted_back_off_and_complete() {
    on_rtl(sends_before_the_receive_is_posted_back_off_and_complete);
}

#[test]
fn rtl_both_directions_at_once_over_a_lossy_link() {
    on_rtl(both_directions_at_once_over_a_lossy_link);
}

#[test]
fn rtl_no_loss() {
    on_rtl(no_loss);
}

#[test]
fn rtl_one_percent_loss() {
    on_rtl(one_percent_loss);
}

#[test]
fn rtl_ecn_marks_on_one_path_shrink_that_path_only() {
    on_rtl(ecn_marks_on_one_path_shrink_that_path_only);
}

#[test]
fn rtl_fences_hold_later_operations_until_earlier_ones_complete() {
    on_rtl(fences_hold_later_operations_until_earlier_ones_complete);
}

#[test]
fn rtl_all_paths_dead_fails_the_connection_after_the_timeout() {
    on_rtl(all_paths_dead_fails_the_connection_after_the_timeout);
}

#[test]
fn rtl_the_receivers_rate_hint_caps_the_sender() {
    on_rtl(the_receivers_rate_hint_caps_the_sender);
}

#[test]
fn rtl_lost_terminal_naks_hide_remote_access_errors() {
    on_rtl(lost_terminal_naks_hide_remote_access_errors);
}

#[test]
fn rtl_disconnect_closes_both_sides() {
    on_rtl(disconnect_closes_both_sides);
}

#[test]
fn rtl_the_acceptor_grants_fewer_paths_a_smaller_mtu_and_fewer_tags() {
    on_rtl(the_acceptor_grants_fewer_paths_a_smaller_mtu_and_fewer_tags);
}

#[test]
fn rtl_two_hundred_tags_over_a_lossy_link() {
    on_rtl(two_hundred_tags_over_a_lossy_link);
}
