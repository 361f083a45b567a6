//! A packet in the fabric: the frame (ferroce: the exact bytes the NIC emitted) or an abstract
//! RoCEv2 packet (baseline), with everything a switch needs cached at the sending host so no
//! hop re-parses the frame: destination host, 5-tuple hash, size on the wire, ECN capability.

use crate::link::{entropy, mark_ce};
use crate::roce::RocePacket;
use ferroce_proto::wire::ip::{ECN_CE, IPV4_HEADER_LEN};
use ferroce_proto::wire::{EthernetRepr, FrameBuf, SplitFrame};
use std::borrow::Cow;

/// Bytes a frame costs on the wire beyond the frame the NIC builds: preamble and start
/// delimiter (8), frame check sequence (4), minimum inter-frame gap (12).
pub const WIRE_OVERHEAD: u32 = 24;

/// A ferroce frame (Ethernet onwards, without FCS) with what is known of its ICRC.
///
/// A frame straight from a NIC that computes the ICRC over the frame it builds (the model) is
/// *sealed*: its trailer is the ICRC of its bytes, so the receiving model need not compute it
/// again. The bytes can only be changed through [`WireFrame::bytes_mut`], which breaks the
/// seal, or by [`WireFrame::mark_ce`], which changes only fields the ICRC masks (ECN and the
/// IPv4 header checksum) and so keeps it.
///
/// A data frame from the model whose payload the sender's memory shared is *split*: headers
/// and the payload by reference ([`SplitFrame`]), so the fabric moves the headers only and the
/// receiving model copies the payload once, into its memory. A split frame is sealed by
/// construction (its ICRC is computed over its bytes whenever the whole frame is asked for).
#[derive(Debug, Clone)]
pub struct WireFrame {
    repr: Repr,
}

/// What a [`WireFrame`] holds; two words and a flag, as a whole frame alone did, since
/// packets move through the event queue and the ports many times each.
#[derive(Debug, Clone)]
enum Repr {
    Whole { bytes: Vec<u8>, icrc_sealed: bool },
    Split(Box<SplitFrame>),
}

impl WireFrame {
    /// A frame of unknown provenance: its receiver checks the ICRC.
    pub fn new(bytes: Vec<u8>) -> Self {
        Self::from_nic(bytes, false)
    }

    /// A frame as a NIC transmitted it, sealed when that NIC's frames carry the ICRC of their
    /// own bytes by construction (`transmits_valid_icrc`, see [`ferroce_driver::SimPort`]).
    pub fn from_nic(bytes: Vec<u8>, transmits_valid_icrc: bool) -> Self {
        WireFrame {
            repr: Repr::Whole {
                bytes,
                icrc_sealed: transmits_valid_icrc,
            },
        }
    }

    /// A frame as a NIC built it ([`ferroce_driver::SimPort::transmit_frame_buf`]): a whole
    /// one as [`WireFrame::from_nic`], a split one as it is (sealed).
    pub fn from_nic_buf(frame: FrameBuf, transmits_valid_icrc: bool) -> Self {
        match frame {
            FrameBuf::Whole(bytes) => Self::from_nic(bytes, transmits_valid_icrc),
            FrameBuf::Split(s) => WireFrame {
                repr: Repr::Split(s),
            },
        }
    }

    /// The bytes of the whole frame (a split frame's are put together, ICRC computed).
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        match &self.repr {
            Repr::Whole { bytes, .. } => Cow::Borrowed(bytes),
            Repr::Split(s) => Cow::Owned(s.to_bytes()),
        }
    }

    /// The bytes up to the payload at least (all of a whole frame): every header.
    pub fn head(&self) -> &[u8] {
        match &self.repr {
            Repr::Whole { bytes, .. } => bytes,
            Repr::Split(s) => s.head(),
        }
    }

    /// Length of the whole frame.
    pub fn frame_len(&self) -> usize {
        match &self.repr {
            Repr::Whole { bytes, .. } => bytes.len(),
            Repr::Split(s) => s.frame_len(),
        }
    }

    /// The frame as headers and a payload by reference, if it is held that way.
    pub fn split(&self) -> Option<&SplitFrame> {
        match &self.repr {
            Repr::Split(s) => Some(s),
            Repr::Whole { .. } => None,
        }
    }

    /// The bytes, to change: the ICRC is no longer known to match them. A split frame is put
    /// together first, with the ICRC of its bytes as they are (those the NIC built, or a CE
    /// mark on them: the same ICRC).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let bytes = match std::mem::replace(
            &mut self.repr,
            Repr::Whole {
                bytes: Vec::new(),
                icrc_sealed: false,
            },
        ) {
            Repr::Whole { bytes, .. } => bytes,
            Repr::Split(s) => s.to_bytes(),
        };
        self.repr = Repr::Whole {
            bytes,
            icrc_sealed: false,
        };
        match &mut self.repr {
            Repr::Whole { bytes, .. } => bytes,
            // Made whole just above.
            Repr::Split(_) => &mut [],
        }
    }

    /// Whether the trailer is known to be the ICRC of these bytes.
    pub fn icrc_sealed(&self) -> bool {
        match &self.repr {
            Repr::Whole { icrc_sealed, .. } => *icrc_sealed,
            // Its ICRC is computed over its bytes whenever it is asked for.
            Repr::Split(_) => true,
        }
    }

    /// Sets CE (see [`crate::link::mark_ce`]): only the ECN bits and the IPv4 header checksum
    /// change, both masked by the ICRC, so the seal holds. A split frame's IP header is in its
    /// head.
    pub fn mark_ce(&mut self) -> bool {
        match &mut self.repr {
            Repr::Whole { bytes, .. } => mark_ce(bytes),
            Repr::Split(s) => mark_ce(s.head_mut()),
        }
    }
}

/// What the packet carries.
#[derive(Debug, Clone)]
pub enum Body {
    /// A ferroce frame.
    Frame(WireFrame),
    /// A baseline RoCEv2 packet, modelled by its header fields only.
    Roce(RocePacket),
}

/// One packet in flight.
#[derive(Debug, Clone)]
pub struct Packet {
    /// Sending host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Hash of the 5-tuple (IP addresses, UDP ports, protocol), before a switch's salt.
    pub hash: u32,
    /// UDP source port (the path entropy).
    pub entropy: u16,
    /// Bytes on the wire, overhead included (what serialisation time is computed from).
    pub wire_len: u32,
    /// ECT(0)/ECT(1): a switch may mark it instead of dropping.
    pub ecn_capable: bool,
    /// CE-marked by a switch.
    pub ce: bool,
    /// Control packet (ACK, NAK, CNP, CM): the target of ACK-only loss.
    pub control: bool,
    /// The contents.
    pub body: Body,
}

/// The 5-tuple hash: the murmur3 finaliser over the packed fields.
pub fn five_tuple_hash(src_ip: u32, dst_ip: u32, sport: u16, dport: u16) -> u32 {
    let mut h = src_ip.wrapping_mul(0x9e37_79b1) ^ dst_ip.rotate_left(13);
    h ^= ((sport as u32) << 16 | dport as u32).wrapping_mul(0x85eb_ca6b);
    h ^= 17;
    mix(h)
}

/// The murmur3 32-bit finaliser.
pub fn mix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// Facts about a ferroce frame read once at the sending host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// Destination IPv4 address.
    pub dst_ip: u32,
    /// 5-tuple hash.
    pub hash: u32,
    /// UDP source port.
    pub entropy: u16,
    /// ECN-capable transport.
    pub ecn_capable: bool,
    /// Not a data packet (ACK, NAK, CM).
    pub control: bool,
}

/// Reads a frame's addresses, ports and ECN field (IPv4 only: the fabric addresses hosts by
/// IPv4). `None` for anything else.
pub fn frame_info(frame: &[u8]) -> Option<FrameInfo> {
    let eth = EthernetRepr::parse(frame).ok()?;
    let at = eth.header_len();
    // IPv4 without options, UDP, and at least the BTH opcode byte.
    if frame.len() < at + IPV4_HEADER_LEN + 9 || frame[at] != 0x45 {
        return None;
    }
    let ip = |o: usize| u32::from_be_bytes([frame[o], frame[o + 1], frame[o + 2], frame[o + 3]]);
    let (src_ip, dst_ip) = (ip(at + 12), ip(at + 16));
    let udp = at + IPV4_HEADER_LEN;
    let sport = entropy(frame)?;
    let dport = u16::from_be_bytes([frame[udp + 2], frame[udp + 3]]);
    let ecn = frame[at + 1] & 3;
    Some(FrameInfo {
        dst_ip,
        hash: five_tuple_hash(src_ip, dst_ip, sport, dport),
        entropy: sport,
        ecn_capable: ecn != 0,
        // Data: Send, SendImm, Write, WriteImm (BTH opcodes 0xC0..=0xC3); the rest (ACK, NAK,
        // CM) is control.
        control: !(0xC0..=0xC3).contains(&frame[udp + 8]),
    })
}

impl Packet {
    /// Marks CE (switch congestion): sets the bit in the frame too (fixing the IPv4 header
    /// checksum), so the receiving NIC sees exactly what a real switch would leave.
    pub fn mark_ce(&mut self) -> bool {
        if !self.ecn_capable || self.ce {
            return false;
        }
        self.ce = true;
        if let Body::Frame(f) = &mut self.body {
            f.mark_ce();
        }
        true
    }
}

/// Whether the ECN field of an IPv4 frame is CE (for tests).
pub fn frame_is_ce(frame: &[u8]) -> bool {
    EthernetRepr::parse(frame)
        .ok()
        .and_then(|e| frame.get(e.header_len() + 1))
        .is_some_and(|b| b & 3 == ECN_CE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroce_proto::wire::{
        BthRepr, DataRepr, EthernetAddress, FrameRepr, IpRepr, Ipv4Repr, Opcode, ROCEV2_UDP_PORT,
        SharedBytes, TransportRepr, ip::ECN_ECT0, parse_frame,
    };

    fn data_frame() -> Vec<u8> {
        data_repr(&[0x5a; 64]).emit()
    }

    fn data_repr(payload: &[u8]) -> FrameRepr<'_> {
        FrameRepr {
            eth: EthernetRepr {
                dst: EthernetAddress([2, 0, 0, 0, 0, 2]),
                src: EthernetAddress([2, 0, 0, 0, 0, 1]),
                vlan_tci: None,
                ethertype: 0,
            },
            ip: IpRepr::V4(Ipv4Repr {
                src: [10, 0, 0, 1].into(),
                dst: [10, 0, 0, 2].into(),
                dscp: 0,
                ecn: ECN_ECT0,
                ttl: 64,
                ident: 0,
                payload_len: 0,
            }),
            src_port: 49152,
            dst_port: ROCEV2_UDP_PORT,
            bth: BthRepr {
                opcode: Opcode::Send,
                solicited: false,
                dest_conn: 3,
                ack_req: false,
                psn: 7,
            },
            transport: TransportRepr::Data(DataRepr {
                flow: 0,
                tag: 0,
                msn: 0,
                ssn: 0,
                offset: 0,
                msg_len: 64,
                timestamp: 0,
                reth: None,
                imm: None,
            }),
            payload,
        }
    }

    #[test]
    fn a_ce_mark_keeps_the_seal_and_the_icrc_valid_and_other_changes_break_it() {
        let mut f = WireFrame::from_nic(data_frame(), true);
        assert!(f.icrc_sealed());
        assert!(f.mark_ce());
        assert!(frame_is_ce(&f.bytes()));
        assert!(f.icrc_sealed());
        assert!(
            parse_frame(&f.bytes(), ROCEV2_UDP_PORT).is_ok(),
            "the ICRC masks the ECN bits and the IPv4 checksum"
        );
        let last = f.bytes().len() - 1;
        f.bytes_mut()[last] ^= 1;
        assert!(!f.icrc_sealed());
        assert!(!WireFrame::new(data_frame()).icrc_sealed());
        assert!(!WireFrame::from_nic(data_frame(), false).icrc_sealed());
    }

    #[test]
    fn a_split_frame_is_the_whole_frame_to_the_fabric() {
        let payload: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        let whole = data_repr(&payload).emit();
        let split = || {
            let frame = FrameBuf::emit(&data_repr(&[]), SharedBytes::from_vec(payload.clone()));
            assert!(matches!(frame, FrameBuf::Split(_)));
            WireFrame::from_nic_buf(frame, false)
        };
        let mut s = split();
        assert!(s.split().is_some() && s.icrc_sealed());
        assert_eq!(s.bytes(), &whole[..]);
        assert_eq!(s.frame_len(), whole.len());
        // What the sending host and the switches read and change is in the head.
        assert_eq!(frame_info(s.head()), frame_info(&whole));
        assert!(frame_info(s.head()).is_some());
        let mut w = WireFrame::from_nic(whole.clone(), true);
        assert!(s.mark_ce() && w.mark_ce());
        assert!(!s.mark_ce() && !w.mark_ce());
        assert_eq!(s.bytes(), w.bytes());
        assert!(s.icrc_sealed());
        // Changing its bytes makes it whole, unsealed, with the ICRC the NIC built.
        let mut t = split();
        t.mark_ce();
        let last = t.frame_len() - 1;
        t.bytes_mut()[last] ^= 1;
        assert!(t.split().is_none() && !t.icrc_sealed());
        let mut expected = w.bytes().into_owned();
        expected[last] ^= 1;
        assert_eq!(t.bytes(), &expected[..]);
        assert!(parse_frame(&w.bytes(), ROCEV2_UDP_PORT).is_ok());
    }

    #[test]
    fn a_packet_moves_in_as_few_words_as_before() {
        // Packets move through the event queue and the ports many times: a split frame is
        // boxed so that a packet stays the size a whole frame gave it.
        assert!(std::mem::size_of::<WireFrame>() <= 32);
        assert!(std::mem::size_of::<Packet>() <= 56);
    }
}
