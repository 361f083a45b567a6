//! Per-flow receive state: the cumulative FSN and the 256-bit SACK window above it.

use crate::wire::{SACK_BITS, fsn_add, fsn_diff};

/// Where an arriving FSN falls relative to a flow's receive state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SackClass {
    /// Below the cumulative FSN, or already marked in the bitmap.
    Duplicate,
    /// Not yet received and inside the window: `distance` = FSN − cumulative FSN (0..=256).
    New {
        /// Distance above the cumulative FSN.
        distance: u32,
        /// The FSN just below is missing: accepting this packet opens a new gap.
        opens_gap: bool,
    },
    /// More than 256 above the cumulative FSN.
    OutOfWindow,
}

/// The receive state of one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowRxState {
    /// Next expected FSN: every FSN before it has been received.
    pub cum: u32,
    /// Bit `i` = FSN `cum + 1 + i` received.
    pub bitmap: [u64; 4],
    /// Packets consumed since the last ACK.
    pub unacked: u16,
    /// CE-marked packets since the last ACK (saturating).
    pub ce_count: u16,
    /// Terminal refusals (packets consumed with a `RemoteAccess` or `InvalidRequest` NAK)
    /// since the flow was initialised, wrapping. Carried in every ACK of the flow.
    pub refused: u16,
    /// UDP source port (entropy) of the flow's last data packet: where a timer ACK goes.
    pub last_entropy: u16,
    /// NIC port the flow's last data packet came in on: where a timer ACK leaves.
    pub last_port: u8,
    /// Timestamp of the flow's last data packet: the timer ACK's `ts_echo`.
    pub last_ts: u32,
    /// When the ACK timer expires (the oldest unacknowledged consumed packet arrived
    /// `ACK_DELAY_NS` before it); `None` when no timer runs.
    pub ack_due: Option<u64>,
    /// Whether the flow has an entry in the NIC's ACK timer queue.
    pub timer_queued: bool,
}

impl FlowRxState {
    /// A fresh flow expecting `cum` next.
    pub fn new(cum: u32) -> Self {
        FlowRxState {
            cum,
            ..Default::default()
        }
    }

    fn bit(&self, i: u32) -> bool {
        self.bitmap[(i / 64) as usize] >> (i % 64) & 1 != 0
    }

    /// Classifies an arriving FSN without changing anything.
    pub fn classify(&self, fsn: u32) -> SackClass {
        let d = fsn_diff(fsn, self.cum);
        if d < 0 {
            return SackClass::Duplicate;
        }
        let d = d as u32;
        if d > SACK_BITS as u32 {
            return SackClass::OutOfWindow;
        }
        if d > 0 && self.bit(d - 1) {
            return SackClass::Duplicate;
        }
        let opens_gap = d == 1 || (d >= 2 && !self.bit(d - 2));
        SackClass::New {
            distance: d,
            opens_gap,
        }
    }

    /// Marks the FSN at `distance` (from [`SackClass::New`]) received, advancing the cumulative
    /// FSN over every contiguous received FSN.
    pub fn accept(&mut self, distance: u32) {
        if distance > 0 {
            let i = distance - 1;
            self.bitmap[(i / 64) as usize] |= 1 << (i % 64);
            return;
        }
        // FSN == cum: advance by one plus the run of ones at the bottom of the bitmap.
        let mut run = 0u32;
        for w in self.bitmap {
            let ones = w.trailing_ones();
            run += ones;
            if ones < 64 {
                break;
            }
        }
        self.cum = fsn_add(self.cum, 1 + run);
        self.shift_right(run + 1);
    }

    fn shift_right(&mut self, n: u32) {
        if n >= SACK_BITS as u32 {
            self.bitmap = [0; 4];
            return;
        }
        let words = (n / 64) as usize;
        let bits = n % 64;
        let old = self.bitmap;
        for i in 0..4 {
            let lo = old.get(i + words).copied().unwrap_or(0);
            let hi = old.get(i + words + 1).copied().unwrap_or(0);
            self.bitmap[i] = if bits == 0 {
                lo
            } else {
                (lo >> bits) | (hi << (64 - bits))
            };
        }
    }

    /// The bitmap in wire order (byte `i / 8`, bit `i % 8`).
    pub fn sack_bytes(&self) -> [u8; SACK_BITS / 8] {
        let mut out = [0u8; SACK_BITS / 8];
        for (i, w) in self.bitmap.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::FSN_MASK;

    #[test]
    fn in_order_advances_and_gaps_are_reported() {
        let mut f = FlowRxState::new(10);
        assert_eq!(
            f.classify(10),
            SackClass::New {
                distance: 0,
                opens_gap: false
            }
        );
        f.accept(0);
        assert_eq!(f.cum, 11);
        assert_eq!(
            f.classify(13),
            SackClass::New {
                distance: 2,
                opens_gap: true
            }
        );
        f.accept(2);
        assert_eq!(
            f.classify(14),
            SackClass::New {
                distance: 3,
                opens_gap: false
            }
        );
        f.accept(3);
        assert_eq!(f.classify(13), SackClass::Duplicate);
        assert_eq!(f.classify(9), SackClass::Duplicate);
        assert_eq!(f.sack_bytes()[0], 0b110);
        assert_eq!(
            f.classify(12),
            SackClass::New {
                distance: 1,
                opens_gap: true
            }
        );
        f.accept(1);
        assert_eq!(f.cum, 11);
        f.accept(0);
        assert_eq!(f.cum, 15);
        assert_eq!(f.bitmap, [0; 4]);
    }

    #[test]
    fn window_edges_and_wrap() {
        let mut f = FlowRxState::new(FSN_MASK - 1);
        assert_eq!(
            f.classify(fsn_add(FSN_MASK - 1, 257)),
            SackClass::OutOfWindow
        );
        assert!(matches!(
            f.classify(fsn_add(FSN_MASK - 1, 256)),
            SackClass::New { distance: 256, .. }
        ));
        for d in 1..=256 {
            f.accept(d);
        }
        assert_eq!(f.bitmap, [u64::MAX; 4]);
        f.accept(0);
        assert_eq!(f.cum, fsn_add(FSN_MASK - 1, 257));
        assert_eq!(f.bitmap, [0; 4]);
    }
}
