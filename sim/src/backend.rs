//! One type for "a NIC the caller chose at run time": the model or the RTL co-simulation, so
//! that tools and tests (`ferroce replay`, the perftest commands, the two-node tests) take a
//! `--backend` without being generic over it.

use crate::rtl::RtlError;
use crate::rtl::nic::RtlNic;
use ferroce_driver::{ModelNic, Nic, NicError, PortFrame, PortFrameBuf, SimMemory, SimPort};
use ferroce_proto::hsi::TableSizes;
use ferroce_proto::wire::SplitFrame;

/// Which backend to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum BackendKind {
    /// The executable model.
    #[default]
    Model,
    /// The RTL under Verilator.
    Rtl,
}

/// A NIC backend chosen at run time.
pub enum AnyNic {
    /// The executable model.
    Model(Box<ModelNic>),
    /// The RTL under Verilator.
    Rtl(Box<RtlNic>),
}

impl AnyNic {
    /// The model with the given table sizes.
    pub fn model(sizes: TableSizes) -> Self {
        AnyNic::Model(Box::new(ModelNic::new(sizes)))
    }

    /// The RTL core (its table sizes are fixed by the hardware: see the capability registers).
    pub fn rtl() -> Result<Self, RtlError> {
        Ok(AnyNic::Rtl(Box::new(RtlNic::new()?)))
    }

    /// Opens a backend; the model gets `sizes`, the RTL has its own (fixed in hardware).
    pub fn open(kind: BackendKind, sizes: TableSizes) -> Result<Self, RtlError> {
        match kind {
            BackendKind::Model => Ok(Self::model(sizes)),
            BackendKind::Rtl => Self::rtl(),
        }
    }

    /// Host memory the NIC reaches by DMA.
    pub fn memory(&mut self) -> &mut SimMemory {
        match self {
            AnyNic::Model(n) => &mut n.memory,
            AnyNic::Rtl(n) => &mut n.memory,
        }
    }

    /// "model" or "rtl".
    pub fn name(&self) -> &'static str {
        match self {
            AnyNic::Model(_) => "model",
            AnyNic::Rtl(_) => "rtl",
        }
    }
}

impl Nic for AnyNic {
    fn read_reg(&mut self, offset: u32) -> u32 {
        match self {
            AnyNic::Model(n) => n.read_reg(offset),
            AnyNic::Rtl(n) => n.read_reg(offset),
        }
    }

    fn write_reg(&mut self, offset: u32, value: u32) {
        match self {
            AnyNic::Model(n) => n.write_reg(offset, value),
            AnyNic::Rtl(n) => n.write_reg(offset, value),
        }
    }

    fn alloc_dma(&mut self, len: usize, align: usize) -> Result<u64, NicError> {
        match self {
            AnyNic::Model(n) => n.alloc_dma(len, align),
            AnyNic::Rtl(n) => n.alloc_dma(len, align),
        }
    }

    fn write_dma(&mut self, iova: u64, data: &[u8]) -> Result<(), NicError> {
        match self {
            AnyNic::Model(n) => n.write_dma(iova, data),
            AnyNic::Rtl(n) => n.write_dma(iova, data),
        }
    }

    fn read_dma(&mut self, iova: u64, buf: &mut [u8]) -> Result<(), NicError> {
        match self {
            AnyNic::Model(n) => n.read_dma(iova, buf),
            AnyNic::Rtl(n) => n.read_dma(iova, buf),
        }
    }

    fn inspect_dma(
        &mut self,
        iova: u64,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), NicError> {
        match self {
            AnyNic::Model(n) => n.inspect_dma(iova, len, f),
            AnyNic::Rtl(n) => n.inspect_dma(iova, len, f),
        }
    }

    fn poll(&mut self, now_ns: u64) {
        match self {
            AnyNic::Model(n) => n.poll(now_ns),
            AnyNic::Rtl(n) => n.poll(now_ns),
        }
    }

    fn next_timer_ns(&mut self) -> Option<u64> {
        match self {
            AnyNic::Model(n) => n.next_timer_ns(),
            AnyNic::Rtl(n) => n.next_timer_ns(),
        }
    }

    fn flow_rx_changes(&mut self, index: u32) -> Option<u64> {
        match self {
            AnyNic::Model(n) => n.flow_rx_changes(index),
            AnyNic::Rtl(n) => n.flow_rx_changes(index),
        }
    }
}

impl SimPort for AnyNic {
    fn receive_frame(&mut self, port: u8, frame: &[u8]) -> Result<(), NicError> {
        match self {
            AnyNic::Model(n) => n.receive_frame(port, frame),
            AnyNic::Rtl(n) => n.receive_frame(port, frame),
        }
    }

    fn transmit_frame(&mut self) -> Option<PortFrame> {
        match self {
            AnyNic::Model(n) => n.transmit_frame(),
            AnyNic::Rtl(n) => n.transmit_frame(),
        }
    }

    fn transmits_valid_icrc(&self) -> bool {
        match self {
            AnyNic::Model(n) => n.transmits_valid_icrc(),
            AnyNic::Rtl(n) => n.transmits_valid_icrc(),
        }
    }

    fn receive_frame_icrc_known_good(&mut self, port: u8, frame: &[u8]) -> Result<(), NicError> {
        match self {
            AnyNic::Model(n) => n.receive_frame_icrc_known_good(port, frame),
            AnyNic::Rtl(n) => n.receive_frame_icrc_known_good(port, frame),
        }
    }

    fn set_link(&mut self, port: u8, up: bool) -> Result<(), NicError> {
        match self {
            AnyNic::Model(n) => n.set_link(port, up),
            AnyNic::Rtl(n) => n.set_link(port, up),
        }
    }

    fn transmit_frame_buf(&mut self) -> Option<PortFrameBuf> {
        match self {
            AnyNic::Model(n) => n.transmit_frame_buf(),
            AnyNic::Rtl(n) => n.transmit_frame_buf(),
        }
    }

    fn receive_split_frame(&mut self, port: u8, frame: &SplitFrame) -> Result<(), NicError> {
        match self {
            AnyNic::Model(n) => n.receive_split_frame(port, frame),
            AnyNic::Rtl(n) => n.receive_split_frame(port, frame),
        }
    }
}
