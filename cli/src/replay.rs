//! `ferroce replay`: captured frames through one NIC's receive path.

use anyhow::Context;
use ferroce_driver::{Device, ModelNic, SimPort, memory::DmaWrite};
use ferroce_proto::hsi::{Counter, Event, TableSizes};
use ferroce_proto::pcap::{self, PcapWriter};
use ferroce_sim::setup::NicSetup;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

/// What one captured frame did.
#[derive(Serialize)]
struct FrameVerdict {
    index: usize,
    time_ns: u64,
    len: usize,
    verdict: &'static str,
    emitted: usize,
}

/// The JSON report.
#[derive(Serialize)]
struct Report {
    backend: &'static str,
    frames_in: usize,
    frames_out: usize,
    frames: Vec<FrameVerdict>,
    memory_writes: Vec<DmaWrite>,
    events: Vec<Event>,
    counters: BTreeMap<&'static str, u64>,
}

fn load_setup(path: &Path) -> anyhow::Result<NicSetup> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if path.extension().is_some_and(|e| e == "json") {
        Ok(serde_json::from_str(&text)?)
    } else {
        Ok(toml::from_str(&text)?)
    }
}

/// Runs the replay.
pub fn replay(
    pcap_path: &Path,
    setup_path: &Path,
    out: Option<&Path>,
    report_path: Option<&Path>,
) -> anyhow::Result<()> {
    let setup = load_setup(setup_path)?;
    let file = File::open(pcap_path).with_context(|| format!("opening {}", pcap_path.display()))?;
    let records = pcap::read_all(BufReader::new(file))?;

    let mut nic = ModelNic::new(TableSizes::default());
    setup.map_memory(&mut nic.memory)?;
    let mut dev = Device::open(nic)?;
    setup.apply(&mut dev)?;
    // Only the fast path's own writes belong in the report, not the driver's ring traffic.
    dev.nic().memory.record_writes();

    let mut frames = Vec::new();
    let mut emitted = Vec::new();
    let mut writes = Vec::new();
    let mut events = Vec::new();
    for (i, rec) in records.iter().enumerate() {
        let nic = dev.nic();
        nic.fast_path.set_time(rec.time_ns);
        let verdict = nic.fast_path.receive(&rec.data, &mut nic.memory);
        writes.extend(nic.memory.take_write_log());
        let before = emitted.len();
        while let Some(f) = nic.transmit_frame() {
            emitted.push((rec.time_ns, f));
        }
        // Event-ring writes are the driver's business, not placement: drop them from the log.
        nic.memory.take_write_log();
        dev.poll_events(&mut events)?;
        frames.push(FrameVerdict {
            index: i,
            time_ns: rec.time_ns,
            len: rec.data.len(),
            verdict: verdict.0.name(),
            emitted: emitted.len() - before,
        });
    }
    let counters: BTreeMap<_, _> = Counter::ALL
        .iter()
        .map(|&c| (c.name(), dev.counter(c)))
        .filter(|(_, v)| *v > 0)
        .collect();

    if let Some(out) = out {
        let f = File::create(out).with_context(|| format!("creating {}", out.display()))?;
        let mut w = PcapWriter::new(BufWriter::new(f))?;
        for (t, f) in &emitted {
            w.write(*t, f)?;
        }
        w.finish()?;
    }
    let report = Report {
        backend: "model",
        frames_in: records.len(),
        frames_out: emitted.len(),
        frames,
        memory_writes: writes,
        events,
        counters,
    };
    if let Some(p) = report_path {
        std::fs::write(p, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    println!(
        "replayed {} frames: {} memory writes, {} events, {} frames emitted",
        report.frames_in,
        report.memory_writes.len(),
        report.events.len(),
        report.frames_out
    );
    for (k, v) in &report.counters {
        println!("  {k} = {v}");
    }
    Ok(())
}
