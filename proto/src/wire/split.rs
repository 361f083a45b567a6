//! Frames whose payload is carried by reference.
//!
//! A data frame is mostly payload. A simulator that copies every payload from the sender's
//! memory into the frame, moves the frame through its fabric and copies the payload again into
//! the receiver's memory spends most of its time moving bytes nobody looks at on the way. A
//! [`SplitFrame`] is the frame [`FrameRepr::emit`] builds, held as its headers plus the payload
//! by reference ([`SharedBytes`]): the payload is copied once, into the receiver's memory. The
//! whole frame, ICRC included, is there for anyone who asks ([`SplitFrame::to_bytes`]), byte
//! for byte what `emit` gives, and [`SplitFrame::parse_in`] parses exactly as
//! [`parse_frame_checking`] parses those bytes.

use super::{
    Frame, FrameRepr, IpRepr, ParseError,
    frame::{IcrcCheck, parse_frame_checking},
    icrc::{self, ICRC_LEN},
};
use core::ops::Range;
use std::sync::Arc;

/// A byte buffer that can be shared by reference: whatever holds bytes (a `Vec<u8>`, or a
/// simulated memory's allocation that goes back to a pool when the last reference goes).
pub type SharedBuf = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A range of a shared byte buffer that nobody changes while it is shared: payload bytes lent
/// by reference instead of copied.
///
/// The owner of the buffer (simulated host memory) writes it through [`Arc::make_mut`], which
/// copies the buffer first while it is shared, so the bytes stay those of the moment they were
/// lent, as if they had been copied then.
#[derive(Clone)]
pub struct SharedBytes {
    buf: SharedBuf,
    start: usize,
    end: usize,
}

impl SharedBytes {
    /// Bytes `range` of `buf`; `None` if the range is not inside it.
    pub fn new(buf: SharedBuf, range: Range<usize>) -> Option<Self> {
        if range.start > range.end || range.end > (*buf).as_ref().len() {
            return None;
        }
        Some(SharedBytes {
            buf,
            start: range.start,
            end: range.end,
        })
    }

    /// All of `bytes`, shared with nothing else yet.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        let end = bytes.len();
        SharedBytes {
            buf: Arc::new(bytes),
            start: 0,
            end,
        }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // The constructors checked the range and the buffer cannot change: never empty by
        // mistake.
        (*self.buf)
            .as_ref()
            .get(self.start..self.end)
            .unwrap_or_default()
    }

    /// How many bytes.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

impl core::fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The bytes themselves would swamp any debug output of a frame.
        write!(f, "SharedBytes({} bytes)", self.len())
    }
}

/// Room for the headers of a [`SplitFrame`]: more than the largest ferroce header stack
/// (Ethernet with an 802.1Q tag, IPv6, UDP, BTH and an ACK: 126 bytes).
pub const MAX_HEAD_LEN: usize = 128;

/// The frame [`FrameRepr::emit`] builds, held as the bytes before its payload (every header,
/// with the lengths and checksums of the whole frame) and the payload by reference. The ICRC
/// is computed when the whole frame is asked for, over the bytes as they are then.
#[derive(Debug, Clone)]
pub struct SplitFrame {
    /// The headers in `head[..head_len]`: in place, so that a frame costs one allocation
    /// (its box, see [`FrameBuf::Split`]) and the share of its payload.
    head: [u8; MAX_HEAD_LEN],
    head_len: u8,
    /// Where the IP header starts in the head, and whether it is IPv6: what the ICRC needs.
    l3: u8,
    ipv6: bool,
    payload: SharedBytes,
}

impl SplitFrame {
    /// `repr` with `payload` as its payload (`repr.payload` is not used): the frame that
    /// `FrameRepr { payload: payload.as_slice(), ..repr }.emit()` builds, without copying the
    /// payload or computing the ICRC. `None` when its headers do not fit [`MAX_HEAD_LEN`]
    /// (none of ferroce's do).
    pub fn emit(repr: &FrameRepr<'_>, payload: SharedBytes) -> Option<Self> {
        let full = FrameRepr {
            payload: payload.as_slice(),
            ..repr.clone()
        };
        let head_len = full.head_len();
        let mut head = [0u8; MAX_HEAD_LEN];
        full.emit_head(head.get_mut(..head_len)?);
        let (l3, ipv6) = (full.eth.header_len(), matches!(full.ip, IpRepr::V6(_)));
        Some(SplitFrame {
            head,
            head_len: u8::try_from(head_len).ok()?,
            l3: u8::try_from(l3).ok()?,
            ipv6,
            payload,
        })
    }

    /// The bytes before the payload: every header of the frame.
    pub fn head(&self) -> &[u8] {
        &self.head[..self.head_len as usize]
    }

    /// The headers, to change in place. The ICRC is computed over the bytes as they are when
    /// the whole frame is asked for, so a change stands for the frame the NIC built only in
    /// the fields the ICRC masks (ECN, TTL or hop limit, checksums): what a switch changes.
    pub fn head_mut(&mut self) -> &mut [u8] {
        &mut self.head[..self.head_len as usize]
    }

    /// The payload.
    pub fn payload(&self) -> &SharedBytes {
        &self.payload
    }

    /// Length of the whole frame, ICRC included.
    pub fn frame_len(&self) -> usize {
        self.head_len as usize + self.payload.len() + ICRC_LEN
    }

    /// The ICRC of the frame as it is.
    pub fn icrc(&self) -> [u8; ICRC_LEN] {
        // `emit` wrote the IP, UDP and BTH headers after `l3`, and the head never changes
        // length, so the slice holds what `compute_parts` needs.
        icrc::compute_parts(
            self.head().get(self.l3 as usize..).unwrap_or_default(),
            self.payload.as_slice(),
            self.ipv6,
        )
    }

    /// The whole frame: headers, payload, ICRC.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.frame_len());
        out.extend_from_slice(self.head());
        out.extend_from_slice(self.payload.as_slice());
        out.extend_from_slice(&self.icrc());
        out
    }

    /// Parses the frame: the result of [`parse_frame_checking`] over [`SplitFrame::to_bytes`]
    /// with [`IcrcCheck::KnownGood`] (the ICRC is that of the bytes by construction), the
    /// payload borrowed from the shared payload. `scratch` is a buffer kept from call to call;
    /// its contents do not matter.
    pub fn parse_in<'a>(
        &'a self,
        udp_port: u16,
        scratch: &'a mut Vec<u8>,
    ) -> Result<Frame<'a>, ParseError> {
        // With the ICRC known good the parser reads the headers and nothing after them: the
        // payload is only sliced and the trailer not read. A buffer of the frame's length
        // with the headers in place therefore parses as the frame does whenever the parser
        // finds the payload exactly where the head ends: every byte it read was a header
        // byte, at the same place, and every length the same. The rest of the buffer is
        // whatever an earlier frame left there, never zeroed (that would cost as much as the
        // copy this saves).
        let (len, head) = (self.frame_len(), self.head());
        if scratch.len() < len {
            scratch.resize(len, 0);
        }
        scratch[..head.len()].copy_from_slice(head);
        let parsed = parse_frame_checking(&scratch[..len], udp_port, IcrcCheck::KnownGood)
            .ok()
            .filter(|f| f.payload_offset == head.len() && f.payload.len() == self.payload.len());
        if let Some(f) = parsed {
            return Ok(Frame {
                eth: f.eth,
                ip: f.ip,
                udp: f.udp,
                bth: f.bth,
                transport: f.transport,
                payload: self.payload.as_slice(),
                payload_offset: f.payload_offset,
            });
        }
        // Anything else (an error, whose cause the parser may have read past the head, or
        // headers changed to other lengths): parse the whole frame.
        scratch.clear();
        scratch.extend_from_slice(&self.to_bytes());
        parse_frame_checking(scratch, udp_port, IcrcCheck::KnownGood)
    }
}

/// A frame as a NIC built it: whole, or split with its payload by reference.
#[derive(Debug, Clone)]
pub enum FrameBuf {
    /// The bytes of the whole frame.
    Whole(Vec<u8>),
    /// Headers and a payload by reference (boxed: a frame moves through queues many times,
    /// and a box moves in one word).
    Split(Box<SplitFrame>),
}

impl FrameBuf {
    /// `repr` with `payload` as its payload (`repr.payload` is not used): split when its
    /// headers fit a [`SplitFrame`], else whole; the bytes of the frame are the same either
    /// way.
    pub fn emit(repr: &FrameRepr<'_>, payload: SharedBytes) -> Self {
        match SplitFrame::emit(repr, payload.clone()) {
            Some(s) => FrameBuf::Split(Box::new(s)),
            None => FrameBuf::Whole(
                FrameRepr {
                    payload: payload.as_slice(),
                    ..repr.clone()
                }
                .emit(),
            ),
        }
    }

    /// Length of the whole frame.
    pub fn frame_len(&self) -> usize {
        match self {
            FrameBuf::Whole(b) => b.len(),
            FrameBuf::Split(s) => s.frame_len(),
        }
    }

    /// The bytes up to the payload at least (all of them for a whole frame): enough for
    /// anything that reads headers only.
    pub fn head(&self) -> &[u8] {
        match self {
            FrameBuf::Whole(b) => b,
            FrameBuf::Split(s) => s.head(),
        }
    }

    /// The bytes of the whole frame.
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            FrameBuf::Whole(b) => b,
            FrameBuf::Split(s) => s.to_bytes(),
        }
    }
}
