//! `planes`: all-to-all over 1, 2, 4 and 8 planes.
//!
//! Every host streams messages to every other host at once (64 hosts: 4,032 concurrent
//! connections for ferroce, as many QPs for the baseline): `rounds` all-to-alls of `msg` bytes
//! per pair, all posted at the start, each pair sending its messages in order. Each plane is
//! its own leaf-spine; a host has one NIC port per plane. ferroce spreads each connection's
//! flows over the planes (`entropy % planes`, at least one flow per plane); a baseline QP sits
//! on one plane (its UDP source port modulo the planes).
//!
//! Two measures per plane count P:
//! - **Completion**: payload / completion time of the whole workload, which includes the
//!   start-up (the first RTTs of a 63:1 incast at every host) and the tail.
//! - **Steady state**: new payload placed at the receivers (first copies only: ferroce counts
//!   the NIC's placed bytes, the baseline the in-order packets it accepts; see
//!   `App::placed`) inside a window after the warm-up and before the tail, over the window.
//!   Whole messages completing inside the window would be a biased count: all connections
//!   progress together, so each round's messages complete in a wave. The window is fixed by the workload's
//!   bandwidth bound T(P) (the time every host needs to push its bytes at P × line rate), not
//!   by the transport: from [`WARM_UP`] × T(P) to [`WINDOW_END`] × T(P), and no later than the
//!   first sender whose messages have all arrived (from then on fewer hosts send).
//!
//! Scaling = goodput(P) / (P × goodput(1)), for each measure.

use super::*;
use crate::fabric::workload::PLACED_BIN;

/// Start of the steady-state window, as a fraction of the bandwidth bound.
pub const WARM_UP: f64 = 0.2;
/// End of the steady-state window, as a fraction of the bandwidth bound.
pub const WINDOW_END: f64 = 0.8;

/// Plane counts.
pub fn counts(quick: bool) -> Vec<u8> {
    if quick { vec![1, 2] } else { vec![1, 2, 4, 8] }
}

/// Goodput in Gb/s over the window `[from, to)`, from payload bytes counted in bins of `bin`
/// from time 0 (`placed[i]` covers `[i·bin, (i+1)·bin)`): the window is shrunk to whole bins
/// (`from` rounded up, `to` down). `None` if no whole bin is left.
pub fn window_goodput(placed: &[u64], bin: Ps, from: Ps, to: Ps) -> Option<f64> {
    let bin = bin.max(1);
    let (first, last) = (from.div_ceil(bin), to / bin);
    if last <= first {
        return None;
    }
    let bytes: u64 = (first..last)
        .map(|i| placed.get(i as usize).copied().unwrap_or(0))
        .sum();
    let secs = ((last - first) * bin) as f64 / 1e12;
    Some(bytes as f64 * 8.0 / secs / 1e9)
}

/// The earliest time at which some sender's messages had all arrived (`None` if no sender's
/// did).
pub fn first_sender_done(wl: &Workload, arrival: &[Ps]) -> Option<Ps> {
    wl.outgoing
        .iter()
        .filter(|out| !out.is_empty())
        .filter_map(|out| {
            let mut last = 0;
            for &m in out {
                let t = arrival[m as usize];
                if t == 0 {
                    return None;
                }
                last = last.max(t);
            }
            Some(last)
        })
        .min()
}

/// Runs the experiment.
pub fn run(opts: &Options, progress: &mut dyn FnMut(&str, f64)) -> Result<Report, ExperimentError> {
    let hosts = opts.hosts.unwrap_or(if opts.quick { 8 } else { 64 });
    let msg = opts
        .msg_bytes
        .unwrap_or(if opts.quick { 16 << 10 } else { 64 << 10 }) as u32;
    let rounds = opts.rounds.unwrap_or(if opts.quick { 4 } else { 6 });
    let wl = Arc::new(Workload::all_to_all_rounds(hosts, msg, rounds));
    let conns = wl.pairs().len();
    let ps = counts(opts.quick);
    let per_pair = msg as u64 * rounds as u64;
    let mut report = Report {
        name: "planes".into(),
        title: format!("Multi-plane scaling: all-to-all on {hosts} hosts ({conns} connections)"),
        setup: vec![
            format!(
                "{hosts} hosts, {} per leaf, non-blocking leaf-spine per plane; every host sends {rounds} × {msg} B = {per_pair} B to every other host, all posted at once, each pair in order; {} Gb/s per port",
                opts.hosts_per_leaf.min(hosts),
                opts.link_gbps
            ),
            "ferroce: max(4, P) flows per connection, port = entropy % P; RoCEv2: one QP per pair, port = UDP source port % P".into(),
            format!(
                "completion: payload / time until the last message arrived; steady state: new payload placed at the receivers (ferroce: the NIC's placed bytes; RoCEv2: in-order packets accepted) from {WARM_UP} × T to {WINDOW_END} × T after the start (T = the bandwidth bound at P planes; whole 1 µs bins), and before the first sender's messages had all arrived, over that window; every message verified on arrival; scaling = goodput(P) / (P × goodput(1))"
            ),
        ],
        table: Table::new(&[
            "planes",
            "stack",
            "connections",
            "completion µs",
            "bound µs",
            "throughput Gb/s",
            "of P × line",
            "scaling vs 1 plane",
            "steady window µs",
            "steady Gb/s",
            "steady of P × line",
            "steady scaling",
            "drops",
            "peak NIC queue KB",
            "resent",
            "timeouts",
            "verified MB",
            "done",
        ]),
        plot: Plot {
            title: "All-to-all steady-state goodput vs planes".into(),
            x_label: "planes".into(),
            y_label: "goodput / (P × one plane)".into(),
            log_x: false,
            series: vec![],
        },
        ..Default::default()
    };
    // Every run first; then the table from their outcomes, in the same order.
    // Per plane count: line rate of a host (Gb/s) and the bandwidth bound (µs).
    let bound_at = |p: u8| {
        let line = p as f64 * opts.link_gbps;
        (
            line,
            (hosts - 1) as f64 * per_pair as f64 * 8.0 / (line * 1e3),
        )
    };
    let mut jobs = Vec::new();
    for stack in [Stack::Ferroce, Stack::Roce] {
        for &p in &ps {
            let (_, ideal_us) = bound_at(p);
            let sc = Scenario {
                topo: opts.topology(hosts, p),
                wl: wl.clone(),
                loss: vec![],
                failures: vec![],
                trace: None,
                limit: ((ideal_us * 200.0) as Ps * 1_000_000).max(50_000_000 * PS_PER_NS),
            };
            let label = format!("{} {p} plane(s)", stack.name());
            jobs.push(Job::new(stack, sc, opts, label));
        }
    }
    let outcomes = run_all(&mut report, &jobs, opts, progress)?;
    let mut outcomes = outcomes.iter();
    let mut scale8: Option<(f64, f64, bool)> = None;
    let mut one_share = None;
    for stack in [Stack::Ferroce, Stack::Roce] {
        let mut one: Option<(f64, Option<f64>)> = None;
        let mut series = Series {
            name: format!("{} steady state", stack.name()),
            points: vec![],
        };
        let mut series_done = Series {
            name: format!("{} completion", stack.name()),
            points: vec![],
        };
        for &p in &ps {
            let (line, ideal_us) = bound_at(p);
            let Some(r) = outcomes.next() else { break };
            let thr = r.goodput_gbps();
            // The steady-state window, absolute.
            let bound = (ideal_us * 1e6) as Ps;
            let from = r.start + (bound as f64 * WARM_UP) as Ps;
            let mut to = r.start + (bound as f64 * WINDOW_END) as Ps;
            if let Some(d) = first_sender_done(&wl, &r.arrival) {
                to = to.min(d);
            }
            let steady = window_goodput(&r.placed, PLACED_BIN, from, to);
            let (one_thr, one_steady) = *one.get_or_insert((thr, steady));
            if stack == Stack::Ferroce && p == 1 {
                one_share = Some(steady.unwrap_or(thr) / (hosts as f64 * opts.link_gbps));
            }
            let scaling = thr / (p as f64 * one_thr);
            let steady_scaling = match (steady, one_steady) {
                (Some(s), Some(o)) if o > 0.0 => Some(s / (p as f64 * o)),
                _ => None,
            };
            if stack == Stack::Ferroce && p == 8 {
                scale8 = Some((steady_scaling.unwrap_or(0.0), scaling, r.finished));
            }
            series_done.points.push((p as f64, scaling));
            if let Some(s) = steady_scaling {
                series.points.push((p as f64, s));
            }
            let na = || "n/a".to_string();
            report.table.push(vec![
                p.to_string(),
                stack.name().into(),
                conns.to_string(),
                f(r.duration_us(), 1),
                f(ideal_us, 1),
                f(thr, 1),
                f(thr / (hosts as f64 * line), 3),
                f(scaling, 3),
                if to > from {
                    format!(
                        "{:.1}–{:.1}",
                        (from - r.start) as f64 / 1e6,
                        (to - r.start) as f64 / 1e6
                    )
                } else {
                    na()
                },
                steady.map_or_else(na, |s| f(s, 1)),
                steady.map_or_else(na, |s| f(s / (hosts as f64 * line), 3)),
                steady_scaling.map_or_else(na, |s| f(s, 3)),
                r.drops_marks.0.to_string(),
                f(r.max_nic_queue as f64 / 1e3, 0),
                r.resent.to_string(),
                r.timeouts.to_string(),
                f(r.app.bytes_verified as f64 / 1e6, 1),
                r.done_cell(),
            ]);
        }
        report.plot.series.push(series);
        report.plot.series.push(series_done);
    }
    // A scaling ratio only means something if one plane is itself near line rate: above 1,
    // it says one plane was the worse run, not that planes scale.
    let one_ok = one_share.is_some_and(|s| s >= 0.5);
    report.targets.push(Target {
        what: "ferroce with 8 planes ≥ 0.97 × 8 × one plane in steady state (with one plane itself at ≥ 50% of line rate, else the ratio is meaningless)".into(),
        measured: scale8.map_or("8 planes not run (--quick)".into(), |(s, c, fin)| {
            format!(
                "steady state {s:.3} × 8 × one plane (completion time: {c:.3}){}; one plane at {:.1}% of line rate in steady state",
                if fin { "" } else { ", run incomplete" },
                one_share.unwrap_or(0.0) * 100.0
            )
        }),
        met: scale8.is_some_and(|(s, _, fin)| s >= 0.97 && fin) && one_ok,
    });
    if !one_ok {
        report.notes.push(format!(
            "ferroce on one plane reaches only {:.1}% of line rate in this all-to-all (every host is the target of an (N−1):1 incast at once; see drops and resends): scaling ratios above 1 reflect that, not super-linear planes.",
            one_share.unwrap_or(0.0) * 100.0
        ));
    }
    report.push_verified_target();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_goodput_counts_whole_bins_inside_the_window() {
        // Bins of 1 µs: 1000 B in [0, 1), 2000 B in [1, 2), 3000 B in [2, 3), 4000 B in [3, 4).
        let us = 1_000_000;
        let placed = [1000, 2000, 3000, 4000];
        // [0.5, 3.5) µs shrinks to [1, 3): 5000 B in 2 µs = 20 Gb/s.
        let g = window_goodput(&placed, us, us / 2, 7 * us / 2).unwrap();
        assert!((g - 20.0).abs() < 1e-9, "{g}");
        // Exactly [1, 4): 9000 B in 3 µs = 24 Gb/s; bins past the end count as empty.
        let g = window_goodput(&placed, us, us, 4 * us).unwrap();
        assert!((g - 24.0).abs() < 1e-9, "{g}");
        let g = window_goodput(&placed, us, 3 * us, 5 * us).unwrap();
        assert!((g - 16.0).abs() < 1e-9, "{g}");
        assert_eq!(window_goodput(&placed, us, us / 2, 3 * us / 2), None);
    }

    #[test]
    fn first_sender_done_is_the_earliest_complete_sender() {
        let wl = Workload::all_to_all(3, 10);
        // Messages 0..6: sender of message m is m % 3.
        let mut arrival = vec![10, 20, 30, 40, 15, 60];
        // Sender 0: 10, 40 → 40; sender 1: 20, 15 → 20; sender 2: 30, 60 → 60.
        assert_eq!(first_sender_done(&wl, &arrival), Some(20));
        arrival[4] = 0; // sender 1 never finished
        assert_eq!(first_sender_done(&wl, &arrival), Some(40));
        assert_eq!(first_sender_done(&wl, &[0; 6]), None);
    }
}
