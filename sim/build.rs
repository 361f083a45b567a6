//! Generates the Verilog of the `ferroce-hdl` blocks, verilates it with the system's Verilator
//! and compiles it with a small generated C++ shim, so that Rust can drive every block through
//! a port table (see `src/rtl/mod.rs`).
//!
//! Without Verilator the crate still builds: the RTL blocks then report themselves unavailable
//! at run time (`cargo xtask test` and `cargo xtask demo` install Verilator).
//! `FERROCE_NO_RTL=1` at build time skips Verilator altogether (model-only work builds fast).
//! `FERROCE_TRACE=1` at build time adds VCD tracing support (slower); then `FERROCE_VCD=DIR` at
//! run time writes one VCD file per model into DIR.

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
        writeln!(
            rust,
            "    fn {name}_trace(p: *mut c_void, path: *const core::ffi::c_char) -> i32;"
        )
        .unwrap();
    }
    writeln!(rust, "}}\npub(crate) static BLOCKS: &[BlockInfo] = &[").unwrap();
    for (name, verilog) in &blocks {
        let vfile = out.join(format!("{name}.v"));
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
        fs::write(&shim_path, shim(name, &ports, trace)).unwrap();
        build.file(&shim_path);
        writeln!(rust, "    BlockInfo {{ name: {name:?}, ports: &[").unwrap();
        for p in &ports {
            writeln!(rust, "        ({:?}, {}, {}),", p.name, p.width, p.input).unwrap();
        }
        writeln!(
            rust,
            "    ], new: {name}_new, free: {name}_free, eval: {name}_eval, set: {name}_set, get: {name}_get, trace: {name}_trace }},"
        )
        .unwrap();
    }
    writeln!(rust, "];").unwrap();
    build.compile("ferroce_rtl");
    fs::write(out.join("rtl_blocks.rs"), rust).unwrap();
}
