//! The fabric experiments in their `--quick` variants, through the library the `ferroce
//! experiment` command uses: every byte verified, and goodput that makes sense (ferroce near
//! line rate without loss and well ahead of the go-back-N baseline at 10% loss; no
//! application-visible error when a plane fails).

use ferroce_sim::experiment::{Options, Report, by_name};

fn quick(name: &str) -> Report {
    let opts = Options {
        quick: true,
        ..Options::default()
    };
    let r = by_name(name, &opts, &mut |_, _| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(r.bytes_verified > 0, "{name}: nothing verified");
    assert_eq!(r.verify_failed, 0, "{name}: verification failed");
    assert!(!r.table.rows.is_empty());
    assert!(r.plot.svg().contains("<polyline"));
    assert!(r.markdown().contains(&r.table.header[0]));
    assert!(r.packet_events > 0);
    r
}

/// The value in column `col` of the first row whose cells start with `key`.
fn cell(r: &Report, key: &[&str], col: &str) -> String {
    let c = r
        .table
        .header
        .iter()
        .position(|h| h == col)
        .unwrap_or_else(|| panic!("no column {col}"));
    let row = r
        .table
        .rows
        .iter()
        .find(|row| key.iter().zip(row.iter()).all(|(k, v)| k == v))
        .unwrap_or_else(|| panic!("no row {key:?}"));
    row[c].clone()
}

fn num(s: &str) -> f64 {
    s.parse().unwrap_or_else(|_| panic!("not a number: {s}"))
}

#[test]
fn loss() {
    let r = quick("loss");
    let clean = num(&cell(&r, &["random", "0", "ferroce"], "goodput / line"));
    assert!(clean > 0.5, "ferroce without loss: {clean}");
    let f10 = num(&cell(&r, &["random", "0.1", "ferroce"], "goodput / line"));
    let b10 = num(&cell(&r, &["random", "0.1", "RoCEv2"], "goodput / line"));
    assert!(
        f10 > 0.3 && f10 > 2.0 * b10,
        "10% loss: ferroce {f10}, RoCEv2 {b10}"
    );
    for row in &r.table.rows {
        assert_eq!(row.last().map(String::as_str), Some("yes"), "{row:?}");
    }
}

#[test]
fn incast() {
    let r = quick("incast");
    assert_eq!(cell(&r, &["8", "ferroce"], "done"), "yes");
    let jain = num(&cell(&r, &["8", "ferroce"], "Jain (until first done)"));
    assert!(jain > 0.0 && jain <= 1.0, "{jain}");
    let done = num(&cell(&r, &["8", "ferroce"], "completion µs"));
    let ideal = num(&cell(&r, &["8", "ferroce"], "ideal µs"));
    assert!(
        done < 10.0 * ideal,
        "incast took {done} µs, ideal {ideal} µs"
    );
    // 8:1 settles within 2 RTTs of the first byte without a drop (docs/fabric.md, "Incast"
    // (9)); before the repeated CM reply the first sender accepted started at line rate and
    // the receiver's buffer overflowed.
    assert_settled_without_drops(&r, "8");
    let opts = Options {
        quick: true,
        reply_hint_refresh: false,
        hint_shared_utilization: 1.0,
        ..Options::default()
    };
    let old = by_name("incast", &opts, &mut |_, _| {}).unwrap();
    let settled = settled_rtts(&old, "8");
    assert!(settled > 2.0, "without them: {settled} RTTs");
}

/// The RTTs ferroce's N:1 incast took to settle.
fn settled_rtts(r: &Report, n: &str) -> f64 {
    num(&cell(
        r,
        &[n, "ferroce"],
        "settled after (RTTs from first byte)",
    ))
}

/// ferroce's N:1 incast settled within 2 RTTs of the first byte and dropped nothing.
fn assert_settled_without_drops(r: &Report, n: &str) {
    let settled = settled_rtts(r, n);
    assert!(settled <= 2.0, "{n}:1 settled after {settled} RTTs");
    assert_eq!(cell(r, &[n, "ferroce"], "drops"), "0", "{n}:1 drops");
}

/// 128:1 (256 KB each) settles at once and drops nothing (docs/fabric.md, "Incast" (10)).
/// Before the connection's pacer alone set the turns, a flow whose own pacing clock ran
/// ahead made its connection miss turns; each missed turn moved the sender's phase later,
/// into the bunch that had delayed it, and the bunches overflowed the receiver's buffer
/// (269 RTTs to settle, 102 drops).
#[test]
fn incast_of_128_settles_without_drops() {
    let opts = Options {
        hosts: Some(129),
        msg_bytes: Some(256 << 10),
        ..Options::default()
    };
    let r = by_name("incast", &opts, &mut |_, _| {}).unwrap();
    assert_eq!(r.verify_failed, 0);
    assert_settled_without_drops(&r, "128");
}

#[test]
fn failure() {
    let r = quick("failure");
    assert_eq!(cell(&r, &["ferroce"], "app errors"), "0");
    // The quick run too has a bin between the ramp-up and the failure to compare with (it
    // had none, and its dip and recovery were figures of nothing).
    let before = num(&cell(&r, &["ferroce"], "before Gb/s"));
    assert!(before > 0.0, "no throughput before the failure: {before}");
    let arrived = cell(&r, &["ferroce"], "messages arrived");
    let (got, of) = arrived.split_once(" of ").expect("n of m");
    assert_eq!(got, of, "ferroce lost messages: {arrived}");
}

#[test]
fn planes_and_collectives() {
    let r = quick("planes");
    let two = num(&cell(&r, &["2", "ferroce"], "throughput Gb/s"));
    let one = num(&cell(&r, &["1", "ferroce"], "throughput Gb/s"));
    assert!(two > one, "2 planes {two} vs 1 plane {one}");
    for name in ["alltoall", "allreduce"] {
        let r = quick(name);
        assert_eq!(cell(&r, &["ferroce"], "done"), "yes", "{name}");
    }
}

/// Issue 5, item 6: a small fabric run (4 hosts, two streams over two spines, 2% loss on the
/// last hop) gives the same result with the hosts' NICs on the RTL (Verilator) as on the
/// model: same end time, events, resends, timeouts, message arrival times and fabric counters.
#[test]
fn rtl_hosts_give_the_model_s_results() {
    rtl_matches_model(1);
}

/// Item 6 with NIC ports: the same 4-host run over two planes, one of which fails mid-run, on
/// both backends: the RTL's `tid`/`tdest` carry every frame's port as the model does.
#[test]
fn rtl_hosts_give_the_model_s_results_over_two_planes_with_a_failure() {
    rtl_matches_model(2);
}

fn rtl_matches_model(planes: u8) {
    use ferroce_sim::backend::BackendKind;
    use ferroce_sim::experiment::{LinkSel, LossSpec, Scenario, Stack, run};
    use ferroce_sim::fabric::event::PS_PER_NS;
    use ferroce_sim::fabric::loss::{LossModel, LossScope};
    use ferroce_sim::fabric::workload::Workload;
    use std::sync::Arc;

    use ferroce_sim::fabric::failure::{Failure, FailureTarget};

    let outcome = |backend| {
        let o = Options {
            seed: 5,
            hosts_per_leaf: 2,
            spines: 2,
            backend,
            ..Options::default()
        };
        let sc = Scenario {
            topo: o.topology(4, planes),
            wl: Arc::new(Workload::streams(4, &[(0, 2), (1, 3)], 64 << 10, 3, 2)),
            loss: vec![LossSpec {
                links: LinkSel::LastHop,
                model: LossModel::Bernoulli { p: 0.02 },
                scope: LossScope::All,
            }],
            // With two planes, plane 1 fails 5 µs into the workload: the NICs report port 1's
            // link down (`PORT_LINK`, read from the core's register block on the RTL), the
            // flows on it move to plane 0 and resend there, and the NICs answer on the port
            // the data came in on.
            failures: if planes > 1 {
                vec![Failure {
                    at: 5_000 * PS_PER_NS,
                    target: FailureTarget::Plane(1),
                    down: true,
                }]
            } else {
                vec![]
            },
            trace: None,
            limit: 20_000_000 * PS_PER_NS,
        };
        run(Stack::Ferroce, &sc, &o, &mut |_| {}).map(|r| (r, sc.wl.total_bytes()))
    };
    let (model, bytes) = outcome(BackendKind::Model).expect("model run");
    let (rtl, _) = match outcome(BackendKind::Rtl) {
        Ok(r) => r,
        Err(e) if std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_some() => {
            println!("SKIPPED: {e}");
            return;
        }
        Err(e) => panic!("RTL run: {e}"),
    };
    assert!(model.finished && rtl.finished);
    assert_eq!(model.app.bytes_verified, bytes);
    assert_eq!(rtl.app, model.app);
    assert!(
        model.resent > 0,
        "the loss must cause resends, or the comparison says little"
    );
    assert_eq!(
        (rtl.end, rtl.events, rtl.resent, rtl.timeouts),
        (model.end, model.events, model.resent, model.timeouts)
    );
    assert_eq!(rtl.arrival, model.arrival);
    assert_eq!(rtl.fabric, model.fabric);
    assert_eq!(rtl.silent_paths, model.silent_paths);
    assert_eq!(rtl.link_down_moves, model.link_down_moves);
    println!(
        "{planes} plane(s): end {} ps, {} resent, {} timeouts, {} silent paths, {} moved off a down link, both backends",
        model.end, model.resent, model.timeouts, model.silent_paths, model.link_down_moves
    );
    if planes > 1 {
        assert!(
            model.link_down_moves > 0,
            "the plane failure must move flows, or the comparison says little"
        );
    }
}
