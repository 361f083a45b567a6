//! The TX frame builder under Verilator: a request and a payload in, the frame out with its
//! port (`m_tdest`, which must not change within a frame).

use super::{Port, Rtl, RtlError};
use crate::rng::Rng;
use ferroce_proto::model::PortFrame;

/// Everything a frame is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxRequest {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// 802.1Q TCI, if tagged.
    pub vlan_tci: Option<u16>,
    /// IPv6 (else IPv4).
    pub ipv6: bool,
    /// Source IP (IPv4-mapped for IPv4).
    pub src_ip: [u8; 16],
    /// Destination IP (IPv4-mapped for IPv4).
    pub dst_ip: [u8; 16],
    /// DSCP.
    pub dscp: u8,
    /// ECN.
    pub ecn: u8,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// BTH opcode.
    pub opcode: u8,
    /// Solicited bit.
    pub solicited: bool,
    /// Destination connection.
    pub dest_conn: u32,
    /// AckReq bit.
    pub ack_req: bool,
    /// PSN.
    pub psn: u32,
    /// Transport header bytes (at most 48).
    pub th: Vec<u8>,
    /// Payload.
    pub payload: Vec<u8>,
    /// The MAC port the frame leaves on.
    pub port: u8,
}

struct Ports {
    clock: Port,
    reset: Port,
    valid: Port,
    ready: Port,
    fields: Vec<(&'static str, Port)>,
    pay_data: Port,
    pay_valid: Port,
    pay_ready: Port,
    data: Port,
    keep: Port,
    out_valid: Port,
    last: Port,
    dest: Port,
    out_ready: Port,
}

/// The verilated TX frame builder.
pub struct RtlTxFrame {
    rtl: Rtl,
    p: Ports,
    cycles: u64,
    gaps: u64,
}

fn be_words(bytes: &[u8], width_bits: usize) -> Vec<u32> {
    // Big-endian bytes of a `width_bits` port, as little-endian 32-bit words.
    let n = width_bits / 8;
    let mut padded = vec![0u8; n];
    padded[..bytes.len().min(n)].copy_from_slice(&bytes[..bytes.len().min(n)]);
    let le: Vec<u8> = padded.into_iter().rev().collect();
    le.chunks(4)
        .map(|c| c.iter().rev().fold(0u32, |a, &b| (a << 8) | b as u32))
        .collect()
}

impl RtlTxFrame {
    /// A reset builder.
    pub fn new() -> Result<Self, RtlError> {
        let rtl = Rtl::new("tx_frame")?;
        let i = |n: &str| rtl.port(n, true);
        let o = |n: &str| rtl.port(n, false);
        let names = [
            "req_dst_mac",
            "req_src_mac",
            "req_vlan",
            "req_vlan_tci",
            "req_ipv6",
            "req_src_ip",
            "req_dst_ip",
            "req_dscp",
            "req_ecn",
            "req_src_port",
            "req_dst_port",
            "req_opcode",
            "req_solicited",
            "req_dest_conn",
            "req_ack_req",
            "req_psn",
            "req_th",
            "req_th_len",
            "req_payload_len",
            "req_port",
        ];
        let mut fields = Vec::new();
        for n in names {
            fields.push((n, i(n)?));
        }
        let p = Ports {
            clock: i("clock")?,
            reset: i("reset")?,
            valid: i("req_valid")?,
            ready: o("req_ready")?,
            fields,
            pay_data: i("s_pay_tdata")?,
            pay_valid: i("s_pay_tvalid")?,
            pay_ready: o("s_pay_tready")?,
            data: o("m_tdata")?,
            keep: o("m_tkeep")?,
            out_valid: o("m_tvalid")?,
            last: o("m_tlast")?,
            dest: o("m_tdest")?,
            out_ready: i("m_tready")?,
        };
        let mut me = RtlTxFrame {
            rtl,
            p,
            cycles: 0,
            gaps: 0,
        };
        me.rtl.set_u64(me.p.reset, 1);
        // Settle with the clock low first: Verilator sees no edge on a model's first
        // evaluation, so the reset would reach no register, and a reset value other than the
        // registers' initial zero would be lost.
        me.rtl.eval();
        me.edge();
        me.rtl.set_u64(me.p.reset, 0);
        Ok(me)
    }

    /// Cycles simulated so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// Cycles of the last burst, between its first output beat and its last, in which no beat
    /// left: with neither payload nor output stalled, the builder promises none.
    pub fn last_burst_gaps(&self) -> u64 {
        self.gaps
    }

    fn edge(&mut self) {
        self.rtl.set_u64(self.p.clock, 1);
        self.rtl.eval();
        self.cycles += 1;
        self.rtl.set_u64(self.p.clock, 0);
        self.rtl.eval();
    }

    fn field(&self, name: &str) -> Port {
        self.p
            .fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| *p)
            .expect("port")
    }

    /// Builds one frame. `stall` (if given) randomly withholds payload beats and output
    /// readiness to exercise back-pressure.
    pub fn build(&mut self, req: &TxRequest, stall: Option<&mut Rng>) -> PortFrame {
        self.build_burst(core::slice::from_ref(req), stall)
            .pop()
            .expect("one frame")
    }

    /// Builds `reqs` back to back: each request is offered as soon as the builder takes the
    /// one before, and the payloads follow one another on the payload stream. Returns the
    /// frames with their ports in order. `stall` as in [`RtlTxFrame::build`].
    pub fn build_burst(
        &mut self,
        reqs: &[TxRequest],
        mut stall: Option<&mut Rng>,
    ) -> Vec<PortFrame> {
        let beats: Vec<u64> = reqs
            .iter()
            .flat_map(|r| {
                r.payload.chunks(8).map(|c| {
                    let mut l = [0u8; 8];
                    l[..c.len()].copy_from_slice(c);
                    u64::from_le_bytes(l)
                })
            })
            .collect();
        let mut offered = 0;
        let mut next = 0;
        let mut frames = Vec::new();
        let mut cur = Vec::new();
        let mut cur_port = None;
        let mut started = false;
        let mut idle = 0;
        self.gaps = 0;
        for _ in 0..100_000 * reqs.len().max(1) {
            if frames.len() == reqs.len() {
                return frames;
            }
            if let Some(req) = reqs.get(offered) {
                self.offer(req);
            }
            self.rtl
                .set_u64(self.p.valid, (offered < reqs.len()) as u64);
            let hold = stall.as_deref_mut().is_some_and(|r| r.below(4) == 0);
            let block = stall.as_deref_mut().is_some_and(|r| r.below(4) == 0);
            self.rtl
                .set_u64(self.p.pay_data, beats.get(next).copied().unwrap_or(0));
            self.rtl
                .set_u64(self.p.pay_valid, (next < beats.len() && !hold) as u64);
            self.rtl.set_u64(self.p.out_ready, !block as u64);
            self.rtl.eval();
            let took_req = offered < reqs.len() && self.rtl.get_u64(self.p.ready) == 1;
            let took_pay = self.rtl.get_u64(self.p.pay_ready) == 1 && next < beats.len() && !hold;
            let beat_out = self.rtl.get_u64(self.p.out_valid) == 1 && !block;
            if started && !beat_out {
                idle += 1;
            }
            if beat_out {
                started = true;
                self.gaps += idle;
                idle = 0;
                let data = self.rtl.get_u64(self.p.data).to_le_bytes();
                let keep = self.rtl.get_u64(self.p.keep) as u8;
                let port = self.rtl.get_u64(self.p.dest) as u8;
                let first = *cur_port.get_or_insert(port);
                assert_eq!(
                    port, first,
                    "m_tdest changed from {first} to {port} within a frame"
                );
                cur.extend((0..8).filter(|i| keep >> i & 1 == 1).map(|i| data[i]));
                if self.rtl.get_u64(self.p.last) == 1 {
                    frames.push(PortFrame {
                        port,
                        bytes: core::mem::take(&mut cur),
                    });
                    cur_port = None;
                }
            }
            self.edge();
            offered += took_req as usize;
            next += took_pay as usize;
        }
        self.rtl.set_u64(self.p.valid, 0);
        panic!("only {} of {} frames complete", frames.len(), reqs.len());
    }

    /// Drives the request fields of `req`.
    fn offer(&mut self, req: &TxRequest) {
        let mac = |m: &[u8; 6]| m.iter().fold(0u64, |a, &b| (a << 8) | b as u64);
        let set = |me: &mut Self, name: &str, v: u64| {
            let p = me.field(name);
            me.rtl.set_u64(p, v);
        };
        set(self, "req_dst_mac", mac(&req.dst_mac));
        set(self, "req_src_mac", mac(&req.src_mac));
        set(self, "req_vlan", req.vlan_tci.is_some() as u64);
        set(self, "req_vlan_tci", req.vlan_tci.unwrap_or(0) as u64);
        set(self, "req_ipv6", req.ipv6 as u64);
        for (name, ip) in [("req_src_ip", &req.src_ip), ("req_dst_ip", &req.dst_ip)] {
            let p = self.field(name);
            self.rtl.set(p, &be_words(ip, 128));
        }
        set(self, "req_dscp", req.dscp as u64);
        set(self, "req_ecn", req.ecn as u64);
        set(self, "req_src_port", req.src_port as u64);
        set(self, "req_dst_port", req.dst_port as u64);
        set(self, "req_opcode", req.opcode as u64);
        set(self, "req_solicited", req.solicited as u64);
        set(self, "req_dest_conn", req.dest_conn as u64);
        set(self, "req_ack_req", req.ack_req as u64);
        set(self, "req_psn", req.psn as u64);
        let th = self.field("req_th");
        self.rtl.set(th, &be_words(&req.th, 384));
        set(self, "req_th_len", req.th.len() as u64);
        set(self, "req_payload_len", req.payload.len() as u64);
        set(self, "req_port", req.port as u64);
    }
}
