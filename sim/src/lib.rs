//! Simulation on top of the NIC interface.
//!
//! Today:
//! - [`rng`]: a small seeded generator, so every run is reproducible.
//! - [`link`]: a lossy multipath link between two NICs: ECMP by UDP source port over N paths
//!   with their own delays, jitter (reordering), loss, duplication and ECN CE marking.
//! - [`sender`]: a scripted reference sender: segments messages into packets, sprays them over
//!   the flows, and resends exactly the holes the SACK bitmaps show (plus a retransmission
//!   timeout). It exists to exercise the fast path; the real transport is the host library's
//!   (issue 4), with congestion control, pacing and path health, none of which is here.
//! - [`scenario`]: two NICs, a link, a connection set up with CM packets, a list of messages;
//!   runs to completion and verifies every byte. The demo and the end-to-end tests use it.
//! - [`setup`]: a NIC's programmed state as a TOML/JSON file, for `ferroce replay`.
//! - [`rtl`]: the `ferroce-hdl` blocks verilated by the build script and driven through a port
//!   table: each block on its own, and the whole core as [`rtl::nic::RtlNic`] behind
//!   `ferroce_driver::Nic` + `SimPort`, held to the model by `tests/tests/rtl_nic.rs`.
//! - [`backend`]: [`backend::AnyNic`], the model or the RTL chosen at run time.
//! - [`pair`]: two host-library nodes joined by a [`link`], stepped on simulated time (the
//!   two-node tests and the perftest-style commands).
//!
//! - [`fabric`]: the packet-level fabric simulator (leaf-spine planes, ECN switches, loss,
//!   failures) with ferroce hosts; [`roce`]: the RoCEv2 baseline endpoint; [`experiment`]: the
//!   experiments behind `ferroce experiment` (issue 5).

pub mod backend;
pub mod experiment;
pub mod fabric;
pub mod link;
pub mod pair;
pub mod rng;
pub mod roce;
pub mod rtl;
pub mod scenario;
pub mod sender;
pub mod setup;
