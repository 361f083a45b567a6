//! Co-simulation speed and RTL throughput of the verilated blocks, printed as a table.
//! Run with `cargo xtask bench-rtl` (release build). Figures, not pass/fail.

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

fn main() {
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
}
