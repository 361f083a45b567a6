//! The packet-level discrete-event fabric simulator.
//!
//! - [`event`]: the deterministic event queue and simulated time (picoseconds).
//! - [`packet`]: packets with the 5-tuple hash, size and ECN state cached at the sender.
//! - [`port`]: output ports (FIFO, finite buffer, tail drop, RED/ECN marking) and links (rate,
//!   delay, loss, up/down).
//! - [`switch`]: per-destination ECMP groups, chosen by a salted 5-tuple hash.
//! - [`topology`]: two-tier leaf-spine planes.
//! - [`loss`]: Bernoulli and Gilbert-Elliott loss, all packets or control packets only.
//! - [`failure`]: link or plane failures at a given time.
//! - [`engine`]: the event loop and the [`engine::Endpoint`] trait hosts implement.
//! - [`workload`]: messages, their dependencies, and the per-host application.
//! - [`host`]: a ferroce host (the host library over a NIC backend, one port per plane).
//!
//! Every random decision comes from a generator seeded from the run's seed and the object it
//! belongs to (a link's loss, a port's marking), so a seed fixes the run.

pub mod engine;
pub mod event;
pub mod failure;
pub mod host;
pub mod loss;
pub mod packet;
pub mod port;
pub mod switch;
pub mod topology;
pub mod workload;

pub use engine::{Endpoint, Fabric, FabricStats, Outbox};
pub use event::{PS_PER_NS, Ps};
pub use topology::{Network, TopologyConfig};
