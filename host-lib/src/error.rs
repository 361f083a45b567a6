//! Typed errors of the API. Invalid use of the API is an error value, never a panic.

use crate::core::{CoreError, FailReason};
use ferroce_driver::{DeviceError, NicError};

/// Everything the API can refuse or fail with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The driver failed (table access, rings, undecodable event).
    Device(DeviceError),
    /// The backend failed (DMA memory).
    Nic(NicError),
    /// A handle (protection domain, memory region, CQ, connection, request) that this context
    /// does not know, or that was destroyed.
    InvalidHandle,
    /// The Tag is beyond the connection's Tag count.
    InvalidTag(u16),
    /// The lkey names no registered region of the connection's protection domain.
    InvalidLkey(u32),
    /// The local range is not inside the region its lkey names.
    LocalRangeOutOfBounds {
        /// First byte.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// The region lacks a right the operation needs (receive buffers need local write).
    AccessDenied,
    /// The send queue is full (`TransportConfig::max_send_wr` incomplete requests).
    SendQueueFull,
    /// The Tag already holds `recv_depth` posted receives.
    RecvQueueFull,
    /// The connection is not established, or it has failed (with the reason, if known).
    NotConnected(Option<FailReason>),
    /// A NIC table or id space is exhausted.
    ResourcesExhausted(&'static str),
    /// An argument is out of range.
    InvalidArgument(&'static str),
    /// A feature the hardware interface cannot express yet.
    Unsupported(&'static str),
    /// A completion queue received more completions than its capacity; none were dropped,
    /// but the queue was undersized.
    CqOverflow,
    /// The object is still used by another (a region or connection of a protection domain).
    Busy,
    /// The NIC dropped this many events because its event ring was full: completions or ACKs
    /// may be missing. Call `progress` more often (or give the ring more room).
    EventsLost(u64),
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Device(e) => write!(f, "device: {e}"),
            Error::Nic(e) => write!(f, "backend: {e}"),
            Error::InvalidHandle => write!(f, "unknown or destroyed handle"),
            Error::InvalidTag(t) => write!(f, "Tag {t} is beyond the connection's Tag count"),
            Error::InvalidLkey(k) => write!(f, "lkey {k:#x} names no region of this PD"),
            Error::LocalRangeOutOfBounds { addr, len } => {
                write!(f, "{len} bytes at {addr:#x} are outside the region")
            }
            Error::AccessDenied => write!(f, "the region lacks the access right needed"),
            Error::SendQueueFull => write!(f, "send queue full"),
            Error::RecvQueueFull => write!(f, "receive queue of the Tag full"),
            Error::NotConnected(None) => write!(f, "connection not established"),
            Error::NotConnected(Some(r)) => write!(f, "connection failed: {r:?}"),
            Error::ResourcesExhausted(what) => write!(f, "no free {what}"),
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::Unsupported(what) => write!(f, "unsupported: {what}"),
            Error::CqOverflow => write!(f, "completion queue overflowed its capacity"),
            Error::Busy => write!(f, "still in use"),
            Error::EventsLost(n) => write!(f, "the NIC dropped {n} events (event ring full)"),
        }
    }
}

impl std::error::Error for Error {}

impl From<DeviceError> for Error {
    fn from(e: DeviceError) -> Self {
        Error::Device(e)
    }
}

impl From<NicError> for Error {
    fn from(e: NicError) -> Self {
        Error::Nic(e)
    }
}

impl From<CoreError> for Error {
    fn from(e: CoreError) -> Self {
        match e {
            CoreError::InvalidTag(t) => Error::InvalidTag(t),
            CoreError::SendQueueFull => Error::SendQueueFull,
            CoreError::RecvQueueFull => Error::RecvQueueFull,
            CoreError::NotUsable => Error::NotConnected(None),
        }
    }
}

/// Result with [`Error`].
pub type Result<T> = core::result::Result<T, Error>;
