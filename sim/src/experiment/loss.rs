//! `loss`: goodput of long transfers against loss, ferroce and the baseline side by side.
//!
//! Pairs of hosts on two leaves stream messages at each other's receive buffers (sender `i`
//! on leaf 0 to receiver `i` on leaf 1). Loss is applied to every leaf→host link, which each
//! packet (data and ACKs alike) crosses exactly once, so the end-to-end loss probability is the
//! model's `p`: independent (Bernoulli) or bursty (Gilbert-Elliott, mean burst 8 packets). The
//! third model is one bad link: one leaf→spine uplink of the senders' leaf loses `p`, the rest
//! are clean. The fourth is ACK loss: control packets only (ACK, NAK, CNP, CM) on every
//! leaf→host link. Goodput is verified payload per second; ideal is (1 − p) × header efficiency of
//! the transport's full packets (for one bad link and ACK loss the ideal is the efficiency:
//! no data has to be lost).

use super::*;
use crate::fabric::loss::{LossModel, LossScope};

/// The loss probabilities swept.
pub fn points(quick: bool) -> Vec<f64> {
    if quick {
        vec![0.0, 1e-2, 1e-1]
    } else {
        vec![0.0, 1e-4, 1e-3, 1e-2, 5e-2, 1e-1]
    }
}

/// Runs the experiment.
pub fn run(opts: &Options, progress: &mut dyn FnMut(&str, f64)) -> Result<Report, ExperimentError> {
    let pairs = opts
        .hosts
        .map_or(if opts.quick { 1 } else { 4 }, |h| (h / 2).max(1));
    let hosts = 2 * pairs;
    let mut o = opts.clone();
    o.hosts_per_leaf = pairs;
    if o.spines == 0 {
        // At least 4 uplinks, so one bad uplink is one route of several.
        o.spines = pairs.max(4);
    }
    let msg = opts
        .msg_bytes
        .unwrap_or(if opts.quick { 256 << 10 } else { 1 << 20 }) as u32;
    let count = if opts.quick { 4 } else { 16 };
    let pairs_v: Vec<(u32, u32)> = (0..pairs).map(|i| (i, pairs + i)).collect();
    let wl = Arc::new(Workload::streams(hosts, &pairs_v, msg, count, 8));
    let line = opts.link_gbps;
    let ideal_time = wl.total_bytes() as f64 * 8.0 / (pairs as f64 * line * 1e9);
    let models = ["random", "bursty", "bad-link", "ack-loss"];
    let pts = points(opts.quick);
    let mut report = Report {
        name: "loss".into(),
        title: "Goodput under loss: ferroce vs RoCEv2 (go-back-N, DCQCN)".into(),
        setup: vec![
            format!(
                "{pairs} sender(s) on leaf 0 → {pairs} receiver(s) on leaf 1, {} spines, {line} Gb/s links, {} B MTU, {} ns per link (base RTT ≈ {:.1} µs), {} B buffers",
                o.topology(hosts, 1).spines,
                opts.mtu,
                opts.link_delay_ns,
                opts.base_rtt() as f64 / 1e6,
                opts.buffer_bytes
            ),
            format!("each pair: {count} Writes of {msg} B; every byte verified (ferroce: CRC-32 of the receiver's memory; baseline: in-order byte ranges)"),
            "random/bursty: loss on every leaf→host link (each packet, data or ACK, crosses one); bursty = Gilbert-Elliott, mean burst 8 packets; bad-link: one leaf→spine uplink of the senders' leaf; ack-loss: control packets only (ACKs, NAKs, CNPs, CM) on every leaf→host link; ideal for bad-link and ack-loss = header efficiency (no data need be lost)".into(),
            format!("baseline RC timeout 4.096 µs·2^{} = {:.2} ms, retry count 7; ferroce min RTO {} µs", opts.timeout_exp, opts.roce(1).timeout() as f64 / 1e9, opts.min_rto_us),
        ],
        table: Table::new(&[
            "loss model",
            "p",
            "stack",
            "goodput Gb/s (all pairs)",
            "goodput / line",
            "ideal / line",
            "% of ideal",
            "resent pkts",
            "timeouts",
            "repaths",
            "verified MB",
            "done",
        ]),
        plot: Plot {
            title: "Goodput vs loss (fraction of line rate)".into(),
            x_label: "loss probability p".into(),
            y_label: "goodput / line rate".into(),
            log_x: true,
            series: Vec::new(),
        },
        ..Default::default()
    };
    // Every run first, in the order the table lists them; then the table from their outcomes.
    let mut cases = Vec::new();
    let mut jobs = Vec::new();
    for model in models {
        for stack in [Stack::Ferroce, Stack::Roce] {
            for &p in &pts {
                if model != "random" && p == 0.0 {
                    continue;
                }
                let (links, lm, scope) = match model {
                    "random" => (LinkSel::LastHop, LossModel::Bernoulli { p }, LossScope::All),
                    "bursty" => (LinkSel::LastHop, LossModel::bursty(p, 8.0), LossScope::All),
                    "ack-loss" => (
                        LinkSel::LastHop,
                        LossModel::Bernoulli { p },
                        LossScope::ControlOnly,
                    ),
                    _ => (
                        LinkSel::OneUplink,
                        LossModel::Bernoulli { p },
                        LossScope::All,
                    ),
                };
                let sc = Scenario {
                    topo: o.topology(hosts, 1),
                    wl: wl.clone(),
                    loss: vec![LossSpec {
                        links,
                        model: lm,
                        scope,
                    }],
                    failures: Vec::new(),
                    trace: None,
                    // Generous: 200× the ideal transfer time, at least 20 ms.
                    limit: ((ideal_time * 200.0 * 1e12) as Ps).max(20_000_000 * PS_PER_NS),
                };
                let label = format!("{} {model} p={p}", stack.name());
                cases.push((model, stack, p));
                jobs.push(Job::new(stack, sc, &o, label));
            }
        }
    }
    let outcomes = run_all(&mut report, &jobs, &o, progress)?;
    let mut at_1pct = None;
    let mut at_10pct = None;
    for ((model, stack, p), r) in cases.into_iter().zip(&outcomes) {
        let name = format!("{} {model}", stack.name());
        if report.plot.series.last().is_none_or(|s| s.name != name) {
            report.plot.series.push(Series {
                name,
                points: Vec::new(),
            });
        }
        let g = r.goodput_gbps();
        let e2e = if model == "random" || model == "bursty" {
            p
        } else {
            0.0
        };
        let ideal = (1.0 - e2e) * r.efficiency;
        let frac = g / (pairs as f64 * line);
        let of_ideal = if ideal > 0.0 { frac / ideal } else { 0.0 };
        if stack == Stack::Ferroce && model == "random" {
            if (p - 0.01).abs() < 1e-12 {
                at_1pct = Some((of_ideal, frac, r.finished));
            }
            if (p - 0.1).abs() < 1e-12 {
                at_10pct = Some((of_ideal, frac, r.finished));
            }
        }
        report.table.push(vec![
            model.into(),
            format!("{p}"),
            stack.name().into(),
            f(g, 2),
            f(frac, 3),
            f(ideal, 3),
            f(of_ideal * 100.0, 1),
            r.resent.to_string(),
            r.timeouts.to_string(),
            r.repaths.to_string(),
            f(r.app.bytes_verified as f64 / 1e6, 1),
            r.done_cell(),
        ]);
        if let Some(series) = report.plot.series.last_mut() {
            series.points.push((p, frac));
        }
    }
    if let Some((x, frac, fin)) = at_1pct {
        report.targets.push(Target {
            what:
                "ferroce goodput at 1% random loss ≥ 95% of ideal (Meta reports ~86% of line rate)"
                    .into(),
            measured: format!(
                "{:.1}% of ideal, {:.1}% of line rate{}",
                x * 100.0,
                frac * 100.0,
                if fin { "" } else { ", run incomplete" }
            ),
            met: x >= 0.95 && fin,
        });
    }
    if let Some((x, frac, fin)) = at_10pct {
        report.targets.push(Target {
            what: "ferroce goodput at 10% random loss ≥ 85% of ideal".into(),
            measured: format!(
                "{:.1}% of ideal, {:.1}% of line rate{}",
                x * 100.0,
                frac * 100.0,
                if fin { "" } else { ", run incomplete" }
            ),
            met: x >= 0.85 && fin,
        });
    }
    report.push_verified_target();
    Ok(report)
}
