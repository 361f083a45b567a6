//! The receive path.

use super::{FastPath, HostMemory, MsgSlot, SlotState, sack::SackClass};
use crate::hsi::{Counter, Event, event::CompletionStatus, regs, tables::ACCESS_REMOTE_WRITE};
use crate::wire::{
    DataRepr, Frame, IcrcCheck, NakReason, ParseError, SharedBytes, SplitFrame, TransportRepr,
    ip::ECN_CE, parse_frame_checking,
};

/// What the receive path did with one frame: the counter that classified it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict(pub Counter);

impl Verdict {
    /// True when the frame's payload was written to host memory.
    pub fn placed(self) -> bool {
        self.0 == Counter::RxPlacedPackets
    }
}

/// The drop counter of a frame that failed to parse.
pub fn parse_counter(e: ParseError) -> Counter {
    match e {
        ParseError::Truncated => Counter::RxTruncated,
        ParseError::BadEtherType => Counter::RxBadEtherType,
        ParseError::BadIpHeader => Counter::RxBadIpHeader,
        ParseError::BadIpChecksum => Counter::RxBadIpChecksum,
        ParseError::NotUdp => Counter::RxNotUdp,
        ParseError::BadUdp => Counter::RxBadUdp,
        ParseError::BadBth => Counter::RxBadBth,
        ParseError::BadOpcode => Counter::RxBadOpcode,
        ParseError::BadIcrc => Counter::RxBadIcrc,
        ParseError::TooLong => Counter::RxTooLong,
    }
}

/// Why a data packet that passed the SACK check is not placed.
enum Refusal {
    /// Not consumed: the FSN stays missing and the sender retries later.
    RetryLater(Counter),
    /// Consumed (the FSN counts as received) but nothing written; the message, if it has a slot,
    /// records `status`.
    Terminal(Counter, NakReason, Option<CompletionStatus>),
}

impl FastPath {
    /// Runs one frame received on port 0 through the fast path: [`Self::receive_on`].
    pub fn receive(&mut self, frame: &[u8], mem: &mut dyn HostMemory) -> Verdict {
        self.receive_on(0, frame, mem)
    }

    /// Runs one frame received on a NIC port through the fast path. Host memory is written
    /// only for an accepted data packet, only inside its region or posted buffer. ACKs and
    /// NAKs leave on the port their data came in on. Only the low [`regs::PORT_BITS`] bits of
    /// `port` count, as on the hardware's `tid`.
    pub fn receive_on(&mut self, port: u8, frame: &[u8], mem: &mut dyn HostMemory) -> Verdict {
        self.receive_checking(port, frame, mem, IcrcCheck::Compute)
    }

    /// [`Self::receive_on`], with the ICRC computed ([`IcrcCheck::Compute`], what
    /// `receive_on` does) or, for a frame whose ICRC trailer is known to be that of its bytes
    /// (built by this model's transmit path and changed since only in fields the ICRC masks),
    /// not computed again ([`IcrcCheck::KnownGood`]): the same result either way.
    pub fn receive_checking(
        &mut self,
        port: u8,
        frame: &[u8],
        mem: &mut dyn HostMemory,
        icrc_check: IcrcCheck,
    ) -> Verdict {
        self.receive_parsed(port, mem, None, |udp_port| {
            parse_frame_checking(frame, udp_port, icrc_check)
        })
    }

    /// [`Self::receive_checking`] for a frame split into its headers and a payload by
    /// reference, as this model's transmit path builds it from shared host memory: the result
    /// of `receive_checking` over [`SplitFrame::to_bytes`] (whose ICRC is that of its bytes by
    /// construction, so it is not computed), and the payload written to memory straight from
    /// the reference ([`HostMemory::dma_write_shared`]: memory may keep the reference).
    pub fn receive_split(
        &mut self,
        port: u8,
        frame: &SplitFrame,
        mem: &mut dyn HostMemory,
    ) -> Verdict {
        let mut scratch = std::mem::take(&mut self.rx_scratch);
        let verdict = self.receive_parsed(port, mem, Some(frame.payload()), |udp_port| {
            frame.parse_in(udp_port, &mut scratch)
        });
        self.rx_scratch = scratch;
        verdict
    }

    /// One frame through the fast path, `parse` giving it parsed for a destination UDP port;
    /// `shared`: the payload by reference, if the frame holds it that way.
    fn receive_parsed<'f>(
        &mut self,
        port: u8,
        mem: &mut dyn HostMemory,
        shared: Option<&SharedBytes>,
        parse: impl FnOnce(u16) -> Result<Frame<'f>, ParseError>,
    ) -> Verdict {
        self.count(Counter::RxFrames);
        let port = port & (regs::MAX_PORTS - 1) as u8;
        let verdict = self.receive_inner(port, mem, shared, parse);
        if verdict != Counter::RxPlacedPackets {
            // Placed packets already counted themselves (with their bytes).
            self.count(verdict);
        }
        Verdict(verdict)
    }

    fn receive_inner<'f>(
        &mut self,
        port: u8,
        mem: &mut dyn HostMemory,
        shared: Option<&SharedBytes>,
        parse: impl FnOnce(u16) -> Result<Frame<'f>, ParseError>,
    ) -> Counter {
        if self.regs.control & regs::CONTROL_RX_ENABLE == 0 {
            return Counter::RxDisabled;
        }
        let f = match parse(self.regs.udp_port) {
            Ok(f) => f,
            Err(e) => return parse_counter(e),
        };
        if let TransportRepr::Cm(msg) = f.transport {
            // Connection management reaches the host before any connection exists.
            self.emit_event(Event::Cm {
                dest_conn: f.bth.dest_conn,
                src_ip: f.ip.src_bytes(),
                ipv6: matches!(f.ip, crate::wire::IpRepr::V6(_)),
                src_mac: f.eth.src,
                vlan_tci: f.eth.vlan_tci,
                src_port: f.udp.src_port,
                port,
                msg,
            });
            return Counter::RxCm;
        }
        let conn_id = f.bth.dest_conn;
        let Some(conn) = self
            .conns
            .get(conn_id as usize)
            .copied()
            .filter(|c| c.valid)
        else {
            return Counter::RxUnknownConnection;
        };
        let ipv6 = matches!(f.ip, crate::wire::IpRepr::V6(_));
        if ipv6 != conn.ipv6
            || f.ip.src_bytes() != conn.peer_ip
            || f.ip.dst_bytes() != conn.local_ip
        {
            return Counter::RxAddressMismatch;
        }
        match f.transport {
            TransportRepr::Ack(a) => {
                if a.flow >= conn.flow_count {
                    return Counter::RxBadFlow;
                }
                self.emit_event(Event::Ack {
                    conn: conn_id,
                    flow: a.flow,
                    cum_fsn: f.bth.psn,
                    ecn_echo: a.ecn_echo,
                    ce_count: a.ce_count,
                    refused: a.refused,
                    rate_hint_mbps: a.rate_hint_mbps,
                    ts_echo: a.ts_echo,
                    sack: a.sack,
                });
                Counter::RxAcks
            }
            TransportRepr::Nak(n) => {
                if n.flow >= conn.flow_count {
                    return Counter::RxBadFlow;
                }
                self.emit_event(Event::Nak {
                    conn: conn_id,
                    flow: n.flow,
                    fsn: f.bth.psn,
                    reason: n.reason,
                    tag: n.tag,
                    msn: n.msn,
                    offset: n.offset,
                });
                Counter::RxNaks
            }
            TransportRepr::Data(d) => {
                // The reference is the payload only if the parse found it there (not when it
                // fell back to the whole frame with other headers).
                let shared = shared.filter(|s| core::ptr::eq(s.as_slice(), f.payload));
                self.receive_data(port, conn_id, &f, &d, mem, shared)
            }
            TransportRepr::Cm(_) => Counter::RxCm, // handled above
        }
    }

    fn receive_data(
        &mut self,
        port: u8,
        conn_id: u32,
        f: &Frame<'_>,
        d: &DataRepr,
        mem: &mut dyn HostMemory,
        shared: Option<&SharedBytes>,
    ) -> Counter {
        let conn = self.conns[conn_id as usize];
        if d.flow >= conn.flow_count {
            return Counter::RxBadFlow;
        }
        let flow_idx = conn.flow_base as usize + d.flow as usize;
        if flow_idx >= self.flows.len() {
            return Counter::RxBadFlow;
        }
        {
            // A timer ACK goes out on the entropy and port of the flow's last data packet,
            // echoing its timestamp.
            let fl = &mut self.flows[flow_idx];
            fl.last_entropy = f.udp.src_port;
            fl.last_port = port;
            fl.last_ts = d.timestamp;
        }
        let ce = f.ip.ecn() == ECN_CE;
        if ce {
            self.count(Counter::RxCeMarked);
            let fl = &mut self.flows[flow_idx];
            fl.ce_count = fl.ce_count.saturating_add(1);
        }
        let fsn = f.bth.psn;
        let (distance, opens_gap) = match self.flows[flow_idx].classify(fsn) {
            SackClass::Duplicate => {
                // The sender may have lost our ACK: tell it again at once.
                self.send_ack(conn_id, flow_idx, d.flow, port, f.udp.src_port, d.timestamp);
                return Counter::RxDuplicate;
            }
            SackClass::OutOfWindow => {
                self.send_nak(conn_id, d, fsn, NakReason::OutOfWindow, f, port);
                return Counter::RxOutOfWindow;
            }
            SackClass::New {
                distance,
                opens_gap,
            } => (distance, opens_gap),
        };

        let outcome = self.check_placement(&conn, f, d);
        let verdict = match outcome {
            Err(Refusal::RetryLater(c)) => {
                self.send_nak(conn_id, d, fsn, NakReason::ReceiverNotReady, f, port);
                return c;
            }
            Err(Refusal::Terminal(c, reason, status)) => {
                // Every ACK of the flow from now on carries the refusal, so the sender learns
                // of it even if this NAK is lost.
                let fl = &mut self.flows[flow_idx];
                fl.refused = fl.refused.wrapping_add(1);
                self.send_nak(conn_id, d, fsn, reason, f, port);
                if let Some(status) = status {
                    self.account(conn_id, d, f.payload.len() as u64, Some(status));
                }
                c
            }
            Ok(Placement::Stale) => Counter::RxStaleMessage,
            Ok(Placement::Write(addr)) => {
                let written = match shared {
                    Some(s) => mem.dma_write_shared(addr, s),
                    None => mem.dma_write(addr, f.payload),
                };
                let status = match written {
                    Ok(()) => {
                        self.count(Counter::RxPlacedPackets);
                        self.add(Counter::RxPlacedBytes, f.payload.len() as u64);
                        None
                    }
                    // The region said yes but the IOMMU said no: the host unmapped memory it had
                    // registered. Account the bytes so the message still ends, with an error.
                    Err(_) => Some(CompletionStatus::RemoteAccessError),
                };
                self.account(conn_id, d, f.payload.len() as u64, status);
                if status.is_some() {
                    Counter::RxOutOfBounds
                } else {
                    Counter::RxPlacedPackets
                }
            }
        };
        // The packet is consumed: it counts as received on its flow.
        self.flow_changed(flow_idx);
        let fl = &mut self.flows[flow_idx];
        fl.accept(distance);
        fl.unacked = fl.unacked.saturating_add(1);
        let coalesce_due = fl.unacked as u32 >= self.regs.ack_coalesce;
        if f.bth.ack_req || ce || opens_gap || coalesce_due {
            self.send_ack(conn_id, flow_idx, d.flow, port, f.udp.src_port, d.timestamp);
        } else if fl.unacked == 1 {
            // The oldest packet the next ACK will cover: start the ACK timer.
            self.arm_ack_timer(conn_id, flow_idx, d.flow);
        }
        verdict
    }

    /// Every check between the SACK window and the DMA write, in hardware order. On success the
    /// message slot has been claimed or matched.
    fn check_placement(
        &mut self,
        conn: &crate::hsi::ConnectionEntry,
        f: &Frame<'_>,
        d: &DataRepr,
    ) -> Result<Placement, Refusal> {
        use Counter as C;
        let invalid = Refusal::Terminal(C::RxInvalidRequest, NakReason::InvalidRequest, None);
        let len = f.payload.len() as u64;
        if d.tag >= conn.tag_count {
            return Err(invalid);
        }
        let tag_ctx = conn.tag_base as usize + d.tag as usize;
        if tag_ctx >= self.sizes().tags as usize {
            return Err(invalid);
        }
        if d.offset as u64 + len > d.msg_len as u64 {
            return Err(invalid);
        }
        let opcode = f.bth.opcode;
        let recv_idx =
            tag_ctx * self.sizes().recv_depth as usize + (d.ssn % self.sizes().recv_depth) as usize;
        if !opcode.is_write() {
            let rb = self.recv[recv_idx];
            if !rb.valid || rb.ssn != d.ssn {
                return Err(Refusal::RetryLater(C::RxNoRecvBuffer));
            }
        }
        let slot_idx =
            tag_ctx * self.sizes().msg_slots as usize + (d.msn % self.sizes().msg_slots) as usize;
        let slot = self.slots[slot_idx];
        match slot.state {
            SlotState::Active if slot.msn == d.msn => {
                if slot.msg_len != d.msg_len
                    || slot.opcode != Some(opcode)
                    || (!opcode.is_write() && slot.ssn != d.ssn)
                    || slot.bytes_done + len > d.msg_len as u64
                {
                    return Err(invalid);
                }
            }
            SlotState::Active => return Err(Refusal::RetryLater(C::RxMsgSlotBusy)),
            SlotState::Done if slot.msn == d.msn => return Ok(Placement::Stale),
            SlotState::Free | SlotState::Done => {
                self.slots[slot_idx] = MsgSlot {
                    state: SlotState::Active,
                    msn: d.msn,
                    ssn: if opcode.is_write() { 0 } else { d.ssn },
                    opcode: Some(opcode),
                    msg_len: d.msg_len,
                    bytes_done: 0,
                    status: None,
                    imm: d.imm,
                };
            }
        }
        let access = |c| {
            Refusal::Terminal(
                c,
                NakReason::RemoteAccess,
                Some(CompletionStatus::RemoteAccessError),
            )
        };
        if let Some(reth) = d.reth {
            let idx = (reth.rkey >> 8) as usize;
            let Some(region) = self
                .regions
                .get(idx)
                .filter(|r| r.valid && r.key == reth.rkey as u8)
            else {
                return Err(access(C::RxBadRkey));
            };
            if region.access & ACCESS_REMOTE_WRITE == 0 {
                return Err(access(C::RxAccessDenied));
            }
            if !region.contains(reth.va, len) {
                return Err(access(C::RxOutOfBounds));
            }
            Ok(Placement::Write(reth.va))
        } else {
            let rb = self.recv[recv_idx];
            if d.offset as u64 + len > rb.len as u64 {
                return Err(Refusal::Terminal(
                    C::RxOutOfBounds,
                    NakReason::InvalidRequest,
                    Some(CompletionStatus::LengthError),
                ));
            }
            Ok(Placement::Write(rb.addr.wrapping_add(d.offset as u64)))
        }
    }

    /// Adds a consumed packet's bytes to its message and completes the message when every byte
    /// is accounted for.
    fn account(&mut self, conn_id: u32, d: &DataRepr, len: u64, status: Option<CompletionStatus>) {
        let tag_ctx = self.conns[conn_id as usize].tag_base as usize + d.tag as usize;
        let slot_idx =
            tag_ctx * self.sizes().msg_slots as usize + (d.msn % self.sizes().msg_slots) as usize;
        let slot = &mut self.slots[slot_idx];
        slot.bytes_done += len;
        if slot.status.is_none() {
            slot.status = status;
        }
        if slot.bytes_done < slot.msg_len as u64 {
            return;
        }
        slot.state = SlotState::Done;
        let slot = *slot;
        let Some(opcode) = slot.opcode else { return };
        if !opcode.is_write() {
            let recv_idx = tag_ctx * self.sizes().recv_depth as usize
                + (slot.ssn % self.sizes().recv_depth) as usize;
            self.recv[recv_idx].valid = false;
        }
        self.count(Counter::RxCompletions);
        self.emit_event(Event::Completion {
            conn: conn_id,
            tag: d.tag,
            msn: slot.msn,
            ssn: slot.ssn,
            opcode,
            status: slot.status.unwrap_or(CompletionStatus::Success),
            len: slot.msg_len,
            imm: slot.imm,
        });
    }
}

/// Where an accepted packet's payload goes.
enum Placement {
    /// Write the payload at this DMA address.
    Write(u64),
    /// A new packet of a message that already completed: consumed, not placed.
    Stale,
}
