//! A scripted reference sender that drives a NIC through TX descriptors and reacts to its ACK
//! and NAK events: per-flow FSNs, round-robin spraying over the flows, SACK-driven selective
//! retransmission (a hole is resent as soon as an ACK shows it, then not again until
//! `hole_guard_ns` has passed since it was last sent, however many ACKs repeat it), a retransmission timeout with an entropy change after
//! `same_entropy_retries` timeouts (same flow, same FSN), and sender-side message completion.
//!
//! It has no congestion control, pacing or path health: that is the host library's job
//! (issue 4). It is here so the fast path can be exercised end to end.

use ferroce_proto::hsi::{Event, TxDescriptor, descriptor::FLAG_ACK_REQ};
use ferroce_proto::wire::{FSN_MASK, NakReason, Opcode, SACK_BITS, fsn_diff};
use std::collections::{BTreeMap, VecDeque};

/// One message to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// Data opcode.
    pub opcode: Opcode,
    /// Tag.
    pub tag: u16,
    /// MSN within the Tag.
    pub msn: u32,
    /// SSN within the Tag (Sends).
    pub ssn: u32,
    /// Length in bytes.
    pub len: u32,
    /// DMA address of the source data.
    pub local_addr: u64,
    /// Remote address of the first byte (Writes).
    pub remote_va: u64,
    /// Remote key (Writes).
    pub rkey: u32,
    /// Immediate data (immediate opcodes).
    pub imm: u32,
}

/// Sender parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderConfig {
    /// Local connection id.
    pub conn: u32,
    /// Number of flows.
    pub flows: u16,
    /// Payload bytes per packet.
    pub mtu: u32,
    /// First FSN of every flow.
    pub initial_fsn: u32,
    /// Entropy of flow 0 (flow `i` starts at `entropy_base + i`).
    pub entropy_base: u16,
    /// Retransmission timeout.
    pub rto_ns: u64,
    /// Minimum time between two sends of the same hole.
    pub hole_guard_ns: u64,
    /// Timeouts on one entropy before the flow changes entropy.
    pub same_entropy_retries: u32,
    /// Packets in flight per flow (at most the 256-FSN SACK window).
    pub window: u32,
}

/// What the sender did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SenderStats {
    /// Data packets sent for the first time.
    pub packets: u64,
    /// Packets resent because a SACK bitmap showed them missing.
    pub sack_retransmissions: u64,
    /// Packets resent on timeout.
    pub timeout_retransmissions: u64,
    /// Distinct holes seen in SACK bitmaps.
    pub holes_seen: u64,
    /// Entropy changes after repeated timeouts.
    pub entropy_changes: u64,
    /// ACK events processed.
    pub acks: u64,
    /// NAK events processed.
    pub naks: u64,
}

/// A message the peer has acknowledged in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendCompletion {
    /// Index of the message in push order.
    pub index: usize,
    /// The first terminal NAK reason, if the receiver refused part of it.
    pub error: Option<NakReason>,
}

#[derive(Debug, Clone)]
struct Packet {
    desc: TxDescriptor,
    msg: usize,
    sent_at: u64,
    timeouts: u32,
    queued: bool,
    hole_counted: bool,
    /// Resent at least once: further resends of the same hole wait for `hole_guard_ns`.
    resent: bool,
}

#[derive(Debug, Clone, Default)]
struct FlowTx {
    cum_seq: u64,
    next_seq: u64,
    entropy: u16,
    in_flight: BTreeMap<u64, Packet>,
}

#[derive(Debug, Clone)]
struct MsgState {
    msg: Message,
    packets: u32,
    acked: u32,
    error: Option<NakReason>,
}

/// The scripted sender.
#[derive(Debug, Clone)]
pub struct ScriptedSender {
    cfg: SenderConfig,
    flows: Vec<FlowTx>,
    msgs: Vec<MsgState>,
    /// (message index, next offset) still to segment.
    pending: VecDeque<(usize, u32)>,
    retransmit: VecDeque<(usize, u64)>,
    next_flow: usize,
    next_entropy: u16,
    completions: Vec<SendCompletion>,
    stats: SenderStats,
}

impl ScriptedSender {
    /// A sender with nothing to send.
    pub fn new(cfg: SenderConfig) -> Self {
        let flows = (0..cfg.flows)
            .map(|i| FlowTx {
                entropy: cfg.entropy_base.wrapping_add(i),
                ..Default::default()
            })
            .collect();
        ScriptedSender {
            cfg,
            flows,
            msgs: Vec::new(),
            pending: VecDeque::new(),
            retransmit: VecDeque::new(),
            next_flow: 0,
            next_entropy: cfg.entropy_base.wrapping_add(cfg.flows),
            completions: Vec::new(),
            stats: SenderStats::default(),
        }
    }

    fn fsn_of(&self, seq: u64) -> u32 {
        (self.cfg.initial_fsn as u64 + seq) as u32 & FSN_MASK
    }

    /// Queues a message; returns its index.
    pub fn push(&mut self, msg: Message) -> usize {
        let packets = msg.len.div_ceil(self.cfg.mtu).max(1);
        self.msgs.push(MsgState {
            msg,
            packets,
            acked: 0,
            error: None,
        });
        self.pending.push_back((self.msgs.len() - 1, 0));
        self.msgs.len() - 1
    }

    /// Statistics.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// Takes the messages completed since the last call.
    pub fn take_completions(&mut self) -> Vec<SendCompletion> {
        std::mem::take(&mut self.completions)
    }

    /// True when every pushed message is fully acknowledged.
    pub fn is_done(&self) -> bool {
        self.msgs.iter().all(|m| m.acked == m.packets)
    }

    /// Descriptors to post now: due retransmissions first, then new packets while the flows'
    /// windows allow.
    pub fn poll_transmit(&mut self, now: u64) -> Vec<TxDescriptor> {
        let mut out = Vec::new();
        self.queue_timeouts(now);
        while let Some((flow, seq)) = self.retransmit.pop_front() {
            let entropy = self.flows[flow].entropy;
            if let Some(p) = self.flows[flow].in_flight.get_mut(&seq) {
                p.queued = false;
                p.resent = true;
                p.sent_at = now;
                p.desc.entropy = entropy;
                p.desc.flags |= FLAG_ACK_REQ;
                out.push(p.desc);
            }
        }
        let n = self.flows.len();
        while let Some(&(mi, offset)) = self.pending.front() {
            // Next flow with window room, round robin.
            let Some(flow) = (0..n).map(|k| (self.next_flow + k) % n).find(|&f| {
                (self.flows[f].next_seq - self.flows[f].cum_seq) < self.cfg.window as u64
            }) else {
                break;
            };
            self.next_flow = (flow + 1) % n;
            let m = self.msgs[mi].msg;
            let len = (m.len - offset).min(self.cfg.mtu);
            let last = offset + len >= m.len;
            if last {
                self.pending.pop_front();
            } else if let Some(front) = self.pending.front_mut() {
                front.1 = offset + len;
            }
            let seq = self.flows[flow].next_seq;
            let fsn = self.fsn_of(seq);
            let f = &mut self.flows[flow];
            f.next_seq += 1;
            let window_nearly_full = f.next_seq - f.cum_seq >= self.cfg.window as u64 - 1;
            let desc = TxDescriptor {
                opcode: m.opcode as u8,
                flags: if last || window_nearly_full {
                    FLAG_ACK_REQ
                } else {
                    0
                },
                flow: flow as u16,
                conn: self.cfg.conn,
                fsn,
                entropy: f.entropy,
                tag: m.tag,
                msn: m.msn,
                ssn: m.ssn,
                offset,
                msg_len: m.len,
                payload_len: len,
                imm: m.imm,
                local_addr: m.local_addr + offset as u64,
                remote_va: m.remote_va + offset as u64,
                rkey: m.rkey,
                // The scripted sender runs over a one-link pair.
                port: 0,
            };
            f.in_flight.insert(
                seq,
                Packet {
                    desc,
                    msg: mi,
                    sent_at: now,
                    timeouts: 0,
                    queued: false,
                    hole_counted: false,
                    resent: false,
                },
            );
            self.stats.packets += 1;
            out.push(desc);
        }
        out
    }

    fn queue_timeouts(&mut self, now: u64) {
        for (fi, f) in self.flows.iter_mut().enumerate() {
            let mut change_entropy = false;
            for (&seq, p) in f.in_flight.iter_mut() {
                if p.queued || now.saturating_sub(p.sent_at) < self.cfg.rto_ns {
                    continue;
                }
                p.queued = true;
                p.timeouts += 1;
                self.stats.timeout_retransmissions += 1;
                if p.timeouts % self.cfg.same_entropy_retries.max(1) == 0 {
                    change_entropy = true;
                }
                self.retransmit.push_back((fi, seq));
            }
            if change_entropy {
                // Same flow, same FSNs, another path through the fabric.
                f.entropy = self.next_entropy;
                self.next_entropy = self.next_entropy.wrapping_add(1);
                self.stats.entropy_changes += 1;
            }
        }
    }

    fn ack_packet(&mut self, flow: usize, seq: u64) {
        if let Some(p) = self.flows[flow].in_flight.remove(&seq) {
            let m = &mut self.msgs[p.msg];
            m.acked += 1;
            if m.acked == m.packets {
                self.completions.push(SendCompletion {
                    index: p.msg,
                    error: m.error,
                });
            }
        }
    }

    /// Processes one NIC event at time `now` (events of other kinds are ignored).
    pub fn on_event(&mut self, now: u64, ev: &Event) {
        match *ev {
            Event::Ack {
                conn,
                flow,
                cum_fsn,
                sack,
                ..
            } if conn == self.cfg.conn => {
                self.stats.acks += 1;
                let fi = flow as usize;
                if fi >= self.flows.len() {
                    return;
                }
                let base = self.flows[fi].cum_seq;
                let d = fsn_diff(cum_fsn, self.fsn_of(base));
                // An ACK older than what we know still carries a valid bitmap for its own cum.
                let ack_cum = (base as i64 + d as i64).max(0) as u64;
                let ack_cum = ack_cum.min(self.flows[fi].next_seq);
                let acked: Vec<u64> = self.flows[fi]
                    .in_flight
                    .range(..ack_cum)
                    .map(|(&s, _)| s)
                    .collect();
                for s in acked {
                    self.ack_packet(fi, s);
                }
                if ack_cum > self.flows[fi].cum_seq {
                    self.flows[fi].cum_seq = ack_cum;
                }
                let mut highest = None;
                for i in 0..SACK_BITS {
                    if sack[i / 8] >> (i % 8) & 1 != 0 {
                        self.ack_packet(fi, ack_cum + 1 + i as u64);
                        highest = Some(i as u64);
                    }
                }
                // Holes: unacknowledged packets below the highest SACKed one.
                if let Some(h) = highest {
                    let guard = self.cfg.hole_guard_ns;
                    let mut due = Vec::new();
                    for (&seq, p) in self.flows[fi].in_flight.range_mut(ack_cum..ack_cum + 1 + h) {
                        if !p.hole_counted {
                            p.hole_counted = true;
                            self.stats.holes_seen += 1;
                        }
                        // Paths are FIFO, so a hole below a SACKed FSN is a loss: resend at once
                        // the first time, then not again within a guard time (the cursor).
                        let resend = !p.resent || now.saturating_sub(p.sent_at) >= guard;
                        if !p.queued && resend {
                            p.queued = true;
                            due.push(seq);
                        }
                    }
                    self.stats.sack_retransmissions += due.len() as u64;
                    self.retransmit.extend(due.into_iter().map(|s| (fi, s)));
                }
            }
            Event::Nak {
                conn,
                flow,
                fsn,
                reason,
                ..
            } if conn == self.cfg.conn => {
                self.stats.naks += 1;
                let fi = flow as usize;
                if fi >= self.flows.len() {
                    return;
                }
                let seq = self.flows[fi].cum_seq as i64
                    + fsn_diff(fsn, self.fsn_of(self.flows[fi].cum_seq)) as i64;
                let Some(p) = u64::try_from(seq)
                    .ok()
                    .and_then(|s| self.flows[fi].in_flight.get(&s))
                else {
                    return;
                };
                if matches!(reason, NakReason::RemoteAccess | NakReason::InvalidRequest) {
                    // Terminal: the receiver consumed the packet; the message fails.
                    let m = &mut self.msgs[p.msg];
                    m.error.get_or_insert(reason);
                }
                // ReceiverNotReady / OutOfWindow: the packet was not consumed; the timeout
                // resends it.
            }
            _ => {}
        }
    }
}
