//! The whole RTL fast path against the executable model: the same register programming, the
//! same received frames, the same TX descriptors and the same clock go to an `RtlNic`
//! (Verilator) and a `ModelNic`; every transmitted frame, every event written to the event
//! ring, every counter, every table read-back and every byte of host memory must be equal.
//!
//! The frame mix: Writes and Sends (with and without immediate) over IPv4 and IPv6 + 802.1Q
//! connections, in and out of order, duplicated, out of the SACK window, CE-marked, with
//! AckReq; bad rkeys, read-only regions, out-of-bounds addresses, Sends without a posted
//! buffer, Sends longer than their buffer, busy message slots, contradicting lengths, Tags and
//! flows beyond the connection, unknown connections, wrong addresses; ACK, NAK and CM frames;
//! bit flips, truncations and noise. Time advances between frames so that ACK timers fire.
//! Every frame comes in on a random one of the core's ports (`tid`) and every TX descriptor
//! names a random port, one in twenty-five at or beyond the port count (refused, `BadPort`):
//! every frame must leave on the same port on both sides (`tdest`: an ACK or NAK where its data
//! came in, a timer ACK where the flow's last data came in, a data or CM frame where its
//! descriptor says), and a CM event must report its frame's port. The ports come from a random
//! stream of their own, so the frames and the timing are those of the test before ports.
//! One step in ten is a burst of 2 to 24 frames that reach the RTL back to back, one beat per
//! cycle (the model takes them one by one), so the core's queues between parser, engine and
//! payload extractor fill and drain as at line rate.
//!
//! Default: 10,000 steps (about 22,000 frames with the bursts). `FERROCE_LONG=1`: 1,000,000 steps
//! (any count with `FERROCE_RTL_FRAMES=N`; 460,000 steps are about 1,000,000 frames);
//! run the long mode in release: `cargo test --release -p ferroce-tests --test rtl_nic`.

use ferroce_driver::{ModelNic, Nic, PortFrame, SimPort};
use ferroce_proto::hsi::{
    ConnectionEntry, Counter, FlowInit, RecvBuffer, RegionEntry, TX_DESCRIPTOR_LEN, TableId,
    TxDescriptor, event, regs,
};
use ferroce_proto::wire::{
    AckRepr, BthRepr, CmRepr, DataRepr, EthernetAddress, EthernetRepr, FrameRepr, IpRepr, Ipv4Repr,
    Ipv6Repr, NakReason, NakRepr, Opcode, RethRepr, TransportRepr, transport::CmKind,
};
use ferroce_sim::rng::Rng;
use ferroce_sim::rtl::nic::RtlNic;
use std::net::{Ipv4Addr, Ipv6Addr};

const OUR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const EVQ_LOG: u32 = 10;
const TXQ_LOG: u32 = 6;

fn write_table<N: Nic + ?Sized>(n: &mut N, t: TableId, index: u32, words: &[u32]) -> u32 {
    for i in 0..16u32 {
        n.write_reg(
            regs::TABLE_DATA + 4 * i,
            words.get(i as usize).copied().unwrap_or(0),
        );
    }
    n.write_reg(regs::TABLE_INDEX, index);
    n.write_reg(regs::TABLE_CMD, t as u32 | regs::TABLE_OP_WRITE);
    n.read_reg(regs::TABLE_STATUS)
}

fn read_table<N: Nic>(n: &mut N, t: u32, index: u32) -> (u32, Vec<u32>) {
    n.write_reg(regs::TABLE_INDEX, index);
    n.write_reg(regs::TABLE_CMD, t);
    let status = n.read_reg(regs::TABLE_STATUS);
    let words = (0..16u32)
        .map(|i| n.read_reg(regs::TABLE_DATA + 4 * i))
        .collect();
    (status, words)
}

/// One connection as the test sends to it.
#[derive(Clone, Copy)]
struct Conn {
    id: u32,
    entry: ConnectionEntry,
}

/// Everything both NICs are programmed with, and the host memory layout.
struct Layout {
    conns: Vec<Conn>,
    /// (region index, entry)
    regions: Vec<(u32, RegionEntry)>,
    buffers: Vec<(u64, usize)>,
    evq: u64,
    txq: u64,
    tx_payload: u64,
}

fn v4(a: [u8; 4]) -> [u8; 16] {
    Ipv4Addr::from(a).to_ipv6_mapped().octets()
}

/// Programs a NIC; both NICs allocate the same addresses in the same order.
fn program<N: Nic>(n: &mut N) -> Layout {
    let mac = EthernetAddress(OUR_MAC).to_u64();
    n.write_reg(regs::MAC_LO, mac as u32);
    n.write_reg(regs::MAC_HI, (mac >> 32) as u32);
    n.write_reg(regs::ACK_COALESCE, 3);
    n.write_reg(regs::ACK_DELAY_NS, 4_000);
    let evq = n.alloc_dma(64 << EVQ_LOG, 4096).unwrap();
    n.write_reg(regs::EVQ_BASE_LO, evq as u32);
    n.write_reg(regs::EVQ_BASE_HI, (evq >> 32) as u32);
    n.write_reg(regs::EVQ_LOG_SIZE, EVQ_LOG);
    let txq = n.alloc_dma(TX_DESCRIPTOR_LEN << TXQ_LOG, 4096).unwrap();
    n.write_reg(regs::TXQ_BASE_LO, txq as u32);
    n.write_reg(regs::TXQ_BASE_HI, (txq >> 32) as u32);
    n.write_reg(regs::TXQ_LOG_SIZE, TXQ_LOG);
    let tx_payload = n.alloc_dma(16384, 4096).unwrap();
    let pattern: Vec<u8> = (0..16384u32).map(|i| (i * 7 + 3) as u8).collect();
    n.write_dma(tx_payload, &pattern).unwrap();

    let peer = EthernetAddress(PEER_MAC);
    let mut conns = Vec::new();
    let base = ConnectionEntry {
        valid: true,
        peer_mac: peer,
        rate_hint_mbps: 25_000,
        ..Default::default()
    };
    let c0 = ConnectionEntry {
        ipv6: false,
        peer_conn: 100,
        flow_base: 0,
        flow_count: 4,
        tag_base: 0,
        tag_count: 4,
        local_ip: v4([10, 0, 0, 1]),
        peer_ip: v4([10, 0, 0, 2]),
        ..base
    };
    let c1 = ConnectionEntry {
        ipv6: true,
        vlan_tci: Some(0x2005),
        dscp: 26,
        peer_conn: 200,
        flow_base: 16,
        flow_count: 4,
        tag_base: 8,
        tag_count: 4,
        local_ip: "fd00::1".parse::<Ipv6Addr>().unwrap().octets(),
        peer_ip: "fd00::2".parse::<Ipv6Addr>().unwrap().octets(),
        rate_hint_mbps: 40_000,
        ..base
    };
    // Flows and Tags that run off the end of their tables.
    let c3 = ConnectionEntry {
        peer_conn: 300,
        flow_base: 1021,
        flow_count: 6,
        tag_base: 254,
        tag_count: 4,
        local_ip: v4([10, 0, 3, 1]),
        peer_ip: v4([10, 0, 3, 2]),
        ..base
    };
    for (id, e) in [(0, c0), (1, c1), (3, c3)] {
        assert_eq!(write_table(n, TableId::Connection, id, &e.to_words()), 0);
        conns.push(Conn { id, entry: e });
    }
    // Connection 2 exists but is invalid.
    write_table(n, TableId::Connection, 2, &[0, 5]);
    for (first, cum) in [(0u32, 0xFF_FFF0u32), (16, 100), (1021, 5)] {
        for f in first..(first + 4).min(1024) {
            write_table(n, TableId::Flow, f, &FlowInit { cum_fsn: cum }.to_words());
        }
    }

    let mut buffers = Vec::new();
    let mut regions = Vec::new();
    for (index, key, access, len) in [
        (1u32, 0x11u8, 0x01u8, 65536usize),
        (2, 0x22, 0x02, 8192),
        (3, 0x33, 0x05, 4096),
    ] {
        let addr = n.alloc_dma(len, 4096).unwrap();
        buffers.push((addr, len));
        let r = RegionEntry {
            valid: true,
            key,
            access,
            base: addr,
            length: len as u64,
        };
        assert_eq!(write_table(n, TableId::Region, index, &r.to_words()), 0);
        regions.push((index, r));
    }
    // Receive buffers: Tag contexts 0, 1 (connection 0) and 8, 9 (connection 1), SSN 0..8;
    // every fourth one shorter than a full message.
    let rbuf = n.alloc_dma(4 * 8 * 4096, 4096).unwrap();
    buffers.push((rbuf, 4 * 8 * 4096));
    for (k, ctx) in [0u32, 1, 8, 9].into_iter().enumerate() {
        for ssn in 0..8u32 {
            let slot = (k as u32 * 8 + ssn) as u64;
            let b = RecvBuffer {
                valid: true,
                ssn,
                addr: rbuf + slot * 4096,
                len: if ssn % 4 == 3 { 1000 } else { 4096 },
            };
            let idx = ctx * 16 + ssn;
            assert_eq!(write_table(n, TableId::RecvBuffer, idx, &b.to_words()), 0);
        }
    }
    Layout {
        conns,
        regions,
        buffers,
        evq,
        txq,
        tx_payload,
    }
}

/// Random frame generator with per-flow FSN tracking, so most packets are in window.
struct Traffic {
    rng: Rng,
    next_fsn: Vec<u32>,
    /// Per connection and Tag: the oldest MSN still in use. Messages are picked from a
    /// window above it and it moves on, so slots free up and new messages complete.
    msn_base: Vec<u32>,
    /// Per connection and Tag: messages begun and not fully sent: (MSN, length, next offset).
    open: Vec<Vec<(u32, u32, u32)>>,
    /// The last packets of the stream, for resends.
    recent: std::collections::VecDeque<Vec<u8>>,
}

impl Traffic {
    fn frame(&mut self, lay: &Layout) -> Vec<u8> {
        // A resend of a recent packet of the stream: a duplicate, or the retry of one the
        // receiver refused for now (no receive buffer yet), as a sender would.
        if !self.recent.is_empty() && self.rng.chance(0.1) {
            let i = self.rng.below(self.recent.len() as u64) as usize;
            return self.recent[i].clone();
        }
        let r = &mut self.rng;
        // Two frames in three carry the next packet of a well-formed message stream on
        // connection 0 or 1 (so messages complete and slots turn over); the rest is noise:
        // every refusal and malformation, on any connection.
        let clean = r.chance(0.66);
        let ci = if clean {
            r.below(2) as usize
        } else {
            r.below(lay.conns.len() as u64) as usize
        };
        let conn = lay.conns[ci];
        let e = conn.entry;
        let mut dest = conn.id;
        if !clean && r.chance(0.1) {
            dest = [2, 7, 300, 0xFF_FFFF][r.below(4) as usize];
        }
        let ce = r.chance(0.1);
        let ecn = if ce { 0b11 } else { 0b10 };
        // An address that is not the connection's: one bit of any byte of either address that
        // the header carries (so every 32-bit word of the compare is exercised over IPv6), or
        // the other address family with the same addresses (v4-mapped over IPv6, the last
        // four bytes over IPv4).
        let mut src_ip = e.peer_ip;
        let mut dst_ip = e.local_ip;
        let mut ipv6 = e.ipv6;
        if !clean && r.chance(0.08) {
            let first = if e.ipv6 { 0 } else { 12 };
            let byte = first + r.below(16 - first as u64) as usize;
            let bit = 1u8 << r.below(8);
            match r.below(3) {
                0 => src_ip[byte] ^= bit,
                1 => dst_ip[byte] ^= bit,
                _ => ipv6 = !ipv6,
            }
        }
        let ip = if ipv6 {
            IpRepr::V6(Ipv6Repr {
                src: Ipv6Addr::from(src_ip),
                dst: Ipv6Addr::from(dst_ip),
                dscp: 0,
                ecn,
                flow_label: 0,
                hop_limit: 64,
                payload_len: 0,
            })
        } else {
            let a = |b: [u8; 16]| Ipv4Addr::new(b[12], b[13], b[14], b[15]);
            IpRepr::V4(Ipv4Repr {
                src: a(src_ip),
                dst: a(dst_ip),
                dscp: 0,
                ecn,
                ttl: 64,
                ident: r.next_u16(),
                payload_len: 0,
            })
        };
        let flow = if !clean && r.chance(0.1) {
            4 + r.below(3) as u16
        } else {
            r.below(4) as u16
        };
        let key = ci * 8 + flow as usize;
        let roll = if clean { r.below(80) } else { r.below(100) };
        let opcode = match roll {
            0..=34 => Opcode::Write,
            35..=44 => Opcode::WriteImm,
            45..=69 => Opcode::Send,
            70..=79 => Opcode::SendImm,
            80..=88 => Opcode::Ack,
            89..=95 => Opcode::Nak,
            _ => Opcode::Cm,
        };
        let mut payload = Vec::new();
        let mut fsn = r.next_u32() & 0xFF_FFFF;
        let transport = match opcode {
            Opcode::Ack => {
                let mut sack = [0u8; 32];
                for b in sack.iter_mut() {
                    *b = r.next_u8();
                }
                TransportRepr::Ack(AckRepr {
                    flow,
                    ecn_echo: r.bool(),
                    ce_count: r.next_u16(),
                    refused: r.next_u16(),
                    rate_hint_mbps: r.next_u32(),
                    ts_echo: r.next_u32(),
                    sack,
                })
            }
            Opcode::Nak => TransportRepr::Nak(NakRepr {
                flow,
                reason: [
                    NakReason::ReceiverNotReady,
                    NakReason::InvalidRequest,
                    NakReason::RemoteAccess,
                    NakReason::OutOfWindow,
                ][r.below(4) as usize],
                tag: r.next_u16(),
                msn: r.next_u32(),
                offset: r.next_u32(),
            }),
            Opcode::Cm => TransportRepr::Cm(CmRepr {
                kind: CmKind::from_u8(
                    CmKind::FIRST as u8
                        + r.below((CmKind::LAST as u8 - CmKind::FIRST as u8 + 1) as _) as u8,
                )
                .unwrap(),
                flags: r.next_u8(),
                path_count: r.next_u16(),
                src_conn: r.next_u32(),
                dst_conn: r.next_u32(),
                mtu: r.next_u16(),
                tag_count: r.next_u16(),
                initial_fsn: r.next_u32(),
                rate_mbps: r.next_u32(),
                tag_modes: r.next_u64(),
            }),
            _ => {
                // Mostly the next FSN or one close behind or ahead; sometimes far ahead.
                let base = self.next_fsn[key];
                let delta: i64 = match if clean { 10 } else { r.below(20) } {
                    0 => 256 + r.below(2000) as i64,
                    1..=3 => -(r.below(6) as i64),
                    4..=6 => r.below(5) as i64,
                    _ => 0,
                };
                fsn = (base as i64 + delta).rem_euclid(1 << 24) as u32;
                if clean {
                    self.next_fsn[key] = (fsn + 1) & 0xFF_FFFF;
                }
                let tag = if !clean && r.chance(0.1) {
                    4 + r.below(3) as u16
                } else {
                    r.below(2) as u16
                };
                let cursor = ci * 8 + tag as usize % 8;
                let (msn, msg_len, mut offset, mut len) = if !clean {
                    // A packet of an old or far-ahead message: stale, busy or contradicting.
                    let msn = (self.msn_base[cursor] + r.below(16) as u32).saturating_sub(8);
                    let msg_len = [0u32, 100, 1500, 3000][r.below(4) as usize];
                    let offset =
                        (r.below(3) as u32 * 1024).min(msg_len.saturating_sub(1) / 1024 * 1024);
                    // Now and then a long message's packet past the first 64 KiB, so that
                    // the engine's length compares see high halves that differ (a Send's
                    // end beyond its buffer by more than 64 KiB).
                    if r.chance(0.15) {
                        let msg_len = 140_000 + r.below(100_000) as u32;
                        let offset = 65_536 * (1 + r.below(2) as u32) + r.below(3) as u32 * 1024;
                        (msn, msg_len, offset, 1024)
                    } else {
                        (msn, msg_len, offset, (msg_len - offset).min(1024))
                    }
                } else {
                    // The next packet of one of the (at most three) open messages, in order.
                    let open = &mut self.open[cursor];
                    if open.is_empty() || (open.len() < 3 && r.chance(0.3)) {
                        let msn = self.msn_base[cursor];
                        self.msn_base[cursor] += 1;
                        // Sometimes a message longer than 64 KiB, so that a slot's byte count
                        // can pass 65,536 (no planted fault has shown this reached yet).
                        let msg_len = if r.chance(0.01) {
                            70_000
                        } else {
                            [0u32, 100, 1500, 3000, 5000][r.below(5) as usize]
                        };
                        open.push((msn, msg_len, 0));
                    }
                    let i = r.below(open.len() as u64) as usize;
                    let (msn, msg_len, off) = open[i];
                    let len = (msg_len - off).min(1024);
                    if off + len >= msg_len {
                        open.swap_remove(i);
                    } else {
                        open[i].2 = off + len;
                    }
                    (msn, msg_len, off, len)
                };
                if !clean && r.chance(0.1) {
                    offset += 512;
                }
                if !clean && r.chance(0.1) {
                    len += 8;
                }
                payload = r.bytes(len as usize);
                let write = opcode.is_write();
                let reth = write.then(|| {
                    let (idx, reg) = lay.regions[r.below(3) as usize];
                    let mut rkey = reg.rkey(idx);
                    match if clean { 9 } else { r.below(10) } {
                        0 => rkey ^= 1,
                        1 => rkey = 4000 << 8,
                        _ => {}
                    }
                    let mut va = reg.base + (msn as u64 * 3000 + offset as u64) % (reg.length / 2);
                    if !clean && r.chance(0.1) {
                        va = reg.base + reg.length - 10;
                    }
                    // Below the base: by a little (the same high word) or by 4 GB.
                    if !clean && r.chance(0.05) {
                        va = reg.base.wrapping_sub(1 + r.below(64));
                        if r.chance(0.3) {
                            va = reg.base.wrapping_sub(1 << 32);
                        }
                    }
                    // A packet of an open message that runs past the region's end, or ends
                    // exactly at it: its slot is in order, so the bounds check (not a slot
                    // check) decides, refusing the first and placing the second.
                    if clean && r.chance(0.03) {
                        va = reg.base + reg.length - len as u64;
                        if r.chance(0.5) {
                            va = reg.base + reg.length - len as u64 / 2;
                            if len < 2 {
                                va = reg.base + reg.length + 8;
                            }
                        }
                    }
                    RethRepr { va, rkey }
                });
                TransportRepr::Data(DataRepr {
                    flow,
                    tag,
                    msn,
                    // Now and then a Send whose SSN is not its message's (also in the clean
                    // stream, where the rest of the packet matches the begun message): the
                    // slot check must refuse it.
                    ssn: if write {
                        0
                    } else if r.chance(if clean { 0.03 } else { 0.1 }) {
                        msn ^ (1 << r.below(3))
                    } else {
                        msn
                    },
                    offset,
                    msg_len,
                    timestamp: r.next_u32(),
                    reth,
                    imm: opcode.has_imm().then(|| r.next_u32()),
                })
            }
        };
        let repr = FrameRepr {
            eth: EthernetRepr {
                dst: EthernetAddress(OUR_MAC),
                src: EthernetAddress(PEER_MAC),
                vlan_tci: e.vlan_tci,
                ethertype: 0,
            },
            ip,
            src_port: 0xC000 | r.next_u16() & 0xFFF,
            dst_port: 4791,
            bth: BthRepr {
                opcode,
                solicited: r.chance(0.1),
                dest_conn: dest,
                ack_req: r.chance(0.15),
                psn: fsn,
            },
            transport,
            payload: &payload,
        };
        let mut f = repr.emit();
        if clean && opcode.is_data() {
            self.recent.push_back(f.clone());
            if self.recent.len() > 64 {
                self.recent.pop_front();
            }
        }
        let r = &mut self.rng;
        match if clean { 99 } else { r.below(30) } {
            0..=5 => {
                let i = r.below(f.len() as u64) as usize;
                f[i] ^= 1 << r.below(8);
            }
            6..=8 => f.truncate(1 + r.below(f.len() as u64) as usize),
            9 => {
                let n = 1 + r.below(200) as usize;
                f = r.bytes(n);
            }
            _ => {}
        }
        f
    }
}

/// Posts receive buffers on Tags 0 and 1 of connections 0 and 1 for the next SSNs (each
/// Send here has SSN = MSN), in the buffer area `program` set aside.
fn repost(n: &mut dyn Nic, lay: &Layout, msn_base: &[u32]) {
    let rbuf = lay.buffers[3].0;
    for (k, (ci, tag, ctx)) in [(0usize, 0usize, 0u32), (0, 1, 1), (1, 0, 8), (1, 1, 9)]
        .into_iter()
        .enumerate()
    {
        let base = msn_base[ci * 8 + tag].saturating_sub(4);
        for ssn in base..base + 8 {
            let slot = (k as u32 * 8 + ssn % 8) as u64;
            let b = RecvBuffer {
                valid: true,
                ssn,
                addr: rbuf + slot * 4096,
                len: if ssn % 4 == 3 { 1000 } else { 4096 },
            };
            let idx = ctx * 16 + ssn % 16;
            assert_eq!(write_table(n, TableId::RecvBuffer, idx, &b.to_words()), 0);
        }
    }
}

fn counters<N: Nic>(n: &mut N) -> Vec<(Counter, u64)> {
    Counter::ALL
        .iter()
        .map(|&c| {
            let o = regs::counter_offset(c);
            (c, n.read_reg(o) as u64 | (n.read_reg(o + 4) as u64) << 32)
        })
        .collect()
}

fn drain<N: SimPort>(n: &mut N) -> Vec<PortFrame> {
    std::iter::from_fn(|| n.transmit_frame()).collect()
}

/// New events in the ring since `head`; the host then consumes them.
fn events<N: Nic>(n: &mut N, lay: &Layout) -> Vec<Vec<u8>> {
    let head = n.read_reg(regs::EVQ_HEAD);
    let tail = n.read_reg(regs::EVQ_TAIL);
    let mut out = Vec::new();
    for i in head..tail {
        let mut e = vec![0u8; 64];
        let slot = (i % (1 << EVQ_LOG)) as u64;
        n.read_dma(lay.evq + 64 * slot, &mut e).unwrap();
        out.push(e);
    }
    n.write_reg(regs::EVQ_HEAD, tail);
    out
}

/// The port a frame comes in on: any of the core's `ports`.
fn ingress(r: &mut Rng, ports: u32) -> u8 {
    r.below(ports as u64) as u8
}

/// A descriptor's port: one of the core's `ports`, or in 4 % of the descriptors one at or
/// beyond them (refused with `BadPort`).
fn desc_port(r: &mut Rng, ports: u32) -> u8 {
    if r.chance(0.04) {
        (ports as u64 + r.below(256 - ports as u64)) as u8
    } else {
        r.below(ports as u64) as u8
    }
}

/// What the run did with ports, from both sides' (equal) outputs.
#[derive(Default)]
struct PortTally {
    /// Frames sent on a port other than 0: (ACKs and NAKs, timer ACKs, from descriptors).
    sent: [usize; 3],
    /// CM events reporting a port other than 0.
    cm: usize,
    /// TX descriptors refused for their port.
    bad: usize,
}

impl PortTally {
    fn events(&mut self, evs: &[Vec<u8>]) {
        for e in evs {
            if e[0] == event::kind::CM && e[1] >> 4 != 0 {
                self.cm += 1;
            }
            if e[0] == event::kind::TX_ERROR && e[1] == event::TxErrorReason::BadPort as u8 {
                self.bad += 1;
            }
        }
    }

    fn frames(&mut self, kind: usize, frames: &[PortFrame]) {
        self.sent[kind] += frames.iter().filter(|f| f.port != 0).count();
    }
}

fn descriptor(r: &mut Rng, lay: &Layout) -> TxDescriptor {
    let opcode = [
        Opcode::Write as u8,
        Opcode::WriteImm as u8,
        Opcode::Send as u8,
        Opcode::SendImm as u8,
        Opcode::Cm as u8,
        0x17,
    ][r.below(6) as usize];
    let payload_len = if opcode == Opcode::Cm as u8 {
        if r.chance(0.8) { 32 } else { 31 }
    } else {
        r.below(1500) as u32
    };
    let mut local_addr = lay.tx_payload + r.below(4096);
    if r.chance(0.05) {
        local_addr = 0x10; // unmapped: the DMA read faults
    }
    TxDescriptor {
        opcode,
        flags: r.below(4) as u8,
        flow: r.below(5) as u16,
        conn: [0, 1, 3, 2, 9][r.below(5) as usize],
        fsn: r.next_u32(),
        entropy: r.next_u16(),
        tag: r.below(4) as u16,
        msn: r.next_u32(),
        ssn: r.next_u32(),
        offset: r.below(4096) as u32,
        msg_len: r.below(8192) as u32,
        payload_len,
        imm: r.next_u32(),
        local_addr,
        remote_va: r.next_u64(),
        rkey: r.next_u32(),
        port: 0,
    }
}

/// A new `RtlNic`, or `None` (printing `SKIPPED`) when the Verilated core could not be built
/// and `FERROCE_ALLOW_MISSING_TOOLS` is set; without it a missing simulator fails the test.
fn rtl_nic_or_skip() -> Option<RtlNic> {
    match RtlNic::new() {
        Ok(t) => Some(t),
        Err(e) if std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_some() => {
            println!("SKIPPED: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn rtl_nic_matches_the_model() {
    let Some(mut rtl) = rtl_nic_or_skip() else {
        return;
    };
    let sizes = rtl.table_sizes();
    let mut model = ModelNic::new(sizes);
    let nports = sizes.ports;
    assert_eq!(rtl.read_reg(regs::VERSION), regs::VERSION_VALUE);
    assert_eq!(
        rtl.read_reg(regs::CAP_PORTS),
        model.read_reg(regs::CAP_PORTS)
    );
    // A port the NIC does not have is refused, by both alike.
    let no_port = nports as u8;
    assert_eq!(
        rtl.receive_frame(no_port, &[0u8; 64]),
        model.receive_frame(no_port, &[0u8; 64])
    );
    assert!(rtl.receive_frame(no_port, &[0u8; 64]).is_err());
    assert!(rtl.set_link(no_port, false).is_err() && model.set_link(no_port, false).is_err());
    assert_eq!(
        rtl.read_reg(regs::PORT_LINK),
        (1 << nports) - 1,
        "every link up at first"
    );
    let lay = program(&mut rtl);
    let lay_m = program(&mut model);
    assert_eq!(
        lay.evq, lay_m.evq,
        "both NICs must see the same memory layout"
    );

    let frames: usize = std::env::var("FERROCE_RTL_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if std::env::var_os("FERROCE_LONG").is_some() {
            1_000_000
        } else {
            10_000
        });
    let mut traffic = Traffic {
        rng: Rng::new(0xfe55),
        next_fsn: vec![0; 64],
        msn_base: vec![0; 64],
        open: vec![Vec::new(); 64],
        recent: Default::default(),
    };
    for (ci, c) in lay.conns.iter().enumerate() {
        let cum = if c.entry.flow_base == 0 {
            0xFF_FFF0
        } else if c.entry.flow_base == 16 {
            100
        } else {
            5
        };
        for f in 0..8 {
            traffic.next_fsn[ci * 8 + f] = cum;
        }
    }
    let mut ctl = Rng::new(77);
    let mut bursts = Rng::new(0xb0b5);
    let mut ports = Rng::new(0x9047);
    let mut tally = PortTally::default();
    let mut burst_frames = 0usize;
    let mut now = 0u64;
    let mut tx_tail = 0u32;
    let mut totals = (0usize, 0usize);
    let mut timer_steps = 0usize;
    for step in 0..frames {
        if bursts.chance(0.1) {
            let burst: Vec<PortFrame> = (0..2 + bursts.below(23))
                .map(|_| PortFrame {
                    bytes: traffic.frame(&lay),
                    port: ingress(&mut ports, nports),
                })
                .collect();
            rtl.receive_burst(&burst).unwrap();
            for f in &burst {
                model.receive_frame(f.port, &f.bytes).unwrap();
            }
            burst_frames += burst.len();
            let (a, b) = (drain(&mut rtl), drain(&mut model));
            assert_eq!(
                a,
                b,
                "step {step}: frames sent after a burst of {}",
                burst.len()
            );
            totals.0 += a.len();
            tally.frames(0, &a);
            let (ea, eb) = (events(&mut rtl, &lay), events(&mut model, &lay));
            assert_eq!(
                ea,
                eb,
                "step {step}: events after a burst of {}",
                burst.len()
            );
            totals.1 += ea.len();
            tally.events(&ea);
        } else {
            let f = traffic.frame(&lay);
            let port = ingress(&mut ports, nports);
            rtl.receive_frame(port, &f).unwrap();
            model.receive_frame(port, &f).unwrap();
            let (a, b) = (drain(&mut rtl), drain(&mut model));
            assert_eq!(
                a, b,
                "step {step}: frames sent after receiving on port {port} {f:02x?}"
            );
            totals.0 += a.len();
            tally.frames(0, &a);
            let (ea, eb) = (events(&mut rtl, &lay), events(&mut model, &lay));
            assert_eq!(
                ea, eb,
                "step {step}: events after receiving on port {port} {f:02x?}"
            );
            totals.1 += ea.len();
            tally.events(&ea);
        }
        if ctl.chance(0.15) {
            now += ctl.below(6_000);
            rtl.poll(now);
            model.poll(now);
            let (mut a, mut b) = (drain(&mut rtl), drain(&mut model));
            // Timer ACKs of one sweep leave in flow order in the RTL, deadline order in the
            // model: the same frames.
            a.sort();
            b.sort();
            assert_eq!(a, b, "step {step}: timer ACKs at {now} ns");
            totals.0 += a.len();
            tally.frames(1, &a);
        }
        if ctl.chance(0.04) {
            for _ in 0..1 + ctl.below(3) {
                let d = TxDescriptor {
                    port: desc_port(&mut ports, nports),
                    ..descriptor(&mut ctl, &lay)
                };
                let slot = (tx_tail % (1 << TXQ_LOG)) as u64;
                for n in [&mut rtl as &mut dyn Nic, &mut model as &mut dyn Nic] {
                    n.write_dma(lay.txq + 64 * slot, &d.to_bytes()).unwrap();
                }
                tx_tail = tx_tail.wrapping_add(1);
            }
            rtl.write_reg(regs::TXQ_TAIL, tx_tail);
            model.write_reg(regs::TXQ_TAIL, tx_tail);
            rtl.poll(now);
            model.poll(now);
            let (a, b) = (drain(&mut rtl), drain(&mut model));
            assert_eq!(a, b, "step {step}: transmitted descriptors");
            totals.0 += a.len();
            tally.frames(2, &a);
            let (ea, eb) = (events(&mut rtl, &lay), events(&mut model, &lay));
            assert_eq!(ea, eb, "step {step}: TX events");
            tally.events(&ea);
            assert_eq!(rtl.read_reg(regs::TXQ_HEAD), model.read_reg(regs::TXQ_HEAD));
        }
        if step % 300 == 299 {
            // The host's recovery from messages its (scripted) sender abandoned: reset the
            // stream's Tag contexts, which frees their message slots and receive buffers.
            for ctx in [0u32, 1, 8, 9] {
                assert_eq!(write_table(&mut rtl, TableId::TagReset, ctx, &[]), 0);
                assert_eq!(write_table(&mut model, TableId::TagReset, ctx, &[]), 0);
            }
            for ci in 0..2 {
                for tag in 0..2 {
                    traffic.open[ci * 8 + tag].clear();
                }
                // ... and restarts the stream's flows at the sender's next FSN, so that holes
                // left by packets it gave up on do not close the SACK window for good.
                let base = lay.conns[ci].entry.flow_base as u32;
                for f in 0..4u32 {
                    let init = FlowInit {
                        cum_fsn: traffic.next_fsn[ci * 8 + f as usize],
                    };
                    assert_eq!(
                        write_table(&mut rtl, TableId::Flow, base + f, &init.to_words()),
                        0
                    );
                    assert_eq!(
                        write_table(&mut model, TableId::Flow, base + f, &init.to_words()),
                        0
                    );
                }
            }
        }
        if step % 50 == 49 || step % 300 == 299 {
            // The host posts receive buffers for the Sends it expects next.
            for n in [&mut rtl as &mut dyn Nic, &mut model as &mut dyn Nic] {
                repost(n, &lay, &traffic.msn_base);
            }
        }
        // Both ask to be woken for their ACK timers at the same time.
        let wake = rtl.next_timer_ns();
        assert_eq!(
            wake,
            model.next_timer_ns(),
            "step {step}: ACK timer wake-up at {now} ns"
        );
        timer_steps += wake.is_some() as usize;
        if step % 100 == 99 || step + 1 == frames {
            assert_eq!(
                counters(&mut rtl),
                counters(&mut model),
                "step {step}: counters"
            );
            // A port's link goes down or comes back (a fixed pattern, so the random streams
            // of frames and ports stay those of the test before links): both report it alike.
            let round = step / 100;
            let (port, up) = ((round % nports as usize) as u8, round % 3 != 0);
            rtl.set_link(port, up).unwrap();
            model.set_link(port, up).unwrap();
            assert_eq!(
                rtl.read_reg(regs::PORT_LINK),
                model.read_reg(regs::PORT_LINK),
                "step {step}: link state"
            );
            for &(addr, len) in &lay.buffers {
                let (mut x, mut y) = (vec![0u8; len], vec![0u8; len]);
                rtl.read_dma(addr, &mut x).unwrap();
                model.read_dma(addr, &mut y).unwrap();
                assert!(x == y, "step {step}: memory at {addr:#x} differs");
            }
        }
    }
    // Hostile table writes: every bit set, reserved ones included. Both NICs keep only the
    // fields an entry has (the model through `from_words`), so the read-back must agree.
    for (t, idx) in [(TableId::Connection, 3), (TableId::Region, 4)] {
        let ones = [u32::MAX; 16];
        assert_eq!(
            write_table(&mut rtl, t, idx, &ones),
            write_table(&mut model, t, idx, &ones),
            "{t:?} {idx}: status of an all-ones write"
        );
    }
    // Table read-back through the window, including the SACK state of every used flow.
    for (t, idx) in [
        (TableId::Connection, 3),
        (TableId::Region, 4),
        (TableId::Connection, 0),
        (TableId::Connection, 1),
        (TableId::Connection, 2),
        (TableId::Region, 1),
        (TableId::RecvBuffer, 3),
        (TableId::RateHint, 1),
        (TableId::Flow, 0),
        (TableId::Flow, 1),
        (TableId::Flow, 17),
        (TableId::Flow, 1022),
        (TableId::TagReset, 0),
        (TableId::Flow, 5000),
    ] {
        let op = t as u32 | regs::TABLE_OP_READ;
        assert_eq!(
            read_table(&mut rtl, op, idx),
            read_table(&mut model, op, idx),
            "{t:?} {idx}"
        );
    }
    assert_eq!(
        read_table(&mut rtl, 0x99 | regs::TABLE_OP_READ, 0),
        read_table(&mut model, 0x99 | regs::TABLE_OP_READ, 0)
    );
    let c = counters(&mut rtl);
    for (k, v) in c.iter().filter(|(_, v)| *v > 0) {
        println!("  {} = {v}", k.name());
    }
    let get = |k: Counter| c.iter().find(|(x, _)| *x == k).map_or(0, |(_, v)| *v);
    println!(
        "{} frames ({burst_frames} of them in bursts): {} placed, {} completions, {} frames sent, {} events, {} cycles",
        get(Counter::RxFrames),
        get(Counter::RxPlacedPackets),
        get(Counter::RxCompletions),
        totals.0,
        totals.1,
        rtl.activity().cycles
    );
    // The mix must exercise the paths it claims to.
    for k in [
        Counter::RxPlacedPackets,
        Counter::RxCompletions,
        Counter::RxDuplicate,
        Counter::RxOutOfWindow,
        Counter::RxBadRkey,
        Counter::RxAccessDenied,
        Counter::RxOutOfBounds,
        Counter::RxNoRecvBuffer,
        Counter::RxInvalidRequest,
        Counter::RxBadIcrc,
        Counter::RxAcks,
        Counter::RxNaks,
        Counter::RxCm,
        Counter::TxAcks,
        Counter::TxNaks,
        Counter::TxPackets,
        Counter::TxBadDescriptor,
    ] {
        assert!(get(k) > 0, "{k:?} never happened");
    }
    println!(
        "{nports} ports: frames sent on ports other than 0: {} ACKs and NAKs, {} timer ACKs, {} \
         from descriptors; {} CM events from ports other than 0; {} descriptors refused for \
         their port",
        tally.sent[0], tally.sent[1], tally.sent[2], tally.cm, tally.bad
    );
    assert!(tally.bad > 0, "no descriptor with a bad port");
    if nports > 1 {
        assert!(
            tally.sent.iter().all(|&n| n > 0) && tally.cm > 0,
            "the ports were not exercised"
        );
    }
    println!("{timer_steps} steps ended with an ACK timer armed");
    assert!(
        timer_steps > frames / 10,
        "ACK timers were armed after {timer_steps} of {frames} steps only"
    );
}

/// One well-formed Write of 100 bytes to region 1 on `flow` of connection 0, with `fsn`.
fn write_on_conn0(lay: &Layout, flow: u16, fsn: u32) -> Vec<u8> {
    let (idx, reg) = lay.regions[0];
    write_frame(lay, flow, fsn, 0, reg.rkey(idx), reg.base, &[0x5Au8; 100])
}

/// A one-packet Write on connection 0 (Tag 0, message `msn`) with this rkey, address and
/// payload.
fn write_frame(
    lay: &Layout,
    flow: u16,
    fsn: u32,
    msn: u32,
    rkey: u32,
    va: u64,
    payload: &[u8],
) -> Vec<u8> {
    let e = lay.conns[0].entry;
    let a = |b: [u8; 16]| Ipv4Addr::new(b[12], b[13], b[14], b[15]);
    FrameRepr {
        eth: EthernetRepr {
            dst: EthernetAddress(OUR_MAC),
            src: EthernetAddress(PEER_MAC),
            vlan_tci: e.vlan_tci,
            ethertype: 0,
        },
        ip: IpRepr::V4(Ipv4Repr {
            src: a(e.peer_ip),
            dst: a(e.local_ip),
            dscp: 0,
            ecn: 0b10,
            ttl: 64,
            ident: 1,
            payload_len: 0,
        }),
        src_port: 0xC123,
        dst_port: 4791,
        bth: BthRepr {
            opcode: Opcode::Write,
            solicited: false,
            dest_conn: lay.conns[0].id,
            ack_req: false,
            psn: fsn,
        },
        transport: TransportRepr::Data(DataRepr {
            flow,
            tag: 0,
            msn,
            ssn: 0,
            offset: 0,
            msg_len: payload.len() as u32,
            timestamp: 0x1234_5678,
            reth: Some(RethRepr { va, rkey }),
            imm: None,
        }),
        payload,
    }
    .emit()
}

/// A flow's ACK timer is armed, then the host rewrites the flow's connection: the timer ACK
/// is sent only if the flow still belongs to the connection (valid, inside its flow count, at
/// the same place from its flow base), on the RTL as in the model. The random mix above
/// never rewrites a connection, so without this test the timer scan's ownership check could
/// drop its range and base compares unnoticed.
#[test]
fn timer_ack_only_for_a_flow_its_connection_still_owns() {
    let flow = 2u16;
    // (what the host does to connection 0 as `program` wrote it, timer ACKs expected)
    type Rewrite = fn(&mut ConnectionEntry);
    let cases: [(&str, Rewrite, usize); 5] = [
        ("rewritten unchanged", |_| {}, 1),
        ("new rate hint", |e| e.rate_hint_mbps = 7_000, 1),
        ("flow count below the flow", |e| e.flow_count = 2, 0),
        ("flow base moved by one", |e| e.flow_base += 1, 0),
        ("invalidated", |e| e.valid = false, 0),
    ];
    for (what, rewrite, want) in cases {
        let Some(mut rtl) = rtl_nic_or_skip() else {
            return;
        };
        let mut model = ModelNic::new(rtl.table_sizes());
        let lay = program(&mut rtl);
        program(&mut model);
        let mut entry = lay.conns[0].entry;
        assert!(
            entry.valid && flow < entry.flow_count,
            "{what}: the flow belongs to connection 0 as programmed"
        );
        rewrite(&mut entry);
        let f = write_on_conn0(&lay, flow, 0xFF_FFF0);
        rtl.receive_frame(0, &f).unwrap();
        model.receive_frame(0, &f).unwrap();
        let (a, b) = (drain(&mut rtl), drain(&mut model));
        assert_eq!(a, b, "{what}: frames after the Write");
        assert!(
            a.is_empty(),
            "{what}: one packet is below the coalescing count"
        );
        assert_eq!(
            counters(&mut model)
                .iter()
                .find(|(c, _)| *c == Counter::RxPlacedPackets)
                .map(|x| x.1),
            Some(1),
            "{what}: the Write is placed"
        );
        let wake = rtl.next_timer_ns();
        assert_eq!(wake, model.next_timer_ns(), "{what}: timer armed");
        assert!(
            wake.is_some(),
            "{what}: the Write arms the flow's ACK timer"
        );

        assert_eq!(
            write_table(&mut rtl, TableId::Connection, 0, &entry.to_words()),
            0
        );
        assert_eq!(
            write_table(&mut model, TableId::Connection, 0, &entry.to_words()),
            0
        );
        let now = wake.unwrap() + 1_000;
        rtl.poll(now);
        model.poll(now);
        let (a, b) = (drain(&mut rtl), drain(&mut model));
        assert_eq!(a, b, "{what}: timer ACKs");
        assert_eq!(a.len(), want, "{what}: timer ACKs sent");
        if want == 1 {
            let parsed =
                ferroce_proto::wire::parse_frame(&a[0].bytes, 4791).expect("a well-formed ACK");
            match parsed.transport {
                TransportRepr::Ack(ack) => {
                    assert_eq!(ack.flow, flow, "{what}: the ACK's flow");
                    assert_eq!(
                        ack.rate_hint_mbps, entry.rate_hint_mbps,
                        "{what}: rate hint"
                    );
                }
                t => panic!("{what}: not an ACK: {t:?}"),
            }
        }
        // Either way the timer is done with: nothing more to wake for.
        assert_eq!(rtl.next_timer_ns(), model.next_timer_ns(), "{what}: after");
        assert_eq!(counters(&mut rtl), counters(&mut model), "{what}: counters");
    }
}

/// ACK timers fire at their deadlines and not a nanosecond before, on the RTL as in the model:
/// the earliest of two armed timers, then the later one once the sweep that sent the first
/// has made it the earliest. The random mix polls at arbitrary times and never lands on a
/// deadline, so without this test the engine's "a timer is due" compare could turn `≥` into
/// `>` unnoticed (it did, with every other test passing); here it is checked at its edge for
/// the deadline set when a timer starts and for the one a sweep leaves behind.
#[test]
fn timer_acks_leave_exactly_at_their_deadlines() {
    let Some(mut rtl) = rtl_nic_or_skip() else {
        return;
    };
    let mut model = ModelNic::new(rtl.table_sizes());
    let lay = program(&mut rtl);
    program(&mut model);
    let (first, second) = (2u16, 3u16);
    assert!(second < lay.conns[0].entry.flow_count);
    let mut both = |what: &str, step: &mut dyn FnMut(&mut dyn SimNic)| {
        step_both(&mut rtl, &mut model, what, step)
    };
    let arm = |flow: u16| arm_timer(&lay, flow);
    let (sent, due_first) = both("first Write", &mut arm(first));
    assert!(sent.is_empty(), "one packet is below the coalescing count");
    let due_first = due_first.expect("the first Write arms its flow's timer");
    // The second flow's timer starts a nanosecond before the first one's deadline.
    let (sent, _) = both("just before the first deadline", &mut |n| {
        n.poll(due_first - 1)
    });
    assert!(sent.is_empty(), "no timer ACK before the first deadline");
    let (sent, due) = both("second Write", &mut arm(second));
    assert!(sent.is_empty());
    assert_eq!(
        due,
        Some(due_first),
        "the first deadline is still the earliest"
    );
    let (sent, due_second) = both("at the first deadline", &mut |n| n.poll(due_first));
    assert_eq!(sent.len(), 1, "the first flow's timer ACK, at its deadline");
    let due_second = due_second.expect("the second flow's timer is still armed");
    assert!(due_second > due_first);
    let (sent, _) = both("just before the second deadline", &mut |n| {
        n.poll(due_second - 1)
    });
    assert!(sent.is_empty(), "no timer ACK before the second deadline");
    let (sent, due) = both("at the second deadline", &mut |n| n.poll(due_second));
    assert_eq!(
        sent.len(),
        1,
        "the second flow's timer ACK, at its deadline"
    );
    assert_eq!(due, None, "no timer left");
    assert_eq!(counters(&mut rtl), counters(&mut model), "counters");
}

/// The ACK timer's due compare runs on the clock's halves (`now_ns >= min_due` as a high-half
/// compare and a low-half one): a timer armed just below 2^32 ns must fire when the clock has
/// passed it in the high half only, and not before its deadline when the deadline lies past
/// the boundary, in the RTL as in the model.
#[test]
fn timer_acks_across_the_clocks_32_bit_boundary() {
    let Some((mut rtl, mut model, lay)) = programmed_pair() else {
        return;
    };
    let mut both = |what: &str, step: &mut dyn FnMut(&mut dyn SimNic)| {
        step_both(&mut rtl, &mut model, what, step)
    };
    let arm = |flow: u16| arm_timer(&lay, flow);
    let boundary = 1u64 << 32;
    // A deadline below the boundary, passed only in the high half: now = 2^32 + 5 has the
    // smaller low half.
    both("before the boundary", &mut |n| n.poll(boundary - 1_000_000));
    let (sent, due) = both("first Write", &mut arm(2));
    assert!(sent.is_empty());
    let due = due.expect("the Write arms its flow's timer");
    assert!(due < boundary && due & 0xFFFF_FFFF > 5, "deadline {due}");
    let (sent, _) = both("past the boundary", &mut |n| n.poll(boundary + 5));
    assert_eq!(
        sent.len(),
        1,
        "the timer ACK once the clock passed its deadline"
    );
    // A deadline past the boundary: the high halves equal, the low half decides.
    both("just below the boundary", &mut |n| n.poll(boundary - 1));
    let (sent, due) = both("second Write", &mut arm(3));
    assert!(sent.is_empty());
    let due = due.expect("the Write arms its flow's timer");
    assert!(due > boundary, "deadline {due}");
    let (sent, _) = both("before the deadline", &mut |n| n.poll(due - 1));
    assert!(sent.is_empty(), "no timer ACK before the deadline");
    let (sent, _) = both("at the deadline", &mut |n| n.poll(due));
    assert_eq!(sent.len(), 1, "the timer ACK at its deadline");
    assert_eq!(counters(&mut rtl), counters(&mut model), "counters");
}

/// A NIC of either kind, as the timer tests step them.
trait SimNic: Nic + SimPort {}
impl<T: Nic + SimPort> SimNic for T {}

/// Runs `step` on the RTL and on the model, and checks that they sent the same frames and
/// agree on their next ACK timer; returns the frames and that timer.
fn step_both(
    rtl: &mut RtlNic,
    model: &mut ModelNic,
    what: &str,
    step: &mut dyn FnMut(&mut dyn SimNic),
) -> (Vec<PortFrame>, Option<u64>) {
    step(rtl);
    step(model);
    let (a, b) = (drain(rtl), drain(model));
    assert_eq!(a, b, "{what}: frames");
    assert_eq!(
        rtl.next_timer_ns(),
        model.next_timer_ns(),
        "{what}: next timer"
    );
    (a, rtl.next_timer_ns())
}

/// A step that receives a Write on connection 0's flow `flow` (arming its ACK timer).
fn arm_timer(lay: &Layout, flow: u16) -> impl FnMut(&mut dyn SimNic) + use<> {
    let f = write_on_conn0(lay, flow, 0xFF_FFF0);
    move |n: &mut dyn SimNic| n.receive_frame(0, &f).unwrap()
}

/// An RTL NIC and a model NIC programmed alike, with their layout; `None` (the test skips)
/// without Verilator.
fn programmed_pair() -> Option<(RtlNic, ModelNic, Layout)> {
    let mut rtl = rtl_nic_or_skip()?;
    let mut model = ModelNic::new(rtl.table_sizes());
    let lay = program(&mut rtl);
    program(&mut model);
    Some((rtl, model, lay))
}

/// Frames as short as one beat, back to back at one beat per cycle, fill the queues behind the
/// parser faster than the engine empties them: every frame still reaches a verdict, as in the
/// model (counters, ACKs and events equal), and none is lost to a full queue. The random mix
/// sends bursts of at most 24 mostly full-size frames, which never fill the parse-result queue;
/// a receive-ready that falls a cycle too late would lose frames here and nowhere else.
#[test]
fn a_flood_of_short_frames_loses_none() {
    let Some((mut rtl, mut model, lay)) = programmed_pair() else {
        return;
    };
    let good = write_on_conn0(&lay, 1, 0xFF_FFF0);
    let mut rng = Rng::new(0x5107);
    let mut burst = Vec::new();
    for i in 0..600u32 {
        let bytes = match rng.below(8) {
            // One beat of a truncated Write.
            0 => good[..1 + rng.below(8) as usize].to_vec(),
            // Two or three beats: the headers cut short.
            1 => good[..9 + rng.below(16) as usize].to_vec(),
            // A whole Write, a duplicate after its first copy (an ACK is sent for it).
            2 => good.clone(),
            // One beat of noise.
            _ => vec![rng.below(256) as u8; 1 + rng.below(8) as usize],
        };
        burst.push(PortFrame {
            bytes,
            port: (i % rtl.ports()) as u8,
        });
    }
    let cycles = rtl.receive_burst(&burst).unwrap();
    for f in &burst {
        model.receive_frame(f.port, &f.bytes).unwrap();
    }
    let beats: u64 = burst.iter().map(|f| f.bytes.len().div_ceil(8) as u64).sum();
    println!("{} frames, {beats} beats in {cycles} cycles", burst.len());
    let (a, b) = (drain(&mut rtl), drain(&mut model));
    assert_eq!(a, b, "frames sent after the flood");
    assert_eq!(
        events(&mut rtl, &lay),
        events(&mut model, &lay),
        "events after the flood"
    );
    let (ca, cb) = (counters(&mut rtl), counters(&mut model));
    assert_eq!(ca, cb, "counters after the flood");
    let rx_frames = ca
        .iter()
        .find(|(c, _)| *c == Counter::RxFrames)
        .map(|x| x.1);
    assert_eq!(rx_frames, Some(burst.len() as u64), "every frame counted");
}

/// Frames around `MAX_FRAME_LEN` (9,216 bytes), longer than the packet buffer (16 KB) and
/// longer than the parser's byte count (64 KB), as a faulty or hostile MAC may deliver: each
/// gets the model's verdict (`RxTooLong` past the limit), and the core goes on to take the
/// next frame. Before the limit, a frame longer than the packet buffer filled it before its
/// verdict and the core waited forever.
#[test]
fn frames_longer_than_the_packet_buffer_get_a_verdict() {
    let Some((mut rtl, mut model, lay)) = programmed_pair() else {
        return;
    };
    let good = write_on_conn0(&lay, 1, 0xFF_FFF0);
    for len in [
        9_000usize, 9_216, 9_217, 9_224, 9_225, 16_392, 20_000, 70_000,
    ] {
        let mut f = good.clone();
        f.resize(len, 0xA5);
        rtl.receive_frame(0, &f).unwrap();
        rtl.receive_frame(0, &good).unwrap();
        model.receive_frame(0, &f).unwrap();
        model.receive_frame(0, &good).unwrap();
        let (a, b) = (drain(&mut rtl), drain(&mut model));
        assert_eq!(a, b, "{len} bytes: frames sent");
        assert_eq!(
            counters(&mut rtl),
            counters(&mut model),
            "{len} bytes: counters"
        );
    }
    let too_long = counters(&mut rtl)
        .into_iter()
        .find(|(c, _)| *c == Counter::RxTooLong)
        .map(|x| x.1);
    assert_eq!(too_long, Some(6), "the frames over MAX_FRAME_LEN");
}

/// The region bounds check over its whole width: a region just below 8 GB whose end lies
/// past it, and Writes that end inside it, exactly at its end, a byte past it, start below it
/// by a little or by 4 GB, or wrap the address space, each decided as the model decides
/// (frames, events and counters). The random mix's regions sit below 4 GB, where the upper
/// half of the check's carry-save sum sees only uniform carries; this one does not. The
/// region has no memory behind it: a Write the check lets through fails its DMA in both NICs
/// (no NAK), one it refuses is NAKed. Reading the upper half's carries one place off fails it.
#[test]
fn region_bounds_hold_above_4_gb() {
    let Some((mut rtl, mut model, lay)) = programmed_pair() else {
        return;
    };
    let index = 5;
    let region = RegionEntry {
        valid: true,
        key: 0x5A,
        access: 0x01,
        base: (1 << 33) - 0x1_0000,
        length: 0x2_0000,
    };
    for n in [&mut rtl as &mut dyn Nic, &mut model] {
        assert_eq!(
            write_table(n, TableId::Region, index, &region.to_words()),
            0
        );
    }
    let end = region.base + region.length;
    let naks = |n: &mut ModelNic| {
        counters(n)
            .into_iter()
            .find(|(c, _)| *c == Counter::TxNaks)
            .map_or(0, |(_, v)| v)
    };
    let mut fsn = 0xFF_FFF0;
    for (msn, (va, len)) in [
        (region.base, 100u32),
        (end - 100, 100),
        (end - 99, 100),
        (end - 1, 1),
        (end, 1),
        ((1 << 33) - 50, 100),
        (region.base - 1, 100),
        (region.base - (1 << 32), 100),
        (u64::MAX - 49, 100),
        (region.base + 0x1_0000, 4096),
    ]
    .into_iter()
    .enumerate()
    {
        let payload = vec![0xC3u8; len as usize];
        let frame = write_frame(&lay, 1, fsn, msn as u32, region.rkey(index), va, &payload);
        fsn = (fsn + 1) & 0xFF_FFFF;
        let naks_before = naks(&mut model);
        rtl.receive_frame(0, &frame).unwrap();
        model.receive_frame(0, &frame).unwrap();
        // The cases reach the bounds check: exactly the Writes that leave the region are NAKed.
        assert_eq!(
            naks(&mut model) - naks_before == 1,
            !region.contains(va, len as u64),
            "va {va:#x} len {len}: NAKed"
        );
        assert_eq!(
            drain(&mut rtl),
            drain(&mut model),
            "va {va:#x} len {len}: frames"
        );
        assert_eq!(
            events(&mut rtl, &lay),
            events(&mut model, &lay),
            "va {va:#x} len {len}: events"
        );
        assert_eq!(
            counters(&mut rtl),
            counters(&mut model),
            "va {va:#x} len {len}: counters"
        );
    }
}
