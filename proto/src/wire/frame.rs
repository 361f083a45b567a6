//! Whole frames: the one parse order shared by the model and the RTL, and frame emission.

use super::{
    ParseError,
    bth::{self, BthPacket, BthRepr},
    ethernet::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, EthernetRepr},
    icrc::{self, ICRC_LEN},
    ip::{IpRepr, Ipv4Repr, Ipv6Repr},
    transport::TransportRepr,
    udp::{self, UdpRepr},
};

/// The fixed per-frame overhead below the ferroce transport headers (Ethernet + IPv4 + UDP +
/// BTH + ICRC): no valid frame is shorter.
pub const MIN_FRAME_LEN: usize = 14 + 20 + 8 + 12 + 4;

/// The longest frame the receive path takes (FCS not counted): a 9,216-byte jumbo frame, the
/// usual switch maximum. ferroce never sends a longer one (its largest, a
/// [`crate::hsi::MAX_PAYLOAD_LEN`] payload with every header, is under 8,400 bytes), and the
/// hardware buffers a frame whole before it decides about it, so a longer frame is dropped
/// ([`ParseError::TooLong`]) rather than held.
pub const MAX_FRAME_LEN: usize = 9216;

/// A parsed, validated frame borrowing its payload from the receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Ethernet header.
    pub eth: EthernetRepr,
    /// IP header.
    pub ip: IpRepr,
    /// UDP header.
    pub udp: UdpRepr,
    /// BTH.
    pub bth: BthRepr,
    /// ferroce transport headers.
    pub transport: TransportRepr,
    /// Payload (data packets only; empty otherwise).
    pub payload: &'a [u8],
    /// Offset of the payload within the frame.
    pub payload_offset: usize,
}

impl<'a> Frame<'a> {
    /// The frame as a [`FrameRepr`], to emit again with some field changed (lengths,
    /// checksums and ICRC are recomputed on emit).
    pub fn repr(&self) -> FrameRepr<'a> {
        FrameRepr {
            eth: self.eth,
            ip: self.ip,
            src_port: self.udp.src_port,
            dst_port: self.udp.dst_port,
            bth: self.bth,
            transport: self.transport,
            payload: self.payload,
        }
    }
}

/// Parses and validates a frame in the order the hardware does: Ethernet, IP (checksum), UDP
/// (port, length), BTH, transport headers (length), ICRC. Bytes after the IP packet (Ethernet
/// padding) are ignored, up to [`MAX_FRAME_LEN`] bytes in all. `udp_port` is the configured
/// RoCEv2 destination port.
pub fn parse_frame(frame: &[u8], udp_port: u16) -> Result<Frame<'_>, ParseError> {
    parse_frame_checking(frame, udp_port, IcrcCheck::Compute)
}

/// Whether [`parse_frame_checking`] computes the ICRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcrcCheck {
    /// Compute it over the frame and compare it with the trailer (what [`parse_frame`] does).
    Compute,
    /// The caller knows the trailer is the ICRC of these very bytes: the frame was built by
    /// [`FrameRepr::emit`] (which computes it over what it wrote) and nothing changed since
    /// but the fields the ICRC masks (ECN, TTL, checksums). Computing it again could only
    /// agree, so it is skipped: a simulator carrying the emitted buffer to the receiving
    /// model avoids a CRC pass per packet. Every other check runs as with `Compute`.
    KnownGood,
}

/// [`parse_frame`], with the ICRC computed or, for a frame whose ICRC is known to match its
/// bytes, not (see [`IcrcCheck::KnownGood`]).
pub fn parse_frame_checking(
    frame: &[u8],
    udp_port: u16,
    icrc_check: IcrcCheck,
) -> Result<Frame<'_>, ParseError> {
    if frame.len() > MAX_FRAME_LEN {
        return Err(ParseError::TooLong);
    }
    let eth = EthernetRepr::parse(frame)?;
    let l3 = &frame[eth.header_len()..];
    let (ip, ip_total) = match eth.ethertype {
        ETHERTYPE_IPV4 => {
            let r = Ipv4Repr::parse(l3)?;
            (IpRepr::V4(r), super::ip::IPV4_HEADER_LEN + r.payload_len)
        }
        ETHERTYPE_IPV6 => {
            let r = Ipv6Repr::parse(l3)?;
            (IpRepr::V6(r), super::ip::IPV6_HEADER_LEN + r.payload_len)
        }
        _ => return Err(ParseError::BadEtherType),
    };
    let ip_packet = &l3[..ip_total];
    let l4 = &ip_packet[ip.header_len()..];
    let udp = UdpRepr::parse(l4, udp_port)?;
    let l5 = &l4[udp::HEADER_LEN..];
    let bth_view = BthPacket::new_checked(l5)?;
    let bth = BthRepr::parse(&bth_view)?;
    let after_bth = &l5[bth::HEADER_LEN..];
    if after_bth.len() < ICRC_LEN {
        return Err(ParseError::Truncated);
    }
    let (body, icrc_bytes) = after_bth.split_at(after_bth.len() - ICRC_LEN);
    let (transport, hdr_len) = TransportRepr::parse(bth.opcode, body)?;
    let payload = &body[hdr_len..];
    if !bth.opcode.is_data() && !payload.is_empty() {
        return Err(ParseError::Truncated);
    }
    if icrc_check == IcrcCheck::Compute {
        let expected = icrc::compute(
            &ip_packet[..ip_packet.len() - ICRC_LEN],
            matches!(ip, IpRepr::V6(_)),
        );
        if icrc_bytes != expected {
            return Err(ParseError::BadIcrc);
        }
    }
    let payload_offset =
        eth.header_len() + ip.header_len() + udp::HEADER_LEN + bth::HEADER_LEN + hdr_len;
    Ok(Frame {
        eth,
        ip,
        udp,
        bth,
        transport,
        payload,
        payload_offset,
    })
}

/// Everything needed to build a frame; lengths and checksums are derived when emitting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRepr<'a> {
    /// Ethernet header.
    pub eth: EthernetRepr,
    /// IP header (its payload length is overwritten on emit).
    pub ip: IpRepr,
    /// UDP source port (entropy).
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// BTH (its opcode must match `transport`).
    pub bth: BthRepr,
    /// Transport headers.
    pub transport: TransportRepr,
    /// Payload bytes.
    pub payload: &'a [u8],
}

impl FrameRepr<'_> {
    /// Total frame length without Ethernet padding or FCS.
    pub fn frame_len(&self) -> usize {
        self.eth.header_len() + self.ip.header_len() + self.l4_len()
    }

    fn l4_len(&self) -> usize {
        udp::HEADER_LEN
            + bth::HEADER_LEN
            + self.transport.header_len()
            + self.payload.len()
            + ICRC_LEN
    }

    /// Builds the frame: headers, lengths, IPv4 checksum and ICRC. The payload must fit one
    /// jumbo frame (the transmit path bounds it by `hsi::MAX_PAYLOAD_LEN`).
    pub fn emit(&self) -> Vec<u8> {
        // Only the headers are zeroed before they are written: the payload and the ICRC are
        // appended (a data frame is mostly payload, and zeroing it first cost as much as
        // copying it).
        let mut out = Vec::with_capacity(self.frame_len());
        out.resize(self.head_len(), 0);
        self.emit_head(&mut out);
        out.extend_from_slice(self.payload);
        let crc = icrc::compute(
            &out[self.eth.header_len()..],
            matches!(self.ip, IpRepr::V6(_)),
        );
        out.extend_from_slice(&crc);
        out
    }

    /// Length of the bytes before the payload: every header.
    pub(crate) fn head_len(&self) -> usize {
        self.frame_len() - self.payload.len() - ICRC_LEN
    }

    /// Writes the bytes [`FrameRepr::emit`] writes before the payload (every header, with the
    /// lengths and checksums of the whole frame) into `out`, [`FrameRepr::head_len`] bytes
    /// long: `emit` appends the payload and the ICRC, a [`super::split::SplitFrame`] keeps
    /// them apart.
    pub(crate) fn emit_head(&self, out: &mut [u8]) {
        debug_assert!(self.l4_len() + super::ip::IPV6_HEADER_LEN <= u16::MAX as usize);
        debug_assert_eq!(out.len(), self.head_len());
        let mut ip = self.ip;
        ip.set_payload_len(self.l4_len());
        let mut eth = self.eth;
        eth.ethertype = match ip {
            IpRepr::V4(_) => ETHERTYPE_IPV4,
            IpRepr::V6(_) => ETHERTYPE_IPV6,
        };
        eth.emit(out);
        let l3 = eth.header_len();
        ip.emit(&mut out[l3..]);
        let l4 = l3 + ip.header_len();
        UdpRepr {
            src_port: self.src_port,
            dst_port: self.dst_port,
            payload_len: self.l4_len() - udp::HEADER_LEN,
        }
        .emit(&mut out[l4..]);
        let l5 = l4 + udp::HEADER_LEN;
        let mut bth = self.bth;
        bth.opcode = self.transport.opcode();
        bth.emit(&mut out[l5..]);
        let th = l5 + bth::HEADER_LEN;
        self.transport.emit(&mut out[th..]);
        debug_assert_eq!(th + self.transport.header_len(), out.len());
    }
}
