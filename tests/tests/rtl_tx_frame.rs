//! The RTL TX frame builder under Verilator against `FrameRepr::emit`: every packet type over
//! IPv4, IPv6 and 802.1Q, payloads from empty to 4 KB, with and without back-pressure on both
//! the payload input and the frame output, one at a time and in back-to-back bursts of up to
//! eight (the builder overlaps consecutive frames). Byte-for-byte equality, ICRC included, and
//! each frame on the port (`tdest`) its request named, every port in turn.
//!
//! Default: 6,000 frames. `FERROCE_LONG=1`: 50,000.

use ferroce_proto::hsi::regs::MAX_PORTS;
use ferroce_proto::wire::{IpRepr, Opcode, TransportRepr};
use ferroce_sim::rng::Rng as SimRng;
use ferroce_sim::rtl::tx_frame::{RtlTxFrame, TxRequest};
use ferroce_tests::{Net, Rng, Sample, random_frame};

const OPCODES: [Opcode; 7] = [
    Opcode::Send,
    Opcode::SendImm,
    Opcode::Write,
    Opcode::WriteImm,
    Opcode::Ack,
    Opcode::Nak,
    Opcode::Cm,
];

/// The verilated builder, or `None` (the test skipped) when the tools are missing and
/// `FERROCE_ALLOW_MISSING_TOOLS` allows it.
fn builder() -> Option<RtlTxFrame> {
    match RtlTxFrame::new() {
        Ok(t) => Some(t),
        Err(e) if std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_some() => {
            println!("SKIPPED: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn frames_match_the_specification_byte_for_byte() {
    let Some(mut rtl) = builder() else {
        return;
    };
    let count = if std::env::var_os("FERROCE_LONG").is_some() {
        50_000
    } else {
        6_000
    };
    let mut rng = Rng::new(0x7f7f);
    let mut stall_rng = SimRng::new(3);
    let mut burst: Vec<(usize, String, TxRequest, Vec<u8>)> = Vec::new();
    let mut burst_len = 1;
    for n in 0..count {
        let max = if n % 50 == 0 { 4096 } else { 200 };
        let mut s = random_frame(&mut rng, OPCODES[n % 7], Net::ALL[(n / 7) % 4], max);
        let (req, expected) = request(n, &mut s);
        burst.push((n, s.label.to_string(), req, expected));
        if burst.len() < burst_len && n + 1 < count {
            continue;
        }
        let stall = (n % 3 == 0).then_some(&mut stall_rng);
        let reqs: Vec<TxRequest> = burst.iter().map(|b| b.2.clone()).collect();
        let frames = rtl.build_burst(&reqs, stall);
        for ((n, label, req, expected), got) in burst.drain(..).zip(frames) {
            check(n, &label, &got.bytes, &expected);
            assert_eq!(got.port, req.port, "frame {n} ({label}): port");
        }
        burst_len = 1 + n % 8;
    }
    println!("{count} frames in {} cycles", rtl.cycles());
}

/// The request for `s` as the NIC sends it (IPv4 identification 0, TTL / hop limit 64, flow
/// label 0, which `s` is changed to), on port `n · 5` modulo the port count (every port in
/// turn, without drawing on the frames' random stream), and the frame the specification emits.
fn request(n: usize, s: &mut Sample) -> (TxRequest, Vec<u8>) {
    match &mut s.ip {
        IpRepr::V4(v4) => {
            v4.ident = 0;
            v4.ttl = 64;
        }
        IpRepr::V6(v6) => {
            v6.flow_label = 0;
            v6.hop_limit = 64;
        }
    }
    let expected = s.emit();
    let mut th = vec![0u8; s.transport.header_len()];
    s.transport.emit(&mut th);
    let (src_ip, dst_ip) = (s.ip.src_bytes(), s.ip.dst_bytes());
    let (dscp, ecn) = match s.ip {
        IpRepr::V4(v) => (v.dscp, v.ecn),
        IpRepr::V6(v) => (v.dscp, v.ecn),
    };
    let req = TxRequest {
        dst_mac: s.eth.dst.0,
        src_mac: s.eth.src.0,
        vlan_tci: s.eth.vlan_tci,
        ipv6: matches!(s.ip, IpRepr::V6(_)),
        src_ip,
        dst_ip,
        dscp,
        ecn,
        src_port: s.src_port,
        dst_port: s.dst_port,
        opcode: TransportRepr::opcode(&s.transport) as u8,
        solicited: s.bth.solicited,
        dest_conn: s.bth.dest_conn,
        ack_req: s.bth.ack_req,
        psn: s.bth.psn,
        th,
        payload: s.payload.clone(),
        port: (n * 5 % MAX_PORTS as usize) as u8,
    };
    (req, expected)
}

/// With the payload always there and the MAC always ready, a burst leaves as one run of beats:
/// no idle cycle inside a frame or between two, whatever the frames' lengths modulo 8 (where
/// the ICRC falls in the last beats and whether it straddles two).
#[test]
fn back_to_back_frames_leave_without_a_gap() {
    let Some(mut rtl) = builder() else {
        return;
    };
    let mut rng = Rng::new(0x9a9);
    let mut n = 0;
    let mut gappy = Vec::new();
    // Two bursts per data opcode and network; the payload lengths step by one byte so that
    // every burst of eight meets every frame length modulo 8.
    for round in 0..2 {
        for net in Net::ALL {
            for op in &OPCODES[..4] {
                let mut burst = Vec::new();
                for j in 0..8 {
                    let mut s = random_frame(&mut rng, *op, net, 0);
                    let len = 40 * round + 9 * j + n / 8 % 8;
                    s.payload = rng.bytes(len);
                    let (req, expected) = request(n, &mut s);
                    burst.push((n, s.label.to_string(), req, expected));
                    n += 1;
                }
                let reqs: Vec<TxRequest> = burst.iter().map(|b| b.2.clone()).collect();
                let frames = rtl.build_burst(&reqs, None);
                for ((n, label, _, expected), got) in burst.iter().zip(&frames) {
                    check(*n, label, &got.bytes, expected);
                }
                let lens: Vec<usize> = burst.iter().map(|b| b.3.len()).collect();
                if rtl.last_burst_gaps() != 0 {
                    gappy.push(format!("{} in {lens:?}", rtl.last_burst_gaps()));
                }
            }
        }
    }
    assert!(
        gappy.is_empty(),
        "idle output cycles in bursts of frames of these lengths (bytes): {gappy:#?}"
    );
}

fn check(n: usize, label: &str, got: &[u8], expected: &[u8]) {
    assert_eq!(got.len(), expected.len(), "frame {n} ({label}): length");
    if got != expected {
        let at = got
            .iter()
            .zip(expected)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "frame {n} ({label}): first difference at byte {at}\n rtl  {:02x?}\n spec {:02x?}",
            &got[at.saturating_sub(4)..(at + 12).min(got.len())],
            &expected[at.saturating_sub(4)..(at + 12).min(expected.len())]
        );
    }
}
