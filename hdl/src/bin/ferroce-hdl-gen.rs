//! Writes the Verilog of every block to a directory (default `target/verilog`).

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/verilog".into());
    std::fs::create_dir_all(&dir)?;
    for (name, verilog) in ferroce_hdl::verilog::all() {
        let path = std::path::Path::new(&dir).join(format!("{name}.v"));
        std::fs::write(&path, verilog)?;
        println!("{}", path.display());
    }
    Ok(())
}
