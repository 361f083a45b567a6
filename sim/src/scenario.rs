//! Two NICs joined by a lossy multipath link: a connection set up with CM packets, then a list
//! of messages sent by the scripted sender from A to B, run on simulated time until every
//! message is acknowledged and completed; then every byte is checked.

use crate::backend::{AnyNic, BackendKind};
use crate::link::{Fate, Link, LinkConfig, LinkStats, Side};
use crate::rng::Rng;
use crate::sender::{Message, ScriptedSender, SendCompletion, SenderConfig, SenderStats};
use crate::setup::{ConnectionSetup, MemorySetup, NicSetup, RecvSetup, RegionSetup, ip16};
use ferroce_driver::{Device, DeviceError, Nic, PortFrame, SimPort};
use ferroce_proto::hsi::{
    ConnectionEntry, Counter, Event, RegionEntry, TableSizes, TxDescriptor,
    event::CompletionStatus, tables::ACCESS_REMOTE_WRITE,
};
use ferroce_proto::wire::{
    CmKind, CmRepr, EthernetAddress, NakReason, Opcode, ROCEV2_UDP_PORT, TransportRepr,
    parse_frame, transport::CM_LEN,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One message of a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSpec {
    /// Data opcode.
    pub opcode: Opcode,
    /// Tag.
    pub tag: u16,
    /// Length in bytes.
    pub len: u32,
    /// Use a wrong rkey (Writes): the receiver must refuse every packet and write nothing.
    pub bad_rkey: bool,
}

/// A scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioConfig {
    /// The link between A and B.
    pub link: LinkConfig,
    /// Flows (paths) of the connection.
    pub flows: u16,
    /// Payload bytes per packet.
    pub mtu: u32,
    /// First FSN of every flow (pick one near 2^24 to cross the wrap).
    pub initial_fsn: u32,
    /// Use IPv6.
    pub ipv6: bool,
    /// 802.1Q tag on every frame.
    pub vlan_tci: Option<u16>,
    /// Receiver's ACK coalescing.
    pub ack_coalesce: u32,
    /// Rate hint B stamps on its ACKs.
    pub rate_hint_mbps: u32,
    /// Give up after this much simulated time.
    pub time_limit_ns: u64,
    /// Messages from A to B. At most `msg_slots` (8) per Tag, as the host library guarantees.
    pub messages: Vec<MessageSpec>,
    /// Seed of the message contents.
    pub data_seed: u64,
    /// The NICs' fast path: the model or the RTL.
    pub backend: BackendKind,
}

impl ScenarioConfig {
    /// The README demo: RDMA Writes and tagged Sends, several larger than one packet, over four
    /// paths with 3% loss, reordering, 1% duplication, and ECN marks on a congested path 2; one
    /// Write with a wrong rkey.
    pub fn demo() -> Self {
        use Opcode::*;
        let m = |opcode, tag, len| MessageSpec {
            opcode,
            tag,
            len,
            bad_rkey: false,
        };
        ScenarioConfig {
            link: LinkConfig {
                paths: 4,
                loss: 0.03,
                duplicate: 0.01,
                ce_mark: vec![0.0, 0.0, 0.25, 0.0],
                seed: 7,
                ..LinkConfig::default()
            },
            flows: 4,
            mtu: 1024,
            initial_fsn: 0xff_fff0,
            ipv6: false,
            vlan_tci: None,
            ack_coalesce: 4,
            rate_hint_mbps: 25_000,
            time_limit_ns: 50_000_000,
            messages: vec![
                m(Write, 0, 16 * 1024),
                m(Send, 0, 3000),
                m(WriteImm, 1, 5000),
                m(Send, 1, 700),
                m(SendImm, 0, 8 * 1024),
                m(Write, 2, 64 * 1024),
                MessageSpec {
                    opcode: Write,
                    tag: 1,
                    len: 2048,
                    bad_rkey: true,
                },
                m(Send, 2, 0),
            ],
            data_seed: 42,
            backend: BackendKind::Model,
        }
    }
}

/// One frame put on the link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEntry {
    /// Time it was sent.
    pub time_ns: u64,
    /// Sender.
    pub from: Side,
    /// What it was.
    pub summary: String,
    /// What the link did with it.
    pub fate: Fate,
    /// A data packet whose flow and FSN were sent before: a retransmission.
    pub resend: bool,
}

/// What happened to one message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MessageOutcome {
    /// The message.
    pub opcode: String,
    /// Tag.
    pub tag: u16,
    /// MSN.
    pub msn: u32,
    /// Length.
    pub len: u32,
    /// Receiver completions seen for it (must be 1).
    pub receiver_completions: usize,
    /// Receiver completion status.
    pub receiver_status: Option<String>,
    /// Sender completion seen.
    pub sender_completed: bool,
    /// Terminal NAK reported to the sender.
    pub sender_error: Option<String>,
    /// Expected outcome reached: data intact (or untouched for a refused Write) and statuses
    /// as expected.
    pub verified: bool,
}

/// Everything a scenario run produced.
#[derive(Debug, Clone)]
pub struct ScenarioReport {
    /// Every frame put on the link, in order.
    pub trace: Vec<TraceEntry>,
    /// The same frames, for a pcap file: (time, bytes).
    pub frames: Vec<(u64, Vec<u8>)>,
    /// Per message.
    pub messages: Vec<MessageOutcome>,
    /// Sender statistics.
    pub sender: SenderStats,
    /// Link statistics.
    pub link: LinkStats,
    /// Non-zero counters of A.
    pub counters_a: Vec<(&'static str, u64)>,
    /// Non-zero counters of B.
    pub counters_b: Vec<(&'static str, u64)>,
    /// Simulated time at the end.
    pub end_time_ns: u64,
    /// Every message acknowledged and completed before the time limit.
    pub finished: bool,
    /// B's programmed state, for replaying B's receive path on the capture.
    pub receiver_setup: NicSetup,
}

impl ScenarioReport {
    /// True when the run finished and every message verified.
    pub fn all_verified(&self) -> bool {
        self.finished && self.messages.iter().all(|m| m.verified)
    }
}

/// A scenario that could not run.
#[derive(Debug)]
pub enum ScenarioError {
    /// The driver failed.
    Device(DeviceError),
    /// The configuration cannot work (the message says why).
    Config(String),
    /// The chosen backend cannot be opened.
    Backend(crate::rtl::RtlError),
}

impl core::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ScenarioError::Device(e) => write!(f, "driver error: {e}"),
            ScenarioError::Config(m) => write!(f, "bad scenario: {m}"),
            ScenarioError::Backend(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ScenarioError {}

impl From<DeviceError> for ScenarioError {
    fn from(e: DeviceError) -> Self {
        ScenarioError::Device(e)
    }
}

impl From<ferroce_driver::NicError> for ScenarioError {
    fn from(e: ferroce_driver::NicError) -> Self {
        ScenarioError::Device(DeviceError::Nic(e))
    }
}

const CONN_A: u32 = 1;
const CONN_B: u32 = 2;
const REGION_INDEX: u32 = 1;
const REGION_KEY: u8 = 0x5a;
const CM_RETRY_NS: u64 = 30_000;
const TICK_NS: u64 = 1_000;

struct Node {
    dev: Device<AnyNic>,
    mac: EthernetAddress,
    ip: IpAddr,
}

impl Node {
    fn new(mac: [u8; 6], ip: IpAddr, backend: BackendKind) -> Result<Self, ScenarioError> {
        let nic = AnyNic::open(backend, TableSizes::default()).map_err(ScenarioError::Backend)?;
        let mut dev = Device::open(nic)?;
        let mac = EthernetAddress(mac);
        dev.set_mac(mac);
        Ok(Node { dev, mac, ip })
    }

    fn send_cm(&mut self, conn: u32, entropy: u16, msg: CmRepr) -> Result<(), ScenarioError> {
        let buf = self.dev.nic().alloc_dma(CM_LEN, 64)?;
        self.dev.nic().write_dma(buf, &msg.to_bytes())?;
        let desc = TxDescriptor {
            opcode: Opcode::Cm as u8,
            conn,
            entropy,
            payload_len: CM_LEN as u32,
            local_addr: buf,
            ..Default::default()
        };
        self.dev.post(&[desc])?;
        Ok(())
    }
}

/// One line describing a frame, for traces.
pub fn describe(frame: &[u8]) -> String {
    match parse_frame(frame, ROCEV2_UDP_PORT) {
        Err(e) => format!("unparsable ({e:?})"),
        Ok(f) => match f.transport {
            TransportRepr::Data(d) => format!(
                "{:<9} conn {} flow {} fsn {:#08x} tag {} msn {} off {:>5} len {:>4}{}{}",
                f.bth.opcode.name(),
                f.bth.dest_conn,
                d.flow,
                f.bth.psn,
                d.tag,
                d.msn,
                d.offset,
                f.payload.len(),
                if f.bth.ack_req { " ackreq" } else { "" },
                if f.udp.src_port != 0 {
                    format!(" sport {}", f.udp.src_port)
                } else {
                    String::new()
                },
            ),
            TransportRepr::Ack(a) => {
                let sacked = a.sack.iter().map(|b| b.count_ones()).sum::<u32>();
                format!(
                    "ack       conn {} flow {} cum {:#08x} sacked {}{} hint {} Mb/s",
                    f.bth.dest_conn,
                    a.flow,
                    f.bth.psn,
                    sacked,
                    if a.ecn_echo {
                        format!(" ECE x{}", a.ce_count)
                    } else {
                        String::new()
                    },
                    a.rate_hint_mbps
                )
            }
            TransportRepr::Nak(n) => format!(
                "nak       conn {} flow {} fsn {:#08x} {:?} tag {} msn {}",
                f.bth.dest_conn, n.flow, f.bth.psn, n.reason, n.tag, n.msn
            ),
            TransportRepr::Cm(c) => format!(
                "cm        {:?} src_conn {} dst_conn {} paths {} mtu {}",
                c.kind, c.src_conn, c.dst_conn, c.path_count, c.mtu
            ),
        },
    }
}

struct PlannedMessage {
    spec: MessageSpec,
    msg: Message,
    source: Vec<u8>,
    /// Where B should find the data (Write target or receive buffer).
    target: u64,
}

/// Runs a scenario.
pub fn run(cfg: &ScenarioConfig) -> Result<ScenarioReport, ScenarioError> {
    let sizes = TableSizes::default();
    let tag_count = cfg.messages.iter().map(|m| m.tag + 1).max().unwrap_or(1);
    for t in 0..tag_count {
        if cfg.messages.iter().filter(|m| m.tag == t).count() > sizes.msg_slots as usize {
            return Err(ScenarioError::Config(format!(
                "more than {} messages on Tag {t}",
                sizes.msg_slots
            )));
        }
    }
    if cfg.flows == 0 || cfg.mtu == 0 || cfg.messages.iter().any(|m| !m.opcode.is_data()) {
        return Err(ScenarioError::Config(
            "need flows, an MTU and data opcodes".into(),
        ));
    }
    let (ip_a, ip_b) = if cfg.ipv6 {
        (
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)),
        )
    } else {
        (
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        )
    };
    let mut a = Node::new([0x02, 0, 0, 0, 0, 0x0a], ip_a, cfg.backend)?;
    let mut b = Node::new([0x02, 0, 0, 0, 0, 0x0b], ip_b, cfg.backend)?;
    b.dev.set_ack_coalesce(cfg.ack_coalesce);

    // B's memory: one region for Writes, one buffer per Send.
    let write_total: u64 = cfg
        .messages
        .iter()
        .filter(|m| m.opcode.is_write())
        .map(|m| (m.len as u64).div_ceil(64) * 64 + 64)
        .sum::<u64>()
        .max(64);
    let region_base = b.dev.nic().alloc_dma(write_total as usize, 4096)?;
    let region = RegionEntry {
        valid: true,
        key: REGION_KEY,
        access: ACCESS_REMOTE_WRITE,
        base: region_base,
        length: write_total,
    };
    let rkey = region.rkey(REGION_INDEX);
    b.dev.set_region(REGION_INDEX, &region)?;

    // Plan the messages: MSN and SSN per Tag, contents, targets.
    let mut rng = Rng::new(cfg.data_seed);
    let mut msn = vec![0u32; tag_count as usize];
    let mut ssn = vec![0u32; tag_count as usize];
    let mut write_off = 0u64;
    let mut recv_posts = Vec::new();
    let mut plan = Vec::new();
    for spec in &cfg.messages {
        let source: Vec<u8> = (0..spec.len).map(|_| rng.next_u64() as u8).collect();
        let local = a.dev.nic().alloc_dma(spec.len.max(1) as usize, 64)?;
        a.dev.nic().write_dma(local, &source)?;
        let t = spec.tag as usize;
        let (target, remote_va, key, this_ssn) = if spec.opcode.is_write() {
            let va = region_base + write_off;
            write_off += (spec.len as u64).div_ceil(64) * 64 + 64;
            let key = if spec.bad_rkey { rkey ^ 1 } else { rkey };
            (va, va, key, 0)
        } else {
            let buf = b.dev.nic().alloc_dma(spec.len.max(1) as usize, 64)?;
            recv_posts.push(RecvSetup {
                tag_ctx: spec.tag as u32,
                ssn: ssn[t],
                addr: buf,
                len: spec.len,
            });
            ssn[t] += 1;
            (buf, 0, 0, ssn[t] - 1)
        };
        let msg = Message {
            opcode: spec.opcode,
            tag: spec.tag,
            msn: msn[t],
            ssn: this_ssn,
            len: spec.len,
            local_addr: local,
            remote_va,
            rkey: key,
            imm: 0x1000_0000 + plan.len() as u32,
        };
        msn[t] += 1;
        plan.push(PlannedMessage {
            spec: *spec,
            msg,
            source,
            target,
        });
    }

    // A's side of the connection, before the peer's id is known.
    let conn_a = ConnectionEntry {
        valid: true,
        ipv6: cfg.ipv6,
        vlan_tci: cfg.vlan_tci,
        dscp: 26,
        peer_conn: 0,
        flow_base: 0,
        flow_count: cfg.flows,
        tag_base: 0,
        tag_count,
        peer_mac: b.mac,
        local_ip: ip16(a.ip),
        peer_ip: ip16(b.ip),
        rate_hint_mbps: 0,
    };
    a.dev.set_connection(CONN_A, &conn_a)?;
    for f in 0..cfg.flows as u32 {
        a.dev.init_flow(f, cfg.initial_fsn)?;
    }
    let request = CmRepr {
        kind: CmKind::Request,
        flags: 0,
        path_count: cfg.flows,
        src_conn: CONN_A,
        dst_conn: 0,
        mtu: cfg.mtu as u16,
        tag_count,
        initial_fsn: cfg.initial_fsn,
        rate_mbps: 100_000,
        tag_modes: 0,
    };

    let entropy_base = 49152;
    let mut sender = ScriptedSender::new(SenderConfig {
        conn: CONN_A,
        flows: cfg.flows,
        mtu: cfg.mtu,
        initial_fsn: cfg.initial_fsn,
        entropy_base,
        rto_ns: 60_000,
        hole_guard_ns: 10_000,
        same_entropy_retries: 2,
        window: 256,
    });

    let mut link = Link::new(cfg.link.clone());
    let mut trace = Vec::new();
    let mut sent_data = std::collections::HashSet::new();
    let mut frames = Vec::new();
    let mut b_conn: Option<ConnectionEntry> = None;
    let mut a_connected = false;
    let mut next_request = 0u64;
    let mut recv_completions: Vec<Event> = Vec::new();
    let mut send_completions: Vec<SendCompletion> = Vec::new();
    let mut events = Vec::new();
    let mut now = 0u64;
    let finished = loop {
        if !a_connected && now >= next_request {
            a.send_cm(CONN_A, entropy_base, request)?;
            next_request = now + CM_RETRY_NS;
        }
        if a_connected {
            let descs = sender.poll_transmit(now);
            for chunk in descs.chunks(32) {
                a.dev.post(chunk)?;
                a.dev.nic().poll(now);
            }
        }
        for (side, node) in [(Side::A, &mut a), (Side::B, &mut b)] {
            node.dev.nic().poll(now);
            while let Some(PortFrame { bytes: frame, .. }) = node.dev.nic().transmit_frame() {
                let summary = describe(&frame);
                let resend = match parse_frame(&frame, ROCEV2_UDP_PORT) {
                    Ok(f) => match f.transport {
                        TransportRepr::Data(d) => !sent_data.insert((d.flow, f.bth.psn)),
                        _ => false,
                    },
                    Err(_) => false,
                };
                frames.push((now, frame.clone()));
                let fate = link.send(now, side, frame);
                trace.push(TraceEntry {
                    time_ns: now,
                    from: side,
                    summary,
                    fate,
                    resend,
                });
            }
        }
        while let Some((_, side, frame)) = link.deliver(now) {
            let node = if side == Side::A { &mut a } else { &mut b };
            node.dev
                .nic()
                .receive_frame(0, &frame)
                .map_err(|e| ScenarioError::Device(e.into()))?;
        }
        events.clear();
        b.dev.poll_events(&mut events)?;
        for ev in &events {
            match *ev {
                Event::Cm {
                    msg,
                    src_ip,
                    ipv6,
                    src_mac,
                    vlan_tci,
                    ..
                } if msg.kind == CmKind::Request => {
                    if b_conn.is_none() {
                        let entry = ConnectionEntry {
                            valid: true,
                            ipv6,
                            vlan_tci,
                            dscp: 26,
                            peer_conn: msg.src_conn,
                            flow_base: 0,
                            flow_count: msg.path_count,
                            tag_base: 0,
                            tag_count: msg.tag_count,
                            peer_mac: src_mac,
                            local_ip: ip16(b.ip),
                            peer_ip: src_ip,
                            rate_hint_mbps: cfg.rate_hint_mbps,
                        };
                        b.dev.set_connection(CONN_B, &entry)?;
                        for f in 0..msg.path_count as u32 {
                            b.dev.init_flow(f, msg.initial_fsn)?;
                        }
                        for t in 0..msg.tag_count as u32 {
                            b.dev.reset_tag(t)?;
                        }
                        for r in &recv_posts {
                            b.dev.post_recv(r.tag_ctx, r.ssn, r.addr, r.len)?;
                        }
                        b_conn = Some(entry);
                    }
                    let reply = CmRepr {
                        kind: CmKind::Reply,
                        src_conn: CONN_B,
                        dst_conn: msg.src_conn,
                        ..msg
                    };
                    b.send_cm(CONN_B, entropy_base, reply)?;
                }
                Event::Completion { .. } => recv_completions.push(*ev),
                _ => {}
            }
        }
        events.clear();
        a.dev.poll_events(&mut events)?;
        for ev in &events {
            match *ev {
                Event::Cm { msg, .. } if msg.kind == CmKind::Reply && !a_connected => {
                    a.dev.set_connection(
                        CONN_A,
                        &ConnectionEntry {
                            peer_conn: msg.src_conn,
                            ..conn_a
                        },
                    )?;
                    a.send_cm(
                        CONN_A,
                        entropy_base,
                        CmRepr {
                            kind: CmKind::ReadyToUse,
                            src_conn: CONN_A,
                            dst_conn: msg.src_conn,
                            ..request
                        },
                    )?;
                    a_connected = true;
                    for p in &plan {
                        sender.push(p.msg);
                    }
                }
                _ => sender.on_event(now, ev),
            }
        }
        send_completions.extend(sender.take_completions());
        if a_connected && sender.is_done() && recv_completions.len() >= plan.len() {
            break true;
        }
        if now >= cfg.time_limit_ns {
            break false;
        }
        let next = link
            .next_delivery()
            .map_or(now + TICK_NS, |t| t.min(now + TICK_NS));
        now = next.max(now + 1);
    };

    // Verify every message.
    let mut messages = Vec::new();
    for (i, p) in plan.iter().enumerate() {
        let comps: Vec<&Event> = recv_completions
            .iter()
            .filter(|e| matches!(e, Event::Completion { tag, msn, .. } if *tag == p.msg.tag && *msn == p.msg.msn))
            .collect();
        let status = comps.first().and_then(|e| match e {
            Event::Completion { status, .. } => Some(*status),
            _ => None,
        });
        let sc = send_completions.iter().find(|c| c.index == i);
        let mut got = vec![0u8; p.source.len()];
        b.dev.nic().read_dma(p.target, &mut got)?;
        let verified = if p.spec.bad_rkey {
            got.iter().all(|&x| x == 0)
                && status == Some(CompletionStatus::RemoteAccessError)
                && sc.is_some_and(|c| c.error == Some(NakReason::RemoteAccess))
        } else {
            got == p.source
                && status == Some(CompletionStatus::Success)
                && sc.is_some_and(|c| c.error.is_none())
        };
        messages.push(MessageOutcome {
            opcode: p.spec.opcode.name().to_string(),
            tag: p.msg.tag,
            msn: p.msg.msn,
            len: p.msg.len,
            receiver_completions: comps.len(),
            receiver_status: status.map(|s| format!("{s:?}")),
            sender_completed: sc.is_some(),
            sender_error: sc.and_then(|c| c.error).map(|e| format!("{e:?}")),
            verified: verified && comps.len() == 1,
        });
    }
    let nonzero = |dev: &mut Device<AnyNic>| {
        Counter::ALL
            .iter()
            .map(|&c| (c.name(), dev.counter(c)))
            .filter(|(_, v)| *v > 0)
            .collect::<Vec<_>>()
    };
    let receiver_setup = NicSetup {
        mac: b.mac.to_string(),
        ack_coalesce: Some(cfg.ack_coalesce),
        memory: std::iter::once(MemorySetup {
            addr: region_base,
            len: write_total,
        })
        .chain(recv_posts.iter().map(|r| MemorySetup {
            addr: r.addr,
            len: r.len.max(1) as u64,
        }))
        .collect(),
        regions: vec![RegionSetup {
            index: REGION_INDEX,
            key: REGION_KEY,
            access: vec!["remote_write".into()],
            base: region_base,
            length: write_total,
        }],
        connections: vec![ConnectionSetup {
            id: CONN_B,
            peer_conn: CONN_A,
            local_ip: b.ip,
            peer_ip: a.ip,
            peer_mac: a.mac.to_string(),
            vlan_tci: cfg.vlan_tci,
            dscp: 26,
            flow_base: 0,
            flow_count: cfg.flows,
            tag_base: 0,
            tag_count,
            initial_fsn: cfg.initial_fsn,
            rate_hint_mbps: cfg.rate_hint_mbps,
        }],
        recv_buffers: recv_posts,
    };
    Ok(ScenarioReport {
        trace,
        frames,
        messages,
        sender: sender.stats().clone(),
        link: link.stats().clone(),
        counters_a: nonzero(&mut a.dev),
        counters_b: nonzero(&mut b.dev),
        end_time_ns: now,
        finished,
        receiver_setup,
    })
}
