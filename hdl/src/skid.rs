//! A register slice for a valid/ready stream: the data, its valid and the upstream ready all
//! leave flip-flops, so that neither the data path nor the ready path runs through it
//! combinationally, and a beat per cycle still goes through.
//!
//! The classic skid buffer: a main register feeds the output; when the output stalls while a
//! beat is accepted (the ready seen upstream was last cycle's), that beat waits in the skid
//! register, and upstream sees not-ready until the skid register drains into the main one.

use rust_hdl::prelude::*;

/// Two-register slice between a producer (`in_*`) and a consumer (`out_*`).
#[derive(LogicBlock, Default)]
pub struct SkidBuffer<T: Synth> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset: drops whatever is held.
    pub reset: Signal<In, Bit>,
    /// Upstream beat.
    pub in_data: Signal<In, T>,
    /// Upstream beat valid.
    pub in_valid: Signal<In, Bit>,
    /// Ready to upstream (from a flip-flop).
    pub in_ready: Signal<Out, Bit>,
    /// Downstream beat (from a flip-flop).
    pub out_data: Signal<Out, T>,
    /// Downstream beat valid (from a flip-flop).
    pub out_valid: Signal<Out, Bit>,
    /// Downstream ready.
    pub out_ready: Signal<In, Bit>,
    /// Whether a beat is held.
    pub holding: Signal<Out, Bit>,
    main: DFF<T>,
    main_valid: DFF<Bit>,
    skid: DFF<T>,
    skid_valid: DFF<Bit>,
    take_in: Signal<Local, Bit>,
}

impl<T: Synth> Logic for SkidBuffer<T> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, main, main_valid, skid, skid_valid);
        self.in_ready.next = !self.skid_valid.q.val();
        self.out_data.next = self.main.q.val();
        self.out_valid.next = self.main_valid.q.val();
        self.holding.next = self.main_valid.q.val() | self.skid_valid.q.val();
        self.take_in.next = self.in_valid.val() & !self.skid_valid.q.val();
        if !self.main_valid.q.val() | self.out_ready.val() {
            // The main register is free this cycle: the skidded beat first, else the new one.
            if self.skid_valid.q.val() {
                self.main.d.next = self.skid.q.val();
                self.main_valid.d.next = true;
                self.skid_valid.d.next = false;
            } else {
                self.main.d.next = self.in_data.val();
                self.main_valid.d.next = self.take_in.val();
            }
        } else if self.take_in.val() {
            self.skid.d.next = self.in_data.val();
            self.skid_valid.d.next = true;
        }
        if self.reset.val() {
            self.main_valid.d.next = false;
            self.skid_valid.d.next = false;
        }
    }
}
