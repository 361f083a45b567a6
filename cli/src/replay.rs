//! `ferroce replay`: captured frames through one NIC's receive path.

use crate::Backend;
use anyhow::Context;
use ferroce_driver::{Device, ModelNic, Nic, SimMemory, SimPort, memory::DmaWrite};
use ferroce_proto::hsi::{Counter, EVENT_LEN, Event, TableSizes, regs};
use ferroce_proto::pcap::{self, PcapWriter};
use ferroce_sim::rtl::nic::RtlNic;
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

/// A backend replay can drive: a NIC with a wire side and simulated host memory.
trait ReplayNic: Nic + SimPort {
    fn memory(&mut self) -> &mut SimMemory;
}

impl ReplayNic for ModelNic {
    fn memory(&mut self) -> &mut SimMemory {
        &mut self.memory
    }
}

impl ReplayNic for RtlNic {
    fn memory(&mut self) -> &mut SimMemory {
        &mut self.memory
    }
}

/// The counters that classify a received frame: exactly one of them counts each frame (the
/// others — bytes, CE marks, completions, ACKs sent — count side effects).
const VERDICTS: &[Counter] = &[
    Counter::RxDisabled,
    Counter::RxTruncated,
    Counter::RxTooLong,
    Counter::RxBadEtherType,
    Counter::RxBadIpHeader,
    Counter::RxBadIpChecksum,
    Counter::RxNotUdp,
    Counter::RxBadUdp,
    Counter::RxBadBth,
    Counter::RxBadOpcode,
    Counter::RxBadIcrc,
    Counter::RxUnknownConnection,
    Counter::RxAddressMismatch,
    Counter::RxBadFlow,
    Counter::RxDuplicate,
    Counter::RxOutOfWindow,
    Counter::RxInvalidRequest,
    Counter::RxNoRecvBuffer,
    Counter::RxMsgSlotBusy,
    Counter::RxBadRkey,
    Counter::RxAccessDenied,
    Counter::RxOutOfBounds,
    Counter::RxStaleMessage,
    Counter::RxPlacedPackets,
    Counter::RxAcks,
    Counter::RxNaks,
    Counter::RxCm,
];

/// Runs the replay.
pub fn replay(
    pcap_path: &Path,
    setup_path: &Path,
    backend: Backend,
    out: Option<&Path>,
    report_path: Option<&Path>,
) -> anyhow::Result<()> {
    match backend {
        Backend::Model => run(
            ModelNic::new(TableSizes::default()),
            "model",
            pcap_path,
            setup_path,
            out,
            report_path,
        ),
        Backend::Rtl => {
            let mut nic = RtlNic::new()?;
            // A capture has no ports (everything arrives on port 0), so the port count does
            // not matter; the tables must be the model's.
            let sizes = TableSizes {
                ports: TableSizes::default().ports,
                ..nic.table_sizes()
            };
            anyhow::ensure!(
                sizes == TableSizes::default(),
                "the RTL NIC's tables ({sizes:?}) differ from the model's defaults"
            );
            run(nic, "rtl", pcap_path, setup_path, out, report_path)
        }
    }
}

fn run<N: ReplayNic>(
    mut nic: N,
    backend: &'static str,
    pcap_path: &Path,
    setup_path: &Path,
    out: Option<&Path>,
    report_path: Option<&Path>,
) -> anyhow::Result<()> {
    let setup = load_setup(setup_path)?;
    let file = File::open(pcap_path).with_context(|| format!("opening {}", pcap_path.display()))?;
    let records = pcap::read_all(BufReader::new(file))?;

    setup.map_memory(nic.memory())?;
    let mut dev = Device::open(nic)?;
    setup.apply(&mut dev)?;
    // Only the fast path's own writes belong in the report, not the driver's ring traffic.
    dev.nic().memory().record_writes();

    // Event-ring writes are the driver's business, not placement: they stay out of the report.
    let evq = {
        let n = dev.nic();
        let base =
            n.read_reg(regs::EVQ_BASE_LO) as u64 | (n.read_reg(regs::EVQ_BASE_HI) as u64) << 32;
        base..base + ((EVENT_LEN as u64) << n.read_reg(regs::EVQ_LOG_SIZE))
    };
    let mut frames = Vec::new();
    let mut emitted = Vec::new();
    let mut writes = Vec::new();
    let mut events = Vec::new();
    for (i, rec) in records.iter().enumerate() {
        let before_counts: Vec<u64> = VERDICTS.iter().map(|&c| dev.counter(c)).collect();
        let nic = dev.nic();
        nic.poll(rec.time_ns);
        nic.memory().take_write_log();
        // A capture has no port: everything arrives on port 0 (and so answers leave on it).
        nic.receive_frame(0, &rec.data)?;
        let before = emitted.len();
        while let Some(f) = nic.transmit_frame() {
            emitted.push((rec.time_ns, f));
        }
        writes.extend(
            nic.memory()
                .take_write_log()
                .into_iter()
                .filter(|w| !evq.contains(&w.addr)),
        );
        dev.poll_events(&mut events)?;
        let verdict = VERDICTS
            .iter()
            .zip(before_counts)
            .find(|&(&c, n)| dev.counter(c) != n)
            .map_or("none", |(c, _)| c.name());
        frames.push(FrameVerdict {
            index: i,
            time_ns: rec.time_ns,
            len: rec.data.len(),
            verdict,
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
            w.write(*t, &f.bytes)?;
        }
        w.finish()?;
    }
    let report = Report {
        backend,
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
