//! `planes`: all-to-all over 1, 2, 4 and 8 planes.
//!
//! Every host sends one message to every other host at once (64 hosts: 4,032 concurrent
//! connections for ferroce, as many QPs for the baseline). Each plane is its own leaf-spine;
//! a host has one NIC port per plane. ferroce spreads each connection's flows over the planes
//! (`entropy % planes`, at least one flow per plane); a baseline QP sits on one plane (its
//! UDP source port modulo the planes). Throughput = payload delivered / completion time;
//! scaling = throughput(P) / (P × throughput(1)).

use super::*;

/// Plane counts.
pub fn counts(quick: bool) -> Vec<u8> {
    if quick { vec![1, 2] } else { vec![1, 2, 4, 8] }
}

/// Runs the experiment.
pub fn run(opts: &Options, progress: &mut dyn FnMut(&str, f64)) -> Result<Report, ExperimentError> {
    let hosts = opts.hosts.unwrap_or(if opts.quick { 8 } else { 64 });
    let msg = opts
        .msg_bytes
        .unwrap_or(if opts.quick { 16 << 10 } else { 64 << 10 }) as u32;
    let wl = Arc::new(Workload::all_to_all(hosts, msg));
    let conns = wl.pairs().len();
    let ps = counts(opts.quick);
    let mut report = Report {
        name: "planes".into(),
        title: format!("Multi-plane scaling: all-to-all on {hosts} hosts ({conns} connections)"),
        setup: vec![
            format!("{hosts} hosts, {} per leaf, non-blocking leaf-spine per plane; every host sends {msg} B to every other host at once; {} Gb/s per port", opts.hosts_per_leaf.min(hosts), opts.link_gbps),
            "ferroce: max(4, P) flows per connection, port = entropy % P; RoCEv2: one QP per pair, port = UDP source port % P".into(),
        ],
        table: Table::new(&[
            "planes", "stack", "connections", "completion µs", "throughput Gb/s", "per host Gb/s",
            "of P × line", "scaling vs 1 plane", "drops", "peak NIC queue KB", "resent", "timeouts", "verified MB", "done",
        ]),
        plot: Plot {
            title: "All-to-all throughput vs planes".into(),
            x_label: "planes".into(),
            y_label: "throughput / (P × one plane)".into(),
            log_x: false,
            series: vec![],
        },
        ..Default::default()
    };
    let total = (ps.len() * 2) as f64;
    let mut k = 0.0;
    let mut scale8 = None;
    let mut one_share = None;
    for stack in [Stack::Ferroce, Stack::Roce] {
        let mut one = None;
        let mut series = Series {
            name: stack.name().into(),
            points: vec![],
        };
        for &p in &ps {
            let ideal_us =
                (hosts - 1) as f64 * msg as f64 * 8.0 / (p as f64 * opts.link_gbps * 1e3);
            let sc = Scenario {
                topo: opts.topology(hosts, p),
                wl: wl.clone(),
                loss: vec![],
                failures: vec![],
                trace: None,
                limit: ((ideal_us * 200.0) as Ps * 1_000_000).max(50_000_000 * PS_PER_NS),
            };
            let label = format!("{} {p} plane(s)", stack.name());
            let base = k;
            let r = super::run(stack, &sc, opts, &mut |x| {
                progress(&label, (base + x) / total)
            })?;
            k += 1.0;
            account(&mut report, &r);
            let thr = r.goodput_gbps();
            let one_thr = *one.get_or_insert(thr);
            if stack == Stack::Ferroce && p == 1 {
                one_share = Some(thr / (hosts as f64 * opts.link_gbps));
            }
            let scaling = thr / (p as f64 * one_thr);
            if stack == Stack::Ferroce && p == 8 {
                scale8 = Some((scaling, r.finished));
            }
            series.points.push((p as f64, scaling));
            report.table.push(vec![
                p.to_string(),
                stack.name().into(),
                conns.to_string(),
                f(r.duration_us(), 1),
                f(thr, 1),
                f(thr / hosts as f64, 1),
                f(thr / (hosts as f64 * p as f64 * opts.link_gbps), 3),
                f(scaling, 3),
                r.drops_marks.0.to_string(),
                f(r.max_nic_queue as f64 / 1e3, 0),
                r.resent.to_string(),
                r.timeouts.to_string(),
                f(r.app.bytes_verified as f64 / 1e6, 1),
                r.done_cell(),
            ]);
        }
        report.plot.series.push(series);
    }
    // A scaling ratio only means something if one plane is itself near line rate: above 1,
    // it says one plane was the worse run, not that planes scale.
    let one_ok = one_share.is_some_and(|s| s >= 0.5);
    report.targets.push(Target {
        what: "ferroce with 8 planes ≥ 0.97 × 8 × one plane (with one plane itself at ≥ 50% of line rate, else the ratio is meaningless)".into(),
        measured: scale8.map_or("8 planes not run (--quick)".into(), |(s, fin)| {
            format!(
                "{s:.3} × 8 × one plane{}; one plane at {:.1}% of line rate",
                if fin { "" } else { ", run incomplete" },
                one_share.unwrap_or(0.0) * 100.0
            )
        }),
        met: scale8.is_some_and(|(s, fin)| s >= 0.97 && fin) && one_ok,
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
