//! Failures scheduled at a time: one link, or a whole plane (every link of it), going down or
//! coming back. There is no routing control plane: switches keep a dead link in their ECMP
//! groups, as they do until a routing protocol reacts (typically far longer than a run here),
//! so endpoints must find their way around it themselves.

use super::event::Ps;

/// What fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureTarget {
    /// One link (one direction), by index.
    Link(usize),
    /// Both directions of every link of a plane, host ports included.
    Plane(u8),
    /// Both directions of every leaf–spine link of a plane: the host cables stay up, so no NIC
    /// sees its link go down and only the transport can find the dead paths.
    PlaneSpines(u8),
}

/// A scheduled change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// When.
    pub at: Ps,
    /// What.
    pub target: FailureTarget,
    /// Down (true) or back up.
    pub down: bool,
}
