//! Logic depth of a synthesised netlist: for every register input (and every block-RAM or
//! LUT-RAM write input), the most levels of logic on a path to it from a register, a block-RAM
//! output or an input pin.
//!
//! Every critical path measured so far is mostly routing (70–90% of its delay), about one
//! routed net per level of logic, so the levels in front of a register say much of what it
//! will cost once placed. nextpnr's Fmax for one block moves by ±5% with the seed and even
//! with the cell names of an unchanged netlist, which hides a change worth a few per cent;
//! the depth is exact, needs no placement, and lists every deep register at once where the
//! placer's report names one path. It knows nothing of distance: a shallow path across the
//! die is still slow.
//!
//! Levels, in tenths: a LUT4 is one level; the slice's wide-function muxes (`PFUMX`,
//! `L6MUX21`) none, since they sit behind their LUTs in the same slice; a carry cell one
//! level from its LUT inputs and a tenth of a level along the chain (`CIN`); a LUT RAM's read
//! one level.

use crate::netlist::{self, Cell, Module};
use std::collections::HashMap;
use std::path::Path;

/// Tenths of a level from input `port` to output `out` of a combinational cell, or `None` if
/// the cell is not combinational (its outputs start paths and its inputs end them).
fn delay(kind: &str, port: &str, out: &str) -> Option<u32> {
    match kind {
        "LUT4" => Some(10),
        "PFUMX" | "L6MUX21" => Some(0),
        "CCU2C" if port == "CIN" => Some(1),
        "CCU2C" => Some(10),
        // A LUT RAM reads asynchronously: its read address reaches the data out through the
        // slice's LUTs; its writes are clocked.
        "TRELLIS_DPR16X4" if port.starts_with("RAD") && out.starts_with("DO") => Some(10),
        _ => None,
    }
}

/// A clock input: neither starts nor ends a path.
fn is_clock(port: &str) -> bool {
    matches!(port, "CLK" | "CLKA" | "CLKB" | "WCK")
}

/// Whether input `port` of `cell` reaches output `out` through logic.
fn reaches(cell: &Cell, port: &str, out: &str) -> bool {
    cell.is_input(port) && cell.is_output(out) && delay(&cell.kind, port, out).is_some()
}

/// Whether input `port` of `cell` reaches any output through logic.
fn reaches_out(cell: &Cell, port: &str) -> bool {
    cell.port_directions.keys().any(|o| reaches(cell, port, o))
}

/// Whether some input of `cell` reaches output `out` through logic.
fn reached(cell: &Cell, out: &str) -> bool {
    cell.port_directions.keys().any(|p| reaches(cell, p, out))
}

/// One register (or RAM) input's depth.
struct Endpoint {
    /// The register's name (its output net) or the cell's, and the pin.
    name: String,
    tenths: u32,
    /// Where its deepest path starts.
    source: String,
}

/// The depth of every endpoint of `module`.
fn endpoints(module: &Module) -> Vec<Endpoint> {
    // In name order: the report lists the same names, in the same order, every run.
    let mut cells: Vec<(&String, &Cell)> = module.cells.iter().collect();
    cells.sort_by_key(|(name, _)| *name);
    let bit = |v: &serde_json::Value| v.as_u64();
    // The name of each bit: a visible net name, the shortest (synthesis adds long aliases
    // such as `x_LUT4_D_Z` to a register's own `x$q`), then the first in order.
    let mut names: HashMap<u64, (u8, String)> = HashMap::new();
    for (name, net) in &module.netnames {
        for (i, b) in net.bits.iter().enumerate() {
            let Some(b) = bit(b) else { continue };
            let label = if net.bits.len() > 1 {
                format!("{name}[{i}]")
            } else {
                name.clone()
            };
            let better = match names.get(&b) {
                None => true,
                Some((hide, old)) => (net.hide_name, label.len(), &label) < (*hide, old.len(), old),
            };
            if better {
                names.insert(b, (net.hide_name, label));
            }
        }
    }
    let names: HashMap<u64, String> = names.into_iter().map(|(b, (_, n))| (b, n)).collect();
    // The combinational cell driving each bit (bits no logic drives start paths).
    let mut driver: HashMap<u64, usize> = HashMap::new();
    for (i, (_, c)) in cells.iter().enumerate() {
        for (out, bits) in &c.connections {
            if reached(c, out) {
                for b in bits.iter().filter_map(bit) {
                    driver.insert(b, i);
                }
            }
        }
    }
    // Arrival (tenths) and the bit the deepest path starts from, per bit: the combinational
    // cells in topological order (Kahn's), so that every cell is evaluated after all of its
    // drivers whatever order the netlist lists them in. Cells on a combinational loop (none
    // should be left) never come free; they are evaluated last, in name order, their
    // unevaluated inputs counting from zero.
    let comb: Vec<bool> = cells
        .iter()
        .map(|(_, c)| c.port_directions.keys().any(|p| reaches_out(c, p)))
        .collect();
    let mut waiting = vec![0usize; cells.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); cells.len()];
    for (i, (_, c)) in cells.iter().enumerate() {
        if !comb[i] {
            continue;
        }
        for (port, bits) in &c.connections {
            if !c.is_input(port) {
                continue;
            }
            for b in bits.iter().filter_map(bit) {
                if let Some(&d) = driver.get(&b) {
                    waiting[i] += 1;
                    users[d].push(i);
                }
            }
        }
    }
    let mut ready: Vec<usize> = (0..cells.len())
        .filter(|&i| comb[i] && waiting[i] == 0)
        .collect();
    let mut order = Vec::new();
    let mut done = vec![false; cells.len()];
    while let Some(i) = ready.pop() {
        done[i] = true;
        order.push(i);
        for &u in &users[i] {
            waiting[u] -= 1;
            if waiting[u] == 0 {
                ready.push(u);
            }
        }
    }
    order.extend((0..cells.len()).filter(|&i| comb[i] && !done[i]));
    let mut arrival: HashMap<u64, (u32, u64)> = HashMap::new();
    for &i in &order {
        let c = cells[i].1;
        for (out, obits) in &c.connections {
            if !c.is_output(out) {
                continue;
            }
            let mut best: Option<(u32, u64)> = None;
            for (port, bits) in &c.connections {
                let Some(d) = delay(&c.kind, port, out).filter(|_| c.is_input(port)) else {
                    continue;
                };
                for b in bits.iter().filter_map(bit) {
                    let (t, src) = arrival.get(&b).copied().unwrap_or((0, b));
                    // Ties go to the lower source bit: the same path named every run.
                    let cand = (t + d, src);
                    best = Some(match best {
                        Some(old)
                            if (old.0, std::cmp::Reverse(old.1))
                                >= (cand.0, std::cmp::Reverse(cand.1)) =>
                        {
                            old
                        }
                        _ => cand,
                    });
                }
            }
            let best = best.unwrap_or((0, 0));
            for b in obits.iter().filter_map(bit) {
                arrival.insert(b, best);
            }
        }
    }
    let at = |b: u64| arrival.get(&b).copied().unwrap_or((0, b));
    let label = |b: u64| names.get(&b).cloned().unwrap_or_else(|| format!("bit {b}"));
    let mut out = Vec::new();
    for (i, (cname, c)) in cells.iter().enumerate() {
        if c.kind == "$scopeinfo" {
            continue;
        }
        // The register's name: its output net (a flip-flop's Q), else the cell's.
        let own = c
            .connections
            .get("Q")
            .and_then(|q| q.first())
            .and_then(bit)
            .and_then(|b| names.get(&b).cloned())
            .unwrap_or_else(|| (*cname).clone());
        for (port, bits) in &c.connections {
            // Inputs of combinational cells are not endpoints, except a LUT RAM's write side.
            if !c.is_input(port) || is_clock(port) || (comb[i] && reaches_out(c, port)) {
                continue;
            }
            for b in bits.iter().filter_map(bit) {
                let (tenths, src) = at(b);
                out.push(Endpoint {
                    name: format!("{own} {port}"),
                    tenths,
                    source: label(src),
                });
            }
        }
    }
    // The top module's outputs end paths too.
    for p in module.ports.values().filter(|p| p.direction == "output") {
        for b in p.bits.iter().filter_map(bit) {
            let (tenths, src) = at(b);
            out.push(Endpoint {
                name: label(b),
                tenths,
                source: label(src),
            });
        }
    }
    out
}

/// A register's name without its bit index and the pin: its bits are counted together.
fn register_of(endpoint: &str) -> (&str, &str) {
    let (name, pin) = endpoint.rsplit_once(' ').unwrap_or((endpoint, ""));
    let base = match name.rfind('[') {
        Some(i) if name.ends_with(']') => &name[..i],
        _ => name,
    };
    (base, pin)
}

/// Depth figures of a synthesised netlist (yosys JSON), as printed by `synth --depth`: a
/// histogram of the endpoints by levels, how many are deeper than `limit` levels, and the
/// deepest registers with where their deepest path starts.
pub fn report(path: &Path, limit: u32) -> Result<String, String> {
    let netlist = netlist::read(path)?;
    let module = netlist
        .modules
        .values()
        .find(|m| m.attributes.contains_key("top"))
        .ok_or_else(|| format!("{}: no top module", path.display()))?;
    let eps = endpoints(module);
    Ok(format_report(&eps, limit))
}

fn format_report(eps: &[Endpoint], limit: u32) -> String {
    let mut s = String::new();
    let max = eps.iter().map(|e| e.tenths).max().unwrap_or(0);
    let deep = eps.iter().filter(|e| e.tenths > limit * 10).count();
    s += &format!(
        "{} endpoints; deepest {:.1} levels; {} deeper than {} levels\n\n",
        eps.len(),
        max as f64 / 10.0,
        deep,
        limit
    );
    s += "| levels | endpoints |\n|---|---|\n";
    let top = max.div_ceil(10);
    for l in 0..=top {
        let n = eps
            .iter()
            .filter(|e| e.tenths.div_ceil(10) == l && (l > 0 || e.tenths == 0))
            .count();
        if n > 0 {
            let label = if l == 0 {
                "0".to_string()
            } else {
                format!("over {}, up to {l}", l - 1)
            };
            s += &format!("| {label} | {n} |\n");
        }
    }
    // Where they are: by the block a register belongs to (its name's first two parts, e.g.
    // `core.engine`), for the whole core's blocks.
    let mut blocks: HashMap<&str, (usize, u32)> = HashMap::new();
    for e in eps.iter().filter(|e| e.tenths > limit * 10) {
        let name = register_of(&e.name).0;
        // The block ends at the next `.` or `$` (rust-hdl names a block's port registers
        // `core.engine$pr_vlan`) after the first `.`.
        let block = match name.find('.') {
            Some(first) => match name[first + 1..].find(['.', '$']) {
                Some(i) => &name[..first + 1 + i],
                None => name,
            },
            None => name,
        };
        let entry = blocks.entry(block).or_insert((0, 0));
        entry.0 += 1;
        entry.1 = entry.1.max(e.tenths);
    }
    let mut by_block: Vec<_> = blocks.into_iter().collect();
    by_block.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
    if by_block.len() > 1 {
        s += &format!(
            "\nEndpoints deeper than {limit} levels by block:\n\n| block | endpoints | deepest |\n|---|---|---|\n"
        );
        for (block, (n, tenths)) in &by_block {
            s += &format!("| {block} | {n} | {:.1} |\n", *tenths as f64 / 10.0);
        }
    }
    // The deepest registers: bits of one register and pin counted together.
    let mut regs: HashMap<(&str, &str), (u32, usize, &str)> = HashMap::new();
    for e in eps.iter().filter(|e| e.tenths > limit * 10) {
        let key = register_of(&e.name);
        let entry = regs.entry(key).or_insert((0, 0, ""));
        entry.1 += 1;
        if e.tenths > entry.0 {
            entry.0 = e.tenths;
            entry.2 = &e.source;
        }
    }
    let mut rows: Vec<_> = regs.into_iter().collect();
    rows.sort_by(|a, b| {
        b.1.0
            .cmp(&a.1.0)
            .then(b.1.1.cmp(&a.1.1))
            .then(a.0.cmp(&b.0))
    });
    if !rows.is_empty() {
        s += &format!(
            "\nRegisters with inputs deeper than {limit} levels ({} registers), deepest first:\n\n",
            rows.len()
        );
        s += "| register | pin | levels | bits | deepest path from |\n|---|---|---|---|---|\n";
        for ((reg, pin), (tenths, bits, src)) in rows.iter().take(40) {
            s += &format!(
                "| {reg} | {pin} | {:.1} | {bits} | {src} |\n",
                *tenths as f64 / 10.0
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register fed by two LUTs in a row and a carry chain of three cells; a second one fed
    /// straight from an input.
    const NETLIST: &str = r#"{ "modules": { "top": {
        "attributes": { "top": "00000000000000000000000000000001" },
        "ports": { "a": { "direction": "input", "bits": [2] },
                   "y": { "direction": "output", "bits": [9] } },
        "cells": {
          "q1": { "type": "TRELLIS_FF",
                  "port_directions": { "CLK": "input", "DI": "input", "Q": "output" },
                  "connections": { "CLK": [3], "DI": [2], "Q": [4] } },
          "l1": { "type": "LUT4",
                  "port_directions": { "A": "input", "B": "input", "C": "input", "D": "input", "Z": "output" },
                  "connections": { "A": [4], "B": ["1"], "C": ["0"], "D": ["0"], "Z": [5] } },
          "l2": { "type": "LUT4",
                  "port_directions": { "A": "input", "B": "input", "C": "input", "D": "input", "Z": "output" },
                  "connections": { "A": [5], "B": [4], "C": ["0"], "D": ["0"], "Z": [6] } },
          "c1": { "type": "CCU2C",
                  "port_directions": { "A0": "input", "CIN": "input", "COUT": "output", "S0": "output" },
                  "connections": { "A0": [6], "CIN": ["0"], "COUT": [7], "S0": [10] } },
          "c2": { "type": "CCU2C",
                  "port_directions": { "A0": "input", "CIN": "input", "COUT": "output", "S0": "output" },
                  "connections": { "A0": [2], "CIN": [7], "COUT": [11], "S0": [8] } },
          "q2": { "type": "TRELLIS_FF",
                  "port_directions": { "CLK": "input", "DI": "input", "Q": "output" },
                  "connections": { "CLK": [3], "DI": [8], "Q": [9] } }
        },
        "netnames": {
          "a": { "hide_name": 0, "bits": [2] },
          "r1.q": { "hide_name": 0, "bits": [4] },
          "r2.q": { "hide_name": 0, "bits": [9] }
        } } } }"#;

    #[test]
    fn levels_count_luts_and_carries_from_register_outputs() {
        let netlist: netlist::Netlist = serde_json::from_str(NETLIST).unwrap();
        let eps = endpoints(&netlist.modules["top"]);
        let depth = |name: &str| eps.iter().find(|e| e.name == name).map(|e| e.tenths);
        // r1 is fed straight from the input pin.
        assert_eq!(depth("r1.q DI"), Some(0));
        // r2: l1 and l2 (20), the first carry cell from its LUT input (10), one carry hop (1).
        assert_eq!(depth("r2.q DI"), Some(31));
        let deepest = eps.iter().find(|e| e.name == "r2.q DI").unwrap();
        assert_eq!(deepest.source, "r1.q");
        // The output pin is driven by a register: no logic.
        assert_eq!(depth("r2.q"), Some(0));
        let text = format_report(&eps, 2);
        assert!(
            text.contains("deepest 3.1 levels; 1 deeper than 2 levels"),
            "{text}"
        );
        assert!(text.contains("| r2.q | DI | 3.1 | 1 | r1.q |"), "{text}");
        // One block only: no table by block.
        assert!(!text.contains("by block"), "{text}");
    }

    #[test]
    fn deep_endpoints_are_counted_by_block() {
        let ep = |name: &str, tenths| Endpoint {
            name: name.into(),
            tenths,
            source: "core.x.q".into(),
        };
        let eps = [
            ep("core.engine.state.q[1] DI", 81),
            ep("core.engine.state.q[2] DI", 61),
            ep("core.parser.crc$q[3] DI", 70),
            ep("core.parser.crc$q[4] DI", 40),
            ep("core.engine$pr_vlan DI", 60),
        ];
        let text = format_report(&eps, 5);
        assert!(text.contains("| core.engine | 3 | 8.1 |"), "{text}");
        assert!(text.contains("| core.parser | 1 | 7.0 |"), "{text}");
        assert!(
            text.contains("| core.engine.state.q | DI | 8.1 | 2 | core.x.q |"),
            "{text}"
        );
    }
}
