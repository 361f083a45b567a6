//! The RTL flow table under Verilator against `ferroce_proto::model::sack::FlowRxState`:
//! random classify / accept / ACK / read sequences on several flows, near and across the 2^24
//! FSN wrap, compared operation by operation; and operations queued behind a busy one.
//!
//! Default: 200,000 operations. `FERROCE_LONG=1`: 1,000,000.

use ferroce_proto::model::sack::{FlowRxState, SackClass};
use ferroce_proto::wire::{FSN_MASK, fsn_add};
use ferroce_sim::rtl::flow_table::{FlowState, RtlFlowTable};
use ferroce_tests::Rng;

/// ACK coalescing thresholds the ACK-policy flags are checked against, each for 500
/// operations in turn (a fixed schedule: the random stream of operations is unchanged).
const COALESCE: [u32; 8] = [4, 1, 2, 0, 3, 8, 16, 70_000];

/// The result's ACK-policy flags agree with its count.
fn check_flags(got: &ferroce_sim::rtl::flow_table::FlowResult, coalesce: u32, what: &str) {
    let u = got.state.unacked;
    assert_eq!(
        (got.ack_due, got.unacked_one),
        (u as u32 >= coalesce, u == 1),
        "{what}: flags for {u} unacked, threshold {coalesce}"
    );
}

/// The model's side, with the counters as the receive path keeps them.
fn as_state(f: &FlowRxState) -> FlowState {
    FlowState {
        cum: f.cum,
        bitmap: f.bitmap,
        unacked: f.unacked,
        ce_count: f.ce_count,
    }
}

/// The verilated table, or `None` (a skip) when Verilator is missing and that is allowed.
fn flow_table() -> Option<RtlFlowTable> {
    match RtlFlowTable::new() {
        Ok(t) => Some(t),
        Err(e) if std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_some() => {
            println!("SKIPPED: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn random_operation_sequences_match_the_model() {
    let Some(mut rtl) = flow_table() else {
        return;
    };
    let ops = if std::env::var_os("FERROCE_LONG").is_some() {
        1_000_000
    } else {
        200_000
    };
    let indices = [0u32, 1, 511, 1023];
    rtl.set_idle_indices(&indices);
    let mut rng = Rng::new(0xf10e);
    let mut model: Vec<FlowRxState> = Vec::new();
    for &i in &indices {
        let cum = if i % 2 == 0 {
            FSN_MASK - 40
        } else {
            rng.next_u32() & FSN_MASK
        };
        let r = rtl.init(i, cum);
        model.push(FlowRxState::new(cum));
        assert_eq!(r.state, as_state(&model[model.len() - 1]));
    }
    let mut counts = [0usize; 3];
    for n in 0..ops {
        let coalesce = COALESCE[(n / 500) % COALESCE.len()];
        rtl.set_coalesce(coalesce);
        let k = rng.upto(indices.len() as u64 - 1) as usize;
        let index = indices[k];
        let m = &mut model[k];
        match rng.upto(19) {
            0 => {
                let got = rtl.ack(index);
                assert_eq!(got.state, as_state(m), "op {n}: ack of flow {index}");
                check_flags(&got, coalesce, &format!("op {n}: ack"));
                m.unacked = 0;
                m.ce_count = 0;
            }
            1 => {
                let got = rtl.read_entry(index);
                assert_eq!(got.state, as_state(m), "op {n}: read of flow {index}");
                check_flags(&got, coalesce, &format!("op {n}: read"));
            }
            2 if rng.upto(49) == 0 => {
                let cum = rng.next_u32() & FSN_MASK;
                rtl.init(index, cum);
                *m = FlowRxState::new(cum);
            }
            _ => {
                // Mostly just above the cumulative FSN, sometimes below or far beyond it.
                let offset = match rng.upto(9) {
                    0 => (rng.next_u32() & FSN_MASK) as i64 - (1 << 23),
                    1 => rng.upto(20) as i64 - 20,
                    2 => 250 + rng.upto(20) as i64,
                    _ => rng.upto(40) as i64,
                };
                let fsn = fsn_add(m.cum, offset.rem_euclid(1 << 24) as u32);
                let ce = rng.upto(7) == 0;
                let got = rtl.classify(index, fsn, ce);
                if ce {
                    m.ce_count = m.ce_count.saturating_add(1);
                }
                let want = m.classify(fsn);
                assert_eq!(
                    got.class,
                    Some(want),
                    "op {n}: classify {fsn:#x} on flow {index}"
                );
                assert_eq!(got.state, as_state(m), "op {n}: state after classify");
                match want {
                    SackClass::Duplicate => counts[0] += 1,
                    SackClass::OutOfWindow => counts[2] += 1,
                    SackClass::New { distance, .. } => {
                        counts[1] += 1;
                        if rng.upto(9) != 0 {
                            let got = rtl.accept(index, distance);
                            m.accept(distance);
                            m.unacked = m.unacked.saturating_add(1);
                            assert_eq!(got.state, as_state(m), "op {n}: accept {distance}");
                            check_flags(&got, coalesce, &format!("op {n}: accept"));
                        }
                    }
                }
            }
        }
    }
    assert!(
        counts.iter().all(|&c| c > ops / 50),
        "every class exercised: {counts:?}"
    );
    println!(
        "{ops} operations in {} cycles; classes {counts:?}",
        rtl.cycles()
    );
}

#[test]
fn an_operation_queued_behind_a_busy_one_waits_its_turn() {
    let Some(mut rtl) = flow_table() else {
        return;
    };
    rtl.set_coalesce(4);
    let indices = [3u32, 4, 700];
    let mut rng = Rng::new(0x9e11);
    let mut model: Vec<FlowRxState> = Vec::new();
    for &i in &indices {
        let cum = rng.next_u32() & FSN_MASK;
        rtl.init(i, cum);
        model.push(FlowRxState::new(cum));
    }
    for n in 0..2_000 {
        let k = rng.upto(indices.len() as u64 - 1) as usize;
        let j = rng.upto(indices.len() as u64 - 1) as usize;
        let fsn = fsn_add(model[k].cum, rng.upto(300) as u32);
        let ce = rng.upto(3) == 0;
        let (got, read) = rtl.classify_then_read(indices[k], fsn, ce, indices[j]);
        if ce {
            model[k].ce_count = model[k].ce_count.saturating_add(1);
        }
        assert_eq!(got.class, Some(model[k].classify(fsn)), "op {n}: classify");
        assert_eq!(
            got.state,
            as_state(&model[k]),
            "op {n}: state after classify"
        );
        assert_eq!(read.state, as_state(&model[j]), "op {n}: the queued read");
        if let Some(SackClass::New { distance, .. }) = got.class {
            // Keep the windows moving.
            rtl.accept(indices[k], distance);
            model[k].accept(distance);
            model[k].unacked = model[k].unacked.saturating_add(1);
        }
    }
}

#[test]
fn an_in_order_accept_right_behind_another_accept_sees_its_window() {
    // The in-order accept moves the cumulative FSN over the run of received FSNs above it,
    // which the table searches continuously a few register stages behind the window: taken
    // in the first cycle the table allows, it must still see the run the accept before it
    // extended.
    let Some(mut rtl) = flow_table() else {
        return;
    };
    rtl.set_coalesce(4);
    let index = 9u32;
    let mut rng = Rng::new(0xacce);
    let cum = rng.next_u32() & FSN_MASK;
    rtl.init(index, cum);
    let mut m = FlowRxState::new(cum);
    let mut longest = 0u32;
    for n in 0..3_000 {
        // A new FSN above the cumulative one: often the lowest missing one, so that the run
        // grows through it; else one at random.
        let lowest = (1..=255u32)
            .find(|&d| m.bitmap[(d - 1) as usize / 64] >> ((d - 1) % 64) & 1 == 0)
            .unwrap_or(256);
        let first = if lowest < 256 && rng.upto(2) != 0 {
            lowest
        } else {
            1 + rng.upto(60) as u32
        };
        let SackClass::New { distance, .. } = m.classify(fsn_add(m.cum, first)) else {
            continue;
        };
        if rng.upto(5) != 0 {
            // Only widen the window this time.
            let got = rtl.accept(index, distance);
            m.accept(distance);
            m.unacked = m.unacked.saturating_add(1);
            assert_eq!(got.state, as_state(&m), "op {n}: accept {distance}");
            continue;
        }
        let before = m.cum;
        let (a, b) = rtl.accept_then_accept(index, distance, 0);
        m.accept(distance);
        m.unacked = m.unacked.saturating_add(1);
        assert_eq!(a.state, as_state(&m), "op {n}: accept {distance}");
        m.accept(0);
        m.unacked = m.unacked.saturating_add(1);
        assert_eq!(
            b.state,
            as_state(&m),
            "op {n}: the in-order accept behind it"
        );
        longest = longest.max(m.cum.wrapping_sub(before) & FSN_MASK);
    }
    assert!(longest > 16, "runs longer than one group: {longest}");
}
