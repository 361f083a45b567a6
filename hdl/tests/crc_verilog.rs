//! The generated Verilog of the CRC blocks (`ferroce_hdl::crc`) under Icarus Verilog against
//! `crc32fast`, for every lane count: the rust-hdl simulator's own test (`crc.rs`) does not see
//! the Verilog, and rust-hdl's simulator and its Verilog have disagreed before on widths.

use ferroce_hdl::crc::{Crc32Full, Crc32Tail, lane_prefix};
use ferroce_hdl::verilog::generate;
use std::fmt::Write;
use std::path::PathBuf;
use std::process::Command;

fn iverilog_present() -> bool {
    let found = Command::new("sh")
        .args(["-c", "command -v iverilog >/dev/null"])
        .status()
        .is_ok_and(|s| s.success());
    if !found && std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_none() {
        panic!("iverilog is not installed: run `cargo xtask test`, which installs it");
    }
    found
}

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
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("crc_verilog");
    std::fs::create_dir_all(&dir).unwrap();
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
    let v = dir.join(format!("{name}.v"));
    let tbv = dir.join(format!("{name}_tb.v"));
    let vvp = dir.join(format!("{name}.vvp"));
    std::fs::write(&v, dut).unwrap();
    std::fs::write(&tbv, tb).unwrap();
    let out = Command::new("iverilog")
        .args(["-g2012", "-o"])
        .arg(&vvp)
        .arg(&v)
        .arg(&tbv)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "iverilog: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("vvp").arg("-n").arg(&vvp).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| u32::from_str_radix(l.trim(), 16).ok())
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
