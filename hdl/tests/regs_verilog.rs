//! The register block's Verilog (`ferroce_hdl::regs::RegisterBlock`) under Icarus Verilog:
//! what the whole-core tests cannot reach in a test's time. A counter's 64-bit add runs as a
//! carry-select (low half, and high half plus one); a counter is taken past 2^32 by 65,538
//! increments of 65,535 and read back over AXI4-Lite, word by word, beside a plain register.
//! The read data is ORed over the registers an address hits (one, as the map's addresses
//! differ); every address below the counters reads as the model's after distinct writes.

use ferroce_hdl::regs::RegisterBlock;
use ferroce_hdl::rx_engine::table_sizes;
use ferroce_hdl::verilog::generate;
use ferroce_proto::hsi::tables::TABLE_WORDS;
use ferroce_proto::hsi::{Counter, regs};
use ferroce_proto::model::FastPath;
use std::fmt::Write;

mod common;
use common::{iverilog_present, run_icarus};

/// The input ports of the top module (name, width), from its declarations.
fn inputs(verilog: &str) -> Vec<(String, u32)> {
    let top = &verilog[..verilog.find("endmodule").expect("a module")];
    top.lines()
        .filter_map(|l| l.trim().strip_prefix("input wire"))
        .map(|rest| {
            let rest = rest.trim().trim_end_matches(';');
            match rest.strip_prefix('[') {
                Some(r) => {
                    let (range, name) = r.split_once(']').expect("a range");
                    let hi: u32 = range.split(':').next().unwrap().trim().parse().unwrap();
                    (name.trim().to_string(), hi + 1)
                }
                None => (rest.trim().to_string(), 1),
            }
        })
        .collect()
}

/// A testbench around the register block: every input a register starting at 0, the clock,
/// and the tasks `axil_read(a)` (prints the word read, in hex) and `axil_write(a, d)`;
/// `script` is the body of its `initial` block, after a reset.
fn testbench(dut: &str, script: &str) -> String {
    let ins = inputs(dut);
    assert!(ins.iter().any(|(n, _)| n == "inc0_valid"), "ports: {ins:?}");
    let mut tb = String::from("module tb;\n");
    for (name, width) in &ins {
        writeln!(tb, "  reg [{}:0] {name} = 0;", width - 1).unwrap();
    }
    tb.push_str("  wire s_arready, s_rvalid, s_awready, s_wready, s_bvalid;\n");
    tb.push_str("  wire [31:0] s_rdata;\n  integer i;\n  top dut(");
    let outs = [
        "s_arready",
        "s_rvalid",
        "s_rdata",
        "s_awready",
        "s_wready",
        "s_bvalid",
    ];
    let ports: Vec<String> = ins
        .iter()
        .map(|(n, _)| n.as_str())
        .chain(outs)
        .map(|n| format!(".{n}({n})"))
        .collect();
    tb.push_str(&ports.join(", "));
    tb.push_str(");\n  always #1 clock = ~clock;\n");
    // One AXI4-Lite read: the address until taken, then the data when valid.
    tb.push_str(
        "  task axil_read(input [15:0] a);\n    begin\n      @(negedge clock); s_araddr = a; \
         s_arvalid = 1; s_rready = 1;\n      @(posedge clock); while (!s_arready) @(posedge \
         clock);\n      @(negedge clock); s_arvalid = 0;\n      while (!s_rvalid) @(negedge \
         clock);\n      $display(\"%h\", s_rdata);\n      @(negedge clock); s_rready = 0;\n    \
         end\n  endtask\n",
    );
    // One AXI4-Lite write.
    tb.push_str(
        "  task axil_write(input [15:0] a, input [31:0] d);\n    begin\n      @(negedge clock); \
         s_awaddr = a; s_awvalid = 1; s_wdata = d; s_wvalid = 1; s_bready = 1;\n      \
         @(posedge clock); while (!s_awready) @(posedge clock);\n      @(negedge clock); \
         s_awvalid = 0; s_wvalid = 0;\n      while (!s_bvalid) @(negedge clock);\n      \
         @(negedge clock); s_bready = 0;\n    end\n  endtask\n",
    );
    writeln!(
        tb,
        "  initial begin\n    reset = 1; @(negedge clock); @(negedge clock); reset = 0;\n\
         {script}    $finish;\n  end\nendmodule"
    )
    .unwrap();
    tb
}

#[test]
fn a_counter_carries_past_32_bits_and_reads_back_over_axi_lite() {
    if !iverilog_present() {
        return;
    }
    let dut = generate(RegisterBlock::default());
    let counter = Counter::RxPlacedBytes;
    let base = regs::counter_offset(counter);
    let increments: u64 = 65_538;
    // The counter's address is written first: a write clears it (its RAM starts undefined
    // under Icarus).
    let script = format!(
        "    axil_write({base}, 0);\n    for (i = 0; i < 8; i = i + 1) @(negedge clock);\n    \
         inc0_index = {}; inc0_amount = 16'hffff; inc0_valid = 1;\n    \
         for (i = 0; i < {increments}; i = i + 1) @(negedge clock);\n    inc0_valid = 0;\n    \
         for (i = 0; i < 64; i = i + 1) @(negedge clock);\n    axil_read({base});\n    \
         axil_read({});\n    axil_read({});\n",
        counter as u32,
        base + 4,
        regs::UDP_PORT,
    );
    let got = run_icarus("regs_verilog", "regs", &dut, &testbench(&dut, &script), &[]);
    let total = increments * 0xFFFF;
    assert!(total > 1 << 32);
    assert_eq!(
        got,
        vec![
            total & 0xFFFF_FFFF,
            total >> 32,
            u64::from(ferroce_proto::wire::ROCEV2_UDP_PORT)
        ],
        "counter low word, high word, UDP port"
    );
}

#[test]
fn every_register_reads_as_the_models_after_distinct_writes() {
    if !iverilog_present() {
        return;
    }
    let dut = generate(RegisterBlock::default());
    // Writable registers, each given a value no other holds (within its width), so that an
    // address hitting two registers would read their OR, not the model's word.
    let mut writes = vec![
        (regs::CONTROL, regs::CONTROL_RX_ENABLE),
        (regs::UDP_PORT, 0x1234),
        (regs::ACK_COALESCE, 7),
        (regs::ACK_DELAY_NS, 0x0005_4321),
        (regs::MAC_LO, 0x89AB_CDEF),
        (regs::MAC_HI, 0x0000_4567),
        (regs::TXQ_BASE_LO, 0x7654_3200),
        (regs::TXQ_BASE_HI, 0x0000_0011),
        (regs::TXQ_LOG_SIZE, 9),
        (regs::TXQ_TAIL, 0x0000_0003),
        (regs::EVQ_BASE_LO, 0x1357_9B00),
        (regs::EVQ_BASE_HI, 0x0000_0022),
        (regs::EVQ_LOG_SIZE, 11),
        (regs::EVQ_HEAD, 0x0000_0005),
        (regs::TABLE_INDEX, 0x0000_0042),
    ];
    writes.extend((0..TABLE_WORDS as u32).map(|w| (regs::TABLE_DATA + 4 * w, 0xD000_0000 | w)));
    let mut model = FastPath::new(table_sizes());
    let mut script = String::from("    link_up = 8'hff;\n");
    for &(a, d) in &writes {
        model.write_reg(a, d);
        writeln!(script, "    axil_write({a}, {d});").unwrap();
    }
    let addresses: Vec<u32> = (0..regs::COUNTERS).step_by(4).collect();
    for a in &addresses {
        writeln!(script, "    axil_read({a});").unwrap();
    }
    let got = run_icarus(
        "regs_verilog",
        "regs_map",
        &dut,
        &testbench(&dut, &script),
        &[],
    );
    let want: Vec<u64> = addresses
        .iter()
        .map(|&a| u64::from(model.read_reg(a)))
        .collect();
    assert_eq!(got.len(), want.len(), "one word per read");
    for ((a, g), w) in addresses.iter().zip(&got).zip(&want) {
        assert_eq!(g, w, "register {a:#06x}");
    }
    // The writes reached the registers (not a map of zeroes on both sides).
    let nonzero = want.iter().filter(|&&w| w != 0).count();
    assert!(nonzero > writes.len(), "{nonzero} registers read non-zero");
}
