//! The executable model of the NIC fast path: the specification the RTL must match.
//!
//! Deterministic and free of I/O: frames come in as byte slices, host memory is reached only
//! through the [`HostMemory`] trait (the DMA interface), time is passed in as a nanosecond
//! timestamp, and everything the NIC emits — frames for the MAC, events for the host — is queued
//! for the caller to take. The host programs it exactly as it programs the hardware: through the
//! register map of [`crate::hsi::regs`], including the indirect table window.
//!
//! Receive path ([`FastPath::receive`]): parse and validate ([`crate::wire::parse_frame`]) →
//! connection and address check → data: per-flow SACK state → Tag, receive-buffer and message-slot
//! checks → placement checks (rkey region, rights, bounds; receive-buffer bounds) → DMA write →
//! message progress → one completion event when the last byte is accounted → ACK policy. ACK and
//! NAK frames become events; CM frames are handed to the host.
//!
//! Transmit path ([`FastPath::transmit`]): a descriptor becomes one complete frame.

mod rings;
mod rx;
pub mod sack;
mod tx;

use crate::hsi::{
    Counter, Event, TableSizes,
    event::CompletionStatus,
    regs,
    tables::{ConnectionEntry, RecvBuffer, RegionEntry, TABLE_WORDS},
};
use crate::wire::{EthernetAddress, FrameBuf, Opcode, ROCEV2_UDP_PORT, SharedBytes};
use sack::FlowRxState;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

pub use rx::{Verdict, parse_counter};
pub use tx::TTL as TX_TTL;

/// A frame on one of the NIC's MAC ports (planes): the port is `tdest` on the transmit stream
/// and `tid` on the receive stream.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortFrame {
    /// The NIC port.
    pub port: u8,
    /// The frame, from the destination MAC to the ICRC (no Ethernet FCS).
    pub bytes: Vec<u8>,
}

/// A frame on one of the NIC's MAC ports as the model built it: a [`PortFrame`] whose frame
/// may be split, its payload by reference (see [`HostMemory::dma_share`]).
#[derive(Debug, Clone)]
pub struct PortFrameBuf {
    /// The NIC port.
    pub port: u8,
    /// The frame.
    pub frame: FrameBuf,
}

impl PortFrameBuf {
    /// The [`PortFrame`]: the whole frame's bytes, ICRC included.
    pub fn into_port_frame(self) -> PortFrame {
        PortFrame {
            port: self.port,
            bytes: self.frame.into_bytes(),
        }
    }
}

/// A DMA access the host memory refused (the IOMMU would fault it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaFault;

/// The DMA interface toward host memory.
pub trait HostMemory {
    /// Reads `buf.len()` bytes at `addr`.
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault>;
    /// Writes `data` at `addr`.
    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaFault>;
    /// The `len` bytes at `addr` in place, where the memory can lend them (simulated memory):
    /// what [`HostMemory::dma_read`] would read, without copying it first. `None`: read them.
    fn dma_view(&self, _addr: u64, _len: usize) -> Option<&[u8]> {
        None
    }
    /// The `len` bytes at `addr` by reference, where the memory can share them without a copy
    /// and guarantees they stay what they are now (simulated memory copies a shared
    /// allocation before writing it): what [`HostMemory::dma_read`] would read. `None`: read
    /// or view them.
    fn dma_share(&self, _addr: u64, _len: usize) -> Option<SharedBytes> {
        None
    }
    /// [`HostMemory::dma_write`] of bytes held by reference (a split frame's payload): memory
    /// that can keep the reference instead of copying the bytes may (simulated memory does for
    /// whole pages); what is read back afterwards is `data` either way. The default copies.
    fn dma_write_shared(&mut self, addr: u64, data: &SharedBytes) -> Result<(), DmaFault> {
        self.dma_write(addr, data.as_slice())
    }
}

/// Default number of data packets per flow between coalesced ACKs.
pub const DEFAULT_ACK_COALESCE: u32 = 4;
/// Default ACK timer (nanoseconds): see [`regs::ACK_DELAY_NS`].
pub const DEFAULT_ACK_DELAY_NS: u32 = regs::DEFAULT_ACK_DELAY_NS;

/// State of one in-progress message slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SlotState {
    #[default]
    Free,
    Active,
    Done,
}

/// Progress of one message, in the slot `msn % msg_slots` of its Tag context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct MsgSlot {
    pub state: SlotState,
    pub msn: u32,
    pub ssn: u32,
    pub opcode: Option<Opcode>,
    pub msg_len: u32,
    pub bytes_done: u64,
    pub status: Option<CompletionStatus>,
    pub imm: Option<u32>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Registers {
    pub control: u32,
    pub udp_port: u16,
    pub ack_coalesce: u32,
    pub ack_delay_ns: u32,
    pub mac: EthernetAddress,
    pub table_index: u32,
    pub table_status: u32,
    pub table_data: [u32; TABLE_WORDS],
    pub txq_base: u64,
    pub txq_log_size: u32,
    pub txq_head: u32,
    pub txq_tail: u32,
    pub evq_base: u64,
    pub evq_log_size: u32,
    pub evq_head: u32,
    pub evq_tail: u32,
}

/// The fast path of one NIC.
#[derive(Debug, Clone)]
pub struct FastPath {
    sizes: TableSizes,
    pub(crate) regs: Registers,
    pub(crate) regions: Vec<RegionEntry>,
    pub(crate) conns: Vec<ConnectionEntry>,
    pub(crate) flows: Vec<FlowRxState>,
    /// Per flow-table entry: how many times its cumulative FSN or SACK bitmap may have
    /// changed (see [`FastPath::flow_rx_changes`]).
    flow_changes: Vec<u64>,
    pub(crate) recv: Vec<RecvBuffer>,
    pub(crate) slots: Vec<MsgSlot>,
    counters: Vec<u64>,
    now_ns: u64,
    /// The MAC ports' link state as the PHYs report it ([`regs::PORT_LINK`]), all up at first.
    link_up: u8,
    /// ACK timers, earliest first: (deadline, flow table index, connection id, flow). At most
    /// one live entry per flow (see [`FlowRxState::timer_queued`]); an entry whose flow was
    /// acknowledged meanwhile is dropped when it comes up.
    ack_timers: BinaryHeap<Reverse<(u64, usize, u32, u16)>>,
    /// Flows whose ACK timer is armed.
    armed_flows: u32,
    /// When the next timer sweep is due while `armed_flows` is non-zero: the hardware's
    /// bookkeeping, kept here so that both report the same wake-up time. Lowered whenever a
    /// flow is armed earlier, set to the earliest armed deadline after each sweep, never raised
    /// by an ACK: a lower bound of every armed deadline, exact after a sweep.
    sweep_due: u64,
    tx_frames: VecDeque<PortFrameBuf>,
    events: VecDeque<Event>,
    /// Scratch for the payload of the frame being built (no state: its bytes are overwritten
    /// before each use).
    tx_payload: Vec<u8>,
    /// Scratch for parsing a split frame (no state: see [`crate::wire::SplitFrame::parse_in`]).
    rx_scratch: Vec<u8>,
}

/// The [`regs::PORT_LINK`] bits of a NIC with `ports` ports.
fn port_mask(ports: u32) -> u32 {
    (1u32 << ports.min(regs::MAX_PORTS)) - 1
}

impl FastPath {
    /// A NIC with the given table sizes, receive and transmit enabled, port 4791, ACK every
    /// [`DEFAULT_ACK_COALESCE`] packets or after [`DEFAULT_ACK_DELAY_NS`], every table entry
    /// invalid.
    pub fn new(sizes: TableSizes) -> Self {
        FastPath {
            sizes,
            regs: Registers {
                control: regs::CONTROL_RX_ENABLE | regs::CONTROL_TX_ENABLE,
                udp_port: ROCEV2_UDP_PORT,
                ack_coalesce: DEFAULT_ACK_COALESCE,
                ack_delay_ns: DEFAULT_ACK_DELAY_NS,
                ..Default::default()
            },
            regions: vec![RegionEntry::default(); sizes.regions as usize],
            conns: vec![ConnectionEntry::default(); sizes.connections as usize],
            flows: vec![FlowRxState::default(); sizes.flows as usize],
            flow_changes: vec![0; sizes.flows as usize],
            recv: vec![RecvBuffer::default(); (sizes.tags * sizes.recv_depth) as usize],
            slots: vec![MsgSlot::default(); (sizes.tags * sizes.msg_slots) as usize],
            counters: vec![0; Counter::COUNT],
            now_ns: 0,
            link_up: u8::MAX,
            ack_timers: BinaryHeap::new(),
            armed_flows: 0,
            sweep_due: 0,
            tx_frames: VecDeque::new(),
            events: VecDeque::new(),
            tx_payload: Vec::new(),
            rx_scratch: Vec::new(),
        }
    }

    /// The table sizes.
    pub fn sizes(&self) -> TableSizes {
        self.sizes
    }

    /// Sets the link state of MAC port `port` (what its PHY reports in [`regs::PORT_LINK`]).
    /// The link state is only reported: frames are neither refused nor held for it (a down
    /// link carries none). Ports beyond [`regs::MAX_PORTS`] are ignored.
    pub fn set_link(&mut self, port: u8, up: bool) {
        if u32::from(port) < regs::MAX_PORTS {
            if up {
                self.link_up |= 1 << port;
            } else {
                self.link_up &= !(1 << port);
            }
        }
    }

    /// How many times the receive state (cumulative FSN, SACK bitmap) of flow-table entry
    /// `index` may have changed: a packet accepted on it, or the host (re)initialising it.
    /// `None` for an index beyond the table. Not a register: a simulation aid, so that a driver
    /// polling the flow table can skip entries that did not change since it last read them.
    pub fn flow_rx_changes(&self, index: usize) -> Option<u64> {
        self.flow_changes.get(index).copied()
    }

    /// Notes that flow-table entry `index` may have changed (see [`Self::flow_rx_changes`]).
    pub(crate) fn flow_changed(&mut self, index: usize) {
        self.flow_changes[index] = self.flow_changes[index].wrapping_add(1);
    }

    /// Advances the NIC's timestamp counter (nanoseconds). Time never goes backwards. ACK
    /// timers that expire by the new time fire (see [`Self::poll_ack_timers`]).
    pub fn set_time(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.poll_ack_timers();
    }

    /// When the ACK timers next need the clock (ns), if any flow's timer is armed: the time of
    /// the next sweep, as the hardware keeps it (lowered when a flow is armed earlier, set to
    /// the earliest armed deadline after each sweep, never raised by an ACK). It is never later
    /// than the earliest armed deadline; after an ACK that disarmed the earliest flow it may be
    /// earlier, and the sweep at that time then only finds the next deadline.
    pub fn next_ack_timer(&self) -> Option<u64> {
        (self.armed_flows > 0).then_some(self.sweep_due)
    }

    /// Arms (`Some(deadline)`) or disarms a flow's ACK timer, keeping the count of armed flows.
    pub(crate) fn set_ack_due(&mut self, flow_idx: usize, due: Option<u64>) {
        let fl = &mut self.flows[flow_idx];
        match (fl.ack_due.is_some(), due.is_some()) {
            (false, true) => self.armed_flows += 1,
            (true, false) => self.armed_flows -= 1,
            _ => {}
        }
        fl.ack_due = due;
    }

    /// The earliest deadline of an armed flow. Drops or refreshes the stale entries on top of
    /// the timer heap on the way (as [`Self::poll_ack_timers`] would when they come up).
    fn earliest_armed_due(&mut self) -> Option<u64> {
        while let Some(&Reverse((deadline, idx, conn_id, flow))) = self.ack_timers.peek() {
            match self.flows[idx].ack_due {
                Some(due) if due == deadline => return Some(due),
                Some(due) => {
                    self.ack_timers.pop();
                    self.ack_timers.push(Reverse((due, idx, conn_id, flow)));
                }
                None => {
                    self.ack_timers.pop();
                    self.flows[idx].timer_queued = false;
                }
            }
        }
        None
    }

    /// Sends the ACK of every flow whose ACK timer has expired at the current time: a flow
    /// holding consumed, unacknowledged packets, the oldest of which arrived at least
    /// `ACK_DELAY_NS` ago. The ACK carries the flow's current state, leaves on the entropy and
    /// port of the flow's last data packet and echoes that packet's timestamp. Costs one heap operation
    /// per expired timer; flows without pending packets cost nothing. [`Self::set_time`] calls
    /// it, so a driver that advances time drives the timers.
    pub fn poll_ack_timers(&mut self) {
        // The hardware sweeps every flow when its sweep time has come and then knows the
        // earliest deadline left; the heap below finds the expired flows without the sweep.
        let sweep = self.armed_flows > 0 && self.now_ns >= self.sweep_due;
        while let Some(&Reverse((deadline, idx, conn_id, flow))) = self.ack_timers.peek() {
            if deadline > self.now_ns {
                break;
            }
            self.ack_timers.pop();
            let st = self.flows[idx];
            match st.ack_due {
                Some(due) if due > deadline => {
                    // Re-armed after an ACK: wait for the newer deadline.
                    self.ack_timers.push(Reverse((due, idx, conn_id, flow)));
                    continue;
                }
                Some(_) => {}
                None => {
                    self.flows[idx].timer_queued = false;
                    continue;
                }
            }
            self.flows[idx].timer_queued = false;
            let conn = self.conns.get(conn_id as usize).copied();
            let still_ours = conn.is_some_and(|c| {
                c.valid && flow < c.flow_count && c.flow_base as usize + flow as usize == idx
            });
            if st.unacked == 0 || !still_ours {
                self.set_ack_due(idx, None);
                continue;
            }
            self.send_ack(
                conn_id,
                idx,
                flow,
                st.last_port,
                st.last_entropy,
                st.last_ts,
            );
        }
        if sweep {
            self.sweep_due = self.earliest_armed_due().unwrap_or(u64::MAX);
        }
    }

    /// Starts the ACK timer of a flow whose first unacknowledged packet was just consumed.
    pub(crate) fn arm_ack_timer(&mut self, conn_id: u32, flow_idx: usize, flow: u16) {
        if self.regs.ack_delay_ns == 0 {
            return;
        }
        let due = self.now_ns + self.regs.ack_delay_ns as u64;
        if self.armed_flows == 0 || due < self.sweep_due {
            self.sweep_due = due;
        }
        self.set_ack_due(flow_idx, Some(due));
        let fl = &mut self.flows[flow_idx];
        if !fl.timer_queued {
            fl.timer_queued = true;
            self.ack_timers
                .push(Reverse((due, flow_idx, conn_id, flow)));
        }
    }

    /// The current value of a counter.
    pub fn counter(&self, c: Counter) -> u64 {
        self.counters[c as usize]
    }

    /// Every counter with its value.
    pub fn counters(&self) -> impl Iterator<Item = (Counter, u64)> + '_ {
        Counter::ALL.iter().map(|&c| (c, self.counters[c as usize]))
    }

    pub(crate) fn count(&mut self, c: Counter) {
        self.add(c, 1);
    }

    pub(crate) fn add(&mut self, c: Counter, n: u64) {
        let v = &mut self.counters[c as usize];
        *v = v.wrapping_add(n);
    }

    pub(crate) fn emit_frame(&mut self, port: u8, frame: FrameBuf) {
        self.tx_frames.push_back(PortFrameBuf { port, frame });
    }

    pub(crate) fn emit_event(&mut self, e: Event) {
        self.events.push_back(e);
    }

    /// Takes the next frame the NIC sends toward the MAC, with its port.
    pub fn pop_port_frame(&mut self) -> Option<PortFrame> {
        self.tx_frames
            .pop_front()
            .map(PortFrameBuf::into_port_frame)
    }

    /// Takes the next frame the NIC sends toward the MAC as it was built: split, with its
    /// payload by reference, when the host memory shared the payload
    /// ([`HostMemory::dma_share`]). Its bytes are those [`FastPath::pop_port_frame`] gives.
    pub fn pop_port_frame_buf(&mut self) -> Option<PortFrameBuf> {
        self.tx_frames.pop_front()
    }

    /// Takes the next frame the NIC sends toward the MAC, dropping its port: for a one-port
    /// NIC.
    pub fn pop_tx_frame(&mut self) -> Option<Vec<u8>> {
        self.pop_port_frame().map(|f| f.bytes)
    }

    /// Takes the next event not yet written to an event ring.
    pub fn pop_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// An AXI4-Lite register write.
    pub fn write_reg(&mut self, offset: u32, value: u32) {
        let r = &mut self.regs;
        match offset {
            regs::CONTROL => r.control = value,
            regs::UDP_PORT => r.udp_port = value as u16,
            regs::ACK_COALESCE => r.ack_coalesce = value.max(1),
            regs::ACK_DELAY_NS => r.ack_delay_ns = value,
            regs::MAC_LO => {
                r.mac = EthernetAddress::from_u64((r.mac.to_u64() & !0xffff_ffff) | value as u64)
            }
            regs::MAC_HI => {
                r.mac = EthernetAddress::from_u64(
                    (r.mac.to_u64() & 0xffff_ffff) | ((value as u64 & 0xffff) << 32),
                )
            }
            regs::TXQ_BASE_LO => r.txq_base = (r.txq_base & !0xffff_ffff) | value as u64,
            regs::TXQ_BASE_HI => r.txq_base = (r.txq_base & 0xffff_ffff) | (value as u64) << 32,
            regs::TXQ_LOG_SIZE => {
                r.txq_log_size = value.min(16);
                r.txq_head = 0;
                r.txq_tail = 0;
            }
            regs::TXQ_TAIL => r.txq_tail = value,
            regs::EVQ_BASE_LO => r.evq_base = (r.evq_base & !0xffff_ffff) | value as u64,
            regs::EVQ_BASE_HI => r.evq_base = (r.evq_base & 0xffff_ffff) | (value as u64) << 32,
            regs::EVQ_LOG_SIZE => {
                r.evq_log_size = value.min(16);
                r.evq_head = 0;
                r.evq_tail = 0;
            }
            regs::EVQ_HEAD => r.evq_head = value,
            regs::TABLE_INDEX => r.table_index = value,
            regs::TABLE_CMD => self.table_command(value),
            o if (regs::TABLE_DATA..regs::TABLE_DATA + 4 * TABLE_WORDS as u32).contains(&o) => {
                r.table_data[((o - regs::TABLE_DATA) / 4) as usize] = value
            }
            o if (regs::COUNTERS..regs::COUNTERS + 8 * Counter::COUNT as u32).contains(&o)
                && o % 8 == 0 =>
            {
                self.counters[((o - regs::COUNTERS) / 8) as usize] = 0;
            }
            _ => {} // writes to read-only or unmapped registers are ignored, as on AXI-Lite
        }
    }

    /// An AXI4-Lite register read (unmapped registers read as zero).
    pub fn read_reg(&self, offset: u32) -> u32 {
        let r = &self.regs;
        match offset {
            regs::ID => regs::ID_VALUE,
            regs::VERSION => regs::VERSION_VALUE,
            regs::CONTROL => r.control,
            regs::UDP_PORT => r.udp_port as u32,
            regs::ACK_COALESCE => r.ack_coalesce,
            regs::ACK_DELAY_NS => r.ack_delay_ns,
            regs::MAC_LO => r.mac.to_u64() as u32,
            regs::MAC_HI => (r.mac.to_u64() >> 32) as u32,
            regs::TIMESTAMP_LO => self.now_ns as u32,
            regs::TIMESTAMP_HI => (self.now_ns >> 32) as u32,
            regs::CAP_CONNECTIONS => self.sizes.connections,
            regs::CAP_FLOWS => self.sizes.flows,
            regs::CAP_REGIONS => self.sizes.regions,
            regs::CAP_TAGS => self.sizes.tags,
            regs::CAP_MSG_SLOTS => self.sizes.msg_slots,
            regs::CAP_RECV_DEPTH => self.sizes.recv_depth,
            regs::CAP_PORTS => self.sizes.ports,
            regs::PORT_LINK => self.link_up as u32 & port_mask(self.sizes.ports),
            regs::TXQ_BASE_LO => r.txq_base as u32,
            regs::TXQ_BASE_HI => (r.txq_base >> 32) as u32,
            regs::TXQ_LOG_SIZE => r.txq_log_size,
            regs::TXQ_HEAD => r.txq_head,
            regs::TXQ_TAIL => r.txq_tail,
            regs::EVQ_BASE_LO => r.evq_base as u32,
            regs::EVQ_BASE_HI => (r.evq_base >> 32) as u32,
            regs::EVQ_LOG_SIZE => r.evq_log_size,
            regs::EVQ_HEAD => r.evq_head,
            regs::EVQ_TAIL => r.evq_tail,
            regs::TABLE_INDEX => r.table_index,
            regs::TABLE_STATUS => r.table_status,
            o if (regs::TABLE_DATA..regs::TABLE_DATA + 4 * TABLE_WORDS as u32).contains(&o) => {
                r.table_data[((o - regs::TABLE_DATA) / 4) as usize]
            }
            o if (regs::COUNTERS..regs::COUNTERS + 8 * Counter::COUNT as u32).contains(&o) => {
                let v = self.counters[((o - regs::COUNTERS) / 8) as usize];
                if o % 8 == 0 {
                    v as u32
                } else {
                    (v >> 32) as u32
                }
            }
            _ => 0,
        }
    }

    fn table_command(&mut self, cmd: u32) {
        use crate::hsi::TableId;
        let index = self.regs.table_index as usize;
        let words = self.regs.table_data;
        let write = cmd & regs::TABLE_OP_WRITE != 0;
        let read = cmd & regs::TABLE_OP_READ != 0;
        let Some(table) = TableId::from_u8(cmd as u8).filter(|_| write != read) else {
            self.regs.table_status = regs::TABLE_STATUS_BAD_TABLE;
            return;
        };
        let len = match table {
            TableId::Region => self.regions.len(),
            TableId::Connection | TableId::RateHint => self.conns.len(),
            TableId::Flow => self.flows.len(),
            TableId::RecvBuffer => self.recv.len(),
            TableId::TagReset => self.sizes.tags as usize,
        };
        if index >= len {
            self.regs.table_status = regs::TABLE_STATUS_BAD_INDEX;
            return;
        }
        self.regs.table_status = regs::TABLE_STATUS_OK;
        if write {
            match table {
                TableId::Region => self.regions[index] = RegionEntry::from_words(&words),
                TableId::Connection => self.conns[index] = ConnectionEntry::from_words(&words),
                TableId::RateHint => self.conns[index].rate_hint_mbps = words[0],
                TableId::Flow => {
                    let init = crate::hsi::FlowInit::from_words(&words);
                    self.set_ack_due(index, None);
                    self.flows[index] = FlowRxState::new(init.cum_fsn);
                    self.flow_changed(index);
                }
                TableId::RecvBuffer => self.recv[index] = RecvBuffer::from_words(&words),
                TableId::TagReset => {
                    let s = self.sizes.msg_slots as usize;
                    let d = self.sizes.recv_depth as usize;
                    self.slots[index * s..(index + 1) * s].fill(MsgSlot::default());
                    self.recv[index * d..(index + 1) * d].fill(RecvBuffer::default());
                }
            }
            return;
        }
        let mut out = [0u32; TABLE_WORDS];
        let fill = |out: &mut [u32; TABLE_WORDS], w: Vec<u32>| out[..w.len()].copy_from_slice(&w);
        match table {
            TableId::Region => fill(&mut out, self.regions[index].to_words()),
            TableId::Connection => fill(&mut out, self.conns[index].to_words()),
            TableId::RateHint => out[0] = self.conns[index].rate_hint_mbps,
            TableId::RecvBuffer => fill(&mut out, self.recv[index].to_words()),
            TableId::Flow => {
                let f = &self.flows[index];
                out[0] = f.cum;
                for (i, w) in f.bitmap.iter().enumerate() {
                    out[1 + 2 * i] = *w as u32;
                    out[2 + 2 * i] = (*w >> 32) as u32;
                }
            }
            TableId::TagReset => {
                self.regs.table_status = regs::TABLE_STATUS_NOT_READABLE;
                return;
            }
        }
        self.regs.table_data = out;
    }

    /// Convenience for hosts and tests: writes table entry `index` through the register
    /// window, exactly as a driver does. Returns the `TABLE_STATUS` value.
    pub fn write_table(&mut self, table: crate::hsi::TableId, index: u32, words: &[u32]) -> u32 {
        for (i, w) in words.iter().enumerate().take(TABLE_WORDS) {
            self.write_reg(regs::TABLE_DATA + 4 * i as u32, *w);
        }
        for i in words.len()..TABLE_WORDS {
            self.write_reg(regs::TABLE_DATA + 4 * i as u32, 0);
        }
        self.write_reg(regs::TABLE_INDEX, index);
        self.write_reg(regs::TABLE_CMD, table as u32 | regs::TABLE_OP_WRITE);
        self.read_reg(regs::TABLE_STATUS)
    }

    /// Convenience: reads table entry `index` through the register window.
    pub fn read_table(
        &mut self,
        table: crate::hsi::TableId,
        index: u32,
    ) -> Result<[u32; TABLE_WORDS], u32> {
        self.write_reg(regs::TABLE_INDEX, index);
        self.write_reg(regs::TABLE_CMD, table as u32 | regs::TABLE_OP_READ);
        match self.read_reg(regs::TABLE_STATUS) {
            regs::TABLE_STATUS_OK => Ok(self.regs.table_data),
            s => Err(s),
        }
    }
}
