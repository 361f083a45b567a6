//! The whole RTL fast path (`ferroce_hdl::nic::NicCore`) under Verilator, behind the same
//! [`Nic`] and [`SimPort`] interfaces as the software model.
//!
//! The harness plays the NIC's surroundings cycle by cycle: it streams received frames into the
//! MAC RX stream with the port they come in on (`s_tid`), collects frames from the MAC TX stream
//! with the port they leave on (`m_tdest`, which must not change within a frame), performs AXI4-Lite transactions for
//! register access, and serves the core's DMA requests from a [`SimMemory`] (two write channels,
//! one read channel, one beat per cycle, every request accepted at once). Each call runs the
//! clock until the core is quiescent (`busy` low for [`QUIET_CYCLES`] cycles), so the host sees
//! the same effects at the same calls as with [`ferroce_driver::ModelNic`].
//!
//! The core is verilated for whole-cycle stepping ([`Rtl::cycle`]): the harness keeps every
//! input in a [`CycleIo`] and each cycle is one evaluation and one call into the model, which
//! returns the cycle's outputs, as a synchronous receiver samples them at the clock edge.

use super::{CycleIo, Rtl, RtlError, Slot};
use ferroce_driver::{Nic, NicError, PortFrame, SimMemory, SimPort, check_port};
use ferroce_proto::hsi::{TableSizes, regs};
use ferroce_proto::model::HostMemory;
use std::collections::VecDeque;

/// Cycles with `busy` low after which the core counts as quiescent.
pub const QUIET_CYCLES: u32 = 12;
/// Cycles one call may run before the harness reports the core as hung.
pub const MAX_CYCLES_PER_CALL: u64 = 20_000_000;

struct Ports {
    reset: Slot,
    now: Slot,
    link_up: Slot,
    s_data: Slot,
    s_keep: Slot,
    s_valid: Slot,
    s_last: Slot,
    s_tid: Slot,
    s_ready: Slot,
    m_data: Slot,
    m_keep: Slot,
    m_valid: Slot,
    m_last: Slot,
    m_tdest: Slot,
    m_ready: Slot,
    awaddr: Slot,
    awvalid: Slot,
    awready: Slot,
    wdata: Slot,
    wvalid: Slot,
    wready: Slot,
    bvalid: Slot,
    bready: Slot,
    araddr: Slot,
    arvalid: Slot,
    arready: Slot,
    rdata: Slot,
    rvalid: Slot,
    rready: Slot,
    dw: [WritePorts; 2],
    dr_req_valid: Slot,
    dr_req_ready: Slot,
    dr_req_addr: Slot,
    dr_req_len: Slot,
    dr_data: Slot,
    dr_valid: Slot,
    dr_last: Slot,
    dr_error: Slot,
    dr_ready: Slot,
    busy: Slot,
    timer_armed: Slot,
    timer_due: Slot,
}

struct WritePorts {
    req_valid: Slot,
    req_ready: Slot,
    req_addr: Slot,
    req_len: Slot,
    data: Slot,
    keep: Option<Slot>,
    valid: Slot,
    last: Slot,
    ready: Slot,
    done: Slot,
    error: Slot,
}

/// One DMA write channel's progress.
#[derive(Default)]
struct WriteChannel {
    /// Accepted requests waiting for (or receiving) their data: (address, length, bytes so far).
    open: VecDeque<(u64, usize, Vec<u8>)>,
    /// Completion to signal next cycle: Some(faulted).
    done: Option<bool>,
    /// Completions waiting behind it.
    done_queue: VecDeque<bool>,
}

/// The read channel's progress.
#[derive(Default)]
struct ReadChannel {
    /// Response beats queued: (data, last, error, first cycle it may be offered).
    beats: VecDeque<(u64, bool, bool, u64)>,
    /// Cycles from a read request to its first response beat (see
    /// [`RtlNic::set_dma_read_latency`]).
    latency: u64,
}

/// What the harness offered the core in a cycle: whether a handshake can complete.
#[derive(Clone, Copy)]
struct Offered {
    /// A MAC RX beat was valid.
    rx_valid: bool,
    /// Each DMA write channel could take a data beat.
    write_ready: [bool; 2],
    /// A DMA read response beat was valid.
    read_valid: bool,
}

/// Activity the harness observed, for figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NicActivity {
    /// Clock cycles simulated.
    pub cycles: u64,
    /// Frames taken from the MAC RX port.
    pub rx_frames: u64,
    /// Frames sent on the MAC TX port.
    pub tx_frames: u64,
}

/// The RTL NIC.
pub struct RtlNic {
    rtl: Rtl,
    p: Ports,
    /// Every port of the core, driven and sampled once per cycle.
    io: CycleIo,
    /// Host memory the core reaches by DMA.
    pub memory: SimMemory,
    now_ns: u64,
    /// The PHYs' link state driven into the core (`PORT_LINK`), one bit per port.
    link_up: u8,
    /// MAC ports (`CAP_PORTS`).
    ports: u32,
    /// Beats waiting for the MAC RX stream: (data, keep, last, port).
    rx: VecDeque<(u64, u8, bool, u8)>,
    /// The frame leaving on the MAC TX stream, and its port (`tdest` of its first beat).
    tx_cur: Vec<u8>,
    tx_port: Option<u8>,
    tx_done: VecDeque<PortFrame>,
    dw: [WriteChannel; 2],
    dr: ReadChannel,
    activity: NicActivity,
    /// Cycle-by-cycle port values, when recording (see [`RtlNic::new_recording`]).
    vectors: Option<Vectors>,
}

/// Every port's value in every cycle: what another simulator needs to replay the run and
/// compare, independent of this harness.
#[derive(Debug, Clone, Default)]
pub struct Vectors {
    /// Input ports except `clock`: (name, width).
    pub inputs: Vec<(&'static str, usize)>,
    /// Output ports: (name, width).
    pub outputs: Vec<(&'static str, usize)>,
    /// Per cycle: input values (32-bit words per port, least significant first), then
    /// the outputs in that cycle, before its rising edge.
    pub cycles: Vec<(Vec<u32>, Vec<u32>)>,
}

impl RtlNic {
    /// A reset core with empty host memory.
    pub fn new() -> Result<Self, RtlError> {
        Self::open(false)
    }

    /// Like [`RtlNic::new`], recording every port in every cycle from the reset on; take the
    /// record with [`RtlNic::take_vectors`].
    pub fn new_recording() -> Result<Self, RtlError> {
        Self::open(true)
    }

    /// The recorded port values so far (empty unless made by [`RtlNic::new_recording`]).
    pub fn take_vectors(&mut self) -> Vectors {
        self.vectors
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn open(record: bool) -> Result<Self, RtlError> {
        let rtl = Rtl::new("nic")?;
        let vectors = record.then(|| Vectors {
            inputs: rtl
                .ports()
                .iter()
                .filter(|p| p.2 && p.0 != "clock")
                .map(|p| (p.0, p.1))
                .collect(),
            outputs: rtl
                .ports()
                .iter()
                .filter(|p| !p.2)
                .map(|p| (p.0, p.1))
                .collect(),
            cycles: Vec::new(),
        });
        let i = |n: &str| rtl.slot(n, true);
        let o = |n: &str| rtl.slot(n, false);
        let write_ports = |n: &str, keep: bool| -> Result<WritePorts, RtlError> {
            Ok(WritePorts {
                req_valid: o(&format!("{n}_req_valid"))?,
                req_ready: i(&format!("{n}_req_ready"))?,
                req_addr: o(&format!("{n}_req_addr"))?,
                req_len: o(&format!("{n}_req_len"))?,
                data: o(&format!("{n}_tdata"))?,
                keep: if keep {
                    Some(o(&format!("{n}_tkeep"))?)
                } else {
                    None
                },
                valid: o(&format!("{n}_tvalid"))?,
                last: o(&format!("{n}_tlast"))?,
                ready: i(&format!("{n}_tready"))?,
                done: i(&format!("{n}_done"))?,
                error: i(&format!("{n}_error"))?,
            })
        };
        let p = Ports {
            reset: i("reset")?,
            now: i("now_ns")?,
            link_up: i("link_up")?,
            s_data: i("s_tdata")?,
            s_keep: i("s_tkeep")?,
            s_valid: i("s_tvalid")?,
            s_last: i("s_tlast")?,
            s_tid: i("s_tid")?,
            s_ready: o("s_tready")?,
            m_data: o("m_tdata")?,
            m_keep: o("m_tkeep")?,
            m_valid: o("m_tvalid")?,
            m_last: o("m_tlast")?,
            m_tdest: o("m_tdest")?,
            m_ready: i("m_tready")?,
            awaddr: i("axil_awaddr")?,
            awvalid: i("axil_awvalid")?,
            awready: o("axil_awready")?,
            wdata: i("axil_wdata")?,
            wvalid: i("axil_wvalid")?,
            wready: o("axil_wready")?,
            bvalid: o("axil_bvalid")?,
            bready: i("axil_bready")?,
            araddr: i("axil_araddr")?,
            arvalid: i("axil_arvalid")?,
            arready: o("axil_arready")?,
            rdata: o("axil_rdata")?,
            rvalid: o("axil_rvalid")?,
            rready: i("axil_rready")?,
            dw: [write_ports("dw0", true)?, write_ports("dw1", false)?],
            dr_req_valid: o("dr_req_valid")?,
            dr_req_ready: i("dr_req_ready")?,
            dr_req_addr: o("dr_req_addr")?,
            dr_req_len: o("dr_req_len")?,
            dr_data: i("dr_tdata")?,
            dr_valid: i("dr_tvalid")?,
            dr_last: i("dr_tlast")?,
            dr_error: i("dr_terror")?,
            dr_ready: o("dr_tready")?,
            busy: o("busy")?,
            timer_armed: o("ack_timer_armed")?,
            timer_due: o("ack_timer_due")?,
        };
        let io = rtl.cycle_io()?;
        let mut me = RtlNic {
            rtl,
            p,
            io,
            memory: SimMemory::default(),
            now_ns: 0,
            link_up: u8::MAX,
            ports: 1,
            rx: VecDeque::new(),
            tx_cur: Vec::new(),
            tx_port: None,
            tx_done: VecDeque::new(),
            dw: Default::default(),
            dr: ReadChannel::default(),
            activity: NicActivity::default(),
            vectors,
        };
        me.io.set(me.p.m_ready, 1);
        me.io.set(me.p.link_up, me.link_up as u64);
        me.io.set(me.p.dr_req_ready, 1);
        for w in 0..2 {
            me.io.set(me.p.dw[w].req_ready, 1);
        }
        me.io.set(me.p.reset, 1);
        for _ in 0..4 {
            me.step();
        }
        me.io.set(me.p.reset, 0);
        me.settle();
        me.ports = me.read_reg(regs::CAP_PORTS);
        Ok(me)
    }

    /// Makes every DMA read answer `cycles` cycles after its request (at least 1; the default
    /// is 1): a PCIe read takes about a microsecond, 100 to 250 cycles of the core's clock.
    /// Later reads queue behind earlier ones, as completions of one read channel do.
    pub fn set_dma_read_latency(&mut self, cycles: u64) {
        self.dr.latency = cycles.max(1) - 1;
    }

    /// Table sizes, from the capability registers.
    pub fn table_sizes(&mut self) -> TableSizes {
        TableSizes {
            connections: self.read_reg(regs::CAP_CONNECTIONS),
            flows: self.read_reg(regs::CAP_FLOWS),
            regions: self.read_reg(regs::CAP_REGIONS),
            tags: self.read_reg(regs::CAP_TAGS),
            msg_slots: self.read_reg(regs::CAP_MSG_SLOTS),
            recv_depth: self.read_reg(regs::CAP_RECV_DEPTH),
            ports: self.read_reg(regs::CAP_PORTS),
        }
    }

    /// MAC ports (planes) of the core (`CAP_PORTS`, read at reset).
    pub fn ports(&self) -> u32 {
        self.ports
    }

    /// Streams `frames` into the MAC RX stream back to back, each on its port (a new frame's
    /// first beat right after the previous frame's last, whenever the core is ready) and runs
    /// until the core is quiescent again. Returns the cycles from the first beat until the last
    /// frame left the core's hands (the trailing quiet cycles not counted): the core's receive
    /// throughput. A port the core does not have refuses the whole burst before any frame.
    pub fn receive_burst(&mut self, frames: &[PortFrame]) -> Result<u64, NicError> {
        for f in frames {
            check_port(f.port, self.ports)?;
        }
        for f in frames.iter().filter(|f| !f.bytes.is_empty()) {
            self.queue_frame(f.port, &f.bytes);
        }
        let start = self.activity.cycles;
        self.settle();
        Ok(self.activity.cycles - start - QUIET_CYCLES as u64)
    }

    /// Takes every frame the core has sent so far, with its port.
    pub fn take_transmitted(&mut self) -> Vec<PortFrame> {
        self.tx_done.drain(..).collect()
    }

    fn queue_frame(&mut self, port: u8, frame: &[u8]) {
        let n = frame.len().div_ceil(8);
        for (i, chunk) in frame.chunks(8).enumerate() {
            let mut lane = [0u8; 8];
            lane[..chunk.len()].copy_from_slice(chunk);
            let keep = ((1u16 << chunk.len()) - 1) as u8;
            self.rx
                .push_back((u64::from_le_bytes(lane), keep, i + 1 == n, port));
        }
    }

    /// What the harness has seen so far.
    pub fn activity(&self) -> NicActivity {
        self.activity
    }

    /// One clock cycle: drive the inputs, clock the core, act on the handshakes it sampled.
    fn step(&mut self) {
        let drove = self.drive();
        self.rtl.cycle(&mut self.io);
        self.activity.cycles += 1;
        if let Some(v) = self.vectors.as_mut() {
            v.cycles
                .push((self.io.inputs.clone(), self.io.outputs.clone()));
        }
        self.sample(drove);
        // Completions become visible one cycle after the write.
        for c in &mut self.dw {
            if c.done.is_none() {
                c.done = c.done_queue.pop_front();
            }
        }
    }

    /// Drives this cycle's inputs from the harness's queues and says what it offered.
    fn drive(&mut self) -> Offered {
        let (p, io) = (&self.p, &mut self.io);
        // MAC RX.
        let rx_valid = !self.rx.is_empty();
        if let Some(&(beat, keep, last, port)) = self.rx.front() {
            io.set(p.s_data, beat);
            io.set(p.s_keep, keep as u64);
            io.set(p.s_last, last as u64);
            io.set(p.s_tid, port as u64);
        }
        io.set(p.s_valid, rx_valid as u64);
        // DMA write completions (one pulse each), and room for write data.
        let mut write_ready = [false; 2];
        for (w, (c, wp)) in self.dw.iter_mut().zip(&p.dw).enumerate() {
            let done = c.done.take();
            io.set(wp.done, done.is_some() as u64);
            io.set(wp.error, done.unwrap_or(false) as u64);
            write_ready[w] = c
                .open
                .front()
                .is_some_and(|(_, len, data)| data.len() < *len);
            io.set(wp.ready, write_ready[w] as u64);
        }
        // DMA read response.
        let now = self.activity.cycles;
        let read_valid = match self.dr.beats.front() {
            Some(&(data, last, err, at)) if at <= now => {
                io.set(p.dr_data, data);
                io.set(p.dr_last, last as u64);
                io.set(p.dr_error, err as u64);
                true
            }
            _ => false,
        };
        io.set(p.dr_valid, read_valid as u64);
        Offered {
            rx_valid,
            write_ready,
            read_valid,
        }
    }

    /// Acts on the outputs the core showed in the cycle just clocked.
    fn sample(&mut self, drove: Offered) {
        let (p, io) = (&self.p, &self.io);
        if drove.rx_valid
            && io.output(p.s_ready) == 1
            && self.rx.pop_front().is_some_and(|(_, _, last, _)| last)
        {
            self.activity.rx_frames += 1;
        }
        if io.output(p.m_valid) == 1 {
            let data = io.output(p.m_data).to_le_bytes();
            let keep = io.output(p.m_keep) as u8;
            let port = io.output(p.m_tdest) as u8;
            // AXI4-Stream: `tdest` stays the same for all beats of a packet.
            let first = *self.tx_port.get_or_insert(port);
            assert_eq!(
                port, first,
                "m_tdest changed from {first} to {port} within a frame"
            );
            self.tx_cur
                .extend((0..8).filter(|i| keep >> i & 1 == 1).map(|i| data[i]));
            if io.output(p.m_last) == 1 {
                self.tx_done.push_back(PortFrame {
                    port,
                    bytes: core::mem::take(&mut self.tx_cur),
                });
                self.tx_port = None;
                self.activity.tx_frames += 1;
            }
        }
        for w in 0..2 {
            self.sample_write(w, drove.write_ready[w]);
        }
        let (p, io) = (&self.p, &self.io);
        if drove.read_valid && io.output(p.dr_ready) == 1 {
            self.dr.beats.pop_front();
        }
        if io.output(p.dr_req_valid) == 1 {
            let addr = io.output(p.dr_req_addr);
            let len = io.output(p.dr_req_len) as usize;
            self.queue_read(addr, len);
        }
    }

    /// DMA write channel `w`: takes a data beat (if it offered room) and a new request.
    fn sample_write(&mut self, w: usize, ready: bool) {
        let (wp, io) = (&self.p.dw[w], &self.io);
        if ready && io.output(wp.valid) == 1 {
            let data = io.output(wp.data).to_le_bytes();
            let keep = wp.keep.map_or(0xff, |k| io.output(k) as u8);
            let last = io.output(wp.last) == 1;
            if let Some((_, len, buf)) = self.dw[w].open.front_mut() {
                buf.extend((0..8).filter(|i| keep >> i & 1 == 1).map(|i| data[i]));
                if last {
                    // The write ends at `last` whatever its length: a short stream is a
                    // core bug the length check below reports as a fault.
                    let short = buf.len() != *len;
                    buf.resize(*len, 0);
                    if short {
                        buf.clear();
                    }
                }
            }
            if last {
                self.finish_write(w);
            }
        }
        let (wp, io) = (&self.p.dw[w], &self.io);
        if io.output(wp.req_valid) == 1 {
            let addr = io.output(wp.req_addr);
            let len = io.output(wp.req_len) as usize;
            self.dw[w].open.push_back((addr, len, Vec::new()));
            if len == 0 && self.dw[w].open.len() == 1 {
                self.finish_write(w);
            }
        }
    }

    /// Queues the response beats of a DMA read of `len` bytes at `addr`.
    fn queue_read(&mut self, addr: u64, len: usize) {
        let mut buf = vec![0u8; len];
        let err = self.memory.dma_read(addr, &mut buf).is_err();
        if err {
            buf.fill(0);
        }
        // A zero-length read still answers with one beat, so a fault can be reported.
        let beats = len.div_ceil(8).max(1);
        for b in 0..beats {
            let mut lane = [0u8; 8];
            let chunk = buf.get(8 * b..(8 * b + 8).min(len)).unwrap_or(&[]);
            lane[..chunk.len()].copy_from_slice(chunk);
            let last = b + 1 == beats;
            let at = self.activity.cycles + self.dr.latency;
            self.dr
                .beats
                .push_back((u64::from_le_bytes(lane), last, last && err, at));
        }
    }

    /// Performs the oldest open write of channel `w` and queues its completion.
    fn finish_write(&mut self, w: usize) {
        while let Some((addr, len, data)) = self.dw[w].open.pop_front() {
            let fault = data.len() != len || self.memory.dma_write(addr, &data).is_err();
            self.dw[w].done_queue.push_back(fault);
            // Zero-length writes queued behind it complete at once.
            if self.dw[w].open.front().is_none_or(|(_, l, _)| *l != 0) {
                break;
            }
        }
    }

    /// Runs the clock until the core has been idle for [`QUIET_CYCLES`] cycles.
    fn settle(&mut self) {
        let start = self.activity.cycles;
        let mut quiet = 0;
        while quiet < QUIET_CYCLES {
            let idle = self.rx.is_empty()
                && self.dr.beats.is_empty()
                && self
                    .dw
                    .iter()
                    .all(|c| c.open.is_empty() && c.done.is_none())
                && self.io.output(self.p.busy) == 0;
            quiet = if idle { quiet + 1 } else { 0 };
            self.step();
            assert!(
                self.activity.cycles - start < MAX_CYCLES_PER_CALL,
                "RTL NIC still busy after {MAX_CYCLES_PER_CALL} cycles: the core is hung"
            );
        }
    }
}

impl Nic for RtlNic {
    fn read_reg(&mut self, offset: u32) -> u32 {
        // Each handshake is decided within a cycle: `step` shows the cycle's outputs for the
        // inputs set, before the edge that completes the transfer.
        self.io.set(self.p.araddr, offset as u64);
        self.io.set(self.p.arvalid, 1);
        self.io.set(self.p.rready, 0);
        self.step();
        while self.io.output(self.p.arready) == 0 {
            self.step();
        }
        self.io.set(self.p.arvalid, 0);
        self.io.set(self.p.rready, 1);
        self.step();
        while self.io.output(self.p.rvalid) == 0 {
            self.step();
        }
        let v = self.io.output(self.p.rdata) as u32;
        self.io.set(self.p.rready, 0);
        v
    }

    fn write_reg(&mut self, offset: u32, value: u32) {
        self.io.set(self.p.awaddr, offset as u64);
        self.io.set(self.p.wdata, value as u64);
        self.io.set(self.p.awvalid, 1);
        self.io.set(self.p.wvalid, 1);
        self.io.set(self.p.bready, 0);
        self.step();
        while self.io.output(self.p.awready) == 0 || self.io.output(self.p.wready) == 0 {
            self.step();
        }
        self.io.set(self.p.awvalid, 0);
        self.io.set(self.p.wvalid, 0);
        self.io.set(self.p.bready, 1);
        self.step();
        while self.io.output(self.p.bvalid) == 0 {
            self.step();
        }
        self.io.set(self.p.bready, 0);
        // Writes take effect in the model at once: let the core act on this one (a doorbell,
        // a table command) before the host goes on.
        self.settle();
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
        self.now_ns = self.now_ns.max(now_ns);
        self.io.set(self.p.now, self.now_ns);
        self.settle();
    }

    fn next_timer_ns(&mut self) -> Option<u64> {
        // The core shows its timer bookkeeping at its ports; after `settle` it is current.
        (self.io.output(self.p.timer_armed) == 1).then(|| self.io.output(self.p.timer_due))
    }
}

impl SimPort for RtlNic {
    fn receive_frame(&mut self, port: u8, frame: &[u8]) -> Result<(), NicError> {
        check_port(port, self.ports)?;
        if frame.is_empty() {
            // A MAC never delivers an empty frame; the closest it comes is one beat with no
            // byte enabled, which the parser counts as truncated, as the model does.
            self.rx.push_back((0, 0, true, port));
            self.settle();
            return Ok(());
        }
        self.queue_frame(port, frame);
        self.settle();
        Ok(())
    }

    fn transmit_frame(&mut self) -> Option<PortFrame> {
        self.settle();
        self.tx_done.pop_front()
    }

    fn set_link(&mut self, port: u8, up: bool) -> Result<(), NicError> {
        check_port(port, self.ports)?;
        if up {
            self.link_up |= 1 << port;
        } else {
            self.link_up &= !(1 << port);
        }
        self.io.set(self.p.link_up, self.link_up as u64);
        self.settle();
        Ok(())
    }
}
