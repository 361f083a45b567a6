//! Verilated RTL blocks, driven through a table of their ports.
//!
//! The build script verilates every block of `ferroce_hdl::verilog::all()` and generates, per
//! block, C functions to create, evaluate and free a model and to set and get any port as
//! 32-bit words. This module wraps them in a safe [`Rtl`] handle. This is the one place in the
//! workspace that calls foreign code: the simulator is C++.
#![allow(unsafe_code)]

pub mod flow_table;
pub mod nic;
pub mod rx_parser;
pub mod rx_payload;
pub mod tx_frame;
pub mod tx_path;

use core::ffi::c_void;

/// A verilated block: its ports and its C entry points.
pub(crate) struct BlockInfo {
    name: &'static str,
    /// (name, width in bits, is an input)
    ports: &'static [(&'static str, usize, bool)],
    new: unsafe extern "C" fn() -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    eval: unsafe extern "C" fn(*mut c_void),
    set: unsafe extern "C" fn(*mut c_void, i32, *const u32),
    get: unsafe extern "C" fn(*mut c_void, i32, *mut u32),
    trace: unsafe extern "C" fn(*mut c_void, *const core::ffi::c_char) -> i32,
}

include!(concat!(env!("OUT_DIR"), "/rtl_blocks.rs"));

/// Why an RTL block cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RtlError {
    /// This build has no verilated blocks: Verilator was missing when the crate was built.
    Unavailable,
    /// No block of that name.
    UnknownBlock(String),
    /// No port of that name, or used in the wrong direction.
    BadPort(String),
}

impl core::fmt::Display for RtlError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RtlError::Unavailable => write!(
                f,
                "the RTL backend is not available: Verilator was not installed when ferroce-sim \
                 was built (cargo xtask test installs it; then rebuild)"
            ),
            RtlError::UnknownBlock(b) => write!(f, "no RTL block named {b}"),
            RtlError::BadPort(p) => write!(f, "no such port, or wrong direction: {p}"),
        }
    }
}

impl std::error::Error for RtlError {}

/// A port of a block, resolved once by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Port {
    index: i32,
    width: usize,
}

impl Port {
    /// Width in bits.
    pub fn width(self) -> usize {
        self.width
    }

    fn words(self) -> usize {
        self.width.div_ceil(32).max(1)
    }
}

/// One live simulation model of a block.
pub struct Rtl {
    info: &'static BlockInfo,
    handle: *mut c_void,
    scratch: Vec<u32>,
}

impl Rtl {
    /// Whether this build has verilated blocks.
    pub fn available() -> bool {
        !BLOCKS.is_empty()
    }

    /// A fresh model of block `name` (all registers zero).
    pub fn new(name: &str) -> Result<Self, RtlError> {
        if BLOCKS.is_empty() {
            return Err(RtlError::Unavailable);
        }
        let info = BLOCKS
            .iter()
            .find(|b| b.name == name)
            .ok_or_else(|| RtlError::UnknownBlock(name.into()))?;
        // SAFETY: `new` is the generated constructor of this block; it returns an owned handle
        // that only `free` releases (in Drop).
        let handle = unsafe { (info.new)() };
        let mut rtl = Rtl {
            info,
            handle,
            scratch: vec![0; 64],
        };
        if let Some(dir) = std::env::var_os("FERROCE_VCD") {
            rtl.trace_into(std::path::Path::new(&dir));
        }
        Ok(rtl)
    }

    /// Starts a VCD waveform of this model in `dir` (named after the block and a counter).
    /// Returns false when this build has no tracing support (build with `FERROCE_TRACE=1`).
    pub fn trace_into(&mut self, dir: &std::path::Path) -> bool {
        static SERIAL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("{}-{n}.vcd", self.info.name));
        let Ok(c_path) = std::ffi::CString::new(path.to_string_lossy().as_bytes()) else {
            return false;
        };
        let _ = std::fs::create_dir_all(dir);
        // SAFETY: the handle is live and the path is a NUL-terminated string that lives until
        // the call returns (the shim opens the file before returning).
        unsafe { (self.info.trace)(self.handle, c_path.as_ptr()) == 1 }
    }

    /// Every port: (name, width in bits, is an input), in declaration order.
    pub fn ports(&self) -> &'static [(&'static str, usize, bool)] {
        self.info.ports
    }

    /// Looks up a port; `input` says which direction the caller will use it in.
    pub fn port(&self, name: &str, input: bool) -> Result<Port, RtlError> {
        self.info
            .ports
            .iter()
            .position(|&(n, _, i)| n == name && (i || !input))
            .map(|index| Port {
                index: index as i32,
                width: self.info.ports[index].1,
            })
            .ok_or_else(|| RtlError::BadPort(format!("{}.{name}", self.info.name)))
    }

    /// Drives an input port from 32-bit words, least significant first.
    pub fn set(&mut self, port: Port, words: &[u32]) {
        let n = port.words();
        self.scratch[..n].fill(0);
        let m = n.min(words.len());
        self.scratch[..m].copy_from_slice(&words[..m]);
        if !port.width.is_multiple_of(32) {
            self.scratch[n - 1] &= (1u32 << (port.width % 32)) - 1;
        }
        // SAFETY: the handle is live; the shim reads exactly `n` words for this port, and the
        // scratch buffer holds at least that many.
        unsafe { (self.info.set)(self.handle, port.index, self.scratch.as_ptr()) }
    }

    /// Drives an input port of at most 64 bits.
    pub fn set_u64(&mut self, port: Port, value: u64) {
        self.set(port, &[value as u32, (value >> 32) as u32]);
    }

    /// Reads a port as 32-bit words, least significant first.
    pub fn get(&mut self, port: Port) -> &[u32] {
        let n = port.words();
        self.scratch[..n].fill(0);
        // SAFETY: the handle is live; the shim writes exactly `n` words for this port into a
        // buffer that holds at least that many.
        unsafe { (self.info.get)(self.handle, port.index, self.scratch.as_mut_ptr()) }
        &self.scratch[..n]
    }

    /// Reads a port of at most 64 bits.
    pub fn get_u64(&mut self, port: Port) -> u64 {
        let w = self.get(port);
        w[0] as u64 | w.get(1).map_or(0, |&h| (h as u64) << 32)
    }

    /// Reads a port as big-endian bytes (most significant byte first), `width / 8` of them.
    pub fn get_be_bytes(&mut self, port: Port) -> Vec<u8> {
        let nbytes = port.width.div_ceil(8);
        let words = self.get(port).to_vec();
        (0..nbytes)
            .rev()
            .map(|i| (words[i / 4] >> (8 * (i % 4))) as u8)
            .collect()
    }

    /// Evaluates the model's logic.
    pub fn eval(&mut self) {
        // SAFETY: the handle is live.
        unsafe { (self.info.eval)(self.handle) }
    }
}

impl Drop for Rtl {
    fn drop(&mut self) {
        // SAFETY: the handle came from `new` and is released exactly once.
        unsafe { (self.info.free)(self.handle) }
    }
}
