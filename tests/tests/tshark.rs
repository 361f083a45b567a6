//! Frames emitted by `ferroce_proto::wire::FrameRepr::emit` read back by tshark:
//!
//! - plain tshark: the built-in InfiniBand/RoCEv2 dissector must read the BTH fields (and the
//!   Ethernet, 802.1Q, IP and UDP fields) exactly as emitted;
//! - tshark with `tools/wireshark/ferroce.lua`: every ferroce field of every frame must equal the
//!   value in the repr it was emitted from, the ICRC must verify, and names must be shown.
//!
//! Needs tshark on PATH (see `ferroce_tests::require_tshark` for the missing-tool policy).

use ferroce_proto::wire::{
    Opcode, SACK_BITS, TransportRepr, bth, fsn_add, icrc, ip::IpRepr, transport, udp,
};
use ferroce_tests::{Sample, lua_dissector, require_tshark, sample_frames, write_pcap};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How a field's text in `tshark -T fields` output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// One integer, decimal or `0x` hex.
    Num,
    /// One boolean (`1`/`0`, or `True`/`False` in newer tsharks).
    Bool,
    /// One byte string in hex.
    Bytes,
    /// One string, taken verbatim.
    Str,
    /// Several integers (one per occurrence).
    Nums,
    /// Several byte strings (one per occurrence).
    BytesList,
}

/// A decoded field value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum V {
    Num(u64),
    Bool(bool),
    Bytes(Vec<u8>),
    Str(String),
    Nums(Vec<u64>),
    BytesList(Vec<Vec<u8>>),
}

fn parse_num(s: &str) -> u64 {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.unwrap_or_else(|e| panic!("tshark printed {s:?} for a number: {e}"))
}

fn parse_hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| *c != ':').collect();
    assert_eq!(s.len() % 2, 0, "odd-length hex {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_else(|e| panic!("{s:?}: {e}")))
        .collect()
}

fn parse_value(kind: Kind, s: &str) -> Option<V> {
    if s.is_empty() {
        return None;
    }
    Some(match kind {
        Kind::Num => V::Num(parse_num(s)),
        Kind::Bool => V::Bool(match s {
            "1" | "True" | "true" => true,
            "0" | "False" | "false" => false,
            _ => panic!("tshark printed {s:?} for a boolean"),
        }),
        Kind::Bytes => V::Bytes(parse_hex(s)),
        Kind::Str => V::Str(s.to_string()),
        Kind::Nums => V::Nums(s.split(',').map(parse_num).collect()),
        Kind::BytesList => V::BytesList(s.split(',').map(parse_hex).collect()),
    })
}

fn scratch(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("tshark")
        .join(name)
}

/// Runs tshark over `pcap` with `-T fields`, returning the raw text of `fields` per frame.
/// tshark gets an empty configuration directory so personal preferences cannot interfere.
fn tshark_fields(
    tshark: &Path,
    with_lua: bool,
    pcap: &Path,
    fields: &[&str],
    extra: &[&str],
) -> Vec<Vec<String>> {
    let mut cmd = tshark_cmd(tshark, with_lua, pcap);
    cmd.args(extra);
    cmd.args([
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    cmd.args(["-E", "quote=n", "-e", "frame.number"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let stdout = run_checked(&mut cmd);
    let rows: Vec<Vec<String>> = stdout
        .lines()
        .map(|line| {
            let cols: Vec<String> = line.split('\t').map(str::to_string).collect();
            assert_eq!(
                cols.len(),
                fields.len() + 1,
                "tshark printed a bad row: {line:?}"
            );
            cols[1..].to_vec()
        })
        .collect();
    rows
}

fn tshark_cmd(tshark: &Path, with_lua: bool, pcap: &Path) -> Command {
    let config = scratch("wireshark-config");
    std::fs::create_dir_all(&config).expect("config dir");
    let mut cmd = Command::new(tshark);
    cmd.env("WIRESHARK_CONFIG_DIR", &config);
    if with_lua {
        let lua = lua_dissector();
        assert!(lua.is_file(), "{} is missing", lua.display());
        cmd.arg("-X").arg(format!("lua_script:{}", lua.display()));
    }
    cmd.arg("-r").arg(pcap);
    cmd
}

/// Runs tshark, failing on a bad exit status or on any error message (a Lua script that does
/// not load is only reported on stderr).
fn run_checked(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}:\n{stderr}",
        out.status
    );
    let bad: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("Running as user"))
        .collect();
    assert!(
        bad.is_empty(),
        "{cmd:?} reported problems:\n{}",
        bad.join("\n")
    );
    let stdout = String::from_utf8(out.stdout).expect("tshark output is UTF-8");
    assert!(
        !stdout.contains("Lua Error"),
        "the Lua dissector raised an error:\n{stdout}"
    );
    stdout
}

/// Compares one frame's tshark fields with the expected values; returns the mismatches.
fn compare(
    label: &str,
    fields: &[(&str, Kind)],
    row: &[String],
    expected: &BTreeMap<&str, V>,
) -> Vec<String> {
    for name in expected.keys() {
        assert!(
            fields.iter().any(|(f, _)| f == name),
            "expected value for unqueried {name}"
        );
    }
    let mut errors = Vec::new();
    for ((name, kind), text) in fields.iter().zip(row) {
        let got = parse_value(*kind, text);
        let want = expected.get(name).cloned();
        if got != want {
            let mut msg = format!("{label}: {name}: tshark {got:?}, emitted {want:?}");
            if msg.len() > 400 {
                msg.truncate(400);
                msg.push_str(" ...");
            }
            errors.push(msg);
        }
    }
    errors
}

/// The IP packet of a frame without its ICRC, and whether it is IPv6.
fn ip_packet_without_icrc<'a>(s: &Sample, frame: &'a [u8]) -> (&'a [u8], bool) {
    let l3 = s.eth.header_len();
    (
        &frame[l3..frame.len() - icrc::ICRC_LEN],
        matches!(s.ip, IpRepr::V6(_)),
    )
}

/// Offset of the byte after the BTH.
fn after_bth(s: &Sample) -> usize {
    s.eth.header_len() + s.ip.header_len() + udp::HEADER_LEN + bth::HEADER_LEN
}

const BUILTIN_FIELDS: &[(&str, Kind)] = &[
    ("infiniband.bth.opcode", Kind::Num),
    ("infiniband.bth.se", Kind::Bool),
    ("infiniband.bth.m", Kind::Bool),
    ("infiniband.bth.padcnt", Kind::Num),
    ("infiniband.bth.tver", Kind::Num),
    ("infiniband.bth.p_key", Kind::Num),
    ("infiniband.bth.destqp", Kind::Num),
    ("infiniband.bth.a", Kind::Bool),
    ("infiniband.bth.psn", Kind::Num),
    ("vlan.id", Kind::Num),
    ("vlan.priority", Kind::Num),
    ("vlan.dei", Kind::Bool),
    ("eth.dst", Kind::Bytes),
    ("eth.src", Kind::Bytes),
    ("ip.ttl", Kind::Num),
    ("ip.id", Kind::Num),
    ("ip.dsfield.dscp", Kind::Num),
    ("ip.dsfield.ecn", Kind::Num),
    ("ip.checksum.status", Kind::Num),
    ("ipv6.hlim", Kind::Num),
    ("ipv6.tclass.dscp", Kind::Num),
    ("ipv6.tclass.ecn", Kind::Num),
    ("ipv6.flow", Kind::Num),
    ("udp.srcport", Kind::Num),
    ("udp.dstport", Kind::Num),
    ("udp.length", Kind::Num),
    ("udp.checksum", Kind::Num),
];

fn builtin_expected(s: &Sample) -> BTreeMap<&'static str, V> {
    let mut e = BTreeMap::new();
    e.insert("infiniband.bth.opcode", V::Num(s.opcode() as u64));
    e.insert("infiniband.bth.se", V::Bool(s.bth.solicited));
    e.insert("infiniband.bth.m", V::Bool(false));
    e.insert("infiniband.bth.padcnt", V::Num(0));
    e.insert("infiniband.bth.tver", V::Num(0));
    e.insert("infiniband.bth.p_key", V::Num(bth::DEFAULT_PKEY.into()));
    e.insert("infiniband.bth.destqp", V::Num(s.bth.dest_conn.into()));
    e.insert("infiniband.bth.a", V::Bool(s.bth.ack_req));
    e.insert("infiniband.bth.psn", V::Num(s.bth.psn.into()));
    if let Some(tci) = s.eth.vlan_tci {
        e.insert("vlan.id", V::Num((tci & 0xfff).into()));
        e.insert("vlan.priority", V::Num((tci >> 13).into()));
        e.insert("vlan.dei", V::Bool(tci & 0x1000 != 0));
    }
    e.insert("eth.dst", V::Bytes(s.eth.dst.0.to_vec()));
    e.insert("eth.src", V::Bytes(s.eth.src.0.to_vec()));
    match s.ip {
        IpRepr::V4(r) => {
            e.insert("ip.ttl", V::Num(r.ttl.into()));
            e.insert("ip.id", V::Num(r.ident.into()));
            e.insert("ip.dsfield.dscp", V::Num(r.dscp.into()));
            e.insert("ip.dsfield.ecn", V::Num(r.ecn.into()));
            e.insert("ip.checksum.status", V::Num(1)); // PROTO_CHECKSUM_E_GOOD
        }
        IpRepr::V6(r) => {
            e.insert("ipv6.hlim", V::Num(r.hop_limit.into()));
            e.insert("ipv6.tclass.dscp", V::Num(r.dscp.into()));
            e.insert("ipv6.tclass.ecn", V::Num(r.ecn.into()));
            e.insert("ipv6.flow", V::Num(r.flow_label.into()));
        }
    }
    e.insert("udp.srcport", V::Num(s.src_port.into()));
    e.insert("udp.dstport", V::Num(s.dst_port.into()));
    let udp_len = udp::HEADER_LEN
        + bth::HEADER_LEN
        + s.transport.header_len()
        + s.payload.len()
        + icrc::ICRC_LEN;
    e.insert("udp.length", V::Num(udp_len as u64));
    e.insert("udp.checksum", V::Num(0));
    e
}

#[test]
fn builtin_dissector_reads_emitted_bth() {
    let Some(tshark) = require_tshark() else {
        return;
    };
    let samples = sample_frames();
    let frames: Vec<Vec<u8>> = samples.iter().map(Sample::emit).collect();
    let pcap = scratch("builtin.pcap");
    write_pcap(&pcap, &frames);

    let names: Vec<&str> = BUILTIN_FIELDS.iter().map(|(n, _)| *n).collect();
    let rows = tshark_fields(
        &tshark,
        false,
        &pcap,
        &names,
        &["-o", "ip.check_checksum:TRUE"],
    );
    assert_eq!(
        rows.len(),
        samples.len(),
        "tshark printed one row per frame"
    );
    let mut errors = Vec::new();
    for (s, row) in samples.iter().zip(&rows) {
        errors.extend(compare(&s.label, BUILTIN_FIELDS, row, &builtin_expected(s)));
    }
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );

    // What tshark 4.0 does with the manufacturer-specific opcodes 0xC0-0xFF: opcode "Unknown",
    // everything after the BTH (ICRC included) as infiniband.vendor, no ICRC field.
    let rows = tshark_fields(
        &tshark,
        false,
        &pcap,
        &[
            "infiniband.vendor",
            "infiniband.invariant.crc",
            "_ws.col.Info",
        ],
        &[],
    );
    for ((s, frame), row) in samples.iter().zip(&frames).zip(&rows) {
        let vendor: Vec<Vec<u8>> = row[0].split(',').map(parse_hex).collect();
        let rest = &frame[after_bth(s)..];
        assert!(
            vendor.iter().any(|v| v == rest),
            "{}: infiniband.vendor {:?} lacks the bytes after the BTH",
            s.label,
            row[0]
        );
        assert_eq!(row[1], "", "{}: tshark found an ICRC", s.label);
        assert!(
            row[2].contains("Unknown OpCode"),
            "{}: info {:?}",
            s.label,
            row[2]
        );
    }
}

const LUA_FIELDS: &[(&str, Kind)] = &[
    ("ferroce.opcode", Kind::Num),
    ("ferroce.solicited", Kind::Bool),
    ("ferroce.conn", Kind::Num),
    ("ferroce.ack_req", Kind::Bool),
    ("ferroce.fsn", Kind::Num),
    ("ferroce.fdh.flow", Kind::Num),
    ("ferroce.fdh.tag", Kind::Num),
    ("ferroce.fdh.msn", Kind::Num),
    ("ferroce.fdh.ssn", Kind::Num),
    ("ferroce.fdh.offset", Kind::Num),
    ("ferroce.fdh.msg_len", Kind::Num),
    ("ferroce.fdh.timestamp", Kind::Num),
    ("ferroce.fdh.first", Kind::Bool),
    ("ferroce.fdh.last", Kind::Bool),
    ("ferroce.reth.va", Kind::Num),
    ("ferroce.reth.rkey", Kind::Num),
    ("ferroce.reth.msg_va", Kind::Num),
    ("ferroce.imm", Kind::Num),
    ("ferroce.payload", Kind::Bytes),
    ("ferroce.payload_len", Kind::Num),
    ("ferroce.ack.flow", Kind::Num),
    ("ferroce.ack.flags", Kind::Num),
    ("ferroce.ack.ecn_echo", Kind::Bool),
    ("ferroce.ack.reserved", Kind::BytesList),
    ("ferroce.ack.ce_count", Kind::Num),
    ("ferroce.ack.refused", Kind::Num),
    ("ferroce.ack.rate_hint_mbps", Kind::Num),
    ("ferroce.ack.ts_echo", Kind::Num),
    ("ferroce.ack.cum_fsn", Kind::Num),
    ("ferroce.ack.sack", Kind::Bytes),
    ("ferroce.ack.sack_count", Kind::Num),
    ("ferroce.ack.sack_ranges", Kind::Str),
    ("ferroce.ack.sack_fsn", Kind::Nums),
    ("ferroce.nak.flow", Kind::Num),
    ("ferroce.nak.reason", Kind::Num),
    ("ferroce.nak.reserved", Kind::BytesList),
    ("ferroce.nak.tag", Kind::Num),
    ("ferroce.nak.msn", Kind::Num),
    ("ferroce.nak.offset", Kind::Num),
    ("ferroce.nak.fsn", Kind::Num),
    ("ferroce.cm.kind", Kind::Num),
    ("ferroce.cm.flags", Kind::Num),
    ("ferroce.cm.path_count", Kind::Num),
    ("ferroce.cm.src_conn", Kind::Num),
    ("ferroce.cm.dst_conn", Kind::Num),
    ("ferroce.cm.mtu", Kind::Num),
    ("ferroce.cm.tag_count", Kind::Num),
    ("ferroce.cm.initial_fsn", Kind::Num),
    ("ferroce.cm.rate_mbps", Kind::Num),
    ("ferroce.cm.tag_modes", Kind::Num),
    ("ferroce.icrc", Kind::Num),
    ("ferroce.icrc.computed", Kind::Num),
    ("ferroce.icrc.status", Kind::Num),
    ("_ws.expert.message", Kind::Str),
];

/// The SACKed FSNs relative to the cumulative FSN, as the dissector prints them.
fn sack_ranges(sacked: &dyn Fn(usize) -> bool) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < SACK_BITS {
        if !sacked(i) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j + 1 < SACK_BITS && sacked(j + 1) {
            j += 1;
        }
        parts.push(if i == j {
            format!("cum+{}", i + 1)
        } else {
            format!("cum+{}..cum+{}", i + 1, j + 1)
        });
        i = j + 1;
    }
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}

/// Every ferroce field the dissector must show for `frame`, emitted from `s` (the payload is
/// taken from the frame so that a deliberately corrupted copy can be checked too).
fn lua_expected(s: &Sample, frame: &[u8]) -> BTreeMap<&'static str, V> {
    let mut e = BTreeMap::new();
    let psn = s.bth.psn;
    e.insert("ferroce.opcode", V::Num(s.opcode() as u64));
    e.insert("ferroce.solicited", V::Bool(s.bth.solicited));
    e.insert("ferroce.conn", V::Num(s.bth.dest_conn.into()));
    e.insert("ferroce.ack_req", V::Bool(s.bth.ack_req));
    e.insert("ferroce.fsn", V::Num(psn.into()));
    let mut experts = Vec::new();
    match s.transport {
        TransportRepr::Data(d) => {
            let payload_at = after_bth(s) + s.transport.header_len();
            let payload = &frame[payload_at..frame.len() - icrc::ICRC_LEN];
            assert_eq!(payload.len(), s.payload.len());
            e.insert("ferroce.fdh.flow", V::Num(d.flow.into()));
            e.insert("ferroce.fdh.tag", V::Num(d.tag.into()));
            e.insert("ferroce.fdh.msn", V::Num(d.msn.into()));
            e.insert("ferroce.fdh.ssn", V::Num(d.ssn.into()));
            e.insert("ferroce.fdh.offset", V::Num(d.offset.into()));
            e.insert("ferroce.fdh.msg_len", V::Num(d.msg_len.into()));
            e.insert("ferroce.fdh.timestamp", V::Num(d.timestamp.into()));
            e.insert("ferroce.fdh.first", V::Bool(d.offset == 0));
            let end = u64::from(d.offset) + payload.len() as u64;
            e.insert("ferroce.fdh.last", V::Bool(end == u64::from(d.msg_len)));
            if let Some(r) = d.reth {
                e.insert("ferroce.reth.va", V::Num(r.va));
                e.insert("ferroce.reth.rkey", V::Num(r.rkey.into()));
                e.insert(
                    "ferroce.reth.msg_va",
                    V::Num(r.va.wrapping_sub(d.offset.into())),
                );
            }
            if let Some(imm) = d.imm {
                e.insert("ferroce.imm", V::Num(imm.into()));
            }
            if !payload.is_empty() {
                e.insert("ferroce.payload", V::Bytes(payload.to_vec()));
            }
            e.insert("ferroce.payload_len", V::Num(payload.len() as u64));
        }
        TransportRepr::Ack(a) => {
            e.insert("ferroce.ack.flow", V::Num(a.flow.into()));
            e.insert("ferroce.ack.flags", V::Num(a.ecn_echo.into()));
            e.insert("ferroce.ack.ecn_echo", V::Bool(a.ecn_echo));
            e.insert("ferroce.ack.reserved", V::BytesList(vec![vec![0]]));
            e.insert("ferroce.ack.ce_count", V::Num(a.ce_count.into()));
            e.insert("ferroce.ack.refused", V::Num(a.refused.into()));
            e.insert(
                "ferroce.ack.rate_hint_mbps",
                V::Num(a.rate_hint_mbps.into()),
            );
            e.insert("ferroce.ack.ts_echo", V::Num(a.ts_echo.into()));
            e.insert("ferroce.ack.cum_fsn", V::Num(psn.into()));
            e.insert("ferroce.ack.sack", V::Bytes(a.sack.to_vec()));
            let sacked: Vec<u64> = (0..SACK_BITS)
                .filter(|&i| a.sacked(i))
                .map(|i| fsn_add(psn, 1 + i as u32).into())
                .collect();
            e.insert("ferroce.ack.sack_count", V::Num(sacked.len() as u64));
            e.insert(
                "ferroce.ack.sack_ranges",
                V::Str(sack_ranges(&|i| a.sacked(i))),
            );
            if !sacked.is_empty() {
                e.insert("ferroce.ack.sack_fsn", V::Nums(sacked));
            }
            if a.ecn_echo {
                experts.push("ECN echo: congestion experienced");
            }
        }
        TransportRepr::Nak(n) => {
            e.insert("ferroce.nak.flow", V::Num(n.flow.into()));
            e.insert("ferroce.nak.reason", V::Num(n.reason as u64));
            e.insert(
                "ferroce.nak.reserved",
                V::BytesList(vec![vec![0], vec![0, 0]]),
            );
            e.insert("ferroce.nak.tag", V::Num(n.tag.into()));
            e.insert("ferroce.nak.msn", V::Num(n.msn.into()));
            e.insert("ferroce.nak.offset", V::Num(n.offset.into()));
            e.insert("ferroce.nak.fsn", V::Num(psn.into()));
        }
        TransportRepr::Cm(c) => {
            e.insert("ferroce.cm.kind", V::Num(c.kind as u64));
            e.insert("ferroce.cm.flags", V::Num(c.flags.into()));
            e.insert("ferroce.cm.path_count", V::Num(c.path_count.into()));
            e.insert("ferroce.cm.src_conn", V::Num(c.src_conn.into()));
            e.insert("ferroce.cm.dst_conn", V::Num(c.dst_conn.into()));
            e.insert("ferroce.cm.mtu", V::Num(c.mtu.into()));
            e.insert("ferroce.cm.tag_count", V::Num(c.tag_count.into()));
            e.insert("ferroce.cm.initial_fsn", V::Num(c.initial_fsn.into()));
            e.insert("ferroce.cm.rate_mbps", V::Num(c.rate_mbps.into()));
            e.insert("ferroce.cm.tag_modes", V::Num(c.tag_modes));
        }
    }
    let sent = u32::from_le_bytes(frame[frame.len() - 4..].try_into().expect("4 bytes"));
    let (ip_packet, is_v6) = ip_packet_without_icrc(s, frame);
    let computed = u32::from_le_bytes(icrc::compute(ip_packet, is_v6));
    e.insert("ferroce.icrc", V::Num(sent.into()));
    e.insert("ferroce.icrc.computed", V::Num(computed.into()));
    e.insert(
        "ferroce.icrc.status",
        V::Num(if sent == computed { 1 } else { 2 }),
    );
    if sent != computed {
        experts.push("ICRC does not match");
    }
    if !experts.is_empty() {
        e.insert("_ws.expert.message", V::Str(experts.join(",")));
    }
    e
}

/// Keeps only the dissector's own expert messages (the IP dissector, for instance, comments
/// on small TTLs).
fn ferroce_experts(text: &str) -> String {
    const OURS: &[&str] = &[
        "Packet shorter than its ferroce headers",
        "Bytes after a non-data header",
        "BTH pad count, version or P_Key is not what ferroce sends",
        "Unknown NAK reason",
        "Unknown CM kind",
        "ICRC does not match",
        "Reserved bytes are not zero",
        "ECN echo: congestion experienced",
    ];
    text.split(',')
        .filter(|m| OURS.contains(m))
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn lua_dissector_decodes_every_field() {
    let Some(tshark) = require_tshark() else {
        return;
    };
    let samples = sample_frames();
    let mut cases: Vec<(String, &Sample, Vec<u8>)> = samples
        .iter()
        .map(|s| (s.label.clone(), s, s.emit()))
        .collect();
    // A corrupted copy of every data frame with a payload: one payload bit flipped, so the
    // dissector must report a bad ICRC while still decoding every field.
    for s in samples.iter().filter(|s| !s.payload.is_empty()) {
        let mut bytes = s.emit();
        let at = after_bth(s) + s.transport.header_len() + s.payload.len() / 2;
        bytes[at] ^= 0x10;
        cases.push((format!("{} (payload bit flipped)", s.label), s, bytes));
    }
    // A standard RoCEv2 opcode (RC SEND Only): left to the built-in dissector.
    let foreign = &samples[0];
    let mut foreign_bytes = foreign.emit();
    foreign_bytes[after_bth(foreign) - bth::HEADER_LEN] = 0x04;
    let frames: Vec<&[u8]> = cases
        .iter()
        .map(|(_, _, b)| b.as_slice())
        .chain([foreign_bytes.as_slice()])
        .collect();
    let pcap = scratch("lua.pcap");
    write_pcap(&pcap, &frames);

    let names: Vec<&str> = LUA_FIELDS.iter().map(|(n, _)| *n).collect();
    let mut rows = tshark_fields(&tshark, true, &pcap, &names, &[]);
    assert_eq!(rows.len(), frames.len(), "tshark printed one row per frame");
    let expert_col = names
        .iter()
        .position(|n| *n == "_ws.expert.message")
        .expect("column");
    for row in &mut rows {
        row[expert_col] = ferroce_experts(&row[expert_col]);
    }

    let mut errors = Vec::new();
    for ((label, s, bytes), row) in cases.iter().zip(&rows) {
        errors.extend(compare(label, LUA_FIELDS, row, &lua_expected(s, bytes)));
    }
    let foreign_row = rows.last().expect("row");
    for ((name, _), text) in LUA_FIELDS.iter().zip(foreign_row) {
        if !text.is_empty() {
            errors.push(format!(
                "RC SEND frame: the ferroce dissector added {name} = {text}"
            ));
        }
    }
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );

    // The built-in BTH decoding stays visible under the Lua dissector.
    let rows = tshark_fields(
        &tshark,
        true,
        &pcap,
        &[
            "infiniband.bth.opcode",
            "infiniband.bth.destqp",
            "infiniband.bth.psn",
            "_ws.col.Protocol",
        ],
        &[],
    );
    for ((label, s, _), row) in cases.iter().zip(&rows) {
        assert_eq!(parse_num(&row[0]), s.opcode() as u64, "{label}");
        assert_eq!(parse_num(&row[1]), u64::from(s.bth.dest_conn), "{label}");
        assert_eq!(parse_num(&row[2]), u64::from(s.bth.psn), "{label}");
        assert_eq!(row[3], "ferroce", "{label}");
    }
    assert_eq!(
        parse_num(&rows.last().expect("row")[0]),
        4,
        "RC SEND opcode"
    );
}

#[test]
fn lua_dissector_names_opcodes_reasons_and_kinds() {
    let Some(tshark) = require_tshark() else {
        return;
    };
    let samples = sample_frames();
    let frames: Vec<Vec<u8>> = samples.iter().map(Sample::emit).collect();
    let pcap = scratch("names.pcap");
    write_pcap(&pcap, &frames);
    let mut cmd = tshark_cmd(&tshark, true, &pcap);
    cmd.args(["-V", "-O", "ferroce"]);
    let text = run_checked(&mut cmd);
    let per_frame: Vec<&str> = text.split("\nFrame ").collect();
    assert_eq!(
        per_frame.len(),
        samples.len(),
        "one verbose block per frame"
    );
    for (s, block) in samples.iter().zip(&per_frame) {
        let op = s.opcode();
        let mut want = vec![
            format!("Packet type: {} (0x{:02x})", op.name(), op as u8),
            format!("Connection id: 0x{:06x}", s.bth.dest_conn),
            format!("FSN: {}", s.bth.psn),
            "[ICRC status: good (1)]".to_string(),
        ];
        match s.transport {
            TransportRepr::Nak(n) => {
                want.push(format!("Reason: {:?} (0x{:02x})", n.reason, n.reason as u8));
            }
            TransportRepr::Cm(c) => want.push(format!("Kind: {:?} ({})", c.kind, c.kind as u8)),
            TransportRepr::Ack(a) => {
                want.push(format!("[SACKed FSNs: {}]", sack_ranges(&|i| a.sacked(i))))
            }
            TransportRepr::Data(_) => {}
        }
        if op == Opcode::Write || op == Opcode::WriteImm {
            want.push("RDMA extended transport header (RETH)".to_string());
        }
        for w in want {
            assert!(block.contains(&w), "{}: no {w:?} in\n{block}", s.label);
        }
    }
}

/// The layout constants the dissector hard-codes, checked against the crate's.
#[test]
fn lua_dissector_lengths_match_the_spec() {
    let lua = std::fs::read_to_string(lua_dissector()).expect("read ferroce.lua");
    for (name, len) in [
        ("BTH_LEN", bth::HEADER_LEN),
        ("FDH_LEN", transport::FDH_LEN),
        ("RETH_LEN", transport::RETH_LEN),
        ("IMM_LEN", transport::IMM_LEN),
        ("ACK_LEN", transport::ACK_LEN),
        ("NAK_LEN", transport::NAK_LEN),
        ("CM_LEN", transport::CM_LEN),
        ("ICRC_LEN", icrc::ICRC_LEN),
        ("SACK_BITS", SACK_BITS),
        ("ROCEV2_PORT", ferroce_proto::wire::ROCEV2_UDP_PORT as usize),
    ] {
        let line = format!("local {name} = {len}\n");
        assert!(lua.contains(&line), "ferroce.lua should contain {line:?}");
    }
}

/// Frames cut short by the capture's snapshot length: the dissector must neither raise a Lua
/// error nor lose the frame to the built-in dissector's bounds exception, and must still show
/// the BTH-derived fields.
#[test]
fn lua_dissector_survives_short_snapshots() {
    let Some(tshark) = require_tshark() else {
        return;
    };
    let samples = sample_frames();
    const SNAPLEN: usize = 100;
    // A classic pcap whose records keep at most SNAPLEN bytes of each frame.
    let mut file = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, SNAPLEN as u32, 1] {
        file.extend_from_slice(&v.to_le_bytes());
    }
    for (i, s) in samples.iter().enumerate() {
        let frame = s.emit();
        let kept = frame.len().min(SNAPLEN);
        for v in [1u32, i as u32, kept as u32, frame.len() as u32] {
            file.extend_from_slice(&v.to_le_bytes());
        }
        file.extend_from_slice(&frame[..kept]);
    }
    let pcap = scratch("snaplen.pcap");
    std::fs::create_dir_all(pcap.parent().expect("dir")).expect("mkdir");
    std::fs::write(&pcap, file).expect("write pcap");
    let fields = [
        "ferroce.opcode",
        "ferroce.conn",
        "ferroce.fsn",
        "_ws.col.Protocol",
    ];
    let rows = tshark_fields(&tshark, true, &pcap, &fields, &[]);
    assert_eq!(rows.len(), samples.len());
    for (s, row) in samples.iter().zip(&rows) {
        assert_eq!(
            parse_num(&row[0]),
            s.opcode() as u64,
            "{}: {row:?}",
            s.label
        );
        assert_eq!(
            parse_num(&row[1]),
            u64::from(s.bth.dest_conn),
            "{}",
            s.label
        );
        assert_eq!(parse_num(&row[2]), u64::from(s.bth.psn), "{}", s.label);
        assert_eq!(row[3], "ferroce", "{}", s.label);
    }
}

/// The frames of a demo run (what `ferroce pcap` writes), as samples.
fn demo_samples(cfg: &ferroce_sim::scenario::ScenarioConfig) -> Vec<(Sample, Vec<u8>)> {
    let report = ferroce_sim::scenario::run(cfg).expect("demo scenario runs");
    assert!(report.all_verified(), "the demo scenario verifies");
    report
        .frames
        .iter()
        .enumerate()
        .map(|(i, (_, bytes))| {
            let p = ferroce_proto::wire::parse_frame(bytes, 4791).expect("demo frames parse");
            let s = Sample {
                label: format!("demo frame {}", i + 1),
                eth: p.eth,
                ip: p.ip,
                src_port: p.udp.src_port,
                dst_port: p.udp.dst_port,
                bth: p.bth,
                transport: p.transport,
                payload: p.payload.to_vec(),
            };
            assert_eq!(
                &s.emit(),
                bytes,
                "{}: re-emitting a parsed frame is exact",
                s.label
            );
            (s, bytes.clone())
        })
        .collect()
}

#[test]
fn demo_capture_decodes_every_field_of_every_frame() {
    let Some(tshark) = require_tshark() else {
        return;
    };
    let ipv4 = ferroce_sim::scenario::ScenarioConfig::demo();
    let mut ipv6_vlan = ipv4.clone();
    ipv6_vlan.ipv6 = true;
    ipv6_vlan.vlan_tci = Some(0x2064);
    for (name, cfg) in [("demo-ipv4.pcap", ipv4), ("demo-ipv6-vlan.pcap", ipv6_vlan)] {
        let cases = demo_samples(&cfg);
        let kinds: std::collections::HashSet<Opcode> =
            cases.iter().map(|(s, _)| s.opcode()).collect();
        assert!(
            kinds.len() >= 6,
            "the demo exercises most packet types: {kinds:?}"
        );
        let pcap = scratch(name);
        let frames: Vec<&[u8]> = cases.iter().map(|(_, b)| b.as_slice()).collect();
        write_pcap(&pcap, &frames);
        let names: Vec<&str> = LUA_FIELDS.iter().map(|(n, _)| *n).collect();
        let mut rows = tshark_fields(&tshark, true, &pcap, &names, &[]);
        assert_eq!(rows.len(), cases.len(), "{name}: one row per frame");
        let expert_col = names
            .iter()
            .position(|n| *n == "_ws.expert.message")
            .expect("column");
        for row in &mut rows {
            row[expert_col] = ferroce_experts(&row[expert_col]);
        }
        let mut errors = Vec::new();
        for ((s, bytes), row) in cases.iter().zip(&rows) {
            errors.extend(compare(&s.label, LUA_FIELDS, row, &lua_expected(s, bytes)));
        }
        assert!(
            errors.is_empty(),
            "{name}: {} mismatches:\n{}",
            errors.len(),
            errors.join("\n")
        );
    }
}
