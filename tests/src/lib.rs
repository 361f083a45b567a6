//! Shared helpers for the end-to-end tests that check ferroce frames against real tools
//! (tshark with the Lua dissector, Scapy's RoCEv2 ICRC).
//!
//! - Locating the tools, and the policy when one is missing: the test fails and says how to
//!   install it, unless `FERROCE_ALLOW_MISSING_TOOLS=1`, in which case it prints
//!   `SKIPPED: <tool> missing` and passes.
//! - Deterministic sample frames: a fixed set covering every packet type over IPv4, IPv6 and
//!   802.1Q ([`sample_frames`]) and pseudo-random frames ([`random_frame`]).

use ferroce_proto::pcap::PcapWriter;
use ferroce_proto::wire::{
    AckRepr, BthRepr, CmKind, CmRepr, DataRepr, EthernetAddress, EthernetRepr, FrameRepr, IpRepr,
    Ipv4Repr, Ipv6Repr, NakReason, NakRepr, Opcode, ROCEV2_UDP_PORT, RethRepr, SACK_BITS,
    TransportRepr,
};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Environment variable that turns a missing tool into a skipped test.
pub const ALLOW_MISSING_ENV: &str = "FERROCE_ALLOW_MISSING_TOOLS";
/// Environment variable naming the Python interpreter that has Scapy installed.
pub const PYTHON_ENV: &str = "FERROCE_PYTHON";

/// Every ferroce opcode.
pub const ALL_OPCODES: [Opcode; 7] = [
    Opcode::Send,
    Opcode::SendImm,
    Opcode::Write,
    Opcode::WriteImm,
    Opcode::Ack,
    Opcode::Nak,
    Opcode::Cm,
];

/// Every NAK reason.
pub const ALL_NAK_REASONS: [NakReason; 4] = [
    NakReason::ReceiverNotReady,
    NakReason::InvalidRequest,
    NakReason::RemoteAccess,
    NakReason::OutOfWindow,
];

/// Every CM kind.
pub const ALL_CM_KINDS: [CmKind; 7] = [
    CmKind::Request,
    CmKind::Reply,
    CmKind::ReadyToUse,
    CmKind::Reject,
    CmKind::DisconnectRequest,
    CmKind::DisconnectReply,
    CmKind::TagModes,
];

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The Wireshark Lua dissector, `tools/wireshark/ferroce.lua`.
pub fn lua_dissector() -> PathBuf {
    workspace_root().join("tools/wireshark/ferroce.lua")
}

/// Looks for an executable called `name` in the directories of `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// tshark, from `PATH`.
pub fn tshark_path() -> Option<PathBuf> {
    find_on_path("tshark")
}

/// The Python interpreter for the Scapy checks: `$FERROCE_PYTHON` if set, else the venv at
/// `<workspace>/target/venv/bin/python`. `None` when that file does not exist.
pub fn python_path() -> Option<PathBuf> {
    let p = match std::env::var_os(PYTHON_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => workspace_root().join("target/venv/bin/python"),
    };
    p.is_file().then_some(p)
}

/// True when `FERROCE_ALLOW_MISSING_TOOLS=1`.
pub fn missing_tools_allowed() -> bool {
    std::env::var(ALLOW_MISSING_ENV).is_ok_and(|v| v == "1")
}

/// Applies the missing-tool policy to a lookup result (`looked` says where the tool was looked
/// for). Returns the tool's path when found. When it is missing: panics with instructions, or,
/// with `FERROCE_ALLOW_MISSING_TOOLS=1`, prints `SKIPPED: <tool> missing` and returns `None`
/// (the caller then returns early).
pub fn require(tool: &str, found: Option<PathBuf>, looked: &str) -> Option<PathBuf> {
    if found.is_some() {
        return found;
    }
    if missing_tools_allowed() {
        println!("SKIPPED: {tool} missing");
        return None;
    }
    panic!(
        "{tool} missing (looked {looked}): run `cargo xtask test`, which installs it \
         (or set {ALLOW_MISSING_ENV}=1 to skip this test)"
    );
}

/// tshark, under the missing-tool policy of [`require`].
pub fn require_tshark() -> Option<PathBuf> {
    require("tshark", tshark_path(), "in PATH")
}

/// A Python interpreter that can import `scapy.contrib.roce`, under the missing-tool policy of
/// [`require`].
pub fn require_scapy_python() -> Option<PathBuf> {
    let looked = format!(
        "at ${PYTHON_ENV}, else {}",
        workspace_root().join("target/venv/bin/python").display()
    );
    let python = require("python (venv with scapy)", python_path(), &looked)?;
    let has_scapy = Command::new(&python)
        .args(["-c", "import scapy.contrib.roce"])
        .output()
        .is_ok_and(|o| o.status.success());
    let looked = format!("for `import scapy.contrib.roce` in {}", python.display());
    require("scapy", has_scapy.then_some(python), &looked)
}

/// Runs `cmd`, panicking with its stderr if it cannot start or exits unsuccessfully, and
/// returns its stdout.
pub fn run_stdout(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("{cmd:?} printed non-UTF-8: {e}"))
}

/// Writes `frames` to a classic pcap file at `path`, one microsecond apart.
pub fn write_pcap<F: AsRef<[u8]>>(path: &Path, frames: &[F]) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    }
    let file =
        std::fs::File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    let mut w = PcapWriter::new(std::io::BufWriter::new(file)).expect("pcap header");
    for (i, f) in frames.iter().enumerate() {
        w.write(1_000_000_000 + i as u64 * 1000, f.as_ref())
            .expect("pcap record");
    }
    w.finish().expect("pcap flush");
}

/// The deterministic generator the tests use (SplitMix64), so that failures reproduce.
pub use ferroce_sim::rng::Rng;

/// The network layer of a sample frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// Untagged IPv4.
    V4,
    /// Untagged IPv6.
    V6,
    /// IPv4 behind an 802.1Q tag.
    V4Vlan,
    /// IPv6 behind an 802.1Q tag.
    V6Vlan,
}

impl Net {
    /// All four variants.
    pub const ALL: [Net; 4] = [Net::V4, Net::V6, Net::V4Vlan, Net::V6Vlan];

    /// Whether the frame carries IPv6.
    pub fn is_v6(self) -> bool {
        matches!(self, Net::V6 | Net::V6Vlan)
    }

    /// Whether the frame carries an 802.1Q tag.
    pub fn has_vlan(self) -> bool {
        matches!(self, Net::V4Vlan | Net::V6Vlan)
    }

    /// Short name for labels.
    pub fn name(self) -> &'static str {
        match self {
            Net::V4 => "ipv4",
            Net::V6 => "ipv6",
            Net::V4Vlan => "vlan-ipv4",
            Net::V6Vlan => "vlan-ipv6",
        }
    }
}

/// One test frame, kept as the reprs it is emitted from so that tests compare tool output
/// against the values that went in.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Human-readable description (packet type, network layer, index).
    pub label: String,
    /// Ethernet header (the EtherType is derived on emit).
    pub eth: EthernetRepr,
    /// IP header (the payload length is derived on emit).
    pub ip: IpRepr,
    /// UDP source port (path entropy).
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// BTH fields (the opcode is derived from `transport` on emit).
    pub bth: BthRepr,
    /// ferroce transport headers.
    pub transport: TransportRepr,
    /// Payload (data packets only).
    pub payload: Vec<u8>,
}

impl Sample {
    /// The frame repr borrowing this sample's payload.
    pub fn repr(&self) -> FrameRepr<'_> {
        FrameRepr {
            eth: self.eth,
            ip: self.ip,
            src_port: self.src_port,
            dst_port: self.dst_port,
            bth: self.bth,
            transport: self.transport,
            payload: &self.payload,
        }
    }

    /// The emitted frame bytes.
    pub fn emit(&self) -> Vec<u8> {
        self.repr().emit()
    }

    /// The packet type.
    pub fn opcode(&self) -> Opcode {
        self.transport.opcode()
    }
}

/// Random IP/Ethernet layers for `net`: CE or ECT(0) or not-ECT, random DSCP, TTL / hop limit,
/// flow label, identification and addresses.
pub fn random_headers(rng: &mut Rng, net: Net) -> (EthernetRepr, IpRepr) {
    let eth = EthernetRepr {
        dst: EthernetAddress([
            0x02,
            0xfe,
            0x01,
            rng.next_u8(),
            rng.next_u8(),
            rng.next_u8(),
        ]),
        src: EthernetAddress([
            0x02,
            0xfe,
            0x02,
            rng.next_u8(),
            rng.next_u8(),
            rng.next_u8(),
        ]),
        vlan_tci: net.has_vlan().then(|| rng.next_u16()),
        ethertype: 0,
    };
    let ecn = rng.upto(3) as u8;
    let dscp = rng.upto(63) as u8;
    let ip = if net.is_v6() {
        IpRepr::V6(Ipv6Repr {
            src: Ipv6Addr::from(u128::from(rng.next_u64()) | 0xfd00 << 112),
            dst: Ipv6Addr::from(u128::from(rng.next_u64()) | 0xfd00 << 112),
            dscp,
            ecn,
            flow_label: rng.next_u32() & 0xf_ffff,
            hop_limit: 1 + rng.upto(254) as u8,
            payload_len: 0,
        })
    } else {
        IpRepr::V4(Ipv4Repr {
            src: Ipv4Addr::from(0x0a00_0000 | (rng.next_u32() & 0x00ff_ffff)),
            dst: Ipv4Addr::from(0x0a00_0000 | (rng.next_u32() & 0x00ff_ffff)),
            dscp,
            ecn,
            ttl: 1 + rng.upto(254) as u8,
            ident: rng.next_u16(),
            payload_len: 0,
        })
    };
    (eth, ip)
}

/// Random transport headers of type `opcode` (NAK reason and CM kind chosen at random).
pub fn random_transport(rng: &mut Rng, opcode: Opcode) -> TransportRepr {
    match opcode {
        Opcode::Ack => {
            let mut sack = [0u8; SACK_BITS / 8];
            // Mix sparse, dense and empty bitmaps.
            match rng.upto(3) {
                0 => {}
                1 => sack.iter_mut().for_each(|b| *b = rng.next_u8()),
                2 => sack
                    .iter_mut()
                    .for_each(|b| *b = rng.next_u8() & rng.next_u8()),
                _ => sack = [0xff; SACK_BITS / 8],
            }
            TransportRepr::Ack(AckRepr {
                flow: rng.next_u16(),
                ecn_echo: rng.bool(),
                ce_count: rng.next_u16(),
                refused: rng.next_u16(),
                rate_hint_mbps: rng.next_u32(),
                ts_echo: rng.next_u32(),
                sack,
            })
        }
        Opcode::Nak => TransportRepr::Nak(NakRepr {
            flow: rng.next_u16(),
            reason: ALL_NAK_REASONS[rng.upto(3) as usize],
            tag: rng.next_u16(),
            msn: rng.next_u32(),
            offset: rng.next_u32(),
        }),
        Opcode::Cm => TransportRepr::Cm(CmRepr {
            kind: ALL_CM_KINDS[rng.upto(ALL_CM_KINDS.len() as u64 - 1) as usize],
            flags: rng.next_u8(),
            path_count: rng.next_u16(),
            src_conn: rng.next_u32(),
            dst_conn: rng.next_u32(),
            mtu: rng.next_u16(),
            tag_count: rng.next_u16(),
            initial_fsn: rng.next_u32(),
            rate_mbps: rng.next_u32(),
            tag_modes: rng.next_u64(),
        }),
        _ => TransportRepr::Data(DataRepr {
            flow: rng.next_u16(),
            tag: rng.next_u16(),
            msn: rng.next_u32(),
            // Writes carry SSN 0; Sends number the receive buffers they consume.
            ssn: if opcode.is_write() { 0 } else { rng.next_u32() },
            offset: rng.next_u32(),
            msg_len: rng.next_u32(),
            timestamp: rng.next_u32(),
            reth: opcode.is_write().then(|| RethRepr {
                va: rng.next_u64(),
                rkey: rng.next_u32(),
            }),
            imm: opcode.has_imm().then(|| rng.next_u32()),
        }),
    }
}

/// A random frame of type `opcode` over `net`, with a payload of `0..=max_payload` bytes for
/// data packets.
pub fn random_frame(rng: &mut Rng, opcode: Opcode, net: Net, max_payload: usize) -> Sample {
    let (eth, ip) = random_headers(rng, net);
    let transport = random_transport(rng, opcode);
    let payload = if opcode.is_data() {
        let n = rng.upto(max_payload as u64) as usize;
        rng.bytes(n)
    } else {
        Vec::new()
    };
    Sample {
        label: format!("{}/{}", opcode.name(), net.name()),
        eth,
        ip,
        src_port: 0xc000 | (rng.next_u16() & 0x3fff),
        dst_port: ROCEV2_UDP_PORT,
        bth: BthRepr {
            opcode,
            solicited: rng.bool(),
            dest_conn: rng.next_u32() & 0x00ff_ffff,
            ack_req: rng.bool(),
            psn: rng.next_u32() & 0x00ff_ffff,
        },
        transport,
        payload,
    }
}

/// A fixed set of frames covering every packet type over IPv4, IPv6, and both behind an
/// 802.1Q tag: the four data opcodes (payloads up to 300 bytes, including empty), ACKs with an
/// empty, a full and a sparse SACK bitmap (ECN-echo on and off, one whose SACKed FSNs wrap
/// past 2^24), a NAK for every reason and a CM message of every kind. Field values are
/// pseudo-random but fixed.
pub fn sample_frames() -> Vec<Sample> {
    let mut rng = Rng::new(0xfe77_0ce5);
    let mut out = Vec::new();
    for net in Net::ALL {
        let mut push = |mut s: Sample, what: &str| {
            s.label = format!("#{} {}/{} {what}", out.len(), s.opcode().name(), net.name());
            out.push(s);
        };
        for op in [
            Opcode::Send,
            Opcode::SendImm,
            Opcode::Write,
            Opcode::WriteImm,
        ] {
            let s = random_frame(&mut rng, op, net, 300);
            push(s, "");
            let mut s = random_frame(&mut rng, op, net, 0);
            if let TransportRepr::Data(d) = &mut s.transport {
                d.offset = 0;
                d.msg_len = 0;
            }
            push(s, "empty");
        }
        // ACKs: sparse SACK with ECN echo; empty; full; wrapping FSNs.
        let sparse = {
            let mut sack = [0u8; SACK_BITS / 8];
            for i in [0usize, 1, 2, 5, 9, 10, 11, 12, 63, 64, 127, 200, 254, 255] {
                sack[i / 8] |= 1 << (i % 8);
            }
            sack
        };
        for (sack, ece, psn, what) in [
            (sparse, true, None, "sparse sack, ECE"),
            ([0u8; 32], false, None, "empty sack"),
            ([0xff; 32], true, None, "full sack"),
            (sparse, false, Some(0x00ff_fff0), "sack wraps 2^24"),
        ] {
            let mut s = random_frame(&mut rng, Opcode::Ack, net, 0);
            if let TransportRepr::Ack(a) = &mut s.transport {
                a.sack = sack;
                a.ecn_echo = ece;
            }
            if let Some(psn) = psn {
                s.bth.psn = psn;
            }
            push(s, what);
        }
        for reason in ALL_NAK_REASONS {
            let mut s = random_frame(&mut rng, Opcode::Nak, net, 0);
            if let TransportRepr::Nak(n) = &mut s.transport {
                n.reason = reason;
            }
            push(s, &format!("{reason:?}"));
        }
        for kind in ALL_CM_KINDS {
            let mut s = random_frame(&mut rng, Opcode::Cm, net, 0);
            if let TransportRepr::Cm(c) = &mut s.transport {
                c.kind = kind;
            }
            push(s, &format!("{kind:?}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroce_proto::wire::parse_frame;

    #[test]
    fn samples_cover_every_type_and_parse_back() {
        let samples = sample_frames();
        for net in Net::ALL {
            for op in ALL_OPCODES {
                assert!(
                    samples
                        .iter()
                        .any(|s| s.opcode() == op && s.label.contains(net.name())),
                    "no {op:?} over {net:?}"
                );
            }
        }
        for s in &samples {
            let bytes = s.emit();
            let f = parse_frame(&bytes, ROCEV2_UDP_PORT)
                .unwrap_or_else(|e| panic!("{}: {e:?}", s.label));
            assert_eq!(f.transport, s.transport, "{}", s.label);
            assert_eq!(f.payload, &s.payload[..], "{}", s.label);
        }
    }

    #[test]
    fn rng_is_deterministic() {
        let a: Vec<u64> = (0..4)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..4)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a[0], a[1]);
    }
}
