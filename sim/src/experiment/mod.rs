//! The experiments behind `ferroce experiment NAME`: the same workloads on the same fabric,
//! run once with ferroce hosts and once with the RoCEv2 baseline.
//!
//! - [`loss`]: goodput against random, bursty and one-bad-link loss.
//! - [`incast`]: N:1 convergence to fair share, Jain's index, peak queue.
//! - [`planes`]: all-to-all throughput over 1, 2, 4, 8 planes.
//! - [`failure`]: a plane fails mid-run.
//! - [`collective`]: all-to-all and ring all-reduce completion times.
//!
//! [`run`] is the common machinery: build the fabric, set up the hosts (ferroce connections are
//! established over the fabric with CM packets before the clock starts), start the workload,
//! run until every message arrived (or a time limit), and collect what the hosts verified.

pub mod collective;
pub mod failure;
pub mod incast;
pub mod loss;
pub mod planes;
pub mod report;

use crate::backend::BackendKind;
use crate::fabric::engine::{ArrivalTrace, Endpoint, Fabric, FabricStats, Outbox};
use crate::fabric::event::{PS_PER_NS, Ps};
use crate::fabric::failure::Failure;
use crate::fabric::host::{FerroceConfig, FerroceHost, message_crcs};
use crate::fabric::loss::{LossModel, LossScope, LossState};
use crate::fabric::port::{LinkRole, Red};
use crate::fabric::topology::{Network, TopologyConfig};
use crate::fabric::workload::{App, AppStats, Workload};
use crate::roce::{DATA_HEADERS, RoceConfig, RoceHost, RoceStats};
use ferroce::TransportConfig;
pub use report::{Plot, Report, Series, Table, Target};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// Why an experiment could not run.
#[derive(Debug)]
pub enum ExperimentError {
    /// A parameter is out of range.
    InvalidArgument(String),
    /// The host library refused something while setting up.
    Host(ferroce::Error),
    /// The NIC backend could not be opened.
    Backend(String),
    /// Connections were not established in time.
    Setup(String),
}

impl std::fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExperimentError::InvalidArgument(s) => write!(f, "invalid argument: {s}"),
            ExperimentError::Host(e) => write!(f, "host library: {e:?}"),
            ExperimentError::Backend(e) => write!(f, "NIC backend: {e}"),
            ExperimentError::Setup(s) => write!(f, "setup: {s}"),
        }
    }
}

impl std::error::Error for ExperimentError {}

impl From<crate::fabric::host::HostError> for ExperimentError {
    fn from(e: crate::fabric::host::HostError) -> Self {
        match e {
            crate::fabric::host::HostError::Library(e) => ExperimentError::Host(e),
            crate::fabric::host::HostError::Backend(e) => ExperimentError::Backend(e.to_string()),
        }
    }
}

impl From<ferroce::Error> for ExperimentError {
    fn from(e: ferroce::Error) -> Self {
        ExperimentError::Host(e)
    }
}

/// Parameters shared by every experiment (the defaults: 100 Gb/s, 4 KB MTU, about
/// 10 µs base RTT, buffers about one BDP).
#[derive(Debug, Clone)]
pub struct Options {
    /// Link rate (Gb/s).
    pub link_gbps: f64,
    /// Payload bytes per packet.
    pub mtu: u32,
    /// Propagation delay per link (ns); 4 links each way.
    pub link_delay_ns: u64,
    /// Switch buffer per output port (bytes).
    pub buffer_bytes: u64,
    /// ECN marking.
    pub red: Red,
    /// Hosts per leaf.
    pub hosts_per_leaf: u32,
    /// Spines per plane (0: as many as hosts per leaf, non-blocking).
    pub spines: u32,
    /// ferroce flows (paths) per connection (0: 4, or the plane count if larger).
    pub paths: u16,
    /// Baseline RC timeout exponent (4.096 µs · 2^t).
    pub timeout_exp: u32,
    /// ferroce's minimum retransmission timeout (µs).
    pub min_rto_us: u64,
    /// ferroce: retransmission timeout of a flow before its first RTT sample (µs).
    pub initial_rto_us: u64,
    /// ferroce: initial congestion window per flow (packets).
    pub initial_window: u32,
    /// ferroce: smallest congestion window per flow (packets).
    pub min_window: u32,
    /// ferroce: host driver-loop polling period for arriving frames (ns; 0 = every frame).
    pub host_poll_ns: u64,
    /// ferroce: the host-wide in-flight cap and pacer over all connections of a host.
    pub host_budget: ferroce::core::HostBudgetConfig,
    /// ferroce: requesters start at the rate hint of the acceptor's CM reply
    /// (`TransportConfig::reply_hint`).
    pub reply_hint: bool,
    /// ferroce: an acceptor's CM reply counts the requests it has not accepted yet as
    /// senders (`TransportConfig::reply_hint_counts_pending`).
    pub reply_hint_counts_pending: bool,
    /// ferroce: a receiver's hints keep shares for connected peers that have not sent yet
    /// (`TransportConfig::hint_reserves_unseen`).
    pub hint_reserves_unseen: bool,
    /// ferroce: an acceptor repeats its CM reply with a lower hint when more senders
    /// connected after it replied (`TransportConfig::reply_hint_refresh`).
    pub reply_hint_refresh: bool,
    /// ferroce: fraction of a receiver's capacity its hints split among two or more senders
    /// (`TransportConfig::hint_shared_utilization`).
    pub hint_shared_utilization: f64,
    /// ferroce: at a shared receiver a connection paces the sum of its flows, so that they
    /// take turns, with no burst before the first ACK (`TransportConfig::flow_turns`).
    pub flow_turns: bool,
    /// ferroce: with several planes, a connection's flows on one NIC port share the port's
    /// rate (`TransportConfig::port_pacing`).
    pub port_pacing: bool,
    /// ferroce: silent-path detection, in smoothed RTTs; 0 = off
    /// (`TransportConfig::silent_path_rtts`).
    pub silent_path_rtts: f64,
    /// ferroce: a connection's first flow is its own, not flow 0
    /// (`TransportConfig::flow_rotation`).
    pub flow_rotation: bool,
    /// ferroce: tail-loss probes for flows with one or two packets in flight at any receiver
    /// (`TransportConfig::tail_probe_few`).
    pub tail_probe_few: bool,
    /// ferroce: a connection starting at a share sends its first packet at a phase of its own
    /// within one packet gap (`TransportConfig::start_phase`).
    pub start_phase: bool,
    /// ferroce: a flow whose path stays congested (ECN on most packets for several rounds)
    /// moves to a new entropy, PLB style (`TransportConfig::congestion_repath`).
    pub congestion_repath: bool,
    /// ferroce: each host serves its NIC's ACK timers on time, polling the NIC alone at its
    /// next timer (`FerroceConfig::nic_timer_wake`); off, a delayed ACK waits for the host's
    /// next visit.
    pub nic_timer_wake: bool,
    /// ferroce: timeouts on one entropy before a flow moves to another (the library's
    /// default is 2; 1 moves at the first timeout).
    pub same_entropy_retries: u32,
    /// NIC backend of the ferroce hosts.
    pub backend: BackendKind,
    /// Runs simulated at once, each on its own thread (1: one after the other on the calling
    /// thread). Every run is deterministic on its own, so results do not depend on it. The
    /// RTL backend always runs one at a time.
    pub jobs: usize,
    /// Seed.
    pub seed: u64,
    /// Small variant for CI.
    pub quick: bool,
    /// Hosts (experiment default if `None`).
    pub hosts: Option<u32>,
    /// Message size in bytes (experiment default if `None`).
    pub msg_bytes: Option<u64>,
    /// Messages per pair in `planes` (experiment default if `None`).
    pub rounds: Option<u32>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            link_gbps: 100.0,
            mtu: 4096,
            link_delay_ns: 1_000,
            buffer_bytes: 125_000,
            red: Red {
                kmin: 5_000,
                kmax: 100_000,
                pmax: 0.01,
            },
            hosts_per_leaf: 8,
            spines: 0,
            paths: 0,
            timeout_exp: 8,
            min_rto_us: 100,
            same_entropy_retries: 1,
            initial_rto_us: 200,
            initial_window: 8,
            min_window: 2,
            host_poll_ns: 500,
            host_budget: ferroce::core::HostBudgetConfig::default(),
            reply_hint: true,
            reply_hint_counts_pending: true,
            hint_reserves_unseen: true,
            reply_hint_refresh: true,
            hint_shared_utilization: 0.99,
            flow_turns: true,
            port_pacing: true,
            silent_path_rtts: 1.0,
            flow_rotation: true,
            tail_probe_few: true,
            start_phase: true,
            congestion_repath: false,
            nic_timer_wake: true,
            backend: BackendKind::Model,
            jobs: 1,
            seed: 1,
            quick: false,
            hosts: None,
            msg_bytes: None,
            rounds: None,
        }
    }
}

impl Options {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), ExperimentError> {
        let bad = |s: &str| Err(ExperimentError::InvalidArgument(s.into()));
        if !(self.link_gbps.is_finite() && self.link_gbps >= 1.0) {
            return bad("link rate must be at least 1 Gb/s");
        }
        if !(64..=8192).contains(&self.mtu) {
            return bad("MTU must be 64..=8192");
        }
        if self.hosts_per_leaf == 0 {
            return bad("hosts per leaf must be at least 1");
        }
        if self.red.kmax < self.red.kmin || !(0.0..=1.0).contains(&self.red.pmax) {
            return bad("ECN needs kmin <= kmax and pmax in [0, 1]");
        }
        if self.buffer_bytes < 2 * (self.mtu as u64 + 200) {
            return bad("buffer must hold at least two packets");
        }
        let hb = &self.host_budget;
        let finite_non_negative = |x: f64| x.is_finite() && x >= 0.0;
        if !(finite_non_negative(hb.bdp_multiple) && finite_non_negative(hb.pacing_gain)) {
            return bad("host budget (BDPs) and host pacing gain must be finite and >= 0");
        }
        if self.timeout_exp > 31 {
            return bad("timeout exponent must be 0..=31");
        }
        if self.hosts.is_some_and(|h| !(2..=4096).contains(&h)) {
            return bad("hosts must be 2..=4096");
        }
        if self.msg_bytes.is_some_and(|m| !(1..=1 << 30).contains(&m)) {
            return bad("message size must be 1..=2^30 bytes");
        }
        if self.rounds.is_some_and(|r| !(1..=1024).contains(&r)) {
            return bad("rounds must be 1..=1024");
        }
        Ok(())
    }

    /// A topology with these options.
    pub fn topology(&self, hosts: u32, planes: u8) -> TopologyConfig {
        let hpl = self.hosts_per_leaf.min(hosts).max(1);
        TopologyConfig {
            hosts,
            hosts_per_leaf: hpl,
            spines: if self.spines == 0 { hpl } else { self.spines },
            planes,
            link_gbps: self.link_gbps,
            link_delay_ns: self.link_delay_ns,
            buffer_bytes: self.buffer_bytes,
            red: Some(self.red),
            seed: self.seed,
        }
    }

    /// Base RTT between hosts on different leaves: 8 propagation delays plus one full packet's
    /// serialisation at each of 4 hops (the ACK's is small).
    pub fn base_rtt(&self) -> Ps {
        let ser = ((self.mtu + 100) as f64 * 8.0 / self.link_gbps * 1e3) as Ps;
        8 * self.link_delay_ns * PS_PER_NS + 4 * ser
    }

    /// ferroce host settings.
    pub fn ferroce(&self, planes: u8) -> FerroceConfig {
        let transport = TransportConfig {
            min_rto_ns: self.min_rto_us * 1_000,
            same_entropy_retries: self.same_entropy_retries.max(1),
            initial_rto_ns: self.initial_rto_us.max(1) * 1_000,
            congestion: Arc::new(ferroce::core::EcnAimdConfig {
                initial_window_packets: self.initial_window.max(1),
                min_window_packets: self.min_window.max(1),
                ..Default::default()
            }),
            host_budget: self.host_budget,
            reply_hint: self.reply_hint,
            reply_hint_counts_pending: self.reply_hint_counts_pending,
            hint_reserves_unseen: self.hint_reserves_unseen,
            reply_hint_refresh: self.reply_hint_refresh,
            hint_shared_utilization: self.hint_shared_utilization,
            flow_turns: self.flow_turns,
            port_pacing: self.port_pacing,
            silent_path_rtts: self.silent_path_rtts,
            flow_rotation: self.flow_rotation,
            tail_probe_few: self.tail_probe_few,
            start_phase: self.start_phase,
            congestion_repath: self.congestion_repath,
            ..TransportConfig::default()
        };
        FerroceConfig {
            backend: self.backend,
            paths: if self.paths == 0 {
                4.max(planes as u16)
            } else {
                self.paths
            },
            mtu: self.mtu,
            port_mbps: (self.link_gbps * 1e3) as u32,
            planes,
            transport,
            seed: self.seed,
            poll_interval_ps: self.host_poll_ns * PS_PER_NS,
            nic_timer_wake: self.nic_timer_wake,
        }
    }

    /// Baseline settings.
    pub fn roce(&self, planes: u8) -> RoceConfig {
        RoceConfig {
            mtu: self.mtu,
            port_mbps: (self.link_gbps * 1e3) as u32,
            planes,
            timeout_exp: self.timeout_exp,
            poll_interval: self.host_poll_ns * PS_PER_NS,
            ..RoceConfig::default()
        }
    }

    /// Payload share of the wire for the baseline's full packets.
    pub fn roce_efficiency(&self) -> f64 {
        self.mtu as f64 / (self.mtu + DATA_HEADERS + crate::fabric::packet::WIRE_OVERHEAD) as f64
    }
}

/// Which transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    /// ferroce (host library over the NIC backend).
    Ferroce,
    /// RoCEv2 with go-back-N and DCQCN.
    Roce,
}

impl Stack {
    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Ferroce => "ferroce",
            Stack::Roce => "RoCEv2",
        }
    }
}

/// Which links a loss process applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkSel {
    /// Every leaf→host link (each packet crosses exactly one: end-to-end loss = the model's).
    LastHop,
    /// One leaf→spine link of plane 0 (the first leaf's first uplink).
    OneUplink,
}

/// A loss process on a set of links.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossSpec {
    /// Links.
    pub links: LinkSel,
    /// Process.
    pub model: LossModel,
    /// Packets it applies to.
    pub scope: LossScope,
}

/// One run's setup.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Fabric.
    pub topo: TopologyConfig,
    /// Workload.
    pub wl: Arc<Workload>,
    /// Loss.
    pub loss: Vec<LossSpec>,
    /// Failures, times relative to the workload start.
    pub failures: Vec<Failure>,
    /// Arrival trace: bin width and the host split by sender.
    pub trace: Option<(Ps, Option<u32>)>,
    /// Give up this long after the start.
    pub limit: Ps,
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Transport.
    pub stack: Stack,
    /// Application counters summed over hosts.
    pub app: AppStats,
    /// Messages in the workload.
    pub msgs: u64,
    /// Payload bytes in the workload.
    pub bytes: u64,
    /// Workload start.
    pub start: Ps,
    /// Last message arrival (or the limit).
    pub end: Ps,
    /// Every message arrived.
    pub finished: bool,
    /// Per message: arrival time (0 = never).
    pub arrival: Vec<Ps>,
    /// New payload bytes placed at all receivers, in bins of
    /// [`crate::fabric::workload::PLACED_BIN`] from time 0 (see `App::placed`).
    pub placed: Vec<u64>,
    /// Engine counters.
    pub fabric: FabricStats,
    /// Events processed.
    pub events: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// Largest switch queue (bytes).
    pub max_queue: u64,
    /// Largest host NIC port queue (bytes).
    pub max_nic_queue: u64,
    /// Wire bytes all host NIC ports sent (see [`Network::host_wire_bytes`]).
    pub host_wire_bytes: u64,
    /// Switch tail drops and CE marks.
    pub drops_marks: (u64, u64),
    /// Resent packets (ferroce: SACK + timeout; baseline: go-back-N).
    pub resent: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// ferroce: flows found silent while their siblings delivered
    /// (`ConnectionStats::silent_paths`), handled like timeouts without waiting for them.
    pub silent_paths: u64,
    /// Flows moved off a NIC port because its link went down
    /// (`ConnectionStats::link_down_moves`).
    pub link_down_moves: u64,
    /// ferroce: flows moved off a path that stayed congested
    /// (`ConnectionStats::repaths_congestion`).
    pub repaths: u64,
    /// Payload share of a full data packet on the wire.
    pub efficiency: f64,
    /// Arrival trace.
    pub trace: Option<ArrivalTrace>,
    /// Baseline counters (zero for ferroce).
    pub roce: RoceStats,
}

impl Outcome {
    /// The "done" cell of a results table: "yes", or how many messages arrived.
    pub fn done_cell(&self) -> String {
        if self.finished {
            "yes".into()
        } else {
            format!("no ({} of {})", self.app.received, self.msgs)
        }
    }

    /// Verified payload bytes per second of the run, in Gb/s.
    pub fn goodput_gbps(&self) -> f64 {
        let t = self.end.saturating_sub(self.start).max(1) as f64 / 1e12;
        self.app.bytes_verified as f64 * 8.0 / t / 1e9
    }

    /// Duration in µs.
    pub fn duration_us(&self) -> f64 {
        self.end.saturating_sub(self.start) as f64 / 1e6
    }
}

/// A host as the runner needs it.
pub trait Host: Endpoint {
    /// The application.
    fn app(&self) -> &App;
    /// Starts the workload.
    fn begin(&mut self, now: Ps, out: &mut Outbox);
    /// Ready to start (connections established).
    fn ready(&self) -> bool;
}

impl Host for FerroceHost {
    fn app(&self) -> &App {
        &self.app
    }
    fn begin(&mut self, now: Ps, out: &mut Outbox) {
        self.start(now, out);
    }
    fn ready(&self) -> bool {
        self.connected()
    }
}

impl Host for RoceHost {
    fn app(&self) -> &App {
        &self.app
    }
    fn begin(&mut self, now: Ps, out: &mut Outbox) {
        self.start(now, out);
    }
    fn ready(&self) -> bool {
        true
    }
}

/// Called as a run advances: fraction of messages arrived.
pub type ProgressFn<'a> = &'a mut dyn FnMut(f64);

fn apply_loss(net: &mut Network, specs: &[LossSpec], seed: u64) {
    for (k, s) in specs.iter().enumerate() {
        let links = match s.links {
            LinkSel::LastHop => net.links_where(|l| l.role == LinkRole::HostDown),
            LinkSel::OneUplink => net
                .links_where(|l| l.role == LinkRole::LeafUp && l.plane == 0)
                .into_iter()
                .take(1)
                .collect(),
        };
        for i in links {
            let ls = seed ^ (k as u64 + 1) << 48 ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            net.links[i].loss = LossState::new(s.model, s.scope, ls);
        }
    }
}

fn drive<H: Host>(
    sc: &Scenario,
    fab: &mut Fabric<H>,
    progress: ProgressFn,
) -> Result<(Ps, Ps, bool), ExperimentError> {
    let n = fab.hosts.len() as u32;
    for h in 0..n {
        fab.wake(h, 0);
    }
    // Connection setup over the fabric (CM packets), before the clock starts.
    let step = 10_000 * PS_PER_NS;
    let setup_limit = 50_000_000 * PS_PER_NS;
    while !fab.hosts.iter().all(|h| h.ready()) {
        if fab.now() > setup_limit {
            return Err(ExperimentError::Setup(
                "connections not established after 50 ms".into(),
            ));
        }
        let t = fab.now() + step;
        fab.run_until(t);
    }
    let start = fab.now();
    for f in &sc.failures {
        fab.schedule(Failure {
            at: start + f.at,
            ..*f
        });
    }
    if let Some((bin, host)) = sc.trace {
        fab.enable_trace(bin, host);
    }
    for h in 0..n {
        fab.with_host(h, |e, now, out| e.begin(now, out));
    }
    let total = sc.wl.msgs.len();
    let chunk = 20_000 * PS_PER_NS;
    let mut finished = false;
    loop {
        let arrived: usize = fab.hosts.iter().map(|h| h.app().arrivals.len()).sum();
        progress(arrived as f64 / total.max(1) as f64);
        if arrived >= total {
            finished = true;
            break;
        }
        if fab.now() >= start + sc.limit {
            break;
        }
        let t = (fab.now() + chunk).min(start + sc.limit);
        if !fab.run_until(t) {
            // Nothing left to happen (every transport gave up or went idle).
            let arrived: usize = fab.hosts.iter().map(|h| h.app().arrivals.len()).sum();
            finished = arrived >= total;
            break;
        }
    }
    let end = if finished {
        fab.hosts
            .iter()
            .map(|h| h.app().stats.last_rx)
            .max()
            .unwrap_or(start)
    } else {
        fab.now().min(start + sc.limit)
    };
    Ok((start, end, finished))
}

fn collect<H: Host>(
    stack: Stack,
    sc: &Scenario,
    fab: &Fabric<H>,
    (start, end, finished): (Ps, Ps, bool),
    wall: f64,
) -> Outcome {
    let mut app = AppStats::default();
    let mut arrival = vec![0; sc.wl.msgs.len()];
    let mut placed: Vec<u64> = Vec::new();
    for h in &fab.hosts {
        let p = &h.app().placed;
        if placed.len() < p.len() {
            placed.resize(p.len(), 0);
        }
        for (x, &b) in placed.iter_mut().zip(p) {
            *x += b;
        }
        let a = &h.app().stats;
        app.sent_ok += a.sent_ok;
        app.received += a.received;
        app.bytes_verified += a.bytes_verified;
        app.verify_failed += a.verify_failed;
        app.app_errors += a.app_errors;
        app.last_rx = app.last_rx.max(a.last_rx);
        for &(m, t) in &h.app().arrivals {
            if let Some(x) = arrival.get_mut(m as usize) {
                *x = t;
            }
        }
    }
    let mut trace = fab.trace.clone();
    if let Some(tr) = trace.as_mut() {
        // Re-base the bins on the workload start.
        let skip = (start / tr.bin) as usize;
        tr.total.drain(..skip.min(tr.total.len()));
        tr.by_src.drain(..skip.min(tr.by_src.len()));
    }
    Outcome {
        stack,
        app,
        msgs: sc.wl.msgs.len() as u64,
        bytes: sc.wl.total_bytes(),
        start,
        end,
        finished,
        arrival,
        placed,
        fabric: fab.stats,
        events: fab.events(),
        wall_s: wall,
        max_queue: fab.net.max_switch_queue(),
        max_nic_queue: fab.net.max_nic_queue(),
        host_wire_bytes: fab.net.host_wire_bytes(),
        drops_marks: fab.net.switch_drops_marks(),
        resent: 0,
        timeouts: 0,
        silent_paths: 0,
        link_down_moves: 0,
        repaths: 0,
        efficiency: 0.0,
        trace,
        roce: RoceStats::default(),
    }
}

/// Runs a scenario on one transport.
pub fn run(
    stack: Stack,
    sc: &Scenario,
    opts: &Options,
    progress: ProgressFn,
) -> Result<Outcome, ExperimentError> {
    let t0 = Instant::now();
    let mut net = Network::leaf_spine(&sc.topo);
    apply_loss(&mut net, &sc.loss, opts.seed);
    let n = sc.topo.hosts;
    let planes = sc.topo.planes;
    match stack {
        Stack::Ferroce => {
            let cfg = opts.ferroce(planes);
            let crcs = sc.wl.expected(cfg.seed, || message_crcs(&sc.wl, cfg.seed));
            let mut hosts = (0..n)
                .map(|h| FerroceHost::new(h, n, &cfg, sc.wl.clone(), crcs.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            let keys = Arc::new(hosts.iter().map(|h| h.dst_key()).collect::<Vec<_>>());
            for h in &mut hosts {
                h.set_remote_keys(keys.clone());
                h.connect_all(&cfg)?;
            }
            let mut fab = Fabric::new(net, hosts);
            let times = drive(sc, &mut fab, progress)?;
            let mut o = collect(stack, sc, &fab, times, t0.elapsed().as_secs_f64());
            let mut max_wire = 0;
            for h in &fab.hosts {
                max_wire = max_wire.max(h.max_frame_wire);
                for c in h.conns() {
                    if let Ok(s) = h.ctx().conn_stats(c) {
                        o.resent += s.retransmissions();
                        o.timeouts += s.timeouts;
                        o.silent_paths += s.silent_paths;
                        o.link_down_moves += s.link_down_moves;
                        o.repaths += s.repaths_congestion;
                    }
                }
            }
            o.efficiency = if max_wire > opts.mtu {
                opts.mtu as f64 / max_wire as f64
            } else {
                0.0
            };
            Ok(o)
        }
        Stack::Roce => {
            let cfg = opts.roce(planes);
            let hosts = (0..n)
                .map(|h| RoceHost::new(h, &cfg, sc.wl.clone()))
                .collect();
            let mut fab = Fabric::new(net, hosts);
            let times = drive(sc, &mut fab, progress)?;
            let mut o = collect(stack, sc, &fab, times, t0.elapsed().as_secs_f64());
            for h in &fab.hosts {
                o.roce.data_sent += h.stats.data_sent;
                o.roce.resent += h.stats.resent;
                o.roce.timeouts += h.stats.timeouts;
                o.roce.naks_sent += h.stats.naks_sent;
                o.roce.cnps_sent += h.stats.cnps_sent;
                o.roce.out_of_order_dropped += h.stats.out_of_order_dropped;
                o.roce.qp_failures += h.stats.qp_failures;
            }
            o.resent = o.roce.resent;
            o.timeouts = o.roce.timeouts;
            o.efficiency = opts.roce_efficiency();
            Ok(o)
        }
    }
}

/// One run of an experiment: a scenario on one transport, under the options it runs with.
pub struct Job {
    /// Transport.
    pub stack: Stack,
    /// What to simulate.
    pub sc: Scenario,
    /// Options of this run.
    pub opts: Options,
    /// What the progress line shows while it runs.
    pub label: String,
}

impl Job {
    /// A job under a copy of `opts`.
    pub fn new(stack: Stack, sc: Scenario, opts: &Options, label: String) -> Self {
        Job {
            stack,
            sc,
            opts: opts.clone(),
            label,
        }
    }
}

/// What a worker thread tells the thread that reports progress.
enum JobMsg {
    Progress(usize, f64),
    Done(usize, Box<Result<Outcome, ExperimentError>>),
}

/// Threads `run_jobs` uses for `jobs` when asked for `requested`: at least one, no more than
/// the jobs, and one with the RTL backend.
fn threads_for(jobs: &[Job], requested: usize) -> usize {
    if jobs.iter().any(|j| j.opts.backend != BackendKind::Model) {
        1
    } else {
        requested.clamp(1, jobs.len().max(1))
    }
}

/// Runs independent jobs, up to `threads` at once (`Options::jobs`; the RTL backend one at a
/// time), and returns their outcomes in job order with the wall-clock seconds they took
/// together. `progress` gets the label of the job that last advanced and the fraction of all
/// jobs done. The first failing job in job order decides the error; no new job starts after
/// a failure.
pub fn run_jobs(
    jobs: &[Job],
    threads: usize,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<(Vec<Outcome>, f64), ExperimentError> {
    let t0 = Instant::now();
    let n = jobs.len();
    let threads = threads_for(jobs, threads);
    let mut done = vec![0.0; n];
    let mut results: Vec<Option<Result<Outcome, ExperimentError>>> = (0..n).map(|_| None).collect();
    if threads == 1 {
        for (i, j) in jobs.iter().enumerate() {
            let r = run(j.stack, &j.sc, &j.opts, &mut |x| {
                done[i] = x;
                progress(&j.label, done.iter().sum::<f64>() / n as f64)
            })?;
            done[i] = 1.0;
            results[i] = Some(Ok(r));
        }
    } else {
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            for _ in 0..threads {
                let (tx, next) = (tx.clone(), &next);
                s.spawn(move || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(j) = jobs.get(i) else { break };
                        let r = run(j.stack, &j.sc, &j.opts, &mut |x| {
                            let _ = tx.send(JobMsg::Progress(i, x));
                        });
                        if r.is_err() {
                            next.store(n, Ordering::Relaxed);
                        }
                        let _ = tx.send(JobMsg::Done(i, Box::new(r)));
                    }
                });
            }
            drop(tx);
            for m in rx {
                let i = match m {
                    JobMsg::Progress(i, x) => {
                        done[i] = x;
                        i
                    }
                    JobMsg::Done(i, r) => {
                        done[i] = 1.0;
                        results[i] = Some(*r);
                        i
                    }
                };
                progress(&jobs[i].label, done.iter().sum::<f64>() / n as f64);
            }
        });
    }
    // A failure stops new jobs from starting, so the first error in job order is returned.
    let mut out = Vec::with_capacity(n);
    for r in results.into_iter().flatten() {
        out.push(r?);
    }
    if out.len() < n {
        return Err(ExperimentError::Setup(format!(
            "{} of {n} runs did not complete",
            n - out.len()
        )));
    }
    Ok((out, t0.elapsed().as_secs_f64()))
}

/// Runs an experiment's jobs ([`run_jobs`] on `Options::jobs` threads) and adds their totals
/// and wall-clock time to `report`.
pub fn run_all(
    report: &mut Report,
    jobs: &[Job],
    opts: &Options,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<Vec<Outcome>, ExperimentError> {
    let (outcomes, wall) = run_jobs(jobs, opts.jobs, progress)?;
    for o in &outcomes {
        account(report, o);
    }
    report.wall_s += wall;
    report.threads = report.threads.max(threads_for(jobs, opts.jobs));
    Ok(outcomes)
}

/// Adds a run's totals to a report.
pub fn account(r: &mut Report, o: &Outcome) {
    r.packet_events += o.fabric.packet_events;
    r.events += o.events;
    r.thread_s += o.wall_s;
    if o.stack == Stack::Roce {
        r.baseline_events_wall.0 += o.fabric.packet_events;
        r.baseline_events_wall.1 += o.wall_s;
    }
    r.bytes_verified += o.app.bytes_verified;
    r.verify_failed += o.app.verify_failed;
}

/// Jain's fairness index of a set of rates.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let q: f64 = x.iter().map(|v| v * v).sum();
    if q == 0.0 {
        return 1.0;
    }
    s * s / (x.len() as f64 * q)
}

/// `v` with `d` decimals.
pub fn f(v: f64, d: usize) -> String {
    format!("{v:.d$}")
}

/// Runs an experiment by name.
pub fn by_name(
    name: &str,
    opts: &Options,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<Report, ExperimentError> {
    opts.validate()?;
    match name {
        "loss" => loss::run(opts, progress),
        "incast" => incast::run(opts, progress),
        "planes" => planes::run(opts, progress),
        "failure" => failure::run(opts, progress),
        "alltoall" => collective::run(opts, collective::Kind::AllToAll, progress),
        "allreduce" => collective::run(opts, collective::Kind::AllReduce, progress),
        _ => Err(ExperimentError::InvalidArgument(format!(
            "unknown experiment {name:?} (loss, incast, planes, failure, alltoall, allreduce)"
        ))),
    }
}

/// The experiment names.
pub const NAMES: [&str; 6] = [
    "loss",
    "incast",
    "planes",
    "failure",
    "alltoall",
    "allreduce",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_bounds() {
        assert!((jain(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
    }
}

#[cfg(test)]
mod run_tests {
    use super::*;
    use crate::fabric::loss::{LossModel, LossScope};

    fn scenario(seed: u64) -> (Scenario, Options) {
        let o = Options {
            seed,
            hosts_per_leaf: 2,
            spines: 2,
            ..Options::default()
        };
        let wl = Workload::streams(4, &[(0, 2), (1, 3)], 64 << 10, 3, 2);
        let sc = Scenario {
            topo: o.topology(4, 1),
            wl: Arc::new(wl),
            loss: vec![LossSpec {
                links: LinkSel::LastHop,
                model: LossModel::Bernoulli { p: 0.02 },
                scope: LossScope::All,
            }],
            failures: vec![],
            trace: None,
            limit: 20_000_000 * PS_PER_NS,
        };
        (sc, o)
    }

    #[test]
    fn same_seed_same_run_on_both_stacks() {
        for stack in [Stack::Ferroce, Stack::Roce] {
            let (sc, o) = scenario(5);
            let a = run(stack, &sc, &o, &mut |_| {}).unwrap();
            let b = run(stack, &sc, &o, &mut |_| {}).unwrap();
            assert!(a.finished, "{stack:?}");
            assert_eq!(a.app.bytes_verified, sc.wl.total_bytes());
            assert_eq!(a.app.verify_failed, 0);
            assert_eq!((a.end, a.events, a.resent), (b.end, b.events, b.resent));
            assert_eq!(a.arrival, b.arrival);
            assert_eq!(a.fabric, b.fabric);
            // Another seed, another run (loss falls elsewhere).
            let (sc2, o2) = scenario(6);
            let c = run(stack, &sc2, &o2, &mut |_| {}).unwrap();
            assert_ne!((a.end, a.events), (c.end, c.events), "{stack:?}");
        }
    }

    /// Runs on two threads give the outcomes of the same runs one after the other, in job
    /// order, and progress reaches 1.
    #[test]
    fn jobs_on_threads_give_the_same_outcomes_in_job_order() {
        let jobs: Vec<Job> = [(Stack::Ferroce, 5), (Stack::Roce, 5), (Stack::Ferroce, 6)]
            .into_iter()
            .map(|(stack, seed)| {
                let (sc, o) = scenario(seed);
                Job::new(stack, sc, &o, format!("{stack:?} {seed}"))
            })
            .collect();
        let mut last = 0.0;
        let (one, _) = run_jobs(&jobs, 1, &mut |_, x| last = x).unwrap();
        assert!((last - 1.0).abs() < 1e-9);
        last = 0.0;
        let (two, _) = run_jobs(&jobs, 2, &mut |_, x| last = x).unwrap();
        assert!((last - 1.0).abs() < 1e-9);
        assert_eq!(one.len(), 3);
        for (a, b) in one.iter().zip(&two) {
            assert_eq!(a.stack, b.stack);
            assert_eq!((a.end, a.events, a.resent), (b.end, b.events, b.resent));
            assert_eq!(a.arrival, b.arrival);
            assert_eq!(a.fabric, b.fabric);
        }
        assert_ne!(one[0].end, one[2].end, "the seeds differ, so do the runs");
        assert_eq!(two[1].stack, Stack::Roce);
    }
}
