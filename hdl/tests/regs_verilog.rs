//! The register block's Verilog (`ferroce_hdl::regs::RegisterBlock`) under Icarus Verilog:
//! what the whole-core tests cannot reach in a test's time. A counter's 64-bit add runs as a
//! carry-select (low half, and high half plus one); a counter is taken past 2^32 by 65,538
//! increments of 65,535 and read back over AXI4-Lite, word by word, beside a plain register.

use ferroce_hdl::regs::RegisterBlock;
use ferroce_hdl::verilog::generate;
use ferroce_proto::hsi::{Counter, regs};
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

#[test]
fn a_counter_carries_past_32_bits_and_reads_back_over_axi_lite() {
    if !iverilog_present() {
        return;
    }
    let dut = generate(RegisterBlock::default());
    let ins = inputs(&dut);
    assert!(ins.iter().any(|(n, _)| n == "inc0_valid"), "ports: {ins:?}");
    let counter = Counter::RxPlacedBytes;
    let base = regs::counter_offset(counter);
    let increments: u64 = 65_538;
    let mut tb = String::from("module tb;\n");
    for (name, width) in &ins {
        writeln!(tb, "  reg [{}:0] {name} = 0;", width - 1).unwrap();
    }
    tb.push_str("  wire s_arready, s_rvalid, s_awready, s_wready, s_bvalid;\n");
    tb.push_str("  wire [31:0] s_rdata;\n  integer i;\n  top dut(");
    let ports: Vec<String> = ins
        .iter()
        .map(|(n, _)| format!(".{n}({n})"))
        .chain(
            [
                "s_arready",
                "s_rvalid",
                "s_rdata",
                "s_awready",
                "s_wready",
                "s_bvalid",
            ]
            .iter()
            .map(|n| format!(".{n}({n})")),
        )
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
    // One AXI4-Lite write (a counter's address clears it: its RAM starts undefined here).
    tb.push_str(
        "  task axil_write(input [15:0] a);\n    begin\n      @(negedge clock); s_awaddr = a; \
         s_awvalid = 1; s_wdata = 0; s_wvalid = 1; s_bready = 1;\n      @(posedge clock); \
         while (!s_awready) @(posedge clock);\n      @(negedge clock); s_awvalid = 0; \
         s_wvalid = 0;\n      while (!s_bvalid) @(negedge clock);\n      @(negedge clock); \
         s_bready = 0;\n    end\n  endtask\n",
    );
    writeln!(
        tb,
        "  initial begin\n    reset = 1; @(negedge clock); @(negedge clock); reset = 0;\n    \
         axil_write({base});\n    for (i = 0; i < 8; i = i + 1) @(negedge clock);\n    \
         @(negedge clock); inc0_index = {}; inc0_amount = 16'hffff; inc0_valid = 1;\n    \
         for (i = 0; i < {increments}; i = i + 1) @(negedge clock);\n    inc0_valid = 0;\n    \
         for (i = 0; i < 64; i = i + 1) @(negedge clock);\n    axil_read({base});\n    \
         axil_read({});\n    axil_read({});\n    $finish;\n  end\nendmodule",
        counter as u32,
        base + 4,
        regs::UDP_PORT,
    )
    .unwrap();
    let got = run_icarus("regs_verilog", "regs", &dut, &tb, &[]);
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
