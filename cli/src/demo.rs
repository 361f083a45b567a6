//! `ferroce demo` and `ferroce pcap`.

use crate::ScenarioArgs;
use anyhow::Context;
use ferroce_proto::pcap::PcapWriter;
use ferroce_sim::backend::BackendKind;
use ferroce_sim::link::Side;
use ferroce_sim::scenario::{self, ScenarioConfig, ScenarioReport};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

fn config(args: &ScenarioArgs) -> anyhow::Result<ScenarioConfig> {
    anyhow::ensure!((0.0..1.0).contains(&args.loss), "--loss must be in [0, 1)");
    anyhow::ensure!((1..=256).contains(&args.paths), "--paths must be 1..=256");
    anyhow::ensure!((1..=8192).contains(&args.mtu), "--mtu must be 1..=8192");
    let mut cfg = ScenarioConfig::demo();
    cfg.link.loss = args.loss;
    cfg.link.paths = args.paths as u32;
    cfg.link.duplicate = args.duplicate;
    cfg.link.seed = args.seed;
    cfg.link.ce_mark = (0..args.paths)
        .map(|p| if p == 2 { args.ce } else { 0.0 })
        .collect();
    cfg.flows = args.paths;
    cfg.mtu = args.mtu;
    cfg.ipv6 = args.ipv6;
    cfg.vlan_tci = args.vlan;
    cfg.backend = args.backend.into();
    Ok(cfg)
}

fn write_pcap(report: &ScenarioReport, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = PcapWriter::new(BufWriter::new(file))?;
    for (t, f) in &report.frames {
        w.write(*t, f)?;
    }
    w.finish()?;
    Ok(())
}

fn write_setup(report: &ScenarioReport, path: &Path) -> anyhow::Result<()> {
    let text = toml::to_string_pretty(&report.receiver_setup)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes the scenario's frames to a pcap.
pub fn pcap(args: &ScenarioArgs, out: &Path, setup_out: Option<&Path>) -> anyhow::Result<()> {
    let report = scenario::run(&config(args)?)?;
    write_pcap(&report, out)?;
    if let Some(p) = setup_out {
        write_setup(&report, p)?;
    }
    println!("wrote {} frames to {}", report.frames.len(), out.display());
    anyhow::ensure!(
        report.all_verified(),
        "the scenario did not verify; see `ferroce demo`"
    );
    Ok(())
}

/// Runs the demo and prints what happened.
pub fn demo(args: &ScenarioArgs, trace_lines: usize, out: &Path) -> anyhow::Result<()> {
    let cfg = config(args)?;
    let r = scenario::run(&cfg)?;
    let l = &cfg.link;
    println!(
        "ferroce demo: backend {}, two NICs A -> B over a {}-path link",
        match cfg.backend {
            BackendKind::Model => "model (the executable specification)",
            BackendKind::Rtl => "rtl (the fast path's Verilog under Verilator)",
        },
        l.paths
    );
    println!(
        "  link: loss {:.1}%, duplication {:.1}%, CE marks on path 2 {:.0}%, one-way delay {:.1}-{:.1} us",
        l.loss * 100.0,
        l.duplicate * 100.0,
        l.ce_mark.get(2).copied().unwrap_or(0.0) * 100.0,
        l.delay_ns as f64 / 1e3,
        (l.delay_ns + (l.paths as u64 - 1) * l.path_skew_ns + l.jitter_ns) as f64 / 1e3,
    );
    println!(
        "  connection: {} flows (one UDP source port each), MTU {} B, {}, first FSN {:#08x} (wraps at 2^24)",
        cfg.flows,
        cfg.mtu,
        if cfg.ipv6 { "IPv6" } else { "IPv4" },
        cfg.initial_fsn
    );
    println!("  the sender is the scripted reference sender (no congestion control yet)\n");

    println!(
        "First {} of {} frames on the link:",
        trace_lines.min(r.trace.len()),
        r.trace.len()
    );
    println!("    time us  dir  path  fate       frame");
    let line = |t: &scenario::TraceEntry| {
        let fate = match (t.fate.lost, t.fate.marked, t.fate.duplicated) {
            (true, ..) => "LOST",
            (_, true, true) => "CE+dup",
            (_, true, _) => "CE",
            (_, _, true) => "dup",
            _ => "",
        };
        let fate = if t.resend {
            format!("resend {fate}")
        } else {
            fate.to_string()
        };
        let dir = if t.from == Side::A { "A>B" } else { "B>A" };
        println!(
            "  {:>9.3}  {:<4} {:>4}  {:<10} {}",
            t.time_ns as f64 / 1e3,
            dir,
            t.fate.path,
            fate,
            t.summary
        );
    };
    r.trace.iter().take(trace_lines).for_each(line);
    let notable: Vec<_> = r
        .trace
        .iter()
        .skip(trace_lines)
        .filter(|t| {
            t.fate.lost
                || t.fate.marked
                || t.resend
                || t.fate.duplicated
                || t.summary.starts_with("nak")
                || (t.summary.starts_with("ack") && !t.summary.contains("sacked 0 "))
        })
        .collect();
    if !notable.is_empty() {
        println!("  ... then every loss, CE mark, resend, duplicate, NAK and ACK with a SACK gap:");
        notable.into_iter().for_each(line);
    }

    println!("\nMessages (A -> B):");
    println!("  #  op        tag msn   bytes  receiver             sender        verified");
    for (i, m) in r.messages.iter().enumerate() {
        println!(
            "  {:<2} {:<9} {:>3} {:>3} {:>7}  {:<20} {:<13} {}",
            i,
            m.opcode,
            m.tag,
            m.msn,
            m.len,
            format!(
                "{} x{}",
                m.receiver_status.as_deref().unwrap_or("none"),
                m.receiver_completions
            ),
            if m.sender_completed {
                m.sender_error.as_deref().unwrap_or("acked")
            } else {
                "pending"
            },
            if m.verified { "yes" } else { "NO" },
        );
    }

    let s = &r.sender;
    println!("\nLoss recovery:");
    println!(
        "  link: {} frames, {} lost, {} duplicated, {} CE-marked; per path {:?}",
        r.link.sent, r.link.lost, r.link.duplicated, r.link.marked, r.link.per_path
    );
    println!(
        "  sender: {} data packets, {} gaps seen in SACK bitmaps, {} resent because of them, {} resent on timeout, {} entropy changes",
        s.packets,
        s.holes_seen,
        s.sack_retransmissions,
        s.timeout_retransmissions,
        s.entropy_changes
    );
    println!("  {} ACKs and {} NAKs reached the sender", s.acks, s.naks);
    let get = |c: &[(&str, u64)], n: &str| c.iter().find(|(k, _)| *k == n).map_or(0, |(_, v)| *v);
    println!(
        "  receiver: {} bytes placed by {} packets, {} completions, {} duplicates dropped",
        get(&r.counters_b, "rx_placed_bytes"),
        get(&r.counters_b, "rx_placed_packets"),
        get(&r.counters_b, "rx_completions"),
        get(&r.counters_b, "rx_duplicate"),
    );
    println!("\nCounters of A: {}", fmt_counters(&r.counters_a));
    println!("Counters of B: {}", fmt_counters(&r.counters_b));

    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let pcap = out.join("ferroce-demo.pcap");
    let setup = out.join("receiver-setup.toml");
    write_pcap(&r, &pcap)?;
    write_setup(&r, &setup)?;
    println!("\nCapture: {} ({} frames)", pcap.display(), r.frames.len());
    println!(
        "  tshark -X lua_script:tools/wireshark/ferroce.lua -r {}",
        pcap.display()
    );
    println!("Replay B's receive path on it:");
    println!(
        "  ferroce replay --pcap {} --setup {} --out {} --report {}",
        pcap.display(),
        setup.display(),
        out.join("replay-out.pcap").display(),
        out.join("replay-report.json").display()
    );
    println!(
        "\nSimulated time {:.1} us; {}",
        r.end_time_ns as f64 / 1e3,
        if r.all_verified() {
            "every message verified byte for byte, one completion each"
        } else {
            "VERIFICATION FAILED"
        }
    );
    anyhow::ensure!(r.all_verified(), "demo verification failed");
    Ok(())
}

fn fmt_counters(c: &[(&str, u64)]) -> String {
    c.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
