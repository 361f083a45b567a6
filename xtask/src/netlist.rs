//! The parts of a yosys or nextpnr JSON netlist that the reports read (`depth`, `wires`).

use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A netlist: its modules by name.
#[derive(Deserialize)]
pub struct Netlist {
    pub modules: HashMap<String, Module>,
}

/// One module: attributes (`top` marks the top), ports, cells and named nets.
#[derive(Deserialize)]
pub struct Module {
    #[serde(default)]
    pub attributes: HashMap<String, serde_json::Value>,
    #[serde(default)]
    pub ports: HashMap<String, Port>,
    #[serde(default)]
    pub cells: HashMap<String, Cell>,
    #[serde(default)]
    pub netnames: HashMap<String, NetName>,
}

/// A module port: direction and net bits.
#[derive(Deserialize)]
pub struct Port {
    pub direction: String,
    pub bits: Vec<serde_json::Value>,
}

/// A cell: its type, attributes (a placed netlist's `NEXTPNR_BEL`), and its pins.
#[derive(Deserialize)]
pub struct Cell {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub attributes: HashMap<String, serde_json::Value>,
    // Ordered, so that a walk over the pins (and of two equal paths, the one named) is the
    // same every run.
    #[serde(default)]
    pub port_directions: BTreeMap<String, String>,
    #[serde(default)]
    pub connections: BTreeMap<String, Vec<serde_json::Value>>,
}

impl Cell {
    /// Whether pin `port` is an input.
    pub fn is_input(&self, port: &str) -> bool {
        self.port_directions.get(port).map(String::as_str) == Some("input")
    }

    /// Whether pin `port` is an output.
    pub fn is_output(&self, port: &str) -> bool {
        self.port_directions.get(port).map(String::as_str) == Some("output")
    }
}

/// A named net (`hide_name` set for the tools' own names) and its bits.
#[derive(Deserialize)]
pub struct NetName {
    #[serde(default)]
    pub hide_name: u8,
    pub bits: Vec<serde_json::Value>,
}

/// Reads the netlist at `path`.
pub fn read(path: &Path) -> Result<Netlist, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))
}
