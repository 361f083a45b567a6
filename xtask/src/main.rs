//! Build orchestration for ferroce: `cargo xtask demo` and `cargo xtask test`.
//!
//! Each command first makes sure the tools it needs are present: Debian packages through
//! apt-get when running as root (otherwise it names the package to install and stops), and
//! Python packages in a venv under `target/venv`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "\
usage: cargo xtask <command> [args]

commands:
  demo [ARGS]   run the demo (two NICs over a lossy 4-path link); ARGS go to `ferroce demo`
  test          install what the tests need, then rustfmt, clippy and every test
  gen [DIR]     write the generated Verilog of every hardware block (default target/verilog)

environment:
  FERROCE_LONG=1   long test mode: many more random cases (slow; not for CI)
";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => demo(&args[1..]),
        Some("test") => test(),
        Some("gen") => generate_verilog(args.get(1).map(String::as_str)),
        _ => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

type Result<T = ()> = std::result::Result<T, String>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn run(cmd: &mut Command) -> Result {
    eprintln!("+ {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {status}"))
    }
}

fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Installs Debian packages for the tools that are missing, or says what to install.
fn ensure_apt(tools: &[(&str, &str)]) -> Result {
    let missing: Vec<&str> = tools
        .iter()
        .filter(|(tool, _)| !on_path(tool))
        .map(|(_, pkg)| *pkg)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() {
        return Err(format!(
            "missing Debian packages: {}. Install them with: sudo apt-get install {}",
            missing.join(", "),
            missing.join(" ")
        ));
    }
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// The venv's python with Scapy in it, created if needed.
fn ensure_python() -> Result<PathBuf> {
    let venv = root().join("target/venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status();
        if !made.is_ok_and(|s| s.success()) {
            ensure_apt(&[("python3", "python3")])?;
            if is_root() {
                run(Command::new("apt-get")
                    .args(["install", "-y", "-qq", "python3-venv"])
                    .env("DEBIAN_FRONTEND", "noninteractive"))?;
            }
            run(Command::new("python3").args(["-m", "venv"]).arg(&venv)).map_err(|e| {
                format!("{e}; install Python 3 with venv support (Debian: python3-venv)")
            })?;
        }
    }
    let has_scapy = Command::new(&python)
        .args(["-c", "import scapy.contrib.roce"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_scapy {
        run(Command::new(&python).args(["-m", "pip", "install", "-q", "scapy>=2.5"]))?;
    }
    Ok(python)
}

fn cargo() -> Command {
    let mut c = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

fn demo(args: &[String]) -> Result {
    run(cargo()
        .args([
            "run",
            "--quiet",
            "--release",
            "--package",
            "ferroce-cli",
            "--",
            "demo",
        ])
        .args(args))?;
    // Show the capture through Wireshark's dissector and ours, when tshark can be had.
    if ensure_apt(&[("tshark", "tshark")]).is_ok() {
        let pcap = root().join("target/demo/ferroce-demo.pcap");
        let lua = root().join("tools/wireshark/ferroce.lua");
        println!("\nThe capture through tshark with the ferroce dissector (first 12 frames):");
        run(Command::new("tshark")
            .arg("-X")
            .arg(format!("lua_script:{}", lua.display()))
            .arg("-r")
            .arg(&pcap)
            .args(["-c", "12"]))?;
    } else {
        println!("\n(tshark not installed: skipping the decoded view of the capture)");
    }
    Ok(())
}

/// The Debian packages the tests drive: packet tools and the HDL toolchain.
const TEST_TOOLS: &[(&str, &str)] = &[
    ("tshark", "tshark"),
    ("verilator", "verilator"),
    ("iverilog", "iverilog"),
    ("yosys", "yosys"),
];

fn generate_verilog(dir: Option<&str>) -> Result {
    let dir = dir.map_or_else(|| root().join("target/verilog"), PathBuf::from);
    run(cargo()
        .args([
            "run",
            "--quiet",
            "--package",
            "ferroce-hdl",
            "--bin",
            "ferroce-hdl-gen",
            "--",
        ])
        .arg(dir))
}

fn test() -> Result {
    ensure_apt(TEST_TOOLS)?;
    let python = ensure_python()?;
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--quiet",
        "--",
        "-D",
        "warnings",
    ]))?;
    let mut t = cargo();
    t.args(["test", "--workspace"])
        .env("FERROCE_PYTHON", &python);
    if env::var_os("FERROCE_LONG").is_some() {
        t.env("PROPTEST_CASES", "20000");
    }
    run(&mut t)
}
