//! The driver: rings and tables over any [`Nic`].

use crate::{Nic, NicError};
use ferroce_proto::hsi::{
    ConnectionEntry, Counter, EVENT_LEN, Event, FlowInit, RateHint, RecvBuffer, RegionEntry,
    TX_DESCRIPTOR_LEN, TableId, TableSizes, TxDescriptor, regs, tables::TABLE_WORDS,
};
use ferroce_proto::wire::EthernetAddress;

/// Errors of the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceError {
    /// The ID register does not read "FRCE": not a ferroce NIC, or not powered.
    NotFerroce(u32),
    /// The NIC speaks another major interface version.
    VersionMismatch(u32),
    /// A table write was refused (`TABLE_STATUS` value).
    TableAccess(u32),
    /// The TX ring has no room for the batch.
    TxRingFull,
    /// A backend error.
    Nic(NicError),
    /// The NIC wrote an event this driver cannot decode.
    BadEvent,
}

impl core::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DeviceError::NotFerroce(id) => write!(f, "ID register reads {id:#010x}, not FRCE"),
            DeviceError::VersionMismatch(v) => write!(f, "unsupported interface version {v:#x}"),
            DeviceError::TableAccess(s) => write!(f, "table access refused with status {s}"),
            DeviceError::TxRingFull => write!(f, "TX descriptor ring full"),
            DeviceError::Nic(e) => write!(f, "{e}"),
            DeviceError::BadEvent => write!(f, "undecodable event in the event ring"),
        }
    }
}

impl std::error::Error for DeviceError {}

impl From<NicError> for DeviceError {
    fn from(e: NicError) -> Self {
        DeviceError::Nic(e)
    }
}

/// log2 of the TX ring entries the driver sets up.
pub const TX_RING_LOG: u32 = 10;
/// log2 of the event ring entries the driver sets up.
pub const EVENT_RING_LOG: u32 = 12;

/// A ferroce NIC with its rings set up.
#[derive(Debug)]
pub struct Device<N: Nic> {
    nic: N,
    sizes: TableSizes,
    txq: u64,
    tx_tail: u32,
    evq: u64,
    ev_head: u32,
}

impl<N: Nic> Device<N> {
    /// Checks the NIC, allocates and programs the rings, enables receive and transmit.
    pub fn open(mut nic: N) -> Result<Self, DeviceError> {
        let id = nic.read_reg(regs::ID);
        if id != regs::ID_VALUE {
            return Err(DeviceError::NotFerroce(id));
        }
        let version = nic.read_reg(regs::VERSION);
        if version >> 16 != regs::VERSION_VALUE >> 16 {
            return Err(DeviceError::VersionMismatch(version));
        }
        let sizes = TableSizes {
            connections: nic.read_reg(regs::CAP_CONNECTIONS),
            flows: nic.read_reg(regs::CAP_FLOWS),
            regions: nic.read_reg(regs::CAP_REGIONS),
            tags: nic.read_reg(regs::CAP_TAGS),
            msg_slots: nic.read_reg(regs::CAP_MSG_SLOTS),
            recv_depth: nic.read_reg(regs::CAP_RECV_DEPTH),
            // Interface 1.0 has no CAP_PORTS (it reads zero): one port.
            ports: nic.read_reg(regs::CAP_PORTS).max(1),
        };
        let txq = nic.alloc_dma(TX_DESCRIPTOR_LEN << TX_RING_LOG, 4096)?;
        let evq = nic.alloc_dma(EVENT_LEN << EVENT_RING_LOG, 4096)?;
        nic.write_reg(regs::TXQ_BASE_LO, txq as u32);
        nic.write_reg(regs::TXQ_BASE_HI, (txq >> 32) as u32);
        nic.write_reg(regs::TXQ_LOG_SIZE, TX_RING_LOG);
        nic.write_reg(regs::EVQ_BASE_LO, evq as u32);
        nic.write_reg(regs::EVQ_BASE_HI, (evq >> 32) as u32);
        nic.write_reg(regs::EVQ_LOG_SIZE, EVENT_RING_LOG);
        nic.write_reg(
            regs::CONTROL,
            regs::CONTROL_RX_ENABLE | regs::CONTROL_TX_ENABLE,
        );
        Ok(Device {
            nic,
            sizes,
            txq,
            tx_tail: 0,
            evq,
            ev_head: 0,
        })
    }

    /// The NIC's table sizes.
    pub fn sizes(&self) -> TableSizes {
        self.sizes
    }

    /// The backend.
    pub fn nic(&mut self) -> &mut N {
        &mut self.nic
    }

    /// The backend, read-only.
    pub fn nic_ref(&self) -> &N {
        &self.nic
    }

    /// Sets the NIC's MAC address.
    pub fn set_mac(&mut self, mac: EthernetAddress) {
        let v = mac.to_u64();
        self.nic.write_reg(regs::MAC_LO, v as u32);
        self.nic.write_reg(regs::MAC_HI, (v >> 32) as u32);
    }

    /// Sets how many data packets of a flow the NIC acknowledges with one ACK.
    pub fn set_ack_coalesce(&mut self, packets: u32) {
        self.nic.write_reg(regs::ACK_COALESCE, packets);
    }

    /// Writes one table entry through the indirect window.
    pub fn write_table(
        &mut self,
        table: TableId,
        index: u32,
        words: &[u32],
    ) -> Result<(), DeviceError> {
        for i in 0..TABLE_WORDS {
            self.nic.write_reg(
                regs::TABLE_DATA + 4 * i as u32,
                words.get(i).copied().unwrap_or(0),
            );
        }
        self.nic.write_reg(regs::TABLE_INDEX, index);
        self.nic
            .write_reg(regs::TABLE_CMD, table as u32 | regs::TABLE_OP_WRITE);
        match self.nic.read_reg(regs::TABLE_STATUS) {
            regs::TABLE_STATUS_OK => Ok(()),
            s => Err(DeviceError::TableAccess(s)),
        }
    }

    /// Reads one table entry back through the indirect window (the flow table returns the
    /// cumulative FSN in word 0 and the SACK bitmap in words 1–8).
    pub fn read_table(
        &mut self,
        table: TableId,
        index: u32,
    ) -> Result<[u32; TABLE_WORDS], DeviceError> {
        let mut out = [0u32; TABLE_WORDS];
        self.read_table_words(table, index, &mut out)?;
        Ok(out)
    }

    /// Reads the first `out.len()` words (at most [`TABLE_WORDS`]) of one table entry: each
    /// word is a register read, so a caller that needs only an entry's leading words (a
    /// flow's, [`FLOW_READ_WORDS`](ferroce_proto::hsi::tables::FLOW_READ_WORDS)) reads no
    /// more.
    pub fn read_table_words(
        &mut self,
        table: TableId,
        index: u32,
        out: &mut [u32],
    ) -> Result<(), DeviceError> {
        self.nic.write_reg(regs::TABLE_INDEX, index);
        self.nic
            .write_reg(regs::TABLE_CMD, table as u32 | regs::TABLE_OP_READ);
        match self.nic.read_reg(regs::TABLE_STATUS) {
            regs::TABLE_STATUS_OK => {}
            s => return Err(DeviceError::TableAccess(s)),
        }
        for (i, w) in out.iter_mut().take(TABLE_WORDS).enumerate() {
            *w = self.nic.read_reg(regs::TABLE_DATA + 4 * i as u32);
        }
        Ok(())
    }

    /// Programs memory region `index`; its rkey is `entry.rkey(index)`.
    pub fn set_region(&mut self, index: u32, entry: &RegionEntry) -> Result<(), DeviceError> {
        self.write_table(TableId::Region, index, &entry.to_words())
    }

    /// Programs connection `id`.
    pub fn set_connection(&mut self, id: u32, entry: &ConnectionEntry) -> Result<(), DeviceError> {
        self.write_table(TableId::Connection, id, &entry.to_words())
    }

    /// (Re)initialises flow-table entry `index` to expect `cum_fsn` next.
    pub fn init_flow(&mut self, index: u32, cum_fsn: u32) -> Result<(), DeviceError> {
        self.write_table(TableId::Flow, index, &FlowInit { cum_fsn }.to_words())
    }

    /// Clears every message slot and receive buffer of Tag context `tag_ctx`.
    pub fn reset_tag(&mut self, tag_ctx: u32) -> Result<(), DeviceError> {
        self.write_table(TableId::TagReset, tag_ctx, &[])
    }

    /// Posts a receive buffer for the Send with SSN `ssn` on Tag context `tag_ctx`.
    pub fn post_recv(
        &mut self,
        tag_ctx: u32,
        ssn: u32,
        addr: u64,
        len: u32,
    ) -> Result<(), DeviceError> {
        let index = tag_ctx * self.sizes.recv_depth + ssn % self.sizes.recv_depth;
        let entry = RecvBuffer {
            valid: true,
            ssn,
            addr,
            len,
        };
        self.write_table(TableId::RecvBuffer, index, &entry.to_words())
    }

    /// Sets the rate hint stamped on every ACK of connection `id`.
    pub fn set_rate_hint(&mut self, id: u32, mbps: u32) -> Result<(), DeviceError> {
        self.write_table(TableId::RateHint, id, &RateHint { mbps }.to_words())
    }

    /// Free TX ring entries.
    pub fn tx_space(&mut self) -> u32 {
        let head = self.nic.read_reg(regs::TXQ_HEAD);
        (1 << TX_RING_LOG) - self.tx_tail.wrapping_sub(head)
    }

    /// Writes a batch of descriptors into the TX ring and rings the doorbell once.
    pub fn post(&mut self, batch: &[TxDescriptor]) -> Result<(), DeviceError> {
        if batch.len() as u32 > self.tx_space() {
            return Err(DeviceError::TxRingFull);
        }
        for d in batch {
            let slot = (self.tx_tail % (1 << TX_RING_LOG)) as u64;
            self.nic
                .write_dma(self.txq + slot * TX_DESCRIPTOR_LEN as u64, &d.to_bytes())?;
            self.tx_tail = self.tx_tail.wrapping_add(1);
        }
        self.nic.write_reg(regs::TXQ_TAIL, self.tx_tail);
        Ok(())
    }

    /// Moves every event the NIC has written into `out`; returns how many.
    pub fn poll_events(&mut self, out: &mut Vec<Event>) -> Result<usize, DeviceError> {
        let tail = self.nic.read_reg(regs::EVQ_TAIL);
        let mut n = 0;
        while self.ev_head != tail {
            let slot = (self.ev_head % (1 << EVENT_RING_LOG)) as u64;
            let mut raw = [0u8; EVENT_LEN];
            self.nic
                .read_dma(self.evq + slot * EVENT_LEN as u64, &mut raw)?;
            out.push(Event::from_bytes(&raw).map_err(|_| DeviceError::BadEvent)?);
            self.ev_head = self.ev_head.wrapping_add(1);
            n += 1;
        }
        self.nic.write_reg(regs::EVQ_HEAD, self.ev_head);
        Ok(n)
    }

    /// Reads a 64-bit counter.
    pub fn counter(&mut self, c: Counter) -> u64 {
        let off = regs::counter_offset(c);
        let lo = self.nic.read_reg(off) as u64;
        let hi = self.nic.read_reg(off + 4) as u64;
        lo | hi << 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model_nic::ModelNic;
    use ferroce_proto::hsi::tables::FLOW_READ_WORDS;

    #[test]
    fn a_flow_read_of_its_leading_words_gives_what_a_full_read_does() {
        let mut dev = Device::open(ModelNic::new(TableSizes::default())).expect("open");
        dev.init_flow(5, 0x12_3456).expect("init");
        let full = dev.read_table(TableId::Flow, 5).expect("full read");
        let mut lead = [0u32; FLOW_READ_WORDS];
        dev.read_table_words(TableId::Flow, 5, &mut lead)
            .expect("leading words");
        assert_eq!(lead[0], 0x12_3456);
        assert_eq!(lead[..], full[..FLOW_READ_WORDS]);
        // The window's words after them read as zero (this entry has no SACK bits set, so
        // the bitmap's own placement in words 1-8 is not what this checks).
        assert!(full[FLOW_READ_WORDS..].iter().all(|&w| w == 0));
        // A bad index fails the same way either way.
        let bad = TableSizes::default().flows;
        assert!(dev.read_table_words(TableId::Flow, bad, &mut lead).is_err());
    }
}
