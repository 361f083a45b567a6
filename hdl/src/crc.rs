//! CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) over one 64-bit beat.
//!
//! Combinational: `crc_out` is `crc_in` advanced over the first `lanes` bytes of `data`
//! (lane 0 = bits 7:0 = the first byte). `lanes` is a prefix mask (bit i set ⇒ lane i counts;
//! the set bits are contiguous from lane 0). The state is the raw register: no initial value
//! or final inversion here; callers start from `0xFFFFFFFF` (or a precomputed state) and invert
//! at the end, as `crc32fast` does.
//!
//! The recurrence runs over all eight bytes without enables, so synthesis sees eight prefix
//! states that are each a pure XOR network of the inputs; a one-hot AND-OR picks the state after
//! the last enabled lane.

use rust_hdl::prelude::*;

/// The reflected CRC-32 polynomial.
pub const POLY: u64 = 0xEDB8_8320;

/// One beat of CRC-32.
#[derive(LogicBlock)]
pub struct Crc32Beat {
    /// State before the beat.
    pub crc_in: Signal<In, Bits<32>>,
    /// The beat, first byte in bits 7:0.
    pub data: Signal<In, Bits<64>>,
    /// Prefix mask of the lanes that count.
    pub lanes: Signal<In, Bits<8>>,
    /// State after the beat.
    pub crc_out: Signal<Out, Bits<32>>,
    poly: Constant<Bits<32>>,
    acc: Signal<Local, Bits<32>>,
    feedback: Signal<Local, Bit>,
    picked: Signal<Local, Bits<32>>,
    next_lanes: Signal<Local, Bits<8>>,
}

impl Default for Crc32Beat {
    fn default() -> Self {
        Crc32Beat {
            crc_in: Default::default(),
            data: Default::default(),
            lanes: Default::default(),
            crc_out: Default::default(),
            poly: Constant::new(POLY.to_bits()),
            acc: Default::default(),
            feedback: Default::default(),
            picked: Default::default(),
            next_lanes: Default::default(),
        }
    }
}

impl Logic for Crc32Beat {
    #[hdl_gen]
    fn update(&mut self) {
        // The recurrence runs over all eight lanes unconditionally, so each intermediate state
        // is a pure XOR network of the inputs; the result is the state after the last enabled
        // lane, picked by a one-hot AND-OR (the lanes are a prefix).
        self.acc.next = self.crc_in.val();
        self.feedback.next = false;
        self.picked.next = 0.into();
        self.next_lanes.next = self.lanes.val() >> 1_u64;
        if self.lanes.val() == 0_u64 {
            self.picked.next = self.crc_in.val();
        }
        for lane in 0_usize..8 {
            for bit in 0_usize..8 {
                self.feedback.next =
                    self.acc.val().get_bit(0) ^ self.data.val().get_bit(lane * 8 + bit);
                self.acc.next = self.acc.val() >> 1_u64;
                if self.feedback.val() {
                    self.acc.next = self.acc.val() ^ self.poly.val();
                }
            }
            if self.lanes.val().get_bit(lane) & !self.next_lanes.val().get_bit(lane) {
                self.picked.next = self.picked.val() | self.acc.val();
            }
        }
        self.crc_out.next = self.picked.val();
    }
}

/// The software reference: the raw CRC register after `bytes`, starting from `state`.
pub fn crc32_update(mut state: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        state ^= b as u32;
        for _ in 0..8 {
            state = if state & 1 != 0 {
                (state >> 1) ^ POLY as u32
            } else {
                state >> 1
            };
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_matches_crc32fast() {
        let data: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(37)).collect();
        assert_eq!(!crc32_update(!0, &data), crc32fast::hash(&data));
    }

    #[test]
    fn block_matches_reference_in_the_rust_hdl_simulator() {
        let mut uut = Crc32Beat::default();
        uut.connect_all();
        let beats: [(u32, u64, u8); 4] = [
            (0xFFFF_FFFF, 0x0123_4567_89ab_cdef, 0xFF),
            (0x1234_5678, 0xdead_beef_0000_ffff, 0x07),
            (0, 0, 0x01),
            (0xabcd_ef01, 0xffff_ffff_ffff_ffff, 0x00),
        ];
        for (crc, data, lanes) in beats {
            uut.crc_in.next = crc.to_bits();
            uut.data.next = data.to_bits();
            uut.lanes.next = (lanes as u64).to_bits();
            for _ in 0..4 {
                uut.update_all();
            }
            let n = lanes.count_ones() as usize;
            let expect = crc32_update(crc, &data.to_le_bytes()[..n]);
            assert_eq!(uut.crc_out.val().to_u32(), expect);
        }
    }
}
