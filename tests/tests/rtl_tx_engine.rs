//! The RTL transmit path (TX engine + frame builder) under Verilator against the model's
//! `FastPath::service_rings` / `transmit`: the same connections, registers, host memory and
//! descriptor ring on both sides, then byte-for-byte equal frames in order, equal TxError
//! events in order, equal counter totals and equal `TXQ_HEAD`.
//!
//! Descriptors: every data opcode and CM over IPv4, IPv6 and 802.1Q connections, payloads from
//! empty to 4 KB (a few at the 8 KB maximum), on random ports (each frame must leave on its
//! descriptor's port, `tdest`), and every refusal: bad opcode, unknown and invalid
//! connections, ports at or beyond the path's port count (5 %, mixed with the other refusals
//! so that the checks' order shows), bad flow, bad lengths (including an offset + length that only
//! overflows in 32 bits), CM with a wrong length, a bad kind or a faulting address, payload
//! reads that fault, descriptor slots that fault, and mixes that check the order of the checks.
//! Random DMA latency, gaps between read beats and stalls on every ready; ring wrap, ring
//! resets, transmit disabled and no ring configured. A second run answers every read after 100
//! to 300 cycles, as PCIe does, so that many reads are outstanding at once, over a ring with
//! six faulting slots, so that batch reads fault often and are read again one descriptor at a
//! time while later reads are still in flight.
//!
//! Default: 400 descriptors each, 2,000 ring resets. `FERROCE_LONG=1`: 20,000 and 5,000
//! descriptors, 20,000 resets.

use ferroce_proto::hsi::{
    ConnectionEntry, Counter, Event, MAX_PAYLOAD_LEN, TX_DESCRIPTOR_LEN, TableId, TableSizes,
    TxDescriptor, event::TxErrorReason, regs,
};
use ferroce_proto::model::{DmaFault, FastPath, HostMemory};
use ferroce_proto::wire::{CmKind, CmRepr, EthernetAddress, Opcode, ROCEV2_UDP_PORT};
use ferroce_sim::rtl::tx_path::{COUNTER_SLOTS, RtlTxPath, Timing, TxPathOutput};
use ferroce_tests::Rng;

/// Host memory: a few mapped ranges; any access not inside one of them faults, as an IOMMU
/// would. An empty access touches nothing and never faults.
struct Memory {
    ranges: Vec<(u64, Vec<u8>)>,
}

impl Memory {
    fn range(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        self.ranges.iter_mut().find_map(|(base, bytes)| {
            let off = usize::try_from(addr.checked_sub(*base)?).ok()?;
            if off.checked_add(len)? <= bytes.len() {
                Some(&mut bytes[off..off + len])
            } else {
                None
            }
        })
    }
}

impl HostMemory for Memory {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        if buf.is_empty() {
            return Ok(());
        }
        buf.copy_from_slice(self.range(addr, buf.len()).ok_or(DmaFault)?);
        Ok(())
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        if data.is_empty() {
            return Ok(());
        }
        self.range(addr, data.len())
            .ok_or(DmaFault)?
            .copy_from_slice(data);
        Ok(())
    }
}

/// The ring lives above 4 GB (the slot address is a 64-bit sum). Some slots fault when
/// fetched: [`FAULTY`] by default (slot 13 unmapped, slot 22 only half mapped).
const RING: u64 = 0x0000_0001_2345_6000;
/// Slots mapped: the largest ring a test uses.
const RING_SLOTS: u64 = 128;
const FAULTY: [(u64, bool); 2] = [(13, false), (22, true)];
const PAYLOAD: u64 = 0x0000_7f12_3400_0000;
const PAYLOAD_LEN: usize = 64 * 1024;
const LOW: u64 = 0x1000;
const LOW_LEN: usize = 4096;
const CM_AREA: u64 = 0x5000_0000;
const CM_SLOTS: u64 = 64;
const UNMAPPED: u64 = 0x0000_dead_0000_0000;

/// Host memory: the ring with its `faulty` slots (slot, only its first half mapped) left out,
/// payload areas and CM messages.
fn memory(rng: &mut Rng, faulty: &[(u64, bool)]) -> Memory {
    let slot = |i: u64| RING + i * TX_DESCRIPTOR_LEN as u64;
    let mut ranges = Vec::new();
    let mut start = 0;
    for i in 0..=RING_SLOTS {
        let fault = faulty.iter().find(|(s, _)| *s == i);
        if i == RING_SLOTS || fault.is_some() {
            let mut len = (i - start) as usize * TX_DESCRIPTOR_LEN;
            if fault.is_some_and(|(_, half)| *half) {
                len += TX_DESCRIPTOR_LEN / 2;
            }
            if len > 0 {
                ranges.push((slot(start), vec![0u8; len]));
            }
            start = i + 1;
        }
    }
    ranges.extend([(PAYLOAD, rng.bytes(PAYLOAD_LEN)), (LOW, rng.bytes(LOW_LEN))]);
    // CM messages: even slots a valid kind, odd slots a kind CmKind::from_u8 refuses.
    let mut cm = Vec::new();
    for i in 0..CM_SLOTS {
        let mut m = CmRepr {
            kind: CmKind::Request,
            flags: rng.next_u8(),
            path_count: rng.next_u16(),
            src_conn: rng.next_u32(),
            dst_conn: rng.next_u32(),
            mtu: rng.next_u16(),
            tag_count: rng.next_u16(),
            initial_fsn: rng.next_u32(),
            rate_mbps: rng.next_u32(),
            tag_modes: rng.next_u64(),
        }
        .to_bytes();
        let (first, last) = (CmKind::FIRST as u8, CmKind::LAST as u8);
        m[0] = if i % 2 == 0 {
            first + rng.below((last - first + 1) as u64) as u8
        } else {
            [first - 1, last + 1, last + 2, 0x41, 0xff][rng.below(5) as usize]
        };
        assert_eq!(CmKind::from_u8(m[0]).is_some(), i % 2 == 0);
        cm.extend_from_slice(&m);
    }
    ranges.push((CM_AREA, cm));
    Memory { ranges }
}

fn connections(rng: &mut Rng) -> Vec<ConnectionEntry> {
    let mut conns = vec![ConnectionEntry::default(); 256];
    for i in 0..40usize {
        let index = rng.below(256) as usize;
        let ipv6 = i % 2 == 1;
        let ip = |rng: &mut Rng| {
            let mut b: [u8; 16] = rng.bytes(16).try_into().unwrap_or([0; 16]);
            if !ipv6 {
                b[..12].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
            }
            b
        };
        conns[index] = ConnectionEntry {
            // One in eight is programmed but not valid.
            valid: i % 8 != 7,
            ipv6,
            vlan_tci: (i % 4 >= 2).then(|| rng.next_u16()),
            dscp: rng.below(64) as u8,
            // Bits above 24 are ignored by the table decoding: both sides must drop them.
            peer_conn: rng.next_u32(),
            flow_base: rng.next_u16(),
            flow_count: if i == 5 { 0 } else { 1 + rng.below(8) as u16 },
            tag_base: rng.next_u16(),
            tag_count: rng.next_u16(),
            peer_mac: EthernetAddress::from_u64(rng.next_u64() & 0xffff_ffff_ffff),
            local_ip: ip(rng),
            peer_ip: ip(rng),
            rate_hint_mbps: rng.next_u32(),
        };
    }
    conns
}

/// A data payload length: mostly small, some up to 4 KB, a few at the maximum.
fn payload_len(rng: &mut Rng) -> u32 {
    match rng.below(20) {
        0..=7 => rng.upto(64) as u32,
        8..=15 => 65 + rng.upto(959) as u32,
        16..=18 => 1024 + rng.upto(3072) as u32,
        _ => MAX_PAYLOAD_LEN - rng.upto(8) as u32,
    }
}

fn payload_addr(rng: &mut Rng, len: u32) -> u64 {
    if len as usize <= LOW_LEN && rng.below(4) == 0 {
        LOW + rng.upto((LOW_LEN - len as usize) as u64)
    } else {
        PAYLOAD + rng.upto((PAYLOAD_LEN - len as usize) as u64)
    }
}

/// A descriptor's port, from its own random stream (so that the other fields are drawn as
/// before ports existed): one of the path's `ports`, or in 5 % of the descriptors one at or
/// beyond them.
fn port(rng: &mut Rng, ports: u32) -> u8 {
    if rng.below(20) == 0 {
        (ports as u64 + rng.below(256 - ports as u64)) as u8
    } else {
        rng.below(ports as u64) as u8
    }
}

/// The data opcodes a descriptor may carry.
const DATA_OPS: [Opcode; 4] = [
    Opcode::Send,
    Opcode::SendImm,
    Opcode::Write,
    Opcode::WriteImm,
];

/// The connections a data descriptor can be sent on: valid, with at least one flow.
fn sending_connections(conns: &[ConnectionEntry]) -> Vec<u32> {
    (0..conns.len() as u32)
        .filter(|&i| conns[i as usize].valid && conns[i as usize].flow_count > 0)
        .collect()
}

/// One random descriptor: mostly valid, every refusal now and then; its port from `ports`.
fn descriptor(rng: &mut Rng, ports: &mut Rng, conns: &[ConnectionEntry]) -> TxDescriptor {
    let valid = sending_connections(conns);
    let invalid: Vec<u32> = (0..conns.len() as u32)
        .filter(|&i| !conns[i as usize].valid)
        .collect();
    let conn = valid[rng.below(valid.len() as u64) as usize];
    let flow_count = conns[conn as usize].flow_count;
    let plen = payload_len(rng);
    let offset = rng.next_u32() >> 2;
    let mut d = TxDescriptor {
        opcode: DATA_OPS[rng.below(4) as usize] as u8,
        flags: rng.next_u8(),
        flow: rng.below(flow_count as u64) as u16,
        conn,
        fsn: rng.next_u32(),
        entropy: rng.next_u16(),
        tag: rng.next_u16(),
        msn: rng.next_u32(),
        ssn: rng.next_u32(),
        offset,
        msg_len: offset + plen + if rng.bool() { 0 } else { rng.next_u32() >> 4 },
        payload_len: plen,
        imm: rng.next_u32(),
        local_addr: payload_addr(rng, plen),
        remote_va: rng.next_u64(),
        rkey: rng.next_u32(),
        port: port(ports, RtlTxPath::ports()),
    };
    let cm = |rng: &mut Rng, d: &mut TxDescriptor, good: bool| {
        d.opcode = Opcode::Cm as u8;
        d.payload_len = 32;
        d.local_addr = CM_AREA + 32 * (2 * rng.below(CM_SLOTS / 2) + !good as u64);
    };
    let bad_opcode = |rng: &mut Rng| loop {
        let op = rng.next_u8();
        if !Opcode::from_u8(op).is_some_and(|o| o.is_data() || o == Opcode::Cm) {
            return if rng.bool() {
                op
            } else {
                [Opcode::Ack, Opcode::Nak][rng.below(2) as usize] as u8
            };
        }
    };
    let unknown = |rng: &mut Rng| {
        if rng.bool() && !invalid.is_empty() {
            invalid[rng.below(invalid.len() as u64) as usize]
        } else {
            256 + rng.below(u32::MAX as u64 - 256) as u32
        }
    };
    match rng.below(40) {
        0..=21 => {} // valid data
        22..=24 => cm(rng, &mut d, true),
        25 => d.opcode = bad_opcode(rng),
        26 => d.conn = unknown(rng),
        27 => d.flow = flow_count + rng.below(0x1_0000 - flow_count as u64) as u16,
        28 => {
            d.payload_len = MAX_PAYLOAD_LEN + 1 + rng.below(1 << 20) as u32;
            d.msg_len = u32::MAX;
        }
        29 => {
            d.payload_len = d.payload_len.max(1);
            d.msg_len = d.offset + d.payload_len - 1 - rng.below(d.payload_len as u64) as u32;
        }
        30 => {
            // Fits in 32-bit wrapping arithmetic, not in the real sum.
            d.payload_len = 1 + rng.below(4096) as u32;
            d.offset = u32::MAX - rng.below(d.payload_len as u64 - 1) as u32;
            d.msg_len = u32::MAX;
            d.local_addr = payload_addr(rng, d.payload_len);
        }
        31 => {
            cm(rng, &mut d, true);
            d.payload_len = [0, 31, 33, 64, rng.next_u32()][rng.below(5) as usize];
        }
        32 => cm(rng, &mut d, false),
        33 => {
            cm(rng, &mut d, true);
            d.local_addr = if rng.bool() {
                UNMAPPED
            } else {
                CM_AREA + CM_SLOTS * 32 - 16
            };
        }
        34 => {
            // Payload read faults: unmapped, or running off the end of a range.
            d.payload_len = d.payload_len.max(1);
            d.local_addr = if rng.bool() {
                UNMAPPED + rng.below(1 << 20)
            } else {
                PAYLOAD + PAYLOAD_LEN as u64 - rng.below(d.payload_len as u64)
            };
        }
        35 => {
            // No bytes, so no read: an unmapped address is fine.
            d.payload_len = 0;
            d.local_addr = UNMAPPED;
        }
        36 => {
            // Order: the opcode before the connection.
            d.opcode = bad_opcode(rng);
            d.conn = unknown(rng);
        }
        37 => {
            // Order: the connection before the flow and the length.
            d.conn = unknown(rng);
            d.flow = u16::MAX;
            d.payload_len = u32::MAX;
        }
        38 => {
            // Order: the flow before the length, the length before the DMA read.
            if rng.bool() {
                d.flow = flow_count;
            }
            d.payload_len = MAX_PAYLOAD_LEN + 1;
            d.local_addr = UNMAPPED;
        }
        _ => {
            // CM: the length before the read.
            cm(rng, &mut d, true);
            d.payload_len = 31;
            d.local_addr = UNMAPPED;
        }
    }
    d
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

struct Bench {
    model: FastPath,
    /// The descriptors' ports.
    ports: Rng,
    rtl: RtlTxPath,
    mem: Memory,
    rtl_counters: [u64; COUNTER_SLOTS],
    log_size: u32,
    tail: u32,
    now: u64,
    frames: usize,
    events: usize,
    /// Frames sent on a port other than 0, and descriptors refused for their port.
    ported: usize,
    bad_ports: usize,
}

impl Bench {
    /// Both sides set up alike: random connections, transmit enabled, a MAC, the UDP port and
    /// the ring's base; `None` when Verilator is missing and that is allowed.
    fn start(
        rtl_seed: u64,
        seed: u64,
        timing: Timing,
        faulty: &[(u64, bool)],
    ) -> Option<(Bench, Vec<ConnectionEntry>, Rng)> {
        let rtl = match RtlTxPath::new(rtl_seed, timing) {
            Ok(t) => t,
            Err(e) if std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_some() => {
                println!("SKIPPED: {e}");
                return None;
            }
            Err(e) => panic!("{e}"),
        };
        let mut rng = Rng::new(seed);
        let conns = connections(&mut rng);
        // The model with the path's tables: 256 connections and its port count.
        let sizes = TableSizes {
            ports: RtlTxPath::ports(),
            ..TableSizes::default()
        };
        let mut bench = Bench {
            model: FastPath::new(sizes),
            ports: Rng::new(seed ^ 0x9047),
            rtl,
            mem: memory(&mut rng, faulty),
            rtl_counters: [0; COUNTER_SLOTS],
            log_size: 0,
            tail: 0,
            now: 0x0123_4567_fff0_0000,
            frames: 0,
            events: 0,
            ported: 0,
            bad_ports: 0,
        };
        assert_eq!(
            TableSizes::default().connections,
            256,
            "the RTL has 256 entries"
        );
        for (i, c) in conns.iter().enumerate() {
            let words = c.to_words();
            assert_eq!(
                bench
                    .model
                    .write_table(TableId::Connection, i as u32, &words),
                regs::TABLE_STATUS_OK
            );
            bench.rtl.write_conn(i as u32, &words);
        }
        bench.reg(regs::CONTROL, regs::CONTROL_TX_ENABLE);
        bench.reg(regs::UDP_PORT, ROCEV2_UDP_PORT as u32);
        bench.set_mac(0x02fe_0000_0001);
        bench.set_ring_base(RING);
        Some((bench, conns, rng))
    }

    fn reg(&mut self, offset: u32, value: u32) {
        self.model.write_reg(offset, value);
        match offset {
            regs::CONTROL => self.rtl.set_enable(value & regs::CONTROL_TX_ENABLE != 0),
            regs::TXQ_LOG_SIZE => {
                self.log_size = value;
                self.tail = 0;
                self.rtl.set_txq_tail(0);
                self.rtl.set_txq_log_size(value);
            }
            regs::TXQ_TAIL => {
                self.tail = value;
                self.rtl.set_txq_tail(value);
            }
            regs::UDP_PORT => self.rtl.set_udp_port(value as u16),
            _ => panic!("register {offset:#x} not mirrored"),
        }
    }

    fn set_mac(&mut self, mac: u64) {
        self.model.write_reg(regs::MAC_LO, mac as u32);
        self.model.write_reg(regs::MAC_HI, (mac >> 32) as u32);
        self.rtl.set_src_mac(mac);
    }

    fn set_ring_base(&mut self, base: u64) {
        self.model.write_reg(regs::TXQ_BASE_LO, base as u32);
        self.model.write_reg(regs::TXQ_BASE_HI, (base >> 32) as u32);
        self.rtl.set_txq_base(base);
    }

    /// Queues `descs` at the tail (a slot that is not mapped keeps no descriptor).
    fn post(&mut self, descs: &[TxDescriptor]) {
        for d in descs {
            self.write_at_tail(d);
        }
        let tail = self.tail;
        self.reg(regs::TXQ_TAIL, tail);
    }

    /// Writes `d` into the slot at the tail and moves the bench's tail past it (the registers
    /// are left to the caller).
    fn write_at_tail(&mut self, d: &TxDescriptor) {
        let slot = (self.tail % (1u32 << self.log_size)) as u64;
        let _ = self
            .mem
            .dma_write(RING + slot * TX_DESCRIPTOR_LEN as u64, &d.to_bytes());
        self.tail = self.tail.wrapping_add(1);
    }

    /// Both sides process the ring at time `now`; everything they produce must agree.
    fn service(&mut self, label: &str) {
        self.now += 1 + self.time_step();
        self.model.set_time(self.now);
        self.model.service_rings(&mut self.mem);
        self.rtl.set_now_ns(self.now);
        let out = self.rtl.run(&mut self.mem, 5_000_000);
        self.check(out, label);
    }

    /// Posts `descs` one at a time while the RTL runs, `gap` cycles after each (waiting for
    /// room in the ring), then lets it finish; the model takes each as it is posted.
    /// Everything they produce must agree.
    fn stream(&mut self, descs: &[TxDescriptor], gap: u64, label: &str) {
        self.now += 1 + self.time_step();
        self.model.set_time(self.now);
        self.rtl.set_now_ns(self.now);
        let size = 1u32 << self.log_size;
        let mut out = TxPathOutput::default();
        for d in descs {
            let waiting_since = self.rtl.cycles();
            while self.tail.wrapping_sub(self.rtl.txq_head()) >= size {
                assert!(
                    self.rtl.cycles() - waiting_since < 1_000_000,
                    "{label}: the ring stays full (TXQ_HEAD stuck)"
                );
                out.append(self.rtl.run_for(&mut self.mem, gap));
            }
            self.write_at_tail(d);
            let tail = self.tail;
            self.reg(regs::TXQ_TAIL, tail);
            // The model takes each descriptor at once (its slot is reused later).
            self.model.service_rings(&mut self.mem);
            out.append(self.rtl.run_for(&mut self.mem, gap));
        }
        out.append(self.rtl.run(&mut self.mem, 5_000_000));
        self.check(out, label);
    }

    /// Compares what the RTL gave (`out`) with what the model has queued since the last check.
    fn check(&mut self, out: TxPathOutput, label: &str) {
        let mut want_frames = Vec::new();
        while let Some(f) = self.model.pop_port_frame() {
            want_frames.push(f);
        }
        let mut want_events = Vec::new();
        while let Some(e) = self.model.pop_event() {
            want_events.push(e.to_bytes());
        }
        for (i, (got, want)) in out.frames.iter().zip(&want_frames).enumerate() {
            assert_eq!(
                got.port,
                want.port,
                "{label}: frame {} leaves on another port",
                self.frames + i
            );
            let (got, want) = (&got.bytes, &want.bytes);
            if got != want {
                let at = got
                    .iter()
                    .zip(want)
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.len().min(want.len()));
                let window = |f: &[u8]| hex(&f[at.saturating_sub(8)..(at + 24).min(f.len())]);
                panic!(
                    "{label}: frame {} differs (lengths rtl {} spec {}), first difference at \
                     byte {at}\n rtl  ..{}\n spec ..{}",
                    self.frames + i,
                    got.len(),
                    want.len(),
                    window(got),
                    window(want)
                );
            }
        }
        assert_eq!(
            out.frames.len(),
            want_frames.len(),
            "{label}: number of frames"
        );
        for (i, (got, want)) in out.events.iter().zip(&want_events).enumerate() {
            assert_eq!(hex(got), hex(want), "{label}: event {}", self.events + i);
        }
        assert_eq!(
            out.events.len(),
            want_events.len(),
            "{label}: number of events"
        );
        self.frames += out.frames.len();
        self.events += out.events.len();
        self.ported += out.frames.iter().filter(|f| f.port != 0).count();
        self.bad_ports += want_events
            .iter()
            .filter(|e| {
                matches!(
                    Event::from_bytes(e),
                    Ok(Event::TxError {
                        reason: TxErrorReason::BadPort,
                        ..
                    })
                )
            })
            .count();
        for (total, add) in self.rtl_counters.iter_mut().zip(out.counters) {
            *total += add;
        }
        for c in Counter::ALL {
            assert_eq!(
                self.rtl_counters[*c as usize],
                self.model.counter(*c),
                "{label}: counter {}",
                c.name()
            );
        }
        assert!(
            self.rtl_counters[Counter::COUNT..].iter().all(|&v| v == 0),
            "{label}: increment of a counter that does not exist"
        );
        assert_eq!(
            self.rtl.txq_head(),
            self.model.read_reg(regs::TXQ_HEAD),
            "{label}: TXQ_HEAD"
        );
    }

    /// Posts `descs`, lets the RTL run `cycles` cycles and then resets the ring to
    /// `2^new_log` slots in whatever state the path is in: descriptor and payload reads in
    /// flight, a frame half out, an event offered. Afterwards the RTL must have produced what
    /// the model produces from exactly the descriptors it retired before the reset (its head),
    /// or from one more: a TxError event or a frame already offered is finished, not cut.
    /// Nothing else may come out: no partial frame, no read of the old ring used for the new
    /// one. Returns the DMA reads that were in flight at the reset and whether the descriptor
    /// at the head was finished.
    fn reset_mid_flight(
        &mut self,
        descs: &[TxDescriptor],
        cycles: u64,
        new_log: u32,
        label: &str,
    ) -> (usize, bool) {
        self.post(descs);
        self.now += 1 + self.time_step();
        self.model.set_time(self.now);
        self.rtl.set_now_ns(self.now);
        let mut out = self.rtl.run_for(&mut self.mem, cycles);
        let in_flight = self.rtl.reads_outstanding();
        self.rtl.set_txq_tail(0);
        self.rtl.set_txq_log_size(new_log);
        // The head as the reset reaches the engine: the reset pulse takes a clock edge to get
        // in, and a descriptor may be retired at that edge (read before it, the head missed
        // such a descriptor and a second one finished by the reset seemed one too many).
        let head = self.rtl.txq_head();
        out.append(self.rtl.run(&mut self.mem, 5_000_000));
        let counters: Vec<u64> = self
            .rtl_counters
            .iter()
            .zip(out.counters)
            .map(|(a, b)| a + b)
            .collect();
        let got_events: Vec<String> = out.events.iter().map(|e| hex(e)).collect();
        let mut tried = Vec::new();
        for extra in 0..2u32 {
            let mut model = self.model.clone();
            model.write_reg(regs::TXQ_TAIL, head.wrapping_add(extra));
            // Up to 20 descriptors go into a 16-slot ring here, on top of what is pending: the
            // model serves at most one ring's worth per call, the RTL goes on to the tail.
            while model.service_rings(&mut self.mem) > 0 {}
            let mut frames = Vec::new();
            while let Some(f) = model.pop_port_frame() {
                frames.push(f);
            }
            let mut events = Vec::new();
            while let Some(e) = model.pop_event() {
                events.push(hex(&e.to_bytes()));
            }
            let counters_equal = Counter::ALL
                .iter()
                .all(|c| counters[*c as usize] == model.counter(*c));
            if frames == out.frames && events == got_events && counters_equal {
                model.write_reg(regs::TXQ_LOG_SIZE, new_log);
                self.model = model;
                self.log_size = new_log;
                self.tail = 0;
                self.frames += out.frames.len();
                self.events += out.events.len();
                self.rtl_counters.copy_from_slice(&counters);
                assert_eq!(self.rtl.txq_head(), 0, "{label}: TXQ_HEAD after the reset");
                assert_eq!(
                    self.model.read_reg(regs::TXQ_HEAD),
                    0,
                    "{label}: model TXQ_HEAD after the reset"
                );
                return (in_flight, extra == 1);
            }
            let differ: Vec<String> = Counter::ALL
                .iter()
                .filter(|c| counters[**c as usize] != model.counter(**c))
                .map(|c| {
                    format!(
                        "{} rtl {} spec {}",
                        c.name(),
                        counters[*c as usize],
                        model.counter(*c)
                    )
                })
                .collect();
            tried.push(format!(
                "head + {extra}: spec {} frames, {} events, counters {}",
                frames.len(),
                events.len(),
                if differ.is_empty() {
                    "equal".to_string()
                } else {
                    differ.join(", ")
                }
            ));
        }
        panic!(
            "{label}: after a reset at head {head} with {in_flight} reads in flight the RTL \
             gave {} frames and {} events; {}",
            out.frames.len(),
            out.events.len(),
            tried.join("; ")
        );
    }

    fn time_step(&self) -> u64 {
        // Time moves by a deterministic, irregular step (the low 32 bits wrap now and then).
        (self.now.rotate_left(17) ^ 0x9e37_79b9) % 1_000_000_007
    }
}

/// Both sides process `count` random descriptors in random batches, with ring resets, transmit
/// disabled now and then and new MAC and UDP port; the harness's timing rotates through
/// `timings`; the ring's `faulty` slots fault when fetched.
fn against_the_model(
    rtl_seed: u64,
    seed: u64,
    count: usize,
    timings: &[Timing],
    faulty: &[(u64, bool)],
) {
    let Some((mut bench, conns, mut rng)) =
        Bench::start(rtl_seed, seed, timings[1 % timings.len()], faulty)
    else {
        return;
    };

    // No ring configured: a tail ahead of head fetches nothing.
    bench.reg(regs::TXQ_LOG_SIZE, 0);
    bench.reg(regs::TXQ_TAIL, 3);
    bench.service("no ring");
    bench.reg(regs::TXQ_LOG_SIZE, 5);

    let mut sent = 0;
    let mut batch = 0;
    while sent < count {
        batch += 1;
        bench.rtl.set_timing(timings[batch % timings.len()]);
        let size = 1u32 << bench.log_size;
        let pending = bench
            .tail
            .wrapping_sub(bench.model.read_reg(regs::TXQ_HEAD));
        let room = size - pending;
        let n = (1 + rng.below(20) as u32)
            .min(room)
            .min((count - sent) as u32);
        let descs: Vec<TxDescriptor> = (0..n)
            .map(|_| descriptor(&mut rng, &mut bench.ports, &conns))
            .collect();
        sent += n as usize;
        bench.post(&descs);
        let label = format!("batch {batch} ({n} descriptors, {sent} so far)");
        match batch % 17 {
            5 => {
                // Transmit disabled: nothing moves until it is enabled again.
                bench.reg(regs::CONTROL, 0);
                bench.service(&label);
                bench.reg(regs::CONTROL, regs::CONTROL_TX_ENABLE);
            }
            11 => {
                // A new ring (16 or 32 slots): head and tail restart at 0; the slots keep
                // their old descriptors but none is pending.
                bench.service(&label);
                let log = if bench.log_size == 5 { 4 } else { 5 };
                bench.reg(regs::TXQ_LOG_SIZE, log);
            }
            13 => {
                bench.reg(regs::UDP_PORT, 0xc000 | rng.next_u16() as u32);
                bench.set_mac(rng.next_u64() & 0xffff_ffff_ffff);
                bench.service(&label);
            }
            _ => bench.service(&label),
        }
    }
    // Whatever the disabled batches left is sent now.
    bench.service("drain");
    // Descriptors refused for their port (5 %) would otherwise mostly have been frames.
    assert!(
        bench.frames + bench.bad_ports > count / 2,
        "too few frames: {}",
        bench.frames
    );
    assert!(
        bench.events > count / 20,
        "too few events: {}",
        bench.events
    );
    let fetch_faults = bench.model.counter(Counter::TxBadDescriptor) - bench.events as u64;
    assert!(fetch_faults > 0, "no descriptor-fetch faults");
    assert!(
        (bench.ported > bench.frames / 2 || RtlTxPath::ports() == 1) && bench.bad_ports > 0,
        "too few frames on other ports ({}) or refused ports ({})",
        bench.ported,
        bench.bad_ports
    );
    println!(
        "{count} descriptors: {} frames ({} not on port 0), {} events ({} bad ports), \
         {fetch_faults} descriptor-fetch faults, {} cycles, up to {} DMA reads outstanding",
        bench.frames,
        bench.ported,
        bench.events,
        bench.bad_ports,
        bench.rtl.cycles(),
        bench.rtl.max_reads_outstanding()
    );
}

fn long() -> bool {
    std::env::var_os("FERROCE_LONG").is_some()
}

#[test]
fn transmit_path_matches_the_model() {
    let fast = Timing {
        min_latency: 0,
        max_latency: 2,
        beat_gap: 0.0,
        stall: 0.0,
        mac_stall: 0.0,
    };
    let slow_mac = Timing {
        min_latency: 0,
        max_latency: 0,
        beat_gap: 0.0,
        stall: 0.6,
        mac_stall: 0.0,
    };
    let count = if long() { 20_000 } else { 400 };
    against_the_model(
        0x7e,
        0x7e_e9_91_e5,
        count,
        &[fast, Timing::default(), slow_mac],
        &FAULTY,
    );
}

/// A PCIe read's latency (100 to 300 cycles), so that many reads are outstanding at once, and
/// a ring with many faulting slots, so that batch reads fault often and are read again one
/// descriptor at a time while later reads are still in flight.
#[test]
fn transmit_path_matches_the_model_at_pcie_latency() {
    let pcie = Timing {
        min_latency: 100,
        max_latency: 300,
        beat_gap: 0.2,
        stall: 0.2,
        mac_stall: 0.0,
    };
    let pcie_slow_mac = Timing {
        beat_gap: 0.0,
        stall: 0.6,
        ..pcie
    };
    let faulty = [
        (3, false),
        (9, true),
        (13, false),
        (14, false),
        (22, true),
        (27, false),
    ];
    let count = if long() { 5_000 } else { 400 };
    against_the_model(0x9c1e, 0x9c1e_5eed, count, &[pcie, pcie_slow_mac], &faulty);
}

/// Reads answered after 3,000 to 4,000 cycles (ten times a PCIe read): the fetch and payload
/// limits, not the latency, decide how much is in flight. (The read-tag limit itself is not
/// reached here: with it removed this still passes; the other limits bind first.)
#[test]
fn transmit_path_matches_the_model_at_very_long_read_latency() {
    let slow = Timing {
        min_latency: 3_000,
        max_latency: 4_000,
        beat_gap: 0.0,
        stall: 0.0,
        mac_stall: 0.0,
    };
    let count = if long() { 2_000 } else { 200 };
    against_the_model(
        0x7a65,
        0x7a65_f011,
        count,
        &[slow],
        &[(5, false), (17, true)],
    );
}

/// `count` data descriptors with payloads of `lens` bytes (some refused, some whose payload
/// read faults).
fn data_descriptors(
    bench: &mut Bench,
    rng: &mut Rng,
    conns: &[ConnectionEntry],
    count: usize,
    lens: core::ops::RangeInclusive<u32>,
) -> Vec<TxDescriptor> {
    (0..count)
        .map(|_| {
            loop {
                let d = descriptor(rng, &mut bench.ports, conns);
                if d.opcode != Opcode::Cm as u8 && lens.contains(&d.payload_len) {
                    break d;
                }
            }
        })
        .collect()
}

/// The three limits on reads in flight, each reached and honoured (the path must wait at it
/// and still match the model):
/// - the 32 read tags: descriptors posted one at a time while reads take 2,000 cycles, into a
///   128-slot ring, so each post starts its own descriptor read and each descriptor that
///   arrives its payload read;
/// - the 32 fault bits of payload reads not yet retired: a MAC far slower than the DMA, so
///   payload read ahead waits behind the frame leaving, and some of those reads fault;
/// - room in the 16 KB payload ring: the same slow MAC with payloads of 1 KB to 8 KB.
#[test]
fn read_limits_are_reached_and_the_path_waits() {
    let slow_reads = Timing {
        min_latency: 2_000,
        max_latency: 2_000,
        beat_gap: 0.0,
        stall: 0.0,
        mac_stall: 0.0,
    };
    let Some((mut bench, conns, mut rng)) = Bench::start(0x7a95, 0x7a95_11e1, slow_reads, &[])
    else {
        return;
    };
    bench.reg(regs::TXQ_LOG_SIZE, 7);
    for gap in [1, 4, 16] {
        // Small payloads: one read each, never waiting for room in the payload ring.
        let descs = data_descriptors(&mut bench, &mut rng, &conns, 300, 1..=64);
        bench.stream(
            &descs,
            gap,
            &format!("reads after 2,000 cycles, a post every {gap}"),
        );
    }
    let most = bench.rtl.max_reads_outstanding();
    assert_eq!(
        most, 32,
        "reads in flight beyond or short of the 32 read tags"
    );

    bench.rtl.set_timing(Timing {
        min_latency: 20,
        max_latency: 60,
        beat_gap: 0.0,
        stall: 0.0,
        mac_stall: 0.9,
    });
    let descs = data_descriptors(&mut bench, &mut rng, &conns, 100, 1..=64);
    bench.post(&descs);
    bench.service("slow MAC");
    let descs = data_descriptors(&mut bench, &mut rng, &conns, 40, 1024..=MAX_PAYLOAD_LEN);
    bench.post(&descs);
    bench.service("slow MAC, large payloads");
    println!(
        "{} frames, {} events, up to {most} reads in flight",
        bench.frames, bench.events
    );
}

/// A data descriptor that passes every check (valid connection and flow, a port of the path,
/// consistent lengths, mapped memory) with a `plen`-byte payload.
fn sending_descriptor(rng: &mut Rng, conns: &[ConnectionEntry], plen: u32) -> TxDescriptor {
    let valid = sending_connections(conns);
    let conn = valid[rng.below(valid.len() as u64) as usize];
    let offset = rng.next_u32() >> 8;
    TxDescriptor {
        opcode: DATA_OPS[rng.below(4) as usize] as u8,
        flags: rng.next_u8(),
        flow: rng.below(conns[conn as usize].flow_count as u64) as u16,
        conn,
        fsn: rng.next_u32(),
        entropy: rng.next_u16(),
        tag: rng.next_u16(),
        msn: rng.next_u32(),
        ssn: rng.next_u32(),
        offset,
        msg_len: offset + plen,
        payload_len: plen,
        imm: rng.next_u32(),
        local_addr: payload_addr(rng, plen),
        remote_va: rng.next_u64(),
        rkey: rng.next_u32(),
        port: rng.below(RtlTxPath::ports() as u64) as u8,
    }
}

/// With reads answered at once and a MAC that is always ready, a ring of back-to-back data
/// descriptors that all pass leaves as one run of beats: no idle cycle inside a frame or
/// between two, for minimum-size frames (no payload) as for payloads up to 256 bytes.
#[test]
fn back_to_back_frames_leave_without_a_gap() {
    let fast = Timing {
        min_latency: 0,
        max_latency: 0,
        beat_gap: 0.0,
        stall: 0.0,
        mac_stall: 0.0,
    };
    let Some((mut bench, conns, mut rng)) = Bench::start(0xb2b, 0xb2b_0001, fast, &[]) else {
        return;
    };
    bench.reg(regs::TXQ_LOG_SIZE, 7);
    let mut gappy = Vec::new();
    for lens in [0..=0, 1..=8, 9..=64, 0..=256] {
        // Descriptors the path sends: a refused one takes the front end's time and sends
        // nothing, which is a gap of another kind.
        let descs: Vec<TxDescriptor> = (0..120)
            .map(|_| {
                let plen = *lens.start() + rng.upto((*lens.end() - *lens.start()) as u64) as u32;
                sending_descriptor(&mut rng, &conns, plen)
            })
            .collect();
        bench.rtl.take_output_gaps();
        let (frames, events) = (bench.frames, bench.events);
        bench.post(&descs);
        bench.service(&format!("back to back, payloads {lens:?}"));
        assert_eq!(
            (bench.frames - frames, bench.events - events),
            (120, 0),
            "every descriptor sends a frame"
        );
        let gaps = bench.rtl.take_output_gaps();
        if gaps != 0 {
            gappy.push(format!(
                "{gaps} idle cycles among 120 frames with payloads {lens:?}"
            ));
        }
    }
    assert!(gappy.is_empty(), "{gappy:#?}");
}

/// Ring resets while the path is busy: descriptor batches and payload reads in flight (PCIe
/// latency), frames half out, events offered. Each reset must leave the outputs of a prefix
/// of the ring, as the model gives them, and the next ring must work from a clean start.
#[test]
fn ring_reset_with_reads_in_flight_matches_the_model() {
    let pcie = Timing {
        min_latency: 100,
        max_latency: 300,
        beat_gap: 0.2,
        stall: 0.2,
        mac_stall: 0.0,
    };
    let Some((mut bench, conns, mut rng)) = Bench::start(0x5e7, 0x5e70_ff1e5, pcie, &FAULTY) else {
        return;
    };
    bench.reg(regs::TXQ_LOG_SIZE, 5);
    let rounds = if long() { 20_000 } else { 2_000 };
    let (mut busy_resets, mut cut_short, mut finished) = (0, 0, 0);
    for round in 0..rounds {
        let n = 1 + rng.below(20) as usize;
        let descs: Vec<TxDescriptor> = (0..n)
            .map(|_| descriptor(&mut rng, &mut bench.ports, &conns))
            .collect();
        let cycles = rng.below(1_500);
        let log = if bench.log_size == 5 { 4 } else { 5 };
        let frames_before = bench.frames + bench.events;
        let label = format!("round {round}: reset after {cycles} cycles, {n} posted");
        let (in_flight, head_finished) = bench.reset_mid_flight(&descs, cycles, log, &label);
        busy_resets += (in_flight > 0) as usize;
        finished += head_finished as usize;
        if bench.frames + bench.events - frames_before < n {
            cut_short += 1;
        }
        // The new ring from a clean start.
        let m = 1 + rng.below(8) as usize;
        let descs: Vec<TxDescriptor> = (0..m)
            .map(|_| descriptor(&mut rng, &mut bench.ports, &conns))
            .collect();
        bench.post(&descs);
        bench.service(&format!("round {round}: the ring after the reset"));
    }
    println!(
        "{rounds} resets: {busy_resets} with DMA reads in flight, {cut_short} before every \
         posted descriptor was out, {finished} finishing the descriptor at the head; {} \
         frames, {} events",
        bench.frames, bench.events
    );
    assert!(
        busy_resets * 3 > rounds,
        "too few resets with reads in flight: {busy_resets} of {rounds}"
    );
    assert!(
        cut_short * 3 > rounds,
        "too few resets cut a batch short: {cut_short} of {rounds}"
    );
}
