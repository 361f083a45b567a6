//! The sans-IO transport core.
//!
//! Nothing in here touches a NIC, a socket, a thread or a clock: time is passed in (as NIC
//! nanoseconds), NIC events are passed in, and what the core wants done comes out as TX
//! descriptors ([`Connection::poll_transmit`]), completions ([`Connection::poll_completion`]) and
//! a deadline ([`Connection::poll_timeout`]). The same inputs always give the same outputs, so
//! tests run two endpoints on simulated time.
//!
//! - [`Connection`]: one connection: many Tags above, many flows (paths) below, one congestion
//!   controller.
//! - [`cc`]: the [`CongestionController`] trait and the default ECN AIMD controller capped by
//!   the receiver's rate hint, with per-path pacing rates.
//! - [`receiver`]: the receiver's fair-share computation that produces the rate hint the NIC
//!   stamps on every ACK.
//! - [`host_budget`]: the host-wide in-flight cap and pacer shared by every connection of one
//!   NIC, which the connections consult through [`TxGate`].

pub mod cc;
mod connection;
mod flow;
pub mod host_budget;
pub mod receiver;
mod repath;
mod tags;

pub use cc::{AckSample, CongestionController, ControllerFactory, EcnAimd, EcnAimdConfig};
pub use connection::{ConnState, Connection, ConnectionStats, FailReason, PathStats};
pub use host_budget::{HostBudget, HostBudgetConfig, HostBudgetStats, TxGate, Ungated};
pub use receiver::FairShare;
pub use repath::RepathConfig;

use std::sync::Arc;

/// How a Tag completes its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TagMode {
    /// Completions are delivered in MSN order per Tag, even when a later message finishes
    /// first.
    #[default]
    Ordered,
    /// Completions are delivered as messages finish.
    Unordered,
}

/// Transport knobs shared by every connection of a context. The defaults suit the simulated
/// links of the tests (RTTs of 5–20 µs).
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// RTT assumed before the first sample (ns).
    pub initial_rtt_ns: u64,
    /// Lower bound of the retransmission timeout (ns).
    pub min_rto_ns: u64,
    /// Retransmission timeout of a flow before its first RTT sample (ns): generous, because a
    /// first burst into an incast can sit in a deep queue far longer than any base RTT.
    pub initial_rto_ns: u64,
    /// Upper bound of the retransmission timeout after backoff (ns).
    pub max_rto_ns: u64,
    /// Consecutive timeouts of a flow on one entropy before the flow moves to a new entropy
    /// (same flow, same FSNs, another route through the fabric).
    pub same_entropy_retries: u32,
    /// Consecutive timeouts after which a flow is considered dead, provided another flow of the
    /// connection was acknowledged meanwhile (when every path goes quiet at once, that is
    /// congestion or a dead peer, not a bad path; the connection timeout handles it). A dead
    /// flow gets no new data and is only probed (its outstanding packets are resent at
    /// backed-off timeouts) until an ACK revives it.
    pub dead_after_timeouts: u32,
    /// With data outstanding, no ACK or NAK on any flow for this long fails the connection.
    pub connection_timeout_ns: u64,
    /// First delay before resending a packet refused with "receiver not ready" (ns).
    pub rnr_initial_backoff_ns: u64,
    /// Largest delay between "receiver not ready" resends (ns).
    pub rnr_max_backoff_ns: u64,
    /// "Receiver not ready" refusals of one message before it fails with
    /// [`WcStatus::RnrRetryExceeded`] and the connection fails (`None` = retry forever, as
    /// ibverbs' `rnr_retry = 7`).
    pub rnr_retry_limit: Option<u32>,
    /// Send queue depth: work requests posted and not yet completed, per connection.
    pub max_send_wr: u32,
    /// Our line rate (Mb/s): the pacing ceiling, and what the CM exchange announces.
    pub line_rate_mbps: u32,
    /// Start at the rate hint the acceptor's CM reply carries when it is below our line rate
    /// (see [`Connection::apply_rate_hint`](connection::Connection::apply_rate_hint)): an
    /// incast's first burst shrinks. Every flow then has about one packet in flight, so the
    /// connection paces its flows' sum ([`TransportConfig::flow_turns`]) and probes their
    /// tails ([`TransportConfig::tail_probe_few`]); see docs/fabric.md, "Incast" (5) and (7).
    pub reply_hint: bool,
    /// As an acceptor, count the connection requests that have arrived and are not accepted
    /// yet as senders in the share the CM reply hints
    /// ([`FairShare::newcomer_with_pending_mbps`]): requests that arrive together (an incast's
    /// synchronised start) then all hint the same share, instead of C / k for the k-th.
    pub reply_hint_counts_pending: bool,
    /// As a receiver, peers that connected to us and have not sent yet keep their share in
    /// the rate hints for one activity timeout ([`FairShare::set_reserve_unseen`]): at a
    /// synchronised start the first senders to arrive get C / (senders expected), not
    /// C / (senders seen so far).
    pub hint_reserves_unseen: bool,
    /// As an acceptor, repeat the CM reply of a connection whose peer has not sent yet when
    /// a newcomer's share has fallen well below the hint that reply carried (more senders
    /// connected since); a requester takes such a hint until an ACK carries one. In a
    /// synchronised incast the first request is accepted alone, with a hint of our whole
    /// capacity, and its sender would otherwise start at line rate.
    pub reply_hint_refresh: bool,
    /// As a receiver, the fraction of our inbound capacity the rate hints split while two or
    /// more senders share it ([`FairShare::set_shared_utilization`]; 1 = all of it). Below 1,
    /// senders at their shares drain the queue a start-up burst or a resend left instead of
    /// holding it until ECN cuts their windows.
    pub hint_shared_utilization: f64,
    /// Packets a flow may send back to back after being idle (pacing burst).
    pub pacing_burst_packets: u32,
    /// At a shared receiver (rate hint below our line rate), the connection also paces the
    /// sum of its flows at the sum of their rates, so that its flows take turns: without it,
    /// flows that pace at the same rate from the same start leave in phase, one packet each
    /// back to back, and the connection delivers its share in clumps of `flows` packets. New
    /// data keeps to the connection's pacing clock exactly (no burst credit, so the first
    /// window leaves at the hinted rate instead of in one burst, and a connection whose window
    /// reopens does not catch up above its share); the flows' own pacing clocks only decide
    /// which flow takes a turn, never delay it. A resend or a due tail-loss probe takes the
    /// connection's next turn ahead of new data, with up to one base RTT of credit after the
    /// first ACK.
    pub flow_turns: bool,
    /// With more than one plane, the packets a connection hands to one NIC port leave at most
    /// at that port's rate (the line rate divided by the planes), whichever flows they belong
    /// to: flows that share a port (a flow moved off a failed plane joins another's) share its
    /// rate instead of queueing in the NIC behind each other.
    pub port_pacing: bool,
    /// Silent-path detection: when a flow has heard nothing since before its sibling flows
    /// sent packets that were delivered, by this many smoothed RTTs (the largest of the
    /// flows'), what it sent by then is lost and its path is handled as timed out at once
    /// (resend, and a new entropy and plane per `same_entropy_retries`). 0 disables it;
    /// a connection with one flow never uses it.
    pub silent_path_rtts: f64,
    /// With [`TransportConfig::flow_turns`] at a shared receiver, a connection's flows take
    /// their first turns starting from a flow of its own (its id plus its first FSN, modulo
    /// the flows) instead of flow 0: the connections of a host then start spread over the
    /// paths and planes instead of all queueing on the first.
    pub flow_rotation: bool,
    /// Tail-loss probes for flows with one or two packets in flight whether or not the
    /// receiver is shared (at a shared receiver every flow probes), and such packets request
    /// an immediate ACK: a flow paced at a small share, or at the end of its data, has nothing
    /// following its last packets to expose their loss, which would otherwise wait for the
    /// retransmission timeout.
    pub tail_probe_few: bool,
    /// With [`TransportConfig::flow_turns`] at a shared receiver, the connection's first packet
    /// waits for a phase of its own (from its id and first FSN) within one packet gap at its
    /// hinted rate: senders of an incast that start at the same instant at their shares then
    /// interleave instead of all sending their first packets at once.
    pub start_phase: bool,
    /// Congestion-driven repathing (PLB style, see [`RepathConfig`]): a flow whose ACKs
    /// report ECN marks on most of its packets for several rounds in a row moves to a new
    /// entropy (a new ECMP route, same flow, same FSNs, same NIC port), as a timeout's
    /// entropy change does. Random ECMP hashing puts more flows on some links than on others;
    /// without it a flow stays on a persistently congested link. At a shared receiver (rate
    /// hint below our line rate) a flow moves only while its sibling flows are clearly less
    /// congested: there the congestion every path sees is the last hop's, which no route
    /// avoids. Moves pause after timeouts. Counted in
    /// [`ConnectionStats::repaths_congestion`]. Off by default: on a fabric loaded to its
    /// capacity (the `loss` experiment: 4 senders at line rate over 4 uplinks) nearly every
    /// link marks, a moved flow lands on another congested link with its whole window, and
    /// goodput fell (seeds 1–4 at 1% loss: 89.5–95.5% of ideal against 95.6–97.4% without);
    /// the window cap shared by the paths ([`EcnAimdConfig::hint_headroom`]) moves the load
    /// off congested paths instead.
    pub congestion_repath: bool,
    /// Parameters of [`TransportConfig::congestion_repath`].
    pub repath: RepathConfig,
    /// Builds the congestion controller of each connection.
    pub congestion: Arc<dyn ControllerFactory>,
    /// The host-wide in-flight cap and pacer over all connections of the context (one NIC).
    pub host_budget: HostBudgetConfig,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            initial_rtt_ns: 20_000,
            min_rto_ns: 100_000,
            initial_rto_ns: 1_000_000,
            max_rto_ns: 5_000_000,
            same_entropy_retries: 2,
            dead_after_timeouts: 3,
            connection_timeout_ns: 20_000_000,
            rnr_initial_backoff_ns: 20_000,
            rnr_max_backoff_ns: 1_000_000,
            rnr_retry_limit: None,
            max_send_wr: 4096,
            line_rate_mbps: 100_000,
            reply_hint: true,
            reply_hint_counts_pending: true,
            hint_reserves_unseen: true,
            reply_hint_refresh: true,
            hint_shared_utilization: 0.99,
            pacing_burst_packets: 8,
            flow_turns: true,
            port_pacing: true,
            silent_path_rtts: 1.0,
            flow_rotation: true,
            tail_probe_few: true,
            start_phase: true,
            congestion_repath: false,
            repath: RepathConfig::default(),
            congestion: Arc::new(EcnAimdConfig::default()),
            host_budget: HostBudgetConfig::default(),
        }
    }
}

/// What the two ends agreed in the CM exchange, plus local table facts: everything a
/// [`Connection`] needs to exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionParams {
    /// Our connection id (the NIC's connection table index).
    pub local_conn: u32,
    /// Flows (paths), the same count in both directions.
    pub flows: u16,
    /// Payload bytes per packet.
    pub mtu: u32,
    /// Completion mode of every Tag; its length is the Tag count.
    pub tag_modes: Vec<TagMode>,
    /// First FSN of every flow we send on.
    pub tx_initial_fsn: u32,
    /// The peer NIC's message slots per Tag: at most this many incomplete messages per Tag.
    pub msg_slots: u32,
    /// Our NIC's receive buffers per Tag: at most this many posted receives per Tag.
    pub recv_depth: u32,
    /// Entropies (UDP source ports) flows start on and move to; at least `flows` of them.
    pub entropies: Vec<u16>,
    /// NIC ports (planes) the flows spread over: flow `i` starts on port `i % planes`. 1 to
    /// the NIC's port count (the API layer checks it).
    pub planes: u8,
}

/// Where a posted work request's data lives, already translated to DMA addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrKind {
    /// A Send consuming the peer's next posted receive of the Tag.
    Send {
        /// Immediate data (a SendImm), if any.
        imm: Option<u32>,
    },
    /// An RDMA Write.
    Write {
        /// Remote address of the first byte.
        remote_va: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data (a WriteImm, which surfaces a completion at the peer), if any.
        imm: Option<u32>,
    },
}

/// A send-side work request for the core: local data as a DMA address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkRequest {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Tag (ordered message stream).
    pub tag: u16,
    /// DMA address of the first local byte.
    pub local_addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// Send or Write.
    pub kind: WrKind,
    /// Surface a successful completion (errors always surface).
    pub signaled: bool,
    /// Set the solicited-event bit on the last packet.
    pub solicited: bool,
}

/// The kind of a completed work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcOpcode {
    /// Our Send (or SendImm) was received in full.
    Send,
    /// Our Write (or WriteImm) was placed in full.
    Write,
    /// A posted receive was filled by the peer's Send.
    Recv,
    /// The peer's WriteImm was placed; carries its immediate data. Consumes no posted receive.
    RecvWriteImm,
}

impl WcOpcode {
    /// True for receive-side completions (they go to the receive CQ).
    pub fn is_recv(self) -> bool {
        matches!(self, WcOpcode::Recv | WcOpcode::RecvWriteImm)
    }
}

/// Outcome of a work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcStatus {
    /// Done.
    Success,
    /// The peer refused at least one packet for a bad rkey, missing rights or bounds; nothing of
    /// those packets was written. The connection stays usable.
    RemoteAccessError,
    /// The peer refused a packet as contradicting its message (for a Send: longer than the
    /// posted buffer). The connection stays usable.
    RemoteInvalidRequest,
    /// The peer refused at least one packet terminally (remote access or invalid request), but
    /// the NAK saying which was lost: an ACK's refusal count showed more refusals than the NAKs
    /// that arrived, and this request had packets among those the ACK newly acknowledged. The
    /// exact reason is unknown, and the request may even have been written in full: the sender
    /// only knows it must not report success. The connection stays usable.
    RemoteErrorUnknown,
    /// A received Send did not fit the posted buffer (receive side).
    LocalLengthError,
    /// The peer kept refusing the message for lack of a posted receive.
    RnrRetryExceeded,
    /// The connection failed before this request completed.
    Flushed,
}

/// One completed work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkCompletion {
    /// The request's `wr_id` (for `RecvWriteImm`: 0, no receive is consumed).
    pub wr_id: u64,
    /// Local connection id.
    pub conn: u32,
    /// What completed.
    pub opcode: WcOpcode,
    /// Outcome.
    pub status: WcStatus,
    /// Tag.
    pub tag: u16,
    /// MSN within the Tag.
    pub msn: u32,
    /// Message length in bytes.
    pub byte_len: u32,
    /// Immediate data, when the message carried some.
    pub imm: Option<u32>,
}

/// Why the core refused a request. The API layer maps these into [`crate::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoreError {
    /// The Tag is beyond the connection's Tag count.
    InvalidTag(u16),
    /// The send queue already holds `max_send_wr` incomplete requests.
    SendQueueFull,
    /// The Tag already holds `recv_depth` posted receives.
    RecvQueueFull,
    /// The connection has failed or closed.
    NotUsable,
}

#[cfg(test)]
mod tests;
