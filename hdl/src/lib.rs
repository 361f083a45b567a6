//! The ferroce NIC fast path in rust-hdl, and its Verilog generation.
//!
//! Every layout, constant and register comes from [`ferroce_proto`]; every block is held bit
//! for bit to [`ferroce_proto::model`] / [`ferroce_proto::wire`] by co-simulation under
//! Verilator (crate `ferroce-sim`).
//!
//! The core ([`nic::NicCore`]) and its blocks:
//! - [`rx_parse`]: the RX header parser: framing, every validation of `parse_frame` in its
//!   order, the ICRC on the fly, field extraction; one beat per cycle, back to back.
//! - [`rx_engine`]: the receive engine: connection, address, SACK, Tag, receive-buffer,
//!   message-slot and region checks in the model's order over block-RAM tables; placement
//!   requests; message progress and completion events; ACK policy and ACK timers; the table
//!   window.
//! - [`flow_table`]: per-flow SACK state in block RAM (cumulative FSN + 256-bit window) with
//!   classify / accept / ACK operations.
//! - [`rx_payload`]: the payload extractor: a buffered frame's payload realigned to lane 0 for
//!   the DMA write interface, or the frame discarded, as the engine decides.
//! - [`tx_engine`]: the transmit engine: TX ring descriptors fetched by DMA, checked in the
//!   model's order, payload read into a store-and-forward buffer and handed to the frame
//!   builder; TxError events and counter increments for refused descriptors.
//! - [`tx_frame`]: the TX frame builder: every header from request fields, the payload
//!   realigned behind them, the ICRC appended; used for ACKs, NAKs, CM and data packets.
//! - [`event_writer`]: events to the event ring by DMA, with overflow accounting.
//! - [`regs`]: the AXI4-Lite register map, the table window and the counters.
//! - [`crc`]: CRC-32 over one 64-bit beat; [`consts`]: specification constants as a block.
//! - [`ram`]: the block RAM of the tables (write port registered, read/write collisions
//!   undefined and poisoned in simulation); [`skid`]: a register slice for a stream.
//!
//! Open (issue 3): Fmax. The blocks route at 110–200 MHz and the whole core at about
//! 80 MHz on an ECP5, against a 200 MHz target; see `docs/rtl.md`.

pub mod consts;
pub mod crc;
pub mod event_writer;
pub mod flow_table;
pub mod front_fifo;
pub mod nic;
pub mod ram;
pub mod regs;
pub mod rx_engine;
pub mod rx_parse;
pub mod rx_payload;
pub mod skid;
pub mod tx_engine;
pub mod tx_frame;
pub mod verilog;
