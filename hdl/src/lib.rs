//! The NIC fast path in rust-hdl, and its Verilog generation.
//!
//! **Not written yet** (issue 3). This crate will hold one module per hardware block — header
//! capture and parse, SACK state in block RAM, direct placement with memory-protection checks,
//! message progress and completion events, ECN echo and the ACK builder, transmit, and the
//! AXI4-Lite register/table block — each matching [`ferroce_proto::model`] bit for bit and
//! taking every layout and register from [`ferroce_proto::hsi`].
