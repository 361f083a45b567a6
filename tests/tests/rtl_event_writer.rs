//! The RTL event writer under Verilator against the rules of the event ring
//! ([`ferroce_proto::model::FastPath::service_rings`]): both engines' ports offering random
//! events with random gaps, DMA back-pressure and faulted writes, a host that consumes slowly or
//! never (so the ring fills). Every event taken is written, in the order it was taken, to the
//! next slot, or counted as dropped: on a faulted write, or on a full ring and only then (no
//! slot the host has not consumed is written). Each
//! port's ready comes from flip-flops alone (a test flips the valids and data in front of the
//! writer within a cycle and requires the readies to stay). With both ports always offering and
//! no back-pressure, an event leaves every ten cycles.
//!
//! Default: 600 random runs. `FERROCE_LONG=1`: 2,000.

use ferroce_proto::hsi::Counter;
use ferroce_sim::rng::Rng;
use ferroce_sim::rtl::event_writer::{Event, EventRun, Knobs, RtlEventWriter};

const BASE: u64 = 0x1234_5000;

/// The verilated writer, or `None` (the test skipped) when the tools are missing and
/// `FERROCE_ALLOW_MISSING_TOOLS` allows it.
fn writer() -> Option<RtlEventWriter> {
    match RtlEventWriter::new(BASE, Counter::EventOverflow as u64) {
        Ok(w) => Some(w),
        Err(e) if std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_some() => {
            println!("SKIPPED: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn random_events(rng: &mut Rng, n: usize) -> Vec<Event> {
    (0..n)
        .map(|_| core::array::from_fn(|_| rng.next_u64()))
        .collect()
}

/// Holds one run against the ring's rules; returns the number of events written without a
/// fault.
fn check(w: &RtlEventWriter, run: &EventRun, events: [&[Event]; 2], knobs: Knobs) -> u32 {
    let ctx = format!("{knobs:?}");
    assert_eq!(run.ready_from_valid, 0, "{ctx}: a ready follows the valids");
    assert_eq!(run.malformed_writes, 0, "{ctx}: malformed ring writes");
    assert_eq!(
        run.wrong_counter, 0,
        "{ctx}: a drop counted on the wrong counter"
    );
    assert_eq!(
        run.wrong_full_drops, 0,
        "{ctx}: a drop with room in the ring"
    );
    assert_eq!(run.overwrites, 0, "{ctx}: a write into a full ring");
    for port in 0..2u8 {
        let taken: Vec<Event> = run
            .taken
            .iter()
            .filter(|(p, _)| *p == port)
            .map(|(_, e)| *e)
            .collect();
        assert_eq!(taken, events[port as usize], "{ctx}: port {port}'s events");
    }
    // Walk the events in the order they were taken: each is the next write, or a full-ring
    // drop.
    let mut writes = run.writes.iter().peekable();
    let (mut good, mut faults, mut full) = (0u32, 0u64, 0u64);
    for (i, (port, ev)) in run.taken.iter().enumerate() {
        match writes.peek() {
            Some(wr) if wr.beats == ev => {
                assert_eq!(
                    wr.addr,
                    w.slot_addr(good, knobs.log_size),
                    "{ctx}: event {i} (port {port}) in the wrong slot"
                );
                if wr.faulted {
                    faults += 1;
                } else {
                    good += 1;
                }
                writes.next();
            }
            _ => full += 1,
        }
    }
    assert!(
        writes.next().is_none(),
        "{ctx}: writes out of the order the events were taken in, or of events never taken"
    );
    assert_eq!(
        full, run.full_drops,
        "{ctx}: events missing without a count"
    );
    assert_eq!(
        faults, run.fault_drops,
        "{ctx}: faulted writes against their counts"
    );
    assert_eq!(run.tail, good, "{ctx}: the tail");
    good
}

#[test]
fn every_event_is_written_in_order_or_counted() {
    let runs = if std::env::var_os("FERROCE_LONG").is_some() {
        2_000
    } else {
        600
    };
    let mut rng = Rng::new(0xe7e7);
    let (mut written, mut full, mut faults, mut port_changes) = (0, 0, 0, 0);
    for r in 0..runs {
        let Some(mut w) = writer() else { return };
        let knobs = Knobs {
            log_size: [1, 2, 3, 6][r % 4],
            offer_gap: [0, 3, 12][r / 4 % 3],
            stall: r % 2 == 1,
            fault_one_in: [0, 5][r / 12 % 2],
            consume_one_in: [1, 4, 0][r / 24 % 3],
        };
        let (n0, n1) = (1 + rng.below(40) as usize, 1 + rng.below(40) as usize);
        let (e0, e1) = (random_events(&mut rng, n0), random_events(&mut rng, n1));
        let run = w.run([&e0, &e1], knobs, &mut rng);
        written += check(&w, &run, [&e0, &e1], knobs);
        full += run.full_drops;
        faults += run.fault_drops;
        // Both ports interleave in the order taken (the age bit's planted fault is caught by
        // the order check above, not by this count).
        port_changes += run.taken.windows(2).filter(|p| p[0].0 != p[1].0).count();
    }
    println!(
        "{runs} runs: {written} events written, {full} dropped on a full ring, {faults} on a \
         faulted write, {port_changes} changes of port in the order taken"
    );
    assert!(written > 0 && full > 0 && faults > 0 && port_changes > 0);
}

#[test]
fn both_ports_at_full_rate_leave_an_event_every_ten_cycles() {
    let Some(mut w) = writer() else { return };
    let mut rng = Rng::new(7);
    let knobs = Knobs {
        log_size: 10,
        offer_gap: 0,
        stall: false,
        fault_one_in: 0,
        consume_one_in: 1,
    };
    let (e0, e1) = (random_events(&mut rng, 50), random_events(&mut rng, 50));
    let run = w.run([&e0, &e1], knobs, &mut rng);
    assert_eq!(check(&w, &run, [&e0, &e1], knobs), 100);
    // Ten cycles an event (request, eight beats, completion), plus the first event's way in.
    assert!(
        run.cycles <= 10 * 100 + 3,
        "{} cycles for 100 events",
        run.cycles
    );
}
