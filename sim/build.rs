//! Generates the Verilog of the `ferroce-hdl` blocks, verilates it with the system's Verilator
//! and compiles it with a small generated C++ shim, so that Rust can drive every block through
//! a port table (see `src/rtl/mod.rs`).
//!
//! Without Verilator the crate still builds: the RTL blocks then report themselves unavailable
//! at run time (`cargo xtask test` and `cargo xtask demo` install Verilator).
//! `FERROCE_TRACE=1` at build time adds VCD tracing support (slower).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One port of a generated top module.
struct Port {
    name: String,
    width: usize,
    input: bool,
}

/// Reads the port declarations of `module top` from rust-hdl's (non-ANSI) Verilog.
fn ports(verilog: &str) -> Vec<Port> {
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
        let (width, name) = if let Some(r) = rest.strip_prefix('[') {
            let (range, name) = r.split_once(']').expect("range");
            let msb: usize = range
                .split(':')
                .next()
                .unwrap()
                .trim()
                .parse()
                .expect("msb");
            (msb + 1, name.trim())
        } else {
            (1, rest)
        };
        out.push(Port {
            name: name.to_string(),
            width,
            input,
        });
    }
    out
}

fn c_type(width: usize) -> &'static str {
    match width {
        0..=8 => "uint8_t",
        9..=16 => "uint16_t",
        17..=32 => "uint32_t",
        33..=64 => "uint64_t",
        _ => "wide",
    }
}

fn shim(block: &str, ports: &[Port]) -> String {
    let class = format!("V{block}");
    let mut s = String::new();
    writeln!(
        s,
        "#include \"{class}.h\"\n#include \"verilated.h\"\n#include <cstdint>"
    )
    .unwrap();
    writeln!(s, "extern \"C\" {{").unwrap();
    // Each model gets its own context, so models in different threads never share state.
    writeln!(
        s,
        "struct {block}_h {{ VerilatedContext* ctx; {class}* m; }};"
    )
    .unwrap();
    writeln!(
        s,
        "void* {block}_new() {{ auto h = new {block}_h; h->ctx = new VerilatedContext; \
         h->m = new {class}(h->ctx, \"top\"); return h; }}"
    )
    .unwrap();
    writeln!(
        s,
        "void {block}_free(void* p) {{ auto h = static_cast<{block}_h*>(p); h->m->final(); \
         delete h->m; delete h->ctx; delete h; }}"
    )
    .unwrap();
    writeln!(
        s,
        "void {block}_eval(void* p) {{ static_cast<{block}_h*>(p)->m->eval(); }}"
    )
    .unwrap();
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
    let Some(root) = verilator_root() else {
        println!(
            "cargo:warning=verilator not found: RTL blocks unavailable (cargo xtask test installs it)"
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
        .opt_level(2)
        .warnings(false)
        .flag_if_supported("-w")
        .include(root.join("include"))
        .include(root.join("include/vltstd"));
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
    }
    writeln!(rust, "}}\npub(crate) static BLOCKS: &[BlockInfo] = &[").unwrap();
    for (name, verilog) in &blocks {
        let vfile = out.join(format!("{name}.v"));
        fs::write(&vfile, verilog).unwrap();
        let mdir = out.join(format!("vobj_{name}"));
        let _ = fs::remove_dir_all(&mdir);
        let mut cmd = Command::new("verilator");
        cmd.args(["--cc", "-O3", "--x-assign", "fast", "--x-initial", "fast"])
            .args([
                "-Wno-WIDTH",
                "-Wno-DECLFILENAME",
                "-Wno-fatal",
                "--top-module",
                "top",
            ])
            .arg("--prefix")
            .arg(format!("V{name}"))
            .arg("--Mdir")
            .arg(&mdir);
        if trace {
            cmd.arg("--trace");
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
        let ports = ports(verilog);
        let shim_path = out.join(format!("{name}_shim.cpp"));
        fs::write(&shim_path, shim(name, &ports)).unwrap();
        build.file(&shim_path);
        writeln!(rust, "    BlockInfo {{ name: {name:?}, ports: &[").unwrap();
        for p in &ports {
            writeln!(rust, "        ({:?}, {}, {}),", p.name, p.width, p.input).unwrap();
        }
        writeln!(
            rust,
            "    ], new: {name}_new, free: {name}_free, eval: {name}_eval, set: {name}_set, get: {name}_get }},"
        )
        .unwrap();
    }
    writeln!(rust, "];").unwrap();
    build.compile("ferroce_rtl");
    fs::write(out.join("rtl_blocks.rs"), rust).unwrap();
    let _ = Path::new(&out);
}
