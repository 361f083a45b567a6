//! The generated Verilog through real tools: Verilator's linter with every warning on (minus
//! the waivers in `ferroce_hdl::verilog::LINT_WAIVERS`), Icarus Verilog, and yosys `synth_ecp5`
//! (after the one-hot state-machine directives, as `cargo xtask synth` runs it) with no
//! latches and no combinational loops.

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

#[test]
fn yosys_synthesises_for_ecp5_without_latches_or_loops() {
    let Some(()) = tool("yosys") else { return };
    // The NIC core contains every other block; synthesising the blocks again on their own
    // would only repeat the same modules (minutes of CI for nothing).
    let tops: Vec<_> = generated("yosys")
        .into_iter()
        .filter(|(n, _)| n == "nic")
        .collect();
    assert_eq!(tops.len(), 1, "the NIC core is generated");
    for (name, path) in tops {
        // The same flow as `cargo xtask synth`: the state machines one-hot encoded.
        let script = format!(
            "read_verilog {}; hierarchy -top top; proc; check -assert; flatten; {}; \
             synth_ecp5 -top top; select -assert-none t:$dlatch t:$sr t:$_DLATCH_*; stat",
            path.display(),
            ferroce_hdl::verilog::yosys_fsm_directives()
        );
        let text = run(Command::new("yosys").args(["-q", "-p", &script]));
        assert!(
            !text.to_lowercase().contains("latch inferred"),
            "{name}: {text}"
        );
        // yosys warns about every register whose encoding it was told (the initial value it
        // then ignores): the directives reached the receive engine's state machine.
        assert!(
            text.contains("fsm_encoding attribute on top.engine.state.q"),
            "{name}: the receive engine's state machine was not recoded: {text}"
        );
    }
}
