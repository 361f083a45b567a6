//! The specification of ferroce, as code.
//!
//! - [`wire`]: the on-wire format (Ethernet / IPv4 or IPv6 / UDP / BTH / ferroce headers / ICRC),
//!   as zero-copy packet views with checked lengths plus `Repr` types with `parse` and `emit`.
//! - [`hsi`]: the host–hardware interface: TX descriptors, events, the tables the host programs,
//!   the register map and the counters. The RTL, the VFIO driver and the model all use it.
//! - [`model`]: the executable model of the NIC fast path. Deterministic, no I/O, no clock: the
//!   RTL must match it bit for bit.
//! - [`pcap`]: classic pcap files, for writing what the model emits and replaying captures.
#![forbid(unsafe_code)]

pub mod hsi;
pub mod model;
pub mod pcap;
pub mod wire;
