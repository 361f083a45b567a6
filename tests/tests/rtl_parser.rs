//! The RTL RX parser under Verilator against `ferroce_proto::wire::parse_frame`: the same
//! verdict (accepted, or the same error) and the same fields, frame for frame, on valid,
//! corrupted, truncated and random frames streamed back to back.
//!
//! Default: a fixed-seed set of 100,000 frames. `FERROCE_LONG=1`: 1,000,000 frames.

use ferroce_proto::wire::{Opcode, ParseError, TransportRepr, bth, parse_frame, udp};
use ferroce_sim::rtl::rx_parser::{ParserVerdict, RtlParser};
use ferroce_tests::{Net, Rng, random_frame, sample_frames};

const PORT: u16 = 4791;
const OPCODES: [Opcode; 7] = [
    Opcode::Send,
    Opcode::SendImm,
    Opcode::Write,
    Opcode::WriteImm,
    Opcode::Ack,
    Opcode::Nak,
    Opcode::Cm,
];

fn parser() -> Option<RtlParser> {
    match RtlParser::new(PORT) {
        Ok(p) => Some(p),
        Err(e) if std::env::var_os("FERROCE_ALLOW_MISSING_TOOLS").is_some() => {
            println!("SKIPPED: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// What the RTL must say about `frame`, according to the specification.
fn expected(frame: &[u8]) -> Result<(u16, Vec<u8>, u16, u16), ParseError> {
    let f = parse_frame(frame, PORT)?;
    let th_start = f.eth.header_len() + f.ip.header_len() + udp::HEADER_LEN + bth::HEADER_LEN;
    let th_len = TransportRepr::header_len_for(f.bth.opcode);
    Ok((
        frame.len() as u16,
        frame[th_start..th_start + th_len].to_vec(),
        f.payload_offset as u16,
        f.payload.len() as u16,
    ))
}

/// Compares one verdict with the specification; returns a description of any difference.
fn check(i: usize, frame: &[u8], got: &ParserVerdict) -> Option<String> {
    let want = expected(frame);
    let f = parse_frame(frame, PORT);
    match (want, got) {
        (Err(e), ParserVerdict::Rejected(g)) if e == *g => None,
        (Ok((len, th, poff, plen)), ParserVerdict::Accepted(g)) => {
            let f = f.ok()?;
            let ok = g.frame_len == len
                && g.vlan_tci == f.eth.vlan_tci
                && g.src_mac == f.eth.src.0
                && g.ipv6 == matches!(f.ip, ferroce_proto::wire::IpRepr::V6(_))
                && g.src_ip == f.ip.src_bytes()
                && g.dst_ip == f.ip.dst_bytes()
                && g.ecn == f.ip.ecn()
                && g.src_port == f.udp.src_port
                && g.opcode == f.bth.opcode as u8
                && g.solicited == f.bth.solicited
                && g.ack_req == f.bth.ack_req
                && g.dest_conn == f.bth.dest_conn
                && g.psn == f.bth.psn
                && g.th[..th.len()] == th[..]
                && g.payload_offset == poff
                && g.payload_len == plen;
            (!ok).then(|| format!("frame {i}: fields differ\n  rtl  {g:?}\n  spec {f:?}"))
        }
        (w, g) => Some(format!(
            "frame {i} ({} bytes): spec {:?}, rtl {g:?}\n  {:02x?}",
            frame.len(),
            w.map(|_| "accepted"),
            &frame[..frame.len().min(80)]
        )),
    }
}

/// Sets the IPv4 total length or the IPv6 payload length of `f` to a value up to 20 bytes
/// beyond the IP, UDP, BTH and ICRC headers (both for IPv6: its length field counts the
/// payload only); frames that are neither are left as they are.
fn set_small_ip_length(f: &mut [u8], rng: &mut Rng) {
    let l3 = if f.len() >= 14 && f[12..14] == [0x81, 0x00] {
        18
    } else {
        14
    };
    let Some(ethertype) = f.get(l3 - 2..l3) else {
        return;
    };
    let field = match ethertype {
        [0x08, 0x00] => l3 + 2,
        [0x86, 0xdd] => l3 + 4,
        _ => return,
    };
    let value = rng.upto(84) as u16;
    if let Some(bytes) = f.get_mut(field..field + 2) {
        bytes.copy_from_slice(&value.to_be_bytes());
    }
}

/// Valid frames of every type and framing, plus damaged versions of them.
fn frames(seed: u64, count: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Vec<u8>> = sample_frames().iter().map(|s| s.emit()).collect();
    while out.len() < count {
        let op = OPCODES[rng.upto(6) as usize];
        let net = Net::ALL[rng.upto(3) as usize];
        let max = if rng.upto(9) == 0 { 2000 } else { 64 };
        let mut f = random_frame(&mut rng, op, net, max).emit();
        match rng.upto(10) {
            // Intact.
            0..=3 => {}
            // One byte changed anywhere.
            4 | 5 => {
                let at = rng.upto(f.len() as u64 - 1) as usize;
                f[at] = rng.next_u8();
            }
            // One byte changed in the headers, where every check lives.
            6 => {
                let at = rng.upto(f.len().min(80) as u64 - 1) as usize;
                f[at] ^= 1 << rng.upto(7);
            }
            // Cut short, or extended with padding.
            7 => {
                let keep = rng.upto(f.len() as u64 - 1) as usize;
                f.truncate(keep.max(1));
            }
            8 => {
                let extra = rng.upto(20) as usize;
                f.extend(rng.bytes(extra));
            }
            // The IP length set to a small value, around the header sizes the checks compare
            // it with (a random byte change rarely lands there).
            9 => set_small_ip_length(&mut f, &mut rng),
            // Noise.
            _ => {
                let n = 1 + rng.upto(150) as usize;
                f = rng.bytes(n);
            }
        }
        out.push(f);
    }
    out
}

fn run_and_compare(frames: &[Vec<u8>], gap: usize) {
    let Some(mut p) = parser() else { return };
    let got = p.run(frames, gap);
    assert_eq!(got.len(), frames.len(), "one verdict per frame");
    let errors: Vec<String> = frames
        .iter()
        .zip(&got)
        .enumerate()
        .filter_map(|(i, (f, g))| check(i, f, g))
        .collect();
    assert!(
        errors.is_empty(),
        "{} of {} frames differ:\n{}",
        errors.len(),
        frames.len(),
        errors[..errors.len().min(8)].join("\n")
    );
}

#[test]
fn every_sample_frame_is_parsed_as_the_specification_says() {
    let frames: Vec<Vec<u8>> = sample_frames().iter().map(|s| s.emit()).collect();
    run_and_compare(&frames, 3);
}

/// Every sample frame cut at every length up to 144 bytes (its headers and beyond): each length
/// boundary the checks compare with (Ethernet and tag, the IP header, the frame against the IP
/// length, the transport headers) is crossed exactly, which random cuts rarely do.
#[test]
fn every_sample_frame_cut_at_every_length_matches_the_specification() {
    let mut frames = Vec::new();
    for s in sample_frames() {
        let f = s.emit();
        for n in 1..=f.len().min(144) {
            frames.push(f[..n].to_vec());
        }
    }
    run_and_compare(&frames, 0);
}

#[test]
fn back_to_back_random_and_damaged_frames_match_the_specification() {
    let long = std::env::var_os("FERROCE_LONG").is_some();
    let total: usize = if long { 1_000_000 } else { 100_000 };
    let batch = 20_000.min(total);
    let mut verdicts = [0usize; 2];
    for b in 0..total.div_ceil(batch) {
        let frames = frames(0x5eed_0000 + b as u64, batch);
        for f in &frames {
            verdicts[parse_frame(f, PORT).is_ok() as usize] += 1;
        }
        run_and_compare(&frames, 0);
    }
    // The mix must exercise both outcomes in earnest.
    assert!(
        verdicts[0] > total / 5 && verdicts[1] > total / 5,
        "{verdicts:?}"
    );
}

#[test]
fn one_beat_frames_and_gaps_keep_the_verdicts_in_order() {
    let mut rng = Rng::new(7);
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for i in 0..300 {
        let n = 1 + (i % 9);
        frames.push(rng.bytes(n));
        frames.push(random_frame(&mut rng, OPCODES[i % 7], Net::ALL[i % 4], 20).emit());
    }
    run_and_compare(&frames, 0);
    run_and_compare(&frames, 1);
}
