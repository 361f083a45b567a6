//! `ferroce write-bw`, `ferroce write-lat` and `ferroce send-bw`: perftest-style benchmarks
//! (`ib_write_bw`, `ib_write_lat`, `ib_send_bw`) between two `ferroce::Context`s over the
//! simulated lossy multipath link, stepped on simulated time.
//!
//! Every figure is simulated time. Every byte moved is checked (unless `--no-verify`): each
//! iteration's source is filled with a pattern derived from the seed and the iteration number,
//! and when the iteration completes the destination slot it went to is read back and its CRC-32
//! compared with the source's, before the slot is used again. A mismatch makes the command fail.

use crate::Backend;
use anyhow::{Context as _, bail, ensure};
use ferroce::{
    Access, ConnState, ConnectOptions, ConnectionStats, Context, DeviceConfig, MemoryRegion,
    PathOptions, RecvRequest, SendRequest, WcOpcode, WcStatus, WorkCompletion, WriteRequest,
};
use ferroce_proto::hsi::TableSizes;
use ferroce_sim::backend::AnyNic;
use ferroce_sim::link::{Link, LinkConfig, LinkStats};
use ferroce_sim::pair::{Node, Pair};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// perftest's MB: 2^20 bytes.
const MB: f64 = (1u64 << 20) as f64;
/// Largest message size (`--all` goes up to it, as perftest's `-a` does).
const MAX_SIZE: u32 = 1 << 23;
/// With `--all`, iterations per size are capped so that one size moves at most this much.
const ALL_BYTES_PER_SIZE: u64 = 16 << 20;
/// Memory of one side's slot ring (source or destination) is capped at this; the number of
/// outstanding requests is then limited to the slots that fit.
const MAX_RING_BYTES: u64 = 256 << 20;
/// Messages per Tag the RTL core keeps in progress (`CAP_MSG_SLOTS` of the RTL).
const RTL_MSG_SLOTS: u32 = 8;
/// Largest `--tx-depth` (the library's default send queue depth).
const MAX_TX_DEPTH: u32 = 4096;
/// Simulated time without any completion after which a run is declared stuck.
const STUCK_NS: u64 = 200_000_000;
/// perftest's peak bandwidth looks at every span of requests; spans are limited to this many
/// requests so long runs stay linear.
const PEAK_SPAN: usize = 2048;

/// Which benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// `ib_write_bw`: a stream of RDMA Writes, `tx-depth` outstanding.
    WriteBw,
    /// `ib_write_lat`: RDMA Write ping-pong, one outstanding.
    WriteLat,
    /// `ib_send_bw`: a stream of Sends into posted receives, `tx-depth` outstanding.
    SendBw,
}

impl Test {
    fn title(self) -> &'static str {
        match self {
            Test::WriteBw => "RDMA_Write BW Test",
            Test::WriteLat => "RDMA_Write Latency Test",
            Test::SendBw => "Send BW Test",
        }
    }

    fn is_bw(self) -> bool {
        self != Test::WriteLat
    }
}

/// Options of the perftest-style commands (perftest's names where it has one).
#[derive(clap::Args, Clone, Debug)]
pub struct PerfArgs {
    /// Message size in bytes.
    #[arg(short = 's', long, default_value_t = 65536)]
    pub size: u32,
    /// Iterations (messages) per size [default: 1024 for the bw tests, i.e. 64 MiB at the
    /// default size; 1000 for write-lat].
    #[arg(short = 'n', long)]
    pub iters: Option<u64>,
    /// Run every size from 2 to 2^23 bytes (perftest's -a); iterations per size are capped so
    /// that one size moves at most 16 MiB (at least 8 iterations).
    #[arg(short = 'a', long)]
    pub all: bool,
    /// Outstanding requests [default: 128 for the bw tests; write-lat takes only 1].
    #[arg(short = 't', long)]
    pub tx_depth: Option<u32>,
    /// Probability that the link loses a frame (each direction, each path).
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Number of paths of the link, and flows of the connection.
    #[arg(long, default_value_t = 4)]
    pub paths: u16,
    /// Probability that a frame is CE-marked, on every path.
    #[arg(long, default_value_t = 0.0)]
    pub ecn: f64,
    /// Link rate in Gb/s (serialisation on each port; also the NICs' line rate).
    #[arg(long, default_value_t = 100.0)]
    pub rate_gbps: f64,
    /// One-way delay of path 0 in microseconds (path k adds 0.7 us x k, plus up to 1.5 us of
    /// jitter).
    #[arg(long, default_value_t = 2.0)]
    pub delay_us: f64,
    /// Payload bytes per packet.
    #[arg(long, default_value_t = 4096)]
    pub mtu: u32,
    /// Seed of the link's randomness and of the data patterns.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fast-path backend.
    #[arg(long, value_enum, default_value_t = Backend::Model)]
    pub backend: Backend,
    /// Do not check the data (it is checked by default: CRC-32 of every byte moved).
    #[arg(long)]
    pub no_verify: bool,
    /// Always show the progress line on stderr [default: shown when stderr is a terminal and
    /// the run takes more than a second].
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,
    /// Never show the progress line.
    #[arg(long, overrides_with = "progress")]
    pub no_progress: bool,
}

/// Settings resolved from [`PerfArgs`] for one test.
#[derive(Debug, Clone)]
struct Plan {
    test: Test,
    backend: Backend,
    sizes: Vec<(u32, u64)>,
    depth: u32,
    verify: bool,
    link: LinkConfig,
    paths: u16,
    mtu: u32,
    rate_gbps: f64,
    seed: u64,
}

fn plan(test: Test, a: &PerfArgs) -> anyhow::Result<Plan> {
    ensure!((0.0..1.0).contains(&a.loss), "--loss must be in [0, 1)");
    ensure!((0.0..=1.0).contains(&a.ecn), "--ecn must be in [0, 1]");
    ensure!((1..=256).contains(&a.paths), "--paths must be 1..=256");
    ensure!(
        (1..=ferroce_proto::hsi::MAX_PAYLOAD_LEN).contains(&a.mtu),
        "--mtu must be 1..=8192"
    );
    ensure!(
        a.rate_gbps.is_finite() && a.rate_gbps >= 0.1,
        "--rate-gbps must be at least 0.1"
    );
    ensure!(
        a.delay_us.is_finite() && a.delay_us >= 0.0,
        "--delay-us must be >= 0"
    );
    ensure!(
        (1..=MAX_SIZE).contains(&a.size),
        "--size must be 1..={MAX_SIZE}"
    );
    let iters = a.iters.unwrap_or(if test.is_bw() { 1024 } else { 1000 });
    ensure!(iters >= 1, "--iters must be at least 1");
    let depth = match test {
        Test::WriteLat => {
            let d = a.tx_depth.unwrap_or(1);
            ensure!(
                d == 1,
                "write-lat is a ping-pong with one request outstanding: --tx-depth must be 1"
            );
            1
        }
        // The RTL core keeps 8 messages per Tag in progress (its message-slot table).
        _ if a.backend == Backend::Rtl => a.tx_depth.unwrap_or(RTL_MSG_SLOTS),
        _ => a.tx_depth.unwrap_or(128),
    };
    ensure!(
        a.backend == Backend::Model || depth <= RTL_MSG_SLOTS,
        "the RTL backend keeps {RTL_MSG_SLOTS} messages per Tag in progress: --tx-depth must be at most {RTL_MSG_SLOTS}"
    );
    ensure!(
        (1..=MAX_TX_DEPTH).contains(&depth),
        "--tx-depth must be 1..={MAX_TX_DEPTH}"
    );
    let sizes = if a.all {
        (1..=23)
            .map(|k| {
                let s = 1u32 << k;
                let cap = (ALL_BYTES_PER_SIZE / s as u64).max(8);
                (s, iters.min(cap))
            })
            .collect()
    } else {
        vec![(a.size, iters)]
    };
    let link = LinkConfig {
        paths: a.paths as u32,
        delay_ns: (a.delay_us * 1e3).round() as u64,
        loss: a.loss,
        ce_mark: vec![a.ecn; a.paths as usize],
        ns_per_byte: 8.0 / a.rate_gbps,
        seed: a.seed,
        ..LinkConfig::default()
    };
    Ok(Plan {
        test,
        backend: a.backend,
        sizes,
        depth,
        verify: !a.no_verify,
        link,
        paths: a.paths,
        mtu: a.mtu,
        rate_gbps: a.rate_gbps,
        seed: a.seed,
    })
}

// ---- the two-node simulation ----

/// A node of the run: the library on the chosen backend, tables sized for `tx-depth`.
fn node(last: u8, p: &Plan) -> anyhow::Result<Node> {
    let (mac, ip) = Node::address(last);
    let mut dc = DeviceConfig::new(mac, ip);
    dc.fsn_seed = (p.seed as u32).wrapping_mul(0x9e37_79b9) ^ last as u32;
    let mbps = (p.rate_gbps * 1e3).round().clamp(100.0, u32::MAX as f64) as u32;
    dc.transport.line_rate_mbps = mbps;
    dc.inbound_capacity_mbps = mbps;
    // The default tables keep 8 messages per Tag in progress and 16 posted receives per
    // Tag; a benchmark with `tx-depth` outstanding needs that many of both.
    let slots = p.depth.next_power_of_two();
    let sizes = TableSizes {
        connections: 16,
        tags: 16,
        msg_slots: slots.max(8),
        recv_depth: slots.max(16),
        ..TableSizes::default()
    };
    let nic = match p.backend {
        Backend::Model => AnyNic::model(sizes),
        Backend::Rtl => AnyNic::rtl()?,
    };
    Ok(Node::new(last, nic, dc)?)
}

/// Two nodes (A requests, B accepts) joined by the link, on simulated time
/// ([`ferroce_sim::pair::Pair`]), with when the last idle step asked to be called next.
struct Sim {
    pair: Pair,
    wake: u64,
}

impl Sim {
    fn connect(p: &Plan) -> anyhow::Result<Sim> {
        let (a, b) = (node(1, p)?, node(2, p)?);
        let mut opts = ConnectOptions::new(a.pd, a.scq, a.rcq, b.mac, b.ip);
        opts.mtu = p.mtu;
        opts.paths = PathOptions {
            count: p.paths,
            ..PathOptions::default()
        };
        let pair = Pair::connect(a, b, Link::new(p.link.clone()), opts)?;
        let mut s = Sim { pair, wake: 0 };
        let end = 50_000_000;
        loop {
            if !s.step()? {
                s.advance();
            }
            if let Some(cb) = s.pair.b.conn
                && s.pair.a.ctx.conn_state(s.pair.a.conn())? == ConnState::Ready
                && s.pair.b.ctx.conn_state(cb)? == ConnState::Ready
            {
                return Ok(s);
            }
            ensure!(s.pair.now < end, "connection not established after 50 ms");
        }
    }

    /// Both contexts make progress, frames go on the link, due frames are delivered, CQs are
    /// drained, all at the current time. Returns whether anything arrived (frames or
    /// completions): then the caller reacts and steps again at the same time; otherwise it
    /// calls [`Sim::advance`]. A failed or disconnected connection ends the run.
    fn step(&mut self) -> anyhow::Result<bool> {
        let step = self.pair.step()?;
        for n in [&self.pair.a, &self.pair.b] {
            if let Some((c, r)) = n.failed.first() {
                bail!("connection {} failed: {r:?}", c.id());
            }
            if let Some(c) = n.disconnected.first() {
                bail!("connection {} disconnected", c.id());
            }
        }
        self.wake = step.wake;
        Ok(step.delivered || step.completions > 0)
    }

    /// Lets trailing ACKs settle (up to 50 us of simulated time) so the counters are close
    /// to final.
    fn settle(&mut self) -> anyhow::Result<()> {
        let until = self.pair.now + 50_000;
        while self.pair.now < until && self.pair.link.next_delivery().is_some() {
            if !self.step()? {
                self.advance();
            }
        }
        Ok(())
    }

    /// Moves time to the next thing that happens (after an idle [`Sim::step`]).
    fn advance(&mut self) {
        self.pair.now = self.wake.max(self.pair.now + 1);
    }
}

// ---- data patterns and verification ----

/// The bytes of iteration `iter` from side `side` (xorshift64, 8 bytes per step).
fn pattern(seed: u64, side: u64, iter: u64, buf: &mut [u8]) {
    let mut x = (seed ^ side << 56 ^ iter.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

/// What the checks found.
#[derive(Debug, Default, Clone, Copy)]
struct Verify {
    bytes: u64,
    checked: u64,
    failed: u64,
}

impl Verify {
    /// Reads `len` bytes at `off` of `mr` on `ctx` and compares their CRC-32 with `want`.
    fn check(
        &mut self,
        ctx: &mut Context<AnyNic>,
        mr: &MemoryRegion,
        off: u64,
        want: u32,
        buf: &mut [u8],
        what: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        ctx.read_mr(mr, off, buf)?;
        let got = crc32fast::hash(buf);
        self.checked += 1;
        self.bytes += buf.len() as u64;
        if got != want {
            self.failed += 1;
            if self.failed <= 5 {
                eprintln!(
                    "verification failed: {} (CRC-32 {got:#010x}, expected {want:#010x})",
                    what()
                );
            }
        }
        Ok(())
    }
}

// ---- progress line ----

struct Progress {
    forced: bool,
    auto: bool,
    start: Instant,
    last: Option<Instant>,
    shown: bool,
}

impl Progress {
    fn new(a: &PerfArgs) -> Progress {
        Progress {
            forced: a.progress,
            auto: !a.no_progress && !a.progress && std::io::stderr().is_terminal(),
            start: Instant::now(),
            last: None,
            shown: false,
        }
    }

    fn tick(&mut self, size: u32, done: u64, total: u64, sim_ns: u64) {
        if !self.forced && !self.auto {
            return;
        }
        let now = Instant::now();
        if !self.forced && now - self.start < Duration::from_secs(1) {
            return;
        }
        if self
            .last
            .is_some_and(|l| now - l < Duration::from_millis(200))
        {
            return;
        }
        self.last = Some(now);
        self.shown = true;
        eprint!(
            "\r {size} bytes: {done}/{total} iterations ({:.0}%), simulated {:.1} us, wall {:.1} s   ",
            done as f64 * 100.0 / total.max(1) as f64,
            sim_ns as f64 / 1e3,
            (now - self.start).as_secs_f64()
        );
    }

    fn clear(&mut self) {
        if self.shown {
            eprint!("\r{:78}\r", "");
            self.shown = false;
        }
    }
}

// ---- the runs ----

/// One size's timing.
struct Run {
    size: u32,
    iters: u64,
    /// Per iteration: simulated time posted and completed (ns).
    posted: Vec<u64>,
    completed: Vec<u64>,
    /// Write-lat: half round trips (ns).
    lat: Vec<u64>,
}

/// Counters summed over every size.
#[derive(Debug, Default)]
struct Totals {
    verify: Verify,
    data_packets: u64,
    retx_sack: u64,
    retx_timeout: u64,
    timeouts: u64,
    ecn_echoes: u64,
    link: LinkStats,
    sim_ns: u64,
}

impl Totals {
    fn add_conn(&mut self, s: &ConnectionStats) {
        self.data_packets += s.packets_sent;
        self.retx_sack += s.retx_sack;
        self.retx_timeout += s.retx_timeout;
        self.timeouts += s.timeouts;
        self.ecn_echoes += s.ecn_echoes;
    }

    fn add_sim(&mut self, sim: &Sim, t0: u64) -> anyhow::Result<()> {
        self.add_conn(&sim.pair.a.ctx.conn_stats(sim.pair.a.conn())?);
        self.add_conn(&sim.pair.b.ctx.conn_stats(sim.pair.b.conn())?);
        let l = sim.pair.link.stats();
        self.link.sent += l.sent;
        self.link.lost += l.lost;
        self.link.marked += l.marked;
        self.sim_ns += sim.pair.now - t0;
        Ok(())
    }
}

fn check_wc(wc: &WorkCompletion, side: &str) -> anyhow::Result<()> {
    ensure!(
        wc.status == WcStatus::Success,
        "{side}: request {} completed with {:?}",
        wc.wr_id,
        wc.status
    );
    Ok(())
}

/// Destination/source ring: slots of `size` bytes, as many as requests may be outstanding.
fn ring_slots(size: u32, iters: u64, depth: u32) -> u64 {
    (depth as u64)
        .min(iters)
        .min((MAX_RING_BYTES / size as u64).max(1))
}

/// write-bw and send-bw: a stream of `iters` messages with up to `depth` outstanding.
fn run_bw(
    p: &Plan,
    size: u32,
    iters: u64,
    tot: &mut Totals,
    prog: &mut Progress,
) -> anyhow::Result<Run> {
    let mut sim = Sim::connect(p)?;
    let t_start = sim.pair.now;
    let send = p.test == Test::SendBw;
    let slots = ring_slots(size, iters, p.depth);
    let ring = slots * size as u64;
    let src = sim.pair.a.ctx.reg_mr(sim.pair.a.pd, ring, Access::NONE)?;
    let dst_access = if send {
        Access::LOCAL_WRITE
    } else {
        Access::REMOTE_WRITE
    };
    let dst = sim.pair.b.ctx.reg_mr(sim.pair.b.pd, ring, dst_access)?;
    let (ca, cb) = (sim.pair.a.conn(), sim.pair.b.conn());
    let mut buf = vec![0u8; size as usize];
    if !p.verify {
        // One pattern per slot, written once.
        for s in 0..slots {
            pattern(p.seed, 0, s, &mut buf);
            sim.pair.a.ctx.write_mr(&src, s * size as u64, &buf)?;
        }
    }
    // Expected CRC-32 per iteration (kept until the iteration is checked).
    let mut crc = vec![0u32; iters as usize];
    let mut slot_busy = vec![false; slots as usize];
    let mut posted = vec![0u64; iters as usize];
    let mut completed = vec![0u64; iters as usize];
    let (mut n_posted, mut n_done) = (0u64, 0u64);
    // Send-bw: receives posted (receive k takes Send k), and receives checked.
    let (mut n_recv_posted, mut n_recv_done) = (0u64, 0u64);
    let mut last_progress = sim.pair.now;
    loop {
        if send {
            while n_recv_posted < iters && n_recv_posted - n_recv_done < slots {
                let k = n_recv_posted;
                sim.pair.b.ctx.post_recv(
                    cb,
                    &RecvRequest {
                        wr_id: k,
                        tag: 0,
                        sge: dst.sge((k % slots) * size as u64, size),
                    },
                )?;
                n_recv_posted += 1;
            }
        }
        while n_posted < iters && n_posted - n_done < p.depth as u64 {
            let i = n_posted;
            let slot = i % slots;
            if slot_busy[slot as usize] {
                break;
            }
            let off = slot * size as u64;
            if p.verify {
                pattern(p.seed, 0, i, &mut buf);
                crc[i as usize] = crc32fast::hash(&buf);
                sim.pair.a.ctx.write_mr(&src, off, &buf)?;
            }
            let sge = src.sge(off, size);
            if send {
                sim.pair.a.ctx.post_send(
                    ca,
                    &SendRequest {
                        wr_id: i,
                        tag: 0,
                        sge,
                        imm: None,
                        signaled: true,
                        solicited: false,
                    },
                )?;
            } else {
                sim.pair.a.ctx.post_write(
                    ca,
                    &WriteRequest {
                        wr_id: i,
                        tag: 0,
                        sge,
                        remote_addr: dst.addr() + off,
                        rkey: dst.rkey(),
                        imm: None,
                        signaled: true,
                    },
                )?;
            }
            slot_busy[slot as usize] = true;
            posted[i as usize] = sim.pair.now;
            n_posted += 1;
        }
        if n_done == iters && (!send || n_recv_done == iters) {
            break;
        }
        let busy = sim.step()?;
        let now = sim.pair.now;
        for wc in std::mem::take(&mut sim.pair.a.send_wcs) {
            check_wc(&wc, "sender")?;
            let i = wc.wr_id;
            ensure!(
                i < n_posted,
                "completion for a request never posted: {wc:?}"
            );
            completed[i as usize] = now;
            n_done += 1;
            last_progress = now;
            if send {
                // The source slot is free again; the receiver checks the data.
                slot_busy[(i % slots) as usize] = false;
            } else {
                if p.verify {
                    let off = (i % slots) * size as u64;
                    tot.verify.check(
                        &mut sim.pair.b.ctx,
                        &dst,
                        off,
                        crc[i as usize],
                        &mut buf,
                        || format!("Write {i} at offset {off} of the receiver's region"),
                    )?;
                }
                slot_busy[(i % slots) as usize] = false;
            }
        }
        for wc in std::mem::take(&mut sim.pair.b.recv_wcs) {
            check_wc(&wc, "receiver")?;
            ensure!(
                send && wc.opcode == WcOpcode::Recv,
                "unexpected receive completion {wc:?}"
            );
            let k = wc.wr_id;
            ensure!(
                k == n_recv_done,
                "receive {k} completed out of order (expected {n_recv_done})"
            );
            ensure!(
                wc.byte_len == size,
                "receive {k}: {} bytes, expected {size}",
                wc.byte_len
            );
            if p.verify {
                let off = (k % slots) * size as u64;
                tot.verify.check(
                    &mut sim.pair.b.ctx,
                    &dst,
                    off,
                    crc[k as usize],
                    &mut buf,
                    || format!("Send {k} in receive buffer at offset {off}"),
                )?;
            }
            n_recv_done += 1;
        }
        sim.pair.b.send_wcs.clear();
        sim.pair.a.recv_wcs.clear();
        ensure!(
            now - last_progress < STUCK_NS,
            "no completion for {} ms of simulated time ({n_done} of {iters} done)",
            STUCK_NS / 1_000_000
        );
        prog.tick(size, n_done, iters, now - t_start);
        if !busy {
            sim.advance();
        }
    }
    sim.settle()?;
    tot.add_sim(&sim, t_start)?;
    Ok(Run {
        size,
        iters,
        posted,
        completed,
        lat: Vec::new(),
    })
}

/// write-lat: A writes to B, B writes back when A's Write has landed, `iters` times.
///
/// perftest's `ib_write_lat` notices arrival by polling the last byte of the buffer, which is
/// only sound when packets are placed in order. ferroce places packets as they arrive over
/// several paths, so the last byte may land first; each side therefore sends a WriteImm and
/// notices arrival by its receive completion, which comes once every byte is placed.
fn run_lat(
    p: &Plan,
    size: u32,
    iters: u64,
    tot: &mut Totals,
    prog: &mut Progress,
) -> anyhow::Result<Run> {
    let mut sim = Sim::connect(p)?;
    let t_start = sim.pair.now;
    let len = size as u64;
    let a_src = sim.pair.a.ctx.reg_mr(sim.pair.a.pd, len, Access::NONE)?;
    let a_dst = sim
        .pair
        .a
        .ctx
        .reg_mr(sim.pair.a.pd, len, Access::REMOTE_WRITE)?;
    let b_src = sim.pair.b.ctx.reg_mr(sim.pair.b.pd, len, Access::NONE)?;
    let b_dst = sim
        .pair
        .b
        .ctx
        .reg_mr(sim.pair.b.pd, len, Access::REMOTE_WRITE)?;
    let (ca, cb) = (sim.pair.a.conn(), sim.pair.b.conn());
    let mut buf = vec![0u8; size as usize];
    for (ctx, mr, side) in [
        (&mut sim.pair.a.ctx, &a_src, 0),
        (&mut sim.pair.b.ctx, &b_src, 1),
    ] {
        pattern(p.seed, side, 0, &mut buf);
        ctx.write_mr(mr, 0, &buf)?;
    }
    let mut lat = Vec::with_capacity(iters as usize);
    let mut posted = Vec::with_capacity(iters as usize);
    let mut completed = Vec::with_capacity(iters as usize);
    // Expected CRC-32 of the Write in flight to B (ping) and back to A (pong).
    let (mut ping_crc, mut pong_crc) = (0u32, 0u32);
    let mut i = 0u64;
    let mut t0 = 0u64;
    let mut in_flight = false;
    let mut last_progress = sim.pair.now;
    loop {
        if !in_flight {
            if i == iters {
                break;
            }
            if p.verify {
                pattern(p.seed, 0, i, &mut buf);
                ping_crc = crc32fast::hash(&buf);
                sim.pair.a.ctx.write_mr(&a_src, 0, &buf)?;
            }
            sim.pair.a.ctx.post_write(
                ca,
                &WriteRequest {
                    wr_id: i,
                    tag: 0,
                    sge: a_src.sge(0, size),
                    remote_addr: b_dst.addr(),
                    rkey: b_dst.rkey(),
                    imm: Some(i as u32),
                    signaled: true,
                },
            )?;
            t0 = sim.pair.now;
            in_flight = true;
        }
        let busy = sim.step()?;
        let now = sim.pair.now;
        for wc in std::mem::take(&mut sim.pair.a.send_wcs)
            .iter()
            .chain(&std::mem::take(&mut sim.pair.b.send_wcs))
        {
            check_wc(wc, "sender")?;
        }
        for wc in std::mem::take(&mut sim.pair.b.recv_wcs) {
            check_wc(&wc, "B")?;
            ensure!(
                wc.opcode == WcOpcode::RecvWriteImm && wc.imm == Some(i as u32),
                "B: unexpected completion {wc:?} in iteration {i}"
            );
            ensure!(
                wc.byte_len == size,
                "B: {} bytes, expected {size}",
                wc.byte_len
            );
            if p.verify {
                tot.verify
                    .check(&mut sim.pair.b.ctx, &b_dst, 0, ping_crc, &mut buf, || {
                        format!("ping {i} in B's buffer")
                    })?;
                pattern(p.seed, 1, i, &mut buf);
                pong_crc = crc32fast::hash(&buf);
                sim.pair.b.ctx.write_mr(&b_src, 0, &buf)?;
            }
            sim.pair.b.ctx.post_write(
                cb,
                &WriteRequest {
                    wr_id: i,
                    tag: 0,
                    sge: b_src.sge(0, size),
                    remote_addr: a_dst.addr(),
                    rkey: a_dst.rkey(),
                    imm: Some(i as u32),
                    signaled: true,
                },
            )?;
        }
        for wc in std::mem::take(&mut sim.pair.a.recv_wcs) {
            check_wc(&wc, "A")?;
            ensure!(
                wc.opcode == WcOpcode::RecvWriteImm && wc.imm == Some(i as u32),
                "A: unexpected completion {wc:?} in iteration {i}"
            );
            ensure!(
                wc.byte_len == size,
                "A: {} bytes, expected {size}",
                wc.byte_len
            );
            if p.verify {
                tot.verify
                    .check(&mut sim.pair.a.ctx, &a_dst, 0, pong_crc, &mut buf, || {
                        format!("pong {i} in A's buffer")
                    })?;
            }
            posted.push(t0);
            completed.push(now);
            lat.push((now - t0) / 2);
            last_progress = now;
            in_flight = false;
            i += 1;
        }
        ensure!(
            now - last_progress < STUCK_NS,
            "no round trip for {} ms of simulated time ({i} of {iters} done)",
            STUCK_NS / 1_000_000
        );
        prog.tick(size, i, iters, now - t_start);
        if !busy {
            sim.advance();
        }
    }
    sim.settle()?;
    tot.add_sim(&sim, t_start)?;
    Ok(Run {
        size,
        iters,
        posted,
        completed,
        lat,
    })
}

// ---- reporting ----

const DASHES: &str =
    "---------------------------------------------------------------------------------------";

fn banner(p: &Plan) {
    let l = &p.link;
    println!("{DASHES}");
    println!("                    {}", p.test.title());
    match p.backend {
        Backend::Model => {
            println!(" Backend         : model (executable fast-path model, ferroce_proto::model)")
        }
        Backend::Rtl => {
            println!(" Backend         : rtl (the fast path's Verilog under Verilator)")
        }
    }
    println!(" Nodes           : 2 (A -> B), 1 connection, 1 ordered Tag, host library ferroce");
    println!(
        " Paths           : {}\t\tLink rate      : {} Gb/s",
        p.paths, p.rate_gbps
    );
    println!(
        " Mtu             : {}[B]\tOne-way delay  : {:.2} us (+{:.1} us per path, jitter <= {:.1} us)",
        p.mtu,
        l.delay_ns as f64 / 1e3,
        l.path_skew_ns as f64 / 1e3,
        l.jitter_ns as f64 / 1e3
    );
    println!(
        " Loss            : {:.2}%\t\tECN CE marks   : {:.2}% on every path",
        l.loss * 100.0,
        p.link.ce_mark.first().copied().unwrap_or(0.0) * 100.0
    );
    println!(" TX depth        : {}", p.depth);
    println!(
        " Data check      : {}",
        if p.verify {
            "CRC-32 of every byte of every iteration"
        } else {
            "off (--no-verify)"
        }
    );
    println!(" Seed            : {}", p.seed);
    println!(" Times           : SIMULATED time (the simulation's ns clock), not wall-clock");
    if p.test == Test::WriteLat {
        println!(" Latency         : half the round trip; arrival seen by WriteImm completion");
    }
    println!("{DASHES}");
    if p.test.is_bw() {
        println!(
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
        );
    } else {
        println!(
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
        );
    }
}

/// perftest's peak: the best `size / ((completed[j] - posted[i]) / (j - i + 1))` over spans
/// `i..=j` (of at most [`PEAK_SPAN`] requests).
fn peak_bw(r: &Run) -> f64 {
    let n = r.posted.len();
    let mut best = f64::INFINITY;
    for i in 0..n {
        for j in i..n.min(i + PEAK_SPAN) {
            let t = r.completed[j].saturating_sub(r.posted[i]) as f64 / (j - i + 1) as f64;
            if t > 0.0 && t < best {
                best = t;
            }
        }
    }
    r.size as f64 / (best * 1e-9) / MB
}

fn bw_row(r: &Run) -> f64 {
    let t0 = r.posted.iter().copied().min().unwrap_or(0);
    let t1 = r.completed.iter().copied().max().unwrap_or(0);
    let secs = (t1.saturating_sub(t0)).max(1) as f64 * 1e-9;
    let avg = r.size as f64 * r.iters as f64 / secs / MB;
    let rate = r.iters as f64 / secs / 1e6;
    println!(
        " {:<10} {:<10}       {:<10.2}         {:<10.2}           {:.6}",
        r.size,
        r.iters,
        peak_bw(r),
        avg,
        rate
    );
    avg
}

fn lat_row(r: &Run) {
    let mut v: Vec<f64> = r.lat.iter().map(|&ns| ns as f64 / 1e3).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len().max(1);
    let at = |q: f64| v[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
    let avg = v.iter().sum::<f64>() / n as f64;
    let var = v.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / n as f64;
    println!(
        " {:<7} {:<10}     {:<7.2}        {:<7.2}      {:<7.2}            {:<7.2}        {:<7.2}         {:<7.2}                {:<7.2}",
        r.size,
        r.iters,
        v[0],
        v[n - 1],
        v[n / 2],
        avg,
        var.sqrt(),
        at(0.99),
        at(0.999)
    );
}

/// Runs one of the perftest-style commands and prints its report. Fails (non-zero exit) when
/// the data did not verify.
pub fn run(test: Test, args: &PerfArgs) -> anyhow::Result<()> {
    let p = plan(test, args)?;
    let wall = Instant::now();
    let mut prog = Progress::new(args);
    let mut tot = Totals::default();
    banner(&p);
    let mut bytes = 0u64;
    let mut bw_sum = 0.0f64;
    for &(size, iters) in &p.sizes {
        let r = if test.is_bw() {
            run_bw(&p, size, iters, &mut tot, &mut prog)
        } else {
            run_lat(&p, size, iters, &mut tot, &mut prog)
        };
        prog.clear();
        let r = r.with_context(|| format!("{} bytes", size))?;
        // write-lat moves the data both ways.
        bytes += size as u64 * iters * if test.is_bw() { 1 } else { 2 };
        if test.is_bw() {
            bw_sum = bw_sum.max(bw_row(&r));
        } else {
            lat_row(&r);
        }
    }
    println!("{DASHES}");
    let v = tot.verify;
    if p.verify {
        println!(
            " data verified        : {} ({} bytes in {} checks, CRC-32)",
            if v.failed == 0 { "yes" } else { "NO" },
            v.bytes,
            v.checked
        );
    } else {
        println!(" data verified        : no (--no-verify)");
    }
    let retx = tot.retx_sack + tot.retx_timeout;
    println!(
        " packets sent         : {} data packets + {} retransmitted; {} frames on the link",
        tot.data_packets, retx, tot.link.sent
    );
    println!(
        " packets lost on link : {} of {} frames ({:.2}%)",
        tot.link.lost,
        tot.link.sent,
        tot.link.lost as f64 * 100.0 / tot.link.sent.max(1) as f64
    );
    println!(
        " retransmissions      : {} (SACK {}, timeout {})",
        retx, tot.retx_sack, tot.retx_timeout
    );
    println!(" timeouts             : {}", tot.timeouts);
    println!(
        " ECN-echoes           : {} ({} frames CE-marked)",
        tot.ecn_echoes, tot.link.marked
    );
    if test.is_bw() {
        let link_mbs = p.rate_gbps * 1e9 / 8.0 / MB;
        println!(
            " goodput / link rate  : {:.3} (best BW average {:.2} MB/sec of {:.2} MB/sec)",
            bw_sum / link_mbs,
            bw_sum,
            link_mbs
        );
    }
    println!(
        " moved                : {} bytes ({:.1} MiB) in {:.1} us simulated, {:.2} s wall-clock",
        bytes,
        bytes as f64 / MB,
        tot.sim_ns as f64 / 1e3,
        wall.elapsed().as_secs_f64()
    );
    println!("{DASHES}");
    ensure!(
        v.failed == 0,
        "data verification failed: {} of {} checks did not match",
        v.failed,
        v.checked
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check really compares the destination with the expected CRC-32: a matching pattern
    /// passes, one flipped byte fails.
    #[test]
    fn verify_catches_a_corrupted_byte() {
        let (mac, ip) = Node::address(9);
        let dc = DeviceConfig::new(mac, ip);
        let mut ctx = Context::open(AnyNic::model(TableSizes::default()), dc).unwrap();
        let pd = ctx.alloc_pd();
        let mr = ctx.reg_mr(pd, 8192, Access::LOCAL_WRITE).unwrap();
        let mut data = vec![0u8; 4096];
        pattern(7, 0, 3, &mut data);
        let want = crc32fast::hash(&data);
        ctx.write_mr(&mr, 4096, &data).unwrap();
        let mut v = Verify::default();
        let mut buf = vec![0u8; 4096];
        v.check(&mut ctx, &mr, 4096, want, &mut buf, String::new)
            .unwrap();
        assert_eq!((v.checked, v.failed, v.bytes), (1, 0, 4096));
        data[1234] ^= 1;
        ctx.write_mr(&mr, 4096, &data).unwrap();
        v.check(&mut ctx, &mr, 4096, want, &mut buf, || "test".into())
            .unwrap();
        assert_eq!((v.checked, v.failed), (2, 1));
    }

    /// Iterations get distinct patterns (a slot rewritten by the wrong iteration is caught).
    #[test]
    fn patterns_differ_per_iteration_and_side() {
        let (mut a, mut b, mut c) = (vec![0u8; 64], vec![0u8; 64], vec![0u8; 64]);
        pattern(1, 0, 0, &mut a);
        pattern(1, 0, 1, &mut b);
        pattern(1, 1, 0, &mut c);
        assert_ne!(a, b);
        assert_ne!(a, c);
    }
}
