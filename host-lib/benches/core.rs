//! Host CPU cost of the transport core, per event:
//!
//! - `ack_event/cumulative`: one coalesced ACK (4 packets, cumulative) on a connection with 4
//!   flows and 64 Tags in steady state: scoreboard, RTT, congestion control, message progress,
//!   the completions it causes.
//! - `ack_event/sack_with_hole`: the same with a hole in the SACK bitmap (loss detection and
//!   the retransmit queue).
//! - `completion/send`: an ACK that completes a one-packet Write, plus polling the completion.
//! - `completion/recv`: a receive completion event on an ordered Tag (posted receive matched,
//!   order kept), plus polling it.
//! - `tx_descriptor`: one TX descriptor out of `poll_transmit` (flow choice, pacing, Tag round
//!   robin, segmentation, scoreboard entry).
//!
//! Run: `cargo bench -p ferroce --bench core`. Times are for the timed calls only; the work that
//! keeps the steady state going (posting, transmitting for the ACK benches) runs outside the
//! timed sections.
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use ferroce::core::{
    Connection, ConnectionParams, EcnAimdConfig, TagMode, TransportConfig, WorkRequest, WrKind,
};
use ferroce_proto::hsi::{CompletionStatus, Event, TxDescriptor};
use ferroce_proto::wire::{Opcode, fsn_add};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MTU: u32 = 4096;
const FLOWS: u16 = 4;
const TAGS: usize = 64;

fn connection() -> Connection {
    let params = ConnectionParams {
        local_conn: 1,
        flows: FLOWS,
        mtu: MTU,
        tag_modes: vec![TagMode::Unordered; TAGS],
        tx_initial_fsn: 0xff_0000,
        msg_slots: 8,
        recv_depth: 16,
        entropies: (49152..49216).collect(),
        planes: 1,
    };
    let cfg = TransportConfig {
        pacing_burst_packets: 1 << 20,
        congestion: Arc::new(EcnAimdConfig {
            initial_window_packets: 256,
            ..EcnAimdConfig::default()
        }),
        ..TransportConfig::default()
    };
    let mut c = Connection::new(params, cfg, 0);
    c.set_ready(0);
    c
}

fn write(wr_id: u64, tag: u16, len: u32) -> WorkRequest {
    WorkRequest {
        wr_id,
        tag,
        local_addr: 0x1_0000_0000,
        len,
        kind: WrKind::Write {
            remote_va: 0x2_0000_0000,
            rkey: 0x105,
            imm: None,
        },
        signaled: true,
        solicited: false,
    }
}

fn ack(flow: u16, cum: u32, sack: [u8; 32], ts: u32) -> Event {
    Event::Ack {
        conn: 1,
        flow,
        cum_fsn: cum,
        ecn_echo: false,
        ce_count: 0,
        refused: 0,
        rate_hint_mbps: 100_000,
        ts_echo: ts,
        sack,
    }
}

/// The echoed timestamp of a packet sent one 10 µs RTT before `now`.
fn ts(now: u64) -> u32 {
    now.wrapping_sub(10_000) as u32
}

/// Keeps the connection fed: one 4-packet Write per Tag slot as completions free them.
struct Feeder {
    next_wr: u64,
}

impl Feeder {
    fn top_up(&mut self, c: &mut Connection) {
        while c.send_outstanding() < (TAGS * 2) as u32 {
            let tag = (self.next_wr % TAGS as u64) as u16;
            c.post(write(self.next_wr, tag, 4 * MTU)).unwrap();
            self.next_wr += 1;
        }
    }
}

fn bench_ack(c: &mut Criterion, with_hole: bool) {
    let name = if with_hole {
        "ack_event/sack_with_hole"
    } else {
        "ack_event/cumulative"
    };
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut conn = connection();
            let mut feeder = Feeder { next_wr: 0 };
            let mut descs: Vec<TxDescriptor> = Vec::with_capacity(1024);
            let mut events = Vec::with_capacity(1024);
            let mut now = 1_000_000u64;
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                // Untimed: post and transmit a batch.
                feeder.top_up(&mut conn);
                descs.clear();
                now += 1_000_000;
                conn.poll_transmit(now, 256, &mut descs);
                // The ACKs the receiver NIC would send: one per 4 packets of a flow. With a
                // hole, the first packet of each group is reported missing first (SACK of the
                // other three), then the resend arrives (cumulative ACK).
                events.clear();
                for f in 0..FLOWS {
                    let fsns: Vec<u32> = descs
                        .iter()
                        .filter(|d| d.flow == f)
                        .map(|d| d.fsn)
                        .collect();
                    for g in fsns.chunks(4) {
                        let last = *g.last().unwrap_or(&0);
                        if with_hole && g.len() == 4 {
                            let mut sack = [0u8; 32];
                            sack[0] = 0b111;
                            events.push(ack(f, g[0], sack, ts(now)));
                        }
                        events.push(ack(f, fsn_add(last, 1), [0; 32], ts(now)));
                    }
                }
                let n = (events.len() as u64).min(iters - done) as usize;
                now += 10_000;
                let t0 = Instant::now();
                for ev in &events[..n] {
                    conn.handle_event(black_box(now), black_box(ev));
                }
                total += t0.elapsed();
                done += n as u64;
                assert!(!events.is_empty(), "the benchmark stopped making progress");
                // Untimed: the rest of the batch, and the completions. Holes were acknowledged
                // by the cumulative ACK that followed them, so their resends are dropped.
                for ev in &events[n..] {
                    conn.handle_event(now, ev);
                }
                while conn.poll_completion().is_some() {}
            }
            total
        })
    });
}

fn bench_send_completion(c: &mut Criterion) {
    c.bench_function("completion/send", |b| {
        b.iter_custom(|iters| {
            let mut conn = connection();
            let mut total = Duration::ZERO;
            let mut done = 0u64;
            let mut now = 1_000_000u64;
            let mut descs = Vec::with_capacity(512);
            let mut wr = 0u64;
            while done < iters {
                // Untimed: keep 128 single-packet Writes outstanding, spread over the Tags.
                while conn.send_outstanding() < 128 {
                    conn.post(write(wr, (wr % TAGS as u64) as u16, 1000))
                        .unwrap();
                    wr += 1;
                }
                descs.clear();
                now += 1_000_000;
                conn.poll_transmit(now, 512, &mut descs);
                assert!(!descs.is_empty(), "the benchmark stopped making progress");
                let acks: Vec<Event> = descs
                    .iter()
                    .map(|d| ack(d.flow, fsn_add(d.fsn, 1), [0; 32], ts(now)))
                    .collect();
                let n = (acks.len() as u64).min(iters - done);
                let t0 = Instant::now();
                let mut got = 0u64;
                for ev in &acks[..n as usize] {
                    conn.handle_event(now, black_box(ev));
                    while let Some(wc) = conn.poll_completion() {
                        black_box(wc);
                        got += 1;
                    }
                }
                total += t0.elapsed();
                // Untimed: acknowledge anything left (when n was cut short).
                for ev in &acks[n as usize..] {
                    conn.handle_event(now, ev);
                }
                while conn.poll_completion().is_some() {}
                done += got.max(1);
            }
            total
        })
    });
}

fn bench_recv_completion(c: &mut Criterion) {
    c.bench_function("completion/recv", |b| {
        b.iter_custom(|iters| {
            let params = ConnectionParams {
                tag_modes: vec![TagMode::Ordered; TAGS],
                ..connection().params().clone()
            };
            let mut conn = Connection::new(params, TransportConfig::default(), 0);
            conn.set_ready(0);
            let mut msn = vec![0u32; TAGS];
            let mut total = Duration::ZERO;
            let mut done = 0u64;
            while done < iters {
                // Untimed: post 16 receives per Tag; the NIC completes them out of order
                // (pairs swapped) so the ordered Tags hold every other one back.
                let mut evs = Vec::with_capacity(TAGS * 16);
                for (t, m) in msn.iter_mut().enumerate() {
                    for k in 0..16u32 {
                        let ssn = conn.post_recv(t as u16, k as u64, 0x5000, 4096).unwrap();
                        let swapped = *m + (k ^ 1);
                        evs.push(Event::Completion {
                            conn: 1,
                            tag: t as u16,
                            msn: swapped,
                            ssn: ssn ^ 1,
                            opcode: Opcode::Send,
                            status: CompletionStatus::Success,
                            len: 4096,
                            imm: None,
                        });
                    }
                    *m += 16;
                }
                let n = (evs.len() as u64).min(iters - done);
                let t0 = Instant::now();
                for ev in &evs[..n as usize] {
                    conn.handle_event(0, black_box(ev));
                    while let Some(wc) = conn.poll_completion() {
                        black_box(wc);
                    }
                }
                total += t0.elapsed();
                for ev in &evs[n as usize..] {
                    conn.handle_event(0, ev);
                }
                while conn.poll_completion().is_some() {}
                done += n;
            }
            total
        })
    });
}

fn bench_tx(c: &mut Criterion) {
    c.bench_function("tx_descriptor", |b| {
        b.iter_custom(|iters| {
            let mut conn = connection();
            let mut feeder = Feeder { next_wr: 0 };
            let mut descs = Vec::with_capacity(256);
            let mut total = Duration::ZERO;
            let mut done = 0u64;
            let mut now = 1_000_000u64;
            while done < iters {
                feeder.top_up(&mut conn);
                descs.clear();
                now += 1_000_000;
                let budget = (iters - done).min(128) as usize;
                let t0 = Instant::now();
                let n = conn.poll_transmit(black_box(now), budget, &mut descs);
                total += t0.elapsed();
                assert!(n > 0, "the benchmark stopped making progress");
                done += n.max(1) as u64;
                // Untimed: acknowledge everything so windows stay open.
                let mut hi = [None; FLOWS as usize];
                for d in &descs {
                    hi[d.flow as usize] = Some(d.fsn);
                }
                for (f, h) in hi.iter().enumerate() {
                    if let Some(h) = h {
                        conn.handle_event(now, &ack(f as u16, fsn_add(*h, 1), [0; 32], ts(now)));
                    }
                }
                while conn.poll_completion().is_some() {}
            }
            total
        })
    });
}

/// Every benchmark.
fn benches(c: &mut Criterion) {
    bench_ack(c, false);
    bench_ack(c, true);
    bench_send_completion(c);
    bench_recv_completion(c);
    bench_tx(c);
}

criterion_group!(core, benches);
criterion_main!(core);
