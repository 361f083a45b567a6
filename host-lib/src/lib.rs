//! The ferroce host library.
//!
//! **Not written yet** (issue 4). It will offer the ibverbs object model (device, protection
//! domain, memory regions, completion queues, connections, `post_write`/`post_send`/`post_recv`,
//! `poll_cq`, fences, per-Tag ordered or unordered completion) over a sans-IO transport core:
//! per-flow FSNs, SACK-driven selective retransmission, per-path ECN AIMD capped by the
//! receiver's rate hint, and Tag completion ordering. It drives any NIC behind
//! `ferroce_driver::Nic`.
