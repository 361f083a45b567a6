//! Classic pcap files (microsecond timestamps, Ethernet link type): enough to hand frames to
//! Wireshark/tshark and to replay captures. Nanosecond-resolution files are read too.

use std::io::{self, Read, Write};

const MAGIC_US: u32 = 0xa1b2_c3d4;
const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LINKTYPE_ETHERNET: u32 = 1;
/// Largest record the reader accepts; anything bigger is treated as a corrupt file.
const MAX_RECORD: u32 = 256 * 1024;

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Capture time in nanoseconds since the epoch of the capture (simulated time here).
    pub time_ns: u64,
    /// The frame, from the Ethernet header on.
    pub data: Vec<u8>,
}

/// Writes a pcap stream.
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&MAGIC_US.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&65535u32.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// Appends one frame captured at `time_ns`.
    pub fn write(&mut self, time_ns: u64, frame: &[u8]) -> io::Result<()> {
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((time_ns / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&(((time_ns / 1000) % 1_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(frame.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(frame.len() as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(frame)
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Reads every record of a pcap stream (either byte order, micro- or nanosecond timestamps).
pub fn read_all(mut input: impl Read) -> io::Result<Vec<Record>> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let mut h = [0u8; 24];
    input.read_exact(&mut h)?;
    let magic_le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let magic_be = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let (big_endian, nanos) = match (magic_le, magic_be) {
        (MAGIC_US, _) => (false, false),
        (MAGIC_NS, _) => (false, true),
        (_, MAGIC_US) => (true, false),
        (_, MAGIC_NS) => (true, true),
        _ => return Err(bad("not a classic pcap file (pcapng is not supported)")),
    };
    let rd = |b: &[u8]| {
        let a = [b[0], b[1], b[2], b[3]];
        if big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    };
    if rd(&h[20..24]) != LINKTYPE_ETHERNET {
        return Err(bad("pcap link type is not Ethernet"));
    }
    let mut records = Vec::new();
    loop {
        let mut rh = [0u8; 16];
        // A clean end of file falls between records; a partial record header is corruption.
        let mut got = 0;
        while got < rh.len() {
            match input.read(&mut rh[got..])? {
                0 => break,
                n => got += n,
            }
        }
        if got == 0 {
            break;
        }
        if got < rh.len() {
            return Err(bad("pcap file ends inside a record header"));
        }
        let secs = rd(&rh[0..4]) as u64;
        let frac = rd(&rh[4..8]) as u64;
        let incl = rd(&rh[8..12]);
        if incl > MAX_RECORD {
            return Err(bad("pcap record larger than 256 KiB"));
        }
        let mut data = vec![0u8; incl as usize];
        input.read_exact(&mut data)?;
        let time_ns = secs * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        records.push(Record { time_ns, data });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write(1_500_002_000, &[1, 2, 3]).unwrap();
        w.write(7_000, &[9; 70]).unwrap();
        let bytes = w.finish().unwrap();
        let recs = read_all(&bytes[..]).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            recs[0],
            Record {
                time_ns: 1_500_002_000,
                data: vec![1, 2, 3]
            }
        );
        assert_eq!(recs[1].time_ns, 7_000);
        assert!(read_all(&bytes[..30]).is_err());
        assert!(read_all(&[0u8; 24][..]).is_err());
    }
}
