//! A simple dual-port block RAM (one synchronous read port, one write port) whose write lands
//! one clock after it is taken and whose read of the address being written is undefined, as
//! the FPGA's block RAM has it.
//!
//! rust-hdl's `RAM` promises that a write lands at once and that a read of the address
//! written in the same cycle returns the old word. An ECP5 DP16KD does not keep that promise
//! when the read and the write use different ports, so yosys emulates it: it registers the
//! write port and puts an address compare and a 2:1 multiplexer behind every bit of the read
//! data, right on the block-RAM outputs where the receive engine's critical paths start (one
//! select flip-flop fanning out to 448 multiplexers behind the connection RAM). Here the write
//! port is registered in the RTL itself, which keeps the write side of every RAM off the
//! critical paths as yosys's emulation did, and the memory carries yosys's `no_rw_check`
//! attribute so that it maps straight onto the block RAM with nothing behind its outputs. In
//! the receive engine that is 1,647 LUTs and 552 flip-flops fewer (`cargo xtask synth
//! rx_engine`, session 18).
//!
//! The price is the contract: a word written at clock edge E can be read back from edge E+2
//! on; a read taken at E+1, while the write lands, gets an undefined word. No block that uses
//! this RAM needs more: where a read can follow a write of the same entry, the logic does not
//! use the word read (the flow table, for one, keeps the entry of its last operation in
//! registers and skips the read for the same flow). The counters of `regs` do need more and
//! keep rust-hdl's `RAM`.
//!
//! That "no block needs more" is checked, not assumed: on such a collision both simulations
//! return the old word inverted (rust-hdl's always; the generated Verilog when
//! `FERROCE_RAM_POISON` is defined, which every Verilator build of `ferroce-sim` does), so any
//! use of the undefined word changes what the co-simulated RTL does, and the differential
//! tests against the model fail (as they do when the counters use this RAM). Synthesis and
//! the plain Verilog never see the poison. `hdl/tests/ram_verilog.rs` holds the Verilog to
//! this contract under Icarus, with and without the poison.

use rust_hdl::prelude::*;
use std::collections::BTreeMap;

/// The words of a simulated RAM and its write port, as both RAMs here behave in rust-hdl: a
/// write taken at one clock edge lands at the next, and a read of the address whose write is
/// pending returns the old word inverted.
#[derive(Default)]
struct SimWords<const W: usize, const N: usize> {
    words: BTreeMap<Bits<N>, Bits<W>>,
    // The write taken at the last clock edge, which lands in `words` at the next one.
    pending: Option<(Bits<N>, Bits<W>)>,
}

impl<const W: usize, const N: usize> SimWords<W, N> {
    /// A write-clock edge: the pending write lands, and this cycle's is taken.
    fn clock(&mut self, enable: bool, address: Bits<N>, data: Bits<W>) {
        if let Some((a, word)) = self.pending.take() {
            self.words.insert(a, word);
        }
        if enable {
            self.pending = Some((address, data));
        }
    }

    /// The word at `address` now.
    fn read(&self, address: Bits<N>) -> Bits<W> {
        let old = self.words.get(&address).copied().unwrap_or_default();
        let collides = self.pending.is_some_and(|(a, _)| a == address);
        if collides { !old } else { old }
    }
}

/// The memory array `array` and its registered write port, as both RAMs' Verilog declares
/// them (the write lands one clock after it is taken).
fn write_port_verilog(array: &str, w: usize, n: usize) -> String {
    format!(
        "\
reg[{msb}:0] {array}[{last}:0];
reg [{amsb}:0] write_address_q;
reg [{msb}:0] write_data_q;
reg write_enable_q = 1'b0;

always @(posedge write_clock) begin
   write_address_q <= write_address;
   write_data_q <= write_data;
   write_enable_q <= write_enable;
   if (write_enable_q) begin
      {array}[write_address_q] <= write_data_q;
   end
end
",
        msb = w - 1,
        amsb = n - 1,
        last = (1usize << n) - 1,
    )
}

/// Block RAM of `2^N` words of `W` bits: `read_data` is the word at `read_address` one clock
/// after it is presented; `write_data` is taken at the clock when `write_enable` is high and
/// lands at `write_address` at the next clock, and a read presented at that next clock is
/// undefined for that address (simulated as the old word inverted).
#[derive(LogicBlock, Default)]
pub struct BlockRam<const W: usize, const N: usize> {
    /// Address read at the next clock edge.
    pub read_address: Signal<In, Bits<N>>,
    /// Clock of the read port.
    pub read_clock: Signal<In, Clock>,
    /// The word read (registered).
    pub read_data: Signal<Out, Bits<W>>,
    /// Address written at the next clock edge when enabled.
    pub write_address: Signal<In, Bits<N>>,
    /// Clock of the write port (the same clock as the read port wherever it is used).
    pub write_clock: Signal<In, Clock>,
    /// The word written.
    pub write_data: Signal<In, Bits<W>>,
    /// Write this cycle.
    pub write_enable: Signal<In, Bit>,
    _mem: SimWords<W, N>,
}

impl<const W: usize, const N: usize> Logic for BlockRam<W, N> {
    fn update(&mut self) {
        if self.read_clock.pos_edge() {
            self.read_data.next = self._mem.read(self.read_address.val());
        }
        if self.write_clock.pos_edge() {
            self._mem.clock(
                self.write_enable.val(),
                self.write_address.val(),
                self.write_data.val(),
            );
        }
    }

    fn connect(&mut self) {
        self.read_data.connect();
    }

    fn hdl(&self) -> Verilog {
        // `reg[..] mem[..];` as rust-hdl's RAM writes it: `tests/tests/icarus_nic.rs` finds the
        // memories by that pattern to zero them, as the FPGA's configuration does.
        Verilog::Custom(format!(
            "\
(* no_rw_check *)
{}
always @(posedge read_clock) begin
`ifdef FERROCE_RAM_POISON
   if (write_enable_q && write_address_q == read_address)
      read_data <= ~mem[read_address];
   else
`endif
   read_data <= mem[read_address];
end
",
            write_port_verilog("mem", W, N)
        ))
    }

    fn timing(&self) -> Vec<TimingInfo> {
        vec![
            TimingInfo {
                name: "ram_read".into(),
                clock: "read_clock".into(),
                inputs: vec!["read_address".into()],
                outputs: vec!["read_data".into()],
            },
            TimingInfo {
                name: "ram_write".into(),
                clock: "write_clock".into(),
                inputs: vec![
                    "write_address".into(),
                    "write_data".into(),
                    "write_enable".into(),
                ],
                outputs: vec![],
            },
        ]
    }
}

/// Distributed RAM of `2^N` words of `W` bits with an asynchronous read: `read_data` is the
/// word at `read_address` in the same cycle. The write is taken and lands as in [`BlockRam`]
/// (one clock later), and a read of the address whose write is pending is undefined (simulated
/// as the old word inverted, in rust-hdl always and in the Verilog with `FERROCE_RAM_POISON`).
///
/// For small tables whose word is needed in the cycle its address appears, before a block RAM
/// could return it; yosys maps it onto the ECP5's LUT RAM (`TRELLIS_DPR16X4`).
#[derive(LogicBlock, Default)]
pub struct LutRam<const W: usize, const N: usize> {
    /// Address read (combinationally).
    pub read_address: Signal<In, Bits<N>>,
    /// The word at `read_address`.
    pub read_data: Signal<Out, Bits<W>>,
    /// Address written at the next clock edge when enabled.
    pub write_address: Signal<In, Bits<N>>,
    /// Clock of the write port.
    pub write_clock: Signal<In, Clock>,
    /// The word written.
    pub write_data: Signal<In, Bits<W>>,
    /// Write this cycle.
    pub write_enable: Signal<In, Bit>,
    _mem: SimWords<W, N>,
}

impl<const W: usize, const N: usize> Logic for LutRam<W, N> {
    fn update(&mut self) {
        if self.write_clock.pos_edge() {
            self._mem.clock(
                self.write_enable.val(),
                self.write_address.val(),
                self.write_data.val(),
            );
        }
        self.read_data.next = self._mem.read(self.read_address.val());
    }

    fn connect(&mut self) {
        self.read_data.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(format!(
            "\
{}
always @(*) begin
`ifdef FERROCE_RAM_POISON
   if (write_enable_q && write_address_q == read_address)
      read_data = ~lut_mem[read_address];
   else
`endif
   read_data = lut_mem[read_address];
end
",
            write_port_verilog("lut_mem", W, N)
        ))
    }

    fn timing(&self) -> Vec<TimingInfo> {
        vec![TimingInfo {
            name: "lut_ram_write".into(),
            clock: "write_clock".into(),
            inputs: vec![
                "write_address".into(),
                "write_data".into(),
                "write_enable".into(),
            ],
            outputs: vec![],
        }]
    }
}
