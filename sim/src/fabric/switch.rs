//! A switch's forwarding: per destination host a group of equal-cost output ports, one chosen
//! by hashing the packet's 5-tuple with the switch's own salt (so consecutive tiers do not make
//! the same choice, as real switches seed their hashes differently). A packet with another UDP
//! source port hashes anew and may take another port: that is all multipath needs.

use super::packet::mix;

/// Forwarding state of one switch.
#[derive(Debug, Clone)]
pub struct Switch {
    /// Per destination host: the equal-cost output ports.
    pub routes: Vec<Vec<u16>>,
    /// Hash salt.
    pub salt: u32,
    /// Plane.
    pub plane: u8,
    /// Leaf (true) or spine.
    pub leaf: bool,
}

impl Switch {
    /// Output port for a packet to `dst` with 5-tuple hash `hash`; `None` if unroutable.
    pub fn route(&self, dst: u32, hash: u32) -> Option<u16> {
        let group = self.routes.get(dst as usize)?;
        match group.len() {
            0 => None,
            1 => Some(group[0]),
            n => {
                let h = mix(hash ^ self.salt) as usize;
                // Groups are mostly a power of two wide (the spines): a mask gives the same
                // port as the remainder, without a division on every hop.
                let i = if n.is_power_of_two() {
                    h & (n - 1)
                } else {
                    h % n
                };
                Some(group[i])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::packet::five_tuple_hash;

    fn sw(salt: u32) -> Switch {
        Switch {
            routes: vec![vec![0], (1..9).collect()],
            salt,
            plane: 0,
            leaf: true,
        }
    }

    #[test]
    fn ecmp_is_deterministic_and_spreads_ports() {
        let s = sw(7);
        let h = |sport| five_tuple_hash(0x0a00_0001, 0x0a00_0002, sport, 4791);
        for sport in 49152..49200 {
            assert_eq!(s.route(1, h(sport)), s.route(1, h(sport)));
        }
        assert_eq!(s.route(0, h(1)), Some(0));
        // New source ports find new paths: 64 ports reach all 8 uplinks.
        let used: std::collections::BTreeSet<u16> =
            (49152..49216).filter_map(|p| s.route(1, h(p))).collect();
        assert_eq!(used.len(), 8);
        // Another salt, another mapping for at least some ports.
        let t = sw(8);
        assert!((49152..49216).any(|p| s.route(1, h(p)) != t.route(1, h(p))));
        assert_eq!(s.route(5, h(1)), None);
    }

    #[test]
    fn every_group_width_picks_the_remainder_of_the_salted_hash() {
        for n in 2..=17u16 {
            let s = Switch {
                routes: vec![(100..100 + n).collect()],
                salt: 0x1234_5678,
                plane: 0,
                leaf: false,
            };
            for k in 0..1_000u32 {
                let hash = mix(k.wrapping_mul(0x9e37_79b9));
                let want = 100 + (mix(hash ^ s.salt) as usize % n as usize) as u16;
                assert_eq!(s.route(0, hash), Some(want), "width {n}, hash {hash:#x}");
            }
        }
    }
}
