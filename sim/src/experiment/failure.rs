//! `failure`: a whole plane fails in the middle of a run.
//!
//! Every host streams Writes to a partner on another leaf over a multi-plane fabric; at
//! `fail_at` after the start every link of plane 0 goes down (no routing reaction: the fabric
//! just blackholes it). Measured from the data arriving at all hosts in bins of five base
//! RTTs: throughput before the failure (the bins between the first and the failure's), the
//! dip, and the time until throughput is back to the surviving planes' share ((P−1)/P of
//! before, 90% of it, in every bin until the first stream ends); per stream the longest wait
//! between two messages, before and after; plus the errors the application saw and whether
//! every message still arrived intact.

use super::*;
use crate::fabric::failure::{Failure, FailureTarget};

/// Runs the experiment.
pub fn run(opts: &Options, progress: &mut dyn FnMut(&str, f64)) -> Result<Report, ExperimentError> {
    let planes: u8 = if opts.quick { 2 } else { 4 };
    let hosts = opts.hosts.unwrap_or(if opts.quick { 4 } else { 16 });
    let mut o = opts.clone();
    o.hosts_per_leaf = (hosts / 2).max(1);
    let msg = opts
        .msg_bytes
        .unwrap_or(if opts.quick { 256 << 10 } else { 1 << 20 }) as u32;
    // Long enough that the failure (at 30%) is far from the ramp-up and the tail.
    let count = if opts.quick { 24 } else { 64 };
    let pairs: Vec<(u32, u32)> = (0..hosts).map(|i| (i, (i + hosts / 2) % hosts)).collect();
    let wl = Arc::new(Workload::streams(hosts, &pairs, msg, count, 8));
    let rtt = opts.base_rtt();
    // Throughput bins of 5 base RTTs: short against the RTO, long enough to smooth packets.
    let bin = 5 * rtt;
    let per_host = planes as f64 * opts.link_gbps;
    let ideal_us = msg as f64 * count as f64 * 8.0 / (per_host * 1e3);
    // At 30% of the run, and never before the end of the third bin, so that at least one
    // whole bin after the ramp-up (the first) tells the throughput before the failure.
    let fail_at = (((ideal_us * 0.3) as Ps) * 1_000_000).max(3 * bin);
    let rto_us = opts.min_rto_us as f64;
    let mut report = Report {
        name: "failure".into(),
        title: format!("Plane failure: plane 0 of {planes} goes down mid-run"),
        setup: vec![
            format!(
                "{hosts} hosts, each Writing {count} × {msg} B to a partner on the other leaf; {planes} planes × {} Gb/s per host; base RTT ≈ {:.1} µs",
                opts.link_gbps,
                rtt as f64 / 1e6
            ),
            format!(
                "plane 0 (every link of it, host ports included) fails {:.0} µs after the start and stays down; no routing reaction",
                fail_at as f64 / 1e6
            ),
            format!(
                "throughput = data arriving at all hosts in bins of 5 base RTTs; recovered = every later bin (until the first stream finishes) at ≥ 90% of (P−1)/P of the pre-failure mean, timed from the failure to the end of the last bin below that; ferroce min RTO {} µs; baseline RC timeout {:.2} ms × retry count 7",
                opts.min_rto_us,
                opts.roce(1).timeout() as f64 / 1e9
            ),
        ],
        table: Table::new(&[
            "stack",
            "before Gb/s",
            "min after Gb/s",
            "dip %",
            "recovered after µs",
            "recovered after (RTOs)",
            "after Gb/s (mean)",
            "after / ((P−1)/P × before)",
            "ferroce timeouts + silent paths / RoCE QPs failed",
            "longest stream stall before µs",
            "longest stream stall after µs",
            "app errors",
            "messages arrived",
            "verified MB",
            "completion µs",
        ]),
        plot: Plot {
            title: "Receive throughput around a plane failure".into(),
            x_label: "time since start (µs)".into(),
            y_label: "Gb/s (all hosts)".into(),
            log_x: false,
            series: vec![],
        },
        ..Default::default()
    };
    // Per ferroce case: recovery, extra stall, application errors, all delivered.
    let mut ferroce: Vec<(Option<f64>, Option<f64>, u64, bool)> = Vec::new();
    // The whole plane (the NICs see their port's link go down), then the same failure with the
    // host cables left up: only the transport's own detection (silent paths, timeouts) helps.
    let cases = [
        (Stack::Ferroce, FailureTarget::Plane(0), "ferroce"),
        (Stack::Roce, FailureTarget::Plane(0), "RoCEv2"),
        (
            Stack::Ferroce,
            FailureTarget::PlaneSpines(0),
            "ferroce, spine links only",
        ),
    ];
    let jobs: Vec<Job> = cases
        .iter()
        .map(|&(stack, target, name)| {
            let sc = Scenario {
                topo: o.topology(hosts, planes),
                wl: wl.clone(),
                loss: vec![],
                failures: vec![Failure {
                    at: fail_at,
                    target,
                    down: true,
                }],
                trace: Some((bin, None)),
                limit: ((ideal_us * 50.0) as Ps * 1_000_000).max(30_000_000 * PS_PER_NS),
            };
            Job::new(stack, sc, &o, name.to_string())
        })
        .collect();
    let outcomes = run_all(&mut report, &jobs, &o, progress)?;
    for ((stack, _, name), r) in cases.into_iter().zip(&outcomes) {
        let tr = r.trace.clone().unwrap_or(ArrivalTrace {
            bin,
            total: vec![],
            host: None,
            by_src: vec![],
        });
        let gbps = |b: u64| b as f64 * 8.0 / (bin as f64 / 1e12) / 1e9;
        let fail_bin = (fail_at / bin) as usize;
        let end_bin = ((r.end - r.start) / bin) as usize;
        // The analysis stops when the first stream finishes: after that fewer hosts send, and
        // the falling total is the workload's tail, not the failure.
        let first_done = (0..hosts)
            .filter_map(|h| {
                let t = wl.outgoing[h as usize]
                    .iter()
                    .map(|&m| r.arrival[m as usize])
                    .max()?;
                (t > 0).then_some(t)
            })
            .min()
            .unwrap_or(r.end);
        let stop_bin = ((first_done.saturating_sub(r.start)) / bin) as usize;
        // Before: skip the first bin (ramp-up) and the one the failure falls in.
        let pre: Vec<f64> = tr
            .total
            .iter()
            .take(fail_bin)
            .skip(1)
            .map(|&b| gbps(b))
            .collect();
        // None without a bin to average (or with nothing in it): no baseline to compare with.
        let before = Some(pre.iter().sum::<f64>() / pre.len().max(1) as f64).filter(|&b| b > 0.0);
        let tail = stop_bin.saturating_sub(1).max(fail_bin + 1);
        let after: Vec<f64> = (fail_bin..tail)
            .map(|b| gbps(tr.total.get(b).copied().unwrap_or(0)))
            .collect();
        let min_after = after.iter().cloned().fold(f64::INFINITY, f64::min);
        let share = (planes as f64 - 1.0) / planes as f64;
        let goal = before.map(|b| 0.9 * b * share);
        // Recovery: the end of the first bin from which every later bin (until the first
        // stream ends) is at the goal.
        // A transport that lost messages has not recovered, whatever its throughput.
        let rec = goal
            .and_then(|goal| (0..after.len()).find(|&i| after[i..].iter().all(|&g| g >= goal)))
            .filter(|_| r.finished && r.app.app_errors == 0);
        // Time from the failure to the end of the last bin below the goal.
        let rec_us =
            rec.map(|i| ((fail_bin + i) as f64 * bin as f64 - fail_at as f64).max(0.0) / 1e6);
        let mean_after = after.iter().sum::<f64>() / after.len().max(1) as f64;
        // Per stream: the longest time without a message arriving, before and after the
        // failure (a stream with messages that never arrived stalls forever).
        let fail_abs = r.start + fail_at;
        let (mut stall_before, mut stall_after) = (0u64, Some(0u64));
        for h in 0..hosts {
            let mut t: Vec<Ps> = wl.outgoing[h as usize]
                .iter()
                .map(|&m| r.arrival[m as usize])
                .collect();
            if t.contains(&0) {
                stall_after = None;
            }
            t.retain(|&x| x > 0);
            t.sort_unstable();
            // From the first arrival on: the wait for the first message is the ramp-up.
            let mut prev = t.first().copied().unwrap_or(r.start);
            for &x in &t {
                let gap = x - prev;
                if x <= fail_abs {
                    stall_before = stall_before.max(gap);
                } else if let Some(s) = stall_after.as_mut() {
                    *s = (*s).max(gap);
                }
                prev = x;
            }
        }
        let stall_before_us = stall_before as f64 / 1e6;
        let stall_after_us = stall_after.map(|s| s as f64 / 1e6);
        if let (Some(0.0), Some(goal)) = (rec_us, goal) {
            report.notes.push(format!(
                "{}: receive throughput never fell below 90% of the surviving planes' share after the failure (lowest bin {:.0} Gb/s, goal {:.0} Gb/s): the other planes' flows carried the data while the dead plane's flows moved: {} when the NIC reported their port's link down, and {} silent paths and {} timeouts found by the transport.",
                name,
                min_after,
                goal,
                r.link_down_moves,
                r.silent_paths,
                r.timeouts
            ));
        }
        if stack == Stack::Ferroce {
            ferroce.push((
                rec_us,
                stall_after_us.map(|a| (a - stall_before_us).max(0.0)),
                r.app.app_errors,
                r.finished,
            ));
        }
        report.plot.series.push(Series {
            name: name.into(),
            points: tr
                .total
                .iter()
                .take(end_bin + 1)
                .enumerate()
                .map(|(i, &b)| (i as f64 * bin as f64 / 1e6, gbps(b)))
                .collect(),
        });
        report.table.push(vec![
            name.into(),
            before.map_or("n/a".into(), |b| f(b, 1)),
            f(min_after, 1),
            before.map_or("n/a".into(), |b| f(100.0 * (1.0 - min_after / b), 1)),
            rec_us.map_or("never".into(), |u| f(u, 1)),
            rec_us.map_or("never".into(), |u| f(u / rto_us, 2)),
            f(mean_after, 1),
            before.map_or("n/a".into(), |b| f(mean_after / (b * share), 3)),
            if stack == Stack::Ferroce {
                format!("{} + {}", r.timeouts, r.silent_paths)
            } else {
                r.roce.qp_failures.to_string()
            },
            f(stall_before_us, 1),
            stall_after_us.map_or("forever (messages lost)".into(), |u| f(u, 1)),
            r.app.app_errors.to_string(),
            format!("{} of {}", r.app.received, r.msgs),
            f(r.app.bytes_verified as f64 / 1e6, 1),
            if r.finished {
                f(r.duration_us(), 1)
            } else {
                "did not finish".into()
            },
        ]);
    }
    let whats = [
        "ferroce recovers from a plane failure within one RTO (throughput back to the surviving planes' share, and no stream stalled more than one RTO longer than its longest stall before the failure), with no application-visible error and every message delivered",
        "the same when only the plane's spine links fail (host cables up: no NIC sees a link go down)",
    ];
    for (what, &(rec, stall, errors, done)) in whats.iter().zip(&ferroce) {
        report.targets.push(Target {
            what: (*what).into(),
            measured: format!(
                "throughput recovered after {}; longest extra stream stall {}; {} application errors, {}",
                rec.map_or("never".into(), |u| format!("{u:.1} µs ({:.2} RTO)", u / rto_us)),
                stall.map_or("forever".into(), |u| format!("{u:.1} µs ({:.2} RTO)", u / rto_us)),
                errors,
                if done { "all messages arrived" } else { "NOT all messages arrived" }
            ),
            met: rec.is_some_and(|u| u <= rto_us)
                && stall.is_some_and(|u| u <= rto_us)
                && errors == 0
                && done,
        });
    }
    report.push_verified_target();
    Ok(report)
}
