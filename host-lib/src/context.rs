//! The verbs-like API over one NIC: protection domains, memory regions, completion queues,
//! connections with their CM exchange, posting, polling, and the driver loop
//! ([`Context::progress`]) that moves descriptors and events between the NIC and the sans-IO
//! core.

use crate::core::host_budget::{HostBudget, Refusal, round_robin_among};
use crate::core::{
    ConnState, Connection, ConnectionParams, ConnectionStats, FailReason, FairShare, PathStats,
    TagMode, TransportConfig, WorkCompletion, WorkRequest, WrKind,
};
use crate::error::{Error, Result};
use conn_table::ConnTable;
use ferroce_driver::{Device, Nic};
use ferroce_proto::hsi::tables::{
    ACCESS_LOCAL_WRITE, ACCESS_REMOTE_READ, ACCESS_REMOTE_WRITE, FLOW_READ_WORDS,
};
use ferroce_proto::hsi::{
    ConnectionEntry, Counter, Event, MAX_PAYLOAD_LEN, RegionEntry, TableId, TableSizes,
    TxDescriptor, regs,
};
use ferroce_proto::wire::{
    CmKind, CmRepr, EthernetAddress, FSN_MASK, Opcode, SACK_BITS, fsn_diff,
    transport::{CM_LEN, cm::TAGS_PER_PAGE},
};
use std::collections::VecDeque;
use std::net::IpAddr;

mod conn_table;

/// Access rights of a memory region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Access(u8);

impl Access {
    /// No remote access, no NIC writes (a source buffer for Sends and Writes).
    pub const NONE: Access = Access(0);
    /// The NIC may write it on our behalf: needed for receive buffers.
    pub const LOCAL_WRITE: Access = Access(ACCESS_LOCAL_WRITE);
    /// Peers may RDMA Write into it.
    pub const REMOTE_WRITE: Access = Access(ACCESS_REMOTE_WRITE);
    /// Peers may RDMA Read it (reserved: ferroce has no Read yet).
    pub const REMOTE_READ: Access = Access(ACCESS_REMOTE_READ);

    /// The raw `ACCESS_*` bits of the region table.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Whether every right of `other` is granted.
    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

/// A protection domain: regions and connections that may be used together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pd(u32);

/// A completion queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cq(u32);

/// A connection (the queue pair of the verbs model, carrying many Tags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(u32);

impl ConnId {
    /// The NIC connection id.
    pub fn id(self) -> u32 {
        self.0
    }
}

/// A registered memory region. Its addresses are IO virtual addresses, which are what a peer
/// writes to (`addr()` is what to send it with the rkey).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemoryRegion {
    index: u32,
    key: u8,
    pd: Pd,
    addr: u64,
    len: u64,
    access: Access,
}

impl MemoryRegion {
    /// Local key: names the region in [`Sge`]s.
    pub fn lkey(&self) -> u32 {
        self.index << 8 | self.key as u32
    }
    /// Remote key: what a peer puts in its Writes.
    pub fn rkey(&self) -> u32 {
        self.lkey()
    }
    /// First byte (IO virtual address).
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Whether the region is empty (never: registration refuses zero lengths).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Access rights.
    pub fn access(&self) -> Access {
        self.access
    }
    /// The protection domain.
    pub fn pd(&self) -> Pd {
        self.pd
    }
    /// A scatter-gather element for `len` bytes at `offset` into the region (not checked
    /// here; posting checks it).
    pub fn sge(&self, offset: u64, len: u32) -> Sge {
        Sge {
            addr: self.addr.wrapping_add(offset),
            len,
            lkey: self.lkey(),
        }
    }
}

/// A local buffer: address, length and the lkey of the region holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sge {
    /// First byte (IO virtual address).
    pub addr: u64,
    /// Length.
    pub len: u32,
    /// Local key of the region.
    pub lkey: u32,
}

/// A Send (SendImm with `imm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendRequest {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Tag.
    pub tag: u16,
    /// Local data.
    pub sge: Sge,
    /// Immediate data.
    pub imm: Option<u32>,
    /// Surface a successful completion (errors always surface).
    pub signaled: bool,
    /// Set the solicited-event bit.
    pub solicited: bool,
}

/// An RDMA Write (WriteImm with `imm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRequest {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Tag.
    pub tag: u16,
    /// Local data.
    pub sge: Sge,
    /// Remote address of the first byte.
    pub remote_addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Immediate data (surfaces a completion at the peer).
    pub imm: Option<u32>,
    /// Surface a successful completion (errors always surface).
    pub signaled: bool,
}

/// A receive buffer for the next Send on a Tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvRequest {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Tag.
    pub tag: u16,
    /// The buffer (its region needs [`Access::LOCAL_WRITE`]).
    pub sge: Sge,
}

/// Paths and planes (the extension API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathOptions {
    /// Flows (paths) of the connection.
    pub count: u16,
    /// Entropies (UDP source ports) flows start on and move to; flow `i` starts on entry
    /// `i`. Empty: a per-connection range of 64 ports from 49152.
    pub entropies: Vec<u16>,
    /// Planes (NIC ports), 1 to the NIC's port count: flow `i` starts on port `i % planes`,
    /// and a flow that moves to a new entropy after timeouts also moves to another plane.
    pub planes: u8,
}

impl Default for PathOptions {
    fn default() -> Self {
        PathOptions {
            count: 4,
            entropies: Vec::new(),
            planes: 1,
        }
    }
}

/// What [`Context::connect`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Protection domain of the connection.
    pub pd: Pd,
    /// Where send-side completions go.
    pub send_cq: Cq,
    /// Where receive-side completions go.
    pub recv_cq: Cq,
    /// The peer's (next hop's) MAC.
    pub peer_mac: EthernetAddress,
    /// The peer's IP (same family as ours).
    pub peer_ip: IpAddr,
    /// Completion mode of each Tag (the Tag count is its length: 1 to the NIC's Tag contexts,
    /// at most [`MAX_TAGS`]). Modes of Tags beyond 63 travel in CM `TagModes` messages.
    pub tags: Vec<TagMode>,
    /// Payload bytes per packet ([`MIN_MTU`]–8192). The acceptor may grant less.
    pub mtu: u32,
    /// Paths and planes.
    pub paths: PathOptions,
    /// 802.1Q TCI, if the link is tagged.
    pub vlan_tci: Option<u16>,
}

impl ConnectOptions {
    /// Four paths, one ordered Tag, 4096-byte MTU.
    pub fn new(
        pd: Pd,
        send_cq: Cq,
        recv_cq: Cq,
        peer_mac: EthernetAddress,
        peer_ip: IpAddr,
    ) -> Self {
        ConnectOptions {
            pd,
            send_cq,
            recv_cq,
            peer_mac,
            peer_ip,
            tags: vec![TagMode::Ordered],
            mtu: 4096,
            paths: PathOptions::default(),
            vlan_tci: None,
        }
    }
}

/// A connection request from a peer, waiting for [`Context::accept`] or [`Context::reject`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectRequest {
    id: u64,
    /// The peer's IP.
    pub peer_ip: IpAddr,
    /// The peer's MAC.
    pub peer_mac: EthernetAddress,
    /// Paths it asks for.
    pub paths: u16,
    /// MTU it asks for.
    pub mtu: u32,
    /// Tags it asks for.
    pub tag_count: u16,
    /// Modes of the Tags it asks for: `tag_count` of them, or, when it asks for more than this
    /// NIC's Tag contexts (or [`MAX_TAGS`]), of the first that many (an accept keeps no
    /// more).
    pub tags: Vec<TagMode>,
    /// Its line rate (Mb/s).
    pub peer_rate_mbps: u32,
    vlan_tci: Option<u16>,
    msg: CmRepr,
}

/// Where [`Context::accept`] puts the connection, and the acceptor's limits for the
/// negotiation: the connection gets `min(offered, limit)` paths, MTU and Tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptOptions {
    /// Protection domain.
    pub pd: Pd,
    /// Send-side completions.
    pub send_cq: Cq,
    /// Receive-side completions.
    pub recv_cq: Cq,
    /// Most paths (flows) to grant (`None`: the NIC's flow entries; at least 1).
    pub max_paths: Option<u16>,
    /// Largest MTU to grant (`None`: 8192; at least [`MIN_MTU`]).
    pub max_mtu: Option<u32>,
    /// Most Tags to grant (`None`: the NIC's Tag contexts, at most [`MAX_TAGS`]; at least 1).
    /// The Tags kept are the first ones, with the requester's modes.
    pub max_tags: Option<u16>,
    /// Planes (NIC ports) our flows spread over, as [`PathOptions::planes`] (default 1).
    pub planes: u8,
}

impl AcceptOptions {
    /// No limits beyond the NIC's and the library's.
    pub fn new(pd: Pd, send_cq: Cq, recv_cq: Cq) -> Self {
        AcceptOptions {
            pd,
            send_cq,
            recv_cq,
            max_paths: None,
            max_mtu: None,
            max_tags: None,
            planes: 1,
        }
    }
}

/// The shape a connection runs with: what the CM exchange agreed (on the requester, after the
/// acceptor's Reply; before it, what was offered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionShape {
    /// Paths (flows).
    pub paths: u16,
    /// Payload bytes per packet.
    pub mtu: u32,
    /// Mode of every Tag; its length is the Tag count.
    pub tags: Vec<TagMode>,
}

/// Smallest MTU (payload bytes per packet) a connection may offer or be granted.
pub const MIN_MTU: u32 = 64;
/// The library's limit of Tags per connection (the NIC's Tag contexts may bound it lower).
pub const MAX_TAGS: u16 = 4096;

/// Connection-management events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmEvent {
    /// A peer asks to connect (only while listening).
    ConnectRequest(ConnectRequest),
    /// The connection is established; both sides may transmit.
    Established(ConnId),
    /// The connection failed; its outstanding requests were flushed to the CQs.
    Failed(ConnId, FailReason),
    /// The connection was closed by [`Context::disconnect`] on either side (or the peer did not
    /// answer the disconnect request in time); its outstanding requests were flushed to the
    /// CQs with [`crate::WcStatus::Flushed`]. Free it with
    /// [`Context::destroy_connection`].
    Disconnected(ConnId),
}

/// Device-wide settings.
#[derive(Debug, Clone)]
pub struct DeviceConfig {
    /// Our MAC.
    pub mac: EthernetAddress,
    /// Our IP.
    pub ip: IpAddr,
    /// DSCP of transmitted packets.
    pub dscp: u8,
    /// Data packets per flow per coalesced ACK (NIC register).
    pub ack_coalesce: u32,
    /// Inbound capacity shared out by the rate hints (Mb/s).
    pub inbound_capacity_mbps: u32,
    /// How often the fair shares are recomputed (ns).
    pub hint_interval_ns: u64,
    /// A sender without progress this long is inactive (ns). Keep it above the queueing delay
    /// an incast can build, or busy senders flap between active and inactive.
    pub activity_timeout_ns: u64,
    /// CM resend interval (ns).
    pub cm_retry_ns: u64,
    /// CM resends before a connect or accept gives up.
    pub cm_retries: u32,
    /// Connection requests (per peer and connection id) whose `TagModes` pages an acceptor
    /// keeps while it waits for the rest; pages of further requests are dropped and counted
    /// ([`ContextStats::cm_tag_pages_dropped`]) until one completes or expires (after
    /// `cm_retries + 1` CM resend intervals without news).
    pub cm_pending_tag_sets: usize,
    /// Seeds the initial FSNs.
    pub fsn_seed: u32,
    /// [`Context::progress`] also wakes for the NIC's own timers ([`Nic::next_timer_ns`]: a
    /// simulated NIC's ACK timers), so that a delayed ACK leaves on time rather than with the
    /// next news. Comparisons between a NIC that reports its timers and one that does not
    /// (the RTL core today) turn it off.
    pub nic_timer_wake: bool,
    /// Transport knobs.
    pub transport: TransportConfig,
}

impl DeviceConfig {
    /// Defaults for the given addresses.
    pub fn new(mac: EthernetAddress, ip: IpAddr) -> Self {
        DeviceConfig {
            mac,
            ip,
            dscp: 26,
            ack_coalesce: 4,
            inbound_capacity_mbps: 100_000,
            hint_interval_ns: 5_000,
            activity_timeout_ns: 100_000,
            cm_retry_ns: 50_000,
            cm_retries: 40,
            cm_pending_tag_sets: 64,
            fsn_seed: 0x00ff_ff00,
            nic_timer_wake: true,
            transport: TransportConfig::default(),
        }
    }
}

/// Counters of the driver loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextStats {
    /// TX descriptors posted.
    pub descriptors: u64,
    /// Doorbells (descriptor batches).
    pub doorbells: u64,
    /// Events processed.
    pub events: u64,
    /// Events naming no known connection.
    pub stray_events: u64,
    /// CM messages sent.
    pub cm_sent: u64,
    /// Rate hints programmed.
    pub hints_programmed: u64,
    /// Events the NIC dropped because the event ring was full.
    pub events_lost: u64,
    /// CM `TagModes` pages dropped: a hostile or inconsistent page index, a request we are
    /// not listening for or already hold, or no room for another pending request.
    pub cm_tag_pages_dropped: u64,
    /// Connection requests set aside because some of their `TagModes` pages were missing
    /// (the requester's resend brings them).
    pub cm_requests_incomplete: u64,
    /// CM Replies refused as breaking the negotiation ([`FailReason::InvalidReply`]).
    pub cm_invalid_replies: u64,
    /// Changes seen in the ports' link state (`PORT_LINK`).
    pub link_changes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Requester,
    Acceptor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmState {
    /// Requester: waiting for the reply to `msg`.
    AwaitReply {
        next: u64,
        tries: u32,
    },
    /// Acceptor: waiting for ReadyToUse (or any sign of the peer using the connection).
    AwaitRtu {
        next: u64,
        tries: u32,
    },
    Established,
    /// [`Context::disconnect`] sent a disconnect request: waiting for the reply.
    AwaitDisconnect {
        next: u64,
        tries: u32,
    },
    /// Disconnected (either side); only [`Context::destroy_connection`] is left to do.
    Closed,
    Failed,
}

#[derive(Debug)]
struct ConnSlot {
    core: Connection,
    pd: Pd,
    send_cq: Cq,
    recv_cq: Cq,
    role: Role,
    cm: CmState,
    /// Our last CM message (request or reply), resent on timeout.
    cm_msg: CmRepr,
    entry: ConnectionEntry,
    /// What the rate hints know of the receive side.
    rx: RxProgress,
    cm_entropy: u16,
    reported: bool,
}

/// What the rate hints know of a connection's receive side, from its flow-table entries.
#[derive(Debug)]
struct RxProgress {
    /// Per flow: the cumulative FSN as last read.
    cum: Vec<u32>,
    /// Cumulative FSN advances over all flows.
    total: u64,
}

impl RxProgress {
    /// `paths` flows expecting `initial_fsn` first.
    fn new(paths: u16, initial_fsn: u32) -> Self {
        RxProgress {
            cum: vec![initial_fsn; paths as usize],
            total: 0,
        }
    }
}

#[derive(Debug)]
struct CqState {
    entries: VecDeque<WorkCompletion>,
    capacity: usize,
    overflowed: bool,
}

#[derive(Debug, Clone, Copy)]
struct MrState {
    mr: MemoryRegion,
}

/// Allocates runs of consecutive table entries.
#[derive(Debug, Clone)]
struct RangeAlloc {
    used: Vec<bool>,
}

impl RangeAlloc {
    fn new(n: u32) -> Self {
        RangeAlloc {
            used: vec![false; n as usize],
        }
    }
    fn alloc(&mut self, n: usize) -> Option<u32> {
        if n == 0 || n > self.used.len() {
            return None;
        }
        let mut run = 0;
        for i in 0..self.used.len() {
            run = if self.used[i] { 0 } else { run + 1 };
            if run == n {
                let start = i + 1 - n;
                self.used[start..=i].fill(true);
                return Some(start as u32);
            }
        }
        None
    }
}

/// Number of CM message buffers (a ring; a buffer is reused only after as many later CM sends,
/// by which time the NIC has long fetched the descriptor that pointed at it).
const CM_SLOTS: u64 = 256;
/// Connection id 0 is kept for sending Rejects to peers we have no connection with.
const SCRATCH_CONN: u32 = 0;
/// First ephemeral entropy.
const ENTROPY_BASE: u16 = 49152;

fn ip16(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

fn ip_from16(b: [u8; 16], v6: bool) -> IpAddr {
    let a = std::net::Ipv6Addr::from(b);
    if v6 {
        IpAddr::V6(a)
    } else {
        a.to_ipv4_mapped().map_or(IpAddr::V6(a), IpAddr::V4)
    }
}

/// The mode bits of page `page`: Tags `64·page ..`, bit set = ordered.
fn tag_modes_bits(tags: &[TagMode], page: usize) -> u64 {
    tags.iter()
        .skip(page * TAGS_PER_PAGE)
        .take(TAGS_PER_PAGE)
        .enumerate()
        .filter(|(_, m)| **m == TagMode::Ordered)
        .fold(0, |acc, (i, _)| acc | 1 << i)
}

/// The modes of `count` Tags from their pages' bits (page `p` is `pages[p]`).
fn tag_modes_from(pages: &[u64], count: usize) -> Vec<TagMode> {
    (0..count)
        .map(|i| {
            let bits = pages.get(i / TAGS_PER_PAGE).copied().unwrap_or(0);
            if bits >> (i % TAGS_PER_PAGE) & 1 != 0 {
                TagMode::Ordered
            } else {
                TagMode::Unordered
            }
        })
        .collect()
}

/// The `TagModes` messages of `request` for `tags` (pages 1 and up; the request carries
/// page 0).
fn tag_pages(request: &CmRepr, tags: &[TagMode]) -> Vec<CmRepr> {
    (1..CmRepr::tag_pages(request.tag_count))
        .map(|p| CmRepr::tag_modes_page(request, p, tag_modes_bits(tags, p as usize)))
        .collect()
}

/// `TagModes` pages an acceptor received for a request it has not seen complete yet.
#[derive(Debug, Clone)]
struct PendingPages {
    peer_ip: [u8; 16],
    src_conn: u32,
    /// The Tag count the pages were sent for.
    tag_count: u16,
    /// The request's initial FSN, which tells its pages from an earlier request's.
    initial_fsn: u32,
    /// Page `p` (from 1) at index `p - 1`, once received; only pages an accept could use.
    pages: Vec<Option<u64>>,
    /// Last time a page arrived (for expiry).
    touched: u64,
}

/// One NIC with everything the host library keeps for it.
#[derive(Debug)]
pub struct Context<N: Nic> {
    dev: Device<N>,
    cfg: DeviceConfig,
    sizes: TableSizes,
    pds: Vec<bool>,
    mrs: Vec<Option<MrState>>,
    mr_keys: Vec<u8>,
    cqs: Vec<Option<CqState>>,
    conns: ConnTable,
    flows: RangeAlloc,
    tags: RangeAlloc,
    listening: bool,
    incoming: Vec<ConnectRequest>,
    pending_pages: Vec<PendingPages>,
    next_request_id: u64,
    cm_events: VecDeque<CmEvent>,
    cm_buf: u64,
    cm_slot: u64,
    events: Vec<Event>,
    descs: Vec<TxDescriptor>,
    /// Scratch: connections with a due timer, or due to transmit.
    due: Vec<usize>,
    /// Scratch: completions on their way to the CQs.
    wcs: Vec<(Cq, WorkCompletion)>,
    /// Per flow-table entry: the NIC's change count ([`Nic::flow_rx_changes`]) and the SACK
    /// bits at the rate hints' last read of it, when the NIC counts changes.
    flow_seen: Vec<Option<(u64, u64)>>,
    /// Scratch: established connections with their flow-table ranges.
    established: Vec<(usize, u32, u32)>,
    fair: FairShare,
    /// The host-wide in-flight cap and pacer over every connection.
    budget: HostBudget,
    /// Where the next transmit round starts (the connection after the last that sent).
    rr_next: usize,
    next_hint_at: u64,
    /// NIC ports whose link was down at the last read of `PORT_LINK` (bit per port).
    ports_down: u8,
    /// No connection's CM timer is due before this (0: scan at the next progress). Every
    /// change to a CM wait resets it, so the scan over all connections runs only when a timer
    /// can be due.
    cm_due: u64,
    fsn_state: u32,
    now: u64,
    stats: ContextStats,
}

impl<N: Nic> Context<N> {
    /// Opens a NIC (any backend behind [`Nic`]): checks it, sets up the rings, programs our
    /// MAC and the ACK coalescing.
    pub fn open(nic: N, cfg: DeviceConfig) -> Result<Self> {
        let mut dev = Device::open(nic)?;
        dev.set_mac(cfg.mac);
        dev.set_ack_coalesce(cfg.ack_coalesce.max(1));
        let sizes = dev.sizes();
        let cm_buf = dev.nic().alloc_dma(CM_LEN * CM_SLOTS as usize, 64)?;
        let mut fair = FairShare::new(cfg.inbound_capacity_mbps, cfg.activity_timeout_ns);
        fair.set_shared_utilization(cfg.transport.hint_shared_utilization);
        fair.set_reserve_unseen(cfg.transport.hint_reserves_unseen);
        let mut cqs = Vec::new();
        cqs.resize_with(0, || None);
        Ok(Context {
            fsn_state: cfg.fsn_seed,
            dev,
            sizes,
            pds: Vec::new(),
            mrs: vec![None; sizes.regions as usize],
            mr_keys: vec![0; sizes.regions as usize],
            cqs,
            conns: ConnTable::new(sizes.connections as usize),
            flows: RangeAlloc::new(sizes.flows),
            tags: RangeAlloc::new(sizes.tags),
            listening: false,
            incoming: Vec::new(),
            pending_pages: Vec::new(),
            next_request_id: 1,
            cm_events: VecDeque::new(),
            cm_buf,
            cm_slot: 0,
            events: Vec::new(),
            descs: Vec::new(),
            due: Vec::new(),
            wcs: Vec::new(),
            flow_seen: vec![None; sizes.flows as usize],
            established: Vec::new(),
            fair,
            budget: HostBudget::new(cfg.transport.host_budget, cfg.transport.line_rate_mbps),
            rr_next: 0,
            next_hint_at: 0,
            ports_down: 0,
            cm_due: 0,
            now: 0,
            stats: ContextStats::default(),
            cfg,
        })
    }

    /// The driver.
    pub fn device(&mut self) -> &mut Device<N> {
        &mut self.dev
    }

    /// The backend (a simulated NIC's wire side is reached through this).
    pub fn nic_mut(&mut self) -> &mut N {
        self.dev.nic()
    }

    /// The NIC's table sizes.
    pub fn sizes(&self) -> TableSizes {
        self.sizes
    }

    /// Driver-loop counters.
    pub fn stats(&self) -> ContextStats {
        self.stats
    }

    /// The device configuration.
    pub fn config(&self) -> &DeviceConfig {
        &self.cfg
    }

    /// The host budget: its cap, what it counted in flight at the last transmit round, and
    /// its counters.
    pub fn host_budget(&self) -> &HostBudget {
        &self.budget
    }

    /// Bytes in flight over every connection now (payload plus headers), as the host budget
    /// counts them.
    pub fn inflight_bytes(&self) -> u64 {
        self.conns
            .iter()
            .flatten()
            .map(|s| s.core.inflight_bytes())
            .sum()
    }

    // ---- protection domains, memory, completion queues ----

    /// Allocates a protection domain.
    pub fn alloc_pd(&mut self) -> Pd {
        self.pds.push(true);
        Pd(self.pds.len() as u32 - 1)
    }

    fn check_pd(&self, pd: Pd) -> Result<()> {
        match self.pds.get(pd.0 as usize) {
            Some(true) => Ok(()),
            _ => Err(Error::InvalidHandle),
        }
    }

    /// Frees a protection domain that no region or connection uses.
    pub fn dealloc_pd(&mut self, pd: Pd) -> Result<()> {
        self.check_pd(pd)?;
        let used = self.mrs.iter().flatten().any(|m| m.mr.pd == pd)
            || self.conns.iter().flatten().any(|c| c.pd == pd);
        if used {
            return Err(Error::Busy);
        }
        self.pds[pd.0 as usize] = false;
        Ok(())
    }

    /// Allocates `len` bytes of DMA memory and registers them as a region with `access`.
    pub fn reg_mr(&mut self, pd: Pd, len: u64, access: Access) -> Result<MemoryRegion> {
        self.check_pd(pd)?;
        if len == 0 || len > usize::MAX as u64 {
            return Err(Error::InvalidArgument("region length"));
        }
        // Region 0 stays unused so that an all-zero rkey never names a region.
        let index = (1..self.mrs.len())
            .find(|&i| self.mrs[i].is_none())
            .ok_or(Error::ResourcesExhausted("memory region entries"))?;
        let addr = self.dev.nic().alloc_dma(len as usize, 4096)?;
        // A fresh key byte per use of the slot revokes rkeys of an earlier region there.
        let key = self.mr_keys[index].wrapping_add(1).max(1);
        self.mr_keys[index] = key;
        let entry = RegionEntry {
            valid: true,
            key,
            access: access.bits(),
            base: addr,
            length: len,
        };
        self.dev.set_region(index as u32, &entry)?;
        let mr = MemoryRegion {
            index: index as u32,
            key,
            pd,
            addr,
            len,
            access,
        };
        self.mrs[index] = Some(MrState { mr });
        Ok(mr)
    }

    /// Deregisters a region: its rkey stops working at once. (The simulated DMA memory is not
    /// returned to the backend; the `Nic` trait has no free yet.)
    pub fn dereg_mr(&mut self, mr: &MemoryRegion) -> Result<()> {
        self.find_mr(mr.lkey())?;
        self.dev.set_region(mr.index, &RegionEntry::default())?;
        self.mrs[mr.index as usize] = None;
        Ok(())
    }

    fn find_mr(&self, lkey: u32) -> Result<MemoryRegion> {
        match self.mrs.get((lkey >> 8) as usize) {
            Some(Some(m)) if m.mr.lkey() == lkey => Ok(m.mr),
            _ => Err(Error::InvalidLkey(lkey)),
        }
    }

    fn check_range(mr: &MemoryRegion, offset: u64, len: usize) -> Result<u64> {
        let end = offset.checked_add(len as u64);
        match end {
            Some(e) if e <= mr.len => Ok(mr.addr + offset),
            _ => Err(Error::LocalRangeOutOfBounds {
                addr: mr.addr.wrapping_add(offset),
                len: len as u64,
            }),
        }
    }

    /// Host CPU write into a region (through the backend; hardware memory is only touched
    /// through the DMA mapping).
    pub fn write_mr(&mut self, mr: &MemoryRegion, offset: u64, data: &[u8]) -> Result<()> {
        let mr = self.find_mr(mr.lkey())?;
        let addr = Self::check_range(&mr, offset, data.len())?;
        self.dev.nic().write_dma(addr, data)?;
        Ok(())
    }

    /// Host CPU read from a region.
    pub fn read_mr(&mut self, mr: &MemoryRegion, offset: u64, buf: &mut [u8]) -> Result<()> {
        let mr = self.find_mr(mr.lkey())?;
        let addr = Self::check_range(&mr, offset, buf.len())?;
        self.dev.nic().read_dma(addr, buf)?;
        Ok(())
    }

    /// Hands `len` bytes of `mr` from `offset` to `f` in one or more consecutive pieces, in
    /// place where the NIC's memory allows (simulated NICs), else through a copy: reading a
    /// received message without copying it.
    pub fn inspect_mr(
        &mut self,
        mr: &MemoryRegion,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        let mr = self.find_mr(mr.lkey())?;
        let addr = Self::check_range(&mr, offset, len)?;
        self.dev.nic().inspect_dma(addr, len, f)?;
        Ok(())
    }

    /// Creates a completion queue sized for `capacity` completions.
    pub fn create_cq(&mut self, capacity: usize) -> Result<Cq> {
        if capacity == 0 {
            return Err(Error::InvalidArgument("CQ capacity"));
        }
        self.cqs.push(Some(CqState {
            entries: VecDeque::with_capacity(capacity.min(1 << 16)),
            capacity,
            overflowed: false,
        }));
        Ok(Cq(self.cqs.len() as u32 - 1))
    }

    /// Moves up to `max` completions of `cq` into `out`; returns how many. Reports
    /// [`Error::CqOverflow`] once if the queue ever held more than its capacity (nothing is
    /// dropped).
    pub fn poll_cq(&mut self, cq: Cq, max: usize, out: &mut Vec<WorkCompletion>) -> Result<usize> {
        let q = self
            .cqs
            .get_mut(cq.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(Error::InvalidHandle)?;
        if q.overflowed {
            q.overflowed = false;
            return Err(Error::CqOverflow);
        }
        let n = max.min(q.entries.len());
        out.extend(q.entries.drain(..n));
        Ok(n)
    }

    fn push_cq(&mut self, cq: Cq, wc: WorkCompletion) {
        if let Some(Some(q)) = self.cqs.get_mut(cq.0 as usize) {
            if q.entries.len() >= q.capacity {
                q.overflowed = true;
            }
            q.entries.push_back(wc);
        }
    }

    // ---- connections ----

    fn next_fsn(&mut self) -> u32 {
        self.fsn_state = self
            .fsn_state
            .wrapping_mul(1_664_525)
            .wrapping_add(1_013_904_223);
        // Start close below the wrap now and then, so the 24-bit arithmetic is exercised.
        (self.fsn_state >> 8) & FSN_MASK
    }

    fn check_cq(&self, cq: Cq) -> Result<()> {
        match self.cqs.get(cq.0 as usize) {
            Some(Some(_)) => Ok(()),
            _ => Err(Error::InvalidHandle),
        }
    }

    fn alloc_conn_id(&self) -> Result<u32> {
        (1..self.conns.len())
            .find(|&i| self.conns[i].is_none())
            .map(|i| i as u32)
            .ok_or(Error::ResourcesExhausted("connection ids"))
    }

    fn validate_planes(&self, planes: u8) -> Result<()> {
        if planes == 0 || u32::from(planes) > self.sizes.ports {
            return Err(Error::InvalidArgument("planes: 1 to the NIC's port count"));
        }
        Ok(())
    }

    fn entropies_for(&self, id: u32, paths: &PathOptions) -> Vec<u16> {
        if paths.entropies.is_empty() {
            let base = ENTROPY_BASE.wrapping_add(((id as u16) % 256) * 64);
            (0..64).map(|i| base.wrapping_add(i)).collect()
        } else {
            paths.entropies.clone()
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn setup_entry(
        &mut self,
        id: u32,
        peer_conn: u32,
        peer_mac: EthernetAddress,
        peer_ip: IpAddr,
        vlan_tci: Option<u16>,
        flows: u16,
        tags: u16,
    ) -> Result<ConnectionEntry> {
        let flow_base = self
            .flows
            .alloc(flows as usize)
            .ok_or(Error::ResourcesExhausted("flow entries"))?;
        let tag_base = match self.tags.alloc(tags as usize) {
            Some(t) => t,
            None => {
                self.flows.used[flow_base as usize..(flow_base + flows as u32) as usize]
                    .fill(false);
                return Err(Error::ResourcesExhausted("Tag contexts"));
            }
        };
        let entry = ConnectionEntry {
            valid: true,
            ipv6: peer_ip.is_ipv6(),
            vlan_tci,
            dscp: self.cfg.dscp,
            peer_conn,
            flow_base: flow_base as u16,
            flow_count: flows,
            tag_base: tag_base as u16,
            tag_count: tags,
            peer_mac,
            local_ip: ip16(self.cfg.ip),
            peer_ip: ip16(peer_ip),
            rate_hint_mbps: self.cfg.inbound_capacity_mbps,
        };
        self.dev.set_connection(id, &entry)?;
        for t in 0..tags as u32 {
            self.dev.reset_tag(tag_base + t)?;
        }
        Ok(entry)
    }

    fn release_entry(&mut self, entry: &ConnectionEntry) {
        let f = entry.flow_base as usize;
        let t = entry.tag_base as usize;
        if let Some(s) = self.flows.used.get_mut(f..f + entry.flow_count as usize) {
            s.fill(false);
        }
        if let Some(s) = self.tags.used.get_mut(t..t + entry.tag_count as usize) {
            s.fill(false);
        }
    }

    /// Most Tags one connection may have: the NIC's Tag contexts (one table shared by every
    /// connection through its `tag_base`), at most [`MAX_TAGS`].
    fn tag_capacity(&self) -> u16 {
        self.sizes.tags.min(MAX_TAGS as u32) as u16
    }

    /// Most paths one connection may have: the NIC's flow entries (shared like the Tags).
    fn path_capacity(&self) -> u16 {
        self.sizes.flows.min(u16::MAX as u32) as u16
    }

    fn validate_shape(&self, tags: usize, mtu: u32, paths: u16) -> Result<()> {
        if tags == 0 || tags > self.tag_capacity() as usize {
            return Err(Error::InvalidArgument(
                "Tag count must be 1 to the NIC's Tag contexts (at most MAX_TAGS)",
            ));
        }
        if !(MIN_MTU..=MAX_PAYLOAD_LEN).contains(&mtu) {
            return Err(Error::InvalidArgument("MTU must be MIN_MTU–8192"));
        }
        if paths == 0 {
            return Err(Error::InvalidArgument("path count must be at least 1"));
        }
        Ok(())
    }

    /// Starts connecting to a peer: programs the connection, sends the CM request (and resends
    /// it until answered). Requests may be posted at once; they leave when the connection is
    /// established ([`CmEvent::Established`]).
    pub fn connect(&mut self, opts: &ConnectOptions) -> Result<ConnId> {
        self.check_pd(opts.pd)?;
        self.check_cq(opts.send_cq)?;
        self.check_cq(opts.recv_cq)?;
        self.validate_shape(opts.tags.len(), opts.mtu, opts.paths.count)?;
        self.validate_planes(opts.paths.planes)?;
        if opts.peer_ip.is_ipv6() != self.cfg.ip.is_ipv6() {
            return Err(Error::InvalidArgument("peer IP family differs from ours"));
        }
        if !opts.paths.entropies.is_empty()
            && opts.paths.entropies.len() < opts.paths.count as usize
        {
            return Err(Error::InvalidArgument("fewer entropies than paths"));
        }
        let id = self.alloc_conn_id()?;
        let entry = self.setup_entry(
            id,
            0,
            opts.peer_mac,
            opts.peer_ip,
            opts.vlan_tci,
            opts.paths.count,
            opts.tags.len() as u16,
        )?;
        let tx_fsn = self.next_fsn();
        let entropies = self.entropies_for(id, &opts.paths);
        let params = ConnectionParams {
            local_conn: id,
            flows: opts.paths.count,
            mtu: opts.mtu,
            tag_modes: opts.tags.clone(),
            tx_initial_fsn: tx_fsn,
            msg_slots: self.sizes.msg_slots,
            recv_depth: self.sizes.recv_depth,
            entropies: entropies.clone(),
            planes: opts.paths.planes,
        };
        let request = CmRepr {
            kind: CmKind::Request,
            flags: 0,
            path_count: opts.paths.count,
            src_conn: id,
            dst_conn: 0,
            mtu: opts.mtu as u16,
            tag_count: opts.tags.len() as u16,
            initial_fsn: tx_fsn,
            rate_mbps: self.cfg.transport.line_rate_mbps,
            tag_modes: tag_modes_bits(&opts.tags, 0),
        };
        let mut core = Connection::new(params, self.cfg.transport.clone(), self.now);
        core.set_ports_down(self.now, self.ports_down);
        self.install(
            id,
            ConnSlot {
                core,
                pd: opts.pd,
                send_cq: opts.send_cq,
                recv_cq: opts.recv_cq,
                role: Role::Requester,
                cm: CmState::AwaitReply {
                    next: self.now + self.cfg.cm_retry_ns,
                    tries: 0,
                },
                cm_msg: request,
                entry,
                rx: RxProgress::new(opts.paths.count, 0),
                cm_entropy: entropies[0],
                reported: false,
            },
        );
        self.send_request(id)?;
        Ok(ConnId(id))
    }

    /// Sends a requester's `TagModes` pages (Tags 64 and up), then its request.
    fn send_request(&mut self, id: u32) -> Result<()> {
        let Some(Some(s)) = self.conns.get(id as usize) else {
            return Ok(());
        };
        let (e, request) = (s.cm_entropy, s.cm_msg);
        for page in tag_pages(&request, &s.core.params().tag_modes) {
            self.send_cm(id, e, page)?;
        }
        self.send_cm(id, e, request)
    }

    /// Accept (or stop accepting) connection requests; they arrive as
    /// [`CmEvent::ConnectRequest`]. While not listening, requests are rejected.
    pub fn listen(&mut self, on: bool) {
        self.listening = on;
    }

    /// Accepts a request, negotiating its shape: the connection gets `min(offered, limit)`
    /// paths, MTU and Tags, where the limits are those of `opts` and of this NIC (its flow
    /// entries and Tag contexts, [`MAX_TAGS`], an MTU of 8192). The Tags kept are the first
    /// ones, with the requester's modes. Programs the connection and replies with the granted
    /// shape, which the requester adopts ([`Context::connection_shape`]). Requests may be
    /// posted at once; they leave when the peer confirms.
    pub fn accept(&mut self, req: &ConnectRequest, opts: &AcceptOptions) -> Result<ConnId> {
        self.check_pd(opts.pd)?;
        self.check_cq(opts.send_cq)?;
        self.check_cq(opts.recv_cq)?;
        if opts.max_paths == Some(0)
            || opts.max_tags == Some(0)
            || opts.max_mtu.is_some_and(|m| m < MIN_MTU)
        {
            return Err(Error::InvalidArgument(
                "accept limits: at least 1 path, 1 Tag and MIN_MTU",
            ));
        }
        self.validate_planes(opts.planes)?;
        let pos = self
            .incoming
            .iter()
            .position(|r| r.id == req.id)
            .ok_or(Error::InvalidHandle)?;
        let req = self.incoming[pos].clone();
        let msg = req.msg;
        let path_cap = self.path_capacity();
        let tag_cap = self.tag_capacity();
        let paths = msg
            .path_count
            .min(opts.max_paths.unwrap_or(path_cap))
            .min(path_cap);
        let mtu = (msg.mtu as u32)
            .min(opts.max_mtu.unwrap_or(MAX_PAYLOAD_LEN))
            .min(MAX_PAYLOAD_LEN);
        let ntags = (req.tags.len().min(u16::MAX as usize) as u16)
            .min(opts.max_tags.unwrap_or(tag_cap))
            .min(tag_cap);
        self.validate_shape(ntags as usize, mtu, paths)?;
        let tags: Vec<TagMode> = req.tags[..ntags as usize].to_vec();
        let id = self.alloc_conn_id()?;
        let entry = self.setup_entry(
            id,
            msg.src_conn,
            req.peer_mac,
            req.peer_ip,
            req.vlan_tci,
            paths,
            ntags,
        )?;
        self.incoming.remove(pos);
        for f in 0..paths as u32 {
            self.dev
                .init_flow(entry.flow_base as u32 + f, msg.initial_fsn)?;
        }
        let tx_fsn = self.next_fsn();
        let entropies = self.entropies_for(id, &PathOptions::default());
        let params = ConnectionParams {
            local_conn: id,
            flows: paths,
            mtu,
            tag_modes: tags.clone(),
            tx_initial_fsn: tx_fsn,
            msg_slots: self.sizes.msg_slots,
            recv_depth: self.sizes.recv_depth,
            entropies: entropies.clone(),
            planes: opts.planes,
        };
        self.fair.add_sender(id, msg.rate_mbps);
        // Requests still waiting for an accept will most likely send too.
        let pending = if self.cfg.transport.reply_hint_counts_pending {
            self.incoming.len()
        } else {
            0
        };
        let newcomer = self.fair.newcomer_with_pending_mbps(self.now, pending);
        let reply = CmRepr {
            kind: CmKind::Reply,
            src_conn: id,
            dst_conn: msg.src_conn,
            path_count: paths,
            mtu: mtu as u16,
            tag_count: ntags,
            initial_fsn: tx_fsn,
            rate_mbps: self.cfg.transport.line_rate_mbps,
            // The newcomer's share (the Tag modes are the requester's own): an incast's
            // senders start at it rather than each with a full first window.
            tag_modes: newcomer.min(msg.rate_mbps.max(1)) as u64,
            ..msg
        };
        let mut core = Connection::new(params, self.cfg.transport.clone(), self.now);
        core.set_ports_down(self.now, self.ports_down);
        self.install(
            id,
            ConnSlot {
                core,
                pd: opts.pd,
                send_cq: opts.send_cq,
                recv_cq: opts.recv_cq,
                role: Role::Acceptor,
                cm: CmState::AwaitRtu {
                    next: self.now + self.cfg.cm_retry_ns,
                    tries: 0,
                },
                cm_msg: reply,
                entry,
                rx: RxProgress::new(paths, msg.initial_fsn),
                cm_entropy: entropies[0],
                reported: false,
            },
        );
        self.send_cm(id, entropies[0], reply)?;
        if self.cfg.transport.reply_hint_refresh {
            self.refresh_reply_hints(id, newcomer)?;
        }
        Ok(ConnId(id))
    }

    /// Repeats the CM reply of earlier accepted connections whose peers have not sent yet and
    /// whose reply's hint is now well above a newcomer's share `newcomer` (senders that
    /// connected since will share our capacity with them): in a synchronised incast the first
    /// request is accepted alone, and its sender would otherwise start at our full capacity
    /// and hold several times its share until its first ACK.
    fn refresh_reply_hints(&mut self, except: u32, newcomer: u32) -> Result<()> {
        let mut resend = Vec::new();
        for (i, slot) in self.conns.iter_mut().enumerate() {
            let Some(s) = slot.as_mut() else { continue };
            let replied = s.cm_msg.reply_hint_mbps();
            let waiting = matches!(s.cm, CmState::AwaitRtu { .. } | CmState::Established);
            if i as u32 == except || s.role != Role::Acceptor || !waiting || s.rx.total > 0 {
                continue;
            }
            // Only a clear drop (below 4/5) is worth a packet: a few repeats per connection.
            if replied.is_some_and(|h| h as u64 * 4 > newcomer as u64 * 5) {
                s.cm_msg.tag_modes = newcomer as u64;
                resend.push((i as u32, s.cm_entropy, s.cm_msg));
            }
        }
        for (id, e, reply) in resend {
            self.send_cm(id, e, reply)?;
        }
        Ok(())
    }

    /// Rejects a request.
    pub fn reject(&mut self, req: &ConnectRequest) -> Result<()> {
        let pos = self
            .incoming
            .iter()
            .position(|r| r.id == req.id)
            .ok_or(Error::InvalidHandle)?;
        let req = self.incoming.remove(pos);
        self.send_reject(&req)
    }

    fn send_reject(&mut self, req: &ConnectRequest) -> Result<()> {
        // A Reject needs a connection entry to address it: the scratch entry.
        let entry = ConnectionEntry {
            valid: true,
            ipv6: req.peer_ip.is_ipv6(),
            vlan_tci: req.vlan_tci,
            dscp: self.cfg.dscp,
            peer_conn: req.msg.src_conn,
            peer_mac: req.peer_mac,
            local_ip: ip16(self.cfg.ip),
            peer_ip: ip16(req.peer_ip),
            ..Default::default()
        };
        self.dev.set_connection(SCRATCH_CONN, &entry)?;
        let reject = CmRepr {
            kind: CmKind::Reject,
            src_conn: 0,
            dst_conn: req.msg.src_conn,
            ..req.msg
        };
        self.send_cm(SCRATCH_CONN, ENTROPY_BASE, reject)
    }

    /// Destroys a connection: flushes whatever is outstanding to its CQs, invalidates its NIC
    /// entry (the NIC drops its packets from then on) and frees its flows and Tag contexts.
    /// The handle becomes invalid. (No disconnect message is exchanged yet: destroy both ends.)
    pub fn destroy_connection(&mut self, c: ConnId) -> Result<()> {
        let mut s = self.conns.take(c.0 as usize).ok_or(Error::InvalidHandle)?;
        s.core.fail(FailReason::Disconnected);
        while let Some(wc) = s.core.poll_completion() {
            let cq = if wc.opcode.is_recv() {
                s.recv_cq
            } else {
                s.send_cq
            };
            self.push_cq(cq, wc);
        }
        self.fair.remove_sender(c.0);
        self.dev.set_connection(c.0, &ConnectionEntry::default())?;
        self.release_entry(&s.entry);
        Ok(())
    }

    /// Closes a connection gracefully: flushes whatever is outstanding to its CQs, tells the
    /// peer with a CM disconnect request (resent until it answers, at most `cm_retries`
    /// times) and reports [`CmEvent::Disconnected`] when the peer has answered. The peer's side
    /// is flushed and reports the same event. Free the connection afterwards with
    /// [`Context::destroy_connection`]. Fails with [`Error::NotConnected`] unless the
    /// connection is established.
    pub fn disconnect(&mut self, c: ConnId) -> Result<()> {
        let now = self.now;
        let retry = self.cfg.cm_retry_ns;
        let s = self.slot_mut(c)?;
        if s.cm != CmState::Established {
            return Err(Error::NotConnected(match s.core.state() {
                ConnState::Failed(r) => Some(r),
                _ => None,
            }));
        }
        // The flush is the disconnect's doing, not a failure to report.
        s.reported = true;
        s.core.fail(FailReason::Disconnected);
        let msg = CmRepr {
            kind: CmKind::DisconnectRequest,
            src_conn: c.0,
            dst_conn: s.entry.peer_conn,
            ..s.cm_msg
        };
        s.cm_msg = msg;
        s.cm = CmState::AwaitDisconnect {
            next: now + retry,
            tries: 0,
        };
        let e = s.cm_entropy;
        self.cm_due = 0;
        self.send_cm(c.0, e, msg)
    }

    /// Puts a new connection, waiting for a CM message, into slot `id`.
    fn install(&mut self, id: u32, slot: ConnSlot) {
        // A new CM wait: the next progress scans the CM timers.
        self.cm_due = 0;
        self.conns.set(id as usize, slot);
    }

    /// Next connection-management event.
    pub fn poll_cm(&mut self) -> Option<CmEvent> {
        self.cm_events.pop_front()
    }

    fn slot(&self, c: ConnId) -> Result<&ConnSlot> {
        self.conns
            .get(c.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(Error::InvalidHandle)
    }

    fn slot_mut(&mut self, c: ConnId) -> Result<&mut ConnSlot> {
        self.conns.get_mut(c.0 as usize).ok_or(Error::InvalidHandle)
    }

    /// A connection's state.
    pub fn conn_state(&self, c: ConnId) -> Result<ConnState> {
        Ok(self.slot(c)?.core.state())
    }

    /// A connection's counters.
    pub fn conn_stats(&self, c: ConnId) -> Result<ConnectionStats> {
        Ok(*self.slot(c)?.core.stats())
    }

    /// The shape a connection runs with: paths, MTU and Tag modes. On the acceptor, what it
    /// granted; on the requester, what it offered until the Reply arrives and what the
    /// acceptor granted from then on (at most the offer: fewer paths, a smaller MTU, the first
    /// Tags with our modes).
    pub fn connection_shape(&self, c: ConnId) -> Result<ConnectionShape> {
        let p = self.slot(c)?.core.params();
        Ok(ConnectionShape {
            paths: p.flows,
            mtu: p.mtu,
            tags: p.tag_modes.clone(),
        })
    }

    /// The paths of a connection: entropy, RTT, window, rate, health (the extension API).
    pub fn paths(&self, c: ConnId) -> Result<Vec<PathStats>> {
        Ok(self.slot(c)?.core.paths())
    }

    /// The rate hint our NIC currently stamps on ACKs of this connection (Mb/s).
    pub fn rate_hint(&self, c: ConnId) -> Result<u32> {
        Ok(self
            .fair
            .hint(c.0)
            .unwrap_or(self.slot(c)?.entry.rate_hint_mbps))
    }

    fn local_addr(&self, pd: Pd, sge: &Sge, need: Access) -> Result<u64> {
        let mr = self.find_mr(sge.lkey)?;
        if mr.pd != pd {
            return Err(Error::InvalidLkey(sge.lkey));
        }
        if !mr.access.contains(need) {
            return Err(Error::AccessDenied);
        }
        let off = sge
            .addr
            .checked_sub(mr.addr)
            .ok_or(Error::LocalRangeOutOfBounds {
                addr: sge.addr,
                len: sge.len as u64,
            })?;
        Self::check_range(&mr, off, sge.len as usize)
    }

    fn post_core(&mut self, c: ConnId, wr: WorkRequest) -> Result<()> {
        let slot = self.slot_mut(c)?;
        if let ConnState::Failed(r) = slot.core.state() {
            return Err(Error::NotConnected(Some(r)));
        }
        slot.core.post(wr)?;
        Ok(())
    }

    /// Posts a Send on a Tag: it fills the peer's next posted receive of that Tag.
    pub fn post_send(&mut self, c: ConnId, wr: &SendRequest) -> Result<()> {
        let pd = self.slot(c)?.pd;
        let local_addr = self.local_addr(pd, &wr.sge, Access::NONE)?;
        self.post_core(
            c,
            WorkRequest {
                wr_id: wr.wr_id,
                tag: wr.tag,
                local_addr,
                len: wr.sge.len,
                kind: WrKind::Send { imm: wr.imm },
                signaled: wr.signaled,
                solicited: wr.solicited,
            },
        )
    }

    /// Posts an RDMA Write on a Tag.
    pub fn post_write(&mut self, c: ConnId, wr: &WriteRequest) -> Result<()> {
        let pd = self.slot(c)?.pd;
        let local_addr = self.local_addr(pd, &wr.sge, Access::NONE)?;
        if wr.remote_addr.checked_add(wr.sge.len as u64).is_none() {
            return Err(Error::InvalidArgument("remote range wraps"));
        }
        self.post_core(
            c,
            WorkRequest {
                wr_id: wr.wr_id,
                tag: wr.tag,
                local_addr,
                len: wr.sge.len,
                kind: WrKind::Write {
                    remote_va: wr.remote_addr,
                    rkey: wr.rkey,
                    imm: wr.imm,
                },
                signaled: wr.signaled,
                solicited: false,
            },
        )
    }

    /// Posts a receive buffer on a Tag: it takes the Tag's next Send.
    pub fn post_recv(&mut self, c: ConnId, wr: &RecvRequest) -> Result<()> {
        let pd = self.slot(c)?.pd;
        let addr = self.local_addr(pd, &wr.sge, Access::LOCAL_WRITE)?;
        let slot = self.slot_mut(c)?;
        if let ConnState::Failed(r) = slot.core.state() {
            return Err(Error::NotConnected(Some(r)));
        }
        let ssn = slot.core.post_recv(wr.tag, wr.wr_id, addr, wr.sge.len)?;
        let tag_ctx = slot.entry.tag_base as u32 + wr.tag as u32;
        self.dev.post_recv(tag_ctx, ssn, addr, wr.sge.len)?;
        Ok(())
    }

    /// An execution fence: requests posted after it start only when every request posted
    /// before it on this connection has completed.
    pub fn fence(&mut self, c: ConnId) -> Result<()> {
        let slot = self.slot_mut(c)?;
        if let ConnState::Failed(r) = slot.core.state() {
            return Err(Error::NotConnected(Some(r)));
        }
        slot.core.fence()?;
        Ok(())
    }

    // ---- the driver loop ----

    fn send_cm(&mut self, conn: u32, entropy: u16, msg: CmRepr) -> Result<()> {
        let addr = self.cm_buf + (self.cm_slot % CM_SLOTS) * CM_LEN as u64;
        self.cm_slot += 1;
        self.dev.nic().write_dma(addr, &msg.to_bytes())?;
        let d = TxDescriptor {
            opcode: Opcode::Cm as u8,
            conn,
            entropy,
            payload_len: CM_LEN as u32,
            local_addr: addr,
            ..Default::default()
        };
        self.dev.post(&[d])?;
        self.stats.cm_sent += 1;
        self.stats.doorbells += 1;
        Ok(())
    }

    fn established(&mut self, id: u32) {
        let now = self.now;
        if let Some(s) = self.conns.get_mut(id as usize)
            && matches!(s.cm, CmState::AwaitReply { .. } | CmState::AwaitRtu { .. })
        {
            s.cm = CmState::Established;
            s.core.set_ready(now);
            self.cm_events.push_back(CmEvent::Established(ConnId(id)));
        }
    }

    fn handle_cm(&mut self, ev: &Event) -> Result<()> {
        let Event::Cm {
            src_ip,
            ipv6,
            src_mac,
            vlan_tci,
            msg,
            ..
        } = *ev
        else {
            return Ok(());
        };
        let peer_ip = ip_from16(src_ip, ipv6);
        match msg.kind {
            CmKind::Request => {
                // A resent request for a connection we already accepted: resend the reply.
                let existing = self.conns.iter().flatten().find(|s| {
                    s.role == Role::Acceptor
                        && s.entry.peer_conn == msg.src_conn
                        && s.entry.peer_ip == src_ip
                });
                if let Some(s) = existing {
                    let (id, e, reply) = (s.core.params().local_conn, s.cm_entropy, s.cm_msg);
                    return self.send_cm(id, e, reply);
                }
                let req = ConnectRequest {
                    id: 0,
                    peer_ip,
                    peer_mac: src_mac,
                    paths: msg.path_count,
                    mtu: msg.mtu as u32,
                    tag_count: msg.tag_count,
                    tags: Vec::new(),
                    peer_rate_mbps: msg.rate_mbps,
                    vlan_tci,
                    msg,
                };
                if !self.listening
                    || msg.tag_count == 0
                    || msg.path_count == 0
                    || (msg.mtu as u32) < MIN_MTU
                {
                    return self.send_reject(&req);
                }
                if self
                    .incoming
                    .iter()
                    .any(|r| r.msg.src_conn == msg.src_conn && r.peer_ip == peer_ip)
                {
                    return Ok(());
                }
                // The modes of Tags 0–63 ride in the request, those of later Tags in TagModes
                // pages; only the Tags an accept could keep are needed.
                let keep = msg.tag_count.min(self.tag_capacity()) as usize;
                let mut pages = vec![msg.tag_modes];
                if keep > TAGS_PER_PAGE {
                    let pos = self.pending_pages.iter().position(|p| {
                        p.peer_ip == src_ip
                            && p.src_conn == msg.src_conn
                            && p.tag_count == msg.tag_count
                            && p.initial_fsn == msg.initial_fsn
                    });
                    let rest = pos.and_then(|i| {
                        self.pending_pages[i]
                            .pages
                            .iter()
                            .copied()
                            .collect::<Option<Vec<u64>>>()
                    });
                    match (pos, rest) {
                        (Some(i), Some(rest)) => {
                            pages.extend(rest);
                            self.pending_pages.swap_remove(i);
                        }
                        _ => {
                            // Some pages were lost: the requester's resend brings them.
                            self.stats.cm_requests_incomplete += 1;
                            return Ok(());
                        }
                    }
                }
                let req = ConnectRequest {
                    id: self.next_request_id,
                    tags: tag_modes_from(&pages, keep),
                    ..req
                };
                self.next_request_id += 1;
                self.incoming.push(req.clone());
                self.cm_events.push_back(CmEvent::ConnectRequest(req));
            }
            CmKind::TagModes => self.store_tag_page(src_ip, peer_ip, msg),
            CmKind::Reply => {
                let id = msg.dst_conn;
                let Some(s) = self.conns.get_mut(id as usize) else {
                    return Ok(());
                };
                if s.role != Role::Requester || s.entry.peer_ip != src_ip {
                    return Ok(());
                }
                match s.cm {
                    CmState::AwaitReply { .. } => {
                        let ours = s.cm_msg;
                        let (paths, tags, mtu) = (msg.path_count, msg.tag_count, msg.mtu as u32);
                        // The acceptor may grant less than we offered, never more, and never
                        // an unusable shape.
                        let valid = (1..=ours.path_count).contains(&paths)
                            && (1..=ours.tag_count).contains(&tags)
                            && (MIN_MTU..=ours.mtu as u32).contains(&mtu);
                        if !valid || s.core.renegotiate(paths, mtu, tags).is_err() {
                            s.cm = CmState::Failed;
                            s.core.fail(FailReason::InvalidReply);
                            self.stats.cm_invalid_replies += 1;
                            // Tell the acceptor, so that it stops waiting for us.
                            let reject = CmRepr {
                                kind: CmKind::Reject,
                                src_conn: id,
                                dst_conn: msg.src_conn,
                                ..ours
                            };
                            let e = s.cm_entropy;
                            return self.send_cm(id, e, reject);
                        }
                        // Give back the flows and Tag contexts the acceptor did not grant
                        // (the tails of our runs), and program the granted shape.
                        let (fb, tb) = (s.entry.flow_base as usize, s.entry.tag_base as usize);
                        let (old_f, old_t) = (s.entry.flow_count as usize, s.entry.tag_count);
                        if let Some(u) = self.flows.used.get_mut(fb + paths as usize..fb + old_f) {
                            u.fill(false);
                        }
                        if let Some(u) = self
                            .tags
                            .used
                            .get_mut(tb + tags as usize..tb + old_t as usize)
                        {
                            u.fill(false);
                        }
                        let released = (tb as u32 + tags as u32)..(tb as u32 + old_t as u32);
                        s.entry.flow_count = paths;
                        s.entry.tag_count = tags;
                        s.entry.peer_conn = msg.src_conn;
                        let entry = s.entry;
                        let rtu = CmRepr {
                            kind: CmKind::ReadyToUse,
                            src_conn: id,
                            dst_conn: msg.src_conn,
                            path_count: paths,
                            mtu: msg.mtu,
                            tag_count: tags,
                            ..ours
                        };
                        s.cm_msg = rtu;
                        s.rx = RxProgress::new(paths, msg.initial_fsn);
                        if let Some(hint) = msg.reply_hint_mbps() {
                            s.core.apply_rate_hint(self.now, hint);
                        }
                        let e = s.cm_entropy;
                        self.fair.add_own_connection(id, msg.rate_mbps);
                        self.dev.set_connection(id, &entry)?;
                        // Receives posted on the Tags given back were flushed; clear their
                        // contexts.
                        for t in released {
                            self.dev.reset_tag(t)?;
                        }
                        for f in 0..entry.flow_count as u32 {
                            self.dev
                                .init_flow(entry.flow_base as u32 + f, msg.initial_fsn)?;
                        }
                        self.send_cm(id, e, rtu)?;
                        self.established(id);
                    }
                    CmState::Established => {
                        // Our ReadyToUse was lost, or the acceptor repeats its reply with a
                        // lower hint (more senders connected to it since): send it again, and
                        // take the hint if no ACK has carried one yet.
                        if let Some(hint) = msg.reply_hint_mbps() {
                            s.core.apply_rate_hint(self.now, hint);
                        }
                        let (e, rtu) = (s.cm_entropy, s.cm_msg);
                        self.send_cm(id, e, rtu)?;
                    }
                    _ => {}
                }
            }
            CmKind::ReadyToUse => {
                let id = msg.dst_conn;
                if let Some(Some(s)) = self.conns.get(id as usize)
                    && s.role == Role::Acceptor
                    && s.entry.peer_conn == msg.src_conn
                {
                    self.established(id);
                }
            }
            CmKind::Reject => {
                let id = msg.dst_conn;
                if let Some(s) = self.conns.get_mut(id as usize) {
                    // A requester's request was refused, or a requester refused our Reply.
                    let requester =
                        s.role == Role::Requester && matches!(s.cm, CmState::AwaitReply { .. });
                    let acceptor = s.role == Role::Acceptor
                        && matches!(s.cm, CmState::AwaitRtu { .. })
                        && s.entry.peer_ip == src_ip
                        && s.entry.peer_conn == msg.src_conn;
                    if requester || acceptor {
                        s.cm = CmState::Failed;
                        s.core.fail(FailReason::Rejected);
                    }
                }
            }
            CmKind::DisconnectRequest => {
                let id = msg.dst_conn;
                let ours = self
                    .conns
                    .get_mut(id as usize)
                    .filter(|s| s.entry.peer_ip == src_ip && s.entry.peer_conn == msg.src_conn);
                let reply = CmRepr {
                    kind: CmKind::DisconnectReply,
                    src_conn: id,
                    dst_conn: msg.src_conn,
                    ..msg
                };
                match ours {
                    Some(s) => {
                        if !matches!(s.cm, CmState::Closed) {
                            s.reported = true;
                            s.core.fail(FailReason::Disconnected);
                            s.cm = CmState::Closed;
                            self.cm_events.push_back(CmEvent::Disconnected(ConnId(id)));
                        }
                        let e = s.cm_entropy;
                        self.send_cm(id, e, reply)?;
                    }
                    None => {
                        // Already destroyed here (or never ours): answer anyway, so that the
                        // peer stops asking, through the scratch entry as a reject does.
                        let entry = ConnectionEntry {
                            valid: true,
                            ipv6,
                            peer_mac: src_mac,
                            local_ip: ip16(self.cfg.ip),
                            peer_ip: src_ip,
                            peer_conn: msg.src_conn,
                            ..Default::default()
                        };
                        self.dev.set_connection(SCRATCH_CONN, &entry)?;
                        self.send_cm(SCRATCH_CONN, ENTROPY_BASE, reply)?;
                    }
                }
            }
            CmKind::DisconnectReply => {
                let id = msg.dst_conn;
                if let Some(s) = self.conns.get_mut(id as usize)
                    && matches!(s.cm, CmState::AwaitDisconnect { .. })
                    && s.entry.peer_ip == src_ip
                {
                    s.cm = CmState::Closed;
                    self.cm_events.push_back(CmEvent::Disconnected(ConnId(id)));
                }
            }
        }
        Ok(())
    }

    /// Keeps a `TagModes` page until its request arrives. Bounded: hostile page indexes and
    /// pages beyond [`DeviceConfig::cm_pending_tag_sets`] pending requests are dropped and
    /// counted; sets expire after `cm_retries + 1` resend intervals without a page.
    fn store_tag_page(&mut self, src_ip: [u8; 16], peer_ip: IpAddr, msg: CmRepr) {
        let Ok(page) = msg.page() else {
            self.stats.cm_tag_pages_dropped += 1;
            return;
        };
        let page = page as usize;
        // Not listening, already held as a request, or already accepted: nothing to keep.
        if !self.listening
            || self
                .incoming
                .iter()
                .any(|r| r.msg.src_conn == msg.src_conn && r.peer_ip == peer_ip)
            || self.conns.iter().flatten().any(|s| {
                s.role == Role::Acceptor
                    && s.entry.peer_conn == msg.src_conn
                    && s.entry.peer_ip == src_ip
            })
        {
            return;
        }
        // Pages of Tags beyond what an accept could keep are not needed.
        let needed = (msg.tag_count.min(self.tag_capacity()) as usize).div_ceil(TAGS_PER_PAGE);
        if page >= needed {
            return;
        }
        let now = self.now;
        let ttl = self
            .cfg
            .cm_retry_ns
            .saturating_mul(self.cfg.cm_retries as u64 + 1);
        self.pending_pages
            .retain(|p| now.saturating_sub(p.touched) <= ttl);
        let fresh = PendingPages {
            peer_ip: src_ip,
            src_conn: msg.src_conn,
            tag_count: msg.tag_count,
            initial_fsn: msg.initial_fsn,
            pages: vec![None; needed - 1],
            touched: now,
        };
        let pos = self
            .pending_pages
            .iter()
            .position(|p| p.peer_ip == src_ip && p.src_conn == msg.src_conn);
        let i = match pos {
            Some(i) => {
                let p = &self.pending_pages[i];
                if p.tag_count != msg.tag_count || p.initial_fsn != msg.initial_fsn {
                    // A newer request of the same connection id: start over.
                    self.pending_pages[i] = fresh;
                }
                i
            }
            None if self.pending_pages.len() >= self.cfg.cm_pending_tag_sets => {
                self.stats.cm_tag_pages_dropped += 1;
                return;
            }
            None => {
                self.pending_pages.push(fresh);
                self.pending_pages.len() - 1
            }
        };
        let set = &mut self.pending_pages[i];
        if let Some(slot) = set.pages.get_mut(page - 1) {
            *slot = Some(msg.tag_modes);
        }
        set.touched = now;
    }

    fn cm_timers(&mut self) -> Result<()> {
        let now = self.now;
        if now < self.cm_due {
            return Ok(());
        }
        let (retry, max) = (self.cfg.cm_retry_ns, self.cfg.cm_retries);
        let mut resend = Vec::new();
        let mut requests = Vec::new();
        for (i, slot) in self.conns.iter_mut().enumerate() {
            let Some(s) = slot.as_mut() else { continue };
            if let CmState::AwaitDisconnect { next, tries } = s.cm
                && now >= next
            {
                if tries >= max {
                    // The peer is gone: close our side anyway.
                    s.cm = CmState::Closed;
                    self.cm_events
                        .push_back(CmEvent::Disconnected(ConnId(i as u32)));
                } else {
                    s.cm = CmState::AwaitDisconnect {
                        next: now + retry,
                        tries: tries + 1,
                    };
                    resend.push((i as u32, s.cm_entropy, s.cm_msg));
                }
                continue;
            }
            match s.cm {
                CmState::AwaitReply { next, tries } | CmState::AwaitRtu { next, tries }
                    if now >= next =>
                {
                    if tries >= max {
                        s.cm = CmState::Failed;
                        s.core.fail(if s.role == Role::Requester {
                            FailReason::ConnectTimeout
                        } else {
                            FailReason::Disconnected
                        });
                        continue;
                    }
                    let st = (now + retry, tries + 1);
                    s.cm = match s.cm {
                        CmState::AwaitReply { .. } => {
                            // The request goes again with its TagModes pages.
                            requests.push(s.core.params().local_conn);
                            CmState::AwaitReply {
                                next: st.0,
                                tries: st.1,
                            }
                        }
                        _ => {
                            resend.push((s.core.params().local_conn, s.cm_entropy, s.cm_msg));
                            CmState::AwaitRtu {
                                next: st.0,
                                tries: st.1,
                            }
                        }
                    };
                }
                _ => {}
            }
        }
        // The earliest wait left: nothing is due before it unless a wait changes (which
        // resets `cm_due`).
        self.cm_due = self
            .conns
            .iter()
            .flatten()
            .filter_map(|s| match s.cm {
                CmState::AwaitReply { next, .. }
                | CmState::AwaitRtu { next, .. }
                | CmState::AwaitDisconnect { next, .. } => Some(next),
                _ => None,
            })
            .min()
            .unwrap_or(u64::MAX);
        for (id, e, m) in resend {
            self.send_cm(id, e, m)?;
        }
        for id in requests {
            self.send_request(id)?;
        }
        Ok(())
    }

    /// Flow `f` of connection `slot` (flow-table entry `index`): how far its cumulative FSN
    /// advanced since the last read (recorded), and how many packets it holds beyond it. An
    /// entry the NIC reports unchanged since that read is not read again: its cumulative FSN
    /// did not move and its SACK bits are the ones counted then.
    fn read_flow_progress(&mut self, slot: usize, f: usize, index: u32) -> Result<(u64, u64)> {
        let changes = self.dev.nic().flow_rx_changes(index);
        let seen = self.flow_seen.get(index as usize).copied().flatten();
        if let (Some(c), Some((seen, sacked))) = (changes, seen)
            && c == seen
        {
            return Ok((0, sacked));
        }
        let mut w = [0u32; FLOW_READ_WORDS];
        self.dev.read_table_words(TableId::Flow, index, &mut w)?;
        let sacked = w[1..=SACK_BITS / 32]
            .iter()
            .map(|x| x.count_ones() as u64)
            .sum::<u64>();
        let cum = w[0] & FSN_MASK;
        if let Some(seen) = self.flow_seen.get_mut(index as usize) {
            *seen = changes.map(|c| (c, sacked));
        }
        let Some(rx) = self.conns.rx_progress_mut(slot) else {
            return Ok((0, sacked));
        };
        let prev = &mut rx.cum[f];
        let d = fsn_diff(cum, *prev);
        if d > 0 {
            *prev = cum;
            return Ok((d as u64, sacked));
        }
        Ok((0, sacked))
    }

    /// Whether the NIC reports every entry of `flows` (first, count) unchanged since the rate
    /// hints last read it.
    fn flows_unchanged(&mut self, (base, n): (u32, u32)) -> bool {
        (base..base + n).all(|index| {
            let seen = self.flow_seen.get(index as usize).copied().flatten();
            let changes = self.dev.nic().flow_rx_changes(index);
            changes.is_some() && seen.map(|(c, _)| c) == changes
        })
    }

    /// Reads the ports' link state (`PORT_LINK`) and, when a link went down or came back,
    /// tells every connection: flows leave a port whose link is down at once instead of
    /// waiting for their timers. Polled with the rate hints, so a change is seen within
    /// [`DeviceConfig::hint_interval_ns`] of time the host spends progressing.
    fn check_links(&mut self, now: u64) {
        let ports = self.sizes.ports.min(8);
        let mask = ((1u32 << ports) - 1) as u8;
        let down = !(self.dev.nic().read_reg(regs::PORT_LINK) as u8) & mask;
        if down == self.ports_down {
            return;
        }
        self.ports_down = down;
        self.stats.link_changes += 1;
        // Inbound capacity is that of the ports whose link is up: the fair shares hinted to
        // the senders shrink with it.
        let live = ports - down.count_ones();
        let capacity = self.cfg.inbound_capacity_mbps as u64 * live as u64 / ports.max(1) as u64;
        self.fair.set_capacity(capacity as u32);
        for s in self.conns.iter_mut().flatten() {
            s.core.set_ports_down(now, down);
        }
    }

    fn update_hints(&mut self) -> Result<()> {
        let now = self.now;
        let mut established = std::mem::take(&mut self.established);
        self.conns.established_flows(&mut established);
        for &(i, base, n) in &established {
            // Flows the NIC reports unchanged since their last read give the progress
            // observed then, which the fair share already holds: nothing to observe.
            if self.fair.hint(i as u32).is_none() || self.flows_unchanged((base, n)) {
                continue;
            }
            let n = n as usize;
            let mut progress = 0u64;
            // Packets received beyond the cumulative FSN count too: a sender whose first
            // packet was dropped (an incast's first burst) is active from its first arrival,
            // not from when its hole is filled.
            let mut beyond = 0u64;
            for f in 0..n {
                let (cum_advance, sacked) = self.read_flow_progress(i, f, base + f as u32)?;
                progress += cum_advance;
                beyond += sacked;
            }
            if let Some(rx) = self.conns.rx_progress_mut(i) {
                rx.total += progress;
                let p = rx.total + beyond;
                self.fair.observe(i as u32, now, p);
            }
        }
        self.established = established;
        let mut changed = Vec::new();
        self.fair.compute(now, |c, h| changed.push((c, h)));
        for (c, h) in changed {
            if self.conns.set_rate_hint(c as usize, h) {
                self.dev.set_rate_hint(c, h)?;
                self.stats.hints_programmed += 1;
            }
        }
        Ok(())
    }

    /// Moves the completions of the connections that changed since the last call to their
    /// CQs, and reports connections that failed since (the others have nothing new).
    fn deliver_completions(&mut self) {
        let mut wcs = std::mem::take(&mut self.wcs);
        let cm_events = &mut self.cm_events;
        self.conns.sweep(|i, s| {
            let (scq, rcq) = (s.send_cq, s.recv_cq);
            while let Some(wc) = s.core.poll_completion() {
                wcs.push((if wc.opcode.is_recv() { rcq } else { scq }, wc));
            }
            if let ConnState::Failed(reason) = s.core.state()
                && !s.reported
            {
                s.reported = true;
                s.cm = CmState::Failed;
                cm_events.push_back(CmEvent::Failed(ConnId(i as u32), reason));
            }
        });
        for (cq, wc) in wcs.drain(..) {
            self.push_cq(cq, wc);
        }
        self.wcs = wcs;
    }

    /// When [`Context::progress`] has to run next: the earliest connection timer, CM wait,
    /// NIC timer (when asked to wake for them) or hint update (with a connection up), or when
    /// a connection may transmit, which, when the host budget held it back, is once the
    /// pacer lets it (a full cap waits for an ACK or a timer instead: never spin on it).
    fn next_wake(&mut self, now: u64) -> Option<u64> {
        let tx = match self.budget.refusal() {
            None => self.conns.next_transmit(),
            Some(Refusal::PacedUntil(p)) => self.conns.next_transmit().map(|t| t.max(p)),
            Some(Refusal::Full) => None,
        };
        let mut wake = [self.conns.next_timer(), tx, self.conns.next_cm_wait()]
            .into_iter()
            .flatten()
            .min();
        self.dev.nic().poll(now);
        // A simulated NIC's ACK timers: wake then, or the ACK would wait for other news.
        if let Some(t) = self
            .cfg
            .nic_timer_wake
            .then(|| self.dev.nic().next_timer_ns())
            .flatten()
        {
            let t = t.max(now + 1);
            wake = Some(wake.map_or(t, |w| w.min(t)));
        }
        if self.conns.any_established() {
            wake = Some(wake.map_or(self.next_hint_at, |w| w.min(self.next_hint_at)));
        }
        wake
    }

    /// Moves due packets of every connection to the TX ring under the host budget: one
    /// packet per connection per turn, round robin from where the last round stopped, until
    /// no connection has anything to send, the budget refuses, or the ring is full; one
    /// doorbell for the batch.
    fn transmit(&mut self, now: u64) -> Result<()> {
        let (inflight, active) = self.conns.totals();
        self.budget.begin(inflight, active);
        let space = self.dev.tx_space() as usize;
        let mut descs = std::mem::take(&mut self.descs);
        descs.clear();
        // Only connections due by their own pacing can send; the others would decline.
        let mut due = std::mem::take(&mut self.due);
        self.conns.due_transmits(now, &mut due);
        let conns = &mut self.conns;
        let (_, next) = round_robin_among(
            conns.len(),
            self.rr_next,
            &mut due,
            space,
            &mut self.budget,
            |i, b| {
                conns.get_mut(i).map_or(0, |s| {
                    // Nothing due (the timers above released every parked packet that is):
                    // skip the pass over the connection's flows.
                    if s.core.transmit_at().is_none_or(|t| t > now) {
                        0
                    } else {
                        s.core.poll_transmit_gated(now, 1, b, &mut descs)
                    }
                })
            },
        );
        self.rr_next = next;
        self.due = due;
        let r = if descs.is_empty() {
            Ok(())
        } else {
            self.dev.post(&descs).map(|()| {
                self.stats.descriptors += descs.len() as u64;
                self.stats.doorbells += 1;
            })
        };
        self.descs = descs;
        Ok(r?)
    }

    /// The driver loop, to call whenever time passes or the NIC may have news: lets a simulated
    /// NIC run, feeds every event to the core (CM events to the CM exchange), runs due timers,
    /// moves due descriptors to the TX ring in batches (one doorbell per batch), delivers
    /// completions to the CQs, and recomputes rate hints. `now` is NIC time in ns. Returns the
    /// time of the next timer, if any: call again then at the latest.
    /// Reports [`Error::EventsLost`] (once per loss, after doing all of the above) if the NIC
    /// dropped events because its event ring was full.
    pub fn progress(&mut self, now: u64) -> Result<Option<u64>> {
        self.now = self.now.max(now);
        let now = self.now;
        self.dev.nic().poll(now);
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let r = self.dev.poll_events(&mut events).map(|_| ());
        for ev in &events {
            self.stats.events += 1;
            match ev {
                Event::Cm { .. } => self.handle_cm(ev)?,
                Event::Ack { conn, .. }
                | Event::Nak { conn, .. }
                | Event::Completion { conn, .. }
                | Event::TxError { conn, .. } => {
                    let id = *conn;
                    let Some(s) = self.conns.get_mut(id as usize) else {
                        self.stats.stray_events += 1;
                        continue;
                    };
                    s.core.handle_event(now, ev);
                    if matches!(ev, Event::Completion { .. })
                        && matches!(s.cm, CmState::AwaitRtu { .. })
                    {
                        // Data from the peer: it has our reply, whatever became of its RTU.
                        self.established(id);
                    }
                }
            }
        }
        self.events = events;
        r?;
        self.cm_timers()?;
        let mut lost = 0;
        if now >= self.next_hint_at {
            self.check_links(now);
            self.update_hints()?;
            self.next_hint_at = now + self.cfg.hint_interval_ns.max(1);
            // A full event ring drops events: never let that pass silently.
            let dropped = self.dev.counter(Counter::EventOverflow);
            lost = dropped.saturating_sub(self.stats.events_lost);
            self.stats.events_lost = dropped;
        }
        // Timers first, so that what they queue for resending takes part in the round.
        let mut due = std::mem::take(&mut self.due);
        self.conns.due_timers(now, &mut due);
        for &i in &due {
            if let Some(s) = self.conns.get_mut(i) {
                s.core.handle_timeout(now);
            }
        }
        self.due = due;
        self.transmit(now)?;
        self.deliver_completions();
        let wake = self.next_wake(now);
        if lost > 0 {
            return Err(Error::EventsLost(lost));
        }
        Ok(wake)
    }
}
