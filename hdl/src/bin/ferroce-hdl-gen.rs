//! Writes the Verilog of every block (the co-simulated ones and the receive engine) to a directory (default `target/verilog`): `NAME.v`, and
//! with `--board` also `NAME_board.v`, the pin-limited synthesis wrapper, and `fsm.ys`, the
//! yosys commands that one-hot encode the state machines.

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let board = args.iter().any(|a| a == "--board");
    let dir = args.iter().find(|a| !a.starts_with("--")).cloned();
    let dir = dir.unwrap_or_else(|| "target/verilog".into());
    std::fs::create_dir_all(&dir)?;
    for (name, verilog) in ferroce_hdl::verilog::synth_blocks() {
        let path = std::path::Path::new(&dir).join(format!("{name}.v"));
        std::fs::write(&path, &verilog)?;
        println!("{}", path.display());
        if board {
            let ports = ferroce_hdl::verilog::top_ports(&verilog);
            let path = std::path::Path::new(&dir).join(format!("{name}_board.v"));
            std::fs::write(&path, ferroce_hdl::verilog::board_wrapper(&ports))?;
            println!("{}", path.display());
        }
    }
    if board {
        let path = std::path::Path::new(&dir).join("fsm.ys");
        let script = ferroce_hdl::verilog::yosys_fsm_directives() + "\n";
        std::fs::write(&path, script)?;
        println!("{}", path.display());
    }
    Ok(())
}
