//! Wire demand by block, from a netlist nextpnr has placed (`--write`).
//!
//! Every measured critical path is mostly routing, and the whole core routes only with the
//! static placer and over an hour of router1, so the question for a change is how much wire
//! it asks for and where. This sums each net's
//! half-perimeter wirelength (the bounding box of the cells it connects, in tiles: the usual
//! estimate of the wire a net needs) by the block its name belongs to, and lists the nets whose
//! span times fanout is largest (wide-register enables reaching across the die).

use crate::netlist::{self, Cell};
use std::collections::HashMap;
use std::path::Path;

/// One net's placed extent.
struct Net {
    name: String,
    fanout: usize,
    hpwl: u64,
}

/// The tile of a placed cell, from nextpnr's `NEXTPNR_BEL` attribute (`X12/Y34/SLICEA`).
fn tile(cell: &Cell) -> Option<(u32, u32)> {
    let bel = cell.attributes.get("NEXTPNR_BEL")?.as_str()?;
    let mut parts = bel.split('/');
    let x = parts.next()?.strip_prefix('X')?.parse().ok()?;
    let y = parts.next()?.strip_prefix('Y')?.parse().ok()?;
    Some((x, y))
}

fn placed_nets(path: &Path) -> Result<Vec<Net>, String> {
    let module = netlist::read(path)?
        .modules
        .into_values()
        .max_by_key(|m| m.cells.len())
        .ok_or("no module in the placed netlist")?;
    // Net bit → bounding box and pin count.
    let mut boxes: HashMap<u64, (u32, u32, u32, u32, usize)> = HashMap::new();
    for cell in module.cells.values() {
        let Some((x, y)) = tile(cell) else { continue };
        for bit in cell.connections.values().flatten() {
            let Some(bit) = bit.as_u64() else { continue };
            let b = boxes.entry(bit).or_insert((x, x, y, y, 0));
            b.0 = b.0.min(x);
            b.1 = b.1.max(x);
            b.2 = b.2.min(y);
            b.3 = b.3.max(y);
            b.4 += 1;
        }
    }
    // The shortest name of each bit is the one closest to the source's hierarchy (ties by
    // the first in order, so the report does not depend on hash order).
    let mut names: HashMap<u64, &str> = HashMap::new();
    for (name, net) in &module.netnames {
        for bit in net.bits.iter().filter_map(serde_json::Value::as_u64) {
            let slot = names.entry(bit).or_insert(name);
            if (name.len(), name.as_str()) < (slot.len(), *slot) {
                *slot = name;
            }
        }
    }
    Ok(boxes
        .into_iter()
        .filter(|(_, b)| b.4 > 1)
        .filter_map(|(bit, (x0, x1, y0, y1, pins))| {
            let name = names.get(&bit).copied().unwrap_or("?");
            // The clock runs on the global network, not on general routing.
            (!name.starts_with("$glbnet$")).then(|| Net {
                name: name.to_string(),
                fanout: pins - 1,
                hpwl: u64::from(x1 - x0 + y1 - y0),
            })
        })
        .collect())
}

/// The block a net belongs to: the first `depth` parts of its hierarchical name below the core
/// (the pin-limited wrapper's and the tools' own nets go together).
fn block_of(name: &str, depth: usize) -> String {
    let Some(name) = name.strip_prefix("core.") else {
        return "(wrapper, constants)".into();
    };
    name.split(['.', '$'])
        .take(depth)
        .collect::<Vec<_>>()
        .join(".")
}

/// A Markdown report of the placed netlist's wire demand: by block, by the largest sub-blocks,
/// and the widest-reaching nets.
pub fn report(path: &Path) -> Result<String, String> {
    use std::fmt::Write as _;
    let nets = placed_nets(path)?;
    let total: u64 = nets.iter().map(|n| n.hpwl).sum::<u64>().max(1);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nwire demand after placement: {} nets, {total} tiles of half-perimeter wirelength",
        nets.len()
    );
    for (depth, rows) in [(1, 12), (2, 20)] {
        let mut by: HashMap<String, (u64, usize)> = HashMap::new();
        for n in &nets {
            let e = by.entry(block_of(&n.name, depth)).or_default();
            e.0 += n.hpwl;
            e.1 += 1;
        }
        let mut by: Vec<_> = by.into_iter().collect();
        by.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(&b.0)));
        let _ = writeln!(
            out,
            "\n| {} | nets | wirelength | share |\n|---|---|---|---|",
            if depth == 1 { "block" } else { "part" }
        );
        for (name, (wl, count)) in by.into_iter().take(rows) {
            let share = 100.0 * wl as f64 / total as f64;
            let _ = writeln!(out, "| {name} | {count} | {wl} | {share:.1}% |");
        }
    }
    let mut wide: Vec<&Net> = nets.iter().collect();
    wide.sort_by_key(|n| std::cmp::Reverse(n.hpwl * n.fanout as u64));
    let _ = writeln!(
        out,
        "\n| widest-reaching nets | fanout | span (tiles) |\n|---|---|---|"
    );
    for n in wide.into_iter().take(12) {
        let name: String = n.name.chars().take(90).collect();
        let _ = writeln!(out, "| `{name}` | {} | {} |", n.fanout, n.hpwl);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_bounding_boxes_by_block() {
        let json = r#"{"modules":{"board_top":{
            "cells":{
              "a":{"attributes":{"NEXTPNR_BEL":"X1/Y1/SLICEA"},"connections":{"Q":[5],"D":[6]}},
              "b":{"attributes":{"NEXTPNR_BEL":"X4/Y3/SLICEB"},"connections":{"A":[5]}},
              "c":{"attributes":{"NEXTPNR_BEL":"X2/Y9/SLICEC"},"connections":{"B":[5],"Q":[6]}},
              "d":{"attributes":{},"connections":{"A":[6]}}},
            "netnames":{"core.engine.conn.q":{"bits":[5]},"core.engine.conn.q_long_alias":{"bits":[5]},
                        "core.tx.th":{"bits":[6]}}}}}"#;
        let dir = std::env::temp_dir().join(format!("xtask-wires-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("placed.json");
        std::fs::write(&path, json).unwrap();
        let mut nets = placed_nets(&path).unwrap();
        nets.sort_by(|a, b| a.name.cmp(&b.name));
        // Net 5 spans x 1..4 and y 1..9; net 6 connects a and c (d is unplaced).
        assert_eq!(nets.len(), 2);
        assert_eq!(
            (nets[0].name.as_str(), nets[0].hpwl, nets[0].fanout),
            ("core.engine.conn.q", 11, 2)
        );
        assert_eq!(
            (nets[1].name.as_str(), nets[1].hpwl, nets[1].fanout),
            ("core.tx.th", 9, 1)
        );
        let text = report(&path).unwrap();
        assert!(text.contains("| engine | 1 | 11 | 55.0% |"), "{text}");
        assert!(text.contains("| tx.th | 1 | 9 | 45.0% |"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
