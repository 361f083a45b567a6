//! Simulated host memory for simulated NICs: separate allocations at fixed IO virtual addresses,
//! as an IOMMU maps them. Any access outside an allocation faults, so a stray DMA write is
//! caught instead of silently landing somewhere. Optionally records every NIC write.

use ferroce_proto::model::{DmaFault, HostMemory};
use ferroce_proto::wire::SharedBytes;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Allocations at least this large go back to the thread's spare buffers when their memory is
/// dropped (smaller ones cost little to allocate afresh).
const SPARE_MIN: usize = 64 << 10;
/// Most bytes a thread keeps in spare buffers.
const SPARE_MAX_BYTES: usize = 1 << 30;

/// Large buffers of dropped [`SimMemory`]s, kept for the next ones on the same thread.
///
/// A simulator builds and drops many NICs (a fabric experiment: every host of every run), each
/// with megabytes of registered memory. Fresh memory from the operating system costs a page
/// fault per page on first touch, which profiles showed at 5–6% of a ferroce run; a spare
/// buffer's pages are mapped already. Its bytes are zeroed again before reuse, so an
/// allocation reads as zeroes either way.
#[derive(Default)]
struct SpareBuffers {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

thread_local! {
    static SPARES: RefCell<SpareBuffers> = RefCell::default();
}

impl SpareBuffers {
    /// `len` zeroed bytes from the smallest spare buffer that holds them without wasting more
    /// than half of it, if any.
    fn take_zeroed(&mut self, len: usize) -> Option<Vec<u8>> {
        if len < SPARE_MIN {
            return None;
        }
        let (at, _) = self
            .buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= len && b.capacity() / 2 <= len)
            .min_by_key(|(_, b)| b.capacity())?;
        let mut buf = self.buffers.swap_remove(at);
        self.bytes -= buf.capacity();
        buf.clear();
        buf.resize(len, 0);
        Some(buf)
    }

    /// Keeps `buf` for later, unless it is small or the thread keeps enough already.
    fn give(&mut self, buf: Vec<u8>) {
        if buf.capacity() >= SPARE_MIN && self.bytes + buf.capacity() <= SPARE_MAX_BYTES {
            self.bytes += buf.capacity();
            self.buffers.push(buf);
        }
    }
}

/// `len` zeroed bytes, from a spare buffer of this thread where one fits.
fn zeroed(len: usize) -> Vec<u8> {
    SPARES
        .try_with(|s| s.borrow_mut().take_zeroed(len))
        .ok()
        .flatten()
        .unwrap_or_else(|| vec![0; len])
}

/// A NIC DMA write, as recorded by [`SimMemory`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DmaWrite {
    /// IO virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub len: usize,
    /// CRC-32 of the data written.
    pub crc32: u32,
}

/// Simulated DMA memory.
///
/// An allocation may be shared by reference ([`HostMemory::dma_share`]: a frame carrying its
/// payload that way); a write to it then copies it first ([`Arc::make_mut`]), so what was
/// shared keeps the bytes of the moment it was shared, as a copy made then would. A clone of
/// the memory shares every allocation the same way.
#[derive(Debug, Clone)]
pub struct SimMemory {
    /// Allocations by base address.
    allocs: BTreeMap<u64, Arc<Vec<u8>>>,
    next: u64,
    limit: u64,
    log: Option<Vec<DmaWrite>>,
}

impl Default for SimMemory {
    fn default() -> Self {
        Self::new(0x1_0000_0000, 1 << 40)
    }
}

impl SimMemory {
    /// Memory handing out addresses from `start` up to `start + size`.
    pub fn new(start: u64, size: u64) -> Self {
        SimMemory {
            allocs: BTreeMap::new(),
            next: start,
            limit: start + size,
            log: None,
        }
    }

    /// Starts recording NIC writes (see [`SimMemory::take_write_log`]).
    pub fn record_writes(&mut self) {
        self.log.get_or_insert_with(Vec::new);
    }

    /// Returns and clears the recorded NIC writes.
    pub fn take_write_log(&mut self) -> Vec<DmaWrite> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Allocates `len` zeroed bytes aligned to `align` (a power of two); `None` when exhausted.
    pub fn alloc(&mut self, len: usize, align: usize) -> Option<u64> {
        let align = align.max(1) as u64;
        let base = self.next.checked_add(align - 1)? & !(align - 1);
        let end = base.checked_add(len as u64)?;
        if end > self.limit {
            return None;
        }
        // A guard gap between allocations so an off-by-one DMA faults instead of landing in a
        // neighbour.
        self.next = end + 4096;
        self.allocs.insert(base, Arc::new(zeroed(len)));
        Some(base)
    }

    /// Maps `len` zeroed bytes at exactly `addr` (for replaying a capture whose addresses are
    /// fixed). Fails if it overlaps an existing allocation.
    pub fn map_at(&mut self, addr: u64, len: usize) -> bool {
        let end = match addr.checked_add(len as u64) {
            Some(e) => e,
            None => return false,
        };
        let overlaps = self
            .allocs
            .range(..end)
            .next_back()
            .is_some_and(|(&b, v)| b + v.len() as u64 > addr);
        if overlaps {
            return false;
        }
        self.allocs.insert(addr, Arc::new(zeroed(len)));
        self.next = self.next.max(end + 4096);
        true
    }

    /// The `len` bytes at `addr`, if one allocation holds them all.
    fn view(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let (&base, buf) = self.allocs.range(..=addr).next_back()?;
        let off = (addr - base) as usize;
        buf.get(off..off.checked_add(len)?)
    }

    /// The `len` bytes at `addr` to write, if one allocation holds them all; an allocation
    /// shared by reference is copied first (see [`SimMemory`]).
    fn find_mut(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let (&base, buf) = self.allocs.range_mut(..=addr).next_back()?;
        let off = (addr - base) as usize;
        let end = off.checked_add(len)?;
        if end > buf.len() {
            // Checked before `make_mut`: a faulting write copies nothing.
            return None;
        }
        Arc::make_mut(buf).get_mut(off..end)
    }

    /// The `len` bytes at `addr` by reference, if one allocation holds them all.
    fn share(&self, addr: u64, len: usize) -> Option<SharedBytes> {
        let (&base, buf) = self.allocs.range(..=addr).next_back()?;
        let off = (addr - base) as usize;
        SharedBytes::new(Arc::clone(buf), off..off.checked_add(len)?)
    }

    /// Host memory at `iova` in place (the CPU side), or why not.
    pub fn host_view(&self, iova: u64, len: usize) -> Result<&[u8], crate::NicError> {
        self.view(iova, len)
            .ok_or(crate::NicError::BadDmaAddress { addr: iova, len })
    }

    /// Reads host memory (the CPU side).
    pub fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool {
        match self.view(addr, buf.len()) {
            Some(m) => {
                buf.copy_from_slice(m);
                true
            }
            None => false,
        }
    }

    /// Writes host memory (the CPU side); not recorded as a NIC write.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> bool {
        match self.find_mut(addr, data.len()) {
            Some(m) => {
                m.copy_from_slice(data);
                true
            }
            None => false,
        }
    }
}

impl Drop for SimMemory {
    fn drop(&mut self) {
        let allocs = std::mem::take(&mut self.allocs);
        // During thread teardown the spare buffers may be gone already: then just free.
        let _ = SPARES.try_with(|s| {
            let mut spares = s.borrow_mut();
            // An allocation still shared (a frame in flight holds part of it) goes when its
            // last sharer does.
            for buf in allocs.into_values().filter_map(|b| Arc::try_unwrap(b).ok()) {
                spares.give(buf);
            }
        });
    }
}

/// The host CPU's side of simulated DMA memory, with the errors a [`crate::Nic`] backend reports:
/// what every simulated backend's `alloc_dma`, `write_dma` and `read_dma` do.
impl SimMemory {
    /// [`crate::Nic::alloc_dma`].
    pub fn host_alloc(&mut self, len: usize, align: usize) -> Result<u64, crate::NicError> {
        self.alloc(len, align)
            .ok_or(crate::NicError::OutOfDmaMemory)
    }

    /// [`crate::Nic::write_dma`].
    pub fn host_write(&mut self, iova: u64, data: &[u8]) -> Result<(), crate::NicError> {
        if self.write(iova, data) {
            Ok(())
        } else {
            Err(crate::NicError::BadDmaAddress {
                addr: iova,
                len: data.len(),
            })
        }
    }

    /// [`crate::Nic::read_dma`].
    pub fn host_read(&mut self, iova: u64, buf: &mut [u8]) -> Result<(), crate::NicError> {
        if self.read(iova, buf) {
            Ok(())
        } else {
            Err(crate::NicError::BadDmaAddress {
                addr: iova,
                len: buf.len(),
            })
        }
    }
}

impl HostMemory for SimMemory {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        if self.read(addr, buf) {
            Ok(())
        } else {
            Err(DmaFault)
        }
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        if !self.write(addr, data) {
            return Err(DmaFault);
        }
        if let Some(log) = &mut self.log {
            log.push(DmaWrite {
                addr,
                len: data.len(),
                crc32: crc32fast::hash(data),
            });
        }
        Ok(())
    }

    fn dma_view(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.view(addr, len)
    }

    fn dma_share(&self, addr: u64, len: usize) -> Option<SharedBytes> {
        self.share(addr, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_outside_allocations_fault() {
        let mut m = SimMemory::new(0x1000, 1 << 20);
        let a = m.alloc(100, 64).unwrap();
        assert_eq!(a % 64, 0);
        assert!(m.dma_write(a, &[1; 100]).is_ok());
        assert!(m.dma_write(a + 1, &[1; 100]).is_err());
        assert!(m.dma_write(a - 1, &[1; 1]).is_err());
        let mut b = [0u8; 4];
        assert!(m.dma_read(a + 96, &mut b).is_ok());
        assert_eq!(b, [1; 4]);
        assert!(m.map_at(0x9000_0000, 16));
        assert!(!m.map_at(0x9000_0008, 16));
    }

    #[test]
    fn reused_buffers_read_as_zeroes() {
        let len = 3 * SPARE_MIN;
        let mut first = SimMemory::default();
        let a = first.alloc(len, 4096).unwrap();
        assert!(first.dma_write(a, &vec![0xa5; len]).is_ok());
        drop(first);
        // A second memory on this thread gets the first one's buffer back, zeroed; a smaller
        // allocation too (within half of it), a much smaller one a buffer of its own.
        for want in [len, len - 100, SPARE_MIN / 2] {
            let mut m = SimMemory::default();
            let b = m.alloc(want, 64).unwrap();
            assert!(m.dma_view(b, want).unwrap().iter().all(|&x| x == 0));
            assert!(m.dma_write(b, &vec![0x5a; want]).is_ok());
        }
    }

    #[test]
    fn shared_bytes_keep_what_they_were_when_shared() {
        let mut m = SimMemory::default();
        let a = m.alloc(3 * SPARE_MIN, 4096).unwrap();
        assert!(m.dma_write(a, &vec![1; 3 * SPARE_MIN]).is_ok());
        let shared = m.dma_share(a + 100, 50).unwrap();
        assert_eq!(shared.as_slice(), &[1; 50]);
        assert!(m.dma_share(a + 3 * SPARE_MIN as u64 - 10, 11).is_none());
        assert!(m.dma_share(a - 1, 1).is_none());
        // The NIC's write and the host's both leave the shared bytes as they were.
        assert!(m.dma_write(a + 120, &[2; 10]).is_ok());
        assert!(m.host_write(a + 100, &[3; 5]).is_ok());
        assert_eq!(shared.as_slice(), &[1; 50]);
        let mut now = [0u8; 30];
        assert!(m.dma_read(a + 100, &mut now).is_ok());
        assert_eq!(&now[..5], &[3; 5]);
        assert_eq!(&now[5..20], &[1; 15]);
        assert_eq!(&now[20..], &[2; 10]);
        // A faulting write copies nothing and changes nothing.
        assert!(m.dma_write(a + 3 * SPARE_MIN as u64 - 1, &[9; 2]).is_err());
        // The memory may go while the bytes are still shared.
        let later = m.dma_share(a, 4).unwrap();
        drop(m);
        assert_eq!(later.as_slice(), &[1; 4]);
        assert_eq!(shared.as_slice(), &[1; 50]);
    }
}
