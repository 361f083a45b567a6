//! A second simulator for the whole core: a run of the RTL NIC under Verilator (reset, register
//! and table programming over AXI4-Lite, received Writes and Sends placed by DMA, a damaged
//! frame, an ACK and a CM frame, ACK timers, transmitted descriptors; the frames come in on
//! several MAC ports and the descriptors name several, one beyond the port count, so `tid` and
//! `tdest` change) is recorded port by port,
//! cycle by cycle; Icarus Verilog replays the same inputs into the same design and every output
//! of every cycle must be identical (no X, no difference).
//!
//! Icarus runs the design as yosys elaborates it (`proc; flatten`): rust-hdl writes each block
//! as one `always @(*)`, and between a parent and its children those blocks form false
//! combinational loops (Verilator's UNOPTFLAT). An event-driven simulator re-runs them on every
//! intermediate value a parent assigns to a child's input, and on the unflattened Verilog Icarus
//! never leaves the first cycle that exercises the flow table. The flattened netlist has no such
//! loops, so this also holds yosys's reading of the Verilog (what synthesis builds) to
//! Verilator's.
//!
//! The run itself is held to the model by `rtl_nic.rs`; this test holds the simulators and the
//! synthesis front end to each other.

use ferroce_driver::{Device, Nic, SimPort};
use ferroce_proto::hsi::{ConnectionEntry, RegionEntry, TxDescriptor};
use ferroce_proto::wire::{
    AckRepr, BthRepr, CmRepr, DataRepr, EthernetAddress, EthernetRepr, FrameRepr, IpRepr, Ipv4Repr,
    Opcode, RethRepr, TransportRepr, transport::CmKind,
};
use ferroce_sim::rtl::nic::{RtlNic, Vectors};
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::process::Command;

fn frame(opcode: Opcode, psn: u32, transport: TransportRepr, payload: &[u8]) -> Vec<u8> {
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
            ecn: if psn.is_multiple_of(3) { 3 } else { 2 },
            ttl: 64,
            ident: 0,
            payload_len: 0,
        }),
        src_port: 49152 + psn as u16,
        dst_port: 4791,
        bth: BthRepr {
            opcode,
            solicited: false,
            dest_conn: 1,
            ack_req: false,
            psn,
        },
        transport,
        payload,
    }
    .emit()
}

fn data(flow: u16, msn: u32, offset: u32, msg_len: u32, reth: Option<RethRepr>) -> TransportRepr {
    TransportRepr::Data(DataRepr {
        flow,
        tag: 0,
        msn,
        ssn: if reth.is_some() { 0 } else { msn },
        offset,
        msg_len,
        timestamp: 1234 + msn,
        reth,
        imm: None,
    })
}

/// Runs the recorded scenario under Verilator.
fn record() -> Option<Vectors> {
    let nic = match RtlNic::new_recording() {
        Ok(n) => n,
        Err(e) if ferroce_tests::missing_tools_allowed() => {
            println!("SKIPPED: {e}");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    let mut dev = Device::open(nic).expect("open");
    dev.set_mac(EthernetAddress([2, 0, 0, 0, 0, 2]));
    let v4 = |a: [u8; 4]| Ipv4Addr::from(a).to_ipv6_mapped().octets();
    let conn = ConnectionEntry {
        valid: true,
        peer_conn: 7,
        flow_base: 4,
        flow_count: 2,
        tag_base: 3,
        tag_count: 1,
        peer_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
        local_ip: v4([10, 0, 0, 2]),
        peer_ip: v4([10, 0, 0, 1]),
        rate_hint_mbps: 10_000,
        ..Default::default()
    };
    dev.set_connection(1, &conn).unwrap();
    dev.init_flow(4, 10).unwrap();
    dev.init_flow(5, 20).unwrap();
    let region = dev.nic().memory.alloc(65536, 4096).unwrap();
    let r = RegionEntry {
        valid: true,
        key: 9,
        access: 1,
        base: region,
        length: 65536,
    };
    dev.set_region(2, &r).unwrap();
    let rbuf = dev.nic().memory.alloc(4096, 4096).unwrap();
    dev.post_recv(3, 1, rbuf, 4096).unwrap();
    let reth = |va| {
        Some(RethRepr {
            va,
            rkey: r.rkey(2),
        })
    };
    let payload: Vec<u8> = (0..1500u32).map(|i| (i * 13 + 5) as u8).collect();
    let mut frames = vec![
        frame(
            Opcode::Write,
            10,
            data(0, 0, 0, 2000, reth(region)),
            &payload[..1024],
        ),
        frame(
            Opcode::Write,
            21,
            data(1, 0, 1024, 2000, reth(region + 1024)),
            &payload[..976],
        ),
        frame(Opcode::Send, 11, data(0, 1, 0, 700, None), &payload[..700]),
        frame(
            Opcode::Write,
            20,
            data(1, 2, 0, 3, reth(region + 65535)),
            &payload[..3],
        ),
        frame(
            Opcode::Write,
            10,
            data(0, 0, 0, 2000, reth(region)),
            &payload[..1024],
        ),
        frame(
            Opcode::Ack,
            99,
            TransportRepr::Ack(AckRepr {
                flow: 1,
                ecn_echo: true,
                ce_count: 3,
                refused: 1,
                rate_hint_mbps: 777,
                ts_echo: 5,
                sack: [0xa5; 32],
            }),
            &[],
        ),
        frame(
            Opcode::Cm,
            0,
            TransportRepr::Cm(CmRepr {
                kind: CmKind::Request,
                flags: 0,
                path_count: 4,
                src_conn: 3,
                dst_conn: 0,
                mtu: 1024,
                tag_count: 2,
                initial_fsn: 77,
                rate_mbps: 100_000,
                tag_modes: 3,
            }),
            &[],
        ),
    ];
    let mut bad = frames[0].clone();
    bad[60] ^= 0x10;
    frames.push(bad);
    let ports = dev.nic().ports();
    let mut sent_on = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        dev.nic()
            .receive_frame(((i as u32 + 1) % ports) as u8, f)
            .unwrap();
        while let Some(f) = dev.nic().transmit_frame() {
            sent_on.push(f.port);
        }
    }
    // ACK timers fire.
    dev.nic().poll(50_000);
    let src = dev.nic().memory.alloc(4096, 4096).unwrap();
    // The last one names a port the core does not have (refused, BadPort).
    let descs: Vec<TxDescriptor> = [
        (Opcode::Write, 300u32, ports - 1),
        (Opcode::Send, 0, ports / 2),
        (Opcode::Write, 9000, 0),
        (Opcode::Write, 8, ports),
    ]
    .into_iter()
    .map(|(op, len, port)| TxDescriptor {
        opcode: op as u8,
        conn: 1,
        fsn: 5,
        entropy: 1000,
        msg_len: len,
        payload_len: len,
        local_addr: src,
        remote_va: 0x1000,
        rkey: 0x209,
        port: port as u8,
        ..Default::default()
    })
    .collect();
    dev.post(&descs).unwrap();
    dev.nic().poll(60_000);
    while let Some(f) = dev.nic().transmit_frame() {
        sent_on.push(f.port);
    }
    if ports > 1 {
        assert!(
            sent_on.iter().filter(|&&p| p != 0).count() >= 2,
            "frames left on ports {sent_on:?} only"
        );
    }
    Some(dev.nic().take_vectors())
}

/// Port values of one cycle as one hex number: ports in order, the first in the top bits.
fn hex_line(ports: &[(&'static str, usize)], words: &[u32]) -> String {
    let mut bits = Vec::new();
    let mut at = 0;
    for &(_, width) in ports {
        let n = width.div_ceil(32);
        let w = &words[at..at + n];
        at += n;
        for b in (0..width).rev() {
            bits.push(w[b / 32] >> (b % 32) & 1 == 1);
        }
    }
    while bits.len() % 4 != 0 {
        bits.insert(0, false);
    }
    bits.chunks(4)
        .map(|c| {
            let v = c.iter().fold(0, |a, &b| a << 1 | b as u32);
            char::from_digit(v, 16).unwrap()
        })
        .collect()
}

/// Every memory of the generated Verilog, as (its path in the flattened netlist, depth,
/// whether its read data is a register): they start at zero in Verilator and are set to zero
/// in the testbench, as the hardware's block RAMs and LUT RAMs (which configure to zero on
/// ECP5) do. A block RAM (`mem`) registers its read data, which starts at zero too; a LUT RAM
/// (`lut_mem`, `ferroce_hdl::ram::LutRam`) reads combinationally.
fn memories(verilog: &str) -> Vec<(String, usize, bool)> {
    let mut out = Vec::new();
    let mut module = None;
    for line in verilog.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("module ") {
            module = rest.split('(').next().map(str::to_string);
        }
        if let (Some(m), Some(decl)) = (&module, l.strip_prefix("reg[")) {
            let found = [("] mem[", true), ("] lut_mem[", false)]
                .into_iter()
                .find_map(|(pat, reg)| Some((decl.split_once(pat)?.1, reg)));
            if let Some((tail, registered)) = found {
                let depth: usize = tail.split(':').next().unwrap().parse().unwrap();
                let path = m.trim_start_matches("top$").replace('$', ".");
                out.push((path, depth + 1, registered));
            }
        }
    }
    out
}

fn testbench(v: &Vectors, mems: &[(String, usize, bool)]) -> String {
    let in_bits: usize = v.inputs.iter().map(|p| p.1).sum();
    let out_bits: usize = v.outputs.iter().map(|p| p.1).sum();
    let n = v.cycles.len();
    let mut t = String::new();
    writeln!(t, "module tb;\n  reg clock = 0;").unwrap();
    for (name, w) in &v.inputs {
        writeln!(t, "  reg [{}:0] {name} = 0;", w - 1).unwrap();
    }
    for (name, w) in &v.outputs {
        writeln!(t, "  wire [{}:0] {name};", w - 1).unwrap();
    }
    let conns: Vec<String> = std::iter::once("clock")
        .chain(v.inputs.iter().map(|p| p.0))
        .chain(v.outputs.iter().map(|p| p.0))
        .map(|n| format!(".{n}({n})"))
        .collect();
    writeln!(t, "  top dut({});", conns.join(", ")).unwrap();
    writeln!(t, "  reg [{}:0] vin [0:{}];", in_bits - 1, n - 1).unwrap();
    writeln!(t, "  reg [{}:0] vout [0:{}];", out_bits - 1, n - 1).unwrap();
    writeln!(t, "  reg [{}:0] got;\n  integer i, k, bad;", out_bits - 1).unwrap();
    writeln!(t, "  initial begin").unwrap();
    for (path, depth, registered) in mems {
        let array = if *registered { "mem" } else { "lut_mem" };
        writeln!(
            t,
            "    for (k = 0; k < {depth}; k = k + 1) dut.\\{path}.{array} [k] = 0;"
        )
        .unwrap();
        if *registered {
            writeln!(t, "    dut.\\{path}.read_data = 0;").unwrap();
        }
    }
    writeln!(
        t,
        "    $readmemh(\"in.hex\", vin);\n    $readmemh(\"out.hex\", vout);\n    bad = 0;"
    )
    .unwrap();
    let ins: Vec<&str> = v.inputs.iter().map(|p| p.0).collect();
    let outs: Vec<&str> = v.outputs.iter().map(|p| p.0).collect();
    writeln!(t, "    for (i = 0; i < {n}; i = i + 1) begin").unwrap();
    writeln!(
        t,
        "      {{{}}} = vin[i];\n      clock = 0;\n      #1;",
        ins.join(", ")
    )
    .unwrap();
    writeln!(t, "      got = {{{}}};", outs.join(", ")).unwrap();
    writeln!(t, "      if (got !== vout[i]) begin").unwrap();
    writeln!(t, "        bad = bad + 1;").unwrap();
    writeln!(
        t,
        "        if (bad <= 5) $display(\"MISMATCH cycle %0d\", i);"
    )
    .unwrap();
    let mut hi = out_bits;
    for (name, w) in &v.outputs {
        writeln!(
            t,
            "        if (bad <= 5 && {name} !== vout[i][{}:{}]) $display(\"  {name} got %h want %h\", {name}, vout[i][{}:{}]);",
            hi - 1,
            hi - w,
            hi - 1,
            hi - w
        )
        .unwrap();
        hi -= w;
    }
    writeln!(t, "      end\n      clock = 1;\n      #1;\n    end").unwrap();
    writeln!(
        t,
        "    $display(\"DONE %0d cycles %0d mismatches\", i, bad);\n    $finish;\n  end\nendmodule"
    )
    .unwrap();
    t
}

#[test]
fn icarus_replays_the_whole_core_cycle_for_cycle() {
    let Some(iverilog) = ferroce_tests::require(
        "iverilog",
        ferroce_tests::find_on_path("iverilog"),
        "apt-get install iverilog",
    ) else {
        return;
    };
    let Some(yosys) = ferroce_tests::require(
        "yosys",
        ferroce_tests::find_on_path("yosys"),
        "apt-get install yosys",
    ) else {
        return;
    };
    let Some(v) = record() else { return };
    let verilog = ferroce_sim::rtl::VERILOG
        .iter()
        .find(|(n, _)| *n == "nic")
        .map(|(_, v)| *v)
        .expect("the nic Verilog");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("icarus-nic");
    std::fs::create_dir_all(&dir).unwrap();
    let mut ins = String::new();
    let mut outs = String::new();
    for (i, o) in &v.cycles {
        ins.push_str(&hex_line(&v.inputs, i));
        ins.push('\n');
        outs.push_str(&hex_line(&v.outputs, o));
        outs.push('\n');
    }
    std::fs::write(dir.join("in.hex"), ins).unwrap();
    std::fs::write(dir.join("out.hex"), outs).unwrap();
    std::fs::write(dir.join("nic.v"), verilog).unwrap();
    std::fs::write(dir.join("tb.v"), testbench(&v, &memories(verilog))).unwrap();
    let status = Command::new(&yosys)
        .current_dir(&dir)
        .args([
            "-q",
            "-p",
            "read_verilog nic.v; hierarchy -top top; proc; flatten; opt_clean; write_verilog -noattr nic_flat.v",
        ])
        .status()
        .expect("run yosys");
    assert!(status.success(), "yosys failed");
    let status = Command::new(&iverilog)
        .current_dir(&dir)
        .args(["-g2012", "-o", "sim", "tb.v", "nic_flat.v"])
        .status()
        .expect("run iverilog");
    assert!(status.success(), "iverilog failed");
    let out = Command::new("vvp")
        .current_dir(&dir)
        .arg("sim")
        .output()
        .expect("run vvp");
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    let done = format!("DONE {} cycles 0 mismatches", v.cycles.len());
    assert!(
        text.contains(&done),
        "Icarus disagrees with Verilator:\n{text}"
    );
    // The run did what it is for: frames placed, events written, frames sent.
    assert!(
        v.cycles.len() > 2_000,
        "only {} cycles recorded",
        v.cycles.len()
    );
}
