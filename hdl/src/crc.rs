//! CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) over one 64-bit beat, as flat XOR
//! matrices computed when the Verilog is generated.
//!
//! The state is the raw register: no initial value or final inversion here; callers start from
//! `0xFFFFFFFF` (or a precomputed state) and invert at the end, as `crc32fast` does. A beat's
//! first byte is in bits 7:0 (lane 0).
//!
//! Two blocks, so that only the full-beat step sits in a caller's loop-carried path:
//!
//! - [`Crc32Full`]: the state after all eight bytes. Each output bit is the parity of
//!   `(data ^ crc_in) & row` for a 64-bit row mask ([`rows`]): over eight bytes the incoming
//!   state only ever meets the first four bytes, so the whole step is one 32×64 matrix.
//!   Synthesis maps each parity to a balanced XOR tree of LUTs (four levels of LUT4), where
//!   the byte recurrence became a chain of about eighteen cells that yosys and abc did not
//!   flatten.
//! - [`Crc32Tail`]: the state after the first 1 to 7 lanes of a partial beat, one matrix per
//!   lane count, for a stage that is not loop-carried (a frame's last CRC bytes).
//!
//! Both compute their matrices only when they are used (an `if` on the enable or on the lane
//! count), so a simulator (Verilator keeps the `if` structure of a block's `always @(*)`)
//! evaluates at most one matrix per cycle, and none in cycles without a CRC step.

use rust_hdl::prelude::*;

/// The reflected CRC-32 polynomial.
pub const POLY: u64 = 0xEDB8_8320;

/// The raw register after a message followed by its CRC (the inverted register, least
/// significant byte first): the same for every message, so a receiver that runs the CRC over
/// the CRC field too checks it by comparing with this constant.
pub const RESIDUE: u32 = 0xDEBB_20E3;

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

/// The row masks of the step over the first `n` bytes of a beat (1 ≤ `n` ≤ 8): with
/// `x = data ^ state` (the state in bits 31:0), bit `i` of the new state is
/// `parity(x & rows(n)[i]) ^ bit i of (state >> 8n)`. Bits at or above `8n` are clear.
///
/// The register is linear in the state and the data, and advancing it over a byte XORs that
/// byte into its low bits, so a state is the same as the same bits XORed into the first four
/// bytes; state bits that `n` bytes do not reach only shift down (`state >> 8n`, zero when
/// `n ≥ 4`). Column `b` of the matrix is the register after `n` bytes from 0 with only bit `b`
/// of the message set.
pub fn rows(n: usize) -> [u64; 32] {
    assert!((1..=8).contains(&n), "a step covers 1 to 8 bytes");
    let mut rows = [0u64; 32];
    for b in 0..8 * n {
        let mut bytes = [0u8; 8];
        bytes[b / 8] = 1 << (b % 8);
        let column = crc32_update(0, &bytes[..n]);
        for (i, row) in rows.iter_mut().enumerate() {
            if column >> i & 1 != 0 {
                *row |= 1 << b;
            }
        }
    }
    rows
}

/// The flat form in software, exactly as the blocks compute it: the register after the first
/// `n` bytes of `data` (1 ≤ `n` ≤ 8), starting from `state`.
pub fn flat_update(state: u32, data: u64, n: usize) -> u32 {
    let x = data ^ u64::from(state);
    let mut out = 0u32;
    for (i, row) in rows(n).iter().enumerate() {
        out |= ((x & row).count_ones() & 1) << i;
    }
    let shifted = if n < 4 { state >> (8 * n) } else { 0 };
    out ^ shifted
}

/// The prefix mask of the first `n` lanes.
pub const fn lane_prefix(n: usize) -> u8 {
    ((1u16 << n) - 1) as u8
}

fn constant_rows(n: usize) -> [Constant<Bits<64>>; 32] {
    let rows = rows(n);
    core::array::from_fn(|i| Constant::new(rows[i].to_bits()))
}

/// The CRC step over a whole beat (all eight lanes).
#[derive(LogicBlock)]
pub struct Crc32Full {
    /// State before the beat.
    pub crc_in: Signal<In, Bits<32>>,
    /// The beat, first byte in bits 7:0.
    pub data: Signal<In, Bits<64>>,
    /// Make the step; when low, `crc_out` is `crc_in` (and a simulator skips the matrix).
    pub enable: Signal<In, Bit>,
    /// State after the beat (or `crc_in` when not enabled).
    pub crc_out: Signal<Out, Bits<32>>,
    rows: [Constant<Bits<64>>; 32],
    x: Signal<Local, Bits<64>>,
    acc: Signal<Local, Bits<32>>,
}

impl Default for Crc32Full {
    fn default() -> Self {
        Crc32Full {
            crc_in: Default::default(),
            data: Default::default(),
            enable: Default::default(),
            crc_out: Default::default(),
            rows: constant_rows(8),
            x: Default::default(),
            acc: Default::default(),
        }
    }
}

impl Logic for Crc32Full {
    #[hdl_gen]
    fn update(&mut self) {
        self.crc_out.next = self.crc_in.val();
        self.x.next = 0.into();
        self.acc.next = 0.into();
        if self.enable.val() {
            self.x.next = self.data.val() ^ bit_cast::<64, 32>(self.crc_in.val());
            for i in 0_usize..32 {
                self.acc.next = self
                    .acc
                    .val()
                    .replace_bit(i, (self.x.val() & self.rows[i].val()).xor());
            }
            self.crc_out.next = self.acc.val();
        }
    }
}

/// The CRC step over the first 1 to 7 lanes of a beat (a partial last beat).
#[derive(LogicBlock)]
pub struct Crc32Tail {
    /// State before the beat.
    pub crc_in: Signal<In, Bits<32>>,
    /// The beat, first byte in bits 7:0.
    pub data: Signal<In, Bits<64>>,
    /// The lanes that count, as a prefix mask (bit i set ⇒ lane i counts; the set bits are
    /// contiguous from lane 0).
    pub lanes: Signal<In, Bits<8>>,
    /// State after the lanes for a partial mask (1 to 7 lanes); `crc_in` for no lanes or all
    /// eight (a whole beat is [`Crc32Full`]'s).
    pub crc_out: Signal<Out, Bits<32>>,
    /// Rows of the `n`-lane step at `(n - 1) * 32 + i`.
    rows: [Constant<Bits<64>>; 224],
    x: Signal<Local, Bits<64>>,
    /// The `n`-lane step's state at `n - 1`, zero unless the mask has exactly `n` lanes;
    /// index 7 is the pass-through (no lanes or all eight).
    part: [Signal<Local, Bits<32>>; 8],
}

impl Default for Crc32Tail {
    fn default() -> Self {
        let all: Vec<u64> = (1..8).flat_map(rows).collect();
        Crc32Tail {
            crc_in: Default::default(),
            data: Default::default(),
            lanes: Default::default(),
            crc_out: Default::default(),
            rows: core::array::from_fn(|k| Constant::new(all[k].to_bits())),
            x: Default::default(),
            part: Default::default(),
        }
    }
}

impl Logic for Crc32Tail {
    #[hdl_gen]
    fn update(&mut self) {
        // One term per lane count, each zero unless selected, then ORed: the counts exclude
        // each other, and a chain of overriding `if`s would put seven muxes in a row behind
        // the matrices. A prefix mask has exactly `n` lanes when lane `n - 1` is set and lane
        // `n` is not, one LUT for each select instead of an 8-bit compare.
        self.x.next = self.data.val() ^ bit_cast::<64, 32>(self.crc_in.val());
        for n in 1_usize..8 {
            self.part[n - 1].next = 0.into();
            if self.lanes.val().get_bit(n - 1) & !self.lanes.val().get_bit(n) {
                for i in 0_usize..32 {
                    self.part[n - 1].next = self.part[n - 1]
                        .val()
                        .replace_bit(i, (self.x.val() & self.rows[(n - 1) * 32 + i].val()).xor());
                }
                self.part[n - 1].next =
                    self.part[n - 1].val() ^ (self.crc_in.val() >> (8 * n).to_bits::<6>());
            }
        }
        self.part[7].next = 0.into();
        if !self.lanes.val().get_bit(0) | self.lanes.val().get_bit(7) {
            self.part[7].next = self.crc_in.val();
        }
        self.crc_out.next = self.part[0].val()
            | self.part[1].val()
            | self.part[2].val()
            | self.part[3].val()
            | self.part[4].val()
            | self.part[5].val()
            | self.part[6].val()
            | self.part[7].val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of test values.
    fn values(seed: u64, count: usize) -> Vec<u64> {
        let mut s = seed;
        (0..count)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            })
            .collect()
    }

    #[test]
    fn reference_matches_crc32fast() {
        let data: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(37)).collect();
        assert_eq!(!crc32_update(!0, &data), crc32fast::hash(&data));
    }

    #[test]
    fn residue_is_the_same_for_every_message() {
        for (k, v) in values(7, 50).into_iter().enumerate() {
            let mut msg: Vec<u8> = v.to_le_bytes()[..k % 8 + 1].to_vec();
            msg.extend_from_slice(&crc32fast::hash(&msg).to_le_bytes());
            assert_eq!(crc32_update(!0, &msg), RESIDUE);
        }
    }

    #[test]
    fn a_zero_padded_last_beat_ends_at_the_parsers_constant_exactly_when_the_crc_is_right() {
        // The parser's check: the CRC over the message and its CRC field, the last beat's
        // lanes beyond the end zeroed and the whole-beat step taken anyway.
        for (k, v) in values(5, 64).into_iter().enumerate() {
            let len = 9 + k; // message and CRC field: 13 to 76 bytes, every last-beat size
            let mut msg: Vec<u8> = (0..len - 4).map(|i| (v >> (i % 57)) as u8).collect();
            let good = crc32fast::hash(&msg);
            for (field, ok) in [(good, true), (good ^ (1 << (k % 32)), false)] {
                msg.truncate(len - 4);
                msg.extend_from_slice(&field.to_le_bytes());
                let mut state = !0u32;
                for beat in msg.chunks(8) {
                    let mut lanes = [0u8; 8];
                    lanes[..beat.len()].copy_from_slice(beat);
                    state = flat_update(state, u64::from_le_bytes(lanes), 8);
                }
                let n = (len - 1) % 8 + 1;
                assert_eq!(state == crate::rx_parse::crc_good(n), ok, "{len} bytes");
            }
        }
    }

    #[test]
    fn flat_form_matches_crc32fast_for_every_lane_count() {
        let v = values(1, 2000);
        for n in 1..=8 {
            for pair in v.chunks(2) {
                let (state, data) = (pair[0] as u32, pair[1]);
                let bytes = &data.to_le_bytes()[..n];
                let mut h = crc32fast::Hasher::new_with_initial(!state);
                h.update(bytes);
                assert_eq!(flat_update(state, data, n), !h.finalize(), "{n} lanes");
                assert_eq!(flat_update(state, data, n), crc32_update(state, bytes));
            }
        }
    }

    #[test]
    fn blocks_match_crc32fast_for_every_lane_count_in_the_rust_hdl_simulator() {
        let mut full = Crc32Full::default();
        full.connect_all();
        let mut tail = Crc32Tail::default();
        tail.connect_all();
        let v = values(3, 40);
        for pair in v.chunks(2) {
            let (state, data) = (pair[0] as u32, pair[1]);
            for n in 0..=8 {
                let bytes = &data.to_le_bytes()[..n];
                let mut h = crc32fast::Hasher::new_with_initial(!state);
                h.update(bytes);
                let expect = !h.finalize();
                for enable in [false, true] {
                    full.crc_in.next = state.to_bits();
                    full.data.next = data.to_bits();
                    full.enable.next = enable;
                    for _ in 0..4 {
                        full.update_all();
                    }
                    let got = full.crc_out.val().to_u32();
                    if enable {
                        let all = crc32_update(state, &data.to_le_bytes());
                        assert_eq!(got, all, "full step");
                    } else {
                        assert_eq!(got, state, "full step, not enabled");
                    }
                }
                tail.crc_in.next = state.to_bits();
                tail.data.next = data.to_bits();
                tail.lanes.next = u64::from(lane_prefix(n)).to_bits();
                for _ in 0..4 {
                    tail.update_all();
                }
                let got = tail.crc_out.val().to_u32();
                if (1..8).contains(&n) {
                    assert_eq!(got, expect, "tail over {n} lanes");
                } else {
                    assert_eq!(got, state, "tail over {n} lanes passes through");
                }
            }
        }
    }
}
