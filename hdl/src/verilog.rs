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

/// Address bits of the flow table: 1024 flows.
pub const FLOW_TABLE_ADDR_BITS: usize = 10;

/// The flow table (1024 flows) as Verilog (top module `top`).
pub fn flow_table() -> String {
    generate(crate::flow_table::FlowTable::<FLOW_TABLE_ADDR_BITS>::default())
}

/// Every block that `cargo xtask gen` writes, by file stem.
pub fn all() -> Vec<(&'static str, String)> {
    vec![("rx_parser", rx_parser()), ("flow_table", flow_table())]
}

/// Constants the co-simulation harnesses need, as (name, value): written by `ferroce-sim`'s
/// build script into its generated code so that the harness never keeps its own copy.
pub fn harness_constants() -> Vec<(&'static str, u64)> {
    use crate::flow_table as f;
    vec![
        ("FLOW_OP_INIT", f::OP_INIT),
        ("FLOW_OP_CLASSIFY", f::OP_CLASSIFY),
        ("FLOW_OP_ACCEPT", f::OP_ACCEPT),
        ("FLOW_OP_ACK", f::OP_ACK),
        ("FLOW_OP_READ", f::OP_READ),
        ("FLOW_CLASS_DUPLICATE", f::CLASS_DUPLICATE),
        ("FLOW_CLASS_NEW", f::CLASS_NEW),
        ("FLOW_CLASS_OUT_OF_WINDOW", f::CLASS_OUT_OF_WINDOW),
        ("FLOW_TABLE_ADDR_BITS", FLOW_TABLE_ADDR_BITS as u64),
    ]
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
        "UNUSEDPARAM",
        "rust-hdl declares a state enum's values in every module that carries the enum",
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
