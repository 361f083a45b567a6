//! The RoCEv2 invariant CRC, computed as Linux rxe (`rxe_icrc.c`) and Scapy compute it.
//!
//! CRC-32 (IEEE 802.3, reflected) over: 8 bytes of 0xFF standing for the masked InfiniBand LRH,
//! the IP header with its variant fields set to ones (IPv4: TOS, TTL, header checksum; IPv6:
//! traffic class, flow label, hop limit), the UDP header with the checksum set to ones, the BTH
//! with byte 4 (FECN, BECN, reserved) set to ones, then everything after the BTH up to the ICRC.
//! The CRC value is written least significant byte first.

use super::ip::{IPV4_HEADER_LEN, IPV6_HEADER_LEN};

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// The bytes the ICRC treats as all ones, as (offset from the start of the IP header, bits):
/// IPv4 TOS, TTL and header checksum; IPv6 traffic class, flow label and hop limit; the UDP
/// checksum; BTH byte 4 (FECN, BECN, reserved). The RTL builds its masks from this table.
pub fn variant_fields(is_ipv6: bool) -> &'static [(usize, u8)] {
    const V4: &[(usize, u8)] = &[
        (1, 0xff),
        (8, 0xff),
        (10, 0xff),
        (11, 0xff),
        (IPV4_HEADER_LEN + 6, 0xff),
        (IPV4_HEADER_LEN + 7, 0xff),
        (IPV4_HEADER_LEN + 8 + 4, 0xff),
    ];
    const V6: &[(usize, u8)] = &[
        (0, 0x0f),
        (1, 0xff),
        (2, 0xff),
        (3, 0xff),
        (7, 0xff),
        (IPV6_HEADER_LEN + 6, 0xff),
        (IPV6_HEADER_LEN + 7, 0xff),
        (IPV6_HEADER_LEN + 8 + 4, 0xff),
    ];
    if is_ipv6 { V6 } else { V4 }
}

/// Computes the ICRC of a frame's IP packet. `ip_packet` starts at the IP header and ends just
/// before the ICRC; `is_ipv6` selects the masking. The caller has checked that the buffer holds
/// the IP, UDP and BTH headers.
pub fn compute(ip_packet: &[u8], is_ipv6: bool) -> [u8; ICRC_LEN] {
    compute_parts(ip_packet, &[], is_ipv6)
}

/// [`compute`] over an IP packet held in two pieces, `head` then `rest` (a frame whose payload
/// is kept apart from its headers, see [`super::split::SplitFrame`]): the CRC runs over the
/// bytes in order, so the result is that of `compute` over their concatenation. `head` holds
/// at least the IP, UDP and BTH headers.
pub fn compute_parts(head: &[u8], rest: &[u8], is_ipv6: bool) -> [u8; ICRC_LEN] {
    let ip_packet = head;
    let ip_len = if is_ipv6 {
        IPV6_HEADER_LEN
    } else {
        IPV4_HEADER_LEN
    };
    // IP + UDP + BTH, the part with variant fields.
    let mut masked = [0u8; IPV6_HEADER_LEN + 8 + 12];
    let head_len = ip_len + 8 + 12;
    let masked = &mut masked[..head_len];
    masked.copy_from_slice(&ip_packet[..head_len]);
    for &(at, bits) in variant_fields(is_ipv6) {
        masked[at] |= bits;
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xff; 8]);
    h.update(masked);
    h.update(&ip_packet[head_len..]);
    h.update(rest);
    h.finalize().to_le_bytes()
}
