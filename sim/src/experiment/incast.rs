//! `incast`: N senders write one message each to one receiver at the same instant.
//!
//! Measured from the receiver's arrivals per sender (data bytes arriving, in bins of 1/8 base
//! RTT):
//! - settling: the senders' rates are averaged over windows of W = one base RTT, or the time
//!   for every sender to send 4 packets at its fair share C / N if that is longer (at N = 128
//!   a sender's share of one RTT is a fraction of a packet, so a rate can only be judged over
//!   a longer window). A window is fair when Jain's index over the senders' bytes is ≥ 0.95,
//!   the receiver's link is ≥ 80% busy and every sender is within ±50% of its fair share. Windows slide by 1/8 RTT from the first data byte arriving at the
//!   receiver to the first sender's message arriving; the incast has settled at the first
//!   window start from which every window is fair, counted in base RTTs from the first byte.
//!   The first fair window's start is given too (the old measure, which did not ask for
//!   fairness to last).
//! - Jain's index over the bytes each sender delivered until the first sender finished.
//! - peak queue: the largest switch queue (bytes), which is the receiver's last hop.

use super::*;
use crate::fabric::loss::LossScope;

/// Sender counts.
pub fn sizes(quick: bool) -> Vec<u32> {
    if quick { vec![8] } else { vec![8, 32, 128] }
}

/// Trace bins per base RTT: fine enough to time the settling to an eighth of an RTT.
const BINS_PER_RTT: u64 = 8;

/// Tolerance of a sender's bytes in a window around its fair share: ±50%, i.e. about ±2 of
/// the 4 (or a few more) packets a window holds at the fair share; a finer band would judge
/// the packet count's rounding. Jain's index over 128 senders hardly moves when one of them
/// stalls, so the band is what catches a sender starved by a loss.
const TOLERANCE: f64 = 0.5;

/// When the receiver's inbound traffic settled to fair shares.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Settling {
    /// Bin of the first data byte arriving at the receiver.
    first: usize,
    /// First window start from which every window (ending before the first sender finished)
    /// is fair; `None` if the last window is not.
    settled: Option<usize>,
    /// First window start whose window is fair at all.
    first_fair: Option<usize>,
}

/// Whether one window of per-sender bytes is fair: Jain ≥ 0.95, the receiver link ≥ 80%
/// busy, and every sender within `TOLERANCE` of `fair` bytes.
fn window_fair(per: &[f64], fair: f64) -> bool {
    let sum: f64 = per.iter().sum();
    jain(per) >= 0.95
        && sum >= 0.8 * fair * per.len() as f64
        && per.iter().all(|&x| (x - fair).abs() <= TOLERANCE * fair)
}

/// Slides a window of `w` bins, one bin at a time, from the bin of the first arrival to the
/// last window that ends by bin `end` (exclusive: the first sender's message had arrived).
/// `fair` is one sender's fair share of a window in wire bytes.
fn settling(
    by_src: &[Vec<u64>],
    senders: &[u32],
    w: usize,
    end: usize,
    fair: f64,
) -> Option<Settling> {
    let total = |b: usize| {
        by_src.get(b).map_or(0, |row| {
            senders
                .iter()
                .map(|&s| row.get(s as usize).copied().unwrap_or(0))
                .sum::<u64>()
        })
    };
    let first = (0..by_src.len()).find(|&b| total(b) > 0)?;
    // Prefix sums per sender over the bins.
    let bins = end.min(by_src.len());
    let mut cum = vec![vec![0u64; senders.len()]; bins + 1];
    for b in 0..bins {
        for (i, &s) in senders.iter().enumerate() {
            let v = by_src[b].get(s as usize).copied().unwrap_or(0);
            cum[b + 1][i] = cum[b][i] + v;
        }
    }
    let fair_at = |k: usize| {
        let per: Vec<f64> = (0..senders.len())
            .map(|i| (cum[k + w][i] - cum[k][i]) as f64)
            .collect();
        window_fair(&per, fair)
    };
    let starts: Vec<usize> = (first..).take_while(|&k| k + w <= bins).collect();
    let ok: Vec<bool> = starts.iter().map(|&k| fair_at(k)).collect();
    let first_fair = starts.iter().zip(&ok).find(|(_, o)| **o).map(|(&k, _)| k);
    // The earliest start after which no window is unfair.
    let settled = match ok.iter().rposition(|o| !o) {
        None => starts.first().copied(),
        Some(j) => starts.get(j + 1).copied(),
    };
    Some(Settling {
        first,
        settled,
        first_fair,
    })
}

/// Runs the experiment.
pub fn run(opts: &Options, progress: &mut dyn FnMut(&str, f64)) -> Result<Report, ExperimentError> {
    let msg = opts
        .msg_bytes
        .unwrap_or(if opts.quick { 256 << 10 } else { 1 << 20 }) as u32;
    let ns = match opts.hosts {
        Some(h) => vec![h - 1],
        None => sizes(opts.quick),
    };
    let rtt = opts.base_rtt();
    let line = opts.link_gbps;
    let bin = (rtt / BINS_PER_RTT as Ps).max(1);
    let line_bytes_per_bin = line * 1e9 / 8.0 * bin as f64 / 1e12;
    let mut report = Report {
        name: "incast".into(),
        title: "Incast N:1: convergence to fair share, fairness, peak queue".into(),
        setup: vec![
            format!("N senders (hosts 1..=N) each Write {msg} B to host 0 at the same instant; {} hosts per leaf; {line} Gb/s; {} B MTU; base RTT ≈ {:.1} µs; {} B buffers; ECN Kmin {} Kmax {} Pmax {}",
                opts.hosts_per_leaf, opts.mtu, rtt as f64 / 1e6, opts.buffer_bytes, opts.red.kmin, opts.red.kmax, opts.red.pmax),
            "settled: from the first data byte arriving at the receiver, the first start of a window (sliding by 1/8 RTT) from which every window until the first sender's message arrived is fair: Jain ≥ 0.95 over per-sender arriving bytes, the receiver link ≥ 80% busy, every sender within ±50% of its fair share C·W/N (±2 of the 4 packets a window holds); window W = 1 base RTT, or the time for every sender to send 4 packets at C/N if longer".into(),
        ],
        table: Table::new(&[
            "N", "stack", "window W (RTTs)", "settled after (RTTs from first byte)", "first fair window at (RTTs)", "Jain (until first done)",
            "peak queue KB", "drops", "resent", "timeouts", "completion µs", "ideal µs", "verified MB", "done",
        ]),
        plot: Plot {
            title: "Incast completion time / ideal".into(),
            x_label: "senders N".into(),
            y_label: "completion / ideal".into(),
            log_x: false,
            series: vec![],
        },
        ..Default::default()
    };
    let mut series = [
        Series {
            name: "ferroce".into(),
            points: vec![],
        },
        Series {
            name: "RoCEv2".into(),
            points: vec![],
        },
    ];
    let mut worst_conv: Option<(u32, f64, f64, f64)> = None;
    let mut all_converged = true;
    let mut late = Vec::new();
    let mut never = Vec::new();
    // Every run first; then the table from their outcomes.
    let mut cases = Vec::new();
    let mut jobs = Vec::new();
    for &n in &ns {
        let hosts = n + 1;
        let senders: Vec<u32> = (1..=n).collect();
        let msgs = senders
            .iter()
            .map(|&s| crate::fabric::workload::Message {
                src: s,
                dst: 0,
                bytes: msg,
                after: vec![],
                reuse: None,
            })
            .collect();
        let wl = Arc::new(Workload::new(hosts, msgs));
        let ideal = wl.total_bytes() as f64 * 8.0 / (line * 1e9) * 1e6 + rtt as f64 / 1e6;
        // Bits / (Gb/s) = ns: the time for every sender to get 4 packets through.
        let fair_ns = 4.0 * n as f64 * (opts.mtu as f64 + 100.0) * 8.0 / line;
        let window_bins =
            (((fair_ns * 1e3) / bin as f64).ceil() as usize).max(BINS_PER_RTT as usize);
        let window_rtts = window_bins as f64 / BINS_PER_RTT as f64;
        let fair_bytes = line_bytes_per_bin * window_bins as f64 / n as f64;
        for stack in [Stack::Ferroce, Stack::Roce] {
            let sc = Scenario {
                topo: opts.topology(hosts, 1),
                wl: wl.clone(),
                loss: vec![LossSpec {
                    links: LinkSel::LastHop,
                    model: Default::default(),
                    scope: LossScope::All,
                }],
                failures: vec![],
                trace: Some((bin, Some(0))),
                limit: ((ideal * 100.0) as Ps * 1_000_000).max(50_000_000 * PS_PER_NS),
            };
            let label = format!("{} N={n}", stack.name());
            jobs.push(Job::new(stack, sc, opts, label));
            cases.push((n, stack, ideal, window_bins, window_rtts, fair_bytes));
        }
    }
    let outcomes = run_all(&mut report, &jobs, opts, progress)?;
    for ((n, stack, ideal, window_bins, window_rtts, fair_bytes), r) in
        cases.into_iter().zip(&outcomes)
    {
        let senders: Vec<u32> = (1..=n).collect();
        let (st, fair) = match &r.trace {
            Some(tr) => {
                // The bins start at the bin holding the workload start.
                let origin = r.start / bin * bin;
                let first_done = senders
                    .iter()
                    .enumerate()
                    .map(|(i, _)| r.arrival[i])
                    .filter(|&t| t > 0)
                    .min()
                    .unwrap_or(r.end);
                let end_bin = (first_done.saturating_sub(origin) / bin) as usize;
                let st = settling(&tr.by_src, &senders, window_bins, end_bin, fair_bytes);
                // Bytes per sender until the first sender's message arrived.
                let mut per = vec![0f64; senders.len()];
                for row in tr.by_src.iter().take(end_bin.max(1)) {
                    for (i, &s) in senders.iter().enumerate() {
                        per[i] += row.get(s as usize).copied().unwrap_or(0) as f64;
                    }
                }
                (st, jain(&per))
            }
            None => (None, 0.0),
        };
        let rtts = |k: usize| (k - st.map_or(0, |s| s.first)) as f64 / BINS_PER_RTT as f64;
        let settled = st.and_then(|s| s.settled).map(rtts);
        let first_fair = st.and_then(|s| s.first_fair).map(rtts);
        if stack == Stack::Ferroce {
            match settled {
                Some(c) => {
                    if worst_conv.is_none_or(|w| c > w.1) {
                        worst_conv = Some((n, c, fair, window_rtts));
                    }
                    if fair < 0.95 {
                        all_converged = false;
                    }
                    if c > 2.0 {
                        late.push(n);
                    }
                }
                None => {
                    all_converged = false;
                    never.push(n);
                }
            }
        }
        let dur = r.duration_us();
        series[(stack == Stack::Roce) as usize]
            .points
            .push((n as f64, dur / ideal));
        report.table.push(vec![
            n.to_string(),
            stack.name().into(),
            f(window_rtts, 1),
            settled.map_or("never".into(), |c| f(c, 1)),
            first_fair.map_or("never".into(), |c| f(c, 1)),
            f(fair, 3),
            f(r.max_queue as f64 / 1e3, 1),
            r.drops_marks.0.to_string(),
            r.resent.to_string(),
            r.timeouts.to_string(),
            f(dur, 1),
            f(ideal, 1),
            f(r.app.bytes_verified as f64 / 1e6, 1),
            r.done_cell(),
        ]);
    }
    report.plot.series = series.to_vec();
    report.targets.push(Target {
        what: "ferroce incast settled within 2 RTTs of the first byte (every later window fair), Jain ≥ 0.95, every N".into(),
        measured: {
            let conv = worst_conv.map_or("no N settled".into(), |(n, c, j, w)| {
                format!(
                    "slowest that settled: N={n} after {c:.1} RTTs (windows of {w:.1} RTTs), Jain {j:.3}; later than 2 RTTs: N = {late:?}"
                )
            });
            if never.is_empty() {
                conv
            } else {
                format!("{conv}; never settled: N = {never:?}")
            }
        },
        met: all_converged && late.is_empty() && worst_conv.is_some(),
    });
    report.push_verified_target();
    report.notes.push("RTT counts are from the first data byte arriving at the receiver, in steps of 1/8 RTT. A window's rate is its average over W, so with W > 2 RTTs (N ≥ 32) settling within 2 RTTs means that the average over every window starting 2 RTTs after the first byte is fair, not that each RTT is.".into());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of per-sender bytes (senders 1 and 2).
    fn rows(v: &[(u64, u64)]) -> Vec<Vec<u64>> {
        v.iter().map(|&(a, b)| vec![0, a, b]).collect()
    }

    #[test]
    fn settling_needs_every_later_window_fair() {
        // Nothing, then one sender alone, then fair shares, an unfair blip, fair again.
        let by_src = rows(&[
            (0, 0),
            (100, 0),
            (100, 0),
            (50, 50),
            (50, 50),
            (100, 0),
            (50, 50),
            (50, 50),
            (50, 50),
        ]);
        let s = settling(&by_src, &[1, 2], 2, 9, 100.0).unwrap();
        assert_eq!(s.first, 1, "bin of the first byte");
        assert_eq!(s.first_fair, Some(3));
        assert_eq!(s.settled, Some(6), "the blip at bin 5 resets it");
        // Without the blip it settles at the first fair window.
        let mut calm = by_src.clone();
        calm[5] = vec![0, 50, 50];
        assert_eq!(
            settling(&calm, &[1, 2], 2, 9, 100.0).unwrap().settled,
            Some(3)
        );
        // A window at fair Jain but at half the link is not fair.
        let half = rows(&[(25, 25); 6]);
        assert_eq!(settling(&half, &[1, 2], 2, 6, 100.0).unwrap().settled, None);
        // The windows stop at `end`: the unfair tail after it does not count.
        let tail = rows(&[(50, 50), (50, 50), (50, 50), (100, 0), (100, 0)]);
        assert_eq!(
            settling(&tail, &[1, 2], 2, 3, 100.0).unwrap().settled,
            Some(0)
        );
        assert_eq!(settling(&tail, &[1, 2], 2, 5, 100.0).unwrap().settled, None);
    }
}
