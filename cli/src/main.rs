//! The `ferroce` command.

mod demo;
mod experiment;
mod perftest;
mod replay;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// ferroce: RDMA over lossy Ethernet with multipath, SACK and direct placement.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Which NIC implementation runs the fast path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The executable model (`ferroce_proto::model`).
    Model,
    /// The fast path's RTL under Verilator (`ferroce_sim::rtl::nic::RtlNic`).
    Rtl,
}

/// Options shared by the commands that run the two-node scenario.
#[derive(clap::Args, Clone, Debug)]
struct ScenarioArgs {
    /// Probability that the link loses a frame.
    #[arg(long, default_value_t = 0.03)]
    loss: f64,
    /// Number of paths (and flows).
    #[arg(long, default_value_t = 4)]
    paths: u16,
    /// Probability that a frame is duplicated.
    #[arg(long, default_value_t = 0.01)]
    duplicate: f64,
    /// Probability of a CE mark on path 2 (the congested one).
    #[arg(long, default_value_t = 0.25)]
    ce: f64,
    /// Payload bytes per packet.
    #[arg(long, default_value_t = 1024)]
    mtu: u32,
    /// Seed of the link's randomness.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Use IPv6 instead of IPv4.
    #[arg(long)]
    ipv6: bool,
    /// Tag every frame with this 802.1Q VLAN id.
    #[arg(long)]
    vlan: Option<u16>,
    /// Fast-path backend: the RTL under Verilator, or the model.
    #[arg(long, value_enum, default_value_t = Backend::Rtl)]
    backend: Backend,
}

impl From<Backend> for ferroce_sim::backend::BackendKind {
    fn from(b: Backend) -> Self {
        match b {
            Backend::Model => Self::Model,
            Backend::Rtl => Self::Rtl,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Send RDMA Writes and tagged Sends between two NICs over a lossy 4-path link and show
    /// what happened.
    Demo {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Frames of the trace to print.
        #[arg(long, default_value_t = 40)]
        trace: usize,
        /// Directory for the pcap and the receiver's setup file.
        #[arg(long, default_value = "target/demo")]
        out: PathBuf,
    },
    /// Write the frames of the demo scenario to a pcap file.
    Pcap {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Output pcap.
        #[arg(long, default_value = "ferroce.pcap")]
        out: PathBuf,
        /// Also write the receiving NIC's setup (TOML) for `ferroce replay`.
        #[arg(long)]
        setup_out: Option<PathBuf>,
    },
    /// RDMA Write bandwidth between two simulated nodes, perftest's ib_write_bw (simulated
    /// time; every byte checked).
    WriteBw(perftest::PerfArgs),
    /// RDMA Write ping-pong latency between two simulated nodes, perftest's ib_write_lat
    /// (simulated time; every byte checked).
    WriteLat(perftest::PerfArgs),
    /// Send bandwidth between two simulated nodes, perftest's ib_send_bw (simulated time;
    /// every byte checked).
    SendBw(perftest::PerfArgs),
    /// Run a fabric experiment (loss, incast, planes, failure, alltoall, allreduce, or all):
    /// ferroce and the RoCEv2 baseline on the same simulated leaf-spine fabric; writes CSV,
    /// SVG and Markdown.
    Experiment(experiment::ExperimentArgs),
    /// Feed captured frames to one NIC's receive path; write what it emits and a JSON report.
    Replay {
        /// Captured frames (classic pcap, Ethernet).
        #[arg(long)]
        pcap: PathBuf,
        /// The NIC's regions, connections and receive buffers (TOML or JSON).
        #[arg(long)]
        setup: PathBuf,
        /// Fast-path backend.
        #[arg(long, value_enum, default_value_t = Backend::Model)]
        backend: Backend,
        /// Frames the NIC emits (ACKs, NAKs), as pcap.
        #[arg(long)]
        out: Option<PathBuf>,
        /// JSON report: memory writes, events, counters, per-frame verdicts.
        #[arg(long)]
        report: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Demo {
            scenario,
            trace,
            out,
        } => demo::demo(&scenario, trace, &out),
        Command::Pcap {
            scenario,
            out,
            setup_out,
        } => demo::pcap(&scenario, &out, setup_out.as_deref()),
        Command::Replay {
            pcap,
            setup,
            backend,
            out,
            report,
        } => replay::replay(&pcap, &setup, backend, out.as_deref(), report.as_deref()),
        Command::WriteBw(args) => perftest::run(perftest::Test::WriteBw, &args),
        Command::WriteLat(args) => perftest::run(perftest::Test::WriteLat, &args),
        Command::SendBw(args) => perftest::run(perftest::Test::SendBw, &args),
        Command::Experiment(args) => experiment::run(&args),
    }
}
