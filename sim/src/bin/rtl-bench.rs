//! Co-simulation speed and RTL throughput of the verilated blocks, printed as a table.
//! Run with `cargo xtask bench-rtl` (release build). Figures, not pass/fail.
//! `rtl-bench nic` prints the whole-core table only.

use ferroce_proto::wire::{
    BthRepr, DataRepr, EthernetAddress, EthernetRepr, FrameRepr, IpRepr, Ipv4Repr, Opcode,
    RethRepr, TransportRepr,
};
use ferroce_sim::rtl::{flow_table::RtlFlowTable, rx_parser::RtlParser};
use std::net::Ipv4Addr;
use std::time::Instant;

fn write_frame(payload: usize, psn: u32) -> Vec<u8> {
    let data = vec![0xa5u8; payload];
    FrameRepr {
        eth: EthernetRepr {
            dst: EthernetAddress([2, 0, 0, 0, 0, 2]),
            src: EthernetAddress([2, 0, 0, 0, 0, 1]),
            vlan_tci: None,
            ethertype: 0,
        },
        ip: IpRepr::V4(Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            dscp: 0,
            ecn: 2,
            ttl: 64,
            ident: 0,
            payload_len: 0,
        }),
        src_port: 49152,
        dst_port: 4791,
        bth: BthRepr {
            opcode: Opcode::Write,
            solicited: false,
            dest_conn: 1,
            ack_req: false,
            psn,
        },
        transport: TransportRepr::Data(DataRepr {
            flow: 0,
            tag: 0,
            msn: 0,
            ssn: 0,
            offset: 0,
            msg_len: payload as u32,
            timestamp: 0,
            reth: Some(RethRepr {
                va: 0x1000,
                rkey: 0x100,
            }),
            imm: None,
        }),
        payload: &data,
    }
    .emit()
}

/// The whole core: back-to-back Writes in (placed, acknowledged every 4th packet), then
/// descriptors out, each at 0, 64 and 4096 payload bytes.
fn nic_figures() {
    use ferroce_driver::{Device, PortFrame};
    use ferroce_proto::hsi::{ConnectionEntry, RegionEntry, TxDescriptor};
    let nic = match ferroce_sim::rtl::nic::RtlNic::new() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    let mut dev = Device::open(nic).expect("open the RTL NIC");
    dev.set_mac(EthernetAddress([2, 0, 0, 0, 0, 2]));
    let v4 = |a: [u8; 4]| Ipv4Addr::from(a).to_ipv6_mapped().octets();
    let conn = ConnectionEntry {
        valid: true,
        peer_conn: 7,
        flow_base: 0,
        flow_count: 1,
        tag_base: 0,
        tag_count: 1,
        peer_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
        local_ip: v4([10, 0, 0, 2]),
        peer_ip: v4([10, 0, 0, 1]),
        ..Default::default()
    };
    dev.set_connection(1, &conn).unwrap();
    dev.init_flow(0, 0).unwrap();
    let region = dev.nic().memory.alloc(1 << 20, 4096).unwrap();
    dev.set_region(
        1,
        &RegionEntry {
            valid: true,
            key: 0,
            access: 1,
            base: region,
            length: 1 << 20,
        },
    )
    .unwrap();
    let src = dev.nic().memory.alloc(8192, 4096).unwrap();
    println!();
    println!(
        "| whole NIC core | packets | payload bytes | frame bytes | cycles | packets/cycle | bytes/cycle | sim cycles/s | sim packets/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut fsn = 0u32;
    for (payload, count) in [(0usize, 4000usize), (64, 4000), (4096, 1000)] {
        let frames: Vec<PortFrame> = (0..count)
            .map(|i| {
                let mut f = write_frame(payload, (fsn + i as u32) & 0xff_ffff);
                // Point the RETH into the region at its base (the frame builder's VA is fixed).
                retarget(&mut f, region);
                PortFrame { port: 0, bytes: f }
            })
            .collect();
        fsn += count as u32;
        let c0 = dev.nic().activity();
        let t0 = Instant::now();
        let cycles = dev.nic().receive_burst(&frames).expect("port 0");
        let secs = t0.elapsed().as_secs_f64();
        let sim_cycles = dev.nic().activity().cycles - c0.cycles;
        let acks = dev.nic().take_transmitted().len();
        println!(
            "| receive (Write, placed; {acks} ACKs out) | {count} | {payload} | {} | {cycles} | {:.4} | {:.2} | {:.2} M | {:.0} k |",
            frames[0].bytes.len(),
            count as f64 / cycles as f64,
            (count * frames[0].bytes.len()) as f64 / cycles as f64,
            sim_cycles as f64 / secs / 1e6,
            count as f64 / secs / 1e3,
        );
    }
    // A PCIe read answers after about a microsecond: 100 to 250 cycles of the core's clock.
    let runs = [
        (1u64, 0u32, 500usize),
        (1, 64, 500),
        (1, 4096, 200),
        (100, 0, 500),
        (100, 64, 500),
        (100, 4096, 200),
        (250, 0, 500),
        (250, 64, 500),
        (250, 4096, 200),
    ];
    for (latency, payload, count) in runs {
        dev.nic().set_dma_read_latency(latency);
        let mut sent = 0;
        let mut cycles = 0;
        let mut bytes = 0;
        let t0 = Instant::now();
        let c0 = dev.nic().activity().cycles;
        while sent < count {
            let n = (dev.tx_space() as usize).min(count - sent).min(256);
            let batch: Vec<TxDescriptor> = (0..n)
                .map(|i| TxDescriptor {
                    opcode: Opcode::Write as u8,
                    conn: 1,
                    fsn: (sent + i) as u32,
                    entropy: 49152,
                    msg_len: payload,
                    payload_len: payload,
                    local_addr: src,
                    remote_va: 0x1000,
                    ..Default::default()
                })
                .collect();
            let before = dev.nic().activity().cycles;
            dev.post(&batch).unwrap();
            cycles += dev.nic().activity().cycles - before;
            let out = dev.nic().take_transmitted();
            bytes += out.iter().map(|f| f.bytes.len()).sum::<usize>();
            sent += n;
        }
        let secs = t0.elapsed().as_secs_f64();
        let sim_cycles = dev.nic().activity().cycles - c0;
        println!(
            "| transmit (Write descriptors; DMA reads answered after {latency} cycle{}) | {count} | {payload} | {} | {cycles} | {:.4} | {:.2} | {:.2} M | {:.0} k |",
            if latency == 1 { "" } else { "s" },
            bytes / count,
            count as f64 / cycles as f64,
            bytes as f64 / cycles as f64,
            sim_cycles as f64 / secs / 1e6,
            count as f64 / secs / 1e3,
        );
    }
    dev.nic().set_dma_read_latency(1);
    println!(
        "(cycles: from the first beat until the core is idle again; a 64-bit beat per cycle is the line rate)"
    );
}

/// Rewrites a Write frame's RETH VA and MSN (and its ICRC) so the payload lands at `va` as a
/// message of its own.
fn retarget(frame: &mut Vec<u8>, va: u64) {
    use ferroce_proto::wire::parse_frame;
    let f = parse_frame(frame, 4791).expect("valid frame");
    let TransportRepr::Data(mut d) = f.transport else {
        return;
    };
    if let Some(r) = d.reth.as_mut() {
        r.va = va;
    }
    // One message per packet, so every packet completes one.
    d.msn = f.bth.psn;
    let payload = f.payload.to_vec();
    *frame = FrameRepr {
        transport: TransportRepr::Data(d),
        payload: &payload,
        ..f.repr()
    }
    .emit();
}

fn main() {
    // `rtl-bench nic` measures the whole core only (for profiling the co-simulation).
    if std::env::args().nth(1).as_deref() == Some("nic") {
        nic_figures();
        return;
    }
    // `rtl-bench parser` measures the parser only (for profiling it).
    let parser_only = std::env::args().nth(1).as_deref() == Some("parser");
    let mut parser = match RtlParser::new(4791) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!(
        "| block | frames | frame bytes | cycles | frames/cycle | sim cycles/s | sim frames/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (payload, count) in [(0usize, 200_000usize), (4096 - 94, 10_000)] {
        let frames: Vec<Vec<u8>> = (0..count)
            .map(|i| write_frame(payload, i as u32 & 0xff_ffff))
            .collect();
        let c0 = parser.cycles();
        let t0 = Instant::now();
        let verdicts = parser.run(&frames, 0);
        let secs = t0.elapsed().as_secs_f64();
        let cycles = parser.cycles() - c0;
        assert_eq!(verdicts.len(), count);
        println!(
            "| rx_parser | {count} | {} | {cycles} | {:.4} | {:.2} M | {:.0} k |",
            frames[0].len(),
            count as f64 / cycles as f64,
            cycles as f64 / secs / 1e6,
            count as f64 / secs / 1e3,
        );
    }
    if parser_only {
        return;
    }
    let mut table = RtlFlowTable::new().expect("flow table");
    table.init(5, 0);
    let ops = 200_000u32;
    let c0 = table.cycles();
    let t0 = Instant::now();
    for fsn in 0..ops {
        table.classify(5, fsn & 0xff_ffff, false);
        table.accept(5, 0);
    }
    let secs = t0.elapsed().as_secs_f64();
    let cycles = table.cycles() - c0;
    println!(
        "| flow_table (classify + accept per packet) | {ops} | - | {cycles} | {:.4} | {:.2} M | {:.0} k |",
        ops as f64 / cycles as f64,
        cycles as f64 / secs / 1e6,
        ops as f64 / secs / 1e3,
    );
    nic_figures();
}
