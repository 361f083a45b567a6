//! Tags: ordered message streams. Send side: MSN/SSN assignment, the messages not yet retired
//! in MSN order, the segmentation cursor and the "receiver not ready" backoff. Receive side:
//! posted receives indexed by SSN, and completion ordering by MSN.

use super::{CoreError, TagMode, WorkCompletion};
use std::collections::VecDeque;

/// Send side of one Tag.
#[derive(Debug, Clone)]
pub(crate) struct TagTx {
    pub mode: TagMode,
    pub next_msn: u32,
    pub next_ssn: u32,
    /// Messages posted and not retired, in MSN order (indices into the message slab).
    pub msgs: VecDeque<u32>,
    /// Index in `msgs` of the first message not fully segmented.
    pub seg: usize,
    /// No new packets of this Tag before this time ("receiver not ready" backoff).
    pub rnr_until: u64,
    /// Current backoff.
    pub rnr_backoff: u64,
}

impl TagTx {
    pub fn new(mode: TagMode, rnr_initial: u64) -> Self {
        TagTx {
            mode,
            next_msn: 0,
            next_ssn: 0,
            msgs: VecDeque::new(),
            seg: 0,
            rnr_until: 0,
            rnr_backoff: rnr_initial,
        }
    }

    /// Whether some posted message still has packets to cut.
    pub fn has_unsegmented(&self) -> bool {
        self.seg < self.msgs.len()
    }
}

/// A posted receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecvPost {
    pub ssn: u32,
    pub wr_id: u64,
    pub addr: u64,
    pub len: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The message has not completed yet.
    Waiting,
    /// Completed; nothing to surface (a plain Write).
    Silent,
    /// Completed; surfaces this completion.
    Done(WorkCompletion),
}

/// How far ahead of the next expected MSN a completion may be before it is treated as bogus
/// (the sender keeps at most `msg_slots` messages of a Tag incomplete; this is far above that).
const MAX_AHEAD: u32 = 1 << 16;

/// Receive side of one Tag.
#[derive(Debug, Clone)]
pub(crate) struct TagRx {
    pub mode: TagMode,
    /// SSN the next posted receive gets.
    pub next_ssn: u32,
    posted: Vec<Option<RecvPost>>,
    /// Posted receives not yet consumed.
    pub outstanding: u32,
    /// Next MSN to surface (ordered mode).
    pub next_msn: u32,
    pending: VecDeque<Slot>,
}

impl TagRx {
    pub fn new(mode: TagMode, recv_depth: u32) -> Self {
        TagRx {
            mode,
            next_ssn: 0,
            posted: vec![None; recv_depth.max(1) as usize],
            outstanding: 0,
            next_msn: 0,
            pending: VecDeque::new(),
        }
    }

    /// Records a posted receive; returns its SSN. At most `recv_depth` may be outstanding, so
    /// the NIC's entry `ssn % recv_depth` is always free when it is reprogrammed.
    pub fn post(&mut self, wr_id: u64, addr: u64, len: u32) -> Result<u32, CoreError> {
        if self.outstanding as usize >= self.posted.len() {
            return Err(CoreError::RecvQueueFull);
        }
        let ssn = self.next_ssn;
        let i = ssn as usize % self.posted.len();
        if self.posted[i].is_some() {
            return Err(CoreError::RecvQueueFull);
        }
        self.posted[i] = Some(RecvPost {
            ssn,
            wr_id,
            addr,
            len,
        });
        self.next_ssn = ssn.wrapping_add(1);
        self.outstanding += 1;
        Ok(ssn)
    }

    /// Takes the posted receive a completed Send with `ssn` consumed.
    pub fn take(&mut self, ssn: u32) -> Option<RecvPost> {
        let i = ssn as usize % self.posted.len();
        match self.posted[i] {
            Some(p) if p.ssn == ssn => {
                self.posted[i] = None;
                self.outstanding -= 1;
                Some(p)
            }
            _ => None,
        }
    }

    /// Every posted receive not yet consumed, in SSN order (for flushing).
    pub fn drain_posted(&mut self) -> Vec<RecvPost> {
        let mut v: Vec<RecvPost> = self.posted.iter_mut().filter_map(Option::take).collect();
        v.sort_by_key(|p| p.ssn.wrapping_sub(self.next_ssn));
        self.outstanding = 0;
        v
    }

    /// A message completed at the NIC. `wc` is what to surface (`None` for a plain Write, which
    /// only advances the order). Ordered Tags hold it until every earlier MSN has completed.
    /// Returns false for a completion that cannot be right (a stale or far-ahead MSN).
    pub fn complete(
        &mut self,
        msn: u32,
        wc: Option<WorkCompletion>,
        out: &mut VecDeque<WorkCompletion>,
    ) -> bool {
        if self.mode == TagMode::Unordered {
            out.extend(wc);
            return true;
        }
        let d = msn.wrapping_sub(self.next_msn);
        if d >= MAX_AHEAD {
            return false;
        }
        let d = d as usize;
        if self.pending.len() <= d {
            self.pending.resize(d + 1, Slot::Waiting);
        }
        if self.pending[d] != Slot::Waiting {
            return false;
        }
        self.pending[d] = match wc {
            Some(wc) => Slot::Done(wc),
            None => Slot::Silent,
        };
        while let Some(&front) = self.pending.front() {
            match front {
                Slot::Waiting => break,
                Slot::Silent => {}
                Slot::Done(wc) => out.push_back(wc),
            }
            self.pending.pop_front();
            self.next_msn = self.next_msn.wrapping_add(1);
        }
        true
    }

    /// Completions held back for order (surfaced when the connection fails).
    pub fn drain_held(&mut self) -> Vec<WorkCompletion> {
        self.pending
            .drain(..)
            .filter_map(|s| match s {
                Slot::Done(wc) => Some(wc),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{WcOpcode, WcStatus};

    fn wc(msn: u32) -> WorkCompletion {
        WorkCompletion {
            wr_id: msn as u64,
            conn: 1,
            opcode: WcOpcode::Recv,
            status: WcStatus::Success,
            tag: 0,
            msn,
            byte_len: 1,
            imm: None,
        }
    }

    #[test]
    fn ordered_tags_hold_later_messages_until_earlier_ones_complete() {
        let mut t = TagRx::new(TagMode::Ordered, 16);
        let mut out = VecDeque::new();
        // The seed's example: B (msn 1) completes before A (msn 0).
        assert!(t.complete(1, Some(wc(1)), &mut out));
        assert!(out.is_empty(), "B waits for A");
        // A plain Write at msn 2 only advances the order.
        assert!(t.complete(2, None, &mut out));
        assert!(out.is_empty());
        assert!(t.complete(0, Some(wc(0)), &mut out));
        let got: Vec<u32> = out.iter().map(|w| w.msn).collect();
        assert_eq!(got, vec![0, 1]);
        assert_eq!(t.next_msn, 3);
        // A second completion of msn 1 is refused.
        assert!(!t.complete(1, Some(wc(1)), &mut out));
    }

    #[test]
    fn unordered_tags_surface_on_arrival() {
        let mut t = TagRx::new(TagMode::Unordered, 16);
        let mut out = VecDeque::new();
        t.complete(1, Some(wc(1)), &mut out);
        t.complete(0, Some(wc(0)), &mut out);
        let got: Vec<u32> = out.iter().map(|w| w.msn).collect();
        assert_eq!(got, vec![1, 0]);
    }

    #[test]
    fn posted_receives_are_bounded_by_the_depth_and_matched_by_ssn() {
        let mut t = TagRx::new(TagMode::Ordered, 2);
        assert_eq!(t.post(10, 0x1000, 64), Ok(0));
        assert_eq!(t.post(11, 0x2000, 64), Ok(1));
        assert_eq!(t.post(12, 0x3000, 64), Err(CoreError::RecvQueueFull));
        assert_eq!(t.take(1).map(|p| p.wr_id), Some(11));
        assert_eq!(t.take(1), None, "consumed once");
        // SSN 2 maps to the NIC entry SSN 0 still holds (Sends may complete out of order).
        assert_eq!(t.post(12, 0x3000, 64), Err(CoreError::RecvQueueFull));
        assert_eq!(t.take(0).map(|p| p.wr_id), Some(10));
        assert_eq!(t.post(12, 0x3000, 64), Ok(2));
        assert_eq!(t.take(3), None, "wrong SSN for the slot");
    }
}
