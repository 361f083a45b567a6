//! A fabric host running ferroce: the real host library (`ferroce::Context`) over a NIC
//! backend ([`AnyNic`]: the model, or the RTL for small runs), with one NIC port per plane.
//!
//! Plane choice is the library's and the NIC's: each TX descriptor names the NIC port (plane)
//! its frame leaves on, and the fabric puts the frame on that port. The library spreads a
//! connection's flows over the planes (flow `i` on port `i % planes`) and moves a flow that
//! keeps timing out to a new entropy on another plane: a dead plane is left without any help
//! from the fabric. The NIC sends an ACK on the port its data came in on, so ACKs come back
//! on the data's plane.

use super::engine::{Endpoint, Outbox};
use super::event::{PS_PER_NS, Ps};
use super::packet::{Body, Packet, WIRE_OVERHEAD, WireFrame, frame_info};
use super::workload::{App, PatternGen, Workload, pattern};
use crate::backend::{AnyNic, BackendKind};
use ferroce::{
    AcceptOptions, Access, CmEvent, ConnId, ConnState, ConnectOptions, Context, Cq, DeviceConfig,
    MemoryRegion, PathOptions, Pd, TransportConfig, WcOpcode, WcStatus, WorkCompletion,
    WriteRequest,
};
use ferroce_driver::{Nic, PortFrameBuf, SimPort};
use ferroce_proto::hsi::{Counter, TableSizes};
use ferroce_proto::wire::EthernetAddress;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// Bytes of the source pattern generated per write into a host's source region (a multiple
/// of [`PatternGen::STEP`], small enough to stay in the first-level cache).
const PATTERN_PIECE: usize = 16 << 10;

/// IPv4 address of host `h` (10.0.0.1 onwards).
pub fn host_ip(h: u32) -> u32 {
    0x0a00_0001 + h
}

/// Host of an IPv4 address, if it is one of [`host_ip`]'s.
pub fn ip_host(ip: u32, hosts: u32) -> Option<u32> {
    ip.checked_sub(0x0a00_0001).filter(|&h| h < hosts)
}

/// The entropies a connection to `peer` uses: 64 consecutive ports in a block of the peer's
/// own, so that connections to different peers hash independently.
pub fn peer_entropies(peer: u32) -> Vec<u16> {
    let base = 49152 + (peer % 256) as u16 * 64;
    (0..64u16).map(|k| base + k).collect()
}

/// Why a ferroce host could not be set up.
#[derive(Debug)]
pub enum HostError {
    /// The host library refused something.
    Library(ferroce::Error),
    /// The NIC backend could not be opened.
    Backend(crate::rtl::RtlError),
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Library(e) => write!(f, "host library: {e:?}"),
            HostError::Backend(e) => write!(f, "NIC backend: {e}"),
        }
    }
}

impl std::error::Error for HostError {}

impl From<ferroce::Error> for HostError {
    fn from(e: ferroce::Error) -> Self {
        HostError::Library(e)
    }
}

/// Settings of the ferroce hosts of a run.
#[derive(Debug, Clone)]
pub struct FerroceConfig {
    /// NIC backend.
    pub backend: BackendKind,
    /// Flows (paths) per connection.
    pub paths: u16,
    /// Payload bytes per packet.
    pub mtu: u32,
    /// Rate of one NIC port (Mb/s).
    pub port_mbps: u32,
    /// NIC ports (planes).
    pub planes: u8,
    /// Transport knobs.
    pub transport: TransportConfig,
    /// Seed (initial FSNs, data patterns).
    pub seed: u64,
    /// The host software's polling period: arriving frames reach the NIC (which places data
    /// and sends ACKs by itself) at once, but the library's driver loop runs at most once per
    /// this interval for them, as a host polling its event ring does. 0: after every frame.
    pub poll_interval_ps: Ps,
    /// The NIC's ACK timers run on time: the host polls the NIC alone at each timer
    /// (`Nic::next_timer_ns`), as a real NIC sends its delayed ACKs without the host. Off: a
    /// delayed ACK leaves at the host's next visit, whatever brings it.
    pub nic_timer_wake: bool,
}

/// A ferroce host.
pub struct FerroceHost {
    ctx: Context<AnyNic>,
    pd: Pd,
    scq: Cq,
    rcq: Cq,
    host: u32,
    hosts: u32,
    planes: u8,
    src: Option<MemoryRegion>,
    dst: Option<MemoryRegion>,
    /// Outgoing connections by peer.
    out_conns: HashMap<u32, ConnId>,
    remote: Arc<Vec<(u64, u32)>>,
    wl: Arc<Workload>,
    /// Expected CRC-32 per message (shared by all hosts).
    crcs: Arc<Vec<u32>>,
    /// The application.
    pub app: App,
    wcs: Vec<WorkCompletion>,
    /// Library errors (`progress` failing), each also an application-visible error.
    pub lib_errors: u64,
    /// Largest payload+header frame seen leaving (wire bytes): gives the header overhead.
    pub max_frame_wire: u32,
    poll_interval: Ps,
    last_service: Option<Ps>,
    /// The library's own next wake (timers, pacing), in ps.
    lib_wake: Option<Ps>,
    /// A frame arrived before the polling period allowed the library to run: run it then.
    poll_due: Option<Ps>,
    /// Serve the NIC's ACK timers (see [`FerroceConfig::nic_timer_wake`]).
    nic_timer_wake: bool,
    /// The NIC's next ACK timer, in ps, when served.
    nic_wake: Option<Ps>,
    /// The NIC's count of payload bytes placed, as last read.
    placed_seen: u64,
    /// The NIC's count of receive completions, as last read.
    completions_seen: u64,
    /// When the application last found a receive completion (see `on_packet`).
    last_cq_poll: Option<Ps>,
}

/// Expected CRC-32 of every message of a workload.
pub fn message_crcs(wl: &Workload, seed: u64) -> Vec<u32> {
    let mut pats: HashMap<u32, Vec<u8>> = HashMap::new();
    wl.msgs
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let p = pats
                .entry(m.src)
                .or_insert_with(|| pattern(seed, m.src, wl.src_len[m.src as usize] as usize));
            let off = wl.src_off(i as u32) as usize;
            crc32fast::hash(&p[off..off + m.bytes as usize])
        })
        .collect()
}

impl FerroceHost {
    /// Host `host` of `hosts`, with its buffers registered and filled.
    pub fn new(
        host: u32,
        hosts: u32,
        cfg: &FerroceConfig,
        wl: Arc<Workload>,
        crcs: Arc<Vec<u32>>,
    ) -> Result<FerroceHost, HostError> {
        let mac = EthernetAddress([2, 0, (host >> 16) as u8, (host >> 8) as u8, host as u8, 1]);
        let ip = IpAddr::V4(Ipv4Addr::from(host_ip(host)));
        let mut dc = DeviceConfig::new(mac, ip);
        dc.fsn_seed = (cfg.seed as u32).wrapping_mul(0x9e37_79b9) ^ host;
        let total = cfg.port_mbps.saturating_mul(cfg.planes.max(1) as u32);
        dc.transport = cfg.transport.clone();
        dc.transport.line_rate_mbps = total;
        // The host serves the NIC's timers itself, without running the library for them.
        dc.nic_timer_wake = false;
        dc.inbound_capacity_mbps = total;
        let conns = wl
            .pairs()
            .iter()
            .filter(|p| p.0 == host || p.1 == host)
            .count() as u32;
        let sizes = TableSizes {
            connections: (conns + 8).next_power_of_two().max(16),
            flows: ((conns + 8) * cfg.paths as u32)
                .next_power_of_two()
                .max(1024),
            tags: (conns + 8).next_power_of_two().max(16),
            ports: cfg.planes.max(1) as u32,
            ..TableSizes::default()
        };
        let nic = match cfg.backend {
            BackendKind::Model => AnyNic::model(sizes),
            BackendKind::Rtl => AnyNic::rtl().map_err(HostError::Backend)?,
        };
        let mut ctx = Context::open(nic, dc)?;
        let pd = ctx.alloc_pd();
        let scq = ctx.create_cq(1 << 16)?;
        let rcq = ctx.create_cq(1 << 16)?;
        let src_len = wl.src_len[host as usize];
        let src = if src_len > 0 {
            let mr = ctx.reg_mr(pd, src_len, Access::NONE)?;
            // Written piece by piece through a small buffer that stays in cache, instead of
            // through a temporary as large as the region.
            let mut source = PatternGen::new(cfg.seed, host);
            let mut piece = vec![0u8; PATTERN_PIECE];
            let mut at = 0;
            while at < src_len {
                let n = (src_len - at).min(PATTERN_PIECE as u64) as usize;
                source.fill(&mut piece[..n]);
                ctx.write_mr(&mr, at, &piece[..n])?;
                at += n as u64;
            }
            Some(mr)
        } else {
            None
        };
        let dst_len = wl.dst_len[host as usize];
        let dst = if dst_len > 0 {
            Some(ctx.reg_mr(pd, dst_len, Access::REMOTE_WRITE)?)
        } else {
            None
        };
        ctx.listen(true);
        Ok(FerroceHost {
            ctx,
            pd,
            scq,
            rcq,
            host,
            hosts,
            planes: cfg.planes.max(1),
            src,
            dst,
            out_conns: HashMap::new(),
            remote: Arc::new(Vec::new()),
            app: App::new(host, &wl),
            wl,
            crcs,
            wcs: Vec::new(),
            lib_errors: 0,
            max_frame_wire: 0,
            poll_interval: cfg.poll_interval_ps,
            last_service: None,
            lib_wake: None,
            poll_due: None,
            nic_timer_wake: cfg.nic_timer_wake,
            nic_wake: None,
            placed_seen: 0,
            completions_seen: 0,
            last_cq_poll: None,
        })
    }

    /// Opens a connection to every host this one sends to.
    pub fn connect_all(&mut self, cfg: &FerroceConfig) -> Result<(), ferroce::Error> {
        let peers: Vec<u32> = self
            .wl
            .pairs()
            .iter()
            .filter(|p| p.0 == self.host)
            .map(|p| p.1)
            .collect();
        for peer in peers {
            let pm = EthernetAddress([2, 0, (peer >> 16) as u8, (peer >> 8) as u8, peer as u8, 1]);
            let pip = IpAddr::V4(Ipv4Addr::from(host_ip(peer)));
            let mut o = ConnectOptions::new(self.pd, self.scq, self.rcq, pm, pip);
            o.mtu = cfg.mtu;
            o.paths = PathOptions {
                count: cfg.paths,
                entropies: peer_entropies(peer),
                planes: self.planes,
            };
            let c = self.ctx.connect(&o)?;
            self.out_conns.insert(peer, c);
        }
        Ok(())
    }

    /// Whether every outgoing connection is established.
    pub fn connected(&self) -> bool {
        self.out_conns
            .values()
            .all(|&c| self.ctx.conn_state(c) == Ok(ConnState::Ready))
    }

    /// The library context (statistics, paths).
    pub fn ctx(&self) -> &Context<AnyNic> {
        &self.ctx
    }

    /// Outgoing connections.
    pub fn conns(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.out_conns.values().copied()
    }

    /// Starts the workload.
    pub fn start(&mut self, now: Ps, out: &mut Outbox) {
        self.app.start(&self.wl);
        self.service(now, out);
    }

    fn post_ready(&mut self) {
        let Some(src) = self.src else { return };
        while let Some(m) = self.app.next_ready() {
            let msg = &self.wl.msgs[m as usize];
            let (Some(&c), true) = (
                self.out_conns.get(&msg.dst),
                (msg.dst as usize) < self.remote.len(),
            ) else {
                self.app.stats.app_errors += 1;
                continue;
            };
            let wr = WriteRequest {
                wr_id: m as u64,
                tag: 0,
                sge: src.sge(self.wl.src_off(m), msg.bytes),
                remote_addr: self.remote[msg.dst as usize].0 + self.wl.dst_off[m as usize],
                rkey: self.remote[msg.dst as usize].1,
                imm: Some(m),
                signaled: true,
            };
            match self.ctx.post_write(c, &wr) {
                Ok(()) => {}
                Err(ferroce::Error::SendQueueFull) => {
                    self.app.unready(m);
                    break;
                }
                Err(_) => self.app.stats.app_errors += 1,
            }
        }
    }

    fn service(&mut self, now: Ps, out: &mut Outbox) {
        let now_ns = now / PS_PER_NS;
        let mut wake = None;
        // Completions may make more work ready; a few rounds settle it at this instant.
        for _ in 0..4 {
            if self.app.started() {
                self.post_ready();
            }
            wake = match self.ctx.progress(now_ns) {
                Ok(w) => w,
                Err(_) => {
                    self.lib_errors += 1;
                    self.app.stats.app_errors += 1;
                    Some(now_ns + 1)
                }
            };
            self.handle_cm();
            let got = self.handle_completions(now);
            self.drain(out);
            if got == 0 {
                break;
            }
        }
        self.last_service = Some(now);
        self.poll_due = None;
        self.lib_wake = wake.map(|w| w.max(now_ns + 1) * PS_PER_NS);
        self.schedule(now, out);
    }

    /// Asks to be woken for the earliest of the library's wake, a deferred poll and the NIC's
    /// next ACK timer.
    fn schedule(&mut self, now: Ps, out: &mut Outbox) {
        self.nic_wake = if self.nic_timer_wake {
            let t = self.ctx.nic_mut().next_timer_ns();
            t.map(|t| (t * PS_PER_NS).max(now + 1))
        } else {
            None
        };
        out.wake = [self.lib_wake, self.poll_due, self.nic_wake]
            .into_iter()
            .flatten()
            .min();
    }

    fn handle_cm(&mut self) {
        while let Some(ev) = self.ctx.poll_cm() {
            match ev {
                CmEvent::ConnectRequest(req) => {
                    let opts = AcceptOptions {
                        planes: self.planes,
                        ..AcceptOptions::new(self.pd, self.scq, self.rcq)
                    };
                    if self.ctx.accept(&req, &opts).is_err() {
                        self.app.stats.app_errors += 1;
                    }
                }
                CmEvent::Established(_) => {}
                CmEvent::Failed(..) | CmEvent::Disconnected(_) => self.app.stats.app_errors += 1,
            }
        }
    }

    fn handle_completions(&mut self, now: Ps) -> usize {
        let mut wcs = std::mem::take(&mut self.wcs);
        wcs.clear();
        let mut n = 0;
        let _ = self.ctx.poll_cq(self.scq, usize::MAX, &mut wcs);
        let _ = self.ctx.poll_cq(self.rcq, usize::MAX, &mut wcs);
        for wc in &wcs {
            n += 1;
            if wc.status != WcStatus::Success {
                self.app.stats.app_errors += 1;
                continue;
            }
            match wc.opcode {
                WcOpcode::Write => {
                    if let Ok(m) = u32::try_from(wc.wr_id) {
                        self.app.sent_done(&self.wl, m);
                    }
                }
                WcOpcode::RecvWriteImm => {
                    let Some(m) = wc.imm.filter(|&m| (m as usize) < self.wl.msgs.len()) else {
                        self.app.stats.app_errors += 1;
                        continue;
                    };
                    let ok = self.verify(m);
                    self.app.delivered(&self.wl, m, ok, now);
                }
                _ => {}
            }
        }
        self.wcs = wcs;
        n
    }

    fn verify(&mut self, m: u32) -> bool {
        let msg = &self.wl.msgs[m as usize];
        let Some(dst) = self.dst else { return false };
        if msg.dst != self.host {
            return false;
        }
        // The message may come in pieces (received pages the memory holds by reference).
        let mut crc = crc32fast::Hasher::new();
        let read = self.ctx.inspect_mr(
            &dst,
            self.wl.dst_off[m as usize],
            msg.bytes as usize,
            &mut |bytes| crc.update(bytes),
        );
        read.is_ok() && crc.finalize() == self.crcs[m as usize]
    }

    /// Address and rkey of this host's destination region (what peers write to), exchanged
    /// out of band as perftest does.
    pub fn dst_key(&self) -> (u64, u32) {
        self.dst.map_or((0, 0), |d| (d.addr(), d.rkey()))
    }

    /// Every host's [`FerroceHost::dst_key`], by host.
    pub fn set_remote_keys(&mut self, keys: Arc<Vec<(u64, u32)>>) {
        self.remote = keys;
    }

    /// Whether the NIC completed a received message since the last look.
    fn take_new_completions(&mut self) -> bool {
        let n = self.ctx.device().counter(Counter::RxCompletions);
        let new = n != self.completions_seen;
        self.completions_seen = n;
        new
    }

    fn drain(&mut self, out: &mut Outbox) {
        let sealed = self.ctx.nic_mut().transmits_valid_icrc();
        // Frames as the NIC built them: a model NIC's data frames keep their payload by
        // reference, so the fabric moves headers only.
        while let Some(PortFrameBuf { port, frame }) = self.ctx.nic_mut().transmit_frame_buf() {
            // Every header is in the head, and `frame_info` reads nothing else.
            let Some(info) = frame_info(frame.head()) else {
                continue;
            };
            let Some(dst) = ip_host(info.dst_ip, self.hosts) else {
                continue;
            };
            let wire_len = frame.frame_len() as u32 + WIRE_OVERHEAD;
            if !info.control {
                self.max_frame_wire = self.max_frame_wire.max(wire_len);
            }
            out.send.push((
                port as usize,
                Packet {
                    src: self.host,
                    dst,
                    hash: info.hash,
                    entropy: info.entropy,
                    wire_len,
                    ecn_capable: info.ecn_capable,
                    ce: false,
                    control: info.control,
                    body: Body::Frame(WireFrame::from_nic_buf(frame, sealed)),
                },
            ));
        }
    }
}

impl Endpoint for FerroceHost {
    // The NIC's transmit queues are the library's business; the fabric's port is not.
    const HEARS_PORT_DRAINED: bool = false;

    fn on_packet(&mut self, now: Ps, port: usize, pkt: Packet, out: &mut Outbox) {
        if let Body::Frame(f) = &pkt.body {
            let nic = self.ctx.nic_mut();
            nic.poll(now / PS_PER_NS);
            // The fabric wires host port p to plane p, and the NIC has one port per plane.
            let received = match f.split() {
                Some(s) => nic.receive_split_frame(port as u8, s),
                None if f.icrc_sealed() => {
                    nic.receive_frame_icrc_known_good(port as u8, &f.bytes())
                }
                None => nic.receive_frame(port as u8, &f.bytes()),
            };
            if received.is_err() {
                self.lib_errors += 1;
            }
            if !pkt.control {
                // New payload the NIC placed (not a duplicate, not refused): goodput.
                let placed = self.ctx.device().counter(Counter::RxPlacedBytes);
                self.app.placed(now, placed.wrapping_sub(self.placed_seen));
                self.placed_seen = placed;
            }
        }
        // The NIC's own replies (ACKs) leave now; the host loop runs on its polling schedule.
        self.drain(out);
        // A receive completion reaches the application by the baseline's rule
        // (`RoceConfig::poll_interval`): at the first completion-queue poll at or after it,
        // polls that find completions being at least one period apart. The library's other
        // work (ACKs, pacing, timers) keeps to the driver loop's period.
        let cq_due = self.last_cq_poll.map_or(now, |t| t + self.poll_interval) <= now
            && self.take_new_completions();
        if cq_due {
            self.last_cq_poll = Some(now);
        }
        let due = self.last_service.map_or(now, |t| t + self.poll_interval);
        if cq_due || due <= now {
            self.service(now, out);
        } else {
            self.poll_due = Some(self.poll_due.map_or(due, |d| d.min(due)));
            self.schedule(now, out);
        }
    }

    fn on_wake(&mut self, now: Ps, out: &mut Outbox) {
        let due = |t: Option<Ps>| t.is_some_and(|t| t <= now);
        if due(self.lib_wake) || due(self.poll_due) || !due(self.nic_wake) {
            self.service(now, out);
        } else {
            // Only the NIC's ACK timer: the NIC sends its ACKs; the library is not involved.
            self.ctx.nic_mut().poll(now / PS_PER_NS);
            self.drain(out);
            self.schedule(now, out);
        }
    }

    fn on_link_change(&mut self, now: Ps, port: usize, up: bool, out: &mut Outbox) {
        // The PHY's state reaches `PORT_LINK`; the library reads it with its rate hints
        // (`DeviceConfig::hint_interval_ns`), in the host loop run here as a link-change
        // interrupt would run it.
        let nic = self.ctx.nic_mut();
        nic.poll(now / PS_PER_NS);
        if nic.set_link(port as u8, up).is_err() {
            self.lib_errors += 1;
        }
        self.service(now, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_get_blocks_of_their_own_and_addresses_map_back() {
        let (a, b) = (peer_entropies(5), peer_entropies(6));
        assert_eq!(a.len(), 64);
        assert!(a.iter().all(|e| !b.contains(e)));
        assert_eq!(ip_host(host_ip(77), 100), Some(77));
        assert_eq!(ip_host(host_ip(100), 100), None);
    }
}
