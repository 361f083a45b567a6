//! Per-flow receive state in block RAM: the cumulative FSN, the 256-bit SACK window above it,
//! and the pending-ACK counters, with the operations the receive engine needs. It is the
//! hardware of [`ferroce_proto::model::sack::FlowRxState`] and must agree with it operation for
//! operation.
//!
//! One operation at a time (`cmd_ready` low while busy), each a read-modify-write of one entry,
//! so two operations on the same flow always see each other's effect. Results appear with
//! `res_valid` for one cycle:
//!
//! | op | effect | result |
//! |---|---|---|
//! | [`OP_INIT`] | entry := cum `cmd_fsn`, empty window, counters 0 | the new state |
//! | [`OP_CLASSIFY`] | CE count += `late_ce` | class of `cmd_fsn` (duplicate / new with distance and gap / out of window), state |
//! | [`OP_ACCEPT`] | mark distance `cmd_distance` received, advance cum over the contiguous run, unacked += 1 | the new state |
//! | [`OP_ACK`] | unacked := 0, CE count := 0 | the state before clearing (what the ACK reports) |
//! | [`OP_READ`] | none | the state |
//!
//! The entry of the last operation stays in registers (written back to RAM by every operation
//! that changes it), so an operation on the same flow as the one before — the accept and the
//! ACK after a classify, or back-to-back packets of one flow — skips the RAM read. The search
//! for the run of received FSNs above the cumulative one (a two-level tree, 16 groups of 16,
//! in three register stages) runs continuously on the registered window, so an accept does not
//! wait for it unless the window changed in the last two cycles.
//!
//! Latency from the cycle the operation is taken to `res_valid`: ACK, read and init 2 cycles on
//! the same flow as the operation before, else 3 (the block RAM output is registered before
//! any logic uses it); classify one more (its 256-way bit select takes two register stages);
//! accept 3 on the same flow, else 5.

use crate::ram::BlockRam;
use rust_hdl::prelude::*;

// The classification below tests `distance > 256` bit by bit.
const _: () = assert!(ferroce_proto::wire::SACK_BITS == 256);

/// Operation: initialise an entry.
pub const OP_INIT: u64 = 0;
/// Operation: classify an arriving FSN.
pub const OP_CLASSIFY: u64 = 1;
/// Operation: accept a classified FSN.
pub const OP_ACCEPT: u64 = 2;
/// Operation: take the state for an ACK and clear the pending counters.
pub const OP_ACK: u64 = 3;
/// Operation: read only.
pub const OP_READ: u64 = 4;

/// Class: duplicate.
pub const CLASS_DUPLICATE: u64 = 0;
/// Class: new, inside the window.
pub const CLASS_NEW: u64 = 1;
/// Class: beyond the window.
pub const CLASS_OUT_OF_WINDOW: u64 = 2;

#[derive(LogicState, Debug, Copy, Clone, PartialEq)]
enum Phase {
    Idle,
    Read,
    Look,
    Exec,
    Run,
    Shift,
}

/// The flow table, `2^A` entries.
#[derive(LogicBlock)]
pub struct FlowTable<const A: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset of the control state (not of the entries).
    pub reset: Signal<In, Bit>,
    /// An operation is offered.
    pub cmd_valid: Signal<In, Bit>,
    /// The table takes the offered operation this cycle.
    pub cmd_ready: Signal<Out, Bit>,
    /// `OP_*`.
    pub cmd_op: Signal<In, Bits<3>>,
    /// Entry index.
    pub cmd_index: Signal<In, Bits<A>>,
    /// FSN (classify) or initial cumulative FSN (init).
    pub cmd_fsn: Signal<In, Bits<24>>,
    /// The packet of the classify taken in the cycle before was CE-marked (sampled only in
    /// the cycle after a classify is taken). A cycle late so that a requester whose checks on
    /// the packet finish after it issued the classify can still withhold the mark of a packet
    /// it then refuses: the classify's only change to the entry is this count.
    pub late_ce: Signal<In, Bit>,
    /// Distance from a previous classify (accept).
    pub cmd_distance: Signal<In, Bits<9>>,
    /// A result is presented this cycle.
    pub res_valid: Signal<Out, Bit>,
    /// `CLASS_*` (classify).
    pub res_class: Signal<Out, Bits<2>>,
    /// Distance above the cumulative FSN (classify, new).
    pub res_distance: Signal<Out, Bits<9>>,
    /// The FSN just below is missing (classify, new).
    pub res_opens_gap: Signal<Out, Bit>,
    /// Cumulative FSN.
    pub res_cum: Signal<Out, Bits<24>>,
    /// Window: bit i = FSN cum + 1 + i.
    pub res_bitmap: Signal<Out, Bits<256>>,
    /// Packets consumed since the last ACK.
    pub res_unacked: Signal<Out, Bits<16>>,
    /// CE marks since the last ACK.
    pub res_ce: Signal<Out, Bits<16>>,
    /// `ACK_COALESCE`: what [`FlowTable::res_ack_due`] compares the count with.
    pub coalesce: Signal<In, Bits<32>>,
    /// `res_unacked` ≥ `coalesce`, registered beside it, so that a user deciding on an ACK
    /// in the cycle the result arrives selects a flag instead of running a compare.
    pub res_ack_due: Signal<Out, Bit>,
    /// `res_unacked` == 1, likewise.
    pub res_unacked_one: Signal<Out, Bit>,

    k_op_init: Constant<Bits<3>>,
    k_op_classify: Constant<Bits<3>>,
    k_op_accept: Constant<Bits<3>>,
    k_op_ack: Constant<Bits<3>>,
    k_dup: Constant<Bits<2>>,
    k_new: Constant<Bits<2>>,
    k_oow: Constant<Bits<2>>,

    ram: BlockRam<320, A>,
    phase: DFF<Phase>,
    op: DFF<Bits<3>>,
    index: DFF<Bits<A>>,
    fsn: DFF<Bits<24>>,
    ce: DFF<Bit>,
    /// An operation was taken in the last cycle: `late_ce` is sampled now.
    taken: DFF<Bit>,
    distance: DFF<Bits<9>>,
    /// `distance` is zero (an in-order accept), registered beside it.
    in_order: DFF<Bit>,
    /// The window bit an out-of-order accept sets (`1 << (distance − 1)`), decoded in every
    /// cycle from the registered distance: an accept passes through Run before Shift uses it,
    /// so Shift ORs in a register instead of decoding the distance on its way into the window.
    set_mask: DFF<Bits<256>>,
    cum: DFF<Bits<24>>,
    bitmap: DFF<Bits<256>>,
    unacked: DFF<Bits<16>>,
    ce_count: DFF<Bits<16>>,
    run: DFF<Bits<9>>,
    diff_q: DFF<Bits<24>>,
    /// The 16 bitmap bits from `16g − 1` / `16g − 2` up, for the distance's group `g` (its
    /// bits 8..4), registered in every cycle (Exec uses what Look loaded), so Exec selects
    /// among 16, not 256.
    at_group: DFF<Bits<16>>,
    below_group: DFF<Bits<16>>,
    /// The window shifted down by the run's whole groups (`16 · group_q`), registered beside
    /// `run`, so that Shift moves it by the last 1..=16 places only.
    coarse: DFF<Bits<256>>,
    /// The lowest group of the window that is not full, one-hot (zero when all are full):
    /// the search's first stage, so that the second selects that group with an AND-OR
    /// rather than through a priority chain and a 16-way multiplexer in one cycle.
    first_hot_q: DFF<Bits<16>>,
    group_q: DFF<Bits<5>>,
    chunk_q: DFF<Bits<16>>,
    out_valid: DFF<Bit>,
    out_class: DFF<Bits<2>>,
    out_distance: DFF<Bits<9>>,
    out_gap: DFF<Bit>,
    out_cum: DFF<Bits<24>>,
    out_bitmap: DFF<Bits<256>>,
    out_unacked: DFF<Bits<16>>,
    out_ack_due: DFF<Bit>,
    out_unacked_one: DFF<Bit>,
    out_ce: DFF<Bits<16>>,
    // The registers hold the entry at `cached_index` (as the RAM has it).
    cached: DFF<Bit>,
    cached_index: DFF<Bits<A>>,
    // Cycles until an in-order accept may leave Run: at 0, `run` describes the registered
    // window by the next cycle, when Shift uses it.
    settle: DFF<Bits<2>>,

    word: Signal<Local, Bits<320>>,
    hit: Signal<Local, Bit>,
    r_cum: Signal<Local, Bits<24>>,
    r_bitmap: Signal<Local, Bits<256>>,
    r_unacked: Signal<Local, Bits<16>>,
    r_ce: Signal<Local, Bits<16>>,
    diff: Signal<Local, Bits<24>>,
    /// The bitmap a word up (bit `32 + k` = bitmap bit `k`), shifted down by the distance's
    /// group: its bits 31..47 are then the group's bits as seen from distance `d` (bitmap bit
    /// `d − 1`) and 30..46 the same one place lower (bit `d − 2`), so the classification
    /// selects by the distance itself instead of through a subtraction. One 17-bit select
    /// serves both, where two 272-bit copies shifted by one and two bits each needed 16.
    window_up: Signal<Local, Bits<288>>,
    window_group: Signal<Local, Bits<288>>,
    group_bits: Signal<Local, Bits<17>>,
    /// Distance bits 22..9 all zero, bits 7..0 all zero: the window compares as flat logic.
    diff_hi_zero: Signal<Local, Bit>,
    diff_lo_zero: Signal<Local, Bit>,
    group_full: Signal<Local, Bits<16>>,
    group_zero: Signal<Local, Bits<4>>,
    first_group: Signal<Local, Bits<5>>,
    first_hot: Signal<Local, Bits<16>>,
    below_full: Signal<Local, Bit>,
    zero_found: Signal<Local, Bit>,
    chunk: Signal<Local, Bits<16>>,
    ce_next: Signal<Local, Bits<16>>,
    next_cum: Signal<Local, Bits<24>>,
    next_bitmap: Signal<Local, Bits<256>>,
    next_unacked: Signal<Local, Bits<16>>,
    next_ce: Signal<Local, Bits<16>>,
    // The entry's low word (unacked | ce) packed before it is widened: the same wires, but a
    // simulator shifts within a machine word, not a 320-bit vector by half a word.
    wd_lo: Signal<Local, Bits<32>>,
    write_back: Signal<Local, Bit>,
}

impl<const A: usize> Default for FlowTable<A> {
    fn default() -> Self {
        FlowTable {
            clock: Default::default(),
            reset: Default::default(),
            cmd_valid: Default::default(),
            cmd_ready: Default::default(),
            cmd_op: Default::default(),
            cmd_index: Default::default(),
            cmd_fsn: Default::default(),
            late_ce: Default::default(),
            cmd_distance: Default::default(),
            res_valid: Default::default(),
            res_class: Default::default(),
            res_distance: Default::default(),
            res_opens_gap: Default::default(),
            res_cum: Default::default(),
            res_bitmap: Default::default(),
            res_unacked: Default::default(),
            res_ce: Default::default(),
            coalesce: Default::default(),
            res_ack_due: Default::default(),
            res_unacked_one: Default::default(),
            k_op_init: Constant::new(OP_INIT.to_bits()),
            k_op_classify: Constant::new(OP_CLASSIFY.to_bits()),
            k_op_accept: Constant::new(OP_ACCEPT.to_bits()),
            k_op_ack: Constant::new(OP_ACK.to_bits()),
            k_dup: Constant::new(CLASS_DUPLICATE.to_bits()),
            k_new: Constant::new(CLASS_NEW.to_bits()),
            k_oow: Constant::new(CLASS_OUT_OF_WINDOW.to_bits()),
            ram: Default::default(),
            phase: Default::default(),
            op: Default::default(),
            index: Default::default(),
            fsn: Default::default(),
            ce: Default::default(),
            taken: Default::default(),
            distance: Default::default(),
            in_order: Default::default(),
            set_mask: Default::default(),
            cum: Default::default(),
            bitmap: Default::default(),
            unacked: Default::default(),
            ce_count: Default::default(),
            run: Default::default(),
            diff_q: Default::default(),
            at_group: Default::default(),
            below_group: Default::default(),
            coarse: Default::default(),
            first_hot_q: Default::default(),
            group_q: Default::default(),
            chunk_q: Default::default(),
            out_valid: Default::default(),
            out_class: Default::default(),
            out_distance: Default::default(),
            out_gap: Default::default(),
            out_cum: Default::default(),
            out_bitmap: Default::default(),
            out_unacked: Default::default(),
            out_ack_due: Default::default(),
            out_unacked_one: Default::default(),
            out_ce: Default::default(),
            cached: Default::default(),
            cached_index: Default::default(),
            settle: Default::default(),
            word: Default::default(),
            hit: Default::default(),
            r_cum: Default::default(),
            r_bitmap: Default::default(),
            r_unacked: Default::default(),
            r_ce: Default::default(),
            diff: Default::default(),
            window_up: Default::default(),
            window_group: Default::default(),
            group_bits: Default::default(),
            diff_hi_zero: Default::default(),
            diff_lo_zero: Default::default(),
            group_full: Default::default(),
            group_zero: Default::default(),
            first_group: Default::default(),
            first_hot: Default::default(),
            below_full: Default::default(),
            zero_found: Default::default(),
            chunk: Default::default(),
            ce_next: Default::default(),
            next_cum: Default::default(),
            next_bitmap: Default::default(),
            next_unacked: Default::default(),
            next_ce: Default::default(),
            wd_lo: Default::default(),
            write_back: Default::default(),
        }
    }
}

impl<const A: usize> Logic for FlowTable<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            phase,
            op,
            index,
            fsn,
            ce,
            taken,
            distance,
            in_order,
            set_mask,
            cum,
            bitmap,
            unacked,
            ce_count,
            run,
            out_valid,
            out_class,
            out_distance,
            out_gap,
            out_cum,
            out_bitmap,
            out_unacked,
            out_ack_due,
            out_unacked_one,
            out_ce,
            diff_q,
            at_group,
            below_group,
            coarse,
            first_hot_q,
            group_q,
            chunk_q,
            cached,
            cached_index,
            settle
        );
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.ram.read_address.next = self.cmd_index.val();
        self.ram.write_address.next = self.index.q.val();
        self.ram.write_enable.next = false;
        self.cmd_ready.next = false;
        self.out_valid.d.next = false;
        self.write_back.next = false;
        // The phase after the one that took the operation (Read or Look for a classify,
        // both before Exec adds the mark).
        self.taken.d.next = false;
        if self.taken.q.val() {
            self.ce.d.next = self.late_ce.val();
        }

        // The entry as read from RAM: cum | bitmap | unacked | ce.
        self.word.next = self.ram.read_data.val();
        self.r_cum.next = self.word.val().get_bits::<24>(288);
        self.r_bitmap.next = self.word.val().get_bits::<256>(32);
        self.r_unacked.next = self.word.val().get_bits::<16>(16);
        self.r_ce.next = self.word.val().get_bits::<16>(0);
        self.next_cum.next = self.cum.q.val();
        self.next_bitmap.next = self.bitmap.q.val();
        self.next_unacked.next = self.unacked.q.val();
        self.next_ce.next = self.ce_count.q.val();
        self.diff.next = self.fsn.q.val() - self.r_cum.val();
        self.window_up.next = bit_cast::<288, 256>(self.bitmap.q.val()) << 32_u64;
        // The distance's group, loaded in every cycle so that no enable waits for the phase;
        // Exec uses the value Look loaded.
        self.window_group.next = self.window_up.val()
            >> (bit_cast::<9, 5>(self.diff_q.q.val().get_bits::<5>(4)) << 4_u64);
        self.group_bits.next = self.window_group.val().get_bits::<17>(30);
        self.at_group.d.next = self.group_bits.val().get_bits::<16>(1);
        self.below_group.d.next = self.group_bits.val().get_bits::<16>(0);
        self.diff_hi_zero.next = self.diff_q.q.val().get_bits::<14>(9) == 0_u64;
        self.diff_lo_zero.next = self.diff_q.q.val().get_bits::<8>(0) == 0_u64;
        self.ce_next.next = self.ce_count.q.val();
        if self.ce.q.val() & (self.ce_count.q.val() != 0xFFFF_u64) {
            self.ce_next.next = self.ce_count.q.val() + 1_u64;
        }

        // Lowest zero of the window: which 16-bit group, then where in it.
        self.group_full.next = 0.into();
        for g in 0_usize..16 {
            self.chunk.next = self.bitmap.q.val().get_bits::<16>(16 * g);
            if self.chunk.val().all() {
                self.group_full.next = self.group_full.val().replace_bit(g, true);
            }
        }
        self.first_hot.next = 0.into();
        self.below_full.next = true;
        for g in 0_usize..16 {
            if self.below_full.val() & !self.group_full.val().get_bit(g) {
                self.first_hot.next = self.first_hot.val().replace_bit(g, true);
            }
            self.below_full.next = self.below_full.val() & self.group_full.val().get_bit(g);
        }
        self.first_hot_q.d.next = self.first_hot.val();
        // Second stage: the group's number (16 when every group is full) and its bits. It reads
        // the window as it is now, not as the first stage saw it; the two differ only while
        // `settle` says the search has not caught up.
        self.first_group.next = 0.into();
        if !self.first_hot_q.q.val().any() {
            self.first_group.next = 16.into();
        }
        self.chunk.next = 0.into();
        for g in 0_usize..16 {
            if self.first_hot_q.q.val().get_bit(g) {
                self.first_group.next = self.first_group.val() | g.to_bits::<5>();
                self.chunk.next = self.chunk.val() | self.bitmap.q.val().get_bits::<16>(16 * g);
            }
        }
        // The search runs every cycle, three register stages behind the window.
        self.group_q.d.next = self.first_group.val();
        self.chunk_q.d.next = self.chunk.val();
        if self.settle.q.val() != 0_u64 {
            self.settle.d.next = self.settle.q.val() - 1_u64;
        }
        self.hit.next = self.cached.q.val() & (self.cmd_index.val() == self.cached_index.q.val());
        self.group_zero.next = 0.into();
        self.zero_found.next = false;
        for i in 0_usize..16 {
            if !self.zero_found.val() & !self.chunk_q.q.val().get_bit(i) {
                self.group_zero.next = i.to_bits::<4>();
                self.zero_found.next = true;
            }
        }

        self.set_mask.d.next = bits::<256>(1) << (self.distance.q.val() - 1_u64);
        self.run.d.next = (bit_cast::<9, 5>(self.group_q.q.val()) << 4_u64)
            + bit_cast::<9, 4>(self.group_zero.val());
        // The same stage as `run`, from the same group: `coarse >> (run mod 16)` is
        // `bitmap >> run` (a group of 16 shifts everything out, as `run` = 256 should).
        self.coarse.d.next =
            self.bitmap.q.val() >> (bit_cast::<9, 5>(self.group_q.q.val()) << 4_u64);

        match self.phase.q.val() {
            Phase::Idle => {
                self.cmd_ready.next = true;
                // The operands are loaded in every Idle cycle, offered or not, so that their
                // enables follow the phase alone and not the user's `cmd_valid`; only the phase
                // waits for it. (`diff_q` is loaded again by Read on a miss.)
                self.op.d.next = self.cmd_op.val();
                self.index.d.next = self.cmd_index.val();
                self.fsn.d.next = self.cmd_fsn.val();
                self.taken.d.next = self.cmd_valid.val();
                self.distance.d.next = self.cmd_distance.val();
                self.in_order.d.next = self.cmd_distance.val() == 0_u64;
                self.diff_q.d.next = self.cmd_fsn.val() - self.cum.q.val();
                if self.cmd_valid.val() {
                    if self.hit.val() {
                        // The registers hold this entry already.
                        self.phase.d.next = Phase::Exec;
                        if self.cmd_op.val() == self.k_op_accept.val() {
                            self.phase.d.next = Phase::Run;
                        }
                        if self.cmd_op.val() == self.k_op_classify.val() {
                            self.phase.d.next = Phase::Look;
                        }
                    } else {
                        self.phase.d.next = Phase::Read;
                    }
                }
            }
            Phase::Read => {
                // The RAM output now holds the entry: register it (and the FSN distance) so the
                // operation below works from flip-flops, not from the block RAM's output.
                self.cum.d.next = self.r_cum.val();
                self.bitmap.d.next = self.r_bitmap.val();
                self.unacked.d.next = self.r_unacked.val();
                self.ce_count.d.next = self.r_ce.val();
                self.diff_q.d.next = self.diff.val();
                self.cached.d.next = true;
                self.cached_index.d.next = self.index.q.val();
                self.settle.d.next = 2.into();
                self.phase.d.next = Phase::Exec;
                if self.op.q.val() == self.k_op_classify.val() {
                    self.phase.d.next = Phase::Look;
                }
            }
            Phase::Look => {
                // `at_group` and `below_group` are loaded now (as in every cycle).
                self.phase.d.next = Phase::Exec;
            }
            Phase::Exec => {
                self.out_class.d.next = 0.into();
                self.out_distance.d.next = 0.into();
                self.out_gap.d.next = false;
                self.phase.d.next = Phase::Idle;
                self.out_valid.d.next = true;
                self.out_cum.d.next = self.cum.q.val();
                self.out_bitmap.d.next = self.bitmap.q.val();
                self.out_unacked.d.next = self.unacked.q.val();
                self.out_ce.d.next = self.ce_count.q.val();
                if self.op.q.val() == self.k_op_init.val() {
                    self.write_back.next = true;
                    self.next_cum.next = self.fsn.q.val();
                    self.next_bitmap.next = 0.into();
                    self.next_unacked.next = 0.into();
                    self.next_ce.next = 0.into();
                    self.out_cum.d.next = self.fsn.q.val();
                    self.out_bitmap.d.next = 0.into();
                    self.out_unacked.d.next = 0.into();
                    self.out_ce.d.next = 0.into();
                } else if self.op.q.val() == self.k_op_classify.val() {
                    self.write_back.next = true;
                    self.next_cum.next = self.cum.q.val();
                    self.next_bitmap.next = self.bitmap.q.val();
                    self.next_unacked.next = self.unacked.q.val();
                    self.next_ce.next = self.ce_next.val();
                    self.out_ce.d.next = self.ce_next.val();
                    // SACK_BITS (256) is a power of two: `diff > 256` and `diff == 0` as
                    // flat logic on the distance's bits, no carry chain.
                    if self.diff_q.q.val().get_bit(23) {
                        self.out_class.d.next = self.k_dup.val();
                    } else if !self.diff_hi_zero.val()
                        | (self.diff_q.q.val().get_bit(8) & !self.diff_lo_zero.val())
                    {
                        self.out_class.d.next = self.k_oow.val();
                    } else if !self.diff_q.q.val().get_bit(8) & self.diff_lo_zero.val() {
                        self.out_class.d.next = self.k_new.val();
                    } else if self
                        .at_group
                        .q
                        .val()
                        .get_bit(self.diff_q.q.val().get_bits::<4>(0).index())
                    {
                        self.out_class.d.next = self.k_dup.val();
                    } else {
                        self.out_class.d.next = self.k_new.val();
                        self.out_distance.d.next = self.diff_q.q.val().get_bits::<9>(0);
                        // Distance 1 selects the zero shifted in: a gap, as it should be.
                        self.out_gap.d.next = !self
                            .below_group
                            .q
                            .val()
                            .get_bit(self.diff_q.q.val().get_bits::<4>(0).index());
                    }
                } else if self.op.q.val() == self.k_op_ack.val() {
                    self.write_back.next = true;
                    self.next_cum.next = self.cum.q.val();
                    self.next_bitmap.next = self.bitmap.q.val();
                    self.next_unacked.next = 0.into();
                    self.next_ce.next = 0.into();
                } else if self.op.q.val() == self.k_op_accept.val() {
                    self.out_valid.d.next = false;
                    self.phase.d.next = Phase::Run;
                }
            }
            Phase::Run => {
                // An in-order FSN needs the run above it: wait until the search has caught up
                // with the window.
                if (self.settle.q.val() == 0_u64) | !self.in_order.q.val() {
                    self.phase.d.next = Phase::Shift;
                }
            }
            Phase::Shift => {
                self.write_back.next = true;
                self.next_unacked.next = self.unacked.q.val() + 1_u64;
                if self.unacked.q.val() == 0xFFFF_u64 {
                    self.next_unacked.next = self.unacked.q.val();
                }
                self.next_ce.next = self.ce_count.q.val();
                if self.in_order.q.val() {
                    // FSN == cum: move past it and the run of received FSNs above it.
                    self.next_cum.next =
                        self.cum.q.val() + bit_cast::<24, 9>(self.run.q.val()) + 1_u64;
                    self.next_bitmap.next =
                        (self.coarse.q.val() >> self.run.q.val().get_bits::<4>(0)) >> 1_u64;
                } else {
                    self.next_cum.next = self.cum.q.val();
                    self.next_bitmap.next = self.bitmap.q.val() | self.set_mask.q.val();
                }
                self.out_valid.d.next = true;
                self.out_class.d.next = 0.into();
                self.out_distance.d.next = 0.into();
                self.out_gap.d.next = false;
                self.out_cum.d.next = self.next_cum.val();
                self.out_bitmap.d.next = self.next_bitmap.val();
                self.out_unacked.d.next = self.next_unacked.val();
                self.out_ce.d.next = self.next_ce.val();
                self.phase.d.next = Phase::Idle;
            }
            _ => {
                self.phase.d.next = Phase::Idle;
            }
        }
        if self.write_back.val() {
            // The registers follow the RAM, so the next operation on this flow can skip the
            // read.
            self.cum.d.next = self.next_cum.val();
            self.bitmap.d.next = self.next_bitmap.val();
            self.unacked.d.next = self.next_unacked.val();
            self.ce_count.d.next = self.next_ce.val();
            if (self.op.q.val() == self.k_op_accept.val())
                | (self.op.q.val() == self.k_op_init.val())
            {
                self.settle.d.next = 2.into();
            }
            self.ram.write_enable.next = true;
        }
        // The data follow the next state in every cycle; only the write enable waits for
        // `write_back`, so no 320-bit gate sits behind the operation's decode.
        self.wd_lo.next = (bit_cast::<32, 16>(self.next_unacked.val()) << 16_u64)
            | bit_cast::<32, 16>(self.next_ce.val());
        self.ram.write_data.next = (bit_cast::<320, 24>(self.next_cum.val()) << 288_u64)
            | (bit_cast::<320, 256>(self.next_bitmap.val()) << 32_u64)
            | bit_cast::<320, 32>(self.wd_lo.val());
        if self.reset.val() {
            self.phase.d.next = Phase::Idle;
            self.out_valid.d.next = false;
            self.cached.d.next = false;
        }
        self.out_ack_due.d.next =
            bit_cast::<32, 16>(self.out_unacked.d.val()) >= self.coalesce.val();
        self.out_unacked_one.d.next = self.out_unacked.d.val() == 1_u64;

        self.res_valid.next = self.out_valid.q.val();
        self.res_class.next = self.out_class.q.val();
        self.res_distance.next = self.out_distance.q.val();
        self.res_opens_gap.next = self.out_gap.q.val();
        self.res_cum.next = self.out_cum.q.val();
        self.res_bitmap.next = self.out_bitmap.q.val();
        self.res_unacked.next = self.out_unacked.q.val();
        self.res_ce.next = self.out_ce.q.val();
        self.res_ack_due.next = self.out_ack_due.q.val();
        self.res_unacked_one.next = self.out_unacked_one.q.val();
    }
}
