//! RX payload extractor: takes a buffered frame and either streams its payload, realigned to
//! lane 0, toward the DMA write interface, or discards it, as the receive engine decides.
//!
//! Per frame the engine issues two things, in frame order: a command (bytes to skip — the
//! headers — and the payload length) as soon as the frame's parse result is known, and later
//! the decision (place or discard). The extractor skips the headers while the engine is still
//! deciding, so a placed payload starts streaming in the cycle after the decision instead of
//! after the header beats. It drops the `skip / 8` leading beats, keeps the beat holding the
//! first payload byte, and on "place" shifts the rest by `skip % 8` bytes (a carry register
//! joins neighbouring beats), emits exactly `len` bytes with `tlast` on the last, and swallows
//! the rest of the frame up to its `tlast` (the ICRC and any padding); on "discard" it swallows
//! the frame. A frame that ends inside its headers still takes a decision and emits nothing.
//! One beat per cycle, AXI4-Stream back-pressure on both sides.

use rust_hdl::prelude::*;

#[derive(LogicState, Debug, Copy, Clone, PartialEq)]
enum Phase {
    Idle,
    Skip,
    Hold,
    Emit,
    Tail,
    Drain,
}

/// The payload extractor.
#[derive(LogicBlock, Default)]
pub struct RxPayload {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset.
    pub reset: Signal<In, Bit>,
    /// A command is offered.
    pub cmd_valid: Signal<In, Bit>,
    /// The extractor takes the command.
    pub cmd_ready: Signal<Out, Bit>,
    /// Bytes before the payload.
    pub cmd_skip: Signal<In, Bits<16>>,
    /// Payload bytes.
    pub cmd_len: Signal<In, Bits<16>>,
    /// The decision for the frame of the last command is offered.
    pub dec_valid: Signal<In, Bit>,
    /// The extractor takes the decision.
    pub dec_ready: Signal<Out, Bit>,
    /// Stream the payload (else discard the frame).
    pub dec_place: Signal<In, Bit>,
    /// Buffered frame beats.
    pub s_tdata: Signal<In, Bits<64>>,
    /// Beat valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Last beat of the frame.
    pub s_tlast: Signal<In, Bit>,
    /// The extractor takes the beat.
    pub s_tready: Signal<Out, Bit>,
    /// Payload out, packed from lane 0.
    pub m_tdata: Signal<Out, Bits<64>>,
    /// Byte enables.
    pub m_tkeep: Signal<Out, Bits<8>>,
    /// Beat valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Last payload beat.
    pub m_tlast: Signal<Out, Bit>,
    /// The DMA side takes the beat.
    pub m_tready: Signal<In, Bit>,

    phase: DFF<Phase>,
    place: DFF<Bit>,
    decided: DFF<Bit>,
    skip_beats: DFF<Bits<13>>,
    // `skip_beats` is zero (registered with it, as the `rem_*` flags are).
    skip_done: DFF<Bit>,
    shift: DFF<Bits<3>>,
    remaining: DFF<Bits<16>>,
    // Compares of `remaining`, registered with it so that no carry chain on `remaining` feeds
    // another: at most 8 bytes left, fewer than 8 (then its low 3 bits are the count).
    rem_le8: DFF<Bit>,
    rem_lt8: DFF<Bit>,
    carry: DFF<Bits<64>>,
    carry_bytes: DFF<Bits<4>>,
    in_last_seen: DFF<Bit>,

    combined: Signal<Local, Bits<64>>,
    // The decision, whether taken earlier or offered in this cycle.
    known: Signal<Local, Bit>,
    go_place: Signal<Local, Bit>,
    // Where a frame goes once its first payload beat (or its end) has been taken.
    after_headers: Signal<Local, Phase>,
    keep: Signal<Local, Bits<8>>,
}

impl Logic for RxPayload {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            phase,
            place,
            decided,
            skip_beats,
            skip_done,
            shift,
            remaining,
            rem_le8,
            rem_lt8,
            carry,
            carry_bytes,
            in_last_seen
        );
        self.cmd_ready.next = false;
        self.dec_ready.next = false;
        self.s_tready.next = false;
        self.m_tvalid.next = false;
        self.m_tlast.next = false;
        self.m_tdata.next = 0.into();
        self.m_tkeep.next = 0.into();
        // The carry's top bytes followed by the new beat.
        // `carry_bytes` is `8 - shift` for the whole frame, so the carry's payload starts at
        // byte `shift`: a shift by a register, with no subtraction before it.
        self.combined.next = (self.carry.q.val()
            >> (bit_cast::<7, 3>(self.shift.q.val()) << 3_u64))
            | (self.s_tdata.val() << (bit_cast::<7, 4>(self.carry_bytes.q.val()) << 3_u64));
        // Fewer than 8 bytes left: the low 3 bits are the count, and the lanes below it.
        self.keep.next = 0xFF.into();
        if self.rem_lt8.q.val() {
            self.keep.next =
                !(bits::<8>(0xFF) << bit_cast::<8, 16>(self.remaining.q.val() & 7_u64));
        }

        // The decision may arrive at any time after the command, before or after the headers
        // have been skipped.
        self.known.next = self.decided.q.val();
        self.go_place.next = self.place.q.val();
        if ((self.phase.q.val() == Phase::Skip) | (self.phase.q.val() == Phase::Hold))
            & !self.decided.q.val()
        {
            self.dec_ready.next = true;
            if self.dec_valid.val() {
                self.decided.d.next = true;
                self.place.d.next = self.dec_place.val();
                self.known.next = true;
                self.go_place.next = self.dec_place.val();
            }
        }
        // Placing: stream on from the carry (or finish from it alone if the frame is over).
        // Discarding: swallow the rest of the frame, if any is left.
        self.after_headers.next = Phase::Hold;
        if self.known.val() {
            if self.go_place.val() {
                self.after_headers.next = Phase::Emit;
                if self.in_last_seen.q.val() {
                    self.after_headers.next = Phase::Tail;
                }
            } else {
                self.after_headers.next = Phase::Drain;
                if self.in_last_seen.q.val() {
                    self.after_headers.next = Phase::Idle;
                }
            }
        }

        match self.phase.q.val() {
            Phase::Idle => {
                // Takes a command below.
            }
            Phase::Skip => {
                // Drop whole header beats; the beat holding the first payload byte becomes the
                // carry (its bytes from `shift` on are payload).
                if self.known.val() & !self.go_place.val() {
                    // Discarded before the headers were through: swallow the frame, starting
                    // with this beat.
                    self.s_tready.next = true;
                    if self.s_tvalid.val() {
                        self.phase.d.next = Phase::Drain;
                        if self.s_tlast.val() {
                            self.phase.d.next = Phase::Idle;
                        }
                    }
                } else {
                    self.s_tready.next = true;
                    if self.s_tvalid.val() {
                        if self.skip_done.q.val() {
                            self.carry.d.next = self.s_tdata.val();
                            self.carry_bytes.d.next =
                                bits::<4>(8) - bit_cast::<4, 3>(self.shift.q.val());
                            self.phase.d.next = Phase::Hold;
                            if self.known.val() & !self.s_tlast.val() {
                                self.phase.d.next = Phase::Emit;
                            }
                        } else {
                            self.skip_beats.d.next = self.skip_beats.q.val() - 1_u64;
                            self.skip_done.d.next = self.skip_beats.q.val() == 1_u64;
                        }
                        if self.s_tlast.val() {
                            self.in_last_seen.d.next = true;
                            self.phase.d.next = Phase::Hold;
                            if self.known.val() {
                                self.phase.d.next = Phase::Idle;
                                if self.go_place.val() {
                                    self.phase.d.next = Phase::Tail;
                                }
                            }
                            if !self.skip_done.q.val() {
                                // Frame ended inside the headers: nothing to emit.
                                self.remaining.d.next = 0.into();
                                self.rem_le8.d.next = true;
                                self.rem_lt8.d.next = true;
                            }
                        }
                    }
                }
            }
            Phase::Hold => {
                // Headers skipped (or the frame is over): wait for the decision.
                self.phase.d.next = self.after_headers.val();
            }
            Phase::Emit => {
                // Enough bytes in the carry alone for the rest of the payload: finish from it.
                if self.rem_le8.q.val()
                    & (self.carry_bytes.q.val() >= bit_cast::<4, 16>(self.remaining.q.val()))
                {
                    self.phase.d.next = Phase::Tail;
                } else {
                    self.s_tready.next = self.m_tready.val();
                    self.m_tvalid.next = self.s_tvalid.val();
                    self.m_tdata.next = self.combined.val();
                    self.m_tkeep.next = self.keep.val();
                    self.m_tlast.next = self.rem_le8.q.val();
                    if self.s_tvalid.val() & self.m_tready.val() {
                        self.carry.d.next = self.s_tdata.val();
                        // A full beat leaves; at most 8 left means none after this beat. The
                        // flags of the new count come from compares beside the subtraction.
                        self.remaining.d.next = self.remaining.q.val() - 8_u64;
                        self.rem_le8.d.next = self.remaining.q.val() <= 16_u64;
                        self.rem_lt8.d.next = self.remaining.q.val() < 16_u64;
                        if self.rem_le8.q.val() {
                            self.remaining.d.next = 0.into();
                            self.rem_le8.d.next = true;
                            self.rem_lt8.d.next = true;
                        }
                        if self.s_tlast.val() {
                            self.in_last_seen.d.next = true;
                        }
                        if self.rem_le8.q.val() {
                            self.phase.d.next = Phase::Drain;
                            if self.s_tlast.val() {
                                self.phase.d.next = Phase::Idle;
                            }
                        } else if self.s_tlast.val() {
                            self.phase.d.next = Phase::Tail;
                        }
                    }
                }
            }
            Phase::Tail => {
                // The rest of the payload sits in the carry (the frame may already be over).
                if self.rem_lt8.q.val() & (self.remaining.q.val().get_bits::<3>(0) == 0_u64) {
                    self.phase.d.next = Phase::Drain;
                    if self.in_last_seen.q.val() {
                        self.phase.d.next = Phase::Idle;
                    }
                } else {
                    self.m_tvalid.next = true;
                    self.m_tdata.next =
                        self.carry.q.val() >> (bit_cast::<7, 3>(self.shift.q.val()) << 3_u64);
                    self.m_tkeep.next = self.keep.val();
                    self.m_tlast.next = true;
                    if self.m_tready.val() {
                        self.remaining.d.next = 0.into();
                        self.rem_le8.d.next = true;
                        self.rem_lt8.d.next = true;
                        self.phase.d.next = Phase::Drain;
                        if self.in_last_seen.q.val() {
                            self.phase.d.next = Phase::Idle;
                        }
                    }
                }
            }
            Phase::Drain => {
                // Swallow the rest of the frame.
                self.s_tready.next = true;
                if self.s_tvalid.val() & self.s_tlast.val() {
                    self.phase.d.next = Phase::Idle;
                }
            }
            _ => {
                self.phase.d.next = Phase::Idle;
            }
        }
        // A command is taken when idle, and also in the cycle a frame finishes, so
        // back-to-back frames leave no idle cycle between them.
        if self.phase.d.val() == Phase::Idle {
            self.cmd_ready.next = true;
            if self.cmd_valid.val() {
                self.decided.d.next = false;
                self.skip_beats.d.next = bit_cast::<13, 16>(self.cmd_skip.val() >> 3_u64);
                self.skip_done.d.next = self.cmd_skip.val() < 8_u64;
                self.shift.d.next = bit_cast::<3, 16>(self.cmd_skip.val());
                self.remaining.d.next = self.cmd_len.val();
                self.rem_le8.d.next = self.cmd_len.val() <= 8_u64;
                self.rem_lt8.d.next = self.cmd_len.val() < 8_u64;
                self.in_last_seen.d.next = false;
                self.phase.d.next = Phase::Skip;
            }
        }
        if self.reset.val() {
            self.phase.d.next = Phase::Idle;
        }
    }
}
