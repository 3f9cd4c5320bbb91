//! Coalesced credit returns: the receiver waits until `blocks` credits have freed since its
//! last advertisement (or `max_delay` has passed since it, whichever comes first), then
//! advertises them all in one flow-control packet. This trades credit latency for control
//! traffic: at a threshold of `n` packets' worth of blocks, a loaded lane sends about `1/n` of
//! the flow-control packets of [`super::PerChange`]. The deadline keeps the link live when less
//! than the threshold frees (a sender waiting for credits that would never be advertised), and
//! plays the role of IBA's periodic refresh (at least every 65,536 symbol times, `models.md`
//! §1.2). Full throughput needs a buffer of at least the link's credit round trip plus the
//! threshold; a threshold above the buffer leaves only the deadline (a test shows both).

use super::{CreditUpdate, LaneView, Update};
use sim_core::Duration;

/// Advertise when `blocks` have freed or `max_delay` after the last advertisement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coalesced {
    /// Credits (64-B blocks on InfiniBand) that trigger an update; at least 1.
    pub blocks: u32,
    /// The longest a freed credit waits to be advertised; more than zero.
    pub max_delay: Duration,
}

impl CreditUpdate for Coalesced {
    fn decide(&self, lane: &LaneView) -> Update {
        if lane.unadvertised_blocks >= self.blocks as u64 {
            return Update::Now;
        }
        match lane.last_sent {
            Some(last) if last + self.max_delay > lane.now => Update::At(last + self.max_delay),
            _ => Update::Now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::SimTime;

    #[test]
    fn waits_for_the_threshold_or_the_deadline() {
        let p = Coalesced {
            blocks: 260,
            max_delay: Duration(2_000_000),
        };
        let at = |now, last, blocks| {
            p.decide(&LaneView {
                now: SimTime(now),
                last_sent: Some(SimTime(last)),
                unadvertised_blocks: blocks,
            })
        };
        assert_eq!(
            at(1_000, 0, 65),
            Update::At(SimTime(2_000_000)),
            "below the threshold: the deadline"
        );
        assert_eq!(at(1_000, 0, 260), Update::Now, "at the threshold");
        assert_eq!(at(2_000_000, 0, 1), Update::Now, "the deadline has come");
    }
}
