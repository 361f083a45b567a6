//! The block RAM's and the LUT RAM's Verilog (`ferroce_hdl::ram::BlockRam`, `LutRam`) under
//! Icarus Verilog, against their contract: a write lands one clock after it is taken, a read
//! returns the word as the memory holds it (the block RAM at the clock edge, the LUT RAM within
//! the cycle), and a read of the address whose write is landing is undefined, which the
//! co-simulation builds (`FERROCE_RAM_POISON`) return as the old word inverted.

use ferroce_hdl::ram::{BlockRam, LutRam};
use ferroce_hdl::verilog::generate;
use std::fmt::Write;

mod common;
use common::{iverilog_present, run_icarus};

/// One cycle's inputs: read address, write enable, write address, write data.
type Op = (u8, bool, u8, u8);

/// A deterministic sequence of operations on a 4-word RAM, dense in collisions.
fn ops(count: usize) -> Vec<Op> {
    let mut s = 0x9e37_79b9_7f4a_7c15_u64;
    (0..count)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (
                (s & 3) as u8,
                s >> 2 & 1 == 1,
                (s >> 3 & 3) as u8,
                (s >> 8) as u8,
            )
        })
        .collect()
}

/// The read data after each cycle's clock edge, by the contract (`poison`: collisions return
/// the old word inverted; otherwise the memory's old word).
fn expected(ops: &[Op], poison: bool) -> Vec<u8> {
    let mut mem = [0u8; 4];
    let mut pending: Option<(u8, u8)> = None;
    let mut out = Vec::new();
    for &(ra, we, wa, wd) in ops {
        let old = mem[ra as usize];
        let collides = pending.is_some_and(|(a, _)| a == ra);
        out.push(if poison && collides { !old } else { old });
        if let Some((a, d)) = pending.take() {
            mem[a as usize] = d;
        }
        if we {
            pending = Some((wa, wd));
        }
    }
    out
}

/// Runs a RAM's Verilog (`dut`, whose array is `array`, with a read clock port when
/// `read_clock`) under Icarus over `ops` (with `FERROCE_RAM_POISON` defined when `poison`) and
/// returns the read data of each cycle: after its clock edge for a block RAM, before it (within
/// the cycle) for a LUT RAM.
fn run_ram(
    name: &str,
    dut: &str,
    array: &str,
    read_clock: bool,
    ops: &[Op],
    poison: bool,
) -> Vec<u8> {
    let clock_port = if read_clock {
        ".read_clock(clock), "
    } else {
        ""
    };
    let mut tb = format!(
        "module tb;\n  reg clock = 0; reg [1:0] ra = 0; reg we = 0; reg [1:0] wa = 0; \
         reg [7:0] wd = 0; wire [7:0] rd;\n  integer i;\n  \
         top dut(.read_address(ra), {clock_port}.read_data(rd), .write_address(wa), \
         .write_clock(clock), .write_data(wd), .write_enable(we));\n  initial begin\n    \
         for (i = 0; i < 4; i = i + 1) dut.{array}[i] = 0;\n",
    );
    let step = if read_clock {
        "#1 clock = 1; #1 $display(\"%h\", rd); clock = 0;"
    } else {
        "#1 $display(\"%h\", rd); clock = 1; #1 clock = 0;"
    };
    for &(ra, we, wa, wd) in ops {
        writeln!(
            tb,
            "    ra = {ra}; we = {}; wa = {wa}; wd = {wd}; {step}",
            u8::from(we)
        )
        .unwrap();
    }
    tb.push_str("    $finish;\n  end\nendmodule\n");
    let name = format!("{name}_{}", if poison { "poison" } else { "plain" });
    let defines: &[&str] = if poison { &["FERROCE_RAM_POISON"] } else { &[] };
    run_icarus("ram_verilog", &name, dut, &tb, defines)
        .into_iter()
        .map(|v| v as u8)
        .collect()
}

#[test]
fn block_ram_verilog_keeps_its_contract_with_and_without_the_poison() {
    if !iverilog_present() {
        return;
    }
    let ops = ops(2_000);
    let collisions = ops
        .windows(2)
        .filter(|w| w[0].1 && w[0].2 == w[1].0)
        .count();
    assert!(collisions > 100, "the sequence must collide often");
    for poison in [false, true] {
        let dut = generate(BlockRam::<8, 2>::default());
        let got = run_ram("ram", &dut, "mem", true, &ops, poison);
        assert_eq!(got, expected(&ops, poison), "poison {poison}");
    }
}

#[test]
fn lut_ram_verilog_keeps_its_contract_with_and_without_the_poison() {
    if !iverilog_present() {
        return;
    }
    // The same sequence and the same expected words: the LUT RAM's read within cycle k sees
    // what the block RAM's read registers at the edge ending it.
    let ops = ops(2_000);
    for poison in [false, true] {
        let dut = generate(LutRam::<8, 2>::default());
        let got = run_ram("lut_ram", &dut, "lut_mem", false, &ops, poison);
        assert_eq!(got, expected(&ops, poison), "poison {poison}");
    }
}
