//! The software backend: the executable model with simulated host memory.

use crate::{Nic, NicError, PortFrame, PortFrameBuf, SimMemory, SimPort, check_port};
use ferroce_proto::{
    hsi::TableSizes,
    model::FastPath,
    wire::{IcrcCheck, SplitFrame},
};

/// A NIC made of [`FastPath`] and [`SimMemory`].
#[derive(Debug, Clone)]
pub struct ModelNic {
    /// The fast path (public so tests and tools can look at counters and tables).
    pub fast_path: FastPath,
    /// Host memory the NIC reaches by DMA.
    pub memory: SimMemory,
}

impl ModelNic {
    /// A NIC with the given table sizes and empty host memory.
    pub fn new(sizes: TableSizes) -> Self {
        ModelNic {
            fast_path: FastPath::new(sizes),
            memory: SimMemory::default(),
        }
    }
}

impl Nic for ModelNic {
    fn read_reg(&mut self, offset: u32) -> u32 {
        self.fast_path.read_reg(offset)
    }

    fn write_reg(&mut self, offset: u32, value: u32) {
        self.fast_path.write_reg(offset, value);
    }

    fn alloc_dma(&mut self, len: usize, align: usize) -> Result<u64, NicError> {
        self.memory.host_alloc(len, align)
    }

    fn write_dma(&mut self, iova: u64, data: &[u8]) -> Result<(), NicError> {
        self.memory.host_write(iova, data)
    }

    fn read_dma(&mut self, iova: u64, buf: &mut [u8]) -> Result<(), NicError> {
        self.memory.host_read(iova, buf)
    }

    fn inspect_dma(
        &mut self,
        iova: u64,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), NicError> {
        self.memory.host_inspect(iova, len, f)
    }

    fn poll(&mut self, now_ns: u64) {
        self.fast_path.set_time(now_ns);
        self.fast_path.service_rings(&mut self.memory);
    }

    fn next_timer_ns(&mut self) -> Option<u64> {
        self.fast_path.next_ack_timer()
    }

    fn flow_rx_changes(&mut self, index: u32) -> Option<u64> {
        self.fast_path.flow_rx_changes(index as usize)
    }
}

impl ModelNic {
    /// One frame into the fast path on `port`.
    fn receive(&mut self, port: u8, frame: &[u8], icrc: IcrcCheck) -> Result<(), NicError> {
        check_port(port, self.fast_path.sizes().ports)?;
        self.fast_path
            .receive_checking(port, frame, &mut self.memory, icrc);
        // Events reach the event ring as soon as they exist, as the DMA engine would write them.
        self.fast_path.service_rings(&mut self.memory);
        Ok(())
    }
}

impl SimPort for ModelNic {
    fn receive_frame(&mut self, port: u8, frame: &[u8]) -> Result<(), NicError> {
        self.receive(port, frame, IcrcCheck::Compute)
    }

    fn transmits_valid_icrc(&self) -> bool {
        // `FastPath` builds every frame with `FrameRepr::emit`, which computes the ICRC over
        // the bytes it has just written.
        true
    }

    fn receive_frame_icrc_known_good(&mut self, port: u8, frame: &[u8]) -> Result<(), NicError> {
        self.receive(port, frame, IcrcCheck::KnownGood)
    }

    fn set_link(&mut self, port: u8, up: bool) -> Result<(), NicError> {
        check_port(port, self.fast_path.sizes().ports)?;
        self.fast_path.set_link(port, up);
        Ok(())
    }

    fn transmit_frame(&mut self) -> Option<PortFrame> {
        self.fast_path.service_rings(&mut self.memory);
        self.fast_path.pop_port_frame()
    }

    fn transmit_frame_buf(&mut self) -> Option<PortFrameBuf> {
        self.fast_path.service_rings(&mut self.memory);
        self.fast_path.pop_port_frame_buf()
    }

    fn receive_split_frame(&mut self, port: u8, frame: &SplitFrame) -> Result<(), NicError> {
        check_port(port, self.fast_path.sizes().ports)?;
        self.fast_path.receive_split(port, frame, &mut self.memory);
        // As `receive`: events reach the event ring at once.
        self.fast_path.service_rings(&mut self.memory);
        Ok(())
    }
}
