//! ferroce: the host library of a MetaRoCE-style RDMA transport over lossy Ethernet.
//!
//! Two layers:
//!
//! - [`core`]: the sans-IO transport (quinn-proto style). A [`core::Connection`] has many Tags
//!   (ordered or unordered message streams) above and many flows (paths, each with its own
//!   24-bit FSN space and 256-bit SACK window) below, under one congestion controller. It takes
//!   NIC events and the time, and gives TX descriptors, completions and a deadline. No NIC, no
//!   clock, no threads: two endpoints can be stepped on simulated time.
//! - [`Context`]: the verbs-like API over one NIC behind [`ferroce_driver::Nic`] (the model
//!   backend today; the RTL co-simulation and VFIO backends drop in): protection domains,
//!   memory regions (lkey/rkey, access rights), completion queues, connections set up with
//!   ferroce CM packets, `post_write` / `post_send` / `post_recv`, execution fences, `poll_cq`,
//!   and the extension API for paths. [`Context::progress`] is the driver loop.
//!
//! Typical use (see `tests/tests/two_node.rs` for complete runs):
//!
//! ```no_run
//! # use ferroce::*;
//! # use ferroce_driver::ModelNic;
//! # use ferroce_proto::{hsi::TableSizes, wire::EthernetAddress};
//! # fn main() -> ferroce::Result<()> {
//! let mac = EthernetAddress([2, 0, 0, 0, 0, 1]);
//! let mut ctx = Context::open(
//!     ModelNic::new(TableSizes::default()),
//!     DeviceConfig::new(mac, "10.0.0.1".parse().unwrap()),
//! )?;
//! let pd = ctx.alloc_pd();
//! let cq = ctx.create_cq(1024)?;
//! let mr = ctx.reg_mr(pd, 1 << 20, Access::LOCAL_WRITE)?;
//! let peer = EthernetAddress([2, 0, 0, 0, 0, 2]);
//! let conn = ctx.connect(&ConnectOptions::new(pd, cq, cq, peer, "10.0.0.2".parse().unwrap()))?;
//! ctx.post_write(conn, &WriteRequest {
//!     wr_id: 1, tag: 0, sge: mr.sge(0, 4096), remote_addr: 0x1_0000_0000, rkey: 0x105,
//!     imm: None, signaled: true,
//! })?;
//! let mut wcs = Vec::new();
//! let mut now = 0;
//! while wcs.is_empty() {
//!     let next = ctx.progress(now)?;
//!     ctx.poll_cq(cq, 16, &mut wcs)?;
//!     now = next.unwrap_or(now + 1_000).max(now + 1);
//! }
//! # Ok(()) }
//! ```
//!
//! The acceptor negotiates the shape of a connection ([`AcceptOptions`] limits): it may grant
//! fewer paths, a smaller MTU and fewer Tags than requested, and the requester adopts what it
//! granted ([`Context::connection_shape`]). A connection may have more than 64 Tags (up to the
//! NIC's Tag contexts, at most [`MAX_TAGS`]); the modes of Tags 64 and up travel in CM
//! `TagModes` messages.
//!
//! Connections end with [`Context::disconnect`] (a CM disconnect exchange; both sides flush and
//! report [`CmEvent::Disconnected`]) and are freed with [`Context::destroy_connection`].
//!
//! Not yet: RDMA Read (no wire opcode), more than one plane per connection (the TX descriptor
//! has no port field).
#![forbid(unsafe_code)]

mod context;
pub mod core;
mod error;

pub use context::{
    AcceptOptions, Access, CmEvent, ConnId, ConnectOptions, ConnectRequest, ConnectionShape,
    Context, ContextStats, Cq, DeviceConfig, MAX_TAGS, MIN_MTU, MemoryRegion, PathOptions, Pd,
    RecvRequest, SendRequest, Sge, WriteRequest,
};
pub use core::{
    ConnState, ConnectionStats, FailReason, PathStats, TagMode, TransportConfig, WcOpcode,
    WcStatus, WorkCompletion,
};
pub use error::{Error, Result};
