//! Two nodes joined by a [`Link`], each a host-library [`Context`] on a NIC backend, stepped on
//! simulated time: the harness of the two-node tests and of the perftest-style commands.
//!
//! A step lets both contexts make progress, puts every frame their NICs sent on the link
//! (through a caller's hook, which may count, rewrite or drop it), delivers the frames due,
//! drains both nodes' completion queues and says when the next thing happens. Node A requests
//! the connection, node B accepts it.

use crate::backend::AnyNic;
use crate::link::{Link, Side};
use ferroce::{
    AcceptOptions, CmEvent, ConnId, ConnectOptions, ConnectRequest, Context, Cq, DeviceConfig,
    FailReason, Pd, WorkCompletion,
};
use ferroce_driver::{PortFrame, SimPort};
use ferroce_proto::wire::EthernetAddress;
use std::net::IpAddr;

/// Limits a node applies when it accepts a connection (see [`AcceptOptions`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcceptLimits {
    /// At most this many paths.
    pub max_paths: Option<u16>,
    /// At most this MTU.
    pub max_mtu: Option<u32>,
    /// At most this many Tags.
    pub max_tags: Option<u16>,
}

/// One end: a context with a protection domain, a send and a receive CQ, and what its CM
/// exchange and CQs delivered so far.
pub struct Node {
    /// The host library on this node's NIC.
    pub ctx: Context<AnyNic>,
    /// Protection domain of the connection.
    pub pd: Pd,
    /// Send-side completion queue.
    pub scq: Cq,
    /// Receive-side completion queue.
    pub rcq: Cq,
    /// MAC address (`02:00:00:00:00:<last>`).
    pub mac: EthernetAddress,
    /// IP address (`10.0.0.<last>`).
    pub ip: IpAddr,
    /// The connection (A: the one it requested; B: the one it accepted last).
    pub conn: Option<ConnId>,
    /// Send completions drained so far.
    pub send_wcs: Vec<WorkCompletion>,
    /// Receive completions drained so far.
    pub recv_wcs: Vec<WorkCompletion>,
    /// Connections reported failed.
    pub failed: Vec<(ConnId, FailReason)>,
    /// Connections reported disconnected.
    pub disconnected: Vec<ConnId>,
    /// Connections reported established.
    pub established: Vec<ConnId>,
    /// Connection requests this node accepted.
    pub requests: Vec<ConnectRequest>,
    /// Limits of this node's accepts.
    pub accept: AcceptLimits,
}

impl Node {
    /// The MAC and IP address of node `last`.
    pub fn address(last: u8) -> (EthernetAddress, IpAddr) {
        let ip = IpAddr::from([10, 0, 0, last]);
        (EthernetAddress([2, 0, 0, 0, 0, last]), ip)
    }

    /// Node `last` on `nic`, configured by `dc` (whose addresses are replaced by the node's).
    pub fn new(last: u8, nic: AnyNic, mut dc: DeviceConfig) -> Result<Node, ferroce::Error> {
        let (mac, ip) = Self::address(last);
        dc.mac = mac;
        dc.ip = ip;
        let mut ctx = Context::open(nic, dc)?;
        let pd = ctx.alloc_pd();
        let scq = ctx.create_cq(1 << 16)?;
        let rcq = ctx.create_cq(1 << 16)?;
        Ok(Node {
            ctx,
            pd,
            scq,
            rcq,
            mac,
            ip,
            conn: None,
            send_wcs: Vec::new(),
            recv_wcs: Vec::new(),
            failed: Vec::new(),
            disconnected: Vec::new(),
            established: Vec::new(),
            requests: Vec::new(),
            accept: AcceptLimits::default(),
        })
    }

    /// The connection; panics before there is one.
    pub fn conn(&self) -> ConnId {
        self.conn.expect("connected")
    }

    /// Takes the CM events: accepts every request (within [`Node::accept`]) and records the
    /// rest.
    pub fn handle_cm(&mut self) -> Result<(), ferroce::Error> {
        while let Some(ev) = self.ctx.poll_cm() {
            match ev {
                CmEvent::ConnectRequest(req) => {
                    let opts = AcceptOptions {
                        max_paths: self.accept.max_paths,
                        max_mtu: self.accept.max_mtu,
                        max_tags: self.accept.max_tags,
                        ..AcceptOptions::new(self.pd, self.scq, self.rcq)
                    };
                    self.conn = Some(self.ctx.accept(&req, &opts)?);
                    self.requests.push(req);
                }
                CmEvent::Established(c) => self.established.push(c),
                CmEvent::Failed(c, r) => self.failed.push((c, r)),
                CmEvent::Disconnected(c) => self.disconnected.push(c),
            }
        }
        Ok(())
    }
}

/// Puts a frame a node's NIC sent on the link: `(link, now, side, frame)`. A harness's hook may
/// count, rewrite or drop the frame first.
pub type SendHook<'a> = dyn FnMut(&mut Link, u64, Side, Vec<u8>) + 'a;

/// What one [`Pair::step`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Frames were delivered to a NIC.
    pub delivered: bool,
    /// Completions drained from the CQs.
    pub completions: usize,
    /// When the next thing happens (a library timer or a delivery), after now.
    pub wake: u64,
}

/// Two nodes and the link between them, at simulated time `now` (ns).
pub struct Pair {
    /// The requester.
    pub a: Node,
    /// The acceptor.
    pub b: Node,
    /// The link.
    pub link: Link,
    /// Simulated time (ns).
    pub now: u64,
}

impl Pair {
    /// Joins `a` and `b` by `link` at time 0; B listens and A requests a connection with
    /// `opts` (its addresses point at B).
    pub fn connect(
        a: Node,
        b: Node,
        link: Link,
        mut opts: ConnectOptions,
    ) -> Result<Pair, ferroce::Error> {
        let mut p = Pair { a, b, link, now: 0 };
        p.b.ctx.listen(true);
        opts.peer_mac = p.b.mac;
        opts.peer_ip = p.b.ip;
        p.a.conn = Some(p.a.ctx.connect(&opts)?);
        Ok(p)
    }

    /// One step at `now`, every frame a NIC sends going straight onto the link.
    pub fn step(&mut self) -> Result<Step, ferroce::Error> {
        self.step_with(&mut |link, now, side, frame| {
            link.send(now, side, frame);
        })
    }

    /// One step at `now`; `send(link, now, side, frame)` puts each frame a NIC sent on the
    /// link (or counts, rewrites or drops it first).
    pub fn step_with(&mut self, send: &mut SendHook) -> Result<Step, ferroce::Error> {
        step(&mut self.a, &mut self.b, &mut self.link, self.now, send)
    }
}

/// One step of nodes `a` and `b` joined by `link` at `now` (see [`Pair::step_with`]), for
/// harnesses that keep the parts in their own structure.
pub fn step(
    a: &mut Node,
    b: &mut Node,
    link: &mut Link,
    now: u64,
    send: &mut SendHook,
) -> Result<Step, ferroce::Error> {
    let wa = a.ctx.progress(now)?;
    let wb = b.ctx.progress(now)?;
    a.handle_cm()?;
    b.handle_cm()?;
    for (side, node) in [(Side::A, &mut *a), (Side::B, &mut *b)] {
        while let Some(PortFrame { bytes: frame, .. }) = node.ctx.nic_mut().transmit_frame() {
            send(link, now, side, frame);
        }
    }
    let mut delivered = false;
    while let Some((_, side, frame)) = link.deliver(now) {
        let node = match side {
            Side::A => &mut *a,
            Side::B => &mut *b,
        };
        // A pair has one link: everything on port 0.
        node.ctx
            .nic_mut()
            .receive_frame(0, &frame)
            .map_err(ferroce::Error::Nic)?;
        delivered = true;
    }
    let mut completions = 0;
    for n in [a, b] {
        completions += n.ctx.poll_cq(n.scq, usize::MAX, &mut n.send_wcs)?;
        completions += n.ctx.poll_cq(n.rcq, usize::MAX, &mut n.recv_wcs)?;
    }
    let wake = [wa, wb, link.next_delivery()]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(now + 10_000)
        .max(now + 1);
    Ok(Step {
        delivered,
        completions,
        wake,
    })
}
