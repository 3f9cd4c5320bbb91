//! When the receiver of a credit link returns credits: the flow-control update policy of
//! InfiniBand links (IBA vol. 1 §7.9.4; `models.md` §1.2), used as well by the NVLink and PCIe
//! credit links inside servers.
//!
//! The receiver of a lane (ingress port, VL) owes its sender a flow-control packet whenever
//! buffer space frees (or, at an endpoint, a packet is taken in). How eagerly it sends one is a
//! trade-off between credit latency (the sender waits for credits) and the control traffic on
//! the reverse link (one 6-byte packet per update; in a loaded fabric as many as data packets).
//! The engine asks the policy at every change of the lane and when the deadline the policy set
//! comes; the packet sent then carries the newest FCCL, so deferred changes merge into it.
//!
//! One file per variant, selected by [`AnyCreditUpdate`] (the crossbar recipe,
//! `docs/models/extending.md`): `per_change.rs` ([`PerChange`], the default: every change, at
//! most one per `min_interval`) and `coalesced.rs` ([`Coalesced`]: wait until a threshold of
//! blocks has freed, with a deadline).

use sim_core::SimTime;

mod coalesced;
mod per_change;

pub use coalesced::Coalesced;
pub use per_change::PerChange;

/// What a policy sees of one receive lane when it decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneView {
    /// Now.
    pub now: SimTime,
    /// When this lane's last flow-control packet was sent (`None`: never since link-up).
    pub last_sent: Option<SimTime>,
    /// Credits (blocks) the receiver could advertise beyond its last advertisement: space
    /// freed or packets taken in since then.
    pub unadvertised_blocks: u64,
}

/// When to send the lane's next flow-control packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// Queue it on the port's transmitter now.
    Now,
    /// Not before this time (the engine asks again then, and at every change before it).
    At(SimTime),
}

/// A flow-control update policy. Stateless: what it needs of the lane is in [`LaneView`].
pub trait CreditUpdate {
    /// The lane's buffer changed at `lane.now` (or a deadline this policy set has come).
    fn decide(&self, lane: &LaneView) -> Update;
}

/// The update policy of every credit link of a run (closed enum over the variants' files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyCreditUpdate {
    PerChange(PerChange),
    Coalesced(Coalesced),
}

impl Default for AnyCreditUpdate {
    fn default() -> Self {
        AnyCreditUpdate::PerChange(PerChange::default())
    }
}

impl AnyCreditUpdate {
    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            AnyCreditUpdate::PerChange(_) => "per_change",
            AnyCreditUpdate::Coalesced(_) => "coalesced",
        }
    }
}

impl CreditUpdate for AnyCreditUpdate {
    #[inline]
    fn decide(&self, lane: &LaneView) -> Update {
        match self {
            AnyCreditUpdate::PerChange(p) => p.decide(lane),
            AnyCreditUpdate::Coalesced(p) => p.decide(lane),
        }
    }
}
