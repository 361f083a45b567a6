//! `ferroce experiment NAME`: runs one of the fabric experiments (ferroce and the RoCEv2
//! baseline on the same simulated fabric) and writes `<out>/<name>.csv`, `<name>.svg` and
//! `<name>.md`, printing the table and the target lines.

use crate::Backend;
use anyhow::Context as _;
use ferroce::core::HostBudgetConfig;
use ferroce_sim::experiment::{self, Options};
use ferroce_sim::fabric::port::Red;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Options of `ferroce experiment`.
#[derive(clap::Args, Clone, Debug)]
pub struct ExperimentArgs {
    /// Which experiment: loss, incast, planes, failure, alltoall, allreduce (or all).
    pub name: String,
    /// Directory for the CSV, SVG and Markdown files.
    #[arg(long, default_value = "target/experiments")]
    pub out: PathBuf,
    /// Small variant (fewer hosts, sizes and points) for CI.
    #[arg(long)]
    pub quick: bool,
    /// Link rate (Gb/s).
    #[arg(long, default_value_t = 100.0)]
    pub link_gbps: f64,
    /// Payload bytes per packet.
    #[arg(long, default_value_t = 4096)]
    pub mtu: u32,
    /// Propagation delay per link in ns (4 links each way: 1000 gives a base RTT of about
    /// 10 us).
    #[arg(long, default_value_t = 1000)]
    pub link_delay_ns: u64,
    /// Switch buffer per output port in bytes (default about one BDP).
    #[arg(long, default_value_t = 125_000)]
    pub buffer: u64,
    /// ECN marking: Kmin in bytes.
    #[arg(long, default_value_t = 5_000)]
    pub kmin: u64,
    /// ECN marking: Kmax in bytes.
    #[arg(long, default_value_t = 100_000)]
    pub kmax: u64,
    /// ECN marking: Pmax.
    #[arg(long, default_value_t = 0.01)]
    pub pmax: f64,
    /// Hosts per leaf switch.
    #[arg(long, default_value_t = 8)]
    pub hosts_per_leaf: u32,
    /// Spines per plane (0: as many as hosts per leaf, non-blocking).
    #[arg(long, default_value_t = 0)]
    pub spines: u32,
    /// ferroce paths (flows) per connection (0: 4, or the plane count if larger).
    #[arg(long, default_value_t = 0)]
    pub paths: u16,
    /// Baseline RC timeout exponent t (timeout 4.096 us x 2^t).
    #[arg(long, default_value_t = 8)]
    pub timeout_exp: u32,
    /// ferroce minimum retransmission timeout (us).
    #[arg(long, default_value_t = 100)]
    pub min_rto_us: u64,
    /// ferroce timeouts on one entropy before a flow moves to another.
    #[arg(long, default_value_t = 1)]
    pub same_entropy_retries: u32,
    /// ferroce retransmission timeout before a flow's first RTT sample (us).
    #[arg(long, default_value_t = 200)]
    pub initial_rto_us: u64,
    /// ferroce initial congestion window per flow (packets).
    #[arg(long, default_value_t = 8)]
    pub initial_window: u32,
    /// ferroce smallest congestion window per flow (packets).
    #[arg(long, default_value_t = 2)]
    pub min_window: u32,
    /// Host polling period (ns; 0 = after every frame): how often a ferroce host's driver
    /// loop runs for arriving frames, and how often a baseline host's application polls its
    /// completion queues. The NICs place data and send ACKs at once either way.
    #[arg(long, default_value_t = 500)]
    pub host_poll_ns: u64,
    /// ferroce host-wide in-flight cap over all connections, in BDPs of the host's line rate
    /// and --host-base-rtt-ns (0 = no cap).
    #[arg(long, default_value_t = HostBudgetConfig::default().bdp_multiple)]
    pub host_budget_bdps: f64,
    /// ferroce base RTT of the host budget's BDP (ns).
    #[arg(long, default_value_t = HostBudgetConfig::default().base_rtt_ns)]
    pub host_base_rtt_ns: u64,
    /// ferroce host pacing: the sum of all connections leaves at line rate x this gain
    /// (0 = no host pacing).
    #[arg(long, default_value_t = HostBudgetConfig::default().pacing_gain)]
    pub host_pacing_gain: f64,
    /// ferroce host pacer burst: how far ahead of now it may run (ns), the deepest NIC queue
    /// the library builds.
    #[arg(long, default_value_t = HostBudgetConfig::default().burst_ns)]
    pub host_burst_ns: u64,
    /// ferroce host pacing applies only while at least this many connections of the host are
    /// active (bytes in flight or something to send); 0 or 1 = always.
    #[arg(long, default_value_t = HostBudgetConfig::default().pacing_min_active)]
    pub host_pacing_min_active: u32,
    /// ferroce: requesters ignore the rate hint in the acceptor's CM reply and start with
    /// full windows until the first ACK's hint.
    #[arg(long)]
    pub no_reply_hint: bool,
    /// ferroce: at a shared receiver a connection's flows pace independently (they leave in
    /// phase, one packet each back to back) and its first window may burst.
    #[arg(long)]
    pub no_flow_turns: bool,
    /// ferroce: with several planes, a connection's flows on one NIC port are not paced
    /// together at the port's rate.
    #[arg(long)]
    pub no_port_pacing: bool,
    /// ferroce: silent-path detection threshold in smoothed RTTs (0 = off): a flow that
    /// heard nothing while its siblings' later packets were delivered is handled as timed out.
    #[arg(long, default_value_t = 1.0)]
    pub silent_path_rtts: f64,
    /// ferroce: an acceptor's CM reply hints the share among the senders it has accepted
    /// only, not counting the requests still waiting for an accept.
    #[arg(long)]
    pub no_reply_pending: bool,
    /// ferroce: a receiver's hints split its capacity among the senders it has seen only
    /// (connected peers that have not sent yet get a newcomer's share but reserve none).
    #[arg(long)]
    pub no_hint_reserve: bool,
    /// ferroce: an acceptor never repeats its CM reply, so the first sender accepted in an
    /// incast keeps the hint of the whole capacity until its first ACK.
    #[arg(long)]
    pub no_reply_refresh: bool,
    /// ferroce: fraction of a receiver's capacity its rate hints split while two or more
    /// senders share it (1 = all of it).
    #[arg(long, default_value_t = 0.99)]
    pub hint_utilization: f64,
    /// ferroce: every connection's flows take their first turns from flow 0 (so a host's
    /// connections all start on the same path and plane).
    #[arg(long)]
    pub no_flow_rotation: bool,
    /// ferroce: tail-loss probes only at a shared receiver, and packets request ACKs only near
    /// a full window or a message's end (not also when they leave one or two in flight).
    #[arg(long)]
    pub no_tail_probe_few: bool,
    /// ferroce: connections starting at a share send their first packet at once (no phase of
    /// their own within one packet gap).
    #[arg(long)]
    pub no_start_phase: bool,
    /// ferroce: a flow whose path stays congested (ECN on most packets for several rounds)
    /// moves to a new entropy, PLB style; without it flows move only after timeouts.
    #[arg(long)]
    pub congestion_repath: bool,
    /// ferroce: hosts do not serve their NICs' ACK timers on time (a delayed ACK then leaves
    /// at the host's next visit, whatever brings it).
    #[arg(long)]
    pub no_nic_timer_wake: bool,
    /// Hosts (the experiment's default if not given).
    #[arg(long)]
    pub hosts: Option<u32>,
    /// Message size in bytes (the experiment's default if not given).
    #[arg(long)]
    pub msg_bytes: Option<u64>,
    /// `planes`: messages per pair, each pair streaming them in order (the experiment's
    /// default if not given).
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fast-path backend of the ferroce hosts.
    #[arg(long, value_enum, default_value_t = Backend::Model)]
    pub backend: Backend,
    /// Runs simulated at once, one thread each (0: one per CPU core). Results are the same
    /// for any value; the RTL backend runs one at a time.
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Always show the progress line on stderr [default: when stderr is a terminal].
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,
    /// Never show the progress line.
    #[arg(long, overrides_with = "progress")]
    pub no_progress: bool,
}

impl ExperimentArgs {
    fn options(&self) -> Options {
        Options {
            link_gbps: self.link_gbps,
            mtu: self.mtu,
            link_delay_ns: self.link_delay_ns,
            buffer_bytes: self.buffer,
            red: Red {
                kmin: self.kmin,
                kmax: self.kmax,
                pmax: self.pmax,
            },
            hosts_per_leaf: self.hosts_per_leaf,
            spines: self.spines,
            paths: self.paths,
            timeout_exp: self.timeout_exp,
            min_rto_us: self.min_rto_us,
            same_entropy_retries: self.same_entropy_retries,
            initial_rto_us: self.initial_rto_us,
            initial_window: self.initial_window,
            min_window: self.min_window,
            host_poll_ns: self.host_poll_ns,
            host_budget: HostBudgetConfig {
                bdp_multiple: self.host_budget_bdps,
                base_rtt_ns: self.host_base_rtt_ns,
                pacing_gain: self.host_pacing_gain,
                burst_ns: self.host_burst_ns,
                pacing_min_active: self.host_pacing_min_active,
            },
            reply_hint: !self.no_reply_hint,
            flow_turns: !self.no_flow_turns,
            port_pacing: !self.no_port_pacing,
            silent_path_rtts: self.silent_path_rtts,
            flow_rotation: !self.no_flow_rotation,
            tail_probe_few: !self.no_tail_probe_few,
            start_phase: !self.no_start_phase,
            congestion_repath: self.congestion_repath,
            reply_hint_counts_pending: !self.no_reply_pending,
            hint_reserves_unseen: !self.no_hint_reserve,
            reply_hint_refresh: !self.no_reply_refresh,
            hint_shared_utilization: self.hint_utilization,
            nic_timer_wake: !self.no_nic_timer_wake,
            backend: self.backend.into(),
            jobs: match self.jobs {
                0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
                n => n,
            },
            seed: self.seed,
            quick: self.quick,
            hosts: self.hosts,
            msg_bytes: self.msg_bytes,
            rounds: self.rounds,
        }
    }
}

/// Runs `ferroce experiment`.
pub fn run(a: &ExperimentArgs) -> anyhow::Result<()> {
    let names: Vec<&str> = if a.name == "all" {
        experiment::NAMES.to_vec()
    } else {
        vec![a.name.as_str()]
    };
    let opts = a.options();
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let show = a.progress || (!a.no_progress && std::io::stderr().is_terminal());
    for name in names {
        let start = Instant::now();
        let mut last = Instant::now() - Duration::from_secs(1);
        let mut shown = false;
        let mut prog = |what: &str, frac: f64| {
            if !show || last.elapsed() < Duration::from_millis(200) {
                return;
            }
            last = Instant::now();
            shown = true;
            eprint!(
                "\r {name}: {:5.1}%  {what:<40.40}  wall {:.1} s   ",
                frac * 100.0,
                start.elapsed().as_secs_f64()
            );
        };
        let report = experiment::by_name(name, &opts, &mut prog)?;
        if shown {
            eprint!("\r{:100}\r", "");
        }
        let stem = a.out.join(&report.name);
        let write = |ext: &str, body: String| -> anyhow::Result<()> {
            let p = stem.with_extension(ext);
            std::fs::write(&p, body).with_context(|| format!("writing {}", p.display()))
        };
        write("csv", report.table.csv())?;
        write("svg", report.plot.svg())?;
        write("md", report.markdown())?;
        println!("{}", report.markdown());
        print!("{}", report.target_lines());
        println!(
            "simulator speed: {:.2} M packet events/s ({} packet events, {:.2} s simulating, {} run(s) at a time; {:.1} s wall-clock in total)",
            report.events_per_s() / 1e6,
            report.packet_events,
            report.wall_s,
            report.threads.max(1),
            start.elapsed().as_secs_f64()
        );
        println!(
            "wrote {}.csv, {}.svg, {}.md\n",
            stem.display(),
            stem.display(),
            stem.display()
        );
        anyhow::ensure!(
            report.verify_failed == 0,
            "{name}: {} verification failures",
            report.verify_failed
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: ExperimentArgs,
    }

    #[test]
    fn quick_allreduce_writes_csv_svg_and_markdown() {
        let dir = std::env::temp_dir().join(format!("ferroce-exp-{}", std::process::id()));
        let out = dir.to_string_lossy().into_owned();
        let w = Wrap::parse_from(["x", "allreduce", "--quick", "--no-progress", "--out", &out]);
        run(&w.a).unwrap();
        for ext in ["csv", "svg", "md"] {
            let body = std::fs::read_to_string(dir.join(format!("allreduce.{ext}"))).unwrap();
            assert!(body.contains("ferroce") || ext == "svg", "{ext}");
            assert!(!body.is_empty());
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            Wrap::try_parse_from(["x", "nope", "--out", &out])
                .map(|w| run(&w.a).is_err())
                .unwrap_or(true)
        );
    }
}
