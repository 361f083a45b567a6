//! Simulated host memory for simulated NICs: separate allocations at fixed IO virtual addresses,
//! as an IOMMU maps them. Any access outside an allocation faults, so a stray DMA write is
//! caught instead of silently landing somewhere. Optionally records every NIC write.

use ferroce_proto::model::{DmaFault, HostMemory};
use ferroce_proto::wire::SharedBytes;
use std::cell::RefCell;
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
/// buffer's pages are mapped already. A spare still holds its former allocation's bytes: the
/// new allocation's whole pages read as a shared page of zeroes until they are written (see
/// [`Alloc::new`]), because clearing them up front cost another 5–7% of a ferroce run while
/// nearly every byte of them is written before it is read.
#[derive(Default)]
struct SpareBuffers {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

thread_local! {
    static SPARES: RefCell<SpareBuffers> = RefCell::default();
}

impl SpareBuffers {
    /// The smallest spare buffer that holds `len` bytes without wasting more than half of
    /// it, if any, cut to `len` bytes: its contents are a former allocation's.
    fn take(&mut self, len: usize) -> Option<Vec<u8>> {
        if len < SPARE_MIN {
            return None;
        }
        let (at, _) = self
            .buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.len() >= len && b.len() / 2 <= len)
            .min_by_key(|(_, b)| b.len())?;
        let mut buf = self.buffers.swap_remove(at);
        self.bytes -= buf.capacity();
        buf.truncate(len);
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

/// `len` bytes from a spare buffer of this thread where one fits (holding a former
/// allocation's bytes), else `None`.
fn spare(len: usize) -> Option<Vec<u8>> {
    SPARES.try_with(|s| s.borrow_mut().take(len)).ok().flatten()
}

thread_local! {
    /// The page of zeroes that the unwritten whole pages of an allocation made from a spare
    /// buffer stand for (one per thread, shared by reference).
    static ZERO_PAGE: SharedBytes = SharedBytes::from_vec(vec![0; PAGE]);
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

/// Bytes of an allocation, given back to this thread's spare buffers when the last reference
/// to them goes: the memory's own, or that of a frame or a page that shares them (see
/// [`SimMemory`]), whichever goes last.
#[derive(Clone)]
struct Buffer(Vec<u8>);

impl AsRef<[u8]> for Buffer {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl core::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Buffer({} bytes)", self.0.len())
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        // During thread teardown the spare buffers may be gone already: then just free.
        let _ = SPARES.try_with(|s| {
            if let Ok(mut spares) = s.try_borrow_mut() {
                spares.give(buf);
            }
        });
    }
}

/// Granule of the pages an allocation may hold by reference: a whole page written with bytes
/// held by reference keeps the reference instead of a copy.
pub const PAGE: usize = 4096;

/// One allocation: its bytes, and the whole pages of it that hold bytes by reference instead.
#[derive(Debug, Clone)]
struct Alloc {
    bytes: Arc<Buffer>,
    /// By page index, the pages written with bytes held by reference
    /// ([`HostMemory::dma_write_shared`]: a received payload kept as its frame carried it),
    /// each exactly [`PAGE`] bytes: they stand for those pages of `bytes`, whatever `bytes`
    /// holds there. Empty until the first such page (a slot per whole page then: a lookup
    /// per placed payload is an index, not a tree walk); in an allocation made from a spare
    /// buffer, every whole page starts as the page of zeroes.
    lent: Vec<Option<SharedBytes>>,
    /// How many of `lent` are pages.
    lent_pages: usize,
}

impl Alloc {
    /// `len` bytes that read as zeroes.
    fn new(len: usize) -> Self {
        let zero_page = ZERO_PAGE.try_with(SharedBytes::clone).ok();
        match (spare(len), zero_page) {
            (Some(mut bytes), Some(zero)) => {
                // Every whole page stands for the page of zeroes until it is written (a write
                // of less than the page copies the zeroes in first, as for any page held by
                // reference); only the partial last page is cleared here.
                let whole = len / PAGE;
                bytes[whole * PAGE..].fill(0);
                Alloc {
                    bytes: Arc::new(Buffer(bytes)),
                    lent: vec![Some(zero); whole],
                    lent_pages: whole,
                }
            }
            _ => Alloc {
                bytes: Arc::new(Buffer(vec![0; len])),
                lent: Vec::new(),
                lent_pages: 0,
            },
        }
    }

    fn len(&self) -> usize {
        self.bytes.0.len()
    }

    /// The end of `len` bytes at `off`, if the allocation holds them all.
    fn end(&self, off: usize, len: usize) -> Option<usize> {
        off.checked_add(len).filter(|&end| end <= self.len())
    }

    /// The indices of the lent pages `off..end` touches.
    fn lent_in(&self, off: usize, end: usize) -> impl Iterator<Item = usize> + '_ {
        // Most allocations never hold a page by reference: nothing to look at for them.
        let pages = if off < end && self.lent_pages > 0 {
            off / PAGE..end.div_ceil(PAGE).min(self.lent.len())
        } else {
            0..0
        };
        pages.filter(|&p| self.lent[p].is_some())
    }

    /// The page `page` holds by reference, if it does.
    fn lent_page(&self, page: usize) -> Option<&SharedBytes> {
        self.lent.get(page).and_then(Option::as_ref)
    }

    /// Takes back page `page`'s reference, if it holds one.
    fn take_lent(&mut self, page: usize) -> Option<SharedBytes> {
        let lent = self.lent.get_mut(page).and_then(Option::take);
        self.lent_pages -= usize::from(lent.is_some());
        lent
    }

    /// The bytes `off..off + len` in place, if they are all in `bytes`.
    fn view(&self, off: usize, len: usize) -> Option<&[u8]> {
        let end = self.end(off, len)?;
        if self.lent_in(off, end).next().is_some() {
            return None;
        }
        self.bytes.0.get(off..end)
    }

    /// Hands the bytes `off..off + len` to `f` in consecutive pieces (those in `bytes`, those
    /// of lent pages); `false` (nothing handed) if the allocation does not hold them all.
    fn pieces(&self, off: usize, len: usize, f: &mut dyn FnMut(&[u8])) -> bool {
        let Some(end) = self.end(off, len) else {
            return false;
        };
        let mut at = off;
        for page in self.lent_in(off, end) {
            let (start, stop) = (page * PAGE, ((page + 1) * PAGE).min(end));
            if at < start {
                f(&self.bytes.0[at..start]);
                at = start;
            }
            let lent = self.lent_page(page).map(SharedBytes::as_slice);
            f(lent
                .and_then(|b| b.get(at - start..stop - start))
                .unwrap_or_default());
            at = stop;
        }
        if at < end {
            f(&self.bytes.0[at..end]);
        }
        true
    }

    /// The bytes `off..off + len` to write in place: lent pages among them come back into
    /// `bytes` first (copied, unless the write covers them whole), and a buffer shared by
    /// reference is copied before it changes.
    fn write_view(&mut self, off: usize, len: usize) -> Option<&mut [u8]> {
        let end = self.end(off, len)?;
        let pages: Vec<usize> = self.lent_in(off, end).collect();
        for page in pages {
            let (start, stop) = (page * PAGE, (page + 1) * PAGE);
            let covered = off <= start && stop <= end;
            if let Some(lent) = self.take_lent(page).filter(|_| !covered) {
                Arc::make_mut(&mut self.bytes).0[start..stop].copy_from_slice(lent.as_slice());
            }
        }
        Arc::make_mut(&mut self.bytes).0.get_mut(off..end)
    }

    /// The bytes `off..off + len` by reference: a range of `bytes` clear of lent pages, or
    /// exactly one lent page.
    fn share(&self, off: usize, len: usize) -> Option<SharedBytes> {
        let end = self.end(off, len)?;
        let mut lent = self.lent_in(off, end);
        match (lent.next(), lent.next()) {
            (None, _) => SharedBytes::new(self.bytes.clone(), off..end),
            (Some(page), None) if off == page * PAGE && len == PAGE => {
                self.lent_page(page).cloned()
            }
            _ => None,
        }
    }

    /// Writes `data` at `off`: a whole page keeps the reference, anything else is copied.
    fn write_shared(&mut self, off: usize, data: &SharedBytes) -> bool {
        // PAGE is a power of two.
        if off & (PAGE - 1) == 0 && data.len() == PAGE && self.end(off, PAGE).is_some() {
            if self.lent.is_empty() {
                self.lent.resize(self.len() / PAGE, None);
            }
            if let Some(slot) = self.lent.get_mut(off / PAGE) {
                self.lent_pages += usize::from(slot.is_none());
                *slot = Some(data.clone());
                return true;
            }
        }
        match self.write_view(off, data.len()) {
            Some(m) => {
                m.copy_from_slice(data.as_slice());
                true
            }
            None => false,
        }
    }
}

/// Simulated DMA memory.
///
/// An allocation may be shared by reference ([`HostMemory::dma_share`]: a frame carrying its
/// payload that way); a write to it then copies it first ([`Arc::make_mut`]), so what was
/// shared keeps the bytes of the moment it was shared, as a copy made then would. A whole,
/// aligned [`PAGE`] written with bytes held by reference ([`HostMemory::dma_write_shared`]: a
/// received payload) keeps the reference instead of a copy; reads see its bytes, and a later
/// write to that page copies them in first. A clone of the memory shares everything the same
/// way.
#[derive(Debug, Clone)]
pub struct SimMemory {
    /// Allocations, sorted by base address. A handful per NIC (rings, queues, regions), looked
    /// up on every DMA access: a binary search over one array beats a tree walk there.
    allocs: Vec<(u64, Alloc)>,
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
            allocs: Vec::new(),
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
        self.insert(base, Alloc::new(len));
        Some(base)
    }

    /// Maps `len` zeroed bytes at exactly `addr` (for replaying a capture whose addresses are
    /// fixed). Fails if it overlaps an existing allocation.
    pub fn map_at(&mut self, addr: u64, len: usize) -> bool {
        let end = match addr.checked_add(len as u64) {
            Some(e) => e,
            None => return false,
        };
        // The allocation with the highest base below `end` is the only one that can reach
        // into `addr..end` (allocations do not overlap each other).
        let overlaps = self
            .allocs
            .partition_point(|(b, _)| *b < end)
            .checked_sub(1)
            .is_some_and(|i| self.allocs[i].0 + self.allocs[i].1.len() as u64 > addr);
        if overlaps {
            return false;
        }
        self.insert(addr, Alloc::new(len));
        self.next = self.next.max(end + 4096);
        true
    }

    /// Adds an allocation at `base`, keeping the array sorted.
    fn insert(&mut self, base: u64, a: Alloc) {
        let at = self.allocs.partition_point(|(b, _)| *b < base);
        self.allocs.insert(at, (base, a));
    }

    /// Index of the allocation with the highest base at or below `addr`.
    fn below(&self, addr: u64) -> Option<usize> {
        self.allocs
            .partition_point(|(b, _)| *b <= addr)
            .checked_sub(1)
    }

    /// The allocation holding `addr` if any (the one below it, whose bounds the caller
    /// checks), with the offset of `addr` in it.
    fn at(&self, addr: u64) -> Option<(&Alloc, usize)> {
        let (base, a) = &self.allocs[self.below(addr)?];
        Some((a, usize::try_from(addr - base).ok()?))
    }

    fn at_mut(&mut self, addr: u64) -> Option<(&mut Alloc, usize)> {
        let i = self.below(addr)?;
        let (base, a) = &mut self.allocs[i];
        Some((a, usize::try_from(addr - *base).ok()?))
    }

    /// The `len` bytes at `addr` in place, if one allocation holds them all in its own bytes
    /// (none of them in a page held by reference).
    fn view(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let (a, off) = self.at(addr)?;
        a.view(off, len)
    }

    /// Hands the `len` bytes of host memory at `iova` to `f` in place, in one or more
    /// consecutive pieces (pages held by reference are pieces of their own), or says why not
    /// (and hands nothing).
    pub fn host_inspect(
        &self,
        iova: u64,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), crate::NicError> {
        match self.at(iova) {
            Some((a, off)) if a.pieces(off, len, f) => Ok(()),
            _ => Err(crate::NicError::BadDmaAddress { addr: iova, len }),
        }
    }

    /// Reads host memory (the CPU side).
    pub fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool {
        let Some((a, off)) = self.at(addr) else {
            return false;
        };
        let mut at = 0;
        a.pieces(off, buf.len(), &mut |piece| {
            buf[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        })
    }

    /// Writes host memory (the CPU side); not recorded as a NIC write.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> bool {
        match self
            .at_mut(addr)
            .and_then(|(a, off)| a.write_view(off, data.len()))
        {
            Some(m) => {
                m.copy_from_slice(data);
                true
            }
            None => false,
        }
    }

    /// Records a NIC write, if recording.
    fn log_write(&mut self, addr: u64, data: &[u8]) {
        if let Some(log) = &mut self.log {
            log.push(DmaWrite {
                addr,
                len: data.len(),
                crc32: crc32fast::hash(data),
            });
        }
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
        self.log_write(addr, data);
        Ok(())
    }

    fn dma_view(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.view(addr, len)
    }

    fn dma_share(&self, addr: u64, len: usize) -> Option<SharedBytes> {
        let (a, off) = self.at(addr)?;
        a.share(off, len)
    }

    fn dma_write_shared(&mut self, addr: u64, data: &SharedBytes) -> Result<(), DmaFault> {
        let written = self
            .at_mut(addr)
            .is_some_and(|(a, off)| a.write_shared(off, data));
        if !written {
            return Err(DmaFault);
        }
        self.log_write(addr, data.as_slice());
        Ok(())
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
        // A second memory on this thread gets the first one's buffer back, reading as zeroes;
        // a smaller allocation too (within half of it, its partial last page included), a
        // much smaller one a buffer of its own.
        for want in [len, len - 100, SPARE_MIN / 2] {
            let mut m = SimMemory::default();
            let b = m.alloc(want, 64).unwrap();
            let mut now = vec![0xff; want];
            assert!(m.dma_read(b, &mut now).is_ok());
            assert!(now.iter().all(|&x| x == 0));
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

    #[test]
    fn a_whole_page_written_by_reference_keeps_the_reference() {
        let mut sender = SimMemory::default();
        let from = sender.alloc(2 * PAGE, PAGE).unwrap();
        assert!(sender.dma_write(from, &vec![7; 2 * PAGE]).is_ok());
        let page = sender.dma_share(from + PAGE as u64, PAGE).unwrap();
        let mut m = SimMemory::default();
        let base = m.alloc(3 * PAGE, PAGE).unwrap();
        let at = base + PAGE as u64;
        assert!(m.dma_write_shared(at, &page).is_ok());
        // Not copied: the memory hands out the very bytes, and has none of its own there.
        let again = m.dma_share(at, PAGE).unwrap();
        assert!(std::ptr::eq(again.as_slice(), page.as_slice()));
        assert!(m.dma_view(at, PAGE).is_none());
        assert!(m.dma_view(base, PAGE).is_some());
        let mut pieces = Vec::new();
        assert!(
            m.host_inspect(base, 3 * PAGE, &mut |p| pieces.push(p.to_vec()))
                .is_ok()
        );
        assert_eq!(pieces, vec![vec![0; PAGE], vec![7; PAGE], vec![0; PAGE]]);
        // Only whole aligned pages: anything else is copied.
        let part = sender.dma_share(from, 100).unwrap();
        assert!(m.dma_write_shared(base, &part).is_ok());
        assert!(m.dma_view(base, 100).is_some());
        // A write into the page brings its bytes back into the memory's own.
        assert!(m.dma_write(at + 10, &[1; 5]).is_ok());
        assert!(
            m.dma_view(at, PAGE)
                .is_some_and(|v| v[9] == 7 && v[10] == 1)
        );
        assert_eq!(page.as_slice(), &[7; PAGE]);
    }

    #[test]
    fn a_buffer_goes_back_to_the_spares_when_its_last_sharer_goes() {
        // On a thread of its own: the spare buffers are the thread's.
        std::thread::spawn(|| {
            let spare = || SPARES.with(|s| s.borrow().bytes);
            let mut m = SimMemory::default();
            let a = m.alloc(2 * SPARE_MIN, 4096).unwrap();
            let lent = m.dma_share(a, 10).unwrap();
            drop(m);
            assert_eq!(spare(), 0, "a frame still holds part of it");
            drop(lent);
            assert_eq!(spare(), 2 * SPARE_MIN);
        })
        .join()
        .unwrap();
    }

    /// One operation on a memory under test (offsets from the allocation's base).
    #[derive(Debug, Clone)]
    enum Op {
        /// A NIC write of `len` bytes of `byte`.
        Write(usize, usize, u8),
        /// A host write of `len` bytes of `byte`.
        HostWrite(usize, usize, u8),
        /// A NIC write of bytes held by reference: `len` bytes of the sender's memory at
        /// `from`, after the sender wrote `byte` there.
        WriteShared(usize, usize, usize, u8),
        Read(usize, usize),
        Inspect(usize, usize),
        View(usize, usize),
        Share(usize, usize),
        /// Clones the memory (the clone must keep what it held, whatever happens next).
        Clone,
    }

    /// Operations on an allocation of `pages` pages and a bit.
    fn arb_op(pages: usize) -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        // Offsets and lengths around pages: whole aligned pages (kept by reference) and
        // everything else (copied), in bounds and out.
        let off = prop_oneof![(0..pages + 1).prop_map(|p| p * PAGE), 0..(pages + 1) * PAGE];
        let len = prop_oneof![Just(PAGE), 0usize..2 * PAGE + 10];
        prop_oneof![
            (off.clone(), len.clone(), any::<u8>()).prop_map(|(o, l, b)| Op::Write(o, l, b)),
            (off.clone(), len.clone(), any::<u8>()).prop_map(|(o, l, b)| Op::HostWrite(o, l, b)),
            (off.clone(), len.clone(), 0usize..4 * PAGE, any::<u8>())
                .prop_map(|(o, l, f, b)| Op::WriteShared(o, l, f, b)),
            (off.clone(), len.clone()).prop_map(|(o, l)| Op::Read(o, l)),
            (off.clone(), len.clone()).prop_map(|(o, l)| Op::Inspect(o, l)),
            (off.clone(), len.clone()).prop_map(|(o, l)| Op::View(o, l)),
            (off, len).prop_map(|(o, l)| Op::Share(o, l)),
            Just(Op::Clone),
        ]
    }

    proptest::proptest! {
        /// Simulated memory reads as a flat array written by the same operations, whatever
        /// mix of copied writes, pages kept by reference, shares and clones made it; what was
        /// shared keeps the bytes of the moment it was shared.
        #[test]
        fn memory_reads_as_a_flat_array_whatever_holds_its_pages(
            ops in proptest::collection::vec(arb_op(6), 1..60),
        ) {
            // Six pages and a bit: the last page is partial (never held by reference).
            reads_as_a_flat_array(ops, 6 * PAGE + 100, false)?;
        }

        /// The same in an allocation made from a spare buffer full of a former allocation's
        /// bytes: it reads as zeroes until written.
        #[test]
        fn a_reused_buffer_reads_as_a_flat_array_of_zeroes_until_written(
            ops in proptest::collection::vec(arb_op(16), 1..60),
        ) {
            reads_as_a_flat_array(ops, 16 * PAGE + 100, true)?;
        }
    }

    /// Applies `ops` to an allocation of `len` bytes (first filling and dropping one of the
    /// same size, if `reused`, so that its buffer comes back as a spare) and to a flat array,
    /// and checks that they agree throughout.
    fn reads_as_a_flat_array(
        ops: Vec<Op>,
        len: usize,
        reused: bool,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        if reused {
            let mut old = SimMemory::default();
            let a = old.alloc(len, PAGE).unwrap();
            proptest::prop_assert!(old.dma_write(a, &vec![0xee; len]).is_ok());
        }
        let mut m = SimMemory::default();
        let base = m.alloc(len, PAGE).unwrap();
        if reused {
            // The former allocation's buffer, not a fresh one.
            let pages = m.allocs.iter().map(|(_, a)| a.lent_pages).sum::<usize>();
            proptest::prop_assert_eq!(pages, len / PAGE);
        }
        let mut flat = vec![0u8; len];
        let mut sender = SimMemory::default();
        let from_base = sender.alloc(8 * PAGE, PAGE).unwrap();
        let mut shares = Vec::new();
        let mut clones = Vec::new();
        let fits = |o: usize, l: usize| o + l <= len;
        for op in ops {
            match op {
                Op::Write(o, l, b) => {
                    let ok = m.dma_write(base + o as u64, &vec![b; l]).is_ok();
                    proptest::prop_assert_eq!(ok, fits(o, l));
                    if ok {
                        flat[o..o + l].fill(b);
                    }
                }
                Op::HostWrite(o, l, b) => {
                    let ok = m.host_write(base + o as u64, &vec![b; l]).is_ok();
                    proptest::prop_assert_eq!(ok, fits(o, l));
                    if ok {
                        flat[o..o + l].fill(b);
                    }
                }
                Op::WriteShared(o, l, f, b) => {
                    let at = from_base + f as u64;
                    let data: Vec<u8> = (0..l).map(|i| b ^ (i as u8)).collect();
                    proptest::prop_assert!(sender.dma_write(at, &data).is_ok());
                    let shared = sender.dma_share(at, l).unwrap();
                    let ok = m.dma_write_shared(base + o as u64, &shared).is_ok();
                    proptest::prop_assert_eq!(ok, fits(o, l));
                    if ok {
                        flat[o..o + l].copy_from_slice(&data);
                    }
                    // The sender writing again changes nothing it lent.
                    proptest::prop_assert!(sender.dma_write(at, &vec![!b; l]).is_ok());
                }
                Op::Read(o, l) => {
                    let mut buf = vec![0xa5; l];
                    let ok = m.dma_read(base + o as u64, &mut buf).is_ok();
                    proptest::prop_assert_eq!(ok, fits(o, l));
                    if ok {
                        proptest::prop_assert_eq!(&buf[..], &flat[o..o + l]);
                    }
                }
                Op::Inspect(o, l) => {
                    let mut seen = Vec::new();
                    let ok = m
                        .host_inspect(base + o as u64, l, &mut |p| seen.extend_from_slice(p))
                        .is_ok();
                    proptest::prop_assert_eq!(ok, fits(o, l));
                    if ok {
                        proptest::prop_assert_eq!(&seen[..], &flat[o..o + l]);
                    } else {
                        proptest::prop_assert!(seen.is_empty());
                    }
                }
                Op::View(o, l) => {
                    if let Some(v) = m.dma_view(base + o as u64, l) {
                        proptest::prop_assert_eq!(v, &flat[o..o + l]);
                    }
                    if !fits(o, l) {
                        proptest::prop_assert!(m.dma_view(base + o as u64, l).is_none());
                    }
                }
                Op::Share(o, l) => {
                    if let Some(s) = m.dma_share(base + o as u64, l) {
                        proptest::prop_assert_eq!(s.as_slice(), &flat[o..o + l]);
                        shares.push((s, flat[o..o + l].to_vec()));
                    }
                    if !fits(o, l) {
                        proptest::prop_assert!(m.dma_share(base + o as u64, l).is_none());
                    }
                }
                Op::Clone => clones.push((m.clone(), flat.clone())),
            }
        }
        let mut all = vec![0; len];
        proptest::prop_assert!(m.dma_read(base, &mut all).is_ok());
        proptest::prop_assert_eq!(all, flat);
        for (s, then) in shares {
            proptest::prop_assert_eq!(s.as_slice(), &then[..]);
        }
        drop(sender);
        for (mut c, then) in clones {
            let mut all = vec![0; len];
            proptest::prop_assert!(c.dma_read(base, &mut all).is_ok());
            proptest::prop_assert_eq!(all, then);
        }
        Ok(())
    }
}
