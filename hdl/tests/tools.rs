//! The generated Verilog through real tools: Verilator's linter with every warning on (minus
//! the waivers in `ferroce_hdl::verilog::LINT_WAIVERS`), Icarus Verilog, and yosys: the whole
//! core without latches or combinational loops, and `synth_ecp5` (after the one-hot
//! state-machine directives, as `cargo xtask synth` runs it) on the small blocks by default
//! and on the whole core with `FERROCE_LONG=1`.

use std::path::PathBuf;
use std::process::Command;

fn tool(name: &str) -> Option<()> {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some(());
    }
    if std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_some() {
        println!("SKIPPED: {name} missing");
        return None;
    }
    panic!("{name} is not installed: run `cargo xtask test`, which installs it");
}

/// Every block's Verilog, written into a directory of the calling test's own: the tests run
/// in parallel, and one rewriting a file while a tool of another reads it makes that tool see
/// a truncated file.
fn generated(test: &str) -> Vec<(String, PathBuf)> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("verilog")
        .join(test);
    std::fs::create_dir_all(&dir).unwrap();
    ferroce_hdl::verilog::all()
        .into_iter()
        .map(|(name, v)| {
            let path = dir.join(format!("{name}.v"));
            std::fs::write(&path, v).unwrap();
            (name.to_string(), path)
        })
        .collect()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

#[test]
fn verilator_lint_is_clean_apart_from_the_waived_classes() {
    let Some(()) = tool("verilator") else { return };
    for (name, path) in generated("lint") {
        let text = run(Command::new("verilator")
            .args(["--lint-only", "-Wall", "--top-module", "top"])
            .args(ferroce_hdl::verilog::lint_waiver_flags())
            .arg(&path));
        assert!(!text.contains("%Warning"), "{name}: {text}");
    }
}

#[test]
fn icarus_verilog_compiles_every_block() {
    let Some(()) = tool("iverilog") else { return };
    for (_, path) in generated("icarus") {
        let out = path.with_extension("vvp");
        run(Command::new("iverilog")
            .args(["-g2012", "-o"])
            .arg(&out)
            .arg(&path));
    }
}

/// yosys's front half on the whole NIC core: every process turned into logic (`proc`, where
/// latches would be inferred), `check -assert` (no combinational loops, no multiple drivers),
/// and the one-hot directives landing on the state registers they name.
fn yosys_front_script(path: &std::path::Path) -> String {
    format!(
        "read_verilog {}; hierarchy -top top; proc; check -assert; flatten; {}; \
         select -assert-none t:$dlatch t:$sr t:$_DLATCH_*",
        path.display(),
        ferroce_hdl::verilog::yosys_fsm_directives()
    )
}

#[test]
fn yosys_finds_no_latches_or_loops_in_the_whole_core() {
    let Some(()) = tool("yosys") else { return };
    let (_, path) = generated("yosys_front")
        .into_iter()
        .find(|(n, _)| n == "nic")
        .expect("the NIC core is generated");
    // The directives must name real registers: a renamed state register would otherwise
    // silently stay binary.
    let script = format!(
        "{}; select -assert-any w:engine.state.q a:fsm_encoding=one-hot %i; \
         select -assert-any w:engine.ft.phase.q a:fsm_encoding=one-hot %i",
        yosys_front_script(&path)
    );
    let text = run(Command::new("yosys").args(["-q", "-p", &script]));
    assert!(!text.to_lowercase().contains("latch inferred"), "{text}");
}

/// `synth_ecp5` on `path`, as `cargo xtask synth` runs it (state machines one-hot), asserting
/// that no latch survives; returns yosys's output.
fn synth_ecp5(name: &str, path: &std::path::Path) -> String {
    let script = format!(
        "{}; synth_ecp5 -top top; select -assert-none t:$dlatch t:$sr t:$_DLATCH_*; stat",
        yosys_front_script(path)
    );
    let text = run(Command::new("yosys").args(["-q", "-p", &script]));
    assert!(
        !text.to_lowercase().contains("latch inferred"),
        "{name}: {text}"
    );
    text
}

/// Blocks small enough to synthesise in the default run (about 75 s together on the CI
/// machine); the receive and transmit engines, and the core that holds them all, take about
/// ten minutes and run in the long mode.
const QUICK_SYNTH_BLOCKS: &[&str] = &["rx_parser", "rx_payload", "event_writer", "flow_table"];

#[test]
fn yosys_synthesises_the_small_blocks_for_ecp5() {
    let Some(()) = tool("yosys") else { return };
    let blocks: Vec<_> = generated("yosys_blocks")
        .into_iter()
        .filter(|(n, _)| QUICK_SYNTH_BLOCKS.contains(&n.as_str()))
        .collect();
    assert_eq!(
        blocks.len(),
        QUICK_SYNTH_BLOCKS.len(),
        "every block is generated"
    );
    for (name, path) in blocks {
        synth_ecp5(&name, &path);
    }
}

/// The whole core through `synth_ecp5` (about ten minutes on the CI machine): only with
/// `FERROCE_LONG=1`, as `cargo xtask synth` does the same for a real figure.
#[test]
fn yosys_synthesises_the_whole_core_for_ecp5_in_long_mode() {
    if std::env::var_os("FERROCE_LONG").is_none() {
        println!("SKIPPED: the whole core's synth_ecp5 runs with FERROCE_LONG=1");
        return;
    }
    let Some(()) = tool("yosys") else { return };
    let (name, path) = generated("yosys")
        .into_iter()
        .find(|(n, _)| n == "nic")
        .expect("the NIC core is generated");
    let text = synth_ecp5(&name, &path);
    // yosys warns about every register whose encoding it was told (the initial value it
    // then ignores): the directives reached the receive engine's state machine.
    assert!(
        text.contains("fsm_encoding attribute on top.engine.state.q"),
        "{name}: the receive engine's state machine was not recoded: {text}"
    );
}
