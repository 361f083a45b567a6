//! Behaviour of the fast-path model, packet by packet: placement, protection, SACK, ACK policy,
//! completions, hostile input, transmit and the register window.

use ferroce_proto::hsi::{
    ConnectionEntry, Counter, Event, FlowInit, RecvBuffer, RegionEntry, TableId, TableSizes,
    TxDescriptor, descriptor::FLAG_ACK_REQ, event::CompletionStatus, event::TxErrorReason, regs,
    tables::ACCESS_REMOTE_WRITE,
};
use ferroce_proto::model::{DmaFault, FastPath, HostMemory};
use ferroce_proto::wire::{
    AckRepr, BthRepr, CmKind, CmRepr, DataRepr, EthernetAddress, EthernetRepr, FrameRepr, IpRepr,
    Ipv4Repr, NakReason, Opcode, RethRepr, TransportRepr, fsn_add, ip::ECN_CE, ip::ECN_ECT0,
    parse_frame,
};
use ferroce_proto::wire::{FrameBuf, SharedBytes, SplitFrame};
use proptest::prelude::*;
use std::net::Ipv4Addr;
use std::sync::Arc;

const MEM_BASE: u64 = 0x10000;
const MEM_LEN: usize = 0x40000;
const REGION_BASE: u64 = 0x10000;
const REGION_LEN: u64 = 0x10000;
const RO_REGION_BASE: u64 = 0x20000;
const RECV_BASE: u64 = 0x30000;
const RECV_LEN: u32 = 4096;
const RKEY: u32 = (1 << 8) | 0x5a;
const RO_RKEY: u32 = (2 << 8) | 0x11;
const CONN: u32 = 2;
const PEER_CONN: u32 = 1;
const FLOWS: u16 = 4;
const TAGS: u16 = 2;
const INITIAL_FSN: u32 = 0xff_fffa;

/// Flat host memory that records every NIC write and refuses anything outside it.
struct Memory {
    bytes: Vec<u8>,
    writes: Vec<(u64, usize)>,
}

impl Memory {
    fn new() -> Self {
        Memory {
            bytes: vec![0; MEM_LEN],
            writes: Vec::new(),
        }
    }
    fn slice(&self, addr: u64, len: usize) -> &[u8] {
        let off = (addr - MEM_BASE) as usize;
        &self.bytes[off..off + len]
    }
}

impl HostMemory for Memory {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        let off = addr.checked_sub(MEM_BASE).ok_or(DmaFault)? as usize;
        let src = self.bytes.get(off..off + buf.len()).ok_or(DmaFault)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        self.writes.push((addr, data.len()));
        let off = addr.checked_sub(MEM_BASE).ok_or(DmaFault)? as usize;
        let dst = self.bytes.get_mut(off..off + data.len()).ok_or(DmaFault)?;
        dst.copy_from_slice(data);
        Ok(())
    }
}

/// Flat host memory that lends its bytes by reference, as simulated memory does: a write
/// while they are lent copies them first, so what was lent does not change.
struct SharingMemory {
    bytes: Arc<Vec<u8>>,
}

impl SharingMemory {
    fn new() -> Self {
        SharingMemory {
            bytes: Arc::new(vec![0; MEM_LEN]),
        }
    }
    fn range(&self, addr: u64, len: usize) -> Option<std::ops::Range<usize>> {
        let off = addr.checked_sub(MEM_BASE)? as usize;
        (off + len <= self.bytes.len()).then_some(off..off + len)
    }
}

impl HostMemory for SharingMemory {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        let r = self.range(addr, buf.len()).ok_or(DmaFault)?;
        buf.copy_from_slice(&self.bytes[r]);
        Ok(())
    }
    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        let r = self.range(addr, data.len()).ok_or(DmaFault)?;
        Arc::make_mut(&mut self.bytes)[r].copy_from_slice(data);
        Ok(())
    }
    fn dma_share(&self, addr: u64, len: usize) -> Option<SharedBytes> {
        SharedBytes::new(self.bytes.clone(), self.range(addr, len)?)
    }
}

fn mac(last: u8) -> EthernetAddress {
    EthernetAddress([2, 0, 0, 0, 0, last])
}

fn mapped(ip: Ipv4Addr) -> [u8; 16] {
    ip.to_ipv6_mapped().octets()
}

/// Receiver NIC "B" (10.0.0.2, connection 2) of a connection from "A" (10.0.0.1, connection 1).
fn nic() -> FastPath {
    nic_with(TableSizes::default())
}

fn nic_with(sizes: TableSizes) -> FastPath {
    let mut fp = FastPath::new(sizes);
    fp.write_reg(regs::MAC_LO, mac(0xb).to_u64() as u32);
    fp.write_reg(regs::MAC_HI, (mac(0xb).to_u64() >> 32) as u32);
    let ok = regs::TABLE_STATUS_OK;
    let rw = RegionEntry {
        valid: true,
        key: 0x5a,
        access: ACCESS_REMOTE_WRITE,
        base: REGION_BASE,
        length: REGION_LEN,
    };
    assert_eq!(
        fp.write_table(TableId::Region, RKEY >> 8, &rw.to_words()),
        ok
    );
    let ro = RegionEntry {
        valid: true,
        key: 0x11,
        access: 0,
        base: RO_REGION_BASE,
        length: 0x1000,
    };
    assert_eq!(
        fp.write_table(TableId::Region, RO_RKEY >> 8, &ro.to_words()),
        ok
    );
    let conn = ConnectionEntry {
        valid: true,
        ipv6: false,
        vlan_tci: None,
        dscp: 0,
        peer_conn: PEER_CONN,
        flow_base: 8,
        flow_count: FLOWS,
        tag_base: 4,
        tag_count: TAGS,
        peer_mac: mac(0xa),
        local_ip: mapped(Ipv4Addr::new(10, 0, 0, 2)),
        peer_ip: mapped(Ipv4Addr::new(10, 0, 0, 1)),
        rate_hint_mbps: 12_345,
    };
    assert_eq!(
        fp.write_table(TableId::Connection, CONN, &conn.to_words()),
        ok
    );
    for f in 0..FLOWS as u32 {
        assert_eq!(
            fp.write_table(
                TableId::Flow,
                8 + f,
                &FlowInit {
                    cum_fsn: INITIAL_FSN
                }
                .to_words()
            ),
            ok
        );
    }
    for t in 0..TAGS as u32 {
        assert_eq!(fp.write_table(TableId::TagReset, 4 + t, &[]), ok);
    }
    fp
}

fn post_recv(fp: &mut FastPath, tag: u16, ssn: u32, addr: u64, len: u32) {
    let depth = fp.sizes().recv_depth;
    let idx = (4 + tag as u32) * depth + ssn % depth;
    let rb = RecvBuffer {
        valid: true,
        ssn,
        addr,
        len,
    };
    assert_eq!(
        fp.write_table(TableId::RecvBuffer, idx, &rb.to_words()),
        regs::TABLE_STATUS_OK
    );
}

/// A data packet from A to B.
#[derive(Clone, Debug)]
struct Pkt {
    opcode: Opcode,
    flow: u16,
    fsn: u32,
    tag: u16,
    msn: u32,
    ssn: u32,
    offset: u32,
    msg_len: u32,
    va: u64,
    rkey: u32,
    ack_req: bool,
    ecn: u8,
    /// UDP source port; `None` = 50,000 + flow.
    entropy: Option<u16>,
    payload: Vec<u8>,
}

impl Pkt {
    fn write(fsn: u32, offset: u32, msg_len: u32, payload: Vec<u8>) -> Self {
        Pkt {
            opcode: Opcode::Write,
            flow: 0,
            fsn,
            tag: 0,
            msn: 0,
            ssn: 0,
            offset,
            msg_len,
            va: REGION_BASE + offset as u64,
            rkey: RKEY,
            ack_req: false,
            ecn: ECN_ECT0,
            entropy: None,
            payload,
        }
    }

    fn send(fsn: u32, ssn: u32, offset: u32, msg_len: u32, payload: Vec<u8>) -> Self {
        Pkt {
            opcode: Opcode::Send,
            ssn,
            rkey: 0,
            va: 0,
            ..Pkt::write(fsn, offset, msg_len, payload)
        }
    }

    fn frame(&self) -> Vec<u8> {
        self.repr().emit()
    }

    fn repr(&self) -> FrameRepr<'_> {
        let data = DataRepr {
            flow: self.flow,
            tag: self.tag,
            msn: self.msn,
            ssn: self.ssn,
            offset: self.offset,
            msg_len: self.msg_len,
            timestamp: 0xabcd_0000 | self.fsn & 0xffff,
            reth: self.opcode.is_write().then_some(RethRepr {
                va: self.va,
                rkey: self.rkey,
            }),
            imm: self.opcode.has_imm().then_some(77),
        };
        FrameRepr {
            eth: EthernetRepr {
                dst: mac(0xb),
                src: mac(0xa),
                vlan_tci: None,
                ethertype: 0,
            },
            ip: IpRepr::V4(Ipv4Repr {
                src: Ipv4Addr::new(10, 0, 0, 1),
                dst: Ipv4Addr::new(10, 0, 0, 2),
                dscp: 0,
                ecn: self.ecn,
                ttl: 64,
                ident: 0,
                payload_len: 0,
            }),
            src_port: self.entropy.unwrap_or(50_000 + self.flow),
            dst_port: 4791,
            bth: BthRepr {
                opcode: self.opcode,
                solicited: false,
                dest_conn: CONN,
                ack_req: self.ack_req,
                psn: self.fsn,
            },
            transport: TransportRepr::Data(data),
            payload: &self.payload,
        }
    }
}

/// ACKs (with their cumulative FSN) and NAKs (with the refused FSN) the NIC emitted.
type Emitted = (Vec<(u32, AckRepr)>, Vec<(u32, NakReason)>);

/// The ACKs and NAKs the NIC emitted, parsed.
fn emitted(fp: &mut FastPath) -> Emitted {
    let (mut acks, mut naks) = (Vec::new(), Vec::new());
    while let Some(f) = fp.pop_tx_frame() {
        let p = parse_frame(&f, 4791).expect("the NIC emits valid frames");
        assert_eq!(p.bth.dest_conn, PEER_CONN);
        assert_eq!(p.ip.dst_bytes(), mapped(Ipv4Addr::new(10, 0, 0, 1)));
        match p.transport {
            TransportRepr::Ack(a) => acks.push((p.bth.psn, a)),
            TransportRepr::Nak(n) => naks.push((p.bth.psn, n.reason)),
            other => panic!("unexpected frame {other:?}"),
        }
    }
    (acks, naks)
}

fn events(fp: &mut FastPath) -> Vec<Event> {
    std::iter::from_fn(|| fp.pop_event()).collect()
}

fn completions(evs: &[Event]) -> Vec<(u16, u32, CompletionStatus)> {
    evs.iter()
        .filter_map(|e| match *e {
            Event::Completion {
                tag, msn, status, ..
            } => Some((tag, msn, status)),
            _ => None,
        })
        .collect()
}

/// A connection request from `CONN` over `path_count` paths, with one Tag.
fn cm_request(path_count: u16) -> CmRepr {
    CmRepr {
        kind: CmKind::Request,
        flags: 0,
        path_count,
        src_conn: CONN,
        dst_conn: 0,
        initial_fsn: 0,
        mtu: 4096,
        tag_count: 1,
        rate_mbps: 0,
        tag_modes: 0,
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn out_of_order_write_is_placed_and_completes_once() {
    let mut fp = nic();
    let mut mem = Memory::new();
    let data = pattern(3000, 1);
    let pkts = [
        Pkt::write(INITIAL_FSN, 0, 3000, data[..1024].to_vec()),
        Pkt::write(
            fsn_add(INITIAL_FSN, 1),
            1024,
            3000,
            data[1024..2048].to_vec(),
        ),
        Pkt::write(fsn_add(INITIAL_FSN, 2), 2048, 3000, data[2048..].to_vec()),
    ];
    for i in [2, 0] {
        assert!(fp.receive(&pkts[i].frame(), &mut mem).placed());
    }
    assert!(
        completions(&events(&mut fp)).is_empty(),
        "no completion before the last byte"
    );
    assert!(fp.receive(&pkts[1].frame(), &mut mem).placed());
    assert_eq!(
        completions(&events(&mut fp)),
        vec![(0, 0, CompletionStatus::Success)]
    );
    assert_eq!(mem.slice(REGION_BASE, 3000), &data[..]);
    // A duplicate changes nothing and completes nothing.
    assert_eq!(
        fp.receive(&pkts[1].frame(), &mut mem).0,
        Counter::RxDuplicate
    );
    assert!(events(&mut fp).is_empty());
    assert_eq!(mem.writes.len(), 3);
    assert_eq!(fp.counter(Counter::RxPlacedBytes), 3000);
}

#[test]
fn send_lands_in_the_posted_buffer_and_consumes_it() {
    let mut fp = nic();
    let mut mem = Memory::new();
    post_recv(&mut fp, 0, 0, RECV_BASE, RECV_LEN);
    let data = pattern(1500, 9);
    let p = Pkt::send(INITIAL_FSN, 0, 0, 1500, data.clone());
    assert!(fp.receive(&p.frame(), &mut mem).placed());
    assert_eq!(mem.slice(RECV_BASE, 1500), &data[..]);
    assert_eq!(
        completions(&events(&mut fp)),
        vec![(0, 0, CompletionStatus::Success)]
    );
    // The buffer is consumed: the next Send with the same SSN has nowhere to go.
    let again = Pkt {
        msn: 1,
        ..Pkt::send(fsn_add(INITIAL_FSN, 1), 0, 0, 10, vec![1; 10])
    };
    assert_eq!(
        fp.receive(&again.frame(), &mut mem).0,
        Counter::RxNoRecvBuffer
    );
}

#[test]
fn send_without_buffer_is_not_consumed_and_succeeds_once_posted() {
    let mut fp = nic();
    let mut mem = Memory::new();
    let p = Pkt {
        ack_req: true,
        ..Pkt::send(INITIAL_FSN, 0, 0, 100, pattern(100, 3))
    };
    assert_eq!(fp.receive(&p.frame(), &mut mem).0, Counter::RxNoRecvBuffer);
    let (acks, naks) = emitted(&mut fp);
    assert!(acks.is_empty());
    assert_eq!(naks, vec![(INITIAL_FSN, NakReason::ReceiverNotReady)]);
    assert!(mem.writes.is_empty());
    post_recv(&mut fp, 0, 0, RECV_BASE, RECV_LEN);
    assert!(
        fp.receive(&p.frame(), &mut mem).placed(),
        "the FSN was left missing, so the resend is new"
    );
    let (acks, _) = emitted(&mut fp);
    assert_eq!(acks[0].0, fsn_add(INITIAL_FSN, 1));
}

#[test]
fn protection_failures_write_nothing_and_complete_with_an_error() {
    let cases: Vec<(Pkt, Counter)> = vec![
        (
            Pkt {
                rkey: RKEY ^ 1,
                ..Pkt::write(INITIAL_FSN, 0, 64, vec![7; 64])
            },
            Counter::RxBadRkey,
        ),
        (
            Pkt {
                rkey: 0xffff_ff00,
                ..Pkt::write(INITIAL_FSN, 0, 64, vec![7; 64])
            },
            Counter::RxBadRkey,
        ),
        (
            Pkt {
                rkey: 3 << 8,
                ..Pkt::write(INITIAL_FSN, 0, 64, vec![7; 64])
            },
            Counter::RxBadRkey,
        ),
        (
            Pkt {
                rkey: RO_RKEY,
                va: RO_REGION_BASE,
                ..Pkt::write(INITIAL_FSN, 0, 64, vec![7; 64])
            },
            Counter::RxAccessDenied,
        ),
        (
            Pkt {
                va: REGION_BASE + REGION_LEN - 63,
                ..Pkt::write(INITIAL_FSN, 0, 64, vec![7; 64])
            },
            Counter::RxOutOfBounds,
        ),
        (
            Pkt {
                va: REGION_BASE - 1,
                ..Pkt::write(INITIAL_FSN, 0, 64, vec![7; 64])
            },
            Counter::RxOutOfBounds,
        ),
        (
            Pkt {
                va: u64::MAX - 10,
                ..Pkt::write(INITIAL_FSN, 0, 64, vec![7; 64])
            },
            Counter::RxOutOfBounds,
        ),
    ];
    for (p, counter) in cases {
        let mut fp = nic();
        let mut mem = Memory::new();
        assert_eq!(fp.receive(&p.frame(), &mut mem).0, counter, "{p:?}");
        assert!(mem.writes.is_empty(), "{p:?} wrote memory");
        let (acks, naks) = emitted(&mut fp);
        assert_eq!(naks, vec![(INITIAL_FSN, NakReason::RemoteAccess)]);
        // Consumed: a terminal error must not leave a permanent hole in the flow.
        let cum = acks.last().map(|a| a.0);
        assert!(cum.is_none() || cum == Some(fsn_add(INITIAL_FSN, 1)));
        assert_eq!(
            completions(&events(&mut fp)),
            vec![(0, 0, CompletionStatus::RemoteAccessError)],
            "{p:?}"
        );
        assert_eq!(fp.counter(counter), 1);
    }
}

#[test]
fn oversized_send_writes_nothing_beyond_the_buffer() {
    let mut fp = nic();
    let mut mem = Memory::new();
    post_recv(&mut fp, 1, 0, RECV_BASE, 100);
    let first = Pkt {
        tag: 1,
        ..Pkt::send(INITIAL_FSN, 0, 0, 200, vec![5; 100])
    };
    let second = Pkt {
        tag: 1,
        flow: 1,
        ..Pkt::send(INITIAL_FSN, 0, 100, 200, vec![6; 100])
    };
    assert!(
        fp.receive(&first.frame(), &mut mem).placed(),
        "the part that fits is placed"
    );
    assert_eq!(
        fp.receive(&second.frame(), &mut mem).0,
        Counter::RxOutOfBounds
    );
    assert_eq!(mem.writes, vec![(RECV_BASE, 100)]);
    assert_eq!(
        completions(&events(&mut fp)),
        vec![(1, 0, CompletionStatus::LengthError)]
    );
}

#[test]
fn contradictory_packets_are_refused_as_invalid_requests() {
    let bad = [
        Pkt {
            tag: TAGS,
            ..Pkt::write(INITIAL_FSN, 0, 64, vec![1; 64])
        },
        Pkt::write(INITIAL_FSN, 32, 64, vec![1; 64]),
    ];
    for p in bad {
        let mut fp = nic();
        let mut mem = Memory::new();
        assert_eq!(
            fp.receive(&p.frame(), &mut mem).0,
            Counter::RxInvalidRequest
        );
        assert!(mem.writes.is_empty());
        assert_eq!(
            emitted(&mut fp).1,
            vec![(INITIAL_FSN, NakReason::InvalidRequest)]
        );
    }
    // A second packet claiming another length for the same message.
    let mut fp = nic();
    let mut mem = Memory::new();
    assert!(
        fp.receive(
            &Pkt::write(INITIAL_FSN, 0, 128, vec![1; 64]).frame(),
            &mut mem
        )
        .placed()
    );
    let liar = Pkt {
        flow: 1,
        ..Pkt::write(INITIAL_FSN, 64, 100, vec![2; 36])
    };
    assert_eq!(
        fp.receive(&liar.frame(), &mut mem).0,
        Counter::RxInvalidRequest
    );
    assert_eq!(mem.writes.len(), 1);
}

#[test]
fn frames_for_other_connections_flows_or_hosts_are_dropped() {
    let mut fp = nic();
    let mut mem = Memory::new();
    let p = Pkt::write(INITIAL_FSN, 0, 64, vec![1; 64]);
    let original = p.frame();
    // Rebuild with another destination connection by patching the BTH and re-emitting.
    let parsed = parse_frame(&original, 4791).unwrap();
    let mut repr = FrameRepr {
        bth: BthRepr {
            dest_conn: 77,
            ..parsed.bth
        },
        ..parsed.repr()
    };
    let other_conn = repr.emit();
    assert_eq!(
        fp.receive(&other_conn, &mut mem).0,
        Counter::RxUnknownConnection
    );
    repr.bth.dest_conn = CONN;
    if let IpRepr::V4(v4) = &mut repr.ip {
        v4.src = Ipv4Addr::new(10, 0, 0, 66);
    }
    assert_eq!(
        fp.receive(&repr.emit(), &mut mem).0,
        Counter::RxAddressMismatch
    );
    let bad_flow = Pkt {
        flow: FLOWS,
        ..p.clone()
    };
    assert_eq!(
        fp.receive(&bad_flow.frame(), &mut mem).0,
        Counter::RxBadFlow
    );
    let mut bad_icrc = p.frame();
    let n = bad_icrc.len();
    bad_icrc[n - 10] ^= 1;
    assert_eq!(fp.receive(&bad_icrc, &mut mem).0, Counter::RxBadIcrc);
    assert!(mem.writes.is_empty());
    fp.write_reg(regs::CONTROL, 0);
    assert_eq!(fp.receive(&p.frame(), &mut mem).0, Counter::RxDisabled);
    assert_eq!(fp.counter(Counter::RxFrames), 5);
}

#[test]
fn out_of_window_is_nacked_and_not_consumed() {
    let mut fp = nic();
    let mut mem = Memory::new();
    let far = Pkt::write(fsn_add(INITIAL_FSN, 257), 0, 64, vec![1; 64]);
    assert_eq!(fp.receive(&far.frame(), &mut mem).0, Counter::RxOutOfWindow);
    assert_eq!(
        emitted(&mut fp).1,
        vec![(fsn_add(INITIAL_FSN, 257), NakReason::OutOfWindow)]
    );
    let edge = Pkt::write(fsn_add(INITIAL_FSN, 256), 0, 64, vec![1; 64]);
    assert!(fp.receive(&edge.frame(), &mut mem).placed());
}

#[test]
fn ack_policy_coalesces_and_reports_gaps_ce_and_ackreq_at_once() {
    let mut fp = nic();
    let mut mem = Memory::new();
    let msg_len = 64 * 20;
    let pkt = |i: u32| Pkt::write(fsn_add(INITIAL_FSN, i), 64 * i, msg_len, vec![i as u8; 64]);
    // In order: one ACK per four packets (the default coalescing).
    for i in 0..8 {
        fp.receive(&pkt(i).frame(), &mut mem);
    }
    let (acks, _) = emitted(&mut fp);
    assert_eq!(
        acks.iter().map(|a| a.0).collect::<Vec<_>>(),
        vec![fsn_add(INITIAL_FSN, 4), fsn_add(INITIAL_FSN, 8)]
    );
    let a = acks[1].1;
    assert_eq!(a.rate_hint_mbps, 12_345);
    assert_eq!(a.ts_echo, 0xabcd_0000 | fsn_add(INITIAL_FSN, 7) & 0xffff);
    assert!(!a.ecn_echo);
    // A gap (FSN +8 missing) is reported by the first packet past it, once.
    fp.receive(&pkt(9).frame(), &mut mem);
    let (acks, _) = emitted(&mut fp);
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].0, fsn_add(INITIAL_FSN, 8));
    assert!(acks[0].1.sacked(0) && !acks[0].1.sacked(1));
    fp.receive(&pkt(10).frame(), &mut mem);
    assert!(
        emitted(&mut fp).0.is_empty(),
        "no new gap, no immediate ACK"
    );
    // CE: immediate ACK with ECN-echo.
    fp.receive(
        &Pkt {
            ecn: ECN_CE,
            ..pkt(11)
        }
        .frame(),
        &mut mem,
    );
    let (acks, _) = emitted(&mut fp);
    assert_eq!(acks.len(), 1);
    assert!(acks[0].1.ecn_echo);
    assert_eq!(acks[0].1.ce_count, 1);
    assert!(acks[0].1.sacked(0) && acks[0].1.sacked(1) && acks[0].1.sacked(2));
    // AckReq: immediate; and filling the hole advances the cumulative FSN over the SACKed run.
    fp.receive(
        &Pkt {
            ack_req: true,
            ..pkt(8)
        }
        .frame(),
        &mut mem,
    );
    let (acks, _) = emitted(&mut fp);
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].0, fsn_add(INITIAL_FSN, 12));
    assert_eq!(acks[0].1.sack, [0; 32]);
    assert!(!acks[0].1.ecn_echo, "ECN-echo clears once reported");
}

#[test]
fn a_new_packet_of_a_completed_message_is_consumed_not_completed_again() {
    let mut fp = nic();
    let mut mem = Memory::new();
    assert!(
        fp.receive(
            &Pkt::write(INITIAL_FSN, 0, 64, vec![1; 64]).frame(),
            &mut mem
        )
        .placed()
    );
    assert_eq!(completions(&events(&mut fp)).len(), 1);
    // Same message resent under a new FSN (an application retry the transport should not do).
    let again = Pkt {
        flow: 1,
        ..Pkt::write(INITIAL_FSN, 0, 64, vec![9; 64])
    };
    assert_eq!(
        fp.receive(&again.frame(), &mut mem).0,
        Counter::RxStaleMessage
    );
    assert!(completions(&events(&mut fp)).is_empty());
    assert_eq!(mem.slice(REGION_BASE, 64), &[1; 64][..]);
}

#[test]
fn a_full_message_slot_asks_the_sender_to_retry() {
    let mut fp = nic();
    let mut mem = Memory::new();
    let slots = fp.sizes().msg_slots;
    let first = Pkt::write(INITIAL_FSN, 0, 128, vec![1; 64]);
    assert!(fp.receive(&first.frame(), &mut mem).placed());
    let clash = Pkt {
        msn: slots,
        flow: 1,
        ..Pkt::write(INITIAL_FSN, 0, 64, vec![1; 64])
    };
    assert_eq!(
        fp.receive(&clash.frame(), &mut mem).0,
        Counter::RxMsgSlotBusy
    );
    assert_eq!(
        emitted(&mut fp).1,
        vec![(INITIAL_FSN, NakReason::ReceiverNotReady)]
    );
}

#[test]
fn transmit_builds_the_described_frame_and_refuses_bad_descriptors() {
    let mut fp = nic();
    let mut mem = Memory::new();
    let payload = pattern(700, 4);
    mem.dma_write(RECV_BASE, &payload).unwrap();
    fp.set_time(0x1_2345_6789);
    let desc = TxDescriptor {
        opcode: Opcode::WriteImm as u8,
        flags: FLAG_ACK_REQ,
        flow: 3,
        conn: CONN,
        fsn: 0x12_3456,
        entropy: 61_000,
        tag: 1,
        msn: 5,
        ssn: 99,
        offset: 1000,
        msg_len: 1700,
        payload_len: 700,
        imm: 0xfeed,
        local_addr: RECV_BASE,
        remote_va: 0xdead_0000,
        rkey: 0x777,
        port: 0,
    };
    fp.transmit(&desc, &mut mem).unwrap();
    let frame = fp.pop_tx_frame().unwrap();
    let f = parse_frame(&frame, 4791).unwrap();
    assert_eq!(f.eth.src, mac(0xb));
    assert_eq!(f.eth.dst, mac(0xa));
    assert_eq!(f.udp.src_port, 61_000);
    assert_eq!(f.ip.ecn(), ECN_ECT0);
    assert_eq!(
        (f.bth.opcode, f.bth.dest_conn, f.bth.psn, f.bth.ack_req),
        (Opcode::WriteImm, PEER_CONN, 0x12_3456, true)
    );
    assert_eq!(f.payload, &payload[..]);
    let TransportRepr::Data(d) = f.transport else {
        panic!()
    };
    assert_eq!(
        (d.flow, d.tag, d.msn, d.ssn, d.offset, d.msg_len),
        (3, 1, 5, 0, 1000, 1700)
    );
    assert_eq!(d.timestamp, 0x2345_6789);
    assert_eq!(
        d.reth,
        Some(RethRepr {
            va: 0xdead_0000,
            rkey: 0x777
        })
    );
    assert_eq!(d.imm, Some(0xfeed));

    let bad = [
        (
            TxDescriptor {
                opcode: Opcode::Ack as u8,
                ..desc
            },
            TxErrorReason::BadOpcode,
        ),
        (
            TxDescriptor { conn: 9, ..desc },
            TxErrorReason::UnknownConnection,
        ),
        (
            TxDescriptor {
                flow: FLOWS,
                ..desc
            },
            TxErrorReason::BadFlow,
        ),
        (
            TxDescriptor {
                msg_len: 1699,
                ..desc
            },
            TxErrorReason::BadLength,
        ),
        (
            TxDescriptor {
                payload_len: 9000,
                msg_len: 20_000,
                ..desc
            },
            TxErrorReason::BadLength,
        ),
        (
            TxDescriptor {
                local_addr: 0x10,
                ..desc
            },
            TxErrorReason::DmaError,
        ),
        (TxDescriptor { port: 1, ..desc }, TxErrorReason::BadPort),
    ];
    for (d, reason) in bad {
        assert_eq!(fp.transmit(&d, &mut mem), Err(reason));
        assert!(fp.pop_tx_frame().is_none());
        assert!(matches!(events(&mut fp)[..], [Event::TxError { reason: r, .. }] if r == reason));
    }
    assert_eq!(fp.counter(Counter::TxBadDescriptor), 7);
}

#[test]
fn port_link_reports_each_port_phy_state_within_the_port_count() {
    let mut fp = nic_with(TableSizes {
        ports: 4,
        ..TableSizes::default()
    });
    assert_eq!(
        fp.read_reg(regs::PORT_LINK),
        0b1111,
        "all links up at first"
    );
    fp.set_link(2, false);
    fp.set_link(0, false);
    assert_eq!(fp.read_reg(regs::PORT_LINK), 0b1010);
    fp.set_link(2, true);
    assert_eq!(fp.read_reg(regs::PORT_LINK), 0b1110);
    // Ports the NIC does not have never read as up; numbers beyond any NIC are ignored.
    fp.set_link(5, true);
    fp.set_link(200, false);
    assert_eq!(fp.read_reg(regs::PORT_LINK), 0b1110);
    // Read-only.
    fp.write_reg(regs::PORT_LINK, 0);
    assert_eq!(fp.read_reg(regs::PORT_LINK), 0b1110);
}

#[test]
fn frames_leave_on_the_port_the_descriptor_or_their_data_names() {
    let mut fp = nic_with(TableSizes {
        ports: 4,
        ..TableSizes::default()
    });
    assert_eq!(fp.read_reg(regs::CAP_PORTS), 4);
    let mut mem = Memory::new();
    let msg_len = 64 * 8;
    let at = |i: u32| fsn_add(INITIAL_FSN, i);
    let pkt = |i: u32| Pkt::write(at(i), 64 * i, msg_len, vec![i as u8; 64]);

    // An ACK requested by a packet leaves on the port that packet came in on.
    fp.set_time(1_000);
    let asked = Pkt {
        ack_req: true,
        ..pkt(0)
    };
    assert!(fp.receive_on(2, &asked.frame(), &mut mem).placed());
    let f = fp.pop_port_frame().expect("an ACK");
    assert_eq!(f.port, 2);
    assert!(fp.pop_port_frame().is_none());

    // A NAK leaves on its packet's port; a timer ACK on the port of the flow's last packet.
    let far = Pkt::write(at(5000), 0, msg_len, vec![0; 64]);
    fp.receive_on(3, &far.frame(), &mut mem);
    assert_eq!(fp.pop_port_frame().map(|f| f.port), Some(3), "the NAK");
    assert!(fp.receive_on(1, &pkt(1).frame(), &mut mem).placed());
    assert!(fp.receive_on(3, &pkt(2).frame(), &mut mem).placed());
    fp.set_time(1_000_000);
    let f = fp.pop_port_frame().expect("a timer ACK");
    assert_eq!(f.port, 3);
    let p = parse_frame(&f.bytes, 4791).unwrap();
    assert_eq!(p.bth.psn, at(3));

    // A descriptor names its port; the CM event names the port its frame came in on.
    let cm = cm_request(4);
    mem.dma_write(RECV_BASE, &cm.to_bytes()).unwrap();
    let desc = TxDescriptor {
        opcode: Opcode::Cm as u8,
        conn: CONN,
        payload_len: cm.to_bytes().len() as u32,
        local_addr: RECV_BASE,
        port: 3,
        ..TxDescriptor::default()
    };
    fp.transmit(&desc, &mut mem).unwrap();
    let f = fp.pop_port_frame().unwrap();
    assert_eq!(f.port, 3);
    fp.receive_on(1, &f.bytes, &mut mem);
    assert!(matches!(events(&mut fp)[..], [Event::Cm { port: 1, msg, .. }] if msg == cm));
    assert_eq!(
        fp.transmit(&TxDescriptor { port: 4, ..desc }, &mut mem),
        Err(TxErrorReason::BadPort)
    );
}

#[test]
fn register_window_reads_back_tables_and_counters() {
    let mut fp = nic();
    assert_eq!(fp.read_reg(regs::ID), regs::ID_VALUE);
    let words = fp.read_table(TableId::Region, RKEY >> 8).unwrap();
    assert_eq!(RegionEntry::from_words(&words).base, REGION_BASE);
    let words = fp.read_table(TableId::Flow, 8).unwrap();
    assert_eq!(words[0], INITIAL_FSN);
    assert_eq!(
        fp.read_table(TableId::Region, 1 << 20),
        Err(regs::TABLE_STATUS_BAD_INDEX)
    );
    assert_eq!(
        fp.write_table(TableId::Connection, 100_000, &[]),
        regs::TABLE_STATUS_BAD_INDEX
    );
    fp.write_reg(regs::TABLE_CMD, 0x7f | regs::TABLE_OP_WRITE);
    assert_eq!(
        fp.read_reg(regs::TABLE_STATUS),
        regs::TABLE_STATUS_BAD_TABLE
    );
    let mut mem = Memory::new();
    fp.receive(&[0u8; 10], &mut mem);
    assert_eq!(fp.read_reg(regs::counter_offset(Counter::RxTruncated)), 1);
    fp.write_reg(regs::counter_offset(Counter::RxTruncated), 0);
    assert_eq!(fp.counter(Counter::RxTruncated), 0);
}

/// The ACK frames the NIC emitted: (UDP source port, cumulative FSN, ACK). NAKs are dropped.
fn ack_frames(fp: &mut FastPath) -> Vec<(u16, u32, AckRepr)> {
    let mut out = Vec::new();
    while let Some(f) = fp.pop_tx_frame() {
        let p = parse_frame(&f, 4791).expect("the NIC emits valid frames");
        if let TransportRepr::Ack(a) = p.transport {
            out.push((p.udp.src_port, p.bth.psn, a));
        }
    }
    out
}

#[test]
fn terminal_refusals_are_counted_in_every_ack_of_the_flow() {
    let mut fp = nic();
    let mut mem = Memory::new();
    let at = |i: u32| fsn_add(INITIAL_FSN, i);
    let good = |i: u32| Pkt {
        ack_req: true,
        msn: 10 + i,
        ..Pkt::write(at(i), 0, 64, vec![i as u8; 64])
    };
    // Refused for a bad rkey: NAK, consumed, and the ACK counts it.
    let bad = Pkt {
        rkey: RKEY ^ 1,
        ..good(0)
    };
    assert_eq!(fp.receive(&bad.frame(), &mut mem).0, Counter::RxBadRkey);
    let (acks, naks) = emitted(&mut fp);
    assert_eq!(naks, vec![(at(0), NakReason::RemoteAccess)]);
    assert_eq!(acks.len(), 1);
    assert_eq!((acks[0].0, acks[0].1.refused), (at(1), 1));
    // A placed packet: the count stays and is carried again.
    assert!(fp.receive(&good(1).frame(), &mut mem).placed());
    let (acks, _) = emitted(&mut fp);
    assert_eq!((acks[0].0, acks[0].1.refused), (at(2), 1));
    // "Receiver not ready" (no receive buffer) is not consumed and not counted.
    let rnr = Pkt {
        ack_req: true,
        msn: 30,
        ..Pkt::send(at(2), 0, 0, 64, vec![1; 64])
    };
    assert_eq!(
        fp.receive(&rnr.frame(), &mut mem).0,
        Counter::RxNoRecvBuffer
    );
    assert_eq!(
        emitted(&mut fp).1,
        vec![(at(2), NakReason::ReceiverNotReady)]
    );
    // Out of window: not counted.
    let far = Pkt {
        msn: 31,
        ..Pkt::write(at(2 + 257), 0, 64, vec![1; 64])
    };
    assert_eq!(fp.receive(&far.frame(), &mut mem).0, Counter::RxOutOfWindow);
    assert_eq!(emitted(&mut fp).1, vec![(at(259), NakReason::OutOfWindow)]);
    // A duplicate of the refused packet: acknowledged again, not counted again.
    assert_eq!(fp.receive(&bad.frame(), &mut mem).0, Counter::RxDuplicate);
    let (acks, naks) = emitted(&mut fp);
    assert!(naks.is_empty());
    assert_eq!((acks[0].0, acks[0].1.refused), (at(2), 1));
    // An invalid request (Tag beyond the connection's) is terminal: counted.
    let invalid = Pkt {
        tag: TAGS,
        ..good(2)
    };
    assert_eq!(
        fp.receive(&invalid.frame(), &mut mem).0,
        Counter::RxInvalidRequest
    );
    let (acks, naks) = emitted(&mut fp);
    assert_eq!(naks, vec![(at(2), NakReason::InvalidRequest)]);
    assert_eq!((acks[0].0, acks[0].1.refused), (at(3), 2));
    // Coalesced ACKs carry it too.
    for i in 3..7 {
        let p = Pkt {
            ack_req: false,
            ..good(i)
        };
        assert!(fp.receive(&p.frame(), &mut mem).placed());
    }
    let (acks, _) = emitted(&mut fp);
    assert_eq!(acks.len(), 1);
    assert_eq!((acks[0].0, acks[0].1.refused), (at(7), 2));
    // The count is per flow.
    let other = Pkt {
        flow: 1,
        msn: 50,
        ..good(0)
    };
    assert!(fp.receive(&other.frame(), &mut mem).placed());
    assert_eq!(emitted(&mut fp).0[0].1.refused, 0);
    // Re-initialising the flow clears it.
    let init = FlowInit { cum_fsn: at(7) }.to_words();
    assert_eq!(
        fp.write_table(TableId::Flow, 8, &init),
        regs::TABLE_STATUS_OK
    );
    assert!(fp.receive(&good(7).frame(), &mut mem).placed());
    assert_eq!(emitted(&mut fp).0[0].1.refused, 0);
}

#[test]
fn ack_refusal_count_reaches_the_host_in_the_ack_event() {
    let mut fp = nic();
    let mut mem = Memory::new();
    let ack = AckRepr {
        flow: 2,
        ecn_echo: false,
        ce_count: 0,
        refused: 0xbeef,
        rate_hint_mbps: 0,
        ts_echo: 5,
        sack: [0; 32],
    };
    let frame = FrameRepr {
        eth: EthernetRepr {
            dst: mac(0xb),
            src: mac(0xa),
            vlan_tci: None,
            ethertype: 0,
        },
        ip: IpRepr::V4(Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            dscp: 0,
            ecn: ECN_ECT0,
            ttl: 64,
            ident: 0,
            payload_len: 0,
        }),
        src_port: 50_002,
        dst_port: 4791,
        bth: BthRepr {
            opcode: Opcode::Ack,
            solicited: false,
            dest_conn: CONN,
            ack_req: false,
            psn: 77,
        },
        transport: TransportRepr::Ack(ack),
        payload: &[],
    }
    .emit();
    assert_eq!(fp.receive(&frame, &mut mem).0, Counter::RxAcks);
    let evs = events(&mut fp);
    assert!(
        matches!(
            evs[..],
            [Event::Ack {
                flow: 2,
                cum_fsn: 77,
                refused: 0xbeef,
                ..
            }]
        ),
        "{evs:?}"
    );
}

#[test]
fn the_ack_timer_acknowledges_what_coalescing_holds_back() {
    let mut fp = nic();
    let mut mem = Memory::new();
    assert_eq!(fp.read_reg(regs::ACK_DELAY_NS), 10_000, "default");
    let at = |i: u32| fsn_add(INITIAL_FSN, i);
    let msg_len = 64 * 40;
    let pkt = |i: u32, port: u16| Pkt {
        entropy: Some(port),
        ..Pkt::write(at(i), 64 * i, msg_len, vec![i as u8; 64])
    };
    // Two packets, below ACK_COALESCE (4): no ACK until the oldest is 10 µs old.
    fp.set_time(1_000);
    assert!(fp.receive(&pkt(0, 40_000).frame(), &mut mem).placed());
    fp.set_time(5_000);
    assert!(fp.receive(&pkt(1, 40_001).frame(), &mut mem).placed());
    fp.set_time(10_999);
    assert!(ack_frames(&mut fp).is_empty(), "not before ACK_DELAY_NS");
    fp.set_time(11_000);
    let acks = ack_frames(&mut fp);
    assert_eq!(acks.len(), 1, "once ACK_DELAY_NS has passed");
    let (port, cum, a) = acks[0];
    assert_eq!(cum, at(2));
    assert_eq!(port, 40_001, "the entropy of the flow's last data packet");
    assert_eq!(a.ts_echo, 0xabcd_0000 | at(1) & 0xffff, "its timestamp");
    fp.set_time(50_000);
    assert!(
        ack_frames(&mut fp).is_empty(),
        "one timer ACK per pending batch"
    );

    // A batch acknowledged by coalescing cancels its timer; a packet after that ACK re-arms it
    // from its own arrival.
    fp.set_time(100_000);
    for i in 2..6 {
        assert!(fp.receive(&pkt(i, 40_002).frame(), &mut mem).placed());
    }
    assert_eq!(ack_frames(&mut fp).len(), 1, "coalesced ACK at the 4th");
    fp.set_time(105_000);
    assert!(fp.receive(&pkt(6, 40_003).frame(), &mut mem).placed());
    fp.set_time(110_000);
    assert!(
        ack_frames(&mut fp).is_empty(),
        "the cancelled timer stays quiet"
    );
    fp.set_time(114_999);
    assert!(ack_frames(&mut fp).is_empty());
    fp.set_time(115_000);
    let acks = ack_frames(&mut fp);
    assert_eq!(acks.len(), 1);
    assert_eq!((acks[0].0, acks[0].1), (40_003, at(7)));

    // Flows time out independently; each ACK leaves on its own flow's entropy.
    fp.set_time(200_000);
    let on = |flow: u16, port: u16| Pkt {
        flow,
        msn: 5 + flow as u32,
        entropy: Some(port),
        ..Pkt::write(INITIAL_FSN, 0, 128, vec![1; 64])
    };
    assert!(fp.receive(&on(1, 41_001).frame(), &mut mem).placed());
    fp.set_time(203_000);
    assert!(fp.receive(&on(2, 41_002).frame(), &mut mem).placed());
    fp.set_time(210_000);
    let acks = ack_frames(&mut fp);
    assert_eq!(
        acks.iter().map(|a| (a.0, a.2.flow)).collect::<Vec<_>>(),
        vec![(41_001, 1)]
    );
    fp.set_time(213_000);
    let acks = ack_frames(&mut fp);
    assert_eq!(
        acks.iter().map(|a| (a.0, a.2.flow)).collect::<Vec<_>>(),
        vec![(41_002, 2)]
    );
}

#[test]
fn ack_delay_zero_disables_the_timer() {
    let mut fp = nic();
    let mut mem = Memory::new();
    fp.write_reg(regs::ACK_DELAY_NS, 0);
    assert_eq!(fp.read_reg(regs::ACK_DELAY_NS), 0);
    fp.set_time(1_000);
    let p = Pkt::write(INITIAL_FSN, 0, 128, vec![1; 64]);
    assert!(fp.receive(&p.frame(), &mut mem).placed());
    fp.set_time(1_000_000_000);
    assert!(ack_frames(&mut fp).is_empty());
    // Switching the timer on applies to the next batch.
    fp.write_reg(regs::ACK_DELAY_NS, 500);
    let p2 = Pkt {
        flow: 1,
        ..Pkt::write(INITIAL_FSN, 64, 128, vec![2; 64])
    };
    assert!(fp.receive(&p2.frame(), &mut mem).placed());
    fp.set_time(1_000_000_499);
    assert!(ack_frames(&mut fp).is_empty());
    fp.set_time(1_000_000_500);
    assert_eq!(ack_frames(&mut fp).len(), 1);
}

/// Delivers a message's packets through a lossy, reordering, duplicating channel, resending
/// whatever the ACKs do not cover, until the NIC has acknowledged everything.
fn deliver_with_retransmission(
    fp: &mut FastPath,
    mem: &mut Memory,
    pkts: &[Pkt],
    schedule: &[(u16, bool, bool)],
) {
    let mut unacked: Vec<bool> = vec![true; pkts.len()];
    let mut coin = schedule.iter().cycle();
    for round in 0..64 {
        let mut order: Vec<usize> = (0..pkts.len()).filter(|&i| unacked[i]).collect();
        if order.is_empty() {
            return;
        }
        // Shuffle deterministically from the schedule, drop some, duplicate some.
        for i in (1..order.len()).rev() {
            let (r, _, _) = coin.next().unwrap();
            order.swap(i, *r as usize % (i + 1));
        }
        let last = *order.last().unwrap();
        for &i in &order {
            let (_, lose, dup) = *coin.next().unwrap();
            let p = Pkt {
                ack_req: i == last,
                ..pkts[i].clone()
            };
            // The channel loses packets for a while, then heals (or nothing could arrive).
            if lose && round < 8 {
                continue;
            }
            fp.receive(&p.frame(), mem);
            if dup {
                fp.receive(&p.frame(), mem);
            }
        }
        let (acks, naks) = emitted(fp);
        assert!(naks.is_empty(), "no NAK expected: {naks:?}");
        for (cum, a) in acks {
            for (i, p) in pkts.iter().enumerate() {
                if p.flow != a.flow {
                    continue;
                }
                let d = ferroce_proto::wire::fsn_diff(p.fsn, cum);
                if d < 0 || (d > 0 && a.sacked(d as usize - 1)) {
                    unacked[i] = false;
                }
            }
        }
    }
    panic!("not delivered after 64 rounds");
}

/// Cases per property: 64 by default, `PROPTEST_CASES` for the long mode.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Any loss, reordering and duplication of two interleaved multi-packet messages (a Write
    /// and a Send on different Tags, sprayed over four flows) ends with memory equal to the
    /// source and exactly one completion per message.
    #[test]
    fn any_delivery_pattern_places_every_byte_once(
        write_len in 1u32..6000,
        send_len in 0u32..4000,
        mtu in prop::sample::select(vec![256u32, 1000, 1024]),
        schedule in prop::collection::vec((any::<u16>(), prop::bool::weighted(0.2), prop::bool::weighted(0.1)), 1..200),
    ) {
        let mut fp = nic();
        let mut mem = Memory::new();
        post_recv(&mut fp, 1, 0, RECV_BASE, RECV_LEN);
        let wdata = pattern(write_len as usize, 11);
        let sdata = pattern(send_len as usize, 22);
        let mut next_fsn = [INITIAL_FSN; FLOWS as usize];
        let mut pkts = Vec::new();
        let mut flow = 0usize;
        let mut seg = |len: u32, mk: &dyn Fn(u32, u32, u32, Vec<u8>) -> Pkt, data: &[u8], pkts: &mut Vec<Pkt>| {
            let mut off = 0;
            loop {
                let n = (len - off).min(mtu);
                let p = mk(next_fsn[flow], off, len, data[off as usize..(off + n) as usize].to_vec());
                pkts.push(Pkt { flow: flow as u16, ..p });
                next_fsn[flow] = fsn_add(next_fsn[flow], 1);
                flow = (flow + 1) % FLOWS as usize;
                off += n;
                if off >= len { break; }
            }
        };
        seg(write_len, &|f, o, l, d| Pkt::write(f, o, l, d), &wdata, &mut pkts);
        seg(send_len, &|f, o, l, d| Pkt { tag: 1, ..Pkt::send(f, 0, o, l, d) }, &sdata, &mut pkts);
        deliver_with_retransmission(&mut fp, &mut mem, &pkts, &schedule);
        prop_assert_eq!(mem.slice(REGION_BASE, write_len as usize), &wdata[..]);
        prop_assert_eq!(mem.slice(RECV_BASE, send_len as usize), &sdata[..]);
        let mut c = completions(&events(&mut fp));
        c.sort_by_key(|x| x.0);
        prop_assert_eq!(c, vec![(0, 0, CompletionStatus::Success), (1, 0, CompletionStatus::Success)]);
        for &(addr, len) in &mem.writes {
            let in_region = addr >= REGION_BASE && addr + len as u64 <= REGION_BASE + REGION_LEN;
            let in_recv = addr >= RECV_BASE && addr + len as u64 <= RECV_BASE + RECV_LEN as u64;
            prop_assert!(in_region || in_recv);
        }
    }

    /// Arbitrary bytes never panic, never write, and are counted as exactly one drop.
    #[test]
    fn arbitrary_bytes_write_nothing(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut fp = nic();
        let mut mem = Memory::new();
        let v = fp.receive(&bytes, &mut mem);
        prop_assert!(!v.placed());
        prop_assert!(mem.writes.is_empty());
        prop_assert_eq!(fp.counter(v.0), 1);
    }

    /// Corrupted valid frames (any byte, any value, any truncation) never write outside the
    /// registered region.
    #[test]
    fn corrupted_frames_never_write_outside_regions(
        at in any::<prop::sample::Index>(),
        value in any::<u8>(),
        cut in any::<prop::sample::Index>(),
        va_off in 0u64..0x20000,
        len in 0usize..200,
    ) {
        let mut fp = nic();
        let mut mem = Memory::new();
        let p = Pkt { va: REGION_BASE - 0x8000 + va_off, ..Pkt::write(INITIAL_FSN, 0, len as u32, vec![0xee; len]) };
        let mut frame = p.frame();
        let i = at.index(frame.len());
        frame[i] = value;
        let keep = frame.len() - cut.index(frame.len() / 4 + 1);
        frame.truncate(keep);
        fp.receive(&frame, &mut mem);
        for &(addr, n) in &mem.writes {
            prop_assert!(addr >= REGION_BASE && addr + n as u64 <= REGION_BASE + REGION_LEN);
        }
    }

    /// A split frame is received as its bytes are: the same verdicts, memory, events, ACKs,
    /// NAKs and counters, over sequences of data packets of every kind (placed, duplicate,
    /// out of window, refused, out of bounds, bad keys and flows) with one header byte or the
    /// opcode sometimes changed.
    #[test]
    fn a_split_frame_is_received_as_its_bytes_are(
        pkts in prop::collection::vec(
            (
                (
                    prop::sample::select(vec![Opcode::Send, Opcode::SendImm, Opcode::Write, Opcode::WriteImm]),
                    0u16..FLOWS + 1,
                    0u32..40,
                    0u16..TAGS + 1,
                    0u32..3,
                    0u32..2,
                ),
                (
                    0u32..3000,
                    0usize..1500,
                    0u32..200,
                    0u64..0x12000,
                    prop::sample::select(vec![RKEY, RO_RKEY, 0x999]),
                    any::<bool>(),
                    prop::bool::weighted(0.2),
                ),
                prop::option::weighted(0.2, (any::<prop::sample::Index>(), 1u8..=255)),
                prop::option::weighted(
                    0.2,
                    prop::sample::select(vec![Opcode::Send, Opcode::SendImm, Opcode::Write, Opcode::WriteImm]),
                ),
            ),
            1..40,
        ),
    ) {
        let (mut fa, mut fb) = (nic(), nic());
        let (mut ma, mut mb) = (Memory::new(), Memory::new());
        for fp in [&mut fa, &mut fb] {
            post_recv(fp, 0, 0, RECV_BASE, RECV_LEN);
            post_recv(fp, 1, 1, RECV_BASE + 0x2000, RECV_LEN);
        }
        let mut scratch_pattern = 0u8;
        for ((opcode, flow, fsn, tag, msn, ssn), (offset, len, extra, va, rkey, ack_req, ce), change, retype) in pkts {
            scratch_pattern = scratch_pattern.wrapping_add(1);
            let p = Pkt {
                opcode,
                flow,
                fsn: fsn_add(INITIAL_FSN, fsn),
                tag,
                msn,
                ssn,
                offset,
                msg_len: offset + len as u32 + extra,
                va: REGION_BASE - 0x1000 + va,
                rkey,
                ack_req,
                ecn: if ce { ECN_CE } else { ECN_ECT0 },
                entropy: None,
                payload: pattern(len, scratch_pattern),
            };
            let mut split = SplitFrame::emit(&p.repr(), SharedBytes::from_vec(p.payload.clone())).unwrap();
            if let Some((at, xor)) = change {
                let head = split.head_mut();
                let at = at.index(head.len());
                head[at] ^= xor;
            }
            if let Some(op) = retype {
                // Another data opcode: other transport headers, so the payload starts
                // elsewhere (the BTH opcode follows Ethernet, IPv4 and UDP).
                split.head_mut()[14 + 20 + 8] = op as u8;
            }
            let va = fa.receive(&split.to_bytes(), &mut ma);
            let vb = fb.receive_split(0, &split, &mut mb);
            prop_assert_eq!(va, vb);
        }
        prop_assert!(ma.bytes == mb.bytes);
        prop_assert_eq!(ma.writes, mb.writes);
        prop_assert_eq!(events(&mut fa), events(&mut fb));
        let frames = |fp: &mut FastPath| std::iter::from_fn(|| fp.pop_port_frame()).collect::<Vec<_>>();
        prop_assert_eq!(frames(&mut fa), frames(&mut fb));
        prop_assert!(fa.counters().eq(fb.counters()));
    }

    /// A payload the memory shares goes out by reference, in the frame the copy would have
    /// built (and stays what it was when sent, whatever the host writes afterwards); the
    /// descriptor checks and their errors are the same.
    #[test]
    fn a_shared_payload_is_sent_as_a_copied_one(
        descs in prop::collection::vec(
            (
                prop::sample::select(vec![Opcode::Send, Opcode::Write, Opcode::WriteImm, Opcode::Cm, Opcode::Ack]),
                0u16..FLOWS + 1,
                0u32..5000,
                0u64..0x42000,
                prop::sample::select(vec![CONN, 9]),
                0u8..2,
            ),
            1..30,
        ),
    ) {
        let (mut fa, mut fb) = (nic(), nic());
        let (mut ma, mut mb) = (Memory::new(), SharingMemory::new());
        let cm = cm_request(1);
        for (i, (opcode, flow, len, addr, conn, port)) in descs.into_iter().enumerate() {
            // The host changes its memory between sends: a frame sent before keeps its bytes.
            let (data_at, data) = (MEM_BASE + (i as u64 * 0x1000) % 0x3f000, pattern(0x1000, i as u8));
            ma.dma_write(data_at, &data).unwrap();
            mb.dma_write(data_at, &data).unwrap();
            let len = if opcode == Opcode::Cm { cm.to_bytes().len() as u32 } else { len };
            if opcode == Opcode::Cm {
                ma.dma_write(MEM_BASE + addr % 0x3f000, &cm.to_bytes()).unwrap();
                mb.dma_write(MEM_BASE + addr % 0x3f000, &cm.to_bytes()).unwrap();
            }
            let desc = TxDescriptor {
                opcode: opcode as u8,
                flow,
                conn,
                fsn: i as u32,
                msg_len: len + 10,
                offset: 10,
                payload_len: len,
                local_addr: MEM_BASE - 0x1000 + addr,
                port,
                ..TxDescriptor::default()
            };
            prop_assert_eq!(fa.transmit(&desc, &mut ma), fb.transmit(&desc, &mut mb));
        }
        // Whatever the host writes now, the frames sent keep what they were sent with.
        mb.dma_write(MEM_BASE, &vec![0xee; MEM_LEN]).unwrap();
        while let Some(a) = fa.pop_port_frame() {
            let b = fb.pop_port_frame_buf().unwrap();
            let shared = matches!(b.frame, FrameBuf::Split(_));
            prop_assert_eq!(a.port, b.port);
            let payload = parse_frame(&a.bytes, 4791).unwrap().payload.len();
            // Data with a payload goes by reference, everything else whole.
            prop_assert_eq!(shared, payload > 0);
            prop_assert_eq!(a.bytes, b.frame.into_bytes());
        }
        prop_assert!(fb.pop_port_frame_buf().is_none());
        prop_assert!(fa.counters().eq(fb.counters()));
        prop_assert_eq!(events(&mut fa), events(&mut fb));
    }
}
