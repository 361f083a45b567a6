//! The host budget on the sans-IO core: many connections of one host share one NIC line, as
//! the context drives them (one packet per connection per turn under one [`HostBudget`]).
//! Between the NIC and the receivers: the NIC's output FIFO draining at the line rate, then a
//! propagation delay each way to uncongested receivers that acknowledge every packet.
//!
//! Checked: with 63 connections × 4 flows the bytes in flight never exceed the cap (also when
//! the fabric could hold more), the NIC queue stays within the pacer's burst, no
//! retransmission timer fires, the line stays busy and the connections share it fairly;
//! without the budget the same host queues more than a minimum RTO in its NIC; one
//! connection alone still runs at line rate, and is host-paced only if configured to be.

mod common;

use common::{MTU, write_64k};
use ferroce::core::host_budget::round_robin;
use ferroce::core::{Connection, HostBudget, HostBudgetConfig, TransportConfig};
use ferroce_proto::hsi::{Event, TxDescriptor};
use ferroce_proto::wire::fsn_add;
use std::collections::VecDeque;

const LINE_MBPS: u32 = 100_000;
/// Bytes per ns at the line rate.
const LINE: f64 = LINE_MBPS as f64 / 8000.0;
/// Wire bytes of a packet beyond its payload: headers plus preamble, FCS and gap.
const WIRE_EXTRA: u64 = 124;
const TICK: u64 = 100;

struct Outcome {
    /// Payload bytes acknowledged per connection after the warm-up.
    delivered: Vec<u64>,
    /// Largest sum of the connections' bytes in flight.
    max_inflight: u64,
    /// Deepest NIC queue (bytes).
    max_queue: u64,
    /// Retransmission timer expiries, all connections.
    timeouts: u64,
    cap: u64,
    /// Length of the measured span (ns).
    span: u64,
}

fn connection(i: usize) -> Connection {
    // The fabric experiments' first timeout (the library's default is a generous 1 ms).
    let cfg = TransportConfig {
        initial_rto_ns: 200_000,
        ..TransportConfig::default()
    };
    common::connection(i, cfg)
}

/// `n` connections with deep backlogs for `end` ns; `delay` one way to the receivers;
/// throughput is measured from `warmup`.
fn run(n: usize, budget: HostBudgetConfig, delay: u64, end: u64, warmup: u64) -> Outcome {
    let mut conns: Vec<Connection> = (0..n).map(connection).collect();
    let mut budget = HostBudget::new(budget, LINE_MBPS);
    // NIC FIFO: (connection, descriptor, time it was posted); the head leaves at `free_at`.
    let mut nic: VecDeque<(usize, TxDescriptor, u64)> = VecDeque::new();
    let mut queue_bytes = 0u64;
    let mut free_at = 0.0f64;
    // In the wire or back: (arrival at the sender, connection, ACK).
    let mut acks: VecDeque<(u64, usize, Event)> = VecDeque::new();
    let mut out = Outcome {
        delivered: vec![0; n],
        max_inflight: 0,
        max_queue: 0,
        timeouts: 0,
        cap: budget.cap(),
        span: end - warmup,
    };
    let mut wr = 0u64;
    let mut descs = Vec::new();
    let mut rr = 0;
    let mut now = 0;
    while now < end {
        while acks.front().is_some_and(|a| a.0 <= now) {
            let (_, i, ev) = acks.pop_front().unwrap();
            conns[i].handle_event(now, &ev);
        }
        for c in conns.iter_mut() {
            while c.poll_completion().is_some() {}
            while c.send_outstanding() < 8 {
                c.post(write_64k(wr)).unwrap();
                wr += 1;
            }
            if c.poll_timer().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
        // The context's transmit round.
        let active = conns
            .iter()
            .filter(|c| c.inflight_bytes() > 0 || c.transmit_at().is_some())
            .count();
        budget.begin(conns.iter().map(|c| c.inflight_bytes()).sum(), active);
        descs.clear();
        let mut owners = Vec::new();
        let (_, next) = round_robin(n, rr, usize::MAX, &mut budget, |i, b| {
            let k = conns[i].poll_transmit_gated(now, 1, b, &mut descs);
            owners.extend(std::iter::repeat_n(i, k));
            k
        });
        rr = next;
        for (d, &i) in descs.iter().zip(&owners) {
            queue_bytes += d.payload_len as u64 + WIRE_EXTRA;
            nic.push_back((i, *d, now));
        }
        let inflight: u64 = conns.iter().map(|c| c.inflight_bytes()).sum();
        out.max_inflight = out.max_inflight.max(inflight);
        out.max_queue = out.max_queue.max(queue_bytes);
        // The line: packets leave in order; each is acknowledged one RTT after it left.
        while let Some(&(i, d, posted)) = nic.front() {
            let bytes = d.payload_len as u64 + WIRE_EXTRA;
            let start = free_at.max(posted as f64);
            let done = start + bytes as f64 / LINE;
            if done > (now + TICK) as f64 {
                break;
            }
            nic.pop_front();
            free_at = done;
            queue_bytes -= bytes;
            let back = done as u64 + 2 * delay;
            if back >= warmup && back < end {
                out.delivered[i] += d.payload_len as u64;
            }
            acks.push_back((
                back,
                i,
                Event::Ack {
                    conn: i as u32,
                    flow: d.flow,
                    cum_fsn: fsn_add(d.fsn, 1),
                    ecn_echo: false,
                    ce_count: 0,
                    refused: 0,
                    rate_hint_mbps: 0,
                    ts_echo: posted as u32,
                    sack: [0; 32],
                },
            ));
        }
        now += TICK;
    }
    out.timeouts = conns.iter().map(|c| c.stats().timeouts).sum();
    out
}

fn jain(x: &[u64]) -> f64 {
    let s: f64 = x.iter().map(|&v| v as f64).sum();
    let q: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    s * s / (x.len() as f64 * q)
}

fn goodput_share(o: &Outcome) -> f64 {
    let payload: u64 = o.delivered.iter().sum();
    // Of the payload the line could carry in the span.
    let per_pkt = (MTU as u64 + WIRE_EXTRA) as f64 / LINE;
    payload as f64 / (o.span as f64 / per_pkt * MTU as f64)
}

#[test]
fn many_connections_stay_within_the_budget_and_never_time_out() {
    // An 8 µs RTT: the pacer binds, the cap has room.
    let o = run(63, HostBudgetConfig::default(), 4_000, 1_500_000, 300_000);
    println!(
        "63 connections, 8 µs RTT: max in flight {} of cap {}, max NIC queue {} B, \
         timeouts {}, line share {:.3}, Jain {:.4}",
        o.max_inflight,
        o.cap,
        o.max_queue,
        o.timeouts,
        goodput_share(&o),
        jain(&o.delivered)
    );
    assert!(o.max_inflight <= o.cap, "{} > {}", o.max_inflight, o.cap);
    // The pacer's 2 µs burst plus the packet that crossed it, and one tick of this harness.
    let burst = ((2_000 + TICK) as f64 * LINE) as u64 + MTU as u64 + WIRE_EXTRA;
    assert!(o.max_queue <= burst, "NIC queue {} > {burst}", o.max_queue);
    assert_eq!(o.timeouts, 0, "no packet is lost, so no timer may fire");
    assert!(goodput_share(&o) > 0.97, "line share {}", goodput_share(&o));
    assert!(jain(&o.delivered) > 0.99, "Jain {}", jain(&o.delivered));
}

#[test]
fn the_cap_binds_when_the_fabric_holds_more_than_it() {
    // A 40 µs RTT: a BDP of 500 KB, more than the 375 KB cap.
    let o = run(63, HostBudgetConfig::default(), 20_000, 1_500_000, 300_000);
    let share = goodput_share(&o);
    println!(
        "63 connections, 40 µs RTT: max in flight {} of cap {}, timeouts {}, line share \
         {share:.3}, Jain {:.4}",
        o.max_inflight,
        o.cap,
        o.timeouts,
        jain(&o.delivered)
    );
    assert!(o.max_inflight <= o.cap, "{} > {}", o.max_inflight, o.cap);
    assert!(o.max_inflight > o.cap * 9 / 10, "the cap must bind here");
    assert_eq!(o.timeouts, 0);
    // What the cap allows: cap / (line × RTT).
    let allowed = o.cap as f64 / (LINE * 40_000.0);
    assert!(
        share > 0.9 * allowed && share < 1.02 * allowed,
        "{share} vs {allowed}"
    );
    assert!(jain(&o.delivered) > 0.99, "Jain {}", jain(&o.delivered));
}

#[test]
fn without_the_budget_the_nic_queue_outgrows_the_rto() {
    // The problem the budget solves: per-flow windows alone let 63 × 4 × 8 packets loose,
    // and they wait in the NIC queue longer than the 100 µs minimum RTO.
    let o = run(63, HostBudgetConfig::unlimited(), 4_000, 1_500_000, 300_000);
    println!(
        "unlimited: max in flight {}, max NIC queue {} B ({:.0} µs), timeouts {}",
        o.max_inflight,
        o.max_queue,
        o.max_queue as f64 / LINE / 1e3,
        o.timeouts
    );
    assert!(o.max_queue as f64 > 100_000.0 * LINE, "{}", o.max_queue);
}

#[test]
fn one_connection_alone_still_runs_at_line_rate() {
    let o = run(1, HostBudgetConfig::default(), 4_000, 1_000_000, 100_000);
    println!(
        "1 connection: max in flight {} of cap {}, line share {:.3}",
        o.max_inflight,
        o.cap,
        goodput_share(&o)
    );
    assert!(o.max_inflight <= o.cap);
    assert_eq!(o.timeouts, 0);
    assert!(goodput_share(&o) > 0.97, "line share {}", goodput_share(&o));
}

#[test]
fn a_connection_alone_is_not_host_paced_unless_configured() {
    // One connection, 4 flows of 8 packets each: its first windows go at once by default
    // (its own congestion control paces it), into a NIC queue deeper than the 2 µs burst.
    let burst = ((2_000 + TICK) as f64 * LINE) as u64 + MTU as u64 + WIRE_EXTRA;
    let alone = run(1, HostBudgetConfig::default(), 4_000, 200_000, 0);
    assert!(alone.max_queue > burst, "NIC queue {}", alone.max_queue);
    assert_eq!(alone.timeouts, 0);
    // Host pacing for a connection alone too: the queue stays within the burst.
    let paced = HostBudgetConfig {
        pacing_min_active: 1,
        ..HostBudgetConfig::default()
    };
    let o = run(1, paced, 4_000, 200_000, 0);
    assert!(o.max_queue <= burst, "NIC queue {} > {burst}", o.max_queue);
    assert_eq!(o.timeouts, 0);
}
