//! The ICRC of emitted frames checked against Scapy's independent RoCEv2 implementation
//! (`scapy.contrib.roce.BTH.compute_icrc`, run by `tests/python/icrc_check.py`).
//!
//! Three groups of frames go into one pcap:
//! 1. a few hundred pseudo-random frames of every opcode, IPv4 and IPv6, with and without an
//!    802.1Q tag, payloads of 0..=4096 bytes, random ECN (CE included), TTL / hop limit and flow
//!    label: Scapy's ICRC must equal the emitted one;
//! 2. copies of data frames with one payload bit flipped: `parse_frame` must say `BadIcrc`
//!    and Scapy must disagree with the stored ICRC (and agree with ours on the new value);
//! 3. copies whose variant fields were rewritten as a network may rewrite them (TTL / hop limit,
//!    ECN set to CE, flow label, UDP checksum, BTH FECN/BECN; IPv4 header checksum updated): the
//!    ICRC masks them, so both `parse_frame` and Scapy must still accept the stored ICRC.
//!
//! Needs the venv Python with Scapy (see `ferroce_tests::require_scapy_python`).

use ferroce_proto::wire::{
    ParseError, ROCEV2_UDP_PORT, icrc, ip::IpRepr, ip::internet_checksum, parse_frame, udp,
};
use ferroce_tests::{
    ALL_OPCODES, Net, Rng, Sample, random_frame, require_scapy_python, run_stdout, workspace_root,
    write_pcap,
};
use std::path::Path;
use std::process::Command;

/// Number of valid random frames: 336 (48 of each opcode), or 3360 with `FERROCE_LONG=1`.
fn frame_count() -> usize {
    if std::env::var("FERROCE_LONG").is_ok_and(|v| v == "1") {
        3360
    } else {
        336
    }
}
/// Largest payload.
const MAX_PAYLOAD: usize = 4096;

/// One line of `icrc_check.py` output.
#[derive(Debug)]
struct ScapyRow {
    ip_version: u8,
    vlan: bool,
    opcode: u8,
    dqpn: u32,
    psn: u32,
    wire_icrc: [u8; 4],
    scapy_icrc: [u8; 4],
}

fn hex4(s: &str) -> [u8; 4] {
    assert_eq!(s.len(), 8, "bad ICRC hex {s:?}");
    let v = u32::from_str_radix(s, 16).unwrap_or_else(|e| panic!("bad ICRC hex {s:?}: {e}"));
    v.to_be_bytes()
}

fn run_scapy(python: &Path, pcap: &Path) -> Vec<ScapyRow> {
    let script = workspace_root().join("tests/python/icrc_check.py");
    let out = run_stdout(Command::new(python).arg(&script).arg(pcap));
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .enumerate()
        .map(|(i, line)| {
            let c: Vec<&str> = line.split('\t').collect();
            assert_eq!(c[0], i.to_string(), "frames out of order: {line:?}");
            assert!(
                c.len() == 8 && c[1] != "error",
                "Scapy could not read frame {i}: {line:?}"
            );
            ScapyRow {
                ip_version: c[1].parse().expect("ip version"),
                vlan: c[2] == "1",
                opcode: c[3].parse().expect("opcode"),
                dqpn: c[4].parse().expect("dqpn"),
                psn: c[5].parse().expect("psn"),
                wire_icrc: hex4(c[6]),
                scapy_icrc: hex4(c[7]),
            }
        })
        .collect()
}

/// The valid frames: every opcode over every network layer, including the payload-length
/// edge cases.
fn valid_samples() -> Vec<Sample> {
    let mut rng = Rng::new(0x1c2c_5ca9);
    let edge_lengths = [
        0usize, 1, 2, 3, 4, 5, 7, 8, 255, 256, 1023, 1024, 4095, 4096,
    ];
    (0..frame_count())
        .map(|i| {
            let op = ALL_OPCODES[i % ALL_OPCODES.len()];
            let net = Net::ALL[(i / ALL_OPCODES.len()) % Net::ALL.len()];
            let mut s = random_frame(&mut rng, op, net, MAX_PAYLOAD);
            let round = i / ALL_OPCODES.len();
            if op.is_data() && round < edge_lengths.len() {
                // The first frames of each data opcode walk through the edge lengths.
                s.payload = rng.bytes(edge_lengths[round]);
            }
            s.label = format!("#{i} {}", s.label);
            s
        })
        .collect()
}

/// Rewrites the fields the ICRC does not cover, as routers and switches may.
fn rewrite_variant_fields(s: &Sample, frame: &mut [u8], rng: &mut Rng) {
    let l3 = s.eth.header_len();
    match s.ip {
        IpRepr::V4(_) => {
            frame[l3 + 1] |= 0b11; // ECN := CE
            frame[l3 + 8] = frame[l3 + 8].wrapping_sub(1 + rng.upto(3) as u8); // TTL
            frame[l3 + 10] = 0;
            frame[l3 + 11] = 0;
            let sum = internet_checksum(&frame[l3..l3 + 20]);
            frame[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
        }
        IpRepr::V6(_) => {
            frame[l3 + 1] |= 0b11 << 4; // ECN := CE (low bits of the traffic class)
            frame[l3 + 1] ^= 0x05; // flow label, top nibble
            frame[l3 + 3] ^= rng.next_u8() | 1; // flow label, low byte
            frame[l3 + 7] = frame[l3 + 7].wrapping_sub(1 + rng.upto(3) as u8); // hop limit
        }
    }
    let l4 = l3 + s.ip.header_len();
    let csum = rng.next_u16() | 1;
    frame[l4 + 6..l4 + 8].copy_from_slice(&csum.to_be_bytes()); // UDP checksum
    frame[l4 + udp::HEADER_LEN + 4] |= 0xc0; // BTH FECN, BECN
}

fn icrc_of(frame: &[u8]) -> [u8; 4] {
    frame[frame.len() - icrc::ICRC_LEN..]
        .try_into()
        .expect("4 bytes")
}

#[test]
fn icrc_matches_scapy() {
    let Some(python) = require_scapy_python() else {
        return;
    };
    let valid = valid_samples();
    let mut rng = Rng::new(0xb17f_11b5);

    // (sample, frame bytes, group)
    let mut frames: Vec<(&Sample, Vec<u8>, &str)> =
        valid.iter().map(|s| (s, s.emit(), "valid")).collect();
    for s in valid.iter().filter(|s| !s.payload.is_empty()).step_by(2) {
        let mut f = s.emit();
        let payload_at = f.len() - icrc::ICRC_LEN - s.payload.len();
        let bit = rng.upto(s.payload.len() as u64 * 8 - 1) as usize;
        f[payload_at + bit / 8] ^= 1 << (bit % 8);
        frames.push((s, f, "corrupted"));
    }
    for s in valid.iter().step_by(3) {
        let mut f = s.emit();
        rewrite_variant_fields(s, &mut f, &mut rng);
        frames.push((s, f, "rewritten"));
    }

    let pcap = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scapy_icrc.pcap");
    let bytes: Vec<&[u8]> = frames.iter().map(|(_, f, _)| f.as_slice()).collect();
    write_pcap(&pcap, &bytes);
    let rows = run_scapy(&python, &pcap);
    assert_eq!(rows.len(), frames.len(), "Scapy printed one line per frame");

    let mut errors = Vec::new();
    let mut counts = [0usize; 3];
    for ((s, f, group), row) in frames.iter().zip(&rows) {
        let label = format!("{} [{group}]", s.label);
        // Scapy sees the frame as it was emitted.
        let seen = (row.ip_version, row.vlan, row.opcode, row.dqpn, row.psn);
        let want = (
            if s.ip.header_len() == 40 { 6 } else { 4 },
            s.eth.vlan_tci.is_some(),
            s.opcode() as u8,
            s.bth.dest_conn,
            s.bth.psn,
        );
        if seen != want {
            errors.push(format!("{label}: Scapy read {seen:?}, emitted {want:?}"));
        }
        if row.wire_icrc != icrc_of(f) {
            errors.push(format!("{label}: Scapy found the ICRC at the wrong place"));
        }
        let l3 = s.eth.header_len();
        let ours = icrc::compute(&f[l3..f.len() - icrc::ICRC_LEN], s.ip.header_len() == 40);
        let parsed = parse_frame(f, ROCEV2_UDP_PORT);
        match *group {
            "valid" => {
                counts[0] += 1;
                if row.scapy_icrc != icrc_of(f) {
                    errors.push(format!(
                        "{label}: emitted ICRC {:02x?}, Scapy computes {:02x?}",
                        icrc_of(f),
                        row.scapy_icrc
                    ));
                }
                match parsed {
                    Ok(p) => {
                        if p.transport != s.transport || p.payload != s.payload.as_slice() {
                            errors.push(format!("{label}: parse_frame read different fields"));
                        }
                    }
                    Err(e) => errors.push(format!("{label}: parse_frame says {e:?}")),
                }
            }
            "corrupted" => {
                counts[1] += 1;
                if row.scapy_icrc == row.wire_icrc {
                    errors.push(format!("{label}: Scapy accepts the corrupted frame"));
                }
                if row.scapy_icrc != ours {
                    errors.push(format!(
                        "{label}: on the corrupted frame Scapy computes {:02x?}, we {ours:02x?}",
                        row.scapy_icrc
                    ));
                }
                if parsed.err() != Some(ParseError::BadIcrc) {
                    errors.push(format!("{label}: parse_frame did not say BadIcrc"));
                }
            }
            _ => {
                counts[2] += 1;
                if row.scapy_icrc != row.wire_icrc {
                    errors.push(format!(
                        "{label}: after rewriting variant fields Scapy computes {:02x?}, \
                         stored {:02x?}",
                        row.scapy_icrc, row.wire_icrc
                    ));
                }
                if ours != icrc_of(f) {
                    errors.push(format!("{label}: the ICRC covers a variant field"));
                }
                match parsed {
                    Ok(p) => {
                        if p.ip.ecn() != 0b11 {
                            errors.push(format!("{label}: rewrite did not set CE"));
                        }
                    }
                    Err(e) => errors.push(format!("{label}: parse_frame says {e:?}")),
                }
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
    assert!(
        counts[0] >= 300 && counts[1] >= 50 && counts[2] >= 100,
        "{counts:?}"
    );
    // Make sure the interesting cases were generated.
    let data_lens: Vec<usize> = valid.iter().map(|s| s.payload.len()).collect();
    assert!(data_lens.contains(&0) && data_lens.contains(&MAX_PAYLOAD));
    assert!(
        valid.iter().any(|s| s.ip.ecn() == 0b11),
        "no CE-marked frame"
    );
}
