//! The descriptor and event rings in host memory, as the DMA engine runs them.
//!
//! TX: entries `head..tail` (modulo the ring size) are 64-byte descriptors at
//! `TXQ_BASE + 64 * (index % size)`; the NIC fetches, transmits and advances `TXQ_HEAD`.
//! Events: the NIC writes each event at `EVQ_BASE + 64 * (EVQ_TAIL % size)` and advances
//! `EVQ_TAIL`; the host consumes and advances `EVQ_HEAD`. A full event ring drops the event and
//! counts [`Counter::EventOverflow`]: size the ring for the work you keep outstanding.

use super::{FastPath, HostMemory};
use crate::hsi::{Counter, EVENT_LEN, TX_DESCRIPTOR_LEN, TxDescriptor, regs};

impl FastPath {
    /// Fetches and transmits every descriptor the host has made available (when transmit is
    /// enabled and a TX ring is configured), then writes pending events to the event ring (when
    /// one is configured; otherwise they stay queued for [`FastPath::pop_event`]). Returns the
    /// number of descriptors processed.
    pub fn service_rings(&mut self, mem: &mut dyn HostMemory) -> usize {
        let mut done = 0;
        if self.regs.control & regs::CONTROL_TX_ENABLE != 0 && self.regs.txq_log_size > 0 {
            let size = 1u32 << self.regs.txq_log_size;
            // Never fetch more than one ring's worth: a tail far ahead of head is a host bug.
            while self.regs.txq_head != self.regs.txq_tail && done < size as usize {
                let slot = (self.regs.txq_head % size) as u64;
                let mut raw = [0u8; TX_DESCRIPTOR_LEN];
                let addr = self
                    .regs
                    .txq_base
                    .wrapping_add(slot * TX_DESCRIPTOR_LEN as u64);
                if mem.dma_read(addr, &mut raw).is_err() {
                    self.count(Counter::TxBadDescriptor);
                } else {
                    // A refused descriptor is counted and reported by `transmit` itself.
                    let _ = self.transmit(&TxDescriptor::from_bytes(&raw), mem);
                }
                self.regs.txq_head = self.regs.txq_head.wrapping_add(1);
                done += 1;
            }
        }
        if self.regs.evq_log_size > 0 {
            let size = 1u32 << self.regs.evq_log_size;
            while let Some(ev) = self.pop_event() {
                if self.regs.evq_tail.wrapping_sub(self.regs.evq_head) >= size {
                    self.count(Counter::EventOverflow);
                    continue;
                }
                let slot = (self.regs.evq_tail % size) as u64;
                let addr = self.regs.evq_base.wrapping_add(slot * EVENT_LEN as u64);
                if mem.dma_write(addr, &ev.to_bytes()).is_err() {
                    self.count(Counter::EventOverflow);
                    continue;
                }
                self.regs.evq_tail = self.regs.evq_tail.wrapping_add(1);
            }
        }
        done
    }
}
