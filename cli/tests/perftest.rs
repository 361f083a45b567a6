//! The perftest-style commands, run as the real binary on small workloads: the table header
//! and one data row are printed, the numbers parse and are positive, and every byte moved was
//! checked.

use std::process::Command;

/// Runs `ferroce ARGS`, asserts success, returns stdout.
fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ferroce"))
        .args(args)
        .arg("--no-progress")
        .output()
        .expect("run ferroce");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ferroce {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The data row under the table header starting with `header`, as numbers (all positive).
fn row(out: &str, header: &str, columns: usize) -> Vec<f64> {
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with(header))
        .unwrap_or_else(|| panic!("no table header {header:?} in\n{out}"));
    let nums: Vec<f64> = lines[at + 1]
        .split_whitespace()
        .map(|w| {
            w.parse()
                .unwrap_or_else(|_| panic!("{w:?} is not a number"))
        })
        .collect();
    assert_eq!(nums.len(), columns, "row {:?}", lines[at + 1]);
    assert!(nums.iter().all(|&x| x > 0.0), "row {:?}", lines[at + 1]);
    nums
}

/// The verification line says yes and covers `bytes` bytes.
fn verified(out: &str, bytes: u64) {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("data verified"))
        .unwrap_or_else(|| panic!("no verification line in\n{out}"));
    assert!(
        line.contains(&format!(": yes ({bytes} bytes")),
        "expected {bytes} bytes verified: {line}"
    );
}

const BW_HEADER: &str = "#bytes     #iterations    BW peak[MB/sec]";

#[test]
fn write_bw_small_lossy() {
    let out = run(&["write-bw", "-s", "4096", "-n", "64", "--loss", "0.05"]);
    assert!(out.contains("RDMA_Write BW Test"));
    assert!(out.contains("SIMULATED"));
    let r = row(&out, BW_HEADER, 5);
    assert_eq!((r[0], r[1]), (4096.0, 64.0));
    assert!(r[2] >= r[3], "peak {} below average {}", r[2], r[3]);
    verified(&out, 4096 * 64);
    assert!(out.contains("goodput / link rate"));
    assert!(out.contains("retransmissions"));
}

#[test]
fn write_lat_small() {
    let out = run(&["write-lat", "-s", "64", "-n", "50", "--loss", "0.01"]);
    assert!(out.contains("RDMA_Write Latency Test"));
    let r = row(&out, "#bytes #iterations    t_min[usec]", 9);
    assert_eq!((r[0], r[1]), (64.0, 50.0));
    let (min, max, typ, avg) = (r[2], r[3], r[4], r[5]);
    assert!(
        min <= typ && typ <= max && min <= avg && avg <= max,
        "{r:?}"
    );
    // Both directions are checked.
    verified(&out, 2 * 64 * 50);
}

#[test]
fn send_bw_small_lossy() {
    let out = run(&["send-bw", "-n", "64", "--loss", "0.01", "--paths", "8"]);
    assert!(out.contains("Send BW Test"));
    let r = row(&out, BW_HEADER, 5);
    assert_eq!((r[0], r[1]), (65536.0, 64.0));
    verified(&out, 65536 * 64);
}

#[test]
fn write_bw_multi_packet_messages_with_ecn() {
    let out = run(&[
        "write-bw", "-s", "20000", "-n", "40", "-t", "8", "--mtu", "1024", "--ecn", "0.1",
    ]);
    row(&out, BW_HEADER, 5);
    verified(&out, 20000 * 40);
}

#[test]
fn write_lat_refuses_a_deeper_queue() {
    let out = Command::new(env!("CARGO_BIN_EXE_ferroce"))
        .args(["write-lat", "-t", "4"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
