//! Generates the Verilog of the `ferroce-hdl` blocks, verilates it with the system's Verilator
//! and compiles it with a small generated C++ shim, so that Rust can drive every block through
//! a port table (see `src/rtl/mod.rs`).
//!
//! Without Verilator the crate still builds: the RTL blocks then report themselves unavailable
//! at run time (`cargo xtask test` and `cargo xtask demo` install Verilator).
//! `FERROCE_NO_RTL=1` at build time skips Verilator altogether (model-only work builds fast).
//! `FERROCE_TRACE=1` at build time adds VCD tracing support (slower); then `FERROCE_VCD=DIR` at
//! run time writes one VCD file per model into DIR.
//!
//! The blocks of [`CYCLE_BLOCKS`] are verilated for whole-cycle stepping (see [`cycle_verilog`]):
//! one evaluation and one call across the FFI per clock cycle instead of two evaluations and a
//! call per port, which is most of the co-simulation's time for the whole core.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use ferroce_hdl::verilog::{TopPort as Port, top_ports as ports};

fn c_type(width: usize) -> &'static str {
    match width {
        0..=8 => "uint8_t",
        9..=16 => "uint16_t",
        17..=32 => "uint32_t",
        33..=64 => "uint64_t",
        _ => "wide",
    }
}

fn shim(block: &str, ports: &[Port], trace: bool) -> String {
    let class = format!("V{block}");
    let mut s = String::new();
    writeln!(
        s,
        "#include \"{class}.h\"\n#include \"verilated.h\"\n#include <cstdint>"
    )
    .unwrap();
    if trace {
        writeln!(s, "#include \"verilated_vcd_c.h\"").unwrap();
    } else {
        writeln!(
            s,
            "class VerilatedVcdC {{ public: void dump(uint64_t) {{}} void close() {{}} }};"
        )
        .unwrap();
    }
    writeln!(s, "extern \"C\" {{").unwrap();
    // Each model gets its own context, so models in different threads never share state.
    writeln!(
        s,
        "struct {block}_h {{ VerilatedContext* ctx; {class}* m; VerilatedVcdC* vcd; uint64_t t; }};"
    )
    .unwrap();
    writeln!(
        s,
        "void* {block}_new() {{ auto h = new {block}_h; h->ctx = new VerilatedContext; \\
         h->m = new {class}(h->ctx, \"top\"); h->vcd = nullptr; h->t = 0; return h; }}"
    )
    .unwrap();
    writeln!(
        s,
        "void {block}_free(void* p) {{ auto h = static_cast<{block}_h*>(p); h->m->final(); \\
         if (h->vcd) {{ h->vcd->close(); delete h->vcd; }} delete h->m; delete h->ctx; delete h; }}"
    )
    .unwrap();
    writeln!(
        s,
        "void {block}_eval(void* p) {{ auto h = static_cast<{block}_h*>(p); h->m->eval(); \\
         if (h->vcd) h->vcd->dump(h->t++); }}"
    )
    .unwrap();
    if trace {
        writeln!(
            s,
            "int {block}_trace(void* p, const char* path) {{ auto h = static_cast<{block}_h*>(p); \\
             h->ctx->traceEverOn(true); h->vcd = new VerilatedVcdC; h->m->trace(h->vcd, 99); \\
             h->vcd->open(path); return 1; }}"
        )
        .unwrap();
    } else {
        writeln!(s, "int {block}_trace(void*, const char*) {{ return 0; }}").unwrap();
    }
    writeln!(
        s,
        "void {block}_set(void* p, int port, const uint32_t* w) {{"
    )
    .unwrap();
    writeln!(
        s,
        "  auto m = static_cast<{block}_h*>(p)->m;\n  switch (port) {{"
    )
    .unwrap();
    for (i, p) in ports.iter().enumerate().filter(|(_, p)| p.input) {
        let body = match c_type(p.width) {
            "wide" => format!(
                "for (int i = 0; i < {}; i++) m->{}[i] = w[i];",
                p.width.div_ceil(32),
                p.name
            ),
            "uint64_t" => format!("m->{} = (uint64_t)w[0] | ((uint64_t)w[1] << 32);", p.name),
            t => format!("m->{} = ({t})w[0];", p.name),
        };
        writeln!(s, "  case {i}: {body} break;").unwrap();
    }
    writeln!(s, "  default: break;\n  }}\n}}").unwrap();
    writeln!(s, "void {block}_get(void* p, int port, uint32_t* w) {{").unwrap();
    writeln!(
        s,
        "  auto m = static_cast<{block}_h*>(p)->m;\n  switch (port) {{"
    )
    .unwrap();
    for (i, p) in ports.iter().enumerate() {
        let body = match c_type(p.width) {
            "wide" => format!(
                "for (int i = 0; i < {}; i++) w[i] = m->{}[i];",
                p.width.div_ceil(32),
                p.name
            ),
            "uint64_t" => format!(
                "w[0] = (uint32_t)m->{0}; w[1] = (uint32_t)(m->{0} >> 32);",
                p.name
            ),
            _ => format!("w[0] = m->{};", p.name),
        };
        writeln!(s, "  case {i}: {body} break;").unwrap();
    }
    writeln!(s, "  default: break;\n  }}\n}}\n}}").unwrap();
    s
}

/// Blocks verilated for whole-cycle stepping: their harness drives every port once per cycle.
const CYCLE_BLOCKS: &[&str] = &["nic"];

/// The top module of a block verilated for whole-cycle stepping.
const CYCLE_TOP: &str = "ferroce_cycle_top";

/// The suffix of the wrapper's registers that hold each input for the core.
const HELD: &str = "_held";

/// The Verilog that Verilator simulates for a block of [`CYCLE_BLOCKS`].
///
/// A cycle under Verilator normally takes two evaluations: one with the cycle's inputs and the
/// clock low, after which the harness reads the outputs, and one for the rising edge. Each
/// evaluation runs the core's whole combinational logic (rust-hdl writes each block as one
/// `always @(*)`), so a cycle costs two passes over it, and more when the inputs feed it
/// directly: Verilator then evaluates the input-dependent logic once before and once after
/// the edge.
///
/// Here a cycle is one evaluation and one pass. The clock toggles once per call and every edge
/// is an active edge (`posedge` becomes `edge`: the generated Verilog uses the clock for
/// nothing but clocking and has no `negedge`). A wrapper holds every input in a register
/// loaded at the edge, so the core's logic reads only registers and Verilator has nothing to
/// evaluate when the harness writes the inputs. One call therefore does, in this order: the
/// clock edge that ends the previous cycle (the core sees the previous cycle's inputs, which
/// its logic was settled with), loads this cycle's inputs, and settles the logic; the outputs
/// are then this cycle's, before its edge, which comes with the next call. To the harness this
/// is the usual cycle (inputs in, outputs out, then the edge), with the edge deferred.
/// The held `reset` starts at 1, so the one edge before the harness's first inputs is a reset
/// edge with every other input zero.
fn cycle_verilog(verilog: &str, ports: &[Port]) -> String {
    assert!(
        !verilog.contains("negedge"),
        "whole-cycle stepping needs a design without negedge logic"
    );
    let sensitivity = "always @(posedge ";
    assert_eq!(
        verilog.matches("posedge").count(),
        verilog.matches(sensitivity).count(),
        "whole-cycle stepping expects posedge only in `always @(posedge clk)`"
    );
    assert_clock_only_clocks(verilog);
    for p in ports {
        assert!(
            !verilog.contains(&format!("{}{HELD}", p.name)),
            "name clash with the held copy of {}",
            p.name
        );
    }
    let mut v = isolate_handshakes(&hoist_clock_copies(&constant_blocks_as_assigns(verilog)))
        .replace(sensitivity, "always @(edge ");
    let names: Vec<&str> = ports.iter().map(|p| p.name.as_str()).collect();
    writeln!(v, "\nmodule {CYCLE_TOP}({});", names.join(", ")).unwrap();
    let mut conns = Vec::new();
    let mut loads = String::new();
    for p in ports {
        let (name, w) = (&p.name, p.width);
        if name == "clock" {
            writeln!(v, "    input wire clock;").unwrap();
            conns.push(".clock(clock)".to_string());
        } else if p.input {
            let init = if name == "reset" { 1 } else { 0 };
            writeln!(v, "    input wire [{}:0] {name};", w - 1).unwrap();
            writeln!(v, "    reg [{}:0] {name}{HELD} = {w}'d{init};", w - 1).unwrap();
            conns.push(format!(".{name}({name}{HELD})"));
            writeln!(loads, "        {name}{HELD} <= {name};").unwrap();
        } else {
            writeln!(v, "    output wire [{}:0] {name};", w - 1).unwrap();
            conns.push(format!(".{name}({name})"));
        }
    }
    writeln!(v, "    top core({});", conns.join(", ")).unwrap();
    writeln!(
        v,
        "    always @(edge clock) begin\n{loads}    end\nendmodule"
    )
    .unwrap();
    v
}

/// `verilog` with every block of constants (`hdl`'s `constants!`) written as continuous
/// assignments of its constants.
///
/// Such a block reads its `reset` only so that an event-driven simulator runs it at all
/// (`hdl/src/consts.rs`); to Verilator that makes every constant a signal recomputed whenever
/// the reset register is loaded, which with held inputs is every cycle: a table lookup per
/// constant per cycle, and every compare or shift by a constant in its users a compare or shift
/// by a variable. As `assign op_write = k_op_write;` the constants fold into their users. A
/// block is converted only when its whole update is `if (reset) begin A end else begin A end`
/// with `A` nothing but `name = k_name;` lines, identical in both branches.
fn constant_blocks_as_assigns(verilog: &str) -> String {
    let mut out = String::with_capacity(verilog.len());
    let mut module: Vec<&str> = Vec::new();
    for line in verilog.lines() {
        module.push(line);
        if line.trim().starts_with("endmodule") {
            out.push_str(&constant_block_as_assigns(&module).unwrap_or_else(|| {
                module.iter().fold(String::new(), |mut s, l| {
                    writeln!(s, "{l}").unwrap();
                    s
                })
            }));
            module.clear();
        }
    }
    for l in module {
        writeln!(out, "{l}").unwrap();
    }
    out
}

/// One module of [`constant_blocks_as_assigns`], or `None` if it is not a block of constants.
fn constant_block_as_assigns(module: &[&str]) -> Option<String> {
    if !module
        .iter()
        .any(|l| l.trim() == "// Constant declarations")
    {
        return None;
    }
    let start = module
        .iter()
        .position(|l| l.trim() == "always @(*) begin")?;
    let body: Vec<&str> = module[start + 1..]
        .iter()
        .map(|l| l.trim())
        .take_while(|l| !l.starts_with("endmodule"))
        .filter(|l| !l.is_empty())
        .collect();
    // if (reset) begin A end else begin A end end
    let (first, rest) = body.split_first()?;
    if *first != "if (reset) begin" {
        return None;
    }
    let n = rest.iter().position(|l| *l == "end")?;
    let (a, rest) = rest.split_at(n);
    if rest.get(1) != Some(&"else begin") {
        return None;
    }
    let b = &rest[2..];
    if b.len() != a.len() + 2 || &b[..a.len()] != a || b[a.len()..] != ["end", "end"] {
        return None;
    }
    let assigns: Vec<(&str, &str)> = a
        .iter()
        .map(|l| {
            let (lhs, rhs) = l.strip_suffix(';')?.split_once(" = ")?;
            let ident = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            (ident(lhs) && ident(rhs) && rhs.starts_with("k_")).then_some((lhs, rhs))
        })
        .collect::<Option<_>>()?;
    let mut s = String::new();
    for l in &module[..start] {
        let t = l.trim();
        let declared = t
            .strip_prefix("output reg ")
            .and_then(|r| r.strip_suffix(';'))
            .and_then(|r| r.split_whitespace().last());
        match declared {
            Some(name) if assigns.iter().any(|(lhs, _)| *lhs == name) => writeln!(
                s,
                "    output wire {};",
                &t["output reg ".len()..t.len() - 1]
            )
            .unwrap(),
            _ => writeln!(s, "{l}").unwrap(),
        }
    }
    for (lhs, rhs) in &assigns {
        writeln!(s, "    assign {lhs} = {rhs};").unwrap();
    }
    writeln!(s, "endmodule").unwrap();
    Some(s)
}

/// `verilog` with every clock copy (`child$clock = clock;`, which rust-hdl writes inside each
/// block's `always @(*)`) turned into a continuous assignment.
///
/// A block of logic that writes a clock is, to Verilator, logic that makes triggers: it runs
/// that whole `always @(*)` in the active region whenever the clock changes, and again after
/// the edge when the registers it reads have changed. Most blocks hand a clock to a child, so
/// most of the core's logic ran twice per cycle. As `assign child$clock = clock;` the copy is
/// a plain alias and the logic runs once, after the edge. Nothing else changes: the copy has
/// no condition (rust-hdl writes it at the top level of the block) and the clock is data to
/// nothing (see [`assert_clock_only_clocks`]).
fn hoist_clock_copies(verilog: &str) -> String {
    let mut out = String::with_capacity(verilog.len());
    let mut module: Vec<&str> = Vec::new();
    for line in verilog.lines() {
        module.push(line);
        if !line.trim().starts_with("endmodule") {
            continue;
        }
        let copies: Vec<&str> = module
            .iter()
            .filter_map(|l| l.trim().strip_suffix(" = clock;"))
            .filter(|lhs| {
                lhs.contains("clock")
                    && lhs
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
            })
            .collect();
        let mut converted = 0;
        for l in module.drain(..) {
            let t = l.trim();
            if t.strip_suffix(" = clock;")
                .is_some_and(|lhs| copies.contains(&lhs))
            {
                continue;
            }
            let declared = ["reg  ", "output reg  "].iter().find_map(|d| {
                t.strip_prefix(d)
                    .and_then(|r| r.strip_suffix(';'))
                    .filter(|name| copies.contains(name))
            });
            if let Some(name) = declared {
                let kind = if t.starts_with("output") {
                    "output wire"
                } else {
                    "wire"
                };
                writeln!(out, "    {kind}  {name};").unwrap();
                converted += 1;
            } else if t.starts_with("endmodule") {
                assert_eq!(
                    converted,
                    copies.len(),
                    "a clock copy without a plain declaration"
                );
                for name in &copies {
                    writeln!(out, "    assign {name} = clock;").unwrap();
                }
                writeln!(out, "{l}").unwrap();
            } else {
                writeln!(out, "{l}").unwrap();
            }
        }
    }
    for l in module {
        writeln!(out, "{l}").unwrap();
    }
    out
}

/// Signals that Verilator is told to compute apart from the rest of their block (by module
/// name suffix): the flags and fill levels of rust-hdl's FIFO logic and the event writer's
/// ready outputs.
///
/// Each rust-hdl block is one `always @(*)`, so a FIFO's block reads `read` and writes `empty`,
/// and its user's block reads `empty` and writes `read`: a loop between blocks where no bit
/// depends on itself. Verilator breaks such loops by evaluating the blocks on them again
/// whenever a signal on the loop changes, and the receive engine's logic, the largest of all,
/// is on several of them. With `isolate_assignments` the flag is computed in a block of its
/// own, with every signal its value depends on within the block (found by removing loops until
/// Verilator reported no UNOPTFLAT for the whole core). Without loops Verilator needs no
/// trigger evaluation and re-run of the blocks on them between the edge and the settled logic.
const ISOLATED: &[(&str, &[&str])] = &[
    (
        "$read_logic",
        &["empty", "almost_empty", "is_empty", "is_full", "fill_level"],
    ),
    (
        "$write_logic",
        &["full", "almost_full", "is_full", "is_empty", "fill_level"],
    ),
    ("top$events", &["ev0_ready", "ev1_ready"]),
    // The completion event is offered in the cycle the message's progress is summed, so
    // `ev_valid` depends on the sum and its terms, which must be computed apart as well.
    (
        "top$engine",
        &["ev_valid", "s_msg_len", "new_done", "s_done", "d_len"],
    ),
];

/// `verilog` with the declarations of [`ISOLATED`] marked for Verilator.
fn isolate_handshakes(verilog: &str) -> String {
    let mut out = String::with_capacity(verilog.len());
    let mut isolated: &[&str] = &[];
    for line in verilog.lines() {
        if let Some(rest) = line.strip_prefix("module ") {
            let name = rest.split('(').next().unwrap_or("");
            isolated = ISOLATED
                .iter()
                .find(|(suffix, _)| name.ends_with(suffix))
                .map_or(&[], |(_, signals)| signals);
        }
        let t = line.trim();
        let declared = ["output reg ", "reg "]
            .iter()
            .find_map(|d| t.strip_prefix(d))
            .and_then(|r| r.strip_suffix(';'))
            .and_then(|r| r.split_whitespace().last());
        match declared {
            Some(name) if isolated.contains(&name) => {
                let l = line.trim_end().strip_suffix(';').unwrap_or(line);
                writeln!(out, "{l} /*verilator isolate_assignments*/;").unwrap();
            }
            _ => writeln!(out, "{line}").unwrap(),
        }
    }
    out
}

/// Panics unless every line of `verilog` that names a clock (any identifier containing `clock`)
/// declares it, connects it to a port, copies it to another clock (`a$clock = clock;`) or is
/// sensitive to its rising edge: the clock is never data, so which level it has in an
/// evaluation cannot change any value, and toggling it once per cycle is the same as a pulse.
fn assert_clock_only_clocks(verilog: &str) {
    let ident = |s: &str| {
        s.contains("clock")
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    for line in verilog
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("clock"))
    {
        let declared = [
            "input wire",
            "output reg",
            "output wire",
            "wire ",
            "reg ",
            "module ",
        ]
        .iter()
        .any(|d| line.starts_with(d));
        let connected = line
            .strip_prefix('.')
            .and_then(|l| l.trim_end_matches(',').strip_suffix(')'))
            .and_then(|l| l.split_once('('))
            .is_some_and(|(port, signal)| ident(port) && ident(signal));
        let copied = line
            .strip_suffix(';')
            .and_then(|l| l.split_once(" = "))
            .is_some_and(|(lhs, rhs)| ident(lhs) && ident(rhs));
        let clocked = line.starts_with("always @(posedge ") || line.starts_with("//");
        assert!(
            declared || connected || copied || clocked,
            "whole-cycle stepping needs the clock used as a clock only, not in: {line}"
        );
    }
}

/// C statements that copy each port between the model and a packed word array (`w`), every
/// port from a word boundary, in declaration order (`clock` left out); inputs are masked to
/// their width, as Verilator expects.
fn packed_copy(ports: &[Port], input: bool) -> String {
    let mut s = String::new();
    let mut at = 0;
    for p in ports
        .iter()
        .filter(|p| p.input == input && p.name != "clock")
    {
        let m = format!("m->{}", p.name);
        let words = p.width.div_ceil(32).max(1);
        let top_mask = if p.width % 32 == 0 {
            "0xffffffffu".to_string()
        } else {
            format!("0x{:x}u", (1u64 << (p.width % 32)) - 1)
        };
        let line = match (c_type(p.width), input) {
            ("wide", true) => format!(
                "for (int i = 0; i < {words}; i++) {m}[i] = w[{at} + i]; {m}[{}] &= {top_mask};",
                words - 1
            ),
            ("wide", false) => format!("for (int i = 0; i < {words}; i++) w[{at} + i] = {m}[i];"),
            ("uint64_t", true) => format!(
                "{m} = (uint64_t)w[{at}] | ((uint64_t)(w[{}] & {top_mask}) << 32);",
                at + 1
            ),
            ("uint64_t", false) => {
                format!(
                    "w[{at}] = (uint32_t){m}; w[{}] = (uint32_t)({m} >> 32);",
                    at + 1
                )
            }
            (t, true) => format!("{m} = ({t})(w[{at}] & {top_mask});"),
            (_, false) => format!("w[{at}] = {m};"),
        };
        writeln!(s, "  {line}").unwrap();
        at += words;
    }
    s
}

/// The whole-cycle entry point of a block of [`CYCLE_BLOCKS`]: `_cycle` takes every input,
/// runs one evaluation (the previous cycle's edge, then these inputs; see [`cycle_verilog`])
/// and returns every output of this cycle.
fn cycle_shim(block: &str, ports: &[Port]) -> String {
    let mut s = String::new();
    let inputs = packed_copy(ports, true);
    let outputs = packed_copy(ports, false);
    writeln!(
        s,
        "extern \"C\" void {block}_cycle(void* p, const uint32_t* in, uint32_t* out) {{"
    )
    .unwrap();
    writeln!(s, "  auto h = static_cast<{block}_h*>(p); auto m = h->m;").unwrap();
    writeln!(s, "  {{ const uint32_t* w = in;\n{inputs}  }}").unwrap();
    writeln!(s, "  m->clock = !m->clock;").unwrap();
    writeln!(s, "  {block}_eval(p);").unwrap();
    writeln!(s, "  {{ uint32_t* w = out;\n{outputs}  }}\n}}").unwrap();
    s
}

fn verilator_root() -> Option<PathBuf> {
    let out = Command::new("verilator")
        .arg("--getenv")
        .arg("VERILATOR_ROOT")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let root = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    root.join("include/verilated.cpp").exists().then_some(root)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../hdl/src");
    println!("cargo:rerun-if-changed=../proto/src");
    println!("cargo:rerun-if-env-changed=FERROCE_TRACE");
    println!("cargo:rerun-if-env-changed=FERROCE_VL_FLAGS");
    // Rebuild when Verilator appears (or changes): a build without it has no RTL blocks.
    let verilator = env::var_os("PATH")
        .and_then(|paths| {
            env::split_paths(&paths)
                .map(|d| d.join("verilator"))
                .find(|p| p.exists())
        })
        .unwrap_or_else(|| PathBuf::from("/usr/bin/verilator"));
    println!("cargo:rerun-if-changed={}", verilator.display());
    println!("cargo::rustc-check-cfg=cfg(ferroce_rtl)");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let blocks = ferroce_hdl::verilog::all();
    let mut rust = String::new();
    for (name, value) in ferroce_hdl::verilog::harness_constants() {
        writeln!(
            rust,
            "/// From `ferroce-hdl`.\npub const {name}: u64 = {value};"
        )
        .unwrap();
    }
    // The generated Verilog of every block, for other simulators (Icarus) and tools.
    writeln!(rust, "/// The generated Verilog of every block, by name.").unwrap();
    writeln!(rust, "pub const VERILOG: &[(&str, &str)] = &[").unwrap();
    for (name, verilog) in &blocks {
        fs::write(out.join(format!("{name}.v")), verilog).unwrap();
        writeln!(
            rust,
            "    ({name:?}, include_str!(concat!(env!(\"OUT_DIR\"), \"/{name}.v\"))),"
        )
        .unwrap();
    }
    writeln!(rust, "];").unwrap();
    println!("cargo:rerun-if-env-changed=FERROCE_NO_RTL");
    // `FERROCE_NO_RTL=1` skips verilation (minutes) for work that only needs the model.
    let skip = env::var_os("FERROCE_NO_RTL").is_some_and(|v| v != "0");
    let root = if skip { None } else { verilator_root() };
    let Some(root) = root else {
        println!(
            "cargo:warning=verilator not found or FERROCE_NO_RTL set: RTL blocks unavailable (cargo xtask test installs it)"
        );
        rust.push_str("pub(crate) static BLOCKS: &[BlockInfo] = &[];\n");
        fs::write(out.join("rtl_blocks.rs"), rust).unwrap();
        return;
    };
    println!("cargo:rustc-cfg=ferroce_rtl");
    let trace = env::var_os("FERROCE_TRACE").is_some();
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .flag_if_supported("-std=c++17")
        // -O3 makes the verilated code about 1.4 times faster than -O2 (wide-vector helpers get
        // specialised to their constant bit ranges); no -march: CI runs on another machine.
        .opt_level(3)
        .warnings(false)
        .flag_if_supported("-w")
        .include(root.join("include"))
        .include(root.join("include/vltstd"));
    // The CRC matrices are parities of masked 64-bit words (`__builtin_parityll`), 3 % of the
    // core's instructions as a shift-and-xor fold; with POPCNT each is one instruction. Every
    // x86-64 CPU since 2008 has it (x86-64-v2); other targets do not take the flag.
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") {
        build.flag("-mpopcnt");
    }
    build.file(root.join("include/verilated.cpp"));
    build.file(root.join("include/verilated_threads.cpp"));
    if trace {
        build.file(root.join("include/verilated_vcd_c.cpp"));
    }
    writeln!(rust, "unsafe extern \"C\" {{").unwrap();
    for (name, _) in &blocks {
        for f in [
            "new() -> *mut c_void",
            "free(p: *mut c_void)",
            "eval(p: *mut c_void)",
        ] {
            writeln!(rust, "    fn {name}_{f};").unwrap();
        }
        writeln!(
            rust,
            "    fn {name}_set(p: *mut c_void, port: i32, w: *const u32);"
        )
        .unwrap();
        writeln!(
            rust,
            "    fn {name}_get(p: *mut c_void, port: i32, w: *mut u32);"
        )
        .unwrap();
        writeln!(
            rust,
            "    fn {name}_trace(p: *mut c_void, path: *const core::ffi::c_char) -> i32;"
        )
        .unwrap();
        if CYCLE_BLOCKS.contains(name) {
            writeln!(
                rust,
                "    fn {name}_cycle(p: *mut c_void, i: *const u32, o: *mut u32);"
            )
            .unwrap();
        }
    }
    writeln!(rust, "}}\npub(crate) static BLOCKS: &[BlockInfo] = &[").unwrap();
    for (name, verilog) in &blocks {
        let ports = ports(verilog);
        let cycle = CYCLE_BLOCKS.contains(name);
        let vfile = if cycle {
            let f = out.join(format!("{name}_cycle.v"));
            fs::write(&f, cycle_verilog(verilog, &ports)).unwrap();
            f
        } else {
            let f = out.join(format!("{name}_sim.v"));
            fs::write(&f, constant_blocks_as_assigns(verilog)).unwrap();
            f
        };
        let mdir = out.join(format!("vobj_{name}"));
        let _ = fs::remove_dir_all(&mdir);
        let mut cmd = Command::new("verilator");
        cmd.args(["--cc", "-O3", "--x-assign", "fast", "--x-initial", "fast"])
            // Smaller C++ functions: the core's logic otherwise lands in a few functions of
            // tens of thousands of lines, with one stack frame holding every wide temporary
            // (zeroed on each call) and poor register allocation; about 10 % fewer seconds
            // per simulated cycle for the whole core (`cargo xtask bench-rtl`).
            .args(["--output-split-cfuncs", "3000"])
            .args([
                "-Wno-WIDTH",
                "-Wno-DECLFILENAME",
                "-Wno-fatal",
                // A block RAM's read of the address whose write is landing is undefined
                // (`ferroce_hdl::ram`); simulated, the inverted old word.
                "-DFERROCE_RAM_POISON",
                "--top-module",
                if cycle { CYCLE_TOP } else { "top" },
            ])
            .arg("--prefix")
            .arg(format!("V{name}"))
            .arg("--Mdir")
            .arg(&mdir);
        if trace {
            cmd.arg("--trace");
        }
        // Extra Verilator flags for experiments on the whole core's simulation speed.
        if let Some(extra) = env::var("FERROCE_VL_FLAGS").ok().filter(|_| cycle) {
            cmd.args(extra.split_whitespace());
        }
        let status = cmd.arg(&vfile).status().expect("run verilator");
        assert!(status.success(), "verilator failed on {}", vfile.display());
        for entry in fs::read_dir(&mdir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "cpp") {
                build.file(&p);
            }
        }
        build.include(&mdir);
        let shim_path = out.join(format!("{name}_shim.cpp"));
        let mut shim_text = shim(name, &ports, trace);
        if cycle {
            shim_text.push_str(&cycle_shim(name, &ports));
        }
        fs::write(&shim_path, shim_text).unwrap();
        build.file(&shim_path);
        writeln!(rust, "    BlockInfo {{ name: {name:?}, ports: &[").unwrap();
        for p in &ports {
            writeln!(rust, "        ({:?}, {}, {}),", p.name, p.width, p.input).unwrap();
        }
        let cycle_fns = if cycle {
            format!("Some(CycleFns {{ cycle: {name}_cycle }})")
        } else {
            "None".to_string()
        };
        writeln!(
            rust,
            "    ], new: {name}_new, free: {name}_free, eval: {name}_eval, set: {name}_set, get: {name}_get, trace: {name}_trace, cycle: {cycle_fns} }},"
        )
        .unwrap();
    }
    writeln!(rust, "];").unwrap();
    build.compile("ferroce_rtl");
    fs::write(out.join("rtl_blocks.rs"), rust).unwrap();
}
