//! The interface between the ferroce host library and a NIC, and its backends.
//!
//! - [`Nic`]: what every backend offers the host: 32-bit register access (AXI4-Lite / BAR),
//!   DMA memory the NIC can reach, and a way to let a simulated NIC make progress.
//! - [`SimPort`]: the wire side of a simulated NIC (frames in and out of its MAC). Hardware has
//!   a real cable instead.
//! - [`Device`]: the driver proper, over any [`Nic`]: checks the ID, reads the capabilities,
//!   sets up the descriptor and event rings, programs the tables, posts descriptors in batches
//!   and polls events.
//! - [`ModelNic`]: the software backend, [`ferroce_proto::model::FastPath`] with simulated host
//!   memory. The RTL co-simulation backend (issue 3) and the VFIO backend come next.
#![deny(unsafe_code)]

mod device;
pub mod memory;
mod model_nic;

pub use device::{Device, DeviceError};
pub use ferroce_proto::model::{PortFrame, PortFrameBuf};
use ferroce_proto::wire::{FrameBuf, SplitFrame};
pub use memory::SimMemory;
pub use model_nic::ModelNic;

/// Errors a backend reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NicError {
    /// No DMA memory left for the request.
    OutOfDmaMemory,
    /// The host touched DMA memory it has not allocated.
    BadDmaAddress {
        /// The address.
        addr: u64,
        /// The length of the access.
        len: usize,
    },
    /// A frame was handed to a port the NIC does not have.
    NoSuchPort {
        /// The port.
        port: u8,
        /// The NIC's port count.
        ports: u32,
    },
}

impl core::fmt::Display for NicError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            NicError::OutOfDmaMemory => write!(f, "out of DMA memory"),
            NicError::BadDmaAddress { addr, len } => {
                write!(
                    f,
                    "DMA access of {len} bytes at {addr:#x} is outside allocated memory"
                )
            }
            NicError::NoSuchPort { port, ports } => {
                write!(f, "port {port} does not exist on a NIC with {ports} ports")
            }
        }
    }
}

impl std::error::Error for NicError {}

/// The host side of a NIC: registers, DMA memory, progress.
pub trait Nic {
    /// Reads a 32-bit register (offsets from [`ferroce_proto::hsi::regs`]).
    fn read_reg(&mut self, offset: u32) -> u32;
    /// Writes a 32-bit register.
    fn write_reg(&mut self, offset: u32, value: u32);
    /// Allocates zeroed DMA memory the NIC can read and write; returns its IO virtual address.
    /// `align` is a power of two.
    fn alloc_dma(&mut self, len: usize, align: usize) -> Result<u64, NicError>;
    /// Copies `data` into DMA memory at `iova` (the host CPU writing).
    fn write_dma(&mut self, iova: u64, data: &[u8]) -> Result<(), NicError>;
    /// Copies DMA memory at `iova` into `buf` (the host CPU reading).
    fn read_dma(&mut self, iova: u64, buf: &mut [u8]) -> Result<(), NicError>;
    /// Hands `len` bytes of DMA memory at `iova` to `f` in one or more consecutive pieces
    /// (the host CPU reading them in place, e.g. to check a received message). The default
    /// copies them out with [`Nic::read_dma`] first and hands them in one piece; simulated
    /// memory lends them without a copy, a page held by reference as a piece of its own.
    fn inspect_dma(
        &mut self,
        iova: u64,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), NicError> {
        let mut buf = vec![0; len];
        self.read_dma(iova, &mut buf)?;
        f(&buf);
        Ok(())
    }
    /// Lets the NIC run up to time `now_ns`: a simulated NIC fetches descriptors and writes
    /// events; real hardware runs by itself and ignores this.
    fn poll(&mut self, now_ns: u64);
    /// When a simulated NIC next has timed work of its own (an ACK timer), so that its driver
    /// can [`Nic::poll`] it then; `None` when it has none or runs its own clock (hardware).
    fn next_timer_ns(&mut self) -> Option<u64> {
        None
    }
    /// How many times a simulated NIC may have changed the receive state (cumulative FSN,
    /// SACK bitmap) of flow-table entry `index`, so that a driver polling the flow table can
    /// skip entries whose count did not move; `None` when not counted (hardware, the RTL) or
    /// out of range: read the entry.
    fn flow_rx_changes(&mut self, _index: u32) -> Option<u64> {
        None
    }
}

/// The wire side of a simulated NIC: its MAC ports, one per plane.
pub trait SimPort {
    /// Hands a frame to the receive MAC of one port (the stream's `tid`); a port the NIC does
    /// not have is refused.
    fn receive_frame(&mut self, port: u8, frame: &[u8]) -> Result<(), NicError>;
    /// Takes the next frame the NIC sends, with the port it leaves on (the stream's `tdest`).
    fn transmit_frame(&mut self) -> Option<PortFrame>;
    /// Whether every frame [`SimPort::transmit_frame`] hands out carries, by construction, the
    /// ICRC of its own bytes (the model computes it over the frame it builds). The default
    /// promises nothing (the RTL's frames are what it computed, right or wrong).
    fn transmits_valid_icrc(&self) -> bool {
        false
    }
    /// [`SimPort::receive_frame`] for a frame whose ICRC trailer is known to be that of its
    /// bytes: it came from a NIC whose [`SimPort::transmits_valid_icrc`] holds, and nothing
    /// changed since but the fields the ICRC masks (a switch's CE mark). A backend may skip
    /// recomputing the ICRC (it could only agree); the default checks it as always.
    fn receive_frame_icrc_known_good(&mut self, port: u8, frame: &[u8]) -> Result<(), NicError> {
        self.receive_frame(port, frame)
    }
    /// [`SimPort::transmit_frame`], the frame as the NIC built it: a model NIC builds a data
    /// frame whose payload its memory shares by reference as a split frame (headers and the
    /// payload by reference), which a simulator can move without copying the payload. The
    /// default hands out whole frames.
    fn transmit_frame_buf(&mut self) -> Option<PortFrameBuf> {
        self.transmit_frame().map(|f| PortFrameBuf {
            port: f.port,
            frame: FrameBuf::Whole(f.bytes),
        })
    }
    /// [`SimPort::receive_frame`] for a split frame (from a model NIC's
    /// [`SimPort::transmit_frame_buf`], changed since only in fields the ICRC masks): the
    /// same as receiving [`SplitFrame::to_bytes`], which the default does. A model NIC parses
    /// the headers and places the payload straight from the reference.
    fn receive_split_frame(&mut self, port: u8, frame: &SplitFrame) -> Result<(), NicError> {
        self.receive_frame(port, &frame.to_bytes())
    }
    /// Sets the link state a port's PHY reports (shown in `PORT_LINK`): the fabric takes a
    /// link down or brings it back. A port the NIC does not have is refused.
    fn set_link(&mut self, port: u8, up: bool) -> Result<(), NicError>;
}

/// Checks a port number against a NIC's port count.
pub fn check_port(port: u8, ports: u32) -> Result<(), NicError> {
    if u32::from(port) < ports {
        Ok(())
    } else {
        Err(NicError::NoSuchPort { port, ports })
    }
}
