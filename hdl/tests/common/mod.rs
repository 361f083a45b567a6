//! Running generated Verilog under Icarus Verilog, shared by the Verilog tests of single
//! blocks.

use std::path::PathBuf;
use std::process::Command;

/// Whether Icarus is installed; without it the test panics with the install hint unless
/// `FERROCE_ALLOW_MISSING_TOOLS` is set (then the caller skips).
pub fn iverilog_present() -> bool {
    let found = Command::new("sh")
        .args(["-c", "command -v iverilog >/dev/null"])
        .status()
        .is_ok_and(|s| s.success());
    if !found && std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_none() {
        panic!("iverilog is not installed: run `cargo xtask test`, which installs it");
    }
    found
}

/// Compiles `dut` (a module `top`) with the testbench `tb` (and `-D` for each of `defines`)
/// under `CARGO_TARGET_TMPDIR/dir`, runs it and returns every line it printed that parses as
/// hex, parsed.
pub fn run_icarus(dir: &str, name: &str, dut: &str, tb: &str, defines: &[&str]) -> Vec<u64> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let v = dir.join(format!("{name}.v"));
    let tbv = dir.join(format!("{name}_tb.v"));
    let vvp = dir.join(format!("{name}.vvp"));
    std::fs::write(&v, dut).unwrap();
    std::fs::write(&tbv, tb).unwrap();
    let mut cmd = Command::new("iverilog");
    cmd.args(["-g2012", "-o"]).arg(&vvp);
    for d in defines {
        cmd.arg(format!("-D{d}"));
    }
    let out = cmd.arg(&v).arg(&tbv).output().unwrap();
    assert!(
        out.status.success(),
        "iverilog: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("vvp").arg("-n").arg(&vvp).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| u64::from_str_radix(l.trim(), 16).ok())
        .collect()
}
