//! Incast on the sans-IO core: N senders (each a `core::Connection` with a deep backlog) start
//! at once toward one receiver whose port drains at C. Between them: a propagation delay each
//! way and one FIFO queue at the receiver port that CE-marks above a threshold. The receiver
//! runs [`FairShare`] and stamps each sender's hint on every ACK, as the NIC does with the
//! rate-hint table.
//!
//! Checked: before the hints arrive the senders overload the port (the incast is real); within
//! two RTTs of the receiver noticing them, the aggregate sending rate is at most C (+10 %) and
//! stays there; the port stays busy (no collapse); the senders share fairly.

mod common;

use common::write_64k;
use ferroce::core::{Connection, FairShare, TransportConfig};
use ferroce_proto::hsi::{Event, TxDescriptor};
use ferroce_proto::wire::fsn_add;
use std::collections::VecDeque;

const N: usize = 8;
const CAPACITY_MBPS: u32 = 100_000;
/// Bytes per ns at C.
const C: f64 = CAPACITY_MBPS as f64 / 8000.0;
const DELAY: u64 = 2_000;
const RTT: u64 = 2 * DELAY;
const HINT_INTERVAL: u64 = 1_000;
const ECN_THRESHOLD: u64 = 100_000;
const TICK: u64 = 50;
const END: u64 = 600_000;
const WINDOW: u64 = 4_000;

struct Packet {
    sender: usize,
    flow: u16,
    fsn: u32,
    bytes: u64,
    sent_at: u64,
    arrive: u64,
}

#[test]
fn incast_settles_within_two_rtts_of_the_receiver_noticing() {
    let mut senders: Vec<Connection> = (0..N)
        .map(|i| common::connection(i, TransportConfig::default()))
        .collect();
    let mut fair = FairShare::new(CAPACITY_MBPS, 100_000);
    for i in 0..N {
        fair.add_sender(i as u32, 100_000);
    }
    // Before the receiver has seen anyone, the hint is the full capacity (a newcomer's share).
    fair.compute(0, |_, _| {});
    let mut wr = 0u64;
    let mut to_port: VecDeque<Packet> = VecDeque::new();
    let mut queue: VecDeque<Packet> = VecDeque::new();
    let mut queue_bytes = 0u64;
    let mut port_free_at = 0u64;
    let mut acks: Vec<VecDeque<(u64, Event)>> = (0..N).map(|_| VecDeque::new()).collect();
    let mut delivered = [0u64; N];
    let mut sent_per_window: Vec<f64> = vec![0.0; (END / WINDOW) as usize + 1];
    let mut port_per_window: Vec<f64> = vec![0.0; (END / WINDOW) as usize + 1];
    let mut delivered_late = [0u64; N];
    let mut max_queue_late = 0u64;
    let mut noticed: Option<u64> = None;
    let mut next_hint = 0u64;
    let mut descs: Vec<TxDescriptor> = Vec::new();
    let mut now = 0;
    while now < END {
        // Senders: ACKs due, timers, transmit.
        for (i, s) in senders.iter_mut().enumerate() {
            while acks[i].front().is_some_and(|(t, _)| *t <= now) {
                let (_, ev) = acks[i].pop_front().unwrap();
                s.handle_event(now, &ev);
            }
            while s.poll_completion().is_some() {}
            while s.send_outstanding() < 16 {
                s.post(write_64k(wr)).unwrap();
                wr += 1;
            }
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
            descs.clear();
            s.poll_transmit(now, 64, &mut descs);
            for d in &descs {
                let bytes = d.payload_len as u64 + 100;
                sent_per_window[(now / WINDOW) as usize] += bytes as f64;
                to_port.push_back(Packet {
                    sender: i,
                    flow: d.flow,
                    fsn: d.fsn,
                    bytes,
                    sent_at: now,
                    arrive: now + DELAY,
                });
            }
        }
        // The receiver port: enqueue arrivals (CE mark above the threshold), drain at C.
        while to_port.front().is_some_and(|p| p.arrive <= now) {
            let p = to_port.pop_front().unwrap();
            queue_bytes += p.bytes;
            queue.push_back(p);
        }
        while let Some(p) = queue.front() {
            let start = port_free_at.max(p.arrive);
            let done = start + (p.bytes as f64 / C) as u64;
            if done > now {
                break;
            }
            port_free_at = done;
            let p = queue.pop_front().unwrap();
            let marked = queue_bytes > ECN_THRESHOLD;
            queue_bytes -= p.bytes;
            delivered[p.sender] += 1;
            port_per_window[(done / WINDOW) as usize] += p.bytes as f64;
            if now > END - 100_000 {
                delivered_late[p.sender] += p.bytes;
            }
            // FIFO and lossless: every ACK is cumulative, one per packet.
            let ev = Event::Ack {
                conn: p.sender as u32,
                flow: p.flow,
                cum_fsn: fsn_add(p.fsn, 1),
                ecn_echo: marked,
                ce_count: marked as u16,
                refused: 0,
                rate_hint_mbps: fair.hint(p.sender as u32).unwrap(),
                ts_echo: p.sent_at as u32,
                sack: [0; 32],
            };
            acks[p.sender].push_back((done + DELAY, ev));
        }
        if now > END - 100_000 {
            max_queue_late = max_queue_late.max(queue_bytes);
        }
        // The receiver's host: progress per sender, fair shares every interval.
        if now >= next_hint {
            for (i, &d) in delivered.iter().enumerate() {
                fair.observe(i as u32, now, d);
            }
            fair.compute(now, |_, _| {});
            if noticed.is_none() && fair.active_count(now) == N {
                noticed = Some(now);
            }
            next_hint = now + HINT_INTERVAL;
        }
        now += TICK;
    }
    let noticed = noticed.expect("the receiver never saw all senders");
    let rate = |w: usize| sent_per_window[w] / WINDOW as f64 / C;
    let port = |w: usize| port_per_window[w] / WINDOW as f64 / C;
    let show = |f: &dyn Fn(usize) -> f64| {
        (0..(END / WINDOW) as usize)
            .step_by(5)
            .map(|w| (f(w) * 100.0).round() / 100.0)
            .collect::<Vec<_>>()
    };
    println!("noticed at {noticed} ns");
    println!(
        "sending rate, every 5th {WINDOW} ns window (x C): {:?}",
        show(&rate)
    );
    println!(
        "port rate, every 5th {WINDOW} ns window (x C):    {:?}",
        show(&port)
    );
    for (i, s) in senders.iter().enumerate() {
        let st = s.stats();
        println!(
            "sender {i}: sent {} retx {} probes {} timeouts {} ecn {} hint {} outstanding {} paths {:?}",
            st.packets_sent,
            st.retransmissions(),
            st.tail_probes,
            st.timeouts,
            st.ecn_echoes,
            st.rate_hint_mbps,
            s.send_outstanding(),
            s.paths()
                .iter()
                .map(|p| (p.window, (p.pacing_rate * 1000.0) as u64, p.srtt_ns, p.dead))
                .collect::<Vec<_>>()
        );
    }
    for i in 0..N {
        assert_eq!(fair.hint(i as u32), Some(CAPACITY_MBPS / N as u32));
    }
    assert!(rate(0) > 4.0, "no incast to settle: {:.2} x C", rate(0));
    // After two RTTs past the moment the receiver saw every sender, the aggregate sending rate
    // stays at C or below (averaged over 5 RTTs: pacing sends in small bursts).
    let settled = ((noticed + 2 * RTT) / WINDOW + 1) as usize;
    let last = (END / WINDOW) as usize - 1;
    for w in (settled..last - 5).step_by(5) {
        let avg = (w..w + 5).map(rate).sum::<f64>() / 5.0;
        assert!(
            avg <= 1.1,
            "{}-{} us: {avg:.2} x C after settling",
            w as u64 * WINDOW / 1000,
            (w as u64 + 5) * WINDOW / 1000
        );
    }
    let late: f64 = (last - 20..last).map(port).sum::<f64>() / 20.0;
    assert!(late > 0.9, "the port went idle: {late:.2} x C");
    assert!(
        max_queue_late < 3 * ECN_THRESHOLD,
        "standing queue {max_queue_late} B late in the run"
    );
    // Jain's fairness index over the last 100 us.
    let x: Vec<f64> = delivered_late.iter().map(|&b| b as f64).collect();
    let jain = x.iter().sum::<f64>().powi(2) / (N as f64 * x.iter().map(|v| v * v).sum::<f64>());
    println!("late utilisation {late:.2} x C, Jain {jain:.3}, late max queue {max_queue_late} B");
    assert!(jain > 0.95, "unfair: {delivered_late:?}");
}
