//! The flow table block under Verilator, one operation at a time.

use super::{
    FLOW_CLASS_DUPLICATE, FLOW_CLASS_NEW, FLOW_OP_ACCEPT, FLOW_OP_ACK, FLOW_OP_CLASSIFY,
    FLOW_OP_INIT, FLOW_OP_READ, Port, Rtl, RtlError,
};
use crate::rng::Rng;
use ferroce_proto::model::sack::SackClass;

/// A flow's state as the block reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowState {
    /// Cumulative FSN.
    pub cum: u32,
    /// Window, bit i = FSN cum + 1 + i.
    pub bitmap: [u64; 4],
    /// Packets consumed since the last ACK.
    pub unacked: u16,
    /// CE marks since the last ACK.
    pub ce_count: u16,
}

/// One operation's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowResult {
    /// The class (classify only).
    pub class: Option<SackClass>,
    /// The state the operation reports.
    pub state: FlowState,
    /// `res_ack_due`: the reported unacked count reaches the coalescing threshold.
    pub ack_due: bool,
    /// `res_unacked_one`: the reported unacked count is 1.
    pub unacked_one: bool,
}

/// One operation on the command bus: `FLOW_OP_*`, index, FSN, CE mark, distance.
type Command = (u64, u32, u32, bool, u32);

struct Ports {
    clock: Port,
    reset: Port,
    valid: Port,
    ready: Port,
    op: Port,
    index: Port,
    fsn: Port,
    /// `late_ce`: the CE mark of the operation taken in the cycle before.
    late_ce: Port,
    distance: Port,
    res_valid: Port,
    class: Port,
    res_distance: Port,
    gap: Port,
    cum: Port,
    bitmap: Port,
    unacked: Port,
    res_ce: Port,
    coalesce: Port,
    ack_due: Port,
    unacked_one: Port,
}

/// The verilated flow table.
pub struct RtlFlowTable {
    rtl: Rtl,
    p: Ports,
    cycles: u64,
    /// Drives the command fields with noise while no command is offered: a design that reads
    /// them then is caught.
    noise: Rng,
    /// Indices the idle bus shows (see [`RtlFlowTable::set_idle_indices`]).
    idle_indices: Vec<u32>,
    /// The CE mark of the operation on the bus, driven on `late_ce` in the cycle after the
    /// table takes it (noise in every other cycle).
    offered_ce: bool,
    /// `late_ce` holds the mark of the operation taken at the last clock edge.
    late_due: bool,
    /// `cmd_valid` as driven.
    valid_on: bool,
}

impl RtlFlowTable {
    /// A reset table (entries zero).
    pub fn new() -> Result<Self, RtlError> {
        let rtl = Rtl::new("flow_table")?;
        let i = |n: &str| rtl.port(n, true);
        let o = |n: &str| rtl.port(n, false);
        let p = Ports {
            clock: i("clock")?,
            reset: i("reset")?,
            valid: i("cmd_valid")?,
            ready: o("cmd_ready")?,
            op: i("cmd_op")?,
            index: i("cmd_index")?,
            fsn: i("cmd_fsn")?,
            late_ce: i("late_ce")?,
            distance: i("cmd_distance")?,
            res_valid: o("res_valid")?,
            class: o("res_class")?,
            res_distance: o("res_distance")?,
            gap: o("res_opens_gap")?,
            cum: o("res_cum")?,
            bitmap: o("res_bitmap")?,
            unacked: o("res_unacked")?,
            res_ce: o("res_ce")?,
            coalesce: i("coalesce")?,
            ack_due: o("res_ack_due")?,
            unacked_one: o("res_unacked_one")?,
        };
        let mut me = RtlFlowTable {
            rtl,
            p,
            cycles: 0,
            noise: Rng::new(0x2545_F491_4F6C_DD1D),
            idle_indices: Vec::new(),
            offered_ce: false,
            late_due: false,
            valid_on: false,
        };
        me.rtl.set_u64(me.p.reset, 1);
        me.tick();
        me.tick();
        me.rtl.set_u64(me.p.reset, 0);
        Ok(me)
    }

    /// Sets the coalescing threshold (`ACK_COALESCE`) the ACK-due flag compares with.
    pub fn set_coalesce(&mut self, n: u32) {
        self.rtl.set_u64(self.p.coalesce, n as u64);
    }

    /// Cycles simulated so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    fn tick(&mut self) {
        self.rtl.eval();
        let taken = self.valid_on && self.rtl.get_u64(self.p.ready) == 1;
        self.rtl.set_u64(self.p.clock, 1);
        self.rtl.eval();
        self.cycles += 1;
        self.rtl.set_u64(self.p.clock, 0);
        self.late_due = taken;
        if taken {
            self.rtl.set_u64(self.p.late_ce, self.offered_ce as u64);
        }
        self.rtl.eval();
    }

    fn set_valid(&mut self, on: bool) {
        self.valid_on = on;
        self.rtl.set_u64(self.p.valid, on as u64);
    }

    /// While no command is offered, the index field shows one of `indices` (chosen at random
    /// each cycle) instead of noise, as a real requester's bus shows the flows it works on: a
    /// table that took the index without a command would then find false cache hits. Also
    /// leaves 0 to 2 idle cycles before each command (so cycle counts are not the bench's).
    pub fn set_idle_indices(&mut self, indices: &[u32]) {
        self.idle_indices = indices.to_vec();
    }

    /// Puts noise on the command fields (no command offered).
    fn scramble(&mut self) {
        for port in [self.p.op, self.p.index, self.p.fsn, self.p.distance] {
            // The port's own width keeps what fits.
            let v = self.noise.next_u64();
            self.rtl.set_u64(port, v);
        }
        if !self.late_due {
            let v = self.noise.next_u64();
            self.rtl.set_u64(self.p.late_ce, v);
        }
        if !self.idle_indices.is_empty() {
            let k = self.noise.below(self.idle_indices.len() as u64) as usize;
            let i = self.idle_indices[k];
            self.rtl.set_u64(self.p.index, i as u64);
        }
    }

    /// Idles (noise on the bus) until the table is ready for a command.
    fn wait_ready(&mut self) {
        while self.rtl.get_u64(self.p.ready) == 0 {
            self.scramble();
            self.tick();
        }
    }

    /// With no command offered, waits for the result of `op`, taken in the last cycle or
    /// earlier.
    fn wait_result(&mut self, op: u64) -> FlowResult {
        self.set_valid(false);
        for _ in 0..16 {
            self.scramble();
            self.tick();
            if self.rtl.get_u64(self.p.res_valid) == 1 {
                return self.read(op);
            }
        }
        panic!("flow table gave no result within 16 cycles");
    }

    fn op(&mut self, op: u64, index: u32, fsn: u32, ce: bool, distance: u32) -> FlowResult {
        self.wait_ready();
        if !self.idle_indices.is_empty() {
            // Idle cycles with no command but a plausible bus, 0 to 2 of them.
            for _ in 0..self.noise.upto(2) {
                self.scramble();
                self.tick();
            }
        }
        self.offer(op, index, fsn, ce, distance);
        self.tick();
        self.wait_result(op)
    }

    /// Puts an operation on the command bus (offered while `valid` stays set).
    fn offer(&mut self, op: u64, index: u32, fsn: u32, ce: bool, distance: u32) {
        self.rtl.set_u64(self.p.op, op);
        self.rtl.set_u64(self.p.index, index as u64);
        self.rtl.set_u64(self.p.fsn, fsn as u64);
        self.offered_ce = ce;
        self.rtl.set_u64(self.p.distance, distance as u64);
        self.set_valid(true);
    }

    /// Classifies `fsn` on entry `index` and offers a read of entry `then` from the very next
    /// cycle, held until the table takes it, as a requester that queues its next operation
    /// behind a busy one: both results, in order. Panics if the table takes the read before
    /// it has presented the classification's result (operations must not overlap).
    pub fn classify_then_read(
        &mut self,
        index: u32,
        fsn: u32,
        ce: bool,
        then: u32,
    ) -> (FlowResult, FlowResult) {
        self.back_to_back(
            (FLOW_OP_CLASSIFY, index, fsn, ce, 0),
            (FLOW_OP_READ, then, 0, false, 0),
        )
    }

    /// Accepts `first` on entry `index` and offers the accept of `second` on the same entry
    /// from the very next cycle, held until the table takes it: the tightest spacing a
    /// requester can give two operations that change one window. Both results, in order.
    pub fn accept_then_accept(
        &mut self,
        index: u32,
        first: u32,
        second: u32,
    ) -> (FlowResult, FlowResult) {
        self.back_to_back(
            (FLOW_OP_ACCEPT, index, 0, false, first),
            (FLOW_OP_ACCEPT, index, 0, false, second),
        )
    }

    /// Offers `first`, then `second` from the next cycle until taken; panics if the second is
    /// taken before the first's result.
    fn back_to_back(&mut self, first: Command, second: Command) -> (FlowResult, FlowResult) {
        self.wait_ready();
        let (op, index, fsn, ce, distance) = first;
        self.offer(op, index, fsn, ce, distance);
        self.tick();
        let (op, index, fsn, ce, distance) = second;
        self.offer(op, index, fsn, ce, distance);
        let mut result = None;
        for _ in 0..32 {
            if result.is_none() && self.rtl.get_u64(self.p.res_valid) == 1 {
                result = Some(self.read(first.0));
            }
            let taken = self.rtl.get_u64(self.p.ready) == 1;
            assert!(
                !taken || result.is_some(),
                "the table took an operation before presenting the one it was busy with"
            );
            self.tick();
            if taken {
                let then = self.wait_result(second.0);
                return (result.expect("checked above"), then);
            }
        }
        panic!("flow table did not take the queued operation within 32 cycles");
    }

    fn read(&mut self, op: u64) -> FlowResult {
        let words = self.rtl.get(self.p.bitmap).to_vec();
        let bitmap =
            core::array::from_fn(|i| words[2 * i] as u64 | (words[2 * i + 1] as u64) << 32);
        let state = FlowState {
            cum: self.rtl.get_u64(self.p.cum) as u32,
            bitmap,
            unacked: self.rtl.get_u64(self.p.unacked) as u16,
            ce_count: self.rtl.get_u64(self.p.res_ce) as u16,
        };
        let class = (op == FLOW_OP_CLASSIFY).then(|| match self.rtl.get_u64(self.p.class) {
            c if c == FLOW_CLASS_DUPLICATE => SackClass::Duplicate,
            c if c == FLOW_CLASS_NEW => SackClass::New {
                distance: self.rtl.get_u64(self.p.res_distance) as u32,
                opens_gap: self.rtl.get_u64(self.p.gap) == 1,
            },
            _ => SackClass::OutOfWindow,
        });
        FlowResult {
            class,
            state,
            ack_due: self.rtl.get_u64(self.p.ack_due) == 1,
            unacked_one: self.rtl.get_u64(self.p.unacked_one) == 1,
        }
    }

    /// Initialises entry `index` to expect `cum`.
    pub fn init(&mut self, index: u32, cum: u32) -> FlowResult {
        self.op(FLOW_OP_INIT, index, cum, false, 0)
    }
    /// Classifies `fsn` on entry `index`, counting a CE mark.
    pub fn classify(&mut self, index: u32, fsn: u32, ce: bool) -> FlowResult {
        self.op(FLOW_OP_CLASSIFY, index, fsn, ce, 0)
    }
    /// Accepts the FSN at `distance` on entry `index`.
    pub fn accept(&mut self, index: u32, distance: u32) -> FlowResult {
        self.op(FLOW_OP_ACCEPT, index, 0, false, distance)
    }
    /// Takes the ACK state of entry `index` and clears its counters.
    pub fn ack(&mut self, index: u32) -> FlowResult {
        self.op(FLOW_OP_ACK, index, 0, false, 0)
    }
    /// Reads entry `index`.
    pub fn read_entry(&mut self, index: u32) -> FlowResult {
        self.op(FLOW_OP_READ, index, 0, false, 0)
    }
}
