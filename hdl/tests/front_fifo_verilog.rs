//! The front-register queue's Verilog (`ferroce_hdl::front_fifo::FrontFifo`) under Icarus
//! Verilog, with the LUT RAM's collision poison defined (a read of an entry whose write has not
//! landed returns it inverted), against a software queue: every entry taken comes out once, in
//! order; an entry taken while the RAM is empty and the front free goes straight to the front
//! (shown in the next cycle), any other is shown within the third cycle after the edge that
//! took it (a write lands in the RAM at the next edge, and the front is loaded from it at the
//! one after); `full`
//! and `almost_full` count the entries behind the front as documented.

use ferroce_hdl::front_fifo::FrontFifo;
use ferroce_hdl::verilog::generate;
use std::collections::VecDeque;
use std::fmt::Write;

mod common;
use common::{iverilog_present, run_icarus};

/// Four 8-bit words behind the front; `almost_full` at 3 landed entries.
type Small = FrontFifo<8, 2, 3, 1>;

/// One cycle's inputs.
#[derive(Clone, Copy)]
struct Cycle {
    write: bool,
    data: u8,
    read: bool,
}

/// Bursts of writes and of reads, so that the queue fills, drains and runs back to back;
/// then enough reads to drain it.
fn cycles(n: usize) -> Vec<Cycle> {
    let mut s = 0x9e37_79b9_7f4a_7c15_u64;
    let mut v: Vec<Cycle> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let busy_in = (s >> 40) & 3 != 0;
            let busy_out = (s >> 45) & 3 != 0;
            Cycle {
                write: (s & 7) < if busy_in { 6 } else { 2 },
                data: (s >> 8) as u8,
                read: (s >> 16 & 7) < if busy_out { 6 } else { 1 },
            }
        })
        .collect();
    v.extend((0..12).map(|_| Cycle {
        write: false,
        data: 0,
        read: true,
    }));
    v
}

/// What the queue shows within each cycle, before its clock edge.
#[derive(Clone, Copy, Debug)]
struct Shown {
    empty: bool,
    full: bool,
    almost_full: bool,
    data: u8,
}

fn run(ops: &[Cycle]) -> Vec<Shown> {
    let mut tb = String::from(
        "module tb;\n  reg clock = 0; reg write = 0; reg [7:0] data_in = 0; reg read = 0;\n  \
         wire [7:0] data_out; wire empty, full, almost_full;\n  \
         top dut(.clock(clock), .write(write), .data_in(data_in), .read(read), \
         .data_out(data_out), .empty(empty), .full(full), .almost_full(almost_full));\n  \
         initial begin\n",
    );
    for op in ops {
        writeln!(
            tb,
            "    write = {}; data_in = {}; read = {}; #1 $display(\"%h\", {{empty, full, \
             almost_full, data_out}}); clock = 1; #1 clock = 0;",
            u8::from(op.write),
            op.data,
            u8::from(op.read)
        )
        .unwrap();
    }
    tb.push_str("    $finish;\n  end\nendmodule\n");
    let dut = generate(Small::default());
    run_icarus(
        "front_fifo_verilog",
        "front_fifo",
        &dut,
        &tb,
        &["FERROCE_RAM_POISON"],
    )
    .into_iter()
    .map(|v| Shown {
        empty: v >> 10 & 1 == 1,
        full: v >> 9 & 1 == 1,
        almost_full: v >> 8 & 1 == 1,
        data: v as u8,
    })
    .collect()
}

#[test]
fn entries_come_out_once_in_order_and_the_flags_hold() {
    if !iverilog_present() {
        return;
    }
    let ops = cycles(20_000);
    let shown = run(&ops);
    assert_eq!(shown.len(), ops.len());
    // Entries taken and not popped, with the edge that took each and whether they went
    // straight to the front.
    let mut waiting: VecDeque<(u8, usize, bool)> = VecDeque::new();
    // Entries written to the RAM (not straight to the front) before the last edge and so far,
    // and those of them popped.
    let (mut ram_before_last, mut ram_taken, mut ram_popped) = (0usize, 0usize, 0usize);
    let (mut fulls, mut almost, mut back_to_back, mut fresh, mut direct) = (0, 0, 0, 0, 0);
    let (mut out, mut expect) = (Vec::new(), Vec::new());
    for (edge, (op, s)) in ops.iter().zip(&shown).enumerate() {
        let front_shown = !s.empty;
        match waiting.front() {
            Some(&(front, at, straight)) => {
                assert!(
                    front_shown || edge < at + if straight { 1 } else { 3 },
                    "cycle {edge}: the entry taken at {at} is not shown"
                );
                if front_shown {
                    assert_eq!(s.data, front, "cycle {edge}: front entry");
                    fresh += usize::from(!straight && edge == at + 3);
                }
            }
            None => assert!(!front_shown, "cycle {edge}: a front with nothing waiting"),
        }
        // The entries in the RAM are the waiting ones but the front.
        let in_ram = waiting.len() - usize::from(front_shown);
        assert_eq!(s.full, in_ram == 4, "cycle {edge}: full");
        let front_from_ram = front_shown && waiting.front().is_some_and(|&(_, _, d)| !d);
        let landed = ram_before_last - (ram_popped + usize::from(front_from_ram));
        assert_eq!(s.almost_full, landed >= 3, "cycle {edge}: almost_full");
        fulls += usize::from(s.full);
        almost += usize::from(s.almost_full && !s.full);
        let front_free = !front_shown || op.read;
        if op.read && front_shown {
            let (d, _, straight) = waiting.pop_front().expect("a front entry");
            out.push(Some(d));
            ram_popped += usize::from(!straight);
            // The next entry, if it had landed, is the front after this edge.
            back_to_back += usize::from(waiting.front().is_some_and(|&(_, at, _)| edge >= at + 2));
        }
        ram_before_last = ram_taken;
        if op.write && !s.full {
            let straight = in_ram == 0 && front_free;
            direct += usize::from(straight);
            waiting.push_back((op.data, edge, straight));
            expect.push(Some(op.data));
            ram_taken += usize::from(!straight);
        }
    }
    assert!(waiting.is_empty(), "the drain left entries");
    assert_eq!(out, expect, "entries out in the order taken");
    // The cases were all reached.
    assert!(fulls > 100, "full {fulls} times");
    assert!(almost > 100, "almost full and not full {almost} times");
    assert!(
        back_to_back > 1_000,
        "pops followed at once {back_to_back} times"
    );
    assert!(
        fresh > 100,
        "entries through the RAM shown as soon as allowed {fresh} times"
    );
    assert!(direct > 100, "entries straight to the front {direct} times");
}
