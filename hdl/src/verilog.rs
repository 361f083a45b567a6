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
    vec![
        ("rx_parser", rx_parser()),
        ("flow_table", flow_table()),
        (
            "tx_frame",
            generate(crate::tx_frame::TxFrameBuilder::default()),
        ),
        (
            "rx_payload",
            generate(crate::rx_payload::RxPayload::default()),
        ),
        ("nic", generate(crate::nic::NicCore::default())),
        ("tx_path", generate(crate::tx_engine::TxPath::default())),
        (
            "event_writer",
            generate(crate::event_writer::EventWriter::default()),
        ),
    ]
}

/// Every block of [`all`] plus those only synthesised on their own (not co-simulated): the
/// receive engine, so that `cargo xtask synth rx_engine` reports its timing apart from the core.
pub fn synth_blocks() -> Vec<(&'static str, String)> {
    let mut v = all();
    v.push(("rx_engine", generate(crate::rx_engine::RxEngine::default())));
    v
}

/// The names of the registers that hold the blocks' state machines (every enum-typed `DFF`):
/// `state` (receive engine, transmit engine's back end, event writer), `fstate` (transmit
/// engine's front end) and `phase` (flow table, payload extractor).
pub const FSM_REGISTERS: &[&str] = &["state", "fstate", "phase"];

/// The yosys command, run after `proc; flatten` and before `synth_ecp5`, that one-hot encodes the
/// state machines of [`FSM_REGISTERS`]. yosys leaves them binary on its own because rust-hdl
/// gives every register an initial value (and judges their many decodes not worth recoding);
/// one-hot turns each `state == X` into one flip-flop. The initial value is then ignored, which
/// is safe because every block resets its state machine before use.
pub fn yosys_fsm_directives() -> String {
    let wires: Vec<String> = FSM_REGISTERS.iter().map(|r| format!("w:*.{r}.q")).collect();
    format!("setattr -set fsm_encoding \"one-hot\" {}", wires.join(" "))
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
        // The port count of every block that checks ports (the core and the transmit path).
        ("PORTS", crate::rx_engine::table_sizes().ports as u64),
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

/// One port of a generated top module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopPort {
    /// Port name.
    pub name: String,
    /// Width in bits.
    pub width: usize,
    /// Direction.
    pub input: bool,
}

/// Reads the port declarations of `module top` from rust-hdl's (non-ANSI) Verilog.
pub fn top_ports(verilog: &str) -> Vec<TopPort> {
    let mut out = Vec::new();
    let mut in_top = false;
    for line in verilog.lines() {
        let l = line.trim();
        if l.starts_with("module top(") {
            in_top = true;
            continue;
        }
        if !in_top {
            continue;
        }
        if l.starts_with("// Stub signals")
            || l.starts_with("// Local signals")
            || l.starts_with("endmodule")
        {
            break;
        }
        let (input, rest) = if let Some(r) = l.strip_prefix("input wire") {
            (true, r)
        } else if let Some(r) = l
            .strip_prefix("output reg")
            .or_else(|| l.strip_prefix("output wire"))
        {
            (false, r)
        } else {
            continue;
        };
        let rest = rest.trim().trim_end_matches(';').trim();
        let parsed = match rest.strip_prefix('[') {
            Some(r) => r.split_once(']').and_then(|(range, name)| {
                let msb: usize = range.split(':').next()?.trim().parse().ok()?;
                Some((msb + 1, name.trim()))
            }),
            None => Some((1, rest)),
        };
        if let Some((width, name)) = parsed {
            out.push(TopPort {
                name: name.to_string(),
                width,
                input,
            });
        }
    }
    out
}

/// A pin-limited board top for synthesis figures: the block's inputs come from a shift register
/// fed by one pin, its outputs are captured and shifted out through another, so no logic is
/// optimised away and the design fits any package. The wrapper adds one flip-flop per port bit
/// (reported with the block's figures). `clock` is driven by the board clock.
pub fn board_wrapper(ports: &[TopPort]) -> String {
    use std::fmt::Write as _;
    let in_bits: usize = ports
        .iter()
        .filter(|p| p.input && p.name != "clock")
        .map(|p| p.width)
        .sum();
    let out_bits: usize = ports.iter().filter(|p| !p.input).map(|p| p.width).sum();
    let mut v = String::new();
    let _ = writeln!(
        v,
        "module board_top(input wire clk, input wire sin, input wire load, output wire sout);"
    );
    let _ = writeln!(v, "  reg [{}:0] ins;", in_bits.max(1) - 1);
    let _ = writeln!(v, "  reg [{}:0] outs;", out_bits.max(1) - 1);
    let _ = writeln!(v, "  wire [{}:0] outw;", out_bits.max(1) - 1);
    let _ = writeln!(v, "  always @(posedge clk) ins <= {{ins, sin}};");
    let _ = writeln!(
        v,
        "  always @(posedge clk) outs <= load ? outw : {{outs, 1'b0}};"
    );
    let _ = writeln!(v, "  assign sout = outs[{}];", out_bits.max(1) - 1);
    let _ = write!(v, "  top core(");
    let (mut i, mut o) = (0, 0);
    let mut conns = Vec::new();
    for p in ports {
        let expr = if p.name == "clock" {
            "clk".to_string()
        } else if p.input {
            i += p.width;
            format!("ins[{}:{}]", i - 1, i - p.width)
        } else {
            o += p.width;
            format!("outw[{}:{}]", o - 1, o - p.width)
        };
        conns.push(format!(".{}({expr})", p.name));
    }
    let _ = writeln!(v, "{});\nendmodule", conns.join(", "));
    v
}

#[cfg(test)]
mod tests {
    use super::FSM_REGISTERS;

    /// Every register of an enum type (a state machine) in the blocks' sources is one that
    /// [`super::yosys_fsm_directives`] one-hot encodes, so a new state machine under another name
    /// cannot stay binary unnoticed.
    #[test]
    fn every_state_machine_register_is_one_hot_encoded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let sources: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "rs"))
            .map(|path| {
                let text = std::fs::read_to_string(&path).unwrap();
                (path, text)
            })
            .collect();
        // Registers of a `LogicStruct` type are data (fields side by side), not state machines.
        let mut structs = Vec::new();
        for (_, text) in &sources {
            let mut derived = false;
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with("#[derive(") && line.contains("LogicStruct") {
                    derived = true;
                } else if derived && let Some(rest) = line.strip_prefix("struct ") {
                    structs.push(rest.trim_end_matches(" {").to_string());
                    derived = false;
                }
            }
        }
        let mut found = Vec::new();
        for (path, text) in &sources {
            for line in text.lines() {
                let Some((name, ty)) = line.trim().split_once(": DFF<") else {
                    continue;
                };
                let ty = ty.trim_end_matches(">,");
                // Enum types are named in CamelCase; `Bit`, `Bits<N>` and generics are data.
                let is_enum = ty.len() > 1
                    && ty.starts_with(|c: char| c.is_ascii_uppercase())
                    && !ty.starts_with("Bit")
                    && !structs.iter().any(|s| s == ty);
                if is_enum {
                    let name = name.trim_start_matches("pub ").to_string();
                    assert!(
                        FSM_REGISTERS.contains(&name.as_str()),
                        "{}: `{name}: DFF<{ty}>` is a state machine not in FSM_REGISTERS",
                        path.display()
                    );
                    found.push(name);
                }
            }
        }
        // The receive engine, both halves of the transmit engine, the event writer, the flow
        // table and the payload extractor.
        assert_eq!(found.len(), 6, "{found:?}");
    }
}
