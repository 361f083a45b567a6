//! The transmit path: descriptors, ACKs and NAKs become frames.

use super::{FastPath, HostMemory};
use crate::hsi::{
    ConnectionEntry, Counter, Event, MAX_PAYLOAD_LEN, TxDescriptor,
    descriptor::{FLAG_ACK_REQ, FLAG_SOLICITED},
    event::TxErrorReason,
};
use crate::wire::{
    AckRepr, BthRepr, CmRepr, DataRepr, EthernetRepr, Frame, FrameBuf, FrameRepr, IpRepr, Ipv4Repr,
    Ipv6Repr, NakReason, NakRepr, Opcode, RethRepr, TransportRepr, ip::ECN_ECT0, transport::CM_LEN,
};
use core::net::{Ipv4Addr, Ipv6Addr};

/// TTL / hop limit of every frame the NIC sends.
pub const TTL: u8 = 64;

fn ip_repr(conn: &ConnectionEntry) -> IpRepr {
    if conn.ipv6 {
        IpRepr::V6(Ipv6Repr {
            src: Ipv6Addr::from(conn.local_ip),
            dst: Ipv6Addr::from(conn.peer_ip),
            dscp: conn.dscp,
            ecn: ECN_ECT0,
            flow_label: 0,
            hop_limit: TTL,
            payload_len: 0,
        })
    } else {
        let v4 = |b: [u8; 16]| Ipv4Addr::new(b[12], b[13], b[14], b[15]);
        IpRepr::V4(Ipv4Repr {
            src: v4(conn.local_ip),
            dst: v4(conn.peer_ip),
            dscp: conn.dscp,
            ecn: ECN_ECT0,
            ttl: TTL,
            ident: 0,
            payload_len: 0,
        })
    }
}

impl FastPath {
    fn build(
        &self,
        conn: &ConnectionEntry,
        entropy: u16,
        bth: BthRepr,
        transport: TransportRepr,
        payload: &[u8],
    ) -> FrameBuf {
        FrameBuf::Whole(self.repr(conn, entropy, bth, transport, payload).emit())
    }

    /// What [`FastPath::build`] emits.
    fn repr<'a>(
        &self,
        conn: &ConnectionEntry,
        entropy: u16,
        bth: BthRepr,
        transport: TransportRepr,
        payload: &'a [u8],
    ) -> FrameRepr<'a> {
        FrameRepr {
            eth: EthernetRepr {
                dst: conn.peer_mac,
                src: self.regs.mac,
                vlan_tci: conn.vlan_tci,
                ethertype: 0,
            },
            ip: ip_repr(conn),
            src_port: entropy,
            dst_port: self.regs.udp_port,
            bth,
            transport,
            payload,
        }
    }

    /// Builds and queues the frame a descriptor describes, reading its payload by DMA and
    /// stamping the current time. A refused descriptor sends nothing and is reported with a
    /// [`Event::TxError`].
    pub fn transmit(
        &mut self,
        desc: &TxDescriptor,
        mem: &mut dyn HostMemory,
    ) -> Result<(), TxErrorReason> {
        let result = self.transmit_inner(desc, mem);
        if let Err(reason) = result {
            self.count(Counter::TxBadDescriptor);
            self.emit_event(Event::TxError {
                conn: desc.conn,
                flow: desc.flow,
                fsn: desc.fsn,
                opcode: desc.opcode,
                reason,
            });
        }
        result
    }

    fn transmit_inner(
        &mut self,
        desc: &TxDescriptor,
        mem: &mut dyn HostMemory,
    ) -> Result<(), TxErrorReason> {
        let opcode = desc
            .opcode()
            .filter(|o| o.is_data() || *o == Opcode::Cm)
            .ok_or(TxErrorReason::BadOpcode)?;
        let conn = self
            .conns
            .get(desc.conn as usize)
            .copied()
            .filter(|c| c.valid)
            .ok_or(TxErrorReason::UnknownConnection)?;
        if u32::from(desc.port) >= self.sizes().ports {
            return Err(TxErrorReason::BadPort);
        }
        let payload_len = desc.payload_len;
        let transport = if opcode == Opcode::Cm {
            if payload_len as usize != CM_LEN {
                return Err(TxErrorReason::BadLength);
            }
            let mut msg = [0u8; CM_LEN];
            mem.dma_read(desc.local_addr, &mut msg)
                .map_err(|_| TxErrorReason::DmaError)?;
            TransportRepr::Cm(CmRepr::parse_bytes(&msg).map_err(|_| TxErrorReason::BadLength)?)
        } else {
            if desc.flow >= conn.flow_count {
                return Err(TxErrorReason::BadFlow);
            }
            if payload_len > MAX_PAYLOAD_LEN
                || desc.offset as u64 + payload_len as u64 > desc.msg_len as u64
            {
                return Err(TxErrorReason::BadLength);
            }
            TransportRepr::Data(DataRepr {
                flow: desc.flow,
                tag: desc.tag,
                msn: desc.msn,
                ssn: if opcode.is_write() { 0 } else { desc.ssn },
                offset: desc.offset,
                msg_len: desc.msg_len,
                timestamp: self.now_ns as u32,
                reth: opcode.is_write().then_some(RethRepr {
                    va: desc.remote_va,
                    rkey: desc.rkey,
                }),
                imm: opcode.has_imm().then_some(desc.imm),
            })
        };
        let bth = BthRepr {
            opcode,
            solicited: desc.flags & FLAG_SOLICITED != 0,
            dest_conn: conn.peer_conn,
            ack_req: desc.flags & FLAG_ACK_REQ != 0,
            psn: desc.fsn & crate::wire::FSN_MASK,
        };
        // Memory that shares the payload by reference is not copied here at all: the frame
        // keeps the reference (the bytes cannot change under it) and the receiver places the
        // payload from it (simulated memory may even keep the reference).
        let shared = (opcode != Opcode::Cm && payload_len > 0)
            .then(|| mem.dma_share(desc.local_addr, payload_len as usize))
            .flatten()
            .filter(|p| p.len() == payload_len as usize);
        if let Some(payload) = shared {
            let len = payload.len() as u64;
            let repr = self.repr(&conn, desc.entropy, bth, transport, &[]);
            let frame = FrameBuf::emit(&repr, payload);
            self.count(Counter::TxPackets);
            self.add(Counter::TxBytes, len);
            self.emit_frame(desc.port, frame);
            return Ok(());
        }
        // Memory that lends the payload in place is copied once, straight into the frame.
        let view = (opcode != Opcode::Cm && payload_len > 0)
            .then(|| mem.dma_view(desc.local_addr, payload_len as usize))
            .flatten();
        if let Some(payload) = view {
            let frame = self.build(&conn, desc.entropy, bth, transport, payload);
            self.count(Counter::TxPackets);
            self.add(Counter::TxBytes, payload.len() as u64);
            self.emit_frame(desc.port, frame);
            return Ok(());
        }
        // Otherwise through a buffer kept from frame to frame: a fresh zeroed one per frame
        // cost more than reading the payload into it.
        let mut payload = std::mem::take(&mut self.tx_payload);
        // An empty payload reads nothing (so its address is never checked).
        if opcode != Opcode::Cm && payload_len > 0 {
            // Resizing keeps the last frame's bytes (zeroing only growth); the read overwrites
            // them all.
            payload.resize(payload_len as usize, 0);
            if mem.dma_read(desc.local_addr, &mut payload).is_err() {
                self.tx_payload = payload;
                return Err(TxErrorReason::DmaError);
            }
        } else {
            payload.clear();
        }
        let frame = self.build(&conn, desc.entropy, bth, transport, &payload);
        self.count(Counter::TxPackets);
        self.add(Counter::TxBytes, payload.len() as u64);
        self.tx_payload = payload;
        self.emit_frame(desc.port, frame);
        Ok(())
    }

    /// Sends the flow's current SACK state to the peer and clears its pending-ACK state (and
    /// its ACK timer). The ACK leaves on NIC port `port` with `entropy` (UDP source port) and
    /// echoes `ts_echo`: those of the packet that triggered it, or of the flow's last data
    /// packet for a timer ACK.
    pub(crate) fn send_ack(
        &mut self,
        conn_id: u32,
        flow_idx: usize,
        flow: u16,
        port: u8,
        entropy: u16,
        ts_echo: u32,
    ) {
        let conn = self.conns[conn_id as usize];
        let st = self.flows[flow_idx];
        let ack = AckRepr {
            flow,
            ecn_echo: st.ce_count > 0,
            ce_count: st.ce_count,
            refused: st.refused,
            rate_hint_mbps: conn.rate_hint_mbps,
            ts_echo,
            sack: st.sack_bytes(),
        };
        let bth = BthRepr {
            opcode: Opcode::Ack,
            solicited: false,
            dest_conn: conn.peer_conn,
            ack_req: false,
            psn: st.cum,
        };
        let frame = self.build(&conn, entropy, bth, TransportRepr::Ack(ack), &[]);
        self.set_ack_due(flow_idx, None);
        let fl = &mut self.flows[flow_idx];
        fl.unacked = 0;
        fl.ce_count = 0;
        self.count(Counter::TxAcks);
        self.emit_frame(port, frame);
    }

    /// Refuses one data packet to its sender, on the port and entropy it came in on.
    pub(crate) fn send_nak(
        &mut self,
        conn_id: u32,
        d: &DataRepr,
        fsn: u32,
        reason: NakReason,
        trigger: &Frame<'_>,
        port: u8,
    ) {
        let conn = self.conns[conn_id as usize];
        let nak = NakRepr {
            flow: d.flow,
            reason,
            tag: d.tag,
            msn: d.msn,
            offset: d.offset,
        };
        let bth = BthRepr {
            opcode: Opcode::Nak,
            solicited: false,
            dest_conn: conn.peer_conn,
            ack_req: false,
            psn: fsn,
        };
        let frame = self.build(
            &conn,
            trigger.udp.src_port,
            bth,
            TransportRepr::Nak(nak),
            &[],
        );
        self.count(Counter::TxNaks);
        self.emit_frame(port, frame);
    }
}
