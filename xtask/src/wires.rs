//! Wire demand by block, from a netlist nextpnr has placed (`--write`).
//!
//! Every measured critical path is mostly routing, and the whole core routes only with the
//! static placer and over an hour of router1, so the question for a change is how much wire
//! it asks for and where. This sums each net's
//! half-perimeter wirelength (the bounding box of the cells it connects, in tiles: the usual
//! estimate of the wire a net needs) by the block its name belongs to, and lists the nets whose
//! span times fanout is largest (wide-register enables reaching across the die).
//!
//! Where the demand piles up matters as much as how much there is: a router fails on its
//! most crowded tiles, not on the total. So the report also estimates congestion by RUDY
//! (rectangular uniform wire density: each net's wirelength spread evenly over its bounding
//! box, summed per tile) and says which blocks' nets crowd the hottest tiles. On the whole
//! core (session 37) that estimate and router2's own congestion heat maps
//! (`--router2-heatmap`) put the crowding in the same place: the middle of the die, along the
//! block-RAM row the receive engine's tables share.

use crate::netlist::{self, Cell};
use std::collections::HashMap;
use std::path::Path;

/// One net's placed extent.
struct Net {
    name: String,
    fanout: usize,
    hpwl: u64,
    /// Bounding box: x0, x1, y0, y1 (tiles, inclusive).
    bbox: (u32, u32, u32, u32),
}

impl Net {
    /// RUDY's wire demand per tile of the bounding box: the wirelength spread evenly over it.
    fn density(&self) -> f64 {
        let (x0, x1, y0, y1) = self.bbox;
        self.hpwl as f64 / f64::from((x1 - x0 + 1) * (y1 - y0 + 1))
    }
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
                bbox: (x0, x1, y0, y1),
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
    out.push_str(&congestion(&nets));
    Ok(out)
}

/// The share of tiles [`congestion`] calls the hottest: 1 in 50.
const HOT_SHARE: usize = 50;

/// RUDY wire demand per tile: each net's half-perimeter wirelength spread evenly over its
/// bounding box. Returns the grid (row-major, `width` columns) and its width.
fn rudy(nets: &[Net]) -> (Vec<f64>, usize) {
    let width = nets
        .iter()
        .map(|n| n.bbox.1 as usize + 1)
        .max()
        .unwrap_or(0);
    let height = nets
        .iter()
        .map(|n| n.bbox.3 as usize + 1)
        .max()
        .unwrap_or(0);
    let mut grid = vec![0.0; width * height];
    for n in nets.iter().filter(|n| n.hpwl > 0) {
        let (x0, x1, y0, y1) = n.bbox;
        let density = n.density();
        for y in y0..=y1 {
            let row = y as usize * width;
            for cell in &mut grid[row + x0 as usize..=row + x1 as usize] {
                *cell += density;
            }
        }
    }
    (grid, width)
}

/// The congestion estimate: the peak tile, where the hottest tiles lie, and whose nets
/// crowd them (by the part a net's name belongs to).
fn congestion(nets: &[Net]) -> String {
    use std::fmt::Write as _;
    let (grid, width) = rudy(nets);
    let mut out = String::new();
    if grid.is_empty() {
        return out;
    }
    let mut order: Vec<usize> = (0..grid.len()).collect();
    // Hottest first; ties by position, so the report does not depend on sort stability.
    order.sort_by(|&a, &b| grid[b].total_cmp(&grid[a]).then(a.cmp(&b)));
    let hot = &order[..(grid.len() / HOT_SHARE).max(1)];
    let at = |i: usize| ((i % width) as u32, (i / width) as u32);
    let (px, py) = at(hot[0]);
    let (mut x0, mut x1, mut y0, mut y1) = (u32::MAX, 0, u32::MAX, 0);
    let mut is_hot = vec![false; grid.len()];
    for &i in hot {
        let (x, y) = at(i);
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
        is_hot[i] = true;
    }
    let mean = grid.iter().sum::<f64>() / grid.len() as f64;
    let _ = writeln!(
        out,
        "\ncongestion estimate (RUDY: each net's wirelength spread over its bounding box): \
         peak {:.1} tiles of wire per tile at X{px}/Y{py} (mean {mean:.1}); the hottest {} \
         tiles (1 in {HOT_SHARE}) lie in X{x0}..{x1}, Y{y0}..{y1}",
        grid[hot[0]],
        hot.len()
    );
    // Each net's demand inside the hottest tiles, by part.
    let mut by: HashMap<String, f64> = HashMap::new();
    for n in nets.iter().filter(|n| n.hpwl > 0) {
        let (bx0, bx1, by0, by1) = n.bbox;
        if bx1 < x0 || bx0 > x1 || by1 < y0 || by0 > y1 {
            continue;
        }
        let mut tiles = 0u32;
        for y in by0.max(y0)..=by1.min(y1) {
            for x in bx0.max(x0)..=bx1.min(x1) {
                tiles += u32::from(is_hot[y as usize * width + x as usize]);
            }
        }
        if tiles > 0 {
            *by.entry(block_of(&n.name, 2)).or_default() += n.density() * f64::from(tiles);
        }
    }
    let total: f64 = by.values().sum::<f64>().max(f64::MIN_POSITIVE);
    let mut by: Vec<_> = by.into_iter().collect();
    by.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let _ = writeln!(
        out,
        "\n| part (demand in the hottest tiles) | share |\n|---|---|"
    );
    for (name, v) in by.into_iter().take(15) {
        let _ = writeln!(out, "| {name} | {:.1}% |", 100.0 * v / total);
    }
    out
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
        // Net 5 (x 1..4, y 1..9: 11 tiles of wire over 36) and net 6 (x 1..2, y 1..9: 9
        // over 18) overlap on x 1..2: the hottest tiles, where 11/36 + 9/18 = 0.81 each.
        assert!(
            text.contains("peak 0.8 tiles of wire per tile at X1/Y1"),
            "{text}"
        );
        assert!(text.contains("| tx.th | 1 | 9 | 45.0% |"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn net(name: &str, bbox: (u32, u32, u32, u32)) -> Net {
        Net {
            name: name.into(),
            fanout: 1,
            hpwl: u64::from(bbox.1 - bbox.0 + bbox.3 - bbox.2),
            bbox,
        }
    }

    #[test]
    fn congestion_spreads_each_net_over_its_box_and_names_the_crowd() {
        // A row and a column crossing at X2/Y0, each 3 tiles of wire over 4 tiles; a net
        // inside one tile asks for no wire; a net far from the crossing.
        let nets = [
            net("core.engine.ft.mem", (0, 3, 0, 0)),
            net("core.tx.ctab.mem", (2, 2, 0, 3)),
            net("core.parser.th", (1, 1, 2, 2)),
            net("core.regs.rd", (0, 0, 2, 3)),
        ];
        let (grid, width) = rudy(&nets);
        assert_eq!((width, grid.len()), (4, 16));
        assert_eq!(grid[2], 1.5);
        assert_eq!(grid[1], 0.75);
        assert_eq!(grid[4 + 2], 0.75);
        assert_eq!(grid[2 * 4], 0.5);
        assert_eq!(grid[2 * 4 + 1], 0.0);
        let text = congestion(&nets);
        // 16 tiles: the hottest one is the crossing, shared equally by the two nets there.
        assert!(
            text.contains("peak 1.5 tiles of wire per tile at X2/Y0"),
            "{text}"
        );
        assert!(
            text.contains("the hottest 1 tiles (1 in 50) lie in X2..2, Y0..0"),
            "{text}"
        );
        assert!(text.contains("| engine.ft | 50.0% |"), "{text}");
        assert!(text.contains("| tx.ctab | 50.0% |"), "{text}");
        assert!(!text.contains("regs.rd"), "{text}");
    }

    #[test]
    fn only_the_hottest_tiles_count_not_their_bounding_box() {
        // Two hot corners of a 10 x 10 grid (two nets crossing at each: 1.0 there) and, between
        // them, a net at 5/6 per tile: inside the hot tiles' bounding box, on no hot tile.
        let nets = [
            net("core.a.p", (0, 1, 0, 0)),
            net("core.a.q", (0, 0, 0, 1)),
            net("core.b.r", (8, 9, 9, 9)),
            net("core.b.s", (9, 9, 8, 9)),
            net("core.c.m", (2, 7, 5, 5)),
        ];
        let text = congestion(&nets);
        assert!(
            text.contains("the hottest 2 tiles (1 in 50) lie in X0..9, Y0..9"),
            "{text}"
        );
        assert!(text.contains("| a.p | 25.0% |"), "{text}");
        assert!(text.contains("| b.s | 25.0% |"), "{text}");
        assert!(!text.contains("c.m"), "{text}");
    }
}
