//! The generated Verilog of the CRC blocks (`ferroce_hdl::crc`) under Icarus Verilog against
//! `crc32fast`, for every lane count: the rust-hdl simulator's own test (`crc.rs`) does not see
//! the Verilog, and rust-hdl's simulator and its Verilog have disagreed before on widths.

use ferroce_hdl::crc::{Crc32Full, Crc32Tail, lane_prefix};
use ferroce_hdl::verilog::generate;
use std::fmt::Write;

mod common;
use common::{iverilog_present, run_icarus};

/// A deterministic stream of test values.
fn values(seed: u64, count: usize) -> Vec<u64> {
    let mut s = seed;
    (0..count)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        })
        .collect()
}

/// The raw register after `bytes` from `state`, by crc32fast.
fn reference(state: u32, bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(!state);
    h.update(bytes);
    !h.finalize()
}

/// Runs `dut` (a module `top`) under Icarus with a testbench that applies each input vector
/// (`crc_in`, `data`, third input) and prints `crc_out` in hex, one line per vector.
fn run(name: &str, dut: String, third: (&str, usize), vectors: &[(u32, u64, u64)]) -> Vec<u32> {
    let (port, width) = third;
    let mut tb = format!(
        "module tb;\n  reg [31:0] crc_in; reg [63:0] data; reg [{}:0] {port}; wire [31:0] crc_out;\n  \
         top dut(.crc_in(crc_in), .data(data), .{port}({port}), .crc_out(crc_out));\n  initial begin\n",
        width - 1
    );
    for &(c, d, t) in vectors {
        writeln!(
            tb,
            "    crc_in = 32'h{c:08x}; data = 64'h{d:016x}; {port} = {width}'h{t:x}; #1 $display(\"%h\", crc_out);"
        )
        .unwrap();
    }
    tb.push_str("    $finish;\n  end\nendmodule\n");
    run_icarus("crc_verilog", name, &dut, &tb, &[])
        .into_iter()
        .map(|v| v as u32)
        .collect()
}

#[test]
fn full_step_verilog_matches_crc32fast() {
    if !iverilog_present() {
        return;
    }
    let mut vectors = Vec::new();
    let mut expect = Vec::new();
    for pair in values(11, 400).chunks(2) {
        let (state, data) = (pair[0] as u32, pair[1]);
        for enable in [0, 1] {
            vectors.push((state, data, enable));
            expect.push(if enable == 1 {
                reference(state, &data.to_le_bytes())
            } else {
                state
            });
        }
    }
    let got = run(
        "crc_full",
        generate(Crc32Full::default()),
        ("enable", 1),
        &vectors,
    );
    assert_eq!(got, expect);
}

#[test]
fn tail_step_verilog_matches_crc32fast_for_every_lane_count() {
    if !iverilog_present() {
        return;
    }
    let mut vectors = Vec::new();
    let mut expect = Vec::new();
    for pair in values(12, 400).chunks(2) {
        let (state, data) = (pair[0] as u32, pair[1]);
        for n in 0..=8 {
            vectors.push((state, data, u64::from(lane_prefix(n))));
            expect.push(if (1..8).contains(&n) {
                reference(state, &data.to_le_bytes()[..n])
            } else {
                state
            });
        }
    }
    let got = run(
        "crc_tail",
        generate(Crc32Tail::default()),
        ("lanes", 8),
        &vectors,
    );
    assert_eq!(got, expect);
}
