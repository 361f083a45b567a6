//! `alltoall` and `allreduce`: collective completion times at 64 hosts, ferroce vs RoCEv2.
//!
//! All-to-all: every host sends `msg` bytes to every other host at once. Ring all-reduce of
//! `bytes` per host: 2(N−1) steps, each host sending a chunk of bytes/N to its successor once
//! the previous step's chunk from its predecessor arrived (data movement only; the reduction
//! arithmetic is not simulated). Ideal times are bandwidth bounds: all-to-all (N−1)·msg at
//! line rate per host; ring 2(N−1)/N · bytes at line rate (latency not included).

use super::*;

/// Which collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// All-to-all.
    AllToAll,
    /// Ring all-reduce.
    AllReduce,
}

/// Runs the experiment.
pub fn run(
    opts: &Options,
    kind: Kind,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<Report, ExperimentError> {
    let hosts = opts.hosts.unwrap_or(if opts.quick { 8 } else { 64 });
    let rtt = opts.base_rtt();
    let line = opts.link_gbps;
    let (wl, ideal_us, name, what) = match kind {
        Kind::AllToAll => {
            let msg =
                opts.msg_bytes
                    .unwrap_or(if opts.quick { 16 << 10 } else { 64 << 10 }) as u32;
            let ideal = (hosts - 1) as f64 * msg as f64 * 8.0 / (line * 1e3);
            (
                Workload::all_to_all(hosts, msg),
                ideal,
                "alltoall",
                format!("all-to-all, {msg} B per pair"),
            )
        }
        Kind::AllReduce => {
            let bytes = opts
                .msg_bytes
                .unwrap_or(if opts.quick { 1 << 20 } else { 16 << 20 });
            let n = hosts as f64;
            let chunk = (bytes / hosts as u64).max(1) as f64;
            let steps = 2.0 * (n - 1.0);
            // Bandwidth bound: every step moves one chunk over every host's link.
            let ideal = steps * chunk * 8.0 / (line * 1e3);
            (
                Workload::ring_allreduce(hosts, bytes),
                ideal,
                "allreduce",
                format!(
                    "ring all-reduce of {bytes} B per host ({} steps of {} B)",
                    2 * (hosts - 1),
                    bytes / hosts as u64
                ),
            )
        }
    };
    let wl = Arc::new(wl);
    let mut report = Report {
        name: name.into(),
        title: format!("{what} on {hosts} hosts: ferroce vs RoCEv2"),
        setup: vec![
            format!(
                "{hosts} hosts, {} per leaf, non-blocking leaf-spine, 1 plane, {line} Gb/s, base RTT ≈ {:.1} µs, {} B buffers",
                opts.hosts_per_leaf.min(hosts),
                rtt as f64 / 1e6,
                opts.buffer_bytes
            ),
            format!("ideal (bandwidth bound, no latency): {ideal_us:.1} µs"),
        ],
        table: Table::new(&[
            "stack",
            "completion µs",
            "ideal µs",
            "completion / ideal",
            "drops",
            "peak NIC queue KB",
            "wire B per payload B",
            "resent",
            "timeouts",
            "app errors",
            "verified MB",
            "done",
        ]),
        plot: Plot {
            title: format!("{what}: messages completed over time"),
            x_label: "time since start (µs)".into(),
            y_label: "fraction of messages arrived".into(),
            log_x: false,
            series: vec![],
        },
        ..Default::default()
    };
    let mut times = Vec::new();
    let stacks = [Stack::Ferroce, Stack::Roce];
    let jobs: Vec<Job> = stacks
        .iter()
        .map(|&stack| {
            let sc = Scenario {
                topo: opts.topology(hosts, 1),
                wl: wl.clone(),
                loss: vec![],
                failures: vec![],
                trace: None,
                limit: ((ideal_us * 200.0) as Ps * 1_000_000).max(50_000_000 * PS_PER_NS),
            };
            Job::new(stack, sc, opts, stack.name().to_string())
        })
        .collect();
    let outcomes = run_all(&mut report, &jobs, opts, progress)?;
    for (stack, r) in stacks.into_iter().zip(&outcomes) {
        let mut arr: Vec<f64> = r
            .arrival
            .iter()
            .filter(|&&t| t > 0)
            .map(|&t| (t - r.start) as f64 / 1e6)
            .collect();
        arr.sort_by(|a, b| a.total_cmp(b));
        let n = r.msgs.max(1) as f64;
        let step = (arr.len() / 200).max(1);
        report.plot.series.push(Series {
            name: stack.name().into(),
            points: arr
                .iter()
                .enumerate()
                .filter(|(i, _)| i % step == 0 || *i + 1 == arr.len())
                .map(|(i, &t)| (t, (i + 1) as f64 / n))
                .collect(),
        });
        let wire = r.host_wire_bytes as f64 / r.bytes.max(1) as f64;
        times.push((stack, r.duration_us(), r.finished, wire));
        report.table.push(vec![
            stack.name().into(),
            if r.finished {
                f(r.duration_us(), 1)
            } else {
                format!("> {:.1} (limit)", r.duration_us())
            },
            f(ideal_us, 1),
            f(r.duration_us() / ideal_us, 2),
            r.drops_marks.0.to_string(),
            f(r.max_nic_queue as f64 / 1e3, 0),
            f(wire, 4),
            r.resent.to_string(),
            r.timeouts.to_string(),
            r.app.app_errors.to_string(),
            f(r.app.bytes_verified as f64 / 1e6, 1),
            r.done_cell(),
        ]);
    }
    if let [(_, tf, ff, wf), (_, tr, fr, wr)] = times[..] {
        report.targets.push(Target {
            what: format!("ferroce completes the {name} faster than RoCEv2"),
            // The wire ratio says how much of a gap is header and ACK bytes alone: every
            // ferroce data packet carries its placement fields, and its ACKs a SACK bitmap.
            measured: format!(
                "ferroce {tf:.1} µs{}, RoCEv2 {tr:.1} µs{} ({:.3}× faster); ferroce put {:.4}× RoCEv2's wire bytes on the host links",
                if ff { "" } else { " (incomplete)" },
                if fr { "" } else { " (incomplete)" },
                tr / tf.max(1e-9),
                wf / wr.max(1e-9)
            ),
            met: ff && (tf < tr || !fr),
        });
    }
    report.push_verified_target();
    Ok(report)
}
