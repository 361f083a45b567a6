//! Wire-format tests of `ferroce_proto::wire` from the outside:
//!
//! - hand-written byte vectors for every packet type (IPv4, IPv6, 802.1Q), written field by
//!   field from the layout in `proto/src/wire/`: `emit` must produce them and `parse_frame`
//!   must read them back. Only the IPv4 header checksums and the ICRCs were not written by
//!   hand: they were computed by an independent implementation (Python for the RFC 1071 sum,
//!   Scapy's `scapy.contrib.roce.BTH.compute_icrc` for the ICRC);
//! - the frame sizes documented in `docs/wire-format.md`;
//! - property tests: `parse_frame(emit(x))` gives back `x` for arbitrary frames of every packet
//!   type over IPv4, IPv6 and 802.1Q; arbitrary bytes, truncations and single-byte corruptions
//!   never panic, and a corruption is accepted only where the format says it cannot be seen.

use core::net::{Ipv4Addr, Ipv6Addr};
use ferroce_proto::wire::{
    AckRepr, BthRepr, CmKind, CmRepr, DataRepr, EthernetAddress, EthernetRepr, FrameRepr, IpRepr,
    Ipv4Repr, Ipv6Repr, NakReason, NakRepr, Opcode, ParseError, ROCEV2_UDP_PORT, RethRepr,
    SACK_BITS, TagPageError, TransportRepr, UdpRepr, ethernet, parse_frame, transport,
};
use ferroce_proto::wire::{FrameBuf, SharedBytes, SplitFrame};
use ferroce_proto::wire::{IcrcCheck, MAX_FRAME_LEN, parse_frame_checking};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const DST_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x02]);
const SRC_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x01]);

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn eth(vlan_tci: Option<u16>) -> EthernetRepr {
    // The EtherType is derived from the IP header on emit.
    EthernetRepr {
        dst: DST_MAC,
        src: SRC_MAC,
        vlan_tci,
        ethertype: 0,
    }
}

fn ipv4(src: [u8; 4], dst: [u8; 4], dscp: u8, ecn: u8, ident: u16) -> IpRepr {
    IpRepr::V4(Ipv4Repr {
        src: Ipv4Addr::from(src),
        dst: Ipv4Addr::from(dst),
        dscp,
        ecn,
        ttl: 64,
        ident,
        payload_len: 0, // derived on emit
    })
}

fn ipv6(dscp: u8, ecn: u8, flow_label: u32, hop_limit: u8) -> IpRepr {
    IpRepr::V6(Ipv6Repr {
        src: "fd00::1".parse().unwrap(),
        dst: "fd00::2".parse().unwrap(),
        dscp,
        ecn,
        flow_label,
        hop_limit,
        payload_len: 0, // derived on emit
    })
}

fn bth(opcode: Opcode, solicited: bool, dest_conn: u32, ack_req: bool, psn: u32) -> BthRepr {
    BthRepr {
        opcode,
        solicited,
        dest_conn,
        ack_req,
        psn,
    }
}

/// Checks that `repr` emits exactly `expected` and that `parse_frame` reads every field back.
fn check_literal(name: &str, repr: &FrameRepr<'_>, expected: &[u8]) {
    let emitted = repr.emit();
    assert_eq!(emitted.len(), repr.frame_len(), "{name}: frame_len");
    if emitted != expected {
        let first = emitted.iter().zip(expected).position(|(a, b)| a != b);
        panic!(
            "{name}: emitted bytes differ (lengths {} vs {}, first difference at {first:?})\n\
             emitted:  {emitted:02x?}\nexpected: {expected:02x?}",
            emitted.len(),
            expected.len()
        );
    }
    let f = parse_frame(expected, ROCEV2_UDP_PORT).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    assert_round_trip(name, repr, &f);
}

/// Compares a parsed frame with the repr it was emitted from: every field of the repr, plus the
/// lengths and EtherType that `emit` derives.
fn assert_round_trip(name: &str, repr: &FrameRepr<'_>, f: &ferroce_proto::wire::Frame<'_>) {
    let l4_len = 8 + 12 + repr.transport.header_len() + repr.payload.len() + 4;
    let mut ip = repr.ip;
    ip.set_payload_len(l4_len);
    let ethertype = match repr.ip {
        IpRepr::V4(_) => ethernet::ETHERTYPE_IPV4,
        IpRepr::V6(_) => ethernet::ETHERTYPE_IPV6,
    };
    assert_eq!(
        f.eth,
        EthernetRepr {
            ethertype,
            ..repr.eth
        },
        "{name}: Ethernet"
    );
    assert_eq!(f.ip, ip, "{name}: IP");
    let udp = UdpRepr {
        src_port: repr.src_port,
        dst_port: repr.dst_port,
        payload_len: l4_len - 8,
    };
    assert_eq!(f.udp, udp, "{name}: UDP");
    let bth = BthRepr {
        opcode: repr.transport.opcode(),
        ..repr.bth
    };
    assert_eq!(f.bth, bth, "{name}: BTH");
    assert_eq!(f.transport, repr.transport, "{name}: transport");
    assert_eq!(f.payload, repr.payload, "{name}: payload");
    assert_eq!(
        f.payload_offset,
        repr.frame_len() - 4 - repr.payload.len(),
        "{name}: offset"
    );
}

#[test]
fn literal_send_ipv4() {
    let payload = b"ferroce!";
    let repr = FrameRepr {
        eth: eth(None),
        ip: ipv4([10, 0, 0, 1], [10, 0, 0, 2], 26, 0b10, 0x1234),
        src_port: 0xc000,
        dst_port: ROCEV2_UDP_PORT,
        bth: bth(Opcode::Send, true, 0x1234, true, 0x100),
        transport: TransportRepr::Data(DataRepr {
            flow: 3,
            tag: 7,
            msn: 0x0102_0304,
            ssn: 5,
            offset: 0,
            msg_len: 8,
            timestamp: 0xdead_beef,
            reth: None,
            imm: None,
        }),
        payload,
    };
    #[rustfmt::skip]
    let expected = cat(&[
        // Ethernet: destination, source, EtherType IPv4.
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x02],
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
        &[0x08, 0x00],
        // IPv4: version 4 + IHL 5; TOS = DSCP 26 << 2 | ECT(0); total length 76.
        &[0x45, 0x6a, 0x00, 0x4c],
        // Identification 0x1234; flags DF, fragment offset 0.
        &[0x12, 0x34, 0x40, 0x00],
        // TTL 64, protocol UDP, header checksum.
        &[0x40, 0x11, 0x14, 0x01],
        &[10, 0, 0, 1],
        &[10, 0, 0, 2],
        // UDP: source port (entropy) 49152, destination 4791, length 56, checksum 0.
        &[0xc0, 0x00, 0x12, 0xb7, 0x00, 0x38, 0x00, 0x00],
        // BTH: opcode Send; SE set, MigReq 0, pad count 0, TVer 0; P_Key 0xFFFF.
        &[0xc0, 0x80, 0xff, 0xff],
        // FECN/BECN/reserved 0; DestQP = connection id 0x001234.
        &[0x00, 0x00, 0x12, 0x34],
        // AckReq set; PSN = FSN 0x000100.
        &[0x80, 0x00, 0x01, 0x00],
        // FDH: flow 3, tag 7.
        &[0x00, 0x03, 0x00, 0x07],
        // MSN 0x01020304.
        &[0x01, 0x02, 0x03, 0x04],
        // SSN 5.
        &[0x00, 0x00, 0x00, 0x05],
        // Offset 0.
        &[0x00, 0x00, 0x00, 0x00],
        // Message length 8.
        &[0x00, 0x00, 0x00, 0x08],
        // Timestamp 0xdeadbeef.
        &[0xde, 0xad, 0xbe, 0xef],
        // Payload "ferroce!".
        b"ferroce!",
        // ICRC, least significant byte first.
        &[0x5e, 0xf4, 0x5a, 0xb8],
    ]);
    check_literal("send/ipv4", &repr, &expected);
}

#[test]
fn literal_send_imm_ipv4() {
    let payload = [0xaa, 0xbb, 0xcc];
    let repr = FrameRepr {
        eth: eth(None),
        ip: ipv4([10, 0, 0, 1], [10, 0, 0, 2], 26, 0b10, 0x1235),
        src_port: 0xc001,
        dst_port: ROCEV2_UDP_PORT,
        bth: bth(Opcode::SendImm, false, 0x1234, false, 0x101),
        transport: TransportRepr::Data(DataRepr {
            flow: 3,
            tag: 7,
            msn: 0x0102_0305,
            ssn: 6,
            offset: 0,
            msg_len: 3,
            timestamp: 1,
            reth: None,
            imm: Some(0xcafe_f00d),
        }),
        payload: &payload,
    };
    #[rustfmt::skip]
    let expected = cat(&[
        // Ethernet.
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x02],
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
        &[0x08, 0x00],
        // IPv4: total length 75, identification 0x1235, DF, TTL 64, UDP, checksum.
        &[0x45, 0x6a, 0x00, 0x4b],
        &[0x12, 0x35, 0x40, 0x00],
        &[0x40, 0x11, 0x14, 0x01],
        &[10, 0, 0, 1],
        &[10, 0, 0, 2],
        // UDP: 49153 -> 4791, length 55, checksum 0.
        &[0xc0, 0x01, 0x12, 0xb7, 0x00, 0x37, 0x00, 0x00],
        // BTH: SendImm, no flags, P_Key; connection 0x1234; no AckReq, FSN 0x101.
        &[0xc1, 0x00, 0xff, 0xff],
        &[0x00, 0x00, 0x12, 0x34],
        &[0x00, 0x00, 0x01, 0x01],
        // FDH: flow 3, tag 7, MSN 0x01020305, SSN 6, offset 0, length 3, timestamp 1.
        &[0x00, 0x03, 0x00, 0x07],
        &[0x01, 0x02, 0x03, 0x05],
        &[0x00, 0x00, 0x00, 0x06],
        &[0x00, 0x00, 0x00, 0x00],
        &[0x00, 0x00, 0x00, 0x03],
        &[0x00, 0x00, 0x00, 0x01],
        // Immediate data (after the FDH; no RETH for Sends).
        &[0xca, 0xfe, 0xf0, 0x0d],
        // Payload.
        &[0xaa, 0xbb, 0xcc],
        // ICRC.
        &[0x58, 0x31, 0x88, 0x22],
    ]);
    check_literal("send_imm/ipv4", &repr, &expected);
}

#[test]
fn literal_write_ipv4() {
    let payload = [1, 2, 3, 4];
    let repr = FrameRepr {
        eth: eth(None),
        ip: ipv4([10, 0, 0, 1], [10, 0, 0, 2], 26, 0b10, 0x1236),
        src_port: 0xc002,
        dst_port: ROCEV2_UDP_PORT,
        bth: bth(Opcode::Write, false, 0x1234, true, 0x102),
        transport: TransportRepr::Data(DataRepr {
            flow: 1,
            tag: 2,
            msn: 9,
            ssn: 0,
            offset: 4096,
            msg_len: 8192,
            timestamp: 1_000_000,
            // The packet's own address: message base 0x7f00_1234_0000 + offset 4096.
            reth: Some(RethRepr {
                va: 0x7f00_1234_1000,
                rkey: 0x0bad_c0de,
            }),
            imm: None,
        }),
        payload: &payload,
    };
    #[rustfmt::skip]
    let expected = cat(&[
        // Ethernet.
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x02],
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
        &[0x08, 0x00],
        // IPv4: total length 84, identification 0x1236.
        &[0x45, 0x6a, 0x00, 0x54],
        &[0x12, 0x36, 0x40, 0x00],
        &[0x40, 0x11, 0x13, 0xf7],
        &[10, 0, 0, 1],
        &[10, 0, 0, 2],
        // UDP: 49154 -> 4791, length 64.
        &[0xc0, 0x02, 0x12, 0xb7, 0x00, 0x40, 0x00, 0x00],
        // BTH: Write; connection 0x1234; AckReq, FSN 0x102.
        &[0xc2, 0x00, 0xff, 0xff],
        &[0x00, 0x00, 0x12, 0x34],
        &[0x80, 0x00, 0x01, 0x02],
        // FDH: flow 1, tag 2, MSN 9, SSN 0, offset 4096, length 8192, timestamp 1000000.
        &[0x00, 0x01, 0x00, 0x02],
        &[0x00, 0x00, 0x00, 0x09],
        &[0x00, 0x00, 0x00, 0x00],
        &[0x00, 0x00, 0x10, 0x00],
        &[0x00, 0x00, 0x20, 0x00],
        &[0x00, 0x0f, 0x42, 0x40],
        // RETH: VA of this packet's first byte, rkey.
        &[0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x10, 0x00],
        &[0x0b, 0xad, 0xc0, 0xde],
        // Payload.
        &[0x01, 0x02, 0x03, 0x04],
        // ICRC.
        &[0x3c, 0x74, 0x78, 0xb7],
    ]);
    check_literal("write/ipv4", &repr, &expected);
}

#[test]
fn literal_write_imm_ipv6_empty() {
    let repr = FrameRepr {
        eth: eth(None),
        ip: ipv6(26, 0b10, 0x12345, 64),
        src_port: 0xc003,
        dst_port: ROCEV2_UDP_PORT,
        bth: bth(Opcode::WriteImm, true, 0xab_cdef, false, 0xff_ffff),
        transport: TransportRepr::Data(DataRepr {
            flow: 0xffff,
            tag: 0,
            msn: 0xffff_ffff,
            ssn: 0,
            offset: 0,
            msg_len: 0,
            timestamp: 0x8000_0000,
            reth: Some(RethRepr {
                va: 0xffff_ffff_ffff_fff0,
                rkey: 0xffff_ffff,
            }),
            imm: Some(0x1122_3344),
        }),
        payload: &[],
    };
    #[rustfmt::skip]
    let expected = cat(&[
        // Ethernet, EtherType IPv6.
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x02],
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
        &[0x86, 0xdd],
        // IPv6: version 6, traffic class 0x6a (DSCP 26, ECT(0)), flow label 0x12345.
        &[0x66, 0xa1, 0x23, 0x45],
        // Payload length 64, next header UDP, hop limit 64.
        &[0x00, 0x40, 0x11, 0x40],
        // Source fd00::1, destination fd00::2.
        &[0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01],
        &[0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02],
        // UDP: 49155 -> 4791, length 64, checksum 0.
        &[0xc0, 0x03, 0x12, 0xb7, 0x00, 0x40, 0x00, 0x00],
        // BTH: WriteImm, SE; connection 0xabcdef; FSN 0xffffff (the largest).
        &[0xc3, 0x80, 0xff, 0xff],
        &[0x00, 0xab, 0xcd, 0xef],
        &[0x00, 0xff, 0xff, 0xff],
        // FDH: flow 0xffff, tag 0, MSN 0xffffffff, SSN 0, offset 0, length 0,
        // timestamp 0x80000000.
        &[0xff, 0xff, 0x00, 0x00],
        &[0xff, 0xff, 0xff, 0xff],
        &[0x00, 0x00, 0x00, 0x00],
        &[0x00, 0x00, 0x00, 0x00],
        &[0x00, 0x00, 0x00, 0x00],
        &[0x80, 0x00, 0x00, 0x00],
        // RETH.
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0],
        &[0xff, 0xff, 0xff, 0xff],
        // Immediate data (after the RETH).
        &[0x11, 0x22, 0x33, 0x44],
        // No payload. ICRC.
        &[0xa6, 0x7e, 0x9a, 0xcb],
    ]);
    check_literal("write_imm/ipv6", &repr, &expected);
}

#[test]
fn literal_ack_vlan_ipv4() {
    let mut sack = [0u8; SACK_BITS / 8];
    for i in [0usize, 1, 2, 9, 255] {
        sack[i / 8] |= 1 << (i % 8);
    }
    let ack = AckRepr {
        flow: 3,
        ecn_echo: true,
        ce_count: 3,
        refused: 0x0102,
        rate_hint_mbps: 25_000,
        ts_echo: 0xdead_beef,
        sack,
    };
    let repr = FrameRepr {
        eth: eth(Some(0x6064)),
        ip: ipv4([10, 0, 0, 2], [10, 0, 0, 1], 26, 0b00, 0),
        src_port: 0xd000,
        dst_port: ROCEV2_UDP_PORT,
        bth: bth(Opcode::Ack, false, 0x5678, false, 0xfff),
        transport: TransportRepr::Ack(ack),
        payload: &[],
    };
    #[rustfmt::skip]
    let expected = cat(&[
        // Ethernet with an 802.1Q tag: TPID 0x8100, TCI = PCP 3, DEI 0, VID 100; IPv4.
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x02],
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
        &[0x81, 0x00, 0x60, 0x64],
        &[0x08, 0x00],
        // IPv4: TOS = DSCP 26, not ECN-capable; total length 92; identification 0.
        &[0x45, 0x68, 0x00, 0x5c],
        &[0x00, 0x00, 0x40, 0x00],
        &[0x40, 0x11, 0x26, 0x27],
        &[10, 0, 0, 2],
        &[10, 0, 0, 1],
        // UDP: 53248 -> 4791, length 72.
        &[0xd0, 0x00, 0x12, 0xb7, 0x00, 0x48, 0x00, 0x00],
        // BTH: Ack; connection 0x5678; PSN = cumulative FSN 0xfff.
        &[0xc8, 0x00, 0xff, 0xff],
        &[0x00, 0x00, 0x56, 0x78],
        &[0x00, 0x00, 0x0f, 0xff],
        // ACK: flow 3; flags = ECN echo; reserved.
        &[0x00, 0x03, 0x01, 0x00],
        // CE count 3; refused 0x0102 (258 terminal refusals on this flow).
        &[0x00, 0x03, 0x01, 0x02],
        // Rate hint 25000 Mb/s.
        &[0x00, 0x00, 0x61, 0xa8],
        // Timestamp echo.
        &[0xde, 0xad, 0xbe, 0xef],
        // SACK: bits 0, 1, 2 (FSNs cum+1..cum+3), bit 9 (cum+10), bit 255 (cum+256).
        &[0x07, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80],
        // ICRC.
        &[0xf2, 0xd1, 0x61, 0x16],
    ]);
    check_literal("ack/vlan-ipv4", &repr, &expected);
    let sacked: Vec<usize> = (0..SACK_BITS).filter(|&i| ack.sacked(i)).collect();
    assert_eq!(sacked, [0, 1, 2, 9, 255]);
    assert!(!ack.sacked(SACK_BITS));
}

#[test]
fn literal_nak_ipv4() {
    let nak = NakRepr {
        flow: 3,
        reason: NakReason::RemoteAccess,
        tag: 7,
        msn: 0x0102_0304,
        offset: 0x2000,
    };
    let repr = FrameRepr {
        eth: eth(None),
        ip: ipv4([10, 0, 0, 2], [10, 0, 0, 1], 26, 0b00, 1),
        src_port: 0xd001,
        dst_port: ROCEV2_UDP_PORT,
        bth: bth(Opcode::Nak, false, 0x5678, false, 0x1005),
        transport: TransportRepr::Nak(nak),
        payload: &[],
    };
    #[rustfmt::skip]
    let expected = cat(&[
        // Ethernet.
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x02],
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
        &[0x08, 0x00],
        // IPv4: total length 60, identification 1.
        &[0x45, 0x68, 0x00, 0x3c],
        &[0x00, 0x01, 0x40, 0x00],
        &[0x40, 0x11, 0x26, 0x46],
        &[10, 0, 0, 2],
        &[10, 0, 0, 1],
        // UDP: 53249 -> 4791, length 40.
        &[0xd0, 0x01, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00],
        // BTH: Nak; connection 0x5678; PSN = FSN of the refused packet, 0x1005.
        &[0xc9, 0x00, 0xff, 0xff],
        &[0x00, 0x00, 0x56, 0x78],
        &[0x00, 0x00, 0x10, 0x05],
        // NAK: flow 3, reason RemoteAccess (0x62), reserved.
        &[0x00, 0x03, 0x62, 0x00],
        // Tag 7, reserved.
        &[0x00, 0x07, 0x00, 0x00],
        // MSN, offset.
        &[0x01, 0x02, 0x03, 0x04],
        &[0x00, 0x00, 0x20, 0x00],
        // ICRC.
        &[0xa2, 0xf8, 0xca, 0xe1],
    ]);
    check_literal("nak/ipv4", &repr, &expected);

    // The reason byte of every reason.
    let reason_at = 14 + 20 + 8 + 12 + 2;
    for (reason, byte) in [
        (NakReason::ReceiverNotReady, 0x20),
        (NakReason::InvalidRequest, 0x61),
        (NakReason::RemoteAccess, 0x62),
        (NakReason::OutOfWindow, 0x70),
    ] {
        let r = FrameRepr {
            transport: TransportRepr::Nak(NakRepr { reason, ..nak }),
            ..repr
        };
        let bytes = r.emit();
        assert_eq!(bytes[reason_at], byte, "{reason:?}");
        assert_eq!(NakReason::from_u8(byte), Some(reason));
        let f = parse_frame(&bytes, ROCEV2_UDP_PORT).unwrap();
        assert_round_trip(&format!("{reason:?}"), &r, &f);
    }
}

#[test]
fn literal_cm_vlan_ipv6() {
    let cm = CmRepr {
        kind: CmKind::Request,
        flags: 0,
        path_count: 8,
        src_conn: 0xab_cdef,
        dst_conn: 0,
        mtu: 4096,
        tag_count: 4,
        initial_fsn: 1,
        rate_mbps: 100_000,
        tag_modes: 0b101,
    };
    let repr = FrameRepr {
        eth: eth(Some(0xe00a)),
        ip: ipv6(46, 0b00, 0, 255),
        src_port: 0xc000,
        dst_port: ROCEV2_UDP_PORT,
        bth: bth(Opcode::Cm, false, 0, false, 0),
        transport: TransportRepr::Cm(cm),
        payload: &[],
    };
    #[rustfmt::skip]
    let expected = cat(&[
        // Ethernet with an 802.1Q tag: PCP 7, VID 10; IPv6.
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x02],
        &[0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
        &[0x81, 0x00, 0xe0, 0x0a],
        &[0x86, 0xdd],
        // IPv6: traffic class 0xb8 (DSCP 46, not ECN-capable), flow label 0.
        &[0x6b, 0x80, 0x00, 0x00],
        // Payload length 56, next header UDP, hop limit 255.
        &[0x00, 0x38, 0x11, 0xff],
        &[0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01],
        &[0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02],
        // UDP: 49152 -> 4791, length 56.
        &[0xc0, 0x00, 0x12, 0xb7, 0x00, 0x38, 0x00, 0x00],
        // BTH: Cm; connection 0 (a request does not know the peer's id yet); PSN 0.
        &[0xca, 0x00, 0xff, 0xff],
        &[0x00, 0x00, 0x00, 0x00],
        &[0x00, 0x00, 0x00, 0x00],
        // CM: kind Request, flags 0, path count 8.
        &[0x01, 0x00, 0x00, 0x08],
        // Source connection 0xabcdef, destination connection 0.
        &[0x00, 0xab, 0xcd, 0xef],
        &[0x00, 0x00, 0x00, 0x00],
        // MTU 4096, tag count 4.
        &[0x10, 0x00, 0x00, 0x04],
        // Initial FSN 1, rate 100000 Mb/s.
        &[0x00, 0x00, 0x00, 0x01],
        &[0x00, 0x01, 0x86, 0xa0],
        // Tag modes: Tags 0 and 2 ordered.
        &[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05],
        // ICRC.
        &[0x03, 0x05, 0x21, 0xa2],
    ]);
    check_literal("cm/vlan-ipv6", &repr, &expected);
    assert_eq!(
        CmRepr::parse_bytes(&expected[18 + 40 + 8 + 12..][..32]),
        Ok(cm)
    );
    assert_eq!(&cm.to_bytes()[..], &expected[18 + 40 + 8 + 12..][..32]);

    // The kind byte of every kind.
    let kind_at = 18 + 40 + 8 + 12;
    for (kind, byte) in [
        (CmKind::Request, 1),
        (CmKind::Reply, 2),
        (CmKind::ReadyToUse, 3),
        (CmKind::Reject, 4),
        (CmKind::DisconnectRequest, 5),
        (CmKind::DisconnectReply, 6),
        (CmKind::TagModes, 7),
    ] {
        let r = FrameRepr {
            transport: TransportRepr::Cm(CmRepr { kind, ..cm }),
            ..repr.clone()
        };
        let bytes = r.emit();
        assert_eq!(bytes[kind_at], byte, "{kind:?}");
        assert_eq!(CmKind::from_u8(byte), Some(kind));
        let f = parse_frame(&bytes, ROCEV2_UDP_PORT).unwrap();
        assert_round_trip(&format!("{kind:?}"), &r, &f);
    }
}

/// A `TagModes` message: the page index sits in the `path_count` bytes, the modes of the
/// page's 64 Tags in `tag_modes`; it round-trips through the 32 bytes and a whole frame, and
/// the header stays 32 bytes with every field at its offset.
#[test]
fn cm_tag_modes_round_trip() {
    let request = CmRepr {
        kind: CmKind::Request,
        flags: 0,
        path_count: 8,
        src_conn: 0x12_3456,
        dst_conn: 0,
        mtu: 4096,
        tag_count: 200,
        initial_fsn: 0x00ab_cdef,
        rate_mbps: 100_000,
        tag_modes: 0x5555,
    };
    let page = CmRepr::tag_modes_page(&request, 3, 0x00ff_0000_0000_00a5);
    assert_eq!(page.kind, CmKind::TagModes);
    assert_eq!(page.page(), Ok(3));
    let b = page.to_bytes();
    assert_eq!(b.len(), transport::CM_LEN);
    assert_eq!(b[transport::cm::KIND], 7);
    assert_eq!(transport::cm::PAGE, transport::cm::PATH_COUNT);
    assert_eq!(&b[transport::cm::PAGE], &[0, 3]);
    assert_eq!(&b[transport::cm::SRC_CONN], &[0x00, 0x12, 0x34, 0x56]);
    assert_eq!(&b[transport::cm::TAG_COUNT], &[0, 200]);
    assert_eq!(&b[transport::cm::INITIAL_FSN], &[0x00, 0xab, 0xcd, 0xef]);
    assert_eq!(&b[transport::cm::DST_CONN], &[0; 4]);
    assert_eq!(&b[transport::cm::MTU], &[0; 2]);
    assert_eq!(&b[transport::cm::RATE], &[0; 4]);
    assert_eq!(
        &b[transport::cm::TAG_MODES],
        &[0x00, 0xff, 0, 0, 0, 0, 0, 0xa5]
    );
    assert_eq!(CmRepr::parse_bytes(&b), Ok(page));
    assert_eq!(CmKind::from_u8(7), Some(CmKind::TagModes));
    assert_eq!(CmKind::LAST, CmKind::TagModes);
    assert_eq!(CmKind::FIRST as u8, 1);
    assert_eq!(CmKind::from_u8(CmKind::LAST as u8 + 1), None);
    // Every byte value in FIRST..=LAST is a kind, none outside (the RTL's range check).
    for v in 0..=255u8 {
        assert_eq!(
            CmKind::from_u8(v).is_some(),
            (CmKind::FIRST as u8..=CmKind::LAST as u8).contains(&v),
            "kind byte {v}"
        );
    }
    let repr = FrameRepr {
        eth: eth(None),
        ip: ipv4([10, 0, 0, 1], [10, 0, 0, 2], 26, 0b10, 7),
        src_port: 0xc001,
        dst_port: ROCEV2_UDP_PORT,
        bth: bth(Opcode::Cm, false, 0, false, 0),
        transport: TransportRepr::Cm(page),
        payload: &[],
    };
    let bytes = repr.emit();
    let f = parse_frame(&bytes, ROCEV2_UDP_PORT).unwrap();
    assert_round_trip("TagModes", &repr, &f);
    // Pages a request needs: page 0 rides in the request itself.
    assert_eq!(CmRepr::tag_pages(0), 1);
    assert_eq!(CmRepr::tag_pages(1), 1);
    assert_eq!(CmRepr::tag_pages(64), 1);
    assert_eq!(CmRepr::tag_pages(65), 2);
    assert_eq!(CmRepr::tag_pages(200), 4);
    assert_eq!(CmRepr::tag_pages(u16::MAX), 1024);
}

/// Hostile page indexes are typed errors, never panics: page 0 (the request carries it),
/// pages at or beyond the Tag count, any page of a zero-Tag request, and the page of a
/// message of another kind.
#[test]
fn cm_tag_modes_hostile_pages() {
    let req = |tag_count| CmRepr {
        kind: CmKind::Request,
        flags: 0,
        path_count: 4,
        src_conn: 1,
        dst_conn: 0,
        mtu: 1024,
        tag_count,
        initial_fsn: 7,
        rate_mbps: 0,
        tag_modes: 0,
    };
    let page = |tags, p| CmRepr::tag_modes_page(&req(tags), p, u64::MAX).page();
    assert_eq!(page(200, 0), Err(TagPageError::PageZero));
    assert_eq!(page(200, 1), Ok(1));
    assert_eq!(page(200, 3), Ok(3));
    assert_eq!(page(200, 4), Err(TagPageError::BeyondTagCount));
    assert_eq!(page(200, u16::MAX), Err(TagPageError::BeyondTagCount));
    assert_eq!(page(64, 1), Err(TagPageError::BeyondTagCount));
    assert_eq!(page(65, 1), Ok(1));
    assert_eq!(page(0, 1), Err(TagPageError::BeyondTagCount));
    assert_eq!(page(u16::MAX, 1023), Ok(1023));
    assert_eq!(page(u16::MAX, 1024), Err(TagPageError::BeyondTagCount));
    assert_eq!(req(200).page(), Err(TagPageError::NotTagModes));
    // Any 32 bytes with kind 7 parse; the page check is what rejects the index.
    for p in [0u16, 4, 0x8000, u16::MAX] {
        let mut b = CmRepr::tag_modes_page(&req(200), 1, 0).to_bytes();
        b[transport::cm::PAGE].copy_from_slice(&p.to_be_bytes());
        let m = CmRepr::parse_bytes(&b).unwrap();
        assert!(m.page().is_err(), "page {p}");
    }
    // Kinds beyond the last are refused by the parser.
    let mut b = CmRepr::tag_modes_page(&req(200), 1, 0).to_bytes();
    b[transport::cm::KIND] = CmKind::LAST as u8 + 1;
    assert_eq!(CmRepr::parse_bytes(&b), Err(ParseError::BadOpcode));
}

/// The sizes in `docs/wire-format.md`: header lengths, the smallest frame of every type and
/// the per-packet overhead.
#[test]
fn frame_sizes_match_the_documentation() {
    assert_eq!(transport::FDH_LEN, 24);
    assert_eq!(transport::RETH_LEN, 12);
    assert_eq!(transport::IMM_LEN, 4);
    assert_eq!(transport::ACK_LEN, 48);
    assert_eq!(transport::NAK_LEN, 16);
    assert_eq!(transport::CM_LEN, 32);
    assert_eq!(ferroce_proto::wire::frame::MIN_FRAME_LEN, 58);
    // (opcode, smallest frame over IPv4, over IPv6), untagged, without FCS.
    let table = [
        (Opcode::Send, 82, 102),
        (Opcode::SendImm, 86, 106),
        (Opcode::Write, 94, 114),
        (Opcode::WriteImm, 98, 118),
        (Opcode::Ack, 106, 126),
        (Opcode::Nak, 74, 94),
        (Opcode::Cm, 90, 110),
    ];
    for (op, v4, v6) in table {
        let t = TransportRepr::header_len_for(op);
        assert_eq!(14 + 20 + 8 + 12 + t + 4, v4, "{op:?} over IPv4");
        assert_eq!(14 + 40 + 8 + 12 + t + 4, v6, "{op:?} over IPv6");
        // Every ferroce frame is at least the 60-byte Ethernet minimum: no padding needed.
        assert!(v4 >= 60);
    }
}

// ---------------------------------------------------------------------------------------
// Property tests.

/// A frame repr with an owned payload.
#[derive(Debug, Clone)]
struct Owned {
    eth: EthernetRepr,
    ip: IpRepr,
    src_port: u16,
    dst_port: u16,
    bth: BthRepr,
    transport: TransportRepr,
    payload: Vec<u8>,
}

impl Owned {
    fn repr(&self) -> FrameRepr<'_> {
        FrameRepr {
            eth: self.eth,
            ip: self.ip,
            src_port: self.src_port,
            dst_port: self.dst_port,
            bth: self.bth,
            transport: self.transport,
            payload: &self.payload,
        }
    }
}

fn arb_mac() -> impl Strategy<Value = EthernetAddress> {
    any::<[u8; 6]>().prop_map(EthernetAddress)
}

fn arb_eth() -> impl Strategy<Value = EthernetRepr> {
    (arb_mac(), arb_mac(), proptest::option::of(any::<u16>())).prop_map(|(dst, src, vlan_tci)| {
        EthernetRepr {
            dst,
            src,
            vlan_tci,
            ethertype: 0,
        }
    })
}

fn arb_ip() -> impl Strategy<Value = IpRepr> {
    let v4 = (
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        0u8..64,
        0u8..4,
        any::<u8>(),
        any::<u16>(),
    )
        .prop_map(|(src, dst, dscp, ecn, ttl, ident)| {
            IpRepr::V4(Ipv4Repr {
                src: Ipv4Addr::from(src),
                dst: Ipv4Addr::from(dst),
                dscp,
                ecn,
                ttl,
                ident,
                payload_len: 0,
            })
        });
    let v6 = (
        any::<[u8; 16]>(),
        any::<[u8; 16]>(),
        0u8..64,
        0u8..4,
        0u32..1 << 20,
        any::<u8>(),
    )
        .prop_map(|(src, dst, dscp, ecn, flow_label, hop_limit)| {
            IpRepr::V6(Ipv6Repr {
                src: Ipv6Addr::from(src),
                dst: Ipv6Addr::from(dst),
                dscp,
                ecn,
                flow_label,
                hop_limit,
                payload_len: 0,
            })
        });
    prop_oneof![v4, v6]
}

fn arb_opcode() -> impl Strategy<Value = Opcode> {
    prop::sample::select(vec![
        Opcode::Send,
        Opcode::SendImm,
        Opcode::Write,
        Opcode::WriteImm,
        Opcode::Ack,
        Opcode::Nak,
        Opcode::Cm,
    ])
}

fn arb_data(opcode: Opcode) -> impl Strategy<Value = TransportRepr> {
    (
        (any::<u16>(), any::<u16>(), any::<u32>(), any::<u32>()),
        (any::<u32>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u32>(), any::<u32>()),
    )
        .prop_map(
            move |((flow, tag, msn, ssn), (offset, msg_len, timestamp), (va, rkey, imm))| {
                TransportRepr::Data(DataRepr {
                    flow,
                    tag,
                    msn,
                    ssn,
                    offset,
                    msg_len,
                    timestamp,
                    reth: opcode.is_write().then_some(RethRepr { va, rkey }),
                    imm: opcode.has_imm().then_some(imm),
                })
            },
        )
}

fn arb_transport(opcode: Opcode) -> BoxedStrategy<TransportRepr> {
    match opcode {
        Opcode::Ack => (
            (any::<u16>(), any::<bool>(), any::<u16>(), any::<u16>()),
            (any::<u32>(), any::<u32>(), any::<[u8; 32]>()),
        )
            .prop_map(
                |((flow, ecn_echo, ce_count, refused), (rate_hint_mbps, ts_echo, sack))| {
                    TransportRepr::Ack(AckRepr {
                        flow,
                        ecn_echo,
                        ce_count,
                        refused,
                        rate_hint_mbps,
                        ts_echo,
                        sack,
                    })
                },
            )
            .boxed(),
        Opcode::Nak => (
            any::<u16>(),
            prop::sample::select(vec![
                NakReason::ReceiverNotReady,
                NakReason::InvalidRequest,
                NakReason::RemoteAccess,
                NakReason::OutOfWindow,
            ]),
            any::<u16>(),
            any::<u32>(),
            any::<u32>(),
        )
            .prop_map(|(flow, reason, tag, msn, offset)| {
                TransportRepr::Nak(NakRepr {
                    flow,
                    reason,
                    tag,
                    msn,
                    offset,
                })
            })
            .boxed(),
        Opcode::Cm => (
            (
                prop::sample::select(vec![
                    CmKind::Request,
                    CmKind::Reply,
                    CmKind::ReadyToUse,
                    CmKind::Reject,
                    CmKind::DisconnectRequest,
                    CmKind::DisconnectReply,
                    CmKind::TagModes,
                ]),
                any::<u8>(),
                any::<u16>(),
                any::<u32>(),
                any::<u32>(),
            ),
            (
                any::<u16>(),
                any::<u16>(),
                any::<u32>(),
                any::<u32>(),
                any::<u64>(),
            ),
        )
            .prop_map(
                |(
                    (kind, flags, path_count, src_conn, dst_conn),
                    (mtu, tag_count, initial_fsn, rate_mbps, tag_modes),
                )| {
                    TransportRepr::Cm(CmRepr {
                        kind,
                        flags,
                        path_count,
                        src_conn,
                        dst_conn,
                        mtu,
                        tag_count,
                        initial_fsn,
                        rate_mbps,
                        tag_modes,
                    })
                },
            )
            .boxed(),
        _ => arb_data(opcode).boxed(),
    }
}

/// An arbitrary valid frame: any packet type, IPv4 or IPv6, tagged or not, payloads of
/// 0..=4096 bytes for data packets, any UDP destination port (parsed with that port), and a
/// BTH opcode that need not match the transport headers (emit derives it).
fn arb_frame() -> impl Strategy<Value = Owned> {
    arb_frame_of(arb_opcode(), 0)
}

/// Like [`arb_frame`], with the packet type drawn from `opcodes` and data payloads of at
/// least `min_payload` bytes.
fn arb_frame_of(
    opcodes: impl Strategy<Value = Opcode>,
    min_payload: usize,
) -> impl Strategy<Value = Owned> {
    opcodes.prop_flat_map(move |op| {
        let payload = if op.is_data() {
            prop::collection::vec(any::<u8>(), min_payload..=4096).boxed()
        } else {
            Just(Vec::new()).boxed()
        };
        (
            (
                arb_eth(),
                arb_ip(),
                any::<u16>(),
                prop_oneof![Just(ROCEV2_UDP_PORT), any::<u16>()],
            ),
            (
                arb_opcode(),
                any::<bool>(),
                0u32..1 << 24,
                any::<bool>(),
                0u32..1 << 24,
            ),
            arb_transport(op),
            payload,
        )
            .prop_map(
                |(
                    (eth, ip, src_port, dst_port),
                    (opcode, solicited, dest_conn, ack_req, psn),
                    transport,
                    payload,
                )| Owned {
                    eth,
                    ip,
                    src_port,
                    dst_port,
                    bth: BthRepr {
                        opcode,
                        solicited,
                        dest_conn,
                        ack_req,
                        psn,
                    },
                    transport,
                    payload,
                },
            )
    })
}

/// Whether a change of byte `at` of a valid frame may go unnoticed by `parse_frame`: the bytes
/// no check covers (MAC addresses, the VLAN TCI, the UDP checksum, the BTH FECN/BECN byte and
/// the IPv6 traffic class, flow label and hop limit, which the ICRC masks). Everything else is
/// covered by the EtherType, version, length and port checks, the IPv4 header checksum (which
/// catches any single-byte change) or the ICRC (a CRC-32 catches any error burst of up to 32
/// bits).
fn may_go_unnoticed(frame: &Owned, at: usize, old: u8, new: u8) -> bool {
    let l3 = frame.eth.header_len();
    let l4 = l3 + frame.ip.header_len();
    if at < 12 || (frame.eth.vlan_tci.is_some() && (14..16).contains(&at)) {
        return true;
    }
    if let IpRepr::V6(_) = frame.ip {
        if at == l3 {
            return old >> 4 == new >> 4; // version nibble unchanged
        }
        if (l3 + 1..l3 + 4).contains(&at) || at == l3 + 7 {
            return true;
        }
    }
    at == l4 + 6 || at == l4 + 7 || at == l4 + 8 + 4
}

/// Cases per property: 2048 (a few tens of milliseconds each), or 100 000 with
/// `FERROCE_LONG=1`.
fn cases() -> u32 {
    if std::env::var("FERROCE_LONG").is_ok_and(|v| v == "1") {
        100_000
    } else {
        2048
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // A failing case is saved next to this file, as wire.proptest-regressions.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn emit_then_parse_round_trips(frame in arb_frame()) {
        let repr = frame.repr();
        let bytes = repr.emit();
        prop_assert_eq!(bytes.len(), repr.frame_len());
        let parsed = parse_frame(&bytes, frame.dst_port);
        prop_assert!(parsed.is_ok(), "{:?}", parsed);
        assert_round_trip("arbitrary", &repr, &parsed.unwrap());
    }

    #[test]
    fn a_known_good_icrc_parses_an_emitted_frame_as_computing_it_does(frame in arb_frame()) {
        let bytes = frame.repr().emit();
        let computed = parse_frame(&bytes, frame.dst_port);
        let trusted = parse_frame_checking(&bytes, frame.dst_port, IcrcCheck::KnownGood);
        prop_assert_eq!(computed, trusted);
        // Only the ICRC computation is skipped: a wrong trailer is the caller's promise broken
        // (caught when computing), every other check still runs.
        let mut bad_icrc = bytes.clone();
        *bad_icrc.last_mut().unwrap() ^= 1;
        prop_assert_eq!(parse_frame(&bad_icrc, frame.dst_port), Err(ParseError::BadIcrc));
        prop_assert!(parse_frame_checking(&bad_icrc, frame.dst_port, IcrcCheck::KnownGood).is_ok());
        prop_assert_eq!(
            parse_frame_checking(&bytes, frame.dst_port.wrapping_add(1), IcrcCheck::KnownGood),
            parse_frame(&bytes, frame.dst_port.wrapping_add(1))
        );
    }

    #[test]
    fn ethernet_padding_is_ignored(
        frame in arb_frame(),
        pad in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let repr = frame.repr();
        let mut bytes = repr.emit();
        bytes.extend_from_slice(&pad);
        let parsed = parse_frame(&bytes, frame.dst_port);
        prop_assert!(parsed.is_ok(), "{:?}", parsed);
        assert_round_trip("padded", &repr, &parsed.unwrap());
    }

    #[test]
    fn frames_up_to_the_limit_parse_and_longer_ones_are_too_long(frame in arb_frame()) {
        let repr = frame.repr();
        let mut bytes = repr.emit();
        prop_assert!(bytes.len() <= MAX_FRAME_LEN);
        bytes.resize(MAX_FRAME_LEN, 0x5A);
        let parsed = parse_frame(&bytes, frame.dst_port);
        prop_assert!(parsed.is_ok(), "{:?}", parsed);
        assert_round_trip("padded to the limit", &repr, &parsed.unwrap());
        bytes.push(0x5A);
        prop_assert_eq!(parse_frame(&bytes, frame.dst_port), Err(ParseError::TooLong));
        // First of all checks: a frame too long is that whatever else is wrong with it.
        bytes[12] ^= 0xFF;
        prop_assert_eq!(parse_frame(&bytes, frame.dst_port), Err(ParseError::TooLong));
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..256),
        port in any::<u16>(),
    ) {
        let _ = parse_frame(&bytes, port);
        let _ = parse_frame(&bytes, ROCEV2_UDP_PORT);
    }

    #[test]
    fn arbitrary_bytes_behind_plausible_headers_never_panic(
        prefix in prop::sample::select(vec![
            // Ethernet / IPv4, Ethernet / 802.1Q / IPv6, Ethernet / 802.1Q / ARP.
            vec![0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00, 0x45],
            vec![0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0x00, 0, 0, 0x86, 0xdd, 0x60],
            vec![0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0x00, 0, 0, 0x08, 0x06],
        ]),
        rest in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let bytes = [prefix, rest].concat();
        let _ = parse_frame(&bytes, ROCEV2_UDP_PORT);
    }

    #[test]
    fn single_byte_corruption_never_panics_and_is_caught(
        frame in arb_frame(),
        at in any::<prop::sample::Index>(),
        xor in 1u8..=255,
    ) {
        let repr = frame.repr();
        let mut bytes = repr.emit();
        let at = at.index(bytes.len());
        let old = bytes[at];
        bytes[at] ^= xor;
        // Any error is fine; acceptance only where no check can see the change.
        if let Ok(f) = parse_frame(&bytes, frame.dst_port) {
            prop_assert!(
                may_go_unnoticed(&frame, at, old, bytes[at]),
                "byte {} changed {:#04x} -> {:#04x} went unnoticed", at, old, bytes[at]
            );
            prop_assert_eq!(f.transport, frame.transport);
            prop_assert_eq!(f.payload, frame.payload.as_slice());
        }
    }

    #[test]
    fn truncated_frames_are_rejected(frame in arb_frame(), cut in any::<prop::sample::Index>()) {
        let bytes = frame.repr().emit();
        let cut = cut.index(bytes.len());
        let r = parse_frame(&bytes[..cut], frame.dst_port);
        prop_assert!(r.is_err(), "a {}-byte prefix of a {}-byte frame parsed", cut, bytes.len());
    }

    #[test]
    fn payload_bit_flips_fail_the_icrc(
        frame in arb_frame_of(
            prop::sample::select(vec![
                Opcode::Send,
                Opcode::SendImm,
                Opcode::Write,
                Opcode::WriteImm,
            ]),
            1,
        ),
        bit in any::<prop::sample::Index>(),
    ) {
        let mut bytes = frame.repr().emit();
        let start = bytes.len() - 4 - frame.payload.len();
        let bit = bit.index(frame.payload.len() * 8);
        bytes[start + bit / 8] ^= 1 << (bit % 8);
        prop_assert_eq!(parse_frame(&bytes, frame.dst_port).err(), Some(ParseError::BadIcrc));
    }

    /// A split frame is the emitted frame: its bytes (ICRC included), its head and its length,
    /// whatever buffer its payload is shared from.
    #[test]
    fn a_split_frame_holds_the_emitted_frame(
        frame in arb_frame(),
        before in prop::collection::vec(any::<u8>(), 0..64),
        after in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let repr = frame.repr();
        let bytes = repr.emit();
        let buf = [&before[..], &frame.payload, &after].concat();
        let shared = SharedBytes::new(
            std::sync::Arc::new(buf),
            before.len()..before.len() + frame.payload.len(),
        )
        .unwrap();
        prop_assert_eq!(shared.as_slice(), &frame.payload[..]);
        let split = SplitFrame::emit(&FrameRepr { payload: &[], ..repr.clone() }, shared.clone())
            .expect("every ferroce header stack fits");
        prop_assert_eq!(split.to_bytes(), bytes.clone());
        prop_assert_eq!(split.frame_len(), bytes.len());
        prop_assert_eq!(split.head(), &bytes[..bytes.len() - 4 - frame.payload.len()]);
        prop_assert_eq!(&split.icrc()[..], &bytes[bytes.len() - 4..]);
        prop_assert_eq!(FrameBuf::emit(&repr, shared).into_bytes(), bytes);
    }

    /// A split frame parses as its bytes do, the payload borrowed from the shared one, however
    /// the scratch buffer is filled (the parse must not read what an earlier frame left
    /// there), with the right UDP port or another.
    #[test]
    fn a_split_frame_parses_as_its_bytes_do(
        frame in arb_frame(),
        other_port in any::<u16>(),
        scratch in prop::collection::vec(any::<u8>(), 0..6000),
    ) {
        let bytes = frame.repr().emit();
        let split = SplitFrame::emit(&frame.repr(), SharedBytes::from_vec(frame.payload.clone()))
            .unwrap();
        for port in [frame.dst_port, other_port] {
            let mut scratch = scratch.clone();
            let parsed = split.parse_in(port, &mut scratch);
            prop_assert_eq!(parsed, parse_frame_checking(&bytes, port, IcrcCheck::KnownGood));
            prop_assert_eq!(parsed, parse_frame(&bytes, port));
            if let Ok(f) = parsed {
                prop_assert!(std::ptr::eq(f.payload, split.payload().as_slice()));
            }
        }
    }

    /// A split frame whose headers changed (any byte, any value: other lengths, other types,
    /// errors) parses as the whole frame with those headers does.
    #[test]
    fn a_changed_split_frame_parses_as_its_bytes_do(
        frame in arb_frame(),
        at in any::<prop::sample::Index>(),
        xor in 1u8..=255,
        scratch in prop::collection::vec(any::<u8>(), 0..6000),
    ) {
        let mut split =
            SplitFrame::emit(&frame.repr(), SharedBytes::from_vec(frame.payload.clone())).unwrap();
        let head = split.head_mut();
        let at = at.index(head.len());
        head[at] ^= xor;
        let bytes = split.to_bytes();
        let mut scratch = scratch;
        prop_assert_eq!(
            split.parse_in(frame.dst_port, &mut scratch),
            parse_frame_checking(&bytes, frame.dst_port, IcrcCheck::KnownGood)
        );
    }

    /// A split frame whose BTH opcode changed to any other (its transport headers then have
    /// another length, so the payload starts elsewhere: the parser must not find it at the
    /// end of the head, nor read what the scratch buffer holds) parses as its bytes do.
    #[test]
    fn a_split_frame_with_another_opcode_parses_as_its_bytes_do(
        frame in arb_frame(),
        opcode in arb_opcode(),
        scratch in prop::collection::vec(any::<u8>(), 0..6000),
    ) {
        let mut split =
            SplitFrame::emit(&frame.repr(), SharedBytes::from_vec(frame.payload.clone())).unwrap();
        let at = frame.eth.header_len() + frame.ip.header_len() + 8;
        split.head_mut()[at] = opcode as u8;
        let bytes = split.to_bytes();
        let mut scratch = scratch;
        prop_assert_eq!(
            split.parse_in(frame.dst_port, &mut scratch),
            parse_frame_checking(&bytes, frame.dst_port, IcrcCheck::KnownGood)
        );
    }
}
