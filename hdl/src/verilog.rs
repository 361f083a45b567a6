//! Verilog generation for the blocks that are co-simulated or synthesised on their own.

use rust_hdl::prelude::*;

/// Verilog of a block, checked by rust-hdl for undriven signals, with `top` as the top module.
pub fn generate<B: Block>(mut block: B) -> String {
    block.connect_all();
    generate_verilog(&block)
}

/// The RX parser as Verilog (top module `top`).
pub fn rx_parser() -> String {
    generate(crate::rx_parse::RxParser::default())
}

/// Every block that `cargo xtask gen` writes, by file stem.
pub fn all() -> Vec<(&'static str, String)> {
    vec![("rx_parser", rx_parser())]
}

/// Verilator lint warning classes waived for generated code, each with its reason. Everything
/// else `verilator --lint-only -Wall` reports is an error.
pub const LINT_WAIVERS: &[(&str, &str)] = &[
    (
        "WIDTH",
        "rust-hdl writes every literal 32 bits wide; widths are checked by co-simulation",
    ),
    (
        "DECLFILENAME",
        "all modules of a block live in one generated file",
    ),
    (
        "UNUSEDSIGNAL",
        "wide header vectors are sliced into fields; the bytes no check reads stay unused",
    ),
    (
        "UNOPTFLAT",
        "rust-hdl emits a block's whole update as one always @(*), so reading a child's output \
         after driving its inputs looks circular to Verilator; yosys finds no real loop",
    ),
];

/// The `-Wno-...` flags for [`LINT_WAIVERS`].
pub fn lint_waiver_flags() -> Vec<String> {
    LINT_WAIVERS
        .iter()
        .map(|(w, _)| format!("-Wno-{w}"))
        .collect()
}
