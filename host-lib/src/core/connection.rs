//! One connection: Tags above, flows below, one congestion controller.

use super::cc::{AckSample, CongestionController, mbps_to_bytes_per_ns};
use super::flow::{
    CAUSE_LOSS, CAUSE_NOT_READY, CAUSE_PROBE, FULL_WEIGHT, Flow, MIN_WEIGHT, PktState,
};
use super::host_budget::{TxGate, Ungated};
use super::tags::{TagRx, TagTx};
use super::{
    ConnectionParams, CoreError, TagMode, TransportConfig, WcOpcode, WcStatus, WorkCompletion,
    WorkRequest, WrKind,
};
use ferroce_proto::hsi::descriptor::{FLAG_ACK_REQ, FLAG_SOLICITED};
use ferroce_proto::hsi::{CompletionStatus, Event, TxDescriptor};
use ferroce_proto::wire::{NakReason, Opcode, SACK_BITS};
use std::cell::Cell;
use std::collections::VecDeque;

/// Wire bytes a data packet costs beyond its payload (Ethernet, IPv4, UDP, BTH, FDH, RETH, ICRC,
/// about), for windows and pacing.
pub(crate) const HEADER_BYTES: u32 = 100;

/// How long, in minimum RTOs, a port some flow left after a timeout is avoided by flows that
/// move ([`Connection::next_port`]).
const PORT_MEMORY_RTOS: u64 = 10;

/// Packets in flight on a flow up to which [`TransportConfig::tail_probe_few`] treats its
/// last packets as a tail.
const FEW_INFLIGHT: u64 = 2;

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// Set up, not yet allowed to transmit (the CM exchange is not finished).
    Connecting,
    /// Transmitting.
    Ready,
    /// Failed; every outstanding request was flushed.
    Failed(FailReason),
}

/// Why a connection failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailReason {
    /// No ACK or NAK on any path for the connection timeout while data was outstanding.
    AllPathsDead,
    /// A message exceeded the "receiver not ready" retry limit.
    RnrRetryExceeded,
    /// The peer rejected the connection request.
    Rejected,
    /// The connection request was never answered.
    ConnectTimeout,
    /// The acceptor's Reply broke the negotiation (more paths, Tags or MTU than offered, zero
    /// paths or Tags, or an MTU below [`crate::MIN_MTU`]): a protocol error. The requester
    /// answers it with a Reject and never establishes the connection.
    InvalidReply,
    /// Closed by either side.
    Disconnected,
}

/// Counters of one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Data packets sent for the first time.
    pub packets_sent: u64,
    /// Payload bytes sent for the first time.
    pub bytes_sent: u64,
    /// Packets resent because an ACK showed them lost (SACK hole below a delivered packet).
    pub retx_sack: u64,
    /// Packets resent because the retransmission timer fired.
    pub retx_timeout: u64,
    /// Tail-loss probes: a flow sent one packet more (new data beyond its window, or its
    /// last packet in flight again) because the ACK of a packet that requested one was
    /// overdue; the losses the probe then exposes count as SACK resends.
    pub tail_probes: u64,
    /// Tail-loss probes that resent the flow's last packet in flight (no new data to send).
    pub retx_probe: u64,
    /// Packets resent after a "receiver not ready" or "out of window" NAK (not losses).
    pub resent_not_ready: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// Silent paths: a flow's packets declared lost, as by a timeout, because packets its
    /// sibling flows sent well after them were delivered while it heard nothing
    /// ([`TransportConfig::silent_path_rtts`]). Not counted in `timeouts`.
    pub silent_paths: u64,
    /// Packets resent because their flow was found silent.
    pub retx_silent: u64,
    /// Flows moved off a NIC port because its link went down
    /// ([`Connection::set_ports_down`]); also counted in `entropy_changes`.
    pub link_down_moves: u64,
    /// Packets resent because the link of the port they left on went down while they were
    /// in flight.
    pub retx_link_down: u64,
    /// Flows moved to a new entropy (after timeouts, silent spells or congestion).
    pub entropy_changes: u64,
    /// Flows moved to a new entropy because their path stayed congested
    /// ([`TransportConfig::congestion_repath`]); also counted in `entropy_changes`.
    pub repaths_congestion: u64,
    /// Flows declared dead.
    pub paths_died: u64,
    /// Dead flows that came back.
    pub paths_revived: u64,
    /// ACK events processed.
    pub acks: u64,
    /// ACKs with ECN-echo.
    pub ecn_echoes: u64,
    /// NAK events processed.
    pub naks: u64,
    /// "Receiver not ready" NAKs.
    pub rnr_naks: u64,
    /// Terminal NAKs (remote access / invalid request).
    pub terminal_naks: u64,
    /// Terminal refusals learned from ACKs whose refusal count was ahead of the NAKs that
    /// arrived (so their NAKs were lost); the requests those ACKs newly covered failed with
    /// [`WcStatus::RemoteErrorUnknown`].
    pub lost_terminal_naks: u64,
    /// TX descriptors the NIC refused.
    pub tx_errors: u64,
    /// Events that did not match any state (stale or bogus); ignored.
    pub ignored_events: u64,
    /// Receive completions surfaced or absorbed (plain Writes).
    pub rx_messages: u64,
    /// Plain Writes the NIC completed with an error (not surfaced: the sender learns it).
    pub rx_write_errors: u64,
    /// Current rate hint from the peer (Mb/s).
    pub rate_hint_mbps: u32,
}

impl ConnectionStats {
    /// Loss-driven retransmissions (SACK plus timeout), the figure to compare with packets
    /// actually lost.
    pub fn retransmissions(&self) -> u64 {
        self.retx_sack
            + self.retx_timeout
            + self.retx_probe
            + self.retx_silent
            + self.retx_link_down
    }
}

/// One path as the extension API reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathStats {
    /// Flow index.
    pub flow: u16,
    /// Current entropy (UDP source port).
    pub entropy: u16,
    /// NIC port (plane) it sends on.
    pub port: u8,
    /// Smoothed RTT (ns).
    pub srtt_ns: u64,
    /// Congestion window (bytes).
    pub window: u64,
    /// Pacing rate (bytes/ns).
    pub pacing_rate: f64,
    /// Health weight, 0–1: the share of new data relative to a healthy path.
    pub weight: f64,
    /// Dead: avoided, only probed.
    pub dead: bool,
    /// Packets sent for the first time.
    pub packets: u64,
    /// Retransmissions of its packets (any cause but "not ready").
    pub retransmissions: u64,
    /// Retransmission timer expiries and silent-path verdicts
    /// ([`TransportConfig::silent_path_rtts`]).
    pub timeouts: u64,
    /// ACKs with ECN-echo.
    pub ecn_echoes: u64,
    /// Moves to a new entropy because the path stayed congested
    /// ([`TransportConfig::congestion_repath`]).
    pub repaths: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct PathCounters {
    packets: u64,
    retransmissions: u64,
    timeouts: u64,
    ecn_echoes: u64,
    repaths: u64,
}

/// A posted message on the send side.
#[derive(Debug, Clone, Copy)]
struct Msg {
    wr: WorkRequest,
    msn: u32,
    ssn: u32,
    packets: u32,
    acked: u32,
    next_offset: u32,
    error: Option<WcStatus>,
    epoch: u32,
    rnr_naks: u32,
    done: bool,
}

/// One connection of the sans-IO core. See the [module documentation](super).
///
/// Laid out in declaration order from a cache line's start: what the driver loop's summaries
/// and the transmit round read of every connection comes first (its first four lines), the
/// rest after it. A host has up to a few hundred connections; with the compiler's order
/// those reads were spread over the whole struct, past its configuration and counters.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Connection {
    state: ConnState,
    flows: Vec<Flow>,
    active_tags: VecDeque<u16>,
    tx_tags: Vec<TagTx>,
    /// Per NIC port, when the packets this connection handed to it will have left at the
    /// port's rate ([`TransportConfig::port_pacing`]).
    port_clock: Vec<u64>,
    cc: Box<dyn CongestionController>,
    /// [`Connection::poll_timer`], [`Connection::transmit_at`] and
    /// [`Connection::inflight_bytes`], computed together on first use and forgotten by every
    /// method that changes the connection: the driver loop asks them of every connection on
    /// every call, and each takes a pass over the flows.
    derived: Cell<Option<Derived>>,
    pkts_outstanding: u64,
    last_heard: u64,
    /// The connection's pacing clock over all its flows ([`TransportConfig::flow_turns`]): it
    /// may send while this is at most `burst_ns` ahead of now.
    next_send_at: u64,
    /// How far the connection's pacing clock may run ahead of now.
    burst_ns: u64,
    vclock: u64,
    hint_mbps: u32,
    starved: bool,
    /// The start of a connection at a shared receiver ([`TransportConfig::flow_rotation`],
    /// [`TransportConfig::start_phase`]) was applied.
    phased: bool,
    /// An ACK has arrived (the connection's pacer may burst after idling).
    acked_once: bool,
    /// NIC ports whose link is down, one bit per port ([`Connection::set_ports_down`]).
    ports_down: u8,
    /// The hint came from the CM reply and no ACK has applied one yet.
    hint_before_ack: bool,
    /// An ACK has carried a hint: from then on the CM reply's hint is stale.
    hint_from_ack: bool,
    params: ConnectionParams,
    cfg: TransportConfig,
    path: Vec<PathCounters>,
    rx_tags: Vec<TagRx>,
    msgs: Vec<Msg>,
    free: Vec<u32>,
    in_active: Vec<bool>,
    epoch_lo: u32,
    epoch_counts: VecDeque<u32>,
    completions: VecDeque<WorkCompletion>,
    send_outstanding: u32,
    next_entropy: usize,
    /// Per NIC port, when a flow last left it after a timeout or a silent spell: a port to
    /// avoid for a while when a flow moves (its plane may have failed).
    port_left_at: Vec<Option<u64>>,
    /// No congestion-driven repathing before this time (after a timeout or silent path).
    repath_suspended_until: u64,
    scratch: Vec<u32>,
    stats: ConnectionStats,
}

/// The values of [`Connection::derived`].
#[derive(Debug, Clone, Copy)]
struct Derived {
    timer: Option<u64>,
    transmit_at: Option<u64>,
    inflight: u64,
}

impl Connection {
    /// A connection in [`ConnState::Connecting`]. `params.flows`, `mtu` and the Tag count must
    /// be non-zero and `entropies` must hold at least one value (the API layer checks this).
    pub fn new(params: ConnectionParams, cfg: TransportConfig, now: u64) -> Self {
        let nflows = params.flows.max(1) as usize;
        let mut entropies = params.entropies.clone();
        if entropies.is_empty() {
            entropies.push(49152);
        }
        let planes = params.planes.max(1);
        let flows: Vec<Flow> = (0..nflows)
            .map(|i| {
                let mut f = Flow::new(
                    params.tx_initial_fsn,
                    entropies[i % entropies.len()],
                    cfg.initial_rtt_ns,
                );
                f.port = (i % planes as usize) as u8;
                f
            })
            .collect();
        let mut cc = cfg.congestion.build(
            nflows,
            params.mtu.max(1),
            cfg.line_rate_mbps,
            cfg.initial_rtt_ns,
        );
        cc.set_planes(planes);
        let ntags = params.tag_modes.len();
        let tx_tags = params
            .tag_modes
            .iter()
            .map(|&m| TagTx::new(m, cfg.rnr_initial_backoff_ns))
            .collect();
        let rx_tags = params
            .tag_modes
            .iter()
            .map(|&m| TagRx::new(m, params.recv_depth))
            .collect();
        let params = ConnectionParams {
            entropies,
            planes,
            mtu: params.mtu.max(1),
            ..params
        };
        Connection {
            next_entropy: nflows,
            params,
            cfg,
            state: ConnState::Connecting,
            flows,
            path: vec![PathCounters::default(); nflows],
            tx_tags,
            rx_tags,
            msgs: Vec::new(),
            free: Vec::new(),
            active_tags: VecDeque::new(),
            in_active: vec![false; ntags],
            epoch_lo: 0,
            epoch_counts: VecDeque::from(vec![0]),
            cc,
            completions: VecDeque::new(),
            send_outstanding: 0,
            pkts_outstanding: 0,
            last_heard: now,
            hint_mbps: 0,
            hint_before_ack: false,
            hint_from_ack: false,
            next_send_at: 0,
            port_clock: vec![0; planes as usize],
            port_left_at: vec![None; planes as usize],
            ports_down: 0,
            burst_ns: 0,
            repath_suspended_until: 0,
            acked_once: false,
            phased: false,
            starved: false,
            vclock: 0,
            scratch: Vec::new(),
            stats: ConnectionStats::default(),
            derived: Cell::new(None),
        }
    }

    /// The agreed parameters.
    pub fn params(&self) -> &ConnectionParams {
        &self.params
    }

    /// Current state.
    pub fn state(&self) -> ConnState {
        self.state
    }

    /// Counters.
    pub fn stats(&self) -> &ConnectionStats {
        &self.stats
    }

    /// Per-path view (the extension API).
    pub fn paths(&self) -> Vec<PathStats> {
        self.flows
            .iter()
            .enumerate()
            .map(|(i, f)| PathStats {
                flow: i as u16,
                entropy: f.entropy,
                port: f.port,
                srtt_ns: f.srtt,
                window: self.cc.window(i),
                pacing_rate: self.cc.pacing_rate(i),
                weight: f.weight as f64 / FULL_WEIGHT as f64,
                dead: f.dead,
                packets: self.path[i].packets,
                retransmissions: self.path[i].retransmissions,
                timeouts: self.path[i].timeouts,
                ecn_echoes: self.path[i].ecn_echoes,
                repaths: self.path[i].repaths,
            })
            .collect()
    }

    /// Send-side work requests posted and not yet completed.
    pub fn send_outstanding(&self) -> u32 {
        self.send_outstanding
    }

    /// Adopts a smaller shape agreed in the CM exchange before the connection is ready: `flows`
    /// flows, `mtu` payload bytes per packet and the first `tags` Tags (their modes kept).
    /// Requests already posted are cut at the new MTU; those on Tags beyond `tags`, and the
    /// receives posted there, complete with [`WcStatus::Flushed`]. Only shrinking is allowed,
    /// and only while [`ConnState::Connecting`] (nothing has been sent yet):
    /// [`CoreError::NotUsable`] otherwise, or for a zero count.
    pub fn renegotiate(&mut self, flows: u16, mtu: u32, tags: u16) -> Result<(), CoreError> {
        self.changing(|c| c.renegotiate_inner(flows, mtu, tags))
    }

    fn renegotiate_inner(&mut self, flows: u16, mtu: u32, tags: u16) -> Result<(), CoreError> {
        let (nflows, ntags) = (flows as usize, tags as usize);
        if self.state != ConnState::Connecting
            || nflows == 0
            || ntags == 0
            || mtu == 0
            || nflows > self.flows.len()
            || ntags > self.tx_tags.len()
            || mtu > self.params.mtu
        {
            return Err(CoreError::NotUsable);
        }
        let conn = self.params.local_conn;
        // Tags that negotiation removed: flush what was posted on them.
        for t in ntags..self.tx_tags.len() {
            let ids: Vec<u32> = self.tx_tags[t].msgs.drain(..).collect();
            for id in ids {
                let mut m = self.msgs[id as usize];
                m.error = Some(WcStatus::Flushed);
                m.wr.signaled = true;
                emit(&mut self.completions, conn, &m);
                self.send_outstanding = self.send_outstanding.saturating_sub(1);
                let e = m.epoch.wrapping_sub(self.epoch_lo) as usize;
                if let Some(c) = self.epoch_counts.get_mut(e) {
                    *c = c.saturating_sub(1);
                }
                self.free.push(id);
            }
        }
        while self.epoch_counts.len() > 1 && self.epoch_counts[0] == 0 {
            self.epoch_counts.pop_front();
            self.epoch_lo += 1;
        }
        for t in ntags..self.rx_tags.len() {
            self.flush_receives(t);
        }
        self.tx_tags.truncate(ntags);
        self.rx_tags.truncate(ntags);
        self.in_active.truncate(ntags);
        self.active_tags.retain(|&t| (t as usize) < ntags);
        self.params.tag_modes.truncate(ntags);
        // The MTU: nothing is segmented yet, so the packet counts are simply recomputed.
        self.params.mtu = mtu;
        for tag in &self.tx_tags {
            for &id in &tag.msgs {
                let m = &mut self.msgs[id as usize];
                m.packets = m.wr.len.div_ceil(mtu).max(1);
            }
        }
        // Flows, their counters and the congestion controller for the new count.
        self.params.flows = flows;
        self.flows.truncate(nflows);
        self.path.truncate(nflows);
        self.next_entropy = nflows;
        self.cc = self.cfg.congestion.build(
            nflows,
            mtu,
            self.cfg.line_rate_mbps,
            self.cfg.initial_rtt_ns,
        );
        self.cc.set_planes(self.params.planes.max(1));
        Ok(())
    }

    /// Applies the first rate hint the peer gave in its CM reply, before any ACK: only a share
    /// below our line rate counts (an incast's senders then start at their share instead of
    /// each with a full first window). The first ACK applies its hint again, when the windows
    /// can follow a measured RTT instead of the initial estimate. The acceptor may repeat its
    /// reply with a lower hint when more senders connected to it after it replied; that hint
    /// applies too, until an ACK has carried one.
    pub fn apply_rate_hint(&mut self, now: u64, mbps: u32) {
        self.changing(|c| {
            if c.cfg.reply_hint && !c.hint_from_ack && mbps > 0 && mbps < c.cfg.line_rate_mbps {
                c.apply_hint(now, mbps);
                c.hint_before_ack = true;
            }
        });
    }

    /// The CM exchange finished: start transmitting.
    pub fn set_ready(&mut self, now: u64) {
        self.changing(|c| c.set_ready_inner(now));
    }

    fn set_ready_inner(&mut self, now: u64) {
        if self.state == ConnState::Connecting {
            self.state = ConnState::Ready;
            self.last_heard = now;
            self.starved = false;
        }
    }

    /// Whether the receiver says it is shared (its hint is below our line rate): then
    /// tail-loss probes run and pacing bursts are capped (see [`Connection::poll_transmit`]).
    /// There the first burst's tail drops are expected (an incast), and waiting for the
    /// retransmission timeout costs many RTTs of an unfair share. Elsewhere SACK and the
    /// timeout handle losses; the timeout's entropy change also moves a flow off a congested
    /// path, which a probe's quick recovery would forgo.
    fn shared(&self) -> bool {
        self.hint_mbps > 0 && self.hint_mbps < self.cfg.line_rate_mbps
    }

    /// Whether flow `f` sends tail-loss probes: at a shared receiver always, elsewhere (with
    /// [`TransportConfig::tail_probe_few`]) while it has at most [`FEW_INFLIGHT`] packets in
    /// flight, when a lost packet is most likely the last of its flow for a while.
    fn probes_tail(&self, f: &Flow) -> bool {
        self.shared()
            || (self.cfg.tail_probe_few
                && f.inflight_bytes <= FEW_INFLIGHT * (self.params.mtu + HEADER_BYTES) as u64)
    }

    /// Whether the connection paces the sum of its flows ([`TransportConfig::flow_turns`]).
    fn turns(&self) -> bool {
        self.cfg.flow_turns && self.shared()
    }

    /// Whether the connection's own pacer lets a packet go at `now`.
    fn conn_pace_ok(&self, now: u64) -> bool {
        !self.turns() || self.next_send_at <= now + self.burst_ns
    }

    /// The sum of the flows' pacing rates (bytes per ns, never zero): the rate of the
    /// connection's own pacer.
    fn total_pacing_rate(&self) -> f64 {
        (0..self.flows.len())
            .map(|i| self.cc.pacing_rate(i))
            .sum::<f64>()
            .max(1e-6)
    }

    /// Whether port pacing applies ([`TransportConfig::port_pacing`], more than one plane).
    fn port_paced(&self) -> bool {
        self.cfg.port_pacing && self.port_clock.len() > 1
    }

    /// Wire bytes per ns of one NIC port.
    fn port_rate(&self) -> f64 {
        mbps_to_bytes_per_ns(self.cfg.line_rate_mbps).max(1e-6) / self.port_clock.len() as f64
    }

    /// How far a port's clock may run ahead of now: a pacing burst of full packets.
    fn port_burst_ns(&self) -> u64 {
        let pkt = (self.params.mtu + HEADER_BYTES) as f64;
        (pkt * self.cfg.pacing_burst_packets.saturating_sub(1) as f64 / self.port_rate()) as u64
    }

    /// When port `port` next lets one of this connection's packets go (0 when not paced).
    fn port_pace_at(&self, port: u8) -> u64 {
        if !self.port_paced() {
            return 0;
        }
        self.port_clock
            .get(port as usize)
            .map_or(0, |&c| c.saturating_sub(self.port_burst_ns()))
    }

    /// When the connection's own pacer next lets a packet go.
    fn conn_pace_at(&self) -> u64 {
        if self.turns() {
            self.next_send_at.saturating_sub(self.burst_ns)
        } else {
            0
        }
    }

    fn usable(&self) -> bool {
        !matches!(self.state, ConnState::Failed(_))
    }

    /// Posts a Send or Write; returns its MSN. Requests may be posted while connecting; they
    /// leave once the connection is ready.
    pub fn post(&mut self, wr: WorkRequest) -> Result<u32, CoreError> {
        self.changing(|c| c.post_inner(wr))
    }

    fn post_inner(&mut self, wr: WorkRequest) -> Result<u32, CoreError> {
        if !self.usable() {
            return Err(CoreError::NotUsable);
        }
        let t = wr.tag as usize;
        if t >= self.tx_tags.len() {
            return Err(CoreError::InvalidTag(wr.tag));
        }
        if self.send_outstanding >= self.cfg.max_send_wr {
            return Err(CoreError::SendQueueFull);
        }
        let tag = &mut self.tx_tags[t];
        let msn = tag.next_msn;
        tag.next_msn = msn.wrapping_add(1);
        let ssn = match wr.kind {
            WrKind::Send { .. } => {
                let s = tag.next_ssn;
                tag.next_ssn = s.wrapping_add(1);
                s
            }
            WrKind::Write { .. } => 0,
        };
        let epoch = self.epoch_lo + self.epoch_counts.len() as u32 - 1;
        if let Some(c) = self.epoch_counts.back_mut() {
            *c += 1;
        }
        let msg = Msg {
            wr,
            msn,
            ssn,
            packets: wr.len.div_ceil(self.params.mtu).max(1),
            acked: 0,
            next_offset: 0,
            error: None,
            epoch,
            rnr_naks: 0,
            done: false,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.msgs[id as usize] = msg;
                id
            }
            None => {
                self.msgs.push(msg);
                (self.msgs.len() - 1) as u32
            }
        };
        self.tx_tags[t].msgs.push_back(id);
        if !self.in_active[t] {
            self.in_active[t] = true;
            self.active_tags.push_back(wr.tag);
        }
        self.send_outstanding += 1;
        self.starved = false;
        Ok(msn)
    }

    /// An execution fence: requests posted after it start only when every request posted
    /// before it (on any Tag of this connection) has completed.
    pub fn fence(&mut self) -> Result<(), CoreError> {
        self.changing(|c| c.fence_inner())
    }

    fn fence_inner(&mut self) -> Result<(), CoreError> {
        if !self.usable() {
            return Err(CoreError::NotUsable);
        }
        if self.epoch_counts.back().is_some_and(|&c| c > 0) {
            self.epoch_counts.push_back(0);
        }
        Ok(())
    }

    /// Records a posted receive on `tag`; returns its SSN (the caller programs the NIC's
    /// receive-buffer entry for it).
    pub fn post_recv(
        &mut self,
        tag: u16,
        wr_id: u64,
        addr: u64,
        len: u32,
    ) -> Result<u32, CoreError> {
        if !self.usable() {
            return Err(CoreError::NotUsable);
        }
        let t = self
            .rx_tags
            .get_mut(tag as usize)
            .ok_or(CoreError::InvalidTag(tag))?;
        t.post(wr_id, addr, len)
    }

    /// Next completion (send or receive side), if any.
    pub fn poll_completion(&mut self) -> Option<WorkCompletion> {
        self.completions.pop_front()
    }

    /// Feeds one NIC event. Events of other connections and stale events are ignored (and
    /// counted in [`ConnectionStats::ignored_events`] when they name this connection).
    pub fn handle_event(&mut self, now: u64, ev: &Event) {
        self.changing(|c| c.handle_event_inner(now, ev));
    }

    fn handle_event_inner(&mut self, now: u64, ev: &Event) {
        let me = self.params.local_conn;
        match *ev {
            Event::Ack {
                conn,
                flow,
                cum_fsn,
                ecn_echo,
                ce_count,
                refused,
                rate_hint_mbps,
                ts_echo,
                ref sack,
            } if conn == me => self.on_ack(
                now,
                flow,
                cum_fsn,
                ecn_echo,
                ce_count,
                refused,
                rate_hint_mbps,
                ts_echo,
                sack,
            ),
            Event::Nak {
                conn,
                flow,
                fsn,
                reason,
                tag,
                msn,
                offset,
            } if conn == me => self.on_nak(now, flow, fsn, reason, tag, msn, offset),
            Event::Completion {
                conn,
                tag,
                msn,
                ssn,
                opcode,
                status,
                len,
                imm,
            } if conn == me => self.on_rx_completion(tag, msn, ssn, opcode, status, len, imm),
            Event::TxError { conn, .. } if conn == me => {
                // Nothing left the NIC; the retransmission timer resends the packet.
                self.stats.tx_errors += 1;
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_ack(
        &mut self,
        now: u64,
        flow: u16,
        cum_fsn: u32,
        ecn_echo: bool,
        ce_count: u16,
        refused: u16,
        hint: u32,
        ts_echo: u32,
        sack: &[u8; SACK_BITS / 8],
    ) {
        let fi = flow as usize;
        if fi >= self.flows.len() || !self.usable() {
            self.stats.ignored_events += 1;
            return;
        }
        self.stats.acks += 1;
        self.last_heard = now;
        self.acked_once = true;
        let mut acked_msgs = std::mem::take(&mut self.scratch);
        acked_msgs.clear();
        let f = &mut self.flows[fi];
        let slack = f.srtt / 2;
        let out = f.on_ack(
            cum_fsn,
            sack,
            slack,
            HEADER_BYTES as u64,
            |p| acked_msgs.push(p.msg),
            |_| {},
        );
        // RTT from the echoed NIC timestamp of the packet that triggered the ACK.
        let rtt = (now as u32).wrapping_sub(ts_echo) as u64;
        let rtt = (rtt < 1_000_000_000).then_some(rtt);
        if let Some(r) = rtt {
            f.rtt_sample(r);
        }
        if out.hi_grew && out.hi_grew_clean {
            f.recent_rtt = Some(now.saturating_sub(f.hi_sent_at()));
        }
        let hi_grew = out.hi_grew;
        if out.acked_packets > 0 {
            if f.dead {
                f.dead = false;
                f.weight = FULL_WEIGHT / 2;
                self.stats.paths_revived += 1;
            }
            f.consecutive_timeouts = 0;
            f.backoff = 0;
            f.probes = 0;
            f.probe_new = false;
            f.last_progress_at = now;
            f.quiet_since = now;
            f.weight = (f.weight + 4 * out.acked_packets).min(FULL_WEIGHT);
            f.rto_deadline = (f.inflight_bytes > 0).then(|| {
                now + f.rto(
                    self.cfg.min_rto_ns,
                    self.cfg.max_rto_ns,
                    self.cfg.initial_rto_ns,
                )
            });
            self.pkts_outstanding = self
                .pkts_outstanding
                .saturating_sub(out.acked_packets as u64);
        } else if f.inflight_bytes == 0 {
            f.rto_deadline = None;
        }
        if out.lost_packets > 0 {
            // Path health: a lossy path gets less new data.
            f.weight = (f.weight * 7 / 8).max(MIN_WEIGHT);
            self.stats.retx_sack += out.lost_packets as u64;
            self.cc.on_loss(now, fi, out.lost_payload as u32);
        }
        let srtt = f.srtt;
        if ecn_echo {
            self.stats.ecn_echoes += 1;
            self.path[fi].ecn_echoes += 1;
        }
        self.cc.on_ack(
            now,
            fi,
            &AckSample {
                acked_bytes: out.acked_payload + out.acked_packets as u64 * HEADER_BYTES as u64,
                acked_packets: out.acked_packets,
                ce_packets: ce_count as u32,
                ecn_echo,
                rtt_ns: rtt,
                srtt_ns: srtt,
            },
        );
        // The first ACK's hint goes through even if it equals the reply's.
        self.hint_from_ack = true;
        if std::mem::take(&mut self.hint_before_ack) || hint != self.hint_mbps {
            self.apply_hint(now, hint);
        }
        self.count_congestion_round(now, fi, out.acked_packets, ce_count as u32);
        // Refusals the NAKs did not tell us about: some NAK was lost, and the refused packets
        // are among those this ACK newly covers (an ACK covering a refused FSN was sent after
        // the refusal, so it counts it). We cannot tell which, so none of them may succeed.
        let missed = refused.wrapping_sub(self.flows[fi].refused_known) as i16;
        if missed > 0 {
            self.flows[fi].refused_known = refused;
            self.stats.lost_terminal_naks += missed as u64;
            for &id in &acked_msgs {
                let m = &mut self.msgs[id as usize];
                if !m.done {
                    m.error.get_or_insert(WcStatus::RemoteErrorUnknown);
                }
            }
        }
        if hi_grew {
            self.find_silent_flows(now, fi);
        }
        for &id in &acked_msgs {
            self.packet_consumed(id);
        }
        self.scratch = acked_msgs;
        // Tail-loss deadlines: this flow's, and those of siblings that had no timing yet.
        let first_timing = out.hi_grew
            && out.hi_grew_clean
            && self.flows.iter().filter(|g| g.recent_rtt.is_some()).count() == 1;
        for g in 0..self.flows.len() {
            if g == fi || (first_timing && self.flows[g].recent_rtt.is_none()) {
                let (r, s) = tail_timing(&self.flows, g, self.cfg.initial_rtt_ns);
                self.flows[g].tail_deadline = self.flows[g].tail_deadline_for(r, s);
            }
        }
    }

    /// One more packet of message `id` was consumed by the receiver.
    fn packet_consumed(&mut self, id: u32) {
        let m = &mut self.msgs[id as usize];
        m.acked += 1;
        if m.acked >= m.packets && m.next_offset >= m.wr.len && !m.done {
            self.message_done(id);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_nak(
        &mut self,
        now: u64,
        flow: u16,
        fsn: u32,
        reason: NakReason,
        tag: u16,
        msn: u32,
        offset: u32,
    ) {
        let fi = flow as usize;
        if fi >= self.flows.len() || !self.usable() {
            self.stats.ignored_events += 1;
            return;
        }
        self.stats.naks += 1;
        self.last_heard = now;
        let f = &mut self.flows[fi];
        let seq = f.seq_of(fsn);
        if seq < f.base as i64 || seq >= f.next as i64 {
            self.stats.ignored_events += 1;
            return;
        }
        let seq = seq as u64;
        let Some(p) = f.get_mut(seq).copied() else {
            self.stats.ignored_events += 1;
            return;
        };
        let m = self.msgs[p.msg as usize];
        if p.state == PktState::Acked || m.wr.tag != tag || m.msn != msn || p.offset != offset {
            self.stats.ignored_events += 1;
            return;
        }
        match reason {
            NakReason::RemoteAccess | NakReason::InvalidRequest => {
                // Terminal: the receiver consumed the packet (its FSN counts as received) and
                // wrote nothing. The message fails; the connection goes on.
                self.stats.terminal_naks += 1;
                let status = if reason == NakReason::RemoteAccess {
                    WcStatus::RemoteAccessError
                } else {
                    WcStatus::RemoteInvalidRequest
                };
                if f.consume(seq, HEADER_BYTES as u64).is_some() {
                    f.refused_known = f.refused_known.wrapping_add(1);
                    if f.inflight_bytes == 0 {
                        f.rto_deadline = None;
                    }
                    self.pkts_outstanding = self.pkts_outstanding.saturating_sub(1);
                    self.msgs[p.msg as usize].error.get_or_insert(status);
                    self.packet_consumed(p.msg);
                }
            }
            NakReason::ReceiverNotReady | NakReason::OutOfWindow => {
                // Not consumed: park the packet and resend it later (same flow, same FSN).
                if p.state == PktState::InFlight {
                    f.inflight_bytes = f
                        .inflight_bytes
                        .saturating_sub(p.len as u64 + HEADER_BYTES as u64);
                }
                if let Some(pk) = f.get_mut(seq) {
                    pk.state = PktState::Parked;
                }
                let at = if reason == NakReason::ReceiverNotReady {
                    self.stats.rnr_naks += 1;
                    let t = &mut self.tx_tags[tag as usize];
                    let at = now + t.rnr_backoff;
                    t.rnr_until = t.rnr_until.max(at);
                    t.rnr_backoff = (t.rnr_backoff * 2).min(self.cfg.rnr_max_backoff_ns);
                    let m = &mut self.msgs[p.msg as usize];
                    m.rnr_naks += 1;
                    if self.cfg.rnr_retry_limit.is_some_and(|lim| m.rnr_naks > lim) {
                        m.error = Some(WcStatus::RnrRetryExceeded);
                        self.fail(FailReason::RnrRetryExceeded);
                        return;
                    }
                    at
                } else {
                    now + f.srtt.max(1)
                };
                f.parked.push_back((at, seq));
                if f.inflight_bytes == 0 && f.retx.is_empty() {
                    f.rto_deadline = None;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_rx_completion(
        &mut self,
        tag: u16,
        msn: u32,
        ssn: u32,
        opcode: Opcode,
        status: CompletionStatus,
        len: u32,
        imm: Option<u32>,
    ) {
        if !self.usable() {
            // Our receives were flushed when the connection failed.
            self.stats.ignored_events += 1;
            return;
        }
        let Some(t) = self.rx_tags.get_mut(tag as usize) else {
            self.stats.ignored_events += 1;
            return;
        };
        let status = match status {
            CompletionStatus::Success => WcStatus::Success,
            CompletionStatus::RemoteAccessError => WcStatus::RemoteAccessError,
            CompletionStatus::LengthError => WcStatus::LocalLengthError,
        };
        let base = WorkCompletion {
            wr_id: 0,
            conn: self.params.local_conn,
            opcode: WcOpcode::Recv,
            status,
            tag,
            msn,
            byte_len: len,
            imm,
        };
        let wc = match opcode {
            Opcode::Send | Opcode::SendImm => match t.take(ssn) {
                Some(post) => Some(WorkCompletion {
                    wr_id: post.wr_id,
                    ..base
                }),
                None => {
                    // The NIC completed a Send into a buffer we do not know: surface it with
                    // wr_id 0 rather than lose it.
                    self.stats.ignored_events += 1;
                    Some(base)
                }
            },
            Opcode::WriteImm => Some(WorkCompletion {
                opcode: WcOpcode::RecvWriteImm,
                ..base
            }),
            _ => {
                if status != WcStatus::Success {
                    self.stats.rx_write_errors += 1;
                }
                None
            }
        };
        self.stats.rx_messages += 1;
        if !t.complete(msn, wc, &mut self.completions) {
            self.stats.ignored_events += 1;
        }
    }

    /// Message `id` is complete at the receiver (every packet consumed).
    fn message_done(&mut self, id: u32) {
        let m = &mut self.msgs[id as usize];
        m.done = true;
        let m = *m;
        self.send_outstanding -= 1;
        let e = (m.epoch - self.epoch_lo) as usize;
        if let Some(c) = self.epoch_counts.get_mut(e) {
            *c = c.saturating_sub(1);
        }
        while self.epoch_counts.len() > 1 && self.epoch_counts[0] == 0 {
            self.epoch_counts.pop_front();
            self.epoch_lo += 1;
        }
        self.starved = false;
        let t = m.wr.tag as usize;
        let tag = &mut self.tx_tags[t];
        tag.rnr_backoff = self.cfg.rnr_initial_backoff_ns;
        if tag.mode == TagMode::Unordered {
            emit(&mut self.completions, self.params.local_conn, &m);
        }
        // Retire finished messages from the front (in MSN order for ordered Tags).
        while let Some(&front) = tag.msgs.front() {
            let fm = self.msgs[front as usize];
            if !fm.done {
                break;
            }
            tag.msgs.pop_front();
            tag.seg = tag.seg.saturating_sub(1);
            if tag.mode == TagMode::Ordered {
                emit(&mut self.completions, self.params.local_conn, &fm);
            }
            self.free.push(front);
        }
    }

    /// Fails the connection and flushes everything outstanding.
    pub fn fail(&mut self, reason: FailReason) {
        self.changing(|c| c.fail_inner(reason));
    }

    fn fail_inner(&mut self, reason: FailReason) {
        if !self.usable() {
            return;
        }
        self.state = ConnState::Failed(reason);
        let conn = self.params.local_conn;
        for t in 0..self.tx_tags.len() {
            let ids: Vec<u32> = self.tx_tags[t].msgs.drain(..).collect();
            self.tx_tags[t].seg = 0;
            for id in ids {
                let m = self.msgs[id as usize];
                if !m.done {
                    let mut m = m;
                    m.error = Some(m.error.unwrap_or(WcStatus::Flushed));
                    m.wr.signaled = true;
                    emit(&mut self.completions, conn, &m);
                } else if self.tx_tags[t].mode == TagMode::Ordered {
                    emit(&mut self.completions, conn, &m);
                }
                self.free.push(id);
            }
        }
        for t in 0..self.rx_tags.len() {
            self.flush_receives(t);
        }
        self.send_outstanding = 0;
        self.active_tags.clear();
        self.in_active.iter_mut().for_each(|a| *a = false);
        for f in &mut self.flows {
            f.retx.clear();
            f.parked.clear();
            f.rto_deadline = None;
            f.tail_deadline = None;
        }
        self.pkts_outstanding = 0;
    }

    /// Moves parked packets whose delay has passed to their flow's retransmit queue.
    /// Takes the receiver's rate hint for this connection (Mb/s).
    fn apply_hint(&mut self, now: u64, hint: u32) {
        self.hint_mbps = hint;
        self.stats.rate_hint_mbps = hint;
        self.cc.on_rate_hint(now, hint);
    }

    /// Completes Tag `t`'s held receive completions, then flushes its posted receives.
    fn flush_receives(&mut self, t: usize) {
        let conn = self.params.local_conn;
        let held = self.rx_tags[t].drain_held();
        self.completions.extend(held);
        for post in self.rx_tags[t].drain_posted() {
            self.completions.push_back(WorkCompletion {
                wr_id: post.wr_id,
                conn,
                opcode: WcOpcode::Recv,
                status: WcStatus::Flushed,
                tag: t as u16,
                msn: 0,
                byte_len: 0,
                imm: None,
            });
        }
    }

    fn release_parked(&mut self, now: u64) {
        for f in self.flows.iter_mut() {
            let mut i = 0;
            while i < f.parked.len() {
                let (at, seq) = f.parked[i];
                if at > now {
                    i += 1;
                    continue;
                }
                f.parked.remove(i);
                if let Some(p) = f.get_mut(seq)
                    && p.state == PktState::Parked
                {
                    p.state = PktState::Queued;
                    p.cause = CAUSE_NOT_READY;
                    f.retx.push_back(seq);
                }
            }
        }
    }

    /// Cuts the next packet of some Tag, round robin over the Tags that may send: the head
    /// message's fence epoch has been reached, its MSN is within `msg_slots` of the Tag's
    /// oldest incomplete message, and the Tag is not backing off after "receiver not ready".
    /// Returns (message, offset, length, whether the packet should request an ACK).
    fn next_segment(&mut self, now: u64) -> Option<(u32, u32, u32, bool)> {
        let n = self.active_tags.len();
        for _ in 0..n {
            let t = self.active_tags.pop_front()?;
            let tag = &mut self.tx_tags[t as usize];
            if !tag.has_unsegmented() {
                self.in_active[t as usize] = false;
                continue;
            }
            let id = tag.msgs[tag.seg];
            let oldest = self.msgs[tag.msgs[0] as usize].msn;
            let m = &mut self.msgs[id as usize];
            if tag.rnr_until != 0 && tag.rnr_until <= now {
                tag.rnr_until = 0;
            }
            let blocked = m.epoch > self.epoch_lo
                || m.msn.wrapping_sub(oldest) >= self.params.msg_slots
                || tag.rnr_until > now;
            if blocked {
                self.active_tags.push_back(t);
                continue;
            }
            let offset = m.next_offset;
            let len = (m.wr.len - offset).min(self.params.mtu);
            m.next_offset = offset + len;
            // The message's tail (its last `flows` packets) requests ACKs: its packets are
            // spread over every path, and without a request the receiver would hold back the
            // ACK of a path's last few packets until that path carries more (ACK coalescing).
            let remaining = (m.wr.len - m.next_offset).div_ceil(self.params.mtu);
            let last = remaining < self.flows.len() as u32;
            if m.next_offset >= m.wr.len {
                tag.seg += 1;
            }
            if tag.has_unsegmented() {
                self.active_tags.push_back(t);
            } else {
                self.in_active[t as usize] = false;
            }
            return Some((id, offset, len, last));
        }
        None
    }

    fn descriptor(&self, fi: usize, seq: u64, id: u32, offset: u32, len: u32) -> TxDescriptor {
        let f = &self.flows[fi];
        let m = &self.msgs[id as usize];
        let (opcode, imm, remote_va, rkey) = match m.wr.kind {
            WrKind::Send { imm } => (
                if imm.is_some() {
                    Opcode::SendImm
                } else {
                    Opcode::Send
                },
                imm,
                0,
                0,
            ),
            WrKind::Write {
                remote_va,
                rkey,
                imm,
            } => (
                if imm.is_some() {
                    Opcode::WriteImm
                } else {
                    Opcode::Write
                },
                imm,
                remote_va.wrapping_add(offset as u64),
                rkey,
            ),
        };
        let last = offset + len >= m.wr.len;
        TxDescriptor {
            opcode: opcode as u8,
            flags: if last && m.wr.solicited {
                FLAG_SOLICITED
            } else {
                0
            },
            flow: fi as u16,
            conn: self.params.local_conn,
            fsn: f.fsn(seq),
            entropy: f.entropy,
            tag: m.wr.tag,
            msn: m.msn,
            ssn: m.ssn,
            offset,
            msg_len: m.wr.len,
            payload_len: len,
            imm: imm.unwrap_or(0),
            local_addr: m.wr.local_addr.wrapping_add(offset as u64),
            remote_va,
            rkey,
            port: f.port,
        }
    }

    /// Appends up to `budget` TX descriptors due at `now` to `out`; returns how many. Lost and
    /// parked packets go first (same flow, same FSN, the flow's current entropy), then new
    /// packets on the flow with the least weighted service among those with window room and
    /// pacing credit; dead flows only resend.
    pub fn poll_transmit(&mut self, now: u64, budget: usize, out: &mut Vec<TxDescriptor>) -> usize {
        self.poll_transmit_gated(now, budget, &mut Ungated, out)
    }

    /// [`Connection::poll_transmit`] under a host-level gate (the host budget shared by every
    /// connection of the NIC): each packet must also pass `gate`, and its retransmission timer
    /// starts when the gate expects it to leave, not when it was cut.
    pub fn poll_transmit_gated<G: TxGate + ?Sized>(
        &mut self,
        now: u64,
        budget: usize,
        gate: &mut G,
        out: &mut Vec<TxDescriptor>,
    ) -> usize {
        self.changing(|c| c.poll_transmit_gated_inner(now, budget, gate, out))
    }

    fn poll_transmit_gated_inner<G: TxGate + ?Sized>(
        &mut self,
        now: u64,
        budget: usize,
        gate: &mut G,
        out: &mut Vec<TxDescriptor>,
    ) -> usize {
        if self.state != ConnState::Ready {
            return 0;
        }
        self.release_parked(now);
        if !self.phased && !self.acked_once && self.turns() && !self.active_tags.is_empty() {
            self.phased = true;
            let nflows = self.flows.len();
            if self.cfg.flow_rotation && self.stats.packets_sent == 0 {
                // The first flow to send is the connection's own (its id plus its first FSN,
                // modulo the flows) rather than flow 0 for every connection: a host's
                // connections then start spread over the paths (and planes) instead of all
                // on the first. Ties of the weighted virtual time go to the lowest index.
                let first = (self.params.local_conn as usize)
                    .wrapping_add(self.params.tx_initial_fsn as usize)
                    % nflows;
                for (i, f) in self.flows.iter_mut().enumerate() {
                    f.vtime = self.vclock + ((i + nflows - first) % nflows) as u64;
                }
            }
            if self.cfg.start_phase {
                // The first packet leaves at a phase of the connection's own within one packet
                // gap at the hinted share: senders that start together at their shares then
                // interleave instead of each sending its first packet at the same instant.
                let total = self.total_pacing_rate();
                let cgap = (self.params.mtu + HEADER_BYTES) as f64 / total;
                let frac = phase_fraction(self.params.local_conn, self.params.tx_initial_fsn);
                self.next_send_at = self.next_send_at.max(now + (frac * cgap) as u64);
                if !self.conn_pace_ok(now) {
                    return 0;
                }
            }
        }
        let mut sent = 0;
        let mut new_ok = !self.starved && !self.active_tags.is_empty();
        let pkt_full = (self.params.mtu + HEADER_BYTES) as u64;
        while sent < budget {
            if !self.conn_pace_ok(now) {
                break;
            }
            let mut best: Option<(usize, bool)> = None;
            let mut best_key = (true, true, u64::MAX);
            let turns = self.turns();
            // New data keeps to the connection's pacing clock exactly (no burst credit).
            let strict_ok = !turns || self.next_send_at <= now;
            for (i, f) in self.flows.iter().enumerate() {
                if self.port_pace_at(f.port) > now {
                    continue;
                }
                // While the flows take turns, a resend or a due tail-loss probe takes the
                // connection's next turn whatever its flow's own pacing says (at a small share
                // a flow's gap is several RTTs, longer than the retransmission timeout), and
                // may use the connection's burst credit.
                let urgent = turns && f.urgent(new_ok);
                // While the flows take turns the connection's pacer sets the time; a flow's own
                // clock only orders the flows. Its rate follows its smoothed RTT, which grows
                // while the receiver's queue is long: gating on it would make the connection
                // miss its turn exactly then and shift its phase later, into the next bunch.
                let flow_ready = f.pace_ok(now);
                let paced = strict_ok && (flow_ready || turns);
                if !(urgent || paced) {
                    continue;
                }
                let has_retx = !f.retx.is_empty();
                let can_new = new_ok
                    && !f.dead
                    && f.window_room() > 0
                    && (f.inflight_bytes == 0
                        || f.probe_new
                        || f.inflight_bytes + pkt_full <= self.cc.window(i));
                // Resends before new data: a packet some message waits for goes ahead of a
                // flow whose turn by weighted service it is (after a plane failure the moved
                // flow's resends would otherwise share its new port evenly with new data).
                let key = (!(urgent || has_retx), !flow_ready, f.vtime);
                if (has_retx || can_new) && key < best_key {
                    best_key = key;
                    best = Some((i, has_retx));
                }
            }
            let Some((fi, retx)) = best else { break };
            // Asked with a full packet: the exact length is known only once the packet is cut.
            if !gate.may_send(now, pkt_full) {
                break;
            }
            let desc;
            let depart;
            let bytes;
            if retx {
                let f = &mut self.flows[fi];
                let Some(seq) = f.retx.pop_front() else {
                    continue;
                };
                let stamp = f.stamp();
                let epoch = f.epoch;
                let Some(p) = f.get_mut(seq) else { continue };
                if p.state != PktState::Queued {
                    continue;
                }
                depart = gate.on_send(now, (p.len + HEADER_BYTES) as u64);
                p.state = PktState::InFlight;
                if p.cause != CAUSE_PROBE {
                    p.stamp = stamp;
                    p.epoch = epoch;
                }
                p.sent_at = depart;
                p.sends += 1;
                p.ack_req = true;
                let cause = p.cause;
                let p = *p;
                if f.inflight_bytes == 0 {
                    f.quiet_since = depart;
                }
                f.inflight_bytes += p.len as u64 + HEADER_BYTES as u64;
                bytes = p.len + HEADER_BYTES;
                let mut d = self.descriptor(fi, seq, p.msg, p.offset, p.len);
                d.flags |= FLAG_ACK_REQ;
                desc = d;
                if cause == CAUSE_NOT_READY {
                    self.stats.resent_not_ready += 1;
                } else {
                    self.path[fi].retransmissions += 1;
                }
            } else {
                let Some((id, offset, len, ack_req)) = self.next_segment(now) else {
                    new_ok = false;
                    self.starved = true;
                    continue;
                };
                if self.pkts_outstanding == 0 {
                    // Liveness is measured from the moment something is outstanding.
                    self.last_heard = self.last_heard.max(now);
                }
                depart = gate.on_send(now, (len + HEADER_BYTES) as u64);
                let slow = (pkt_full as f64 / self.cc.pacing_rate(fi).max(1e-6)) as u64
                    > self.flows[fi].srtt / 2;
                let f = &mut self.flows[fi];
                let seq = f.next;
                f.next += 1;
                let stamp = f.stamp();
                f.ring.push_back(super::flow::Pkt {
                    msg: id,
                    offset,
                    len,
                    sent_at: depart,
                    stamp,
                    epoch: f.epoch,
                    sends: 1,
                    cause: 0,
                    ack_req: false,
                    state: PktState::InFlight,
                });
                if f.inflight_bytes == 0 {
                    f.quiet_since = depart;
                }
                f.inflight_bytes += len as u64 + HEADER_BYTES as u64;
                // With `tail_probe_few`, a packet that leaves its flow with at most two in
                // flight requests an ACK too when the flow's next packet is more than half an
                // RTT away (a small share paces a flow at one packet per several RTTs):
                // nothing sent soon after it would expose its loss.
                let nearly_full = std::mem::take(&mut f.probe_new)
                    || f.window_room() <= 2
                    || f.inflight_bytes + pkt_full > self.cc.window(fi)
                    || (self.cfg.tail_probe_few
                        && f.inflight_bytes <= FEW_INFLIGHT * pkt_full
                        && slow);
                if let Some(p) = f.ring.back_mut() {
                    p.ack_req = ack_req || nearly_full;
                }
                bytes = len + HEADER_BYTES;
                let mut d = self.descriptor(fi, seq, id, offset, len);
                if ack_req || nearly_full {
                    d.flags |= FLAG_ACK_REQ;
                }
                desc = d;
                self.pkts_outstanding += 1;
                self.stats.packets_sent += 1;
                self.stats.bytes_sent += len as u64;
                self.path[fi].packets += 1;
            }
            let rto = self.flows[fi].rto(
                self.cfg.min_rto_ns,
                self.cfg.max_rto_ns,
                self.cfg.initial_rto_ns,
            );
            let rate = self.cc.pacing_rate(fi).max(1e-6);
            let shared = self.shared();
            let tail = (self.flows[fi].tail_deadline.is_none() && desc.flags & FLAG_ACK_REQ != 0)
                .then(|| tail_timing(&self.flows, fi, self.cfg.initial_rtt_ns));
            let f = &mut self.flows[fi];
            if f.rto_deadline.is_none() {
                f.rto_deadline = Some(depart + rto);
            }
            if let Some((r, s)) = tail {
                f.tail_deadline = Some(depart + r + s);
            }
            let gap = (bytes as f64 / rate) as u64;
            // At a shared receiver the burst after idling is at most one base RTT of pacing
            // credit: at a small share (an incast) `pacing_burst_packets` gaps are hundreds
            // of microseconds, a credit the flow would spend at line rate whenever its window
            // opens, well above its share for as long.
            let burst = gap * self.cfg.pacing_burst_packets.saturating_sub(1) as u64;
            f.burst_ns = if shared { burst.min(f.min_rtt) } else { burst };
            f.next_send_at = f.next_send_at.max(now) + gap;
            let port = f.port as usize;
            if self.port_paced() {
                let pgap = (bytes as f64 / self.port_rate()) as u64;
                if let Some(c) = self.port_clock.get_mut(port) {
                    *c = (*c).max(now) + pgap;
                }
            }
            if self.cfg.flow_turns && shared {
                // The connection's pacer: the sum of the flows' rates, the same burst rule,
                // and no burst before the first ACK (a paced first window).
                let total = self.total_pacing_rate();
                let cgap = (bytes as f64 / total) as u64;
                let cburst = cgap * self.cfg.pacing_burst_packets.saturating_sub(1) as u64;
                self.burst_ns = if self.acked_once {
                    cburst.min(self.flows[fi].min_rtt)
                } else {
                    0
                };
                self.next_send_at = self.next_send_at.max(now) + cgap;
            }
            let f = &mut self.flows[fi];
            let v = f.vtime.max(self.vclock);
            self.vclock = v;
            f.vtime = v + bytes as u64 * FULL_WEIGHT as u64 / f.weight.max(1) as u64;
            self.cc.on_sent(now, fi, bytes);
            out.push(desc);
            sent += 1;
        }
        sent
    }

    /// The earliest time [`Connection::handle_timeout`] or [`Connection::poll_transmit`] has
    /// something to do, if any.
    pub fn poll_timeout(&self) -> Option<u64> {
        match (self.poll_timer(), self.transmit_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest timer ([`Connection::handle_timeout`]'s work: retransmission, "not ready"
    /// delays, the connection timeout), leaving out when the flows may transmit.
    pub fn poll_timer(&self) -> Option<u64> {
        self.derived().timer
    }

    /// Tells the connection which NIC ports have their link down (bit `p` for port `p`, as
    /// the NIC's `PORT_LINK` shows the opposite). Every flow on a port that went down moves
    /// at once to a port whose link is up, and what it had in flight there is resent: a
    /// down link delivers nothing, so there is no timeout or silent spell to wait for. No
    /// flow moves onto a down port while another is up. The moved flow's controller learns
    /// of it ([`CongestionController::on_port_lost`]): the port it joins is already full
    /// with a sibling's window. Its backoff is left alone: a link going down says nothing
    /// about the path's health. The connection's line rate becomes that of the live ports.
    /// With every port down nothing moves (the timers take over).
    pub fn set_ports_down(&mut self, now: u64, down: u8) {
        self.changing(|c| c.set_ports_down_inner(now, down));
    }

    fn set_ports_down_inner(&mut self, now: u64, down: u8) {
        let planes = self.params.planes.clamp(1, 8);
        let all = (((1u16 << planes) - 1) & 0xFF) as u8;
        let newly = down & !self.ports_down;
        let changed = (down ^ self.ports_down) & all != 0;
        self.ports_down = down;
        if !changed || down & all == all {
            return;
        }
        // The connection's line rate is that of the ports whose link is up.
        let live = u32::from(planes) - (down & all).count_ones();
        let line = (self.cfg.line_rate_mbps as u64 * live as u64 / planes as u64) as u32;
        self.cc.set_line_rate(now, line);
        if newly & all == 0 || !self.usable() {
            return;
        }
        for fi in 0..self.flows.len() {
            let left = self.flows[fi].port;
            if newly & (1 << left) == 0 {
                continue;
            }
            let queued = self.requeue_in_flight(fi, u64::MAX);
            self.stats.retx_link_down += queued;
            self.cc.on_port_lost(now, fi);
            let port = self.next_port(fi, now);
            if self.change_entropy(fi, port) {
                self.stats.link_down_moves += 1;
                if let Some(t) = self.port_left_at.get_mut(left as usize) {
                    *t = Some(now);
                }
            }
        }
    }

    /// Runs `f`, which changes the connection, forgetting [`Connection::derived`] before and
    /// after it (a query inside `f` may have filled it with a value `f` then changed).
    fn changing<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.derived.set(None);
        let r = f(self);
        self.derived.set(None);
        r
    }

    /// Computes [`Derived`] unless it is known.
    fn derived(&self) -> Derived {
        if let Some(d) = self.derived.get() {
            return d;
        }
        let d = Derived {
            timer: self.compute_timer(),
            transmit_at: self.compute_transmit_at(),
            inflight: self.compute_inflight(),
        };
        self.derived.set(Some(d));
        d
    }

    fn compute_timer(&self) -> Option<u64> {
        if !self.usable() {
            return None;
        }
        let mut t: Option<u64> = None;
        let mut at = |x: u64| t = Some(t.map_or(x, |t| t.min(x)));
        let ready = self.state == ConnState::Ready;
        for f in &self.flows {
            if let Some(d) = f.rto_deadline {
                at(d);
            }
            if let Some(d) = f.tail_deadline.filter(|_| self.probes_tail(f)) {
                at(d);
            }
            for &(p, _) in &f.parked {
                at(p);
            }
        }
        if ready {
            for &tg in &self.active_tags {
                let r = self.tx_tags[tg as usize].rnr_until;
                if r > 0 {
                    at(r);
                }
            }
        }
        if self.pkts_outstanding > 0 {
            at(self.last_heard + self.cfg.connection_timeout_ns);
        }
        t
    }

    /// When a flow with something to send (a resend, or new data and window room) may next
    /// transmit by its own pacing; `None` if no flow has anything it could send.
    pub fn transmit_at(&self) -> Option<u64> {
        self.derived().transmit_at
    }

    fn compute_transmit_at(&self) -> Option<u64> {
        if self.state != ConnState::Ready {
            return None;
        }
        let new_ok = !self.starved && !self.active_tags.is_empty();
        let pkt_full = (self.params.mtu + HEADER_BYTES) as u64;
        let turns = self.turns();
        let at = self
            .flows
            .iter()
            .enumerate()
            .filter(|(i, f)| {
                let can_new = new_ok
                    && !f.dead
                    && f.window_room() > 0
                    && (f.inflight_bytes == 0
                        || f.probe_new
                        || f.inflight_bytes + pkt_full <= self.cc.window(*i));
                !f.retx.is_empty() || can_new
            })
            .map(|(_, f)| {
                let at = if !turns {
                    f.pace_at()
                } else if f.urgent(new_ok) {
                    self.conn_pace_at()
                } else {
                    self.next_send_at
                };
                at.max(self.port_pace_at(f.port))
            })
            .min()?;
        Some(at)
    }

    /// Bytes in flight over all flows (payload plus headers; 0 once the connection failed).
    pub fn inflight_bytes(&self) -> u64 {
        self.derived().inflight
    }

    fn compute_inflight(&self) -> u64 {
        if !self.usable() {
            return 0;
        }
        self.flows.iter().map(|f| f.inflight_bytes).sum()
    }

    /// Runs the timers due at `now`: per-flow retransmission timeouts (with the entropy change
    /// after `same_entropy_retries` and the dead-path verdict), "not ready" delays, and the
    /// connection timeout.
    pub fn handle_timeout(&mut self, now: u64) {
        self.changing(|c| c.handle_timeout_inner(now));
    }

    fn handle_timeout_inner(&mut self, now: u64) {
        if !self.usable() {
            return;
        }
        self.release_parked(now);
        for t in self.active_tags.iter() {
            let tag = &mut self.tx_tags[*t as usize];
            if tag.rnr_until != 0 && tag.rnr_until <= now {
                // The backoff is over: the Tag may send again (and is no deadline any more).
                tag.rnr_until = 0;
                self.starved = false;
            }
        }
        for fi in 0..self.flows.len() {
            if self.flows[fi].tail_deadline.is_none_or(|d| d > now) {
                continue;
            }
            let (rtt, slack) = tail_timing(&self.flows, fi, self.cfg.initial_rtt_ns);
            let new_data = !self.starved && !self.active_tags.is_empty();
            let probes = self.probes_tail(&self.flows[fi]);
            let f = &mut self.flows[fi];
            let due = probes && f.tail_due(now, rtt, slack);
            if due {
                if new_data && !f.dead && f.window_room() > 0 {
                    if !f.probe_new {
                        f.probe_new = true;
                        f.probes += 1;
                        self.stats.tail_probes += 1;
                    }
                } else if f.tail_probe(HEADER_BYTES as u64).is_some() {
                    f.probes += 1;
                    self.stats.tail_probes += 1;
                    self.stats.retx_probe += 1;
                }
            }
            f.tail_deadline = f.tail_deadline_for(rtt, slack);
            if due {
                // The overdue packets stay in flight until the probe's ACK: wait for it (the
                // backed-off wait) rather than for a deadline already past.
                let wait = (rtt + slack) << f.probes.min(6);
                f.tail_deadline = f.tail_deadline.map(|d| d.max(now + wait));
            }
        }
        for fi in 0..self.flows.len() {
            if self.flows[fi].rto_deadline.is_none_or(|d| d > now) {
                continue;
            }
            let rto = rto_of(&self.flows, fi, &self.cfg);
            let expired = now
                .checked_sub(rto)
                .is_some_and(|cutoff| self.expire_flow(now, fi, cutoff, rto, false));
            if !expired {
                // Nothing old enough: re-arm from the oldest packet still in flight.
                let f = &mut self.flows[fi];
                let oldest = f
                    .ring
                    .iter()
                    .filter(|p| p.state == PktState::InFlight)
                    .map(|p| p.sent_at)
                    .min();
                f.rto_deadline = oldest.map(|s| (s + rto).max(now + 1));
            }
        }
        if self.pkts_outstanding > 0 && now >= self.last_heard + self.cfg.connection_timeout_ns {
            self.fail(FailReason::AllPathsDead);
        }
    }
}

impl Connection {
    /// Queues for resending, as lost, every packet of flow `fi` in flight since `cutoff` or
    /// earlier; returns how many.
    fn requeue_in_flight(&mut self, fi: usize, cutoff: u64) -> u64 {
        let f = &mut self.flows[fi];
        let mut queued = 0u64;
        for i in 0..f.ring.len() {
            let p = &mut f.ring[i];
            if p.state == PktState::InFlight && p.sent_at <= cutoff {
                p.state = PktState::Queued;
                p.cause = CAUSE_LOSS;
                f.inflight_bytes = f
                    .inflight_bytes
                    .saturating_sub(p.len as u64 + HEADER_BYTES as u64);
                let seq = f.base + i as u64;
                f.retx.push_back(seq);
                queued += 1;
            }
        }
        queued
    }

    /// Declares lost every packet of flow `fi` in flight since `cutoff` or earlier and handles
    /// it as a timeout of the flow's path: the resends go first, the flow backs off, moves to
    /// a new entropy (and plane) after `same_entropy_retries`, and may be declared dead. Returns
    /// false, changing nothing, when no packet is that old.
    fn expire_flow(&mut self, now: u64, fi: usize, cutoff: u64, rto: u64, silent: bool) -> bool {
        let max_rto = self.cfg.max_rto_ns;
        let queued = self.requeue_in_flight(fi, cutoff);
        if queued == 0 {
            return false;
        }
        if silent {
            self.stats.silent_paths += 1;
            self.stats.retx_silent += queued;
        } else {
            self.stats.timeouts += 1;
            self.stats.retx_timeout += queued;
        }
        self.path[fi].timeouts += 1;
        let f = &mut self.flows[fi];
        f.consecutive_timeouts += 1;
        f.timeouts_on_entropy += 1;
        f.backoff += 1;
        f.weight = (f.weight / 2).max(MIN_WEIGHT);
        let move_now = f.timeouts_on_entropy >= self.cfg.same_entropy_retries.max(1);
        self.suspend_repath(now, fi);
        if move_now {
            // Another plane too: the timeout may be a failed plane's.
            let left = self.flows[fi].port as usize;
            let port = self.next_port(fi, now);
            if self.change_entropy(fi, port) {
                if let Some(t) = self.port_left_at.get_mut(left) {
                    *t = Some(now);
                }
                self.flows[fi].backoff = 0;
            }
            self.flows[fi].timeouts_on_entropy = 0;
        }
        // Dead only if another flow was acknowledged since this one last was: a path that
        // is silent alone is broken; all paths silent together is congestion or the peer.
        let mine = self.flows[fi].last_progress_at;
        let others_alive = self
            .flows
            .iter()
            .enumerate()
            .any(|(j, g)| j != fi && g.last_progress_at > mine);
        let f = &mut self.flows[fi];
        if !f.dead && others_alive && f.consecutive_timeouts >= self.cfg.dead_after_timeouts.max(1)
        {
            f.dead = true;
            self.stats.paths_died += 1;
        }
        let backoff = 1u64 << f.backoff.min(6);
        f.rto_deadline = Some(now + (rto * backoff).min(max_rto));
        self.cc.on_timeout(now, fi);
        true
    }

    /// Moves flow `fi` to a new entropy not used by another flow of the connection, on NIC
    /// port `port`: same flow, same FSNs, another route. The new entropy epoch tells the SACK
    /// processing that packets sent before the move took another route (no FIFO order with
    /// the new ones). Returns false if every entropy is taken.
    fn change_entropy(&mut self, fi: usize, port: u8) -> bool {
        let n = self.params.entropies.len();
        for _ in 0..n {
            let e = self.params.entropies[self.next_entropy % n];
            self.next_entropy = self.next_entropy.wrapping_add(1);
            if !self.flows.iter().any(|g| g.entropy == e) {
                let f = &mut self.flows[fi];
                f.entropy = e;
                f.port = port;
                f.epoch += 1;
                f.timeouts_on_entropy = 0;
                self.stats.entropy_changes += 1;
                return true;
            }
        }
        false
    }

    /// After a timeout or silent spell of flow `fi`: no congestion-driven move for
    /// [`RepathConfig::suspend_rounds`] rounds of the slowest flow, and the flow's own ECN
    /// rounds start over.
    fn suspend_repath(&mut self, now: u64, fi: usize) {
        let srtt = self.slowest_srtt();
        let pause = srtt.saturating_mul(self.cfg.repath.suspend_rounds as u64);
        self.repath_suspended_until = self.repath_suspended_until.max(now + pause);
        let f = &mut self.flows[fi];
        f.rounds.restart(now, f.srtt);
    }

    /// The largest smoothed RTT of the flows that have one (else the initial RTT).
    fn slowest_srtt(&self) -> u64 {
        self.flows
            .iter()
            .filter(|f| f.has_rtt)
            .map(|f| f.srtt)
            .max()
            .unwrap_or(self.cfg.initial_rtt_ns)
    }

    /// Feeds an ACK of flow `fi` (`acked` packets newly acknowledged, `marked` CE marks) to
    /// its ECN rounds, and moves the flow when its path has stayed congested
    /// ([`TransportConfig::congestion_repath`]).
    fn count_congestion_round(&mut self, now: u64, fi: usize, acked: u32, marked: u32) {
        if !self.cfg.congestion_repath {
            return;
        }
        let threshold = self.cfg.repath.ecn_fraction;
        let f = &mut self.flows[fi];
        if !f.rounds.on_ack(now, acked, marked, f.srtt, threshold) {
            return;
        }
        if self.repath_candidate(now, fi) {
            // Same NIC port: congestion is a route's within the plane, and the flows stay
            // spread over the ports as they were.
            let port = self.flows[fi].port;
            if self.change_entropy(fi, port) {
                self.stats.repaths_congestion += 1;
                self.path[fi].repaths += 1;
                let f = &mut self.flows[fi];
                f.rounds.restart(now, f.srtt);
            }
        }
    }

    /// Whether flow `fi`, whose round just ended, moves: congested for
    /// [`RepathConfig::rounds`] rounds in a row, not suspended after a timeout, live, and
    /// either the receiver is not shared (the connection's traffic alone cannot congest
    /// its last hop, so the congestion is in the fabric) or its siblings are clearly less
    /// congested (so the congestion is its route's, not the last hop's every path shares).
    fn repath_candidate(&self, now: u64, fi: usize) -> bool {
        let f = &self.flows[fi];
        if f.dead || f.rounds.streak < self.cfg.repath.rounds.max(1) {
            return false;
        }
        if now < self.repath_suspended_until {
            return false;
        }
        !self.shared() || self.siblings_less_congested(fi)
    }

    /// Whether the live sibling flows of `fi` (with an RTT sample) are on average at most
    /// [`RepathConfig::sibling_ratio`] as congested as `fi`, by smoothed marked fraction.
    fn siblings_less_congested(&self, fi: usize) -> bool {
        let (sum, n) = self
            .flows
            .iter()
            .enumerate()
            .filter(|&(j, g)| j != fi && !g.dead && g.has_rtt)
            .fold((0.0, 0u32), |(s, n), (_, g)| (s + g.rounds.smoothed, n + 1));
        n > 0 && sum / n as f64 <= self.cfg.repath.sibling_ratio * self.flows[fi].rounds.smoothed
    }

    /// Cross-flow loss detection, after an ACK showed flow `acked` a packet delivered that was
    /// sent at `h` (its newest known delivered): a sibling flow that has heard nothing since
    /// before `h − silent_path_rtts × srtt` (largest of the flows) has lost what it sent by
    /// then — its path is silent while the connection's other paths deliver — and is handled
    /// as if its retransmission timer had fired, without waiting for the timer's 100 µs floor.
    fn find_silent_flows(&mut self, now: u64, acked: usize) {
        let k = self.cfg.silent_path_rtts;
        if k <= 0.0 || self.flows.len() < 2 {
            return;
        }
        let srtt = self.slowest_srtt();
        let Some(cutoff) = self.flows[acked]
            .hi_sent_at()
            .checked_sub((k * srtt as f64) as u64)
        else {
            return;
        };
        for gi in 0..self.flows.len() {
            let g = &self.flows[gi];
            if gi == acked || g.inflight_bytes == 0 || g.quiet_since >= cutoff {
                continue;
            }
            let rto = rto_of(&self.flows, gi, &self.cfg);
            if self.expire_flow(now, gi, cutoff, rto, true) {
                self.flows[gi].quiet_since = now;
            }
        }
    }

    /// The port flow `fi` moves to with its new entropy: another plane than its own, preferring
    /// one no flow has left after a timeout within the last [`PORT_MEMORY_RTOS`] minimum
    /// RTOs, then the fewest of this connection's dead flows, then the fewest flows, then the
    /// first after its own in port order. A flow that timed out leaves a failed plane, the
    /// flows leaving it spread over the survivors instead of doubling up on one, and a flow
    /// moving again does not return to the plane the others just left.
    fn next_port(&self, fi: usize, now: u64) -> u8 {
        let memory = self.cfg.min_rto_ns.saturating_mul(PORT_MEMORY_RTOS);
        let planes = self.params.planes.max(1);
        let own = self.flows[fi].port;
        if planes == 1 {
            return own;
        }
        (1..planes)
            .map(|k| (own + k) % planes)
            .min_by_key(|&p| {
                let left = self.port_left_at[p as usize].is_some_and(|t| t + memory > now);
                let on = self
                    .flows
                    .iter()
                    .enumerate()
                    .filter(|&(j, g)| j != fi && g.port == p);
                let dead = on.clone().filter(|(_, g)| g.dead).count();
                (self.ports_down & (1 << p) != 0, left, dead, on.count())
            })
            .unwrap_or(own)
    }
}

fn emit(out: &mut VecDeque<WorkCompletion>, conn: u32, m: &Msg) {
    let status = m.error.unwrap_or(WcStatus::Success);
    if !m.wr.signaled && status == WcStatus::Success {
        return;
    }
    out.push_back(WorkCompletion {
        wr_id: m.wr.wr_id,
        conn,
        opcode: match m.wr.kind {
            WrKind::Send { .. } => WcOpcode::Send,
            WrKind::Write { .. } => WcOpcode::Write,
        },
        status,
        tag: m.wr.tag,
        msn: m.msn,
        byte_len: m.wr.len,
        imm: None,
    });
}

/// A fraction in [0, 1) of the connection's own, from its id and first FSN (a splitmix64
/// finaliser): deterministic, and different for the connections of different hosts.
fn phase_fraction(conn: u32, fsn: u32) -> f64 {
    let mut z = ((conn as u64) << 32 | fsn as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Tail-loss timing of flow `fi`: how long an ACK takes now (its own most recent delivery's
/// RTT, or, before it has one, the slowest sibling's: same peer, and in an incast the same
/// bottleneck; before any delivery, the configured initial RTT) and the slack for queueing
/// growth (a quarter of the smoothed RTT plus the RTT variation).
fn tail_timing(flows: &[Flow], fi: usize, initial_rtt: u64) -> (u64, u64) {
    let f = &flows[fi];
    let Some(rtt) = f
        .recent_rtt
        .or_else(|| flows.iter().filter_map(|g| g.recent_rtt).max())
    else {
        return (initial_rtt, initial_rtt / 4);
    };
    let (srtt, rttvar) = if f.has_rtt {
        (f.srtt, f.rttvar)
    } else {
        flows
            .iter()
            .filter(|g| g.has_rtt)
            .map(|g| (g.srtt, g.rttvar))
            .max()
            .unwrap_or((rtt, rtt / 2))
    };
    (rtt, srtt / 4 + rttvar)
}

/// Retransmission timeout of flow `fi`: from its own RTT samples, or, before it has any, from
/// the slowest sibling flow that has (same peer, so the best estimate there is), or else the
/// generous initial timeout.
fn rto_of(flows: &[Flow], fi: usize, cfg: &TransportConfig) -> u64 {
    let f = &flows[fi];
    if f.has_rtt {
        return f.rto(cfg.min_rto_ns, cfg.max_rto_ns, cfg.initial_rto_ns);
    }
    flows
        .iter()
        .filter(|g| g.has_rtt)
        .map(|g| g.rto(cfg.min_rto_ns, cfg.max_rto_ns, cfg.initial_rto_ns))
        .max()
        .unwrap_or_else(|| f.rto(cfg.min_rto_ns, cfg.max_rto_ns, cfg.initial_rto_ns))
}
