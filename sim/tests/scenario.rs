//! End-to-end runs of the model over the lossy multipath link.

use ferroce_sim::scenario::{self, ScenarioConfig};

#[test]
fn demo_scenario_delivers_every_byte() {
    let r = scenario::run(&ScenarioConfig::demo()).unwrap();
    for m in &r.messages {
        println!("{m:?}");
    }
    println!("{:?}\n{:?}", r.sender, r.link);
    println!("A {:?}\nB {:?}", r.counters_a, r.counters_b);
    assert!(r.finished, "did not finish by the time limit");
    assert!(r.all_verified());
    assert!(r.link.lost > 0, "the demo link is meant to lose packets");
    assert!(r.sender.sack_retransmissions > 0);
}
