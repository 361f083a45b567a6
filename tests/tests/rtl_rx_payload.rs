//! The RTL payload extractor under Verilator: for random frames, header lengths, payload
//! lengths and place/discard decisions, with random stalls on both sides, the placed payloads
//! come out exactly as `frame[skip..skip + len]`, in order, and discarded frames leave nothing.

use ferroce_sim::rng::Rng as SimRng;
use ferroce_sim::rtl::rx_payload::{PayloadJob, RtlPayload};
use ferroce_tests::Rng;

#[test]
fn payloads_come_out_realigned_and_discards_leave_nothing() {
    let mut rtl = match RtlPayload::new() {
        Ok(t) => t,
        Err(e) if std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_some() => {
            println!("SKIPPED: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let mut rng = Rng::new(0x9a71);
    let mut stall = SimRng::new(11);
    let rounds = if std::env::var_os("FERROCE_LONG").is_some() {
        2000
    } else {
        400
    };
    for round in 0..rounds {
        let jobs: Vec<PayloadJob> = (0..25)
            .map(|_| {
                let max = if rng.upto(9) == 0 { 4200 } else { 200 };
                let n = 1 + rng.upto(max) as usize;
                let frame = rng.bytes(n);
                let skip = rng.upto(n.min(140) as u64) as usize;
                let len = rng.upto((n - skip) as u64) as usize;
                PayloadJob {
                    frame,
                    skip: skip as u16,
                    len: len as u16,
                    place: rng.upto(4) != 0,
                }
            })
            .collect();
        let expected: Vec<Vec<u8>> = jobs
            .iter()
            .filter(|j| j.place && j.len > 0)
            .map(|j| j.frame[j.skip as usize..(j.skip + j.len) as usize].to_vec())
            .collect();
        let got = rtl.run(&jobs, (round % 2 == 1).then_some(&mut stall));
        assert_eq!(
            got.len(),
            expected.len(),
            "round {round}: number of payloads"
        );
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(g, e, "round {round}, payload {i}");
        }
        assert_eq!(
            rtl.misshapen_beats(),
            0,
            "round {round}: beats of the wrong shape"
        );
    }
    println!("{} cycles", rtl.cycles());
}
