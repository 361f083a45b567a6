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
}

#[test]
fn failure() {
    let r = quick("failure");
    assert_eq!(cell(&r, &["ferroce"], "app errors"), "0");
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
