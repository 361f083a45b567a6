//! A first-in first-out queue whose front entry waits in a register of its own.
//!
//! rust-hdl's `SynchronousFIFO` reads its RAM synchronously at the pointer it is about to
//! have: when the consumer pops, the read address becomes the read pointer plus one in the
//! same cycle, and the word read there lands in the output register at the clock edge. So the
//! consumer's pop decision runs through the pointer increment and the RAM's read before it
//! reaches every bit of the output (in the whole core, the receive engine's pop in front of the
//! 800-bit parse result: 8 levels of logic, `cargo xtask synth --depth nic`).
//!
//! Here the RAM is read asynchronously at a registered pointer, and the front entry is loaded
//! from it into `data_out` whenever the front is free or popped. The pop is then only the load
//! enable of that register. `empty` leaves a flip-flop too. A word written while the RAM is
//! empty and the front free (or popped at that edge) goes straight into the front, shown in
//! the next cycle; behind a waiting entry it goes into the RAM, readable once its write has
//! landed (one clock after it is taken, see [`LutRam`]), so it reaches the front two clock
//! edges after it is taken at the earliest. The queue holds `2^N` entries in the RAM plus the
//! front one.

use crate::ram::LutRam;
use rust_hdl::prelude::*;

/// A queue of `2^N` words of `W` bits (plus the front word), `NP1 = N + 1`.
///
/// `almost_full` counts the RAM's entries as rust-hdl's `SynchronousFIFO` counts its own (a
/// write is seen one clock after it is taken) and rises at `2^N - MARGIN` of them; the front
/// entry is not counted, so the queue holds at least what a `SynchronousFIFO` with the same
/// parameters would before it says full.
#[derive(LogicBlock)]
pub struct FrontFifo<const W: usize, const N: usize, const NP1: usize, const MARGIN: u32> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Take `data_in` at this clock edge (ignored while `full`).
    pub write: Signal<In, Bit>,
    /// The word written.
    pub data_in: Signal<In, Bits<W>>,
    /// The RAM holds `2^N` entries: a write is not taken.
    pub full: Signal<Out, Bit>,
    /// At least `2^N - MARGIN` entries were in the RAM at the last clock edge but one.
    pub almost_full: Signal<Out, Bit>,
    /// Drop the front entry at this clock edge (ignored while `empty`).
    pub read: Signal<In, Bit>,
    /// The front entry (from a flip-flop).
    pub data_out: Signal<Out, Bits<W>>,
    /// No front entry (from a flip-flop).
    pub empty: Signal<Out, Bit>,
    ram: LutRam<W, N>,
    front: DFF<Bits<W>>,
    front_valid: DFF<Bit>,
    // The RAM's pointers carry one bit more than its address, so full and empty differ.
    write_ptr: DFF<Bits<NP1>>,
    // `write_ptr` one clock later: the entries before it have landed and may be read.
    landed_ptr: DFF<Bits<NP1>>,
    read_ptr: DFF<Bits<NP1>>,
    take: Signal<Local, Bit>,
    free: Signal<Local, Bit>,
    bypass: Signal<Local, Bit>,
    load: Signal<Local, Bit>,
    fill: Signal<Local, Bits<NP1>>,
    size: Constant<Bits<NP1>>,
    almost_level: Constant<Bits<NP1>>,
}

impl<const W: usize, const N: usize, const NP1: usize, const MARGIN: u32> Default
    for FrontFifo<W, N, NP1, MARGIN>
{
    /// A queue (`NP1` must be `N + 1`, and `MARGIN` below `2^N`).
    fn default() -> Self {
        assert_eq!(N + 1, NP1, "pointer width");
        assert!((MARGIN as u64) < 1 << N, "margin");
        FrontFifo {
            clock: Default::default(),
            write: Default::default(),
            data_in: Default::default(),
            full: Default::default(),
            almost_full: Default::default(),
            read: Default::default(),
            data_out: Default::default(),
            empty: Default::default(),
            ram: Default::default(),
            front: Default::default(),
            front_valid: Default::default(),
            write_ptr: Default::default(),
            landed_ptr: Default::default(),
            read_ptr: Default::default(),
            take: Default::default(),
            free: Default::default(),
            bypass: Default::default(),
            load: Default::default(),
            fill: Default::default(),
            size: Constant::new((1_u64 << N).to_bits()),
            almost_level: Constant::new(((1_u64 << N) - MARGIN as u64).to_bits()),
        }
    }
}

impl<const W: usize, const N: usize, const NP1: usize, const MARGIN: u32> Logic
    for FrontFifo<W, N, NP1, MARGIN>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            front,
            front_valid,
            write_ptr,
            landed_ptr,
            read_ptr
        );
        self.ram.write_clock.next = self.clock.val();
        self.data_out.next = self.front.q.val();
        self.empty.next = !self.front_valid.q.val();

        // Write side. A word written while the RAM is empty and the front is free (or
        // popped) goes straight to the front: the RAM's extra edge is paid only behind a
        // waiting entry.
        self.full.next = (self.write_ptr.q.val() - self.read_ptr.q.val()) == self.size.val();
        self.free.next = self.read.val() | !self.front_valid.q.val();
        self.bypass.next =
            self.write.val() & (self.write_ptr.q.val() == self.read_ptr.q.val()) & self.free.val();
        self.take.next = self.write.val() & !self.full.val() & !self.bypass.val();
        self.ram.write_enable.next = self.take.val();
        self.ram.write_address.next = self.write_ptr.q.val().get_bits::<N>(0);
        self.ram.write_data.next = self.data_in.val();
        if self.take.val() {
            self.write_ptr.d.next = self.write_ptr.q.val() + 1_u64;
        }
        self.landed_ptr.d.next = self.write_ptr.q.val();
        self.fill.next = self.landed_ptr.q.val() - self.read_ptr.q.val();
        self.almost_full.next = self.fill.val() >= self.almost_level.val();

        // Read side: the front is reloaded from the RAM whenever it is free or popped.
        self.ram.read_address.next = self.read_ptr.q.val().get_bits::<N>(0);
        self.load.next = self.free.val() & (self.landed_ptr.q.val() != self.read_ptr.q.val());
        if self.load.val() {
            self.front.d.next = self.ram.read_data.val();
            self.read_ptr.d.next = self.read_ptr.q.val() + 1_u64;
            self.front_valid.d.next = true;
        } else if self.bypass.val() {
            self.front.d.next = self.data_in.val();
            self.front_valid.d.next = true;
        } else if self.read.val() {
            self.front_valid.d.next = false;
        }
    }
}
