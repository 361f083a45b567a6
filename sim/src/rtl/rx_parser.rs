//! The RX parser block under Verilator: frames in, one verdict per frame out.
//!
//! Each frame comes in on a port (`s_tid`: the frames sent so far, modulo the eight ports
//! `PORT_BITS` can name); the harness checks that every verdict carries the port of its frame
//! (`out_port`).

use super::{Port, Rtl, RtlError};
use ferroce_proto::hsi::regs::MAX_PORTS;
use ferroce_proto::wire::ParseError;
use std::collections::VecDeque;

/// What the parser extracted from an accepted frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedFields {
    /// Frame length in bytes.
    pub frame_len: u16,
    /// VLAN TCI when tagged.
    pub vlan_tci: Option<u16>,
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// IPv6 (else IPv4).
    pub ipv6: bool,
    /// Source IP (IPv4-mapped for IPv4).
    pub src_ip: [u8; 16],
    /// Destination IP (IPv4-mapped for IPv4).
    pub dst_ip: [u8; 16],
    /// ECN codepoint.
    pub ecn: u8,
    /// UDP source port.
    pub src_port: u16,
    /// BTH opcode.
    pub opcode: u8,
    /// Solicited bit.
    pub solicited: bool,
    /// AckReq bit.
    pub ack_req: bool,
    /// Destination connection.
    pub dest_conn: u32,
    /// PSN / FSN.
    pub psn: u32,
    /// The 48 bytes after the BTH.
    pub th: [u8; 48],
    /// Payload offset in the frame.
    pub payload_offset: u16,
    /// Payload length.
    pub payload_len: u16,
}

/// The parser's verdict on one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParserVerdict {
    /// Accepted, with its fields.
    Accepted(Box<ParsedFields>),
    /// Rejected.
    Rejected(ParseError),
    /// An error code the specification does not define (an RTL bug).
    BadCode(u8),
}

struct Ports {
    clock: Port,
    reset: Port,
    tdata: Port,
    tkeep: Port,
    tvalid: Port,
    tlast: Port,
    tid: Port,
    udp_port: Port,
    valid: Port,
    error: Port,
    frame_len: Port,
    vlan: Port,
    tci: Port,
    smac: Port,
    ipv6: Port,
    sip: Port,
    dip: Port,
    ecn: Port,
    sport: Port,
    opcode: Port,
    se: Port,
    ackreq: Port,
    conn: Port,
    psn: Port,
    th: Port,
    poff: Port,
    plen: Port,
    port: Port,
}

/// The verilated RX parser.
pub struct RtlParser {
    rtl: Rtl,
    p: Ports,
    cycles: u64,
    /// Frames sent so far (their ports follow from it).
    sent: u64,
    /// The ports of the frames sent whose verdicts are still due.
    due_ports: VecDeque<u8>,
}

impl RtlParser {
    /// A parser model, reset, listening on `udp_port`.
    pub fn new(udp_port: u16) -> Result<Self, RtlError> {
        let rtl = Rtl::new("rx_parser")?;
        let i = |n: &str| rtl.port(n, true);
        let o = |n: &str| rtl.port(n, false);
        let p = Ports {
            clock: i("clock")?,
            reset: i("reset")?,
            tdata: i("s_tdata")?,
            tkeep: i("s_tkeep")?,
            tvalid: i("s_tvalid")?,
            tlast: i("s_tlast")?,
            tid: i("s_tid")?,
            udp_port: i("udp_port")?,
            valid: o("out_valid")?,
            error: o("out_error")?,
            frame_len: o("out_frame_len")?,
            vlan: o("out_vlan")?,
            tci: o("out_vlan_tci")?,
            smac: o("out_src_mac")?,
            ipv6: o("out_ipv6")?,
            sip: o("out_src_ip")?,
            dip: o("out_dst_ip")?,
            ecn: o("out_ecn")?,
            sport: o("out_src_port")?,
            opcode: o("out_opcode")?,
            se: o("out_solicited")?,
            ackreq: o("out_ack_req")?,
            conn: o("out_dest_conn")?,
            psn: o("out_psn")?,
            th: o("out_th")?,
            poff: o("out_payload_offset")?,
            plen: o("out_payload_len")?,
            port: o("out_port")?,
        };
        let mut me = RtlParser {
            rtl,
            p,
            cycles: 0,
            sent: 0,
            due_ports: VecDeque::new(),
        };
        me.rtl.set_u64(me.p.udp_port, udp_port as u64);
        me.rtl.set_u64(me.p.reset, 1);
        for _ in 0..2 {
            me.tick(&mut Vec::new());
        }
        me.rtl.set_u64(me.p.reset, 0);
        Ok(me)
    }

    /// Clock cycles simulated so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// One rising edge; collects a verdict if one is presented after it.
    fn tick(&mut self, out: &mut Vec<ParserVerdict>) {
        self.rtl.set_u64(self.p.clock, 1);
        self.rtl.eval();
        self.cycles += 1;
        if self.rtl.get_u64(self.p.valid) == 1 {
            let port = self.rtl.get_u64(self.p.port) as u8;
            let want = self.due_ports.pop_front();
            assert_eq!(
                Some(port),
                want,
                "verdict {} carries port {port}",
                out.len()
            );
            out.push(self.read_verdict());
        }
        self.rtl.set_u64(self.p.clock, 0);
        self.rtl.eval();
    }

    fn read_verdict(&mut self) -> ParserVerdict {
        let code = self.rtl.get_u64(self.p.error) as u8;
        if code != 0 {
            return ParseError::from_code(code)
                .map_or(ParserVerdict::BadCode(code), ParserVerdict::Rejected);
        }
        let r = &mut self.rtl;
        let ip =
            |r: &mut Rtl, p: Port| -> [u8; 16] { r.get_be_bytes(p).try_into().unwrap_or([0; 16]) };
        let mac = r.get_be_bytes(self.p.smac);
        let th = r.get_be_bytes(self.p.th);
        let fields = ParsedFields {
            frame_len: r.get_u64(self.p.frame_len) as u16,
            vlan_tci: (r.get_u64(self.p.vlan) == 1).then(|| r.get_u64(self.p.tci) as u16),
            src_mac: mac.try_into().unwrap_or([0; 6]),
            ipv6: r.get_u64(self.p.ipv6) == 1,
            src_ip: ip(r, self.p.sip),
            dst_ip: ip(r, self.p.dip),
            ecn: r.get_u64(self.p.ecn) as u8,
            src_port: r.get_u64(self.p.sport) as u16,
            opcode: r.get_u64(self.p.opcode) as u8,
            solicited: r.get_u64(self.p.se) == 1,
            ack_req: r.get_u64(self.p.ackreq) == 1,
            dest_conn: r.get_u64(self.p.conn) as u32,
            psn: r.get_u64(self.p.psn) as u32,
            th: th.try_into().unwrap_or([0; 48]),
            payload_offset: r.get_u64(self.p.poff) as u16,
            payload_len: r.get_u64(self.p.plen) as u16,
        };
        ParserVerdict::Accepted(Box::new(fields))
    }

    /// Streams `frames` back to back (with `gap` idle cycles between them) and returns one
    /// verdict per frame, in order. Empty frames cannot be sent on AXI4-Stream and are skipped.
    pub fn run(&mut self, frames: &[Vec<u8>], gap: usize) -> Vec<ParserVerdict> {
        let mut out = Vec::new();
        for frame in frames.iter().filter(|f| !f.is_empty()) {
            let beats = frame.len().div_ceil(8);
            let port = (self.sent % MAX_PORTS as u64) as u8;
            self.sent += 1;
            self.due_ports.push_back(port);
            self.rtl.set_u64(self.p.tid, port as u64);
            for (b, chunk) in frame.chunks(8).enumerate() {
                let mut lanes = [0u8; 8];
                lanes[..chunk.len()].copy_from_slice(chunk);
                self.rtl.set_u64(self.p.tdata, u64::from_le_bytes(lanes));
                self.rtl.set_u64(self.p.tkeep, (1u64 << chunk.len()) - 1);
                self.rtl.set_u64(self.p.tvalid, 1);
                self.rtl.set_u64(self.p.tlast, (b + 1 == beats) as u64);
                self.tick(&mut out);
            }
            self.rtl.set_u64(self.p.tvalid, 0);
            self.rtl.set_u64(self.p.tlast, 0);
            for _ in 0..gap {
                self.tick(&mut out);
            }
        }
        for _ in 0..4 {
            self.tick(&mut out);
        }
        out
    }
}
