//! The discrete-event engine: packets through ports, links and switches, endpoints woken only
//! when a packet reaches them, a port they feed drains, or the time they asked for comes.

use super::event::{EventQueue, PS_PER_NS, Ps};
use super::failure::{Failure, FailureTarget};
use super::packet::Packet;
use super::port::{Enqueued, LinkRole};
use super::topology::{Network, NodeKind};

/// What an endpoint hands back after handling something.
#[derive(Debug, Default)]
pub struct Outbox {
    /// Packets to send, with the NIC port (= plane) each leaves on.
    pub send: Vec<(usize, Packet)>,
    /// When to be woken next (absolute), if ever. This replaces any earlier request.
    pub wake: Option<Ps>,
}

/// A host's transport: the ferroce host library on a NIC backend, or the RoCEv2 baseline.
/// On entry `out.wake` holds the host's current wake request (`None` in `on_wake`, which
/// consumed it); whatever it holds on return is the new request.
pub trait Endpoint {
    /// A packet arrived on NIC port `port`.
    fn on_packet(&mut self, now: Ps, port: usize, pkt: Packet, out: &mut Outbox);
    /// The requested wake time came.
    fn on_wake(&mut self, now: Ps, out: &mut Outbox);
    /// NIC port `port` finished serialising a packet (its queue is `queued` bytes now).
    fn on_port_drained(&mut self, _now: Ps, _port: usize, _queued: u64, _out: &mut Outbox) {}
    /// Whether [`Endpoint::on_port_drained`] may do anything. An endpoint that keeps the
    /// default (nothing) says false, and the engine leaves out the call and the outbox round
    /// trip after every packet it sends (its wake request stays as it is either way).
    const HEARS_PORT_DRAINED: bool = true;
    /// The link of NIC port `port` went down or came back, as its PHY reports it: up only
    /// while both directions of the cable carry traffic (Ethernet's remote-fault signalling
    /// tells each end when the other stops hearing it). The default ignores it.
    fn on_link_change(&mut self, _now: Ps, _port: usize, _up: bool, _out: &mut Outbox) {}
}

enum Ev {
    TxDone { node: u32, port: u16 },
    Arrive { node: u32, port: u16, pkt: Packet },
    Wake { host: u32 },
    Fail(Failure),
}

/// Engine counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FabricStats {
    /// Packet events (a packet finishing serialisation on a port, or arriving at a node).
    pub packet_events: u64,
    /// Endpoint calls (packet handed to a host, wake, port drained).
    pub host_events: u64,
    /// Packets lost to loss processes.
    pub lost: u64,
    /// Packets lost on down links.
    pub down_drops: u64,
    /// Packets dropped by full switch buffers.
    pub buffer_drops: u64,
    /// Packets a switch could not route.
    pub unroutable: u64,
}

/// Bytes of data (non-control) packets arriving at hosts, per time bin: optionally split by
/// sender for one receiving host.
#[derive(Debug, Clone)]
pub struct ArrivalTrace {
    /// Bin width.
    pub bin: Ps,
    /// Per bin: data bytes arriving at any host.
    pub total: Vec<u64>,
    /// Host whose arrivals are split by sender.
    pub host: Option<u32>,
    /// Per bin, per sending host: data bytes arriving at `host`.
    pub by_src: Vec<Vec<u64>>,
}

/// A fabric with its endpoints.
pub struct Fabric<E> {
    /// The wired network.
    pub net: Network,
    /// Endpoint of host `i`.
    pub hosts: Vec<E>,
    q: EventQueue<Ev>,
    now: Ps,
    wake_at: Vec<Option<Ps>>,
    /// Earliest wake event of each host still in the queue (later ones are stale).
    pending: Vec<Option<Ps>>,
    out: Outbox,
    /// Counters.
    pub stats: FabricStats,
    /// Optional arrival trace.
    pub trace: Option<ArrivalTrace>,
}

impl<E: Endpoint> Fabric<E> {
    /// Endpoints on a network (`hosts.len()` must equal the network's host count).
    pub fn new(net: Network, hosts: Vec<E>) -> Self {
        let n = hosts.len();
        Fabric {
            net,
            hosts,
            q: EventQueue::default(),
            now: 0,
            wake_at: vec![None; n],
            pending: vec![None; n],
            out: Outbox::default(),
            stats: FabricStats::default(),
            trace: None,
        }
    }

    /// Current simulated time.
    pub fn now(&self) -> Ps {
        self.now
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.q.processed()
    }

    /// Schedules a failure or repair.
    pub fn schedule(&mut self, f: Failure) {
        self.q.push(f.at, Ev::Fail(f));
    }

    /// Wakes host `h` at `at` (e.g. to let it start its workload).
    pub fn wake(&mut self, h: u32, at: Ps) {
        self.request_wake(h, Some(at));
    }

    /// Records arrivals in bins of `bin`, split by sender for `host`.
    pub fn enable_trace(&mut self, bin: Ps, host: Option<u32>) {
        self.trace = Some(ArrivalTrace {
            bin: bin.max(1),
            total: Vec::new(),
            host,
            by_src: Vec::new(),
        });
    }

    /// Runs a closure on host `h` with an outbox, then sends what it produced (for the
    /// experiment driving the endpoints from outside, e.g. posting a workload).
    pub fn with_host<R>(&mut self, h: u32, f: impl FnOnce(&mut E, Ps, &mut Outbox) -> R) -> R {
        let mut out = std::mem::take(&mut self.out);
        let now = self.now;
        let r = f(&mut self.hosts[h as usize], now, &mut out);
        self.flush(h, &mut out);
        self.out = out;
        r
    }

    fn request_wake(&mut self, h: u32, at: Option<Ps>) {
        let Some(at) = at else {
            self.wake_at[h as usize] = None;
            return;
        };
        // Never in the past; and never the same instant twice in a row (no busy loops).
        let at = if self.wake_at[h as usize] == Some(at) {
            at
        } else {
            at.max(self.now + 1)
        };
        self.wake_at[h as usize] = Some(at);
        // A wake event already queued for no later than `at` will do: when it fires early it
        // re-queues itself for the current request. Hosts move their wake time on almost
        // every packet, and this keeps those moves out of the heap.
        if self.pending[h as usize].is_none_or(|p| at < p) {
            self.pending[h as usize] = Some(at);
            self.q.push(at, Ev::Wake { host: h });
        }
    }

    fn flush(&mut self, h: u32, out: &mut Outbox) {
        // Most calls send nothing: no drain to set up and tear down for them.
        if !out.send.is_empty() {
            for (port, pkt) in out.send.drain(..) {
                self.enqueue(h, port as u16, pkt);
            }
        }
        let w = out.wake.take();
        self.request_wake(h, w);
    }

    fn enqueue(&mut self, node: u32, port: u16, pkt: Packet) {
        let Some(p) = self.net.nodes[node as usize].ports.get_mut(port as usize) else {
            self.stats.unroutable += 1;
            return;
        };
        match p.enqueue(pkt) {
            Enqueued::StartTx => self.start_tx(node, port),
            Enqueued::Queued => {}
            Enqueued::Dropped => self.stats.buffer_drops += 1,
        }
    }

    fn start_tx(&mut self, node: u32, port: u16) {
        let p = &self.net.nodes[node as usize].ports[port as usize];
        if let Some(len) = p.head_len() {
            let t = self.net.links[p.link].tx_time(len);
            self.q.push(self.now + t, Ev::TxDone { node, port });
        }
    }

    /// Runs until simulated time `until` (events at `until` included) or until no event is
    /// left. Returns false if the queue ran dry.
    pub fn run_until(&mut self, until: Ps) -> bool {
        while let Some((t, ev)) = self.q.pop_until(until) {
            self.now = t;
            self.handle(ev);
        }
        let more = !self.q.is_empty();
        self.now = if more { until } else { self.now.max(until) };
        more
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::TxDone { node, port } => {
                self.stats.packet_events += 1;
                let p = &mut self.net.nodes[node as usize].ports[port as usize];
                let link_i = p.link;
                let Some(pkt) = p.finish_tx() else { return };
                let (more, queued) = (!p.is_empty(), p.bytes());
                if more {
                    self.start_tx(node, port);
                }
                let link = &mut self.net.links[link_i];
                if !link.up {
                    link.stats.down_drops += 1;
                    self.stats.down_drops += 1;
                } else if !link.loss.is_none() && link.loss.lose(pkt.control) {
                    link.stats.lost += 1;
                    self.stats.lost += 1;
                } else {
                    let (to, to_port) = (link.to_node, link.to_port);
                    self.q.push(
                        self.now + link.delay_ps,
                        Ev::Arrive {
                            node: to,
                            port: to_port,
                            pkt,
                        },
                    );
                }
                if let NodeKind::Host(h) = self.net.nodes[node as usize].kind {
                    self.stats.host_events += 1;
                    if !E::HEARS_PORT_DRAINED {
                        return;
                    }
                    let mut out = std::mem::take(&mut self.out);
                    out.wake = self.wake_at[h as usize];
                    self.hosts[h as usize].on_port_drained(
                        self.now,
                        port as usize,
                        queued,
                        &mut out,
                    );
                    self.flush(h, &mut out);
                    self.out = out;
                }
            }
            Ev::Arrive { node, port, pkt } => {
                self.stats.packet_events += 1;
                match self.net.nodes[node as usize].kind {
                    NodeKind::Switch(s) => {
                        match self.net.switches[s as usize].route(pkt.dst, pkt.hash) {
                            Some(out) => self.enqueue(node, out, pkt),
                            None => self.stats.unroutable += 1,
                        }
                    }
                    NodeKind::Host(h) => {
                        if !pkt.control {
                            self.record(h, &pkt);
                        }
                        self.stats.host_events += 1;
                        let mut out = std::mem::take(&mut self.out);
                        out.wake = self.wake_at[h as usize];
                        self.hosts[h as usize].on_packet(self.now, port as usize, pkt, &mut out);
                        self.flush(h, &mut out);
                        self.out = out;
                    }
                }
            }
            Ev::Wake { host } => {
                let h = host as usize;
                if self.pending[h] != Some(self.now) {
                    return; // an earlier wake event replaced this one
                }
                self.pending[h] = None;
                match self.wake_at[h] {
                    None => return,
                    Some(t) if t > self.now => {
                        // Woken early: the request moved later meanwhile.
                        self.pending[h] = Some(t);
                        self.q.push(t, Ev::Wake { host });
                        return;
                    }
                    Some(_) => {}
                }
                self.wake_at[host as usize] = None;
                self.stats.host_events += 1;
                let mut out = std::mem::take(&mut self.out);
                self.hosts[host as usize].on_wake(self.now, &mut out);
                self.flush(host, &mut out);
                self.out = out;
            }
            Ev::Fail(f) => self.apply(f),
        }
    }

    fn record(&mut self, h: u32, pkt: &Packet) {
        let Some(tr) = self.trace.as_mut() else {
            return;
        };
        let bin = (self.now / tr.bin) as usize;
        if tr.total.len() <= bin {
            tr.total.resize(bin + 1, 0);
        }
        tr.total[bin] += pkt.wire_len as u64;
        if tr.host == Some(h) {
            if tr.by_src.len() <= bin {
                tr.by_src.resize(bin + 1, Vec::new());
            }
            let row = &mut tr.by_src[bin];
            if row.len() <= pkt.src as usize {
                row.resize(pkt.src as usize + 1, 0);
            }
            row[pkt.src as usize] += pkt.wire_len as u64;
        }
    }

    fn apply(&mut self, f: Failure) {
        let before = self.host_links();
        match f.target {
            FailureTarget::Link(i) => {
                if let Some(l) = self.net.links.get_mut(i) {
                    l.up = !f.down;
                }
            }
            FailureTarget::Plane(p) => {
                for l in self.net.links.iter_mut().filter(|l| l.plane == p) {
                    l.up = !f.down;
                }
            }
            FailureTarget::PlaneSpines(p) => {
                for l in self.net.links.iter_mut().filter(|l| {
                    l.plane == p && matches!(l.role, LinkRole::LeafUp | LinkRole::SpineDown)
                }) {
                    l.up = !f.down;
                }
            }
        }
        let after = self.host_links();
        for (h, (old, new)) in before.iter().zip(&after).enumerate() {
            for (port, (&was, &is)) in old.iter().zip(new).enumerate() {
                if was != is {
                    let mut out = std::mem::take(&mut self.out);
                    out.wake = self.wake_at[h];
                    self.stats.host_events += 1;
                    self.hosts[h].on_link_change(self.now, port, is, &mut out);
                    self.flush(h as u32, &mut out);
                    self.out = out;
                }
            }
        }
    }

    /// Per host, per NIC port: whether both directions of its cable are up.
    fn host_links(&self) -> Vec<Vec<bool>> {
        let mut up: Vec<Vec<bool>> = vec![Vec::new(); self.hosts.len()];
        for node in &self.net.nodes {
            if let NodeKind::Host(h) = node.kind {
                up[h as usize] = node
                    .ports
                    .iter()
                    .map(|p| self.net.links[p.link].up)
                    .collect();
            }
        }
        for l in &self.net.links {
            if let NodeKind::Host(h) = self.net.nodes[l.to_node as usize].kind
                && let Some(u) = up[h as usize].get_mut(l.to_port as usize)
            {
                *u &= l.up;
            }
        }
        up
    }
}

/// Nanoseconds to picoseconds.
pub fn ns(n: u64) -> Ps {
    n * PS_PER_NS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::packet::Body;
    use crate::fabric::topology::TopologyConfig;
    use crate::roce::RocePacket;

    /// Sends one packet to host 1 when woken; records arrivals.
    #[derive(Default)]
    struct Probe {
        got: Vec<(Ps, u32)>,
        send: Option<(u32, u16, u32)>,
        links: Vec<(Ps, usize, bool)>,
    }

    impl Endpoint for Probe {
        fn on_packet(&mut self, now: Ps, _port: usize, pkt: Packet, _out: &mut Outbox) {
            self.got.push((now, pkt.wire_len));
        }
        fn on_link_change(&mut self, now: Ps, port: usize, up: bool, _out: &mut Outbox) {
            self.links.push((now, port, up));
        }
        fn on_wake(&mut self, _now: Ps, out: &mut Outbox) {
            if let Some((dst, entropy, len)) = self.send.take() {
                out.send.push((
                    0,
                    Packet {
                        src: 0,
                        dst,
                        hash: crate::fabric::packet::five_tuple_hash(1, 2, entropy, 4791),
                        entropy,
                        wire_len: len,
                        ecn_capable: true,
                        ce: false,
                        control: false,
                        body: Body::Roce(RocePacket::default()),
                    },
                ));
            }
        }
    }

    #[test]
    fn store_and_forward_timing_across_a_leaf_and_a_spine() {
        let cfg = TopologyConfig {
            hosts: 4,
            hosts_per_leaf: 2,
            spines: 2,
            link_delay_ns: 1_000,
            ..Default::default()
        };
        let net = Network::leaf_spine(&cfg);
        let mut hosts: Vec<Probe> = (0..4).map(|_| Probe::default()).collect();
        // Same leaf (host 1) and across a spine (host 3).
        hosts[0].send = Some((1, 50_000, 1_000));
        let mut fab = Fabric::new(net, hosts);
        fab.wake(0, 0);
        fab.run_until(100_000_000);
        // 1000 B at 100 Gb/s = 80 ns per hop, plus 1 us per link; two links.
        let first = 1;
        assert_eq!(
            fab.hosts[1].got,
            vec![(first + 2 * (80_000 + 1_000_000), 1_000)]
        );
        fab.hosts[0].send = Some((3, 50_000, 1_000));
        let t0 = fab.now();
        fab.wake(0, t0);
        fab.run_until(t0 + 100_000_000);
        // A wake is never at the current instant: it runs 1 ps later.
        assert_eq!(fab.hosts[3].got[0].0 - (t0 + 1), 4 * (80_000 + 1_000_000));
        assert_eq!(fab.stats.packet_events, 2 * 2 + 2 * 4);
    }

    /// Two hosts on one leaf of each of two planes.
    fn two_hosts_on_two_planes() -> Network {
        Network::leaf_spine(&TopologyConfig {
            hosts: 2,
            hosts_per_leaf: 2,
            planes: 2,
            ..Default::default()
        })
    }

    #[test]
    fn down_link_drops_and_plane_failure() {
        let net = two_hosts_on_two_planes();
        let mut fab = Fabric::new(net, vec![Probe::default(), Probe::default()]);
        fab.schedule(Failure {
            at: 0,
            target: FailureTarget::Plane(0),
            down: true,
        });
        fab.hosts[0].send = Some((1, 7, 500));
        fab.wake(0, 10);
        fab.run_until(10_000_000);
        assert!(fab.hosts[1].got.is_empty());
        assert_eq!(fab.stats.down_drops, 1);
        // Both hosts' port 0 reported down once, at the failure; port 1 never.
        for h in &fab.hosts {
            assert_eq!(h.links, vec![(0, 0, false)]);
        }
    }

    #[test]
    fn a_host_port_link_is_up_only_while_both_directions_are() {
        let net = two_hosts_on_two_planes();
        // The direction from the leaf into host 1's port 1.
        let into_1 = net
            .links
            .iter()
            .position(|l| {
                l.plane == 1 && matches!(net.nodes[l.to_node as usize].kind, NodeKind::Host(1))
            })
            .expect("a link into host 1 on plane 1");
        let mut fab = Fabric::new(net, vec![Probe::default(), Probe::default()]);
        for (at, down) in [(1_000, true), (2_000, false)] {
            fab.schedule(Failure {
                at,
                target: FailureTarget::Link(into_1),
                down,
            });
        }
        fab.run_until(10_000);
        assert!(fab.hosts[0].links.is_empty(), "host 0's cables are whole");
        assert_eq!(
            fab.hosts[1].links,
            vec![(1_000, 1, false), (2_000, 1, true)]
        );
    }
}
