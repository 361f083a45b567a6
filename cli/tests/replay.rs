//! `ferroce pcap` and `ferroce replay` end to end, through the real binary.

use ferroce_proto::pcap::{PcapWriter, read_all};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn workdir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ferroce(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ferroce"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ferroce {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Replays `pcap` on the RTL backend too and checks that it did exactly what the model did:
/// the same report (per-frame verdicts, memory writes, events, counters) and the same frames.
fn rtl_agrees(pcap: &std::path::Path, setup: &std::path::Path, model_report: &std::path::Path) {
    if !ferroce_sim::rtl::Rtl::available() {
        println!("SKIPPED: no RTL backend (Verilator missing when ferroce-sim was built)");
        return;
    }
    let dir = model_report.parent().unwrap();
    let (report, out, model_out) = (
        dir.join("rtl.json"),
        dir.join("rtl.pcap"),
        dir.join("model.pcap"),
    );
    for (backend, rep, o) in [
        ("model", model_report, &model_out),
        ("rtl", report.as_path(), &out),
    ] {
        ferroce(&[
            "replay",
            "--backend",
            backend,
            "--pcap",
            pcap.to_str().unwrap(),
            "--setup",
            setup.to_str().unwrap(),
            "--out",
            o.to_str().unwrap(),
            "--report",
            rep.to_str().unwrap(),
        ]);
    }
    let mut m: Value =
        serde_json::from_str(&std::fs::read_to_string(model_report).unwrap()).unwrap();
    let mut r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["backend"], "rtl");
    m["backend"] = Value::Null;
    r["backend"] = Value::Null;
    assert!(
        m == r,
        "the RTL and the model disagree on {}",
        pcap.display()
    );
    let frames = |p: &std::path::Path| -> Vec<Vec<u8>> {
        read_all(std::fs::File::open(p).unwrap())
            .unwrap()
            .into_iter()
            .map(|f| f.data)
            .collect()
    };
    assert_eq!(frames(&out), frames(&model_out));
}

fn counter(report: &Value, name: &str) -> u64 {
    report["counters"][name].as_u64().unwrap_or(0)
}

#[test]
fn replaying_the_demo_capture_reproduces_the_receiver() {
    let d = workdir("replay-demo");
    let pcap = d.join("demo.pcap");
    let setup = d.join("setup.toml");
    let out = d.join("out.pcap");
    let report = d.join("report.json");
    ferroce(&[
        "pcap",
        "--out",
        pcap.to_str().unwrap(),
        "--setup-out",
        setup.to_str().unwrap(),
    ]);
    ferroce(&[
        "replay",
        "--pcap",
        pcap.to_str().unwrap(),
        "--setup",
        setup.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    // The demo's eight messages: seven complete, the Write with a wrong rkey fails.
    let completions: Vec<&Value> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("Completion").is_some())
        .collect();
    assert_eq!(completions.len(), 8);
    let failed = completions
        .iter()
        .filter(|e| e["Completion"]["status"] != "Success")
        .map(|e| e["Completion"]["status"].as_str().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(failed, vec!["RemoteAccessError"]);
    assert_eq!(
        counter(&r, "rx_placed_bytes"),
        16384 + 3000 + 5000 + 700 + 8192 + 65536
    );
    assert_eq!(counter(&r, "rx_bad_rkey"), 2);
    let writes = r["memory_writes"].as_array().unwrap();
    assert_eq!(writes.len() as u64, counter(&r, "rx_placed_packets"));
    // The capture holds every frame sent, lost ones included, so the resends are duplicates.
    assert!(counter(&r, "rx_duplicate") > 0);
    let emitted = read_all(std::fs::File::open(&out).unwrap()).unwrap();
    assert_eq!(emitted.len() as u64, r["frames_out"].as_u64().unwrap());
    assert_eq!(
        emitted.len() as u64,
        counter(&r, "tx_acks") + counter(&r, "tx_naks")
    );
    rtl_agrees(&pcap, &setup, &report);
}

#[test]
fn hostile_captures_are_counted_and_write_nothing_outside_memory_regions() {
    let d = workdir("replay-hostile");
    let pcap = d.join("demo.pcap");
    let setup = d.join("setup.toml");
    ferroce(&[
        "pcap",
        "--out",
        pcap.to_str().unwrap(),
        "--setup-out",
        setup.to_str().unwrap(),
    ]);
    let frames = read_all(std::fs::File::open(&pcap).unwrap()).unwrap();
    // Every frame corrupted at one byte, truncated, or replaced with noise.
    let hostile = d.join("hostile.pcap");
    let mut w = PcapWriter::new(std::fs::File::create(&hostile).unwrap()).unwrap();
    let mut x = 0x1234_5678u32;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    let mut count = 0;
    for f in &frames {
        let mut bytes = f.data.clone();
        let i = rnd() as usize % bytes.len();
        bytes[i] ^= (rnd() as u8) | 1;
        w.write(f.time_ns, &bytes).unwrap();
        let cut = rnd() as usize % f.data.len();
        w.write(f.time_ns, &f.data[..cut]).unwrap();
        let noise: Vec<u8> = (0..rnd() % 200).map(|_| rnd() as u8).collect();
        w.write(f.time_ns, &noise).unwrap();
        count += 3;
    }
    w.finish().unwrap();
    let report = d.join("report.json");
    ferroce(&[
        "replay",
        "--pcap",
        hostile.to_str().unwrap(),
        "--setup",
        setup.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(counter(&r, "rx_frames"), count);
    let frames_report = r["frames"].as_array().unwrap();
    assert_eq!(frames_report.len() as u64, count);
    // Each frame has exactly one verdict; the drop counters add up to the frames not accepted.
    let accepted = [
        "rx_placed_packets",
        "rx_acks",
        "rx_naks",
        "rx_cm",
        "rx_duplicate",
    ];
    let dropped: u64 = r["counters"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("rx_") && !accepted.contains(&k.as_str()))
        .filter(|(k, _)| {
            ![
                "rx_frames",
                "rx_placed_bytes",
                "rx_completions",
                "rx_ce_marked",
            ]
            .contains(&k.as_str())
        })
        .map(|(_, v)| v.as_u64().unwrap())
        .sum();
    let acc: u64 = accepted.iter().map(|k| counter(&r, k)).sum();
    assert_eq!(dropped + acc, count);
    assert!(counter(&r, "rx_bad_icrc") > 0);
    assert!(counter(&r, "rx_truncated") > 0);
    // Whatever got through the checks landed inside the receiver's region or receive buffers.
    let s: toml::Value = toml::from_str(&std::fs::read_to_string(&setup).unwrap()).unwrap();
    let ranges: Vec<(u64, u64)> = s["memory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let a = m["addr"].as_integer().unwrap() as u64;
            (a, a + m["len"].as_integer().unwrap() as u64)
        })
        .collect();
    for w in r["memory_writes"].as_array().unwrap() {
        let (a, n) = (w["addr"].as_u64().unwrap(), w["len"].as_u64().unwrap());
        assert!(
            ranges.iter().any(|&(lo, hi)| a >= lo && a + n <= hi),
            "write at {a:#x}+{n}"
        );
    }
    rtl_agrees(&hostile, &setup, &report);
}
