//! Unit tests of [`Connection`] driven by synthesized NIC events: exact control over which
//! packet is acknowledged when.

use super::*;
use ferroce_proto::hsi::{Event, TxDescriptor, descriptor::FLAG_ACK_REQ};
use ferroce_proto::wire::{NakReason, fsn_add};

const MTU: u32 = 1000;

fn params(flows: u16, modes: &[TagMode]) -> ConnectionParams {
    ConnectionParams {
        local_conn: 7,
        flows,
        mtu: MTU,
        tag_modes: modes.to_vec(),
        tx_initial_fsn: 0xff_fff0,
        msg_slots: 8,
        recv_depth: 16,
        entropies: (100..164).collect(),
        planes: 1,
    }
}

/// A ready connection. Pacing bursts are made large so that a test sees whole batches at one
/// instant (pacing itself has its own test).
fn ready(flows: u16, modes: &[TagMode], cfg: TransportConfig) -> Connection {
    let cfg = TransportConfig {
        pacing_burst_packets: 1000,
        ..cfg
    };
    let mut c = Connection::new(params(flows, modes), cfg, 0);
    c.set_ready(0);
    c
}

/// A ready connection of `flows` flows over `planes` NIC ports, with `cfg` as given.
fn ready_on_planes(flows: u16, planes: u8, cfg: TransportConfig) -> Connection {
    let p = ConnectionParams {
        planes,
        ..params(flows, &[TagMode::Ordered])
    };
    let mut c = Connection::new(p, cfg, 0);
    c.set_ready(0);
    c
}

fn write(wr_id: u64, tag: u16, len: u32) -> WorkRequest {
    WorkRequest {
        wr_id,
        tag,
        local_addr: 0x1000 * (wr_id + 1),
        len,
        kind: WrKind::Write {
            remote_va: 0x9000_0000,
            rkey: 0x105,
            imm: None,
        },
        signaled: true,
        solicited: false,
    }
}

fn send_all(c: &mut Connection, now: u64) -> Vec<TxDescriptor> {
    let mut out = Vec::new();
    c.poll_transmit(now, 10_000, &mut out);
    out
}

/// An ACK of `flow` with cumulative FSN `cum` and the given FSNs SACKed.
fn ack(flow: u16, cum: u32, sacked: &[u32], ts: u32) -> Event {
    let mut sack = [0u8; 32];
    for &f in sacked {
        let i = ferroce_proto::wire::fsn_diff(f, cum) - 1;
        assert!((0..256).contains(&i));
        sack[i as usize / 8] |= 1 << (i % 8);
    }
    Event::Ack {
        conn: 7,
        flow,
        cum_fsn: cum,
        ecn_echo: false,
        ce_count: 0,
        refused: 0,
        rate_hint_mbps: 0,
        ts_echo: ts,
        sack,
    }
}

fn completions(c: &mut Connection) -> Vec<WorkCompletion> {
    std::iter::from_fn(|| c.poll_completion()).collect()
}

/// Acknowledges every descriptor cumulatively, flow by flow.
fn ack_all(c: &mut Connection, descs: &[TxDescriptor], now: u64) {
    let mut hi: std::collections::BTreeMap<u16, u32> = Default::default();
    for d in descs {
        let e = hi.entry(d.flow).or_insert(d.fsn);
        if ferroce_proto::wire::fsn_diff(d.fsn, *e) > 0 {
            *e = d.fsn;
        }
    }
    for (flow, fsn) in hi {
        c.handle_event(now, &ack(flow, fsn_add(fsn, 1), &[], now as u32));
    }
}

#[test]
fn packets_are_sprayed_over_flows_with_per_flow_fsns_and_entropies() {
    let mut c = ready(4, &[TagMode::Ordered], TransportConfig::default());
    c.post(write(1, 0, 8 * MTU)).unwrap();
    let d = send_all(&mut c, 0);
    assert_eq!(d.len(), 8);
    for f in 0..4u16 {
        let on: Vec<&TxDescriptor> = d.iter().filter(|x| x.flow == f).collect();
        assert_eq!(on.len(), 2, "even spray");
        assert_eq!(on[0].fsn, 0xff_fff0);
        assert_eq!(on[1].fsn, 0xff_fff1);
        assert_eq!(on[0].entropy, 100 + f);
    }
    let offsets: Vec<u32> = d.iter().map(|x| x.offset).collect();
    assert_eq!(offsets, (0..8).map(|i| i * MTU).collect::<Vec<_>>());
    assert!(d[7].flags & FLAG_ACK_REQ != 0, "the tail requests ACKs");
    assert!(d[0].flags & FLAG_ACK_REQ == 0);
    ack_all(&mut c, &d, 10_000);
    let wcs = completions(&mut c);
    assert_eq!(wcs.len(), 1);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (1, WcStatus::Success));
}

#[test]
fn a_hole_is_resent_once_per_observation_not_once_per_ack() {
    let mut c = ready(1, &[TagMode::Ordered], TransportConfig::default());
    c.post(write(1, 0, 8 * MTU)).unwrap();
    let d = send_all(&mut c, 0);
    assert_eq!(d.len(), 8);
    let f0 = d[0].fsn;
    // FSN 2 is lost: ACKs keep showing the hole while later packets arrive.
    for k in 3..8u32 {
        let sacked: Vec<u32> = (3..=k).map(|i| fsn_add(f0, i)).collect();
        c.handle_event(1000 + k as u64, &ack(0, fsn_add(f0, 2), &sacked, 0));
    }
    let r = send_all(&mut c, 2_000);
    assert_eq!(
        r.len(),
        1,
        "one resend for one hole, whatever the number of ACKs"
    );
    assert_eq!(r[0].fsn, fsn_add(f0, 2));
    assert_eq!((r[0].flow, r[0].offset), (0, 2 * MTU));
    assert_eq!(c.stats().retx_sack, 1);
    // The same ACK again: nothing new was delivered after the resend, so nothing is resent.
    let sacked: Vec<u32> = (3..8).map(|i| fsn_add(f0, i)).collect();
    c.handle_event(3_000, &ack(0, fsn_add(f0, 2), &sacked, 0));
    assert!(send_all(&mut c, 3_000).is_empty());
    // The resend arrives: the message completes.
    c.handle_event(4_000, &ack(0, fsn_add(f0, 8), &[], 0));
    assert_eq!(completions(&mut c).len(), 1);
}

#[test]
fn ordered_tags_complete_in_msn_order_unordered_on_arrival() {
    for mode in [TagMode::Ordered, TagMode::Unordered] {
        let mut c = ready(2, &[mode], TransportConfig::default());
        // A: 3 packets, B: 1 packet, on the same Tag.
        c.post(write(1, 0, 3 * MTU)).unwrap();
        c.post(write(2, 0, 10)).unwrap();
        let d = send_all(&mut c, 0);
        assert_eq!(d.len(), 4);
        // Acknowledge B's packet and two of A's; A's middle packet later.
        let b = d.iter().find(|x| x.msn == 1).unwrap();
        let a1 = d.iter().find(|x| x.msn == 0 && x.offset == MTU).unwrap();
        for x in &d {
            if x.msn == 0 && x.offset == MTU {
                continue;
            }
            if x.flow == a1.flow && x.fsn != a1.fsn {
                // Same flow as the missing one: SACK it above the hole.
                c.handle_event(100, &ack(x.flow, a1.fsn, &[x.fsn], 0));
            } else if x.flow != a1.flow {
                c.handle_event(100, &ack(x.flow, fsn_add(x.fsn, 1), &[], 0));
            }
        }
        let _ = b;
        let early: Vec<u64> = completions(&mut c).iter().map(|w| w.wr_id).collect();
        match mode {
            TagMode::Ordered => assert!(early.is_empty(), "B must wait for A: {early:?}"),
            TagMode::Unordered => assert_eq!(early, vec![2], "B completes on arrival"),
        }
        c.handle_event(200, &ack(a1.flow, fsn_add(a1.fsn, 2), &[], 0));
        let late: Vec<u64> = completions(&mut c).iter().map(|w| w.wr_id).collect();
        match mode {
            TagMode::Ordered => assert_eq!(late, vec![1, 2]),
            TagMode::Unordered => assert_eq!(late, vec![1]),
        }
    }
}

#[test]
fn one_tag_blocked_by_its_slots_does_not_block_another() {
    let mut c = ready(
        4,
        &[TagMode::Ordered, TagMode::Ordered],
        TransportConfig::default(),
    );
    for i in 0..12 {
        c.post(write(i, 0, 10)).unwrap();
    }
    c.post(write(100, 1, 10)).unwrap();
    let d = send_all(&mut c, 0);
    let tag0: Vec<u32> = d.iter().filter(|x| x.tag == 0).map(|x| x.msn).collect();
    assert_eq!(
        tag0,
        (0..8).collect::<Vec<_>>(),
        "at most msg_slots incomplete per Tag"
    );
    assert!(d.iter().any(|x| x.tag == 1), "Tag 1 is not held by Tag 0");
    // Completing msn 0 lets msn 8 go.
    let m0 = d.iter().find(|x| x.tag == 0 && x.msn == 0).unwrap();
    c.handle_event(50, &ack(m0.flow, fsn_add(m0.fsn, 1), &[], 0));
    let d2 = send_all(&mut c, 100);
    assert_eq!(d2.iter().map(|x| x.msn).collect::<Vec<_>>(), vec![8]);
}

#[test]
fn a_fence_holds_later_requests_until_earlier_ones_complete() {
    let mut c = ready(
        2,
        &[TagMode::Ordered, TagMode::Unordered],
        TransportConfig::default(),
    );
    c.post(write(1, 0, 2 * MTU)).unwrap();
    c.fence().unwrap();
    c.post(write(2, 1, 10)).unwrap();
    let d = send_all(&mut c, 0);
    assert!(
        d.iter().all(|x| x.tag == 0),
        "nothing after the fence leaves"
    );
    ack_all(&mut c, &d, 1000);
    let d2 = send_all(&mut c, 1000);
    assert_eq!(d2.len(), 1);
    assert_eq!(d2[0].tag, 1);
}

/// [`ack`] carrying the receiver's terminal refusal count.
fn ack_refused(flow: u16, cum: u32, sacked: &[u32], refused: u16) -> Event {
    let mut e = ack(flow, cum, sacked, 0);
    if let Event::Ack { refused: r, .. } = &mut e {
        *r = refused;
    }
    e
}

#[test]
fn an_ack_counting_a_refusal_whose_nak_was_lost_fails_what_it_covers() {
    let mut c = ready(1, &[TagMode::Ordered], TransportConfig::default());
    c.post(write(1, 0, 2 * MTU)).unwrap();
    c.post(write(2, 0, 10)).unwrap();
    c.post(write(3, 0, 10)).unwrap();
    c.post(write(4, 0, 10)).unwrap();
    let d = send_all(&mut c, 0);
    assert_eq!(d.len(), 5);
    // Packet 0 acknowledged before the refusal of packet 1: nothing completes yet.
    c.handle_event(10, &ack_refused(0, d[1].fsn, &[], 0));
    assert!(completions(&mut c).is_empty());
    // The NAK of packet 1 was lost. This ACK newly covers packets 1 and 2 (cumulatively) and
    // packet 4 (SACK) and counts one refusal: none of writes 1, 2 and 4 may succeed.
    c.handle_event(20, &ack_refused(0, d[3].fsn, &[d[4].fsn], 1));
    let wcs: Vec<(u64, WcStatus)> = completions(&mut c)
        .iter()
        .map(|w| (w.wr_id, w.status))
        .collect();
    assert_eq!(
        wcs,
        vec![
            (1, WcStatus::RemoteErrorUnknown),
            (2, WcStatus::RemoteErrorUnknown)
        ]
    );
    assert_eq!(c.stats().lost_terminal_naks, 1);
    // The count was adopted: packet 3 is acknowledged under the same count and succeeds; write
    // 4 keeps its error.
    c.handle_event(30, &ack_refused(0, fsn_add(d[4].fsn, 1), &[], 1));
    let wcs: Vec<(u64, WcStatus)> = completions(&mut c)
        .iter()
        .map(|w| (w.wr_id, w.status))
        .collect();
    assert_eq!(
        wcs,
        vec![(3, WcStatus::Success), (4, WcStatus::RemoteErrorUnknown)]
    );
    // The lost NAK turning up late, or an older ACK, changes nothing.
    c.handle_event(
        40,
        &Event::Nak {
            conn: 7,
            flow: 0,
            fsn: d[1].fsn,
            reason: NakReason::RemoteAccess,
            tag: 0,
            msn: 0,
            offset: MTU,
        },
    );
    c.handle_event(50, &ack_refused(0, d[3].fsn, &[], 0));
    assert!(completions(&mut c).is_empty());
    assert_eq!(c.stats().lost_terminal_naks, 1);
    // A refusal learned from its NAK is not counted twice when the ACK reports it.
    c.post(write(5, 0, 10)).unwrap();
    c.post(write(6, 0, 10)).unwrap();
    let d = send_all(&mut c, 60);
    c.handle_event(
        70,
        &Event::Nak {
            conn: 7,
            flow: 0,
            fsn: d[0].fsn,
            reason: NakReason::InvalidRequest,
            tag: 0,
            msn: 4,
            offset: 0,
        },
    );
    c.handle_event(80, &ack_refused(0, fsn_add(d[1].fsn, 1), &[], 2));
    let wcs: Vec<(u64, WcStatus)> = completions(&mut c)
        .iter()
        .map(|w| (w.wr_id, w.status))
        .collect();
    assert_eq!(
        wcs,
        vec![(5, WcStatus::RemoteInvalidRequest), (6, WcStatus::Success)]
    );
    assert_eq!(c.stats().lost_terminal_naks, 1);
}

#[test]
fn a_terminal_nak_fails_the_request_and_counts_the_packet_as_received() {
    let mut c = ready(1, &[TagMode::Ordered], TransportConfig::default());
    c.post(write(1, 0, 2 * MTU)).unwrap();
    c.post(write(2, 0, 10)).unwrap();
    let d = send_all(&mut c, 0);
    c.handle_event(
        10,
        &Event::Nak {
            conn: 7,
            flow: 0,
            fsn: d[1].fsn,
            reason: NakReason::RemoteAccess,
            tag: 0,
            msn: 0,
            offset: MTU,
        },
    );
    // The receiver consumed it: the ACK moves past it, nothing is resent.
    c.handle_event(20, &ack(0, fsn_add(d[2].fsn, 1), &[], 0));
    assert!(send_all(&mut c, 30).is_empty());
    let wcs = completions(&mut c);
    assert_eq!(wcs.len(), 2);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status),
        (1, WcStatus::RemoteAccessError)
    );
    assert_eq!((wcs[1].wr_id, wcs[1].status), (2, WcStatus::Success));
    assert_eq!(c.state(), ConnState::Ready);
}

#[test]
fn receiver_not_ready_parks_the_packet_and_backs_off() {
    let cfg = TransportConfig::default();
    let backoff = cfg.rnr_initial_backoff_ns;
    let mut c = ready(1, &[TagMode::Ordered], cfg);
    c.post(WorkRequest {
        kind: WrKind::Send { imm: None },
        ..write(1, 0, 10)
    })
    .unwrap();
    let d = send_all(&mut c, 0);
    let nak = Event::Nak {
        conn: 7,
        flow: 0,
        fsn: d[0].fsn,
        reason: NakReason::ReceiverNotReady,
        tag: 0,
        msn: 0,
        offset: 0,
    };
    c.handle_event(10, &nak);
    assert!(send_all(&mut c, 11).is_empty(), "not before the backoff");
    assert_eq!(c.poll_timeout(), Some(10 + backoff));
    let r = send_all(&mut c, 10 + backoff);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].fsn, d[0].fsn, "same flow, same FSN");
    c.handle_event(20 + backoff, &nak);
    assert!(
        send_all(&mut c, 20 + 2 * backoff - 1).is_empty(),
        "the backoff doubled"
    );
    assert_eq!(send_all(&mut c, 20 + 3 * backoff).len(), 1);
    assert_eq!(c.stats().retransmissions(), 0);
    assert_eq!(c.stats().resent_not_ready, 2);
}

#[test]
fn timeouts_change_entropy_then_declare_the_path_dead_and_an_ack_revives_it() {
    let cfg = TransportConfig {
        same_entropy_retries: 2,
        dead_after_timeouts: 3,
        connection_timeout_ns: u64::MAX / 4,
        // Only the timeouts: no tail-loss probe of the lone packet in flight first.
        tail_probe_few: false,
        ..TransportConfig::default()
    };
    let mut c = ready(2, &[TagMode::Ordered], cfg);
    c.post(write(1, 0, 2 * MTU)).unwrap();
    let d = send_all(&mut c, 0);
    // Flow 1 answers; flow 0 is blackholed.
    let on1 = d.iter().find(|x| x.flow == 1).unwrap();
    c.handle_event(10_000, &ack(1, fsn_add(on1.fsn, 1), &[], 0));
    let lost = d.iter().find(|x| x.flow == 0).unwrap();
    let mut entropies = vec![lost.entropy];
    let mut now = 10_000;
    for _ in 0..3 {
        now = c.poll_timeout().unwrap();
        c.handle_timeout(now);
        let r = send_all(&mut c, now);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].flow, r[0].fsn), (0, lost.fsn), "same flow and FSN");
        entropies.push(r[0].entropy);
    }
    assert_eq!(
        entropies[1], entropies[0],
        "first retry on the same entropy"
    );
    assert_ne!(
        entropies[2], entropies[1],
        "entropy changes after two timeouts"
    );
    assert!(c.paths()[0].dead);
    assert_eq!(c.stats().paths_died, 1);
    // New data avoids the dead flow.
    c.post(write(2, 0, 4 * MTU)).unwrap();
    let fresh = send_all(&mut c, now + 1);
    assert!(
        !fresh.is_empty() && fresh.iter().all(|x| x.flow == 1),
        "{fresh:?}"
    );
    // The probe gets through: the flow is back.
    c.handle_event(now + 100, &ack(0, fsn_add(lost.fsn, 1), &[], 0));
    assert!(!c.paths()[0].dead);
    assert_eq!(c.stats().paths_revived, 1);
}

#[test]
fn no_ack_on_any_path_fails_the_connection_and_flushes() {
    let cfg = TransportConfig {
        connection_timeout_ns: 1_000_000,
        ..TransportConfig::default()
    };
    let mut c = ready(2, &[TagMode::Ordered], cfg);
    c.post(write(1, 0, 3 * MTU)).unwrap();
    c.post(write(2, 0, 10)).unwrap();
    c.post_recv(0, 50, 0x5000, 100).unwrap();
    send_all(&mut c, 0);
    let mut now = 0;
    while let Some(t) = c.poll_timeout() {
        assert!(t < 10_000_000, "no deadline past the connection timeout");
        now = t;
        c.handle_timeout(now);
        send_all(&mut c, now);
    }
    assert_eq!(c.state(), ConnState::Failed(FailReason::AllPathsDead));
    assert!((1_000_000..2_000_000).contains(&now), "failed at {now}");
    let wcs = completions(&mut c);
    let ids: Vec<(u64, WcStatus)> = wcs.iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(
        ids,
        vec![
            (1, WcStatus::Flushed),
            (2, WcStatus::Flushed),
            (50, WcStatus::Flushed)
        ]
    );
    assert_eq!(c.post(write(3, 0, 1)), Err(CoreError::NotUsable));
}

#[test]
fn invalid_requests_are_typed_errors() {
    let cfg = TransportConfig {
        max_send_wr: 2,
        ..TransportConfig::default()
    };
    let mut c = ready(1, &[TagMode::Ordered], cfg);
    assert_eq!(c.post(write(1, 3, 1)), Err(CoreError::InvalidTag(3)));
    assert_eq!(c.post_recv(9, 1, 0, 1), Err(CoreError::InvalidTag(9)));
    c.post(write(1, 0, 1)).unwrap();
    c.post(write(2, 0, 1)).unwrap();
    assert_eq!(c.post(write(3, 0, 1)), Err(CoreError::SendQueueFull));
    for i in 0..16 {
        c.post_recv(0, i, 0, 1).unwrap();
    }
    assert_eq!(c.post_recv(0, 16, 0, 1), Err(CoreError::RecvQueueFull));
    // Events for unknown flows or FSNs never sent are ignored, not trusted.
    c.handle_event(1, &ack(5, 0, &[], 0));
    c.handle_event(1, &ack(0, 12345, &[], 0));
    assert_eq!(c.stats().ignored_events, 1);
    assert!(completions(&mut c).is_empty());
}

#[test]
fn pacing_spaces_packets_at_the_controllers_rate() {
    let cfg = TransportConfig {
        pacing_burst_packets: 1,
        ..TransportConfig::default()
    };
    let mut c = Connection::new(params(1, &[TagMode::Ordered]), cfg, 0);
    c.set_ready(0);
    c.post(write(1, 0, 20 * MTU)).unwrap();
    let rate = c.paths()[0].pacing_rate;
    let gap = ((MTU + 100) as f64 / rate) as u64;
    let mut times = vec![];
    let mut now = 0;
    while times.len() < 5 {
        let mut out = vec![];
        if c.poll_transmit(now, 100, &mut out) > 0 {
            assert_eq!(out.len(), 1, "one packet per pacing slot");
            times.push(now);
        }
        now = c.poll_timeout().unwrap().max(now + 1);
    }
    for w in times.windows(2) {
        assert_eq!(w[1] - w[0], gap, "{times:?}");
    }
}

/// A host gate that queues every packet `delay` ns behind what is already in the NIC, and
/// refuses a packet once `limit` packets were admitted.
struct SlowNic {
    delay: u64,
    admitted: u32,
    limit: u32,
}

impl TxGate for SlowNic {
    fn may_send(&mut self, _now: u64, _bytes: u64) -> bool {
        self.admitted < self.limit
    }
    fn on_send(&mut self, now: u64, _bytes: u64) -> u64 {
        self.admitted += 1;
        now + self.delay
    }
}

#[test]
fn the_retransmission_timer_starts_when_a_packet_can_leave_not_when_it_was_cut() {
    let cfg = TransportConfig {
        initial_rto_ns: 100_000,
        min_rto_ns: 100_000,
        ..TransportConfig::default()
    };
    let mut c = ready(1, &[TagMode::Ordered], cfg);
    c.post(write(1, 0, 3 * MTU)).unwrap();
    // The host gate admits two packets, both expected to leave 80 µs from now.
    let mut gate = SlowNic {
        delay: 80_000,
        admitted: 0,
        limit: 2,
    };
    let mut out = Vec::new();
    assert_eq!(c.poll_transmit_gated(0, 10, &mut gate, &mut out), 2);
    assert_eq!(c.inflight_bytes(), 2 * (MTU as u64 + 100));
    // The third packet waits in the core, where no timer runs; the timer of the two in the
    // NIC runs from their departure: 80 µs + 100 µs, not 100 µs.
    assert_eq!(c.poll_timer(), Some(180_000));
    c.handle_timeout(100_000);
    assert_eq!(c.stats().timeouts, 0, "still queued locally: not lost");
    c.handle_timeout(180_000);
    assert_eq!(c.stats().timeouts, 1, "gone for a full RTO since it left");
    // Ungated, the last packet and the resends go at once.
    assert!(c.transmit_at().is_some_and(|t| t <= 180_000));
    assert_eq!(send_all(&mut c, 180_000).len(), 3);
}

/// `ack` carrying a rate hint.
fn ack_hint(flow: u16, cum: u32, sacked: &[u32], ts: u32, hint: u32) -> Event {
    let mut e = ack(flow, cum, sacked, ts);
    if let Event::Ack { rate_hint_mbps, .. } = &mut e {
        *rate_hint_mbps = hint;
    }
    e
}

#[test]
fn a_dropped_tail_at_a_shared_receiver_is_probed_within_an_rtt_not_left_to_the_timeout() {
    let mut c = ready(1, &[TagMode::Ordered], TransportConfig::default());
    c.post(write(1, 0, 64 * MTU)).unwrap();
    let d = send_all(&mut c, 0);
    assert_eq!(d.len(), 8, "the initial window");
    let f0 = d[0].fsn;
    // An incast's first burst: packets 0 and 1 got through, 2..=7 were dropped. The ACK
    // (10 µs RTT) carries a small share, so the window stays full of lost packets.
    c.handle_event(10_000, &ack_hint(0, fsn_add(f0, 2), &[], 0, 2_000));
    assert!(send_all(&mut c, 10_000).is_empty(), "window full");
    let t = c.poll_timeout().unwrap();
    assert!(
        t < 30_000,
        "the probe is due about an RTT after the last ACK-requesting packet, not after the \
         100 µs minimum RTO: {t}"
    );
    c.handle_timeout(t);
    assert!(
        c.poll_timer().unwrap() > t,
        "the next tail deadline waits for the probe's ACK, not the past one"
    );
    let p = send_all(&mut c, t);
    assert_eq!(p.len(), 1, "one probe");
    assert_eq!(p[0].fsn, fsn_add(f0, 8), "new data, beyond the window");
    assert!(p[0].flags & FLAG_ACK_REQ != 0);
    assert_eq!(c.stats().tail_probes, 1);
    // The probe arrives: everything sent before it and still missing was lost (FIFO path).
    c.handle_event(
        t + 10_000,
        &ack_hint(0, fsn_add(f0, 2), &[fsn_add(f0, 8)], t as u32, 2_000),
    );
    // Resends go first, paced at the share.
    let mut fsns = Vec::new();
    let mut now = t + 10_000;
    while fsns.len() < 6 && now < t + 60_000 {
        fsns.extend(send_all(&mut c, now).iter().map(|x| x.fsn));
        now += 500;
    }
    assert_eq!(fsns, (2..8).map(|i| fsn_add(f0, i)).collect::<Vec<_>>());
    assert_eq!((c.stats().retx_sack, c.stats().timeouts), (6, 0));
}

#[test]
fn no_probe_when_the_receiver_is_not_shared() {
    let mut c = ready(1, &[TagMode::Ordered], TransportConfig::default());
    c.post(write(1, 0, 64 * MTU)).unwrap();
    let d = send_all(&mut c, 0);
    let f0 = d[0].fsn;
    // The whole line rate is ours: losses are left to SACK and the timeout (whose entropy
    // change also moves the flow off a congested path).
    c.handle_event(10_000, &ack_hint(0, fsn_add(f0, 2), &[], 0, 100_000));
    let t = c.poll_timer().unwrap();
    assert!(t >= 100_000, "only the retransmission timeout: {t}");
    c.handle_timeout(40_000);
    assert!(
        send_all(&mut c, 40_000)
            .iter()
            .all(|x| ferroce_proto::wire::fsn_diff(x.fsn, f0) >= 8),
        "nothing resent"
    );
    assert_eq!(c.stats().tail_probes, 0);
}

#[test]
fn a_lone_lost_packet_is_probed_at_any_receiver() {
    // One flow, a message of two packets: both request ACKs (the message's tail). The first
    // is delivered, the second dropped: one packet in flight and nothing behind it.
    let mut c = ready(1, &[TagMode::Ordered], TransportConfig::default());
    c.post(write(1, 0, 2 * MTU)).unwrap();
    let d = send_all(&mut c, 0);
    assert_eq!(d.len(), 2);
    let f0 = d[0].fsn;
    c.handle_event(10_000, &ack_hint(0, fsn_add(f0, 1), &[], 0, 100_000));
    let t = c.poll_timer().unwrap();
    assert!(t < 40_000, "probed about an RTT later, not at the RTO: {t}");
    c.handle_timeout(t);
    let p = send_all(&mut c, t);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].fsn, fsn_add(f0, 1), "the last packet again");
    assert_eq!((c.stats().tail_probes, c.stats().timeouts), (1, 0));
    // Without `tail_probe_few` only the timeout resends it.
    let cfg = TransportConfig {
        tail_probe_few: false,
        ..TransportConfig::default()
    };
    let mut c = ready(1, &[TagMode::Ordered], cfg);
    c.post(write(1, 0, 2 * MTU)).unwrap();
    send_all(&mut c, 0);
    c.handle_event(10_000, &ack_hint(0, fsn_add(f0, 1), &[], 0, 100_000));
    assert!(c.poll_timer().unwrap() >= 100_000);
}

#[test]
fn at_a_small_share_the_burst_after_idling_is_at_most_an_rtt_of_credit() {
    // The default burst of 8 packets per flow, at a 1 Gb/s share of 4 flows (an incast of 100),
    // would be a credit of 7 gaps of 35 µs: 245 µs of line-rate sending above the share.
    let after_idle = |turns: bool| {
        let cfg = TransportConfig {
            flow_turns: turns,
            ..TransportConfig::default()
        };
        let mut c = Connection::new(params(4, &[TagMode::Ordered]), cfg, 0);
        c.set_ready(0);
        c.post(write(1, 0, 256 * MTU)).unwrap();
        let d = send_all(&mut c, 0);
        let mut hi = std::collections::BTreeMap::new();
        for x in &d {
            hi.insert(x.flow, x.fsn);
        }
        for (&f, &fsn) in &hi {
            c.handle_event(10_000, &ack_hint(f, fsn_add(fsn, 1), &[], 0, 1_000));
        }
        // Everything acknowledged; long idle; then count what leaves within 30 µs.
        let mut sent = 0;
        let mut now = 300_000;
        while now < 330_000 {
            sent += send_all(&mut c, now).len();
            now += 500;
        }
        sent
    };
    // 1 Gb/s for 30 µs is 3.4 packets of 1100 bytes; one RTT (10 µs) of credit adds about one
    // per flow.
    let sent = after_idle(false);
    assert!(sent <= 9, "{sent} packets in 30 µs at a 1 Gb/s share");
    assert!(sent >= 3, "{sent}");
    // With the flows taking turns the connection's new data keeps to its share exactly.
    let sent = after_idle(true);
    assert!(
        (3..=4).contains(&sent),
        "{sent} packets in 30 µs at a 1 Gb/s share"
    );
}

/// Send times and flows of the first `n` packets, stepping time by `step` ns.
fn send_times(c: &mut Connection, n: usize, step: u64) -> Vec<(u64, u16)> {
    let mut sent = Vec::new();
    let mut now = 0;
    while sent.len() < n && now < 10_000_000 {
        sent.extend(send_all(c, now).iter().map(|d| (now, d.flow)));
        now += step;
    }
    sent
}

#[test]
fn at_a_shared_receiver_the_flows_take_turns_from_the_first_packet() {
    // The CM reply's hint: 10 Gb/s of our 100. 1100 wire bytes at 10 Gb/s: 880 ns apart.
    let start = |turns: bool| {
        let cfg = TransportConfig {
            flow_turns: turns,
            ..TransportConfig::default()
        };
        let mut c = Connection::new(params(4, &[TagMode::Ordered]), cfg, 0);
        c.apply_rate_hint(0, 10_000);
        c.set_ready(0);
        c.post(write(1, 0, 64 * MTU)).unwrap();
        c
    };
    let mut c = start(true);
    let t = send_times(&mut c, 12, 10);
    for w in t.windows(2) {
        assert!(w[1].0 - w[0].0 >= 850, "evenly spaced at the share: {t:?}");
        assert_ne!(
            w[1].1, w[0].1,
            "consecutive packets on different flows: {t:?}"
        );
    }
    assert!(t[11].0 < 12 * 880, "and no slower: {t:?}");
    // Without turns the flows leave in phase: a packet on every flow at once.
    let mut c = start(false);
    let t = send_times(&mut c, 4, 10);
    assert!(t.iter().all(|&(at, _)| at == 0), "{t:?}");
}

#[test]
fn while_the_flows_take_turns_a_resend_takes_the_next_turn() {
    // A 2 Gb/s share over 4 flows: the connection sends every 4.4 µs, each flow every 17.6.
    let cfg = TransportConfig {
        flow_rotation: false,
        start_phase: false,
        ..TransportConfig::default()
    };
    let mut c = Connection::new(params(4, &[TagMode::Ordered]), cfg, 0);
    c.apply_rate_hint(0, 2_000);
    c.set_ready(0);
    c.post(write(1, 0, 64 * MTU)).unwrap();
    let mut sent = Vec::new();
    let mut now = 0;
    while sent.len() < 6 {
        sent.extend(send_all(&mut c, now).iter().map(|d| (now, d.flow, d.fsn)));
        now += 100;
    }
    assert_eq!(
        sent.iter().map(|x| x.1).collect::<Vec<_>>(),
        [0, 1, 2, 3, 0, 1]
    );
    // Flow 0's second packet arrived, its first did not: a hole, resent at the connection's
    // next turn (about 4.4 µs after the last packet), not at flow 0's own next slot (17.6 µs
    // after its last one).
    let f0 = sent[0].2;
    c.handle_event(now, &ack_hint(0, f0, &[fsn_add(f0, 1)], 0, 2_000));
    let last = sent[5].0;
    let mut next = None;
    while next.is_none() && now < last + 20_000 {
        next = send_all(&mut c, now).first().map(|d| (now, d.flow, d.fsn));
        now += 100;
    }
    let (at, flow, fsn) = next.unwrap();
    assert_eq!((flow, fsn), (0, f0), "the resend goes first");
    assert!(
        at <= last + 4_500,
        "at the connection's next turn: {at} vs {last}"
    );
}

#[test]
fn at_a_shared_receiver_connections_start_on_flows_of_their_own() {
    let first = |conn: u32, rotation: bool| {
        let cfg = TransportConfig {
            flow_rotation: rotation,
            start_phase: false,
            ..TransportConfig::default()
        };
        let p = ConnectionParams {
            local_conn: conn,
            ..params(4, &[TagMode::Ordered])
        };
        let mut c = Connection::new(p, cfg, 0);
        c.apply_rate_hint(0, 50_000);
        c.set_ready(0);
        c.post(write(1, 0, 8 * MTU)).unwrap();
        send_times(&mut c, 4, 10)
            .iter()
            .map(|&(_, flow)| flow)
            .collect::<Vec<_>>()
    };
    // Connection id plus first FSN (0xff_fff0), modulo 4.
    assert_eq!(first(7, true)[..4], [3, 0, 1, 2]);
    assert_eq!(first(8, true)[..4], [0, 1, 2, 3]);
    assert_eq!(first(9, true)[..4], [1, 2, 3, 0]);
    assert_eq!(first(7, false)[..4], [0, 1, 2, 3]);
}

/// Requests posted while connecting adopt the negotiated shape: cut at the smaller MTU over
/// the remaining flows only; those on Tags negotiation removed (and receives posted there) are
/// flushed, and posting there afterwards is a typed error. Growing or renegotiating once ready
/// is refused.
#[test]
fn renegotiation_shrinks_flows_mtu_and_tags_before_ready() {
    let modes = [
        TagMode::Ordered,
        TagMode::Unordered,
        TagMode::Ordered,
        TagMode::Unordered,
    ];
    let mut c = Connection::new(params(8, &modes), TransportConfig::default(), 0);
    c.post(write(1, 0, 4 * MTU)).unwrap();
    c.post(write(2, 3, 100)).unwrap();
    c.fence().unwrap();
    c.post(write(3, 1, 2 * MTU)).unwrap();
    c.post_recv(2, 9, 0x5000, 64).unwrap();
    assert_eq!(c.renegotiate(9, MTU, 4), Err(CoreError::NotUsable));
    assert_eq!(c.renegotiate(8, MTU + 1, 4), Err(CoreError::NotUsable));
    assert_eq!(c.renegotiate(8, MTU, 5), Err(CoreError::NotUsable));
    assert_eq!(c.renegotiate(0, MTU, 4), Err(CoreError::NotUsable));
    c.renegotiate(2, MTU / 2, 2).unwrap();
    assert_eq!(c.params().flows, 2);
    assert_eq!(c.params().mtu, MTU / 2);
    assert_eq!(c.params().tag_modes, modes[..2].to_vec());
    assert_eq!(c.paths().len(), 2);
    let flushed = completions(&mut c);
    assert_eq!(flushed.len(), 2, "{flushed:?}");
    assert!(flushed.iter().all(|w| w.status == WcStatus::Flushed));
    assert!(flushed.iter().any(|w| w.wr_id == 2 && w.tag == 3));
    assert!(
        flushed
            .iter()
            .any(|w| w.wr_id == 9 && w.tag == 2 && w.opcode == WcOpcode::Recv)
    );
    assert_eq!(c.post(write(4, 2, 10)), Err(CoreError::InvalidTag(2)));
    assert_eq!(c.post_recv(3, 9, 0x5000, 64), Err(CoreError::InvalidTag(3)));
    assert_eq!(c.send_outstanding(), 2);
    c.set_ready(0);
    let descs = send_all(&mut c, 0);
    // 4·MTU and 2·MTU at MTU/2: 8 + 4 packets, only on flows 0 and 1, none above MTU/2. The
    // fence still holds Tag 1's Write until Tag 0's completes.
    assert_eq!(descs.len(), 8, "{descs:?}");
    assert!(descs.iter().all(|d| d.flow < 2 && d.payload_len <= MTU / 2));
    ack_all(&mut c, &descs, 10_000);
    let descs = send_all(&mut c, 10_000);
    assert_eq!(descs.len(), 4);
    ack_all(&mut c, &descs, 20_000);
    let done = completions(&mut c);
    assert_eq!(done.len(), 2);
    assert!(done.iter().all(|w| w.status == WcStatus::Success));
    assert_eq!(c.renegotiate(1, MTU / 2, 1), Err(CoreError::NotUsable));
}

#[test]
fn a_repeated_reply_lowers_the_hint_until_an_ack_carries_one() {
    let mut c = Connection::new(
        params(4, &[TagMode::Ordered]),
        TransportConfig::default(),
        0,
    );
    // The first Reply hinted our whole line rate (accepted alone): nothing to apply.
    c.apply_rate_hint(0, 100_000);
    assert_eq!(c.stats().rate_hint_mbps, 0);
    // The acceptor repeats it once the other senders of the incast have connected.
    c.apply_rate_hint(10, 12_500);
    assert_eq!(c.stats().rate_hint_mbps, 12_500);
    c.set_ready(20);
    c.post(write(1, 0, 64 * MTU)).unwrap();
    // The first packet waits for the connection's phase within one gap at its share.
    let mut now = 20;
    let mut d = Vec::new();
    while d.is_empty() && now < 1_000_000 {
        d = send_all(&mut c, now);
        now += 100;
    }
    let f0 = d[0].fsn;
    c.handle_event(30_000, &ack_hint(d[0].flow, fsn_add(f0, 1), &[], 0, 20_000));
    assert_eq!(c.stats().rate_hint_mbps, 20_000);
    // A late repeat (a CM retry) no longer overrides the ACKs' hints.
    c.apply_rate_hint(31_000, 5_000);
    assert_eq!(c.stats().rate_hint_mbps, 20_000);
}

#[test]
fn flows_spread_over_planes_and_leave_a_failed_plane_for_the_emptiest_other() {
    let cfg = TransportConfig {
        same_entropy_retries: 1,
        dead_after_timeouts: 100,
        connection_timeout_ns: u64::MAX / 4,
        tail_probe_few: false,
        pacing_burst_packets: 1000,
        ..TransportConfig::default()
    };
    let mut c = ready_on_planes(8, 4, cfg);
    let ports: Vec<u8> = c.paths().iter().map(|p| p.port).collect();
    assert_eq!(
        ports,
        vec![0, 1, 2, 3, 0, 1, 2, 3],
        "flow i on port i % planes"
    );
    c.post(write(1, 0, 8 * MTU)).unwrap();
    let d = send_all(&mut c, 0);
    assert_eq!(d.len(), 8);
    for x in &d {
        assert_eq!(
            x.port, ports[x.flow as usize],
            "descriptors carry the flow's port"
        );
    }
    // Plane 2 fails: flows 2 and 6 go silent; the others are acknowledged.
    for x in d.iter().filter(|x| x.port != 2) {
        c.handle_event(10_000, &ack(x.flow, fsn_add(x.fsn, 1), &[], 0));
    }
    let mut moved = std::collections::BTreeMap::new();
    while moved.len() < 2 {
        let now = c.poll_timeout().unwrap();
        c.handle_timeout(now);
        for r in send_all(&mut c, now) {
            assert!(r.flow == 2 || r.flow == 6, "{r:?}");
            if r.port != 2 {
                moved.insert(r.flow, r.port);
            }
        }
    }
    // Each leaves plane 2 for another plane; the second does not join the first, as every
    // other plane still has its two flows otherwise.
    let (a, b) = (moved[&2], moved[&6]);
    assert!(a != 2 && b != 2 && a != b, "{moved:?}");
    let after: Vec<u8> = c.paths().iter().map(|p| p.port).collect();
    assert!(!after.contains(&2), "{after:?}");
}

#[test]
fn a_port_whose_link_goes_down_is_left_at_once_and_its_packets_resent_elsewhere() {
    let cfg = TransportConfig {
        pacing_burst_packets: 1000,
        ..TransportConfig::default()
    };
    let mut c = ready_on_planes(8, 4, cfg);
    c.post(write(1, 0, 64 * MTU)).unwrap();
    let d = send_all(&mut c, 0);
    let on_2: Vec<u32> = d.iter().filter(|x| x.port == 2).map(|x| x.fsn).collect();
    assert!(!on_2.is_empty());
    // Everything but port 2's packets is acknowledged, so only those are in flight.
    for x in d.iter().filter(|x| x.port != 2) {
        c.handle_event(10_000, &ack(x.flow, fsn_add(x.fsn, 1), &[], 0));
    }
    c.set_ports_down(12_000, 0b0100);
    let s = c.stats();
    assert_eq!(s.link_down_moves, 2, "flows 2 and 6 moved");
    assert_eq!(s.retx_link_down, on_2.len() as u64);
    assert_eq!((s.timeouts, s.silent_paths), (0, 0), "no timer involved");
    let ports: Vec<u8> = c.paths().iter().map(|p| p.port).collect();
    assert!(!ports.contains(&2), "{ports:?}");
    // The resends leave first, at once, on live ports; nothing more goes to port 2.
    let resent = send_all(&mut c, 12_000);
    assert!(resent.iter().all(|r| r.port != 2), "{resent:?}");
    let first: Vec<u32> = resent.iter().take(on_2.len()).map(|r| r.fsn).collect();
    for f in &on_2 {
        assert!(first.contains(f), "{f} resent first: {resent:?}");
    }
    // Nothing moves back when the link returns; flows only move off a port again when it
    // goes down again, and with every port down nothing moves.
    c.set_ports_down(20_000, 0);
    c.set_ports_down(21_000, 0b1111);
    assert_eq!(c.stats().link_down_moves, 2);
    assert_eq!(c.paths().iter().map(|p| p.port).collect::<Vec<_>>(), ports);
}

#[test]
fn a_silent_flow_is_handled_as_timed_out_once_its_siblings_deliver_later_packets() {
    let cfg = TransportConfig {
        same_entropy_retries: 1,
        connection_timeout_ns: u64::MAX / 4,
        tail_probe_few: false,
        ..TransportConfig::default()
    };
    let cfg = TransportConfig {
        pacing_burst_packets: 1000,
        ..cfg
    };
    let mut c = ready_on_planes(2, 2, cfg);
    c.post(write(1, 0, 64 * MTU)).unwrap();
    // Both flows deliver their first packets and learn an RTT of 10 µs.
    let first = send_all(&mut c, 0);
    ack_all(&mut c, &first, 10_000);
    assert_eq!(c.stats().silent_paths, 0);
    // From 10 µs on, flow 0's path is silent; flow 1 keeps delivering.
    let mut now = 10_000;
    let mut lost_on_0 = Vec::new();
    while c.stats().silent_paths == 0 && now < 60_000 {
        let sent = send_all(&mut c, now);
        lost_on_0.extend(sent.iter().filter(|d| d.flow == 0).map(|d| d.fsn));
        let on1: Vec<TxDescriptor> = sent.into_iter().filter(|d| d.flow == 1).collect();
        now += 10_000;
        ack_all(&mut c, &on1, now);
    }
    assert_eq!(
        c.stats().silent_paths,
        1,
        "found silent well before the 100 µs RTO"
    );
    assert!(now <= 40_000, "found at {now} ns");
    assert_eq!(c.stats().timeouts, 0);
    assert!(c.stats().retx_silent > 0);
    let paths = c.paths();
    assert_eq!(paths[0].port, 1, "moved to the other plane");
    // The resends leave first, on the new entropy and port.
    let resent = send_all(&mut c, now);
    let first_resend = resent.iter().find(|d| d.flow == 0).expect("a resend");
    assert!(lost_on_0.contains(&first_resend.fsn));
    assert_eq!(first_resend.port, 1);
    assert_eq!(resent[0].flow, 0, "resends before new data: {resent:?}");
}

#[test]
fn with_silent_path_detection_off_only_the_timer_finds_the_silent_flow() {
    let cfg = TransportConfig {
        silent_path_rtts: 0.0,
        connection_timeout_ns: u64::MAX / 4,
        tail_probe_few: false,
        pacing_burst_packets: 1000,
        ..TransportConfig::default()
    };
    let mut c = ready(2, &[TagMode::Ordered], cfg);
    c.post(write(1, 0, 64 * MTU)).unwrap();
    let first = send_all(&mut c, 0);
    ack_all(&mut c, &first, 10_000);
    let mut now = 10_000;
    while now < 90_000 {
        let on1: Vec<TxDescriptor> = send_all(&mut c, now)
            .into_iter()
            .filter(|d| d.flow == 1)
            .collect();
        now += 10_000;
        ack_all(&mut c, &on1, now);
    }
    assert_eq!(c.stats().silent_paths, 0);
    assert_eq!(c.stats().timeouts, 0, "not before the 100 µs minimum RTO");
}

#[test]
fn flows_sharing_a_port_share_its_rate() {
    // Three flows on two planes: port 0 carries flows 0 and 2, port 1 flow 1. With the
    // connection's rate spread evenly over the flows, port 0 is handed two thirds of the
    // line without port pacing, more than its half; with it, at most its half (plus a
    // packet of slack at the start).
    let count = |port_pacing: bool| {
        let cfg = TransportConfig {
            pacing_burst_packets: 1,
            line_rate_mbps: 200_000,
            port_pacing,
            ..TransportConfig::default()
        };
        let mut c = ready_on_planes(3, 2, cfg);
        c.post(write(1, 0, 16_384 * MTU)).unwrap();
        let mut by_port = [0u64; 2];
        let mut now = 0;
        while now < 100_000 {
            let sent = send_all(&mut c, now);
            for d in &sent {
                by_port[d.port as usize] += 1;
            }
            ack_all(&mut c, &sent, now + 5_000);
            now += 50;
        }
        by_port
    };
    let port_pkt_ns = (MTU + 100) as f64 / (100_000.0 / 8000.0);
    let cap = (100_000.0 / port_pkt_ns) as u64 + 2;
    let paced = count(true);
    let free = count(false);
    assert!(paced[0] <= cap, "{paced:?}, cap {cap}");
    assert!(
        free[0] > cap,
        "the test must load port 0 beyond its rate: {free:?}"
    );
    assert!(
        paced[1] >= free[1],
        "port 1 loses nothing: {paced:?} {free:?}"
    );
}

/// Runs a connection of 4 flows with congestion repathing for `rounds` RTTs of 10 µs: every
/// packet is delivered one RTT after it left, and the ACKs of the flows in `marked` report
/// every packet CE-marked. The ACKs carry the rate hint `hint` (Mb/s).
fn run_with_marks(repath: bool, marked: [bool; 4], hint: u32, rounds: u64) -> Connection {
    let cfg = TransportConfig {
        congestion_repath: repath,
        connection_timeout_ns: u64::MAX / 4,
        pacing_burst_packets: 1000,
        ..TransportConfig::default()
    };
    let mut c = ready(4, &[TagMode::Ordered], cfg);
    c.post(write(1, 0, 100_000 * MTU)).unwrap();
    let rtt = 10_000;
    let mut sent = send_all(&mut c, 0);
    for k in 1..=rounds {
        let now = k * rtt;
        for flow in 0..4u16 {
            let on: Vec<&TxDescriptor> = sent.iter().filter(|d| d.flow == flow).collect();
            let Some(last) = on.last() else { continue };
            let mut e = ack_hint(flow, fsn_add(last.fsn, 1), &[], (now - rtt) as u32, hint);
            if let Event::Ack {
                ecn_echo, ce_count, ..
            } = &mut e
            {
                *ecn_echo = marked[flow as usize];
                *ce_count = if marked[flow as usize] {
                    on.len() as u16
                } else {
                    0
                };
            }
            c.handle_event(now, &e);
        }
        c.handle_timeout(now);
        sent = send_all(&mut c, now);
    }
    c
}

#[test]
fn a_flow_marked_round_after_round_while_its_siblings_are_not_moves_to_a_new_entropy() {
    // A shared receiver (hint below the line rate): only the contrast with the siblings
    // shows the congestion is the flow's own route's.
    let before: Vec<u16> = ready(4, &[TagMode::Ordered], TransportConfig::default())
        .paths()
        .iter()
        .map(|p| p.entropy)
        .collect();
    let c = run_with_marks(true, [true, false, false, false], 50_000, 12);
    let after = c.paths();
    assert!(c.stats().repaths_congestion >= 1, "{:?}", c.stats());
    assert_ne!(after[0].entropy, before[0], "the marked flow moved");
    assert!(after[0].repaths >= 1);
    for i in 1..4 {
        assert_eq!(after[i].entropy, before[i], "flow {i} stays");
    }
    assert_eq!(after[0].port, 0, "same NIC port");
    assert_eq!(c.stats().timeouts, 0);
    // Without the feature it stays put.
    let off = run_with_marks(false, [true, false, false, false], 50_000, 12);
    assert_eq!(off.stats().repaths_congestion, 0);
    assert_eq!(off.paths()[0].entropy, before[0]);
}

#[test]
fn flows_all_marked_at_a_shared_receiver_stay_on_their_paths() {
    // An incast: the last hop marks every path alike; no route avoids it.
    let c = run_with_marks(true, [true; 4], 50_000, 20);
    assert_eq!(c.stats().repaths_congestion, 0);
    assert_eq!(c.stats().entropy_changes, 0);
    // At an unshared receiver the connection alone cannot congest the last hop: congestion
    // every path sees is the fabric's, and the flows move.
    let c = run_with_marks(true, [true; 4], 100_000, 20);
    assert!(c.stats().repaths_congestion >= 1);
}

#[test]
fn a_flow_moves_at_most_once_per_four_rounds() {
    // Three congested rounds make a move; the round after it is not counted (packets sent on
    // the old route still come back marked), so the next move needs four more rounds.
    let c = run_with_marks(true, [true, false, false, false], 50_000, 40);
    let n = c.stats().repaths_congestion;
    assert!((2..=10).contains(&n), "{n} moves in 40 rounds");
}
